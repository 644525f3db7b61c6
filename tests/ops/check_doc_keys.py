#!/usr/bin/env python3
"""Check that the documentation lists exactly what the programs have.

Usage: check_doc_keys.py BINDIR SRCDIR [DOCSDIR]

The configuration keys are what `vshare-scheduler --print-config` writes
for an empty file, with their defaults; which of them are per GPU and
which need a restart come from the key table, CONF_KEYS in SRCDIR's
src/scheduler/conf/conf.c. The commands of vsharectl, and the options of
`vsharectl cdi generate`, are what their --help lists. DOCSDIR (default
SRCDIR) holds the pages checked against them:

- docs/scheduler.md: a row of the configuration table for every key and
  none for a key that does not exist, with the key's default; the
  per-GPU keys in the `gpus` row; "Restart only" in the rows of exactly
  the keys that need a restart, and those keys in the SIGHUP paragraph;
  every command in the vsharectl synopsis.
- man/vshare-scheduler.json.5.scd: an entry under KEYS for every key and
  none other, with its default; the per-GPU keys in the `gpus` entry;
  "Needs a restart" in the entries of exactly the keys that need one, and
  those keys under RELOADING.
- man/vshare-scheduler.8.scd: the default policy in the description of
  the queue; the keys that need a restart under SIGHUP.
- man/vsharectl.1.scd: an entry under COMMANDS for every command and none
  other, each in the synopsis; every option of `cdi generate`.
- packaging/scheduler.json (the example): every key at its default, and
  no other; packaging/scheduler-etc.json (what /etc/vshare/scheduler.json
  gets): only keys whose values differ from their defaults.

Prints each difference and exits 1 if there is any, 0 otherwise."""

import json
import os
import re
import subprocess
import sys
import tempfile

# A row of CONF_KEYS: X(name, TYPE, default, lo, hi, unit, scope, reload).
CONF_ROW = re.compile(r"^X\((\w+),\s*(\w+),.*,\s*(GLOBAL|GPU\(.*?\)),\s*"
                      r"(LIVE|RESTART)\)", re.M)
# A key's name as the pages write it: `name` in Markdown, *name* in scdoc.
MD_NAME = re.compile(r"`([a-z][a-z0-9_]*)`")
SCD_NAME = re.compile(r"\*([a-z][a-z0-9_]*)\*")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def conf_table(srcdir):
    """The rows of CONF_KEYS: name -> (type, per GPU, needs a restart)."""
    text = read(os.path.join(srcdir, "src", "scheduler", "conf", "conf.c"))
    start = text.find("#define CONF_KEYS(X)")
    if start < 0:
        sys.exit("conf.c: no CONF_KEYS table")
    block = text[start:text.find("\n\n", start)]
    rows = {}
    for m in CONF_ROW.finditer(block):
        rows[m.group(1)] = (m.group(2), m.group(3).startswith("GPU"),
                            m.group(4) == "RESTART")
    # A row this parser cannot read must fail, not lose its key's scope.
    if not rows or len(rows) != len(re.findall(r"^X\(", block, re.M)):
        sys.exit("conf.c: CONF_KEYS has rows of a form this check cannot "
                 "read")
    return rows


def print_config(bindir):
    """The daemon's keys and their defaults, from an empty file."""
    with tempfile.TemporaryDirectory(prefix="vsdk") as tmp:
        conf = os.path.join(tmp, "c.json")
        with open(conf, "w") as f:
            f.write("{}\n")
        env = dict(os.environ)
        env.pop("VSHARE_SOCKET", None)  # the default socket, not the caller's
        out = subprocess.run([os.path.join(bindir, "vshare-scheduler"),
                              "--config", conf, "--print-config"], env=env,
                             stdout=subprocess.PIPE, check=True, timeout=30,
                             universal_newlines=True).stdout
    return json.loads(out)


def help_lines(bindir, *args):
    return subprocess.run([os.path.join(bindir, "vsharectl")] + list(args)
                          + ["--help"], stdout=subprocess.PIPE, check=True,
                          timeout=30, universal_newlines=True).stdout


def ctl_commands(bindir):
    """The command names of `vsharectl --help` (its "commands:" block)."""
    cmds, inside = [], False
    for line in help_lines(bindir).splitlines():
        if line.endswith(":") and not line.startswith(" "):
            inside = line == "commands:"
        elif inside and re.match(r"^  [a-z]", line):
            cmds.append(line.split()[0])
    if not cmds:
        sys.exit("vsharectl --help lists no commands")
    return cmds


def cdi_options(bindir):
    opts = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*",
                          help_lines(bindir, "cdi", "generate")))
    return sorted(opts - {"--help"})


