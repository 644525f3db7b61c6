#!/usr/bin/env python3
"""The test driver exports exactly the functions of td_syms.def: only cu*
names, each a distinct address (so _ptsz/_ptds variants are functions of
their own). Usage: test_exports.py LIBCUDA TD_SYMS_DEF"""
import re
import subprocess
import sys


def main():
    lib, table = sys.argv[1], sys.argv[2]
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    exported = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TtWi":
            exported[f[2]] = f[0]
    bad = [n for n in exported if not n.startswith("cu")]
    assert not bad, "non-cu exports: %s" % bad
    listed = set(re.findall(r"^TD_SYM\(\w+, \d+, \w+, (\w+)\)",
                            open(table).read(), re.M))
    missing = listed - set(exported)
    unlisted = set(exported) - listed
    assert not missing, "in td_syms.def but not exported: %s" % sorted(missing)
    assert not unlisted, "exported but not in td_syms.def: %s" % sorted(unlisted)
    addrs = {}
    for n, a in exported.items():
        assert a not in addrs, "%s and %s share an address" % (n, addrs[a])
        addrs[a] = n
    for n in ("cuLaunchKernel_ptsz", "cuMemcpyHtoD_v2_ptds", "cuMemAlloc_v2",
              "cuGetProcAddress", "cuGetProcAddress_v2"):
        assert n in exported, n
    print("%d exports, all listed, all distinct" % len(exported))


if __name__ == "__main__":
    main()
