#!/usr/bin/env python3
"""The lock page against the real daemon, from raw clients: who gets it,
what it is, what a take and TOOK do, and what junk in it does.
usage: sched_lock.py BINDIR SCENARIO | --list"""
import fcntl
import mmap
import os
import socket
import struct
import sys

from schedtest import (Daemon, Fail, T, UUID, check, frame, main,
                       recv_frame, scenarios, wait_for)

V4 = 4
T.update(TOOK=0x9, LOCK_PAGE=0x108)
PAGE_SIZE = 16384
FREE, CLOSED, TOKEN_BIT = 1, 0, 1 << 63
F_GET_SEALS = 1034
F_SEAL_SHRINK, F_SEAL_GROW = 0x2, 0x4


def send4(s, mtype, payload):
    s.sendall(frame(T[mtype], payload, version=V4))


def join(d, label, version=V4):
    """A raw client: HELLO, then its first frames, and the page's
    descriptor if one came (-1 if not)."""
    s = d.raw()
    s.sendall(frame(T["HELLO"], struct.pack("<II64s", version, 0, label),
                    version=version))
    check(recv_frame(s)[0] == T["WELCOME"], "welcome first")
    got, fds = [], []
    # What follows WELCOME: the page's frame with its descriptor (version
    # 4), then the policy.
    while True:
        msg, more, _, _ = socket.recv_fds(s, 16, 4)
        fds += more
        mtype, n = struct.unpack("<IHHII", msg)[2], struct.unpack("<IHHII", msg)[4]
        got.append((mtype, s.recv(n, socket.MSG_WAITALL) if n else b""))
        if mtype == T["POLICY"]:
            break
    check(len(fds) <= 1, "one descriptor")
    return s, got, (fds[0] if fds else -1)


def attach4(s):
    send4(s, "ATTACH", UUID + struct.pack("<Q", 16 << 30))
    f = recv_frame(s)
    check(f[0] == T["MODE"], "MODE confirms the ATTACH (got 0x%x)" % f[0])
    send4(s, "FOOTPRINT", UUID + struct.pack("<QQ", 1 << 30, 0))


def word(pg, slot=0):
    return struct.unpack_from("<Q", pg, 64 + 64 * slot + 16)[0]


def set_word(pg, v, slot=0):
    struct.pack_into("<Q", pg, 64 + 64 * slot + 16, v)


def state_of(d, label):
    for c in d.status()["clients"]:
        if c["label"] == label and c["gpus"]:
            return c["gpus"][0]["state"]
    return None


def t_page(b):
    """A version-4 client gets a sealed page and its token; a version-3
    one gets neither, nor a MODE after its ATTACH."""
    with Daemon(b, {"mode": "on", "log_level": "debug"}) as d:
        s, got, fd = join(d, b"four")
        check(fd >= 0, "a descriptor came with the page's frame")
        info = [p for t, p in got if t == T["LOCK_PAGE"]]
        check(len(info) == 1, "one LOCK_PAGE frame")
        token, size, reserved = struct.unpack("<QII", info[0])
        check(token & TOKEN_BIT and size == PAGE_SIZE and reserved == 0,
              "token %x, size %d" % (token, size))
        st = os.fstat(fd)
        check(st.st_size == PAGE_SIZE, "the page's size")
        seals = fcntl.fcntl(fd, F_GET_SEALS)
        check(seals & F_SEAL_SHRINK and seals & F_SEAL_GROW, "sealed")
        try:
            os.ftruncate(fd, 4096)
            raise Fail("a client could shrink the page")
        except PermissionError:
            pass
        pg = mmap.mmap(fd, PAGE_SIZE)
        os.close(fd)
        check(struct.unpack_from("<II", pg, 0) == (0x4b4c5356, 255), "magic")
        attach4(s)
        wait_for(lambda: word(pg) == FREE, 5, "the free GPU's word")
        check(bytes(pg[64:80]) == UUID, "slot 0 names the GPU")
        s3 = d.raw()
        s3.sendall(frame(T["HELLO"], struct.pack("<II64s", 3, 0, b"three"),
                         version=3) +
                   frame(T["ATTACH"], UUID + struct.pack("<Q", 16 << 30),
                         version=3) +
                   frame(T["REQUEST"], UUID, version=3))
        seen = [recv_frame(s3)[0] for _ in range(3)]
        check(seen == [T["WELCOME"], T["POLICY"], T["GRANT"]],
              "version 3: WELCOME, POLICY, GRANT, no page or MODE (%s)" %
              [hex(x) for x in seen])
        check(word(pg) == CLOSED, "closed while the other holds")
        pg.close()
        s.close()
        s3.close()


def t_take(b):
    """A take and its TOOK make the taker the holder with no GRANT; a
    REQUEST after it waits and the taker hears the idle drop; junk in the
    word is closed and the daemon goes on."""
    with Daemon(b, {"mode": "on", "log_level": "debug"}) as d:
        a, got, fd = join(d, b"taker")
        token = struct.unpack("<QII", [p for t, p in got
                                       if t == T["LOCK_PAGE"]][0])[0]
        pg = mmap.mmap(fd, PAGE_SIZE)
        os.close(fd)
        attach4(a)
        wait_for(lambda: word(pg) == FREE, 5, "free")
        set_word(pg, token)
        send4(a, "TOOK", UUID)
        wait_for(lambda: state_of(d, "taker") == "holding", 5,
                 "the taker holds")
        check(word(pg) == CLOSED, "adopted: the word is closed")
        c, _, fdc = join(d, b"asker")
        os.close(fdc)
        attach4(c)
        send4(c, "REQUEST", UUID)
        f = recv_frame(a)
        check(f[0] == T["DROP"] and struct.unpack("<I", f[1][16:20])[0] == 2,
              "the taker is asked to release when idle (no GRANT before)")
        send4(a, "RELEASED", UUID)
        check(recv_frame(c)[0] == T["GRANT"], "the asker is granted")
        send4(c, "RELEASED", UUID)
        wait_for(lambda: word(pg) == FREE, 5, "free again")
        # Junk: a token of nobody, then a made-up UUID in the slot.
        set_word(pg, TOKEN_BIT | 0xdead)
        pg[64:80] = b"\xff" * 16
        send4(c, "REQUEST", UUID)
        check(recv_frame(c)[0] == T["GRANT"], "junk closed, REQUEST granted")
        check(word(pg) == CLOSED and d.alive(), "daemon fine")
        send4(c, "RELEASED", UUID)
        wait_for(lambda: word(pg) == FREE, 5, "free again after junk")
        check(bytes(pg[64:80]) == UUID, "the slot names the GPU again")
        check("took its GPU through the lock page" in d.logtext(),
              "the take is logged")
        pg.close()
        for s in (a, c):
            s.close()


if __name__ == "__main__":
    sys.exit(main(scenarios(globals())))
