#!/usr/bin/env python3
"""End to end: the queue order of a serialized GPU (scheduler keys
`policy`, `min_slice_ms`), with libvshare.so preloaded into the example
programs on the CUDA test driver and the real vshare-scheduler in mode
`on`. The driver's kernel log is the ground truth: when each program's
kernels ran, and that no two programs' kernels ever ran at once.

usage: e2e_policy.py SCHEDULER VSHARECTL LIBVSHARE TESTDRIVER_DIR
                     EXECLOG_PY EXAMPLES_DIR SCENARIO | --list
Each function t_NAME is scenario NAME and ctest gate.policy.NAME
(tests/gate/CMakeLists.txt). Exit 0 pass, 1 fail, 77 skipped.

The bounds are generous for a loaded 2-core machine (and sanitizer
builds), but each sits far from what the other policy gives: a waiter
under `fair` is served within ~2 s where `fcfs` makes it wait a quantum,
and two users share 50/50 where `fcfs` gives the one with fewer
processes ~20%."""
import json
import os
import shutil
import subprocess
import sys
import time

from e2e_lib import (SAN_PRELOAD, Runner, Scheduler, check, driver_env, fail, load_execlog,
                     main, now_ns, scenarios, script_args, tmpdir)

SCHED, CTL, SHIM, TD_DIR, EXECLOG, EXAMPLES = script_args(6)
# The launcher of the build tree, beside vsharectl.
VSHARE_RUN = os.path.join(os.path.dirname(CTL), "vshare-run")
SAN = SAN_PRELOAD
execlog = load_execlog(EXECLOG)

# Interactive scenarios: a quantum long enough that waiting for it cannot
# pass for a fair grant, and a short slice.
TQ_S = 10
SLICE_MS = 300
GAP_MS = 300              # vs-bursty's idle time before each burst
# The loop programs' shim settings: the fixed idle gap, a minute long.
NEVER_IDLE = {"VSHARE_IDLE_LEARN": 0, "VSHARE_IDLE_MS": 60000}
BURST_KERNELS = 5
BURST_KERNEL_US = 2000
FIRST_BURST_MAX_S = 2.0   # fair: wait for the first burst, and each later one
# Two users: a short quantum, so that fcfs turns over several times.
USERS_TQ_S = 1
USERS_SECONDS = 12        # each compute program's run
USERS_UIDS = ("23401", "23402")  # two unprivileged uids, no passwd entry

TMP = tmpdir()
os.chmod(TMP, 0o755)
LOG, ENV = driver_env(TMP, TD_DIR, SHIM, SAN)
run = Runner(ENV)
SCHEDS = []


def example(name):
    return os.path.join(EXAMPLES, name)


def scheduler(policy, tq_s, **extra):
    s = Scheduler(SCHED, TMP, mode="on", tq_s=tq_s, policy=policy,
                  min_slice_ms=SLICE_MS, **extra)
    SCHEDS.append(s)
    s.start()
    return s


def kernels(pid=None):
    """Kernels in the log so far (a line being written is skipped)."""
    try:
        ops = execlog.load(LOG)
    except (OSError, ValueError):
        return []
    return sorted(o for o in execlog.select(ops)
                  if pid is None or o.pid == pid)


