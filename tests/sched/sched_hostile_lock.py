#!/usr/bin/env python3
"""Attacks on the lock page by an unprivileged user (nobody, through
setpriv, running hostile_lock.py) and what other clients must still get:
forged tokens, TOOK with no take, a free value written over a held GPU,
holes punched in the pages; forged tokens against a real program under
the shim (forged_shim_victim: vs-bursty on the test driver, whose paths
come in VSHARE_TEST_SHIM, VSHARE_TEST_DRIVER_DIR and VSHARE_TEST_BURSTY).

Usage: sched_hostile_lock.py BINDIR SCENARIO (needs root to switch users;
skips with 77 otherwise)."""
import os
import shutil
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedtest import (T, UUID, Daemon, Fail, check, frame,  # noqa: E402
                       main, recv_frame, scenarios, wait_for)
from sched_hostile import OPEN, VICTIM, Peer, as_user, guarded  # noqa: E402
from sched_lock import (GPU, CLOSED, LockClient, counter,  # noqa: E402
                        state_of)

ON = dict(OPEN, mode="on", gpus={GPU: {}})
HERE = os.path.dirname(os.path.abspath(__file__))


class Attacker(Peer):
    """hostile_lock.py as nobody; its first line (ready) once it has
    joined, read() after its attack; lives until stop()."""

    def __init__(self, d, *args):
        super().__init__(d, *args, script="hostile_lock.py")
        self.ready = self.result


def granted(c, timeout=5):
    """The next frame c reads is a GRANT (not an ERROR), within timeout."""
    c.s.settimeout(timeout)
    f = recv_frame(c.s)
    check(f[0] == T["GRANT"], "a GRANT, got 0x%x %r" % (f[0], f[1][:60]))


def t_forged_token(b):
    """The attacker writes the tokens that client ids 1..64 once had into
    the word, with a FOOTPRINT and a STATUS after each: nobody is adopted,
    and idle victims of versions 5 and 1 are granted when they ask."""
    with Daemon(b, ON) as d:
        v5 = LockClient(d.sock, b"victim")
        v5.attach()
        v1 = d.raw()
        v1.sendall(frame(T["HELLO"], struct.pack("<II64s", 1, 0, b"old")) +
                   frame(T["ATTACH"], UUID + struct.pack("<Q", 16 << 30)))
        check(recv_frame(v1)[0] == T["WELCOME"], "v1 welcome")
        evil = Attacker(d, "forge", 64)
        check(evil.ready["page"], "the attacker got a page")
        evil.read()
        for c in ("victim", "old"):
            check(state_of(d, c) in ("idle", None), "%s adopted" % c)
        v5.send("REQUEST")
        granted(v5)
        v5.send("RELEASED")
        v1.sendall(frame(T["REQUEST"], UUID))
        v1.settimeout(5)
        f = recv_frame(v1)
        check(f[0] == T["GRANT"], "v1 victim: 0x%x %r" % (f[0], f[1][:60]))
        evil.stop()
        v5.close()
        v1.close()


def t_copied_mark(b):
    """The attacker copies what a victim's take left in the word and
    writes it back every 1 ms while the victim, later, asks through
    REQUEST: the victim is granted (a GRANT comes), not adopted silently
    from the copy (which left it waiting forever)."""
    with Daemon(b, ON) as d:
        v = LockClient(d.sock, b"victim")
        v.attach()
        evil = Attacker(d, "copy", 2)
        wait_for(lambda: v.opening() != 0, 5, "open")
        check(v.take(), "the victim's take")
        check(evil.read()["copied"] != 0, "the attacker saw the take")
        v.send("TOOK")
        wait_for(lambda: state_of(d, "victim") == "holding", 5, "holding")
        v.send("RELEASED")
        wait_for(lambda: v.opening() != 0, 5, "open again")
        evil.go()
        time.sleep(0.1)
        v.send("REQUEST")
        granted(v)
        check(state_of(d, "victim") == "holding", "the victim holds")
        evil.read()
        evil.stop()
        v.close()


