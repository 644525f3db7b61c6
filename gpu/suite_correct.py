"""Correctness checks of the GPU suite: the same programs plain and under
the shim give the same results, their memory is managed under the shim,
two processes' kernels never overlap in mode on, and oversubscription
against a small capacity really moves data."""
import os
import time

from suite_lib import GIB, Result, Scheduler, attach_gpu, fmt

PASS, FAIL, SKIP, WARN = "PASS", "FAIL", "SKIP", "WARN"


def _pair(env, name, argv, timeout=120, extra_env=None, mem_limit=None):
    plain = env.run(name + ".plain", argv, env.base_env(), timeout, extra_env)
    shim = env.run(name + ".shim", argv, env.shim_env(name, mem_limit),
                   timeout, extra_env)
    unshared(shim)
    return plain, shim


def unshared(proc):
    """A shim process that could not reach the scheduler runs unshared
    (fail-open): that is a failure of the suite's set-up, not a pass."""
    if proc.rc == 0 and "running unshared" in proc.err:
        proc.rc = 99
        proc.err += "\n[suite] the shim ran unshared (no scheduler)"
    return proc


def check_drv(env):
    plain, shim = _pair(env, "drv_check", [env.prog("drv_check")])
    if not (plain.ok and shim.ok):
        return Result("driver API program (drv_check)", "correctness", FAIL,
                      detail="; ".join(p.why() for p in (plain, shim) if not p.ok))
    pj, sj = plain.json, shim.json
    same = pj["checksum"] == sj["checksum"] and pj["ok"] and sj["ok"]
    managed = all(v == 1 for v in sj["managed"].values())
    plain_dev = all(v == 0 for v in pj["managed"].values())
    ok = same and managed and plain_dev
    return Result("driver API program (drv_check)", "correctness",
                  PASS if ok else FAIL,
                  measured="checksum %s, managed %s" % (sj["checksum"], sj["managed"]),
                  baseline="checksum %s, managed %s" % (pj["checksum"], pj["managed"]),
                  target="same result; managed under shim",
                  detail="alloc/pitch/async alloc, 1D+2D copies, LaunchKernel(Ex), "
                         "graph replay, host func", data={"plain": pj, "shim": sj})


CAPTURE_ROUNDS = (("global", "relaxed", "relaxed"),
                  ("thread_local", "global", "relaxed"),
                  ("global", "global", "global"))
OK_NAME = "CUDA_SUCCESS"


def capture_table(text):
    """capture_probe's lines as {(capture, caller, thread, call): (rc, end)}."""
    table = {}
    for line in text.splitlines():
        if not line.startswith("capture="):
            continue
        f = dict(kv.split("=", 1) for kv in line.split())
        table[(f["capture"], f["caller"], f["thread"], f["call"])] = (f["rc"], f["end"])
    return table


def capture_rule(env):
    """The rule recorded on a GPU (tests/driver/capture_rule.txt; the pack
    copies it beside the suite), or None."""
    for path in (os.path.join(env.gpu_src, "capture_rule.txt"),
                 os.path.join(env.gpu_src, "..", "tests", "driver", "capture_rule.txt")):
        if os.path.exists(path):
            with open(path) as f:
                return capture_table(f.read())
    return None


def no_new_failure(plain, shim):
    """The shim's answer is the driver's, or a success where the driver
    refused (the shim's own memory is not the driver's pool)."""
    return shim == plain or shim == OK_NAME


def _side_expect(rule, capture, side, main):
    """What the real driver answers capture_side's calls, from the rule."""
    a = rule[(capture, "other", side, "alloc_async_other")]
    fr = rule[(capture, "other", side, "free_async_other")]
    m = rule[(capture, "self", main, "alloc_async_other")]
    end = OK_NAME
    for r in (a, fr, m):
        if r[1] != OK_NAME:
            end = r[1]
    return {"side_alloc": a[0], "side_free": fr[0], "main_alloc": m[0],
            "end_capture": end}


