#!/usr/bin/env python3
"""Hostile-peer benchmark of vshare-scheduler: each flood scenario of the
threat model (docs/scheduler.md) against the real daemon, with a normal
client's REQUEST->GRANT latency (p50/p99) and the daemon's RSS measured
beside the same client without the flood, in the same run.

Not a test: the figures depend on the machine. `--short` shrinks every
scenario and checks only functional outcomes (the probe is still served,
RSS loosely bounded); ctest runs that as sched.bench.flood_short.

Usage: bench/sched/flood.py BINDIR [--short] [--only NAME]
Scenarios: baseline, status (16000 registered clients, 10 connections
sending STATUS back to back), unread (500 connections flooding requests
they never read, of two uids), idle (16384 idle and half-sent
connections of one uid). Flooders run as nobody (setpriv) when root.
"""
import os
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "sched"))
from schedtest import Daemon, Fail  # noqa: E402

from vsproto import T, frame, hello  # noqa: E402
import vsproto  # noqa: E402

T_ATTACH, T_REQUEST, T_RELEASED = T["ATTACH"], T["REQUEST"], T["RELEASED"]
T_GRANT = T["GRANT"]
PROBE_GPU = bytes.fromhex("000000000000000000000000000000aa")


def recv_frame(s):
    f = vsproto.recv_frame(s)
    if f is None:
        raise Fail("probe: daemon closed the connection")
    return f


def probe(path, samples):
    """REQUEST->GRANT of a normal client, in ms: sorted samples."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    s.sendall(hello(b"probe") +
              frame(T_ATTACH, PROBE_GPU + struct.pack("<Q", 16 << 30)))
    recv_frame(s)  # welcome
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        s.sendall(frame(T_REQUEST, PROBE_GPU))
        while True:
            t, _ = recv_frame(s)
            if t == T_GRANT:
                break
        out.append((time.perf_counter() - t0) * 1000)
        s.sendall(frame(T_RELEASED, PROBE_GPU))
        time.sleep(0.001)
    s.close()
    return sorted(out)


def pct(v, p):
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int([l for l in f if l.startswith("VmRSS")][0].split()[1])


def flooder(d, uid, *args):
    """hostile_peer.py, as uid when we are root; waits for its report."""
    prog = [sys.executable, os.path.join(HERE, "..", "..", "tests", "sched",
                                         "hostile_peer.py"), d.sock]
    prog += [str(a) for a in args]
    if os.geteuid() == 0:
        # The peer and the codec beside it, where nobody may read them.
        for name in ("hostile_peer.py", "vsproto.py"):
            pub = os.path.join(d.dir, name)
            src = os.path.join(os.path.dirname(prog[1]), name)
            subprocess.run(["cp", src, pub], check=True)
            os.chmod(pub, 0o755)
        prog[1] = os.path.join(d.dir, "hostile_peer.py")
        prog = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid,
                "--clear-groups"] + prog
    p = subprocess.Popen(prog, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    p.report = p.stdout.readline().strip()
    return p


def stop(p):
    p.stdin.close()
    p.wait(timeout=60)


def registered(path, n):
    """n registered clients (HELLO answered), held open."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.sendall(hello(b"idle-%d" % i))
        socks.append(s)
    for s in socks:
        s.settimeout(30)
        recv_frame(s)
    return socks


def run(bindir, name, short):
    samples = 200 if short else 2000
    cfg = {"socket_mode": "0666", "log_level": "warn", "max_clients": 20000}
    with Daemon(bindir, cfg) as d:
        held, peers = [], []
        if name == "status":
            held = registered(d.sock, 1000 if short else 16000)
            peers = [flooder(d, 65534, "status", 10)]
        elif name == "unread":
            peers = [flooder(d, u, "flood", 50 if short else 250,
                             2000 if short else 24000)
                     for u in (65534, 65533)]
        elif name == "idle":
            n = 2000 if short else 16384
            peers = [flooder(d, 65534, "conns", n // 2, "idle"),
                     flooder(d, 65534, "conns", n // 2, "half")]
        lat = probe(d.sock, samples)
        rss = rss_kib(d.proc.pid)
        for p in peers:
            stop(p)
        for s in held:
            s.close()
        return lat, rss, [p.report for p in peers]


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    bindir, short = args[0], "--short" in args
    names = ["baseline", "status", "unread", "idle"]
    if "--only" in args:
        names = ["baseline", args[args.index("--only") + 1]]
    print("%-9s %9s %9s %9s  %s" % ("scenario", "p50 ms", "p99 ms",
                                    "RSS MiB", "flooders"))
    for name in names:
        try:
            lat, rss, rep = run(bindir, name, short)
        except Fail as e:
            print("%-9s FAIL: %s" % (name, e))
            return 1
        print("%-9s %9.3f %9.3f %9.1f  %s" % (name, pct(lat, 50),
                                              pct(lat, 99), rss / 1024,
                                              " ".join(rep)))
        if short and rss > 256 * 1024:
            print("FAIL: RSS %d KiB" % rss)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
