#!/usr/bin/env python3
"""The metrics of the real vshare-scheduler: over HTTP (metrics_listen) and
through `vsharectl metrics`, against what sched_testclient did. Usage:
sched_metrics.py BINDIR SCENARIO (exit 0 pass, 1 fail, 77 skipped). Each
function t_NAME is scenario NAME and ctest sched.metrics_it.NAME.

The daemon renders the text at most once a second (METRICS_CACHE_MS):
what must show a change polls for it."""
import http.client
import os
import shutil
import re
import socket
import struct
import subprocess
import time

import vsproto
from schedtest import (Daemon, short_tmpdir, Fail, T, VERSION2, VERSION3, check, frame,
                       main, recv_frame, scenarios, wait_for)

# sched_testclient's GPU, vouched for by the configuration: it has series
# of its own whatever else attaches (others, only the first metrics_gpus).
GPU = "GPU-00000000-0000-0000-0000-000000000001"
VOUCHED = {"gpus": {GPU: {"mode": "on"}}}


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path="/metrics", method="GET"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path)
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), body


def samples(text):
    """{'name{labels}': value} of an exposition text."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, val = line.rsplit(" ", 1)
            out[key] = float(val)
    return out


def total(smp, name, **labels):
    """The sum of the samples of `name` whose labels include `labels`."""
    n = 0.0
    for key, v in smp.items():
        m = re.match(r"([a-z_]+)(\{(.*)\})?$", key)
        if m.group(1) != name:
            continue
        got = dict(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"',
                              m.group(3) or ""))
        if all(got.get(k) == v2 for k, v2 in labels.items()):
            n += v
    return n


def head(port):
    """A HEAD of /metrics on a raw socket: (status line, headers, the
    bytes after them). http.client never reads a HEAD's body, so it could
    not tell that none came."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Connection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    top, _, rest = data.partition(b"\r\n\r\n")
    lines = top.decode().split("\r\n")
    hdr = dict(l.split(": ", 1) for l in lines[1:] if ": " in l)
    return lines[0], hdr, rest


def scrape_until(port, pred, what, timeout=5):
    """The samples of the first scrape for which pred(samples) holds."""
    got = {}

    def ok():
        got["s"] = samples(get(port)[2])
        return pred(got["s"])
    wait_for(ok, timeout, what)
    return got["s"]


def finish(p, what):
    out, _ = p.communicate(timeout=30)
    check(p.returncode == 0, "%s exited %s" % (what, p.returncode))
    return out


