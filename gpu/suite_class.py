"""Benchmarks of the classes and caps (docs/scheduler.md, "Classes and
caps"), beside plain CUDA in the same run. Selected by `--only class` (or
by name, with class-burst in suite_fair.py); not part of the default run.

  class-infer    an inference-like program (torch_check.py infer: a
                 request due every 50 ms, a few ms of GPU work each) in
                 the interactive class beside a training job
                 (torch_check.py bench), mode on, quantum --fair-tq: its
                 p99 latency against the same program alone (plain), and
                 the training job's steps/s against the job alone (plain);
                 plain side by side in the same run
  class-pace     what pacing costs a training job (torch_check.py bench)
                 while an idle interactive program is attached (the
                 scheduler grants it VS_GRANTF_PACE): its steps/s paced
                 against the same run with VSHARE_PACE_US=0, one after
                 the other under one scheduler
  class-claimer  a program that claims interactive and computes non-stop
                 (stamp, uid A) beside a batch one (stamp, uid B), for
                 --class-seconds: the time it held the GPU in the
                 interactive class (the scheduler's
                 vshare_class_held_seconds_total) against its budget,
                 and each one's GPU time from the kernels' own timestamps
                 (%globaltimer)
  class-cap      uid A capped at 25% (max_share_pct) running stamp alone
                 for --class-seconds, then beside uid B: A's GPU time from
                 the kernels' timestamps; plain alone for the baseline
  prio           gpu/prio_bench.py's inference-like client (periodic and
                 Poisson arrivals) beside training: solo, plain, MPS with
                 client priority, vshare auto and on
  prio-serve     the same program's LLM-serving-like client and notebook
                 cells beside training, and the training alone under
                 vshare (the cost of the gate); apart from prio so that
                 each fits in one call of a lent machine

The two-user checks need root (setpriv) and run stamp, which needs no
Python packages. Safety: stamp holds a few KiB; every shim process has
VSHARE_MEM_LIMIT and every scheduler the suite's capacity."""
import json
import os
import re
import urllib.request

from suite_correct import FAIL, PASS, SKIP, _read_stamps, _wait, unshared
from suite_fair import (MISS, USER_A, USER_B, _as, _pct, _public, _ready,
                        _sched, _tc, _two_users)
from suite_lib import Result, median, run_selected

CLASS_CHECKS = ["class-infer", "class-pace", "class-claimer", "class-cap",
                "prio", "prio-serve"]
PACE_KEEP = 0.97         # class-pace: paced training at least this of unpaced
INFER_P99_X = 3.0        # class-infer: p99 at most this times solo
INFER_TRAIN = 0.80       # class-infer: training at least this of solo
BUDGET_PCT = 20          # the node's interactive_budget_pct (default)
CAP_PCT = 25
STAMP_SPIN_US, STAMP_BATCH = 5000, 4
METRICS_PORT = 19417


# ---- class-infer -----------------------------------------------------------

def _infer_pair(env, name, mk, seconds, klass=None):
    """The training job for `seconds` with the inference program beside it
    (klass asked for if given); (bench JSON, infer JSON, why)."""
    py, tc = env.opts.python, _tc(env)
    d = env.fresh_dir("class-infer-" + name)
    ready, stop = os.path.join(d, "infer.ready"), os.path.join(d, "stop")
    ienv = mk("inference")
    if klass:
        ienv["VSHARE_CLASS"] = klass
        ienv.update(env.interactive_env())
    inf = env.start("class.infer." + name,
                    [py, tc, "infer", "--stop-file", stop, "--ready", ready],
                    ienv)
    if not _wait(ready, 120, [inf]):
        env.kill(inf)
        return None, None, env.finish(inf, 10).why()
    train = unshared(env.run("class.train." + name,
                             [py, tc, "bench", "--seconds", str(seconds)],
                             mk("training"), timeout=seconds + 180))
    open(stop, "w").close()
    i = unshared(env.finish(inf, 60))
    if not train.ok:
        return None, None, train.why()
    if not i.ok:
        return None, None, i.why()
    return train.json, i.json, ""


