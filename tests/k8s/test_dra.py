"""vshare-dra-driver against a kubelet double and an API-server double
(dra_doubles.py): registration through the plugin registration API, the
ResourceSlice it publishes (checked against the vendored resource.k8s.io/v1
schema by the double), prepare and unprepare of one claim and of three
claims on one GPU, a second prepare answered the same without asking the
API server, recovery from the checkpoint after a restart, the refusals,
and the API server reached over HTTPS as a pod reaches it.

Run as: test_dra.py BINDIR SCENARIO (tests/k8s/CMakeLists.txt)."""

import json
import os
import shutil
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "sched"))
import dra_doubles as dd  # noqa: E402
from schedtest import (Fail, check, main, scenarios,  # noqa: E402
                       short_tmpdir, wait_for)

SKIP = 77
GIB = 1 << 30
NODE = "node-1"
DRIVER = "vshare.dev"
NV = ["GPU-11111111-2222-3333-4444-555555555555",
      "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa"]
TOKEN = "token-of-the-driver"


class Run:
    """A short directory with the doubles, and the driver started against
    them (the fake NVML's two GPUs, 16 and 40 GiB); leaving stops the
    driver by pid (TERM: exit status 0, no sanitizer report), the doubles,
    and removes the directory."""

    def __init__(self, bindir, *args, tls=None, start=True, env=None):
        self.bindir = bindir
        self.dir = short_tmpdir("vs-dra-")
        self.registry = os.path.join(self.dir, "registry")
        self.plugins = os.path.join(self.dir, "plugins", DRIVER)
        self.cdi = os.path.join(self.dir, "cdi")
        for d in (self.registry, self.cdi):
            os.makedirs(d)
        os.makedirs(os.path.dirname(self.plugins))
        self.token = os.path.join(self.dir, "token")
        with open(self.token, "w") as f:
            f.write(TOKEN + "\n")
        self.log = os.path.join(self.dir, "driver.log")
        self.api = dd.ApiServer(TOKEN, tls=tls)
        self.api.serve()
        self.kubelet = dd.Kubelet(self.registry)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("VSHARE_FAKE", "KUBERNETES_"))}
        self.env.update(LD_LIBRARY_PATH=os.environ["VSHARE_FAKE_NVML_DIR"],
                        VSHARE_FAKE_NVML=",".join(NV),
                        VSHARE_FAKE_NVML_GIB="16,40")
        self.env.update(env or {})
        self.argv = [os.path.join(bindir, "vshare-dra-driver"),
                     "--node-name", NODE, "--registry", self.registry,
                     "--plugin-dir", self.plugins, "--cdi-dir", self.cdi,
                     "--token-file", self.token,
                     "--host-root", os.path.join(self.dir, "host")]
        if not tls:
            self.argv += ["--api-server", self.api.url]
        self.argv += list(args)
        self.proc = None
        self.endpoint = None
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

    def registered(self):
        """As the kubelet: the registration socket, GetInfo, the status."""
        sock = os.path.join(self.registry, DRIVER + "-reg.sock")
        wait_for(lambda: os.path.exists(sock) or self.proc.poll() is not None,
                 20, "the registration socket")
        if not os.path.exists(sock):
            raise Fail("no registration socket:\n" + self.logtext())
        info = self.kubelet.register(sock)
        self.endpoint = info.endpoint
        return info

    def prepare(self, *claims):
        return self.kubelet.prepare(self.endpoint, *claims)

    def unprepare(self, *claims):
        return self.kubelet.unprepare(self.endpoint, *claims)

    def spec(self, uid):
        path = os.path.join(self.cdi, "%s-claim_%s.json" % (DRIVER, uid))
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    def stop(self):
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
            self.kubelet.close()
            rc = self.stop()
            log = self.logtext()
            if etype is not None:
                print("--- driver log (tail) ---\n" + log[-3000:])
            elif rc != 0 or "Sanitizer" in log or "runtime error" in log:
                raise Fail("driver exit status %s at TERM:\n%s" %
                           (rc, log[-3000:]))
        finally:
            self.remove()

    def remove(self):
        """The double stopped, the directory removed."""
        self.api.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def need_grpc():
    why = dd.missing()
    if why:
        print("SKIP: " + why)
        return True
    return False


