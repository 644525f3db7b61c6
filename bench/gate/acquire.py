#!/usr/bin/env python3
"""Uncontended lock acquisition: bench_acquire against a real
vshare-scheduler in mode on, on a temporary socket.
    acquire.py SCHEDULER BENCH_ACQUIRE [N] [ROUNDS]
Prints bench_acquire's JSON for each round (a fresh scheduler each)."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "gate"))
from e2e_lib import Scheduler  # noqa: E402


def main():
    sched_bin, bench = sys.argv[1], sys.argv[2]
    n = sys.argv[3] if len(sys.argv) > 3 else "30"
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="vsacq.") as tmp:
            s = Scheduler(sched_bin, tmp, mode="on", log_level="warn")
            s.start()
            env = dict(os.environ, VSHARE_SOCKET=s.sock, VSHARE_IDLE_MS="5",
                       VSHARE_LOG_LEVEL="error")
            try:
                out = subprocess.run([bench, n], env=env, capture_output=True,
                                     text=True, timeout=120)
                sys.stdout.write(out.stdout)
                sys.stderr.write(out.stderr)
                if out.returncode != 0:
                    return 1
            finally:
                s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
