#!/bin/bash
# Two GPUs: one queue each. Mode on: processes on different GPUs run at the
# same time; two processes on one GPU take turns.
# Usage: gpu/multigpu.sh [BUILD_DIR]   (default .dev/build from scripts/gpu-check --pack)
# Needs two GPUs; every process is capped at VSHARE_MEM_LIMIT=1G.
B=${1:-$PWD/.dev/build}; SOCK=/tmp/vs-mg.sock
pkill -f "vshare-scheduler --socket $SOCK"; sleep 0.3; rm -f $SOCK
nvidia-smi -L
echo '{"mode": "on", "tq_s": 1, "capacity": "8G"}' > /tmp/mg.json
LD_LIBRARY_PATH=$B/lib/deps setsid $B/bin/vshare-scheduler --socket $SOCK --config /tmp/mg.json --log-level info > /dev/null 2> /tmp/mg.log < /dev/null &
SP=$!
sleep 0.5
run() { env LD_PRELOAD=$B/lib/libvshare.so VSHARE_SOCKET=$SOCK VSHARE_MEM_LIMIT=1G VSHARE_LABEL=$1 $B/bin/vs-compute --device $2 --seconds 3 --kernel-ms 20 --mem 64M --quiet; }
t0=$(date +%s%N); run a0 0 & pa=$!; run b1 1 & pb=$!; sleep 1.5; LD_LIBRARY_PATH=$B/lib/deps $B/bin/vsharectl -s $SOCK status; wait $pa $pb; t1=$(date +%s%N)
echo "GPU 0 and GPU 1, one process each: wall $(( (t1 - t0) / 1000000 )) ms (3 s of work each)"
t0=$(date +%s%N); run c1 1 & pa=$!; run d1 1 & pb=$!; wait $pa $pb; t1=$(date +%s%N)
echo "two processes on GPU 1: wall $(( (t1 - t0) / 1000000 )) ms (3 s of work each)"
LD_LIBRARY_PATH=$B/lib/deps $B/bin/vsharectl -s $SOCK --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print("GPUs known:", [(g["uuid"], g["mode"]) for g in d["gpus"]])'
kill $SP; grep -c grant /tmp/mg.log
