/*
 * libFuzzer target for the common frame reader. The first byte picks the
 * reader (scheduler, shim or vsharectl) and the chunk size, the rest is
 * the stream; every frame handed out must pass the protocol's checks.
 * Built only when clang with libFuzzer is found (tests/unit/CMakeLists.txt).
 */
#include <stddef.h>
#include <stdint.h>

#include "frame_gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct gen_reader *k;
	struct vs_frx rx;
	size_t chunk;

	if (size == 0)
		return 0;
	k = &gen_readers[(data[0] >> 5) % GEN_N_READERS];
	chunk = 1 + data[0] % 32;
	data++;
	size--;
	vs_frx_init(&rx, k->role, k->max);
	while (size > 0) {
		size_t take = size < chunk ? size : chunk, left = take;
		const unsigned char *p = data;
		enum vs_frx_result r;

		while ((r = gen_push(&rx, &p, &left)) == VS_FRX_FRAME)
			gen_oracle(&rx, r);
		if (r != VS_FRX_MORE) {
			gen_oracle(&rx, r);
			return 0;
		}
		data += take;
		size -= take;
	}
	return 0;
}