def t_http(b):
    """Two clients take turns; HTTP and vsharectl tell the same counts."""
    port = free_port()
    conf = dict(VOUCHED, mode="on", tq_s=1, policy="fcfs",
                metrics_listen="127.0.0.1:%d" % port)
    with Daemon(b, conf) as d:
        check("metrics on http://127.0.0.1:%d/metrics" % port in d.logtext(),
              "the start-up line names the endpoint")
        a = d.client("--label", "A", "--hold-ms", 1500, "--cycles", 2)
        bb = d.client("--label", "B", "--hold-ms", 1500, "--cycles", 2)
        # Scrapes while the clients take turns: counters never go back,
        # and in mode on there is never more than one holder.
        last = 0
        while a.poll() is None or bb.poll() is None:
            status, _, text = get(port)
            smp = samples(text)
            check(status == 200, "GET during the workload: %d" % status)
            g = total(smp, "vshare_grants_total")
            check(g >= last, "grants went back: %s after %s" % (g, last))
            check(total(smp, "vshare_gpu_holders") <= 1, "two holders")
            last = g
            time.sleep(0.05)
        finish(a, "A")
        finish(bb, "B")
        # The text of a second ago may predate the last release.
        scrape_until(port, lambda s: total(s, "vshare_hold_seconds_count")
                     == 4, "4 holds")
        status, hdr, text = get(port)
        check(status == 200, "GET /metrics: %d" % status)
        check(hdr.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
              "content type %r" % hdr.get("Content-Type"))
        smp = samples(text)
        grants = total(smp, "vshare_grants_total")
        check(grants == 4, "4 grants, not %s" % grants)
        check(total(smp, "vshare_grants_total", kind="exclusive") == 4,
              "mode on grants exclusively")
        check(total(smp, "vshare_hold_seconds_count") == 4, "4 holds")
        check(total(smp, "vshare_wait_seconds_count") == 4, "4 waits")
        check(total(smp, "vshare_handoffs_total") >= 2, "hand-offs")
        check(total(smp, "vshare_drops_total", reason="quantum") >= 2,
              "quantum drops under a 1 s quantum")
        held = total(smp, "vshare_gpu_held_seconds_total", uid=str(os.getuid()))
        hold = total(smp, "vshare_hold_seconds_sum")
        check(abs(held - hold) < 0.01 and held >= 3.0,
              "held time %.3f s, holds %.3f s" % (held, hold))
        check(total(smp, "vshare_gpu_holders") == 0 and
              total(smp, "vshare_gpu_queue_length") == 0, "all released")
        check(total(smp, "vshare_connections_total") >= 3, "connections")
        # vsharectl reads the same text (its own connection aside).
        rc, out, err = d.ctl("metrics")
        check(rc == 0 and err == "", "vsharectl metrics: %d %s" % (rc, err))
        strip = re.compile(r"^vshare_connections_(open|total) .*\n", re.M)
        check(strip.sub("", out) == strip.sub("", text),
              "vsharectl metrics differs from HTTP")
        # Only GET and HEAD of /metrics.
        check(get(port, method="POST")[0] == 405, "POST refused")
        check(get(port, "/")[0] == 404, "/ not found")
        st, hdr, rest = head(port)
        check(st.startswith("HTTP/1.1 200 ") and rest == b"" and
              int(hdr.get("Content-Length", "-1")) == len(text.encode()),
              "HEAD: %s, %r, %d bytes after the headers"
              % (st, hdr, len(rest)))


def t_unverified(b):
    """A client attaching made-up UUIDs adds no series past metrics_gpus:
    the configured GPU has its own, the first two others too, the rest
    are only counted."""
    port = free_port()
    conf = dict(VOUCHED, metrics_listen="127.0.0.1:%d" % port,
                metrics_gpus=2)
    with Daemon(b, conf) as d:
        a = d.client("--label", "A", "--hold-ms", 10, "--cycles", 1)
        finish(a, "A")
        scrape_until(port, lambda s: total(s, "vshare_grants_total") == 1,
                     "A's grant")
        for i in range(5):
            c = d.client("--uuid", "GPU-deadbeef-0000-0000-0000-%012d" % i,
                         "--hold-ms", 10, "--cycles", 1)
            finish(c, "made-up GPU %d" % i)
        smp = scrape_until(port, lambda s: total(s, "vshare_gpus_unverified")
                           == 3, "3 unverified GPUs")
        made_up = {re.search(r'gpu="(GPU-deadbeef[0-9a-f-]+)"', k).group(1)
                   for k in smp if "deadbeef" in k}
        check(made_up == {"GPU-deadbeef-0000-0000-0000-%012d" % i
                          for i in (0, 1)},
              "made-up GPUs with series: %r" % made_up)
        check(total(smp, "vshare_grants_total", gpu=GPU) == 1,
              "the configured GPU's grant")


def t_capacity_unknown(b):
    """A GPU whose capacity nothing gives (no NVML, none configured, its
    last client gone) says so: "capacity unknown" in the status, and no
    capacity series, where it said 0 B and exported 0."""
    with Daemon(b, {"mode": "on"}) as d:
        a = d.client("--label", "A", "--hold-ms", 10, "--cycles", 1)
        finish(a, "A")
        wait_for(lambda: not d.status().get("clients"), 5, "A gone")
        g = d.status()["gpus"]
        check(len(g) == 1 and g[0]["capacity"] == 0, "capacity: %s" % g)
        rc, out, err = d.ctl("status")
        check(rc == 0 and "capacity unknown," in out and "0 B," not in
              out.split("capacity")[1].split(",")[0], "status: %s" % out)
        rc, out, err = d.ctl("metrics")
        check(rc == 0 and "# TYPE vshare_gpu_capacity_bytes gauge" in out and
              "vshare_gpu_capacity_bytes{" not in out and
              "vshare_gpu_clients{" in out, "metrics: %s" % out)