def wait_kernel(p, timeout=10):
    """Waits until p has run a kernel: it holds the GPU."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if kernels(p.pid):
            return
        if p.poll() is not None:
            break
        time.sleep(0.02)
    fail("%s ran no kernel within %d s" % (p.args, timeout))


def finish_ok(*procs, timeout=40):
    for p in procs:
        run.finish(p, timeout)
        if p.returncode != 0:
            fail("%s exited %d:\n%s\n%s" % (p.args, p.returncode, p.out,
                                           p.err))


def gpu_status(sock):
    """The first GPU of `vsharectl --json status`, or None."""
    r = subprocess.run([CTL, "-s", sock, "--json", "status"],
                       capture_output=True, text=True, timeout=5)
    if r.returncode != 0:
        return None, None
    doc = json.loads(r.stdout)
    return (doc["gpus"][0] if doc.get("gpus") else None), doc


def check_policy(sock, policy):
    """The scheduler reports the policy and slice it was configured with."""
    g, _ = gpu_status(sock)
    check(g is not None and g.get("policy") == policy
          and g.get("min_slice_ms") == SLICE_MS,
          "status: the GPU runs policy %s with min_slice_ms %d (%s)"
          % (policy, SLICE_MS, g and {k: g.get(k) for k in
                                      ("policy", "min_slice_ms")}))


def start(argv, **env):
    return run.start([str(a) for a in argv], **env)


def bursty(n):
    return start([example("vs-bursty"), "--bursts", n,
                      "--kernels", BURST_KERNELS,
                      "--kernel-us", BURST_KERNEL_US, "--gap-ms", GAP_MS,
                      "--quiet"])


def compute(seconds):
    """vs-compute: 10 ms kernels back to back on a small working set; it
    never goes idle, so only the policy takes the GPU from it. These
    scenarios are about the queue's order, so it never counts as idle
    either (NEVER_IDLE): a loaded or sanitized machine that stops its
    thread for its idle gap would make it look idle and give the GPU
    away before the policy does."""
    return start([example("vs-compute"), "--seconds", seconds,
                  "--kernel-ms", 10, "--mem", "64K", "--progress-ms", 0],
                 **NEVER_IDLE)


def bursts_of(pid):
    """The bursts of a vs-bursty process from the log: (start, end) in ns."""
    ks = kernels(pid)
    check(len(ks) % BURST_KERNELS == 0,
          "the bursty program's kernels come in bursts of %d (%d kernels)"
          % (BURST_KERNELS, len(ks)))
    return [(ks[i].start, ks[i + BURST_KERNELS - 1].end)
            for i in range(0, len(ks), BURST_KERNELS)]


def check_serialized():
    ops = execlog.load(LOG)
    check(execlog.is_serialized(ops),
          "mode on: no two processes' kernels ever overlap (%d kernels)"
          % len(execlog.select(ops)))
    check(execlog.is_serialized(ops, kinds=execlog.GPU_WORK_KINDS),
          "mode on: no two processes' copies and sets overlap either")


def busy_ns(ops, lo, hi):
    """Kernel time of ops inside [lo, hi]."""
    return sum(max(0, min(o.end, hi) - max(o.start, lo)) for o in ops)


def t_interactive_fair():
    """Policy fair: an interactive program beside a training-like loop of
    the same user gets its first burst within ~2 s, far inside the
    quantum, and each later one too; the loop keeps most of the GPU."""
    s = scheduler("fair", TQ_S)
    c = compute(TQ_S)
    wait_kernel(c)
    time.sleep(0.5)         # past the holder's slice: its grant is old
    check_policy(s.sock, "fair")
    n = 6
    spawned = now_ns()
    b = bursty(n)
    finish_ok(b, timeout=TQ_S + 10)
    bs = bursts_of(b.pid)
    check(len(bs) == n, "all %d bursts ran" % n)
    first = (bs[0][0] - spawned) / 1e9 - GAP_MS / 1e3
    print("first burst waited %.3f s (quantum %d s)" % (first, TQ_S))
    check(first <= FIRST_BURST_MAX_S,
          "fair: the first burst ran %.2f s after it was due (<= %.1f s, "
          "quantum %d s)" % (first, FIRST_BURST_MAX_S, TQ_S))
    # A later burst is due GAP_MS after the previous one ended.
    waits = [(bs[i][0] - bs[i - 1][1]) / 1e9 - GAP_MS / 1e3
             for i in range(1, n)]
    print("later bursts waited: %s s" % " ".join("%.3f" % w for w in waits))
    check(max(waits) <= FIRST_BURST_MAX_S,
          "fair: each later burst ran within %.1f s of being due (worst "
          "%.2f s)" % (FIRST_BURST_MAX_S, max(waits)))
    # The later bursts had to take the GPU back: the loop ran between them.
    ck = kernels(c.pid)
    between = sum(1 for i in range(1, n)
                  if any(bs[i - 1][1] <= k.start and k.end <= bs[i][0]
                         for k in ck))
    check(between >= (n - 1) // 2,
          "the loop got the GPU back between bursts (%d of %d gaps)"
          % (between, n - 1))
    lo, hi = bs[0][0], bs[-1][1]
    share = busy_ns(ck, lo, hi) / max(1, hi - lo)
    check(share >= 0.25,
          "the loop kept %.0f%% of the GPU while the bursts ran (>= 25%%)"
          % (100 * share))
    c.kill()
    c.wait()
    check_serialized()
    s.stop()


def t_swap_report():
    """Mode auto, two jobs whose working sets do not fit together in the
    configured capacity: each grant is oversubscribed, the new holder
    prefetches its memory and reports how long that took (SWAPPED), and
    the scheduler's status shows the average swap-in and a slice no
    shorter than the configured one."""
    s = Scheduler(SCHED, TMP, mode="auto", tq_s=1, policy="fair",
                  min_slice_ms=SLICE_MS, capacity=96 << 20)
    SCHEDS.append(s)
    s.start()
    procs = [start([example("vs-compute"), "--seconds", 4, "--kernel-ms", 10,
                    "--mem", "64M", "--progress-ms", 0])
             for _ in range(2)]
    g = None
    end = time.monotonic() + 20
    while time.monotonic() < end:
        g, _ = gpu_status(s.sock)
        if g is not None and g.get("swap_us", 0) > 0:
            break
        time.sleep(0.1)
    finish_ok(*procs, timeout=30)
    check(g is not None and g.get("oversubscribed") is True,
          "status: 128 MiB of footprints in a capacity of 96 MiB is "
          "oversubscribed (%s)" % (g and g.get("footprint")))
    check(g.get("swap_us", 0) > 0,
          "status: the holders reported their swap-ins (swap_us %s)"
          % g.get("swap_us"))
    check(g.get("slice_ms", 0) >= SLICE_MS,
          "status: the slice in force (%s ms) is at least min_slice_ms"
          % g.get("slice_ms"))
    check(execlog.is_serialized(execlog.load(LOG)),
          "oversubscribed: no two processes' kernels overlap")
    s.stop()


def t_interactive_class():
    """The interactive class (`vshare-run --class interactive`, allowed by
    the node's default) beside a loop of 50 ms kernels, mode on, quantum 30 s:
    every later burst is done within 400 ms of being due (no slice, no
    hand-off: both fit, so they hold the GPU together, and the loop starts
    no kernel during a burst beyond one it had queued), where a batch one
    waits for the loop's slice of 1 s; and the status shows the class."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30, policy="fair",
                  min_slice_ms=1000)
    SCHEDS.append(s)
    s.start()
    c = start([example("vs-compute"), "--seconds", 30, "--kernel-ms", 50,
               "--mem", "64K", "--progress-ms", 0])
    wait_kernel(c)
    time.sleep(0.5)
    n = 8
    # vshare-run execs the program: b.pid is vs-bursty's.
    b = start([VSHARE_RUN, "--lib", SHIM, "--class", "interactive", "--",
               example("vs-bursty"), "--bursts", n, "--kernels",
               BURST_KERNELS, "--kernel-us", BURST_KERNEL_US, "--gap-ms",
               GAP_MS, "--quiet"])
    klass = None
    end = time.monotonic() + 20
    while klass is None and time.monotonic() < end and b.poll() is None:
        _, doc = gpu_status(s.sock)
        for cl in (doc or {}).get("clients", []):
            if cl.get("pid") == b.pid and cl.get("gpus"):
                klass = (cl.get("class"), cl["gpus"][0].get("class"))
        time.sleep(0.05)
    finish_ok(b, timeout=60)
    check(klass == ("interactive", "interactive"),
          "status: the bursty program asked for and got the interactive "
          "class (%s)" % (klass,))
    bs = bursts_of(b.pid)
    check(len(bs) == n, "all %d bursts ran" % n)
    late = [(bs[i][1] - bs[i - 1][1]) / 1e9 - GAP_MS / 1e3
            for i in range(1, n)]
    print("later bursts done after being due: %s s" %
          " ".join("%.3f" % x for x in late))
    check(max(late) < 0.4,
          "interactive: every later burst done within 400 ms of being due "
          "beside 50 ms kernels (worst %.3f s)" % max(late))
    ck = kernels(c.pid)
    between = sum(1 for i in range(1, n)
                  if any(bs[i - 1][1] <= k.start and k.end <= bs[i][0]
                         for k in ck))
    check(between >= (n - 1) // 2,
          "the loop got the GPU back between bursts (%d of %d gaps)"
          % (between, n - 1))
    # Both fit: they hold the GPU together and priority keeps the loop
    # from starting a kernel during a burst, beyond the one it had
    # queued (its kernel in flight ends beside the burst).
    most = max(sum(1 for k in ck if a < k.start < b) for a, b in bs)
    check(most <= 1, "the loop started at most one kernel during a burst "
          "(%d)" % most)
    c.kill()
    c.wait()
    s.stop()