def section(text, name, level="#"):
    """The body of a heading NAME (scdoc "# NAME", Markdown "## NAME")."""
    m = re.search(r"^%s %s\n(.*?)(?=^#{1,%d} |\Z)" % (
        level, re.escape(name), len(level)), text, re.M | re.S)
    return m.group(1) if m else ""


def sentence_names(text, marker, pattern):
    """The names before MARKER in the first sentence that has both, or
    None where no sentence has."""
    flat = " ".join(text.split())
    i = flat.find(marker)
    while i >= 0:
        start = max(flat.rfind(". ", 0, i), flat.rfind(": ", 0, i))
        names = set(pattern.findall(flat[start + 1:i]))
        if names:
            return names
        i = flat.find(marker, i + 1)
    return None


def compare(errors, where, what, found, want, extra="does not exist"):
    for k in sorted(set(want) - set(found)):
        errors.append("%s: %s %s missing" % (where, what, k))
    for k in sorted(set(found) - set(want)):
        errors.append("%s: %s %s %s" % (where, what, k, extra))


def json_or_text(s):
    try:
        return json.loads(s)
    except ValueError:
        return s


def check_default(errors, where, key, doc, table, defaults):
    """A default as written (JSON text) against --print-config's."""
    if key not in defaults:
        return
    val = json_or_text(doc)
    # A group's null is "the usual group if it exists": what the daemon
    # prints depends on this machine's groups.
    if val is None and table.get(key, ("",))[0] == "GROUP":
        return
    if val != defaults[key]:
        errors.append("%s: %s: default %s, the daemon's is %s" % (
            where, key, doc, json.dumps(defaults[key])))


def md_config_rows(text):
    """The configuration table: key -> its cells (a row may name two)."""
    body = section(text, "Configuration", "###")
    m = re.search(r"^\| key \| default \|.*\n\|.*\n((?:\|.*\n)*)", body,
                  re.M)
    rows = {}
    for line in m.group(1).splitlines() if m else []:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for name in MD_NAME.findall(cells[0]):
            rows[name] = cells + [""] * (4 - len(cells))
    return rows


def check_md(errors, docs, table, defaults, cmds):
    where = "docs/scheduler.md"
    text = read(os.path.join(docs, where))
    rows = md_config_rows(text)
    compare(errors, where + " (configuration table)", "key", rows, defaults)
    for key, cells in rows.items():
        check_default(errors, where, key, cells[1].strip("`"), table,
                      defaults)
        restart = "Restart only" in cells[3]
        if key in table and restart != table[key][2]:
            errors.append("%s: %s: the row %s \"Restart only\"" % (
                where, key, "says" if restart else "does not say"))
    gpu_keys = {k for k, v in table.items() if v[1]}
    if "gpus" in rows:
        compare(errors, where + " (gpus row)", "per-GPU key",
                re.findall(r'"(\w+)"', rows["gpus"][2]), gpu_keys)
    restart = {k for k, v in table.items() if v[2]}
    names = sentence_names(section(text, "vshare-scheduler", "##"),
                           "need a restart", MD_NAME)
    if names is None:
        errors.append(where + ": SIGHUP: no sentence says what needs a "
                      "restart")
    else:
        compare(errors, where + " (SIGHUP: need a restart)", "key", names,
                restart, "does not need a restart")
    # The synopsis: "    vsharectl [-s PATH] [--json] COMMAND ...".
    synopsis = re.findall(r"^    vsharectl(?: \[[^\]]*\])* ([a-z][a-z-]*)",
                          section(text, "vsharectl", "##"), re.M)
    compare(errors, where + " (vsharectl synopsis)", "command", synopsis,
            cmds)


def check_conf_man(errors, docs, table, defaults):
    where = "man/vshare-scheduler.json.5.scd"
    text = read(os.path.join(docs, where))
    entries = {}
    # An entry: "*key* (default *VALUE*...)", its text indented below.
    for m in re.finditer(r"^((?:\*\w+\*(?:, )?)+) \(default \*(.+?)\*[):]"
                         r".*\n((?:\t.*\n|\n(?=\t))*)",
                         section(text, "KEYS"), re.M):
        for name in SCD_NAME.findall(m.group(1)):
            entries[name] = (m.group(2), " ".join(m.group(3).split()))
    compare(errors, where + " (KEYS)", "key", entries, defaults)
    for key, (dflt, body) in entries.items():
        check_default(errors, where, key, dflt, table, defaults)
        restart = "Needs a restart" in body
        if key in table and restart != table[key][2]:
            errors.append("%s: %s: the entry %s \"Needs a restart\"" % (
                where, key, "says" if restart else "does not say"))
    gpus = re.search(r"^\*gpus\* .*?\n(?=\S|\Z)", section(text, "KEYS"),
                     re.M | re.S)
    for k in sorted(k for k, v in table.items() if v[1]):
        if gpus is None or "*%s*" % k not in gpus.group(0):
            errors.append("%s: gpus: per-GPU key %s missing" % (where, k))
    names = sentence_names(section(text, "RELOADING"), "need a restart",
                           SCD_NAME)
    if names is None:
        errors.append(where + ": RELOADING: no sentence says what needs a "
                      "restart")
    else:
        compare(errors, where + " (RELOADING: need a restart)", "key", names,
                {k for k, v in table.items() if v[2]},
                "does not need a restart")


