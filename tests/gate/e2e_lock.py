#!/usr/bin/env python3
"""End to end: the lock page (include/vshare/proto.h, "The lock page").
A GPU nobody holds or waits for is taken with a compare-and-swap in the
page the scheduler shares, without a REQUEST; with the real scheduler and
the shim on the CUDA test driver, checked through the driver's execution
log and both sides' debug logs.
usage: e2e_lock.py SCHEDULER VSHARECTL LIBVSHARE TESTDRIVER_DIR EXECLOG_PY
                   PROGRAM SCENARIO | --list"""
import os
import sys
import time

from e2e_lib import (SAN_PRELOAD, Runner, Scheduler, check, driver_env, load_execlog, main,
                     now_ns, scenarios, script_args, tmpdir)

SCHED, CTL, SHIM, TD_DIR, EXECLOG, PROG = script_args(6)
SAN = SAN_PRELOAD
execlog = load_execlog(EXECLOG)

TMP = tmpdir()
LOG, ENV = driver_env(TMP, TD_DIR, SHIM, SAN)
run = Runner(ENV)
TAKEN = "taken through the lock page"


def prog(*args, **env):
    env.setdefault("VSHARE_LOG_LEVEL", "debug")
    return run.start([PROG] + [str(a) for a in args], **env)


ok_exit = run.finish_ok


def kernels(pid=None):
    return [o for o in execlog.select(execlog.load(LOG), ("kernel",))
            if pid is None or o.pid == pid]


def sched_takes(s):
    with open(s.log) as f:
        return sum("through the lock page" in l for l in f)


def page_fds(pid):
    """Descriptors of pid that name a lock page, and whether both pages
    are mapped, the state page read-only."""
    fds = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            fds += "vshare-lock-" in os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    with open("/proc/%d/maps" % pid) as f:
        maps = [l.split() for l in f]
    perms = {l[-2] if l[-1] == "(deleted)" else l[-1]: l[1]
             for l in maps if "vshare-lock-" in " ".join(l)}
    mapped = (perms.get("/memfd:vshare-lock-state") == "r--s" and
              perms.get("/memfd:vshare-lock-words") == "rw-s")
    return fds, mapped


def t_take_back():
    """A holds; B asks through the socket and gets the GPU when A idles;
    B exits; A's next launch takes the free GPU through the page. The
    kernels never overlap, and no descriptor of the page stays open in
    the program."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    a = prog("-n", 4, "-k", 10000, "-m", 8, "-P", 1500, "-W", 300)
    time.sleep(0.15)
    fds, mapped = page_fds(a.pid)
    check(mapped and fds == 0, "the pages are mapped, the state page "
          "read-only, and their descriptors closed (%d open)" % fds)
    time.sleep(0.45)
    b = prog("-n", 2, "-k", 10000, "-m", 8)
    ok_exit(b)
    after_b = max(o.end for o in kernels(b.pid))
    ok_exit(a)
    check(a.err.count(TAKEN) == 2,
          "A took the free GPU at its first launch and again after B "
          "(%d):\n%s" % (a.err.count(TAKEN), a.err))
    check(TAKEN not in b.err, "B, which found A holding, asked for it")
    # The first take is told (TOOK) before A exits; the last may not be:
    # the scheduler adopts it when A's connection ends.
    check(sched_takes(s) >= 1, "the scheduler heard a TOOK")
    later = [o for o in kernels(a.pid) if o.start > after_b]
    check(len(later) == 2, "A ran its last kernels after B")
    check(len(kernels()) == 6 and execlog.is_serialized(kernels()),
          "mode on: no two processes' kernels overlap")
    s.stop()


def t_no_page():
    """A client with no page (the scheduler's lock_page false, or
    VSHARE_LOCK_PAGE=0 in the client) asks for every grant, and the
    programs still take turns."""
    for conf, env in (({"lock_page": False}, {}),
                      ({}, {"VSHARE_LOCK_PAGE": "0"})):
        s = Scheduler(SCHED, TMP, mode="on", tq_s=30, **conf)
        s.start()
        a = prog("-n", 4, "-k", 10000, "-m", 8, "-P", 800, **env)
        time.sleep(0.3)
        b = prog("-n", 2, "-k", 10000, "-m", 8, **env)
        ok_exit(a, b)
        check(TAKEN not in a.err + b.err and sched_takes(s) == 0,
              "no take through the page (%s %s)" % (conf, env))
        check(a.err.count("granted (exclusive") == 2,
              "A was granted twice through the socket:\n" + a.err)
        check(len(kernels()) == 6 and execlog.is_serialized(kernels()),
              "no overlap (%s %s)" % (conf, env))
        s.stop()
        os.unlink(LOG)
        os.unlink(s.log)


def t_sched_dies():
    """The scheduler dies while A holds a GPU it took through the page and
    B waits: both run on unshared and finish right; a new scheduler shares
    a new page, which a new program takes through, and the old programs
    register with it again."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=30)
    s.start()
    # A registers before its first launch (-W): its GPU is free then.
    a = prog("-n", 40, "-k", 10000, "-g", 5, "-m", 8, "-a", "-W", 200)
    time.sleep(0.5)
    b = prog("-n", 40, "-k", 10000, "-g", 5, "-m", 8, "-a")
    time.sleep(0.2)
    s.kill()
    killed = now_ns()
    ok_exit(a, b)
    check(TAKEN in a.err, "A took the GPU through the page:\n" + a.err)
    check(all("add ok" in p.out for p in (a, b)),
          "both computed correct results")
    check(any(o.pid == b.pid and o.start > killed for o in kernels()),
          "B ran on after the scheduler died")
    s.start()
    c = prog("-n", 2, "-k", 10000, "-m", 8, "-W", 200)
    ok_exit(c)
    check(TAKEN in c.err, "a new program took the GPU through the new "
          "scheduler's page:\n" + c.err)
    s.stop()


if __name__ == "__main__":
    try:
        rc = main(scenarios(globals()))
    finally:
        run.kill_all()
    sys.exit(rc)