def bench_class_infer(env):
    o = env.opts
    name = "inference-like program (interactive) beside training"
    py, tc, secs = o.python, _tc(env), o.class_seconds // 3 or 20
    plain = lambda label: env.base_env()  # noqa: E731
    solo_i = unshared(env.run("class.infer.solo", [py, tc, "infer",
                                                   "--seconds", str(secs)],
                              env.base_env(), timeout=secs + 120))
    solo_t = unshared(env.run("class.train.solo", [py, tc, "bench",
                                                   "--seconds", str(secs)],
                              env.base_env(), timeout=secs + 120))
    for p in (solo_i, solo_t):
        if not p.ok:
            return Result(name, "benchmark", FAIL, detail="solo: " + p.why())
    pt, pi, why = _infer_pair(env, "plain", plain, secs)
    if why:
        return Result(name, "benchmark", FAIL, detail="plain pair: " + why)
    with _sched(env, "infer", "fair") as sched:
        why = _ready(env, sched, "fair")
        if not why:
            st, si, why = _infer_pair(env, "class",
                                      lambda label: env.shim_env(label), secs,
                                      klass="interactive")
    if why:
        return Result(name, "benchmark", FAIL, detail=why)
    solo_p99, solo_steps = solo_i.json["p99_ms"], solo_t.json["steps_per_s_mean"]
    ratio = st["steps_per_s_mean"] / solo_steps
    ok = si["p99_ms"] <= INFER_P99_X * solo_p99 and ratio >= INFER_TRAIN
    return Result(
        name, "benchmark", PASS if ok else MISS,
        measured="p50 %.2f ms, p99 %.2f ms, max %.1f ms (%d of %d requests);"
                 " training %.1f%% of solo" % (
                     si["p50_ms"], si["p99_ms"], si["max_ms"], si["requests"],
                     si["due"], 100 * ratio),
        baseline="solo p50 %.2f / p99 %.2f ms; plain side by side p50 %.2f / "
                 "p99 %.2f ms (%d requests), training %.1f%% of solo" % (
                     solo_i.json["p50_ms"], solo_p99, pi["p50_ms"],
                     pi["p99_ms"], pi["requests"],
                     100 * pt["steps_per_s_mean"] / solo_steps),
        target="p99 <= %.0fx solo; training >= %d%% of solo" % (
            INFER_P99_X, 100 * INFER_TRAIN),
        detail="torch_check.py infer (a request due every 50 ms: a pageable "
               "256x2048 input copied in, 24 matmul+tanh of 2048x2048, the "
               "sum read back; latency from when it was due) under "
               "VSHARE_CLASS=interactive beside torch_check.py bench for %d s;"
               " mode on, quantum %d s, policy fair; solo runs are plain"
               % (secs, o.fair_tq),
        data={"solo_infer": solo_i.json, "solo_train": solo_t.json,
              "plain": {"train": pt, "infer": pi},
              "class": {"train": st, "infer": si}})


# ---- class-pace ------------------------------------------------------------

def bench_class_pace(env):
    o = env.opts
    name = "training paced beside an idle interactive program"
    py, tc, secs = o.python, _tc(env), o.class_seconds // 3 or 20
    d = env.fresh_dir("class-pace")
    ready = os.path.join(d, "idle.ready")
    runs, why = {}, ""
    with _sched(env, "pace", "fair") as sched:
        why = _ready(env, sched, "fair")
        idle = None
        if not why:
            # One request after its warm-up, then none for an hour: it
            # stays attached, in the interactive class, and idle.
            ienv = env.shim_env("idle-interactive")
            ienv["VSHARE_CLASS"] = "interactive"
            idle = env.start("class.pace.idle",
                             [py, tc, "infer", "--period-ms", "3600000",
                              "--stop-file", os.path.join(d, "stop"),
                              "--ready", ready], ienv)
            if not _wait(ready, 120, [idle]):
                why = "the idle interactive program never got ready"
        for kind, extra in (("paced", {"VSHARE_LOG_LEVEL": "debug"}),
                            ("unpaced", {"VSHARE_PACE_US": "0"})):
            if why:
                break
            p = unshared(env.run("class.pace." + kind,
                                 [py, tc, "bench", "--seconds", str(secs)],
                                 env.shim_env("training", extra=extra),
                                 timeout=secs + 180))
            if not p.ok:
                why = "%s: %s" % (kind, p.why())
            runs[kind] = p
        if idle is not None:
            env.kill(idle)
            env.finish(idle, 10)
    if why:
        return Result(name, "benchmark", FAIL, detail=why)
    if "paced: an interactive program shares it" not in runs["paced"].err:
        return Result(name, "benchmark", FAIL,
                      detail="the training job was never granted with "
                             "VS_GRANTF_PACE beside the interactive program")
    sp, su = (runs[k].json["steps_per_s_mean"] for k in ("paced", "unpaced"))
    return Result(
        name, "benchmark", PASS if sp >= PACE_KEEP * su else MISS,
        measured="%.2f steps/s paced (%.1f%% of unpaced)" % (sp, 100 * sp / su),
        baseline="%.2f steps/s with VSHARE_PACE_US=0" % su,
        target=">= %d%% of unpaced" % (100 * PACE_KEEP),
        detail="torch_check.py bench for %d s under the shim, mode on, policy "
               "fair, beside torch_check.py infer in the interactive class, "
               "attached and idle after one request; then the same with "
               "VSHARE_PACE_US=0" % secs,
        data={"paced": runs["paced"].json, "unpaced": runs["unpaced"].json})


