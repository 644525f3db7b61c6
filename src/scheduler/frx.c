/*
 * Stream reassembly and validation of peer frames. A header is checked as
 * soon as it is complete, so an oversized or unknown frame is refused
 * before its payload is read: a peer can make us buffer at most
 * FRX_MAX_REQ bytes.
 */
#include <string.h>

#include "frx.h"

_Static_assert(sizeof(struct vs_hello) <= FRX_MAX_REQ &&
	       sizeof(struct vs_admin_set) <= FRX_MAX_REQ &&
	       sizeof(struct vs_footprint) <= FRX_MAX_REQ,
	       "every request fits the receive buffer");

void frx_init(struct frx *rx)
{
	rx->len = 0;
	rx->why = NULL;
}

static enum frx_result header_done(struct frx *rx)
{
	int rc = vs_check_hdr(&rx->in.hdr, 0);

	if (rc == VS_E_VERSION) {
		rx->why = "protocol version mismatch";
		return FRX_VERSION;
	}
	if (rc != VS_OK) {
		rx->why = "malformed frame header";
		return FRX_PROTO;
	}
	if (rx->in.hdr.length > FRX_MAX_REQ) {
		rx->why = "frame too long for a request";
		return FRX_PROTO;
	}
	return FRX_MORE;
}

enum frx_result frx_push(struct frx *rx, const unsigned char **p, size_t *n)
{
	const size_t hs = sizeof(struct vs_hdr);

	while (*n > 0) {
		size_t want = rx->len < hs ? hs - rx->len
			    : hs + rx->in.hdr.length - rx->len;
		size_t take = *n < want ? *n : want;
		enum frx_result r;

		memcpy(rx->in.bytes + rx->len, *p, take);
		rx->len += take;
		*p += take;
		*n -= take;
		if (rx->len == hs && (r = header_done(rx)) != FRX_MORE)
			return r;
		if (rx->len >= hs && rx->len == hs + rx->in.hdr.length) {
			rx->len = 0;
			if (vs_check_payload(&rx->in.hdr, frx_payload(rx),
					     &rx->why) != VS_OK)
				return FRX_PROTO;
			return FRX_FRAME;
		}
	}
	return FRX_MORE;
}
