#!/usr/bin/env python3
"""Check that the documentation lists exactly the shim's settings.

Usage: check_doc_settings.py PRINT_SETTINGS SRCDIR [DOCSDIR]

The settings are what PRINT_SETTINGS (tests/shim/print_settings.c, built
from the shim's table, src/libvshare/util/shim_settings.def) writes: name,
type, default, range, what binds over it. DOCSDIR (default SRCDIR) holds
the pages checked against them:

- docs/shim.md ("Settings"): a row for every setting and none other, its
  type, default, range and admin cells as the table has them.
- man/libvshare.7.scd (ENVIRONMENT): an entry for every setting and none
  other, "(default *X*)" as the table's; the range "LO to HI" of a number,
  each value of an enum, and the client.conf key that binds over it, in
  the entry's text.
- README.md ("Program side"): a row for every setting, with its default.
- vshare-run: every VSHARE_* variable that scripts/vshare-run.in sets, and
  every one that man/vshare-run.1.scd and the README's vshare-run table
  name, is a setting.
- docs/shim.md, docs/gate.md, libvshare(7): every VSHARE_* name is a
  setting (or a build option, or the test driver's VSHARE_TD_*).

Prints each difference and exits 1 if there is any, 0 otherwise."""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_doc_keys import compare, read, section  # noqa: E402

NAME = re.compile(r"VSHARE_[A-Z0-9_]*[A-Z0-9]")
# Names in the docs that are not the shim's settings: CMake options and
# the test driver's variables (docs/test-driver.md).
NOT_SETTINGS = re.compile(r"VSHARE_(CLIENT_CONF|SANITIZE|TD_\w+)$")


def settings(prog):
    out = subprocess.run([prog], stdout=subprocess.PIPE, check=True,
                         timeout=30).stdout.decode("utf-8")
    rows = {s["name"]: s for s in json.loads(out)}
    if not rows:
        sys.exit("%s: no settings" % prog)
    return rows


def norm(text):
    """A cell or a man page's text without markup or line breaks."""
    return " ".join(text.replace("`", "").replace("*", "").split())


def want_range(s):
    if s["range"] is not None:
        return "%d to %d" % tuple(s["range"])
    if s["type"] == "bool":
        return "0, 1"
    if s["type"] == "enum":
        return ", ".join(s["choices"].split("|"))
    if s["type"] == "size":
        return "any size; a unit below 1 MiB" if s["need_unit"] else \
            "any size"
    return "up to %d bytes" % s["max_len"] if s["max_len"] else "any"


def want_admin(s):
    parts = ["client.conf %s" % s["conf"]] if s["conf"] else []
    return ", ".join(parts + (["policy"] if s["policy"] else []))


def md_table(text, header):
    """name -> cells of the Markdown table under HEADER (its first row)."""
    m = re.search(r"^%s\n\|[- |]*\n((?:\|.*\n)*)" % re.escape(header), text,
                  re.M)
    rows = {}
    for line in m.group(1).splitlines() if m else []:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for name in NAME.findall(cells[0]):
            rows[name] = cells
    return rows


def check_cell(errors, where, name, what, found, want):
    if norm(found) != norm(want):
        errors.append("%s: %s: %s \"%s\", the table's is \"%s\"" % (
            where, name, what, norm(found), want))


def check_shim_md(errors, docs, table):
    where = "docs/shim.md"
    rows = md_table(section(read(os.path.join(docs, where)), "Settings",
                            "##"),
                    "| setting | type | default | range | admin | meaning |")
    compare(errors, where + " (Settings)", "setting", rows, table,
            "is not the shim's")
    for name, cells in rows.items():
        s = table.get(name)
        if s is None or len(cells) != 6:
            continue
        check_cell(errors, where, name, "type", cells[1], s["type"])
        check_cell(errors, where, name, "default", cells[2], s["default"])
        check_cell(errors, where, name, "range", cells[3], want_range(s))
        check_cell(errors, where, name, "admin", cells[4], want_admin(s))


def check_man(errors, docs, table):
    where = "man/libvshare.7.scd"
    entries = {}
    # An entry: "*NAME* (default X)", its text indented below.
    for m in re.finditer(r"^\*(VSHARE_\w+)\* \(default:? (.+)\)\n"
                         r"((?:\t.*\n|\n(?=\t))*)",
                         section(read(os.path.join(docs, where)),
                                 "ENVIRONMENT"), re.M):
        entries[m.group(1)] = (m.group(2), norm(m.group(3)),
                               m.group(3))
    compare(errors, where + " (ENVIRONMENT)", "setting", entries, table,
            "is not the shim's")
    for name, (dflt, body, raw) in entries.items():
        s = table.get(name)
        if s is None:
            continue
        check_cell(errors, where, name, "default", dflt, s["default"])
        if s["range"] is not None and want_range(s) not in body:
            errors.append("%s: %s: the range %s missing" % (
                where, name, want_range(s)))
        for c in (s["choices"] or "").split("|"):
            if c and "*%s*" % c not in raw:
                errors.append("%s: %s: the value %s missing" % (
                    where, name, c))
        if s["conf"] and "*%s*" % s["conf"] not in raw:
            errors.append("%s: %s: client.conf's %s missing" % (
                where, name, s["conf"]))


def check_readme(errors, docs, table):
    where = "README.md"
    text = read(os.path.join(docs, where))
    rows = md_table(section(text, "Program side (environment of a CUDA "
                            "process; `vshare-run` options)", "###"),
                    "| variable | default | meaning |")
    compare(errors, where + " (Program side)", "setting", rows, table,
            "is not the shim's")
    for name, cells in rows.items():
        if name in table:
            check_cell(errors, where, name, "default", cells[1],
                       table[name]["default"])
    run = re.search(r"^\| option \| sets \|\n((?:\|.*\n)*)",
                    section(text, "Running programs: vshare-run", "##"), re.M)
    names = set(NAME.findall(run.group(1))) if run else set()
    if not names:
        errors.append(where + ": vshare-run: no option table")
    for name in sorted(names - set(table)):
        errors.append("%s: vshare-run: %s is not the shim's" % (where, name))


def check_names(errors, docs, table):
    """Every VSHARE_* name in the pages is a setting."""
    for where in ("docs/shim.md", "docs/gate.md", "man/libvshare.7.scd",
                  "man/vshare-run.1.scd"):
        for name in sorted(set(NAME.findall(read(os.path.join(docs,
                                                              where))))):
            if name not in table and not NOT_SETTINGS.match(name):
                errors.append("%s: %s is not the shim's" % (where, name))
    where = "scripts/vshare-run.in"
    sets = set(re.findall(r"set_var (VSHARE_\w+)",
                          read(os.path.join(docs, where))))
    if not sets:
        errors.append(where + ": sets no VSHARE_* variable")
    for name in sorted(sets - set(table)):
        errors.append("%s: sets %s, which is not the shim's" % (where, name))


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    table = settings(sys.argv[1])
    docs = sys.argv[3] if len(sys.argv) == 4 else sys.argv[2]
    errors = []
    check_shim_md(errors, docs, table)
    check_man(errors, docs, table)
    check_readme(errors, docs, table)
    check_names(errors, docs, table)
    for e in errors:
        print(e)
    if any("is not the shim's" in e for e in errors):
        print("(a VSHARE_* variable the shim reads is a row of "
              "src/libvshare/util/shim_settings.def, documented in "
              "docs/shim.md, libvshare(7) and the README)")
    print("%d settings: %s" % (len(table), "%d differences" % len(errors)
                               if errors else "the docs agree"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
