"""--plain-only: every program of the suite once without vshare, so that a
GPU machine (and the suite's own programs) can be validated before any
vshare part exists. The figures are the plain-CUDA baselines."""
import os

import suite_bench as B
import suite_correct as C
from suite_lib import Result


def _one(env, title, argv, check, timeout=240, extra=None):
    p = env.run(title, argv, env.base_env(), timeout, extra)
    if not p.ok:
        return Result(title, "plain", "FAIL", detail=p.why())
    ok, measured = check(p.json)
    return Result(title, "plain", "PASS" if ok else "FAIL", measured=measured,
                  data=p.json)


def _stampers(env):
    d = env.fresh_dir("stamp-plain")
    go = os.path.join(d, "go")
    procs = [env.start("stamp-plain-" + w,
                       [env.prog("stamp"), "--n", "80", "--spin-us", "5000",
                        "--out", os.path.join(d, w + ".txt"), "--ready",
                        os.path.join(d, w + ".ready"), "--go", go], env.base_env())
             for w in ("a", "b")]
    for w in ("a", "b"):
        C._wait(os.path.join(d, w + ".ready"), 60, procs)
    open(go, "w").close()
    res = [env.finish(p, 120) for p in procs]
    if not all(r.ok for r in res):
        return Result("two plain processes: overlap", "plain", "FAIL",
                      detail="; ".join(r.why() for r in res if not r.ok))
    ivs = [C._read_stamps(os.path.join(d, w + ".txt")) for w in ("a", "b")]
    pairs, ns = C.overlap_stats(*ivs)
    return Result("two plain processes: overlap", "plain", "PASS",
                  measured="%d overlapping pairs (%.1f ms), %d switches" % (
                      pairs, ns / 1e6, C.switches(*ivs)))


def run_plain_only(env, results, add):
    py, tc = env.opts.python, os.path.join(env.gpu_src, "torch_check.py")
    add(_one(env, "drv_check", [env.prog("drv_check")],
             lambda j: (j["ok"] and not any(j["managed"].values()),
                        "checksum %s managed %s" % (j["checksum"], j["managed"]))))
    add(_one(env, "rt_check", [env.prog("rt_check")],
             lambda j: (j["ok"], "checksum %s types %s" % (j["checksum"], j["types"]))))
    for backend in ("native", "cudaMallocAsync"):
        extra = {} if backend == "native" else {
            "PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}
        add(_one(env, "torch correct (%s)" % backend, [py, tc, "correct"],
                 lambda j: (j["ok"] and j["allocator"] == backend,
                            "loss[-1] %.6f graph %s managed %d/%d" % (
                                j["losses"][-1], j["graph_ok"], j["managed_count"],
                                j["probe_count"])), extra=extra))
    add(_stampers(env))
    add(_one(env, "launch_bench", [env.prog("launch_bench")],
             lambda j: (True, "%.0f ns/launch" % j["ns_per_launch_p50"])))
    p = B._reacquire(env, "plain", 4)
    add(Result("first_launch --reacquire", "plain", "PASS" if p.ok else "FAIL",
               measured="first %.1f us, again %s us" % (
                   p.json["first_ns"] / 1e3,
                   [round(x / 1e3, 1) for x in p.json["reacquire_ns"]]) if p.ok else "",
               detail="" if p.ok else p.why()))
    add(_one(env, "swap baseline", [env.prog("swap"), "--role", "baseline", "--bytes",
                                    str(env.opts.swap_bytes)],
             lambda j: (j["bad"] == 0,
                        "prefetch h2d %.1f d2h %.1f GB/s, faults %.1f GB/s" % (
                            j["prefetch_h2d_gbs"], j["prefetch_d2h_gbs"],
                            j["fault_gbs"]))))
    add(_one(env, "torch bench", [py, tc, "bench", "--seconds", "3"],
             lambda j: (True, "%.1f steps/s" % j["steps_per_s"])))
    bursts, why = B._burst_beside_training(env, "plain")
    add(Result("burst beside training", "plain", "PASS" if bursts else "FAIL",
               measured="first %s ms" % [round(b["first_ms"], 1) for b in bursts or []],
               detail=why))
    hd = env.fresh_dir("handoff-plain")
    h = env.start("handoff.holder", [env.prog("handoff"), "--role", "holder", "--ready",
                                     os.path.join(hd, "r"), "--last",
                                     os.path.join(hd, "l"), "--busy-ms", "200",
                                     "--hold-ms", "100"], env.base_env())
    w = env.start("handoff.waiter", [env.prog("handoff"), "--role", "waiter",
                                     "--ready", os.path.join(hd, "r")], env.base_env())
    rw, rh = env.finish(w, 60), env.finish(h, 60)
    add(Result("handoff programs", "plain", "PASS" if rw.ok and rh.ok else "FAIL",
               measured="waiter wait %.3f ms" % (
                   (rw.json["return_ns"] - rw.json["request_ns"]) / 1e6) if rw.ok else "",
               detail="" if rw.ok and rh.ok else rw.why() + rh.why()))
