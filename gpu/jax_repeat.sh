#!/usr/bin/env bash
# Run gpu/jax_check.py many times and count its digests: for results that
# differ from plain only now and then. Each run's JSON line and stderr
# (the shim's log) stay in OUT/NAME/.
#
#   jax_repeat.sh OUT NAME RUNS PARALLEL LIB [VAR=VALUE ...]
#
# LIB is the libvshare.so to preload, or "plain" for none. Every run has
# XLA_PYTHON_CLIENT_PREALLOCATE=false, XLA_PYTHON_CLIENT_ALLOCATOR=
# cuda_async and VSHARE_MEM_LIMIT=2G (managed memory well under half of
# the GPU's, whatever PARALLEL), then the VAR=VALUE given, where {run}
# stands for the run's own path prefix (OUT/NAME/N), for example
# XLA_FLAGS=--xla_gpu_dump_autotune_results_to={run}.autotune.txt to
# compare what XLA's autotuner chose in the runs that differ. PYTHON
# names the interpreter (python3).
set -u
[ $# -ge 5 ] || { sed -n 2,16p "$0"; exit 2; }
out=$1 name=$2 runs=$3 par=$4 lib=$5
shift 5
py=${PYTHON:-python3}
check=$(cd "$(dirname "$0")" && pwd)/jax_check.py
dir=$out/$name
mkdir -p "$dir"
pre=()
[ "$lib" = plain ] || pre=(LD_PRELOAD="$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")")

one() {
	local vars=() v

	for v in "$@"; do vars+=("${v//\{run\}/$dir/$i}"); done
	env XLA_PYTHON_CLIENT_PREALLOCATE=false \
		XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async VSHARE_MEM_LIMIT=2G \
		"${pre[@]}" "${vars[@]}" "$py" "$check" \
		>"$dir/$i.json" 2>"$dir/$i.err"
}

t0=$(date +%s)
for ((i = 0; i < runs; i++)); do
	one "$@" &
	if (((i + 1) % par == 0)); then wait; fi
done
wait
printf '%s: %d runs in %d s:' "$name" "$runs" $(($(date +%s) - t0))
for ((i = 0; i < runs; i++)); do
	"$py" -c 'import json,sys
try:
    d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    print(d.get("digest", "none"), "%.2f" % d.get("seconds", 0))
except Exception:
    print("failed", 0)' "$dir/$i.json"
done | awk '{n[$1]++; t[$1] += $2} END {for (d in n) printf " %s x%d (%.2f s)", d, n[d], t[d] / n[d]; print ""}'
