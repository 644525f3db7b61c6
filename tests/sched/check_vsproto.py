#!/usr/bin/env python3
"""The Python codec of the tests (vsproto.py) against the C protocol: the
constants and struct sizes and offsets that include/vshare/proto.h
defines and asserts, and the message table of src/common/proto.c as
wire_table prints it. Any difference, in either direction, fails.

usage: check_vsproto.py PROTO_H WIRE_TABLE"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vsproto as P  # noqa: E402

# Prefixes of the header's #defines and the codec's table for each.
GROUPS = [("VS_MSG_", P.T), ("VS_E_", P.E), ("VS_ROLE_", P.ROLE),
          ("VS_MODE_", P.MODE), ("VS_POLICY_", P.POLICY),
          ("VS_GRANT_", P.GRANT), ("VS_GRANTF_", P.GRANTF),
          ("VS_DROP_", P.DROP), ("VS_POLICYF_", P.POLICYF),
          ("VS_TARGET_", P.TARGET), ("VS_CLASS_", P.CLASS),
          ("VS_NAME_", P.SETNAME), ("VS_UNSHARED_", P.UNSHARED)]
SCALARS = dict(VS_PROTO_MAGIC="MAGIC", VS_PROTO_VERSION="VERSION",
               VS_PROTO_VERSION_MIN="VERSION_MIN",
               VS_MAX_PAYLOAD="MAX_PAYLOAD", VS_LABEL_MAX="LABEL_MAX",
               VS_UUID_LEN="UUID_LEN", VS_ERRMSG_MAX="ERRMSG_MAX",
               VS_LOCK_PAGE_MAGIC="LOCK_PAGE_MAGIC",
               VS_LOCK_SLOTS="LOCK_SLOTS", VS_LOCK_CLOSED="LOCK_CLOSED",
               VS_LOCK_OPEN_BIT="LOCK_OPEN_BIT",
               VS_LOCK_TOKEN_BIT="LOCK_TOKEN_BIT",
               VS_LOCK_MARK_K1="LOCK_MARK_K1")
DEFINE = re.compile(r"^#define\s+(VS_[A-Z0-9_]+)\s+(.+?)\s*(/\*.*)?$")
SIZE = re.compile(r"_Static_assert\(sizeof\(struct vs_(\w+)\) == (\d+)")
OFFSET = re.compile(
    r"_Static_assert\(offsetof\(struct vs_(\w+), (\w+)\) == (\d+)")
STRUCT = re.compile(r"^struct vs_(\w+) \{")


def c_value(text):
    """The value of a #define's integer expression, or None."""
    expr = re.sub(r"(?<=[0-9a-fA-F])(ull|u)\b", "", text)
    if not re.fullmatch(r"[-()0-9a-fA-Fx<> ]+", expr):
        return None
    return eval(expr, {"__builtins__": {}})  # digits and shifts only


def check_defines(text, errs):
    defs = {}
    for line in text.splitlines():
        m = DEFINE.match(line)
        if not m:
            continue
        # A define may name an earlier one (VS_CLASS_MAX).
        value = defs.get(m.group(2), c_value(m.group(2)))
        if value is not None:
            defs[m.group(1)] = value
    defs.setdefault("VS_OK", 0)
    for prefix, table in GROUPS:
        header = {k[len(prefix):]: v for k, v in defs.items()
                  if k.startswith(prefix)
                  and not any(p != prefix and p.startswith(prefix)
                              and k.startswith(p) for p, _ in GROUPS)}
        if prefix == "VS_E_":
            header["OK"] = defs["VS_OK"]
        for name in sorted(set(header) | set(table)):
            if header.get(name) != table.get(name):
                errs.append("%s%s: header %s, vsproto %s" %
                            (prefix, name, header.get(name),
                             table.get(name)))
    for cname, pyname in SCALARS.items():
        if defs.get(cname) != getattr(P, pyname):
            errs.append("%s: header %s, vsproto %s" %
                        (cname, defs.get(cname), getattr(P, pyname)))


def check_structs(text, errs):
    sizes = {m.group(1): int(m.group(2)) for m in SIZE.finditer(text)}
    defined = {m.group(1) for line in text.splitlines()
               for m in [STRUCT.match(line)] if m}
    # vs_msg_info is the table's row type, not on the wire.
    defined.discard("msg_info")
    for name in sorted(defined - set(sizes)):
        errs.append("struct vs_%s has no size assert in the header" % name)
    for name in sorted(defined | set(P.S)):
        got = P.S[name].size if name in P.S else None
        if got != sizes.get(name):
            errs.append("struct vs_%s: header %s bytes, vsproto %s" %
                        (name, sizes.get(name), got))
    for m in OFFSET.finditer(text):
        name, field, off = m.group(1), m.group(2), int(m.group(3))
        try:
            got = P.S[name].offset(field)
        except KeyError:
            got = None
        if got != off:
            errs.append("vs_%s.%s: header offset %d, vsproto %s" %
                        (name, field, off, got))


def check_table(table, errs):
    """Each row: type name role size variable since."""
    seen = set()
    for line in table.splitlines():
        t, name, _, size, _, _ = line.split()
        t, size = int(t, 16), int(size)
        key = name.upper().replace("-", "_")
        seen.add(key)
        if P.T.get(key) != t:
            errs.append("message %s: proto.c type %#x, vsproto %s" %
                        (name, t, P.T.get(key)))
            continue
        got = P.S[P.PAYLOAD[key]].size if key in P.PAYLOAD else None
        if got != size:
            errs.append("message %s: proto.c payload %d bytes, vsproto %s"
                        % (name, size, got))
    for key in sorted(set(P.T) - seen):
        errs.append("message %s: in vsproto, not in proto.c's table" % key)
    if set(P.PAYLOAD) != set(P.T):
        errs.append("PAYLOAD and T name different messages")


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        text = f.read()
    table = subprocess.run([sys.argv[2]], check=True, capture_output=True,
                           text=True).stdout
    errs = []
    check_defines(text, errs)
    check_structs(text, errs)
    check_table(table, errs)
    for e in errs:
        print("FAIL:", e)
    if not errs:
        print("ok: vsproto.py matches proto.h and proto.c (%d messages, "
              "%d structs)" % (len(P.T), len(P.S)))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
