"""The project's example programs (driver API, embedded PTX) run plain and
under the shim: both must succeed and print the same results once timing
figures are masked."""
import os
import re

from suite_lib import Result

# Arguments that keep each example short on a real GPU.
EXAMPLES = {
    "vs-vecadd": [],
    "vs-bursty": [],
    "vs-compute": [],
}

_TIMING = re.compile(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?\s*(ns|us|ms|s|GB/s|MB/s|%)\b|"
                     r"\bpid[ =:]*\d+", re.I)


def normalize(text):
    """Mask timing figures and pids, which differ between any two runs."""
    return [_TIMING.sub("#", line).rstrip() for line in text.splitlines()
            if line.strip() and not line.startswith("vshare")]


def check_examples(env):
    out = []
    for name, args in EXAMPLES.items():
        path = os.path.join(env.vshare, "bin", name)
        title = "example %s" % name
        if not os.access(path, os.X_OK):
            out.append(Result(title, "correctness", "SKIP", detail="not built"))
            continue
        plain = env.run(name + ".plain", [path] + args, env.base_env(), 120)
        shim = env.run(name + ".shim", [path] + args, env.shim_env(name), 120)
        if plain.rc != 0 or shim.rc != 0:
            out.append(Result(title, "correctness", "FAIL", detail="; ".join(
                p.why() for p in (plain, shim) if p.rc != 0)))
            continue
        same = normalize(plain.out) == normalize(shim.out)
        out.append(Result(title, "correctness", "PASS" if same else "FAIL",
                          measured="rc 0, %d lines" % len(shim.out.splitlines()),
                          baseline="rc 0", target="same output",
                          detail="" if same else "outputs differ (see suite.log)"))
    return out
