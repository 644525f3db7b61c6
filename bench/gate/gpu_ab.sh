#!/usr/bin/env bash
# Before/after comparison of two vshare builds on a GPU machine: empty-kernel
# launch cost (plain, each build, the newer one with VSHARE_DISABLE=1, in
# alternation on one CPU, no scheduler so the gate runs open) and the GPU
# suite's lock and launch checks for each build.
#   bench/gate/gpu_ab.sh OUT BEFORE_BUILD AFTER_BUILD GPU_BIN [LAUNCH_COST] [REPS]
# The builds are packed trees (scripts/gpu-check --pack: build/, gpubin/).
# With ACQ=DIR (bench_acquire_old, bench_acquire_new: build/bin/bench_acquire
# of each tree, and acquire.py): also the acquisition through gate, client
# and scheduler alone, without CUDA.
set -u
out=$1 before=$2 after=$3 gpubin=$4 ctxcost=${5:-} reps=${6:-7}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
suite=${SUITE:-$here/.dev/scripts/gpu-check}
cpu=$(( $(nproc) - 1 ))
mkdir -p "$out"
log=$out/launch.txt
: >"$log"
export VSG_FATBIN=$gpubin/vsg_kernels.fatbin
run_launch() { # kind
	local pre="" extra=()
	case $1 in
	plain) ;;
	before) pre=$before/lib/libvshare.so ;;
	after) pre=$after/lib/libvshare.so ;;
	after-off) pre=$after/lib/libvshare.so; extra=(VSHARE_DISABLE=1) ;;
	esac
	local j
	j=$(env ${pre:+LD_PRELOAD=$pre} VSHARE_SOCKET=/nonexistent/vshare.sock \
		VSHARE_LOG_LEVEL=error "${extra[@]}" taskset -c "$cpu" \
		"$gpubin/launch_bench" 2>/dev/null | tail -1)
	echo "$1 $j" >>"$log"
}
for r in $(seq "$reps"); do
	for k in plain before after after-off; do run_launch "$k"; done
done
# The hook and gate alone: launch_cost (bench/gate/launch_cost.c, built
# against the driver) under each build.
if [ -n "$ctxcost" ]; then
	for r in 1 2 3; do
		for k in plain before after; do
			pre=""
			[ $k = before ] && pre=$before/lib/libvshare.so
			[ $k = after ] && pre=$after/lib/libvshare.so
			echo "launch_cost $k $(env ${pre:+LD_PRELOAD=$pre} \
				VSHARE_SOCKET=/nonexistent/vshare.sock VSHARE_LOG_LEVEL=error \
				taskset -c "$cpu" "$ctxcost" 2>&1)" >>"$log"
		done
	done
fi
python3 - "$log" <<'PY' >>"$log"
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    k, _, j = line.partition(" ")
    if j.startswith("{") and "ns_per_launch_p50" in j:
        runs.setdefault(k, []).append(json.loads(j)["ns_per_launch_p50"])
base = statistics.median(runs.get("plain", [0]))
for k, v in runs.items():
    m = statistics.median(v)
    print("summary %-10s median p50 %7.1f ns (%+6.1f vs plain) over %d: %s" % (
        k, m, m - base, len(v), " ".join("%.0f" % x for x in v)))
PY
if [ -n "${ACQ:-}" ]; then
	for r in 1 2 3; do
		for b in old new new-nospin; do
			bin=$ACQ/bench_acquire_${b%-nospin}
			echo -n "acquire $b " >>"$log"
			sp=(); [ $b = new-nospin ] && sp=(VSHARE_SPIN_US=0)
			env "${sp[@]}" LD_LIBRARY_PATH=$after/lib/deps python3 "$ACQ/acquire.py" \
				"$after/bin/vshare-scheduler" "$bin" 30 1 >>"$log" 2>&1
		done
	done
	# Where the time goes (an instrumented copy of the new code, if any).
	[ -x "$ACQ/ba_inst" ] && LD_LIBRARY_PATH=$after/lib/deps python3 \
		"$ACQ/acquire.py" "$after/bin/vshare-scheduler" "$ACQ/ba_inst" 15 1 \
		>>"$log" 2>&1
fi
for b in before after after-nospin; do
	dir=$before; [ $b != before ] && dir=$after
	sp=(); [ $b = after-nospin ] && sp=(VSHARE_SPIN_US=0)
	env "${sp[@]}" bash "$suite" --out "$out/$b" --build-dir "$dir" --gpu-bin "$gpubin" \
		--only lock,launch >"$out/$b.console" 2>&1
	rm -f "$out/$b/results.json" "$out/$b.console"
done
