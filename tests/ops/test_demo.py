#!/usr/bin/env python3
"""scripts/demo's core, on the CUDA test driver: the three rounds behave
as their mode promises (round 3 with the interactive class), the output
says which driver it used, and nothing is left behind (scheduler,
programs, temporary directory)."""

import glob
import os
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


if __name__ == "__main__":
    main()
