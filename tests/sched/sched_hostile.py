#!/usr/bin/env python3
"""Attacks on the real daemon by an unprivileged user (nobody, through
setpriv) and what another user's program must still get.

Usage: sched_hostile.py BINDIR SCENARIO (needs root to switch users; skips
with 77 otherwise)."""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedtest import Daemon, check, main, scenarios, wait_for  # noqa: E402

GiB = 1 << 30
# Everyone may reach the socket, as everyone in its group may.
OPEN = {"socket_mode": "0666", "mode": "auto"}
VICTIM = "12345"  # a second unprivileged uid


def as_user(uid, argv):
    return ["setpriv", "--reuid=" + uid, "--regid=" + uid,
            "--clear-groups"] + argv


HERE = os.path.dirname(os.path.abspath(__file__))
# What a peer script needs beside it: its own folder may sit where the
# other user cannot enter, so they run from copies in the daemon's
# directory.
PEER_FILES = ("hostile_peer.py", "hostile_lock.py", "sched_lock.py",
              "schedtest.py", "vsproto.py")


class Peer:
    """A peer script of this folder (hostile_peer.py unless script names
    another) run as another user, with args after the daemon's socket. It
    prints one JSON line when it has done its part (the attribute result,
    read here unless wait is False: then read() it); its connections live
    until stop()."""

    def __init__(self, d, *args, uid="65534", script="hostile_peer.py",
                 wait=True):
        pub = os.path.join(d.dir, "pub")
        os.makedirs(pub, mode=0o755, exist_ok=True)
        for name in PEER_FILES:
            dst = os.path.join(pub, name)
            if not os.path.exists(dst):
                shutil.copy(os.path.join(HERE, name), dst)
                os.chmod(dst, 0o755)
        self.p = subprocess.Popen(
            as_user(uid, [sys.executable, os.path.join(pub, script),
                          d.sock] + [str(a) for a in args]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            cwd=pub)
        self.result = self.read() if wait else None

    def read(self):
        """The peer's next JSON line."""
        line = self.p.stdout.readline()
        check(line, "the peer printed nothing")
        return json.loads(line)

    def go(self):
        """A line on the peer's stdin: the signal some attacks wait for."""
        self.p.stdin.write("go\n")
        self.p.stdin.flush()

    def stop(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def victim(d, *args, uid=VICTIM, timeout=20):
    """sched_testclient as another unprivileged uid; (rc, output)."""
    p = subprocess.run(as_user(uid, [d.public_bin("sched_testclient"),
                                     "--socket", d.sock] +
                               [str(a) for a in args]),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout


def summary(out):
    m = re.search(r"summary .*max_holders=(\d+)", out)
    return int(m.group(1)) if m else -1


def side_by_side(d):
    """Two clients of 4 GiB on a 16 GiB GPU hold it together."""
    rc, out = victim(d, "--clients", 2, "--managed", 4 * GiB,
                     "--total-mem", 16 * GiB, "--hold-ms", 300,
                     "--cycles", 2)
    check(rc == 0, "victims failed: " + out)
    return summary(out)


def t_capacity(b):
    """A claim of a 1-byte GPU, whether its sender stays or leaves, does
    not serialize other users' programs that fit together."""
    with Daemon(b, OPEN) as d:
        check(side_by_side(d) == 2, "not side by side before the attack")
        liar = Peer(d, "lie", 1)
        check(liar.result["errors"] == [], "lie refused: %r" % liar.result)
        check(side_by_side(d) == 2, "serialized while the liar is attached")
        liar.stop()
        check(side_by_side(d) == 2, "serialized after the liar left")
        liar = Peer(d, "lie", 1 << 50)  # and a liar upward
        rc, out = victim(d, "--clients", 2, "--managed", 12 * GiB,
                         "--total-mem", 16 * GiB, "--hold-ms", 100)
        check(rc == 0 and summary(out) == 1,
              "co-run beyond the victims' own view: " + out)
        liar.stop()


def t_label_controls(b):
    """A label with what a terminal acts on (a C1 CSI, a bidi override, a
    line separator) reaches neither the log nor vsharectl's output."""
    bad = [b"\xc2\x9b", b"\xe2\x80\xae", b"\xe2\x80\xa8", b"\x1b"]
    with Daemon(b, OPEN) as d:
        # (C0 controls such as ESC cost the peer its connection already.)
        lab = b"x\xc2\x9b" b"2J\xe2\x80\xae" b"y\xe2\x80\xa8" b"z"
        peer = Peer(d, "label", lab.hex())
        check(peer.result["errors"] == [], "refused: %r" % peer.result)
        rc, out, _ = d.ctl("status")
        check(rc == 0 and "x??2J???y???z" in out, "status: %r" % out)
        rc, js, _ = d.ctl("--json", "status")
        with open(d.log, "rb") as f:
            log = f.read()
        for seq in bad:
            check(seq not in out.encode() and seq not in js.encode() and
                  seq not in log, "%r printed" % seq)
        peer.stop()


def t_gpu_table(b):
    """16 connections attaching 64 made-up GPUs each are refused past
    uid_gpus with VS_E_LIMIT naming the GPU; another user's program is
    still attached and scheduled."""
    with Daemon(b, OPEN) as d:
        peer = Peer(d, "fill", 16, 64)
        r = peer.result
        check(r["refused"] == 16 * 64 - 64, "refusals: %r" % r)
        code, detail, msg = r["first"][0]
        check(code == -122 and detail == 64, "refusal %r" % r)
        check(re.match(r"GPU-ee[0-9a-f]{6}-0000-.*: attach refused: "
                       r"uid_gpus \(64\)", msg), "message %r" % msg)
        check(len(d.status()["gpus"]) == 64, "GPU records")
        # Counted under uid_gpus, and the made-up GPUs add series only up
        # to metrics_gpus (16 by default): the rest are only counted.
        wait_for(lambda: all(x in d.ctl("metrics")[1] for x in (
            'vshare_refusals_total{reason="uid_gpus"} 960\n',
            'vshare_refusals_total{reason="gpu_table"} 0\n',
            "vshare_gpus_unverified 48\n")), 5, "the refusals counted")
        made_up = set(re.findall(r'gpu="(GPU-ee[0-9a-f-]+)"',
                                 d.ctl("metrics")[1]))
        check(len(made_up) == 16, "%d made-up GPUs with series" %
              len(made_up))
        rc, out = victim(d, "--hold-ms", 10, "--cycles", 3)
        check(rc == 0, "victim not scheduled: " + out)
        # At most once per connection (15 were refused), fewer where
        # the uid's lines (64 first attaches) used up its log budget.
        n = d.logtext().count("attach refused")
        check(1 <= n <= 15, "a refusal logged %d times by 15 connections"
              % n)
        peer.stop()


def t_conns(b):
    """Idle and half-sent connections of one uid: past uid_conns they are
    refused, and the hello and frame deadlines close the rest; another
    uid registers and is scheduled meanwhile."""
    with Daemon(b, OPEN) as d:
        idle = Peer(d, "conns", 1000, "idle")
        half = Peer(d, "conns", 1000, "half")
        kept = idle.result["kept"] + half.result["kept"]
        check(kept == 256, "kept %d connections of one uid" % kept)
        rc, out = victim(d, "--hold-ms", 10, "--cycles", 3)
        check(rc == 0, "victim not scheduled: " + out)
        # Half a frame: closed after frame_ms (5 s); idle: hello_ms (10 s).
        wait_for(lambda: conns_of(d) <= 1, 15,
                 "deadlines closing the connections")
        idle.stop()
        half.stop()


def conns_of(d):
    """Connections the daemon holds open (its socket fds, less the
    listener)."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % d.proc.pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (d.proc.pid, fd)).startswith(
                    "socket:"):
                n += 1
        except OSError:
            pass
    return n - 1


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int([l for l in f if l.startswith("VmRSS")][0].split()[1])


def t_flood(b):
    """500 connections (of two uids, within uid_conns) that send requests
    and never read: the daemon stops reading them, stays under 64 MiB,
    and serves another uid."""
    with Daemon(b, OPEN) as d:
        peers = [Peer(d, "flood", 250, 24000, uid=u)
                 for u in ("65534", "65533")]
        rss = rss_kib(d.proc.pid)
        print("flood: %r, daemon RSS %d KiB" %
              ([p.result for p in peers], rss))
        check(all(p.result["conns"] == 250 for p in peers), "connections")
        check(rss < 64 * 1024, "daemon RSS %d KiB" % rss)
        rc, out = victim(d, "--hold-ms", 10, "--cycles", 3)
        check(rc == 0, "victim not scheduled: " + out)
        for p in peers:
            p.stop()
        check(d.alive(), "daemon died")


def guarded(fn):
    def run(b):
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            print("needs root and setpriv to run as other users")
            return 77
        return fn(b)
    return run


if __name__ == "__main__":
    sys.exit(main({k: guarded(v) for k, v in scenarios(globals()).items()}))