PRIO_BURSTS = 8
PRIO_KERNELS = 20         # a burst: 20 kernels of 1 ms beside 5 ms ones
PRIO_KERNEL_US = 1000
PRIO_GAP_MS = 150


def prio_run(klass):
    """Mode auto (both fit), a loop of 5 ms kernels and vs-bursty under
    `vshare-run --class KLASS`: the bursty program's kernels, the loop's
    and the bursts (start, end)."""
    s = Scheduler(SCHED, TMP, mode="auto", tq_s=30, policy="fair")
    SCHEDS.append(s)
    s.start()
    c = start([example("vs-compute"), "--seconds", 30, "--kernel-ms", 5,
               "--mem", "64K", "--progress-ms", 0], **NEVER_IDLE)
    wait_kernel(c)
    time.sleep(0.3)
    b = start([VSHARE_RUN, "--lib", SHIM, "--class", klass, "--",
               example("vs-bursty"), "--bursts", PRIO_BURSTS, "--kernels",
               PRIO_KERNELS, "--kernel-us", PRIO_KERNEL_US, "--gap-ms",
               PRIO_GAP_MS, "--quiet"])
    finish_ok(b, timeout=60)
    bk, ck = kernels(b.pid), kernels(c.pid)
    c.kill()
    c.wait()
    s.stop()
    check(len(bk) == PRIO_BURSTS * PRIO_KERNELS,
          "all %d bursts ran (%d kernels)" % (PRIO_BURSTS, len(bk)))
    bursts = [(bk[i].start, bk[i + PRIO_KERNELS - 1].end)
              for i in range(0, len(bk), PRIO_KERNELS)]
    over = sum(1 for k in bk
               if any(o.start < k.end and k.start < o.end for o in ck))
    return bk, ck, bursts, over


