#!/usr/bin/env python3
"""End to end: a program that waits for the GPU says so. libvshare.so is
preloaded into the example programs on the CUDA test driver, with the
real vshare-scheduler in mode `on`: one program holds the GPU, another
waits, and the waiter's stderr must name the GPU, the holder's label and
user and its place in the queue, then the time it waited; with
VSHARE_WAIT_NOTICE=0, or a wait shorter than VSHARE_WAIT_NOTICE_MS, it
prints nothing.

usage: e2e_wait.py SCHEDULER VSHARECTL LIBVSHARE TESTDRIVER_DIR
                   EXECLOG_PY EXAMPLES_DIR SCENARIO | --list
Each function t_NAME is scenario NAME and ctest gate.wait.NAME
(tests/gate/CMakeLists.txt). Exit 0 pass, 1 fail."""
import os
import pwd
import re
import sys
import time

from e2e_lib import (SAN_PRELOAD, Runner, Scheduler, check, driver_env, fail, load_execlog,
                     main, scenarios, script_args, tmpdir)

SCHED, CTL, SHIM, TD_DIR, EXECLOG, EXAMPLES = script_args(6)
SAN = SAN_PRELOAD
execlog = load_execlog(EXECLOG)

# The holder computes without a pause for HOLD_S, inside one quantum and
# (policy fcfs) never preempted: the waiter waits about that long.
HOLD_S = 4
TQ_S = 30
HOLDER = "holder-job"

TMP = tmpdir()
LOG, ENV = driver_env(TMP, TD_DIR, SHIM, SAN)
run = Runner(ENV)
SCHEDS = []
WAITING_RE = re.compile(
    r'^vshare\[(\d+)\]: GPU 0 \(GPU-[0-9a-f]{8}\) is busy, held by '
    r'"([^"]*)" \((user [^)]*)\) for ([0-9.]+) s: GPU work waits '
    r'\(([0-9.]+) s so far\), place (\d+) of (\d+) in the queue', re.M)
GOT_RE = re.compile(
    r'^vshare\[(\d+)\]: GPU 0 \(GPU-[0-9a-f]{8}\): got the GPU after '
    r'([0-9.]+) s$', re.M)


def example(name):
    return os.path.join(EXAMPLES, name)


def scheduler():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=TQ_S, policy="fcfs")
    SCHEDS.append(s)
    s.start()
    return s


def kernels(pid):
    try:
        ops = execlog.load(LOG)
    except (OSError, ValueError):
        return []
    return [o for o in execlog.select(ops) if o.pid == pid]


def holder_then_waiter(**waiter_env):
    """The holder runs HOLD_S; once it holds the GPU, vs-vecadd starts and
    waits for it. Returns both, finished and checked."""
    scheduler()
    # Never idle for the gate: a stall of its CPU thread on a loaded
    # machine would otherwise give the GPU to the waiter at once.
    h = run.start([example("vs-compute"), "--seconds", str(HOLD_S),
                   "--kernel-ms", "10", "--mem", "64K", "--progress-ms",
                   "0", "--quiet"], VSHARE_LABEL=HOLDER,
                  VSHARE_IDLE_LEARN="0", VSHARE_IDLE_MS="60000")
    end = time.monotonic() + 10
    while not kernels(h.pid):
        if time.monotonic() > end or h.poll() is not None:
            fail("the holder ran no kernel")
        time.sleep(0.02)
    env = dict(VSHARE_LABEL="waiter")
    env.update(waiter_env)
    w = run.start([example("vs-vecadd"), "--size", "10000"], **env)
    for p in (h, w):
        run.finish(p, 40)
        if p.returncode != 0:
            fail("%s exited %d:\n%s\n%s" % (p.args, p.returncode, p.out,
                                           p.err))
    check("PASS" in w.out, "the waiter computes correctly")
    check(execlog.is_serialized(execlog.load(LOG)),
          "mode on: the two programs' kernels never overlap")
    return h, w


def t_notice():
    """The waiter says who holds the GPU and its place, once, and then
    how long it waited; the holder says nothing."""
    h, w = holder_then_waiter()
    print("waiter's stderr:\n" + w.err)
    lines = WAITING_RE.findall(w.err)
    check(len(lines) == 1, "one waiting line")
    pid, label, user, held, waited, place, n = lines[0]
    me = "user " + pwd.getpwuid(os.getuid()).pw_name
    check(int(pid) == w.pid, "the line is the waiter's own (pid %s)" % pid)
    check(label == HOLDER and user == me,
          "it names the holder's label and user (%s, %s)" % (label, user))
    check(place == "1" and n == "1", "place 1 of 1 in the queue")
    check(1.0 <= float(waited) < HOLD_S and 1.0 <= float(held) <= HOLD_S + 1,
          "it came after the 1 s threshold (waited %s s, held %s s)"
          % (waited, held))
    got = GOT_RE.findall(w.err)
    check(len(got) == 1 and int(got[0][0]) == w.pid,
          "one 'got the GPU' line")
    check(float(waited) <= float(got[0][1]) <= HOLD_S + 2,
          "it tells the whole wait (%s s)" % got[0][1])
    check("is busy" not in h.err and "got the GPU" not in h.err,
          "the holder, which never waited long, says nothing")


def t_quiet():
    """VSHARE_WAIT_NOTICE=0: the same wait, no line."""
    _, w = holder_then_waiter(VSHARE_WAIT_NOTICE="0")
    check("is busy" not in w.err and "got the GPU" not in w.err,
          "VSHARE_WAIT_NOTICE=0 silences the lines (stderr: %r)" % w.err)


def t_threshold():
    """A wait shorter than VSHARE_WAIT_NOTICE_MS is not worth a line."""
    _, w = holder_then_waiter(VSHARE_WAIT_NOTICE_MS="20000")
    check("is busy" not in w.err and "got the GPU" not in w.err,
          "a wait under the threshold prints nothing (stderr: %r)" % w.err)


if __name__ == "__main__":
    try:
        rc = main(scenarios(globals()))
    finally:
        run.kill_all()
        for s in SCHEDS:
            s.stop()
    sys.exit(rc)
