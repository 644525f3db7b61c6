"""A hostile peer of the lock page, for sched_hostile_lock.py. Run as an
unprivileged user (setpriv), it joins the daemon as a client of the test
GPU with the page mapped, prints one JSON line when ready, and then does
its attack; the results go out as a second JSON line. It lives until its
stdin closes.

  hostile_lock.py SOCKET forge N      write the tokens of ids 1..N (as
                                      tokens once were) into the word, a
                                      FOOTPRINT and a STATUS after each
  hostile_lock.py SOCKET tookflood S  TOOK every 50 ms for S seconds
  hostile_lock.py SOCKET freeover S   after a line on stdin: write the free
                                      value seen last over the word every
                                      1 ms for S seconds
  hostile_lock.py SOCKET punch        punch a hole over each page
  hostile_lock.py SOCKET copy S       watch the word for another's take,
                                      then, after a line on stdin, write
                                      what it saw there every 1 ms for S s
  hostile_lock.py SOCKET forgeloop S UUID
                                      attached to GPU UUID (hex), both
                                      forgeries in turn until a line on
                                      stdin or S seconds: the tokens of
                                      ids 1..64, and the marks seen in the
                                      word, each with a FOOTPRINT and a
                                      STATUS after it
"""
import ctypes
import json
import os
import select
import struct
import sys
import time

from sched_lock import TOKEN_BIT, UUID, LockClient

FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x1, 0x2


def out(obj):
    print(json.dumps(obj), flush=True)


def fallocate_punch(fd, size):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long,
                               ctypes.c_long]
    rc = libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                        size)
    return 0 if rc == 0 else ctypes.get_errno()


def readable(f):
    return bool(select.select([f], [], [], 0)[0])


def forge_loop(c, uuid, seconds):
    """Every 5 ms the next of the tokens of ids 1..64 (as tokens once
    were) and the last mark seen in the word (another client's take),
    each written over the word with a FOOTPRINT and a STATUS after it,
    so that the daemon looks at the word. The word is read every 0.5 ms
    between, and the daemon's answers are read and dropped, so that this
    client is never cut off as a slow reader."""
    forged = {TOKEN_BIT | i for i in range(1, 65)}
    marks, last, n, i, due = set(), 0, 0, 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and not readable(sys.stdin):
        w = c.word()
        if w & TOKEN_BIT and w not in forged:
            marks.add(w)
            last = w
        if time.monotonic() >= due:
            i = i % 64 + 1
            for v in [TOKEN_BIT | i] + ([last] if last else []):
                c.set_word(v)
                c.send("FOOTPRINT", uuid + struct.pack("<QQ", (1 << 30) + i,
                                                       0))
                c.send("STATUS", bytes(8))
                n += 1
            due = time.monotonic() + 0.005
        while readable(c.s):
            if not c.s.recv(65536):
                return {"writes": n, "marks": len(marks), "cut": True}
        time.sleep(0.0005)
    return {"writes": n, "marks": len(marks), "cut": False,
            "asked": readable(sys.stdin)}


def main():
    path, mode = sys.argv[1], sys.argv[2]
    arg = float(sys.argv[3]) if len(sys.argv) > 3 else 0
    uuid = bytes.fromhex(sys.argv[4]) if len(sys.argv) > 4 else UUID
    c = LockClient(path, b"hostile")
    c.attach(uuid=uuid)
    seen = 0
    end = time.monotonic() + 5
    while seen == 0 and time.monotonic() < end and c.state is not None:
        seen = c.opening()
        time.sleep(0.005)
    out({"version": c.version, "page": c.state is not None, "seen": seen})
    res = {}
    if mode == "forge":
        for i in range(1, int(arg) + 1):
            c.set_word(TOKEN_BIT | i)
            c.send("FOOTPRINT", UUID + struct.pack("<QQ", (1 << 30) + i, 0))
            c.send("STATUS", bytes(8))
            time.sleep(0.01)
        res = {"forged": int(arg)}
    elif mode == "tookflood":
        n, end = 0, time.monotonic() + arg
        while time.monotonic() < end:
            c.send("TOOK")
            n += 1
            time.sleep(0.05)
        res = {"sent": n}
    elif mode == "freeover":
        sys.stdin.readline()
        v, n = c.free_value(seen), 0
        end = time.monotonic() + arg
        while time.monotonic() < end:
            c.set_word(v)
            n += 1
            time.sleep(0.001)
        res = {"writes": n, "value": v}
    elif mode == "copy":
        got, end = 0, time.monotonic() + 10
        while not got and time.monotonic() < end:
            w = c.word()
            if w & TOKEN_BIT:
                got = w
        out({"copied": got})
        sys.stdin.readline()
        n, end = 0, time.monotonic() + arg
        while time.monotonic() < end:
            c.set_word(got)
            n += 1
            time.sleep(0.001)
        res = {"writes": n}
    elif mode == "forgeloop":
        res = forge_loop(c, uuid, arg)
    elif mode == "punch":
        res = {"errno": [fallocate_punch(fd, 16384) for fd in c.fds]}
    out(res)
    sys.stdin.read()
    c.close()


if __name__ == "__main__":
    main()
