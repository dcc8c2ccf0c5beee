#!/usr/bin/env bash
# Per kernel class, GFLOP/s of our own kernels, OpenBLAS, oneDNN's SGEMM and
# what the executor runs (oneDNN primitives where it takes the node), at each
# thread count, in one run (issue 14 item 1; docs/PERFORMANCE.md "Kernel
# classes"). Builds build/kernel_bench (an optional target: OpenBLAS's
# column needs libopenblas-dev at configure time, oneDNN's libdnnl-dev).
#   bench/kernel_bench.sh [MIN_MS] [THREADS...]     (defaults: 300, "1 2")
# KB_ARGS adds kernel_bench options (e.g. "--cpu-time --only SGEMM").
# OpenBLAS 0.3.21 does not recognise some newer CPUs (this machine's
# reports "Prescott", its SSE3 kernels, about 30 GFLOP/s): where the CPU has
# AVX-512 and OpenBLAS fell back to such a core, OPENBLAS_CORETYPE=SkylakeX
# is set for the run (and said), the kernels a recognised AVX-512 CPU gets.
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
nice ninja -C "$BUILD" bench/kernel_bench >/dev/null
core=$("$BUILD"/bench/kernel_bench --openblas-core 2>/dev/null || echo -)
case "$core" in
Prescott|Core2|Nehalem|Atom|Katmai|Coppermine|Northwood|Banias|Penryn|Dunnington)
    if grep -qw avx512f /proc/cpuinfo; then
        export OPENBLAS_CORETYPE=SkylakeX
        echo "OpenBLAS detected core $core on an AVX-512 CPU: OPENBLAS_CORETYPE=SkylakeX for this run"
    fi ;;
*) echo "OpenBLAS core: $core" ;;
esac
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| kernel class | threads | own GFLOP/s | OpenBLAS | oneDNN dnnl_sgemm | executor (route, p50) | executor, 4-node chain | executor as % of best library |"
echo "|---|---|---|---|---|---|---|---|"
for t in $THREADS; do
    # shellcheck disable=SC2086
    "$BUILD"/bench/kernel_bench --threads "$t" --min-ms "$MIN_MS" ${KB_ARGS:-}
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
