#!/usr/bin/env python3
"""What an unprivileged user (through setpriv) can make the daemon write
to its log, and what it can take of the GPU table: refusals logged once
per connection, lines per connection and per uid limited, labels
escaped, and GPUs the configuration names never locked out by made-up
ones.

Usage: sched_hostile_log.py BINDIR SCENARIO (needs root to switch users;
skips with 77 otherwise)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedtest import Daemon, check, main, scenarios, wait_for  # noqa: E402
from sched_hostile import OPEN, Peer, guarded, victim  # noqa: E402

# What an attack may leave in the log: the start-up lines, the few lines
# the limits let through (a burst, then one a second per uid) and their
# counts. Without the limits each attack writes thousands.
MAX_LINES = 100
REAL = "GPU-5b2c0a8e-1d3f-4c71-9a0e-3f6d2b1c9e77"


def peer(d, *args, uid="65534"):
    p = Peer(d, *args, uid=uid)
    return p, p.result


def stopped_log(d):
    """The whole log once the daemon has stopped (it tells what it did
    not log at shutdown), checked as Daemon's exit would."""
    rc = d.stop()
    log = d.logtext()
    check(rc == 0 and "Sanitizer" not in log and "runtime error" not in log,
          "daemon exit status %s at shutdown:\n%s" % (rc, log[-3000:]))
    return log


def check_lines(log, what):
    n = len(log.splitlines())
    print("%s: %d log lines" % (what, n))
    check(n < MAX_LINES, "%s wrote %d log lines:\n%s" %
          (what, n, "\n".join(log.splitlines()[:40])))


def refusals(d, reason):
    m = re.search(r'vshare_refusals_total\{reason="%s"\} (\d+)' % reason,
                  d.ctl("metrics")[1])
    return int(m.group(1)) if m else -1


def t_log_settq(b):
    """20000 SET_TQ of a non-admin on one connection: each is refused and
    counted, the refusal is logged once, the log stays under 100 lines."""
    with Daemon(b, OPEN) as d:
        p, r = peer(d, "settq", 20000)
        check(r["replies"] == {"-1": 20000}, "replies %r" % r)
        wait_for(lambda: refusals(d, "not_admin") == 20000, 5,
                 "the refusals counted")
        p.stop()
        log = stopped_log(d)
        check(log.count("not an admin") == 1,
              "refusal logged %d times" % log.count("not an admin"))
        check_lines(log, "settq")


def t_log_reconnect(b):
    """2000 connections of a non-admin one after the other, each
    registering, sending a SET_TQ and leaving: under 100 log lines, and a
    line says how many were not logged."""
    with Daemon(b, OPEN) as d:
        p, r = peer(d, "hellos", 2000)
        check(r == {"welcomed": 2000, "refused": 2000}, "answers %r" % r)
        wait_for(lambda: refusals(d, "not_admin") == 2000, 5,
                 "the refusals counted")
        p.stop()
        log = stopped_log(d)
        check_lines(log, "reconnect")
        told = [int(n) for n in re.findall(
            r"uid 65534: (\d+) lines about its connections were not "
            r"logged", log)]
        logged = len(re.findall(r'"looper" registered|"looper" \(pid|'
                                r"not an admin", log))
        check(told and sum(told) + logged == 3 * 2000,
              "told %r, logged %d of 6000 lines" % (told, logged))


def t_log_label(b):
    """A label with a double quote and a zero-width space is escaped in
    the log, where it would otherwise pass for more of the line."""
    lab = b'x" uid 0 \xe2\x80\x8bz'
    with Daemon(b, OPEN) as d:
        p, r = peer(d, "label", lab.hex())
        check(r["errors"] == [], "refused: %r" % r)
        p.stop()
        wait_for(lambda: "left" in d.logtext(), 5, "the client leaving")
        with open(d.log, "rb") as f:
            log = f.read()
        shown = b'"x\\" uid 0 \\u200bz"'
        check(shown + b" registered" in log and shown + b" (pid" in log,
              "label not escaped:\n%s" % log.decode(errors="replace"))
        check(b"\xe2\x80\x8b" not in log and b'"x" uid' not in log,
              "the label as it is reached the log")


def t_gpu_table_named(b):
    """16 uids attach 64 made-up GPUs each, filling the GPU table: a
    1025th made-up GPU is refused, but a GPU the configuration names
    attaches and is scheduled."""
    cfg = dict(OPEN, gpus={REAL: {"mode": "on"}})
    with Daemon(b, cfg) as d:
        peers = [Peer(d, "tagged", 64, i, uid=str(60001 + i), wait=False)
                 for i in range(16)]
        for p in peers:
            check(p.read()["refused"] == 0, "a made-up GPU refused")
        wait_for(lambda: len(d.status()["gpus"]) == 1024, 20,
                 "1024 GPU records")
        rc, out = victim(d, "--uuid", "GPU-eeff0000-0000-0000-0000-"
                         "000000000000", "--hold-ms", 10, "--timeout-ms",
                         3000, timeout=30)
        check(rc == 4 and "GPU table full" in out,
              "a made-up GPU beyond the table: rc %d %s" % (rc, out))
        rc, out = victim(d, "--uuid", REAL, "--hold-ms", 10, "--cycles", 3,
                         timeout=30)
        check(rc == 0, "the configured GPU refused: rc %d %s" % (rc, out))
        check(any(g["uuid"] == REAL for g in d.status()["gpus"]),
              "the configured GPU has no record")
        for p in peers:
            p.stop()


if __name__ == "__main__":
    sys.exit(main({k: guarded(v) for k, v in scenarios(globals()).items()}))
