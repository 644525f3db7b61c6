#!/usr/bin/env python3
"""Attacks of many tenants on the real daemon, as unprivileged uids
through setpriv: many uids filling max_clients, and what the HTTP metrics
tell while the status is not public.

Usage: sched_hostile_tenants.py BINDIR SCENARIO (needs root to switch
users; skips with 77 otherwise)."""
import os
import re
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedtest import Daemon, check, main, scenarios, wait_for  # noqa: E402
from sched_hostile import OPEN, VICTIM, Peer, guarded, victim  # noqa: E402
from sched_metrics import free_port  # noqa: E402

# Uids of the tenants that fill the table: unprivileged, no passwd entry.
FILL_UID0 = 24000
FILL_UIDS = 64
FILL_EACH = 256  # uid_conns' default: 64 x 256 is max_clients' 16384


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
