#!/usr/bin/env python3
"""The CUDA 13 runtime's start-up requests to cuGetProcAddress
(cuda13_procaddr.txt, recorded on a GPU) replayed on the test driver,
without and with the shim: whatever the driver serves, the shim serves
too (its hook or the driver's function), with no error or warning line;
the runtime's requests for the 7000 variants of a primary context's
release and reset get their hooks. Every request whose name the shim
hooks must be one the test driver serves, so that the replay covers each
request the shim could refuse. Then the other side: an allocation variant
older than every hooked one (the 32-bit cuMemAlloc, which the test driver
serves) is refused, with one error line that names the program that
asked.
Usage: procaddr_replay.py REPLAY_PROGRAM LIST HOOKS_DEF SHIM_LIB
(environment from ctest: the shim preloaded, the test driver's path)."""
import os
import re
import subprocess
import sys
import tempfile

prog, listfile, hooks_def, shim = sys.argv[1:5]
fails = []


def replay(path, with_shim):
    env = dict(os.environ, VSHARE_LOG_LEVEL="info")
    if not with_shim:
        env["LD_PRELOAD"] = ":".join(
            p for p in env.get("LD_PRELOAD", "").split(":")
            if p and os.path.realpath(p) != os.path.realpath(shim))
    p = subprocess.run([prog, path], env=env, capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d: %s" % (prog, p.returncode, p.stderr))
    rows = [line.split() for line in p.stdout.splitlines()]
    return rows, p.stderr


def check(cond, what):
    if not cond:
        fails.append(what)


plain, _ = replay(listfile, False)
shimmed, err = replay(listfile, True)
check(len(plain) == len(shimmed) and len(plain) > 400,
      "%d requests without the shim, %d with it" % (len(plain), len(shimmed)))
bad = [l for l in err.splitlines() if "error:" in l or "warn" in l]
check(not bad, "lines of the shim: %s" % bad)

hooked = set(re.findall(r"^H\(\w+, \w+, (\w+),",
                        open(hooks_def).read(), re.M))
served = 0
for a, b in zip(plain, shimmed):
    sym, ver, flags, rc, _st, where = a
    req = "%s(CUDA %s, flags %s)" % (sym, ver, flags)
    if sym in hooked:
        check(rc == "0" and where == "driver",
              "%s: the test driver does not serve it (%s): add it to "
              "tests/driver/td_syms.def" % (req, rc))
    if rc == "0" and where != "-":
        served += 1
        check(b[3] == "0" and b[5] != "-",
              "%s: the driver serves it, the shim answers %s (%s)" %
              (req, b[3], b[5]))
for sym in ("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxReset"):
    got = [b[5] for b in shimmed if b[0] == sym and b[1] == "7000"]
    check(got == ["shim:" + sym],
          "%s(CUDA 7000) answered %s, not its hook" % (sym, got))
print("%d requests replayed, %d served by the test driver, all served "
      "under the shim" % (len(plain), served))

with tempfile.NamedTemporaryFile("w", suffix=".txt") as old:
    old.write("cuMemAlloc 2000 0\ncuMemAlloc 3010 0\n")
    old.flush()
    rows, err = replay(old.name, True)
    check([r[3] for r in rows] == ["500", "500"] and
          all(r[5] == "-" for r in rows),
          "old allocation variants answered %s" % rows)
    lines = [l for l in err.splitlines() if "error:" in l]
    check(len(lines) == 1 and 'cuGetProcAddress("cuMemAlloc", CUDA 2000) '
          "from %s: refused" % os.path.realpath(prog) in lines[0] and
          "from CUDA 3020 on" in lines[0] and "memory limit" in lines[0],
          "the refusal's line: %s" % lines)

for f in fails:
    print("FAIL:", f)
if not fails:
    print("PASS")
sys.exit(1 if fails else 0)
