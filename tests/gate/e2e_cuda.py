#!/usr/bin/env python3
"""End to end: libvshare.so preloaded into CUDA driver-API programs on the
CUDA test driver, with the real vshare-scheduler, checked through the test
driver's execution log.
usage: e2e_cuda.py SCHEDULER VSHARECTL LIBVSHARE TESTDRIVER_DIR EXECLOG_PY
                   PROGRAM SCENARIO | --list"""
import json
import os
import re
import subprocess
import sys
import time

from e2e_lib import (SAN_PRELOAD, Runner, Scheduler, check, driver_env, fail, first_stamp,
                     load_execlog, main, now_ns, scenarios, script_args, tmpdir)

SCHED, CTL, SHIM, TD_DIR, EXECLOG, PROG = script_args(6)
SAN = SAN_PRELOAD
execlog = load_execlog(EXECLOG)

TMP = tmpdir()
LOG, ENV = driver_env(TMP, TD_DIR, SHIM, SAN)
run = Runner(ENV)


def prog(*args, **env):
    return run.start([PROG] + [str(a) for a in args], **env)


ok_exit = run.finish_ok


def ops(name=None, pid=None, kinds=("kernel",)):
    return [o for o in execlog.select(execlog.load(LOG), kinds)
            if (name is None or o.name == name)
            and (pid is None or o.pid == pid)]


def first_start(pid):
    return min(o.start for o in ops(pid=pid))


def t_mode_on():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    a = prog("-n", 30, "-k", 10000, "-g", 5, "-m", 16,
             VSHARE_LOG_LEVEL="debug")
    b = prog("-n", 30, "-k", 10000, "-g", 5, "-m", 16)
    ok_exit(a, b)
    check("sees 1 CUDA device: submissions go to its gate without a context"
          in a.err, "one device: the fast path skips the context lookup")
    check(len(ops()) == 60, "both programs ran all kernels")
    check(execlog.is_serialized(ops()),
          "mode on: no two processes' kernels overlap")
    check(execlog.is_serialized(execlog.load(LOG), kinds=execlog.GPU_WORK_KINDS),
          "mode on: no two processes' copies and sets overlap either")
    s.stop()


def t_mode_off():
    s = Scheduler(SCHED, TMP, mode="off", tq_s=1)
    s.start()
    a = prog("-n", 30, "-k", 10000, "-g", 5)
    b = prog("-n", 30, "-k", 10000, "-g", 5)
    ok_exit(a, b)
    check(execlog.overlap_count(execlog.load(LOG), a.pid, b.pid) > 0,
          "mode off: the processes' kernels overlap")
    s.stop()


def t_auto_fit():
    s = Scheduler(SCHED, TMP, mode="auto", tq_s=1, capacity="256M")
    s.start()
    args = ("-n", 40, "-k", 10000, "-g", 2, "-m", 32, "-M", 200, "-P", 300)
    a = prog(*args, VSHARE_FOOTPRINT_STEP="1M")
    b = prog(*args, VSHARE_FOOTPRINT_STEP="1M")
    ok_exit(a, b)
    small, big = ops("vs_sleep"), ops("vs_sleep_ts")
    check(len(small) == 40 and len(big) == 40, "all kernels ran")
    check(not execlog.is_serialized(small),
          "auto: 32M + 32M fit in 256M: the processes run together")
    check(execlog.is_serialized(big),
          "auto: 232M + 232M exceed 256M: their kernels never overlap")
    s.stop()


def t_idle_handover():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    # The fixed idle time (a learned gap would let a loaded machine's
    # pauses end the first burst early: gate.drop_idle_short_rhythm
    # checks the learned one).
    a = prog("-n", 20, "-k", 10000, "-g", 2, "-P", 1500,
             VSHARE_IDLE_LEARN="0")
    time.sleep(0.1)
    b = prog("-n", 3, "-k", 10000)
    ok_exit(a, b)
    a_ops = sorted(ops(pid=a.pid))
    gap_ms = (first_start(b.pid) - a_ops[9].end) / 1e6
    # The idle time runs from the last launch call, which returns about one
    # kernel (10 ms) before that kernel ends; the activity clock is coarse.
    check(60 <= gap_ms <= 100 + 300,
          "a holder that went idle handed over %.0f ms after its last "
          "kernel (VSHARE_IDLE_MS=100)" % gap_ms)
    check(execlog.is_serialized(ops()), "no overlap")
    s.stop()


