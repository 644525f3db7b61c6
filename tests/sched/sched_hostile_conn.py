#!/usr/bin/env python3
"""Attacks on the daemon's accept path and on its socket's set-up, and
what other users' programs must still get: floods of connections by an
unprivileged user (through setpriv), a socket directory that another user
could change, a socket swapped for a link right after its bind.

Usage: sched_hostile_conn.py BINDIR SCENARIO (needs root to switch users
and own files; skips with 77 otherwise)."""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedtest import Daemon, check, main, scenarios, wait_for  # noqa: E402
from sched_hostile import OPEN, VICTIM, Peer, as_user, guarded  # noqa: E402

NEWPROG = "12346"  # a third unprivileged uid: programs that start late


def stop_peer(p):
    """Stop a peer that prints a last line when stdin closes; that line."""
    p.p.stdin.close()
    line = p.p.stdout.readline()
    p.p.wait(timeout=30)
    return json.loads(line) if line else {}


def grant_rtts(d, cycles, timeout_s):
    """Grant round trips (ms) of a client of VICTIM cycling the lock; a
    client that did not finish fails the scenario."""
    cmd = as_user(VICTIM, [d.public_bin("sched_testclient"), "--socket",
                           d.sock, "--hold-ms", "1", "--gap-ms", "2",
                           "--cycles", str(cycles), "--timeout-ms",
                           str(timeout_s * 1000)])
    p = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=timeout_s + 10)
    rtts = sorted(float(m) for m in re.findall(r" grant .*rtt_ms=([0-9.]+)",
                                               p.stdout))
    check(p.returncode == 0 and len(rtts) == cycles,
          "the victim got %d of %d grants within %d s (status %d)" %
          (len(rtts), cycles, timeout_s, p.returncode))
    return rtts


# What a waiting client's grant may take during the flood, at the 99th
# percentile. Unflooded it is well under a millisecond, and the daemon's
# part of it under the flood is one loop turn (SOCK_ACCEPTS_PER_TURN
# accepts) beside the grant; an accept loop that runs until the listen
# queue is empty holds every grant until the flood ends (no grant in
# 20 s). What is left is the CPU: on two cores shared by the flooders,
# the victim and the daemon (and on a test machine, other builds), the
# 99th percentile was 16 to 53 ms with the load average at 4 to 10. The
# bound is generous so as not to fail on a busy machine.
P99_MS = 150.0