def t_prio_auto():
    """Priority at kernel granularity, mode auto: beside a loop of 5 ms
    kernels, an interactive program's kernels run alone, after at most
    the loop's kernel in flight (at most 30% of them overlap one of the
    loop's kernels, where side by side every one does), and the loop
    runs between the bursts."""
    bk, ck, bursts, over = prio_run("interactive")
    print("interactive kernels overlapping the loop's: %d of %d" %
          (over, len(bk)))
    check(over <= 0.3 * len(bk),
          "at most 30%% of the interactive kernels overlap a batch kernel "
          "(%d of %d)" % (over, len(bk)))
    between = sum(1 for i in range(1, len(bursts))
                  if any(bursts[i - 1][1] <= k.start and
                         k.end <= bursts[i][0] for k in ck))
    check(between >= len(bursts) - 2,
          "the loop ran between the bursts (%d of %d gaps)"
          % (between, len(bursts) - 1))


def t_prio_batch():
    """The same with the bursty program as batch: the two run side by
    side, their kernels overlapping as without vshare."""
    bk, _, _, over = prio_run("batch")
    print("batch kernels overlapping the loop's: %d of %d" % (over, len(bk)))
    check(over >= 0.7 * len(bk),
          "batch beside batch in mode auto: their kernels overlap "
          "(%d of %d)" % (over, len(bk)))