def t_busy_quantum():
    # The quantum's rule alone (under "fair", b, of no recent GPU time,
    # preempts a after the slice: gate.policy.*).
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1, policy="fcfs")
    s.start()
    a = prog("-n", 150, "-k", 10000, "-g", 2)
    time.sleep(0.3)
    b = prog("-n", 5, "-k", 10000)
    ok_exit(a, b)
    held_ms = (first_start(b.pid) - first_start(a.pid)) / 1e6
    check(800 <= held_ms <= 1700,
          "a busy holder handed over at quantum end (%.0f ms)" % held_ms)
    check(execlog.is_serialized(ops()), "no overlap")
    s.stop()


def t_holder_killed():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    a = prog("-n", 1, "-k", 5000000)
    time.sleep(0.5)
    b = prog("-n", 2, "-k", 10000)
    time.sleep(0.5)
    killed = now_ns()
    a.kill()
    a.wait()
    ok_exit(b)
    ms = (first_start(b.pid) - killed) / 1e6
    check(0 <= ms < 400,
          "holder killed mid-kernel: the waiter ran %.0f ms later" % ms)
    s.stop()


def status_pids(sock):
    out = subprocess.run([CTL, "-s", sock, "--json", "status"],
                         capture_output=True, text=True, timeout=5)
    if out.returncode != 0:
        return []
    return sorted(c.get("pid") for c in json.loads(out.stdout)["clients"])


def status_gpus(sock):
    """UUIDs of the GPUs each client (by pid) has attached."""
    out = subprocess.run([CTL, "-s", sock, "--json", "status"],
                         capture_output=True, text=True, timeout=5)
    if out.returncode != 0:
        return {}
    return {c.get("pid"): [g.get("uuid") for g in c.get("gpus", [])]
            for c in json.loads(out.stdout)["clients"]}


def t_registered_early():
    """A program registers when it opens its context, not at its first
    launch: before any kernel, the scheduler already has its GPU and its
    footprint, so that the first launch waits for one REQUEST only."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    p = prog("-n", 3, "-k", 1000, "-m", 8, "-W", 1500)
    seen, asked = None, 0
    deadline = time.monotonic() + 1.2
    # The GPU comes with the context, the footprint right after the
    # allocation: a read between the two sees the GPU with 0 bytes.
    while (seen is None or seen["managed"] < 8 << 20) and \
            time.monotonic() < deadline:
        out = subprocess.run([CTL, "-s", s.sock, "--json", "status"],
                             capture_output=True, text=True, timeout=5)
        asked = now_ns()
        for c in json.loads(out.stdout)["clients"] if out.returncode == 0 else []:
            if c.get("pid") == p.pid and c.get("gpus"):
                seen = c["gpus"][0]
        time.sleep(0.05)
    ok_exit(p)
    check(seen is not None, "the scheduler has the program's GPU before "
          "its first launch")
    check(seen["managed"] >= 8 << 20 and seen["state"] == "idle",
          "with its footprint (%d bytes), not waiting" % seen["managed"])
    check(first_start(p.pid) > asked,
          "no kernel of it had started when the status was read")
    s.stop()


def t_label_cut_between_characters():
    """A VSHARE_LABEL longer than HELLO carries (63 bytes) is cut between
    characters: status shows its whole characters, where a cut at byte 63
    left the first byte of a two-byte character, shown as '?'."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    label = "xy" + "\u00e9" * 40     # 82 bytes; byte 63 begins an e-acute
    p = prog("-n", 3, "-k", 1000, "-m", 8, "-W", 5000, VSHARE_LABEL=label)
    seen = None
    deadline = time.monotonic() + 20
    while seen is None and time.monotonic() < deadline and p.poll() is None:
        out = subprocess.run([CTL, "-s", s.sock, "--json", "status"],
                             capture_output=True, text=True, timeout=5)
        for c in json.loads(out.stdout)["clients"] if out.returncode == 0 else []:
            if c.get("pid") == p.pid:
                seen = c.get("label")
        time.sleep(0.05)
    ok_exit(p)
    check(seen == label[:32],
          "status shows the label's first 62 bytes, 30 whole characters "
          "after xy (%r)" % seen)
    s.stop()


