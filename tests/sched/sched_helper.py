#!/usr/bin/env python3
"""The tests' own helper that starts the daemon (schedtest.Daemon): what
it leaves behind when the daemon does not start. Every scenario of every
suite starts its scheduler through it, so a leak here would repeat in
each of them.

usage: sched_helper.py BINDIR SCENARIO | --list"""
import glob
import os
import shutil
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedtest import Daemon, Fail, check, main, scenarios  # noqa: E402


def refused(**kw):
    """Daemon(**kw) must raise Fail and leave nothing in the directory it
    makes its own under: a private $TMPDIR, so that the directories of
    tests running beside this one do not count."""
    private = tempfile.mkdtemp(prefix="vsh-", dir="/tmp")
    saved = {k: os.environ.pop(k, None) for k in ("TMPDIR",
                                                   "XDG_RUNTIME_DIR")}
    os.environ["TMPDIR"] = private
    try:
        try:
            d = Daemon(**kw)
        except Fail as e:
            left = os.listdir(private)
            check(not left, "left after a failed start: %s" % left)
            return str(e)
        d.stop()
        d.cleanup()
        raise Fail("the daemon started")
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
        shutil.rmtree(private, ignore_errors=True)


def t_bad_config(b):
    """A configuration the daemon refuses: it exits at start; the helper
    says why and removes its directory."""
    why = refused(bindir=b, config={"mode": "sometimes"})
    check("exited at start" in why and "mode" in why, "reason: %s" % why)


def t_never_answers(b):
    """A program that never answers status requests: the helper gives up
    after its timeout, kills it and removes its directory."""
    tmp = tempfile.mkdtemp(prefix="vshare-helper-")
    try:
        fake = os.path.join(tmp, "mute-scheduler")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho \"$$\" > %s/pid\nexec sleep 60\n" % tmp)
        os.chmod(fake, stat.S_IRWXU)
        why = refused(bindir=b, binary=fake, start_timeout=1)
        check("did not answer" in why, "reason: %s" % why)
        with open(os.path.join(tmp, "pid")) as f:
            pid = int(f.read())
        check(not os.path.exists("/proc/%d" % pid) or
              open("/proc/%d/stat" % pid).read().split()[2] == "Z",
              "the program that never answered still runs")
    finally:
        for p in glob.glob(tmp + "/*"):
            os.unlink(p)
        os.rmdir(tmp)


if __name__ == "__main__":
    sys.exit(main(scenarios(globals())))
