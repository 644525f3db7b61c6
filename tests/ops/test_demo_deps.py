#!/usr/bin/env python3
"""What scripts/demo installs: debian/control's Build-Depends under the
build profiles install-deps --demo names (nocheck, pkg.vshare.nok8s)
plus install-deps' demo_extra. The list must hold everything the default
build needs and none of the test stack, whose packages start services on
the host (Prometheus, Slurm, munge, podman) or are large (clang, the
Kubernetes device plugin's gRPC). Reads the files only: no network, no
root. As root, also runs install-deps against a stand-in apt-get in a
mount namespace of its own, to see that no service can start during the
install."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from opsutil import SOURCE, main

# Packages the demo must never install: services, or the test stack.
FORBIDDEN = {"prometheus", "slurmctld", "slurmd", "munge", "podman",
             "clang", "systemd-sysv", "libgrpc++-dev", "libprotobuf-dev",
             "protobuf-compiler-grpc"}
DEMO_PROFILES = "nocheck,pkg.vshare.nok8s"


def control_field(text, name):
    """The value of field NAME of debian/control's source stanza, with
    its continuation lines and without comment lines."""
    stanza = text.split("\n\n", 1)[0]
    lines = [ln for ln in stanza.splitlines() if not ln.startswith("#")]
    value, inside = [], False
    for ln in lines:
        if inside and ln[:1] in (" ", "\t"):
            value.append(ln.strip())
            continue
        inside = ln.lower().startswith(name.lower() + ":")
        if inside:
            value.append(ln.split(":", 1)[1].strip())
    return " ".join(value)


def profile_matches(formulas, profiles):
    """deb-src-control(5): a dependency applies when any of its <...>
    lists matches, and a list matches when all of its terms hold."""
    if not formulas:
        return True
    for formula in formulas:
        terms = formula.split()
        if all((t[1:] not in profiles) if t.startswith("!") else (t in profiles)
               for t in terms):
            return True
    return False


def build_depends(text, profiles):
    """Package names of Build-Depends that apply under PROFILES (each
    alternative's names, since apt may pick any of them)."""
    names = set()
    for dep in control_field(text, "Build-Depends").split(","):
        dep = dep.strip()
        if not dep:
            continue
        for alt in dep.split("|"):
            formulas = re.findall(r"<([^>]*)>", alt)
            if not profile_matches(formulas, profiles):
                continue
            m = re.match(r"\s*([a-z0-9][a-z0-9+.-]*)", alt)
            if m:
                names.add(m.group(1))
    return names


def read(*path):
    with open(os.path.join(SOURCE, *path), encoding="utf-8") as f:
        return f.read()


class DemoDeps(unittest.TestCase):
    def setUp(self):
        self.control = read("debian", "control")
        script = read("scripts", "install-deps")
        m = re.search(r"^demo_extra=\(([^)]*)\)$", script, re.M)
        self.assertIsNotNone(m, "install-deps has no demo_extra=(...) line")
        self.extra = set(m.group(1).split())
        m = re.search(r"^demo_profiles=(\S+)$", script, re.M)
        self.assertIsNotNone(m, "install-deps has no demo_profiles= line")
        self.assertEqual(m.group(1), DEMO_PROFILES)
        self.demo = (build_depends(self.control, set(m.group(1).split(",")))
                     | self.extra)

    def test_parser(self):
        # The profile logic itself, on a made-up field, so that a parser
        # that keeps or drops everything cannot pass the checks below.
        text = ("Source: x\nBuild-Depends: a, b <!nocheck>, c <nocheck>,\n"
                " d [amd64] <!nocheck> <pkg.x>, e (>= 1) | f <!nocheck>,\n")
        self.assertEqual(build_depends(text, {"nocheck"}), {"a", "c", "e"})
        self.assertEqual(build_depends(text, set()),
                         {"a", "b", "d", "e", "f"})

    def test_no_test_stack(self):
        self.assertEqual(self.demo & FORBIDDEN, set(),
                         "the demo would install these")
        full = build_depends(self.control, set())
        # The full list does have them: the profiles are what keep them out.
        self.assertTrue({"prometheus", "slurmd", "munge",
                         "libgrpc++-dev"} <= full, full)

    def test_build_needs_present(self):
        deps = read("cmake", "VshareDeps.cmake")
        pkgs = set(re.findall(r"^\s*vshare_require_pkg\(\S+ \S+ (\S+)\)", deps, re.M))
        self.assertIn("libuv1-dev", pkgs)  # the regex still finds them
        needed = pkgs | {"cmake", "pkg-config", "python3", "debhelper-compat"}
        self.assertEqual(needed - self.demo, set(), "the demo's build lacks these")

    def test_demo_uses_the_profile(self):
        self.assertRegex(read("scripts", "demo"),
                         r'(?m)^\s*"\$root/scripts/install-deps" --demo$')
        script = read("scripts", "install-deps")
        self.assertIn('--demo) profile=(-P "$demo_profiles")', script)
        self.assertRegex(script, r'build-dep [^\n]*"\$\{profile\[@\]\}"')
        self.assertIn("DPkg::Lock::Timeout=120", script)



# A stand-in apt-get: logs its arguments and what policy-rc.d answers
# while it runs; build-dep fails, as a real one may.
FAKE_APT = """#!/bin/sh
echo "apt-get $*" >>"$LOG"
if [ -x /usr/sbin/policy-rc.d ]; then
    /usr/sbin/policy-rc.d; echo "policy-rc.d $?" >>"$LOG"
else
    echo "no policy-rc.d" >>"$LOG"
fi
case "$*" in *build-dep*) exit 100 ;; esac
"""


class InstallNoServices(unittest.TestCase):
    def test_policy_during_install_only(self):
        """While apt-get runs, a policy-rc.d forbids every start (exit
        101); it is gone afterwards even when apt-get failed. /usr/sbin
        is an empty tmpfs in a mount namespace of the test's own, so the
        host's own policy-rc.d (if any) is neither used nor touched."""
        if os.geteuid() != 0 or not shutil.which("unshare"):
            self.skipTest("needs root and unshare for a mount namespace")
        with tempfile.TemporaryDirectory() as tmp:
            bindir = os.path.join(tmp, "bin")
            os.mkdir(bindir)
            for name, text in (("apt-get", FAKE_APT),
                               ("dpkg-checkbuilddeps", "#!/bin/sh\nexit 1\n")):
                with open(os.path.join(bindir, name), "w") as f:
                    f.write(text)
                os.chmod(os.path.join(bindir, name), 0o755)
            log = os.path.join(tmp, "log")
            script = os.path.join(SOURCE, "scripts", "install-deps")
            r = subprocess.run(
                ["unshare", "-m", "sh", "-c",
                 'mount --make-rprivate / && mount -t tmpfs tmpfs /usr/sbin &&'
                 ' { "$0" "$@"; echo "rc $?"; ls -A /usr/sbin; }',
                 script, "--demo"],
                env=dict(os.environ, LOG=log,
                         PATH=bindir + ":" + os.environ["PATH"]),
                capture_output=True, text=True, timeout=60)
            out = r.stdout + r.stderr
            with open(log) as f:
                calls = f.read()
        self.assertIn("rc 100", out)  # apt-get's failure, passed on
        self.assertEqual(out.split("rc 100", 1)[1].strip(), "",
                         "left in /usr/sbin: " + out)
        self.assertIn("apt-get -o DPkg::Lock::Timeout=120 build-dep -y -qq "
                      "--no-install-recommends -P %s ./" % DEMO_PROFILES, calls)
        self.assertEqual(calls.count("policy-rc.d 101"), 2, calls)
        self.assertNotIn("no policy-rc.d", calls)


if __name__ == "__main__":
    main()