def t_interactive_fcfs():
    """Policy fcfs (the old order): the same first burst waits for the
    end of the loop's quantum."""
    s = scheduler("fcfs", TQ_S)
    c = compute(TQ_S + 2)
    wait_kernel(c)
    granted = now_ns()
    time.sleep(0.5)
    check_policy(s.sock, "fcfs")
    spawned = now_ns()
    b = bursty(1)
    # While it waits, the status says why: first in line, behind the
    # holder's quantum.
    seen = None
    end = time.monotonic() + TQ_S / 2
    while time.monotonic() < end and seen is None:
        _, doc = gpu_status(s.sock)
        for cl in (doc or {}).get("clients", []):
            for m in cl.get("gpus", []):
                if cl.get("pid") == b.pid and m.get("state") == "waiting":
                    seen = m
        time.sleep(0.1)
    check(seen is not None, "status: the bursty program is waiting")
    check(seen.get("wait_why") == "quantum" and seen.get("position") == 1,
          "status: it waits first in line for the quantum (%s)"
          % {k: seen.get(k) for k in ("wait_why", "position", "eta_ms")})
    # A rough bound: what is left of the quantum, plus perhaps the
    # holder's grace to release (5 s by default).
    eta = seen.get("eta_ms", -1)
    check(0 < eta <= (TQ_S + 6) * 1000,
          "status: its eta (%s ms) is bounded by the quantum" % eta)
    finish_ok(b, timeout=TQ_S + 10)
    bs = bursts_of(b.pid)
    first = (bs[0][0] - spawned) / 1e9 - GAP_MS / 1e3
    since_grant = (bs[0][0] - granted) / 1e9
    print("first burst waited %.3f s; ran %.3f s after the loop's grant "
          "(quantum %d s)" % (first, since_grant, TQ_S))
    check(0.8 * TQ_S <= since_grant <= TQ_S + 3,
          "fcfs: the first burst ran at the end of the loop's quantum "
          "(%.2f s after its first kernel, quantum %d s)"
          % (since_grant, TQ_S))
    check(first >= 0.6 * TQ_S,
          "fcfs: the first burst waited about a quantum (%.2f s)" % first)
    c.kill()
    c.wait()
    check_serialized()
    s.stop()


def public_copy(src):
    """A copy in TMP that the test's unprivileged users can read: the
    build tree may sit where they cannot enter."""
    pub = os.path.join(TMP, "pub")
    os.makedirs(pub, mode=0o755, exist_ok=True)
    dst = os.path.join(pub, os.path.basename(src.rstrip("/")))
    if os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy(src, dst)
    for root, dirs, files in os.walk(dst) if os.path.isdir(dst) else []:
        for n in dirs + files:
            if not os.path.islink(os.path.join(root, n)):
                os.chmod(os.path.join(root, n), 0o755)
    os.chmod(dst, 0o755)
    return dst


