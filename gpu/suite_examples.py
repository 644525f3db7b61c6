"""The project's example programs (driver API, embedded PTX) run plain and
under the shim: both must succeed with the same results; under the shim
their buffers must report as managed memory ("managed: yes"), plain as
device memory ("managed: no")."""
import os
import re

from suite_correct import unshared
from suite_lib import Result

# Arguments that keep each example short on a real GPU, and whether it
# reports managed-ness and a PASS/FAIL verdict.
EXAMPLES = [
    ("vs-vecadd", ["--iters", "3", "--size", "4M"], True, True),
    ("vs-compute", ["--iters", "20", "--kernel-ms", "5", "--mem", "64M",
                    "--progress-ms", "0"], True, True),
    ("vs-bursty", ["--bursts", "3", "--kernels", "5", "--kernel-us", "500",
                   "--gap-ms", "50", "--api", "graph"], False, False),
]

_NUM = re.compile(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?")
_MANAGED = re.compile(r"managed: (yes|no)")


def normalize(text):
    """Mask figures (timings differ between any two runs) and the
    managed-ness, which is checked on its own."""
    return [_NUM.sub("#", _MANAGED.sub("managed: ?", line)).rstrip()
            for line in text.splitlines() if line.startswith("vs-")]


def check_one(env, name, args, reports_managed, verdict):
    path = os.path.join(env.vshare, "bin", name)
    title = "example %s" % name
    if not os.access(path, os.X_OK):
        return Result(title, "correctness", "SKIP", detail="not built")
    plain = env.run(name + ".plain", [path] + args, env.base_env(), 120)
    shim = unshared(env.run(name + ".shim", [path] + args, env.shim_env(name), 120))
    if plain.rc != 0 or shim.rc != 0:
        return Result(title, "correctness", "FAIL", detail="; ".join(
            "%s: rc=%s %s" % (p.name, p.rc, (p.err or p.out).strip()[-200:])
            for p in (plain, shim) if p.rc != 0))
    why = []
    if normalize(plain.out) != normalize(shim.out):
        why.append("outputs differ (see suite.log)")
    if verdict and not ("PASS" in plain.out and "PASS" in shim.out):
        why.append("no PASS")
    sm = _MANAGED.findall(shim.out)
    pm = _MANAGED.findall(plain.out)
    if reports_managed and (sm != ["yes"] * len(sm) or not sm or "yes" in pm):
        why.append("managed: shim %s, plain %s" % (sm, pm))
    last = lambda p: (p.out.strip().splitlines() or [""])[-1][:70]  # noqa: E731
    return Result(title, "correctness", "FAIL" if why else "PASS",
                  measured=last(shim), baseline=last(plain),
                  target="same result%s" % ("; managed" if reports_managed else ""),
                  detail="; ".join(why))


def check_examples(env):
    return [check_one(env, *ex) for ex in EXAMPLES]
