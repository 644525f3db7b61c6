"""Benchmarks of the GPU suite, each beside plain CUDA measured in the same
run."""
import os
import time

from suite_lib import Result, Scheduler, attach_gpu, fmt, median, quiet_cpu
from suite_correct import FAIL, PASS, SKIP, _wait, unshared

MISS = "MISS"   # measured fine, target not met


def bench_torch_steps(env):
    name = "PyTorch training steps/s"
    argv = [env.opts.python, os.path.join(env.gpu_src, "torch_check.py"), "bench",
            "--seconds", str(env.opts.bench_seconds)]
    runs = {"plain": [], "shim": []}
    for rep in range(env.opts.bench_reps):
        for kind in ("plain", "shim"):
            e = env.base_env() if kind == "plain" else env.shim_env("bench")
            p = unshared(env.run("torch_bench.%s.%d" % (kind, rep), argv, e,
                                 timeout=240))
            if not p.ok:
                return Result(name, "benchmark", FAIL, detail=p.why())
            runs[kind].append(p.json["steps_per_s"])
    plain, shim = max(runs["plain"]), max(runs["shim"])
    ratio = shim / plain
    return Result(name, "benchmark", PASS if ratio >= 0.995 else MISS,
                  measured="%.1f steps/s (%.2f%%)" % (shim, 100 * ratio),
                  baseline="%.1f steps/s" % plain, target=">= 99.5% of plain",
                  detail="best of %d runs each, alternating; plain %s, shim %s" % (
                      env.opts.bench_reps,
                      "/".join("%.1f" % x for x in runs["plain"]),
                      "/".join("%.1f" % x for x in runs["shim"])),
                  data={"runs": runs, "ratio": ratio})


def bench_torch_alloc(env):
    """Stream-ordered allocation through PyTorch: 200 matmuls of 4096x4096
    float32 matrices, each into a fresh tensor, with PYTORCH_CUDA_ALLOC_CONF
    backend:cudaMallocAsync (a cuMemAllocAsync and a cuMemFreeAsync per
    matmul); plain and shim alternate, best of each (issue 14: 3x before
    the shim cached stream-ordered memory)."""
    name = "PyTorch cudaMallocAsync matmul loop"
    argv = [env.opts.python, os.path.join(env.gpu_src, "torch_check.py"), "alloc",
            "--matmuls", "200"]
    extra = {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}
    runs = {"plain": [], "shim": []}
    last = {}
    for rep in range(env.opts.bench_reps):
        for kind in ("plain", "shim"):
            e = env.base_env() if kind == "plain" else env.shim_env(
                "alloc", mem_limit="2G")
            p = unshared(env.run("torch_alloc.%s.%d" % (kind, rep), argv, e,
                                 timeout=240, extra_env=extra))
            if not p.ok:
                return Result(name, "benchmark", FAIL, detail=p.why())
            runs[kind].append(p.json["seconds"])
            last[kind] = p.json
    why = []
    if last["shim"]["managed"] != [1]:
        why.append("the shim's output tensor is not managed (%s)" %
                   last["shim"]["managed"])
    for kind in ("plain", "shim"):
        if last[kind]["allocator"] != "cudaMallocAsync":
            why.append("%s allocator is %s" % (kind, last[kind]["allocator"]))
    if why:
        return Result(name, "benchmark", FAIL, detail="; ".join(why),
                      data={"runs": runs})
    plain, shim = min(runs["plain"]), min(runs["shim"])
    ratio = shim / plain
    return Result(name, "benchmark", PASS if ratio <= 1.1 else MISS,
                  measured="%.3f s (%.2fx)" % (shim, ratio),
                  baseline="%.3f s" % plain, target="<= 1.1 x plain",
                  detail="200 matmuls 4096x4096 fp32, a fresh output each; best of %d "
                         "runs each, alternating; VSHARE_MEM_LIMIT 2G; plain %s, shim %s"
                         % (env.opts.bench_reps,
                            "/".join("%.3f" % x for x in runs["plain"]),
                            "/".join("%.3f" % x for x in runs["shim"])),
                  data={"runs": runs, "ratio": ratio,
                        "shim_max_reserved_mib": last["shim"]["max_reserved_mib"]})


