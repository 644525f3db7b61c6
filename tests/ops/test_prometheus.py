#!/usr/bin/env python3
"""The real Prometheus server (Debian's `prometheus`) scrapes the real
vshare-scheduler's metrics endpoint while a scripted workload runs under
the shim on the CUDA test driver: two vs-compute programs that do not fit
together in the GPU's configured capacity, in mode on with a 1 s quantum.
Prometheus's HTTP API (/api/v1/query) must then tell what the workload
did, as the scheduler's log (grants, drops) and the driver's execution
log (kernels, prefetches) record it; `promtool check metrics` passes on
the text. Prometheus gets its own temporary data directory and port and
is stopped by its pid.

prometheus and promtool come from debian/control's Build-Depends
(scripts/install-deps). Missing, the test fails where they can be
installed (root) and is skipped, saying so, where they cannot."""

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import re
import time
import unittest
import urllib.parse
import urllib.request

from opsutil import (BIN, SHIM, SOURCE, TESTDRIVER_DIR, VSHARECTL,
                     SAN_PRELOAD, Scheduler, base_env, main, need, run)

# The protocol version the daemon says it speaks: the one header's.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "include", "vshare", "proto.h")) as _f:
    PROTO = int(re.search(r"#define VS_PROTO_VERSION (\d+)u", _f.read()).group(1))

