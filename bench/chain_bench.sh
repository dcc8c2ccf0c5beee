#!/usr/bin/env bash
# Long-chain benchmark of `onnxscope optimize` (issue 11): x -> Relu -> N
# eliminable nodes -> y (tools/gen_samples --chain, not committed) for N =
# 10k, 100k and 1M, Identity, no-op Cast and Mixed (Identity/Dropout/no-op Cast
# removed, Neg/Abs/Sigmoid kept: three rewriting passes on a long graph). Each line gives wall, user and
# system seconds, peak RSS and the node counts; the time per node should stay
# flat as N grows (the passes were quadratic: 23 s at 100k Identity nodes).
#   bench/chain_bench.sh [N ...]      default: 10000 100000 1000000
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=bench/out
mkdir -p "$OUT"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
for op in ${OPS:-Identity Cast Mixed}; do
    for n in "${sizes[@]}"; do
        model=$OUT/chain_${op}_$n.onnx
        [ -f "$model" ] || "$BUILD/tools/gen_samples" --chain "$op" "$n" "$model" >/dev/null
        /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" \
            "$BUILD/onnxscope" optimize "$model" -o "$OUT/chain.opt.onnx" >"$OUT/opt.txt"
        read -r wall user sys rss < "$OUT/time.txt"
        nodes=$(sed -n 's/.*: nodes \([0-9]* -> [0-9]*\),.*/\1/p' "$OUT/opt.txt")
        awk -v op="$op" -v n="$n" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
            -v nodes="$nodes" 'BEGIN{
            printf "%-8s %8d nodes: wall %6.2f s  cpu %6.2f s (%.1f us/node)  peak rss %7.1f MiB  (%s)\n",
                   op, n, w, u + s, (u + s) * 1e6 / n, r / 1024, nodes }'
    done
done
rm -f "$OUT/chain.opt.onnx" "$OUT/time.txt" "$OUT/opt.txt"
