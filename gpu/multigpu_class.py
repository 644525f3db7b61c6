#!/usr/bin/env python3
"""Classes and caps on two GPUs at once, one scheduler (docs/benchmarks.md,
"Two GPUs"). Needs two GPUs and root (the capped user runs through
setpriv).

    multigpu_class.py --vshare-dir DIR --gpu-bin DIR --out DIR

1. On each GPU a training job (torch_check.py background) and beside it
   an interactive program (torch_check.py burst, bursts 200 ms apart),
   both GPUs at the same time: plain CUDA, then under one scheduler in
   mode on (quantum 30 s, policy fair) with VSHARE_CLASS=interactive.
   Per GPU: the bursts' p50 and p99.
2. A user capped at 25% runs stamp on both GPUs at once: its GPU time on
   each, from the kernels' timestamps.
3. The scheduler's status and metrics: both GPUs by their nvidia-smi
   index, interactive grants and cap drops counted on each.

Every shim process has VSHARE_MEM_LIMIT (--mem-limit), the scheduler a
small capacity. Prints one JSON line and a table; exit 1 if a GPU misses
its target (p99 <= 150 ms, cap 25 +- 3%) or a GPU's series are missing."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from suite_class import (CAP_PCT, METRICS_PORT, _busy_share, _metric_sum,  # noqa: E402
                         _metrics, _stamp_pub, _stampers, _window)
from suite_correct import _wait  # noqa: E402
from suite_fair import USER_A, _pct  # noqa: E402
from suite_lib import Env, Scheduler, parse_size  # noqa: E402

P99_MS = 150


def pairs(env, kind, seconds, mk):
    """A training job and an interactive program on each GPU, both GPUs
    at once; per GPU the burst program's JSON, or raises."""
    py = env.opts.python
    tc = os.path.join(env.gpu_src, "torch_check.py")
    bgs, bursts = [], []
    for gpu in (0, 1):
        d = env.fresh_dir("mg-%s-%d" % (kind, gpu))
        ready = os.path.join(d, "bg.ready")
        bgs.append((ready, env.start(
            "mg.training.%s.%d" % (kind, gpu),
            [py, tc, "background", "--seconds", "600", "--ready", ready],
            mk("training%d" % gpu, gpu, False))))
    for ready, p in bgs:
        if not _wait(ready, 120, [q for _, q in bgs]):
            raise RuntimeError("%s: a training job never got warm" % kind)
    for gpu in (0, 1):
        bursts.append(env.start(
            "mg.interactive.%s.%d" % (kind, gpu),
            [py, tc, "burst", "--gap-ms", "200", "--burst-seconds",
             str(seconds)], mk("interactive%d" % gpu, gpu, True)))
    out = [env.finish(p, seconds + 120) for p in bursts]
    for _, p in bgs:
        env.kill(p)
        env.finish(p, 10)
    for r in out:
        if not r.ok:
            raise RuntimeError(r.why())
    return [r.json for r in out]


