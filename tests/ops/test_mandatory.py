#!/usr/bin/env python3
"""Mandatory sharing: libvshare.so in /etc/ld.so.preload of a minimal root
with the node's client configuration, entered with chroot. Every CUDA
program is scheduled, even one that clears LD_PRELOAD and points
VSHARE_SOCKET elsewhere; the node's limit and require cannot be lifted
from the environment; programs that never use CUDA (setuid and static
ones included) behave exactly as without the preload and never reach the
scheduler; a client.conf that cannot be trusted binds as the strictest
settings; VSHARE_DISABLE is ignored. (User namespaces cannot be made in a
chroot: unit.shim_node tests the shim's side of them.)

The root holds copies of the host's programs and the libraries ldd names
for them, the test driver as libcuda.so.1, and the scheduler's socket in
its /run/vshare (the scheduler runs outside; a short directory is bound
there). It runs in a mount namespace of its own (unshare -m, private
propagation), so that what it mounts is never in the host's, and goes
with the namespace's last process even when a timeout kills the test;
whatever it mounted is also unmounted at its end, failing or not. Needs
root (chroot, mount, unshare);
exit 77 otherwise, or under a sanitizer (its runtime cannot come first in
ld.so.preload)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import opsutil
from opsutil import BIN, SHIM, TESTDRIVER_DIR

ROOTLIB = "/usr/lib/vshare/libvshare.so"
STATIC_SRC = r"""
#include <stdio.h>
#include <string.h>
int main(void)
{
	char line[512];
	int shim = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		shim |= strstr(line, "libvshare") != NULL;
	printf("static ok, shim %s\n", shim ? "mapped" : "absent");
	return 7;
}
"""


def copy_with_libs(root, path, dest=None):
    """Copy a program (or library) into root, at dest or its own path,
    with every library ldd names for it, at their own paths."""
    dest = dest or path
    os.makedirs(os.path.dirname(root + dest), exist_ok=True)
    shutil.copy2(path, root + dest)
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        parts = line.split()
        lib = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if not lib.startswith("/") or os.path.exists(root + lib):
            continue
        os.makedirs(os.path.dirname(root + lib), exist_ok=True)
        shutil.copy2(os.path.realpath(lib), root + lib)


class Root:
    """The chroot, /proc mounted in it, and the scheduler serving it."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="vshare-mandatory.",
                                    dir=opsutil.BUILD)
        self.root = os.path.join(self.dir, "root")
        # The socket lives in a short directory, bind-mounted on the
        # root's /run/vshare: the root's own path may be too long for a
        # Unix socket when the build directory is deep.
        self.run_dir = opsutil.short_tmpdir("vshare-mandatory-run.")
        os.chmod(self.run_dir, 0o755)
        self.mounted = []
        self.sched = None
        try:
            self.build()
        except BaseException:
            # tearDownClass does not run after a failed setUpClass.
            self.close()
            raise

    def mount(self, argv, target):
        subprocess.run(["mount"] + argv + [target], check=True)
        self.mounted.append(target)

    def build(self):
        r = self.root
        for d in ("etc/vshare", "run/vshare", "proc", "tmp", "usr/bin"):
            os.makedirs(os.path.join(r, d), exist_ok=True)
        os.chmod(os.path.join(r, "tmp"), 0o1777)
        for prog in ("bash", "env", "cat", "id", "true"):
            copy_with_libs(r, shutil.which(prog))
        # A setuid copy: the loader still honours ld.so.preload for it.
        for prog in ("id", "cat"):
            copy_with_libs(r, shutil.which(prog), "/usr/bin/%s-suid" % prog)
            os.chmod(r + "/usr/bin/%s-suid" % prog, 0o4755)
        for ex in ("vs-compute", "vs-vecadd"):
            copy_with_libs(r, os.path.join(BIN, ex), "/usr/bin/" + ex)
        copy_with_libs(r, SHIM, ROOTLIB)
        libc_dir = os.path.dirname(self.libc_path())
        copy_with_libs(r, os.path.join(TESTDRIVER_DIR, "libcuda.so.1"),
                       os.path.join(libc_dir, "libcuda.so.1"))
        src = os.path.join(self.dir, "static.c")
        with open(src, "w") as f:
            f.write(STATIC_SRC)
        subprocess.run(["cc", "-static", "-O1", "-o", r + "/usr/bin/static",
                        src], check=True)
        self.client_conf("")
        self.mount(["--bind", self.run_dir], r + "/run/vshare")
        self.mount(["-t", "proc", "proc"], r + "/proc")
        self.sched = opsutil.Daemon(
            BIN, {"log_level": "debug"}, dir=self.dir,
            sock=self.run_dir + "/scheduler.sock", env=opsutil.base_env())
        self.sched_log = self.sched.log

    def libc_path(self):
        r = subprocess.run(["ldd", shutil.which("true")], capture_output=True,
                           text=True)
        for line in r.stdout.splitlines():
            if "libc.so.6" in line:
                return line.split()[2]
        raise RuntimeError("no libc.so.6 in ldd's output")

    def preload(self, on):
        path = self.root + "/etc/ld.so.preload"
        if on:
            with open(path, "w") as f:
                f.write(ROOTLIB + "\n")
        elif os.path.exists(path):
            os.unlink(path)

    def client_conf(self, text, mode=0o644):
        path = self.root + "/etc/vshare/client.conf"
        with open(path, "w") as f:
            f.write("socket = /run/vshare/scheduler.sock\n" + text)
        os.chmod(path, mode)

    def run(self, *argv, user=None, timeout=20):
        cmd = [shutil.which("chroot", path="/usr/sbin:/sbin:/usr/bin:/bin")]
        if user:
            cmd.append("--userspec=%s" % user)
        env = {"PATH": "/usr/bin:/bin", "VSHARE_TD_MEM": "1G"}
        return subprocess.run(cmd + [self.root] + list(argv), env=env,
                              capture_output=True, text=True,
                              timeout=timeout)

    def registered(self):
        with open(self.sched_log) as f:
            return f.read().count("registered")

    def close(self):
        if self.sched:
            self.sched.stop()
        clean = True
        for target in reversed(self.mounted):
            if subprocess.run(["umount", "-l", target]).returncode != 0:
                clean = False
        # Never remove a tree that may still hold a mounted /proc.
        if clean:
            shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)


