#!/usr/bin/env python3
"""Where an interactive burst's time goes beside a training job, plain and
under the shim's variants (docs/benchmarks.md, "Interactive bursts").

    burst_probe.py --shim LIB [--var NAME=LIB ...] [--python PY] [--out F]

Runs one training job (torch_check.py background), plain or under the
shim, and beside it one burst process per variant; each process does
rounds of three measurements, 300 ms apart:
  total     the suite's burst: two pageable 2048x2048 tensors copied in,
            10 x (matmul, tanh), the sum read back (no synchronize inside);
  phased    the same with a synchronize after each phase: copy, compute,
            read (the read is the sum's .item());
  resident  the compute alone on tensors kept on the GPU.
Prints a JSON line per process and a table of medians. Every shim process
runs with VSHARE_MEM_LIMIT (4 GiB) and no scheduler.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(args):
    import torch
    g = torch.Generator().manual_seed(5)
    a_cpu = torch.randn(2048, 2048, generator=g)
    b_cpu = torch.randn(2048, 2048, generator=g) / 45.0
    torch.empty(1, device="cuda")
    ra, rb = a_cpu.to("cuda"), b_cpu.to("cuda")
    sync = torch.cuda.synchronize
    res = {"total": [], "copy": [], "compute": [], "read": [], "resident": []}

    def total():
        t0 = time.monotonic()
        a, b = a_cpu.to("cuda"), b_cpu.to("cuda")
        for _ in range(10):
            a = torch.tanh(a @ b) * 0.5
        float(a.sum().item())
        return (time.monotonic() - t0) * 1e3

    def phased():
        t0 = time.monotonic()
        a, b = a_cpu.to("cuda"), b_cpu.to("cuda")
        sync()
        t1 = time.monotonic()
        for _ in range(10):
            a = torch.tanh(a @ b) * 0.5
        sync()
        t2 = time.monotonic()
        float(a.sum().item())
        t3 = time.monotonic()
        return [(t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3]

    def resident():
        t0 = time.monotonic()
        a = ra
        for _ in range(10):
            a = torch.tanh(a @ rb) * 0.5
        sync()
        return (time.monotonic() - t0) * 1e3

    total()
    phased()
    resident()
    for _ in range(args.rounds):
        time.sleep(0.3)
        res["total"].append(total())
        time.sleep(0.3)
        c, k, r = phased()
        res["copy"].append(c)
        res["compute"].append(k)
        res["read"].append(r)
        time.sleep(0.3)
        res["resident"].append(resident())
    print(json.dumps({k: statistics.median(v) for k, v in res.items()}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True)
    ap.add_argument("--var", action="append", default=[],
                    help="NAME=LIB or NAME=LIB:ENV=VAL,ENV=VAL")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--bg", default="shim,plain")
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        return child(args)

    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    base["PYTHONUNBUFFERED"] = "1"
    base.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    for k in [k for k in base if k.startswith("VSHARE_")]:
        base.pop(k)

    def shim_env(lib, extra=None):
        e = dict(base, LD_PRELOAD=lib, VSHARE_MEM_LIMIT="4G",
                 VSHARE_SOCKET="/nonexistent/vshare.sock")
        e.update(extra or {})
        return e

    variants = [("plain", base), ("shim", shim_env(args.shim))]
    for v in args.var:
        name, spec = v.split("=", 1)
        lib, _, envs = spec.partition(":")
        extra = dict(kv.split("=", 1) for kv in envs.split(",") if kv)
        variants.append((name, shim_env(lib or args.shim, extra)))

    rows = []
    tc = os.path.join(HERE, "torch_check.py")
    for bg_kind in args.bg.split(","):
        tmp = tempfile.mkdtemp(prefix="vs-probe-")
        ready = os.path.join(tmp, "ready")
        bg_env = base if bg_kind == "plain" else shim_env(args.shim)
        bg = None
        if bg_kind != "none":
            bg = subprocess.Popen([args.python, tc, "background", "--seconds",
                                   "600", "--ready", ready], env=bg_env,
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            t0 = time.monotonic()
            while not os.path.exists(ready):
                if bg.poll() is not None or time.monotonic() - t0 > 120:
                    print("training job never got warm:", bg.stderr.read())
                    bg.kill()
                    return 1
                time.sleep(0.2)
        try:
            for name, env in variants:
                p = subprocess.run([args.python, os.path.abspath(__file__),
                                    "--child", "--shim", args.shim,
                                    "--rounds", str(args.rounds)],
                                   env=env, capture_output=True, text=True,
                                   timeout=180)
                line = p.stdout.strip().splitlines()[-1:] or [""]
                try:
                    r = json.loads(line[0])
                except ValueError:
                    print("%s/%s failed: %s" % (bg_kind, name, p.stderr[-2000:]))
                    continue
                r.update(bg=bg_kind, variant=name)
                rows.append(r)
                print(json.dumps(r), flush=True)
        finally:
            if bg is not None:
                bg.kill()
                bg.wait()
            if os.path.exists(ready):
                os.unlink(ready)
            os.rmdir(tmp)
    print("%-8s %-12s %8s %8s %8s %8s %8s" % ("beside", "variant", "total",
          "copy", "compute", "read", "resident"))
    for r in rows:
        print("%-8s %-12s %8.2f %8.2f %8.2f %8.2f %8.2f" % (
            r["bg"], r["variant"], r["total"], r["copy"], r["compute"],
            r["read"], r["resident"]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
