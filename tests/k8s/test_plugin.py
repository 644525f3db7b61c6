"""vshare-device-plugin against the kubelet double (kubelet_double.py):
registration, registration again after the kubelet restarts, health
from NVML (the fake libnvidia-ml of tests/sched), Allocate with CDI and
without, the memory limit and class, the preferred allocation, refusals,
and the pods' names reaching a real scheduler (t_labels).

Run as: test_plugin.py BINDIR SCENARIO (tests/k8s/CMakeLists.txt)."""

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "sched"))
import kubelet_double as kd  # noqa: E402
from schedtest import (Daemon, Fail, check, main, scenarios,  # noqa: E402
                       short_tmpdir, wait_for)

SKIP = 77
GIB = 1 << 30
# The fake NVML's GPUs (tests/sched/fake_nvml.c): index 0 and 1.
NV = ["GPU-11111111-2222-3333-4444-555555555555",
      "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa"]


class Run:
    """A short directory with the kubelet double serving in it and the
    plugin started against it; leaving stops both (the plugin by pid,
    TERM: its exit status must be 0 and its log free of sanitizer
    reports) and removes the directory."""

    def __init__(self, bindir, *args, nvml=None, gib=None, gpus="0,1",
                 features="", kubelet_sock=None, start=True):
        """nvml: the fake NVML's device node numbers (\"3,1\"), or None
        for no NVML; gib: its GPUs' memory (\"16,40\", 16 GiB each if
        None). features: the --feature-file, none by default.
        kubelet_sock: where the double serves Registration (the
        directory's kubelet.sock if None)."""
        self.bindir = bindir
        self.dir = short_tmpdir("vs-k8s-")
        self.plugin_dir = os.path.join(self.dir, "dp")
        os.makedirs(self.plugin_dir)
        self.spec = os.path.join(self.dir, "vshare.json")
        self.lost = os.path.join(self.dir, "lost")
        self.sched_sock = os.path.join(self.dir, "run", "scheduler.sock")
        self.log = os.path.join(self.dir, "plugin.log")
        self.kubelet = kd.Kubelet(self.plugin_dir,
                                  os.path.join(self.dir, "podres.sock"),
                                  sock=kubelet_sock and
                                  os.path.join(self.dir, kubelet_sock))
        self.kubelet.serve()
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("VSHARE_FAKE")}
        self.env.pop("LD_LIBRARY_PATH", None)
        if nvml:
            self.env.update(LD_LIBRARY_PATH=os.environ["VSHARE_FAKE_NVML_DIR"],
                            VSHARE_FAKE_NVML=",".join(NV),
                            VSHARE_FAKE_NVML_MINORS=nvml,
                            VSHARE_FAKE_NVML_LOST=self.lost)
            if gib:
                self.env.update(VSHARE_FAKE_NVML_GIB=gib)
        self.argv = [os.path.join(bindir, "vshare-device-plugin"),
                     "--plugin-dir", self.plugin_dir,
                     "--pod-resources", self.kubelet.podres_sock,
                     "--cdi-spec", self.spec, "--socket", self.sched_sock,
                     "--vsharectl", os.path.join(bindir, "vsharectl"),
                     "--health-interval", "50", "--pods-interval", "100",
                     "--feature-file", features]
        if gpus:
            self.argv += ["--gpus", gpus]
        self.argv += list(args)
        self.proc = None
        self.client = None
        self.expect_rc = 0      # the exit status at the end
        if start:
            try:
                self.start()
            except OSError:
                # No __exit__ follows a failed __init__: the double and
                # the directory go here (a binary that was not built).
                self.remove()
                raise

    def start(self):
        self.proc = subprocess.Popen(self.argv, env=self.env,
                                     stdout=open(self.log, "a"),
                                     stderr=subprocess.STDOUT)

    def logtext(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def registered(self, n=1):
        reg = self.kubelet.wait_register(n)
        if reg is None:
            raise Fail("no registration %d:\n%s" % (n, self.logtext()))
        self.client = self.kubelet.plugin(reg.endpoint)
        return reg

    def stop(self):
        """TERM the plugin; its exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "killed (no exit within 20 s of TERM)"

    def __enter__(self):
        return self

    def __exit__(self, etype, evalue, tb):
        try:
            if self.client is not None:
                self.client.close()
            rc = self.stop()
            log = self.logtext()
            if etype is not None:
                print("--- plugin log (tail) ---\n" + log[-3000:])
            elif (rc != self.expect_rc or "Sanitizer" in log or
                  "runtime error" in log):
                raise Fail("plugin exit status %s at TERM:\n%s" %
                           (rc, log[-3000:]))
        finally:
            self.remove()

    def remove(self):
        """The double stopped, the directory removed."""
        self.kubelet.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def need_grpc():
    why = kd.missing()
    if why:
        print("SKIP: " + why)
        return True
    return False


def next_list(q, timeout=20):
    r = q.get(timeout=timeout)
    check(r is not None, "ListAndWatch ended early")
    return r


def shares(gpus, n, health="Healthy"):
    return {"%d-%d" % (g, s): health for g in gpus for s in range(n)}


def t_register(bindir):
    """The plugin registers its resource and endpoint (API v1beta1), says
    it has a preferred allocation and needs no PreStartContainer, and
    lists --shares shares per GPU, all healthy."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--shares", "4") as r:
        reg = r.registered()
        check(reg.version == "v1beta1", "version v1beta1: %r" % reg.version)
        check(reg.resource_name == "vshare.dev/gpu", "resource vshare.dev/gpu")
        check(reg.endpoint == "vshare.sock" and os.path.exists(
            os.path.join(r.plugin_dir, "vshare.sock")), "endpoint socket")
        check(reg.options.get_preferred_allocation_available and
              not reg.options.pre_start_required, "options at registration")
        o = r.client.options()
        check(o.get_preferred_allocation_available and
              not o.pre_start_required, "GetDevicePluginOptions")
        check(next_list(r.client.watch()) == shares([0, 1], 4),
              "4 shares of GPUs 0 and 1, healthy")
        r.client.pre_start(["0-1"])
    with Run(bindir, gpus="3") as r:
        r.registered()
        check(next_list(r.client.watch()) == shares([3], 10),
              "10 shares per GPU by default")


