#!/usr/bin/env bash
# Elementwise groups (docs/EXECUTOR.md "Elementwise groups in one pass"):
# three chains as exporters write them (bench/gen_ew_chains.py: GPT-2's tanh
# GELU, bias + Relu + scale + residual, a LayerNorm tail), our p50 and peak
# RSS with groups and with ONNXSCOPE_NO_EW_FUSE=1, and ONNX Runtime's p50,
# interleaved for ROUNDS rounds (median of the rounds' p50s). Only ratios
# measured in the same run mean anything on a shared machine.
#   bench/ew_fuse_bench.sh [ITERS] [ROUNDS] [THREADS...]   (defaults 50 5 "1 2")
#   SHAPES="512x3072 128x768" bench/ew_fuse_bench.sh
# Needs build/onnxscope (or $ONNXSCOPE_BIN), /usr/bin/python3 with onnx, and
# onnxruntime-node under $ORT_NODE_PATH (default /tmp/ort/node_modules;
# the ORT column is "-" without it).
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-50}
ROUNDS=${2:-5}
shift 2 || shift $# || true
THREADS=${*:-1 2}
B=${ONNXSCOPE_BIN:-build/onnxscope}
SHAPES=${SHAPES:-512x3072 128x768}
ORT=${ORT_NODE_PATH:-/tmp/ort/node_modules}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

ours() { local m=$1 t=$2; shift 2; ox_p50_rss "$ITERS" "$B" "$m" "$t" "$@"; }
theirs() {  # model threads specs... -> p50
    local m=$1 t=$2; shift 2
    [ -d "$ORT" ] || { echo -; return; }
    NODE_PATH=$ORT node bench/ort_bench.js "$m" "$t" 5 "$ITERS" "$@" | awk '{print $2}'
}
. bench/lib.sh

echo "| chain | shape | threads | grouped p50 ms | RSS MiB | node by node p50 ms | RSS MiB | ORT p50 ms | grouped / node by node | grouped / ORT |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for kind in gelu_tanh bias_chain ln_tail; do
    for s in $SHAPES; do
        r=${s%x*} c=${s#*x}
        m="$TMP/${kind}_$s.onnx"
        /usr/bin/python3 bench/gen_ew_chains.py "$kind" "$r" "$c" "$m"
        sp=("x:float:${r}x${c}")
        [ "$kind" = bias_chain ] && sp+=("r:float:${r}x${c}")
        for t in $THREADS; do
            a=() ar=() o=() orr=() q=()
            for _ in $(seq "$ROUNDS"); do
                read -r p rss < <(ours "$m" "$t"); a+=("$p"); ar+=("$rss")
                read -r p rss < <(ours "$m" "$t" ONNXSCOPE_NO_EW_FUSE=1); o+=("$p"); orr+=("$rss")
                q+=("$(theirs "$m" "$t" "${sp[@]}" || echo -)")
            done
            ma=$(echo "${a[*]}" | median) mo=$(echo "${o[*]}" | median) mq=$(echo "${q[*]}" | median)
            echo "| $kind | $s | $t | $ma | $(echo "${ar[*]}" | median) | $mo | $(echo "${orr[*]}" | median) | $mq | $(ratio "$ma" "$mo") | $(ratio "$ma" "$mq") |"
        done
    done
done
