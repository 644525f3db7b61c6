"""Plumbing of the GPU suite: running programs plain or under the shim,
a private scheduler on a temporary socket, the memory safety guard, and
results. Standard library only (runs on any python3 >= 3.8)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

GIB = 1 << 30


SIZE_MIN_PLAIN = 1 << 20


def parse_size(text):
    """A size as vshare reads one (src/common/size.c, `vsharectl bytes`):
    '8G', '512MiB', '1.5T', '4096B', or a bare number of bytes from 1 MiB
    up; a bare number below that is refused as a unit left out, and so is
    a fraction of a byte. The suite computes its memory guard before any
    vshare build is known (and `--plain-only` runs with none), so it
    cannot ask vsharectl; ops.suite_sizes holds the two to the same
    answers. Raises ValueError with vshare's own words."""
    digits = re.match(r"[0-9.]*", text).group(0)
    rest = text[len(digits):]
    num = re.match(r"[0-9]+(\.[0-9]*)?", digits)
    # vshare's messages quote at most 64 bytes of the text.
    quoted = text.encode()[:64].decode(errors="replace")
    bad = "'%s': not a size (like 8G, 512M or 1.5T; bytes like 4096B)" % quoted
    if num is None or (rest[:1] and rest[0] in "xXeEpP"):
        raise ValueError(bad)
    end = digits[num.end():] + rest
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(
        end[:1].lower(), 1)
    if mult > 1:
        end = end[1:]
        if end[:1] == "i":
            end = end[1:]
    if end in ("B", "b"):
        end = ""
    if end:
        raise ValueError(bad)
    v = float(num.group(0))
    # strtod's range error: a number that underflows (to 0 or below the
    # smallest normal double) from digits that are not all 0.
    if v < sys.float_info.min and num.group(0).strip("0.") != "":
        raise ValueError(bad)
    v *= mult
    if v >= 2.0 ** 64:
        raise ValueError(bad)
    if text[-1].isdigit() and 0 < v < SIZE_MIN_PLAIN:
        hint = ("%sG" % quoted if "." in text else
                "%sG or %sB" % (quoted, quoted))
        raise ValueError("'%s': a size needs a unit (K, M, G, T); a bare "
                         "number below 1 MiB is refused, write %s" %
                         (quoted, hint))
    if mult == 1 and "." in digits:
        raise ValueError(bad)
    return int(v)


class SuiteError(Exception):
    """A condition under which the suite must not go on (safety, set-up)."""


class Result:
    """One line of the results table."""

    def __init__(self, name, kind, status, measured="", baseline="",
                 target="", detail="", data=None):
        self.name, self.kind, self.status = name, kind, status
        self.measured, self.baseline, self.target = measured, baseline, target
        self.detail, self.data = detail, data or {}

    def as_dict(self):
        return dict(name=self.name, kind=self.kind, status=self.status,
                    measured=self.measured, baseline=self.baseline,
                    target=self.target, detail=self.detail, data=self.data)