def t_socket_mode(bindir):
    """The plugin's socket has mode 0600 and is the plugin's, whatever
    umask the plugin starts with (0 here, which left it 0777 to every
    local user before), and so again after it serves anew for a
    restarted kubelet."""
    if need_grpc():
        return SKIP
    old = os.umask(0)
    try:
        r = Run(bindir, "--shares", "2")
    finally:
        os.umask(old)
    with r:
        r.registered()
        sock = os.path.join(r.plugin_dir, "vshare.sock")

        def mode():
            st = os.lstat(sock)
            check(stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid(),
                  "%s is the plugin's socket" % sock)
            return stat.S_IMODE(st.st_mode)

        check(mode() == 0o600, "socket mode %04o, not 0600" % mode())
        r.client.close()
        r.kubelet.restart()
        r.registered(2)
        check(mode() == 0o600, "after the kubelet's restart: mode %04o"
              % mode())
        check("(mode 0600)" in r.logtext(), "the log says the mode")


def t_reregister(bindir):
    """A kubelet that restarts removes every socket in its directory and
    creates its own again: the plugin serves again and registers again,
    and the new kubelet lists its devices."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--shares", "2") as r:
        r.registered(1)
        r.client.close()
        r.kubelet.restart()
        r.registered(2)
        check(next_list(r.client.watch()) == shares([0, 1], 2),
              "the devices listed to the new kubelet")
        r.kubelet.restart()
        r.registered(3)
        check(next_list(r.client.watch()) == shares([0, 1], 2),
              "and again after a second restart")
        check(len(r.kubelet.registrations) == 3, "one registration per start")


class Refusing:
    """kubelet.sock as a kubelet has it a moment before it serves: bound,
    so that connections are refused, until listen() puts it through to
    the double's real socket (a byte pump per connection)."""

    def __init__(self, path, target):
        self.target = target
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)

    def refuses(self):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            c.connect(self.sock.getsockname())
            return False
        except ConnectionRefusedError:
            return True
        finally:
            c.close()

    def listen(self):
        self.sock.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                a, _ = self.sock.accept()
            except OSError:
                return
            b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            b.connect(self.target)
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._pump, args=(x, y),
                                 daemon=True).start()

    @staticmethod
    def _pump(x, y):
        try:
            while True:
                data = x.recv(65536)
                if not data:
                    break
                y.sendall(data)
        except OSError:
            pass
        for s in (x, y):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.sock.close()


