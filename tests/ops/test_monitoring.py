#!/usr/bin/env python3
"""The monitoring files the package ships (packaging/monitoring/): the
Prometheus alert rules pass `promtool check rules` and their unit tests
(`promtool test rules`), and the rules and the Grafana dashboard name
only metrics that a running vshare-scheduler exports. Skipped (77) where
promtool is missing; the dashboard's checks need no promtool."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opsutil import (BIN, SAN_PRELOAD, SHIM, SOURCE, TESTDRIVER_DIR,  # noqa: E402
                     VSHARECTL, Scheduler, base_env, need, run)

MON = os.path.join(SOURCE, "packaging", "monitoring")
RULES = os.path.join(MON, "vshare-alerts.yml")
RULES_TEST = os.path.join(MON, "vshare-alerts.test.yml")
DASHBOARD = os.path.join(MON, "vshare-grafana.json")
# Names of Prometheus's own, not of the daemon.
PROMETHEUS_OWN = {"up"}
HIST_SUFFIXES = ("_bucket", "_sum", "_count")


def exported():
    """{name: type} of the families a test daemon's `vsharectl metrics`
    declares (every family has its HELP and TYPE lines, GPUs or not)."""
    tmp = tempfile.mkdtemp(prefix="vshare-mon.")
    try:
        sched = Scheduler(tmp)
        try:
            r = run([VSHARECTL, "--socket", sched.sock, "metrics"])
        finally:
            sched.stop()
    finally:
        shutil.rmtree(tmp, True)
    if r.returncode != 0:
        raise AssertionError("vsharectl metrics: " + r.stderr)
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", r.stdout, re.M))


def sample_metrics():
    """`vsharectl metrics` of a daemon with a GPU that has seen a grant
    and a capped user's program still attached, so that the per-GPU and
    per-user families have series to read the labels of."""
    tmp = tempfile.mkdtemp(prefix="vshare-mon.")
    conf = os.path.join(tmp, "scheduler.json")
    with open(conf, "w") as f:
        json.dump({"mode": "on", "policy_users": {
            str(os.getuid()): {"max_share_pct": 50}}}, f)
    try:
        sched = Scheduler(tmp, config=conf)
        try:
            c = subprocess.Popen(
                [os.path.join(BIN, "sched_testclient"), "--socket",
                 sched.sock, "--label", "A", "--hold-ms", "10", "--cycles",
                 "1", "--stay", "--quiet"], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, env=base_env())
            try:
                text, deadline = "", time.monotonic() + 10
                while "vshare_user_cap_ratio{" not in text:
                    if time.monotonic() > deadline:
                        raise AssertionError("no cap series: " + text)
                    time.sleep(0.1)
                    text = run([VSHARECTL, "--socket", sched.sock,
                                "metrics"]).stdout
            finally:
                c.stdin.close()
                c.wait(timeout=10)
        finally:
            sched.stop()
    finally:
        shutil.rmtree(tmp, True)
    return text


def doc_metrics():
    """docs/operations.md's metrics table: name -> (type, labels, what)."""
    with open(os.path.join(SOURCE, "docs", "operations.md")) as f:
        text = f.read()
    rows = {}
    for m in re.finditer(r"^\| `((?:vshare|process)_[a-z_]+)` \| (\w+) \|"
                         r"([^|]*)\| "
                         r"(.*) \|$", text, re.M):
        rows[m.group(1)] = (m.group(2), set(re.findall(r"`(\w+)`",
                                                        m.group(3))),
                            m.group(4))
    return rows


def unknown_names(exprs, families):
    """The metric names in the PromQL texts that the daemon does not
    export; a histogram's _bucket, _sum and _count are its own."""
    bad = set()
    for e in exprs:
        for name in re.findall(r"\b(vshare_[a-z_]+|process_[a-z_]+|up)\b",
                               e):
            base = name
            for suf in HIST_SUFFIXES:
                if name.endswith(suf) and \
                        families.get(name[:-len(suf)]) == "histogram":
                    base = name[:-len(suf)]
            if base not in families and base not in PROMETHEUS_OWN:
                bad.add(name)
    return bad


