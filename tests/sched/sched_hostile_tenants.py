#!/usr/bin/env python3
"""Attacks of many tenants on the real daemon, as unprivileged uids
through setpriv: five uids claiming the interactive class beside a batch
program of a sixth (class_total: vs-compute under the shim on the test
driver, whose paths come in VSHARE_TEST_SHIM, VSHARE_TEST_DRIVER_DIR and
VSHARE_TEST_COMPUTE), many uids filling max_clients, and what the HTTP
metrics tell while the status is not public.

Usage: sched_hostile_tenants.py BINDIR SCENARIO (needs root to switch
users; skips with 77 otherwise)."""
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedtest import Daemon, check, main, scenarios, wait_for  # noqa: E402
from sched_hostile import (OPEN, VICTIM, Peer, as_user, guarded,  # noqa: E402
                           victim)
from sched_hostile_lock import public  # noqa: E402
from sched_metrics import free_port  # noqa: E402

# Uids of the tenants that fill the table: unprivileged, no passwd entry.
FILL_UID0 = 24000
FILL_UIDS = 64
FILL_EACH = 256  # uid_conns' default: 64 x 256 is max_clients' 16384


# The claimers of the interactive class: five more uids.
CLAIM_UID0 = 24100
CLAIMERS = 5
# A window (the half-life, over which budgets and the class's total are
# counted) that a run of seconds spans a few times.
HALFLIFE_S = 4
RUN_S = 16


def shim_paths():
    """The shim, the test driver's directory and vs-compute, or None."""
    paths = [os.environ.get(k) for k in ("VSHARE_TEST_SHIM",
                                          "VSHARE_TEST_DRIVER_DIR",
                                          "VSHARE_TEST_COMPUTE")]
    if not all(paths) or not all(os.path.exists(p) for p in paths):
        return None
    return paths


