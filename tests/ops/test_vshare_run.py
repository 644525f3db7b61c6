#!/usr/bin/env python3
"""vshare-run: how it composes the environment, its options and errors,
and --check against no scheduler, a stale socket and a real one."""

import grp
import os
import shutil
import socket
import tempfile
import unittest

from opsutil import (SAN_PRELOAD, SCHEDULER, SHIM, VSHARE_RUN, VSHARECTL,
                     Scheduler, base_env, main, need, parse_env_lines, run)

FRAMEWORK_DEFAULTS = {
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    "XLA_PYTHON_CLIENT_ALLOCATOR": "cuda_async",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False",
    "TF_FORCE_GPU_ALLOW_GROWTH": "true",
}


class Env(unittest.TestCase):
    """--print-env shows exactly what would be exported."""

    def printenv(self, *args, **env):
        """vshare-run's output, with the sanitizer runtime (which a
        sanitized build puts first in LD_PRELOAD) taken out again."""
        e = base_env(**env)
        if SAN_PRELOAD:
            e["LD_PRELOAD"] = ":".join([SAN_PRELOAD] + (
                [env["LD_PRELOAD"]] if "LD_PRELOAD" in env else []))
        r = run([VSHARE_RUN] + list(args) + ["--print-env"], env=e)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = parse_env_lines(r.stdout)
        if SAN_PRELOAD:
            first, _, rest = out["LD_PRELOAD"].partition(":")
            self.assertEqual(first, SAN_PRELOAD, "sanitizer runtime not first")
            out["LD_PRELOAD"] = rest
        return out, r.stderr

    def test_plain_preload_is_absolute_shim(self):
        out, _ = self.printenv()
        self.assertEqual(out["LD_PRELOAD"], os.path.realpath(SHIM))
        self.assertTrue(os.path.isabs(out["LD_PRELOAD"]))

    def test_existing_preload_kept_in_order_shim_last(self):
        out, _ = self.printenv(LD_PRELOAD="/opt/a.so /opt/b.so:/opt/c.so")
        self.assertEqual(out["LD_PRELOAD"].split(":"),
                         ["/opt/a.so", "/opt/b.so", "/opt/c.so",
                          os.path.realpath(SHIM)])

    def test_shim_never_twice(self):
        shim = os.path.realpath(SHIM)
        out, err = self.printenv(LD_PRELOAD="/opt/a.so:%s:/opt/b.so" % shim)
        self.assertEqual(out["LD_PRELOAD"], "/opt/a.so:%s:/opt/b.so" % shim)
        self.assertNotIn("vshare-run", err)

    def test_other_shim_replaced_in_place(self):
        shim = os.path.realpath(SHIM)
        out, err = self.printenv(
            LD_PRELOAD="/old/libvshare.so:/opt/a.so:/older/libvshare.so")
        self.assertEqual(out["LD_PRELOAD"], "%s:/opt/a.so" % shim)
        self.assertIn("/old/libvshare.so", err)

    def test_options_become_variables(self):
        out, _ = self.printenv(
            "--socket", "/tmp/x.sock", "--label", "two words",
            "--mem-limit=1.5G", "--idle-ms", "50", "--swap-out", "eager",
            "--require-scheduler", "--no-convert", "--log-level", "debug")
        want = {"VSHARE_SOCKET": "/tmp/x.sock", "VSHARE_LABEL": "two words",
                "VSHARE_MEM_LIMIT": "1.5G", "VSHARE_IDLE_MS": "50",
                "VSHARE_SWAP_OUT": "eager", "VSHARE_REQUIRE_SCHEDULER": "1",
                "VSHARE_CONVERT": "0", "VSHARE_LOG_LEVEL": "debug"}
        for k, v in want.items():
            self.assertEqual(out.get(k), v, k)

    def test_option_wins_over_environment(self):
        out, _ = self.printenv("--socket", "/tmp/opt.sock",
                               VSHARE_SOCKET="/tmp/env.sock")
        self.assertEqual(out["VSHARE_SOCKET"], "/tmp/opt.sock")

    def test_unset_options_leave_environment_alone(self):
        out, _ = self.printenv(VSHARE_SOCKET="/tmp/env.sock")
        self.assertNotIn("VSHARE_SOCKET", out)
        self.assertNotIn("VSHARE_MEM_LIMIT", out)

    def test_framework_defaults_when_unset(self):
        out, _ = self.printenv()
        for k, v in FRAMEWORK_DEFAULTS.items():
            self.assertEqual(out.get(k), v, k)

    def test_framework_user_values_respected(self):
        user = {"XLA_PYTHON_CLIENT_PREALLOCATE": "true",
                "XLA_PYTHON_CLIENT_ALLOCATOR": "bfc",
                "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128",
                "TF_FORCE_GPU_ALLOW_GROWTH": "false"}
        out, err = self.printenv(**user)
        for k in user:
            self.assertNotIn(k, out, "%s overridden" % k)
        self.assertNotIn("vshare-run", err)

    def test_empty_framework_value_counts_as_unset(self):
        out, _ = self.printenv(TF_FORCE_GPU_ALLOW_GROWTH="")
        self.assertEqual(out.get("TF_FORCE_GPU_ALLOW_GROWTH"), "true")

    def test_pytorch_expandable_segments_warned_not_changed(self):
        out, err = self.printenv(
            PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
        self.assertNotIn("PYTORCH_CUDA_ALLOC_CONF", out)
        self.assertIn("expandable", err)

    def test_pytorch_new_variable_respected(self):
        out, err = self.printenv(PYTORCH_ALLOC_CONF="expandable_segments:True")
        self.assertNotIn("PYTORCH_CUDA_ALLOC_CONF", out)
        self.assertNotIn("PYTORCH_ALLOC_CONF", out)
        self.assertIn("PYTORCH_ALLOC_CONF", err)

    def test_no_framework_defaults(self):
        out, _ = self.printenv("--no-framework-defaults")
        for k in FRAMEWORK_DEFAULTS:
            self.assertNotIn(k, out)
        self.assertIn("LD_PRELOAD", out)


class Usage(unittest.TestCase):
    def assert_usage_error(self, *args, needle=""):
        r = run([VSHARE_RUN] + list(args))
        self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
        self.assertIn("vshare-run:", r.stderr)
        self.assertIn(needle, r.stderr)
        self.assertIn("--help", r.stderr)

    def test_mem_limit_without_unit(self):
        """A small size with no unit is a unit left out: refused, with a
        message that asks for one, instead of a limit of 8 bytes."""
        for v in ("8", "1048575", "0.5", "0008"):
            self.assert_usage_error("--mem-limit", v, "--", "true",
                                    needle="'%s': a size needs a unit" % v)
        r = run([VSHARE_RUN, "--mem-limit", "8", "--", "true"])
        self.assertIn("vsharectl: '8': a size needs a unit (K, M, G, T); a "
                      "bare number below 1 MiB is refused, write 8G or 8B\n",
                      r.stderr)
        for v in ("0", "1048576", "8B", "8G", "1.5G"):
            r = run([VSHARE_RUN, "--mem-limit", v, "--print-env"])
            self.assertEqual(r.returncode, 0, (v, r.stderr))
            self.assertIn("VSHARE_MEM_LIMIT=%s\n" % v, r.stdout)

    def test_label_rule_from_vsharectl(self):
        """--label is checked by vsharectl label, the C rule: 63 bytes
        (of UTF-8, not characters) pass, 64 do not; a control character
        shows as '?' in what vsharectl prints."""
        r = run([VSHARECTL, "label", "a\tb"])
        self.assertEqual((r.returncode, r.stdout), (0, "a?b\n"), r.stderr)
        ok = "\u00e9" * 31 + "x"          # 63 bytes, 32 characters
        r = run([VSHARE_RUN, "--label", ok, "--print-env"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("VSHARE_LABEL=%s\n" % ok, r.stdout)
        self.assert_usage_error("--label", ok + "y", "--", "true",
                                needle="longer than 63 bytes")

    def test_bad_arguments_exit_2(self):
        self.assert_usage_error("--bogus", "--", "true", needle="--bogus")
        self.assert_usage_error("--socket", needle="needs a value")
        self.assert_usage_error("--mem-limit", "3X", "--", "true", needle="3X")
        self.assert_usage_error("--mem-limit", "-1", "--", "true", needle="-1")
        # A value that reads as one of vsharectl's own words is a value.
        self.assert_usage_error("--mem-limit", "--help", "--", "true",
                                needle="'--help': not a size")
        self.assert_usage_error("--idle-ms", "1.5", "--", "true", needle="1.5")
        self.assert_usage_error("--idle-ms", "3600001", "--", "true",
                                needle="3600000")
        self.assert_usage_error("--idle-ms", "9" * 30, "--", "true",
                                needle="3600000")
        self.assert_usage_error("--swap-out", "now", "--", "true", needle="lazy")
        self.assert_usage_error("--log-level", "loud", "--", "true",
                                needle="loud")
        self.assert_usage_error("--label", "x" * 64, "--", "true",
                                needle="63 bytes")
        self.assert_usage_error(needle="no command")
        self.assert_usage_error("--socket", "/tmp/s", needle="no command")

    def test_help_and_version(self):
        r = run([VSHARE_RUN, "--help"])
        self.assertEqual(r.returncode, 0)
        for word in ("--socket", "--mem-limit", "--check", "--install-kernel",
                     "Exit status"):
            self.assertIn(word, r.stdout)
        r = run([VSHARE_RUN, "--version"])
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^vshare-run \d+\.\d+\.\d+\n$")

    def test_missing_library_exit_125(self):
        r = run([VSHARE_RUN, "--lib", "/nonexistent/libvshare.so", "--",
                 "true"])
        self.assertEqual(r.returncode, 125)
        self.assertIn("/nonexistent/libvshare.so", r.stderr)


class Exec(unittest.TestCase):
    """The command runs with its arguments intact and its exit status."""

    def setUp(self):
        need("shim")

    def test_arguments_and_status_pass_through(self):
        r = run([VSHARE_RUN, "--label", "t", "--", "sh", "-c",
                 'printf "%s|" "$@"; printf "%s\\n" "$VSHARE_LABEL"; exit 7',
                 "sh", "a b", "", "*", "--x"])
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertEqual(r.stdout, "a b||*|--x|t\n")

    def test_command_without_separator(self):
        r = run([VSHARE_RUN, "true"])
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_shim_is_mapped(self):
        r = run([VSHARE_RUN, "--", "cat", "/proc/self/maps"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(os.path.realpath(SHIM), r.stdout)

    def test_command_not_found_127(self):
        r = run([VSHARE_RUN, "--", "/nonexistent/program"])
        self.assertEqual(r.returncode, 127)


class Check(unittest.TestCase):
    def check(self, sock, lib=None):
        args = [VSHARE_RUN, "--socket", sock]
        if lib:
            args += ["--lib", lib]
        return run(args + ["--check"])

    def fake_lib(self, tmp):
        path = os.path.join(tmp, "libvshare.so")
        open(path, "w").close()
        return path

    def test_no_scheduler(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.check(os.path.join(tmp, "none.sock"), self.fake_lib(tmp))
            self.assertEqual(r.returncode, 3, r.stdout)
            self.assertIn("library: " + os.path.join(tmp, "libvshare.so"),
                          r.stdout)
            self.assertIn("does not exist", r.stdout)

    def test_scheduler_of_another_release(self):
        """vsharectl check's exit 1 (a scheduler that answers in a protocol
        version it does not speak) is --check's 1, its line passed on;
        its 3 stays 3. A vsharectl beside vshare-run stands in."""
        with tempfile.TemporaryDirectory() as tmp:
            dst = os.path.join(tmp, "vshare-run")
            shutil.copy(VSHARE_RUN, dst)
            os.chmod(dst, 0o755)
            line = "scheduler: reachable, but it speaks protocol version 11"
            for ctl_rc, want in ((1, 1), (3, 3), (0, 0)):
                ctl = os.path.join(tmp, "vsharectl")
                with open(ctl, "w") as f:
                    f.write("#!/bin/sh\necho '%s'\nexit %d\n" %
                            (line, ctl_rc))
                os.chmod(ctl, 0o755)
                r = run([dst, "--socket", os.path.join(tmp, "s.sock"),
                         "--lib", self.fake_lib(tmp), "--check"])
                self.assertEqual(r.returncode, want, r.stdout + r.stderr)
                self.assertIn(line + "\n", r.stdout)
            # A missing library comes first.
            r = run([dst, "--socket", os.path.join(tmp, "s.sock"),
                     "--lib", os.path.join(tmp, "none.so"), "--check"])
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)

    def test_stale_socket(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "stale.sock")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.close()  # the file stays, nobody listens
            r = self.check(path, self.fake_lib(tmp))
            self.assertEqual(r.returncode, 3, r.stdout)
            self.assertIn("connection refused", r.stdout)

    def test_not_a_socket(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "file.sock")
            open(path, "w").close()
            r = self.check(path, self.fake_lib(tmp))
            self.assertEqual(r.returncode, 3, r.stdout)
            self.assertIn("%s is not a socket" % path, r.stdout)

    def test_path_too_long(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s" * 120 + ".sock")
            r = self.check(path, self.fake_lib(tmp))
            self.assertEqual(r.returncode, 3, r.stdout)
            self.assertIn("not reachable: socket path too long", r.stdout)

    def check_as_other_user(self, tmp, gid):
        """--check as uid 12345 (in no group) on a socket of group gid,
        mode 0660, in a directory anyone may search."""
        os.chmod(tmp, 0o755)
        path = os.path.join(tmp, "s.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        os.chown(path, 0, gid)
        os.chmod(path, 0o660)
        script = os.path.join(tmp, "vshare-run")
        shutil.copy(VSHARE_RUN, script)
        os.chmod(script, 0o755)
        if os.path.exists(VSHARECTL):
            # The probe, found beside the script as when installed.
            shutil.copy(VSHARECTL, os.path.join(tmp, "vsharectl"))
            os.chmod(os.path.join(tmp, "vsharectl"), 0o755)
        lib = self.fake_lib(tmp)
        os.chmod(lib, 0o644)
        as_user = ["setpriv", "--reuid=12345", "--regid=12345",
                   "--clear-groups"]
        try:
            r = run(as_user + [script, "--socket", path, "--lib", lib,
                               "--check"])
            ctl = run(as_user + [os.path.join(tmp, "vsharectl"), "--socket",
                                 path, "status"])
        finally:
            srv.close()
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("permission denied on %s (" % path, r.stdout)
        # vsharectl itself gives the same advice, word for word.
        why = r.stdout.split("scheduler: not reachable: ", 1)[1].strip()
        self.assertEqual(ctl.stderr.strip(), "vsharectl: " + why)
        return r.stdout

    def test_status_refused_is_reachable(self):
        """A scheduler whose status is for admins only answers a user's
        --check with a refusal: it runs, and the line says so (not an
        unknown protocol version, not unreachable)."""
        self.need_root()
        need("sched")
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            conf = os.path.join(tmp, "scheduler.json")
            with open(conf, "w") as f:
                f.write('{"status_public": false, "socket_mode": "0666"}\n')
            sched = Scheduler(tmp, config=conf)
            try:
                for prog in (VSHARE_RUN, VSHARECTL):
                    dst = os.path.join(tmp, os.path.basename(prog))
                    shutil.copy(prog, dst)
                    os.chmod(dst, 0o755)
                lib = self.fake_lib(tmp)
                os.chmod(lib, 0o644)
                r = run(["setpriv", "--reuid=12345", "--regid=12345",
                         "--clear-groups", os.path.join(tmp, "vshare-run"),
                         "--socket", sched.sock, "--lib", lib, "--check"])
            finally:
                sched.stop()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("scheduler: reachable (status refused: ", r.stdout)
        self.assertNotIn("unknown", r.stdout)

    def test_directory_not_enterable(self):
        """A socket in a directory the user may not enter exists: the
        line names that directory and says whom to ask, where it said
        the socket does not exist; vsharectl says the same."""
        self.need_root()
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            inner = os.path.join(tmp, "inner")
            os.mkdir(inner, 0o700)
            os.mkdir(os.path.join(inner, "vshare"), 0o755)
            path = os.path.join(inner, "vshare", "s.sock")
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(path)
            srv.listen(1)
            for prog in (VSHARE_RUN, VSHARECTL):
                dst = os.path.join(tmp, os.path.basename(prog))
                shutil.copy(prog, dst)
                os.chmod(dst, 0o755)
            lib = self.fake_lib(tmp)
            os.chmod(lib, 0o644)
            as_user = ["setpriv", "--reuid=12345", "--regid=12345",
                       "--clear-groups"]
            try:
                r = run(as_user + [os.path.join(tmp, "vshare-run"),
                                   "--socket", path, "--lib", lib, "--check"])
                ctl = run(as_user + [os.path.join(tmp, "vsharectl"),
                                     "--socket", path, "status"])
            finally:
                srv.close()
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertNotIn("does not exist", r.stdout)
        want = ("scheduler: not reachable: permission denied on %s: you may "
                "not enter %s (mode 0700, group root): ask the administrator "
                "to let you in\n" % (path, inner))
        self.assertIn(want, r.stdout)
        self.assertEqual(ctl.returncode, 1, ctl.stderr)
        self.assertEqual(ctl.stderr, "vsharectl: " +
                         want[len("scheduler: not reachable: "):])

    def need_root(self):
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            self.skipTest("needs root and setpriv to act as another user")

    def test_permission_denied_names_the_group(self):
        """A user outside the socket's group is told which group to join."""
        self.need_root()
        gid = grp.getgrnam("users").gr_gid  # in Debian's base-passwd
        with tempfile.TemporaryDirectory() as tmp:
            out = self.check_as_other_user(tmp, gid)
        self.assertIn("(join group users and log in again)", out)

    def test_permission_denied_never_advises_root(self):
        """A socket of group root (no group vshare when the scheduler
        started) or of a nameless group: the advice is for the
        administrator, and names no group to join."""
        self.need_root()
        for gid, shown in ((0, "root"), (54321, "54321")):
            if gid != 0 and gid in [g.gr_gid for g in grp.getgrall()]:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                out = self.check_as_other_user(tmp, gid)
            self.assertNotIn("join group", out)
            self.assertIn("the socket's group is %s" % shown, out)
            self.assertIn("socket_group", out)

    def test_missing_library_exit_1(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.check(os.path.join(tmp, "none.sock"),
                           os.path.join(tmp, "libvshare.so"))
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("(missing)", r.stdout)

    def test_running_scheduler(self):
        need("sched")
        with tempfile.TemporaryDirectory() as tmp:
            sched = Scheduler(tmp)
            lib = self.fake_lib(tmp)
            try:
                r = self.check(sched.sock, lib)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                # The version the scheduler speaks, not that of a frame
                # the probe sent (it said 1 to a protocol-5 scheduler).
                v = run([SCHEDULER, "--version"]).stdout
                proto = v.rsplit("(protocol ", 1)[1].split(")")[0]
                self.assertGreater(int(proto), 1, v)
                self.assertIn("scheduler: reachable (protocol version %s)\n"
                              % proto, r.stdout)
                self.assertIn("library: " + lib, r.stdout)
                # The socket from the environment, as the shim reads it.
                r = run([VSHARE_RUN, "--lib", lib, "--check"],
                        env=base_env(VSHARE_SOCKET=sched.sock))
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                # No socket option or variable: the default path.
                r = run([VSHARE_RUN, "--lib", lib, "--check"])
                self.assertIn("socket: /run/vshare/scheduler.sock", r.stdout)
            finally:
                sched.stop()

    def test_without_python(self):
        """The probe is vsharectl: no python3 is needed."""
        need("sched", "ctl")
        with tempfile.TemporaryDirectory() as tmp:
            # A PATH with the tools the script uses, and no python3.
            tools = os.path.join(tmp, "tools")
            os.mkdir(tools)
            for t in ("sh", "dirname", "readlink", "grep", "sed", "tr", "wc",
                      "cat"):
                os.symlink(shutil.which(t), os.path.join(tools, t))
            lib = self.fake_lib(tmp)
            env = base_env(PATH=tools)
            sched = Scheduler(tmp)
            try:
                r = run([VSHARE_RUN, "--socket", sched.sock, "--lib", lib,
                         "--check"], env=env)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("reachable (protocol version", r.stdout)
            finally:
                sched.stop()
            r = run([VSHARE_RUN, "--socket", sched.sock, "--lib", lib,
                     "--check"], env=env)
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertIn("scheduler: not reachable: ", r.stdout)

    def test_library_found_in_build_tree(self):
        need("shim")
        r = run([VSHARE_RUN, "--socket", "/nonexistent.sock", "--check"])
        self.assertIn("library: " + os.path.realpath(SHIM) + "\n", r.stdout)
        self.assertEqual(r.returncode, 3, r.stdout)


if __name__ == "__main__":
    main()
