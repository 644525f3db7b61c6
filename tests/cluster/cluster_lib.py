"""Shared parts of the cluster tests (Slurm, Podman): skipping, the
processes a test starts (stopped by pid whatever happens), the real
scheduler on a socket of the test's own, and the test driver's kernel
log."""

import ctypes
import importlib.util
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "sched"))
from schedtest import Daemon, Fail  # noqa: E402

BUILD = os.environ["VSHARE_BUILD_DIR"]
SOURCE = os.environ["VSHARE_SOURCE_DIR"]
BIN = os.path.join(BUILD, "bin")
SHIM = os.path.join(BUILD, "lib", "libvshare.so")
TESTDRIVER = os.path.join(BUILD, "lib", "testdriver")
SKIP = 77

_spec = importlib.util.spec_from_file_location(
    "execlog", os.path.join(SOURCE, "tests", "driver", "execlog.py"))
execlog = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execlog)


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def skip(why):
    print("SKIP: " + why, flush=True)
    sys.exit(SKIP)


def fail(why):
    print("FAIL: " + why, flush=True)
    raise SystemExit(1)


def check(cond, what):
    if not cond:
        fail(what)
    log("ok: " + what)


def need_root_and(tools, packages):
    """Skip unless root and every tool is on PATH (naming the packages)."""
    if os.geteuid() != 0:
        skip("needs root (runs daemons and containers as root)")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        skip("missing %s (apt-get install %s, or scripts/install-deps)"
             % (", ".join(missing), " ".join(packages)))


def clean_env(**extra):
    """The caller's environment without vshare's, the test driver's or the
    preload variables, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VSHARE_", "XLA_", "PYTORCH_", "TF_",
                                "SLURM_", "CUDA_"))
           and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    env.update(extra)
    return env


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, timeout, what, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    fail("timed out after %d s waiting for %s" % (timeout, what))


class Session:
    """A temporary directory and every process started in it; close()
    stops them by pid (TERM, then KILL) in reverse order and removes the
    directory. Use as a context manager."""

    def __init__(self, prefix):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.dir, 0o755)
        self.procs = []
        self.cleanups = []
        self.t0 = time.monotonic()
        # Daemons that fork away (slurmstepd, conmon) become our children
        # when their parent goes, so that close() can reap them.
        PR_SET_CHILD_SUBREAPER = 36
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1,
                                                0, 0, 0)
        # A TERM (ctest's timeout, a CI job cancelled) unwinds through
        # close() like a failure, so nothing started here outlives it.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + 15))

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def start(self, name, argv, env=None, **kw):
        out = open(self.path(name + ".out"), "w")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                             env=env if env is not None else clean_env(),
                             start_new_session=True, **kw)
        p.name = name
        p.outpath = out.name
        out.close()
        self.procs.append(p)
        return p

    def output(self, p):
        with open(p.outpath, errors="replace") as f:
            return f.read()

    def run(self, argv, env=None, timeout=60, check_rc=True):
        r = subprocess.run(argv, env=env if env is not None else clean_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
        if check_rc and r.returncode != 0:
            fail("%s exited %d:\n%s" % (" ".join(argv), r.returncode,
                                        r.stdout))
        return r

    def at_close(self, fn):
        self.cleanups.append(fn)

    @staticmethod
    def stop(p, timeout=5):
        if p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def close(self):
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # cleanup goes on whatever one step did
                log("cleanup: %s" % e)
        for p in reversed(self.procs):
            self.stop(p)
        self.reap()
        shutil.rmtree(self.dir, ignore_errors=True)
        log("took %.1f s" % (time.monotonic() - self.t0))

    @staticmethod
    def children():
        """Pids whose parent is this process: what it started, and, as
        the subreaper, what those left behind (a slurmstepd whose step
        hung)."""
        me, out = os.getpid(), []
        for d in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % d) as f:
                    stat = f.read()
            except (OSError, ValueError):
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == me and fields[0] != "Z":
                out.append(int(d))
        return out

    @classmethod
    def reap(cls, timeout=5):
        """Wait for orphans that became ours, which exit once their
        daemon is gone; stop, by pid, those that do not."""
        deadline = time.monotonic() + timeout
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            for pid in cls.children() if sig else []:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    return
                if pid == 0 and time.monotonic() >= deadline:
                    break
                if pid == 0:
                    time.sleep(0.05)
            deadline = time.monotonic() + 2

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def dump(self, *names):
        """Print the tail of log files of the session, for a failure."""
        for n in names:
            p = self.path(n)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    text = f.read()
                print("----- %s (tail)\n%s" % (n, text[-4000:]))


def start_scheduler(sess, sockdir, **conf):
    """The real vshare-scheduler with conf on sockdir/scheduler.sock: the
    tests' Daemon (tests/sched/schedtest.py), stopped when sess closes."""
    os.makedirs(sockdir, exist_ok=True)
    os.chmod(sockdir, 0o755)
    sock = os.path.join(sockdir, "scheduler.sock")
    conf.setdefault("log_level", "debug")
    try:
        d = Daemon(BIN, conf, dir=sess.dir, sock=sock, env=clean_env())
    except Fail as e:
        fail("vshare-scheduler did not start: %s" % e)
    sess.at_close(d.stop)
    return sock


