#!/usr/bin/env bash
# Per kernel class, GFLOP/s of our own kernels, OpenBLAS, oneDNN's SGEMM and
# what the executor runs (oneDNN primitives where it takes the node), at each
# thread count, in one run (issue 14 item 1; docs/PERFORMANCE.md "Kernel
# classes"). Builds build/kernel_bench (an optional target: OpenBLAS's
# column needs libopenblas-dev at configure time, oneDNN's libdnnl-dev).
#   bench/kernel_bench.sh [MIN_MS] [THREADS...]     (defaults: 300, "1 2")
# The load guard is off (ONNXSCOPE_THREADS_LOAD_CAP=0) so that every route
# gets exactly the threads asked for; on a loaded machine read the ratios
# within a row, not the absolute figures.
set -euo pipefail
cd "$(dirname "$0")/.."
MIN_MS=${1:-300}
shift || true
THREADS=${*:-1 2}
BUILD=${BUILD:-build}
# OpenBLAS tuning variables of the reference machine's environment halve
# its speed there and are not set on a user's machine.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export ONNXSCOPE_THREADS_LOAD_CAP=0
nice ninja -C "$BUILD" kernel_bench >/dev/null
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| kernel class | threads | own GFLOP/s | OpenBLAS | oneDNN dnnl_sgemm | executor (route, p50) | executor, 4-node chain | executor as % of best library |"
echo "|---|---|---|---|---|---|---|---|"
for t in $THREADS; do
    "$BUILD"/bench/kernel_bench --threads "$t" --min-ms "$MIN_MS"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