def claim(uid, name, device, memory=None, cls=None, ns="team-a",
          request="gpu", driver=DRIVER, pool=NODE):
    """A ResourceClaim as the API server has it once the kube-scheduler
    allocated it: one request for a vshare GPU (with `memory` of its
    capacity), its result on `device`, the class in its configuration."""
    exactly = {"deviceClassName": "vshare.dev"}
    result = {"request": request, "driver": driver, "pool": pool,
              "device": device, "shareID": "share-" + uid[:8]}
    if memory:
        exactly["capacity"] = {"requests": {"memory": memory}}
        result["consumedCapacity"] = {"memory": memory}
    spec = {"devices": {"requests": [{"name": request, "exactly": exactly}]}}
    status = {"allocation": {"devices": {"results": [result]}}}
    if cls is not None:
        opaque = {"driver": DRIVER, "parameters": {
            "apiVersion": "vshare.dev/v1alpha1", "kind": "GpuConfig",
            "class": cls}}
        spec["devices"]["config"] = [{"requests": [request], "opaque": opaque}]
        status["allocation"]["devices"]["config"] = [
            {"source": "FromClaim", "requests": [request], "opaque": opaque}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns, "uid": uid},
            "spec": spec, "status": status}


UIDS = ["0b9d3f4e-1111-4c1e-9d6b-%012d" % i for i in range(1, 6)]


def env_of(spec):
    check(spec["cdiVersion"] == "0.5.0" and spec["kind"] == "vshare.dev/claim"
          and len(spec["devices"]) == 1, "a spec of one claim device")
    return dict(e.split("=", 1)
                for e in spec["devices"][0]["containerEdits"]["env"])


def t_register(bindir):
    """The kubelet finds the driver in its plugin registry: GetInfo says a
    DRAPlugin named vshare.dev, the DRA service v1 and its socket; the
    ResourceSlice sent to the API server is valid against the
    resource.k8s.io/v1 schema and has each GPU with its attributes, its
    memory as a consumable capacity with a request policy, and
    allowMultipleAllocations."""
    if need_grpc():
        return SKIP
    with Run(bindir) as r:
        info = r.registered()
        check(info.type == "DRAPlugin" and info.name == DRIVER and
              list(info.supported_versions) == ["v1.DRAPlugin"] and
              info.endpoint == os.path.join(r.plugins, "dra.sock") and
              os.path.exists(info.endpoint), "GetInfo: %s" % info)
        wait_for(lambda: "registered with the kubelet" in r.logtext(), 20,
                 "the status logged")
        sent = r.api.wait_slice(1)
        check(sent is not None, "a ResourceSlice sent:\n" + r.logtext())
        method, s = sent
        check(r.api.invalid == [] and method == "POST",
              "created, valid against the schema: %s" % r.api.invalid)
        bad = json.loads(json.dumps(s))
        d0 = bad["spec"]["devices"][0]
        d0["allowMultipleAllocation"] = d0.pop("allowMultipleAllocations")
        bad["spec"]["devices"][1]["capacity"]["memory"]["value"] = "16 GiB"
        errs = r.api.errors(bad)
        check(any("'allowMultipleAllocation' was unexpected" in e
                  for e in errs) and any("'16 GiB' is not a quantity" in e
                                         for e in errs),
              "and the double's check refuses a misspelt copy: %s" % errs)
        spec = s["spec"]
        check(s["metadata"]["name"] == NODE + "-" + DRIVER and
              spec["driver"] == DRIVER and spec["nodeName"] == NODE and
              spec["pool"] == {"name": NODE, "generation": 1,
                               "resourceSliceCount": 1}, "the pool: %s" % spec)
        devs = {d["name"]: d for d in spec["devices"]}
        check(sorted(devs) == ["gpu-0", "gpu-1"], "one device per GPU")
        for i, gib in ((0, 16), (1, 40)):
            d = devs["gpu-%d" % i]
            check(d["attributes"] == {
                "uuid": {"string": NV[i]}, "index": {"int": i},
                "minor": {"int": i}, "model": {"string": "Fake GPU"},
                "driver": {"string": "550.54.15"}},
                "gpu-%d's attributes: %s" % (i, d["attributes"]))
            check(d["allowMultipleAllocations"] is True and
                  d["capacity"] == {"memory": {
                      "value": "%dGi" % gib, "requestPolicy": {
                          "default": "1Gi",
                          "validRange": {"min": "256Mi", "step": "256Mi"}}}},
                  "gpu-%d: %d GiB, consumable: %s" % (i, gib, d["capacity"]))


