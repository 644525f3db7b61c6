#!/usr/bin/env bash
# The Debian packages, as an operator gets them: build them with
# dpkg-buildpackage from a copy of the tree 150 characters deep, with the
# tests whose sockets and mounts depend on where the build is (ctest label
# `paths`: the rest of the suite ran in this build tree already), run
# lintian on them, install
# them with apt-get into a fresh Debian root made by debootstrap, run
# vsharectl, vshare-run --check and a demo program (on the CUDA test
# driver of this build tree) from the installed paths, then purge them and
# check that nothing of theirs is left.
#
# The root is a chroot of its own under the build tree; nothing of the
# host is bind-mounted into it. systemd is never started there: the
# maintainer scripts start units only when /run/systemd/system exists
# (it does not in the chroot) and deb-systemd-invoke does nothing without
# it; a policy-rc.d that forbids every start is there as well. /proc is
# mounted from the install to the purge, as on a real system: the
# postinst's systemd-tmpfiles needs it to create /run/vshare. The exit
# trap unmounts it.
#
# Usage: test_package.sh SOURCE_DIR BUILD_DIR
# Exit 77 (skip) when this machine cannot: not root, no debootstrap, or no
# network to the Debian archive.
set -euo pipefail
src=$(readlink -f "$1") build=$(readlink -f "$2")
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
t0=$SECONDS
phase() { echo "=== $* (at $((SECONDS - t0)) s)"; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || skip "debootstrap not installed (scripts/install-deps)"
for tool in dpkg-buildpackage dh lintian; do
	command -v "$tool" >/dev/null || fail "$tool not installed: run scripts/install-deps"
done
td=$build/lib/testdriver/libcuda.so.1 demo=$build/bin/vs-compute
if [ ! -f "$td" ] || [ ! -x "$demo" ]; then
	fail "no test driver or vs-compute in $build"
fi

# The mirror apt uses here (one-line or deb822 sources), else debootstrap's.
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	/etc/apt/sources.list.d/*.sources 2>/dev/null |
	sed -n -e 's|^deb \(\[[^]]*\] \)\{0,1\}\(https\{0,1\}://[^ ]*\) [a-z]* .*main.*|\2|p' \
		-e 's|^URIs: *\(https\{0,1\}://[^ ]*/debian\)/*$|\1|p' | head -n 1) || true
mirror=${mirror:-http://deb.debian.org/debian}
# shellcheck source=/dev/null
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
host=${mirror#*://} host=${host%%/*} port=80
case $mirror in https:*) port=443 ;; esac
timeout 10 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null ||
	skip "no network to the Debian archive ($mirror)"

work=$(mktemp -d "$build/package-test.XXXXXX")
# The package build's tests run programs of the build tree as other users
# (setpriv): they must be able to reach them, as in any build directory.
chmod 755 "$work"
root=$work/root
cleanup() {
	if mountpoint -q "$root/proc" 2>/dev/null; then umount "$root/proc"; fi
	# Never remove a tree with something still mounted in it.
	if ! grep -q " $work/" /proc/self/mounts; then
		rm -rf --one-file-system "$work"
	else
		echo "left $work: something is still mounted in it" >&2
	fi
}
trap cleanup EXIT
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

# The copy 150 characters deep, as in some packagers' build roots: its
# build directory (obj-*) and the HOME and XDG_RUNTIME_DIR that debhelper
# gives the tests (under debian/.debhelper) are deeper still, so a test
# that put a socket (108 bytes at most) or a mount under any of them
# fails here. VSHARE_PACKAGE_TESTS=all runs the whole suite there instead
# of the label `paths`; =none builds with nocheck.
pad=$((145 - ${#work})) # $work/PAD/src: 150 characters
[ $pad -ge 1 ] || pad=1
deep=$work/$(printf '%*s' "$pad" '' | tr ' ' p)/src
mkdir -p "$deep"
case ${VSHARE_PACKAGE_TESTS:-paths} in
paths) opts="parallel=$(nproc)" ctest_args="-L paths" ;;
all) opts="parallel=$(nproc)" ctest_args="" ;;
none) opts="nocheck parallel=$(nproc)" ctest_args="" ;;
*) fail "VSHARE_PACKAGE_TESTS must be paths, all or none" ;;
esac
phase "build the packages in ${#deep} characters deep (dpkg-buildpackage -b, DEB_BUILD_OPTIONS=$opts, ctest $ctest_args)"
tar -C "$src" --exclude='./build*' --exclude=./.git --exclude='./obj-*' \
	--exclude=./debian/.debhelper --exclude=./debian/tmp -cf - . | tar -C "$deep" -xf -
if ! (cd "$deep" && DEB_BUILD_OPTIONS=$opts VSHARE_CTEST_ARGS=$ctest_args \
	dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
	tail -n 80 "$work/build.log"; fail "dpkg-buildpackage in $deep"
fi
grep -E '^[0-9]+% tests passed|^Total Test time' "$work/build.log" || true
# dpkg-buildpackage writes the packages, .changes and .buildinfo beside
# the tree it built.
find "$(dirname "$deep")" -maxdepth 1 -type f -exec mv -t "$work" {} +
debs=$(cd "$work" && ls vshare_*.deb vshare-jupyter_*.deb)
echo "$debs"
# The Slurm plugin has a package of its own (it depends on slurmd of one
# major version); it is checked for its content, not installed here.
slurm_deb=$(cd "$work" && ls vshare-slurm_*.deb) || fail "no vshare-slurm package"
# grep reads the whole listing (no -q): under pipefail, a grep that quits
# early kills the writer with SIGPIPE and fails the pipe it matched in.
dpkg-deb -c "$work/$slurm_deb" | grep '/slurm-wlm/vshare_spank\.so$' >/dev/null ||
	fail "$slurm_deb lacks the SPANK plugin"
# Its plugstack.conf.d snippet, a conffile, loads that very file.
spank=$(dpkg-deb -c "$work/$slurm_deb" | sed -n 's|.* \./\(.*/slurm-wlm/vshare_spank\.so\)$|/\1|p')
snippet=$(dpkg-deb --fsys-tarfile "$work/$slurm_deb" |
	tar -xOf - ./etc/slurm/plugstack.conf.d/vshare.conf) ||
	fail "$slurm_deb lacks /etc/slurm/plugstack.conf.d/vshare.conf"
