#!/usr/bin/env python3
"""JAX under the shim: are its arrays managed memory, are results the same
as plain, and how fast is a matmul loop. Prints one JSON line.

  jax_check.py [--n 4096] [--iters 200] [--trail K]

--trail K also prints the digests of the loop's values K steps either
side of the result ("trail", by step count): when a run's digest differs
from plain, a plain run's trail says whether it is a step early or late.

Managed or not is asked of the driver (cuPointerGetAttribute with
CU_POINTER_ATTRIBUTE_IS_MANAGED) for the device buffer of each probed
array. The allocator is whatever XLA_PYTHON_CLIENT_ALLOCATOR says (set it
outside; vshare-run sets the framework defaults of fw_defaults.def).
"""
import argparse
import ctypes
import hashlib
import json
import os
import sys
import time

CU_POINTER_ATTRIBUTE_IS_MANAGED = 8
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2


def cuda():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                          ctypes.c_uint64]
    lib.cuPointerGetAttribute.restype = ctypes.c_int
    return lib


def is_managed(lib, ptr):
    v = ctypes.c_uint(0)
    rc = lib.cuPointerGetAttribute(ctypes.byref(v),
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr)
    return None if rc != 0 else bool(v.value)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--trail", type=int, default=0)
    args = ap.parse_args()
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"ok": False, "error": "no jax: %s" % e}))
        return 2
    if not any(d.platform == "gpu" for d in jax.devices()):
        print(json.dumps({"ok": False, "error": "no GPU device in jax"}))
        return 2
    lib = cuda()
    key = jax.random.PRNGKey(0)
    a = jax.random.normal(key, (args.n, args.n), dtype=jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (args.n, args.n),
                          dtype=jnp.float32) / args.n ** 0.5
    host = jnp.asarray(list(range(1024)), dtype=jnp.float32)

    @jax.jit
    def step(x):
        return jnp.tanh(x @ b)

    x = step(a)
    x.block_until_ready()
    probes = [a, b, host, x, step(x)]
    flags = [is_managed(lib, p.unsafe_buffer_pointer()) for p in probes]
    t0 = time.monotonic()
    for _ in range(args.iters):
        x = step(x)
    x.block_until_ready()
    secs = time.monotonic() - t0
    digest = hashlib.sha256(jax.device_get(x).tobytes()).hexdigest()[:16]
    trail = {}
    if args.trail > 0:
        # The result above is step applied iters + 1 times to a.
        y = a
        for k in range(1, args.iters + 2 + args.trail):
            y = step(y)
            if k >= args.iters + 1 - args.trail:
                trail[k - args.iters - 1] = hashlib.sha256(
                    jax.device_get(y).tobytes()).hexdigest()[:16]
        trail["a"] = hashlib.sha256(jax.device_get(a).tobytes()).hexdigest()[:16]
    print(json.dumps({
        "ok": True, "jax": jax.__version__,
        "allocator": os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default"),
        "managed": sum(1 for f in flags if f), "probed": len(flags),
        "flags": flags, "seconds": secs, "iters": args.iters,
        "digest": digest, "trail": trail}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
