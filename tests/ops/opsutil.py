"""Shared helpers of the operations tests: where the build is, which parts
of vshare it has, and a scheduler on a temporary socket."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "sched"))
from schedtest import Daemon, short_tmpdir  # noqa: E402,F401

BUILD = os.environ.get("VSHARE_BUILD_DIR", "")
SOURCE = os.environ.get("VSHARE_SOURCE_DIR", "")
BIN = os.path.join(BUILD, "bin")
LIB = os.path.join(BUILD, "lib")
SHIM = os.path.join(LIB, "libvshare.so")
TESTDRIVER_DIR = os.path.join(LIB, "testdriver")
VSHARE_RUN = os.path.join(BIN, "vshare-run")
SCHEDULER = os.path.join(BIN, "vshare-scheduler")
VSHARECTL = os.path.join(BIN, "vsharectl")
SAN_PRELOAD = os.environ.get("VSHARE_SAN_PRELOAD", "")
# Parts the build defines (from CMake): a test that needs a part the build
# has must fail without it, not skip.
PARTS = set(os.environ.get("VSHARE_PARTS", "").split(","))


def need(*parts):
    """Skip unless the build defines every part named."""
    missing = [p for p in parts if p not in PARTS]
    if missing:
        raise unittest.SkipTest("not in this build: " + ", ".join(missing))


def base_env(**extra):
    """A clean environment for a child: no LD_PRELOAD, VSHARE_* or
    framework variables from the caller, the sanitizer runtime first when
    the build is sanitized."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VSHARE_", "XLA_", "PYTORCH_", "TF_"))
           and k != "LD_PRELOAD"}
    if SAN_PRELOAD:
        env["LD_PRELOAD"] = SAN_PRELOAD
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    env.update(extra)
    return env


def run(argv, env=None, timeout=30, **kw):
    return subprocess.run(argv, env=env if env is not None else base_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, **kw)


def parse_env_lines(text):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return out


def Scheduler(tmpdir, config=None, binary=SCHEDULER, ctl=VSHARECTL):
    """vshare-scheduler on tmpdir/scheduler.sock, started: the tests'
    Daemon (tests/sched/schedtest.py), with a clean environment. config:
    a file to use; by default an empty one, so that a system-wide
    /etc/vshare/scheduler.json cannot change a test. stop() it."""
    if config is None:
        config = os.path.join(tmpdir, "scheduler-empty.json")
        with open(config, "w") as f:
            f.write("{}\n")
    return Daemon(BIN, config, dir=tmpdir, binary=binary, ctl=ctl,
                  sock=os.path.join(tmpdir, "scheduler.sock"),
                  env=base_env())


def pids_in(doc):
    """Every integer under a key named pid anywhere in a JSON document."""
    found = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "pid" and isinstance(v, int):
                found.add(v)
            else:
                found |= pids_in(v)
    elif isinstance(doc, list):
        for v in doc:
            found |= pids_in(v)
    return found


def main():
    if not BUILD or not os.path.isdir(BIN):
        sys.exit("VSHARE_BUILD_DIR must name a build directory")
    prog = unittest.main(verbosity=2, exit=False)
    res = prog.result
    if not res.wasSuccessful():
        sys.exit(1)
    # Every case skipped: tell ctest (SKIP_RETURN_CODE) rather than pass.
    if res.testsRun and len(res.skipped) == res.testsRun:
        sys.exit(77)
    sys.exit(0)
