#!/usr/bin/env python3
"""debian/: a real Maintainer (the same in the changelog), and the README
names every package a build writes, the debug symbol packages of the
architecture-dependent ones included. Reads the files only."""

import os
import re
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

    def test_readme_names_every_package(self):
        names = []
        for p in self.control[1:]:
            names.append(p["Package"])
            if p.get("Architecture", "all") != "all":
                names.append(p["Package"] + "-dbgsym")
        self.assertEqual(len(names), 7, names)
        readme = read("README.md")
        for n in names:
            self.assertIn("`%s`" % n, readme, n + " is not in the README")


if __name__ == "__main__":
    main()