# ---- two users with stamp --------------------------------------------------

def _stamp_pub(env):
    """A folder both test users can use, with stamp, its kernels and the
    shim copied in; None and why not, when the two users cannot be had."""
    why = _two_users()
    if why:
        return None, why
    return _public(env, "class-users", (
        env.prog("stamp"), os.path.join(env.gpu_bin, "vsg_kernels.fatbin"),
        env.shim)), ""


def _stampers(env, pub, runs, seconds, sched=None):
    """Start stamp once per (uid, extra env) in runs, all together, for
    `seconds`; per run its kernel intervals (ns) and JSON, or None and
    why. sched None: plain, as root."""
    d = env.fresh_dir("class-stamp")
    os.chmod(d, 0o777)
    go = os.path.join(d, "go")
    procs = []
    for k, (uid, extra) in enumerate(runs):
        out = os.path.join(d, "s%d.txt" % k)
        argv = [os.path.join(pub, "stamp"), "--n", "1000000", "--seconds",
                str(seconds), "--spin-us", str(STAMP_SPIN_US), "--batch",
                str(STAMP_BATCH), "--out", out, "--ready",
                os.path.join(d, "s%d.ready" % k), "--go", go]
        if sched is None:
            e = env.base_env()
        else:
            argv = _as(uid, argv)
            e = env.shim_env("stamp-%s" % uid, mem_limit="256M", extra=dict(
                extra, LD_PRELOAD=os.path.join(pub,
                                               os.path.basename(env.shim))))
        e["VSG_FATBIN"] = os.path.join(pub, "vsg_kernels.fatbin")
        procs.append((out, env.start("class.stamp.%d" % k, argv, e)))
    ps = [p for _, p in procs]
    for k in range(len(runs)):
        if not _wait(os.path.join(d, "s%d.ready" % k), 60, ps):
            return None, "stamp %d never got ready" % k
    open(go, "w").close()
    res = []
    for out, p in procs:
        r = unshared(env.finish(p, seconds + 60))
        if not r.ok:
            return None, r.why()
        res.append((_read_stamps(out), r.json))
    return res, ""


def _busy_share(ivs, t0, t1):
    """The share of [t0, t1) (ns) that the kernels in ivs ran."""
    busy = sum(max(0, min(b, t1) - max(a, t0)) for a, b in ivs)
    return busy / max(1, t1 - t0)


def _window(res):
    """The span every stamper ran in: from the first kernel to the last."""
    starts = [ivs[0][0] for ivs, _ in res if ivs]
    ends = [ivs[-1][1] for ivs, _ in res if ivs]
    return min(starts), max(ends)


