#!/usr/bin/env python3
"""Robustness of libvshare.so inside host programs: robust_prog CHECK with
the shim preloaded on the CUDA test driver, against the real scheduler, no
scheduler, or a scheduler that accepts connections and never answers.
usage: robust.py SCHEDULER LIBVSHARE TESTDRIVER_DIR ROBUST_PROG
                 SCENARIO | --list"""
import os
import socket
import struct
import subprocess
import sys
import threading
import time

from e2e_lib import (SAN_PRELOAD, Runner, Scheduler, T, check, fail, frame, main, scenarios,
                     script_args, tmpdir)

SCHED, SHIM, TD_DIR, PROG = script_args(4)
SAN = SAN_PRELOAD

TMP = tmpdir()
ENV = dict(os.environ,
           VSHARE_SOCKET=os.path.join(TMP, "sched.sock"),
           VSHARE_IDLE_MS="50",
           VSHARE_LOG_LEVEL="warn",
           LD_LIBRARY_PATH=TD_DIR,
           LD_PRELOAD=" ".join(p for p in (SAN, SHIM) if p))
ENV.setdefault("ASAN_OPTIONS", "detect_leaks=0")
run = Runner(ENV)


def run_check(name, timeout=20, **env):
    p = run.finish(run.start([PROG, name], **env), timeout)
    if p.returncode != 0:
        fail("%s exited with %d\nstdout:\n%s\nstderr:\n%s"
             % (name, p.returncode, p.out, p.err))
    return p


def mute_scheduler():
    """A listening socket that accepts and never answers."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(ENV["VSHARE_SOCKET"])
    s.listen(16)
    return s


def t_closefds():
    run_check("closefds")
    check(True, "no scheduler: descriptors closed behind the shim's back "
          "are left alone")


def t_closefds_sched():
    s = Scheduler(SCHED, TMP, mode="on")
    s.start()
    run_check("closefds")
    s.stop()
    check(True, "with a scheduler: descriptors closed behind the shim's "
          "back are left alone")


def timed(name, limit, **env):
    t0 = time.monotonic()
    p = run_check(name, timeout=limit + 10, **env)
    dt = time.monotonic() - t0
    check(dt < limit, "%s finished in %.1f s (limit %.0f s)" % (name, dt, limit))
    return p


def t_mute():
    m = mute_scheduler()
    p = timed("steady", 10)
    lines = [l for l in p.err.splitlines() if "does not answer" in l]
    check(len(lines) == 1, "a scheduler that never answers: one warning "
          "(%d), the program runs unshared" % len(lines))
    m.close()


def t_mute_exit():
    m = mute_scheduler()
    # GPU work waits for the scheduler; exit must not.
    for name in ("exit_waiting", "exit_thread"):
        timed(name, 3, VSHARE_REQUIRE_SCHEDULER=1)
    m.close()


def t_fork_busy():
    # Two busy processes under a short quantum: grants, drops and
    # releases go on while each forks.
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    a = run.start([PROG, "fork_busy"])
    b = run.start([PROG, "fork_busy"])
    for p in (a, b):
        run.finish(p, 30)
        if p.returncode != 0:
            fail("fork_busy exited with %d\n%s" % (p.returncode, p.err))
    s.stop()
    check(True, "fork from busy threads: the children neither hang nor fail")


def with_sched(name):
    """The program's scenario name, timed, beside a scheduler in mode on."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    timed(name, 10)
    s.stop()


def t_spawn_fds():
    with_sched("spawn_fds")


def t_atexit_cuda():
    with_sched("atexit_cuda")


def t_dlclose():
    with_sched("dlclose")


def t_signals():
    # The first launch waits at the gate for a scheduler that does not
    # answer, while SIGALRM keeps coming.
    m = mute_scheduler()
    timed("signals", 10)
    m.close()


def t_exit_releasing():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    t0 = time.monotonic()
    a = run.start([PROG, "exit_releasing"])
    time.sleep(0.2)
    b = run.start([PROG, "work"])
    run.finish(a, 10)
    dt = time.monotonic() - t0
    check(a.returncode == 0 and dt < 2.0,
          "exit while a release waits for a long kernel: prompt and clean "
          "(%.1f s, status %d)\n%s" % (dt, a.returncode, a.err))
    run.finish(b, 10)
    check(b.returncode == 0, "the waiter then runs")
    s.stop()


def t_ctor():
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    timed("ctor", 10, ROBUST_CTOR=1)
    s.stop()


