"""Helpers for the gate's integration tests: a real vshare-scheduler on a
temporary socket, processes under test, and the execution-log checks."""
import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "sched"))
# The one helper that starts a scheduler, the wire codec and the scenario
# runner, shared with the scheduler's tests.
from schedtest import (Daemon, T, frame, main, scenarios,  # noqa: E402,F401
                       short_tmpdir)


# The sanitizer runtime that a sanitized build preloads before the shim
# (empty otherwise), from the test's environment; taken out of it, since
# the programs under test get their LD_PRELOAD from driver_env.
SAN_PRELOAD = os.environ.pop("VSHARE_SAN_PRELOAD", "")


def script_args(n):
    """The script's n arguments from its command line, SCRIPT ARG...
    SCENARIO (schedtest.main); empty ones when it only lists its
    scenarios (--list)."""
    return (sys.argv[1:-1] + [""] * n)[:n]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg)


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def Scheduler(binary, tmp, **conf):
    """The real scheduler with conf (log level debug unless conf says) on
    tmp/sched.sock, logging to tmp/daemon.log: the scheduler tests' Daemon
    (tests/sched/schedtest.py), not started; start() it. A scenario that
    fails (fail() exits) does not leave it running."""
    conf.setdefault("log_level", "debug")
    return Daemon(os.path.dirname(binary), conf, start=False, dir=tmp,
                  sock=os.path.join(tmp, "sched.sock"), binary=binary)


class Runner:
    """Processes under test with a shared environment; stdout captured."""

    def __init__(self, env):
        self.env = env
        self.procs = []

    def start(self, argv, **extra):
        env = dict(self.env)
        env.update({k: str(v) for k, v in extra.items()})
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def finish(self, p, timeout=20):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            fail("process %s timed out\nstdout:\n%s\nstderr:\n%s"
                 % (p.args, out, err))
        p.out, p.err = out, err
        return p

    def finish_ok(self, *procs):
        """Finish each process; fail unless each exited 0."""
        for p in procs:
            self.finish(p)
            if p.returncode != 0:
                fail("%s exited %d:\n%s" % (p.args, p.returncode, p.err))

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def first_stamp(p):
    """The 'first NS' line a test program prints before its first launch."""
    for line in p.out.splitlines():
        if line.startswith("first "):
            return int(line.split()[1])
    fail("no 'first' line in the output of %s:\n%s" % (p.args, p.out))


def read_log(path):
    """Execution log lines: start end pid dev stream kind name bytes."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            c = line.split()
            if len(c) < 7:
                continue
            rows.append({"start": int(c[0]), "end": int(c[1]),
                         "pid": int(c[2]), "dev": int(c[3]),
                         "kind": c[5], "name": c[6]})
    return rows


def kernels(rows, name=None, pid=None, after=0):
    return [r for r in rows if r["kind"] == "kernel"
            and (name is None or r["name"] == name)
            and (pid is None or r["pid"] == pid)
            and r["start"] >= after]


def cross_overlaps(rows):
    """Pairs of kernels of different processes that ran at the same time."""
    rows = sorted(rows, key=lambda r: r["start"])
    pairs = []
    active = []
    for r in rows:
        active = [a for a in active if a["end"] > r["start"]]
        pairs += [(a, r) for a in active if a["pid"] != r["pid"]]
        active.append(r)
    return pairs


def load_execlog(path):
    """The test driver's log reader (tests/driver/execlog.py), which the
    build passes by path, as a module."""
    spec = importlib.util.spec_from_file_location("execlog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tmpdir():
    d = short_tmpdir("vsgate-e2e.")
    # Removed however the scenario ends: a failed check exits before the
    # scripts' own removal (registered first, so it runs after the
    # schedulers are stopped).
    atexit.register(shutil.rmtree, d, True)
    return d


def driver_env(tmp, td_dir, shim, san):
    """The kernel log's path and the environment of a program under the
    shim on the test driver: the scheduler's socket in tmp, the driver's
    log there, the sanitizer runtime (if any) preloaded before the shim."""
    log = os.path.join(tmp, "exec.log")
    env = dict(os.environ,
               VSHARE_SOCKET=os.path.join(tmp, "sched.sock"),
               VSHARE_IDLE_MS="100",
               VSHARE_TD_LOG=log,
               LD_LIBRARY_PATH=td_dir,
               LD_PRELOAD=" ".join(p for p in (san, shim) if p))
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    return log, env