def t_prepare_one(bindir):
    """One claim of 8Gi with class interactive: its devices name the GPU's
    CDI device and the claim's; the claim's spec gives VSHARE_MEM_LIMIT
    (8 GiB), VSHARE_CLASS and the label; unprepare removes the spec."""
    if need_grpc():
        return SKIP
    with Run(bindir) as r:
        r.registered()
        r.api.add_claim(claim(UIDS[0], "train", "gpu-1", "8Gi", "interactive"))
        got = r.prepare(("team-a", UIDS[0], "train"))
        check(got == {UIDS[0]: {"error": "", "devices": [
            (["gpu"], NODE, "gpu-1", "share-" + UIDS[0][:8],
             ["vshare.dev/gpu=1", "vshare.dev/claim=" + UIDS[0]])]}},
            "the claim's devices: %s" % got)
        check(env_of(r.spec(UIDS[0])) == {
            "VSHARE_MEM_LIMIT": str(8 * GIB), "VSHARE_CLASS": "interactive",
            "VSHARE_LABEL": "dra:team-a/train"}, "the claim's spec")
        check(r.unprepare(("team-a", UIDS[0], "train")) == {UIDS[0]: ""},
              "unprepared")
        check(r.spec(UIDS[0]) is None, "its spec removed")
        check(r.unprepare(("team-a", UIDS[0], "train")) == {UIDS[0]: ""},
              "unprepare again: nothing to do, no error")


def t_prepare_three(bindir):
    """Three claims on one GPU in one call (4Gi, 1.5Gi, and one without
    a class): three specs with their own limits; a second prepare of one
    of them answers the same and does not ask the API server again;
    unprepare of two leaves the third."""
    if need_grpc():
        return SKIP
    with Run(bindir) as r:
        r.registered()
        cs = [("team-a", UIDS[1], "a", "4Gi", "batch"),
              ("team-a", UIDS[2], "b", "1536Mi", "interactive"),
              ("team-b", UIDS[3], "c", "512Mi", None)]
        for ns, uid, name, mem, cls in cs:
            r.api.add_claim(claim(uid, name, "gpu-0", mem, cls, ns=ns))
        got = r.prepare(*[(ns, uid, name) for ns, uid, name, _, _ in cs])
        check(sorted(got) == sorted(UIDS[1:4]) and
              all(v["error"] == "" for v in got.values()), "all prepared")
        for (ns, uid, name, mem, cls), limit in zip(cs, (4 * GIB, 1536 << 20,
                                                         512 << 20)):
            want = {"VSHARE_MEM_LIMIT": str(limit),
                    "VSHARE_LABEL": "dra:%s/%s" % (ns, name)}
            if cls:
                want["VSHARE_CLASS"] = cls
            check(env_of(r.spec(uid)) == want, "%s's spec: %s" % (name, want))
            check(got[uid]["devices"][0][4] == ["vshare.dev/gpu=0",
                                                 "vshare.dev/claim=" + uid],
                  "%s on GPU 0" % name)
        asked = len(r.api.gets)
        again = r.prepare(("team-a", UIDS[2], "b"))
        check(again == {UIDS[2]: got[UIDS[2]]} and len(r.api.gets) == asked,
              "prepared again: the same answer, the API server not asked")
        check(r.unprepare(("team-a", UIDS[1], "a"), ("team-a", UIDS[2], "b"))
              == {UIDS[1]: "", UIDS[2]: ""}, "two unprepared")
        check(r.spec(UIDS[1]) is None and r.spec(UIDS[2]) is None and
              r.spec(UIDS[3]) is not None, "the third's spec stays")