def t_register_wait(bindir):
    """A kubelet whose socket exists but refuses connections yet (it is
    starting): the plugin's registration waits for it to listen and goes
    through on that first call, with no failure and no retry of its own;
    the kubelet gets exactly one registration."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--shares", "2", "--no-pod-names",
             kubelet_sock="real.sock", start=False) as r:
        ref = Refusing(os.path.join(r.plugin_dir, "kubelet.sock"),
                       r.kubelet.sock)
        try:
            check(ref.refuses(), "the socket refuses connections")
            r.start()
            # The plugin is up and calling: its server's socket is there.
            wait_for(lambda: os.path.exists(
                os.path.join(r.plugin_dir, "vshare.sock")), 20,
                "the plugin's socket")
            time.sleep(1)
            check(r.kubelet.registrations == [], "nothing registered yet")
            ref.listen()
            r.registered()
            check(next_list(r.client.watch()) == shares([0, 1], 2),
                  "the devices listed")
            # The kubelet has the registration before the plugin has
            # logged its answer: wait for the line.
            wait_for(lambda: "kp_register: " in r.logtext(), 10,
                     "the registration logged")
            log = r.logtext()
            calls = [x.split("kp_register: ", 1)[1]
                     for x in log.splitlines() if "kp_register: " in x]
            check(calls == ["registered vshare.dev/gpu with the kubelet"],
                  "registered on the first call, nothing else said: %s"
                  % calls)
            time.sleep(0.5)
            check(len(r.kubelet.registrations) == 1, "one registration")
        finally:
            ref.close()


def t_register_refused(bindir):
    """A kubelet that answers Register with an error (a resource name it
    refuses, another plugin's): the plugin ends with status 1 and says
    why, without trying again (the API says a plugin ends then)."""
    if need_grpc():
        return SKIP
    with Run(bindir, start=False) as r:
        r.kubelet.reject = ("cannot register resource vshare.dev/gpu: "
                            "already registered")
        r.start()
        try:
            rc = r.proc.wait(30)
        except subprocess.TimeoutExpired:
            raise Fail("the plugin did not end:\n" + r.logtext())
        r.expect_rc = 1
        log = r.logtext()
        check(rc == 1, "exit status 1: %s\n%s" % (rc, log))
        check("error: kp_register: the kubelet refused to register "
              "vshare.dev/gpu: cannot register resource vshare.dev/gpu: "
              "already registered" in log, "the reason said:\n" + log)
        check(len(r.kubelet.registrations) == 1, "no second try")


def t_topology(bindir):
    """With NVML, each share carries its GPU's NUMA node, read from
    sysfs (--host-root's sys/bus/pci/devices/BUS/numa_node, BUS from
    NVML's PCI bus id); a GPU whose node is -1 (no NUMA) has no
    topology."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--shares", "2", nvml="0,1", gpus=None,
             start=False) as r:
        root = os.path.join(r.dir, "host")
        for bus, node in (("0000:10:00.0", "1"), ("0000:11:00.0", "-1")):
            d = os.path.join(root, "sys", "bus", "pci", "devices", bus)
            os.makedirs(d)
            with open(os.path.join(d, "numa_node"), "w") as f:
                f.write(node + "\n")
        r.argv += ["--host-root", root]
        r.start()
        r.registered()
        got = next_list(r.client.watch(topology=True))
        want = {"0-0": ("Healthy", [1]), "0-1": ("Healthy", [1]),
                "1-0": ("Healthy", []), "1-1": ("Healthy", [])}
        check(got == want, "NUMA node 1 for GPU 0, none for GPU 1: %s" % got)
    with Run(bindir, "--shares", "1", "--host-root", "/nonexistent",
             nvml="0,1", gpus=None) as r:
        r.registered()
        check(next_list(r.client.watch(topology=True)) ==
              {"0-0": ("Healthy", []), "1-0": ("Healthy", [])},
              "no sysfs: no topology")


def t_derived(bindir):
    """Shares and memory per share from each GPU's memory (NVML, here 16
    and 40 GiB): neither option, a share per GiB; --shard-mem alone, as
    many shares as fit; --shares alone, the memory split (whole MiB);
    both, as given; VSHARE_MEM_LIMIT the sum of the shares' memory."""
    if need_grpc():
        return SKIP
    for args, n0, n1, mem0, mem1 in (
            ([], 16, 40, GIB, GIB),
            (["--shard-mem", "3G"], 5, 13, 3 * GIB, 3 * GIB),
            (["--shares", "3"], 3, 3, 5461 << 20, 13653 << 20),
            (["--shares", "4", "--shard-mem", "1G"], 4, 4, GIB, GIB)):
        with Run(bindir, *args, nvml="0,1", gib="16,40", gpus=None) as r:
            r.registered()
            got = next_list(r.client.watch())
            check(got == dict(shares([0], n0), **shares([1], n1)),
                  "%s: %d and %d shares: %d listed" % (args, n0, n1, len(got)))
            one, two = r.client.allocate(["0-0"], ["1-0", "1-1"]) \
                .container_responses
            check(one.envs["VSHARE_MEM_LIMIT"] == str(mem0) and
                  two.envs["VSHARE_MEM_LIMIT"] == str(2 * mem1),
                  "%s: limits %s and %s" % (args, one.envs["VSHARE_MEM_LIMIT"],
                                            two.envs["VSHARE_MEM_LIMIT"]))


def t_node_labels(bindir):
    """The node's labels as a Node Feature Discovery local feature file:
    the sharing, the count, the smallest GPU's memory (MiB) and shares,
    the model as a label value; written whole (an old file replaced, no
    temporary left); a directory that is not there is a warning, and the
    plugin serves on."""
    if need_grpc():
        return SKIP
    with Run(bindir, nvml="0,1", gib="16,40", gpus=None, start=False) as r:
        d = os.path.join(r.dir, "features.d")
        os.makedirs(d)
        path = os.path.join(d, "vshare")
        with open(path, "w") as f:
            f.write("vshare.dev/old=1\n" * 100)
        r.argv += ["--feature-file", path]
        r.start()
        r.registered()
        wait_for(lambda: "node labels written" in r.logtext(), 20,
                 "the labels written")
        with open(path) as f:
            lines = [x for x in f.read().splitlines()
                     if not x.startswith("#")]
        check(sorted(lines) == sorted([
            "vshare.dev/gpu.sharing=vshare", "vshare.dev/gpu.count=2",
            "vshare.dev/gpu.shares=16", "vshare.dev/gpu.memory=16384",
            "vshare.dev/gpu.model=Fake-GPU"]), "the labels: %s" % lines)
        check(os.listdir(d) == ["vshare"], "no temporary: %s" % os.listdir(d))
    with Run(bindir, "--shares", "3", "--feature-file", "/nonexistent/x") as r:
        r.registered()
        wait_for(lambda: "node labels not written" in r.logtext(), 20,
                 "the warning")
        check(len(next_list(r.client.watch())) == 6, "serves on")


def lose(r, index):
    """The fake NVML's lost GPUs, replaced at once: a poll never sees a
    file half written."""
    with open(r.lost + ".new", "w") as f:
        f.write(index + "\n")
    os.replace(r.lost + ".new", r.lost)


def t_health(bindir):
    """With NVML, the GPUs are named by their device nodes (NVML's minor
    numbers, here 3 and 1 for NVML's 0 and 1); a GPU that stops answering
    (GPU_IS_LOST) turns its shares Unhealthy in a new ListAndWatch
    response, and Healthy again when it comes back; the other GPU stays
    healthy."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--shares", "3", nvml="3,1", gpus=None) as r:
        r.registered()
        q = r.client.watch()
        check(next_list(q) == shares([3, 1], 3),
              "both GPUs from NVML, by node number, healthy")
        lose(r, "1")            # NVML's GPU 1, /dev/nvidia1
        want = dict(shares([3], 3), **shares([1], 3, "Unhealthy"))
        check(next_list(q) == want, "GPU 1's shares unhealthy")
        check("GPU 1 is unhealthy" in r.logtext(), "logged")
        lose(r, "0")            # NVML's GPU 0, /dev/nvidia3
        want = dict(shares([3], 3, "Unhealthy"), **shares([1], 3))
        check(next_list(q) == want, "GPU 3 unhealthy, GPU 1 healthy again")
        os.unlink(r.lost)
        check(next_list(q) == shares([3, 1], 3), "both healthy again")


def t_allocate_cdi(bindir):
    """--mode cdi (the default): the CDI device of each GPU behind the
    shares, VSHARE_MEM_LIMIT = shares x --shard-mem, VSHARE_CLASS, and the
    label of the lowest share; nothing else (the runtime applies the
    spec)."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--shard-mem", "2G", "--class", "batch") as r:
        r.registered()
        one, three, two_gpus = r.client.allocate(
            ["0-4"], ["0-7", "0-2", "0-5"], ["1-0", "0-9"]).container_responses
        want = {"cdi_devices": ["vshare.dev/gpu=0"], "mounts": [],
                "devices": [],
                "envs": {"VSHARE_MEM_LIMIT": str(2 * GIB),
                         "VSHARE_CLASS": "batch", "VSHARE_LABEL": "k8s:0-4"}}
        check(kd.response_json(one) == want, "1 share: %s" % one)
        want["envs"].update(VSHARE_MEM_LIMIT=str(6 * GIB),
                            VSHARE_LABEL="k8s:0-2")
        check(kd.response_json(three) == want, "3 shares: %s" % three)
        check(list(kd.response_json(two_gpus)["cdi_devices"]) ==
              ["vshare.dev/gpu=0", "vshare.dev/gpu=1"] and
              two_gpus.envs["VSHARE_MEM_LIMIT"] == str(4 * GIB) and
              two_gpus.envs["VSHARE_LABEL"] == "k8s:0-9",
              "shares of two GPUs: both devices")
    with Run(bindir, "--cdi-kind", "example.com/vgpu") as r:
        r.registered()
        a = r.client.allocate(["1-3"]).container_responses[0]
        check(list(a.cdi_devices)[0].name == "example.com/vgpu=1" and
              "VSHARE_MEM_LIMIT" not in a.envs and "VSHARE_CLASS" not in a.envs,
              "--cdi-kind; no limit or class unless configured")