def t_sched_restart():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    a = prog("-n", 150, "-k", 10000, "-g", 2, "-a")
    b = prog("-n", 150, "-k", 10000, "-g", 2, "-a")
    time.sleep(0.6)
    s.kill()
    time.sleep(0.4)
    s.start()
    restarted = now_ns()
    time.sleep(0.5)
    pids = status_pids(s.sock)
    ok_exit(a, b)
    check(pids == sorted([a.pid, b.pid]),
          "both clients registered again after the restart")
    check(all("add ok" in p.out for p in (a, b)),
          "both computed correct results")
    later = [o for o in ops() if o.start > restarted + 1_000_000_000]
    check(len(later) > 20 and execlog.is_serialized(later),
          "serialized again after the restart (%d kernels)" % len(later))
    s.stop()


def t_two_devices():
    """Two devices: the gate follows each thread's context. Two programs
    on device 1 take turns; one on device 0 runs beside them."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    env = {"VSHARE_TD_DEVICES": 2}
    a = prog("-d", 1, "-n", 20, "-k", 10000, "-g", 5, **env)
    b = prog("-d", 1, "-n", 20, "-k", 10000, "-g", 5, **env)
    c = prog("-d", 0, "-n", 60, "-k", 10000, "-g", 1, VSHARE_LOG_LEVEL="debug",
             **env)
    seen = {}
    while any(p.poll() is None for p in (a, b, c)):
        for pid, uuids in status_gpus(s.sock).items():
            seen.setdefault(pid, set()).update(uuids)
        time.sleep(0.03)
    ok_exit(a, b, c)
    check("sees 2 CUDA devices" in c.err, "the process counts two devices")
    ua, ub, uc = (seen.get(p.pid, set()) for p in (a, b, c))
    check(len(ua) == 1 and ua == ub and len(uc) == 1 and ua != uc,
          "the scheduler saw each program attach its own device only "
          "(%s %s %s)" % (ua, ub, uc))
    check(len(ops(pid=a.pid)) == 20 and len(ops(pid=b.pid)) == 20
          and len(ops(pid=c.pid)) == 60, "all kernels ran")
    check(all(o.device == 1 for o in ops(pid=a.pid) + ops(pid=b.pid))
          and all(o.device == 0 for o in ops(pid=c.pid)),
          "each program's kernels ran on its device")
    check(execlog.is_serialized(ops(), device=1),
          "device 1: the two programs' kernels never overlap")
    ab = ops(pid=a.pid) + ops(pid=b.pid)
    beside = [x for x in ops(pid=c.pid)
              if any(x.start < y.end and y.start < x.end for y in ab)]
    check(len(beside) > 0,
          "device 0 has a lock of its own: its kernels ran beside device 1's")
    s.stop()


def metrics(sock):
    """{(name, frozenset(labels)): value} of vsharectl metrics."""
    out = subprocess.run([CTL, "-s", sock, "metrics"], capture_output=True,
                         text=True, timeout=5)
    if out.returncode != 0:
        fail("vsharectl metrics: %s" % out.stderr)
    got = {}
    for line in out.stdout.splitlines():
        if not line or line.startswith("#"):
            continue
        key, val = line.rsplit(" ", 1)
        name, _, rest = key.partition("{")
        labels = re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', rest)
        got[(name, frozenset(labels))] = float(val)
    return got


def metric(got, name, **labels):
    """The sum of `name`'s samples whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in got.items() if n == name and want <= ls)