def t_took_flood(b):
    """TOOK every 50 ms without a take: each is refused and counted, the
    attacker never holds, and the waiter is granted next when the holder
    releases."""
    with Daemon(b, ON) as d:
        a, w = LockClient(d.sock, b"holder"), LockClient(d.sock, b"waiter")
        a.attach()
        w.attach()
        a.send("REQUEST")
        granted(a)
        evil = Attacker(d, "tookflood", 2)
        w.send("REQUEST")
        states = set()
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            states.add(state_of(d, "hostile"))
            time.sleep(0.1)
        check(states <= {"idle"}, "the attacker was %r" % states)
        a.send("RELEASED")
        granted(w)
        sent = evil.read()["sent"]
        check(state_of(d, "hostile") == "idle", "the attacker holds")
        m = d.ctl("metrics")[1]
        wait_for(lambda: counter(d.ctl("metrics")[1],
                                 "vshare_lock_took_refused_total") == sent,
                 5, "%d refusals counted (%r)" % (
                     sent, counter(m, "vshare_lock_took_refused_total")))
        check(d.logtext().count("says it took a GPU") == 1,
              "a refused TOOK logged more than once per connection")
        evil.stop()
        a.close()
        w.close()


def t_free_over_held(b):
    """The free value written over a held GPU's word every 1 ms for 1.5 s:
    a third client's takes all fail (the holder keeps it alone), and the
    forged word is counted at the next decision."""
    with Daemon(b, ON) as d:
        a, c = LockClient(d.sock, b"holder"), LockClient(d.sock, b"third")
        a.attach()
        c.attach()
        evil = Attacker(d, "freeover", 1.5)
        check(evil.ready["seen"] != 0, "the attacker saw the GPU open")
        a.send("REQUEST")
        granted(a)
        evil.go()
        took = tries = 0
        end = time.monotonic() + 1.2
        while time.monotonic() < end:
            tries += 1
            if c.take():
                took += 1
                c.set_word(CLOSED)
            time.sleep(0.0005)
        r = evil.read()
        check(r["writes"] > 100, "the attack ran: %r" % r)
        check(took == 0, "a third client took a held GPU %d times in %d "
              "tries" % (took, tries))
        check(state_of(d, "holder") == "holding", "the holder lost it")
        a.send("RELEASED")
        wait_for(lambda: counter(d.ctl("metrics")[1],
                                 "vshare_lock_tampered_total") >= 1, 5,
                 "the forged word counted")
        evil.stop()
        a.close()
        c.close()


# vs-bursty under the shim: bursts apart by more than the shim's idle
# time, so that the program asks for the GPU again and again.
BURSTS = 60
TD_GPU0 = b"vstd" + bytes(12)  # the test driver's device 0


def public(d, path):
    """A copy of path (a file, or a directory's files) in the daemon's
    directory that the victim's uid can read and run."""
    pub = os.path.join(d.dir, "pub")
    os.makedirs(pub, mode=0o755, exist_ok=True)
    dst = os.path.join(pub, os.path.basename(path.rstrip("/")))
    if os.path.isdir(path):
        shutil.copytree(path, dst, symlinks=True)
    else:
        shutil.copy(path, dst)
    for root, _, files in os.walk(dst):
        for f in files:
            if not os.path.islink(os.path.join(root, f)):
                os.chmod(os.path.join(root, f), 0o755)
    os.chmod(dst, 0o755)
    return dst


