#!/usr/bin/env python3
"""cmake --install into a scratch DESTDIR: the GNUInstallDirs layout, an
installed vshare-run that finds the installed shim, and a reinstall that
keeps an edited config."""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

from opsutil import (BIN, BUILD, PARTS, SOURCE, TESTDRIVER_DIR, Scheduler,
                     base_env, main, need, run)

E = os.environ
BINDIR = E["VSHARE_INSTALL_BINDIR"]
SCHED_DIR = E["VSHARE_INSTALL_SCHEDULER_DIR"]
PKGLIBDIR = E["VSHARE_INSTALL_PKGLIBDIR"]
SYSCONFDIR = E["VSHARE_INSTALL_SYSCONFDIR"]
DATADIR = E["VSHARE_INSTALL_DATADIR"]
UNITDIR = E["VSHARE_SYSTEMD_UNITDIR"]
TMPFILESDIR = E["VSHARE_TMPFILESDIR"]
SYSUSERSDIR = E["VSHARE_SYSUSERSDIR"]
DOCDIR = E["VSHARE_INSTALL_DOCDIR"]
MANDIR = E["VSHARE_INSTALL_MANDIR"]
MAN_BUILT = E.get("VSHARE_MAN_BUILT") == "1"
COMPLETIONDIR = E["VSHARE_BASH_COMPLETIONDIR"]
# Every command installed, and the manual page of each.
MAN_PAGES = {"vshare-scheduler": "man8/vshare-scheduler.8",
             "vsharectl": "man1/vsharectl.1",
             "vshare-run": "man1/vshare-run.1",
             "vshare-kernel": "man1/vshare-kernel.1",
             "vshare-device-plugin": "man8/vshare-device-plugin.8",
             "vshare-dra-driver": "man8/vshare-dra-driver.8"}