def t_two_devices_metrics():
    """Two GPUs, each with its own mode and quantum set at run time: on
    device 1 (mode on, quantum 2 s) two programs take turns, on device 0
    (mode off) one runs alone. The per-GPU metrics match what ran: the
    settings, the turns on device 1 and none on device 0, and the GPU
    time held on device 1 covers its kernels. Both GPUs are in the
    configuration's "gpus" (the test driver has no NVML): only GPUs that
    NVML or the configuration vouch for have series."""
    td = ["GPU-76737464-0000-0000-0000-%012x" % i for i in range(2)]
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1,
                  gpus={u: {"mode": "on"} for u in td})
    s.start()
    env = {"VSHARE_TD_DEVICES": 2}
    c = prog("-d", 0, "-n", 40, "-k", 10000, "-g", 1, "-W", 500, **env)
    a = prog("-d", 1, "-n", 20, "-k", 10000, "-g", 5, "-W", 500, **env)
    b = prog("-d", 1, "-n", 20, "-k", 10000, "-g", 5, "-W", 500, **env)
    uuid = {}
    deadline = time.monotonic() + 5
    while len(uuid) < 2 and time.monotonic() < deadline:
        g = status_gpus(s.sock)
        for p, dev in ((c, 0), (a, 1)):
            if g.get(p.pid):
                uuid[dev] = g[p.pid][0]
        time.sleep(0.02)
    check(len(uuid) == 2, "both GPUs attached before the first launch")
    check(sorted(uuid.values()) == td, "the test driver's UUIDs: %s" % uuid)
    for args in (["set-tq", "2", "--gpu", uuid[1]],
                 ["disable", "--gpu", uuid[0]]):
        out = subprocess.run([CTL, "-s", s.sock] + args, capture_output=True,
                             text=True, timeout=5)
        check(out.returncode == 0, "vsharectl %s" % " ".join(args))
    ok_exit(a, b, c)
    time.sleep(1.1)  # the daemon's text may be a second old
    m = metrics(s.sock)
    g0, g1 = uuid[0], uuid[1]
    check(metric(m, "vshare_gpus_unverified") == 0, "both GPUs vouched for")
    check(metric(m, "vshare_gpu_quantum_seconds", gpu=g1) == 2 and
          metric(m, "vshare_gpu_quantum_seconds", gpu=g0) == 1,
          "each GPU's quantum as set")
    check(metric(m, "vshare_gpu_mode", gpu=g1, mode="on") == 1 and
          metric(m, "vshare_gpu_mode", gpu=g0, mode="off") == 1,
          "each GPU's mode as set")
    grants1 = metric(m, "vshare_grants_total", gpu=g1, kind="exclusive")
    hand1 = metric(m, "vshare_handoffs_total", gpu=g1)
    check(grants1 >= 2 and hand1 >= 1,
          "device 1: both programs were granted in turn (%d grants, %d "
          "hand-offs)" % (grants1, hand1))
    check(metric(m, "vshare_handoffs_total", gpu=g0) == 0,
          "device 0: its one program never waited for another")
    busy = sum(o.end - o.start for o in ops(pid=a.pid) + ops(pid=b.pid)) / 1e9
    held = metric(m, "vshare_gpu_held_seconds_total", gpu=g1)
    check(busy * 0.9 <= held <= 30,
          "device 1: GPU time held %.2f s covers its kernels' %.2f s"
          % (held, busy))
    check(execlog.is_serialized(ops(), device=1),
          "device 1: the two programs' kernels never overlap")
    s.stop()


def use_of(sock, pid):
    """The status's client of `pid`, its first member and the document;
    None for what is not there."""
    out = subprocess.run([CTL, "-s", sock, "--json", "status"],
                         capture_output=True, text=True, timeout=5)
    if out.returncode != 0:
        return None, None, None
    doc = json.loads(out.stdout)
    for c in doc["clients"]:
        if c["pid"] == pid:
            return c, (c["gpus"][0] if c["gpus"] else None), doc
    return None, None, doc