def make_spec(bindir, d, path):
    """A spec from vsharectl cdi generate, on device nodes of the test's
    own (links to /dev/null)."""
    dev = os.path.join(d, "dev")
    os.makedirs(dev)
    for n in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        os.symlink("/dev/null", os.path.join(dev, n))
    lib = os.path.join(d, "libvshare.so")
    open(lib, "w").close()
    subprocess.run([os.path.join(bindir, "vsharectl"), "cdi", "generate",
                    "--dev-dir", dev, "--lib", lib, "--socket",
                    os.path.join(d, "run", "scheduler.sock"), "-o", path],
                   check=True)
    with open(path) as f:
        return json.load(f)


def t_allocate_env(bindir):
    """--mode env: the CDI spec's content (its device nodes, the GPU's
    node, its mounts read-only, its environment) as the kubelet's own
    mounts, device specs and envs, with the policy's variables on top; the
    GPUs come from the spec when there is no NVML and no --gpus."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--mode", "env", "--shard-mem", "1G", gpus=None,
             start=False) as r:
        spec = make_spec(bindir, r.dir, r.spec)
        r.start()
        r.registered()
        check(set(next_list(r.client.watch())) == set(shares([0, 1], 10)),
              "GPUs 0 and 1 from the spec")
        for ids, gpu in ((["1-0"], 1), (["0-3", "0-1", "0-2"], 0)):
            a = kd.response_json(r.client.allocate(ids).container_responses[0])
            common = spec["containerEdits"]
            dev = [d for d in spec["devices"] if d["name"] == str(gpu)][0]
            nodes = dev["containerEdits"]["deviceNodes"] + common["deviceNodes"]
            check(a["devices"] == [[n["hostPath"], n["path"], "rw"]
                                   for n in nodes],
                  "%d share(s): the GPU's node and the control nodes: %s"
                  % (len(ids), a["devices"]))
            check(a["mounts"] == [[m["hostPath"], m["containerPath"], True]
                                  for m in common["mounts"]],
                  "the shim and the socket directory, read-only")
            envs = dict(e.split("=", 1) for e in common["env"])
            envs.update(VSHARE_MEM_LIMIT=str(len(ids) * GIB),
                        VSHARE_LABEL="k8s:%s" % sorted(ids)[0])
            check(a["envs"] == envs and "LD_PRELOAD" in envs,
                  "the spec's environment and the policy's")
            check(a["cdi_devices"] == [], "no CDI device in env mode")
        os.unlink(r.spec)
        try:
            r.client.allocate(["0-0"])
            raise Fail("Allocate without a spec succeeded")
        except kd.grpc.RpcError as e:
            check(e.code() == kd.grpc.StatusCode.INVALID_ARGUMENT and
                  "vsharectl cdi generate" in e.details(),
                  "no spec: refused, saying how to write one: " + e.details())


def t_preferred(bindir):
    """GetPreferredAllocation keeps a container's shares on one GPU: the
    one of the shares it must include, else the one with the most free
    shares, lowest shares first."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--shares", "4") as r:
        r.registered()

        def pref(avail, must, n):
            resp = r.client.preferred(avail, must, n).container_responses
            return list(resp[0].deviceIDs)
        avail = ["0-0", "0-3", "1-0", "1-1", "1-2"]
        check(pref(avail, [], 2) == ["1-0", "1-1"], "the freer GPU")
        check(pref(avail, ["0-3"], 2) == ["0-3", "0-0"], "must's GPU first")
        check(pref(avail, [], 4) == ["1-0", "1-1", "1-2", "0-0"],
              "another GPU only when one is not enough")


