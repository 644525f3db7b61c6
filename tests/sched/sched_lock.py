#!/usr/bin/env python3
"""The lock page against the real daemon, from raw clients: who gets it,
what it is, what a take and TOOK do, and what forged values in it do.
LockClient is also the hostile tests' client (sched_hostile_lock.py): it
speaks version 5, or version 4 to a daemon that knows no newer one.
usage: sched_lock.py BINDIR SCENARIO | --list"""
import errno
import fcntl
import mmap
import os
import socket
import struct
import sys

from schedtest import (HDR, Daemon, Fail, T, UUID, check, frame, main,
                       recv_frame, scenarios, wait_for)
import vsproto

PAGE_SIZE = vsproto.S["lock_page"].size
CLOSED, V4_FREE = vsproto.LOCK_CLOSED, 1
OPEN_BIT, TOKEN_BIT = vsproto.LOCK_OPEN_BIT, vsproto.LOCK_TOKEN_BIT
E_STATE, E_VERSION = vsproto.E["STATE"], vsproto.E["VERSION"]
F_GET_SEALS = 1034
F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE = 0x2, 0x4, 0x8
F_SEAL_FUTURE_WRITE = 0x10


M64 = (1 << 64) - 1
MARK_K1 = vsproto.LOCK_MARK_K1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(k0, k1, msg):
    """SipHash-2-4, as src/common/siphash.c (checked there against the
    reference vectors, and here against it through the daemon)."""
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & M64; v[1] = _rotl(v[1], 13); v[1] ^= v[0]
        v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M64; v[3] = _rotl(v[3], 16); v[3] ^= v[2]
        v[0] = (v[0] + v[3]) & M64; v[3] = _rotl(v[3], 21); v[3] ^= v[0]
        v[2] = (v[2] + v[1]) & M64; v[1] = _rotl(v[1], 17); v[1] ^= v[2]
        v[2] = _rotl(v[2], 32)

    n = len(msg) - len(msg) % 8
    for i in range(0, n, 8):
        m = int.from_bytes(msg[i:i + 8], "little")
        v[3] ^= m
        rnd()
        rnd()
        v[0] ^= m
    b = (len(msg) << 56 | int.from_bytes(msg[n:], "little")) & M64
    v[3] ^= b
    rnd()
    rnd()
    v[0] ^= b
    v[2] ^= 0xff
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def mark(token, opening):
    """What a client writes to take an opening (vs_lock_mark)."""
    return TOKEN_BIT | siphash24(token, token ^ MARK_K1,
                                 opening.to_bytes(8, "little"))