def t_log_flood(b):
    """A peer cannot flood the log through the HTTP server: connections
    past the 4 per address that libmicrohttpd refuses make one line, not
    one each."""
    port = free_port()
    with Daemon(b, {"metrics_listen": "127.0.0.1:%d" % port}) as d:
        socks = []
        for _ in range(40):
            socks.append(socket.create_connection(("127.0.0.1", port),
                                                  timeout=5))
        # Each refused one is closed by the server: wait for all 36.
        closed = 0
        for s in socks[4:]:
            try:
                closed += s.recv(1) == b""
            except OSError:
                closed += 1
        for s in socks:
            s.close()
        check(closed == 36, "%d of 36 connections refused" % closed)

        def answers():
            # Until the server has seen the four close, it refuses more.
            try:
                return get(port)[0] == 200
            except (OSError, http.client.HTTPException):
                return False
        wait_for(answers, 10, "the server answering again")
        lines = [l for l in d.logtext().splitlines() if "metrics http:" in l]
        check(len(lines) == 1 and "connection limit" in lines[0],
              "one line for 36 refusals: %r" % lines)


def t_socket_request(b):
    """VS_MSG_METRICS: a version-3 request; version 2 has no such type;
    a non-admin reads it only while status_public is on."""
    with Daemon(b, {}) as d:
        s = d.raw()
        s.sendall(frame(T["METRICS"], b"\0" * 8, version=VERSION3))
        mtype, p = recv_frame(s)
        check(mtype == T["REPLY"], "a reply")
        status, n = struct.unpack("<iI", p[:8])
        check(status == 0 and p[8:8 + n].startswith(b"# HELP vshare_"),
              "the exposition text")
        s.close()
        s = d.raw()
        s.sendall(frame(T["METRICS"], b"\0" * 8, version=VERSION2))
        f = recv_frame(s)
        check(f is not None and f[0] == T["ERROR"], "a v2 metrics is refused")
        s.close()
        s = d.raw()
        s.sendall(frame(T["METRICS"], b"\1" + b"\0" * 7, version=VERSION3))
        f = recv_frame(s)
        check(f is not None and f[0] == T["ERROR"], "flags must be zero")
        s.close()
        got = {}

        def counted():
            rc, out, err = d.ctl("metrics")
            got["out"] = out
            m = re.search(r'^vshare_connections_total (\d+)$', out, re.M)
            return (rc == 0 and m is not None and int(m.group(1)) >= 4 and
                    'vshare_refusals_total{reason="protocol"} 2\n' in out)
        wait_for(counted, 5, "two malformed frames and four connections "
                 "counted: %s" % got.get("out"))


def t_not_admin(b):
    """A non-admin's metrics request while status_public is off is refused
    and counted (needs root to run vsharectl as another user)."""
    if os.getuid() != 0:
        print("not root: cannot run vsharectl as another user")
        return 77
    with Daemon(b, {"status_public": False, "socket_mode": "0666"}) as d:
        rc, out, err = d.ctl("metrics", user="nogroup")
        check(rc == 1 and "permission denied" in err,
              "non-admin refused: %d %s" % (rc, err))
        wait_for(lambda: 'vshare_refusals_total{reason="not_admin"} 1' in
                 d.ctl("metrics")[1], 5, "the refusal counted")