def t_cancel():
    # The waiting thread waits 2 s for a scheduler that does not answer.
    m = mute_scheduler()
    timed("cancel", 8)
    m.close()


def t_backlog_full():
    # A stopped scheduler whose listen queue is full: connect would block.
    m = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    m.bind(ENV["VSHARE_SOCKET"])
    m.listen(0)
    fill = []
    for _ in range(4):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(ENV["VSHARE_SOCKET"])
        except OSError:
            break
        fill.append(c)
    check(len(fill) >= 1, "the listen queue is full")
    timed("work", 6)
    m.close()


def t_connect_flood():
    """Two processes connect to the scheduler and close in a tight loop
    (one blocking in connect, one retrying EAGAIN at once): programs that
    start meanwhile register, waiting while the listen queue is full (a
    busy scheduler), and never run unshared."""
    s = Scheduler(SCHED, TMP, mode="on")
    s.start()
    peer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "sched", "hostile_peer.py")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    flood = []
    for how in ("block", "nonblock"):
        p = subprocess.Popen([sys.executable, peer, s.sock, "churn", "60",
                              how], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        run.procs.append(p)
        check(p.stdout.readline() != "", "flood %s started" % how)
        flood.append(p)
    time.sleep(0.5)
    for _ in range(5):
        p = timed("work", 4)
        told = [l for l in p.err.splitlines() if "scheduler" in l]
        if told:
            fail("a program under the flood: %s" % "\n".join(told))
    counts = []
    for p in flood:
        p.stdin.close()
        counts.append(p.stdout.readline().strip())
        p.wait(timeout=30)
    check(True, "5 programs registered under the flood (%s)" % counts)
    s.stop()


def t_table_full():
    """A table that others' connections fill (max_clients 1 and the
    admins' 64 beyond it, all held by another process): a program that
    starts then is refused with VS_E_FULL, and its GPU work waits, said
    once, until a place is free; it then registers and finishes, never
    running unshared. Before, it ran unshared at once."""
    s = Scheduler(SCHED, TMP, mode="on", max_clients=1)
    s.start()
    peer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "sched", "hostile_peer.py")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    holder = subprocess.Popen([sys.executable, peer, s.sock, "hold", "65"],
                              env=env, text=True, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    run.procs.append(holder)
    held = holder.stdout.readline()
    check('"welcomed": 65' in held, "the table is full: %s" % held.strip())
    p = run.start([PROG, "work"])
    # It waits: still running well past what its work takes alone.
    time.sleep(2)
    if p.poll() is not None:
        run.finish(p)
        fail("the program finished while the table was full:\n%s\n%s" %
             (p.err, s.logtext()[-3000:]))
    holder.stdin.close()
    holder.wait(timeout=30)
    run.finish(p, 30)
    check(p.returncode == 0, "the program exited %d:\n%s" % (p.returncode,
                                                           p.err))
    told = [l for l in p.err.splitlines() if "scheduler" in l]
    check(len([l for l in told if "is full" in l and "waits" in l]) == 1 and
          not [l for l in told if "unshared" in l],
          "said once that it waits, never unshared: %r" % told)
    check("registered" in s.logtext() and "robust_prog" in s.logtext(),
          "the program registered once a place was free")
    s.stop()


def t_flaky():
    """A scheduler that welcomes each client and then sends a frame of a
    type the client does not know: the client must not reconnect in a
    tight loop nor log each time."""
    m = mute_scheduler()
    conns = []
    stop = threading.Event()

    def serve():
        m.settimeout(0.05)
        while not stop.is_set():
            try:
                c, _ = m.accept()
            except socket.timeout:
                continue
            conns.append(c)
            c.settimeout(1)
            try:
                c.recv(4096)
                welcome = frame(T["WELCOME"],
                                struct.pack("<II", 1, len(conns)))
                c.sendall(welcome + frame(0x01ee))
            except OSError:
                pass

    t = threading.Thread(target=serve)
    t.start()
    p = timed("steady", 12)
    stop.set()
    t.join()
    lines = [l for l in p.err.splitlines() if "warn" in l or "error" in l]
    check(len(conns) <= 10, "%d connections in the run (backoff)" % len(conns))
    check(len(lines) <= 4, "%d warning lines:\n%s" % (len(lines), "\n".join(lines)))
    m.close()


if __name__ == "__main__":
    try:
        rc = main(scenarios(globals()))
    finally:
        run.kill_all()
    sys.exit(rc)
