#!/usr/bin/env bash
# Our pooling and channel-Concat loops against oneDNN's pooling and concat
# primitives on SqueezeNet 1.1's shapes, 1 thread (bench/pool_bench.c).
#   bench/pool_bench.sh [ITERS]     (default 200; needs libdnnl-dev)
# The table goes to stdout with the load average; docs/PERFORMANCE.md
# ("SqueezeNet: pooling, Concat and channels-last") records a run.
set -euo pipefail
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -std=gnu11 -O2 -Wall -Wextra -fopenmp -Isrc -Iinclude -o "$TMP/pool_bench" \
    bench/pool_bench.c src/exec/k_nn/pool_fast.c -ldnnl
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$TMP/pool_bench" "${1:-200}"