def t_use():
    """Use, not only holding: a program that computes for a while and
    then sits on the GPU (nobody waits, so it keeps it) is reported busy,
    then idle while held, by its shim (every 5 s while it holds), beside
    the device memory and utilisation the (fake) NVML gives for its pid;
    the status --wide shows them and sums them by user; the metrics count
    its busy and idle time, and the eager swap-out of a release to a
    waiter. Checked on the test driver with the fake NVML only."""
    nvml = os.environ.get("VSHARE_FAKE_NVML_DIR")
    if not nvml:
        print("VSHARE_FAKE_NVML_DIR not set (run through ctest)")
        return 77
    td = "GPU-76737464-0000-0000-0000-000000000000"
    procs = os.path.join(TMP, "nvml-procs")
    open(procs, "w").close()
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30, gpus={td: {"mode": "on"}})
    s.env = dict(os.environ, LD_LIBRARY_PATH=nvml, VSHARE_FAKE_NVML=td,
                 VSHARE_FAKE_NVML_PROCS=procs)
    s.start()
    # 4 kernels of 50 ms, then 9 s held and idle, then 4 more: the
    # report at 5 s of holding comes well before the pause ends.
    a = prog("-n", 8, "-k", 50000, "-P", 9000, "-m", 16,
             VSHARE_SWAP_OUT="eager")
    with open(procs, "w") as f:
        f.write("0 %d %d 37\n" % (a.pid, 48 << 20))
    deadline = time.monotonic() + 30
    m = None
    while time.monotonic() < deadline and a.poll() is None:
        c, m, doc = use_of(s.sock, a.pid)
        if m is not None and m["idle_ms"] >= 2000:
            break
        time.sleep(0.2)
    check(m is not None and m["idle_ms"] >= 2000,
          "the shim reported its idle time while held: %s" % m)
    check(50 <= m["busy_ms"] <= 2000,
          "busy: its kernels and the idle gap after them (%d ms)" %
          m["busy_ms"])
    check(m["busy_ms"] + m["idle_ms"] <= m["held_total_ms"] + 1,
          "busy and idle within the time held: %s" % m)
    check(m["gpu_mem"] == 48 << 20 and m["sm_pct"] == 37,
          "NVML's device memory and utilisation of its pid: %s" % m)
    check(doc["gpus"][0]["use_from"] == "nvml", "use_from nvml")
    out = subprocess.run([CTL, "-s", s.sock, "--wide", "status"],
                         capture_output=True, text=True, timeout=5).stdout
    row = [l for l in out.splitlines() if l.split()[:2] == [str(c["id"]),
                                                            str(a.pid)]]
    check(len(row) == 1 and "48.0 MiB" in row[0] and "37%" in row[0],
          "status --wide: device memory and SM of the program:\n" + out)
    check("BY USER" in out, "status --wide sums by user:\n" + out)
    # A waiter: a's idle drop releases it, swapping its 16 MiB out.
    b = prog("-n", 2, "-k", 10000)
    ok_exit(a, b)
    time.sleep(1.1)  # the daemon's text may be a second old
    got = metrics(s.sock)
    uid = str(os.getuid())
    busy = metric(got, "vshare_gpu_busy_seconds_total", gpu=td, uid=uid)
    idle = metric(got, "vshare_gpu_idle_held_seconds_total", gpu=td, uid=uid)
    held = metric(got, "vshare_gpu_held_seconds_total", gpu=td, uid=uid)
    check(busy > 0.1 and idle > 2 and busy + idle <= held + 0.01,
          "metrics: busy %.3f s, idle %.3f s, held %.3f s" %
          (busy, idle, held))
    check(metric(got, "vshare_swapouts_total", gpu=td) >= 1 and
          metric(got, "vshare_swapout_bytes_total", gpu=td) >= 16 << 20,
          "metrics: the eager swap-out counted")
    s.stop()