def check_daemon_man(errors, docs, table, defaults):
    where = "man/vshare-scheduler.8.scd"
    text = read(os.path.join(docs, where))
    # The queue's order the page describes is the default policy's.
    m = re.search(r"\*policy\*: by\s+default \(\*(\w+)\*\)",
                  section(text, "DESCRIPTION"))
    if m is None:
        errors.append(where + ": DESCRIPTION: no sentence says the queue's "
                      "order by default (*policy*: by default (*...*))")
    elif m.group(1) != defaults["policy"]:
        errors.append("%s: DESCRIPTION: the default policy is %s, not %s" %
                      (where, defaults["policy"], m.group(1)))
    names = sentence_names(section(text, "SIGNALS"), "only at the next start",
                           SCD_NAME)
    if names is None:
        errors.append(where + ": SIGHUP: no sentence says what changes only "
                      "at the next start")
    else:
        compare(errors, where + " (SIGHUP: only at the next start)", "key",
                names, {k for k, v in table.items() if v[2]},
                "does not need a restart")


def check_packaged(errors, docs, table, defaults):
    where = "packaging/scheduler.json"
    with open(os.path.join(docs, where), encoding="utf-8") as f:
        packaged = json.load(f)
    compare(errors, where, "key", packaged, defaults)
    for key, val in packaged.items():
        check_default(errors, where, key, json.dumps(val), table, defaults)
    # The conffile: a key at its default would pin it there for good (a
    # changed default never reaches an admin who edited another key).
    where = "packaging/scheduler-etc.json"
    with open(os.path.join(docs, where), encoding="utf-8") as f:
        etc = json.load(f)
    for key, val in etc.items():
        if key not in defaults:
            errors.append("%s: %s does not exist" % (where, key))
        elif val == packaged.get(key):
            errors.append("%s: %s is at its default; leave it out" %
                          (where, key))


def check_ctl_man(errors, docs, cmds, cdi_opts):
    where = "man/vsharectl.1.scd"
    text = read(os.path.join(docs, where))
    heads = re.findall(r"^\*([a-z][a-z-]*)\*", section(text, "COMMANDS"),
                       re.M)
    compare(errors, where + " (COMMANDS)", "command", heads, cmds)
    synopsis = section(text, "SYNOPSIS")
    for c in cmds:
        if "*%s*" % c not in synopsis:
            errors.append("%s: SYNOPSIS: command %s missing" % (where, c))
    for o in cdi_opts:
        if "*%s*" % o not in text:
            errors.append("%s: cdi generate: option %s missing" % (where, o))


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    bindir, src = sys.argv[1], sys.argv[2]
    docs = sys.argv[3] if len(sys.argv) == 4 else src
    for prog in ("vshare-scheduler", "vsharectl"):
        if not os.access(os.path.join(bindir, prog), os.X_OK):
            sys.exit("%s: no %s there to ask" % (bindir, prog))
    table, defaults = conf_table(src), print_config(bindir)
    errors = []
    # The table's keys are the daemon's, but for the structured ones
    # ("gpus", "weights", ...) that the parser takes by name.
    for k in sorted(set(table) - set(defaults)):
        errors.append("conf.c: %s is not in --print-config" % k)
    cmds = ctl_commands(bindir)
    check_md(errors, docs, table, defaults, cmds)
    check_conf_man(errors, docs, table, defaults)
    check_daemon_man(errors, docs, table, defaults)
    check_packaged(errors, docs, table, defaults)
    check_ctl_man(errors, docs, cmds, cdi_options(bindir))
    for e in errors:
        print(e)
    print("%d keys (%d need a restart), %d commands: %s" % (
        len(defaults), sum(v[2] for v in table.values()), len(cmds),
        "%d differences" % len(errors) if errors else "the docs agree"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
