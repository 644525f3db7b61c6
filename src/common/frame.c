/*
 * Stream reassembly and validation of frames (see frame.h): the header is
 * checked against the protocol table as soon as it is complete, the
 * payload once it is whole.
 */
#include <string.h>

#include "frame.h"

_Static_assert(sizeof(struct vs_hello) <= VS_FRX_MAX_REQ &&
	       sizeof(struct vs_admin_set) <= VS_FRX_MAX_REQ &&
	       sizeof(struct vs_footprint) <= VS_FRX_MAX_REQ &&
	       sizeof(struct vs_attach) <= VS_FRX_MAX_REQ &&
	       sizeof(struct vs_swapped) <= VS_FRX_MAX_REQ,
	       "every request fits the scheduler's limit");
_Static_assert(VS_FRX_MAX_REQ <= VS_FRX_INLINE &&
	       sizeof(struct vs_grant) <= VS_FRX_INLINE &&
	       sizeof(struct vs_welcome) <= VS_FRX_INLINE &&
	       sizeof(struct vs_drop) <= VS_FRX_INLINE &&
	       sizeof(struct vs_mode) <= VS_FRX_INLINE,
	       "every fixed-size payload fits the reader");

void vs_frx_init(struct vs_frx *rx, uint32_t role, uint32_t max)
{
	memset(rx, 0, sizeof(*rx));
	rx->role = role;
	rx->max = max < VS_MAX_PAYLOAD ? max : VS_MAX_PAYLOAD;
}

static enum vs_frx_result fail(struct vs_frx *rx, const char *why)
{
	rx->why = why;
	return VS_FRX_PROTO;
}

/* The stream cannot be read past a foreign or malformed frame: every
 * later call says so again. */
static enum vs_frx_result stop(struct vs_frx *rx, enum vs_frx_result r)
{
	if (r == VS_FRX_VERSION || r == VS_FRX_PROTO)
		rx->stopped = r;
	return r;
}

/* Another version: only an error from the scheduler is worth reading on,
 * the rest of a foreign frame cannot be understood. */
static enum vs_frx_result foreign_header(struct vs_frx *rx)
{
	const struct vs_hdr *h = &rx->in.hdr;

	if (rx->role == VS_ROLE_SCHEDULER && h->type == VS_MSG_ERROR &&
	    h->length == sizeof(struct vs_error)) {
		rx->foreign = 1;
		rx->payload = rx->in.bytes + sizeof(*h);
		return VS_FRX_MORE;
	}
	return VS_FRX_VERSION;
}

/* The header is complete: decide before any payload byte is kept. */
static enum vs_frx_result header_done(struct vs_frx *rx)
{
	const struct vs_hdr *h = &rx->in.hdr;
	const char *why = NULL;
	int rc = vs_check_hdr_why(h, rx->role, &why);

	if (rc == VS_E_VERSION)
		return foreign_header(rx);
	if (rc != VS_OK)
		return fail(rx, why);
	if (rx->version != 0 && h->version != rx->version)
		return fail(rx, "protocol version changed within the connection");
	rx->version = h->version;
	if (h->length > rx->max)
		return fail(rx, "frame longer than this peer may send");
	if (h->length <= VS_FRX_INLINE) {
		rx->payload = rx->in.bytes + sizeof(*h);
		return VS_FRX_MORE;
	}
	return VS_FRX_BUFFER;
}

void vs_frx_buffer(struct vs_frx *rx, void *buf)
{
	rx->payload = buf;
}

/* Its message as text a terminal can show; the rest is the peer's. */
static enum vs_frx_result foreign_done(struct vs_frx *rx)
{
	struct vs_error *e = (struct vs_error *)(void *)rx->payload;

	e->msg[sizeof(e->msg) - 1] = '\0';
	for (char *c = e->msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return VS_FRX_VERSION;
}

static enum vs_frx_result frame_done(struct vs_frx *rx)
{
	rx->len = 0;
	if (rx->foreign)
		return foreign_done(rx);
	if (vs_check_payload(&rx->in.hdr, rx->payload, &rx->why) != VS_OK)
		return VS_FRX_PROTO;
	return VS_FRX_FRAME;
}

/* Where the next byte goes and how many more the frame needs. */
static size_t next_room(struct vs_frx *rx, unsigned char **dst)
{
	const size_t hs = sizeof(struct vs_hdr);

	if (rx->len < hs) {
		*dst = rx->in.bytes + rx->len;
		return hs - rx->len;
	}
	*dst = rx->payload + (rx->len - hs);
	return hs + rx->in.hdr.length - rx->len;
}

enum vs_frx_result vs_frx_push(struct vs_frx *rx, const unsigned char **p,
			       size_t *n)
{
	const size_t hs = sizeof(struct vs_hdr);
	enum vs_frx_result r;

	if (rx->stopped != VS_FRX_MORE)
		return rx->stopped;
	if (rx->len == hs && rx->payload == NULL)
		return VS_FRX_BUFFER; /* still waiting for vs_frx_buffer() */
	while (*n > 0) {
		unsigned char *dst;
		size_t want = next_room(rx, &dst);
		size_t take = *n < want ? *n : want;

		if (rx->len == 0) {
			rx->payload = NULL;
			rx->foreign = 0;
		}
		memcpy(dst, *p, take);
		rx->len += take;
		*p += take;
		*n -= take;
		if (rx->len == hs && (r = header_done(rx)) != VS_FRX_MORE)
			return stop(rx, r);
		if (rx->len >= hs && rx->len == hs + rx->in.hdr.length)
			return stop(rx, frame_done(rx));
	}
	return VS_FRX_MORE;
}

const struct vs_error *vs_frx_foreign_error(const struct vs_frx *rx)
{
	if (!rx->foreign || rx->len != 0)
		return NULL;
	return (const struct vs_error *)(const void *)rx->payload;
}