def t_restart(bindir):
    """A driver that restarts knows the claims it prepared from its
    checkpoint: a spec that went missing is written again, a prepare
    answers as before without the API server, unprepare removes them."""
    if need_grpc():
        return SKIP
    with Run(bindir) as r:
        r.registered()
        r.api.add_claim(claim(UIDS[0], "x", "gpu-0", "2Gi", "batch"))
        r.api.add_claim(claim(UIDS[1], "y", "gpu-1", "6Gi"))
        first = r.prepare(("team-a", UIDS[0], "x"), ("team-a", UIDS[1], "y"))
        check(all(v["error"] == "" for v in first.values()), "prepared")
        spec0 = r.spec(UIDS[0])
        check(r.stop() == 0, "stopped")
        os.unlink(os.path.join(r.cdi, "%s-claim_%s.json" % (DRIVER, UIDS[1])))
        r.api.claims.clear()            # the API server has them no more
        r.start()
        r.registered()
        check(r.spec(UIDS[0]) == spec0 and
              env_of(r.spec(UIDS[1]))["VSHARE_MEM_LIMIT"] == str(6 * GIB),
              "the specs there, the missing one written again")
        again = r.prepare(("team-a", UIDS[0], "x"), ("team-a", UIDS[1], "y"))
        check(again == first, "the same answer after the restart")
        check("2 prepared claim(s) from" in r.logtext(), "logged")
        check(r.unprepare(("team-a", UIDS[0], "x")) == {UIDS[0]: ""} and
              r.spec(UIDS[0]) is None, "unprepared after the restart")
        with open(os.path.join(r.plugins, "checkpoint.json")) as f:
            check(list(json.load(f)["claims"]) == [UIDS[1]],
                  "the checkpoint holds the other claim only")


def t_refusals(bindir):
    """A claim the API server does not have, one of another UID, one
    allocated on another node's pool, one with a bad class or an unknown
    parameter, one whose consumed memory is no quantity: each answered
    with its error (and no spec), the others of
    the same call prepared; a corrupt checkpoint is kept aside."""
    if need_grpc():
        return SKIP
    with Run(bindir) as r:
        r.registered()
        r.api.add_claim(claim(UIDS[0], "ok", "gpu-0", "1Gi"))
        r.api.add_claim(claim(UIDS[1], "other-uid", "gpu-0", "1Gi"))
        r.api.add_claim(claim(UIDS[2], "far", "gpu-0", "1Gi", pool="node-2"))
        r.api.add_claim(claim(UIDS[3], "bad-class", "gpu-0", "1Gi", "a b"))
        c = claim(UIDS[4], "typo", "gpu-0", "1Gi", "batch")
        c["status"]["allocation"]["devices"]["config"][0]["opaque"][
            "parameters"]["clas"] = "x"
        r.api.add_claim(c)
        # What no API server would send, past the double's own check.
        odd = claim("ffff-odd", "odd", "gpu-0", "1Gi")
        odd["status"]["allocation"]["devices"]["results"][0][
            "consumedCapacity"]["memory"] = "."
        r.api.claims[("team-a", "odd")] = odd
        got = r.prepare(("team-a", UIDS[0], "ok"),
                        ("team-a", "ffff-odd", "odd"),
                        ("team-a", "f" + UIDS[1][1:], "other-uid"),
                        ("team-a", UIDS[2], "far"),
                        ("team-a", UIDS[3], "bad-class"),
                        ("team-a", UIDS[4], "typo"),
                        ("team-a", "ffff", "absent"))
        want = {UIDS[0]: "", "f" + UIDS[1][1:]: "another claim of that name",
                UIDS[2]: "is of pool node-2", UIDS[3]: "class a b is not a word",
                UIDS[4]: "has clas: only class", "ffff": "HTTP 404",
                "ffff-odd": "consumed memory . is not a quantity"}
        for uid, err in want.items():
            check((err == "" and got[uid]["error"] == "") or
                  (err != "" and err in got[uid]["error"] and
                   got[uid]["devices"] == [] and r.spec(uid) is None),
                  "%s: %r" % (uid, got[uid]["error"]))
    with Run(bindir, start=False) as r:
        os.makedirs(r.plugins)
        with open(os.path.join(r.plugins, "checkpoint.json"), "w") as f:
            f.write("{not json")
        r.start()
        r.registered()
        check(os.path.exists(os.path.join(r.plugins, "checkpoint.json.bad")),
              "the corrupt checkpoint kept aside")
        check("is not one of ours" in r.logtext(), "and said")
    prog = os.path.join(bindir, "vshare-dra-driver")
    for args, msg in ((["--node-name", "A_B"], "must name this node"),
                      (["--node-name", "n", "--driver", "vshare"],
                       "DNS subdomain"),
                      (["--node-name", "n", "--mem-step", "3G"],
                       "multiple of --mem-step"),
                      (["--node-name", "n", "--default-mem", "8"],
                       "--default-mem '8': a size needs a unit (K, M, G, T); "
                       "a bare number below 1 MiB is refused, write 8G or "
                       "8B\n"),
                      (["--node-name", "n", "--mem-step", "1x"],
                       "--mem-step '1x': not a size (like 8G, 512M or 1.5T; "
                       "bytes like 4096B)\n"),
                      (["--node-name", "n", "--mem-step", "0"],
                       "--mem-step takes a size above 0: 0\n")):
        p = subprocess.run([prog] + args, capture_output=True, text=True,
                           env={"PATH": os.environ.get("PATH", "")})
        check(p.returncode == 2 and msg in p.stderr,
              "%s: exit 2, %r" % (args, p.stderr.strip()))