def bench_jax(env):
    """JAX under vshare-run (its framework defaults: the cuda_async
    allocator) beside plain JAX: every probed array managed, the same
    result, and the speed of a jitted 4096x4096 matmul loop; best of
    bench_reps runs each, alternating (issue 14: JAX's other allocators
    give VMM memory, never managed)."""
    name = "JAX matmul loop under vshare-run"
    jc = os.path.join(env.gpu_src, "jax_check.py")
    run = os.path.join(env.vshare, "bin", "vshare-run")
    runs = {"plain": [], "shim": []}
    last = {}
    for rep in range(env.opts.bench_reps):
        for kind in ("plain", "shim"):
            e = env.base_env()
            e["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
            argv = [env.opts.python, jc]
            if kind == "shim":
                argv = [run, "--socket", env.socket, "--label", "jax",
                        "--mem-limit", "2G", "--"] + argv
            p = unshared(env.run("jax.%s.%d" % (kind, rep), argv, e,
                                 timeout=240))
            if not p.ok:
                if kind == "plain" and p.json and not p.json.get("ok", True):
                    return Result(name, "benchmark", SKIP,
                                  detail=p.json.get("error", p.why()))
                return Result(name, "benchmark", FAIL, detail=p.why())
            runs[kind].append(p.json["seconds"])
            last[kind] = p.json
    why = []
    if last["shim"]["managed"] != last["shim"]["probed"]:
        why.append("%d of %d arrays managed under vshare-run (allocator %s)" %
                   (last["shim"]["managed"], last["shim"]["probed"],
                    last["shim"]["allocator"]))
    if last["plain"]["managed"] != 0:
        why.append("plain JAX reports managed arrays")
    if last["shim"]["digest"] != last["plain"]["digest"]:
        why.append("results differ: %s plain, %s shim" % (
            last["plain"]["digest"], last["shim"]["digest"]))
    if why:
        return Result(name, "benchmark", FAIL, detail="; ".join(why),
                      data={"runs": runs, "last": last})
    plain, shim = min(runs["plain"]), min(runs["shim"])
    ratio = shim / plain
    return Result(name, "benchmark", PASS if ratio <= 1.1 else MISS,
                  measured="%.3f s (%.2fx), %d/%d arrays managed" % (
                      shim, ratio, last["shim"]["managed"],
                      last["shim"]["probed"]),
                  baseline="%.3f s, 0 managed" % plain,
                  target="<= 1.1 x plain, every array managed",
                  detail="jax %s; 200 jitted tanh(x @ b) of 4096x4096 fp32; "
                         "vshare-run sets XLA_PYTHON_CLIENT_ALLOCATOR=%s; "
                         "best of %d runs each, alternating; plain %s, shim %s"
                         % (last["shim"]["jax"], last["shim"]["allocator"],
                            env.opts.bench_reps,
                            "/".join("%.3f" % x for x in runs["plain"]),
                            "/".join("%.3f" % x for x in runs["shim"])),
                  data={"runs": runs, "ratio": ratio, "last": last})


def bench_launch(env):
    name = "empty-kernel launch (cuLaunchKernel)"
    argv = [env.prog("launch_bench")]
    runs = {"plain": [], "shim": []}
    fast = {"plain": [], "shim": []}
    cpu = quiet_cpu()   # one CPU for every run: less spread between processes
    for rep in range(env.opts.launch_reps):
        for kind in ("plain", "shim"):
            e = env.base_env() if kind == "plain" else env.shim_env("launch")
            p = unshared(env.run("launch.%s.%d" % (kind, rep), argv, e, timeout=60,
                                 cpu=cpu))
            if not p.ok:
                return Result(name, "benchmark", FAIL, detail=p.why())
            runs[kind].append(p.json["ns_per_launch_p50"])
            fast[kind].append(p.json["ns_per_launch_p10"])
    plain, shim = median(runs["plain"]), median(runs["shim"])
    delta = shim - plain
    d10 = median(fast["shim"]) - median(fast["plain"])
    spread = max(runs["plain"]) - min(runs["plain"])
    noise = _stderr(runs["plain"]) + _stderr(runs["shim"])
    return Result(name, "benchmark", PASS if delta <= 50 else MISS,
                  measured="%.0f ns (%+.0f +- %.0f ns)" % (shim, delta, noise),
                  baseline="%.0f ns" % plain, target="<= plain + 50 ns",
                  detail="median over %d processes each (alternating, CPU %s) of the "
                         "p50 of 200 batches x 256 launches; p10 delta %+.0f ns; plain "
                         "spread between processes %.0f ns%s" % (
                             env.opts.launch_reps, cpu, d10, spread,
                             "; the miss is within the noise" if delta > 50 and
                             delta - 50 < noise else ""),
                  data={"runs": runs, "p10": fast, "delta_ns": delta,
                        "delta_p10_ns": d10})


def _stderr(xs):
    """Standard error of the mean, as the noise of a median of few runs."""
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return (sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs)) ** 0.5


