#!/bin/sh
# mkrootfs.sh OUT.tar: a minimal Debian 12 (bookworm) root file system as a
# tar archive, made with debootstrap, for tests that run containers or
# install packages into a clean system. The archive is kept: a second call
# with the same OUT returns at once (debootstrap takes minutes).
# Environment: VSHARE_DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Exit status: 0 made or present, 77 when debootstrap is missing or we are
# not root (ctest SKIP_RETURN_CODE), 1 on failure.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUT.tar" >&2; exit 2; }
out=$1
[ -s "$out" ] && exit 0
command -v debootstrap >/dev/null 2>&1 ||
	{ echo "mkrootfs: debootstrap not installed (apt-get install debootstrap)" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "mkrootfs: debootstrap needs root" >&2; exit 77; }
mirror=${VSHARE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
dir=$(mktemp -d "${TMPDIR:-/tmp}/vshare-rootfs.XXXXXX")
# Remove the tree (and a partial archive) whatever happens; debootstrap
# leaves proc and sys mounted only when it fails half way.
cleanup() {
	for m in "$dir/proc" "$dir/sys"; do
		mountpoint -q "$m" 2>/dev/null && umount -l "$m"
	done
	rm -rf "$dir" "$out.part"
}
trap cleanup EXIT INT TERM
debootstrap --variant=minbase bookworm "$dir/root" "$mirror" >"$dir/log" 2>&1 || {
	tail -20 "$dir/log" >&2
	echo "mkrootfs: debootstrap failed (mirror $mirror)" >&2
	exit 1
}
# Nothing of apt's caches is needed inside; a smaller archive imports faster.
rm -rf "$dir/root/var/cache/apt/archives/"*.deb "$dir/root/var/lib/apt/lists/"*
tar -C "$dir/root" -cf "$out.part" .
mv "$out.part" "$out"
