"""A peer of the scheduler for the log tests (sched_hostile_log.py). Run
as an unprivileged user (setpriv), it does one thing, prints one JSON
line with what the daemon answered, then waits until its stdin closes.
The frames come from hostile_peer.py, copied beside it.

  log_peer.py SOCKET settq N      one connection sends N SET_TQ, reading each reply
  log_peer.py SOCKET hellos N     N connections one after the other: HELLO and SET_TQ,
                                  their answers, close
  log_peer.py SOCKET fill N TAG   one connection attaches N made-up GPUs (GPU-ee<TAG>...)
"""
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_peer import (HDR, attach, connect, errors_of, frame,  # noqa: E402
                          hello)

SET_TQ, WELCOME, REPLY = 0x202, 0x101, 0x301
TARGET_ALL = 1
BATCH = 100  # frames in flight: their replies stay well under outq_pause


def frames(s, n, timeout=30):
    """The next n frames on s as (type, payload); fewer at EOF or after
    timeout seconds."""
    out, buf = [], b""
    s.settimeout(timeout)
    end = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        while len(buf) >= HDR.size and len(out) < n:
            length = HDR.unpack(buf[:HDR.size])[4]
            if len(buf) < HDR.size + length:
                break
            out.append((HDR.unpack(buf[:HDR.size])[2],
                        buf[HDR.size:HDR.size + length]))
            buf = buf[HDR.size + length:]
        if len(out) == n:
            break
        try:
            d = s.recv(65536)
        except OSError:
            break
        if not d:
            break
        buf += d
    return out


def settq(path, n):
    s = connect(path)
    req = frame(SET_TQ, bytes(16) + struct.pack("<IIII", TARGET_ALL, 0,
                                                 5, 0))
    statuses = {}
    left = int(n)
    while left > 0:
        k = min(BATCH, left)
        s.sendall(req * k)
        got = frames(s, k)
        for t, p in got:
            st = struct.unpack("<i", p[:4])[0] if t == REPLY else "other"
            statuses[str(st)] = statuses.get(str(st), 0) + 1
        if len(got) < k:
            break
        left -= k
    return {"replies": statuses}, [s]


def hellos(path, n):
    """Each connection registers, is refused an admin request, leaves:
    three lines' worth each, were every one logged."""
    welcomed = refused = 0
    req = frame(SET_TQ, bytes(16) + struct.pack("<IIII", TARGET_ALL, 0,
                                                 5, 0))
    for _ in range(int(n)):
        s = connect(path)
        s.sendall(hello(b"looper") + req)
        f = frames(s, 2, 10)
        welcomed += any(t == WELCOME for t, _ in f)
        refused += any(t == REPLY and p[:4] == struct.pack("<i", -1)
                       for t, p in f)
        s.close()
    return {"welcomed": welcomed, "refused": refused}, []


def fill(path, n, tag):
    s = connect(path)
    msg = hello(b"filler")
    for j in range(int(n)):
        msg += attach(bytes([0xee, int(tag), j & 0xff, j >> 8]) + bytes(12),
                      1 << 30)
    s.sendall(msg)
    errs, eof = errors_of(s, 0.5)
    return {"refused": len(errs), "closed": eof}, [s]


def main():
    path, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    result, keep = {"settq": settq, "hellos": hellos, "fill": fill}[cmd](
        path, *args)
    print(json.dumps(result), flush=True)
    sys.stdin.read()  # hold the connections until told to stop
    for s in keep:
        s.close()


if __name__ == "__main__":
    sys.exit(main())