[ "$(grep -v '^#' <<<"$snippet" | grep -v '^$')" = "optional $spank" ] ||
	fail "the plugstack.conf.d snippet does not load $spank: $snippet"
dpkg-deb -I "$work/$slurm_deb" conffiles | grep '^/etc/slurm/plugstack.conf.d/vshare.conf$' >/dev/null ||
	fail "the plugstack.conf.d snippet is not a conffile"

phase "lintian"
# Every tag down to the pedantic and informational ones is shown (each is
# justified in docs/operations.md); only errors fail.
lint_rc=0
# lintian leaves mldbm-* files in its TMPDIR: give it the test's own.
mkdir "$work/tmp"
TMPDIR="$work/tmp" lintian --pedantic --display-info --fail-on error \
	"$work"/vshare_*.changes >"$work/lintian.log" 2>&1 || lint_rc=$?
grep -v 'running with root privileges' "$work/lintian.log" || true
[ $lint_rc = 0 ] || fail "lintian reports errors"

phase "debootstrap --variant=minbase $suite $mirror"
if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
	tail -n 20 "$work/debootstrap.log"; fail "debootstrap"
fi
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mkdir "$root/root/debs"
for d in $debs; do cp "$work/$d" "$root/root/debs/"; done

phase "apt-get install the packages"
mount -t proc proc "$root/proc"
in_root apt-get update -qq
paths=()
for d in $debs; do paths+=("/root/debs/$d"); done
in_root apt-get install -y -q "${paths[@]}" \
	>"$work/install.log" 2>&1 || { tail -n 30 "$work/install.log"; fail "apt-get install"; }
for p in vshare vshare-jupyter; do in_root dpkg-query -L "$p"; done | sort -u >"$work/owned"

phase "check the installed packages"
in_root vsharectl --version
in_root vshare-scheduler --version
in_root vshare-run --version
in_root vshare-kernel install --help >/dev/null || fail "vshare-kernel install --help"
# The daemon in sbin, where its section-8 page says it is, and the unit
# runs it there; the kernel wrapper runs Debian's python3, not PATH's.
if [ ! -x "$root/usr/sbin/vshare-scheduler" ] || [ -e "$root/usr/bin/vshare-scheduler" ]; then
	fail "vshare-scheduler is not in /usr/sbin alone"
fi
grep '^ExecStart=/usr/sbin/vshare-scheduler ' "$root/lib/systemd/system/vshare-scheduler.service" >/dev/null ||
	fail "the unit does not run /usr/sbin/vshare-scheduler"
[ "$(head -n 1 "$root/usr/bin/vshare-kernel")" = "#!/usr/bin/python3" ] ||
	fail "vshare-kernel does not start with #!/usr/bin/python3"
