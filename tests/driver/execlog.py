#!/usr/bin/env python3
"""Reads the CUDA test driver's execution log (VSHARE_TD_LOG).

Each line is one finished operation:
    start_ns end_ns pid device stream kind name bytes
with CLOCK_MONOTONIC times; kind is kernel, memcpy, memset, prefetch or
advise. Lines starting with '#' and blank lines are ignored.

Command line (exit 0 when the property holds, 1 when not, 2 on error):
    execlog.py overlaps LOG --pids A B [--kind K] [--device D]
        some operation of pid A overlaps in time one of pid B
    execlog.py serialized LOG [--pids P ...] [--kind K] [--device D]
        no two operations of different pids overlap (on the same device)
    execlog.py count LOG [--pids P ...] [--kind K] [--device D] [--min N]
        at least N (default 1) operations match
    execlog.py summary LOG
        per pid and kind: count, busy time, first start, last end
K is a comma-separated list of kinds or 'all' (default: kernel).

As a module:
    import execlog
    ops = execlog.load(path)
    execlog.overlap_count(ops, pid_a, pid_b)   -> number of overlapping pairs
    execlog.is_serialized(ops)                 -> True/False
    execlog.select(ops, kinds=..., pids=..., device=...)
"""
import argparse
import collections
import sys

Op = collections.namedtuple(
    "Op", "start end pid device stream kind name bytes")

DEFAULT_KINDS = ("kernel",)
# Everything that is GPU work, and so passes the gate; advice is a
# host-side call that runs whenever the program makes it.
GPU_WORK_KINDS = ("kernel", "memcpy", "memset", "prefetch", "memop", "discard")


def parse_line(line):
    f = line.split()
    if len(f) != 8:
        raise ValueError("expected 8 fields, got %d: %r" % (len(f), line))
    return Op(int(f[0]), int(f[1]), int(f[2]), int(f[3]), int(f[4]),
              f[5], f[6], int(f[7]))


def load(path):
    """All operations of the log at path, in file order."""
    ops = []
    with open(path, encoding="ascii") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                ops.append(parse_line(line))
            except ValueError as e:
                raise ValueError("%s:%d: %s" % (path, n, e)) from None
    return ops


def select(ops, kinds=DEFAULT_KINDS, pids=None, device=None):
    """The operations of the given kinds (None: all), pids and device."""
    return [o for o in ops
            if (kinds is None or o.kind in kinds)
            and (pids is None or o.pid in pids)
            and (device is None or o.device == device)]


def _overlap(a, b):
    return a.start < b.end and b.start < a.end and a.device == b.device


def overlapping_pairs(ops, pid_a, pid_b, kinds=DEFAULT_KINDS, device=None):
    """Pairs (op of pid_a, op of pid_b) that overlap in time."""
    a = sorted(select(ops, kinds, {pid_a}, device))
    b = sorted(select(ops, kinds, {pid_b}, device))
    pairs = []
    j0 = 0
    for x in a:
        while j0 < len(b) and b[j0].end <= x.start:
            j0 += 1
        j = j0
        while j < len(b) and b[j].start < x.end:
            if _overlap(x, b[j]):
                pairs.append((x, b[j]))
            j += 1
    return pairs


def overlap_count(ops, pid_a, pid_b, kinds=DEFAULT_KINDS, device=None):
    return len(overlapping_pairs(ops, pid_a, pid_b, kinds, device))


def cross_pid_overlaps(ops, kinds=DEFAULT_KINDS, pids=None, device=None):
    """Pairs of overlapping operations of different pids."""
    sel = sorted(select(ops, kinds, pids, device))
    active = []
    found = []
    for x in sel:
        active = [y for y in active if y.end > x.start]
        for y in active:
            if y.pid != x.pid and _overlap(x, y):
                found.append((y, x))
        active.append(x)
    return found


def is_serialized(ops, kinds=DEFAULT_KINDS, pids=None, device=None):
    return not cross_pid_overlaps(ops, kinds, pids, device)


def summary(ops):
    rows = collections.OrderedDict()
    for o in sorted(ops):
        r = rows.setdefault((o.pid, o.kind), [0, 0, o.start, o.end])
        r[0] += 1
        r[1] += o.end - o.start
        r[2] = min(r[2], o.start)
        r[3] = max(r[3], o.end)
    return rows


def _kinds(arg):
    if arg == "all":
        return None
    return tuple(k for k in arg.split(",") if k)


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Check the CUDA test driver's execution log.")
    p.add_argument("command",
                   choices=("overlaps", "serialized", "count", "summary"))
    p.add_argument("log")
    p.add_argument("--pids", type=int, nargs="+")
    p.add_argument("--kind", default="kernel",
                   help="comma-separated kinds, or 'all' (default: kernel)")
    p.add_argument("--device", type=int)
    p.add_argument("--min", type=int, default=1)
    a = p.parse_args(argv)
    try:
        ops = load(a.log)
    except (OSError, ValueError) as e:
        print("execlog: %s" % e, file=sys.stderr)
        return 2
    kinds = _kinds(a.kind)
    pids = set(a.pids) if a.pids else None
    if a.command == "overlaps":
        if not a.pids or len(a.pids) != 2:
            print("execlog: overlaps needs --pids A B", file=sys.stderr)
            return 2
        pa, pb = a.pids
        na = len(select(ops, kinds, {pa}, a.device))
        nb = len(select(ops, kinds, {pb}, a.device))
        n = overlap_count(ops, pa, pb, kinds, a.device)
        print("pid %d: %d ops, pid %d: %d ops, overlapping pairs: %d"
              % (pa, na, pb, nb, n))
        return 0 if n > 0 else 1
    if a.command == "serialized":
        sel = select(ops, kinds, pids, a.device)
        bad = cross_pid_overlaps(ops, kinds, pids, a.device)
        print("%d ops of %d pids, cross-pid overlapping pairs: %d"
              % (len(sel), len({o.pid for o in sel}), len(bad)))
        for x, y in bad[:5]:
            print("  overlap: %s\n           %s" % (" ".join(map(str, x)),
                                                   " ".join(map(str, y))))
        return 0 if not bad else 1
    if a.command == "count":
        n = len(select(ops, kinds, pids, a.device))
        print(n)
        return 0 if n >= a.min else 1
    for (pid, kind), (n, busy, first, last) in summary(ops).items():
        print("pid %d %-8s count %d busy %.3f ms span %d..%d"
              % (pid, kind, n, busy / 1e6, first, last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