def t_bad_listen(b):
    """A listen address that cannot be served stops the start, saying why."""
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    for addr, want in (("localhost:9464", "not a numeric IPv4 address"),
                       ("127.0.0.1:%d" % port, "metrics_listen 127.0.0.1:%d: "
                        "cannot listen there: Address already in use "
                        "(another program has that port)" % port)):
        with Daemon(b, {"metrics_listen": addr}, start=False) as d:
            r = subprocess.run([d.bin("vshare-scheduler"), "--socket", d.sock,
                                "--config", d.conf], capture_output=True,
                               text=True, timeout=20)
            check(r.returncode == 1 and "metrics_listen" in r.stderr and
                  want in r.stderr and "port 0" not in r.stderr,
                  "%s: exit %d: %s" % (addr, r.returncode, r.stderr))
            check(not os.path.exists(d.sock), "no socket left behind")
    busy.close()
    with Daemon(b, {"metrics_listen": "[::1]:%d" % free_port()},
                start=False) as d:
        r = subprocess.run([d.bin("vshare-scheduler"), "--config", d.conf,
                            "--print-config"], capture_output=True, text=True,
                           timeout=20)
        check(r.returncode == 0 and '"metrics_listen":\t"[::1]:' in r.stdout,
              "--print-config shows it: %s" % r.stdout)



# NVML's GPUs in the fake library (fake_nvml.c), by index: 0, 1, 2.
NV = ["GPU-00000000-0000-0000-0000-00000000000%d" % i for i in (2, 5, 1)]
MADE_UP = "GPU-00000000-0000-0000-0000-000000000009"
WAITING = struct.Struct("<16s6I3Q64s")


def v3_attach(d, uuid, label):
    """A raw version-3 client that attached `uuid`, after its WELCOME."""
    s = d.raw()
    u = bytes.fromhex(uuid[4:].replace("-", ""))
    s.sendall(frame(T["HELLO"], struct.pack("<II64s", VERSION3, 0, label),
                    version=VERSION3) +
              frame(T["ATTACH"], u + struct.pack("<Q", 16 << 30),
                    version=VERSION3))
    check(recv_frame(s)[0] == T["WELCOME"], "welcome of %r" % label)
    check(recv_frame(s)[0] == T["POLICY"], "policy of %r" % label)
    return s, u


def gpus_of(d):
    return {g["uuid"]: g for g in d.status()["gpus"]}


def v9_holder(d, uuid, label):
    """A raw client of this version that attached `uuid` and holds it."""
    v = vsproto.VERSION
    s = d.raw()
    u = bytes.fromhex(uuid[4:].replace("-", ""))
    s.sendall(frame(T["HELLO"], struct.pack("<II64s", v, 0, label),
                    version=v) +
              frame(T["ATTACH"], u + struct.pack("<Q", 16 << 30), version=v))
    while True:
        f = recv_frame(s)
        check(f is not None and f[0] != T["ERROR"], "%r refused" % label)
        if f[0] == T["MODE"]:
            break
    s.sendall(frame(T["REQUEST"], u, version=v))
    while True:
        f = recv_frame(s)
        check(f is not None and f[0] != T["ERROR"], "%r: no grant" % label)
        if f[0] == T["GRANT"]:
            return s, u


def member_of(d, pid):
    for c in d.status()["clients"]:
        if c["pid"] == pid and c["gpus"]:
            return c, c["gpus"][0]
    return None, None


def t_nvml_use(b):
    """Use, not only holding, against the real daemon: NVML's device
    memory and SM utilisation of a client's pid (through the driver's
    older utilisation call, its successor, and none: memory without
    utilisation), summed per user and per named label (pod); a client's
    USAGE, clamped to the time it held, and its UNSHARED, in status and
    the metrics. The fake NVML stands in for the driver."""
    lib = os.environ.get("VSHARE_FAKE_NVML_DIR")
    if not lib:
        print("VSHARE_FAKE_NVML_DIR not set (run through ctest)")
        return 77
    tmp = short_tmpdir("vshare-nv-")
    try:
        procs = os.path.join(tmp, "procs")
        with open(procs, "w") as f:
            f.write("0 %d 123456 42\n0 999999 777 5\n" % os.getpid())
        for mode, sm in (("old", 42), ("new", 42), ("none", -1)):
            nvml_use_once(b, lib, procs, mode, sm)
    finally:
        shutil.rmtree(tmp, True)