def _reacquire(env, kind, n):
    """One long-lived process loses the GPU n times (a fresh process takes
    it and exits) and times each re-acquisition; see first_launch.c."""
    d = env.fresh_dir("lock-" + kind)
    eager = {"CUDA_MODULE_LOADING": "EAGER"}
    if kind == "plain":
        mk = lambda label: env.base_env()  # noqa: E731
    else:
        # The pinger gives the GPU up 5 ms after a bumper asks, not 100.
        mk = lambda label: env.shim_env(label, extra={  # noqa: E731
            "VSHARE_IDLE_MS": "5" if label == "pinger" else "100"})
    pinger = env.start("lock.pinger." + kind, [env.prog("first_launch"), "--reacquire",
                                               str(n), "--dir", d], mk("pinger"), eager)
    bumps = []
    for i in range(n):
        if not _wait(os.path.join(d, "ready.%d" % i), 60, [pinger]):
            break
        bump = unshared(env.run("lock.bumper.%s.%d" % (kind, i),
                                [env.prog("first_launch")], mk("bumper"), 60, eager))
        if not bump.ok:
            env.kill(pinger)
            env.finish(pinger, 5)
            return bump
        bumps.append(bump.json["first_ns"])
        time.sleep(0.02)   # the scheduler has seen the bumper's exit
        open(os.path.join(d, "go.%d" % i), "w").close()
    res = unshared(env.finish(pinger, 60))
    if res.json is not None:
        res.json["bumper_first_ns"] = bumps
    return res


def bench_first_lock(env):
    """Uncontended acquisition: REQUEST to an idle scheduler, GRANT, gate
    open, measured as the launch call that needed it. Mode on, so that
    each bumper really takes the GPU from the pinger (in auto two small
    processes fit together and nobody would lose the lock)."""
    name = "uncontended lock acquisition"
    n = env.opts.lock_reps
    plain = _reacquire(env, "plain", n)
    with Scheduler(env, "lock", mode="on") as sched:
        attach_gpu(env)
        modes = sched.ensure_mode()
        shim = _reacquire(env, "shim", n)
    for p in (plain, shim):
        if not p.ok or len(p.json.get("reacquire_ns", [])) != n:
            return Result(name, "benchmark", FAIL, detail=p.why())
    pr = [x / 1e3 for x in plain.json["reacquire_ns"]]
    sr = [x / 1e3 for x in shim.json["reacquire_ns"]]
    bumps = [x / 1e6 for x in shim.json.get("bumper_first_ns", [])]
    p50, p50_plain = median(sr), median(pr)
    first = shim.json["first_ns"] / 1e3
    data = {"acquire_extra_us": p50 - p50_plain, "reacquire_us": sr, "plain_us": pr, "first_us": first,
            "bumper_wait_ms": bumps, "modes": modes}
    # In mode on a bumper runs only once the pinger has released, so every
    # timed launch was a real acquisition, provided the mode held.
    if not modes or any(m != "on" for m in modes):
        return Result(name, "benchmark", FAIL, data=data,
                      detail="the scheduler is not in mode on (%s): the pinger may "
                             "have kept the GPU" % modes)
    extra = p50 - p50_plain
    return Result(name, "benchmark", PASS if extra < 50 else MISS,
                  measured="p50 %.1f us (launch incl. %.1f us, max %.1f)" % (
                      extra, p50, max(sr)),
                  baseline="launch after a switch %.1f us" % p50_plain,
                  target="p50 < 50 us",
                  detail="launch call that had to acquire the lock (mode on, idle "
                         "scheduler), %d times in one process, minus the same launch "
                         "plain (after another process used the GPU); a new client's "
                         "first launch (connect, attach, request) took %.0f us (plain "
                         "%.0f us); bumpers waited p50 %.2f ms for the release" % (
                             n, first, plain.json["first_ns"] / 1e3, median(bumps)),
                  data=data)


