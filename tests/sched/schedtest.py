"""Helpers for the scheduler integration tests: a real vshare-scheduler on a
temporary socket, the real vsharectl, sched_testclient, and raw frames."""
import atexit
import inspect
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The wire codec (vsproto.py, checked against the C code); its names are
# re-exported here for the scenario scripts.
from vsproto import (HDR, MAGIC, T, UUID, attach, frame,  # noqa: E402,F401
                     gpu_ref, hello, recv_frame, recv_frame_v, recv_n)
import vsproto  # noqa: E402

# VERSION is the oldest protocol version, which the daemon still serves;
# VERSION2 has the fair share's messages, VERSION3 the metrics request,
# the wait queries (WAIT_QUERY, WAITING) and the admin policy (POLICY).
VERSION = vsproto.VERSION_MIN
VERSION2 = 2
VERSION3 = 3
CURRENT = vsproto.VERSION  # the daemon's own version (VS_PROTO_VERSION)
E_INVAL = vsproto.E["INVAL"]
E_VERSION = vsproto.E["VERSION"]
E_PROTO = vsproto.E["PROTO"]
E_PERM = vsproto.E["PERM"]


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def short_tmpdir(prefix):
    """A new directory whose path is short enough for a Unix socket
    (sun_path holds 108 bytes), however deep the build directory is:
    under $XDG_RUNTIME_DIR or $TMPDIR when they are short and other users
    may pass through them (tests run clients as other users: debhelper's
    own XDG_RUNTIME_DIR is private), else /tmp."""
    for d in (os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("TMPDIR")):
        if (d and len(d) <= 40 and os.path.isdir(d) and
                os.stat(d).st_mode & 0o001):
            return tempfile.mkdtemp(prefix=prefix, dir=d)
    return tempfile.mkdtemp(prefix=prefix, dir="/tmp")