def nvml_use_once(b, lib, procs, mode, sm):
    """t_nvml_use with the driver's utilisation call `mode`."""
    uid = str(os.getuid())
    if True:
        env = dict(os.environ, VSHARE_FAKE_NVML=NV[0], LD_LIBRARY_PATH=lib,
                   VSHARE_FAKE_NVML_PROCS=procs, VSHARE_FAKE_NVML_UTIL=mode)
        with Daemon(b, {"mode": "on", "tq_s": 30}, env=env) as d:
            rc, out, err = d.ctl("name", "k8s:0-1=ns/pod/ctr")
            check(rc == 0, "vsharectl name: " + err)
            s, u = v9_holder(d, NV[0], b"k8s:0-1")
            time.sleep(0.3)
            s.sendall(frame(T["USAGE"], vsproto.S["usage"].pack(
                uuid=u, busy_ms=100, idle_ms=50, swapout_bytes=4096,
                swapout_us=10), version=vsproto.VERSION) +
                frame(T["UNSHARED"], vsproto.S["unshared"].pack(
                    ms=2500, reason=vsproto.UNSHARED["ABSENT"]),
                    version=vsproto.VERSION))
            wait_for(lambda: (member_of(d, os.getpid())[1] or {}).get(
                "busy_ms") == 100, 5, "the USAGE in status")
            c, m = member_of(d, os.getpid())
            check(m["idle_ms"] == 50 and m["swapout_bytes"] == 4096 and
                  c["unshared_ms"] == 2500 and c["unshared_why"] == "absent",
                  "%s: status %r %r" % (mode, c, m))
            # NVML is asked at most once a second.
            wait_for(lambda: member_of(d, os.getpid())[1]["gpu_mem"] != -1,
                     5, "%s: NVML's figures" % mode)
            m = member_of(d, os.getpid())[1]
            check(m["gpu_mem"] == 123456 and m["sm_pct"] == sm,
                  "%s: NVML's figures of this pid: %r" % (mode, m))
            # Far more than it held: cut to the time held.
            s.sendall(frame(T["USAGE"], vsproto.S["usage"].pack(
                uuid=u, busy_ms=10 ** 9), version=vsproto.VERSION))
            wait_for(lambda: (member_of(d, os.getpid())[1] or {}).get(
                "busy_ms", 0) > 100, 5, "the second USAGE")
            m = member_of(d, os.getpid())[1]
            check(m["busy_ms"] + m["idle_ms"] <= m["held_total_ms"] + 1 and
                  m["busy_ms"] < 10 ** 6,
                  "%s: a report past the time held is cut: %r" % (mode, m))
            rc, text, _ = d.ctl("metrics")
            smp = samples(text)
            check(total(smp, "vshare_user_gpu_memory_bytes", uid=uid) ==
                  123456, "%s: the user's device memory" % mode)
            pod = '{name="ns/pod/ctr",label="k8s:0-1"}'
            check(smp.get("vshare_named_gpu_memory_bytes" + pod) == 123456,
                  "%s: the pod's device memory" % mode)
            has_sm = "vshare_named_sm_utilization_ratio" + pod in smp
            check(has_sm == (sm >= 0) and (sm < 0 or total(
                smp, "vshare_user_sm_utilization_ratio", uid=uid) == 0.42),
                "%s: SM utilisation per user and pod" % mode)
            check(total(smp, "vshare_unshared_runs_total",
                        reason="absent") == 1 and
                  total(smp, "vshare_unshared_seconds_total",
                        reason="absent") == 2.5,
                  "%s: the program that ran unshared" % mode)
            check(total(smp, "vshare_swapout_bytes_total") == 4096,
                  "%s: the swap-out" % mode)
            check(total(smp, "process_open_fds") > 3 and
                  total(smp, "process_max_fds") > 3,
                  "%s: the daemon's process_* series" % mode)
            s.close()


