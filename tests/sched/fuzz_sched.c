/*
 * libFuzzer target of the stateful harness (sfuzz.h): the policy and its
 * dispatch under random clients, frames, deaths, time, admin changes and
 * reloads. Built only when clang with libFuzzer is found (see
 * tests/sched/CMakeLists.txt).
 */
#include "sfuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sf_run(data, size);
	return 0;
}
