/*
 * The one reader of vshare frames, used by the scheduler, vsharectl and
 * the shim: bytes of a stream in, whole validated frames out. Pure (no
 * I/O, no allocation), so the fuzz and unit tests drive exactly the code
 * that faces the peers.
 *
 * The reader is told whom it reads from (a VS_ROLE_*, or 0 for the
 * scheduler's peers: clients and admins) and the largest payload its
 * caller accepts. A header is checked as soon as it is complete, so a
 * frame that is unknown, sent by the wrong role or longer than that
 * limit is refused before any of its payload is buffered.
 *
 * Where payloads go: every fixed-size payload fits the reader's own
 * storage (VS_FRX_INLINE bytes), so the scheduler and the shim never
 * think about buffers. Only a variable payload longer than that (a
 * status reply for vsharectl, up to VS_MAX_PAYLOAD) needs the caller's
 * memory: the reader stops with VS_FRX_BUFFER once the header is checked,
 * and the caller hands it a buffer of exactly hdr.length bytes with
 * vs_frx_buffer(). This header-first step keeps allocation with the
 * caller, who knows its own policy (vsharectl mallocs, and keeps the
 * buffer as the reply text), without a fixed 1 MiB buffer per reader and
 * without an allocator hidden in a shared, pure module. A caller whose
 * limit is at most VS_FRX_INLINE never sees VS_FRX_BUFFER.
 */
#ifndef VSHARE_FRAME_H
#define VSHARE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "vshare/proto.h"

/* The reader's own payload storage: the largest fixed-size payload. */
#define VS_FRX_INLINE sizeof(struct vs_error)

/* The largest request payload (client or admin): the scheduler's limit,
 * so a peer can make it buffer at most a header and this many bytes.
 * HELLO (72 bytes) is the largest request today. */
#define VS_FRX_MAX_REQ 128u

enum vs_frx_result {
	VS_FRX_MORE = 0, /* every byte consumed, no frame complete yet */
	VS_FRX_FRAME,    /* rx->in.hdr and vs_frx_payload(rx): one valid frame */
	VS_FRX_BUFFER,   /* header checked; give a buffer of hdr.length bytes */
	VS_FRX_VERSION,  /* rx->in.hdr is of a protocol version not spoken here */
	VS_FRX_PROTO,    /* malformed: rx->why says why */
};

struct vs_frx {
	uint32_t role;           /* VS_ROLE_* of the peer, 0: client or admin */
	uint32_t max;            /* largest payload accepted */
	size_t   len;            /* bytes of the current frame so far */
	unsigned char *payload;  /* where the payload goes, NULL until known */
	const char *why;         /* set with VS_FRX_PROTO */
	int      foreign;        /* reading a foreign error frame's payload */
	uint16_t version;        /* of the stream's first frame (0: none yet):
				  * a peer speaks one version per connection,
				  * and a later frame in another is malformed */
	enum vs_frx_result stopped; /* VERSION or PROTO once the stream is dead */
	/* The header, then a payload that fits here. */
	union {
		struct vs_hdr hdr;
		uint64_t align_;  /* payloads hold uint64_t fields */
		unsigned char bytes[sizeof(struct vs_hdr) + VS_FRX_INLINE];
	} in;
};

void vs_frx_init(struct vs_frx *rx, uint32_t role, uint32_t max);

/*
 * Consume bytes from *p (advancing *p and *n) up to the end of the next
 * frame, or up to a header that needs a decision. After VS_FRX_FRAME the
 * frame stays readable until the next call. After VS_FRX_BUFFER call
 * vs_frx_buffer(), then push on. After VS_FRX_VERSION or VS_FRX_PROTO the
 * stream is not resynchronised: the connection must be closed.
 */
enum vs_frx_result vs_frx_push(struct vs_frx *rx, const unsigned char **p,
			       size_t *n);

/* After VS_FRX_BUFFER: the caller's buffer, at least in.hdr.length bytes
 * (aligned for the payload's struct, as malloc's are); it stays the
 * caller's, and holds the payload when VS_FRX_FRAME comes. */
void vs_frx_buffer(struct vs_frx *rx, void *buf);

/* The payload of the frame just returned. */
static inline const void *vs_frx_payload(const struct vs_frx *rx)
{
	return rx->payload;
}

/*
 * After VS_FRX_VERSION: the error a peer of another version sent, or
 * NULL. The header layout is frozen across versions, and so is the
 * error's, so a reader that accepts frames from the scheduler reads a
 * foreign VS_MSG_ERROR whole (its code is VS_E_VERSION when the peer
 * refuses our version) before it reports the mismatch. Its message is
 * made NUL-terminated printable text; nothing else in it is checked.
 */
const struct vs_error *vs_frx_foreign_error(const struct vs_frx *rx);

#endif
