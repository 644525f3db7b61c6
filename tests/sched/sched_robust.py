#!/usr/bin/env python3
"""Robustness scenarios against the real vshare-scheduler on a temporary
socket: signals, resource limits, peers that misbehave. Usage:
sched_robust.py BINDIR SCENARIO (exit 0 pass, 1 fail, 77 skipped). Each
function t_NAME is scenario NAME and ctest sched.robust.NAME;
`sched_robust.py --list` prints them."""
import json
import os
import shutil
import signal
import socket
import subprocess
import struct
import sys
import tempfile
import threading
import time

import vsproto
from schedtest import (Daemon, Fail, T, check, closed_by_peer, gpu_ref, hello,
                       main, recv_frame, recv_n, scenarios, wait_for, frame,
                       HDR)


def write_conf(d, cfg):
    with open(d.conf, "w") as f:
        f.write(cfg if isinstance(cfg, str) else json.dumps(cfg))


def hup(d):
    d.proc.send_signal(signal.SIGHUP)


def t_sighup(b):
    """SIGHUP reloads the config file; a bad file keeps the old one."""
    with Daemon(b, {"tq_s": 30, "mode": "auto"}) as d:
        a = d.client("--label", "A", "--cycles", 0, "--stay",
                     stdin=subprocess.PIPE)
        wait_for(lambda: len(d.status()["gpus"]) == 1, 5, "A's attach")
        write_conf(d, {"tq_s": 7, "mode": "on"})
        hup(d)
        wait_for(lambda: "reloaded" in d.logtext(), 5, "the reload")
        check(d.alive(), "SIGHUP ended the daemon")
        g = d.status()["gpus"][0]
        check(g["tq_s"] == 7 and g["mode"] == "on", "not applied: %s" % g)
        # A vsharectl change survives a reload that leaves tq_s alone.
        check(d.ctl("set-tq", "9")[0] == 0, "set-tq")
        write_conf(d, {"tq_s": 7, "mode": "on", "grace_ms": 1000})
        hup(d)
        wait_for(lambda: d.logtext().count("reloaded") == 2, 5, "reload 2")
        check(d.status()["gpus"][0]["tq_s"] == 9, "reload undid set-tq")
        # The log says the quantum in force, not the file's (it said 7).
        lines = [ln for ln in d.logtext().splitlines() if "reloaded" in ln]
        check("quantum 7 s, mode on," in lines[0], "reload 1: %r" % lines[0])
        check("quantum 9 s, mode on (set by vsharectl; the file says "
              "quantum 7 s, mode on)," in lines[1], "reload 2: %r" % lines[1])
        # A bad file: logged, nothing changes, the daemon serves on.
        write_conf(d, {"tq_s": 0})
        hup(d)
        wait_for(lambda: "the running configuration stays" in d.logtext(),
                 5, "the refusal")
        write_conf(d, "{ not json")
        hup(d)
        wait_for(lambda: d.logtext().count("configuration stays") == 2, 5,
                 "the second refusal")
        write_conf(d, {"tq_s": 5, "socket_group": "no-such-group-x"})
        hup(d)
        wait_for(lambda: d.logtext().count("configuration stays") == 3, 5,
                 "the refusal of an unknown group")
        check(d.alive(), "a bad file ended the daemon")
        g = d.status()["gpus"][0]
        check(g["tq_s"] == 9 and g["mode"] == "on", "changed: %s" % g)
        check("tq_s" in d.logtext(), "the error does not name the key")
        # A GPU's own entry that changes applies to that GPU now.
        write_conf(d, {"tq_s": 7, "mode": "on", "grace_ms": 1000, "gpus": {
            "GPU-00000000-0000-0000-0000-000000000001": {"tq_s": 3}}})
        hup(d)
        wait_for(lambda: d.logtext().count("reloaded") == 3, 5, "reload 3")
        g = d.status()["gpus"][0]
        check(g["tq_s"] == 3 and g["mode"] == "on", "GPU entry: %s" % g)
        line = [ln for ln in d.logtext().splitlines() if "reloaded" in ln][2]
        check(line.endswith("; GPU %d: quantum 3 s, mode on" % g["index"]),
              "reload 3: %r" % line)
        a.communicate(input="", timeout=10)
        check(d.stop() == 0, "shutdown after reloads")
        check(not os.path.exists(d.sock), "socket left")