def t_use_waits():
    """Busy covers the work a program waits for: one kernel of 1 s and a
    wait for it by each of the driver's ways (cuCtxSynchronize and its
    CUDA 13 variant, cuStreamSynchronize, cuEventSynchronize, and
    cuStreamQuery every 10 ms), then 0.5 s held with nothing to do. Each
    program's busy time in the metrics, once it has ended, covers at least
    80% of its kernel (the launch returns at once: without the waits only
    the idle gap after it would count), and its idle time the rest of its
    hold."""
    td = "GPU-76737464-0000-0000-0000-000000000000"
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30, gpus={td: {"mode": "on"}})
    s.start()
    uid = str(os.getuid())
    busy0 = idle0 = 0.0
    for how in ("ctx", "ctx2", "stream", "event", "query"):
        # Through a GRANT: the scheduler counts a hold taken through the
        # lock page from its TOOK, which the client thread sends on its
        # next pass (up to a second later when nothing else wakes it).
        a = prog("-n", 1, "-k", 1000000, "-w", how, "-E", 500,
                 VSHARE_LOCK_PAGE="0")
        ok_exit(a)
        # The program's last report comes with its exit; the daemon's
        # text may be a second old.
        deadline = time.monotonic() + 5
        while True:
            got = metrics(s.sock)
            busy = metric(got, "vshare_gpu_busy_seconds_total", gpu=td,
                          uid=uid) - busy0
            idle = metric(got, "vshare_gpu_idle_held_seconds_total", gpu=td,
                          uid=uid) - idle0
            if (busy >= 0.8 and idle >= 0.3) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        check(busy >= 0.8, "-w %s: busy %.3f s of a 1 s kernel waited for"
              % (how, busy))
        check(idle >= 0.3, "-w %s: idle %.3f s of 0.5 s held after it"
              % (how, idle))
        busy0 += busy
        idle0 += idle
    s.stop()


def told(s, a):
    """The status's client of program a once it said it ran unshared
    (None if it ended or 20 s passed first)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and a.poll() is None:
        c, _, _ = use_of(s.sock, a.pid)
        if c is not None and c.get("unshared_why"):
            return c
        time.sleep(0.1)
    return None


def t_unshared_told():
    """A program that starts before the scheduler runs unshared; once the
    scheduler is up it says so (reason absent, and for how long); after a
    restart of the scheduler it says it again, reason lost."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    # About 12 s of work: time for the shim's backoff (up to 2 s between
    # tries) to find each scheduler, however slowly a loaded machine runs.
    a = prog("-n", 600, "-k", 10000, "-g", 10)
    time.sleep(0.5)
    s.start()
    c = told(s, a)
    check(c is not None and c["unshared_why"] == "absent" and
          c["unshared_ms"] >= 300,
          "the program said it ran unshared before it connected: %s" % c)
    out = subprocess.run([CTL, "-s", s.sock, "status"], capture_output=True,
                         text=True, timeout=5).stdout
    check("no scheduler could be reached" in out,
          "status says it ran unshared:\n" + out)
    time.sleep(1.1)
    got = metrics(s.sock)
    check(metric(got, "vshare_unshared_runs_total", reason="absent") == 1
          and metric(got, "vshare_unshared_seconds_total",
                     reason="absent") >= 0.3,
          "metrics: one program ran unshared, reason absent")
    s.kill()
    time.sleep(0.5)
    s.start()
    c = told(s, a)
    check(c is not None and c["unshared_why"] == "lost",
          "after a restart: reason lost: %s" % c)
    check("ran unshared for" in s.logtext(), "the daemon logged it")
    ok_exit(a)
    s.stop()


def t_no_scheduler():
    p = prog("-n", 5, "-k", 5000, "-a")
    ok_exit(p)
    check(len(ops()) == 6 and "add ok" in p.out,
          "no scheduler: the program runs and computes")
    check(p.err.count("no scheduler at") == 1, "one warning line")


def t_capture_graph():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    a = prog("-n", 5, "-k", 2000, "-c", "-a")
    b = prog("-n", 5, "-k", 2000, "-c", "-a")
    ok_exit(a, b)
    for p in (a, b):
        check(len(ops(pid=p.pid)) == 5 + 3 + 1,
              "capture and graph launch under the shim: all kernels ran")
    check(execlog.is_serialized(ops()), "graph launches are gated too")
    s.stop()