def bench_handoff(env, idle_ms):
    name = "hand-off from idle holder"
    reps = env.opts.handoff_reps
    extra = {"VSHARE_IDLE_MS": str(idle_ms)}
    hands, plain_waits = [], []
    with Scheduler(env, "handoff", mode="on") as sched:
        attach_gpu(env)
        modes = sched.ensure_mode()
        for rep in range(reps):
            d = env.fresh_dir("handoff%d" % rep)
            ready, last = os.path.join(d, "ready"), os.path.join(d, "last")
            h = env.start("handoff.holder.%d" % rep,
                          [env.prog("handoff"), "--role", "holder", "--ready", ready,
                           "--last", last, "--busy-ms", "300", "--hold-ms", "1500"],
                          env.shim_env("holder", extra=extra))
            w = env.start("handoff.waiter.%d" % rep,
                          [env.prog("handoff"), "--role", "waiter", "--ready", ready],
                          env.shim_env("waiter", extra=extra))
            rw, rh = unshared(env.finish(w, 60)), unshared(env.finish(h, 60))
            if not (rw.ok and rh.ok):
                return Result(name, "benchmark", FAIL,
                              detail="; ".join(p.why() for p in (rw, rh) if not p.ok))
            hands.append((rw.json["return_ns"] - rh.json["last_ns"]) / 1e6)
    # Plain: the waiter does not wait at all (both run at once).
    for rep in range(reps):
        d = env.fresh_dir("handoffp%d" % rep)
        ready, last = os.path.join(d, "ready"), os.path.join(d, "last")
        h = env.start("handoff.plain.holder.%d" % rep,
                      [env.prog("handoff"), "--role", "holder", "--ready", ready,
                       "--last", last, "--busy-ms", "300", "--hold-ms", "200"],
                      env.base_env())
        w = env.start("handoff.plain.waiter.%d" % rep,
                      [env.prog("handoff"), "--role", "waiter", "--ready", ready],
                      env.base_env())
        rw, rh = env.finish(w, 60), env.finish(h, 60)
        if rw.ok:
            plain_waits.append((rw.json["return_ns"] - rw.json["request_ns"]) / 1e6)
    m = median(hands)
    target = idle_ms + 5
    return Result(name, "benchmark", PASS if m <= target else MISS,
                  measured="%.1f ms (p50 of %d; all %s)" % (
                      m, reps, ", ".join("%.1f" % x for x in hands)),
                  baseline="plain: no wait (%s ms)" % fmt(median(plain_waits), nd=3),
                  target="<= VSHARE_IDLE_MS (%d) + 5 ms" % idle_ms,
                  detail="waiter's launch return minus holder's last kernel end; "
                         "mode %s" % (modes or "on"),
                  data={"handoff_ms": hands, "plain_wait_ms": plain_waits})


def _burst_beside_training(env, kind, sched_name=None):
    """Start a training job, then interactive burst processes one after the
    other beside it; returns the bursts' JSON results."""
    d = env.fresh_dir("burst-" + kind)
    ready = os.path.join(d, "bg.ready")
    py = env.opts.python
    tc = os.path.join(env.gpu_src, "torch_check.py")
    secs = 12 + 8 * env.opts.burst_reps
    mk = (lambda label: env.base_env()) if kind == "plain" else \
        (lambda label: env.shim_env(label))
    bg = env.start("background." + kind, [py, tc, "background", "--seconds", str(secs),
                                          "--ready", ready], mk("training"))
    out = []
    try:
        if not _wait(ready, 120, [bg]):
            return None, "training job never got warm"
        for rep in range(env.opts.burst_reps):
            p = unshared(env.run("burst.%s.%d" % (kind, rep), [py, tc, "burst"],
                                 mk("burst"), timeout=120))
            if not p.ok:
                return None, p.why()
            out.append(p.json)
    finally:
        env.kill(bg)
        env.finish(bg, 10)
    return out, ""


