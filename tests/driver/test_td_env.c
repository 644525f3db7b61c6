/*
 * Configuration by environment, as CTest sets it: VSHARE_TD_DEVICES=3,
 * VSHARE_TD_MEM=1.5G, VSHARE_TD_NAME, VSHARE_TD_DRIVER_VERSION=12080,
 * CUDA_VISIBLE_DEVICES=2,GPU-76737464-0000-0000-0000-000000000000,7
 * (the third entry is invalid and ends the list).
 */
#include "tdt.h"

static void test_visible_devices(void **state)
{
	int n, v;
	CUuuid u;
	size_t total;
	char name[64];

	(void)state;
	CK(cuDriverGetVersion(&v));	/* before cuInit */
	assert_int_equal(v, 12080);
	CK(cuInit(0));
	CK(cuDeviceGetCount(&n));
	assert_int_equal(n, 2);
	CK(cuDeviceGetUuid_v2(&u, 0));
	assert_int_equal(u.bytes[15], 2);	/* ordinal 0 is device 2 */
	CK(cuDeviceGetUuid_v2(&u, 1));
	assert_int_equal(u.bytes[15], 0);
	CK(cuDeviceTotalMem_v2(&total, 1));
	assert_int_equal(total, 3ull << 29);
	CK(cuDeviceGetName(name, sizeof(name), 0));
	assert_string_equal(name, "Fake H100");
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0));
	assert_int_equal(v, 0x12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_visible_devices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
