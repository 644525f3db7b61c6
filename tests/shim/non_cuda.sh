#!/bin/sh
# A program that never touches CUDA behaves the same under the preload:
# same output, same exit code, nothing logged.
# Usage: non_cuda.sh libvshare.so [san-preload]
set -u
lib=$1 san=${2:-}
pre=$lib
[ -n "$san" ] && pre="$san:$lib"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

check() { # name cmd...
	name=$1; shift
	"$@" >"$tmp/out.plain" 2>"$tmp/err.plain"; rc_plain=$?
	LD_PRELOAD="$pre" VSHARE_LOG_LEVEL=debug "$@" >"$tmp/out.pre" 2>"$tmp/err.pre"
	rc_pre=$?
	if [ $rc_plain -ne $rc_pre ]; then
		echo "$name: exit code $rc_plain plain, $rc_pre preloaded"; fail=1
	fi
	if ! cmp -s "$tmp/out.plain" "$tmp/out.pre"; then
		echo "$name: output differs"; diff "$tmp/out.plain" "$tmp/out.pre"; fail=1
	fi
	if ! cmp -s "$tmp/err.plain" "$tmp/err.pre"; then
		echo "$name: stderr differs"; diff "$tmp/err.plain" "$tmp/err.pre"; fail=1
	fi
	echo "$name: exit $rc_pre"
}

check true /bin/true
check false /bin/false
check sh sh -c 'echo hello; echo to-stderr >&2; exit 3'
check ls ls /
if command -v python3 >/dev/null; then
	# python3 resolves many symbols with dlsym while importing modules.
	check python3 python3 -c 'import ctypes, json, ssl, sqlite3; print(json.dumps([1, 2]))'
	check python3-dlsym python3 -c 'import ctypes; print(ctypes.CDLL(None).getpid() > 0)'
fi
exit $fail
