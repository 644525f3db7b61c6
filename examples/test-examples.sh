#!/bin/sh
# The examples on the CUDA test driver: exit codes, output, and what the
# execution log shows of them. Usage: test-examples.sh BINDIR EXECLOG_PY
set -u
bin=$1
execlog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

check() { # description, command...
	desc=$1; shift
	if "$@"; then echo "ok: $desc"; else echo "FAIL: $desc"; fail=1; fi
}

expect_rc() { # expected-rc command...
	want=$1; shift
	"$@" >"$tmp/out" 2>&1
	rc=$?
	[ "$rc" -eq "$want" ] || { echo "  rc $rc, wanted $want:"; cat "$tmp/out"; return 1; }
}

check "unknown option exits 2" expect_rc 2 "$bin/vs-vecadd" --bogus
check "bad size exits 2" expect_rc 2 "$bin/vs-compute" --mem 12X
check "missing device exits 2" expect_rc 2 "$bin/vs-bursty" --device 7
check "no visible device: CUDA error exits 2" \
	expect_rc 2 env CUDA_VISIBLE_DEVICES= "$bin/vs-vecadd"
check "the error is named" grep -q "CUDA_ERROR_NO_DEVICE" "$tmp/out"

# vs-compute: iterations, timestamps, the log's kernel lines.
log=$tmp/exec.log
check "vs-compute runs 5 iterations" expect_rc 0 env VSHARE_TD_LOG="$log" \
	"$bin/vs-compute" --iters 5 --kernel-ms 5 --mem 1M --ts-out "$tmp/ts"
check "vs-compute says PASS" grep -q "done: 5 iterations.*PASS" "$tmp/out"
check "vs-compute wrote 5 timestamps" test "$(wc -l <"$tmp/ts")" -eq 5
check "5 vs_sleep_ts kernels logged" \
	test "$(grep -c ' kernel vs_sleep_ts ' "$log")" -eq 5
check "timestamps span >= 5 ms each" awk '$2 - $1 < 5000000 { exit 1 }' "$tmp/ts"

# vs-bursty with each launch API.
for api in kernel ex graph; do
	check "vs-bursty --api $api" expect_rc 0 "$bin/vs-bursty" --bursts 2 \
		--kernels 3 --kernel-us 2000 --gap-ms 20 --api $api
	check "vs-bursty --api $api prints latencies" \
		grep -q "latency ms: min" "$tmp/out"
done

# Two processes at once overlap on the test driver (nothing serializes
# them without vshare); the log and execlog.py show it.
rm -f "$log"
VSHARE_TD_LOG="$log" "$bin/vs-compute" --iters 4 --kernel-ms 40 --mem 64K \
	--quiet >/dev/null & a=$!
VSHARE_TD_LOG="$log" "$bin/vs-compute" --iters 4 --kernel-ms 40 --mem 64K \
	--quiet >/dev/null & b=$!
wait $a; ra=$?
wait $b; rb=$?
check "both concurrent runs pass" test "$ra" -eq 0 -a "$rb" -eq 0
check "their kernels overlap" python3 "$execlog" overlaps "$log" --pids $a $b
exit $fail
