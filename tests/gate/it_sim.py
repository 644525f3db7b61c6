#!/usr/bin/env python3
"""Integration of the gate and client with the real vshare-scheduler:
programs built from the real gate with fake CUDA operations (gate_sim),
whose 'kernels' are sleeps inside the gate.
usage: it_sim.py SCHEDULER VSHARECTL GATE_SIM SCENARIO | --list"""
import json
import os
import subprocess
import sys
import time

from e2e_lib import (Runner, Scheduler, check, cross_overlaps, first_stamp,
                     kernels, main, now_ns, read_log, scenarios, script_args,
                     tmpdir)

SCHED, CTL, SIM = script_args(3)
TMP = tmpdir()
LOG = os.path.join(TMP, "exec.log")
ENV = dict(os.environ, VSHARE_SOCKET=os.path.join(TMP, "sched.sock"),
           VSHARE_IDLE_MS="100")
run = Runner(ENV)


def sim(*args, **env):
    return run.start([SIM, "-l", LOG] + [str(a) for a in args], **env)


ok_exit = run.finish_ok


def t_mode_on():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    a = sim("-n", 30, "-k", 10, "-g", 5)
    b = sim("-n", 30, "-k", 10, "-g", 5)
    ok_exit(a, b)
    rows = kernels(read_log(LOG))
    check(len(rows) == 60, "both programs ran all kernels (%d)" % len(rows))
    check(not cross_overlaps(rows), "mode on: no two processes' kernels overlap")
    s.stop()


def t_mode_off():
    s = Scheduler(SCHED, TMP, mode="off", tq_s=1)
    s.start()
    a = sim("-n", 30, "-k", 10, "-g", 5)
    b = sim("-n", 30, "-k", 10, "-g", 5)
    ok_exit(a, b)
    rows = kernels(read_log(LOG))
    check(len(rows) == 60, "both programs ran all kernels")
    check(len(cross_overlaps(rows)) > 0, "mode off: kernels overlap")
    s.stop()


def t_auto_fit():
    s = Scheduler(SCHED, TMP, mode="auto", tq_s=1, capacity="256M")
    s.start()
    args = ("-n", 40, "-k", 10, "-g", 2, "-m", 32, "-M", 200, "-P", 300)
    a = sim(*args, VSHARE_FOOTPRINT_STEP="1M")
    b = sim(*args, VSHARE_FOOTPRINT_STEP="1M")
    ok_exit(a, b)
    rows = read_log(LOG)
    small, big = kernels(rows, "sim"), kernels(rows, "big")
    check(len(small) == 40 and len(big) == 40, "all kernels ran")
    check(len(cross_overlaps(small)) > 0,
          "auto: 32M + 32M fit in 256M: the processes run together")
    check(not cross_overlaps(big),
          "auto: 200M + 200M exceed 256M: their kernels never overlap")
    s.stop()


def t_idle_handover():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    a = sim("-n", 2, "-k", 10, "-g", 1500)
    time.sleep(0.3)
    b = sim("-n", 3, "-k", 10)
    ok_exit(a, b)
    rows = read_log(LOG)
    wait_ms = (min(r["start"] for r in kernels(rows, pid=b.pid))
               - first_stamp(b)) / 1e6
    check(wait_ms < 100 + 200,
          "idle holder handed over within idle_ms + margin (%.0f ms)" % wait_ms)
    check(not cross_overlaps(kernels(rows)), "no overlap")
    s.stop()


def t_idle_after_busy():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    # The fixed idle time (the learned gap: gate.drop_idle_short_rhythm).
    a = sim("-n", 20, "-k", 10, "-g", 2, "-P", 1500, VSHARE_IDLE_LEARN="0")
    time.sleep(0.05)
    b = sim("-n", 3, "-k", 10)
    ok_exit(a, b)
    rows = read_log(LOG)
    a_rows = sorted(kernels(rows, pid=a.pid), key=lambda r: r["start"])
    b_first = min(r["start"] for r in kernels(rows, pid=b.pid))
    gap_ms = (b_first - a_rows[9]["end"]) / 1e6
    check(80 <= gap_ms <= 100 + 300,
          "busy holder that went idle handed over after idle_ms "
          "(%.0f ms after its last kernel)" % gap_ms)
    check(not cross_overlaps(kernels(rows)), "no overlap")
    s.stop()


def t_busy_quantum():
    # The quantum's rule alone (under "fair", b, of no recent GPU time,
    # preempts a after the slice: gate.policy.*).
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1, policy="fcfs")
    s.start()
    a = sim("-n", 150, "-k", 10, "-g", 2)
    time.sleep(0.2)
    b = sim("-n", 5, "-k", 10)
    ok_exit(a, b)
    rows = read_log(LOG)
    a_first = min(r["start"] for r in kernels(rows, pid=a.pid))
    b_first = min(r["start"] for r in kernels(rows, pid=b.pid))
    held_ms = (b_first - a_first) / 1e6
    check(800 <= held_ms <= 1600,
          "busy holder kept the GPU for its quantum of 1 s (%.0f ms)" % held_ms)
    check(not cross_overlaps(kernels(rows)), "no overlap")
    s.stop()


def t_holder_killed():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    a = sim("-n", 1, "-k", 5000)
    time.sleep(0.3)
    b = sim("-n", 2, "-k", 10)
    time.sleep(0.5)
    killed = now_ns()
    a.kill()
    a.wait()
    ok_exit(b)
    rows = read_log(LOG)
    b_first = min(r["start"] for r in kernels(rows, pid=b.pid))
    ms = (b_first - killed) / 1e6
    check(0 <= ms < 300, "holder killed: the waiter ran %.0f ms later" % ms)
    s.stop()


def status_clients(sock):
    out = subprocess.run([CTL, "-s", sock, "--json", "status"],
                         capture_output=True, text=True, timeout=5)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout).get("clients", [])


def t_sched_restart():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    a = sim("-n", 150, "-k", 10, "-g", 2)
    b = sim("-n", 150, "-k", 10, "-g", 2)
    time.sleep(0.5)
    s.kill()
    time.sleep(0.4)
    s.start()
    restarted = now_ns()
    time.sleep(0.4)
    clients = status_clients(s.sock) or []
    pids = sorted(c.get("pid") for c in clients)
    labels = set(c.get("label") for c in clients)
    ok_exit(a, b)
    check(pids == sorted([a.pid, b.pid]),
          "both clients registered again after the restart (%s)" % pids)
    check(labels == {"gate_sim"},
          "the label defaults to the program name (%s)" % labels)
    rows = kernels(read_log(LOG))
    check(len(rows) == 300, "both finished every kernel (%d)" % len(rows))
    # Reconnection backs off (50 ms doubling): within 1 s of the restart
    # both are back under the lock.
    later = [r for r in rows if r["start"] > restarted + 1_000_000_000]
    check(len(later) > 20 and not cross_overlaps(later),
          "serialized again after the restart (%d kernels checked)" % len(later))
    for p in (a, b):
        check(p.err.count("lost the scheduler") == 1,
              "one line about the lost scheduler")
    s.stop()


def t_no_scheduler():
    p = sim("-n", 5, "-k", 5)
    ok_exit(p)
    check(len(kernels(read_log(LOG))) == 5, "runs without a scheduler")
    check(p.err.count("no scheduler at") == 1, "one warning line")


if __name__ == "__main__":
    try:
        rc = main(scenarios(globals()))
    finally:
        run.kill_all()
    sys.exit(rc)