def dashboard_exprs(dash):
    out = []
    for p in dash["panels"]:
        out += [t["expr"] for t in p["targets"]]
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            out.append(v["query"]["query"])
    return out


def unit_of(expr):
    """The unit a query's values are in, from the names of what it reads:
    quantiles of seconds, rates of byte and second counters (bytes per
    second, seconds per second), increases (counts), rates of other
    counters (per second), ratios, a 0/1 selection, gauges of seconds and
    bytes; "short" for a plain number."""
    rules = ((r"histogram_quantile\(", "s"),
             (r"\brate\(vshare_\w+_bytes_total\b", "Bps"),
             (r"\brate\(vshare_\w+_seconds_total\b", "percentunit"),
             (r"\bincrease\(", "short"),
             (r"\brate\(vshare_\w+_total\b", "ops"),
             (r"\bvshare_\w+_ratio\b", "percentunit"),
             (r"==\s*1\b", "none"),
             (r"\bvshare_\w+_seconds\b", "s"),
             (r"\bvshare_\w+_bytes\b", "bytes"))
    for rx, unit in rules:
        if re.search(rx, expr):
            return unit
    return "short"


def target_unit(panel, target):
    """The unit Grafana shows a target's series in: an override by its
    query (refId), else the panel's."""
    fc = panel.get("fieldConfig", {})
    unit = fc.get("defaults", {}).get("unit")
    for o in fc.get("overrides", []):
        m = o.get("matcher", {})
        if m.get("id") == "byFrameRefID" and \
                m.get("options") == target.get("refId"):
            for prop in o.get("properties", []):
                if prop.get("id") == "unit":
                    unit = prop["value"]
    return unit


