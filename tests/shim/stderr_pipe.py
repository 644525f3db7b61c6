#!/usr/bin/env python3
"""A program whose stderr is a pipe nobody reads must not be killed by
SIGPIPE when the shim logs: run a CUDA program under the shim with a bad
setting (which the shim reports on stderr) and the pipe's read end closed.
Usage: stderr_pipe.py PROGRAM [ARGS...] (environment from ctest)."""
import os
import signal
import subprocess
import sys

r, w = os.pipe()
os.close(r)                      # nobody will ever read
env = dict(os.environ, VSHARE_MEM_LIMIT="not-a-size", VSHARE_LOG_LEVEL="warn")
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=w, env=env,
                   timeout=30)
os.close(w)
if p.returncode == -signal.SIGPIPE:
    print("FAIL: killed by SIGPIPE while the shim logged")
    sys.exit(1)
if p.returncode != 0:
    print("FAIL: exit status %d" % p.returncode)
    sys.exit(1)
print("PASS: the program ran to its end with a dead stderr")