def status(sock):
    r = subprocess.run([os.path.join(BIN, "vsharectl"), "--socket", sock,
                        "--json", "status"], env=clean_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=10)
    if r.returncode != 0:
        fail("vsharectl status: " + r.stderr)
    return json.loads(r.stdout)


def clients_labelled(sock, prefix, n):
    """Wait until n clients whose label starts with prefix hold a GPU or
    wait for one; returns them."""
    def seen():
        cs = [c for c in status(sock)["clients"]
              if c["label"].startswith(prefix) and c["gpus"]]
        return cs if len(cs) >= n else None
    return wait_for(seen, 60, "%d clients labelled %s* in vsharectl status"
                    % (n, prefix))


def merged_ops(logs):
    """Kernels of several execution logs, each log's pids renumbered apart:
    processes in different pid namespaces may share a pid."""
    ops = []
    for i, path in enumerate(logs):
        for o in execlog.load(path):
            ops.append(o._replace(pid=(i + 1) * 10000000 + o.pid))
    return ops


# Podman with nothing of the host's: storage, run root, locks and
# configuration in the session's directory, in a mount namespace of its own
# (test_podman.py and tests/k8s/test_image.py).

def ulimits():
    """Podman asks for large nofile and nproc limits by default; without
    CAP_SYS_RESOURCE (a nested container) runc cannot set them."""
    out = []
    for name, res in (("nofile", resource.RLIMIT_NOFILE),
                      ("nproc", resource.RLIMIT_NPROC)):
        hard = resource.getrlimit(res)[1]
        hard = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
        out.append('"%s=%d:%d"' % (name, min(1024, hard), hard))
    return ", ".join(out)


def storage_conf(sess, driver):
    """Podman's storage, new and empty, with driver: overlay is fast;
    vfs (a full copy per container) works where overlay cannot mount."""
    root, run = sess.path("storage-" + driver), sess.path("runroot-" + driver)
    os.makedirs(root)
    os.makedirs(run)
    with open(sess.path("storage.conf"), "w") as f:
        f.write('[storage]\ndriver = "%s"\ngraphroot = "%s"\nrunroot = "%s"\n'
                % (driver, root, run))


def podman_conf(sess):
    os.makedirs(sess.path("tmp"))
    storage_conf(sess, "overlay")
    with open(sess.path("containers.conf"), "w") as f:
        f.write("""[containers]
netns = "none"
default_ulimits = [%s]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "%s"
runtime = "runc"
tmp_dir = "%s"
lock_type = "file"
""" % (ulimits(), sess.path("events.log"), sess.path("tmp")))
    open(sess.path("registries.conf"), "w").close()
    return clean_env(CONTAINERS_CONF=sess.path("containers.conf"),
                     CONTAINERS_STORAGE_CONF=sess.path("storage.conf"),
                     CONTAINERS_REGISTRIES_CONF=sess.path("registries.conf"))


def mount_namespace(sess, extra=""):
    """A process holding a private mount namespace with its own /run (and
    /run/cdi in it) and /dev/shm; commands enter it with nsenter. extra:
    more shell commands run there first (mounts of the test's own)."""
    holder = sess.start("mountns", [
        "unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
        "mount -t tmpfs tmpfs /run && mkdir /run/cdi && "
        "mount -t tmpfs tmpfs /dev/shm && " + (extra + " && " if extra else "")
        + "echo ready && exec sleep 100000"])
    wait_for(lambda: "ready" in sess.output(holder) or holder.poll() is not None,
             10, "the mount namespace")
    if holder.poll() is not None:
        # Podman needs mount namespaces too: no container can run here.
        skip("cannot make a mount namespace, so no container can run "
             "here:\n" + sess.output(holder))
    return ["nsenter", "--mount", "--target", str(holder.pid)]


def devices(sess):
    """Stand-ins for /dev/nvidia0 and /dev/nvidiactl (NVIDIA's numbers);
    the CUDA side is the test driver, which no device node reaches."""
    d = sess.path("dev")
    os.makedirs(d)
    os.mknod(os.path.join(d, "nvidia0"), 0o666 | 0o020000, os.makedev(195, 0))
    os.mknod(os.path.join(d, "nvidiactl"), 0o666 | 0o020000,
             os.makedev(195, 255))
    return d
