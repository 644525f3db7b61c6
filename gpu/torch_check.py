#!/usr/bin/env python3
"""PyTorch programs of the GPU suite. Each mode prints one JSON line last.

  correct     a small model trains a few steps (losses, final weights), its
              memory is checked for managed-ness through the driver
              (cuPointerGetAttribute on tensors' data_ptr), and a captured
              CUDA graph of a whole training step is replayed and compared
              with the same steps run eagerly
  bench       training steps per second of a larger model
  background  the bench model trains until --seconds pass (a co-runner);
              touches --ready once warm
  burst       latency of short interactive bursts; the first one includes
              everything after context creation (lock, library set-up).
              --bursts N, or with --burst-seconds X or --stop-file F as
              many as fit in X seconds or until F exists; touches --ready
              after the first
  alloc       --matmuls matmuls of 4096x4096 float32 matrices, each into a
              fresh output tensor (allocated and freed every time: with
              backend:cudaMallocAsync, a stream-ordered allocation and
              free each), timed after --warmup of them; the last result
              is checked against one computed into a kept tensor
  share       a small model trains, one synchronized step at a time, as
              one of several co-runners: touches --ready once warm, waits
              for --go (a file holding "t0 t1", time.monotonic seconds,
              the same clock in every process of the machine), trains
              until t1 and counts the steps that finished within [t0, t1]
  infer       an inference service: a request due every --period-ms, each
              a small pageable input copied in, --layers matmuls (2048
              wide, --batch rows) and the answer read back; the latency of
              each from when it was due, for --seconds or until
              --stop-file exists; touches --ready once warm

The allocator is whatever PYTORCH_CUDA_ALLOC_CONF selects; the suite runs
each mode plain and under the shim and compares.
"""
import argparse
import ctypes
import json
import os
import random
import statistics
import sys
import time

# Deterministic cuBLAS for the plain-versus-shim comparison; must be set
# before the first handle is created.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402

CU_POINTER_ATTRIBUTE_IS_MANAGED = 8


def managed_flags(ptrs):
    """The driver's IS_MANAGED for each device pointer (None on error)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    fn = cuda.cuPointerGetAttribute
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    fn.restype = ctypes.c_int
    out = []
    for p in ptrs:
        v = ctypes.c_uint(0)
        rc = fn(ctypes.byref(v), CU_POINTER_ATTRIBUTE_IS_MANAGED, p)
        out.append(None if rc != 0 else int(v.value))
    return out


def small_model():
    return torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
        torch.nn.Linear(512, 512), torch.nn.GELU(), torch.nn.Linear(512, 10))


def batches(n, seed, bs=128):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(bs, 256, generator=g),
             torch.randint(0, 10, (bs,), generator=g)) for _ in range(n)]


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def weights_sum(model):
    return float(sum(p.detach().double().sum().item() for p in model.parameters()))


def graph_check(dev):
    """Whole-step capture replayed against the same steps run eagerly."""
    torch.manual_seed(1)
    m_g = small_model().to(dev)
    m_e = small_model().to(dev)
    m_e.load_state_dict(m_g.state_dict())
    o_g = torch.optim.SGD(m_g.parameters(), lr=0.05, momentum=0.9)
    o_e = torch.optim.SGD(m_e.parameters(), lr=0.05, momentum=0.9)
    data = [(x.to(dev), y.to(dev)) for x, y in batches(11, seed=7)]
    sx, sy = data[0][0].clone(), data[0][1].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):       # warm-up, as capture requires
        for x, y in data[:3]:
            sx.copy_(x)
            sy.copy_(y)
            train_step(m_g, o_g, sx, sy)
    torch.cuda.current_stream().wait_stream(side)
    for x, y in data[:3]:
        train_step(m_e, o_e, x, y)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = train_step(m_g, o_g, sx, sy)
    g_losses, e_losses = [], []
    for x, y in data[3:]:
        sx.copy_(x)
        sy.copy_(y)
        graph.replay()
        g_losses.append(static_loss.item())
        e_losses.append(train_step(m_e, o_e, x, y).item())
    diff = max(abs(a - b) for a, b in zip(g_losses, e_losses))
    wdiff = max((pg - pe).abs().max().item()
                for pg, pe in zip(m_g.parameters(), m_e.parameters()))
    ok = diff <= 1e-5 and wdiff <= 1e-5
    return {"graph_ok": ok, "graph_loss_diff": diff, "graph_weight_diff": wdiff,
            "graph_losses": g_losses}


def mode_correct(args):
    dev = torch.device("cuda")
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    model = small_model().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for x, y in batches(args.steps, seed=3):
        x, y = x.to(dev), y.to(dev)
        losses.append(train_step(model, opt, x, y).item())
    torch.cuda.synchronize()
    probe = [p.data_ptr() for p in model.parameters()]
    probe += [p.grad.data_ptr() for p in model.parameters()]
    fresh = torch.empty(1 << 20, device=dev)   # kept alive while probed
    probe += [x.data_ptr(), fresh.data_ptr()]
    flags = managed_flags(probe)
    res = {"mode": "correct", "losses": losses, "weights_sum": weights_sum(model),
           "allocator": torch.cuda.get_allocator_backend(),
           "managed_count": sum(1 for f in flags if f == 1),
           "probe_count": len(flags), "probe_errors": flags.count(None)}
    res.update(graph_check(dev))
    res["ok"] = bool(res["graph_ok"] and all(l == l for l in losses))
    return res


def mlp(dev, depth, width, batch):
    """depth Linear+ReLU layers of width, AdamW, and one batch of inputs
    and targets, the same from the same seed."""
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width, device=dev)
    y = torch.randn(batch, width, device=dev)
    return model, opt, x, y


def bench_model(dev):
    """Sized to keep the GPU busy (about 5 ms of matrix work a step on an
    H100, more than Python needs to issue it), so that steps/s measures the
    GPU path rather than the host's scheduling; about 2.5 GB in all."""
    return mlp(dev, 6, 3072, 8192)