def t_ctl_reached(b):
    """A per-GPU setting's reply counts the clients attached to that GPU
    (it said "(1 attached)", the number of GPUs, with 2 attached); one for
    all GPUs counts the GPUs."""
    u1 = "GPU-00000000-0000-0000-0000-000000000001"
    u2 = "GPU-00000000-0000-0000-0000-000000000002"
    with Daemon(b, {"tq_s": 30}) as d:
        cs = [d.client("--uuid", u, "--label", "c%d" % i, "--cycles", 0,
                       "--stay", stdin=subprocess.PIPE)
              for i, u in enumerate((u1, u2, u2))]
        wait_for(lambda: sum(len(c["gpus"]) for c in d.status()["clients"])
                 == 3, 5, "three attaches")
        index = {g["uuid"]: g["index"] for g in d.status()["gpus"]}
        for cmd, want in ((["set-tq", "3", "--gpu", str(index[u2])],
                           "quantum set to 3 s for GPU %d (2 clients "
                           "attached)" % index[u2]),
                          (["set-tq", "4", "--gpu", u1],
                           "(1 client attached)"),
                          (["enable", "--gpu", str(index[u2])],
                           "(2 clients attached)"),
                          (["set-tq", "5"],
                           "quantum set to 5 s for all GPUs (2 GPUs "
                           "attached)")):
            rc, out, err = d.ctl(*cmd)
            check(rc == 0 and want in out, "%s: rc %d %r %r" %
                  (cmd, rc, out, err))
        for c in cs:
            out, _ = c.communicate(input="", timeout=20)
            check(c.returncode == 0, "client exited %s:\n%s" %
                  (c.returncode, out))


# Connections of root and the admin group beyond max_clients
# (CONN_ADMIN_RESERVE in src/scheduler/daemon/srv.h).
ADMIN_RESERVE = 64


def t_max_clients(b):
    """Past max_clients and the admins' reserve (these connections are
    root's) a connection is refused with a reason; the others are
    served, and a place that frees up is taken again."""
    with Daemon(b, {"max_clients": 3}) as d:
        held = [d.raw() for _ in range(3 + ADMIN_RESERVE)]
        wait_for(lambda: d.ctl("status")[0] == 1, 5, "the limit reached")
        rc, out, err = d.ctl("status")
        check(rc == 1 and "max_clients 3" in err and out == "",
              "vsharectl past the limit: rc %d, %r %r" % (rc, out, err))
        rc, out, err = d.ctl("--json", "status")
        check(rc == 1 and "max_clients" in err and out == "",
              "--json past the limit: rc %d, %r" % (rc, out))
        s = d.raw()
        f = recv_frame(s)
        check(f is not None and f[0] == T["ERROR"], "no ERROR frame")
        code, detail = struct.unpack("<iI", f[1][:8])
        check(detail == 3 and b"max_clients" in f[1], "error %r" % (f,))
        check(closed_by_peer(s), "refused connection left open")
        # The connections within the limit are served.
        held[0].sendall(hello(b"in"))
        f = recv_frame(held[0])
        check(f is not None and f[0] == T["WELCOME"], "held conn not served")
        held[1].close()
        wait_for(lambda: d.ctl("status")[0] == 0, 5, "a place freed")
        for h in held:
            h.close()


def t_no_reader(b):
    """A peer that makes the daemon answer but never reads is no longer
    read once its queue backs up: its sends block, the daemon's memory
    stays bounded, the others are served meanwhile, and once it reads
    again it gets every answer and is read again."""
    with Daemon(b, {"mode": "on"}) as d:
        s = d.raw()
        s.sendall(hello(b"deaf"))
        # Each REQUEST for a GPU never attached earns a 152-byte ERROR.
        burst = gpu_ref("REQUEST") * 4096
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        sent, throttled = 0, False
        s.settimeout(2)
        try:
            while sent < 400000:
                s.sendall(burst)
                sent += 4096
        except socket.timeout:
            throttled = True
        check(throttled, "never throttled after %d unread answers" % sent)
        c = d.client("--label", "C", "--hold-ms", 10)
        out, _ = c.communicate(timeout=10)
        check(c.returncode == 0, "a reader was not served: " + out)
        rss = int([l for l in open("/proc/%d/status" % d.proc.pid)
                   if l.startswith("VmRSS")][0].split()[1])
        check(rss < 64 * 1024, "daemon RSS %d KiB" % rss)
        # Reading drains the queue and the daemon reads the peer again.
        s.settimeout(5)
        check(recv_frame(s)[0] == T["WELCOME"], "no welcome")
        # More answers than the socket and the daemon's queue hold: the
        # daemon must have read the peer again to send them all.
        check(sent >= 8192, "throttled after only %d requests" % sent)
        for _ in range(sent):
            f = recv_frame(s)
            check(f is not None and f[0] == T["ERROR"], "answer %r" % (f,))
        check(d.alive(), "daemon died")