class Mandatory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        opsutil.need("sched", "shim", "driver")
        cls.r = Root()

    @classmethod
    def tearDownClass(cls):
        cls.r.close()

    def setUp(self):
        self.r.preload(True)
        self.r.client_conf("")

    def test_mounts_are_private(self):
        """The root's /proc and /run/vshare are mounted in this test's own
        mount namespace only: the namespace it was started in (its
        parent's, ctest's) never sees them."""
        parent = "/proc/%d" % os.getppid()
        self.assertNotEqual(os.readlink("/proc/self/ns/mnt"),
                            os.readlink(parent + "/ns/mnt"))
        with open("/proc/self/mountinfo") as f:
            here = f.read()
        with open(parent + "/mountinfo") as f:
            host = f.read()
        for target in self.r.mounted:
            self.assertIn(" %s " % target, here)
            self.assertNotIn(" %s " % target, host)

    def test_cuda_program_scheduled(self):
        """LD_PRELOAD cleared and VSHARE_SOCKET elsewhere: still
        scheduled, on the node's socket."""
        before = self.r.registered()
        p = self.r.run("env", "-u", "LD_PRELOAD",
                       "VSHARE_SOCKET=/tmp/elsewhere.sock", "vs-vecadd")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("VSHARE_SOCKET is ignored", p.stderr)
        self.assertEqual(self.r.registered(), before + 1,
                         "the scheduler saw the program register")

    def test_socket_default(self):
        """A client.conf without a socket line: VSHARE_SOCKET is ignored
        all the same, and the default socket applies."""
        path = self.r.root + "/etc/vshare/client.conf"
        with open(path, "w") as f:
            f.write("require_scheduler = no\n")
        before = self.r.registered()
        p = self.r.run("env", "VSHARE_SOCKET=/tmp/elsewhere.sock",
                       "vs-vecadd")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("VSHARE_SOCKET is ignored", p.stderr)
        self.assertEqual(self.r.registered(), before + 1)

    def test_non_cuda_unaffected(self):
        """Programs that never use CUDA: the same output and exit status
        with and without the preload, no connection, no thread."""
        cases = [("bash", "-c", "echo out; echo err >&2; exit 3"),
                 ("cat", "/proc/self/status"),
                 ("static",)]
        before = self.r.registered()
        results = {}
        for on in (False, True):
            self.r.preload(on)
            for argv in cases:
                p = self.r.run(*argv)
                # Status lines that differ between any two processes.
                out = "\n".join(line for line in p.stdout.splitlines()
                                if not line.startswith(
                                    ("Pid", "PPid", "Tgid", "Ngid", "NS", "Vm",
                                     "Rss", "voluntary", "nonvoluntary",
                                     "Hugetlb", "Sig", "Name")))
                results.setdefault(argv, []).append((out, p.stderr,
                                                     p.returncode))
        for argv, (off, on) in results.items():
            self.assertEqual(off, on, "%s differs with the preload" % (argv,))
        self.assertEqual(results[("static",)][1][2], 7)
        self.assertIn("shim absent", results[("static",)][1][0])
        self.assertIn("Threads:\t1", results[("cat", "/proc/self/status")][1][0])
        maps = self.r.run("cat", "/proc/self/maps").stdout
        self.assertIn(ROOTLIB, maps, "the shim is loaded into cat")
        self.assertEqual(self.r.registered(), before,
                         "no program without CUDA reached the scheduler")

    def test_setuid_program(self):
        """A setuid program is run with the shim loaded (the loader takes
        ld.so.preload's absolute paths in secure mode too) and works."""
        p = self.r.run("/usr/bin/id-suid", user="65534:65534")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("euid=0", p.stdout)
        self.assertEqual(p.stderr, "")
        # Set-uid root: the maps of its own process are its to read.
        maps = self.r.run("/usr/bin/cat-suid", "/proc/self/maps",
                          user="65534:65534")
        self.assertEqual(maps.returncode, 0, maps.stderr)
        self.assertIn(ROOTLIB, maps.stdout)

    def test_node_limit(self):
        """client.conf's mem_limit: the environment cannot raise it."""
        self.r.client_conf("mem_limit = 32M\n")
        big = self.r.run("env", "VSHARE_MEM_LIMIT=1G", "vs-compute",
                         "--seconds", "0", "--mem", "48M")
        self.assertNotEqual(big.returncode, 0)
        self.assertIn("VSHARE_MEM_LIMIT is above the node's limit",
                      big.stderr)
        self.assertIn("OUT_OF_MEMORY", big.stderr)
        ok = self.r.run("vs-compute", "--seconds", "0", "--mem", "16M")
        self.assertEqual(ok.returncode, 0, ok.stderr)

    def test_untrusted_conf_strict(self):
        """A client.conf others may write binds as the strictest
        settings, with an error: no allocation fits."""
        self.r.client_conf("mem_limit = 32M\n", mode=0o666)
        p = self.r.run("vs-compute", "--seconds", "0", "--mem", "16M")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("every allocation is refused", p.stderr)
        self.assertIn("OUT_OF_MEMORY", p.stderr)

    def test_bad_limit_strict(self):
        """A mem_limit that does not parse refuses allocations rather
        than lifting the limit."""
        self.r.client_conf("mem_limit = 32 megs\n")
        p = self.r.run("vs-compute", "--seconds", "0", "--mem", "16M")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("line 2: mem_limit '32 megs': not a size (like 8G, "
                      "512M or 1.5T; bytes like 4096B); until then every "
                      "allocation is refused", p.stderr)

    def test_disable_ignored(self):
        """VSHARE_DISABLE=1 cannot take a program off the scheduler."""
        before = self.r.registered()
        p = self.r.run("env", "VSHARE_DISABLE=1", "vs-vecadd")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("VSHARE_DISABLE is ignored", p.stderr)
        self.assertEqual(self.r.registered(), before + 1)

    def test_node_require(self):
        """require_scheduler in client.conf: with the scheduler away the
        program waits, whatever the environment says."""
        self.r.client_conf("require_scheduler = yes\n")
        sock = self.r.root + "/run/vshare/scheduler.sock"
        os.rename(sock, sock + ".away")
        try:
            with self.assertRaises(subprocess.TimeoutExpired):
                self.r.run("env", "VSHARE_REQUIRE_SCHEDULER=0", "vs-vecadd",
                           timeout=3)
        finally:
            os.rename(sock + ".away", sock)
        p = self.r.run("env", "VSHARE_REQUIRE_SCHEDULER=0", "vs-vecadd")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("VSHARE_REQUIRE_SCHEDULER=0 is ignored", p.stderr)


def skip_reason():
    if os.geteuid() != 0:
        return "chroot and mount need root"
    if opsutil.SAN_PRELOAD:
        return "a sanitizer runtime cannot be preloaded"
    if shutil.which("cc") is None:
        return "no C compiler for the static program"
    return None


def private_namespace():
    """Run this script again in a mount namespace of its own, once."""
    if os.environ.get("VSHARE_MANDATORY_NS") == "1":
        return
    unshare = shutil.which("unshare", path="/usr/bin:/bin")
    if unshare is None:
        print("FAIL: no unshare (util-linux) for a private mount namespace")
        raise SystemExit(1)
    os.environ["VSHARE_MANDATORY_NS"] = "1"
    os.execv(unshare, [unshare, "--mount", "--propagation", "private",
                       sys.executable, os.path.abspath(__file__)] +
             sys.argv[1:])


if __name__ == "__main__":
    # Told to ctest as a skip (77), not as a pass of no test.
    if skip_reason():
        print("skipped: " + skip_reason())
        raise SystemExit(77)
    private_namespace()
    opsutil.main()