def bench_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    loss.backward()
    opt.step()
    return loss


def mode_bench(args):
    dev = torch.device("cuda")
    model, opt, x, y = bench_model(dev)
    for _ in range(args.warmup):
        loss = bench_step(model, opt, x, y)
    torch.cuda.synchronize()
    # The same seed, inputs and number of steps: the loss after the
    # warm-up is the same bits in every run on the same GPU and software
    # (what the priority benchmark compares with a solo run's), however
    # the steps were scheduled beside other programs.
    warm_loss = float(loss.item()).hex() if args.warmup else None
    if args.ready:
        open(args.ready, "w").close()
    windows, steps, t_end = [], 0, time.monotonic() + args.seconds
    t_start = time.monotonic()
    while time.monotonic() < t_end:
        t0, n = time.monotonic(), 0
        while n < 20:
            loss = bench_step(model, opt, x, y)
            n += 1
        torch.cuda.synchronize()
        windows.append(n / (time.monotonic() - t0))
        steps += n
    elapsed = time.monotonic() - t_start
    # steps_per_s (the median window) suits a job alone on the GPU;
    # steps_per_s_mean counts every pause, as a co-runner's turns cause.
    return {"mode": args.mode, "steps": steps, "windows": len(windows),
            "window_steps_per_s": [round(w, 1) for w in windows],
            "elapsed_s": elapsed, "steps_per_s_mean": steps / elapsed,
            "steps_per_s": statistics.median(windows),
            "steps_per_s_max": max(windows), "loss": float(loss.item()),
            "warmup_loss": warm_loss,
            "max_reserved_mib": torch.cuda.max_memory_reserved() >> 20}


def mode_alloc(args):
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device=dev).manual_seed(7)
    a = torch.randn(4096, 4096, device=dev, generator=g)
    b = torch.randn(4096, 4096, device=dev, generator=g)
    ref = a @ b
    for _ in range(args.warmup):
        c = a @ b
        del c
    torch.cuda.synchronize()
    t0 = time.monotonic()
    for _ in range(args.matmuls):
        c = a @ b
        del c
    torch.cuda.synchronize()
    secs = time.monotonic() - t0
    c = a @ b
    same = bool(torch.equal(c, ref))
    flags = managed_flags([c.data_ptr()])
    return {"mode": "alloc", "matmuls": args.matmuls, "seconds": secs,
            "ms_per_matmul": secs * 1e3 / args.matmuls, "same": same,
            "ok": same, "managed": flags,
            "allocator": torch.cuda.get_allocator_backend(),
            "max_reserved_mib": torch.cuda.max_memory_reserved() >> 20}


def burst(a_cpu, b_cpu):
    t0 = time.monotonic()
    a, b = a_cpu.to("cuda"), b_cpu.to("cuda")
    for _ in range(10):
        a = torch.tanh(a @ b) * 0.5
    s = float(a.sum().item())
    return (time.monotonic() - t0) * 1e3, s