def t_config_fifo(b):
    """A FIFO (or anything but a regular file) where the config file was:
    SIGHUP refuses it at once and the daemon serves on; at start it is an
    error with a reason. Trailing data after the object is refused too."""
    with Daemon(b, {"tq_s": 30}) as d:
        os.unlink(d.conf)
        os.mkfifo(d.conf)
        hup(d)
        wait_for(lambda: "not a regular file" in d.logtext(), 5,
                 "the FIFO refused")
        t0 = time.monotonic()
        check(d.ctl("status")[0] == 0 and time.monotonic() - t0 < 5,
              "the daemon stopped serving after SIGHUP on a FIFO")
        os.unlink(d.conf)
        write_conf(d, '{"tq_s": 7} {"tq_s": 8}')
        hup(d)
        wait_for(lambda: "data after the JSON object" in d.logtext(), 5,
                 "trailing data refused")
        check(d.alive(), "daemon died")
    d = Daemon(b, start=False)
    try:
        os.unlink(d.conf)
        os.mkfifo(d.conf)
        p = subprocess.run([d.bin("vshare-scheduler"), "--socket", d.sock,
                            "--config", d.conf], capture_output=True,
                           text=True, timeout=10)
        check(p.returncode == 1 and "not a regular file" in p.stderr,
              "start with a FIFO: rc %d %s" % (p.returncode, p.stderr))
    finally:
        shutil.rmtree(d.dir, ignore_errors=True)


