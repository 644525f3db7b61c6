#!/usr/bin/env python3
"""Attacks on the metrics endpoint over HTTP (metrics_listen): connections
from many addresses that fill its slots, and peers that trickle a request
(slowloris). Whoever reaches the address may attack, whatever their uid,
so these tests need no second user.

Usage: sched_hostile_http.py BINDIR SCENARIO (exit 0 pass, 1 fail).

The daemon's limits (src/scheduler/daemon/http.c, docs/operations.md): 64
connections, 4 per client address, and a connection is closed 5 s after
it was accepted, whatever it does (each answer closes it anyway). Every
connection here is to 127.0.0.1, from a source address of 127.0.0.0/8
(all of them are the loopback's)."""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedtest import Daemon, Fail, check, main, scenarios  # noqa: E402
from sched_metrics import free_port  # noqa: E402

CONNS, PER_ADDR, DEADLINE = 64, 4, 5.0
# A deadline is kept to this much, however loaded the machine.
SLACK = 3.0
# A scrape must be answered within this.
SCRAPE_S = 2.0
HOST = "127.0.0.1"
REQUEST = (b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           b"Connection: close\r\n\r\n")


def addr(i):
    """The i-th source address (1-based), 127.0.0.i."""
    return "127.0.0.%d" % i


def connect_from(src, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.settimeout(5)
    s.connect((HOST, port))
    return s


def scrape(port, src, what="a scrape"):
    """GET /metrics from address src: the status line and body, or None
    when the daemon closed the connection unanswered. Fails when no end
    comes within SCRAPE_S."""
    end = time.monotonic() + SCRAPE_S
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    data = b""
    try:
        s.bind((src, 0))
        s.settimeout(SCRAPE_S)
        s.connect((HOST, port))
        s.sendall(REQUEST)
        while True:
            s.settimeout(max(0.001, end - time.monotonic()))
            d = s.recv(65536)
            if not d:
                break
            data += d
    except socket.timeout:
        raise Fail("%s: a scrape from %s had no answer within %.0f s"
                   % (what, src, SCRAPE_S))
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        s.close()
    if not data:
        return None
    top, _, body = data.partition(b"\r\n\r\n")
    return top.split(b"\r\n", 1)[0].decode(), body


def answered(port, src, what):
    got = scrape(port, src, what)
    check(got is not None, "%s: a scrape from %s was refused" % (what, src))
    check(got[0] == "HTTP/1.1 200 OK" and b"vshare_" in got[1],
          "%s: a scrape from %s got %r" % (what, src, got[0]))


def closed_within(s, timeout):
    """True if the daemon closes s within timeout (nothing must come)."""
    s.settimeout(timeout)
    try:
        d = s.recv(4096)
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True
    check(not d, "the daemon sent %r to a connection without a request" % d)
    return True


class StatusFlood:
    """hostile_peer.py's STATUS flood on the daemon's socket, as this
    user, until stop()."""

    def __init__(self, d, nconn=8):
        peer = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "hostile_peer.py")
        self.p = subprocess.Popen(
            [sys.executable, peer, d.sock, "status", str(nconn)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        check(self.p.stdout.readline(), "the STATUS flood did not start")

    def stop(self):
        """The replies it read; it is gone either way."""
        try:
            # No input: communicate closes stdin, which stops the flood.
            out, _ = self.p.communicate(timeout=30)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
        lines = out.strip().splitlines()
        return json.loads(lines[-1])["replies"] if lines else 0


def hold_round(port, naddrs, stop_pid=None):
    """PER_ADDR connections from each of naddrs addresses, held 1 s, then
    all closed. With stop_pid, the daemon is stopped while they close, so
    that one run of its HTTP server sees every hang-up."""
    socks = []
    try:
        for i in range(1, naddrs + 1):
            for _ in range(PER_ADDR):
                socks.append(connect_from(addr(i), port))
        time.sleep(1)
        if stop_pid:
            os.kill(stop_pid, signal.SIGSTOP)
    finally:
        try:
            for s in socks:
                s.close()
            if stop_pid:
                time.sleep(0.2)
        finally:
            if stop_pid:
                os.kill(stop_pid, signal.SIGCONT)


def t_metrics_conns(b):
    """Connections that fill the endpoint's slots, held 1 s and then all
    closed at once: 20 from 5 addresses (as they were found to wedge the
    endpoint), more than the total limit (17 addresses), the same with
    the daemon stopped while they close, and both again during a STATUS
    flood on the socket. After each round a scrape from yet another
    address is answered within 2 s."""
    port = free_port()
    past = CONNS // PER_ADDR + 1
    rounds = [(5, "20 connections"), (5, "20 connections again"),
              (past, "past the total limit"),
              (past, "past the limit, hung up in one run")]
    with Daemon(b, {"metrics_listen": "%s:%d" % (HOST, port)}) as d:
        answered(port, addr(100), "before")
        for naddrs, what in rounds:
            stop = d.proc.pid if "one run" in what else None
            hold_round(port, naddrs, stop)
            answered(port, addr(100), "after " + what)
        flood = StatusFlood(d)
        try:
            for naddrs in (5, past):
                hold_round(port, naddrs)
                answered(port, addr(100), "after %d addresses during a "
                         "STATUS flood" % naddrs)
        finally:
            replies = flood.stop()
        check(replies > 0, "the STATUS flood got no reply")


class Slowloris(threading.Thread):
    """per connections from each address of addrs, each sending the start
    of a request and then one header line every `every` s, never its end;
    a connection the daemon closes is opened again at the next line.
    Records each closed connection's life."""

    def __init__(self, port, addrs, per, every=2.0):
        super().__init__(daemon=True)
        self.port, self.addrs, self.per, self.every = port, addrs, per, every
        # socket: [address, connected at, lines sent, last line at]
        self.open = {}
        # (seconds open, lines sent, seconds since the last line) of each
        # closed connection
        self.lives = []
        self.answers = 0    # bytes the daemon sent (it must send none)
        self.error = None
        self.done = threading.Event()

    def fill(self):
        have = [v[0] for v in self.open.values()]
        for a in self.addrs:
            for _ in range(self.per - have.count(a)):
                t = time.monotonic()
                s = connect_from(a, self.port)
                s.setblocking(False)
                self.open[s] = [a, t, 0, t]
                self.line(s, b"GET /metrics HTTP/1.1\r\n")

    def line(self, s, text):
        try:
            s.send(text)
            self.open[s][2] += 1
            self.open[s][3] = time.monotonic()
        except OSError:
            self.gone(s)

    def gone(self, s):
        _, t, lines, last = self.open.pop(s)
        now = time.monotonic()
        self.lives.append((now - t, lines, now - last))
        s.close()

    def run(self):
        try:
            n, tick = 0, time.monotonic()
            while not self.done.is_set():
                self.fill()
                tick += self.every
                while time.monotonic() < tick and not self.done.is_set():
                    r, _, _ = select.select(list(self.open), [], [],
                                            max(0, tick - time.monotonic()))
                    for s in r:
                        try:
                            d = s.recv(4096)
                        except OSError:
                            d = b""
                        self.answers += len(d)
                        if not d:
                            self.gone(s)
                n += 1
                for s in list(self.open):
                    self.line(s, b"X-Trickle-%d: x\r\n" % n)
        except Exception as e:  # reported by the test's thread
            self.error = e

    def stop(self):
        """The ages of the connections still open; all are closed."""
        self.done.set()
        self.join(10)
        check(not self.is_alive(), "the slowloris did not stop")
        now = time.monotonic()
        ages = [now - v[1] for v in self.open.values()]
        for s in self.open:
            s.close()
        return ages


def t_metrics_slowloris(b):
    """Slowloris from 5 addresses, 6 connections each (2 past an
    address's limit), one header line every 2 s, for 14 s: scrapes from
    another address are answered within 2 s throughout. The daemon closes
    each trickling connection at the deadline (5 s, 3 s of slack), though
    it never falls silent, and refuses each address's connections past 4
    at once."""
    port = free_port()
    with Daemon(b, {"metrics_listen": "%s:%d" % (HOST, port)}) as d:
        loris = Slowloris(port, [addr(i) for i in range(1, 6)], PER_ADDR + 2)
        loris.start()
        try:
            end = time.monotonic() + 14
            n = 0
            while time.monotonic() < end and loris.error is None:
                answered(port, addr(100), "scrape %d during the slowloris"
                         % n)
                n += 1
                time.sleep(0.5)
        finally:
            ages = loris.stop()
        check(loris.error is None, "the slowloris failed: %r" % loris.error)
        check(loris.answers == 0, "the daemon answered an unfinished "
              "request (%d bytes)" % loris.answers)
        # A refused connection is closed as soon as the daemon takes it,
        # a held one at its deadline: half of that tells them apart.
        held = [life for life in loris.lives if life[0] > DEADLINE / 2]
        refused = [life for life in loris.lives if life[0] <= DEADLINE / 2]
        # 20 connections held (5 addresses at their limit), each for 5 s
        # of the 14.
        check(len(held) >= 20, "only %d trickling connections were "
              "closed: %s" % (len(held), held))
        # Closed while they were talking: not for silence (the idle
        # timeout is 5 s too).
        check(all(n >= 2 and quiet < DEADLINE - 1 for t, n, quiet in held),
              "a connection was closed for silence: %s" % held)
        longest = max([life[0] for life in held] + ages)
        check(longest <= DEADLINE + SLACK, "a trickling connection was "
              "kept %.1f s" % longest)
        shortest = min(life[0] for life in held)
        check(shortest >= DEADLINE - 0.1, "a trickling connection was "
              "closed after %.1f s, before the deadline" % shortest)
        check(len(refused) >= 10, "connections past an address's limit "
              "were not refused: %d" % len(refused))
        check(d.alive(), "the daemon died")


def t_metrics_per_address(b):
    """An address gets 4 connections; its 5th and 6th are closed at once,
    and so is its scrape, while another address's scrape is answered;
    once one of its 4 is closed, it is served again. Its 3 others, silent,
    are closed at the deadline (5 s), not before."""
    port = free_port()
    with Daemon(b, {"metrics_listen": "%s:%d" % (HOST, port)}) as d:
        t0 = time.monotonic()
        socks = [connect_from(addr(7), port) for _ in range(PER_ADDR + 2)]
        try:
            # The daemon takes them in order: once the 6th is refused,
            # the first 4 have been taken.
            check(closed_within(socks[-1], SLACK), "the 6th connection "
                  "from one address was kept")
            check(closed_within(socks[-2], 0.5), "the 5th connection "
                  "from one address was kept")
            for i, s in enumerate(socks[:PER_ADDR]):
                check(not closed_within(s, 0.05), "connection %d of 4 "
                      "from one address was refused" % (i + 1))
            check(scrape(port, addr(7)) is None, "a 5th connection from "
                  "one address was answered")
            answered(port, addr(8), "another address")
            socks[0].close()
            end = time.monotonic() + SLACK
            while scrape(port, addr(7)) is None:
                check(time.monotonic() < end, "an address was not served "
                      "again after one of its connections closed")
                time.sleep(0.1)
            answered(port, addr(7), "an address below its limit again")
            for i, s in enumerate(socks[1:PER_ADDR]):
                check(closed_within(s, max(0.001, t0 + DEADLINE + SLACK -
                                           time.monotonic())),
                      "a silent connection was kept past %.0f s"
                      % (DEADLINE + SLACK))
                age = time.monotonic() - t0
                check(age >= DEADLINE - 0.1, "a silent connection was "
                      "closed after %.1f s, before the deadline" % age)
        finally:
            for s in socks:
                s.close()
        check(d.alive(), "the daemon died")


if __name__ == "__main__":
    raise SystemExit(main(scenarios(globals())))
