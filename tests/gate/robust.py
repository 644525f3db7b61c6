#!/usr/bin/env python3
"""Robustness of libvshare.so inside host programs: robust_prog CHECK with
the shim preloaded on the CUDA test driver, against the real scheduler, no
scheduler, or a scheduler that accepts connections and never answers.
usage: robust.py SCHEDULER LIBVSHARE TESTDRIVER_DIR ROBUST_PROG SCENARIO
                 [SAN_PRELOAD]"""
import os
import shutil
import socket
import sys

from e2e_lib import Runner, Scheduler, check, fail, tmpdir

SCHED, SHIM, TD_DIR, PROG, SCENARIO = sys.argv[1:6]
SAN = sys.argv[6] if len(sys.argv) > 6 else ""

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


def closefds():
    run_check("closefds")
    check(True, "no scheduler: descriptors closed behind the shim's back "
          "are left alone")


def closefds_sched():
    s = Scheduler(SCHED, TMP, mode="on")
    s.start()
    run_check("closefds")
    s.stop()
    check(True, "with a scheduler: descriptors closed behind the shim's "
          "back are left alone")


SCENARIOS = {
    "closefds": closefds, "closefds_sched": closefds_sched,
}

try:
    SCENARIOS[SCENARIO]()
finally:
    run.kill_all()
shutil.rmtree(TMP, ignore_errors=True)
