#!/usr/bin/env python3
"""scripts/demo's core, on the CUDA test driver: the three rounds behave
as their mode promises (round 3 with the interactive class), the output
says which driver it used, and nothing is left behind (scheduler,
programs, temporary directory)."""

import glob
import os
import shutil
import tempfile
import unittest

from opsutil import BUILD, SOURCE, base_env, main, need, run


class Demo(unittest.TestCase):
    def test_demo_on_test_driver(self):
        need("sched", "ctl", "shim", "driver")
        with tempfile.TemporaryDirectory() as tmp:
            r = run([os.path.join(SOURCE, "scripts", "demo"), "--no-setup",
                     "--build-dir", BUILD, "--seconds", "2", "--driver", "test"],
                    env=base_env(TMPDIR=tmp), timeout=60)
            out = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, out)
            self.assertIn("the CUDA test driver", out)
            self.assertIn("yes: they ran side by side", out)
            # Round 2, in its report and in the summary; round 3 (the
            # interactive class, priority at kernel granularity) likewise.
            self.assertEqual(
                out.count("yes: never two programs' kernels at once"), 2, out)
            self.assertEqual(
                out.count("during a burst, and the GPU changed hands"), 2, out)
            self.assertNotIn("NO: the loop started", out)
            self.assertIn("set mode on for all GPUs", out)  # vsharectl enable, in the log
            # Round 3: vs-bursty asked for and got the interactive class.
            self.assertRegex(out, r'"bursty" registered: pid \d+, uid \d+, '
                                  r'protocol \d+, class interactive;')
            self.assertIn("class interactive: interactive budget used", out)
            self.assertEqual(out.count("PASS"), 3, out)
            self.assertEqual(glob.glob(os.path.join(tmp, "vshare-demo.*")), [],
                             "temporary directory left behind")

    def test_bad_arguments(self):
        r = run([os.path.join(SOURCE, "scripts", "demo"), "--no-setup",
                 "--seconds", "0"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--seconds", r.stderr)
        r = run([os.path.join(SOURCE, "scripts", "demo"), "--no-setup",
                 "--build-dir", "/nonexistent"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent", r.stderr)


def fake_tools(d, names, log):
    """Programs named names in d that append their argv to log and exit 0
    (dpkg-query answers that every package asked for is installed)."""
    os.makedirs(d, exist_ok=True)
    for n in names:
        with open(os.path.join(d, n), "w") as f:
            f.write('#!/bin/sh\necho "%s $*" >>%s\n' % (n, log))
            if n == "dpkg-query":
                f.write('shift 2; for p; do echo "$p install ok installed"; '
                        'done\n')
        os.chmod(os.path.join(d, n), 0o755)


SETUP_TOOLS = ("apt-get", "sudo", "dpkg-query", "dpkg-checkbuilddeps",
               "cmake", "ctest")


class Scripts(unittest.TestCase):
    def test_help_runs_nothing(self):
        """scripts/test-all --help and scripts/demo --help print their
        usage and exit 0, and install, build and run nothing."""
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "calls")
            fake_tools(os.path.join(tmp, "bin"), SETUP_TOOLS, log)
            env = base_env(PATH=os.path.join(tmp, "bin") + ":" +
                           os.environ["PATH"])
            for name in ("test-all", "demo"):
                for arg in ("--help", "-h"):
                    r = run([os.path.join(SOURCE, "scripts", name), arg],
                            env=env)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    self.assertIn("Usage: scripts/%s" % name, r.stdout)
                    self.assertEqual(r.stderr, "")
            self.assertFalse(os.path.exists(log), "--help ran: %s" %
                             (open(log).read() if os.path.exists(log) else ""))
            r = run([os.path.join(SOURCE, "scripts", "test-all"), "--bogus"],
                    env=env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--bogus", r.stderr)
            self.assertFalse(os.path.exists(log))

    def test_test_all_configures_every_part(self):
        """test-all configures each build with the Kubernetes device
        plugin on, so that a build/ that scripts/demo configured without
        it (a cached VSHARE_K8S=OFF) gets it and its tests back."""
        with tempfile.TemporaryDirectory() as tmp:
            tree = os.path.join(tmp, "tree")
            os.makedirs(os.path.join(tree, "scripts"))
            os.makedirs(os.path.join(tree, "build", "bin"))
            for n in ("test-all", "install-deps"):
                shutil.copy(os.path.join(SOURCE, "scripts", n),
                            os.path.join(tree, "scripts", n))
            with open(os.path.join(tree, "build", "CMakeCache.txt"), "w") as f:
                f.write("VSHARE_K8S:BOOL=OFF\n")
            log = os.path.join(tmp, "calls")
            fake_tools(os.path.join(tmp, "bin"), SETUP_TOOLS, log)
            fake_tools(os.path.join(tree, "build", "bin"), ("test_sfuzz",),
                       log)
            env = base_env(PATH=os.path.join(tmp, "bin") + ":" +
                           os.environ["PATH"])
            r = run([os.path.join(tree, "scripts", "test-all"),
                     "--no-sanitizers"], env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(log) as f:
                calls = f.read().splitlines()
        configure = [c for c in calls if c.startswith("cmake -S")]
        self.assertEqual(len(configure), 1, calls)
        self.assertIn(" -B build ", configure[0] + " ")
        self.assertIn("-DVSHARE_K8S=ON", configure[0].split())


if __name__ == "__main__":
    main()
