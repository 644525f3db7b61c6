#!/usr/bin/env python3
"""Containers through CDI: Podman from Debian runs two containers from a
local image (a debootstrapped Debian 12), each with `--device
vshare.dev/gpu=0` from the spec `vsharectl cdi generate` wrote, each running a CUDA
example on the test driver (mounted in by the test). The real scheduler in
mode on must show both and the kernel logs must not overlap.

Nothing of the host's Podman is used: storage, run root, locks and config
are the test's own, and the whole run happens in a mount namespace of its
own, where a private /run holds the spec directory (Podman 4.3 reads specs
only from /etc/cdi and /var/run/cdi) and a private /dev/shm the locks.

usage: test_podman.py VSHARECTL MKROOTFS ROOTFS_TAR
  ROOTFS_TAR: made by MKROOTFS once and kept (debootstrap takes minutes)
exit 77: not root, or Podman, runc or debootstrap missing."""
import collections
import json
import os
import subprocess
import sys
import time

from cluster_lib import (BIN, SHIM, TESTDRIVER, Session, check,
                         clients_labelled, devices, execlog, fail, log,
                         merged_ops, mount_namespace, need_root_and,
                         podman_conf, skip, start_scheduler, storage_conf,
                         wait_for)

VSHARECTL, MKROOTFS, ROOTFS = sys.argv[1:4]
IMAGE = "localhost/vshare-test:bookworm"
ITERS = 60


def make_image(sess, ns, env):
    os.makedirs(os.path.dirname(ROOTFS), exist_ok=True)
    t0 = time.monotonic()
    r = subprocess.run(["sh", MKROOTFS, ROOTFS], timeout=1200)
    if r.returncode == 77:
        skip("no root file system for the image (see above)")
    if r.returncode != 0:
        fail("%s %s failed" % (MKROOTFS, ROOTFS))
    log("root file system ready (%.0f s)" % (time.monotonic() - t0))
    argv = ns + ["podman", "import", "--quiet", ROOTFS, IMAGE]
    r = sess.run(argv, env=env, timeout=300, check_rc=False)
    if r.returncode != 0:
        log("podman import with overlay storage failed, using vfs:\n"
            + r.stdout)
        storage_conf(sess, "vfs")
        sess.run(argv, env=env, timeout=300)


def generate_spec(sess, ns, env, dev, sock):
    sess.run(ns + [VSHARECTL, "cdi", "generate", "-o", "/run/cdi/vshare.json",
                   "--dev-dir", dev, "--lib", SHIM, "--socket", sock], env=env)
    spec = json.loads(sess.run(ns + ["cat", "/run/cdi/vshare.json"],
                               env=env).stdout)
    mounts = {m["containerPath"]: m for m in spec["containerEdits"]["mounts"]}
    sockdir = os.path.dirname(sock)
    check(spec["cdiVersion"] == "0.5.0" and
          [d["name"] for d in spec["devices"]] == ["0", "all"],
          "spec: cdiVersion 0.5.0, devices 0 and all")
    check(sockdir in mounts and sock not in mounts and
          "ro" in mounts[sockdir]["options"],
          "spec: the socket's directory is mounted read-only, not the socket")


def container(sess, ns, env, name):
    logdir = sess.path("log-" + name)
    os.makedirs(logdir)
    script = ("touch /sync/ready-%s; while [ ! -e /sync/go ]; do sleep 0.05; "
              "done; exec vs-compute --iters %d --kernel-ms 50 "
              "--progress-ms 0" % (name, ITERS))
    return sess.start("ctr-" + name, ns + [
        "podman", "run", "--rm", "--name", "vshare-test-" + name,
        "--runtime", "runc", "--cgroup-manager", "cgroupfs",
        "--device", "vshare.dev/gpu=0",
        "-v", "%s:/usr/local/bin/vs-compute:ro" % os.path.join(BIN, "vs-compute"),
        "-v", "%s:/opt/testdriver:ro" % TESTDRIVER,
        "-v", "%s:/log" % logdir, "-v", "%s:/sync" % sess.path("sync"),
        "-e", "LD_LIBRARY_PATH=/opt/testdriver",
        "-e", "VSHARE_TD_LOG=/log/exec.log", "-e", "VSHARE_LABEL=ctr-" + name,
        IMAGE, "sh", "-c", script], env=env)


def main():
    need_root_and(["podman", "runc", "nsenter", "unshare", "debootstrap"],
                  ["podman", "runc", "util-linux", "debootstrap"])
    with Session("vshare-podman-") as sess:
        env = podman_conf(sess)
        ns = mount_namespace(sess)
        sess.at_close(lambda: sess.run(ns + ["podman", "rm", "-af", "-t", "0"],
                                       env=env, check_rc=False))
        make_image(sess, ns, env)
        sock = start_scheduler(sess, sess.path("vshare"), mode="on", tq_s=1)
        generate_spec(sess, ns, env, devices(sess), sock)

        # Both containers start, then run together: container start-up
        # (a copy of the image each) takes seconds.
        os.makedirs(sess.path("sync"))
        procs = [container(sess, ns, env, n) for n in ("a", "b")]
        for n, p in zip("ab", procs):
            wait_for(lambda: os.path.exists(sess.path("sync", "ready-" + n))
                     or p.poll() is not None, 120, "container %s to start" % n)
            if p.poll() is not None:
                fail("container %s exited %d:\n%s" % (n, p.returncode,
                                                      sess.output(p)))
        open(sess.path("sync", "go"), "w").close()
        seen = clients_labelled(sock, "ctr-", 2)
        for p in procs:
            p.wait(120)
            out = sess.output(p)
            if p.returncode != 0 or "managed: yes" not in out or "PASS" not in out:
                fail("%s exited %d:\n%s" % (p.name, p.returncode, out))
        check(sorted(c["label"] for c in seen) == ["ctr-a", "ctr-b"],
              "vsharectl status showed both containers' programs")
        ops = execlog.select(merged_ops([sess.path("log-a", "exec.log"),
                                         sess.path("log-b", "exec.log")]))
        per_pid = collections.Counter(o.pid for o in ops
                                      if o.name == "vs_sleep_ts")
        check(sorted(per_pid.values()) == [ITERS, ITERS],
              "both containers ran their %d kernels (%s)" % (ITERS,
                                                             dict(per_pid)))
        check(execlog.is_serialized(ops),
              "mode on: no two containers' kernels overlap")


if __name__ == "__main__":
    main()