def _side_faults(j, expect, plain=None):
    """What is wrong in one capture_side answer: against the rule (plain),
    or against the plain run (shim)."""
    bad = []
    for k in ("side_alloc", "side_free", "main_alloc", "end_capture"):
        if plain is None and expect is not None and j[k] != expect[k]:
            bad.append("%s %s, the rule says %s" % (k, j[k], expect[k]))
        if plain is not None and not no_new_failure(plain[k], j[k]):
            bad.append("%s %s where plain %s" % (k, j[k], plain[k]))
    for who in ("side", "main"):
        if j[who + "_alloc"] == OK_NAME and (j[who + "_set"] != OK_NAME or
                                             j[who + "_ok"] != 1):
            bad.append("%s block set %s, data %d" % (who, j[who + "_set"], j[who + "_ok"]))
    if j["end_capture"] == OK_NAME and j["graph_ok"] != 1:
        bad.append("graph data %d" % j["graph_ok"])
    if plain is not None and j["managed"] == 0:
        bad.append("block not managed under the shim")
    return bad


def check_capture(env):
    """Which calls a capture refuses, plain and under the shim
    (gpu/capture_probe.c), and stream-ordered memory on other streams
    beside a capture (gpu/capture_side.c). Plain, the driver must answer
    as the recorded rule says (the test driver follows it); under the shim,
    no call may fail, and no capture end badly, where plain they did not."""
    name = "calls beside a capture (capture_probe, capture_side)"
    rule = capture_rule(env)
    pp = env.run("capture_probe.plain", [env.prog("capture_probe")], env.base_env(), 120)
    ps = unshared(env.run("capture_probe.shim", [env.prog("capture_probe")],
                          env.shim_env("capture_probe"), 120))
    faults, data = [], {"probe_plain": pp.out, "probe_shim": ps.out}
    for p in (pp, ps):
        if p.rc != 0:
            faults.append(p.why())
    plain_t, shim_t = capture_table(pp.out), capture_table(ps.out)
    if rule is None:
        faults.append("no recorded rule (tests/driver/capture_rule.txt)")
    elif plain_t != rule:
        diff = sorted(k for k in set(rule) | set(plain_t) if rule.get(k) != plain_t.get(k))
        faults.append("the driver differs from the recorded rule in %d cases, e.g. %s: %s, "
                      "recorded %s" % (len(diff), " ".join(diff[0]), plain_t.get(diff[0]),
                                       rule.get(diff[0])))
    worse = sorted(k for k in plain_t if k not in shim_t or not (
        no_new_failure(plain_t[k][0], shim_t[k][0]) and
        no_new_failure(plain_t[k][1], shim_t[k][1])))
    if worse:
        faults.append("under the shim %d calls fail that plain did not, e.g. %s: %s, plain %s"
                      % (len(worse), " ".join(worse[0]), shim_t.get(worse[0]),
                         plain_t[worse[0]]))
    for cap, side, main in CAPTURE_ROUNDS:
        argv = [env.prog("capture_side"), "--capture", cap, "--side", side, "--main", main]
        label = "capture_side.%s-%s-%s" % (cap, side, main)
        plain, shim = _pair(env, label, argv)
        data[label] = {"plain": plain.json, "shim": shim.json}
        if not (plain.ok and shim.ok):
            faults += [p.why() for p in (plain, shim) if not p.ok]
            continue
        expect = _side_expect(rule, cap, side, main) if rule else None
        faults += ["%s plain: %s" % (label, b) for b in _side_faults(plain.json, expect)]
        faults += ["%s shim: %s" % (label, b)
                   for b in _side_faults(shim.json, expect, plain.json)]
    return Result(name, "correctness", FAIL if faults else PASS,
                  measured="%d probe answers, %d capture_side rounds" % (
                      len(plain_t), len(CAPTURE_ROUNDS)),
                  baseline="recorded rule: %s" % ("%d answers" % len(rule) if rule else "none"),
                  target="plain as recorded; under the shim no new failure, data exact",
                  detail="; ".join(faults[:6]) or
                         "a free behind a 1.5 s kernel, then stream-ordered memory on "
                         "another stream during global and thread-local captures",
                  data=data)