def compute(d, paths, uid, seconds, klass="batch", label="prog"):
    """vs-compute (10 ms kernels back to back, never idle) under the shim
    on the test driver as uid, scheduled (it waits rather than run
    unshared)."""
    shim, td, prog = paths
    env = dict(PATH=os.environ.get("PATH", "/usr/bin:/bin"),
               VSHARE_SOCKET=d.sock, VSHARE_LABEL=label,
               VSHARE_CLASS=klass, VSHARE_REQUIRE_SCHEDULER="1",
               LD_LIBRARY_PATH=td, ASAN_OPTIONS="detect_leaks=0",
               LD_PRELOAD=" ".join(p for p in (
                   os.environ.get("VSHARE_SAN_PRELOAD"), shim) if p))
    return subprocess.Popen(
        as_user(str(uid), [prog, "--seconds", str(seconds), "--kernel-ms",
                           "10", "--mem", "64K", "--progress-ms", "0"]),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rate(p, timeout):
    """The iterations a second a vs-compute run reports at its end."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    m = re.search(r"done: (\d+) iterations in ([0-9.]+) s", out)
    check(p.returncode == 0 and m, "vs-compute exited %s:\n%s%s" %
          (p.returncode, out[-500:], err[-1500:]))
    return int(m.group(1)) / float(m.group(2))


def t_class_total(b):
    """Five uids, each running a non-stop program that claims the
    interactive class within its own budget, beside a batch program of a
    sixth uid (mode on): the class as a whole takes at most
    interactive_total_pct (50%) of each window, and the batch program
    keeps at least its fair share of the rest, 8% of its speed alone.
    Before, five budgets made all of the GPU: it ran at 0.1% of it."""
    paths = shim_paths()
    if paths is None:
        print("VSHARE_TEST_SHIM, VSHARE_TEST_DRIVER_DIR or "
              "VSHARE_TEST_COMPUTE not set or missing")
        return 77
    conf = dict(OPEN, mode="on", halflife_s=HALFLIFE_S)
    with Daemon(b, conf) as d:
        paths = [public(d, p) for p in paths]
        solo = rate(compute(d, paths, VICTIM, 4, label="solo"), 60)
        claim = [compute(d, paths, CLAIM_UID0 + i, RUN_S + 8, "interactive",
                         "claimer%d" % i) for i in range(CLAIMERS)]
        try:
            time.sleep(1)
            got = rate(compute(d, paths, VICTIM, RUN_S, label="victim"),
                       RUN_S + 60)
            st = d.status()
        finally:
            for p in claim:
                p.kill()
                p.wait()
        g = st["gpus"][0]
        print("solo %.1f it/s, beside the claimers %.1f it/s (%.1f%%); "
              "the class %s%% of %s%%, slice %s ms (at most %s)" % (
                  solo, got, 100 * got / solo, g["interactive_used_pct"],
                  g["interactive_total_pct"], g["slice_ms"],
                  g["slice_max_ms"]))
        check(got >= 0.08 * solo, "the batch program ran at %.1f%% of its "
              "speed alone" % (100 * got / solo))
        check(g["slice_ms"] <= g["slice_max_ms"], "slice past its cap")


def refusals(d, reason):
    m = re.search(r'vshare_refusals_total\{reason="%s"\} (\d+)' % reason,
                  d.ctl("metrics")[1])
    return int(m.group(1)) if m else -1


def t_table_full(b):
    """64 uids with 256 registered connections each fill max_clients
    (16384): root's vsharectl status still answers (the admins'
    reserve), and a new program of another uid registers and is
    scheduled, one connection of a uid with the most closed for it; a
    uid that has as many as any is refused, not the newcomer. Before,
    root was refused ("scheduler full") and so was the new program, which
    then ran unshared."""
    with Daemon(b, OPEN) as d:
        peers = [Peer(d, "hold", FILL_EACH, uid=str(FILL_UID0 + i),
                      wait=False) for i in range(FILL_UIDS)]
        try:
            got = [p.read() for p in peers]
            held = sum(r["welcomed"] for r in got)
            print("held: %d connections of %d uids" % (held, FILL_UIDS))
            check(held == FILL_UIDS * FILL_EACH, "the tenants hold %d: %r"
                  % (held, got[:3]))
            rc, out, err = d.ctl("status")
            check(rc == 0, "root's status refused: %d %s" % (rc, err))
            rc, out = victim(d, "--hold-ms", 10, "--cycles", 3)
            check(rc == 0, "the new program of uid %s was not scheduled: "
                  "%s" % (VICTIM, out))
            # One connection of a uid with the most made room for it, and
            # nobody was refused for the full table.
            check(refusals(d, "evicted") == 1, "evicted: %d" %
                  refusals(d, "evicted"))
            check(refusals(d, "max_clients") == 0,
                  "a newcomer was refused for the full table")
        finally:
            for p in peers:
                p.stop()


def t_metrics_private(b):
    """With status_public false the HTTP endpoint, which any local user
    reaches, shows no uid and no named client: only totals per GPU; the
    socket's METRICS keeps them for root. Before, the per-uid series
    (held time, budgets) were served to anyone over TCP."""
    port = free_port()
    conf = dict(OPEN, status_public=False,
                metrics_listen="127.0.0.1:%d" % port,
                policy_users={VICTIM: {"max_share_pct": 50}})
    with Daemon(b, conf) as d:
        rc, out = victim(d, "--hold-ms", 50, "--cycles", 3)
        check(rc == 0, "victim: " + out)
        # The socket: root sees the uid's series.
        wait_for(lambda: 'uid="%s"' % VICTIM in d.ctl("metrics")[1], 5,
                 "the per-uid series over the socket")
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                    timeout=5) as r:
            text = r.read().decode()
        check("vshare_grants_total" in text, "no GPU totals over HTTP")
        leaked = sorted(set(re.findall(r'^(\w+)\{[^}]*(?:uid|name)="',
                                       text, re.M)))
        check(not leaked, "uid or name series over HTTP: %r" % leaked)
        check(VICTIM not in text, "uid %s over HTTP" % VICTIM)


if __name__ == "__main__":
    sys.exit(main({k: guarded(v) for k, v in scenarios(globals()).items()}))
