/*
 * The frame decoder of the daemon: bytes of a stream in, whole validated
 * frames out. Pure (no I/O), so the fuzz tests drive exactly the code
 * that faces the peers.
 */
#ifndef VSHARE_FRX_H
#define VSHARE_FRX_H

#include <stddef.h>

#include "vshare/proto.h"

/* The largest request payload a peer may send (HELLO is the largest). */
#define FRX_MAX_REQ 128

enum frx_result {
	FRX_MORE = 0,   /* every byte consumed, no frame complete yet */
	FRX_FRAME,      /* rx->in holds one valid frame */
	FRX_VERSION,    /* a header of another protocol version */
	FRX_PROTO,      /* malformed: rx->why says why; stop reading */
};

struct frx {
	size_t len;
	const char *why;
	union {
		struct vs_hdr hdr;
		unsigned char bytes[sizeof(struct vs_hdr) + FRX_MAX_REQ];
	} in;
};

void frx_init(struct frx *rx);

/*
 * Consume bytes from *p (advancing *p and *n) up to the end of the next
 * frame. After FRX_VERSION or FRX_PROTO the stream is not resynchronised:
 * the connection must be closed.
 */
enum frx_result frx_push(struct frx *rx, const unsigned char **p, size_t *n);

static inline const void *frx_payload(const struct frx *rx)
{
	return rx->in.bytes + sizeof(struct vs_hdr);
}

#endif
