#!/usr/bin/env python3
"""vshare-run --install-kernel / vshare-kernel install: the kernelspec it
writes (wrapping an existing kernel's argv), where it goes, and errors."""

import json
import os
import sys
import tempfile
import unittest

from opsutil import BIN, VSHARE_RUN, base_env, main, run


class Kernelspec(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        self.prefix = os.path.join(t, "prefix")
        self.env = base_env(
            JUPYTER_PATH=os.path.join(self.prefix, "share", "jupyter"),
            JUPYTER_DATA_DIR=os.path.join(t, "data"),
            JUPYTER_CONFIG_DIR=os.path.join(t, "config"),
            JUPYTER_RUNTIME_DIR=os.path.join(t, "runtime"))
        # Our own preload is not what these cases are about.
        self.env.pop("LD_PRELOAD", None)

    def tearDown(self):
        self.tmp.cleanup()

    def spec(self, *where):
        path = os.path.join(*where, "kernel.json")
        self.assertTrue(os.path.isfile(path), "no " + path)
        with open(path) as f:
            return json.load(f)

    def install(self, *args, expect=0):
        r = run([VSHARE_RUN] + list(args), env=self.env)
        self.assertEqual(r.returncode, expect, r.stdout + r.stderr)
        return r

    def test_prefix_install_wraps_python3(self):
        self.install("--socket", "/tmp/vs.sock", "--mem-limit", "2G",
                     "--install-kernel", "--prefix", self.prefix,
                     "--name", "vs-test", "--display-name", "VS Test")
        kdir = os.path.join(self.prefix, "share", "jupyter", "kernels", "vs-test")
        spec = self.spec(kdir)
        argv = spec["argv"]
        self.assertEqual(argv[0], os.path.realpath(VSHARE_RUN))
        sep = argv.index("--")
        opts, inner = argv[1:sep], argv[sep + 1:]
        self.assertEqual(opts, ["--socket", "/tmp/vs.sock", "--mem-limit", "2G",
                                "--label", "jupyter:vs-test"])
        self.assertIn("ipykernel_launcher", inner)
        self.assertEqual(inner[-1], "{connection_file}")
        self.assertEqual(spec["display_name"], "VS Test")
        self.assertEqual(spec["language"], "python")
        self.assertEqual(spec["metadata"]["vshare"]["wraps"], inner)
        # The wrapped kernel's logos come along.
        logos = [f for f in os.listdir(kdir) if f.startswith("logo")]
        self.assertTrue(logos, "no logo files copied")

    def test_user_install_and_defaults(self):
        r = self.install("--install-kernel", "--user")
        spec = self.spec(self.env["JUPYTER_DATA_DIR"], "kernels", "python3-vshare")
        self.assertIn("python3-vshare", r.stdout)
        self.assertTrue(spec["display_name"].endswith("(vshare)"))
        self.assertIn("--label", spec["argv"])
        # A clean install says what it did and nothing else.
        self.assertEqual(r.stderr, "")

    def test_wrapping_a_vshare_kernel_does_not_nest(self):
        self.install("--install-kernel", "--prefix", self.prefix, "--name", "a")
        self.install("--label", "b-job", "--install-kernel", "--prefix",
                     self.prefix, "--kernel", "a", "--name", "b")
        argv = self.spec(self.prefix, "share", "jupyter", "kernels", "b")["argv"]
        self.assertEqual(sum(os.path.basename(a) == "vshare-run" for a in argv), 1)
        self.assertEqual(argv.count("--"), 1)
        self.assertEqual(argv[1:3], ["--label", "b-job"])

    def test_options_after_separator(self):
        # This python3 has jupyter_client (the one on PATH may not).
        r = run([sys.executable, os.path.join(BIN, "vshare-kernel"), "install",
                 "--prefix", self.prefix, "--name", "c", "--", "--idle-ms", "20"],
                env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        argv = self.spec(self.prefix, "share", "jupyter", "kernels", "c")["argv"]
        self.assertEqual(argv[1:3], ["--idle-ms", "20"])

    def test_errors(self):
        r = self.install("--install-kernel", "--prefix", self.prefix,
                         "--", "--mem-limit", "3X", expect=2)
        self.assertIn("3X", r.stderr)
        r = self.install("--install-kernel", "--prefix", self.prefix,
                         "--kernel", "no-such-kernel", expect=1)
        self.assertIn("no-such-kernel", r.stderr)
        r = self.install("--install-kernel", "--prefix", self.prefix,
                         "--name", "bad name!", expect=1)
        self.assertIn("bad name!", r.stderr)
        self.assertFalse(os.path.exists(
            os.path.join(self.prefix, "share", "jupyter", "kernels", "bad name!")))


if __name__ == "__main__":
    main()
