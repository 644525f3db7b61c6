#!/usr/bin/env python3
"""vshare's real-GPU suite: correctness under the shim and benchmarks
beside plain CUDA, in one run. Normally started by scripts/gpu-check,
which builds or finds the programs; see docs/benchmarks.md.

Safety: every process under the shim runs with VSHARE_MEM_LIMIT, every
scheduler with a small capacity, and before each group the managed memory
it may hold at once is checked against half of the GPU's free memory."""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import suite_bench as B  # noqa: E402
import suite_class as K  # noqa: E402
import suite_correct as C  # noqa: E402
import suite_examples as X  # noqa: E402
import suite_fair as F  # noqa: E402
import suite_plain as P  # noqa: E402
from suite_lib import (GIB, Env, Guard, Result, Scheduler, SuiteError,  # noqa: E402
                       attach_gpu, gpu_memory, parse_size)

CHECKS = ["examples", "drv", "capture", "rt", "torch", "torch-async", "on", "off", "oversub",
          "torch-bench", "torch-alloc", "jax", "launch", "lock", "handoff", "burst",
          "swapin"]
# Run only when named: the fair-share benchmarks beside fcfs take about 5
# minutes (suite_fair.py), which the default run would not fit beside the
# rest in one 10-minute device session.
EXTRA = list(F.FAIR_CHECKS) + list(K.CLASS_CHECKS)
GROUPS = {"fair": F.FAIR_CHECKS, "class": ["class-burst"] + K.CLASS_CHECKS}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--vshare-dir", default="",
                    help="build tree with bin/vshare-scheduler and lib/libvshare.so")
    ap.add_argument("--gpu-bin", required=True, help="built suite programs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma list of: " + ",".join(
        CHECKS + EXTRA) + "; fair = " + ",".join(F.FAIR_CHECKS) +
        "; class = " + ",".join(GROUPS["class"]) +
        " (these run only when named)")
    ap.add_argument("--skip", default="")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--mem-limit", default="4G", help="VSHARE_MEM_LIMIT per process")
    ap.add_argument("--capacity", default="12G", help="scheduler capacity (auto groups)")
    ap.add_argument("--swap-bytes", default="2G")
    ap.add_argument("--idle-ms", type=int, default=100)
    ap.add_argument("--fair-tq", type=int, default=30,
                    help="quantum (s) of fair-burst and fair-train, both policies")
    ap.add_argument("--fair-users-tq", type=int, default=30,
                    help="quantum (s) of fair-users, both policies")
    ap.add_argument("--fair-users-seconds", type=int, default=0,
                    help="window of fair-users (0: 4 quanta, at least 20 s)")
    ap.add_argument("--class-seconds", type=int, default=60,
                    help="window of class-claimer and class-cap (class-infer:"
                         " a third of it)")
    ap.add_argument("--interactive-env", action="append", default=[],
                    metavar="KEY=VALUE",
                    help="shim setting of the interactive programs of the "
                         "class benchmarks (repeatable), e.g. VSHARE_IDLE_MS=2")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--lock-reps", type=int, default=0,
                    help="re-acquisitions timed by the lock check (15; 8 quick)")
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--plain-only", action="store_true",
                    help="run every program once without vshare (GPU/suite smoke test)")
    o = ap.parse_args()
    try:
        o.capacity = parse_size(o.capacity)
        o.swap_bytes = parse_size(o.swap_bytes)
        o.mem_limit_bytes = parse_size(o.mem_limit)
    except ValueError as e:
        ap.error(str(e))
    o.bench_reps = 2 if o.quick else 3
    o.bench_seconds = 3 if o.quick else 4
    o.lock_reps = o.lock_reps or (8 if o.quick else 15)
    o.launch_reps = 3 if o.quick else 5
    o.handoff_reps = 3 if o.quick else 5
    o.burst_reps = 2 if o.quick else 3
    o.stamp_kernels, o.stamp_spin_us = 400, 5000
    o.fair_burst_seconds = 10 if o.quick else 15
    # Long enough that the slice has settled: it follows what preemptions
    # cost, a third of the way at each (docs/scheduler.md).
    o.fair_train_seconds = 15 if o.quick else 30
    # Four quanta: two turns of each user, so that the shares compare
    # whole turns and not where the window happens to cut one.
    o.fair_users_seconds = o.fair_users_seconds or max(20, 4 * o.fair_users_tq)

    def names(text):
        return [n for c in text.split(",") if c for n in GROUPS.get(c, [c])]
    only, skip = names(o.only), names(o.skip)
    bad = [c for c in only + skip if c not in CHECKS + EXTRA]
    if bad:
        ap.error("unknown check(s): %s" % ",".join(bad))
    o.selected = [c for c in (only or CHECKS) if c not in skip]
    return o


