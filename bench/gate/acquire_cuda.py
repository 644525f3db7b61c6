#!/usr/bin/env python3
"""Uncontended lock acquisition as the GPU suite measures it, on any CUDA
driver (the CUDA test driver here): the suite's first_launch program under
libvshare, with a real vshare-scheduler in mode on. One long-lived process
(the pinger, VSHARE_IDLE_MS=5) loses the GPU N times to a bumper process
and times the launch that takes it back.
    acquire_cuda.py SCHEDULER LIBVSHARE FIRST_LAUNCH [N]
Environment: LD_LIBRARY_PATH (the driver), VSG_FATBIN, VSG_EMPTY_KERNEL as
the programs need them. Prints the pinger's JSON with bumper times."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "gate"))
from e2e_lib import Scheduler  # noqa: E402


def wait_file(path, proc, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    return False


def main():
    sched_bin, shim, prog = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    with tempfile.TemporaryDirectory(prefix="vsacqc.") as tmp:
        s = Scheduler(sched_bin, tmp, mode="on", log_level="warn")
        s.start()
        env = dict(os.environ, LD_PRELOAD=shim, VSHARE_SOCKET=s.sock,
                   VSHARE_LOG_LEVEL="error", CUDA_MODULE_LOADING="EAGER")
        try:
            pinger = subprocess.Popen(
                [prog, "--reacquire", str(n), "--dir", tmp],
                env=dict(env, VSHARE_IDLE_MS="5", VSHARE_LABEL="pinger"),
                stdout=subprocess.PIPE, text=True)
            bumps = []
            for i in range(n):
                if not wait_file(os.path.join(tmp, "ready.%d" % i), pinger):
                    print("pinger gave up", file=sys.stderr)
                    return 1
                out = subprocess.run([prog], env=dict(env, VSHARE_LABEL="bumper"),
                                     capture_output=True, text=True, timeout=60)
                if out.returncode != 0:
                    sys.stderr.write(out.stderr)
                    return 1
                bumps.append(json.loads(out.stdout)["first_ns"])
                time.sleep(0.02)
                open(os.path.join(tmp, "go.%d" % i), "w").close()
            res = json.loads(pinger.communicate(timeout=60)[0])
        finally:
            s.stop()
    re = sorted(x / 1e3 for x in res["reacquire_ns"])
    print(json.dumps({"reacquire_p50_us": re[len(re) // 2], "min_us": re[0],
                      "max_us": re[-1], "first_us": res["first_ns"] / 1e3,
                      "bumper_first_p50_us": sorted(bumps)[len(bumps) // 2] / 1e3}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
