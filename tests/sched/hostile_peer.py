"""A hostile peer of the scheduler, for the attack tests and the flood
benchmark. Run as an unprivileged user (setpriv), it does one attack,
prints one JSON line with what the daemon answered, then keeps its
connections open until its stdin closes (or --hold seconds pass).

  hostile_peer.py SOCKET lie TOTAL           attach the test GPU claiming TOTAL bytes
  hostile_peer.py SOCKET label HEX           register with the label HEX (bytes)
  hostile_peer.py SOCKET fill NCONN NGPUS    each connection attaches NGPUS made-up GPUs
  hostile_peer.py SOCKET conns N idle|half   N connections that send nothing or half a frame
  hostile_peer.py SOCKET flood NCONN NREQ    NCONN connections send NREQ requests, never read
  hostile_peer.py SOCKET status NCONN        NCONN connections send STATUS back to back
  hostile_peer.py SOCKET churn SECONDS HOW   connect and close in a tight loop (HOW:
                                             block, or nonblock: retry EAGAIN at once)
  hostile_peer.py SOCKET register N          not an attack: N programs one after the
                                             other connect as the shim does and time
                                             their registration
  hostile_peer.py SOCKET settq N             one connection sends N SET_TQ, reading
                                             each reply
  hostile_peer.py SOCKET hellos N            N connections one after the other: HELLO
                                             and SET_TQ, their answers, close
  hostile_peer.py SOCKET tagged N TAG        one connection attaches N made-up GPUs
                                             (GPU-ee<TAG>...)
  hostile_peer.py SOCKET hold N              N connections that register (HELLO) and
                                             stay: the count welcomed, refused and
                                             closed

The frames come from vsproto.py, copied beside it.
"""
import json
import os
import resource
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vsproto  # noqa: E402
from vsproto import (HDR, T, UUID, admin_set, attach, connect,  # noqa: E402
                     errors_of, frame, frames)

HELLO, ATTACH, REQUEST, ERROR, STATUS = (T["HELLO"], T["ATTACH"],
                                         T["REQUEST"], T["ERROR"],
                                         T["STATUS"])
WELCOME, REPLY = T["WELCOME"], T["REPLY"]
BATCH = 100  # frames in flight: their replies stay well under outq_pause


def hello(label=b"hostile"):
    return vsproto.hello(label)


def lie(path, total):
    s = connect(path)
    s.sendall(hello() + attach(UUID, int(total)))
    errs, _ = errors_of(s, 0.3)
    return {"errors": errs}, [s]


def label(path, hexlabel):
    s = connect(path)
    s.sendall(hello(bytes.fromhex(hexlabel)) + attach(UUID, 16 << 30))
    errs, _ = errors_of(s, 0.3)
    return {"errors": errs}, [s]


def fill(path, nconn, ngpus):
    socks, refused = [], []
    for i in range(int(nconn)):
        s = connect(path)
        msg = hello()
        for j in range(int(ngpus)):
            u = bytes([0xee, i & 0xff, j & 0xff]) + bytes(13)
            msg += attach(u, 1 << 30)
        s.sendall(msg)
        socks.append(s)
    for s in socks:
        errs, _ = errors_of(s, 0.2)
        refused += errs
    return {"refused": len(refused), "first": refused[:1]}, socks


def conns(path, n, how):
    socks, refused = [], 0
    for _ in range(int(n)):
        try:
            s = connect(path)
            if how == "half":
                s.sendall(hello()[:10])
        except OSError:
            refused += 1
            continue
        socks.append(s)
    kept = []
    time.sleep(0.5)  # the daemon's refusals, even on a busy machine
    # It answers connections in the order it accepts them: once the last
    # one is refused (past the uid's limit), every earlier one has had its
    # answer too. On a loaded machine that can take more than 0.5 s.
    last = errors_of(socks[-1], 10) if socks else None
    for s in socks:
        errs, eof = last if s is socks[-1] else errors_of(s, 0.01)
        if eof or errs:
            refused += 1
            s.close()
        else:
            kept.append(s)
    return {"kept": len(kept), "refused": refused}, kept


def flood(path, nconn, nreq):
    socks, sent = [], 0
    burst = frame(REQUEST, UUID) * 1024
    for _ in range(int(nconn)):
        try:
            s = connect(path)
            s.sendall(hello())
        except OSError:
            continue
        s.setblocking(False)
        socks.append(s)
    left = {s: int(nreq) * len(frame(REQUEST, UUID)) for s in socks}
    end = time.monotonic() + 20
    po = select.poll()
    fds = {s.fileno(): s for s in socks}
    for s in socks:
        po.register(s, select.POLLOUT)
    while left and time.monotonic() < end:
        ready = po.poll(500)
        if not ready:
            break  # every connection is throttled
        for fd, ev in ready:
            s = fds[fd]
            if s not in left:
                po.unregister(fd)
                continue
            try:
                n = s.send(burst[:min(len(burst), left[s])])
            except BlockingIOError:
                continue
            except OSError:
                del left[s]
                po.unregister(fd)
                continue
            sent += n
            left[s] -= n
            if left[s] <= 0:
                del left[s]
                po.unregister(fd)
    return {"conns": len(socks), "sent_bytes": sent}, socks


def status(path, nconn):
    """Keep NCONN STATUS requests in flight, reading each reply, until
    stdin closes (the flood of the benchmark)."""
    req = frame(STATUS, bytes(8))
    socks = []
    for _ in range(int(nconn)):
        s = connect(path)
        s.sendall(req)
        socks.append(s)
    print(json.dumps({"conns": len(socks)}), flush=True)
    buf = {s: b"" for s in socks}
    replies = 0
    while True:
        r, _, _ = select.select(socks + [sys.stdin], [], [], 1)
        if sys.stdin in r:
            break
        for s in r:
            d = s.recv(1 << 20)
            if not d:
                return
            buf[s] += d
            while len(buf[s]) >= HDR.size:
                n = HDR.unpack(buf[s][:HDR.size])[4]
                if len(buf[s]) < HDR.size + n:
                    break
                buf[s] = buf[s][HDR.size + n:]
                replies += 1
                s.sendall(req)
    print(json.dumps({"replies": replies}), flush=True)


