#!/usr/bin/env python3
"""Socket activation (vshare-scheduler.socket), against the real
vshare-scheduler under systemd-socket-activate, which listens on the
socket and starts the daemon with it at the first connection, passing it
as systemd does (LISTEN_FDS, LISTEN_PID); systemd itself never runs.
Usage: sched_activate.py BINDIR SCENARIO (exit 0 pass, 1 fail, 77
skipped). Each function t_NAME is scenario NAME and ctest
sched.robust.NAME; `sched_activate.py --list` prints them."""
import os
import shutil
import socket
import subprocess
import sys
import time

from schedtest import Daemon, check, main, scenarios, wait_for

# Generous: a sanitizer build on a loaded machine starts slowly.
WAIT_S = 20


def activator(d, listen, env=None):
    """systemd-socket-activate listening on `listen` that runs the daemon
    (configured for d.sock) at the first connection; its Popen, once the
    socket is there."""
    tool = shutil.which("systemd-socket-activate")
    if tool is None:
        print("SKIP: systemd-socket-activate not installed (Debian: systemd)")
        sys.exit(77)
    os.makedirs(os.path.dirname(listen), mode=0o755, exist_ok=True)
    log = open(d.log, "a")
    d.proc = subprocess.Popen([tool, "-l", listen, "--"] + d.argv(),
                              stdout=log, stderr=log,
                              env=env or dict(os.environ))
    wait_for(lambda: os.path.exists(listen) or d.proc.poll() is not None,
             WAIT_S, "systemd-socket-activate's socket")
    check(d.proc.poll() is None, "systemd-socket-activate exited:\n"
          + d.logtext())
    return d.proc


def running(pid):
    """The program pid runs now (its executable's name)."""
    try:
        return os.path.basename(os.readlink("/proc/%d/exe" % pid))
    except OSError:
        return ""


def t_activate_waits(b):
    """The socket exists before the daemon runs; a client that connects
    then is accepted once the daemon starts, by the daemon itself, on the
    socket it was given; the daemon leaves the socket file to systemd."""
    with Daemon(b, {}, start=False) as d:
        activator(d, d.sock)
        check(running(d.proc.pid) == "systemd-socket-activate",
              "the daemon runs before any client came (%s)"
              % running(d.proc.pid))
        # A client of the socket before the daemon exists: its connect
        # is queued by the kernel, and its request waits for the daemon.
        early = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        early.settimeout(WAIT_S)
        early.connect(d.sock)
        rc, out, err = d.ctl("status")
        check(rc == 0,
              "vsharectl status through the activated socket: %d %s %s"
              % (rc, out, err))
        check(running(d.proc.pid) == "vshare-scheduler",
              "the daemon does not run after the first client (%s)"
              % running(d.proc.pid))
        log = d.logtext()
        check("socket from systemd" in log and d.sock in log,
              "the daemon does not say it took the socket from systemd:\n"
              + log[-2000:])
        early.close()
        rc = d.stop()
        check(rc == 0, "exit status %s at SIGTERM:\n%s" % (rc, d.logtext()))
        check(os.path.exists(d.sock),
              "the daemon removed the socket that systemd owns")


def t_activate_wrong_socket(b):
    """A socket other than the configured one: the daemon refuses it,
    naming both, and exits with an error instead of serving it."""
    with Daemon(b, {}, start=False) as d:
        other = os.path.join(d.dir, "run", "other.sock")
        activator(d, other)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(other)
        try:
            rc = d.proc.wait(timeout=WAIT_S)
        finally:
            s.close()
        log = d.logtext()
        check(rc not in (0, None), "the daemon served another socket "
              "(exit %s):\n%s" % (rc, log[-2000:]))
        check(other in log and d.sock in log and "not the configured" in log,
              "the refusal does not name both sockets:\n" + log[-2000:])
        check(not os.path.exists(d.sock),
              "the daemon bound its own socket besides")


def t_activate_not_unix(b):
    """A TCP socket from systemd: refused as not a Unix stream socket."""
    with Daemon(b, {}, start=False) as d:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        tool = shutil.which("systemd-socket-activate")
        if tool is None:
            print("SKIP: systemd-socket-activate not installed")
            sys.exit(77)
        log = open(d.log, "a")
        d.proc = subprocess.Popen([tool, "-l", "127.0.0.1:%d" % port, "--"]
                                  + d.argv(), stdout=log, stderr=log)
        end = time.monotonic() + WAIT_S
        while True:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.connect(("127.0.0.1", port))
                break
            except OSError:
                check(time.monotonic() < end and d.proc.poll() is None,
                      "systemd-socket-activate does not listen:\n"
                      + d.logtext())
                time.sleep(0.05)
            finally:
                s.close()
        rc = d.proc.wait(timeout=WAIT_S)
        text = d.logtext()
        check(rc not in (0, None) and "not a listening Unix stream socket"
              in text, "exit %s:\n%s" % (rc, text[-2000:]))


if __name__ == "__main__":
    sys.exit(main(scenarios(globals())))