def t_refusals(bindir):
    """Allocate of an id that is not one of our shares fails with
    INVALID_ARGUMENT (and the plugin goes on), in both modes: a share
    past --shares, a GPU the node does not have, an id twice (which
    would name a CDI device no spec has, or multiply the memory limit);
    bad options exit 2 with a message; a directory that is not there is
    an error."""
    if need_grpc():
        return SKIP
    for mode in ("cdi", "env"):
        with Run(bindir, "--shares", "2", "--shard-mem", "1G",
                 "--mode", mode, start=False) as r:
            make_spec(bindir, r.dir, r.spec)
            r.start()
            r.registered()
            for bad, why in ((["0-2"], "not a share of this plugin: 0-2"),
                             (["x"], "not a share"), (["0-01"], "not a share"),
                             ([], "no share asked for"),
                             (["9-0"], "not a share of this plugin: 9-0"),
                             (["0-1", "1-0", "0-1"], "0-1 asked for twice")):
                try:
                    r.client.allocate(bad)
                    raise Fail("%s: Allocate %s succeeded" % (mode, bad))
                except kd.grpc.RpcError as e:
                    check(e.code() == kd.grpc.StatusCode.INVALID_ARGUMENT and
                          why in e.details(), "%s: Allocate %s refused: %s"
                          % (mode, bad, e.details()))
            a = r.client.allocate(["1-1", "1-0"]).container_responses[0]
            check(a.envs["VSHARE_LABEL"] == "k8s:1-0" and
                  a.envs["VSHARE_MEM_LIMIT"] == str(2 * GIB),
                  "%s: and serves on: %s" % (mode, dict(a.envs)))
    prog = os.path.join(bindir, "vshare-device-plugin")
    for args, msg in ((["--shares", "0"], "--shares takes 1 to 1000"),
                      (["--shard-mem", "12"], "--shard-mem '12': a size "
                       "needs a unit (K, M, G, T); a bare number below 1 MiB "
                       "is refused, write 12G or 12B\n"),
                      (["--shard-mem", "4X"], "--shard-mem '4X': not a size "
                       "(like 8G, 512M or 1.5T; bytes like 4096B)\n"),
                      (["--shard-mem", "0"], "--shard-mem takes a size above "
                       "0: 0\n"),
                      (["--mode", "x"], "--mode takes cdi or env"),
                      (["--class", "a b"], "--class takes a word"),
                      (["--endpoint", "a/b"], "without a slash"),
                      (["--plugin-dir", "rel"], "absolute paths")):
        p = subprocess.run([prog] + args, capture_output=True, text=True)
        check(p.returncode == 2 and msg in p.stderr,
              "%s: exit 2, %r" % (args, p.stderr.strip()))
    d = short_tmpdir("vs-k8s-")
    try:
        p = subprocess.run([prog, "--plugin-dir", d + "/none", "--gpus", "0"],
                           capture_output=True, text=True, timeout=20)
        check(p.returncode == 1 and "cannot watch" in p.stderr,
              "missing directory: %r" % p.stderr.strip())
    finally:
        shutil.rmtree(d)


