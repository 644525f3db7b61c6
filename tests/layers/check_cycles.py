#!/usr/bin/env python3
"""Fail when the object files of one program call each other in a circle.

No circles (docs/scheduler.md): if file A calls into B, B does not call back into A; a
lower layer reports upward through a callback or a return value. This
script checks that rule from what the compiler produced rather than by eye.

For each object it reads the global symbols it defines (nm --defined-only
--extern-only) and the symbols it leaves undefined (nm -u). Object A
depends on object B when A leaves undefined a symbol that B defines.
Local symbols (static functions and data) never link two objects, so two
files may each have a static helper of the same name without an edge.
The strongly connected components of that graph with more than one object
are the circles; each is printed with the symbols that make each edge.

With --layers L1,L2,... (the bottom layer first) it also fails on any
edge from an object of a layer into one of a layer listed after it: a
layer calls only its own and the layers below. An object's layer is the
nearest folder of its path (counted from the object up) named after a
layer, or after a layer's CMake object library (vshare_<layer>_obj.dir),
so a build directory somewhere below a folder that happens to bear a
layer's name changes nothing; objects of no listed layer are checked for
circles only.

Usage: check_cycles.py [--nm NM] [--name LABEL] [--layers L1,L2,...]
                       OBJECT|DIRECTORY...
A directory stands for every *.o below it. Exit status: 0 no circle (and
no call up a layer), 1 at least one, 2 bad usage, no object given, or nm
failed (a check that silently checks nothing must not pass).
"""

import argparse
import os
import subprocess
import sys

EXIT_OK, EXIT_CIRCLE, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Raised for anything that means the check could not run."""


def collect_objects(paths):
    """Expand directories into their *.o files; keep the order stable."""
    objects = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                objects += [os.path.join(root, f) for f in sorted(files)
                            if f.endswith(".o")]
        elif os.path.isfile(path):
            objects.append(path)
        else:
            raise UsageError(f"no such object file: {path}")
    # The same object named twice (a directory and a file in it) is one node.
    seen, unique = set(), []
    for obj in objects:
        key = os.path.realpath(obj)
        if key not in seen:
            seen.add(key)
            unique.append(obj)
    return unique


def run_nm(nm, args, obj):
    """Return (name, type) pairs from nm's POSIX output for one object."""
    try:
        out = subprocess.run([nm, "-P", *args, obj], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise UsageError(f"{nm} failed on {obj}: {detail.strip()}") from exc
    pairs = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 2:
            pairs.append((fields[0], fields[1]))
    return pairs


def read_symbols(nm, objects):
    """Map each object to (set of globals it defines, set it needs)."""
    table = {}
    for obj in objects:
        # --extern-only keeps the symbols other objects can bind to
        # (global, weak, GNU unique, global indirect functions) and drops
        # the static ones, without guessing from the case of nm's letters.
        defined = {name for name, _ in
                   run_nm(nm, ["--defined-only", "--extern-only"], obj)}
        # nm -u lists U (undefined) and w/v (weak undefined): a weak
        # reference still binds to a definition when one is linked in.
        needed = {name for name, _ in run_nm(nm, ["-u"], obj)}
        table[obj] = (defined, needed)
    return table


def build_graph(table):
    """Edges A -> B labelled with the symbols A takes from B (A != B)."""
    definers = {}
    for obj, (defined, _) in table.items():
        for name in defined:
            definers.setdefault(name, []).append(obj)
    edges = {obj: {} for obj in table}
    for obj, (_, needed) in table.items():
        for name in needed:
            for other in definers.get(name, ()):
                if other != obj:
                    edges[obj].setdefault(other, set()).add(name)
    return edges


def strong_components(nodes, edges):
    """Tarjan's algorithm, iterative so that no graph hits the recursion
    limit. Returns the components as lists of nodes."""
    index, low, on_stack = {}, {}, set()
    stack, components, counter = [], [], 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def short_names(objects):
    """Label objects by the shortest path suffix that stays unique, so a
    report reads "sched.c.o" rather than a long build path."""
    labels = {}
    for obj in objects:
        parts = os.path.normpath(obj).split(os.sep)
        labels[obj] = parts
    depth = 1
    while True:
        shown = {obj: os.sep.join(p[-depth:]) for obj, p in labels.items()}
        if len(set(shown.values())) == len(shown) or depth > 64:
            return shown
        depth += 1


def report_circles(label, circles, edges, names):
    print(f"{label}: {len(circles)} circle(s) of calls between objects "
          f"(no circles: docs/scheduler.md)")
    for number, circle in enumerate(circles, 1):
        members = sorted(circle, key=lambda o: names[o])
        print(f"circle {number}: " + ", ".join(names[o] for o in members))
        inside = set(circle)
        for src in members:
            for dst in sorted(edges[src], key=lambda o: names[o]):
                if dst in inside:
                    symbols = ", ".join(sorted(edges[src][dst]))
                    print(f"  {names[src]} -> {names[dst]}: {symbols}")


def layer_of(obj, layers):
    """The index of obj's layer in layers, or None: its nearest folder
    named after one."""
    for part in reversed(os.path.normpath(obj).split(os.sep)[:-1]):
        if part.startswith("vshare_") and part.endswith("_obj.dir"):
            part = part[len("vshare_"):-len("_obj.dir")]
        if part in layers:
            return layers.index(part)
    return None


def calls_up(objects, edges, layers):
    """Edges (src, dst) from a layer into one above it."""
    level = {obj: layer_of(obj, layers) for obj in objects}
    return [(src, dst) for src in objects for dst in sorted(edges[src])
            if level[src] is not None and level[dst] is not None
            and level[dst] > level[src]]


def report_calls_up(label, ups, edges, names, layers):
    print(f"{label}: {len(ups)} call(s) up a layer "
          f"(layers from the bottom: {', '.join(layers)})")
    for src, dst in ups:
        symbols = ", ".join(sorted(edges[src][dst]))
        print(f"  {names[src]} -> {names[dst]}: {symbols}")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Fail on circles of calls between object files.")
    parser.add_argument("--nm", default=os.environ.get("NM", "nm"),
                        help="nm program to use (default: $NM or nm)")
    parser.add_argument("--name", default="check_cycles",
                        help="label for the report (the program's name)")
    parser.add_argument("--layers", default="",
                        help="layer names from the bottom up, comma-separated: "
                             "also fail on a call up a layer")
    parser.add_argument("objects", nargs="*",
                        help="object files, or directories holding them")
    return parser.parse_args(argv)


def main(argv):
    try:
        args = parse_args(argv)
    except SystemExit as exc:
        # argparse exits 2 on bad usage and 0 on --help; keep both.
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        objects = collect_objects(args.objects)
        if not objects:
            raise UsageError("no object files given: nothing would be checked")
        table = read_symbols(args.nm, objects)
    except UsageError as exc:
        print(f"{args.name}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    edges = build_graph(table)
    circles = [c for c in strong_components(objects, edges) if len(c) > 1]
    layers = [l for l in args.layers.split(",") if l]
    ups = calls_up(objects, edges, layers) if layers else []
    names = short_names(objects)
    if circles:
        report_circles(args.name, circles, edges, names)
    if ups:
        report_calls_up(args.name, ups, edges, names, layers)
    if circles or ups:
        return EXIT_CIRCLE
    count = sum(len(e) for e in edges.values())
    print(f"{args.name}: {len(objects)} objects, {count} edges, no circle"
          + (f", no call up a layer ({len(layers)} layers)" if layers else ""))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
