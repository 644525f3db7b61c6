#!/usr/bin/env python3
"""The node image, for real with Podman, and the DaemonSet's containers
run from it as a node would, against the kubelet double.

1. The Debian packages of this tree (dpkg-buildpackage -b, nocheck), kept
   in the build tree while the source does not change.
2. The image, built by Podman from deploy/kubernetes/Containerfile on a
   local image imported from a debootstrapped Debian 12 (no registry:
   --pull=never, an empty registries.conf); apt-get reaches the Debian
   archive for the packages' dependencies.
3. deploy/kubernetes/daemonset.yaml's containers, each with its command,
   arguments, environment, mounts and securityContext (user and group,
   every capability dropped, no new privileges, read-only root file
   system): the init containers install-shim and cdi-spec, then the
   scheduler (with the ConfigMap's scheduler.json) and the device plugin.
   The host paths are those of the manifest, in a mount namespace of the
   test's own (private /run and /opt), except the kubelet's directories
   (the double's, in the test's directory) and /dev (stand-in device nodes
   in the test's directory, so cdi-spec gets --dev-dir there).
4. The kubelet double (tests/k8s/kubelet_double.py, in this process)
   registers the plugin, reads its shares, allocates 2 shares for one pod
   and 1 for another and lists both pods in PodResources.
5. vs-compute and vs-bursty run in two containers of the plain Debian
   image on the test driver, each with the CDI devices and environment
   its Allocate answer named: `vsharectl --json status` must show both
   connected to GPU 0 at the same time, with the memory limits of their
   shares and their pods' names.

usage: test_image.py MKROOTFS ROOTFS_TAR
  VSHARE_K8S_DEBS=DIR: take the .debs in DIR instead of building them
  (a by-hand run, or packages another step of the same tree built)
exit 77: not root, Podman, runc, debootstrap or dpkg-buildpackage missing,
no network to the Debian archive, or no python3-grpcio."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cluster"))
from cluster_lib import (BIN, BUILD, TESTDRIVER, Session, check,  # noqa: E402
                         clean_env, devices, fail, log, mount_namespace,
                         need_root_and, podman_conf, skip, storage_conf,
                         wait_for)
import kubelet_double  # noqa: E402

MKROOTFS, ROOTFS = sys.argv[1:3]
DEPLOY = os.path.join(SOURCE, "deploy", "kubernetes")
BASE = "localhost/vshare-base:bookworm"
NODE = "localhost/vshare-node:test"
DEBS = os.path.join(BUILD, "k8s", "debs")
# The node has no NVML here, so the plugin does not know the GPU's memory:
# it is told the memory per share, as on such a node.
SHARD = 4 << 30
SHARD_ARG = "--shard-mem=4G"
SOCK = "/run/vshare/scheduler.sock"


def archive_reachable():
    """The Debian mirror the root file system uses answers on its port."""
    mirror = os.environ.get("VSHARE_DEBIAN_MIRROR",
                            "http://deb.debian.org/debian")
    host = mirror.split("://", 1)[-1].split("/", 1)[0]
    port = 443 if mirror.startswith("https:") else 80
    r = subprocess.run(["timeout", "10", "bash", "-c",
                        "exec 3<>/dev/tcp/%s/%d" % (host, port)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0, mirror


def source_key():
    """A digest of the files git sees in the source tree (tracked and not
    ignored), or None without git: the packages are kept while it holds."""
    r = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z", "-co",
                        "--exclude-standard"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        return None
    h = hashlib.sha256()
    for name in sorted(set(r.stdout.decode().split("\0")) - {""}):
        path = os.path.join(SOURCE, name)
        if os.path.isfile(path) and not os.path.islink(path):
            h.update(name.encode() + b"\0")
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def packages(sess):
    """vshare and vshare-device-plugin .debs of this source, built by
    dpkg-buildpackage (as tests/package does) or kept from the last run."""
    given = os.environ.get("VSHARE_K8S_DEBS")
    if given:
        debs = sorted(os.path.join(given, n) for n in os.listdir(given)
                      if n.startswith(("vshare_", "vshare-device-plugin_"))
                      and n.endswith(".deb"))
        log("packages from VSHARE_K8S_DEBS: %s" % debs)
        return debs
    key, stamp = source_key(), os.path.join(DEBS, "SOURCE")
    if key and os.path.exists(stamp) and open(stamp).read() == key:
        log("packages of this source kept from an earlier run")
    else:
        t0 = time.monotonic()
        shutil.rmtree(DEBS, ignore_errors=True)
        os.makedirs(os.path.dirname(DEBS), exist_ok=True)
        work = tempfile.mkdtemp(prefix="deb-build.",
                                dir=os.path.dirname(DEBS))
        sess.at_close(lambda: shutil.rmtree(work, ignore_errors=True))
        os.makedirs(os.path.join(work, "src"))
        subprocess.run(
            "tar -C '%s' --exclude='./build*' --exclude=./.git "
            "--exclude='./obj-*' --exclude=./debian/.debhelper "
            "--exclude=./debian/tmp -cf - . | tar -C '%s' -xf -"
            % (SOURCE, os.path.join(work, "src")), shell=True, check=True)
        env = clean_env(DEB_BUILD_OPTIONS="nocheck parallel=%d"
                        % os.cpu_count())
        with open(sess.path("dpkg-buildpackage.log"), "w") as out:
            r = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"],
                               cwd=os.path.join(work, "src"), env=env,
                               stdout=out, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            sess.dump("dpkg-buildpackage.log")
            fail("dpkg-buildpackage failed")
        os.makedirs(DEBS)
        for n in os.listdir(work):
            if n.endswith(".deb") and n.startswith(("vshare_",
                                                    "vshare-device-plugin_")):
                shutil.copy(os.path.join(work, n), DEBS)
        if key:
            with open(stamp, "w") as f:
                f.write(key)
        log("packages built (%.0f s)" % (time.monotonic() - t0))
    debs = sorted(n for n in os.listdir(DEBS) if n.endswith(".deb"))
    check(any(d.startswith("vshare_") for d in debs) and
          any(d.startswith("vshare-device-plugin_") for d in debs),
          "packages vshare and vshare-device-plugin: %s" % debs)
    return [os.path.join(DEBS, d) for d in debs]


def build_image(sess, ns, env, debs):
    t0 = time.monotonic()
    r = subprocess.run(["sh", MKROOTFS, ROOTFS], timeout=1200)
    if r.returncode == 77:
        skip("no root file system for the base image (see above)")
    if r.returncode != 0:
        fail("%s %s failed" % (MKROOTFS, ROOTFS))
    argv = ns + ["podman", "import", "--quiet", ROOTFS, BASE]
    r = sess.run(argv, env=env, timeout=300, check_rc=False)
    if r.returncode != 0:
        log("podman import with overlay storage failed, using vfs:\n"
            + r.stdout)
        storage_conf(sess, "vfs")
        sess.run(argv, env=env, timeout=300)
    ctx = sess.path("context")
    os.makedirs(os.path.join(ctx, "debs"))
    for f in ("Containerfile", "vshare-install-shim"):
        shutil.copy2(os.path.join(DEPLOY, f), ctx)
    for d in debs:
        shutil.copy(d, os.path.join(ctx, "debs"))
    with open(sess.path("podman-build.log"), "w") as out:
        r = subprocess.run(ns + ["podman", "build", "--pull=never",
                                 "--network=host", "--build-arg",
                                 "BASE=" + BASE, "-t", NODE, ctx],
                           env=env, stdout=out, stderr=subprocess.STDOUT,
                           timeout=900)
    if r.returncode != 0:
        sess.dump("podman-build.log")
        fail("podman build of deploy/kubernetes/Containerfile failed")
    log("node image built (%.0f s)" % (time.monotonic() - t0))


def manifests():
    with open(os.path.join(DEPLOY, "daemonset.yaml")) as f:
        ds = yaml.safe_load(f)
    with open(os.path.join(DEPLOY, "configmap.yaml")) as f:
        cm = yaml.safe_load(f)
    return ds["spec"]["template"]["spec"], cm


def host_paths(sess, spec, cm):
    """Volume name -> (host path, container path or None: the manifest's):
    the manifest's host paths, but the kubelet's directories and /dev in
    the test's directory."""
    os.makedirs(sess.path("kubelet", "device-plugins"))
    os.makedirs(sess.path("kubelet", "pod-resources"))
    os.makedirs(sess.path("config"))
    os.makedirs(sess.path("features.d"))
    for name, text in cm["data"].items():
        with open(sess.path("config", name), "w") as f:
            f.write(text)
    moved = {"/var/lib/kubelet/device-plugins":
             (sess.path("kubelet", "device-plugins"), None),
             "/var/lib/kubelet/pod-resources":
             (sess.path("kubelet", "pod-resources"), None),
             "/etc/kubernetes/node-feature-discovery/features.d":
             (sess.path("features.d"), None),
             "/dev": (devices(sess), sess.path("dev"))}
    out = {}
    for v in spec["volumes"]:
        if "configMap" in v:
            check(v["configMap"]["name"] == cm["metadata"]["name"],
                  "volume %s is the ConfigMap" % v["name"])
            out[v["name"]] = (sess.path("config"), None)
        else:
            p = v["hostPath"]["path"]
            out[v["name"]] = moved.get(p, (p, None))
    return out


def run_args(c, vols, name):
    """podman run's options for the manifest's container c."""
    sc = c["securityContext"]
    if sc.get("capabilities") != {"drop": ["ALL"]} or sc.get("privileged"):
        fail("%s: the test runs containers without capabilities only" %
             c["name"])
    a = ["run", "--rm", "--name", name, "--runtime", "runc",
         "--cgroup-manager", "cgroupfs", "--pull=never",
         "--user", "%d:%d" % (sc["runAsUser"], sc["runAsGroup"]),
         "--cap-drop=all"]
    if sc.get("allowPrivilegeEscalation") is False:
        a += ["--security-opt", "no-new-privileges"]
    if sc.get("readOnlyRootFilesystem"):
        # As the kubelet does: no tmpfs of Podman's on /tmp, /run.
        a += ["--read-only", "--read-only-tmpfs=false"]
    for e in c.get("env", []):
        a += ["-e", "%s=%s" % (e["name"], e["value"])]
    for m in c.get("volumeMounts", []):
        host, inside = vols[m["name"]]
        a += ["-v", "%s:%s:%s" % (host, inside or m["mountPath"],
                                  "ro" if m.get("readOnly") else "rw")]
    # command is the entrypoint, args its arguments, as the kubelet has it.
    dev = vols["dev"][1]
    args = [("--dev-dir=" + dev if x == "--dev-dir=/dev" else x)
            for x in c.get("args", [])]
    if c["name"] == "device-plugin":
        args.append(SHARD_ARG)
    return a + ["--entrypoint", json.dumps(c["command"]), NODE] + args


def node(sess, ns, env, spec, vols, mnt):
    """The DaemonSet's pod: init containers to the end, then the
    containers; returns the scheduler's and the plugin's processes."""
    for c in spec["initContainers"]:
        r = sess.run(ns + ["podman"] + run_args(c, vols, "k8s-" + c["name"]),
                     env=env, timeout=120, check_rc=False)
        check(r.returncode == 0, "init container %s ran: %s"
              % (c["name"], r.stdout.strip()))
    shim = mnt + "/opt/vshare/lib/libvshare.so"
    check(os.path.isfile(shim) and os.stat(shim).st_mode & 0o777 == 0o644,
          "install-shim put libvshare.so (0644) in /opt/vshare/lib")
    # Through nsenter: /var/run links to /run, which a path under
    # /proc/PID/root would resolve in this process's own root.
    spec_cdi = json.loads(sess.run(ns + ["cat", "/var/run/cdi/vshare.json"],
                                   env=env).stdout)
    mounts = {m["containerPath"]: m["hostPath"]
              for m in spec_cdi["containerEdits"]["mounts"]}
    check(mounts.get("/usr/lib/vshare/libvshare.so") ==
          "/opt/vshare/lib/libvshare.so" and
          mounts.get("/run/vshare") == "/run/vshare" and
          [d["name"] for d in spec_cdi["devices"]] == ["0", "all"],
          "cdi-spec wrote /var/run/cdi/vshare.json: GPU 0, the host's shim "
          "and socket directory")
    procs = {}
    for c in spec["containers"]:
        procs[c["name"]] = sess.start(
            c["name"], ns + ["podman"] + run_args(c, vols, "k8s-" +
                                                  c["name"]), env=env)
        if c["name"] == "scheduler":
            probe = c["readinessProbe"]["exec"]["command"]

            def ready():
                p = procs["scheduler"]
                if p.poll() is not None:
                    fail("the scheduler's container exited:\n" +
                         sess.output(p))
                return sess.run(ns + ["podman", "exec", "k8s-scheduler"] +
                                probe, env=env, check_rc=False).returncode == 0
            wait_for(ready, 60, "the scheduler's readiness probe", step=0.5)
            log("ok: the scheduler is ready (its readinessProbe passes)")
    st = os.stat(mnt + SOCK)
    check(st.st_gid == 990 and st.st_mode & 0o777 == 0o660,
          "the socket is 0660, group vshare (990), without CAP_CHOWN")
    return procs


def status(ns):
    r = subprocess.run(ns + [os.path.join(BIN, "vsharectl"), "--socket",
                             SOCK, "--json", "status"], env=clean_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=10)
    if r.returncode != 0:
        fail("vsharectl status: " + r.stderr)
    return json.loads(r.stdout)


def allocate(kube, plugin, reg, shares, pod):
    """The kubelet's part for one container: the plugin's preferred
    shares, Allocate, and the pod in PodResources."""
    free = sorted(set(plugin.devices) - plugin.used)
    ids = list(plugin.preferred(free, [], shares)
               .container_responses[0].deviceIDs)
    check(len(ids) == shares, "%s: %d shares preferred: %s" % (pod, shares,
                                                              ids))
    plugin.used.update(ids)
    r = plugin.allocate(ids).container_responses[0]
    ns, name, ctr = pod.split("/")
    with kube.cond:
        kube.pods.append((ns, name, ctr, reg.resource_name, ids))
    return kubelet_double.response_json(r)


def workload(sess, ns, env, name, resp, argv):
    logdir = sess.path("log-" + name)
    os.makedirs(logdir)
    prog = os.path.join(BIN, argv[0])
    script = ("touch /sync/ready-%s; while [ ! -e /sync/go ]; do "
              "sleep 0.05; done; exec %s" % (name, " ".join(argv)))
    a = ["podman", "run", "--rm", "--name", "k8s-" + name, "--runtime",
         "runc", "--cgroup-manager", "cgroupfs", "--pull=never"]
    for d in resp["cdi_devices"]:
        a += ["--device", d]
    for k, v in sorted(resp["envs"].items()):
        a += ["-e", "%s=%s" % (k, v)]
    a += ["-v", "%s:/usr/local/bin/%s:ro" % (prog, argv[0]),
          "-v", "%s:/opt/testdriver:ro" % TESTDRIVER,
          "-v", "%s:/log" % logdir, "-v", "%s:/sync" % sess.path("sync"),
          "-e", "LD_LIBRARY_PATH=/opt/testdriver",
          "-e", "VSHARE_TD_LOG=/log/exec.log", BASE, "sh", "-c", script]
    return sess.start("ctr-" + name, ns + a, env=env)


def main():
    need_root_and(["podman", "runc", "nsenter", "unshare", "debootstrap",
                   "dpkg-buildpackage"],
                  ["podman", "runc", "util-linux", "debootstrap", "dpkg-dev"])
    why = kubelet_double.missing()
    if why:
        skip(why)
    ok, mirror = archive_reachable()
    if not ok:
        skip("no network to the Debian archive (%s): the image's build "
             "installs the packages' dependencies from it" % mirror)
    with Session("vshare-k8s-") as sess:
        debs = packages(sess)
        env = podman_conf(sess)
        ns = mount_namespace(sess, "mount -t tmpfs tmpfs /opt && "
                             "mkdir -p /opt/vshare/lib /run/vshare")
        mnt = "/proc/%s/root" % ns[-1]
        sess.at_close(lambda: sess.run(ns + ["podman", "rm", "-af", "-t",
                                             "0"], env=env, check_rc=False))
        build_image(sess, ns, env, debs)
        spec, cm = manifests()
        vols = host_paths(sess, spec, cm)

        kube = kubelet_double.Kubelet(
            sess.path("kubelet", "device-plugins"),
            sess.path("kubelet", "pod-resources", "kubelet.sock"))
        kube.serve()
        sess.at_close(kube.stop)
        procs = node(sess, ns, env, spec, vols, mnt)
        reg = kube.wait_register(1, 60)
        if reg is None:
            sess.dump("device-plugin.out")
            fail("the plugin in the image did not register with the double")
        check(reg.resource_name == "vshare.dev/gpu",
              "the plugin registered vshare.dev/gpu")
        plugin = kube.plugin(reg.endpoint)
        sess.at_close(plugin.close)
        first = plugin.watch().get(timeout=30)
        check(first is not None and len(first) == 10 and
              set(first.values()) == {"Healthy"},
              "ListAndWatch: 10 healthy shares of GPU 0 (%s)" % first)
        plugin.devices, plugin.used = first, set()
        train = allocate(kube, plugin, reg, 2, "default/train/compute")
        chat = allocate(kube, plugin, reg, 1, "default/chat/bursty")
        for resp, n in ((train, 2), (chat, 1)):
            check(resp["cdi_devices"] == ["vshare.dev/gpu=0"] and
                  int(resp["envs"].get("VSHARE_MEM_LIMIT", -1)) == n * SHARD,
                  "Allocate of %d shares: CDI device vshare.dev/gpu=0, "
                  "limit %d GiB (%s)" % (n, n * 4, resp))

        os.makedirs(sess.path("sync"))
        ctrs = [workload(sess, ns, env, "compute", train,
                         ["vs-compute", "--iters", "200", "--kernel-ms",
                          "20", "--mem", "64M", "--progress-ms", "0"]),
                workload(sess, ns, env, "bursty", chat,
                         ["vs-bursty", "--bursts", "40", "--kernels", "10",
                          "--kernel-us", "2000", "--gap-ms", "50"])]
        for n, p in zip(("compute", "bursty"), ctrs):
            wait_for(lambda: os.path.exists(sess.path("sync", "ready-" + n))
                     or p.poll() is not None, 120, "container %s" % n)
            if p.poll() is not None:
                fail("container %s exited %d:\n%s" % (n, p.returncode,
                                                      sess.output(p)))
        open(sess.path("sync", "go"), "w").close()

        def both():
            for name, p in list(procs.items()):
                if p.poll() is not None:
                    fail("the %s container exited:\n%s"
                         % (name, sess.output(p)))
            cs = [c for c in status(ns)["clients"] if c["gpus"]]
            return cs if len(cs) == 2 else None
        seen = wait_for(both, 60, "both programs in vsharectl status")
        log("status: %s" % json.dumps(seen))
        for p, done in zip(ctrs, ("managed: yes", "latency ms:")):
            p.wait(180)
            out = sess.output(p)
            if p.returncode != 0 or done not in out:
                fail("%s exited %d:\n%s" % (p.name, p.returncode, out))
        log("ok: vs-compute ran on managed memory, vs-bursty to its end")
        # Each client shows its Allocate answer's label, or its pod's name
        # where the plugin has named the label to the scheduler.
        labels = sorted(c["label"] for c in seen)
        ok = [{train["envs"]["VSHARE_LABEL"], "default/train/compute"},
              {chat["envs"]["VSHARE_LABEL"], "default/chat/bursty"}]
        check(len(labels) == 2 and
              any(labels[0] in a and labels[1] in b for a, b in (ok, ok[::-1])),
              "vsharectl status showed both programs on GPU 0 at once, "
              "labelled by their Allocate answers: %s" % labels)


if __name__ == "__main__":
    main()