class LockClient:
    """A raw client with the daemon's lock page mapped: HELLO, WELCOME and
    what follows it up to POLICY. Version 5: a read-only state page and a
    writable words page; version 4 (an older daemon): one page whose words
    are in its slots. page is None when none came."""

    def __init__(self, sock_path, label, version=5):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock_path)
        self.s.settimeout(10)
        self.version = version
        self.s.sendall(frame(T["HELLO"], struct.pack("<II64s", version, 0,
                                                     label),
                             version=version))
        self.frames, fds = [], []
        while True:
            msg, more, _, _ = socket.recv_fds(self.s, 16, 4)
            check(len(msg) == 16, "a frame header")
            fds += more
            _, _, mtype, _, n = HDR.unpack(msg)
            p = self.s.recv(n, socket.MSG_WAITALL) if n else b""
            if mtype == T["ERROR"] and \
                    struct.unpack("<i", p[:4])[0] == E_VERSION and \
                    version > 4:
                # An older daemon: speak its version (the shim does too).
                self.s.close()
                self.__init__(sock_path, label, 4)
                return
            self.frames.append((mtype, p))
            if mtype == T["POLICY"]:
                break
        self.fds = fds
        self.token, self.state, self.words = 0, None, None
        info = [p for t, p in self.frames if t == T["LOCK_PAGE"]]
        if not info:
            return
        self.token, size, words = struct.unpack("<QII", info[0])
        if self.version >= 5:
            self.state = mmap.mmap(fds[0], size, prot=mmap.PROT_READ)
            self.words = mmap.mmap(fds[1], words)
        else:
            self.state = self.words = mmap.mmap(fds[0], size)

    page = property(lambda self: self.state)

    def send(self, mtype, payload=UUID):
        self.s.sendall(frame(T[mtype], payload, version=self.version))

    def attach(self, fp=1 << 30, uuid=UUID):
        self.send("ATTACH", uuid + struct.pack("<Q", 16 << 30))
        f = recv_frame(self.s)
        check(f[0] == T["MODE"], "MODE confirms the ATTACH (got 0x%x)" % f[0])
        self.send("FOOTPRINT", uuid + struct.pack("<QQ", fp, 0))
        # A barrier: the answer comes once the FOOTPRINT was taken (the
        # daemon reads a peer's frames in order), so that no decision of
        # it reopens the GPU under a take that follows.
        self.send("WAIT_QUERY", uuid + bytes(8))
        f = recv_frame(self.s)
        check(f[0] == T["WAITING"], "WAITING after the FOOTPRINT (got "
              "0x%x)" % f[0])

    def word_off(self, slot=0):
        return 64 * slot if self.version >= 5 else 64 + 64 * slot + 16

    def word(self, slot=0):
        return struct.unpack_from("<Q", self.words, self.word_off(slot))[0]

    def set_word(self, v, slot=0):
        struct.pack_into("<Q", self.words, self.word_off(slot), v)

    def opening(self, slot=0):
        """The slot's open value: what a take swaps from (0: closed)."""
        if self.version >= 5:
            return struct.unpack_from("<Q", self.state, 64 + 64 * slot +
                                      16)[0]
        return V4_FREE if self.word(slot) == V4_FREE else 0

    def free_value(self, seen):
        """What 'free' looks like to a taker, given an opening seen."""
        return seen if self.version >= 5 else V4_FREE

    def take(self, slot=0):
        """The shim's take; True if this client now holds the GPU. (A
        compare-and-swap from Python: read and write under no lock, which
        is enough for one taker against the daemon's slow decisions.)"""
        n = self.opening(slot)
        if n == 0 or self.word(slot) != n:
            return False
        tok = mark(self.token, n) if self.version >= 5 else self.token
        self.set_word(tok, slot)
        if self.version < 5 or self.opening(slot) == n:
            return True
        if self.word(slot) == tok:
            self.set_word(CLOSED, slot)
            return False
        return True

    def close(self):
        for m in (self.state, self.words):
            if m is not None and not m.closed:
                m.close()
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        self.s.close()


GPU = "GPU-00000000-0000-0000-0000-000000000001"


def counter(text, name):
    """The value of name's one series (the test's GPU), -1 if none."""
    for line in text.splitlines():
        if line.startswith(name + "{"):
            return int(float(line.rsplit(" ", 1)[1]))
    return -1


def state_of(d, label):
    for c in d.status()["clients"]:
        if c["label"] == label and c["gpus"]:
            return c["gpus"][0]["state"]
    return None


