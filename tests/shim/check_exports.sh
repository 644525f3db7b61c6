#!/bin/sh
# The shim exports exactly the allow-list: dlsym and the hooked driver
# entry points. Anything else would interpose on the host program.
# Usage: check_exports.sh libvshare.so exports.txt
set -eu
lib=$1 list=$2
actual=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | LC_ALL=C sort -u)
expected=$(grep -v '^#' "$list" | grep -v '^$' | LC_ALL=C sort -u)
if [ "$actual" != "$expected" ]; then
	echo "exported symbols differ from $list (< exported, > allowed):"
	printf '%s\n' "$actual" > "${TMPDIR:-/tmp}/vshare-exports.$$"
	printf '%s\n' "$expected" | diff "${TMPDIR:-/tmp}/vshare-exports.$$" - || true
	rm -f "${TMPDIR:-/tmp}/vshare-exports.$$"
	exit 1
fi
echo "exports match ($(printf '%s\n' "$actual" | wc -l) symbols)"