def summary(j):
    later = j["latencies_ms"][1:] or [j["first_ms"]]
    return {"first_ms": round(j["first_ms"], 1),
            "p50_ms": round(_pct(later, 50), 1),
            "p99_ms": round(_pct(later, 99), 1), "bursts": len(later)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vshare-dir", required=True)
    ap.add_argument("--gpu-bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--cap-seconds", type=int, default=30)
    ap.add_argument("--mem-limit", default="4G")
    ap.add_argument("--capacity", default="12G")
    ap.add_argument("--keep-tmp", action="store_true")
    o = ap.parse_args()
    try:
        o.mem_limit_bytes = parse_size(o.mem_limit)
        parse_size(o.capacity)
    except ValueError as e:
        ap.error(str(e))
    os.makedirs(o.out, exist_ok=True)
    log = open(os.path.join(o.out, "multigpu.log"), "w")
    env = Env(o.vshare_dir, o.gpu_bin, os.path.dirname(os.path.abspath(
        __file__)), o.out, log, o)
    gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                          text=True).stdout.strip().splitlines()
    env.say("GPUs: %s" % gpus)
    if len(gpus) < 2:
        print(json.dumps({"error": "needs two GPUs", "gpus": gpus}))
        return 2
    res, bad = {"gpus": gpus}, []
    try:
        def plain(label, gpu, inter):
            return dict(env.base_env(), CUDA_VISIBLE_DEVICES=str(gpu))
        res["plain"] = [summary(j) for j in pairs(env, "plain", o.seconds,
                                                  plain)]
        pub, why = _stamp_pub(env)
        if why:
            raise RuntimeError(why)
        os.chmod(env.tmp, 0o711)
        with Scheduler(env, "mg", mode="on", capacity=parse_size(o.capacity),
                       tq_s=30, conf={
                           "policy": "fair", "socket_mode": "0666",
                           "metrics_listen": "127.0.0.1:%d" % METRICS_PORT,
                           "policy_users": {USER_A: {"max_share_pct": CAP_PCT}},
                           "cap_window_s": 10}) as sched:
            def shim(label, gpu, inter):
                extra = {"CUDA_VISIBLE_DEVICES": str(gpu)}
                if inter:
                    extra["VSHARE_CLASS"] = "interactive"
                return env.shim_env(label, extra=extra)
            res["class"] = [summary(j) for j in pairs(env, "class", o.seconds,
                                                      shim)]
            runs = [(USER_A, {"CUDA_VISIBLE_DEVICES": str(g)}) for g in (0, 1)]
            st, why = _stampers(env, pub, runs, o.cap_seconds, sched)
            if why:
                raise RuntimeError("caps: " + why)
            res["cap_pct"] = [round(100 * _busy_share(ivs, *_window([(ivs, j)])),
                                    1) for ivs, j in st]
            text = _metrics()
            status = sched.status() or {}
        res["status_gpus"] = [{k: g.get(k) for k in ("index", "uuid", "mode")}
                              for g in status.get("gpus", [])]
        res["metrics"] = {}
        for idx in ("0", "1"):
            res["metrics"][idx] = {
                "interactive_grants": _metric_sum(
                    text, "vshare_class_grants_total", index=idx,
                    **{"class": "interactive"}),
                "class_drops": _metric_sum(text, "vshare_drops_total",
                                           index=idx, reason="class"),
                "cap_drops": _metric_sum(text, "vshare_drops_total",
                                         index=idx, reason="cap")}
    except RuntimeError as e:
        res["error"] = str(e)
        bad.append(str(e))
    finally:
        os.chmod(env.tmp, 0o700)
        env.cleanup()
    for g in (0, 1):
        if "class" in res and res["class"][g]["p99_ms"] > P99_MS:
            bad.append("GPU %d: p99 %.0f ms" % (g, res["class"][g]["p99_ms"]))
        if "cap_pct" in res and abs(res["cap_pct"][g] - CAP_PCT) > 3:
            bad.append("GPU %d: capped user %.1f%%" % (g, res["cap_pct"][g]))
        m = res.get("metrics", {}).get(str(g), {})
        if "metrics" in res and not (m.get("interactive_grants") and
                                     m.get("cap_drops")):
            bad.append("GPU %d: no interactive grants or cap drops in the "
                       "metrics" % g)
    if "status_gpus" in res and sorted(
            g.get("index") for g in res["status_gpus"]) != [0, 1]:
        bad.append("status indexes %s" % res["status_gpus"])
    res["missed"] = bad
    print(json.dumps(res))
    with open(os.path.join(o.out, "multigpu.json"), "w") as f:
        json.dump(res, f, indent=1)
    for g in (0, 1):
        if "class" in res:
            print("GPU %d: interactive bursts plain %s | class %s | capped "
                  "user %s%%" % (g, res["plain"][g], res["class"][g],
                                 res.get("cap_pct", ["?", "?"])[g]))
    print("missed: %s" % (bad or "none"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
