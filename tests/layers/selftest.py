#!/usr/bin/env python3
"""Self-test of check_cycles.py: a check that never fails proves nothing.

Compiles the tiny C files of selftest/ with the project's compiler and
checks that two files calling each other fail (exit 1, naming the edge
symbols), two files in a line pass even though the lower one uses a
global of the same name as the upper one's static helper, and that no
object at all is a usage error (exit 2), not a pass; with --layers, a
line in layer order passes and the same line read upside down fails,
also where the objects lie below a folder named after the bottom layer
(an object's layer is its nearest such folder).

Usage: selftest.py CC NM
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_cycles.py")
SOURCES = os.path.join(HERE, "selftest")


def compile_all(cc, names, outdir):
    objects = []
    for name in names:
        obj = os.path.join(outdir, name + ".o")
        subprocess.run([cc, "-c", "-O0", os.path.join(SOURCES, name + ".c"),
                        "-o", obj], check=True)
        objects.append(obj)
    return objects


def check(nm, *args):
    proc = subprocess.run([sys.executable, CHECK, "--nm", nm, *args],
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def expect(what, got_rc, want_rc, output, needles=()):
    missing = [n for n in needles if n not in output]
    if got_rc != want_rc or missing:
        print(f"FAIL {what}: exit {got_rc} (want {want_rc}), "
              f"missing {missing}\n{output}")
        return False
    print(f"ok   {what}: exit {got_rc}")
    return True


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    cc, nm = argv
    with tempfile.TemporaryDirectory(prefix="check_cycles.") as tmp:
        circle = compile_all(cc, ["circle_a", "circle_b"], tmp)
        line = compile_all(cc, ["line_a", "line_b"], tmp)
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        ok = True
        rc, out = check(nm, *circle)
        ok &= expect("two files calling each other", rc, 1, out,
                     ["circle_a.o -> circle_b.o: circle_b",
                      "circle_b.o -> circle_a.o: circle_a"])
        rc, out = check(nm, *line)
        ok &= expect("two files in a line", rc, 0, out,
                     ["2 objects, 1 edges"])
        rc, out = check(nm, *line, *circle)
        ok &= expect("a line beside a circle", rc, 1, out,
                     ["1 circle(s)"])
        rc, out = check(nm, tmp)
        ok &= expect("a directory of objects", rc, 1, out, ["1 circle(s)"])
        rc, out = check(nm)
        ok &= expect("no object given", rc, 2, out, ["no object files"])
        rc, out = check(nm, empty)
        ok &= expect("a directory without objects", rc, 2, out,
                     ["no object files"])
        rc, out = check(nm, os.path.join(tmp, "missing.o"))
        ok &= expect("a missing object", rc, 2, out, ["no such object"])
        low, high = os.path.join(tmp, "low"), os.path.join(tmp, "high")
        os.mkdir(low)
        os.mkdir(high)
        os.replace(line[1], os.path.join(low, "line_b.o"))
        os.replace(line[0], os.path.join(high, "line_a.o"))
        line = [os.path.join(high, "line_a.o"), os.path.join(low, "line_b.o")]
        rc, out = check(nm, "--layers", "low,high", low, high)
        ok &= expect("a line in layer order", rc, 0, out,
                     ["no call up a layer (2 layers)"])
        rc, out = check(nm, "--layers", "high,low", low, high)
        ok &= expect("a call up a layer", rc, 1, out,
                     ["1 call(s) up a layer",
                      "line_a.o -> line_b.o: line_b"])
        # The same objects in a build directory below a folder named
        # after the bottom layer: each keeps its own folder's layer.
        nested = os.path.join(tmp, "outer", "low", "build")
        os.makedirs(nested)
        os.replace(low, os.path.join(nested, "low"))
        os.replace(high, os.path.join(nested, "high"))
        rc, out = check(nm, "--layers", "high,low", nested)
        ok &= expect("a call up a layer below a folder named after one",
                     rc, 1, out, ["1 call(s) up a layer",
                                  "line_a.o -> line_b.o: line_b"])
        line = [os.path.join(nested, "high", "line_a.o"),
                os.path.join(nested, "low", "line_b.o")]
        rc, out = check(nm, "--no-such-option", *line)
        ok &= expect("an unknown option", rc, 2, out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
