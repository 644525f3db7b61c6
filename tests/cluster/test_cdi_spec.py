#!/usr/bin/env python3
"""`vsharectl cdi generate` without a container engine: the spec's content (devices,
device nodes, mounts, environment with the framework defaults of
include/vshare/fw_defaults.def), the atomic write of -o, and refused
options. Device nodes are symbolic links to /dev/null, so no root is
needed. usage: test_cdi_spec.py VSHARECTL"""
import json
import os
import re
import stat
import subprocess
import sys

from cluster_lib import SOURCE, Session, check

VSHARECTL = sys.argv[1]


def gen(*args):
    return subprocess.run([VSHARECTL, "cdi", "generate"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=10)


def fw_defaults():
    """NAME=VALUE of every entry of the one list."""
    path = os.path.join(SOURCE, "include", "vshare", "fw_defaults.def")
    with open(path) as f:
        return ["%s=%s" % m for m in re.findall(
            r'^VS_FW_DEFAULT\((\w+), "([^"]*)"', f.read(), re.M)]


def main():
    with Session("vshare-cdi-") as sess:
        dev = sess.path("dev")
        os.makedirs(dev)
        for n in ("nvidia0", "nvidia1", "nvidiactl"):
            os.symlink("/dev/null", os.path.join(dev, n))
        open(os.path.join(dev, "nvidia7"), "w").close()  # not a device
        lib = sess.path("libvshare.so")
        open(lib, "w").close()

        r = gen("--dev-dir", dev, "--lib", lib)
        check(r.returncode == 0 and r.stderr == "", "generate: exit 0, quiet")
        spec = json.loads(r.stdout)
        check(spec["cdiVersion"] == "0.5.0" and spec["kind"] == "vshare.dev/gpu",
              "cdiVersion 0.5.0 (Podman 4.3), kind vshare.dev/gpu")
        devs = {d["name"]: d["containerEdits"]["deviceNodes"]
                for d in spec["devices"]}
        check(sorted(devs) == ["0", "1", "all"],
              "one device per GPU node, and all (regular files skipped)")
        check(devs["1"] == [{"path": "/dev/nvidia1",
                             "hostPath": os.path.join(dev, "nvidia1")}] and
              len(devs["all"]) == 2, "device nodes with their host paths")
        common = spec["containerEdits"]
        check([n["path"] for n in common["deviceNodes"]] == ["/dev/nvidiactl"],
              "control nodes that exist go to every device")
        mounts = {m["containerPath"]: m for m in common["mounts"]}
        check(mounts["/usr/lib/vshare/libvshare.so"]["hostPath"] == lib and
              mounts["/run/vshare"]["hostPath"] == "/run/vshare" and
              all("ro" in m["options"] for m in mounts.values()),
              "the shim and the socket's directory, read-only")
        env = common["env"]
        want = ["LD_PRELOAD=/usr/lib/vshare/libvshare.so",
                "VSHARE_SOCKET=/run/vshare/scheduler.sock"] + fw_defaults()
        check(env == want, "environment: preload, socket, framework defaults")

        env = json.loads(gen("--dev-dir", dev, "--lib", lib,
                             "--no-framework-defaults", "--env",
                             "VSHARE_REQUIRE_SCHEDULER=1").stdout)[
                                 "containerEdits"]["env"]
        check(env == want[:2] + ["VSHARE_REQUIRE_SCHEDULER=1"],
              "--no-framework-defaults and --env")

        # Mandatory sharing: the node's client.conf and a preload list
        # mounted read-only; without --mandatory neither is.
        # --mandatory needs a client.conf the shim trusts (root's, in a
        # folder root owns) naming the spec's socket: exit 2 otherwise.
        cdir = sess.path("etc-vshare")
        os.makedirs(cdir)
        os.chmod(cdir, 0o755)
        cconf = os.path.join(cdir, "client.conf")
        plist = sess.path("container.preload")
        with open(cconf, "w") as f:
            f.write("# the node\nsocket = /run/vshare/scheduler.sock\n")
        os.chmod(cconf, 0o644)
        if os.geteuid() == 0:
            r = gen("--dev-dir", dev, "--lib", lib, "--mandatory",
                    "--client-conf", cconf, "--preload-list", plist)
            mounts = {m["containerPath"]: m for m in
                      json.loads(r.stdout)["containerEdits"]["mounts"]}
            check(mounts["/etc/vshare/client.conf"]["hostPath"] == cconf and
                  mounts["/etc/ld.so.preload"]["hostPath"] == plist and
                  all("ro" in m["options"] for m in mounts.values()),
                  "--mandatory: client.conf and /etc/ld.so.preload, "
                  "read-only")
            check(r.returncode == 0 and plist in r.stderr and
                  "warning" in r.stderr and cconf not in r.stderr,
                  "--mandatory: a missing preload list is a warning")
            r = gen("--dev-dir", dev, "--lib", lib, "--mandatory",
                    "--client-conf", cconf, "--socket", "/srv/vs/s.sock")
            check(r.returncode == 2 and r.stdout == "" and
                  "is not the socket" in r.stderr,
                  "--mandatory: a --socket other than client.conf's")
        os.chmod(cconf, 0o664)
        r = gen("--dev-dir", dev, "--lib", lib, "--mandatory",
                "--client-conf", cconf)
        check(r.returncode == 2 and r.stdout == "" and
              "root owns" in r.stderr,
              "--mandatory: a client.conf others may write")
        r = gen("--dev-dir", dev, "--lib", lib, "--mandatory",
                "--client-conf", sess.path("none.conf"))
        check(r.returncode == 2 and "not there" in r.stderr,
              "--mandatory: no client.conf")
        os.chmod(cconf, 0o644)
        r = gen("--dev-dir", dev, "--lib", lib, "--client-conf", cconf)
        check("/etc/ld.so.preload" not in r.stdout,
              "no preload list without --mandatory")
        r = gen("--dev-dir", dev, "--mandatory", "--client-conf", "rel")
        check(r.returncode == 2 and "absolute" in r.stderr,
              "--client-conf takes an absolute path")

        out = sess.path("cdi", "vshare.json")
        os.makedirs(os.path.dirname(out))
        r = gen("--dev-dir", dev, "--lib", lib, "-o", out, "--kind",
                "example.com/gpu", "--socket", "/srv/vs/sched.sock")
        spec = json.load(open(out))
        check(r.returncode == 0 and r.stdout == "" and
              os.listdir(os.path.dirname(out)) == ["vshare.json"] and
              stat.S_IMODE(os.stat(out).st_mode) == 0o644,
              "-o writes the file alone (no temporary left), mode 0644")
        check(spec["kind"] == "example.com/gpu" and "/srv/vs" in
              [m["containerPath"] for m in spec["containerEdits"]["mounts"]],
              "--kind and --socket")

        r = gen("--dev-dir", dev, "--lib", sess.path("missing.so"))
        check(r.returncode == 0 and "warning" in r.stderr,
              "a shim not there yet: a warning, the spec still written")
        for args in (["--kind", "nokind"], ["--kind", "a/b/c"],
                     ["--lib", "relative.so"], ["--env", "NOVALUE"],
                     ["--env", "1X=2"], ["--bogus"], ["extra"]):
            r = gen("--dev-dir", dev, "--lib", lib, *args)
            check(r.returncode == 2 and r.stdout == "",
                  "refused with exit 2: %s" % " ".join(args))
        os.makedirs(sess.path("empty"))
        r = gen("--dev-dir", sess.path("empty"), "--lib", lib)
        check(r.returncode == 1 and "no GPU device nodes" in r.stderr,
              "no GPU: exit 1 with the reason")


if __name__ == "__main__":
    main()
