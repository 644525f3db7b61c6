#!/usr/bin/env python3
"""driver.capture_rule: the test driver answers gpu/capture_probe as the
real driver did (capture_rule.txt, recorded on a GPU): which calls a stream
capture refuses, by capture mode, caller and interaction mode.
Usage: check_capture_rule.py PROBE RULE"""
import subprocess
import sys


def table(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def main():
    probe, rule = sys.argv[1], sys.argv[2]
    run = subprocess.run([probe], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        sys.exit("capture_probe failed (rc %d): %s" % (run.returncode, run.stderr.strip()))
    with open(rule) as f:
        want = table(f.read())
    got = table(run.stdout)
    if len(got) != len(want):
        sys.exit("the probe printed %d answers, the rule has %d: rebuild the probe "
                 "or record the rule again" % (len(got), len(want)))
    diff = [(w, g) for w, g in zip(want, got) if w != g]
    for w, g in diff[:20]:
        print("real driver: %s\ntest driver: %s" % (w, g))
    if diff:
        sys.exit("the test driver differs from the real driver in %d of %d answers"
                 % (len(diff), len(want)))
    print("%d answers as the real driver's" % len(want))


if __name__ == "__main__":
    main()
