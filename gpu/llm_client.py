#!/usr/bin/env python3
"""An LLM-serving-like client for the priority benchmark (prio_bench.py):
a small decoder with random weights (a GPT-2 configuration of 6 layers,
768 wide, from `transformers`, seeded) answering requests that arrive
as a Poisson process (mean --period-ms), each a greedy `generate` of
--tokens new tokens from a 32-token prompt: many short kernels with
Python between them, the CPU-bound shape of a serving loop. Prints one
JSON line: the requests' latency from when each was due (p50, p99), and
the tokens of the first answer (every answer is the same prompt's, so
they must all equal it and equal a solo run's).

    llm_client.py [--seconds S | --stop-file F] [--ready F]
                  [--period-ms MS] [--tokens N]
Exit 77 when transformers is not installed."""
import argparse
import json
import os
import random
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--stop-file")
    ap.add_argument("--ready")
    ap.add_argument("--period-ms", type=float, default=400)
    ap.add_argument("--tokens", type=int, default=32)
    a = ap.parse_args()
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as e:
        print(json.dumps({"error": "no transformers: %s" % e}))
        return 77
    torch.manual_seed(5)
    cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, vocab_size=50257)
    model = GPT2LMHeadModel(cfg).to("cuda").eval()
    prompt = torch.randint(0, 50257, (1, 32),
                           generator=torch.Generator().manual_seed(9)).cuda()

    def request():
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=a.tokens,
                                 min_new_tokens=a.tokens, do_sample=False,
                                 pad_token_id=0)
        return out[0, 32:].tolist()

    for _ in range(3):
        first = request()
    if a.ready:
        open(a.ready, "w").close()
    rng = random.Random(13)
    lat, same, t0 = [], True, time.monotonic()
    due = t0
    while True:
        if a.stop_file:
            if os.path.exists(a.stop_file):
                break
        elif due - t0 >= a.seconds:
            break
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        same = same and request() == first
        lat.append((time.monotonic() - due) * 1e3)
        due += rng.expovariate(1000.0 / a.period_ms)
    lat.sort()
    print(json.dumps({
        "mode": "llm", "requests": len(lat), "tokens": a.tokens,
        "p50_ms": statistics.median(lat) if lat else None,
        "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else None,
        "answers": [str(first)] if same else ["differ"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