def fake_daemon(path, answers):
    """Serve one connection per answer: read the request, send the answer
    (bytes), close."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)

    def run():
        for a in answers:
            c, _ = srv.accept()
            h = recv_n(c, HDR.size)
            if h:
                recv_n(c, HDR.unpack(h)[4])
            c.sendall(a)
            c.close()
        srv.close()
    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


def reply(status, text):
    body = text.encode()
    return frame(T["REPLY"], struct.pack("<iI", status, len(body)) + body)


def error(code, msg):
    return frame(T["ERROR"], struct.pack("<iI128s", code, 0, msg.encode()))


def t_ctl_errors(b):
    """vsharectl: every failure is a message on stderr and a documented
    exit code; with --json stdout holds valid JSON or nothing."""
    tmp = tempfile.mkdtemp(prefix="vshare-ctl-")
    sock = os.path.join(tmp, "s.sock")
    ctl = os.path.join(b, "vsharectl")
    cases = [  # (answer, args, exit, stderr wants, stdout is JSON)
        (reply(0, "{not json"), ["--json", "status"], 1, "not valid JSON",
         False),
        (reply(0, "{not json"), ["status"], 1, "not valid JSON", False),
        (error(-16, "too many connections"), ["--json", "status"], 1,
         "too many connections", False),
        (b"", ["--json", "status"], 1, "closed the connection", False),
        (b"\0" * 32, ["--json", "status"], 1, "malformed reply", False),
        (reply(-22, "quantum must be 1 to 86400 seconds"),
         ["--json", "set-tq", "5"], 1, "quantum must be", True),
        (reply(-1, "permission denied: admin requests need root"),
         ["--json", "enable"], 1, "permission denied", True),
        (reply(0, '{"gpus": [], "clients": []}'), ["--json", "status"], 0,
         "", True),
        # A status document far larger than any fixed frame.
        (reply(0, json.dumps({"gpus": [], "clients": [],
                              "pad": "x" * 300000})),
         ["--json", "status"], 0, "", True),
        # A daemon of another version: its error is still read and shown.
        (frame(T["ERROR"], struct.pack("<iI128s", -95, 11,
                                       b"version 11 here: update vsharectl"),
               version=11),
         ["--json", "status"], 1, "update vsharectl", False),
        (frame(T["WELCOME"], struct.pack("<II", 11, 1), version=11),
         ["status"], 1, "protocol version mismatch", False),
        # A daemon of version 1 refuses a request of version 2.
        (frame(T["ERROR"], struct.pack("<iI128s", -95, 1,
                                       b"vshare-scheduler speaks protocol "
                                       b"version 1")),
         ["set-slice", "100"], 1, "set-slice needs protocol version 2, and "
         "the running vshare-scheduler speaks version 1", False),
    ]
    try:
        th = fake_daemon(sock, [c[0] for c in cases])
        for ans, args, ec, want, is_json in cases:
            r = subprocess.run([ctl, "-s", sock] + args, capture_output=True,
                               text=True, timeout=20)
            what = "%s -> %r" % (args, ans[:24])
            check(r.returncode == ec, "%s: exit %d, not %d (%s)" %
                  (what, r.returncode, ec, r.stderr))
            check(want in r.stderr and (ec == 0) == (r.stderr == ""),
                  "%s: stderr %r" % (what, r.stderr))
            if is_json:
                json.loads(r.stdout)
            else:
                check(r.stdout == "", "%s: stdout %r" % (what, r.stdout))
        th.join(5)
        # Usage errors and a missing daemon: text, nothing on stdout.
        for args, ec in ((["--json", "frobnicate"], 2),
                         (["--json", "set-tq", "0"], 2),
                         (["--json", "status", "--gpu", "x"], 2),
                         (["--json", "status"], 3)):
            r = subprocess.run([ctl, "-s", sock] + args, capture_output=True,
                               text=True, timeout=20)
            check(r.returncode == ec and r.stdout == "" and r.stderr,
                  "%s: exit %d, %r %r" % (args, r.returncode, r.stdout,
                                          r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def t_ctl_check_answers(b):
    """vsharectl check beside a daemon of another release: it answers, so
    the line says reachable, with both versions and the daemon's words,
    exit 1; never "not reachable" (it runs), nothing on stderr. One that
    refuses the connection (max_clients) runs too, exit 0."""
    tmp = tempfile.mkdtemp(prefix="vshare-ctl-")
    sock = os.path.join(tmp, "s.sock")
    ctl = os.path.join(b, "vsharectl")
    ours = "this vsharectl versions %d to %d" % (vsproto.VERSION_MIN,
                                                vsproto.VERSION)
    cases = [  # (answer, exit, stdout wants)
        # A newer daemon's refusal, in its own header version.
        (frame(T["ERROR"], struct.pack("<iI128s", -95, 11,
                                       b"version 11 here: update vsharectl"),
               version=11), 1,
         "scheduler: reachable, but it speaks protocol version 11 and " +
         ours + ": install vsharectl and vshare-scheduler of one vshare "
         "release (it says: version 11 here: update vsharectl)\n"),
        # A newer daemon that answers in its version, with no error.
        (frame(T["WELCOME"], struct.pack("<II", 11, 1), version=11), 1,
         "scheduler: reachable, but it speaks protocol version 11 and " +
         ours + ": install vsharectl and vshare-scheduler of one vshare "
         "release\n"),
        # An older one that refuses the request's version in ours.
        (error(-95, "vshare-scheduler speaks protocol version 1"), 1,
         "scheduler: reachable, but it refused"),
        # One at its max_clients.
        (error(-28, "too many connections (max_clients 2)"), 0,
         "scheduler: reachable (this connection refused: too many "
         "connections (max_clients 2))\n"),
        # One that answers nothing at all.
        (b"", 3, "scheduler: not reachable: no answer from %s (above)\n" %
         sock),
    ]
    try:
        th = fake_daemon(sock, [c[0] for c in cases])
        for ans, ec, want in cases:
            r = subprocess.run([ctl, "-s", sock, "check"],
                               capture_output=True, text=True, timeout=20)
            what = "check -> %r" % ans[:24]
            check(r.returncode == ec, "%s: exit %d, not %d (%s %s)" %
                  (what, r.returncode, ec, r.stdout, r.stderr))
            check(r.stdout.startswith(want) if want.endswith("refused")
                  else r.stdout == want, "%s: stdout %r" % (what, r.stdout))
            check((ec == 3) == (r.stderr != ""),
                  "%s: stderr %r" % (what, r.stderr))
        th.join(5)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def t_set_tq_running(b):
    """A shorter quantum set while a holder runs and another waits takes
    effect at once: the daemon's timer follows the new deadline."""
    with Daemon(b, {"mode": "on", "tq_s": 60}) as d:
        a = d.client("--label", "A", "--hold-ms", 20000)
        wait_for(lambda: len(d.status()["gpus"]) == 1 and
                 len(d.status()["gpus"][0]["holders"]) == 1, 5, "A holds")
        w = d.client("--label", "W", "--hold-ms", 10)
        wait_for(lambda: len(d.status()["gpus"][0]["queue"]) == 1, 5,
                 "W waits")
        t0 = time.monotonic()
        check(d.ctl("set-tq", "1")[0] == 0, "set-tq")
        out, _ = w.communicate(timeout=10)
        check(w.returncode == 0, "W: " + out)
        check(time.monotonic() - t0 < 3, "W waited %.1f s after set-tq 1" %
              (time.monotonic() - t0))
        a.communicate(timeout=25)


