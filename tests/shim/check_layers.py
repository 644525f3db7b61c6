#!/usr/bin/env python3
"""Fail on any circle of calls between object files (STYLE.md, "No circles"),
and on any call from a layer of libvshare.so into a layer above it.

  check_layers.py [--data] [--layers a,b,c] OBJECT...

An argument may hold several objects separated by ';' (a CMake list, as
$<TARGET_OBJECTS:...> gives). With --layers, an object's layer is the name
of its CMake object library (vshare_<layer>_obj.dir in its path) and the
list orders the layers from the bottom up: a call may go to the caller's
own layer or to one listed before it.

An object calls another when it refers to a function (nm: an undefined
symbol) that the other defines in its text. A function's address stored in
a table (the hook table, a callback table) is how a lower layer reports
upward, so references from data sections are not calls: they are read from
the relocations (readelf -r) of the object's text sections only. With
--data every reference counts, tables included.
"""
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def defined_functions(obj):
    out = set()
    for line in run("nm", "--defined-only", obj).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TW":
            out.add(parts[2])
    return out


_undef = {}


def undefined(obj):
    if obj not in _undef:
        _undef[obj] = {l.split()[-1] for l in
                       run("nm", "--undefined-only", obj).splitlines() if l.strip()}
    return _undef[obj]


def text_references(obj):
    """Symbols referred to from executable sections (calls, jumps, and
    addresses taken in code)."""
    refs, in_text = set(), False
    for line in run("readelf", "-rW", obj).splitlines():
        if line.startswith("Relocation section"):
            sec = line.split("'")[1]
            in_text = sec.startswith(".rela.text") or sec.startswith(".rel.text")
            continue
        parts = line.split()
        if in_text and len(parts) >= 5 and parts[0][0] in "0123456789abcdef":
            sym = parts[4].split("@")[0]
            refs.add(sym)
    return refs


def layer_of(obj):
    for part in obj.split("/"):
        if part.startswith("vshare_") and part.endswith("_obj.dir"):
            return part[len("vshare_"):-len("_obj.dir")]
    return None


def main(argv):
    args = argv[1:]
    data = "--data" in args
    layers = []
    if "--layers" in args:
        i = args.index("--layers")
        layers = args[i + 1].split(",")
        del args[i:i + 2]
    objs = [o for a in args if a != "--data" for o in a.split(";") if o]
    defs = {o: defined_functions(o) for o in objs}
    owner = {}
    for o, syms in defs.items():
        for s in syms:
            owner.setdefault(s, o)
    edges = {}
    for o in objs:
        refs = undefined(o)
        if not data:
            refs &= text_references(o)
        edges[o] = sorted({owner[s] for s in refs if s in owner and owner[s] != o})
    # Tarjan's strongly connected components.
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in objs:
        if v not in index:
            visit(v)
    name = lambda p: p.rsplit("/", 1)[-1]
    for comp in comps:
        print("circle of calls between: " + " ".join(sorted(name(c) for c in comp)))
        for c in sorted(comp):
            for w in edges[c]:
                if w in comp:
                    why = sorted(s for s in (undefined(c) & defs[w]))
                    print("  %s -> %s (%s)" % (name(c), name(w), ", ".join(why[:4])))
    bad = 0
    for o in objs:
        lo = layer_of(o)
        for w in edges[o]:
            lw = layer_of(w)
            if layers and lo in layers and lw in layers and \
                    layers.index(lw) > layers.index(lo):
                why = sorted(undefined(o) & defs[w])
                print("call up from layer %s to %s: %s -> %s (%s)" % (
                    lo, lw, name(o), name(w), ", ".join(why[:4])))
                bad = 1
    if comps or bad:
        return 1
    print("%d objects, no circle of calls%s" % (
        len(objs), ", no call up a layer" if layers else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
