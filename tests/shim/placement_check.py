#!/usr/bin/env python3
"""Converted device memory is advised to prefer its GPU (so that copies
into fresh memory do not place its pages on the host), the program's own
managed memory is left as it asked, and VSHARE_PREFER_GPU=0 turns the
advice off. The test driver logs every cuMemAdvise as an "advise" line."""
import ctypes
import os
import sys

CU_MEM_ADVISE_SET_PREFERRED_LOCATION = 3
CU_MEM_ATTACH_GLOBAL = 1


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def ck(rc, what):
    if rc != 0:
        fail("%s returned %d" % (what, rc))


def log_lines(log, kind):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [ln.split() for ln in f if ln.split()[5:6] == [kind]]


def advise_lines(log):
    return log_lines(log, "advise")


def check_uploads(cuda, log, dst, expect_on):
    """Copies from the host into converted memory are followed by a
    prefetch of the copied range to the GPU, large ones only."""
    big, small = 2 << 20, 4 << 10
    host = ctypes.create_string_buffer(big)
    before = len(log_lines(log, "prefetch"))
    ck(cuda.cuMemcpyHtoD_v2(ctypes.c_uint64(dst.value + 4096), host,
                            ctypes.c_size_t(big)), "cuMemcpyHtoD_v2")
    ck(cuda.cuMemcpyHtoD_v2(dst, host, ctypes.c_size_t(small)), "cuMemcpyHtoD_v2 small")
    stream = ctypes.c_void_p()
    ck(cuda.cuStreamCreate(ctypes.byref(stream), 0), "cuStreamCreate")
    ck(cuda.cuMemcpyHtoDAsync_v2(dst, host, ctypes.c_size_t(big), stream),
       "cuMemcpyHtoDAsync_v2")
    ck(cuda.cuMemcpy(dst, ctypes.c_uint64(ctypes.addressof(host)), ctypes.c_size_t(big)),
       "cuMemcpy")
    ck(cuda.cuStreamSynchronize(stream), "cuStreamSynchronize")
    ck(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    new = log_lines(log, "prefetch")[before:]
    if not expect_on:
        if new:
            fail("VSHARE_PREFER_GPU=0 but uploads were prefetched: %r" % new)
        return
    if len(new) != 3:
        fail("expected 3 prefetches (the large copies only), got %r" % new)
    for ln in new:
        if ln[6] != "device0" or int(ln[7]) != big:
            fail("prefetch of the wrong range or place: %r" % ln)


def main():
    expect_on = os.environ.get("VSHARE_PREFER_GPU", "1") != "0"
    log = os.environ["VSHARE_TD_LOG"]
    cuda = ctypes.CDLL("libcuda.so.1")
    ck(cuda.cuInit(0), "cuInit")
    ctx = ctypes.c_void_p()
    ck(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0), "cuDevicePrimaryCtxRetain")
    ck(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    converted = ctypes.c_uint64()
    size = 3 << 20  # room for a 2 MiB copy at an offset
    ck(cuda.cuMemAlloc_v2(ctypes.byref(converted), ctypes.c_size_t(size)), "cuMemAlloc_v2")
    lines = advise_lines(log)
    want = "device0:advice%d" % CU_MEM_ADVISE_SET_PREFERRED_LOCATION
    if expect_on:
        if len(lines) != 1 or lines[0][6] != want or int(lines[0][7]) != size:
            fail("expected one %s advise of %d bytes, log has %r" % (want, size, lines))
    elif lines:
        fail("VSHARE_PREFER_GPU=0 but memory was advised: %r" % lines)

    check_uploads(cuda, log, converted, expect_on)

    own = ctypes.c_uint64()
    ck(cuda.cuMemAllocManaged(ctypes.byref(own), ctypes.c_size_t(1 << 20),
                              CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged")
    if len(advise_lines(log)) != len(lines):
        fail("the program's own managed memory was advised")
    ck(cuda.cuMemFree_v2(converted), "cuMemFree_v2")
    ck(cuda.cuMemFree_v2(own), "cuMemFree_v2")
    print("PASS: preferred location and upload prefetch %s" %
          ("on" if expect_on else "off"))


main()
