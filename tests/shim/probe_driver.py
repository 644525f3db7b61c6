#!/usr/bin/env python3
"""Check the shim against whatever driver is installed (a real GPU, or the
test driver): every hooked base name of src/libvshare/interpose/hooks.def is looked
up through cuGetProcAddress_v2 with the default and the per-thread flag and
through dlsym, and must come back as the shim's hook of the variant the
driver selected. Run with libvshare.so preloaded:
    LD_PRELOAD=build/lib/libvshare.so python3 tests/shim/probe_driver.py
It allocates 1 MiB and checks that it is managed. Exit status 0 = pass."""
import ctypes
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEF = os.path.join(HERE, "..", "..", "src", "libvshare", "interpose", "hooks.def")


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


libc = ctypes.CDLL(None)
libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]


def where(addr):
    info = DlInfo()
    if not addr or not libc.dladdr(addr, ctypes.byref(info)) or not info.dli_fname:
        return ("?", None)
    return (os.path.basename(info.dli_fname.decode()),
            info.dli_sname.decode() if info.dli_sname else None)


entries = re.findall(r"^H\((\w+), (\w+), (\w+), (\d+), (\d),", open(DEF).read(), re.M)
hooked = [(sym, base, int(pt)) for kind, sym, base, since, pt in entries if kind != "REAL"]
bases = sorted(set(b for _, b, _ in hooked))

cuda = ctypes.CDLL("libcuda.so.1")
gpa = cuda.cuGetProcAddress_v2
gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
version = ctypes.c_int()
cuda.cuDriverGetVersion(ctypes.byref(version))
print("driver version", version.value)
assert cuda.cuInit(0) == 0, "cuInit"

bad = 0
exported = set(s for s, _, _ in hooked if where(ctypes.cast(getattr(cuda, s, None), ctypes.c_void_p).value
                                               if hasattr(cuda, s) else None)[0] != "?")
for flags in (0, 2):
    found = 0
    for base in bases:
        fn = ctypes.c_void_p()
        st = ctypes.c_int(-1)
        if gpa(base.encode(), ctypes.byref(fn), version.value, flags, ctypes.byref(st)) != 0:
            continue
        found += 1
        lib, sym = where(fn.value)
        pt_exists = any(pt and b == base and s in exported for s, b, pt in hooked)
        ok = "libvshare" in lib and sym is not None and sym.startswith(base)
        if ok and flags == 2 and pt_exists:
            ok = sym.endswith("_ptsz") or sym.endswith("_ptds")
        if ok and flags == 0:
            ok = not (sym.endswith("_ptsz") or sym.endswith("_ptds"))
        if not ok:
            print("cuGetProcAddress_v2(%s, flags %d) -> %s in %s" % (base, flags, sym, lib))
            bad += 1
    print("flags %d: %d hooked base names found" % (flags, found))
for sym in sorted(exported):
    lib, name = where(ctypes.cast(getattr(cuda, sym), ctypes.c_void_p).value)
    if "libvshare" not in lib or name != sym:
        print("dlsym(%s) -> %s in %s" % (sym, name, lib))
        bad += 1
print("dlsym: %d hooked symbols exported by the driver" % len(exported))

dev = ctypes.c_int()
ctx = ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
ptr = ctypes.c_uint64()
assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)) == 0
managed = ctypes.c_uint(0)
assert cuda.cuPointerGetAttribute(ctypes.byref(managed), 8, ptr) == 0
free, total = ctypes.c_size_t(), ctypes.c_size_t()
assert cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) == 0
print("managed %d, cuMemGetInfo free %d total %d" % (managed.value, free.value, total.value))
if managed.value != 1 or total.value - free.value != 1 << 20:
    bad += 1
assert cuda.cuMemFree_v2(ptr) == 0
cuda.cuDevicePrimaryCtxRelease_v2(dev)
print("FAIL" if bad else "ok")
sys.exit(1 if bad else 0)
