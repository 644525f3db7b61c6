"""Helpers for the scheduler integration tests: a real vshare-scheduler on a
temporary socket, the real vsharectl, sched_testclient, and raw frames."""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

MAGIC = 0x52485356
VERSION = 1
HDR = struct.Struct("<IHHII")
T = dict(HELLO=0x1, ATTACH=0x2, FOOTPRINT=0x3, REQUEST=0x4, RELEASED=0x5,
         WELCOME=0x101, GRANT=0x102, DROP=0x103, MODE=0x104, ERROR=0x105,
         STATUS=0x201, SET_TQ=0x202, SET_MODE=0x203, REPLY=0x301,
         SWAPPED=0x6, SET_SLICE=0x204, SET_POLICY=0x205, SET_WEIGHT=0x206,
         METRICS=0x207, WAIT_QUERY=0x8, WAITING=0x106, POLICY=0x107)
# VERSION is the oldest protocol version, which the daemon still serves;
# VERSION2 has the fair share's messages, VERSION3 the metrics request,
# the wait queries (WAIT_QUERY, WAITING) and the admin policy (POLICY).
VERSION2 = 2
VERSION3 = 3
CURRENT = 5  # the daemon's own version (VS_PROTO_VERSION)
E_INVAL = -22
E_VERSION = -95
E_PROTO = -71
E_PERM = -1
UUID = bytes.fromhex("00000000000000000000000000000001")


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def frame(mtype, payload=b"", version=VERSION, magic=MAGIC, flags=0,
          length=None):
    n = len(payload) if length is None else length
    return HDR.pack(magic, version, mtype, flags, n) + payload


def hello(label=b"raw", version=VERSION):
    return frame(T["HELLO"], struct.pack("<II64s", version, 0, label))


def attach(uuid=UUID, total=16 << 30):
    return frame(T["ATTACH"], uuid + struct.pack("<Q", total))


def gpu_ref(mtype, uuid=UUID):
    return frame(T[mtype], uuid)


class Daemon:
    """vshare-scheduler on a socket in a temporary directory."""

    def __init__(self, bindir, config=None, extra=(), start=True, env=None):
        self.bindir = bindir
        self.env = env
        self.dir = tempfile.mkdtemp(prefix="vshare-it-")
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "run", "scheduler.sock")
        self.log = os.path.join(self.dir, "daemon.log")
        self.conf = os.path.join(self.dir, "scheduler.json")
        with open(self.conf, "w") as f:
            json.dump(config or {}, f)
        self.extra = list(extra)
        self.proc = None
        if start:
            self.start()

    def __enter__(self):
        return self

    def __exit__(self, etype, evalue, tb):
        if etype is None and self.proc and self.proc.poll() is None:
            # A clean shutdown is part of every scenario; sanitizer builds
            # report leaks and errors of the daemon here.
            rc = self.stop()
            log = self.logtext()
            if rc != 0 or "Sanitizer" in log or "runtime error" in log:
                shutil.rmtree(self.dir, ignore_errors=True)
                raise Fail("daemon exit status %s at shutdown:\n%s" %
                           (rc, log[-3000:]))
        if etype is not None:
            print("--- daemon log (tail) ---\n" + self.logtext()[-3000:])
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def bin(self, name):
        return os.path.join(self.bindir, name)

    def start(self):
        self.proc = subprocess.Popen(
            [self.bin("vshare-scheduler"), "--socket", self.sock,
             "--config", self.conf] + self.extra,
            stderr=open(self.log, "a"), stdout=subprocess.DEVNULL,
            env=self.env)
        wait_for(lambda: self.ctl("status")[0] == 0 or self.proc.poll() is not None,
                 5, "daemon start")
        check(self.proc.poll() is None, "daemon exited at start:\n" + self.logtext())

    def logtext(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""


    def alive(self):
        return self.proc.poll() is None

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
        prog = self.public_bin("vsharectl") if user else self.bin("vsharectl")
        cmd = [prog, "-s", self.sock] + list(args)
        if user:
            cmd = ["setpriv", "--reuid=nobody", "--regid=" + user,
                   "--clear-groups"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20,
                           env=env)
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

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        return self.proc.returncode if self.proc else None


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise Fail("timed out waiting for " + what)


def recv_frame(s):
    """One frame (type, payload), or None at EOF."""
    f = recv_frame_v(s)
    return None if f is None else f[1:]


def recv_frame_v(s):
    """One frame (header version, type, payload), or None at EOF."""
    h = recv_n(s, HDR.size)
    if h is None:
        return None
    magic, ver, mtype, flags, n = HDR.unpack(h)
    p = recv_n(s, n)
    return ver, mtype, p


def recv_n(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            return None
        buf += d
    return buf


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
    if sys.argv[1:] == ["--list"]:
        print("\n".join(scenarios))
        return 0
    if len(sys.argv) < 3:
        print("usage: %s BINDIR SCENARIO | --list" % sys.argv[0])
        return 2
    bindir, name = sys.argv[1], sys.argv[2]
    fn = scenarios.get(name)
    if fn is None:
        print("unknown scenario %s; the scenarios are: %s"
              % (name, " ".join(scenarios)))
        return 2
    try:
        rc = fn(bindir)
    except Fail as e:
        print("FAIL:", e)
        return 1
    print("ok" if not rc else "skipped" if rc == 77 else "rc %d" % rc)
    return rc or 0