def check_rt(env):
    plain, shim = _pair(env, "rt_check", [env.prog("rt_check")])
    if not (plain.ok and shim.ok):
        return Result("CUDA runtime program (rt_check)", "correctness", FAIL,
                      detail="; ".join(p.why() for p in (plain, shim) if not p.ok))
    pj, sj = plain.json, shim.json
    mt = sj["managed_type"]
    same = pj["checksum"] == sj["checksum"] and pj["ok"] and sj["ok"]
    managed = all(v == mt for v in sj["types"].values())
    plain_dev = all(v != mt for v in pj["types"].values())
    ok = same and managed and plain_dev
    return Result("CUDA runtime program (rt_check)", "correctness",
                  PASS if ok else FAIL,
                  measured="checksum %s, types %s" % (sj["checksum"], sj["types"]),
                  baseline="checksum %s, types %s" % (pj["checksum"], pj["types"]),
                  target="same result; cudaMemoryTypeManaged (%d)" % mt,
                  detail="cudaMalloc, streams, graph capture+replay, cudaMallocAsync",
                  data={"plain": pj, "shim": sj})


def _close(a, b, rtol):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def check_torch(env, backend):
    name = "PyTorch train + graph (%s)" % backend
    extra = {}
    if backend != "native":
        extra["PYTORCH_CUDA_ALLOC_CONF"] = "backend:%s" % backend
    argv = [env.opts.python, os.path.join(env.gpu_src, "torch_check.py"), "correct"]
    plain, shim = _pair(env, "torch_" + backend, argv, timeout=240, extra_env=extra)
    if not (plain.ok and shim.ok):
        return Result(name, "correctness", FAIL,
                      detail="; ".join(p.why() for p in (plain, shim) if not p.ok))
    pj, sj = plain.json, shim.json
    losses_same = len(pj["losses"]) == len(sj["losses"]) and all(
        _close(a, b, 1e-6) for a, b in zip(pj["losses"], sj["losses"]))
    weights_same = _close(pj["weights_sum"], sj["weights_sum"], 1e-9)
    managed = sj["managed_count"] == sj["probe_count"] and sj["probe_errors"] == 0
    plain_dev = pj["managed_count"] == 0
    graphs = pj["graph_ok"] and sj["graph_ok"]
    backend_ok = sj["allocator"] == backend and pj["allocator"] == backend
    ok = losses_same and weights_same and managed and plain_dev and graphs and backend_ok
    why = []
    for flag, text in ((losses_same, "losses differ"), (weights_same, "weights differ"),
                       (managed, "not all tensors managed"),
                       (plain_dev, "plain run reported managed memory"),
                       (graphs, "graph replay differs from eager"),
                       (backend_ok, "allocator backend is %s" % sj["allocator"])):
        if not flag:
            why.append(text)
    return Result(name, "correctness", PASS if ok else FAIL,
                  measured="loss[-1] %.6f, managed %d/%d, graph %s" % (
                      sj["losses"][-1], sj["managed_count"], sj["probe_count"],
                      "ok" if sj["graph_ok"] else "BAD"),
                  baseline="loss[-1] %.6f, managed %d/%d" % (
                      pj["losses"][-1], pj["managed_count"], pj["probe_count"]),
                  target="same losses; all managed; graph = eager",
                  detail="; ".join(why), data={"plain": pj, "shim": sj})


def _read_stamps(path):
    out = []
    with open(path) as f:
        for line in f:
            a, b = line.split()
            out.append((int(a), int(b)))
    return out


def overlap_stats(ivs_a, ivs_b):
    """Pairs of intervals (one from each list) that overlap, and the total
    overlapping time, by a sweep over both sorted lists."""
    a, b = sorted(ivs_a), sorted(ivs_b)
    i = j = pairs = 0
    ns = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            pairs += 1
            ns += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return pairs, ns


def switches(ivs_a, ivs_b):
    """How often the GPU went from one process's kernels to the other's."""
    tagged = sorted([(s, 0) for s, _ in ivs_a] + [(s, 1) for s, _ in ivs_b])
    return sum(1 for k in range(1, len(tagged)) if tagged[k][1] != tagged[k - 1][1])


