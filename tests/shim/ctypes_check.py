#!/usr/bin/env python3
"""A program that is not linked against libcuda, like the CUDA runtime and
Python frameworks: it loads the driver with dlopen and finds its functions
with dlsym (ctypes) and cuGetProcAddress. With the shim preloaded, what it
finds must be the shim's hooks, and device memory must come back managed."""
import ctypes
import sys

CU_POINTER_ATTRIBUTE_IS_MANAGED = 8
CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


libc = ctypes.CDLL(None)
libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]


def where(addr):
    info = DlInfo()
    if not libc.dladdr(addr, ctypes.byref(info)) or not info.dli_fname:
        return ("?", None)
    return (info.dli_fname.decode(), info.dli_sname and info.dli_sname.decode())


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def ck(rc, what):
    if rc != 0:
        fail("%s returned %d" % (what, rc))


cuda = ctypes.CDLL("libcuda.so.1")
for name in ("cuMemAlloc_v2", "cuLaunchKernel", "cuLaunchKernel_ptsz",
             "cuMemcpyHtoD_v2", "cuGetProcAddress_v2"):
    addr = ctypes.cast(getattr(cuda, name), ctypes.c_void_p).value
    lib, sym = where(addr)
    if "libvshare" not in lib or sym != name:
        fail("dlsym(%s) gave %s in %s" % (name, sym, lib))

ck(cuda.cuInit(0), "cuInit")
dev = ctypes.c_int()
ck(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
ck(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ck(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

ptr = ctypes.c_uint64()
ck(cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)), "cuMemAlloc_v2")
managed = ctypes.c_uint(0)
ck(cuda.cuPointerGetAttribute(ctypes.byref(managed),
                              CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr), "cuPointerGetAttribute")
if managed.value != 1:
    fail("cuMemAlloc_v2 memory is not managed")

fn = ctypes.c_void_p()
status = ctypes.c_int(-1)
cuda.cuGetProcAddress_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.c_int, ctypes.c_uint64,
                                     ctypes.POINTER(ctypes.c_int)]
ck(cuda.cuGetProcAddress_v2(b"cuLaunchKernel", ctypes.byref(fn), 13000,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                            ctypes.byref(status)), "cuGetProcAddress_v2")
lib, sym = where(fn.value)
if status.value != 0 or "libvshare" not in lib or sym != "cuLaunchKernel_ptsz":
    fail("cuGetProcAddress_v2(cuLaunchKernel, per-thread) gave %s in %s" % (sym, lib))
ck(cuda.cuMemFree_v2(ptr), "cuMemFree_v2")
print("ok")