def t_connect_flood(b):
    """Two processes of one uid connect and close as fast as they can
    (one blocking in connect, one retrying EAGAIN at once): a waiting
    client of another uid still gets its grants promptly, and programs of
    a third uid that start meanwhile register as the shim connects
    (EAGAIN is a busy scheduler, tried again) instead of running
    unshared."""
    with Daemon(b, OPEN) as d:
        churn = []
        try:
            churn = [Peer(d, "churn", 60, how) for how in
                     ("block", "nonblock")]
            time.sleep(0.5)  # the flood is on
            rtts = grant_rtts(d, 300, 20)
            late = Peer(d, "register", 10, uid=NEWPROG)
            late.stop()
        finally:
            counts = [stop_peer(p) for p in churn]
        p99 = rtts[int(len(rtts) * 0.99) - 1]
        print("flood: %r; victim grants: p50 %.2f ms, p99 %.2f ms, max "
              "%.2f ms; late programs: %r" % (counts, rtts[len(rtts) // 2],
                                              p99, rtts[-1], late.result))
        check(sum(c.get("conns", 0) for c in counts) > 1000,
              "no flood: %r" % counts)
        check(p99 < P99_MS, "grant p99 %.1f ms under the flood" % p99)
        check(late.result["welcomed"] == 10,
              "late programs not registered: %r" % late.result)
        check(d.alive() and d.ctl("status")[0] == 0, "daemon lost")


def metric(d, name):
    m = re.search(r"^%s (\d+)$" % re.escape(name), d.ctl("metrics")[1], re.M)
    return int(m.group(1)) if m else -1


def t_refusal_cooldown(b):
    """A uid at its uid_conns limit that keeps connecting is refused, and
    after a burst of refusals its new connections are closed at once
    (counted, logged once per cool-down); another uid is never cooled
    down and registers and is scheduled meanwhile, and so is root."""
    cooled = 'vshare_refusals_total{reason="cooldown"}'
    with Daemon(b, dict(OPEN, uid_conns=8)) as d:
        hold = Peer(d, "register", 8)  # registered: no hello deadline
        check(hold.result["welcomed"] == 8, "holder: %r" % hold.result)
        churn = Peer(d, "churn", 60, "block")
        try:
            wait_for(lambda: metric(d, cooled) > 1000, 10, "cool-down")
            rc, out = victim_cycles(d)
            check(rc == 0, "another uid not scheduled: " + out)
            check(d.ctl("status")[0] == 0, "root refused")
        finally:
            counts = stop_peer(churn)
            hold.stop()
        refused = metric(d, 'vshare_refusals_total{reason="uid_conns"}')
        lines = d.logtext().count("closed at once for")
        print("churn %r: %d refused, %d closed at once, %d cool-down "
              "lines" % (counts, refused, metric(d, cooled), lines))
        # Each cool-down starts after COOL_BURST (64) refusals and lasts
        # 5 s: a few hundred refusals at most, against thousands closed.
        check(lines >= 1 and refused <= 64 * (lines + 1),
              "%d refusals for %d cool-downs" % (refused, lines))
        # The uid may connect again once it has cooled down.
        time.sleep(5.2)
        again = Peer(d, "register", 1)
        again.stop()
        check(again.result["welcomed"] == 1, "still cooling: %r" %
              again.result)


def victim_cycles(d):
    p = subprocess.run(as_user(VICTIM, [d.public_bin("sched_testclient"),
                                        "--socket", d.sock, "--hold-ms",
                                        "10", "--cycles", "3"]),
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def start_fails(d, env=None):
    """Run the daemon of d (not started) in the foreground: (status,
    stderr); a daemon that starts is stopped, and fails the check."""
    p = d.spawn(env=env, text=True, stderr=subprocess.PIPE)
    try:
        _, err = p.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        p.terminate()
        p.communicate(timeout=10)
        return None, "it started"
    return p.returncode, err


def t_socket_dir(b):
    """A socket directory that another user owns, or that others may
    write without the sticky bit, is refused with a clear error (exit 1),
    since they could swap the socket for a link between its bind and its
    chmod; a sticky directory such as /tmp is fine."""
    cases = [("owned by another user", 0o755, 65534, "belongs to uid 65534"),
             ("writable by everyone", 0o777, 0, "may be written by everyone"),
             ("writable by its group", 0o775, 0,
              "may be written by its group")]
    for what, mode, uid, msg in cases:
        d = Daemon(b, OPEN, start=False)
        try:
            run = os.path.join(d.dir, "run")
            os.mkdir(run)
            os.chown(run, uid, uid)
            os.chmod(run, mode)
            rc, err = start_fails(d)
            check(rc == 1 and "socket directory %s %s" % (run, msg) in err,
                  "a socket directory %s: status %s, %s" % (what, rc, err))
            check(not os.path.exists(d.sock), "socket made")
        finally:
            shutil.rmtree(d.dir, ignore_errors=True)
    with Daemon(b, OPEN, start=False) as d:
        os.mkdir(os.path.join(d.dir, "run"), 0o1777)
        os.chmod(os.path.join(d.dir, "run"), 0o1777)
        d.start()
        check(mode_of(d.sock) == 0o666, "socket mode in a sticky directory")


def t_socket_symlink(b):
    """The socket swapped for a link to another file right after its bind
    (what another user wins in a race where the directory lets them): the
    daemon changes neither the file's mode nor its group, says so and
    exits 1."""
    lib = os.environ.get("VSHARE_SWAP_BIND")
    if not lib:
        print("VSHARE_SWAP_BIND not set")
        return 77
    with Daemon(b, OPEN, start=False) as d:
        secret = os.path.join(d.dir, "secret")
        with open(secret, "w") as f:
            f.write("root only\n")
        os.chmod(secret, 0o600)
        link = os.path.join(d.dir, "link")
        os.symlink(secret, link)
        preload = " ".join(p for p in (os.environ.get("VSHARE_SAN_PRELOAD"),
                                       lib) if p)
        env = dict(os.environ, LD_PRELOAD=preload, VSHARE_SWAP_LINK=link)
        rc, err = start_fails(d, env)
        check(mode_of(secret) == 0o600,
              "the linked file's mode became %04o" % mode_of(secret))
        check(rc == 1 and "not the socket just bound" in err,
              "status %s: %s" % (rc, err))
        # (The link itself goes with the listener: libuv unlinks the
        # path it bound when it closes it.)
        check(not os.path.lexists(link),
              "the link was not swapped in: the test did nothing")


if __name__ == "__main__":
    sys.exit(main({k: guarded(v) for k, v in scenarios(globals()).items()}))