def describe_machine(env):
    info = {"host": platform.node(), "kernel": platform.release(),
            "python": sys.version.split()[0], "time_utc":
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    q = "name,driver_version,memory.total,memory.free,compute_mode,clocks.max.sm"
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader",
                            "-i", "0"], capture_output=True, text=True, timeout=30)
        info["gpu"] = r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["gpu"] = "?"
    try:
        r = subprocess.run([env.opts.python, "-c", "import torch;print(torch.__version__,"
                            "torch.version.cuda)"], capture_output=True, text=True,
                           timeout=60)
        info["torch"] = r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["torch"] = "?"
    for tool, args in (("nvcc", ["--version"]),):
        try:
            r = subprocess.run([tool] + args, capture_output=True, text=True, timeout=30)
            info[tool] = r.stdout.strip().splitlines()[-1]
        except (OSError, subprocess.SubprocessError, IndexError):
            info[tool] = "?"
    return info


def guarded(env, results, fn, *args):
    """Run one check; an unexpected error fails that check, not the run.
    A SuiteError (safety, missing parts) is passed on."""
    t0 = time.monotonic()
    try:
        r = fn(env, *args)
    except SuiteError:
        raise
    except Exception as e:  # noqa: BLE001 -- reported as that check's failure
        env.note(traceback.format_exc())
        r = Result(getattr(fn, "__name__", "?"), "?", "FAIL",
                   detail="suite error: %s: %s" % (type(e).__name__, e))
    finally:
        env.cleanup_live()
    r.data["seconds"] = round(time.monotonic() - t0, 1)
    results.append(r)
    env.say("%-5s %-44s %s" % (r.status, r.name, r.measured))
    if r.status not in ("PASS", "SKIP") and r.detail:
        env.say("      %s" % r.detail)
    return r


def guarded_many(env, results, fn):
    """guarded() for a check that gives several result rows."""
    rows = []

    def collect(env_):
        out = fn(env_)
        rows.extend(out if isinstance(out, list) else [out])
        return rows[0]
    collect.__name__ = fn.__name__
    first = guarded(env, results, collect)
    for r in rows[1:]:
        r.data["seconds"] = first.data.get("seconds")
        _report(env, results, r)


def _report(env, results, r):
    results.append(r)
    env.say("%-5s %-44s %s" % (r.status, r.name, r.measured))
    if r.status != "PASS" and r.detail:
        env.say("      %s" % r.detail)