def _metrics():
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics"
                                    % METRICS_PORT, timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def _metric_sum(text, name, **labels):
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all('%s="%s"' % kv in line for kv in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def bench_class_claimer(env):
    o = env.opts
    name = "non-stop interactive claimer beside a batch job"
    pub, why = _stamp_pub(env)
    if why:
        return Result(name, "benchmark", SKIP, detail=why)
    secs = o.class_seconds
    plain, why = _stampers(env, pub, [("0", {}), ("0", {})], 10)
    if why:
        return Result(name, "benchmark", FAIL, detail="plain: " + why)
    pw = _window(plain)
    os.chmod(env.tmp, 0o711)
    try:
        with _sched(env, "claimer", "fair", socket_mode="0666",
                    metrics_listen="127.0.0.1:%d" % METRICS_PORT) as sched:
            why = _ready(env, sched, "fair")
            if not why:
                res, why = _stampers(
                    env, pub, [(USER_A, {"VSHARE_CLASS": "interactive"}),
                               (USER_B, {})], secs, sched)
                text = _metrics()
                status = sched.status() or {}
    finally:
        os.chmod(env.tmp, 0o700)
    if why:
        return Result(name, "benchmark", FAIL, detail=why)
    t0, t1 = _window(res)
    a, b = (_busy_share(ivs, t0, t1) for ivs, _ in res)
    held_int = _metric_sum(text, "vshare_class_held_seconds_total", **{
        "class": "interactive"})
    grants = {c: _metric_sum(text, "vshare_class_grants_total", **{"class": c})
              for c in ("interactive", "batch")}
    drops = {r: _metric_sum(text, "vshare_drops_total", reason=r)
             for r in ("class", "budget")}
    span = (t1 - t0) / 1e9
    pct_int = 100 * held_int / span
    ok = bool(text) and pct_int <= BUDGET_PCT + 3 and b >= 0.40
    return Result(
        name, "benchmark", PASS if ok else MISS,
        measured="interactive %.1f%% of %.0f s (%.1f s); GPU time claimer "
                 "%.1f%%, batch job %.1f%%" % (pct_int, span, held_int,
                                               100 * a, 100 * b),
        baseline="plain side by side (10 s): %.1f%% / %.1f%%" % (
            100 * _busy_share(plain[0][0], *pw),
            100 * _busy_share(plain[1][0], *pw)),
        target="interactive <= budget %d%% + 3; batch job >= 40%%"
               % BUDGET_PCT,
        detail="stamp (kernels of %d us, synchronized every %d) as uid %s "
               "under VSHARE_CLASS=interactive, beside stamp as uid %s, "
               "started together for %d s; mode on, quantum %d s, policy "
               "fair, interactive_budget_pct %d over the half-life (60 s); "
               "interactive time: the scheduler's "
               "vshare_class_held_seconds_total{class=\"interactive\"}; "
               "GPU time: the kernels' %%globaltimer stamps; grants %s; "
               "drops %s" % (
                   STAMP_SPIN_US, STAMP_BATCH, USER_A, USER_B, secs,
                   o.fair_tq, BUDGET_PCT, json.dumps(grants),
                   json.dumps(drops)),
        data={"claimer_share": a, "batch_share": b, "interactive_s": held_int,
              "span_s": span, "metrics_found": bool(text),
              "status": status.get("gpus", [{}])[0].get("members")
              if status.get("gpus") else None})


def bench_class_cap(env):
    o = env.opts
    name = "user capped at %d%%: GPU time alone and beside another" % CAP_PCT
    pub, why = _stamp_pub(env)
    if why:
        return Result(name, "benchmark", SKIP, detail=why)
    secs = o.class_seconds
    plain, why = _stampers(env, pub, [("0", {})], 10)
    if why:
        return Result(name, "benchmark", FAIL, detail="plain: " + why)
    os.chmod(env.tmp, 0o711)
    try:
        with _sched(env, "cap", "fair", socket_mode="0666",
                    policy_users={USER_A: {"max_share_pct": CAP_PCT}},
                    cap_window_s=10) as sched:
            why = _ready(env, sched, "fair")
            if not why:
                alone, why = _stampers(env, pub, [(USER_A, {})], secs, sched)
            if not why:
                beside, why = _stampers(env, pub, [(USER_A, {}), (USER_B, {})],
                                        secs, sched)
    finally:
        os.chmod(env.tmp, 0o700)
    if why:
        return Result(name, "benchmark", FAIL, detail=why)
    wa = _window(alone)
    a_alone = _busy_share(alone[0][0], *wa)
    wb = _window(beside)
    a_beside = _busy_share(beside[0][0], *wb)
    b_beside = _busy_share(beside[1][0], *wb)
    ok = abs(100 * a_alone - CAP_PCT) <= 3 and 100 * a_beside <= CAP_PCT + 3
    return Result(
        name, "benchmark", PASS if ok else MISS,
        measured="alone %.1f%% of %.0f s; beside uid %s: %.1f%% (the other "
                 "%.1f%%)" % (100 * a_alone, (wa[1] - wa[0]) / 1e9, USER_B,
                              100 * a_beside, 100 * b_beside),
        baseline="plain alone: %.1f%%" % (
            100 * _busy_share(plain[0][0], *_window(plain))),
        target="alone %d +- 3%%; beside <= %d%%" % (CAP_PCT, CAP_PCT + 3),
        detail="stamp (kernels of %d us, synchronized every %d) as uid %s, "
               "policy_users max_share_pct %d, cap_window_s 10, for %d s "
               "alone and %d s beside stamp as uid %s; GPU time from the "
               "kernels' %%globaltimer stamps; mode on, policy fair" % (
                   STAMP_SPIN_US, STAMP_BATCH, USER_A, CAP_PCT, secs, secs,
                   USER_B),
        data={"alone": a_alone, "beside": a_beside, "other": b_beside})


# ---- where a preemption's time goes ----------------------------------------

_TAKEN = re.compile(r"GPU \d+ taken: calls in flight done in ([\d.]+) ms, "
                    r"queued work drained in ([\d.]+) ms")
_RELEASED = re.compile(r"GPU \d+ released \(([^)]*)\) ([\d.]+) ms after the "
                       r"drop request")
_GRANTED = re.compile(r"GPU \d+ granted \([^)]*\) after ([\d.]+) ms of "
                      r"waiting; swap-in ([\d.]+) ms")


def preempt_split(logs):
    """From the shims' debug lines of a class-burst run: the medians of a
    preemption's parts (ms), or None when the lines are not there."""
    taken = [(float(a), float(b)) for a, b in _TAKEN.findall(logs["training"])]
    rel = [float(ms) for why, ms in _RELEASED.findall(logs["training"])
           if not why.startswith("idle")]
    got = [(float(a), float(b)) for a, b in
           _GRANTED.findall(logs["interactive"])][1:]
    if not taken or not rel or not got:
        return None
    inflight, drain = median([t[0] for t in taken]), median([t[1] for t in taken])
    release = median(rel)
    wait = median([g[0] for g in got])
    return {"preemptions": len(rel), "inflight_ms": inflight,
            "drain_ms": drain, "release_ms": release,
            "release_other_ms": max(0.0, release - inflight - drain),
            "wait_ms": wait, "grant_ms": max(0.0, wait - release),
            "swapin_ms": median([g[1] for g in got]),
            "wait_p99_ms": _pct([g[0] for g in got], 99)}


# ---- prio --------------------------------------------------------------

# Priority at kernel granularity (gpu/prio_bench.py): the targets, as
# (arrangement, client p50 x solo, p99 x solo, training share of solo);
# None where there is none.
PRIO_TARGETS = [
    ("auto_periodic", 1.15, 1.3, 0.85),
    ("auto_poisson", None, 1.6, 0.85),
    ("on_periodic", None, 2.0, 0.80),
    ("auto_llm", 1.1, None, 0.85),
    ("on_llm", None, None, 0.60),
    ("auto_cells", 1.2, None, None),
    ("on_cells", 1.2, None, None),
]


def _prio_row(res, key, p50x, p99x, train):
    """One arrangement of prio_bench's JSON against its targets, beside
    the plain and MPS figures of the same run."""
    kind = key.split("_", 1)[1]
    solo, pair = res.get("solo_infer_" + kind), res.get(key)
    name = "priority: %s" % key.replace("_", ", ")
    if not isinstance(pair, list) or not solo or "error" in solo:
        return Result(name, "benchmark", SKIP, detail="not run: %s" % (
            (solo or {}).get("error", "no result")))
    ps = "later_ms_p50" if kind == "cells" else "p50_ms"
    pt = "later_ms_p90" if kind == "cells" else "p99_ms"
    st = res["solo_train"]["steps_per_s_mean"]
    t, c = pair
    ok = (p50x is None or c[ps] <= p50x * solo[ps]) and \
         (p99x is None or c[pt] <= p99x * solo[pt]) and \
         (train is None or t["steps_per_s_mean"] >= train * st)
    ok = ok and c.get("answers", c.get("sum")) == solo.get("answers",
                                                            solo.get("sum"))
    # The training's loss after its warm-up, to the bit (torch_check.py
    # bench): vshare never rewrites a kernel.
    ok = ok and t.get("warmup_loss") == res["solo_train"].get("warmup_loss")
    base = []
    for other in ("plain", "mps"):
        v = res.get("%s_%s" % (other, kind))
        if isinstance(v, list):
            base.append("%s p50 %.2f / tail %.2f ms, training %.1f%%" % (
                other, v[1][ps], v[1][pt],
                100 * v[0]["steps_per_s_mean"] / st))
    return Result(
        name, "benchmark", PASS if ok else MISS,
        measured="p50 %.2f ms, tail %.2f ms (solo %.2f / %.2f); training "
                 "%.1f%% of solo" % (c[ps], c[pt], solo[ps], solo[pt],
                                     100 * t["steps_per_s_mean"] / st),
        baseline="; ".join(base),
        target="p50 <= %sx, tail <= %sx solo, training >= %s of solo, "
               "answers and training loss as solo's" % (p50x, p99x, train),
        detail="gpu/prio_bench.py (tail: p99, cells p90); the training's "
               "kernels %s" % res.get("kernels"), data={key: pair})


# prio_bench.py's arrangements per check: --only, --kinds, and the
# targets whose figures they give.
PRIO_PARTS = {
    "prio": ("solo,plain,mps,auto,on", "periodic,poisson",
             ["auto_periodic", "auto_poisson", "on_periodic"]),
    "prio-serve": ("solo,plain,mps,auto,on,alone,llm,cells", "",
                   ["auto_llm", "on_llm", "auto_cells", "on_cells"]),
}
PRIO_RUNS = 14           # prio_bench's runs of one part, at most, with their
PRIO_RUN_EXTRA_S = 25    # start and warm-up: the bound on the part's time


def _bench_prio(env, part):
    o = env.opts
    only, kinds, keys = PRIO_PARTS[part]
    secs = o.class_seconds // 3 or 15
    d = env.fresh_dir(part)
    p = env.run(part, [o.python, os.path.join(env.gpu_src, "prio_bench.py"),
                       "--vshare-dir", env.vshare, "--out", d,
                       "--seconds", str(secs), "--only", only,
                       "--kinds", kinds, "--mem-limit", o.mem_limit,
                       "--capacity", o.capacity],
                env.base_env(), timeout=PRIO_RUNS * (secs + PRIO_RUN_EXTRA_S))
    if not p.ok:
        return Result("priority at kernel granularity (%s)" % part,
                      "benchmark", FAIL, detail=p.why())
    res = p.json
    rows = [_prio_row(res, *t) for t in PRIO_TARGETS if t[0] in keys]
    alone = res.get("alone_train")
    if alone:
        share = alone["steps_per_s_mean"] / res["solo_train"]["steps_per_s_mean"]
        rows.append(Result("priority: a batch program alone", "benchmark",
                           PASS if share >= 0.995 else MISS,
                           measured="%.1f%% of plain" % (100 * share),
                           target=">= 99.5% of plain"))
    return rows


def bench_prio(env):
    return _bench_prio(env, "prio")


def bench_prio_serve(env):
    return _bench_prio(env, "prio-serve")


def run_class(env, guard, selected, guarded_many):
    """The class checks that are selected, each after the memory guard
    (stamp's few KiB need none)."""
    run_selected(guard, selected, guarded_many, [
        ("class-infer", 2 * env.opts.mem_limit_bytes, bench_class_infer),
        ("class-pace", 2 * env.opts.mem_limit_bytes, bench_class_pace),
        ("class-claimer", 0, bench_class_claimer),
        ("class-cap", 0, bench_class_cap),
        ("prio", 2 * env.opts.mem_limit_bytes, bench_prio),
        ("prio-serve", 2 * env.opts.mem_limit_bytes, bench_prio_serve)])