def t_label_utf8(b):
    """Labels that are not UTF-8 are cleaned at HELLO: the status stays
    valid JSON (UTF-8) for every consumer."""
    labels = {b"job-\xff\xfe-x": "job-??-x", b"caf\xc3\xa9": "caf\u00e9",
              b"cut-\xe2\x82": "cut-??", b"sur-\xed\xa0\x80": "sur-???",
              b"long-\xf0\x80\x80\x80": "long-????",
              b"\xc3\xa9" * 10: "\u00e9" * 10}
    with Daemon(b) as d:
        conns = []
        for raw in labels:
            s = d.raw()
            s.sendall(hello(raw))
            f = recv_frame(s)
            check(f is not None and f[0] == T["WELCOME"], "no welcome")
            conns.append(s)
        for args in (["--json", "status"], ["status"]):
            r = subprocess.run([d.bin("vsharectl"), "-s", d.sock] + args,
                               capture_output=True, timeout=20)
            check(r.returncode == 0, "status: %r" % r.stderr)
            try:
                text = r.stdout.decode("utf-8")
            except UnicodeDecodeError as e:
                raise Fail("%s output is not UTF-8: %s" % (args, e))
            if args[0] == "--json":
                got = sorted(c["label"] for c in json.loads(text)["clients"])
                check(got == sorted(labels.values()), "labels %r" % got)
        for s in conns:
            s.close()


def t_sigterm_busy(b):
    """SIGTERM in the middle of heavy lock traffic: a clean exit (status 0,
    sanitizers quiet), the socket removed, every client told by EOF."""
    with Daemon(b, {"mode": "on", "log_level": "warn"}) as d:
        load = [d.client("--clients", 200, "--cycles", 1000000, "--hold-ms",
                         0, "--quiet", "--timeout-ms", 30000)
                for _ in range(2)]
        wait_for(lambda: len(d.status()["clients"]) >= 300, 10, "the load")
        time.sleep(0.5)
        t0 = time.monotonic()
        rc = d.stop()
        check(rc == 0, "exit status %s:\n%s" % (rc, d.logtext()[-2000:]))
        check(time.monotonic() - t0 < 5, "shutdown took %.1f s" %
              (time.monotonic() - t0))
        check(not os.path.exists(d.sock), "socket left behind")
        log = d.logtext()
        check("Sanitizer" not in log and "runtime error" not in log, log)
        for p in load:
            p.communicate(timeout=10)
            check(p.returncode != 0, "a client did not notice the end")


def t_start_errors(b):
    """Start-up errors: exit status 1 and a line that says why."""
    tmp = tempfile.mkdtemp(prefix="vshare-start-")
    os.chmod(tmp, 0o755)
    prog = os.path.join(b, "vshare-scheduler")
    conf = os.path.join(tmp, "c.json")
    with open(conf, "w") as f:
        f.write("{}")
    with open(os.path.join(tmp, "file"), "w") as f:
        f.write("x")
    ro = os.path.join(tmp, "ro")
    os.mkdir(ro, 0o555)
    cases = [
        (["--socket", os.path.join(tmp, "x" * 120)], "too long"),
        (["--socket", os.path.join(tmp, "file", "s.sock")],
         "Not a directory"),
        (["--config", tmp], "is a directory"),
        (["--config", os.path.join(tmp, "none.json")], "No such file"),
    ]
    if os.geteuid() == 0:
        # Root ignores directory permissions: be nobody.
        cases.append((["--socket", os.path.join(ro, "s.sock")],
                      "permission denied"))
    try:
        for args, want in cases:
            cmd = [prog, "--config", conf] + args
            if "permission denied" == want:
                pub = os.path.join(tmp, "vshare-scheduler")
                shutil.copy(prog, pub)
                os.chmod(pub, 0o755)
                cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup",
                       "--clear-groups", pub, "--config", conf] + args
            r = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=10)
            check(r.returncode == 1 and want in r.stderr,
                  "%s: exit %d, %r" % (args, r.returncode, r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(scenarios(globals())))