def run_all(env, results):
    o, sel = env.opts, env.opts.selected
    guard = Guard(env)
    # The most managed memory held at once: two shim processes at their
    # limit (burst beside training), or the swap pair.
    worst = max(2 * o.mem_limit_bytes, 2 * (o.swap_bytes + (256 << 20)))
    guard.check(worst, "the suite")

    with Scheduler(env, "main", mode="auto", capacity=o.capacity) as sched:
        attach_gpu(env)
        modes = sched.ensure_mode()
        env.say("main scheduler GPU modes: %s" % modes)
        for key, fn, args in (("examples", X.check_examples, ()),
                              ("drv", C.check_drv, ()),
                              ("capture", C.check_capture, ()),
                              ("rt", C.check_rt, ()),
                              ("torch", C.check_torch, ("native",)),
                              ("torch-async", C.check_torch, ("cudaMallocAsync",)),
                              ("torch-bench", B.bench_torch_steps, ()),
                              ("torch-alloc", B.bench_torch_alloc, ()),
                              ("jax", B.bench_jax, ()),
                              ("launch", B.bench_launch, ()),
                              ("lock", B.bench_first_lock, ())):
            if key in sel:
                if key == "examples":
                    for r in fn(env):
                        results.append(r)
                        env.say("%-5s %-44s %s" % (r.status, r.name, r.measured))
                    continue
                guarded(env, results, fn, *args)
    if "on" in sel:
        guarded(env, results, C.check_serialization, "on", 1)
    if "off" in sel:
        guarded(env, results, C.check_serialization, "off", None)
    if "handoff" in sel:
        guarded(env, results, B.bench_handoff, o.idle_ms)
    if "burst" in sel:
        guard.check(2 * o.mem_limit_bytes, "burst")
        guarded_many(env, results, B.bench_burst)
    if "oversub" in sel or "swapin" in sel:
        guard.check(2 * (o.swap_bytes + (256 << 20)), "oversubscription")
        baseline = B.swap_baseline(env)
        env.say("swap baseline: %s" % json.dumps(baseline))
        over = guarded(env, results, C.check_oversub, baseline)
        if "swapin" in sel:
            guarded(env, results, B.bench_swapin, over, baseline)
    F.run_fair(env, guard, sel, lambda fn: guarded_many(env, results, fn))
    K.run_class(env, guard, sel, lambda fn: guarded_many(env, results, fn))


def write_results(env, machine, results, aborted):
    out = env.opts.out
    doc = {"machine": machine, "aborted": aborted,
           "results": [r.as_dict() for r in results],
           "passed": sum(r.status == "PASS" for r in results),
           "failed": sum(r.status == "FAIL" for r in results),
           "missed": sum(r.status == "MISS" for r in results)}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    lines = ["# vshare GPU suite results", "",
             "GPU: %s  " % machine.get("gpu"),
             "torch %s, %s, kernel %s, %s UTC" % (machine.get("torch"), machine.get("nvcc"),
                                                  machine.get("kernel"),
                                                  machine.get("time_utc")), ""]
    if aborted:
        lines += ["**Aborted:** %s" % aborted, ""]
    lines += ["| check | kind | status | measured (shim) | plain CUDA | target | notes |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        cells = [r.name, r.kind, r.status, r.measured, r.baseline, r.target,
                 r.detail.replace("|", "/")[:300]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return doc


def main():
    o = parse_args()
    os.makedirs(o.out, exist_ok=True)
    log = open(os.path.join(o.out, "suite.log"), "w")
    env = Env(o.vshare_dir, o.gpu_bin, os.path.dirname(os.path.abspath(__file__)),
              o.out, log, o)
    machine = describe_machine(env)
    env.say("GPU: %s | torch %s" % (machine["gpu"], machine["torch"]))
    mem = gpu_memory()
    if mem:
        env.say("GPU memory free %.1f of %.1f GiB" % (mem[1] / GIB, mem[0] / GIB))
    results, aborted = [], ""
    try:
        if o.plain_only:
            env.opts.selected = []
            P.run_plain_only(env, results, lambda r: _report(env, results, r))
        else:
            run_all(env, results)
    except SuiteError as e:
        aborted = str(e)
        env.say("ABORTED: %s" % e)
    except KeyboardInterrupt:
        aborted = "interrupted"
    finally:
        env.cleanup()
    doc = write_results(env, machine, results, aborted)
    print()
    print("%-5s %-44s %-42s %s" % ("", "check", "measured (shim)", "plain CUDA"))
    for r in results:
        print("%-5s %-44s %-42s %s" % (r.status, r.name[:44], r.measured[:42], r.baseline))
    print("\n%d passed, %d failed, %d missed target%s" % (
        doc["passed"], doc["failed"], doc["missed"],
        ("; ABORTED: " + aborted) if aborted else ""))
    return 1 if (doc["failed"] or aborted) else 0


if __name__ == "__main__":
    sys.exit(main())
