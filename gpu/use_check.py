#!/usr/bin/env python3
"""What `vsharectl status` says of real programs' GPU use, beside what
the GPU says (docs/operations.md, "Use"): three programs under the shim
on one GPU in mode auto, for --seconds:

  train   PyTorch training (torch_check.py bench), batch: it computes
          all the time, so its busy time should be about its held time
  infer   the inference-like client (torch_check.py infer, a request
          every 50 ms), interactive: mostly idle while it holds
  sleep   a kernel of about a second (torch.cuda._sleep), a
          synchronize, then a second of sleep on the CPU, in turn:
          busy about half of its held time

It reads `vsharectl --json status` every half second. The shims
report busy and idle every 5 s, and the first reports cover each
program's start (importing PyTorch, building its model), which is
idle whatever the program does later; so the busy share printed is
that of the reports after --settle seconds (default: a third of the
run): from the first report after it to the last one, at least one
report interval apart (--seconds 30 or more gives two or three). Near
the end it also prints each program's held time, its busy and idle
time as reported in all, its device memory from the status, and the
memory nvidia-smi gives for the same pid. Every shim process runs with
VSHARE_MEM_LIMIT, the scheduler with a small capacity.

    use_check.py --vshare-dir BUILD --out DIR [--seconds S] [--settle S]"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TC = os.path.join(HERE, "torch_check.py")
sys.path.insert(0, HERE)
from prio_bench import Run  # noqa: E402

SLEEPER = r"""
import sys, time, torch
end = time.monotonic() + float(sys.argv[1])
x = torch.ones(1 << 20, device="cuda")
t0 = time.monotonic(); torch.cuda._sleep(100000000); torch.cuda.synchronize()
cycles = int(100000000 / max(1e-3, time.monotonic() - t0))
while time.monotonic() < end:
    torch.cuda._sleep(cycles)
    torch.cuda.synchronize()
    time.sleep(1.0)
print(float(x.sum()))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vshare-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--settle", type=float, default=None)
    ap.add_argument("--mem-limit", default="4G")
    ap.add_argument("--capacity", default="16G")
    o = ap.parse_args()
    # The scheduler and the shim's environment as the priority benchmark
    # starts them (its temporary directory, removed at the end).
    r = Run(o)
    sched, sock = r.scheduler("use", "auto")
    try:
        return check(o, r, sock)
    finally:
        sched.send_signal(signal.SIGTERM)
        sched.wait(timeout=20)
        shutil.rmtree(r.tmp, True)


def check(o, r, sock):
    s = str(o.seconds)
    progs = {
        "train": ([sys.executable, TC, "bench", "--seconds", s], None),
        "infer": ([sys.executable, TC, "infer", "--seconds", s],
                  "interactive"),
        "sleep": ([sys.executable, "-c", SLEEPER, s], None),
    }
    procs = {}
    for name, (argv, klass) in progs.items():
        procs[name] = subprocess.Popen(
            argv, env=r.shim_env(sock, klass), stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(o.out, name + ".err"), "w"))
    ctl = os.path.join(o.vshare_dir, "bin", "vsharectl")
    settle = o.settle if o.settle is not None else o.seconds / 3
    t0 = time.monotonic()
    # pid -> the (busy, idle) of each report seen after the settling.
    reports = {}
    doc = {}
    while time.monotonic() - t0 < o.seconds - 1:
        time.sleep(0.5)
        try:
            doc = json.loads(subprocess.run(
                [ctl, "-s", sock, "--json", "status"], capture_output=True,
                text=True, timeout=10).stdout)
        except ValueError:
            continue
        if time.monotonic() - t0 < settle:
            continue
        for c in doc.get("clients", []):
            for m in c.get("gpus", []):
                v = (m.get("busy_ms", 0), m.get("idle_ms", 0))
                seen = reports.setdefault(c["pid"], [])
                if not seen or seen[-1] != v:
                    seen.append(v)
    smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                          "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    smi_mem = {}
    for line in smi.splitlines():
        p, _, m = line.partition(",")
        if p.strip().isdigit() and m.strip().isdigit():
            smi_mem[int(p)] = int(m) << 20
    wide = subprocess.run([ctl, "-s", sock, "--wide", "status"],
                          capture_output=True, text=True, timeout=10).stdout
    for p in procs.values():
        p.wait(timeout=120)
    by_pid = {p.pid: n for n, p in procs.items()}
    print("| program | class | held s | busy s | idle s | busy %% after "
          "%.0f s (s of reports) | device memory (vshare) | nvidia-smi |" %
          settle)
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in doc.get("clients", []):
        name = by_pid.get(c["pid"], "?")
        seen = reports.get(c["pid"], [])
        if len(seen) >= 2:
            busy = seen[-1][0] - seen[0][0]
            span = busy + seen[-1][1] - seen[0][1]
            steady = "%.0f (%.1f)" % (100.0 * busy / max(1, span), span / 1e3)
        else:
            steady = "- (one report: run longer)"
        for m in c.get("gpus", []):
            held = m.get("held_total_ms", 0)
            print("| %s | %s | %.1f | %.1f | %.1f | %s | %.0f MiB | %s |" % (
                name, c.get("class"), held / 1e3, m.get("busy_ms", 0) / 1e3,
                m.get("idle_ms", 0) / 1e3, steady,
                m.get("gpu_mem", 0) / 2**20,
                "%.0f MiB" % (smi_mem[c["pid"]] / 2**20)
                if c["pid"] in smi_mem else "-"))
    print(wide)
    with open(os.path.join(o.out, "status.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