def t_slice_update(bindir):
    """A ResourceSlice of an earlier start is replaced (PUT, under the
    resourceVersion read, the pool's generation one higher); an API server
    that refuses the token is retried with the reason logged."""
    if need_grpc():
        return SKIP
    with Run(bindir, start=False) as r:
        old = json.loads(json.dumps({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": NODE + "-" + DRIVER, "resourceVersion": "7"},
            "spec": {"driver": DRIVER, "nodeName": NODE, "devices": [],
                     "pool": {"name": NODE, "generation": 3,
                              "resourceSliceCount": 1}}}))
        r.api.slices[old["metadata"]["name"]] = old
        r.start()
        r.registered()
        method, s = r.api.wait_slice(1)
        check(method == "PUT" and s["metadata"]["resourceVersion"] == "7" and
              s["spec"]["pool"]["generation"] == 4 and
              len(s["spec"]["devices"]) == 2 and r.api.invalid == [],
              "replaced: %s %s" % (method, s["spec"]["pool"]))
    with Run(bindir, start=False) as r:
        r.api.token = "another"
        r.start()
        wait_for(lambda: "HTTP 401" in r.logtext(), 20, "the refusal logged")
        check(r.api.sent == [], "nothing written")
        r.api.token = TOKEN
        check(r.api.wait_slice(1, 30) is not None, "published once allowed")


def make_cert(d):
    """A self-signed certificate for 127.0.0.1, as a cluster's CA and
    server certificate at once."""
    cert, key = os.path.join(d, "ca.crt"), os.path.join(d, "server.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def t_in_cluster(bindir):
    """In a pod: the API server from KUBERNETES_SERVICE_HOST and _PORT,
    over HTTPS checked against the service account's CA; with another CA
    the certificate is refused and nothing is sent."""
    if need_grpc():
        return SKIP
    if shutil.which("openssl") is None:
        print("SKIP: no openssl to make a certificate")
        return SKIP
    tmp = short_tmpdir("vs-dra-ca-")
    try:
        cert, key = make_cert(tmp)
        other = os.path.join(tmp, "other")
        os.makedirs(other)
        other_ca, _ = make_cert(other)
        for ca, good in ((cert, True), (other_ca, False)):
            with Run(bindir, "--ca-file", ca, tls=(cert, key),
                     start=False) as r:
                r.env.update(KUBERNETES_SERVICE_HOST="127.0.0.1",
                             KUBERNETES_SERVICE_PORT=str(r.api.port))
                r.start()
                r.registered()
                if good:
                    sent = r.api.wait_slice(1)
                    check(sent is not None and sent[0] == "POST",
                          "published over HTTPS:\n" + r.logtext())
                    check("API server https://127.0.0.1:%d" % r.api.port
                          in r.logtext(), "the in-cluster address")
                else:
                    wait_for(lambda: "again in" in r.logtext(), 20,
                             "the refusal logged")
                    check(r.api.sent == [], "another CA: nothing sent")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main(scenarios(globals())))