OTHER_PAGES = ["man5/vshare-scheduler.json.5", "man7/libvshare.7"]
HAVE_CONFIG = os.path.exists(os.path.join(SOURCE, "packaging", "scheduler.json"))


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dest = cls.tmp.name
        cls.install()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def install(cls):
        r = subprocess.run([E["VSHARE_CMAKE"], "--install", BUILD],
                           env=dict(os.environ, DESTDIR=cls.dest),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError("cmake --install failed:\n" + r.stdout)
        return r.stdout

    def p(self, *parts):
        return self.dest + os.path.join(*parts)

    def assert_file(self, path, executable=False):
        self.assertTrue(os.path.isfile(self.p(path)), "missing " + path)
        if executable:
            self.assertTrue(os.access(self.p(path), os.X_OK),
                            path + " not executable")

    def test_always_installed(self):
        self.assert_file(os.path.join(BINDIR, "vshare-run"), executable=True)
        self.assert_file(os.path.join(BINDIR, "vshare-kernel"), executable=True)
        # Debian's python3 with its jupyter_client, whatever python3 comes
        # first on PATH (pyenv, conda).
        with open(self.p(BINDIR, "vshare-kernel")) as f:
            self.assertEqual(f.readline(), "#!/usr/bin/python3\n")
        self.assert_file(os.path.join(UNITDIR, "vshare-scheduler.service"))
        self.assert_file(os.path.join(TMPFILESDIR, "vshare.conf"))
        self.assert_file(os.path.join(SYSUSERSDIR, "vshare.conf"))

    def test_parts_installed(self):
        if "sched" in PARTS:
            # A daemon, with its page in section 8: sbin, not bin.
            self.assertEqual(os.path.basename(SCHED_DIR), "sbin")
            self.assert_file(os.path.join(SCHED_DIR, "vshare-scheduler"), True)
            self.assertFalse(os.path.exists(self.p(BINDIR, "vshare-scheduler")))
        if "ctl" in PARTS:
            self.assert_file(os.path.join(BINDIR, "vsharectl"), True)
        if "shim" in PARTS:
            self.assert_file(os.path.join(PKGLIBDIR, "libvshare.so"))
        if HAVE_CONFIG:
            self.assert_file(os.path.join(SYSCONFDIR, "vshare", "scheduler.json"))
            self.assert_file(os.path.join(DATADIR, "vshare", "scheduler.json"))
            # /etc gets only what differs from the defaults (nothing),
            # share/ the example with every key.
            for rel, src in (((SYSCONFDIR, "vshare", "scheduler.json"),
                              "scheduler-etc.json"),
                             ((DATADIR, "vshare", "scheduler.json"),
                              "scheduler.json")):
                with open(self.p(*rel)) as a, open(os.path.join(
                        SOURCE, "packaging", src)) as b:
                    self.assertEqual(a.read(), b.read(), os.path.join(*rel))
            with open(self.p(SYSCONFDIR, "vshare", "scheduler.json")) as f:
                self.assertEqual(f.read().strip(), "{}")
        # The monitoring examples (docs/operations.md, "Metrics").
        for rel in ("systemd/metrics-network.conf",
                    "monitoring/vshare-alerts.yml",
                    "monitoring/vshare-grafana.json"):
            self.assert_file(os.path.join(DATADIR, "vshare", rel))

    def test_readme_lists_what_is_installed(self):
        """The README's list of what `cmake --install` writes (its
        "This installs" block) has a line for every file installed, and
        every line of it matches a file, but for the parts this build
        leaves out (its conditions in parentheses)."""
        with open(os.path.join(SOURCE, "README.md")) as f:
            readme = f.read()
        block = re.search(r"This installs (?s:.*?)\n\n((?:    [^\n]*\n)+)",
                          readme).group(1)
        pats = []
        for line in block.splitlines():
            for word in re.sub(r"\([^)]*\)", " ", line).split():
                rx = re.escape(word.lstrip("/"))
                rx = rx.replace(r"\.\.\.", ".+").replace(r"\*", "[^/]*")
                rx = rx.replace("LIBDIR", "lib(/[^/]+)?")
                rx = re.sub(r"\\\{(.*?)\\\}",
                            lambda m: "(%s)" % m.group(1).replace(",", "|"),
                            rx)
                pats.append((word, re.compile("(^|/)" + rx + "$"),
                             "(when" in line))
        files = [os.path.join(d, f)[len(self.dest):]
                 for d, _, fs in os.walk(self.dest) for f in fs]
        for f in files:
            self.assertTrue(any(p.search(f) for _, p, _ in pats),
                            f + " is installed, not in the README's list")
        for word, p, conditional in pats:
            if not conditional:
                self.assertTrue(any(p.search(f) for f in files),
                                word + " is in the README's list, not "
                                "installed")

    def test_docs_installed_with_working_links(self):
        """README and every page of docs/, in the source layout, so that
        the README's links work in the installed DOCDIR."""
        self.assert_file(os.path.join(DOCDIR, "README.md"))
        for n in os.listdir(os.path.join(SOURCE, "docs")):
            if n.endswith(".md"):
                self.assert_file(os.path.join(DOCDIR, "docs", n))
        r = run([sys.executable, os.path.join(SOURCE, "tests", "ops",
                                              "check_doc_links.py"),
                 self.p(DOCDIR)])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_man_pages(self):
        if not MAN_BUILT:
            self.skipTest("scdoc not found: no manual pages in this build")
        installed = set(os.listdir(self.p(BINDIR)))
        if os.path.isdir(self.p(SCHED_DIR)):
            installed |= set(os.listdir(self.p(SCHED_DIR)))
        for cmd in sorted(installed):
            self.assertIn(cmd, MAN_PAGES, "no manual page for " + cmd)
        for page in [MAN_PAGES[c] for c in installed] + OTHER_PAGES:
            self.assert_file(os.path.join(MANDIR, page))
            with open(self.p(MANDIR, page)) as f:
                text = f.read()
            self.assertIn(".TH", text)
            self.assertIsNone(re.search(r"@[A-Z_]+@", text), page)

    def test_libvshare_page_names_every_variable(self):
        """libvshare(7) describes every VSHARE_* variable the shim reads:
        the rows of its settings table (ops.doc_settings checks the
        defaults and ranges against the built table)."""
        with open(os.path.join(SOURCE, "src", "libvshare", "util",
                               "shim_settings.def")) as f:
            names = {"VSHARE_" + n for n in
                     re.findall(r"^S\((\w+),", f.read(), re.M)}
        self.assertGreater(len(names), 10, sorted(names))
        with open(os.path.join(SOURCE, "man", "libvshare.7.scd")) as f:
            page = f.read()
        for name in sorted(names):
            self.assertIn("*%s*" % name, page, name + " not in libvshare(7)")

    def test_bash_completion(self):
        for cmd in ("vsharectl", "vshare-run"):
            self.assert_file(os.path.join(COMPLETIONDIR, cmd))

    def test_unit_runs_installed_daemon(self):
        with open(self.p(UNITDIR, "vshare-scheduler.service")) as f:
            text = f.read()
        m = re.search(r"^ExecStart=(\S+) --config (\S+)$", text, re.M)
        self.assertIsNotNone(m)
        self.assertEqual(m.group(1), os.path.join(SCHED_DIR, "vshare-scheduler"))
        self.assertEqual(m.group(2),
                         os.path.join(SYSCONFDIR, "vshare", "scheduler.json"))
        self.assertIsNone(re.search(r"@[A-Z_]+@", text), "unsubstituted variable")

    def test_installed_vshare_run_finds_installed_shim(self):
        # The installed copy must find the shim relative to itself: here
        # under DESTDIR, not at the final path and not in the build tree.
        shim = self.p(PKGLIBDIR, "libvshare.so")
        if "shim" not in PARTS:
            os.makedirs(os.path.dirname(shim), exist_ok=True)
            open(shim, "w").close()
        # --print-env loads nothing: no sanitizer runtime needed.
        env = base_env()
        env.pop("LD_PRELOAD", None)
        r = run([self.p(BINDIR, "vshare-run"), "--print-env"], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("LD_PRELOAD=%s\n" % os.path.realpath(shim), r.stdout)
        # Moved away from its shim, it falls back to the configured path.
        os.rename(shim, shim + ".moved")
        try:
            r = run([self.p(BINDIR, "vshare-run"), "--print-env"], env=env)
            self.assertIn("LD_PRELOAD=%s\n" % os.path.join(PKGLIBDIR, "libvshare.so"),
                          r.stdout)
        finally:
            os.rename(shim + ".moved", shim)

    def test_installed_tree_works(self):
        """The installed daemon (with the installed config), vsharectl,
        vshare-run and shim together: a program registers."""
        need("sched", "ctl", "shim", "driver")
        config = self.p(SYSCONFDIR, "vshare", "scheduler.json")
        with tempfile.TemporaryDirectory() as tmp:
            sched = Scheduler(tmp, config=config if HAVE_CONFIG else None,
                              binary=self.p(SCHED_DIR, "vshare-scheduler"),
                              ctl=self.p(BINDIR, "vsharectl"))
            try:
                env = base_env(LD_LIBRARY_PATH=TESTDRIVER_DIR)
                prog = subprocess.Popen(
                    [self.p(BINDIR, "vshare-run"), "--socket", sched.sock,
                     "--label", "installed", "--", os.path.join(BIN, "vs-compute"),
                     "--seconds", "3", "--kernel-ms", "10", "--mem", "1M",
                     "--progress-ms", "0"], env=env,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                seen = None
                deadline = time.monotonic() + 10
                while seen is None and time.monotonic() < deadline:
                    for c in sched.status().get("clients", []):
                        if c.get("label") == "installed":
                            seen = c
                    time.sleep(0.1)
                out = prog.communicate(timeout=20)[0]
                self.assertEqual(prog.returncode, 0, out)
                self.assertIsNotNone(seen, "the program never registered")
                self.assertEqual(seen["pid"], prog.pid)
            finally:
                sched.stop()

    def test_reinstall_keeps_edited_config(self):
        if not HAVE_CONFIG:
            self.skipTest("no packaging/scheduler.json in this tree")
        conf = self.p(SYSCONFDIR, "vshare", "scheduler.json")
        with open(conf, "a") as f:
            f.write("\n")
        with open(conf) as f:
            edited = f.read()
        out = self.install()
        self.assertIn("Keeping", out)
        with open(conf) as f:
            self.assertEqual(f.read(), edited)


class InstallPrefix(unittest.TestCase):
    def test_prefix_holds_everything(self):
        """`cmake --install --prefix P` puts every file under P (under a
        DESTDIR here, so that a failure writes nothing outside it)."""
        rel_etc = E["VSHARE_INSTALL_REL_SYSCONFDIR"]
        if os.path.isabs(rel_etc):
            self.skipTest("sysconfdir configured as an absolute path")
        prefix = "/opt/vshare-prefix-test"
        with tempfile.TemporaryDirectory() as dest:
            r = subprocess.run([E["VSHARE_CMAKE"], "--install", BUILD,
                                "--prefix", prefix],
                               env=dict(os.environ, DESTDIR=dest),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout)
            files = []
            for d, _, names in os.walk(dest):
                files += [os.path.join(d, n)[len(dest):] for n in names]
            outside = [f for f in files if not f.startswith(prefix + "/")]
            self.assertEqual(outside, [], "installed outside the prefix")
            for f in ("lib/systemd/system/vshare-scheduler.service",
                      "lib/tmpfiles.d/vshare.conf",
                      "lib/sysusers.d/vshare.conf", "bin/vshare-run"):
                self.assertIn(os.path.join(prefix, f), files)
            etc_conf = os.path.join(prefix, rel_etc, "vshare", "scheduler.json")
            if HAVE_CONFIG:
                self.assertIn(etc_conf, files)
            # The unit runs the daemon and reads the config of this prefix.
            with open(dest + os.path.join(
                    prefix, "lib/systemd/system/vshare-scheduler.service")) as f:
                m = re.search(r"^ExecStart=(\S+) --config (\S+)$", f.read(),
                              re.M)
            self.assertIsNotNone(m)
            if "sched" in PARTS:
                self.assertEqual(m.group(1),
                                 os.path.join(prefix, "sbin/vshare-scheduler"))
            self.assertTrue(m.group(1).startswith(prefix + "/"), m.group(1))
            self.assertIn(m.group(1), files)
            self.assertEqual(m.group(2), etc_conf)
            # The Slurm plugin's plugstack.conf.d snippet loads the
            # plugin of this prefix, optionally.
            if os.path.exists(os.path.join(BUILD, "lib", "slurm",
                                           "vshare_spank.so")):
                snippet = os.path.join(prefix, rel_etc, "slurm",
                                       "plugstack.conf.d", "vshare.conf")
                self.assertIn(snippet, files)
                with open(dest + snippet) as f:
                    lines = [ln for ln in f.read().splitlines()
                             if ln and not ln.startswith("#")]
                self.assertEqual(len(lines), 1, lines)
                kind, path = lines[0].split()
                self.assertEqual(kind, "optional")
                self.assertTrue(path.endswith("/vshare_spank.so"), path)
                self.assertIn(path, files)


if __name__ == "__main__":
    main()
