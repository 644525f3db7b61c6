#!/usr/bin/env python3
"""Priority at kernel granularity on a real GPU, beside plain CUDA and
NVIDIA MPS with client priority in the same run (docs/benchmarks.md,
"Priority").

    prio_bench.py --vshare-dir BUILD --out DIR [--seconds S]
                  [--mem-limit SIZE] [--capacity SIZE] [--only LIST]
                  [--kinds LIST] [--variant NAME=KEY=VALUE,...]...

An inference-like client (torch_check.py infer: a request every 50 ms,
periodic or Poisson arrivals of the same mean) beside PyTorch training
(torch_check.py bench), each arrangement for --seconds:

  solo      each alone, plain CUDA (the anchors)
  plain     side by side, plain CUDA (time-slicing)
  mps       under an MPS control daemon of this run's own (its pipe and
            log directories under --out, quit at the end), the training
            at CUDA_MPS_CLIENT_PRIORITY=1 (below normal), the client at 0
  auto      vshare, mode auto, the client under VSHARE_CLASS=interactive
  on        vshare, mode on, quantum 30 s, the client interactive
  alone     the training alone under vshare beside nothing (the cost of
            the gate on a batch program), against solo
  NAME      each --variant: mode auto as above, both programs with the
            variables given (a setting's effect, in the same run)

Also: the training's kernel durations (median, p99, from the PyTorch
profiler), which bound what a request can wait for at the submission
boundary, whether every request's answer is bit-identical to the solo
run's, and whether the training's loss after its warm-up (the same
seed, inputs and steps, run beside the client) is the solo run's, to
the bit. Every shim process runs with VSHARE_MEM_LIMIT (--mem-limit),
the scheduler with a small capacity. Prints a table and one JSON line."""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TC = os.path.join(HERE, "torch_check.py")

KERNELS = r"""
import json, statistics, sys, torch
sys.path.insert(0, sys.argv[1])
import torch_check as tc
dev = torch.device("cuda")
model, opt, x, y = tc.bench_model(dev)
for _ in range(10):
    tc.bench_step(model, opt, x, y)
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for _ in range(20):
        tc.bench_step(model, opt, x, y)
    torch.cuda.synchronize()
d = sorted(e.device_time for e in p.events()
           if e.device_type == torch.autograd.DeviceType.CUDA
           and e.device_time > 0)
print(json.dumps({"kernels": len(d), "median_us": statistics.median(d),
                  "p99_us": d[min(len(d) - 1, int(0.99 * len(d)))],
                  "max_us": d[-1]}))
"""