class Daemon:
    """vshare-scheduler on a socket in a temporary directory: the one
    helper of the tests that starts the daemon.

    bindir: where vshare-scheduler and vsharectl are (binary and ctl name
    other programs). config: a dict written to the configuration file, or
    the path of a file to use as is. dir: a directory of the caller's to
    work in (kept), else a new short one (removed at exit, and when the
    start fails). sock: the socket's path (default DIR/run/scheduler.sock).
    The daemon writes its stdout and stderr to DIR/daemon.log. Used as a
    context manager, a scenario that ends cleanly also stops the daemon
    and fails on a bad exit status or a sanitizer report."""

    def __init__(self, bindir, config=None, extra=(), start=True, env=None,
                 dir=None, sock=None, binary=None, ctl=None,
                 start_timeout=10):
        self.bindir = bindir
        self.binary = binary or os.path.join(bindir, "vshare-scheduler")
        self.ctl_prog = ctl or os.path.join(bindir, "vsharectl")
        self.env = env
        self.owned = dir is None
        self.dir = short_tmpdir("vshare-it-") if self.owned else dir
        if self.owned:
            os.chmod(self.dir, 0o755)
        self.sock = sock or os.path.join(self.dir, "run", "scheduler.sock")
        self.log = os.path.join(self.dir, "daemon.log")
        if isinstance(config, str):
            self.conf = config
        else:
            self.conf = os.path.join(self.dir, "scheduler.json")
            self.conf_write(config or {})
        self.extra = list(extra)
        self.proc = None
        if start:
            try:
                self.start(start_timeout)
            except BaseException:
                self.cleanup()
                raise

    def __enter__(self):
        return self

    def __exit__(self, etype, evalue, tb):
        if etype is None and self.alive():
            # A clean shutdown is part of every scenario; sanitizer builds
            # report leaks and errors of the daemon here.
            rc = self.stop()
            log = self.logtext()
            if rc != 0 or "Sanitizer" in log or "runtime error" in log:
                self.cleanup()
                raise Fail("daemon exit status %s at shutdown:\n%s" %
                           (rc, log[-3000:]))
        if etype is not None:
            print("--- daemon log (tail) ---\n" + self.logtext()[-3000:])
        self.cleanup()

    def cleanup(self):
        """Kill the daemon if it runs; remove the directory if it is ours."""
        self.kill()
        if self.owned:
            shutil.rmtree(self.dir, ignore_errors=True)

    def bin(self, name):
        return os.path.join(self.bindir, name)

    def conf_write(self, config):
        """A new configuration file (taken at the next start or reload)."""
        with open(self.conf, "w") as f:
            json.dump(config, f)

    def argv(self):
        return [self.binary, "--socket", self.sock, "--config",
                self.conf] + self.extra

    def spawn(self, env=None, **kw):
        """The daemon started, not waited for: its Popen. Its output goes
        to the log unless kw says otherwise."""
        kw.setdefault("stderr", open(self.log, "a"))
        kw.setdefault("stdout", kw["stderr"] if kw["stderr"] !=
                      subprocess.PIPE else subprocess.DEVNULL)
        self.proc = subprocess.Popen(self.argv(), env=env or self.env, **kw)
        # A scenario that exits early (sys.exit in a check) must not leave
        # it running.
        atexit.register(self.kill)
        return self.proc

    def start(self, timeout=10):
        """Start the daemon and wait until it answers a status request."""
        self.spawn()
        try:
            wait_for(lambda: not self.alive() or self.ctl("status")[0] == 0,
                     timeout, "daemon start")
        except Fail:
            raise Fail("daemon did not answer within %d s:\n%s" %
                       (timeout, self.logtext()[-3000:]))
        check(self.alive(), "daemon exited at start:\n" + self.logtext())

    def logtext(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def public_bin(self, name):
        """A copy of a program that any user can run: the build tree may
        sit in a directory that `nobody` cannot enter."""
        pub = os.path.join(self.dir, "pub")
        os.makedirs(pub, mode=0o755, exist_ok=True)
        dst = os.path.join(pub, name)
        if not os.path.exists(dst):
            shutil.copy(self.bin(name), dst)
            os.chmod(dst, 0o755)
        return dst

    def ctl(self, *args, user=None, env=None):
        prog = self.public_bin("vsharectl") if user else self.ctl_prog
        cmd = [prog, "-s", self.sock] + list(args)
        if user:
            cmd = ["setpriv", "--reuid=nobody", "--regid=" + user,
                   "--clear-groups"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20,
                           env=env if env is not None else self.env)
        return r.returncode, r.stdout, r.stderr

    def status(self):
        rc, out, err = self.ctl("--json", "status")
        check(rc == 0, "status failed: %s" % err)
        return json.loads(out)

    def client(self, *args, stdin=subprocess.DEVNULL):
        return subprocess.Popen([self.bin("sched_testclient"), "--socket",
                                 self.sock] + [str(a) for a in args],
                                stdout=subprocess.PIPE, stdin=stdin, text=True)

    def raw(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(self.sock)
        return s

    def reload(self):
        self.proc.send_signal(signal.SIGHUP)

    def kill(self, sig=signal.SIGKILL):
        if self.alive():
            self.proc.send_signal(sig)
            self.proc.wait(10)

    def stop(self, timeout=10):
        """SIGTERM and its exit status; a daemon that does not exit within
        timeout seconds is killed (and its status is then -9)."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise Fail("timed out waiting for " + what)


def closed_by_peer(s, timeout=5):
    """True if the daemon closes s (after any frames it sends first)."""
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(4096):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def events(output):
    """Parse sched_testclient lines: [(t_ms, who, event, {k: v})]."""
    out = []
    for line in output.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[0] == "summary":
            continue
        kv = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
        out.append((float(parts[0]), parts[1], parts[2], kv))
    return out


def scenarios(namespace):
    """The scenarios of a script: its module-level functions named t_NAME,
    in the order they are defined. A scenario is named once, where it is
    defined: tests/CMakeLists.txt (vshare_scenarios) registers a ctest for
    each line of the script matching ^def t_NAME( -- the same functions."""
    module = namespace["__name__"]
    return {name[2:]: fn for name, fn in namespace.items()
            if name.startswith("t_") and callable(fn)
            and getattr(fn, "__module__", None) == module}


def main(scenarios):
    """The one runner of the scenario scripts, which end with
    sys.exit(main(scenarios(globals()))). A script is run as

      SCRIPT ARG... SCENARIO     or     SCRIPT --list

    with the arguments its CMakeLists.txt gives it first (the scheduler
    scripts: the build's bin directory) and the scenario's name last. The
    scenario t_NAME is called with those arguments, or with none if it
    takes none (a script that reads them at its start). Its status: 0
    passed, 77 skipped (SKIP_RETURN_CODE), else failed; Fail is a failure
    too."""
    if sys.argv[1:] == ["--list"]:
        print("\n".join(scenarios))
        return 0
    if len(sys.argv) < 2:
        print("usage: %s ARG... SCENARIO | --list" % sys.argv[0])
        return 2
    args, name = sys.argv[1:-1], sys.argv[-1]
    fn = scenarios.get(name)
    if fn is None:
        print("unknown scenario %s; the scenarios are: %s"
              % (name, " ".join(scenarios)))
        return 2
    try:
        takes = inspect.signature(fn).parameters
        rc = fn(*args) if takes else fn()
    except Fail as e:
        print("FAIL:", e)
        return 1
    print("ok" if not rc else "skipped" if rc == 77 else "rc %d" % rc)
    return rc or 0