def nearest_rank(xs, pct):
    """The pct-th percentile of xs by nearest rank (None when empty)."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, -(-len(xs) * pct // 100) - 1))]


def mode_burst(args):
    g = torch.Generator().manual_seed(5)
    a_cpu = torch.randn(2048, 2048, generator=g)
    b_cpu = torch.randn(2048, 2048, generator=g) / 45.0
    torch.empty(1, device="cuda")   # context only: no submission
    lat, sums, starts = [], [], []
    t0 = time.monotonic()

    def more(i):
        if args.stop_file:
            return not os.path.exists(args.stop_file)
        if args.burst_seconds:
            return time.monotonic() - t0 < args.burst_seconds
        return i < args.bursts

    i = 0
    while i == 0 or more(i):
        if i:
            time.sleep(args.gap_ms / 1e3)
        starts.append(time.monotonic())
        ms, s = burst(a_cpu, b_cpu)
        lat.append(ms)
        sums.append(s)
        if i == 0 and args.ready:
            open(args.ready, "w").close()
        i += 1
    later = lat[1:]
    return {"mode": "burst", "first_ms": lat[0], "bursts": len(lat),
            "later_ms_p50": statistics.median(later) if later else None,
            "later_ms_p90": nearest_rank(later, 90),
            "later_ms_max": max(later) if later else None,
            "latencies_ms": lat, "starts": starts, "sum": sums[0]}


def mode_infer(args):
    """An inference service's rhythm: a request arrives every --period-ms
    (on a fixed schedule, so a late answer delays the ones queued behind
    it), its small input is copied in, --layers matmuls of a 2048-wide
    model run on it, and the answer is read back. A request's latency runs
    from when it was due to when its answer is on the host."""
    g = torch.Generator().manual_seed(7)
    w = [(torch.randn(2048, 2048, generator=g) / 45.0).to("cuda")
         for _ in range(args.layers)]
    x_cpu = torch.randn(args.batch, 2048, generator=g)

    def request():
        x = x_cpu.to("cuda")
        for m in w:
            x = torch.tanh(x @ m)
        return float(x.sum().item())

    for _ in range(args.warmup):
        request()
    if args.ready:
        open(args.ready, "w").close()
    period = args.period_ms / 1e3
    # Poisson arrivals of the same mean: gaps no drain can foresee, the
    # same ones in every run (seeded).
    rng = random.Random(11)
    lat, answers, t0 = [], set(), time.monotonic()
    due = t0
    while True:
        if args.stop_file:
            if os.path.exists(args.stop_file):
                break
        elif due - t0 >= args.seconds:
            break
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        answers.add(request())
        lat.append((time.monotonic() - due) * 1e3)
        due += (rng.expovariate(1.0 / period) if args.arrivals == "poisson"
                else period)
    span = time.monotonic() - t0
    return {"mode": "infer", "requests": len(lat), "span_s": span,
            "due": int(span / period) + 1, "period_ms": args.period_ms,
            "arrivals": args.arrivals,
            "answers": sorted(float.hex(a) for a in answers),
            "layers": args.layers, "batch": args.batch,
            "p50_ms": statistics.median(lat) if lat else None,
            "p99_ms": nearest_rank(lat, 99), "max_ms": max(lat) if lat else None,
            "latencies_ms": [round(v, 3) for v in lat]}


def share_model(dev):
    """Small enough for many co-runners (about 0.3 GB each), large enough
    that a step is GPU work rather than Python."""
    return mlp(dev, 4, 2048, 4096)


def mode_share(args):
    dev = torch.device("cuda")
    model, opt, x, y = share_model(dev)
    for _ in range(args.warmup):
        bench_step(model, opt, x, y)
    torch.cuda.synchronize()
    if args.ready:
        open(args.ready, "w").close()
    while not os.path.exists(args.go):     # idle: the GPU goes to others
        time.sleep(0.01)
    with open(args.go) as f:
        t0, t1 = (float(v) for v in f.read().split())
    done, last, busy, steps = [], None, 0.0, 0
    while True:
        bench_step(model, opt, x, y)
        torch.cuda.synchronize()
        now = time.monotonic()
        steps += 1
        if now > t1:
            break
        if now >= t0:
            done.append(now)
            # Back-to-back steps are time on the GPU; a longer pause is
            # another process's turn.
            if last is not None and now - last < args.turn_gap_ms / 1e3:
                busy += now - last
            last = now
    gaps = [b - a for a, b in zip(done, done[1:])]
    return {"mode": "share", "steps_in_window": len(done), "steps": steps,
            "window_s": t1 - t0, "busy_s": busy,
            "step_ms_p50": statistics.median(gaps) * 1e3 if gaps else None,
            "turns": 1 + sum(1 for g in gaps if g >= args.turn_gap_ms / 1e3)
            if done else 0,
            "max_reserved_mib": torch.cuda.max_memory_reserved() >> 20}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["correct", "bench", "background", "burst",
                                     "share", "alloc", "infer"])
    ap.add_argument("--matmuls", type=int, default=200)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--ready")
    ap.add_argument("--bursts", type=int, default=4)
    ap.add_argument("--gap-ms", type=float, default=400)
    ap.add_argument("--burst-seconds", type=float, default=0)
    ap.add_argument("--stop-file")
    ap.add_argument("--go")
    ap.add_argument("--turn-gap-ms", type=float, default=50)
    ap.add_argument("--period-ms", type=float, default=50)
    ap.add_argument("--arrivals", choices=["periodic", "poisson"],
                    default="periodic")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"mode": args.mode, "ok": False, "error": "no CUDA"}))
        return 2
    fn = {"correct": mode_correct, "bench": mode_bench,
          "background": mode_bench, "burst": mode_burst,
          "share": mode_share, "alloc": mode_alloc,
          "infer": mode_infer}[args.mode]
    res = fn(args)
    res["pid"] = os.getpid()
    print(json.dumps(res), flush=True)
    return 0 if res.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
