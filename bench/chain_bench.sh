#!/usr/bin/env bash
# Long-chain benchmark of `onnxscope optimize` (issue 11): time per node must
# stay flat as the graph grows from 10k to 1M nodes.
#  - Eliminable chains: x -> Relu -> N nodes -> y (tools/gen_samples --chain),
#    optimized at the default level: Identity, no-op Cast, and Mixed
#    (Identity/Dropout/no-op Cast removed, Neg/Abs/Sigmoid kept: three
#    rewriting passes on a long graph). The passes were quadratic: 23 s at
#    100k Identity nodes.
#  - Fusable chains: N nodes of one fusable pattern repeated (tools/gen_samples
#    --fuse-chain: gemm = MatMul+Add+Relu, convbn = Conv+BatchNormalization+Relu,
#    silu = x*Sigmoid(x), hardswish = x*Clip(x+3,0,6)/6), optimized with
#    `--level all --target ort` (every unit becomes one fused node).
# Models are written once into bench/out (not committed). Each line gives
# wall, user and system seconds, peak RSS and the node counts.
#   bench/chain_bench.sh [N ...]      default: 10000 100000 1000000
#   KINDS="gemm silu" bench/chain_bench.sh 100000   only those chains (OPS= works too)
#   ONNXSCOPE=/other/build/onnxscope bench/chain_bench.sh ...   time another binary
#   TIMEOUT=600 (seconds per run; a run past it prints "timeout")
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=${ONNXSCOPE:-$BUILD/onnxscope}
KINDS=${KINDS:-${OPS:-Identity Cast Mixed gemm convbn silu hardswish}}
TIMEOUT=${TIMEOUT:-600}
OUT=bench/out
mkdir -p "$OUT"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
for kind in $KINDS; do
    for n in "${sizes[@]}"; do
        model=$OUT/chain_${kind}_$n.onnx
        case $kind in
        Identity|Cast|Dropout|Mixed)
            gen=(--chain "$kind" "$n"); opts=() ;;
        *)
            gen=(--fuse-chain "$kind" "$n"); opts=(--level all --target ort) ;;
        esac
        [ -f "$model" ] || "$BUILD/tools/gen_samples" "${gen[@]}" "$model" >/dev/null
        if ! timeout "$TIMEOUT" /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" \
            "$BIN" optimize "$model" "${opts[@]}" -o "$OUT/chain.opt.onnx" >"$OUT/opt.txt"; then
            printf "%-9s %8d nodes: timeout after %s s\n" "$kind" "$n" "$TIMEOUT"
            continue
        fi
        read -r wall user sys rss < "$OUT/time.txt"
        nodes=$(sed -n 's/.*: nodes \([0-9]* -> [0-9]*\),.*/\1/p' "$OUT/opt.txt")
        awk -v op="$kind" -v n="$n" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
            -v nodes="$nodes" 'BEGIN{
            printf "%-9s %8d nodes: wall %6.2f s  cpu %6.2f s (%.1f us/node)  peak rss %7.1f MiB  (%s)\n",
                   op, n, w, u + s, (u + s) * 1e6 / n, r / 1024, nodes }'
    done
done
rm -f "$OUT/chain.opt.onnx" "$OUT/time.txt" "$OUT/opt.txt"
