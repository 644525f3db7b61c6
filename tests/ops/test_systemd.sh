#!/bin/sh
# The systemd files: systemd-analyze verify and an offline security score
# of the unit (as configured with the build tree's daemon in ExecStart),
# the hardening it must keep, and the sysusers.d and tmpfiles.d entries
# applied to a scratch root.
# Usage: test_systemd.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
unit=$build/packaging/verify/vshare-scheduler.service
installed_unit=$build/packaging/vshare-scheduler.service
sysusers=$src/packaging/systemd/vshare.sysusers
tmpfiles=$src/packaging/systemd/vshare.tmpfiles

fail() { echo "FAIL: $*" >&2; exit 1; }

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "SKIP: systemd-analyze not installed (apt-get install systemd)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verify needs ExecStart's program. Until this tree has the daemon, check
# a copy that runs /bin/true instead, and say so.
case ",${VSHARE_PARTS:-}," in
*,sched,*) [ -x "$build/bin/vshare-scheduler" ] || fail "vshare-scheduler not built" ;;
*)
	echo "note: no vshare-scheduler in this tree; verifying with ExecStart=/bin/true"
	sed 's|^ExecStart=[^ ]*|ExecStart=/bin/true|' "$unit" >"$tmp/vshare-scheduler.service"
	cp "$build/packaging/verify/vshare-scheduler.socket" "$tmp/"
	unit=$tmp/vshare-scheduler.service ;;
esac
# The socket unit that the service requires, verified with it.
socket_unit=$(dirname "$unit")/vshare-scheduler.socket

# verify also runs man(1) on the unit's man: link: the build's pages when
# scdoc made them, else that check is left out.
man=--man=no
if [ -f "$build/man/man8/vshare-scheduler.8" ]; then
	man=--man=yes
	MANPATH=$build/man
	export MANPATH
fi
# verify exits 0 on some warnings (an unknown key, a bad value), so any
# line it prints about our unit is a failure too.
if ! systemd-analyze verify "$man" "$unit" "$socket_unit" >"$tmp/verify.out" 2>&1; then
	cat "$tmp/verify.out"; fail "systemd-analyze verify"
fi
if grep -i vshare "$tmp/verify.out"; then
	fail "systemd-analyze verify warns about the unit"
fi
echo "ok: systemd-analyze verify"

# Exposure score, 0 (best) to 100; the unit scores 5 as written.
if ! systemd-analyze security --offline=yes --threshold=10 "$unit" >"$tmp/sec.out" 2>&1; then
	cat "$tmp/sec.out"; fail "exposure level above 1.0"
fi
grep 'Overall exposure' "$tmp/sec.out"

# The metrics drop-in that the unit's comment gives (the "#   " lines
# from "#   [Service]" on), applied as a drop-in would be (later settings
# win): it must verify, and keep the unit out of the "exposed" range.
mkdir "$tmp/metrics"
awk '/^#   \[Service\]$/ { on = 1 } on && !/^#   / { exit }
	on { sub(/^#   /, ""); print }' "$unit" >"$tmp/dropin"
grep -qx 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' "$tmp/dropin" ||
	fail "the unit's comment gives no metrics drop-in: $(cat "$tmp/dropin")"
grep -qx 'PrivateNetwork=no' "$tmp/dropin" || fail "drop-in keeps PrivateNetwork"
# The example the package ships (packaging/systemd/metrics-network.conf)
# is the same drop-in, so that what is verified here is what admins copy.
grep -v '^#' "$src/packaging/systemd/metrics-network.conf" |
	cmp -s - "$tmp/dropin" ||
	fail "packaging/systemd/metrics-network.conf differs from the unit's comment"
cat "$unit" "$tmp/dropin" >"$tmp/metrics/vshare-scheduler.service"
cp "$socket_unit" "$tmp/metrics/"
if ! systemd-analyze verify "$man" "$tmp/metrics/vshare-scheduler.service" \
	>"$tmp/verify-m.out" 2>&1 || grep -i vshare "$tmp/verify-m.out"; then
	cat "$tmp/verify-m.out"; fail "systemd-analyze verify with the metrics drop-in"
fi
if ! systemd-analyze security --offline=yes --threshold=20 \
	"$tmp/metrics/vshare-scheduler.service" >"$tmp/sec-m.out" 2>&1; then
	cat "$tmp/sec-m.out"; fail "exposure level above 2.0 with the metrics drop-in"
fi
echo "ok: the metrics drop-in: $(grep 'Overall exposure' "$tmp/sec-m.out")"

for d in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes \
	PrivateTmp=yes RestrictAddressFamilies=AF_UNIX UMask=0117 \
	Restart=on-failure RuntimeDirectory=vshare RuntimeDirectoryPreserve=yes \
	User=vshare Group=vshare Type=notify NotifyAccess=main \
	Requires=vshare-scheduler.socket After=vshare-scheduler.socket; do
	grep -qx "$d" "$installed_unit" || fail "unit lacks $d"
done
grep -q '^ExecStart=/.*/vshare-scheduler --config /.*/vshare/scheduler.json$' \
	"$installed_unit" || fail "unexpected ExecStart: $(grep ExecStart "$installed_unit")"
echo "ok: hardening directives"

# sysusers.d: the groups and the system user, in a scratch root.
mkdir -p "$tmp/root/etc"
systemd-sysusers --root="$tmp/root" "$sysusers" >/dev/null 2>&1 ||
	fail "systemd-sysusers rejects $sysusers"
grep -q '^vshare:x:[0-9]*:' "$tmp/root/etc/group" || fail "no group vshare"
grep -q '^vshare-admin:x:[0-9]*:' "$tmp/root/etc/group" || fail "no group vshare-admin"
line=$(grep '^vshare:' "$tmp/root/etc/passwd") || fail "no user vshare"
gid=$(grep '^vshare:' "$tmp/root/etc/group" | cut -d: -f3)
[ "$(echo "$line" | cut -d: -f4)" = "$gid" ] || fail "user vshare not in group vshare"
case $line in *nologin) ;; *) fail "user vshare has a login shell: $line" ;; esac
echo "ok: sysusers.d"

# tmpfiles.d: /run/vshare with owner vshare and mode 0755 (chown needs root).
if [ "$(id -u)" = 0 ]; then
	systemd-tmpfiles --root="$tmp/root" --create "$tmpfiles" ||
		fail "systemd-tmpfiles rejects $tmpfiles"
	st=$(stat -c '%a %u %g' "$tmp/root/run/vshare")
	uid=$(grep '^vshare:' "$tmp/root/etc/passwd" | cut -d: -f3)
	[ "$st" = "755 $uid $gid" ] || fail "/run/vshare is '$st', want '755 $uid $gid'"
	echo "ok: tmpfiles.d"
else
	echo "note: tmpfiles.d not applied (needs root to chown)"
fi