def t_nvml_index(b):
    """With NVML, a GPU's index is NVML's (nvidia-smi's), not the order of
    first attach: in status, --gpu, the metrics and a waiter's WAITING,
    and the same after a restart; a GPU NVML does not know keeps its
    attach order, labelled so, and cannot take --gpu N from NVML's N."""
    lib = os.environ.get("VSHARE_FAKE_NVML_DIR")
    if not lib:
        print("VSHARE_FAKE_NVML_DIR not set (run through ctest)")
        return 77
    env = dict(os.environ, VSHARE_FAKE_NVML=",".join(NV),
               LD_LIBRARY_PATH=lib)
    with Daemon(b, {"mode": "on", "tq_s": 30}, env=env) as d:
        check("NVML: a GPU's capacity is" in d.logtext(),
              "the fake NVML not loaded:\n" + d.logtext())
        a, u1 = v3_attach(d, NV[2], b"A")       # first attach, NVML 2
        a.sendall(frame(T["REQUEST"], u1, version=VERSION3))
        check(recv_frame(a)[0] == T["GRANT"], "A's grant")
        w, _ = v3_attach(d, NV[2], b"W")
        w.sendall(frame(T["REQUEST"], u1, version=VERSION3))
        wait_for(lambda: gpus_of(d)[NV[2]]["queue"], 5, "W in the queue")
        w.sendall(frame(T["WAIT_QUERY"], u1 + bytes(8), version=VERSION3))
        mtype, p = recv_frame(w)
        check(mtype == T["WAITING"] and WAITING.unpack(p)[3] == 2,
              "WAITING's gpu index: %r" % (WAITING.unpack(p)[:7],))
        m, _ = v3_attach(d, MADE_UP, b"M")      # second: attach order 1
        c, _ = v3_attach(d, NV[1], b"C")        # third, NVML 1
        g = gpus_of(d)
        got = {u: (g[u]["index"], g[u]["index_from"]) for u in g}
        check(got == {NV[2]: (2, "nvml"), MADE_UP: (1, "attach order"),
                      NV[1]: (1, "nvml")}, "status indexes %r" % got)
        rc, out, _ = d.ctl("status")
        check(rc == 0 and "GPU 2  %s  (index: nvml)" % NV[2] in out and
              "GPU 1  %s  (index: attach order)" % MADE_UP in out,
              "vsharectl status:\n" + out)
        check(d.ctl("set-tq", "7", "--gpu", "1")[0] == 0, "set-tq --gpu 1")
        check(d.ctl("set-tq", "9", "--gpu", "2")[0] == 0, "set-tq --gpu 2")
        check(d.ctl("set-tq", "9", "--gpu", "0")[0] != 0, "no GPU 0")
        g = gpus_of(d)
        got = {u: g[u]["tq_s"] for u in g}
        check(got == {NV[2]: 9, MADE_UP: 30, NV[1]: 7}, "quanta %r" % got)
        rc, out, _ = d.ctl("metrics")
        for u, i in ((NV[2], 2), (NV[1], 1), (MADE_UP, 1)):
            want = 'vshare_gpu_clients{gpu="%s",index="%d"} ' % (u, i)
            check(rc == 0 and want in out, "metrics lack %s" % want)
        for s in (a, w, m, c):
            s.close()
        # A restart: NVML's index again, whatever attaches first.
        d.stop()
        d.start()
        c, _ = v3_attach(d, NV[1], b"C")
        g = gpus_of(d)[NV[1]]
        check((g["index"], g["index_from"]) == (1, "nvml"),
              "after a restart: %r" % g)
        c.close()


if __name__ == "__main__":
    raise SystemExit(main(scenarios(globals())))
