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
"""
import ctypes
import json
import os
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


def main():
    path, mode = sys.argv[1], sys.argv[2]
    arg = float(sys.argv[3]) if len(sys.argv) > 3 else 0
    c = LockClient(path, b"hostile")
    c.attach()
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
    elif mode == "punch":
        res = {"errno": [fallocate_punch(fd, 16384) for fd in c.fds]}
    out(res)
    sys.stdin.read()
    c.close()


if __name__ == "__main__":
    main()