def t_page(b):
    """A version-5 client gets its random token, a sealed read-only state
    page and a words page; a version-4 or version-3 one gets no page, nor
    a MODE after its ATTACH (version 3)."""
    with Daemon(b, {"mode": "on", "log_level": "debug"}) as d:
        a = LockClient(d.sock, b"five")
        b2 = LockClient(d.sock, b"five-b")
        check(a.version == 5 and len(a.fds) == 2, "two descriptors")
        check(a.token & TOKEN_BIT and b2.token & TOKEN_BIT, "tokens")
        # Random: not the client id, and not one after the other.
        check(abs((a.token & ~TOKEN_BIT) - (b2.token & ~TOKEN_BIT)) > 1 << 20,
              "tokens %x %x look sequential" % (a.token, b2.token))
        st, wd = a.fds
        check(os.fstat(st).st_size == PAGE_SIZE and
              os.fstat(wd).st_size == PAGE_SIZE, "sizes")
        seals = fcntl.fcntl(st, F_GET_SEALS)
        check(seals & F_SEAL_SHRINK and seals & F_SEAL_GROW and
              seals & F_SEAL_FUTURE_WRITE, "state page sealed: %x" % seals)
        check(fcntl.fcntl(wd, F_GET_SEALS) & F_SEAL_SHRINK, "words sealed")
        for fd in (st, wd):
            try:
                os.ftruncate(fd, 4096)
                raise Fail("a client could shrink a page")
            except PermissionError:
                pass
        try:
            mmap.mmap(st, PAGE_SIZE)  # writable, shared
            raise Fail("a client mapped the state page writable")
        except PermissionError:
            pass
        try:
            os.pwrite(st, b"\0" * 8, 0)
            raise Fail("a client wrote the state page")
        except PermissionError:
            pass
        check(struct.unpack_from("<II", a.state, 0) == (0x4b4c5356, 255),
              "magic")
        a.attach()
        wait_for(lambda: a.opening() & OPEN_BIT, 5, "the free GPU opened")
        check(a.word() == a.opening(), "the word holds the opening")
        check(bytes(a.state[64:80]) == UUID, "slot 0 names the GPU")
        four = LockClient(d.sock, b"four", version=4)
        check(four.version == 4 and four.fds == [] and four.token == 0,
              "version 4: no page")
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
        check(a.opening() == 0 and a.word() == CLOSED,
              "closed while the other holds")
        for c in (a, b2, four):
            c.close()
        s3.close()


def error_of(s):
    f = recv_frame(s)
    check(f[0] == T["ERROR"], "an ERROR (got 0x%x)" % f[0])
    return struct.unpack("<i", f[1][:4])[0], \
        f[1][8:].split(b"\0")[0].decode()


def t_take(b):
    """A take shows as 'took' and its TOOK makes the taker the holder with
    no GRANT; a REQUEST after it waits and the taker hears the idle drop;
    a second TOOK is refused naming the GPU; junk in the word adopts
    nobody and the daemon goes on."""
    with Daemon(b, {"mode": "on", "log_level": "debug", "gpus": {GPU: {}}}) as d:
        a = LockClient(d.sock, b"taker")
        a.attach()
        wait_for(lambda: a.opening() != 0, 5, "open")
        check(a.take(), "the take")
        # A report changes nothing: the take shows, the word keeps it.
        check(state_of(d, "taker") == "took", "status shows the take")
        check(a.word() == mark(a.token, a.opening()),
              "the report left the word alone")
        a.send("TOOK")
        wait_for(lambda: state_of(d, "taker") == "holding", 5,
                 "the taker holds")
        check(a.word() == CLOSED and a.opening() == 0, "adopted: closed")
        c = LockClient(d.sock, b"asker")
        c.attach()
        c.send("REQUEST")
        f = recv_frame(a.s)
        check(f[0] == T["DROP"] and struct.unpack("<I", f[1][16:20])[0] == 2,
              "the taker is asked to release when idle (no GRANT before)")
        a.send("TOOK")
        code, msg = error_of(a.s)
        check(code == E_STATE and
              msg.startswith("GPU-00000000-0000-0000-0000-000000000001: "
                             "took:"), "a second TOOK: %d %r" % (code, msg))
        a.send("RELEASED")
        check(recv_frame(c.s)[0] == T["GRANT"], "the asker is granted")
        c.send("RELEASED")
        wait_for(lambda: c.opening() != 0, 5, "open again")
        # Junk: a token of nobody.
        c.set_word(TOKEN_BIT | 0xdead)
        c.send("REQUEST")
        check(recv_frame(c.s)[0] == T["GRANT"], "junk: REQUEST granted")
        check(c.word() == CLOSED and d.alive(), "daemon fine")
        c.send("RELEASED")
        wait_for(lambda: c.opening() != 0, 5, "open again after junk")
        check("took its GPU through the lock page" in d.logtext(),
              "the take is logged")
        m = d.ctl("metrics")[1]
        check(counter(m, "vshare_lock_took_refused_total") == 1 and
              counter(m, "vshare_lock_resets_total") == 1 and
              counter(m, "vshare_lock_takes_total") == 1, "counters")
        for s in (a, c):
            s.close()


if __name__ == "__main__":
    sys.exit(main(scenarios(globals())))