def bench_burst(env):
    """Two rows from one run of plain and shim bursts beside a training job:
    the first burst of each process (it waits for the lock) and the later
    ones (the lock is held; what is left is the cost of converted memory,
    such as copies from pageable host memory, docs/benchmarks.md)."""
    name = "interactive burst beside training (auto)"
    name_later = "later bursts beside training, pageable copies"
    plain, why = _burst_beside_training(env, "plain")
    if plain is None:
        return [Result(name, "benchmark", FAIL, detail="plain: " + why),
                Result(name_later, "benchmark", FAIL, detail="plain: " + why)]
    with Scheduler(env, "burst", mode="auto", capacity=env.opts.capacity) as sched:
        attach_gpu(env)
        sched.ensure_mode()
        shim, why = _burst_beside_training(env, "shim")
        status = sched.status()
    if shim is None:
        return [Result(name, "benchmark", FAIL, detail="shim: " + why),
                Result(name_later, "benchmark", FAIL, detail="shim: " + why)]
    # The staged copies (helper threads, ring) must carry the data: every
    # burst process starts from the same tensors, so its first result is
    # plain's (within float rounding of a different kernel choice).
    want = plain[0]["sum"]
    bad = [r["sum"] for r in shim + plain
           if abs(r["sum"] - want) > 1e-4 * max(1.0, abs(want))]
    if bad:
        why = "burst results differ from plain's %r: %r" % (want, bad)
        return [Result(name, "benchmark", FAIL, detail=why),
                Result(name_later, "benchmark", FAIL, detail=why)]
    pf = median([r["first_ms"] for r in plain])
    sf = median([r["first_ms"] for r in shim])
    pl = median([r["later_ms_p50"] for r in plain])
    sl = median([r["later_ms_p50"] for r in shim])
    ratio = sf / pf
    later_ratio = sl / pl
    detail = ("p50 of %d burst processes started beside a training job; "
              "capacity %.0f GiB" % (env.opts.burst_reps,
                                     env.opts.capacity / (1 << 30)))
    first = Result(name, "benchmark", PASS if ratio <= 1.2 else MISS,
                   measured="first burst %.1f ms (%.2fx), later %.1f ms" % (sf, ratio, sl),
                   baseline="first burst %.1f ms, later %.1f ms" % (pf, pl),
                   target="first burst <= 1.2x plain",
                   detail=detail,
                   data={"plain": plain, "shim": shim, "status": status})
    later = Result(name_later, "benchmark", PASS if later_ratio <= 1.3 else MISS,
                   measured="later bursts %.1f ms (%.2fx)" % (sl, later_ratio),
                   baseline="plain %.1f ms" % pl,
                   target="later bursts <= 1.3x plain",
                   detail=detail + "; each burst copies two 16 MiB tensors from "
                          "pageable host memory (staged by the shim unless "
                          "VSHARE_STAGE_COPIES=0), ten matmuls, reads the sum",
                   data={"plain_later_ms": [r["later_ms_p50"] for r in plain],
                         "shim_later_ms": [r["later_ms_p50"] for r in shim],
                         "stage_copies": os.environ.get("VSHARE_STAGE_COPIES", "1")})
    return [first, later]


def swap_baseline(env):
    p = env.run("swap.baseline", [env.prog("swap"), "--role", "baseline",
                                  "--bytes", str(env.opts.swap_bytes)],
                env.base_env(), timeout=120)
    return p.json if p.ok else None


def bench_swapin(env, oversub_result, baseline):
    """Swap-in rate of the oversubscription check: first's wait for the GPU
    holds the scheduler round trip and its prefetch on grant, nothing else
    (the idle holder it takes over from swaps out lazily)."""
    name = "swap-in by prefetch on grant"
    if baseline is None:
        return Result(name, "benchmark", FAIL, detail="plain baseline failed")
    base = "prefetch %.1f GB/s; faults %.1f GB/s" % (
        baseline["prefetch_h2d_gbs"], baseline["fault_gbs"])
    first = (oversub_result.data or {}).get("first")
    if not first:
        return Result(name, "benchmark", FAIL, baseline=base,
                      detail="oversubscription check failed")
    gb = first["bytes"] / 1e9
    if first["touch_after_grant_ms"] > 3 * first["resident_touch_ms"]:
        return Result(name, "benchmark", MISS, baseline=base,
                      measured="%.1f GB/s by faults" % (
                          gb * 1e3 / first["touch_after_grant_ms"]),
                      target=">= 30 GB/s (H100)",
                      detail="no prefetch on grant seen: the data came back by page "
                             "faults in the first kernel (%.1f ms)" %
                             first["touch_after_grant_ms"])
    gbs = gb * 1e3 / first["wait_ms"]
    return Result(name, "benchmark", PASS if gbs >= 30 else MISS,
                  measured="%.1f GB/s" % gbs, baseline=base,
                  target=">= 30 GB/s (H100)",
                  detail="%.2f GB over the whole wait for the GPU (%.1f ms: drop, "
                         "release, grant, prefetch); first kernel after it %.2f ms "
                         "(resident %.2f ms)" % (gb, first["wait_ms"],
                                                 first["touch_after_grant_ms"],
                                                 first["resident_touch_ms"]),
                  data={"swap_in_gbs": gbs, "wait_ms": first["wait_ms"],
                        "baseline": baseline})