MiB = 1 << 20
WORK_MB = 16          # each program's working set; two do not fit in 24
CAPACITY_MB = 24
SECONDS = 4           # each program's run
# The test driver's device 0 (tests/driver/td_env.c: "vstd", then the index).
TD_GPU0 = "GPU-76737464-0000-0000-0000-000000000000"


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def execlog():
    path = os.path.join(SOURCE, "tests", "driver", "execlog.py")
    spec = importlib.util.spec_from_file_location("execlog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


class Prometheus:
    """prometheus scraping one target every second, in dir."""

    def __init__(self, binary, tmp, target):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        conf = os.path.join(tmp, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: vshare\n"
                    "    static_configs:\n"
                    "      - targets: ['%s']\n" % target)
        self.log = open(os.path.join(tmp, "prometheus.log"), "w+")
        self.proc = subprocess.Popen(
            [binary, "--config.file=" + conf,
             "--storage.tsdb.path=" + os.path.join(tmp, "prom-data"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=tmp)

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-3000:]

    def wait_ready(self, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError("prometheus exited:\n" + self.logtext())
            try:
                if http_get(self.url + "/-/ready")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError("prometheus not ready:\n" + self.logtext())

    def query(self, expr):
        """The value of an instant query with one result, or None."""
        url = "%s/api/v1/query?%s" % (self.url,
                                      urllib.parse.urlencode({"query": expr}))
        doc = json.loads(http_get(url)[1])
        if doc.get("status") != "success":
            raise AssertionError("query %s: %s" % (expr, doc))
        res = doc["data"]["result"]
        if len(res) != 1:
            return None
        return float(res[0]["value"][1])

    def wait_value(self, expr, want, timeout=30):
        end = time.monotonic() + timeout
        got = None
        while time.monotonic() < end:
            got = self.query(expr)
            if got is not None and abs(got - want) < 1e-9:
                return
            time.sleep(0.25)
        raise AssertionError("%s is %s, not %s" % (expr, got, want))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def tool(name):
    path = shutil.which(name)
    if path is None:
        msg = "%s not installed (Debian package prometheus: " \
              "scripts/install-deps)" % name
        if os.getuid() == 0:
            raise AssertionError(msg)
        raise unittest.SkipTest(msg + "; not root, so not installable here")
    return path


class PrometheusScrape(unittest.TestCase):
    def setUp(self):
        need("sched", "ctl", "shim", "driver")
        self.prom_bin = tool("prometheus")
        self.promtool = tool("promtool")
        self.tmp = tempfile.mkdtemp(prefix="vshare-prom.")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.mport = free_port()
        conf = os.path.join(self.tmp, "scheduler.json")
        with open(conf, "w") as f:
            # Neither NVML (there is none here) nor "gpus" vouches for the
            # test driver's GPU: it has series all the same, being within
            # metrics_gpus, with no second step.
            json.dump({"mode": "on", "tq_s": 1, "policy": "fcfs",
                       "capacity": "%dM" % CAPACITY_MB, "log_level": "debug",
                       "metrics_listen": "127.0.0.1:%d" % self.mport}, f)
        self.sched = Scheduler(self.tmp, config=conf)
        self.addCleanup(self.sched.stop)
        self.prom = Prometheus(self.prom_bin, self.tmp,
                               "127.0.0.1:%d" % self.mport)
        self.addCleanup(self.prom.stop)

    def ctl_metrics(self):
        r = run([VSHARECTL, "--socket", self.sched.sock, "metrics"])
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def promtool_ok(self, text):
        r = subprocess.run([self.promtool, "check", "metrics"], input=text,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    def workload(self):
        """Two programs that take turns; their exit status and the log."""
        log = os.path.join(self.tmp, "exec.log")
        env = base_env(VSHARE_SOCKET=self.sched.sock, VSHARE_IDLE_MS="100",
                       VSHARE_TD_LOG=log, LD_LIBRARY_PATH=TESTDRIVER_DIR,
                       LD_PRELOAD=" ".join(p for p in (SAN_PRELOAD, SHIM)
                                           if p))
        argv = [os.path.join(BIN, "vs-compute"), "--seconds", str(SECONDS),
                "--kernel-ms", "10", "--mem", "%dM" % WORK_MB,
                "--progress-ms", "0", "--quiet"]
        t0 = time.monotonic()
        procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        # While they run, the scheduler serves every scrape.
        for p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out + err)
        return time.monotonic() - t0, execlog().load(log)

    def test_scrape_during_workload(self):
        self.prom.wait_ready()
        self.prom.wait_value('up{job="vshare"}', 1)
        self.promtool_ok(self.ctl_metrics())
        wall, ops = self.workload()
        text = self.ctl_metrics()
        self.promtool_ok(text)
        # The final counts, once Prometheus has scraped them.
        slog = self.sched.logtext()
        grants = slog.count("grant GPU-")
        self.assertGreaterEqual(grants, 4, slog[-2000:])
        self.prom.wait_value("sum(vshare_hold_seconds_count)", grants)
        q = self.prom.query
        self.assertEqual(q("sum(vshare_grants_total)"), grants)
        self.assertEqual(q('sum(vshare_grants_total{kind="exclusive"})'),
                         grants)
        self.assertEqual(q("sum(vshare_wait_seconds_count)"), grants)
        self.assertEqual(q('sum(vshare_drops_total{reason="quantum"})'),
                         slog.count(": quantum over"))
        self.assertEqual(q('sum(vshare_drops_total{reason="idle"})'),
                         slog.count(": someone waiting, release when idle"))
        self.assertGreaterEqual(q('sum(vshare_drops_total{reason="quantum"})'),
                                2)
        handoffs = q("sum(vshare_handoffs_total)")
        self.assertTrue(1 <= handoffs <= grants, handoffs)
        # GPU time: every kernel ran while its program held the GPU, and
        # in mode on nobody held it beside another.
        busy = sum(o.end - o.start for o in ops if o.kind == "kernel") / 1e9
        held = q('sum(vshare_gpu_held_seconds_total{uid="%d"})' % os.getuid())
        hold = q("sum(vshare_hold_seconds_sum)")
        self.assertAlmostEqual(held, hold, delta=0.01)
        self.assertTrue(busy <= held <= wall + 0.5,
                        "kernels %.2f s, held %.2f s, wall %.2f s"
                        % (busy, held, wall))
        self.assertEqual(q("max_over_time(vshare_gpu_holders[5m])"), 1)
        self.assertGreaterEqual(q("max_over_time(vshare_gpu_queue_length[5m])"),
                                1)
        # The daemon's text may be a second older than the scrape.
        self.prom.wait_value("vshare_clients", 0)
        self.assertEqual(q("vshare_gpu_holders"), 0)
        self.assertEqual(q("vshare_gpu_queue_length"), 0)
        self.assertEqual(q('count(vshare_gpu_holders{gpu="%s"})' % TD_GPU0),
                         1)
        self.assertEqual(q("vshare_gpus_unverified"), 0)
        self.assertEqual(q("vshare_gpu_capacity_bytes"), CAPACITY_MB * MiB)
        self.assertEqual(q('vshare_gpu_mode{mode="on"}'), 1)
        self.assertGreaterEqual(q("vshare_connections_total"), 2)
        # Oversubscribed: each grant's holder prefetched its memory and
        # reported it; the driver logged those prefetches.
        prefetched = sum(o.bytes for o in ops if o.kind == "prefetch")
        self.assertGreaterEqual(q("sum(vshare_swapins_total)"), 1)
        self.assertEqual(q("sum(vshare_swapin_bytes_total)"), prefetched)
        self.assertEqual(q('vshare_build_info{protocol="%d"}' % PROTO), 1)
        # Every scrape of the run succeeded: the endpoint answered while
        # the programs took turns.
        self.assertEqual(q('min_over_time(up{job="vshare"}[5m])'), 1)
        self.assertGreaterEqual(
            q('count_over_time(up{job="vshare"}[5m])'), 2)
        # A clean stop: the endpoint closes with the loop (and a
        # sanitizer build finds nothing to report).
        self.prom.stop()
        self.sched.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.sched.proc.wait(15), 0)
        slog = self.sched.logtext()
        self.assertNotIn("Sanitizer", slog)
        self.assertNotIn("runtime error", slog)


if __name__ == "__main__":
    main()