class Monitoring(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need("sched", "ctl")
        cls.families = exported()

    def test_dashboard(self):
        with open(DASHBOARD) as f:
            dash = json.load(f)
        for k in ("title", "uid", "panels", "templating", "schemaVersion"):
            self.assertIn(k, dash)
        ids = [p["id"] for p in dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")
        for p in dash["panels"]:
            self.assertTrue(p["title"] and p["targets"], p.get("title"))
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
        exprs = dashboard_exprs(dash)
        self.assertEqual(unknown_names(exprs, self.families), set())
        # Every family the daemon exports is on the dashboard, so that a
        # new one is not forgotten (the build info's labels included).
        used = {n for e in exprs
                for n in re.findall(r"\b(?:vshare|process)_[a-z_]+", e)}
        used |= {n[:-len(s)] for n in used for s in HIST_SUFFIXES
                 if n.endswith(s)}
        self.assertEqual(set(self.families) - used, set(),
                         "families missing from the dashboard")

    def test_dashboard_queries(self):
        """Every query: a sum by GPU index keeps the instance (GPU 0 of
        two hosts must not add up), a legend naming a GPU names its host,
        and its series are shown in their own unit (by the panel, or an
        override of that query)."""
        with open(DASHBOARD) as f:
            dash = json.load(f)
        for p in dash["panels"]:
            for t in p["targets"]:
                e, what = t["expr"], "%s / %s" % (p["title"], t.get("refId"))
                for by in re.findall(r"\bby \(([^)]*)\)", e):
                    labels = {x.strip() for x in by.split(",")}
                    self.assertFalse("index" in labels and
                                     "instance" not in labels,
                                     "%s sums by index without instance: %s"
                                     % (what, e))
                legend = t.get("legendFormat", "")
                self.assertFalse("{{index}}" in legend and
                                 "{{instance}}" not in legend,
                                 "%s: legend %r names no host" % (what, legend))
                self.assertEqual(target_unit(p, t), unit_of(e),
                                 "%s: %s shown as %s" % (what, e,
                                                         target_unit(p, t)))

    def test_metrics_table(self):
        """docs/operations.md's table has a row for every family the
        daemon exports and none other, of its type, with the labels its
        series carry, and names each value of an enumerated label
        (reasons, kinds, classes, modes)."""
        rows, text = doc_metrics(), sample_metrics()
        self.assertEqual(set(rows), set(self.families),
                         "table rows against the exported families")
        labels, values = {}, {}
        for name, body in re.findall(r"^((?:vshare|process)_[a-z_]+)\{([^}]*)"
                                     r"\}", text, re.M):
            for suf in HIST_SUFFIXES:
                if name.endswith(suf) and \
                        self.families.get(name[:-len(suf)]) == "histogram":
                    name = name[:-len(suf)]
            pairs = dict(re.findall(r'(\w+)="([^"]*)"', body))
            pairs.pop("le", None)
            labels.setdefault(name, set()).update(pairs)
            for k in ("reason", "kind", "class", "mode"):
                if k in pairs:
                    values.setdefault(name, set()).add(pairs[k])
        for name, (typ, doc_labels, what) in rows.items():
            if name not in self.families:
                continue
            self.assertEqual(typ, self.families[name], name + ": type")
            if name in labels:
                self.assertEqual(doc_labels, labels[name], name + ": labels")
            for v in values.get(name, ()):
                self.assertIn("`%s`" % v, what, "%s: %s=%s not described"
                              % (name, "label", v))

    def test_rules_names(self):
        with open(RULES) as f:
            exprs = re.findall(r"expr: >-\n((?:\s{10}.*\n)+)|expr: (.*)",
                               f.read())
        exprs = [a or b for a, b in exprs]
        self.assertEqual(len(exprs), 5)
        self.assertEqual(unknown_names(exprs, self.families), set())

    def test_scheduler_down_says_what_the_shim_does(self):
        """VshareSchedulerDown's description against the shim: without a
        scheduler a program runs unshared (and says so), and with
        require_scheduler its GPU work waits."""
        need("shim", "driver")
        with open(RULES) as f:
            m = re.search(r"alert: VshareSchedulerDown\n(?:.*\n)*?\s+"
                          r"description: >-\n((?:\s{12}.*\n)+)", f.read())
        desc = " ".join(m.group(1).split())
        self.assertIn("programs under the shim run unshared", desc)
        self.assertIn("require_scheduler", desc)
        self.assertIn("VSHARE_REQUIRE_SCHEDULER=1) wait", desc)
        with tempfile.TemporaryDirectory() as tmp:
            env = base_env(
                LD_PRELOAD=":".join(p for p in (SAN_PRELOAD, SHIM) if p),
                LD_LIBRARY_PATH=TESTDRIVER_DIR,
                VSHARE_SOCKET=os.path.join(tmp, "no-scheduler.sock"))
            prog = [os.path.join(BIN, "vs-vecadd")]
            r = run(prog, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("running unshared", r.stderr)
            env["VSHARE_REQUIRE_SCHEDULER"] = "1"
            p = subprocess.Popen(prog, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            try:
                line = ""
                while "no scheduler" not in line:
                    line = p.stderr.readline()
                    self.assertTrue(line, "no line about the scheduler")
                self.assertIn("GPU work waits for it", line)
                # It waits: with no scheduler it cannot end.
                with self.assertRaises(subprocess.TimeoutExpired):
                    p.wait(timeout=3)
            finally:
                p.kill()
                p.wait()

    def test_promtool(self):
        promtool = shutil.which("promtool")
        if promtool is None:
            raise unittest.SkipTest("promtool not installed "
                                    "(apt-get install prometheus)")
        for args in (["check", "rules", RULES],
                     ["test", "rules", RULES_TEST]):
            r = subprocess.run([promtool] + args, capture_output=True,
                               text=True, timeout=60, cwd=MON)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


def main():
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        return 1
    if result.skipped and result.testsRun == len(result.skipped):
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
