/*
 * libFuzzer target for the daemon's frame decoder. The first byte picks
 * the chunk size, the rest is the stream; every frame handed out must
 * pass the protocol's checks. Built only when clang with libFuzzer is
 * found (see tests/sched/CMakeLists.txt).
 */
#include <stddef.h>
#include <stdint.h>

#include "frx_gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frx rx;
	size_t chunk;

	if (size == 0)
		return 0;
	chunk = 1 + data[0] % 32;
	data++;
	size--;
	frx_init(&rx);
	while (size > 0) {
		size_t take = size < chunk ? size : chunk, left = take;
		const unsigned char *p = data;
		enum frx_result r;

		while ((r = frx_push(&rx, &p, &left)) == FRX_FRAME)
			gen_oracle(&rx);
		if (r != FRX_MORE)
			return 0;
		data += take;
		size -= take;
	}
	return 0;
}