def run_two_stampers(env, sched, n, spin_us):
    d = env.fresh_dir("stamp-%s" % sched.mode)
    go = os.path.join(d, "go")
    procs = []
    for who in ("a", "b"):
        argv = [env.prog("stamp"), "--n", str(n), "--spin-us", str(spin_us),
                "--batch", "4", "--out", os.path.join(d, who + ".txt"),
                "--ready", os.path.join(d, who + ".ready"), "--go", go]
        procs.append(env.start("stamp-%s-%s" % (sched.mode, who), argv,
                               env.shim_env("stamp-" + who)))
    for who in ("a", "b"):
        _wait(os.path.join(d, who + ".ready"), 60, procs)
    open(go, "w").close()
    res = [unshared(env.finish(p, 180)) for p in procs]
    if not all(r.ok for r in res):
        return None, "; ".join(r.why() for r in res if not r.ok)
    ivs = [_read_stamps(os.path.join(d, w + ".txt")) for w in ("a", "b")]
    pairs, ns = overlap_stats(ivs[0], ivs[1])
    spans = [(r.json["host_start_ns"], r.json["host_end_ns"]) for r in res]
    contended = max(spans[0][0], spans[1][0]) < min(spans[0][1], spans[1][1])
    return {"overlap_pairs": pairs, "overlap_ms": ns / 1e6,
            "switches": switches(ivs[0], ivs[1]), "contended": contended,
            "kernels": [len(x) for x in ivs],
            "managed": [r.json["managed"] for r in res]}, ""


def check_serialization(env, mode, tq_s):
    name = "two processes, mode %s: kernel overlap" % mode
    n, spin = env.opts.stamp_kernels, env.opts.stamp_spin_us
    with Scheduler(env, "stamp-" + mode, mode=mode, tq_s=tq_s) as sched:
        attach_gpu(env)
        modes = sched.ensure_mode()
        if tq_s:
            sched.set_tq(tq_s)
        st, why = run_two_stampers(env, sched, n, spin)
        modes_after = sched.gpu_modes()
    if st is None:
        return Result(name, "correctness", FAIL, detail=why)
    st["modes"] = modes_after or modes
    measured = "%d overlapping pairs (%.1f ms), %d switches" % (
        st["overlap_pairs"], st["overlap_ms"], st["switches"])
    if mode == "on":
        ok = st["overlap_pairs"] == 0 and st["contended"] and all(st["managed"])
        detail = "" if ok else ("kernels overlapped" if st["overlap_pairs"] else
                                "processes did not run at the same time")
        if modes_after and any(m != "on" for m in modes_after):
            ok, detail = False, "scheduler reports mode %s" % modes_after
        return Result(name, "correctness", PASS if ok else FAIL, measured=measured,
                      target="0 overlaps (GPU %globaltimer)", detail=detail, data=st)
    status = PASS if st["overlap_pairs"] > 0 else WARN
    return Result(name, "correctness", status, measured=measured,
                  target="may overlap",
                  detail="" if st["overlap_pairs"] else
                  "no overlap seen: the mode-on check proves less", data=st)


def _ms(gb, baseline, key):
    rate = (baseline or {}).get(key)
    return 1e3 * gb / rate if rate else None