def churn(path, seconds, how):
    """Connect and close as fast as one process can, for SECONDS or until
    stdin closes; then print what the connections met."""
    print(json.dumps({"churning": how}), flush=True)
    n, busy, other = 0, 0, 0
    end = time.monotonic() + float(seconds)
    while True:
        # Look at the clock and at stdin once per 64 connections: the
        # loop must stay tight.
        if n % 64 == 0 and (time.monotonic() >= end or
                            select.select([sys.stdin], [], [], 0)[0]):
            break
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if how == "nonblock":
            s.setblocking(False)
        try:
            s.connect(path)
            n += 1
        except BlockingIOError:
            busy += 1
        except OSError:
            other += 1
        s.close()
    print(json.dumps({"conns": n, "busy": busy, "failed": other}), flush=True)


# The shim's connect (src/libvshare/client/client_connect.c): EAGAIN is a
# busy scheduler, tried again for up to 3 s, each try waiting in the
# listen queue for 50 ms at most; a connection must be welcomed within 2 s.
BUSY_WAIT, BUSY_FOR, WELCOME_FOR = 0.05, 3.0, 2.0


def shim_connect(path):
    """(socket or None, seconds busy, EAGAINs) as the shim connects."""
    t0, busy = time.monotonic(), 0
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if busy:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                         struct.pack("ll", 0, int(BUSY_WAIT * 1e6)))
        else:
            s.setblocking(False)
        try:
            s.connect(path)
            s.setblocking(False)
            return s, time.monotonic() - t0, busy
        except BlockingIOError:
            s.close()
            busy += 1
        if time.monotonic() - t0 >= BUSY_FOR:
            return None, time.monotonic() - t0, busy
        time.sleep(0.001)


def welcomed(s):
    """Seconds until the WELCOME of a HELLO sent on s, or None."""
    t0 = time.monotonic()
    s.sendall(hello(b"newprog"))
    buf = b""
    while time.monotonic() - t0 < WELCOME_FOR:
        if not select.select([s], [], [], WELCOME_FOR)[0]:
            continue
        try:
            d = s.recv(4096)
        except OSError:
            return None
        if not d:
            return None
        buf += d
        if len(buf) >= HDR.size:
            return (time.monotonic() - t0
                    if HDR.unpack(buf[:HDR.size])[2] == WELCOME else None)
    return None


def register(path, n):
    out = {"welcomed": 0, "busy": 0, "busy_max_s": 0.0, "welcome_max_s": 0.0}
    socks = []
    for _ in range(int(n)):
        s, busy_s, busy = shim_connect(path)
        out["busy"] += busy
        out["busy_max_s"] = max(out["busy_max_s"], round(busy_s, 3))
        if s is None:
            continue
        w = welcomed(s)
        if w is not None:
            out["welcomed"] += 1
            out["welcome_max_s"] = max(out["welcome_max_s"], round(w, 3))
        socks.append(s)
    return out, socks


def settq(path, n):
    """SET_TQ after SET_TQ on one connection (a non-admin's: each is
    refused), reading each reply: the count of each reply status."""
    s = connect(path)
    req = admin_set("SET_TQ", 5)
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
    req = admin_set("SET_TQ", 5)
    for _ in range(int(n)):
        s = connect(path)
        s.sendall(hello(b"looper") + req)
        f = frames(s, 2, 10)
        welcomed += any(t == WELCOME for t, _ in f)
        refused += any(t == REPLY and p[:4] == struct.pack("<i", -1)
                       for t, p in f)
        s.close()
    return {"welcomed": welcomed, "refused": refused}, []


def tagged(path, n, tag):
    """One connection attaches n made-up GPUs whose UUIDs carry tag."""
    s = connect(path)
    msg = hello(b"filler")
    for j in range(int(n)):
        msg += attach(bytes([0xee, int(tag), j & 0xff, j >> 8]) + bytes(12),
                      1 << 30)
    s.sendall(msg)
    errs, eof = errors_of(s, 0.5)
    return {"refused": len(errs), "closed": eof}, [s]


def hold(path, n):
    """n connections, each registered, kept open: how many the daemon
    welcomed; those it refused (an ERROR) or closed are closed here."""
    socks = []
    for _ in range(int(n)):
        try:
            s = connect(path)
            s.sendall(hello(b"holder"))
        except OSError:
            continue
        socks.append(s)
    out, kept = {"welcomed": 0, "refused": 0, "lost": 0}, []
    for s in socks:
        f = frames(s, 1, 30)
        if f and f[0][0] == WELCOME:
            out["welcomed"] += 1
            kept.append(s)
        else:
            out["refused" if f else "lost"] += 1
            s.close()
    return out, kept


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    path, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == "status":
        status(path, *args)
        return
    if cmd == "churn":
        churn(path, *args)
        sys.stdin.read()
        return
    fn = {"lie": lie, "label": label, "fill": fill, "conns": conns,
          "flood": flood, "register": register, "settq": settq,
          "hellos": hellos, "tagged": tagged, "hold": hold}[cmd]
    result, keep = fn(path, *args)
    print(json.dumps(result), flush=True)
    sys.stdin.read()  # hold the connections until told to stop
    for s in keep:
        s.close()


if __name__ == "__main__":
    sys.exit(main())
