#!/usr/bin/env python3
"""What happened in one round of scripts/demo, from the CUDA test driver's
execution log: how many kernels each program ran, whether kernels of the
two programs overlapped in time, and how often the GPU changed hands.
Exit 1 when the round did not behave as its mode promises."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "driver"))
import execlog  # noqa: E402  (the test driver's log reader)


def burst_starts(ops, pids):
    """The most kernels the loop (the program of longer kernels) started
    inside one burst of the other (its kernels less than 5 ms apart)."""
    dur = {p: sorted(o.end - o.start for o in ops if o.pid == p) for p in pids}
    loop = max(pids, key=lambda p: dur[p][len(dur[p]) // 2])
    ks = sorted((o for o in ops if o.pid != loop), key=lambda o: o.start)
    bursts, most = [], 0
    for k in ks:
        if bursts and k.start - bursts[-1][1] < 5000000:
            bursts[-1][1] = max(bursts[-1][1], k.end)
        else:
            bursts.append([k.start, k.end])
    for a, b in bursts:
        most = max(most, sum(1 for o in ops
                             if o.pid == loop and a < o.start < b))
    return most


def main():
    path, mode = sys.argv[1], sys.argv[2]
    ops = execlog.select(execlog.load(path))
    pids = sorted({o.pid for o in ops})
    if len(pids) != 2:
        print("   expected kernels of 2 programs in the log, found %d" % len(pids))
        return 1
    by_start = sorted(ops, key=lambda o: o.start)
    handoffs = sum(1 for a, b in zip(by_start, by_start[1:]) if a.pid != b.pid)
    pairs = len(execlog.cross_pid_overlaps(ops))
    counts = ", ".join("pid %d: %d kernels" % (p, sum(o.pid == p for o in ops))
                       for p in pids)
    print("-- execution log: %s; overlapping kernel pairs across the two: %d"
          % (counts, pairs))
    if mode == "auto":
        ok = pairs > 0
        print("   %s: they ran side by side" % ("yes" if ok else "NO"))
    elif mode == "interactive":
        # Priority at kernel granularity: the loop starts no kernel while
        # a burst runs, beyond the one it had queued when the burst came
        # (its kernel in flight finishes beside the burst).
        ok, most = handoffs > 0, burst_starts(ops, pids)
        ok = ok and most <= 1
        print("   %s: the loop started at most %d kernel%s during a burst, "
              "and the GPU changed hands %d times" % (
                  "yes" if ok else "NO", most, "" if most == 1 else "s",
                  handoffs))
    else:  # exclusive: mode on
        ok = pairs == 0 and handoffs > 0
        print("   %s: never two programs' kernels at once, and the GPU changed"
              " hands %d times" % ("yes" if ok else "NO", handoffs))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