def users(policy):
    """One compute program as user A, four as user B, for USERS_SECONDS;
    user A's share of the kernel time while all five competed (None:
    skipped)."""
    if os.geteuid() != 0:
        print("SKIP: switching to two unprivileged uids (setpriv) needs "
              "root")
        return None
    if not shutil.which("setpriv"):
        print("SKIP: setpriv (util-linux) is not installed")
        return None
    prog = public_copy(example("vs-compute"))
    td = public_copy(TD_DIR)
    shim = public_copy(SHIM)
    run.env = dict(ENV, LD_LIBRARY_PATH=td,
                   LD_PRELOAD=" ".join(p for p in (SAN, shim) if p))
    with open(LOG, "a"):
        pass
    os.chmod(LOG, 0o666)    # each process appends its own kernels
    s = scheduler(policy, USERS_TQ_S, socket_mode="0666")
    procs = {}
    for uid, n in zip(USERS_UIDS, (1, 4)):
        for _ in range(n):
            p = start(["setpriv", "--reuid=" + uid, "--regid=" + uid,
                           "--clear-groups", prog, "--seconds",
                           USERS_SECONDS, "--kernel-ms", 10, "--mem", "64K",
                           "--progress-ms", 0], **NEVER_IDLE)
            procs[p] = uid
    ready = {}
    for p in procs:
        # Its first line comes once its memory is allocated, right
        # before its loop starts asking for the GPU.
        line = p.stdout.readline()
        if "vs-compute:" not in line:
            finish_ok(p)
            fail("%s printed %r" % (p.args, line))
        ready[p] = now_ns()
    for p in procs:
        run.finish(p, USERS_SECONDS + 20)
        if p.returncode != 0 or "PASS" not in p.out:
            fail("%s (uid %s) exited %d:\n%s\n%s"
                 % (p.args, procs[p], p.returncode, p.out, p.err))
    ops = execlog.select(execlog.load(LOG))
    uid_of = {p.pid: procs[p] for p in procs}
    check(set(o.pid for o in ops) == set(uid_of),
          "all five programs ran kernels")
    # The window: all five running their loops.
    lo = max(ready.values()) + 500_000_000
    hi = min(ready.values()) + (USERS_SECONDS - 0.5) * 1e9
    check(hi - lo >= 0.6 * USERS_SECONDS * 1e9,
          "the programs started within a second of each other")
    busy = {u: busy_ns([o for o in ops if uid_of[o.pid] == u], lo, hi)
            for u in USERS_UIDS}
    total = sum(busy.values())
    check(total >= 0.5 * (hi - lo),
          "the GPU was busy %.0f%% of the window" % (100 * total / (hi - lo)))
    share = busy[USERS_UIDS[0]] / total
    print("%s: user A (1 program) %.1f%%, user B (4 programs) %.1f%% of "
          "%.1f s of kernel time in a %.1f s window"
          % (policy, 100 * share, 100 * (1 - share), total / 1e9,
             (hi - lo) / 1e9))
    check_serialized()
    s.stop()
    return share


def t_users_fair():
    """Policy fair: two users, one with one program and one with four,
    each get half of the GPU (50% +- 15%)."""
    share = users("fair")
    if share is None:
        return 77
    check(0.35 <= share <= 0.65,
          "fair: the user with 1 program got %.1f%% of the kernel time, "
          "the user with 4 programs %.1f%% (each 50%% +- 15%%)"
          % (100 * share, 100 * (1 - share)))
    return 0


def t_users_fcfs():
    """Policy fcfs: the same programs turn by turn, so the user with one
    program gets about a fifth."""
    share = users("fcfs")
    if share is None:
        return 77
    check(share < 0.35,
          "fcfs: the user with 1 program of 5 got %.1f%% of the kernel time "
          "(< 35%%)" % (100 * share))
    return 0


if __name__ == "__main__":
    rc = 1
    try:
        rc = main(scenarios(globals()))
    finally:
        run.kill_all()
        for s in SCHEDS:
            s.kill()
        if rc not in (0, 77):
            print("--- scheduler log (tail) ---\n" +
                  (SCHEDS[-1].logtext()[-4000:] if SCHEDS else ""))
    sys.exit(rc)
