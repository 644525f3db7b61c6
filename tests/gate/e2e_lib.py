"""Helpers for the gate's integration tests: a real vshare-scheduler on a
temporary socket, processes under test, and the execution-log checks."""
import atexit
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg)


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Scheduler:
    """vshare-scheduler with a JSON config on a socket in `tmp`."""

    def __init__(self, binary, tmp, **conf):
        self.binary = binary
        self.tmp = tmp
        self.sock = os.path.join(tmp, "sched.sock")
        self.conf = os.path.join(tmp, "sched.json")
        self.log = os.path.join(tmp, "sched.log")
        conf.setdefault("log_level", "debug")
        self.conf_write(**conf)
        self.proc = None

    def conf_write(self, **conf):
        """A new configuration file (taken at the next start or reload)."""
        conf.setdefault("log_level", "debug")
        with open(self.conf, "w") as f:
            json.dump(conf, f)

    def reload(self):
        self.proc.send_signal(signal.SIGHUP)

    def start(self):
        logf = open(self.log, "a")
        self.proc = subprocess.Popen(
            [self.binary, "--socket", self.sock, "--config", self.conf],
            stdout=logf, stderr=subprocess.STDOUT)
        # A scenario that fails (fail() exits) must not leave it running.
        atexit.register(self.kill)
        deadline = time.time() + 5
        while time.time() < deadline:
            if self.proc.poll() is not None:
                fail("scheduler exited at start:\n" + open(self.log).read())
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.sock)
                s.close()
                return
            except OSError:
                time.sleep(0.02)
        fail("scheduler did not start listening")

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(5)

    def stop(self):
        self.kill(signal.SIGTERM)


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
    d = tempfile.mkdtemp(prefix="vsgate-e2e.")
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