def under_shim(bindir, sock, envs):
    """vs-compute under the shim on the test driver, with the environment
    of an Allocate answer, as the container would run it."""
    lib = os.path.join(os.path.dirname(bindir), "lib")
    preload = os.path.join(lib, "libvshare.so")
    san = os.environ.get("VSHARE_SAN_PRELOAD")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VSHARE_", "LD_"))}
    env.update(envs)
    env.update(LD_PRELOAD=(san + ":" if san else "") + preload,
               LD_LIBRARY_PATH=os.path.join(lib, "testdriver"),
               VSHARE_SOCKET=sock)
    return subprocess.Popen([os.path.join(bindir, "vs-compute"), "--iters",
                             "100000", "--kernel-ms", "20"], env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)


def t_labels(bindir):
    """A program run with an Allocate answer's environment shows in
    vsharectl status under its label k8s:G-S; once the kubelet's
    PodResources lists the pod, the plugin names the label (vsharectl
    name) and --json status, the table and the metrics show
    namespace/pod/container; the pod gone, the name goes too."""
    if need_grpc():
        return SKIP
    with Run(bindir, "--shard-mem", "1G") as r, \
            Daemon(bindir, dir=r.dir, sock=r.sched_sock) as d:
        r.registered()
        ids = ["0-5", "0-2", "0-3"]
        envs = dict(r.client.allocate(ids).container_responses[0].envs)
        check(envs["VSHARE_LABEL"] == "k8s:0-2" and
              envs["VSHARE_MEM_LIMIT"] == str(3 * GIB), "the answer: %s" % envs)
        prog = under_shim(bindir, d.sock, envs)
        try:
            def client():
                cs = [c for c in d.status()["clients"]
                      if c["label"] == "k8s:0-2" and c["gpus"]]
                return cs[0] if cs else None
            wait_for(lambda: client() is not None, 30,
                     "the program's client, labelled k8s:0-2")
            check(client()["name"] == "", "no name before the pod is listed")
            with r.kubelet.cond:
                r.kubelet.pods = [("team-a", "train-0", "main",
                                   "vshare.dev/gpu", ids),
                                  ("team-b", "other", "c", "example.com/x",
                                   ["0-0"])]
            wait_for(lambda: client()["name"] == "team-a/train-0/main", 30,
                     "the pod's name in --json status")
            rc, out, err = d.ctl("--wide", "status")
            check(rc == 0 and "team-a/train-0/main" in out,
                  "the name in vsharectl status --wide:\n" + out + err)
            rc, out, err = d.ctl("metrics")
            check('vshare_named_clients{name="team-a/train-0/main",'
                  'label="k8s:0-2"} 1' in out, "the name in the metrics")
            with r.kubelet.cond:
                r.kubelet.pods = []
            wait_for(lambda: client()["name"] == "", 30,
                     "the name gone with the pod")
            check("k8s:0-2 is team-a/train-0/main" in r.logtext(),
                  "the plugin logged the name")
        finally:
            prog.kill()
            prog.wait()


if __name__ == "__main__":
    sys.exit(main(scenarios(globals())))
