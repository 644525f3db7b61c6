#!/usr/bin/env python3
"""The scheduler's readiness protocol with systemd (Type=notify), against
the real vshare-scheduler: the test owns the notification socket and passes
it as NOTIFY_SOCKET, as systemd would; no systemd runs. Usage:
sched_notify.py BINDIR SCENARIO (exit 0 pass, 1 fail, 77 skipped). Each
function t_NAME is scenario NAME and ctest sched.robust.NAME;
`sched_notify.py --list` prints them."""
import json
import os
import signal
import socket
import struct
import sys

from schedtest import Daemon, Fail, check, main, scenarios

# Generous: a sanitizer build on a loaded machine starts slowly.
WAIT_S = 20


class Notify:
    """The AF_UNIX datagram socket systemd would listen on. SO_PASSCRED
    gives each message's sender, which must be the daemon itself
    (NotifyAccess=main in the unit)."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(path)
        self.sock.settimeout(WAIT_S)

    def recv(self, pid):
        """The next message as a dict of its KEY=VALUE lines."""
        try:
            data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            raise Fail("no notification in %d s" % WAIT_S)
        senders = [struct.unpack("iII", cred[:12])[0]
                   for level, kind, cred in anc
                   if level == socket.SOL_SOCKET and
                   kind == socket.SCM_CREDENTIALS]
        check(senders == [pid], "notification from %s, not the daemon's "
              "pid %d" % (senders, pid))
        lines = data.decode().split("\n")
        return dict(line.split("=", 1) for line in lines if line)

    def close(self):
        self.sock.close()


def connects(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def start(d, note):
    """Start the daemon as systemd would, with NOTIFY_SOCKET set, and
    return once READY=1 came; the socket must accept connections then."""
    d.spawn(env=dict(os.environ, NOTIFY_SOCKET=note.path))
    msg = note.recv(d.proc.pid)
    check(msg.get("READY") == "1", "first notification is not READY=1: %r"
          % msg)
    check(connects(d.sock), "READY=1 came before the socket accepts "
          "connections")
    check(d.sock in msg.get("STATUS", ""), "STATUS names no socket: %r" % msg)


def stop(d, note):
    """SIGTERM: STOPPING=1, then a clean exit."""
    d.proc.send_signal(signal.SIGTERM)
    msg = note.recv(d.proc.pid)
    check(msg.get("STOPPING") == "1", "SIGTERM: %r, not STOPPING=1" % msg)
    rc = d.proc.wait(timeout=WAIT_S)
    log = d.logtext()
    check(rc == 0 and "Sanitizer" not in log and "runtime error" not in log,
          "exit status %s:\n%s" % (rc, log[-3000:]))


def t_notify_ready(b):
    """READY=1 from the daemon's own pid once the socket accepts
    connections; STOPPING=1 at SIGTERM."""
    with Daemon(b, {}, start=False) as d:
        note = Notify(os.path.join(d.dir, "notify"))
        try:
            start(d, note)
            stop(d, note)
        finally:
            note.close()


def t_notify_reload(b):
    """SIGHUP: RELOADING=1, then READY=1, with a good config and with a
    bad one (the old one kept: the daemon is ready again all the same)."""
    with Daemon(b, {"tq_s": 30}, start=False) as d:
        note = Notify(os.path.join(d.dir, "notify"))
        try:
            start(d, note)
            for text in (json.dumps({"tq_s": 20}), "{ not json"):
                with open(d.conf, "w") as f:
                    f.write(text)
                d.proc.send_signal(signal.SIGHUP)
                first = note.recv(d.proc.pid)
                check(first.get("RELOADING") == "1",
                      "SIGHUP: %r, not RELOADING=1" % first)
                again = note.recv(d.proc.pid)
                check(again.get("READY") == "1",
                      "after the reload: %r, not READY=1" % again)
                check(connects(d.sock), "no socket after the reload")
            stop(d, note)
        finally:
            note.close()


if __name__ == "__main__":
    sys.exit(main(scenarios(globals())))
