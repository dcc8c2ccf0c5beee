#!/usr/bin/env bash
# One attention node at growing sequence lengths (bench/gen_attention.py:
# ONNX Attention-23 causal and with a boolean [S, S] mask, 8 heads of 64;
# com.microsoft Attention with its QKV projection and a 0/1 mask_index):
# our p50 and peak RSS, optionally a second build's (OLD_BIN, e.g. main
# before a change), and ONNX Runtime's p50 in the same run, interleaved for
# ROUNDS rounds (median of the rounds' p50s). The machine is shared: only
# ratios measured in the same run mean anything.
#   bench/attention_bench.sh [ITERS] [ROUNDS] [THREADS...]   (defaults 10 3 "1 2")
#   OLD_BIN=/path/to/old/onnxscope SEQS="128 512 2048" bench/attention_bench.sh
# Needs build/onnxscope (or $ONNXSCOPE_BIN), /usr/bin/python3 with onnx, and
# onnxruntime-node under $ORT_NODE_PATH (default /tmp/ort/node_modules).
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-10}
ROUNDS=${2:-3}
shift 2 || shift $# || true
THREADS=${*:-1 2}
B=${ONNXSCOPE_BIN:-build/onnxscope}
OLD=${OLD_BIN:-}
SEQS=${SEQS:-128 512 2048}
ORT=${ORT_NODE_PATH:-/tmp/ort/node_modules}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

ours() { ox_p50_rss "$ITERS" "$1" "$2" "$3"; }  # binary model threads
theirs() {  # model threads specs... -> p50
    local m=$1 t=$2; shift 2
    NODE_PATH=$ORT node bench/ort_bench.js "$m" "$t" 2 "$ITERS" "$@" | awk '{print $2}'
}
. bench/lib.sh

echo "| model | S | threads | ours p50 ms | ours peak RSS MiB | old p50 ms | old peak RSS MiB | ORT p50 ms | ours / ORT | old / ORT |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for kind in causal boolmask ms; do
    for s in $SEQS; do
        m="$TMP/${kind}_$s.onnx"
        /usr/bin/python3 bench/gen_attention.py "$kind" "$s" 8 "$m"
        case $kind in
            ms) sp=("x:float:1x${s}x512" "mask:int32:1x${s}:2") ;;
            boolmask) sp=("q:float:1x8x${s}x64" "k:float:1x8x${s}x64" "v:float:1x8x${s}x64" "mask:bool:${s}x${s}") ;;
            *) sp=("q:float:1x8x${s}x64" "k:float:1x8x${s}x64" "v:float:1x8x${s}x64") ;;
        esac
        for t in $THREADS; do
            a=() ar=() o=() orr=() r=()
            for _ in $(seq "$ROUNDS"); do
                read -r p rss < <(ours "$B" "$m" "$t"); a+=("$p"); ar+=("$rss")
                if [ -n "$OLD" ]; then read -r p rss < <(ours "$OLD" "$m" "$t"); o+=("$p"); orr+=("$rss"); fi
                r+=("$(theirs "$m" "$t" "${sp[@]}" || echo -)")
            done
            ma=$(echo "${a[*]}" | median) mr=$(echo "${r[*]}" | median)
            mo=$(echo "${o[*]:-}" | median)
            echo "| $kind | $s | $t | $ma | $(echo "${ar[*]}" | median) | $mo | $(echo "${orr[*]:-}" | median) | $mr | $(ratio "$ma" "$mr") | $(ratio "$mo" "$mr") |"
        done
    done
done