in_root getent group vshare >/dev/null || fail "sysusers: no group vshare"
in_root getent group vshare-admin >/dev/null || fail "sysusers: no group vshare-admin"
in_root getent passwd vshare >/dev/null || fail "sysusers: no user vshare"
[ "$(in_root stat -c %U:%G:%a /run/vshare)" = vshare:vshare:755 ] ||
	fail "tmpfiles: /run/vshare is $(in_root stat -c %U:%G:%a /run/vshare)"
[ -L "$root/etc/systemd/system/multi-user.target.wants/vshare-scheduler.service" ] ||
	fail "the unit is not enabled"
# shellcheck disable=SC2016 # dpkg-query's own ${} fields
in_root dpkg-query -W -f='${Conffiles}\n' vshare | grep ' /etc/vshare/scheduler.json ' >/dev/null ||
	fail "/etc/vshare/scheduler.json is not a conffile"
for page in man1/vsharectl.1 man1/vshare-run.1 man1/vshare-kernel.1 \
	man5/vshare-scheduler.json.5 man7/libvshare.7 man8/vshare-scheduler.8; do
	[ -f "$root/usr/share/man/$page.gz" ] || fail "no manual page $page"
done
python3 "$src/tests/ops/check_doc_links.py" "$root/usr/share/doc/vshare" ||
	fail "broken links in /usr/share/doc/vshare"
# shellcheck disable=SC2016 # expanded by the bash in the root
got=$(in_root bash -c '. /usr/share/bash-completion/completions/vsharectl
	COMP_WORDS=(vsharectl s); COMP_CWORD=1; _vsharectl; echo "${COMPREPLY[*]}"')
# The commands that begin with s, in any order.
[ "$(echo "$got" | tr ' ' '\n' | sort | tr '\n' ' ')" = \
	"set-slice set-tq set-weight status " ] ||
	fail "vsharectl completion of 's': '$got'"
set +e
out=$(in_root vshare-run --check); rc=$?
set -e
echo "$out"
if [ $rc != 3 ] || ! grep -q 'does not exist' <<<"$out"; then
	fail "vshare-run --check without a scheduler: exit $rc"
fi

phase "demo: the installed scheduler, vshare-run and vsharectl, a program on the test driver"
mkdir "$root/opt/vshare-test"
cp "$td" "$demo" "$root/opt/vshare-test/"
# As the unit runs it: user and group vshare, the installed config.
chroot "$root" setpriv --reuid=vshare --regid=vshare --init-groups \
	/usr/sbin/vshare-scheduler --config /etc/vshare/scheduler.json \
	>"$work/scheduler.log" 2>&1 &
sched=$!
for _ in $(seq 50); do [ -S "$root/run/vshare/scheduler.sock" ] && break; sleep 0.1; done
out=$(in_root vshare-run --check) || fail "vshare-run --check with the scheduler running"
grep -q '^scheduler: reachable (protocol version [1-9][0-9]*)$' <<<"$out" ||
	fail "vshare-run --check does not say the scheduler's protocol: $out"
in_root env LD_LIBRARY_PATH=/opt/vshare-test vshare-run --label pkgtest -- \
	/opt/vshare-test/vs-compute --seconds 3 --kernel-ms 10 --mem 1M \
	--progress-ms 0 >"$work/demo.log" 2>&1 &
prog=$!
seen=0
for _ in $(seq 100); do
	if in_root vsharectl status 2>/dev/null | grep pkgtest >/dev/null; then seen=1; break; fi
	sleep 0.1
done
in_root vsharectl status || true
wait $prog || { cat "$work/demo.log"; fail "the demo program failed"; }
kill "$sched"; wait "$sched" || true
[ $seen = 1 ] || { cat "$work/scheduler.log"; fail "the demo never showed in vsharectl status"; }
grep -q 'registered' "$work/scheduler.log" || fail "the scheduler logged no registration"
rm -rf "$root/opt/vshare-test" "$root/root/debs"

phase "apt-get purge"
in_root apt-get purge -y -q vshare vshare-jupyter >"$work/purge.log" 2>&1 ||
	{ cat "$work/purge.log"; fail "apt-get purge"; }
left=""
while read -r f; do
	if [ -e "$root$f" ] && [ ! -d "$root$f" ]; then left="$left $f"; fi
done <"$work/owned"
[ -z "$left" ] || fail "left after purge:$left"
# Nothing by name either (the users and groups stay in /etc/passwd and
# /etc/group, as Debian keeps system users; apt's and dpkg's logs name
# the packages).
found=$(cd "$root" && find . -path ./proc -prune -o -path ./var/log -prune -o \
	-name '*vshare*' -print)
[ -z "$found" ] || fail "left after purge: $found"
if in_root dpkg-query -W vshare >/dev/null 2>&1; then fail "vshare still known to dpkg"; fi
umount "$root/proc"

phase "passed"
