#!/usr/bin/env python3
"""The admin's policy (policy_users, policy_groups) against the real
daemon: what a client hears after its WELCOME, by protocol version, and
again after a reload. The peer is this test's own process, so its uid and
gid (SO_PEERCRED) are the test's; the precedence between entries is
tests/sched/test_conf.c's.

usage: sched_admin_policy.py BINDIR SCENARIO (ctest sched.admin_policy.NAME)"""
import os
import shutil
import signal
import socket
import struct
import subprocess

from schedtest import (VERSION3, Daemon, T, check, closed_by_peer,
                       frame, main, recv_frame_v, scenarios, wait_for)
import vsproto

POLICY = T["POLICY"]
POLICY_FMT = vsproto.S["policy"].struct  # mem_limit, flags, weight, reserved
REQUIRE = vsproto.POLICYF["REQUIRE"]


def me():
    return str(os.getuid()), str(os.getgid())


def register(d, version):
    s = d.raw()
    s.sendall(frame(T["HELLO"], struct.pack("<II64s", version, 0, b"policy"),
                    version=version))
    ver, mtype, _ = recv_frame_v(s)
    check(mtype == T["WELCOME"] and ver == version,
          "WELCOME in version %d (got type 0x%x, version %d)"
          % (version, mtype, ver))
    return s


def policy_of(s):
    ver, mtype, p = recv_frame_v(s)
    check(mtype == POLICY and ver == VERSION3,
          "a POLICY frame in version 3 (got type 0x%x, version %d)"
          % (mtype, ver))
    return POLICY_FMT.unpack(p)


def nothing_more(s, timeout=0.5):
    s.settimeout(timeout)
    try:
        data = s.recv(4096)
    except socket.timeout:
        return True
    return False if data else True


def t_user_entry(bindir):
    """A version-3 client hears its user's entry right after WELCOME."""
    uid, _ = me()
    conf = {"policy_users": {uid: {"mem_limit": "3G", "require": True,
                                   "weight": 4}}}
    with Daemon(bindir, conf) as d:
        s = register(d, VERSION3)
        limit, flags, weight, res = policy_of(s)
        check(limit == 3 << 30, "limit 3G (%d)" % limit)
        check(flags == REQUIRE and weight == 4 and res == 0,
              "require and weight 4 (%x, %d)" % (flags, weight))
        # The policy's weight is the user's weight in the fair share.
        s.sendall(frame(T["ATTACH"], bytes(15) + b"\x01" +
                        struct.pack("<Q", 16 << 30), version=VERSION3))
        wait_for(lambda: any(m.get("weight") == 4
                             for c in d.status().get("clients", [])
                             for m in c.get("gpus", [])), 5,
                 "status shows the client's weight 4")
        s.close()


def t_group_entry(bindir):
    """A group entry (here the user's primary group in the user database:
    groups match by uid, never by the peer's gid) applies when the
    user has none; a user entry that sets only the weight keeps the
    group's limit."""
    uid, gid = me()
    conf = {"policy_groups": {gid: {"mem_limit": 1 << 30}},
            "weights": {"users": {uid: 6}}}
    with Daemon(bindir, conf) as d:
        s = register(d, VERSION3)
        limit, flags, weight, _ = policy_of(s)
        check(limit == 1 << 30 and flags == 0,
              "the group's limit, not required (%d, %x)" % (limit, flags))
        check(weight == 6, "the weight from \"weights\" (%d)" % weight)
        s.close()


def t_no_policy(bindir):
    """With no entry for the user: no limit, not required, weight 1."""
    with Daemon(bindir, {}) as d:
        s = register(d, VERSION3)
        check(policy_of(s) == (0, 0, 1, 0), "an empty policy")
        s.close()


def t_old_versions_hear_none(bindir):
    """Clients of versions 1 and 2 hear no POLICY: they would take it
    for a malformed frame."""
    uid, _ = me()
    conf = {"policy_users": {uid: {"mem_limit": "1G"}}}
    with Daemon(bindir, conf) as d:
        for v in (1, 2):
            s = register(d, v)
            check(nothing_more(s), "version %d: nothing after WELCOME" % v)
            s.close()


def t_reload(bindir):
    """A reload sends running version-3 clients their new policy; a
    file that does not parse changes nothing and sends nothing."""
    uid, _ = me()
    conf = {"policy_users": {uid: {"mem_limit": "4G"}}}
    with Daemon(bindir, conf) as d:
        s = register(d, VERSION3)
        old = register(d, 2)
        check(policy_of(s)[0] == 4 << 30, "4G at registration")
        with open(d.conf, "w") as f:
            f.write('{"policy_users": {"%s": {"mem_limit": "2G", '
                    '"require": true}}}' % uid)
        d.proc.send_signal(signal.SIGHUP)
        s.settimeout(5)
        limit, flags, _, _ = policy_of(s)
        check(limit == 2 << 30 and flags == REQUIRE,
              "2G and require after the reload (%d, %x)" % (limit, flags))
        check(nothing_more(old), "the version-2 client hears nothing")
        with open(d.conf, "w") as f:
            f.write('{"policy_users": {"%s": {"mem_limit": "2X"}}}' % uid)
        d.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "mem_limit: '2X': not a size" in d.logtext(), 5,
                 "the reload's error in the log")
        check(nothing_more(s), "a failed reload sends no policy")
        check(not closed_by_peer(s, 0.2), "the client stays connected")
        s.close()
        old.close()


def t_bad_config_refused(bindir):
    """A bad policy entry stops the daemon at start with the key named."""
    d = Daemon(bindir, {"policy_groups": {"no-such-group-vshare": {}}},
               start=False)
    try:
        r = subprocess.run([d.bin("vshare-scheduler"), "--socket", d.sock,
                            "--config", d.conf], capture_output=True,
                           text=True, timeout=10)
        check(r.returncode != 0, "the daemon refuses to start")
        check('policy_groups: no group "no-such-group-vshare"' in r.stderr,
              "the error names the key: " + r.stderr)
    finally:
        shutil.rmtree(d.dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main(scenarios(globals())))