def check_oversub(env, baseline):
    """Two processes of --swap-bytes each against a capacity that holds
    only one. "first" runs with VSHARE_SWAP_OUT=eager, "second" with the
    default lazy swap-out, so that first's final wait holds exactly one
    transfer: its own swap-in by prefetch on grant. See swap.c."""
    name = "oversubscription, eager swap-out"
    nbytes = env.opts.swap_bytes
    cap = int(nbytes * 1.5)
    limit = "%dM" % ((nbytes >> 20) + 256)
    d = env.fresh_dir("swap")
    f = lambda n: os.path.join(d, n)  # noqa: E731
    with Scheduler(env, "swap", mode="auto", capacity=cap) as sched:
        attach_gpu(env)
        sched.ensure_mode()
        common = ["--bytes", str(nbytes), "--go", f("go"), "--exit", f("exit")]
        a = env.start("swap-first", [env.prog("swap"), "--role", "first",
                                     "--ready", f("a.ready")] + common,
                      env.shim_env("swap-first", limit, {"VSHARE_SWAP_OUT": "eager"}))
        if not _wait(f("a.ready"), 60, [a]):
            return Result(name, "correctness", FAIL,
                          detail="first never got ready: " + env.finish(a, 5).why())
        b = env.start("swap-second", [env.prog("swap"), "--role", "second",
                                      "--ready", f("b.ready")] + common,
                      env.shim_env("swap-second", limit, {"VSHARE_SWAP_OUT": "lazy"}))
        got_b = _wait(f("b.ready"), 60, [a, b])
        time.sleep(0.5)        # let "second" go idle past VSHARE_IDLE_MS
        status = sched.status()
        open(f("go"), "w").close()
        ra = unshared(env.finish(a, 120))
        open(f("exit"), "w").close()
        rb = unshared(env.finish(b, 60))
    if not (got_b and ra.ok and rb.ok):
        return Result(name, "correctness", FAIL,
                      detail="; ".join(p.why() for p in (ra, rb) if not p.ok) or
                      "second never got ready")
    ja, jb = ra.json, rb.json
    gb = nbytes / 1e9
    # Evidence that data moved: first's swap-out delayed second's first
    # submission, and first's swap-in (or page faults) delayed first.
    # The shim swaps out in chunks over several streams, several times
    # faster than one prefetch call: the faster plain method is the yardstick.
    out_ms = 1e3 * gb / max(baseline["prefetch_d2h_gbs"],
                            baseline.get("prefetch_d2h_chunked_gbs", 0)) \
        if baseline else None
    in_ms = 1e3 * gb / baseline["prefetch_h2d_gbs"] if baseline else None
    # second's first launch waited for first's drain, eager swap-out and
    # release (handoff_ms; older swap programs timed only the fill).
    handoff = jb.get("handoff_ms", jb["fill_ms"])
    swapped_out = out_ms is not None and handoff > 0.3 * out_ms
    by_faults = ja["touch_after_grant_ms"] > 3 * ja["resident_touch_ms"]
    by_prefetch = in_ms is not None and ja["wait_ms"] > 0.3 * in_ms and not by_faults
    correct = ja["bad"] == 0 and jb["bad"] == 0 and ja["managed"] and jb["managed"]
    ok = correct and swapped_out and (by_prefetch or by_faults)
    how = ("swap-in by prefetch on grant" if by_prefetch else
           "swap-in by page faults (no prefetch on grant)" if by_faults else
           "no swap-in seen")
    data = {"first": ja, "second": jb, "capacity": cap, "status": status,
            "plain_out_ms": out_ms, "plain_in_ms": in_ms}
    # The plain equivalent of the swap-out: the same chunked prefetch of
    # a buffer whose pages never had host memory behind them (swap.c).
    cold = _ms(gb, baseline, "prefetch_d2h_chunked_cold_gbs")
    data["handoff_vs_cold"] = handoff / cold if cold else None
    return Result(name, "correctness", PASS if ok else FAIL,
                  measured="hand-off with swap-out %.0f ms%s (then fill %.0f ms); "
                           "swap-in wait %.1f ms, touch after "
                           "%.2f ms (resident %.2f)" % (
                               handoff, " (%.2fx)" % (handoff / cold) if cold else "",
                               jb["fill_ms"] - handoff, ja["wait_ms"],
                               ja["touch_after_grant_ms"], ja["resident_touch_ms"]),
                  baseline="out: one call %s ms, chunked over 4 streams %s ms, "
                           "the same from a fresh buffer %s ms; in: one call %s "
                           "ms, chunked %s ms" % (
                               fmt(_ms(gb, baseline, "prefetch_d2h_gbs")),
                               fmt(_ms(gb, baseline, "prefetch_d2h_chunked_gbs")),
                               fmt(cold), fmt(in_ms),
                               fmt(_ms(gb, baseline, "prefetch_h2d_chunked_gbs"))),
                  target="data intact; moved host<->GPU",
                  detail=("2 x %.2f GiB, capacity %.2f GiB; %s%s" % (
                      nbytes / GIB, cap / GIB, how,
                      "" if swapped_out else "; no eager swap-out seen"))
                  if correct else "data corrupted or not managed",
                  data=data)


def _wait(path, secs, procs=()):
    """Wait for a handshake file; False on timeout or as soon as one of
    procs has exited (it will never write the file then)."""
    t_end = time.monotonic() + secs
    while not os.path.exists(path):
        if time.monotonic() > t_end or any(p.poll() is not None for p in procs):
            return os.path.exists(path)
        time.sleep(0.005)
    return True
