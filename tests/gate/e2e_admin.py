#!/usr/bin/env python3
"""End to end: the admin's policy (scheduler keys policy_users and
policy_groups) as a program under libvshare.so on the CUDA test driver
lives it: the scheduler's memory limit binds the first allocation, the
environment can only lower it, a reload that lowers it refuses new
allocations and leaves existing memory alone, and a policy that requires
the scheduler keeps GPU work waiting through an outage.

usage: e2e_admin.py SCHEDULER LIBVSHARE TESTDRIVER_DIR EXECLOG_PY PROGRAM
                    SCENARIO | --list
Each function t_NAME is scenario NAME and ctest gate.admin.NAME
(tests/gate/CMakeLists.txt). The policy is the test user's own (the
peer's uid from SO_PEERCRED)."""
import os
import sys
import time

from e2e_lib import (SAN_PRELOAD, Runner, Scheduler, check, driver_env, fail, load_execlog,
                     main, scenarios, script_args, tmpdir)

SCHED, SHIM, TD_DIR, EXECLOG, PROG = script_args(5)
SAN = SAN_PRELOAD
execlog = load_execlog(EXECLOG)

TMP = tmpdir()
LOG, ENV = driver_env(TMP, TD_DIR, SHIM, SAN)
run = Runner(ENV)
OOM = 2                      # CUDA_ERROR_OUT_OF_MEMORY
UID = str(os.getuid())


def scheduler(user_policy):
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1,
                  policy_users={UID: user_policy})
    s.start()
    return s


def prog(*args, **env):
    return run.start([PROG] + [str(a) for a in args], **env)


def finish(p):
    run.finish(p, 30)
    return p


def kernels(pid):
    try:
        ops = execlog.load(LOG)
    except (OSError, ValueError):
        return []
    return [o for o in execlog.select(ops) if o.pid == pid]


def wait_kernel(p, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end and p.poll() is None:
        if kernels(p.pid):
            return
        time.sleep(0.02)
    fail("%s ran no kernel" % (p.args,))


def alloc_failed(p):
    return p.returncode == 1 and "cuMemAlloc_v2" in p.err and \
        "failed: %d" % OOM in p.err


def t_first_alloc():
    """The scheduler's limit binds the program's very first allocation,
    made before any kernel: the shim learns the policy before it."""
    s = scheduler({"mem_limit": "32M"})
    over = finish(prog("-n", 1, "-k", 100, "-m", 48))
    check(alloc_failed(over),
          "48 MiB over a 32 MiB policy: CUDA_ERROR_OUT_OF_MEMORY (%d: %s)"
          % (over.returncode, over.err.strip()[-200:]))
    under = finish(prog("-n", 1, "-k", 100, "-m", 16))
    check(under.returncode == 0, "16 MiB within it runs (%s)" % under.err)
    s.stop()


def t_env_only_lowers():
    """VSHARE_MEM_LIMIT may lower the scheduler's limit, not raise it."""
    s = scheduler({"mem_limit": "32M"})
    high = finish(prog("-n", 1, "-k", 100, "-m", 48,
                       VSHARE_MEM_LIMIT="1G"))
    check(alloc_failed(high), "VSHARE_MEM_LIMIT=1G does not lift 32 MiB")
    low = finish(prog("-n", 1, "-k", 100, "-m", 16, VSHARE_MEM_LIMIT="8M"))
    check(alloc_failed(low), "VSHARE_MEM_LIMIT=8M lowers it below 16 MiB")
    s.stop()


def t_convert_off_ignored():
    """VSHARE_CONVERT=0 would leave memory to the driver, partly
    uncounted: under the scheduler's limit it is ignored, and the limit
    binds."""
    s = scheduler({"mem_limit": "32M"})
    over = finish(prog("-n", 1, "-k", 100, "-m", 48, VSHARE_CONVERT="0",
                       VSHARE_LOG_LEVEL="warn"))
    check(alloc_failed(over) and "VSHARE_CONVERT=0 is ignored" in over.err,
          "VSHARE_CONVERT=0 does not lift 32 MiB (%s)" % over.err[-300:])
    s.stop()
    free = finish(prog("-n", 1, "-k", 100, "-m", 48, VSHARE_CONVERT="0",
                       VSHARE_LOG_LEVEL="warn"))
    check("VSHARE_CONVERT=0 is ignored" not in free.err,
          "without a limit VSHARE_CONVERT=0 applies (%s)" % free.err[-300:])


def t_reload_lowers():
    """A reload that lowers the limit below what a running program holds:
    its memory stays usable, its next allocation is refused."""
    s = scheduler({"mem_limit": "64M"})
    p = prog("-n", 25, "-k", 1000, "-g", 100, "-m", 16, "-F",
             VSHARE_LOG_LEVEL="debug")
    wait_kernel(p)
    s.conf_write({"policy_users": {UID: {"mem_limit": "8M"}},
                  "log_level": "debug"})
    s.reload()
    finish(p)
    check(p.returncode == 0, "the program ran to its end (%s)" % p.err)
    check("policy: memory limit 8388608" in p.err,
          "the program heard the lowered limit")
    check("buf ok" in p.out, "its 16 MiB allocated before stay usable")
    check("late alloc %d" % OOM in p.out,
          "a new allocation is refused: %s" % p.out.strip())
    check(len(kernels(p.pid)) == 25, "every kernel ran")
    s.stop()


def t_no_policy_unchanged():
    """Without an entry for the user nothing is limited."""
    s = Scheduler(SCHED, TMP, mode="on", tq_s=1)
    s.start()
    p = finish(prog("-n", 2, "-k", 100, "-m", 48, "-F"))
    check(p.returncode == 0 and "late alloc 0" in p.out,
          "no limit: both allocations succeed (%s)" % p.err)
    s.stop()


def outage(policy, **env):
    """A program that registers, then loses the scheduler for 1.5 s: its
    kernels during the outage (ns from the kernel log) and the program."""
    s = scheduler(policy)
    p = prog("-n", 60, "-k", 1000, "-g", 50, **env)
    wait_kernel(p)
    time.sleep(0.2)
    s.kill()
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    time.sleep(1.5)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    s.start()
    finish(p)
    check(p.returncode == 0, "the program finished (%s)" % p.err)
    # The first 200 ms: a kernel that was running when the scheduler died.
    during = [o for o in kernels(p.pid) if t0 + 200_000_000 < o.start < t1]
    s.stop()
    return during, p


def t_require_waits():
    """A policy that requires the scheduler: GPU work waits through the
    outage rather than run unshared (the environment cannot undo it)."""
    during, p = outage({"require": True}, VSHARE_REQUIRE_SCHEDULER="0")
    check(not during, "no kernel ran while the scheduler was away (%d)"
          % len(during))
    check("GPU work waits until it is back" in p.err,
          "the program said that it waits")


def t_no_require_runs():
    """The same outage without require: the program runs unshared."""
    during, p = outage({})
    check(len(during) > 5, "kernels ran unshared during the outage (%d)"
          % len(during))


if __name__ == "__main__":
    try:
        rc = main(scenarios(globals()))
    finally:
        run.kill_all()
    sys.exit(rc)