class Proc:
    """The outcome of one program run."""

    def __init__(self, name, rc, out, err, secs):
        self.name, self.rc, self.out, self.err, self.secs = name, rc, out, err, secs
        self.json = None
        for line in reversed(out.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.json = json.loads(line)
                    break
                except ValueError:
                    pass

    @property
    def ok(self):
        return self.rc == 0 and self.json is not None

    def why(self):
        tail = (self.err or self.out).strip().splitlines()[-3:]
        return "%s: rc=%s %s" % (self.name, self.rc, " | ".join(tail))


class Env:
    """Where everything is, and how to run a program plain or shimmed."""

    def __init__(self, vshare_dir, gpu_bin, gpu_src, out_dir, log, opts):
        self.vshare = vshare_dir
        self.gpu_bin = gpu_bin
        self.gpu_src = gpu_src
        self.out = out_dir
        self.log = log
        self.opts = opts
        self.tmp = tempfile.mkdtemp(prefix="vshare-gpu-")
        self.shim = os.path.join(vshare_dir, "lib", "libvshare.so")
        self.sched_bin = os.path.join(vshare_dir, "bin", "vshare-scheduler")
        self.ctl_bin = os.path.join(vshare_dir, "bin", "vsharectl")
        deps = os.path.join(vshare_dir, "lib", "deps")
        self.dep_path = deps if os.path.isdir(deps) else ""
        self.socket = None       # set by Scheduler
        self.mem_limit = opts.mem_limit
        self.live = []           # Popen objects still running

    # ---- logging -------------------------------------------------------
    def say(self, msg):
        line = "[%s] %s" % (time.strftime("%H:%M:%S"), msg)
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def note(self, text):
        self.log.write(text.rstrip("\n") + "\n")
        self.log.flush()

    # ---- environments --------------------------------------------------
    def base_env(self):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env["PYTHONUNBUFFERED"] = "1"
        env["VSG_FATBIN"] = os.path.join(self.gpu_bin, "vsg_kernels.fatbin")
        # Never let a suite process use NVLink multicast or grow PyTorch's
        # pool through VMM (which the shim cannot convert).
        env.setdefault("NCCL_NVLS_ENABLE", "0")
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        return env

    def shim_env(self, label, mem_limit=None, extra=None):
        if not self.socket:
            raise SuiteError("shim run without a scheduler")
        env = self.base_env()
        env["LD_PRELOAD"] = self.shim
        env["VSHARE_SOCKET"] = self.socket
        env["VSHARE_MEM_LIMIT"] = mem_limit or self.mem_limit
        env["VSHARE_LABEL"] = label
        env.update(extra or {})
        return env

    def interactive_env(self):
        """--interactive-env KEY=VALUE settings, as a dict."""
        out = {}
        for kv in getattr(self.opts, "interactive_env", None) or []:
            k, sep, v = kv.partition("=")
            if not sep or not k.startswith("VSHARE_"):
                raise SuiteError("--interactive-env wants VSHARE_KEY=VALUE, "
                                 "not %r" % kv)
            out[k] = v
        return out

    def tool_env(self):
        env = self.base_env()
        if self.dep_path:
            env["LD_LIBRARY_PATH"] = self.dep_path + (
                ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        return env

    def prog(self, name):
        return os.path.join(self.gpu_bin, name)

    # ---- running -------------------------------------------------------
    def start(self, name, argv, env, extra_env=None, cpu=None):
        if extra_env:
            env = dict(env, **extra_env)
        self.note("$ [%s] %s%s%s" % (name, "(shim) " if "LD_PRELOAD" in env else "",
                                     "(cpu %s) " % cpu if cpu is not None else "",
                                     " ".join(argv)))
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             start_new_session=True,
                             preexec_fn=(lambda: pin_cpu(cpu)) if cpu is not None
                             else None)
        p.vs_name, p.vs_t0 = name, time.monotonic()
        self.live.append(p)
        return p

    def finish(self, p, timeout):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(p)
            out, err = p.communicate()
            err += "\n[suite] killed after %ss timeout" % timeout
            p.returncode = 124
        secs = time.monotonic() - p.vs_t0
        if p in self.live:
            self.live.remove(p)
        self.note("[%s] rc=%s %.2fs\n--- stdout\n%s--- stderr\n%s---" %
                  (p.vs_name, p.returncode, secs, out, err))
        return Proc(p.vs_name, p.returncode, out, err, secs)

    def run(self, name, argv, env, timeout=120, extra_env=None, cpu=None):
        return self.finish(self.start(name, argv, env, extra_env, cpu), timeout)

    def kill(self, p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def cleanup_live(self):
        """Kill whatever a check left running."""
        for p in list(self.live):
            self.kill(p)
            try:
                p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.live = []

    def cleanup(self):
        for p in list(self.live):
            self.kill(p)
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.live = []
        if not self.opts.keep_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def fresh_dir(self, name):
        d = self.path(name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d


def pin_cpu(cpu):
    """In a child before exec: run on one CPU, if the system allows it."""
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        pass


def quiet_cpu():
    """A CPU for timing-sensitive runs: the last one this process may use
    (away from CPU 0, which takes most interrupts)."""
    try:
        return max(os.sched_getaffinity(0))
    except (AttributeError, OSError, ValueError):
        return None


def gpu_memory():
    """(total, free) bytes of GPU 0 by nvidia-smi, or None."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.total,memory.free",
             "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True, text=True, timeout=30).stdout
        total, free = (int(x) for x in out.strip().splitlines()[0].split(","))
        return total << 20, free << 20
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


class Guard:
    """The safety rule: the managed memory that the suite may have at once
    (every concurrent shim process at its VSHARE_MEM_LIMIT) must stay under
    half of the GPU's free memory, checked before every group."""

    def __init__(self, env):
        self.env = env

    def check(self, managed_bytes, what):
        mem = gpu_memory()
        if mem is None and os.environ.get("VSG_TEST_DRIVER") == "1" \
                and shutil.which("nvidia-smi") is None:
            return  # the suite's own test run on the CUDA test driver
        if mem is None:
            raise SuiteError("nvidia-smi gave no memory figures: not running %s" % what)
        total, free = mem
        self.env.note("[guard] %s: planned managed %.1f GiB, free %.1f of %.1f GiB"
                      % (what, managed_bytes / GIB, free / GIB, total / GIB))
        if managed_bytes > free / 2:
            raise SuiteError(
                "%s would manage %.1f GiB but only %.1f GiB is free "
                "(limit: half of free)" % (what, managed_bytes / GIB, free / GIB))


class Scheduler:
    """A private vshare-scheduler on a temporary socket."""

    def __init__(self, env, name, mode="auto", capacity=None, tq_s=None,
                 idle_ms=None, conf=None):
        self.env, self.name, self.mode = env, name, mode
        self.capacity, self.tq_s, self.idle_ms = capacity, tq_s, idle_ms
        self.conf = dict(conf or {})
        self.proc = None
        self.applied = {}

    def _config_doc(self):
        """The scheduler's config keys (see --print-config): capacity in
        bytes, default mode of every GPU, quantum in seconds, and any
        other keys given as `conf` (policy, socket_mode...)."""
        doc = dict(self.conf)
        if self.capacity:
            doc["capacity"] = self.capacity
        if self.mode:
            doc["mode"] = self.mode
        if self.tq_s:
            doc["tq_s"] = self.tq_s
        return doc

    def _accepts(self, cfg_path):
        r = subprocess.run([self.env.sched_bin, "--config", cfg_path,
                            "--print-config"], env=self.env.tool_env(),
                           capture_output=True, text=True, timeout=20)
        return r.returncode == 0, r.stdout + r.stderr

    def _write_config(self):
        """Write the config and check it with --print-config. A key the
        daemon refuses is dropped (and the results say which settings
        held), so an older or newer daemon still starts."""
        doc = self._config_doc()
        path = self.env.path("sched-%s.json" % self.name)
        while True:
            with open(path, "w") as f:
                json.dump(doc, f)
            ok, text = self._accepts(path)
            if ok:
                self.applied = dict(doc)
                self.env.note("[sched %s] config %s accepted:\n%s"
                              % (self.name, json.dumps(doc), text))
                return path
            bad = [k for k in doc if k in text]
            self.env.note("[sched %s] config %s refused: %s"
                          % (self.name, json.dumps(doc), text.strip()))
            if not bad:
                return None
            doc.pop(bad[0])

    def __enter__(self):
        env = self.env
        if not os.access(env.sched_bin, os.X_OK):
            raise SuiteError("no scheduler at %s" % env.sched_bin)
        sock = env.path("sched-%s.sock" % self.name)
        cfg = self._write_config()
        argv = [env.sched_bin, "--socket", sock]
        if cfg:
            argv += ["--config", cfg]
        argv += ["--log-level", "debug"]
        self.log_path = env.path("sched-%s.log" % self.name)
        self.log_f = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, env=env.tool_env(), stdout=self.log_f,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        t_end = time.monotonic() + 10
        while not os.path.exists(sock):
            if self.proc.poll() is not None or time.monotonic() > t_end:
                self._stop()
                raise SuiteError("scheduler %s did not start (see suite.log)" % self.name)
            time.sleep(0.02)
        env.socket = sock
        env.say("scheduler '%s' up (%s)" % (self.name, ", ".join(
            "%s=%s" % kv for kv in sorted(self.applied.items())) or "defaults"))
        return self

    def ctl(self, *args):
        """Run vsharectl against this scheduler; (rc, text)."""
        if not os.access(self.env.ctl_bin, os.X_OK):
            return 127, "no vsharectl"
        r = subprocess.run([self.env.ctl_bin, "-s", self.env.socket] + list(args),
                           env=self.env.tool_env(), capture_output=True, text=True,
                           timeout=20)
        self.env.note("[vsharectl %s] rc=%d\n%s%s" % (" ".join(args), r.returncode,
                                                     r.stdout, r.stderr))
        return r.returncode, r.stdout + r.stderr

    def status(self):
        rc, text = self.ctl("--json", "status")
        if rc != 0:
            return None
        try:
            return json.loads(text[text.index("{"):])
        except ValueError:
            return None

    def gpu_modes(self):
        st = self.status() or {}
        return [g.get("mode") for g in st.get("gpus", [])]

    def ensure_mode(self):
        """Make sure every known GPU is in self.mode (the config may lack
        the key); returns the modes seen afterwards."""
        word = {"on": "enable", "off": "disable", "auto": "auto"}[self.mode]
        modes = self.gpu_modes()
        if modes and all(m == self.mode for m in modes):
            return modes
        self.ctl(word)
        return self.gpu_modes()

    def set_tq(self, seconds):
        return self.ctl("set-tq", str(seconds))[0] == 0

    def _stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if getattr(self, "log_f", None):
            self.log_f.close()
            with open(self.log_path) as f:
                self.env.note("[sched %s] log:\n%s" % (self.name, f.read()[-20000:]))

    def __exit__(self, *exc):
        self._stop()
        self.env.socket = None
        return False


def run_selected(guard, selected, guarded_many, checks):
    """Each of checks, (name, managed bytes it may hold at once or 0,
    function), that is selected: the memory guard first, then the check
    through guarded_many."""
    for name, managed, fn in checks:
        if name in selected:
            if managed:
                guard.check(managed, name)
            guarded_many(fn)


def attach_gpu(env):
    """Have one short client attach the GPU, so that per-GPU settings
    (mode, quantum) can be applied by vsharectl before a test starts."""
    p = env.run("attach", [env.prog("first_launch")], env.shim_env("attach"),
                timeout=60)
    return p.ok


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def fmt(x, unit="", nd=1):
    if x is None:
        return "-"
    return ("%." + str(nd) + "f%s") % (x, (" " + unit) if unit else "")
