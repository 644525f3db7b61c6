#!/usr/bin/env python3
"""Pacing under DDP on two GPUs (docs/benchmarks.md, "Two GPUs"). Needs two
GPUs.

    ddp_pace.py --vshare-dir DIR --gpu-bin DIR --out DIR

A two-rank DistributedDataParallel job over NCCL (one rank per GPU, an MLP
of 8 layers 4096 wide, batch 2048: about 2.5 GiB a rank) trains for --seconds:

1. plain CUDA;
2. under one scheduler in mode on with an interactive program attached and
   idle on each GPU (torch_check.py infer, one request after its warm-up),
   so that both ranks are granted with VS_GRANTF_PACE and paced: NCCL's
   kernels wait for the other rank, which pacing must not turn into a
   hang or a slowdown;
3. the same with VSHARE_PACE_US=0;
4. with each VSHARE_PACE_US of --pace-us (the trade-off of a larger bound).

Every shim process has VSHARE_MEM_LIMIT (--mem-limit), the scheduler a
small capacity. Prints one JSON line and a table; exit 1 if a run fails,
if the ranks were not paced in run 2, or if paced training is below 95% of
run 3."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from suite_correct import _wait  # noqa: E402
from suite_lib import Env, Scheduler, parse_size  # noqa: E402

KEEP = 0.95
WORKER = r"""
import json, os, sys, time
import torch, torch.distributed as dist

def rank_main(rank, seconds, port, out):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port,
                            rank=rank, world_size=2,
                            device_id=torch.device("cuda", rank))
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(*layers).cuda(), device_ids=[rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(2048, 4096, device="cuda")
    y = torch.randn(2048, 4096, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        for _ in range(10):
            loss = step()
        torch.cuda.synchronize()
        n += 10
    el = time.monotonic() - t0
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"steps": n, "seconds": el, "steps_per_s": n / el,
                       "loss": float(loss.item())}, f)
    dist.destroy_process_group()

if __name__ == "__main__":
    import torch.multiprocessing as mp
    seconds, port, out = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    mp.spawn(rank_main, args=(seconds, port, out), nprocs=2, join=True)
    with open(out) as f:
        print(f.read(), flush=True)
"""


def ddp(env, kind, seconds, extra, port):
    d = env.fresh_dir("ddp-" + kind)
    script, out = os.path.join(d, "ddp_worker.py"), os.path.join(d, "r.json")
    with open(script, "w") as f:
        f.write(WORKER)
    e = env.base_env() if extra is None else env.shim_env("ddp-" + kind,
                                                            extra=extra)
    r = env.run("ddp." + kind, [env.opts.python, script, str(seconds),
                                str(port), out], e, timeout=seconds + 240)
    if not r.ok:
        raise RuntimeError("%s: %s" % (kind, r.why()))
    j = r.json
    j["paced"] = r.err.count("paced: an interactive program shares it")
    return j


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vshare-dir", required=True)
    ap.add_argument("--gpu-bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--mem-limit", default="4G")
    ap.add_argument("--capacity", default="12G")
    ap.add_argument("--pace-us", default="",
                    help="comma-separated VSHARE_PACE_US values for more "
                    "paced runs (reported, not checked)")
    ap.add_argument("--keep-tmp", action="store_true")
    o = ap.parse_args()
    try:
        o.mem_limit_bytes = parse_size(o.mem_limit)
        parse_size(o.capacity)
    except ValueError as e:
        ap.error(str(e))
    os.makedirs(o.out, exist_ok=True)
    log = open(os.path.join(o.out, "ddp_pace.log"), "w")
    env = Env(o.vshare_dir, o.gpu_bin, os.path.dirname(os.path.abspath(
        __file__)), o.out, log, o)
    gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                          text=True).stdout.strip().splitlines()
    if len(gpus) < 2:
        print(json.dumps({"error": "needs two GPUs", "gpus": gpus}))
        return 2
    res, bad = {"gpus": gpus}, []
    tc = os.path.join(env.gpu_src, "torch_check.py")
    idle = []
    try:
        res["plain"] = ddp(env, "plain", o.seconds, None, 29511)
        with Scheduler(env, "ddp", mode="on", capacity=parse_size(o.capacity),
                       tq_s=30, conf={"policy": "fair"}):
            for gpu in (0, 1):
                d = env.fresh_dir("ddp-idle-%d" % gpu)
                ready = os.path.join(d, "ready")
                idle.append((ready, env.start(
                    "ddp.idle.%d" % gpu,
                    [o.python, tc, "infer", "--period-ms", "3600000",
                     "--stop-file", os.path.join(d, "stop"), "--ready", ready],
                    env.shim_env("idle%d" % gpu, extra={
                        "CUDA_VISIBLE_DEVICES": str(gpu),
                        "VSHARE_CLASS": "interactive"}))))
            for ready, _ in idle:
                if not _wait(ready, 120, [p for _, p in idle]):
                    raise RuntimeError("an idle interactive program never "
                                       "got ready")
            res["paced"] = ddp(env, "paced", o.seconds,
                               {"VSHARE_LOG_LEVEL": "debug"}, 29512)
            res["unpaced"] = ddp(env, "unpaced", o.seconds,
                                 {"VSHARE_PACE_US": "0"}, 29513)
            for i, us in enumerate(v for v in o.pace_us.split(",") if v):
                res["paced-%s" % us] = ddp(
                    env, "paced-%s" % us, o.seconds,
                    {"VSHARE_LOG_LEVEL": "debug", "VSHARE_PACE_US": us},
                    29514 + i)
    except RuntimeError as e:
        bad.append(str(e))
    finally:
        for _, p in idle:
            env.kill(p)
            env.finish(p, 10)
    if not bad:
        sp, su = res["paced"]["steps_per_s"], res["unpaced"]["steps_per_s"]
        res["paced_of_unpaced"] = round(sp / su, 3)
        if res["paced"]["paced"] < 2:
            bad.append("the ranks were not both granted with VS_GRANTF_PACE "
                       "(%d grants paced)" % res["paced"]["paced"])
        if sp < KEEP * su:
            bad.append("paced %.2f steps/s < %d%% of unpaced %.2f"
                       % (sp, 100 * KEEP, su))
    res["bad"] = bad
    print(json.dumps(res))
    for k in [k for k in res if k in ("plain", "paced", "unpaced")
              or k.startswith("paced-")]:
            print("%-8s %7.2f steps/s (%d steps)" % (
                k, res[k]["steps_per_s"], res[k]["steps"]))
    for b in bad:
        print("FAIL: " + b)
    with open(os.path.join(o.out, "ddp_pace.json"), "w") as f:
        json.dump(res, f, indent=1)
    if not o.keep_tmp:
        env.cleanup()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
