#!/usr/bin/env bash
# CPU time per run (perf stat's task-clock over ITERS timed runs, minus a
# 1-run baseline that pays the load, planning and warm-up), A/B between
# two environment settings, interleaved, ROUNDS rounds: a measure that a
# loaded machine distorts far less than wall time. With THREADS > 1 the
# OpenMP team sleeps instead of spinning (OMP_WAIT_POLICY=passive), so
# the figure is the work of both threads, not their waiting.
#   bench/cpu_ab.sh MODEL THREADS "ENV_A" "ENV_B" [ITERS] [ROUNDS]
# e.g. bench/cpu_ab.sh m.onnx 2 "ONNXSCOPE_NO_LAZY_CONCAT=1" "" 200 3
set -euo pipefail
cd "$(dirname "$0")/.."
M=$1 T=$2 A=$3 B=$4 ITERS=${5:-200} ROUNDS=${6:-3}
BIN=${ONNXSCOPE_BIN:-build/onnxscope}
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export ONNXSCOPE_THREADS_LOAD_CAP=0
[ "$T" -gt 1 ] && export OMP_WAIT_POLICY=passive
cpu_ms() {   # env, iters -> task-clock ms
    env $1 perf stat -x, -e task-clock "$BIN" bench "$M" --dim batch=1 --threads "$T" \
        --warmup 3 --iters "$2" --no-profile 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'
}
echo "model $M, $T thread(s), $ITERS runs, load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
    for side in A B; do
        e=$A; [ $side = B ] && e=$B
        base=$(cpu_ms "$e" 1); full=$(cpu_ms "$e" "$ITERS")
        awk -v s=$side -v e="$e" -v b="$base" -v f="$full" -v n="$ITERS" \
            'BEGIN {printf "round %d %s [%s]: %.3f ms CPU per run\n", '"$r"', s, e, (f - b) / (n - 1)}'
    done
done
echo "load at the end $(cut -d' ' -f1 /proc/loadavg)"