def queued_max(p):
    """The 'queued max N' line of a -Q run."""
    m = re.search(r"^queued max (\d+)$", p.out, re.M)
    if m is None:
        fail("no 'queued max' line in the output of %s:\n%s" % (p.args, p.out))
    return int(m.group(1))


def t_paced():
    """Pacing (protocol 7): a batch program granted beside an attached
    interactive one hears VS_GRANTF_PACE and keeps its queued work near
    VSHARE_PACE_US (2 ms). Launching 200 kernels of 2 ms back to back with
    no wait, it has at most a few queued at a time; with VSHARE_PACE_US=0,
    or once the interactive program is gone, it runs ahead by nearly all
    of them. Counted from the program's own events, not timed."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    inter = prog("-n", 1, "-k", 1000, "-g", 60000, VSHARE_CLASS="interactive")
    end = time.monotonic() + 10
    while not (os.path.exists(LOG) and ops(pid=inter.pid)) \
            and time.monotonic() < end:
        time.sleep(0.02)
    check(ops(pid=inter.pid) != [], "the interactive program ran its kernel")

    # A wait for a mark gives up after 50 ms (gate_pace.c), and the
    # stream then runs unpaced for a second, by design: on a loaded
    # machine the test driver's stream thread can stall that long. Such
    # a run says so in its log and is run again, at most twice; any other
    # run that queues more is a failure.
    for attempt in range(3):
        paced = prog("-Q", "-n", 200, "-k", 2000, VSHARE_LOG_LEVEL="debug")
        ok_exit(paced)
        if queued_max(paced) <= 8 or "pacing gave up" not in paced.err:
            break
        print("pacing gave up on a stall (run %d): again" % (attempt + 1))
    check("paced: an interactive program shares it" in paced.err,
          "the batch program was granted with the pace flag")
    check(queued_max(paced) <= 8,
          "paced: at most 8 kernels of 2 ms queued (%d)%s" % (
              queued_max(paced), "".join(
                  "\n  " + l for l in paced.err.splitlines()
                  if "pac" in l or "GPU" in l)[:4000]))

    off = prog("-Q", "-n", 200, "-k", 2000, VSHARE_PACE_US=0)
    ok_exit(off)
    check(queued_max(off) >= 50,
          "VSHARE_PACE_US=0: the program runs ahead (%d queued)"
          % queued_max(off))

    inter.kill()
    inter.wait()
    alone = prog("-Q", "-n", 200, "-k", 2000, VSHARE_LOG_LEVEL="debug")
    ok_exit(alone)
    check("paced" not in alone.err and queued_max(alone) >= 50,
          "no interactive program: not paced (%d queued)" % queued_max(alone))
    check(execlog.is_serialized(ops()), "mode on: nothing overlapped")
    s.stop()


def t_examples():
    """The project's example programs (linked with libcuda directly) under
    the shim and one lock: a compute loop, an interactive-style program
    with graph launches, and a vector add that checks its results."""
    ex = os.environ["E2E_EXAMPLES_DIR"]
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    c = run.start([os.path.join(ex, "vs-compute"), "--iters", "40",
                   "--kernel-ms", "10", "--mem", "16M", "--quiet"])
    b = run.start([os.path.join(ex, "vs-bursty"), "--bursts", "3",
                   "--kernels", "5", "--kernel-us", "2000", "--gap-ms", "250",
                   "--api", "graph", "--quiet"])
    v = run.start([os.path.join(ex, "vs-vecadd"), "--size", "100000",
                   "--iters", "3", "--sleep-us", "5000"])
    ok_exit(c, b, v)
    check("PASS" in c.out and "PASS" in v.out, "the examples compute correctly")
    check("managed: yes" in v.out, "their device memory is managed")
    check(execlog.is_serialized(ops()),
          "mode on: the examples' kernels never overlap")
    worst = float(b.out.split("max")[1].split()[0])
    check(worst < 1000 + 500,
          "a burst waits at most about one quantum (%.0f ms)" % worst)
    s.stop()


if __name__ == "__main__":
    try:
        rc = main(scenarios(globals()))
    finally:
        run.kill_all()
    sys.exit(rc)
