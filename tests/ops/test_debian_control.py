#!/usr/bin/env python3
"""debian/: a real Maintainer (the same in the changelog), the README
and the changelog's entry name every package a build writes, the debug
symbol packages of the architecture-dependent ones included, and the
program the scheduler's unit runs to reload comes from a package vshare
depends on. Reads the files, and asks dpkg which package has a path."""

import os
import re
import shutil
import subprocess
import unittest

from opsutil import SOURCE, main


def read(*path):
    with open(os.path.join(SOURCE, *path), encoding="utf-8") as f:
        return f.read()


def stanzas(control):
    """debian/control's paragraphs as {field: value} (first lines only)."""
    out = []
    for para in control.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+):[ \t]*(.*)$", para, re.M))
        if fields:
            out.append(fields)
    return out


class Control(unittest.TestCase):
    def setUp(self):
        self.control = stanzas(read("debian", "control"))

    def test_maintainer_is_real(self):
        m = self.control[0]["Maintainer"]
        self.assertRegex(m, r"^[^<>]+ <[^@<>\s]+@[^@<>\s]+\.[a-z]+>$")
        # example.* domains (RFC 2606) and noreply addresses reach nobody.
        self.assertNotRegex(m, r"(?i)example|noreply|placeholder|seed")
        first = read("debian", "changelog").split("\n -- ", 1)[1]
        self.assertTrue(first.startswith(m + "  "),
                        "the changelog's entry is by someone else: " + first)

    def packages(self):
        names = []
        for p in self.control[1:]:
            names.append(p["Package"])
            if p.get("Architecture", "all") != "all":
                names.append(p["Package"] + "-dbgsym")
        self.assertEqual(len(names), 7, names)
        return names

    def test_readme_names_every_package(self):
        readme = read("README.md")
        for n in self.packages():
            self.assertIn("`%s`" % n, readme, n + " is not in the README")

    def test_changelog_names_every_package(self):
        entry = read("debian", "changelog").split("\n -- ", 1)[0]
        for n in self.packages():
            self.assertRegex(entry, r"(?<![\w-])%s(?![\w-])" % re.escape(n),
                             n + " is not in the changelog's entry")

    def test_reload_program_is_depended_on(self):
        unit = read("packaging", "systemd", "vshare-scheduler.service.in")
        m = re.search(r"^ExecReload=[-@:+!]*(\S+)", unit, re.M)
        self.assertIsNotNone(m, "no ExecReload=")
        prog = m.group(1)
        if not prog.startswith("/") or prog.startswith("@"):
            return  # the package's own program, or a path systemd finds
        if shutil.which("dpkg") is None:
            raise unittest.SkipTest("no dpkg to ask which package has " +
                                    prog)
        r = subprocess.run(["dpkg", "-S", prog], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, prog + ": " + r.stderr)
        pkg = r.stdout.split(":", 1)[0].strip()
        ess = subprocess.run(["dpkg-query", "-W", "-f=${Essential}", pkg],
                             capture_output=True, text=True).stdout
        deps = re.split(r"[,|]\s*", next(p for p in self.control[1:]
                                         if p["Package"] == "vshare")
                        ["Depends"])
        self.assertTrue(ess == "yes" or pkg in
                        [d.split()[0] for d in deps if d],
                        "%s (ExecReload=) is in %s, which vshare does not "
                        "depend on" % (prog, pkg))


if __name__ == "__main__":
    main()
