#!/usr/bin/env python3
"""vshare-run --install-kernel / vshare-kernel install: the kernelspec it
writes (wrapping an existing kernel's argv), where it goes, and errors."""

import json
import os
import shutil
import sys
import tempfile
import unittest

from opsutil import BIN, VSHARE_RUN, VSHARECTL, base_env, main, parse_env_lines, run


def cut(text, size):
    """text cut between characters to at most size bytes of UTF-8, as
    the shim cuts a label (src/common/label.c: vs_label_cut)."""
    data = text.encode()[:size]
    return data.decode(errors="ignore")


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
        # A notebook's kernel asks for the interactive class by default.
        self.assertEqual(opts, ["--socket", "/tmp/vs.sock", "--mem-limit", "2G",
                                "--class", "interactive",
                                "--jupyter-kernel", "vs-test"])
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
        self.assertIn("--jupyter-kernel", spec["argv"])
        # A clean install says what it did and nothing else.
        self.assertEqual(r.stderr, "")

    def test_class(self):
        # The class given wins over the kernel's default, and reaches the
        # environment as VSHARE_CLASS.
        self.install("--class", "batch", "--install-kernel", "--prefix",
                     self.prefix, "--name", "k-batch")
        argv = self.spec(self.prefix, "share", "jupyter", "kernels",
                         "k-batch")["argv"]
        self.assertEqual(argv[1:3], ["--class", "batch"])
        self.assertNotIn("interactive", argv)
        r = run([VSHARE_RUN, "--class", "interactive", "--print-env", "--",
                 "true"], env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(parse_env_lines(r.stdout).get("VSHARE_CLASS"),
                         "interactive")
        self.install("--class", "urgent", "--", "true", expect=2)

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

    def label(self, *args):
        """The label vshare-run gives a command: args are its options,
        then the command after "--"."""
        r = run([VSHARE_RUN] + list(args[:args.index("--")]) +
                ["--print-env"] + list(args[args.index("--"):]),
                env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return parse_env_lines(r.stdout).get("VSHARE_LABEL")

    def test_kernel_labels_tell_notebooks_apart(self):
        # Each kernel of one kernelspec: jupyter, its kernel id's start,
        # the kernelspec's name. The id comes first so that it survives
        # the status table's 16 columns.
        kernel = ["python3", "-m", "ipykernel_launcher", "-f"]
        rt = "/run/user/1000/jupyter/runtime/"
        a = self.label("--jupyter-kernel", "python3-vshare", "--", *kernel,
                       rt + "kernel-1a2b3c4d-0000-4000-8000-000000000001.json")
        b = self.label("--jupyter-kernel", "python3-vshare", "--", *kernel,
                       rt + "kernel-9f8e7d6c-0000-4000-8000-000000000002.json")
        self.assertEqual(a, "jupyter:1a2b3c4d:python3-vshare")
        self.assertEqual(b, "jupyter:9f8e7d6c:python3-vshare")
        self.assertNotEqual(a[:15], b[:15])
        # --f=PATH, as some kernels take it.
        self.assertEqual(self.label("--jupyter-kernel=k", "--", "ipykernel",
                                    "--f=/tmp/kernel-abc.json"),
                         "jupyter:abc:k")
        # A connection file named otherwise: the start of its name.
        self.assertEqual(self.label("--jupyter-kernel", "k", "--", "x", "-f",
                                    "/tmp/tmp40h0ofzr.json"),
                         "jupyter:tmp40h0o:k")
        # No connection file among the arguments: the name alone.
        self.assertEqual(self.label("--jupyter-kernel", "k", "--", "python3"),
                         "jupyter:k")
        # --label wins; a long name is cut to the 63 bytes of a label.
        self.assertEqual(self.label("--label", "mine", "--jupyter-kernel", "k",
                                    "--", "x", rt + "kernel-12345678.json"),
                         "mine")
        long = self.label("--jupyter-kernel", "n" * 80, "--", "x",
                          rt + "kernel-12345678-aaaa.json")
        self.assertEqual(long, "jupyter:12345678:" + "n" * 46)
        self.assertEqual(len(long), 63)
        r = run([VSHARE_RUN, "--jupyter-kernel", "", "--print-env"],
                env=self.env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--jupyter-kernel needs a kernel name", r.stderr)

    def test_kernel_label_cut_between_characters(self):
        """A kernelspec's name in another script is cut between characters:
        vsharectl label composes the label (a cut at byte 63 split a
        two-byte character in half)."""
        rt = "/run/user/1000/jupyter/runtime/kernel-12345678-aaaa.json"
        name = "x" + "\u00e9" * 40           # 81 bytes
        got = self.label("--jupyter-kernel", name, "--", "x", "-f", rt)
        self.assertEqual(got, "jupyter:12345678:x" + "\u00e9" * 22)
        self.assertEqual(len(got.encode()), 62)
        got = self.label("--jupyter-kernel", "\u00e9" * 40, "--", "python3")
        self.assertEqual(got, "jupyter:" + "\u00e9" * 27)
        # The same words from vsharectl itself.
        r = run([VSHARECTL, "label", "--jupyter-kernel", name, "--", "x",
                 "-f", rt], env=self.env)
        self.assertEqual((r.returncode, r.stdout),
                         (0, "jupyter:12345678:x" + "\u00e9" * 22 + "\n"),
                         r.stderr)

    def test_kernel_label_without_vsharectl(self):
        """Without vsharectl beside vshare-run or on PATH, the label has
        the same words, the name whole: the shim cuts it between
        characters to what vsharectl gives (gate.e2e's
        label_cut_between_characters holds the shim's cut)."""
        with tempfile.TemporaryDirectory() as tmp:
            tools = os.path.join(tmp, "tools")
            os.mkdir(tools)
            for t in ("sh", "dirname", "readlink", "grep", "sed", "tr",
                      "cat"):
                os.symlink(shutil.which(t), os.path.join(tools, t))
            alone = os.path.join(tmp, "vshare-run")
            shutil.copy(VSHARE_RUN, alone)
            env = dict(self.env, PATH=tools)
            rt = "/tmp/kernel-9f8e7d6c-0000.json"
            name = "x" + "\u00e9" * 40
            for words in (["x", "-f", rt], ["x", "--f=" + rt],
                          ["x", "-f", "/tmp/tmp40h0ofzr.json"],
                          ["x", "/tmp/a b.json", rt], ["python3"]):
                r = run([alone, "--jupyter-kernel", name, "--print-env",
                         "--"] + words, env=env)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = parse_env_lines(r.stdout)["VSHARE_LABEL"]
                want = self.label("--jupyter-kernel", name, "--", *words)
                self.assertGreater(len(got.encode()), 63)
                self.assertEqual(cut(got, 63), want, words)

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