class Run:
    def __init__(self, opts):
        self.o = opts
        self.out = opts.out
        os.makedirs(self.out, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="vsprio.")
        self.shim = os.path.join(opts.vshare_dir, "lib", "libvshare.so")
        self.sched_bin = os.path.join(opts.vshare_dir, "bin", "vshare-scheduler")
        self.log = open(os.path.join(self.out, "prio_bench.log"), "w")

    def note(self, s):
        self.log.write(s + "\n")
        self.log.flush()

    def env(self, extra=None):
        e = dict(os.environ)
        e.update(extra or {})
        return e

    def start(self, name, argv, env):
        f = open(os.path.join(self.out, name + ".out"), "w")
        self.note("start %s: %s" % (name, " ".join(argv)))
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                stderr=f, text=True)

    def finish(self, p, timeout):
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        for line in reversed((out or "").splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError("no result (exit %s)" % p.returncode)

    def infer_argv(self, arrivals, stop=None, ready=None, seconds=None):
        """The client of an arrangement: the inference-like one with
        `arrivals` periodic or poisson; "llm" the LLM-serving-like one
        (llm_client.py); "cells" notebook cells (torch_check.py burst,
        a burst every 400 ms)."""
        if arrivals == "llm":
            a = [sys.executable, os.path.join(HERE, "llm_client.py")]
        elif arrivals == "cells":
            a = [sys.executable, TC, "burst", "--gap-ms", "400"]
            if stop:
                a += ["--stop-file", stop]
            if ready:
                a += ["--ready", ready]
            if seconds:
                a += ["--burst-seconds", str(seconds)]
            return a
        else:
            a = [sys.executable, TC, "infer", "--arrivals", arrivals]
        if stop:
            a += ["--stop-file", stop]
        if ready:
            a += ["--ready", ready]
        if seconds:
            a += ["--seconds", str(seconds)]
        return a

    def train_argv(self, seconds):
        return [sys.executable, TC, "bench", "--seconds", str(seconds)]

    def pair(self, name, arrivals, train_env, infer_env):
        """The client warm first, then the training for --seconds beside
        it; (training JSON, client JSON)."""
        d = os.path.join(self.tmp, name + "-" + arrivals)
        os.makedirs(d)
        ready, stop = os.path.join(d, "ready"), os.path.join(d, "stop")
        inf = self.start("%s.%s.infer" % (name, arrivals),
                         self.infer_argv(arrivals, stop, ready), infer_env)
        end = time.monotonic() + 120
        while not os.path.exists(ready):
            if inf.poll() is not None or time.monotonic() > end:
                raise RuntimeError("%s: the client never got warm" % name)
            time.sleep(0.1)
        tr = self.start("%s.%s.train" % (name, arrivals),
                        self.train_argv(self.o.seconds), train_env)
        t = self.finish(tr, self.o.seconds + 180)
        open(stop, "w").close()
        return t, self.finish(inf, 60)

    def shim_env(self, sock, klass=None):
        e = {"LD_PRELOAD": self.shim, "VSHARE_SOCKET": sock,
             "VSHARE_MEM_LIMIT": self.o.mem_limit,
             "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}
        if klass:
            e["VSHARE_CLASS"] = klass
        return self.env(e)

    def scheduler(self, name, mode, tq_s=30):
        sock = os.path.join(self.tmp, name + ".sock")
        cfg = os.path.join(self.tmp, name + ".json")
        with open(cfg, "w") as f:
            json.dump({"mode": mode, "tq_s": tq_s, "policy": "fair",
                       "capacity": self.o.capacity}, f)
        p = subprocess.Popen([self.sched_bin, "--socket", sock, "--config",
                              cfg], stdout=open(os.path.join(
                                  self.out, "sched-%s.log" % name), "w"),
                             stderr=subprocess.STDOUT)
        end = time.monotonic() + 20
        while not os.path.exists(sock):
            if p.poll() is not None or time.monotonic() > end:
                raise RuntimeError("scheduler %s did not start" % name)
            time.sleep(0.05)
        return p, sock

    def mps(self):
        ctl = shutil.which("nvidia-cuda-mps-control")
        if ctl is None:
            return None
        pipe = os.path.join(self.tmp, "mps-pipe")
        logd = os.path.join(self.out, "mps-log")
        os.makedirs(pipe)
        os.makedirs(logd, exist_ok=True)
        e = self.env({"CUDA_MPS_PIPE_DIRECTORY": pipe,
                      "CUDA_MPS_LOG_DIRECTORY": logd})
        subprocess.run([ctl, "-d"], env=e, check=True, timeout=30)
        return ctl, e

    def mps_quit(self, m):
        ctl, e = m
        subprocess.run([ctl], input="quit\n", env=e, text=True, timeout=30)


def pct(a, b):
    return 100.0 * a / b if b else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vshare-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--mem-limit", default="8G")
    ap.add_argument("--capacity", default="32G")
    ap.add_argument("--only", default="solo,plain,mps,auto,on,alone,llm,cells")
    ap.add_argument("--kinds", default="periodic,poisson",
                    help="the inference-like clients to run (llm and cells "
                    "are added by --only)")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=KEY=VALUE[,KEY=VALUE...]: one more mode auto "
                    "arrangement, both programs with these variables")
    o = ap.parse_args()
    r = Run(o)
    only = set(o.only.split(","))
    res, rows = {}, []
    secs = o.seconds
    try:
        res["kernels"] = json.loads(subprocess.run(
            [sys.executable, "-c", KERNELS, HERE], capture_output=True,
            text=True, timeout=300).stdout.strip().splitlines()[-1])
    except (IndexError, ValueError, subprocess.TimeoutExpired) as e:
        res["kernels"] = {"error": str(e)}
    kinds = [k for k in o.kinds.split(",") if k] + [
        k for k in ("llm", "cells") if k in only]
    for arr in kinds:
        try:
            res["solo_infer_" + arr] = r.finish(r.start(
                "solo.%s.infer" % arr, r.infer_argv(arr, seconds=secs),
                r.env()), secs + 120)
        except (RuntimeError, ValueError) as e:
            res["solo_infer_" + arr] = {"error": str(e)}
    kinds = [k for k in kinds if "error" not in res["solo_infer_" + k]]
    res["solo_train"] = r.finish(r.start("solo.train", r.train_argv(secs),
                                         r.env()), secs + 180)
    if "plain" in only:
        for arr in kinds:
            res["plain_" + arr] = r.pair("plain", arr, r.env(), r.env())
    if "mps" in only:
        m = r.mps()
        if m is None:
            res["mps"] = "no nvidia-cuda-mps-control"
        else:
            try:
                te = dict(m[1], CUDA_MPS_CLIENT_PRIORITY="1")
                ie = dict(m[1], CUDA_MPS_CLIENT_PRIORITY="0")
                for arr in kinds:
                    res["mps_" + arr] = r.pair("mps", arr, te, ie)
            finally:
                r.mps_quit(m)
    for mode in ("auto", "on"):
        if mode not in only:
            continue
        p, sock = r.scheduler(mode, mode)
        try:
            for arr in (kinds if mode == "auto" else
                        [k for k in kinds if k != "poisson"]):
                res["%s_%s" % (mode, arr)] = r.pair(
                    mode, arr, r.shim_env(sock),
                    r.shim_env(sock, "interactive"))
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)
    variants = []
    for v in o.variant:
        name, _, kv = v.partition("=")
        extra = dict(x.split("=", 1) for x in kv.split(",") if x)
        variants.append(name)
        p, sock = r.scheduler("v-" + name, "auto")
        try:
            for arr in kinds:
                te = dict(r.shim_env(sock), **extra)
                ie = dict(r.shim_env(sock, "interactive"), **extra)
                res["%s_%s" % (name, arr)] = r.pair(name, arr, te, ie)
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)
    if "alone" in only:
        p, sock = r.scheduler("alone", "auto")
        try:
            res["alone_train"] = r.finish(r.start(
                "alone.train", r.train_argv(secs), r.shim_env(sock)),
                secs + 180)
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)
    shutil.rmtree(r.tmp, True)

    solo_steps = res["solo_train"]["steps_per_s_mean"]
    solo_loss = res["solo_train"].get("warmup_loss")
    base_p99 = {}
    for arr in kinds:
        s = res["solo_infer_" + arr]
        if arr == "cells":
            s = dict(s, p50_ms=s["later_ms_p50"], p99_ms=s["later_ms_p90"],
                     answers=[s.get("sum")])
        base_p99[arr] = s["p99_ms"]
        rows.append(("solo, %s" % arr, s["p50_ms"], s["p99_ms"], None, "-",
                     "-"))
        for k in ["plain", "mps", "auto", "on"] + variants:
            v = res.get("%s_%s" % (k, arr))
            if not isinstance(v, (list, tuple)):
                continue
            t, i = v
            if arr == "cells":
                i = dict(i, p50_ms=i["later_ms_p50"], p99_ms=i["later_ms_p90"],
                         answers=[i.get("sum")])
            same = i["answers"] == s["answers"]
            loss_same = t.get("warmup_loss") == solo_loss
            rows.append(("%s, %s" % (k, arr), i["p50_ms"], i["p99_ms"],
                         pct(t["steps_per_s_mean"], solo_steps),
                         "yes" if same else "NO",
                         "yes" if loss_same else "NO"))
    print("| arrangement | client p50 ms | p99 ms (cells: p90) | x solo p99 "
          "| training % of solo | answers as solo | training loss as solo |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, p50, p99, tr, same, loss_same in rows:
        base = base_p99[name.split(", ")[1]]
        print("| %s | %.2f | %.2f | %.2f | %s | %s | %s |" % (
            name, p50 or 0, p99 or 0, (p99 or 0) / (base or 1),
            "-" if tr is None else "%.1f" % tr, same, loss_same))
    if "alone_train" in res:
        print("training alone under vshare: %.1f%% of plain solo "
              "(%.2f against %.2f steps/s), loss after the warm-up %s" % (
                  pct(res["alone_train"]["steps_per_s_mean"], solo_steps),
                  res["alone_train"]["steps_per_s_mean"], solo_steps,
                  "as solo" if res["alone_train"].get("warmup_loss") ==
                  solo_loss else "NOT as solo"))
    k = res["kernels"]
    if "median_us" in k:
        print("training's kernels: median %.0f us, p99 %.0f us, max %.0f us"
              " (%d kernels in 20 steps)" % (k["median_us"], k["p99_us"],
                                             k["max_us"], k["kernels"]))
    for v in res.values():
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(x, dict):
                x.pop("latencies_ms", None)
                x.pop("window_steps_per_s", None)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
