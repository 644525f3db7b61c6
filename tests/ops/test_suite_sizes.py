#!/usr/bin/env python3
"""The GPU suite's size parser (gpu/suite_lib.py parse_size, which must
work before any vshare build is known) against vshare's own grammar as
`vsharectl bytes` reads it: the same bytes for every size, and a refusal
with the same words for everything else, over fixed cases and a seeded
set of random strings of the grammar's characters."""
import os
import random
import sys
import unittest

import opsutil
from opsutil import SOURCE, VSHARECTL

sys.path.insert(0, os.path.join(SOURCE, "gpu"))
from suite_lib import parse_size  # noqa: E402

FIXED = ["8G", "1.5G", "8", "4096", "512MiB", "0.5", "1.5B", "1048576",
         "1048575", "2T", "1e3", " 8G", "8G ", "8g", "8GB", "8gib", "8kb",
         "3.999999999999G", "00012G", ".5G", "5.G", "8Gi", "8Bi", "16E",
         "0", "0B", "0.0", "1.2.3G", "16777215T", "16777216T", "B",
         "0x10G", "inf", "1048576.5", "2.5M", "1MB", "1mib", "7i",
         # Texts longer than the 64 bytes vshare's messages quote, and
         # numbers that underflow (strtod's range error) or just do not.
         "1" * 70 + "X", "1" * 70, "0." + "0" * 66 + "1",
         "0." + "0" * 307 + "1G", "0." + "0" * 309 + "1G",
         "0." + "0" * 300 + "1G", "0." + "0" * 400]
ALPHABET = "0123456789..KMGTkmgtiBbxe "


def ctl(text):
    p = opsutil.run([VSHARECTL, "bytes", "--", text])
    if p.returncode == 0:
        return int(p.stdout.strip())
    return p.stderr.strip().removeprefix("vsharectl: ")


def ours(text):
    try:
        return parse_size(text)
    except ValueError as e:
        return str(e)


class SuiteSizes(unittest.TestCase):
    def setUp(self):
        opsutil.need("ctl")

    def check(self, cases):
        for text in cases:
            with self.subTest(text=text):
                self.assertEqual(ours(text), ctl(text))

    def test_fixed(self):
        self.check(FIXED)

    def test_random(self):
        rng = random.Random(12)
        cases = set()
        while len(cases) < 600:
            n = rng.randint(1, 7)
            s = "".join(rng.choice(ALPHABET) for _ in range(n))
            # Most strings of the alphabet are junk: half start as a
            # number does, so the grammar's corners are reached too.
            if rng.random() < 0.5:
                s = str(rng.randint(0, 99999)) + s
            cases.add(s)
        self.check(sorted(cases))


if __name__ == "__main__":
    opsutil.main()