class Neighbour(threading.Thread):
    """A raw client that asks for the GPU every 50 ms and holds it for
    10 ms, so that the victim, idle between bursts, hears an idle drop
    and has to get the GPU back for its next burst, through the page or
    a REQUEST, with the attack going on."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.c = LockClient(d.sock, b"neighbour")
        self.c.attach(uuid=TD_GPU0)
        self.grants, self.errors, self.stopping = 0, [], threading.Event()
        self.start()

    def run(self):
        try:
            while not self.stopping.is_set():
                self.c.send("REQUEST", TD_GPU0)
                f = recv_frame(self.c.s)
                while f is not None and f[0] != T["GRANT"]:
                    if f[0] == T["ERROR"]:
                        self.errors.append(f[1][:60])
                    f = recv_frame(self.c.s)
                check(f is not None, "the daemon closed the connection")
                self.grants += 1
                time.sleep(0.01)
                self.c.send("RELEASED", TD_GPU0)
                time.sleep(0.05)
        except (OSError, Fail) as e:
            self.errors.append(str(e))

    def stop(self):
        self.stopping.set()
        self.join(20)
        self.c.close()


def bursty(d, shim, td, prog):
    """vs-bursty as VICTIM under the shim on the test driver, scheduled
    (it waits rather than run unshared), with a clean environment."""
    env = dict(PATH=os.environ.get("PATH", "/usr/bin:/bin"),
               VSHARE_SOCKET=d.sock, VSHARE_LABEL="victim",
               VSHARE_REQUIRE_SCHEDULER="1", VSHARE_IDLE_MS="20",
               LD_LIBRARY_PATH=td, ASAN_OPTIONS="detect_leaks=0",
               LD_PRELOAD=" ".join(p for p in (
                   os.environ.get("VSHARE_SAN_PRELOAD"), shim) if p))
    return subprocess.Popen(
        as_user(VICTIM, [prog, "--bursts", str(BURSTS), "--gap-ms", "100",
                         "--kernels", "2", "--kernel-us", "1000"]),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def t_forged_shim_victim(b):
    """A real program under the shim (vs-bursty, another uid) while the
    attacker, for the whole run, writes the tokens of ids 1..64 and the
    marks it sees back into the GPU's word: the program finishes all its
    bursts within 60 s (a daemon that adopted a forged token refused the
    program's next REQUEST, and it hung)."""
    paths = [os.environ.get(k) for k in ("VSHARE_TEST_SHIM",
                                          "VSHARE_TEST_DRIVER_DIR",
                                          "VSHARE_TEST_BURSTY")]
    if not all(paths) or not all(os.path.exists(p) for p in paths):
        print("VSHARE_TEST_SHIM, VSHARE_TEST_DRIVER_DIR or "
              "VSHARE_TEST_BURSTY not set or missing")
        return 77
    with Daemon(b, dict(OPEN, mode="on")) as d:
        shim, td, prog = (public(d, p) for p in paths)
        evil = Attacker(d, "forgeloop", 120, TD_GPU0.hex())
        n = None
        try:
            n = Neighbour(d)
            v = bursty(d, shim, td, prog)
            try:
                out, err = v.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                v.kill()
                out, err = v.communicate()
            evil.go()
            r = evil.read()
        finally:
            evil.stop()
            if n:
                n.stop()
        done = out.count("vs-bursty: burst ")
        print("attack: %r; neighbour: %d grants; victim: %d bursts, exit %s"
              % (r, n.grants, done, v.returncode))
        check(v.returncode == 0 and done == BURSTS,
              "the victim exited %s after %d of %d bursts:\n%s%s" % (
                  v.returncode, done, BURSTS, out[-800:], err[-1500:]))
        # Cut off or timed out, the attacker does not wait to be asked
        # to stop; about 400 values a second go in while it lasts.
        check(r.get("asked") and r["writes"] > 200,
              "the attack did not last the run: %r" % r)
        check(n.grants >= 10 and not n.errors,
              "the neighbour: %d grants, errors %r" % (n.grants, n.errors))


def t_punch_hole(b):
    """Holes punched over the pages: the state page refuses it, so the
    magic, the slots and the fast path stay for every later client."""
    with Daemon(b, ON) as d:
        evil = Attacker(d, "punch")
        errs = evil.read()["errno"]
        check(errs and errs[0] != 0, "the state page took a hole: %r" % errs)
        n = LockClient(d.sock, b"later")
        check(n.state is not None and
              struct.unpack_from("<I", n.state, 0)[0] == 0x4b4c5356,
              "the magic is gone")
        n.attach()
        wait_for(lambda: n.opening() != 0, 5, "the GPU opens")
        check(n.take(), "a later client takes through the page")
        n.send("TOOK")
        wait_for(lambda: state_of(d, "later") == "holding", 5, "holding")
        evil.stop()
        n.close()


if __name__ == "__main__":
    sys.exit(main({k: guarded(v) for k, v in scenarios(globals()).items()}))
