#!/usr/bin/env bash
# Latency of onnxscope's executor with its own kernels only
# (ONNXSCOPE_NO_DNNL=1), with the oneDNN backend (the default where built
# with it), and ONNX Runtime's on the same model, inputs of the same shapes,
# same thread count, in one run: p50 and min over ITERS timed runs after
# WARMUP. Prints a markdown table (docs/PERFORMANCE.md).
#   bench/dnnl_bench.sh [ITERS] [THREADS...]     (defaults: 20, "1 2")
# Needs build/onnxscope, /usr/bin/python3 with onnx (for the generated
# ResNet-50) and ONNX Runtime under $ORT_NODE_PATH (default
# /tmp/ort/node_modules; its column is '-' without it).
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-20}
shift || true
THREADS=${*:-1 2}
B=build/onnxscope
S=../shared
ORT=${ORT_NODE_PATH:-/tmp/ort/node_modules}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# OpenBLAS tuning variables of the reference machine's environment halve
# library speed there and are not set on a user's machine.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

models=()
/usr/bin/python3 bench/gen_resnet50.py "$TMP/resnet50_folded.onnx" && models+=("$TMP/resnet50_folded.onnx")
[ -f $S/onnx-backend/light/light_resnet50.onnx ] && models+=($S/onnx-backend/light/light_resnet50.onnx)
for d in $S/models/*/; do [ -f "$d/model.onnx" ] && models+=("$d/model.onnx"); done

# The model's inputs as ort_bench.js specs, symbolic dims set like --dim.
specs() {
    local seq=$2
    $B info "$1" | awk -v seq="$seq" '
        /^inputs:/ {on=1; next} /^[a-z]/ {on=0}
        on && NF >= 2 {
            name=$1; t=$2; sub(/\[.*/, "", t); d=$2; sub(/^[^[]*\[/, "", d); sub(/\]$/, "", d)
            gsub(/batch/, "1", d); gsub(/seq/, seq, d); gsub(/,/, "x", d)
            if (t == "float32") print name ":float:" d
            else if (name ~ /mask|type/) print name ":int64:" d ":2"
            else print name ":int64:" d ":100"
        }'
}

ours() {  # model seq threads env -> "min p50"
    local dims=() ins
    ins=$($B info "$1" | sed -n '/^inputs:/,/^[a-z]/p')
    case "$ins" in *batch*) dims+=(--dim batch=1) ;; esac
    case "$ins" in *seq*) dims+=(--dim seq="$2") ;; esac
    env $4 $B bench "$1" "${dims[@]}" --threads "$3" --warmup 3 \
        --iters "$ITERS" --json 2>/dev/null |
        awk -F'[:,]' '/"min"/ {mn=$2} /"p50"/ {p=$2} END {printf "%.2f %.2f\n", mn, p}'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| model | threads | own kernels p50 (min) ms | oneDNN p50 (min) ms | ONNX Runtime p50 (min) ms | own / ORT | oneDNN / ORT | own / oneDNN |"
echo "|---|---|---|---|---|---|---|---|"
for m in "${models[@]}"; do
    seq=128
    case "$m" in *gpt2*) seq=64 ;; esac
    for t in $THREADS; do
        read -r omin op50 < <(ours "$m" $seq $t ONNXSCOPE_NO_DNNL=1)
        read -r dmin dp50 < <(ours "$m" $seq $t ONNXSCOPE_NO_DNNL=0)
        rmin=- rp50=-
        if [ -d "$ORT/onnxruntime-node" ]; then
            read -r rmin rp50 < <(NODE_PATH=$ORT node bench/ort_bench.js "$m" $t 3 "$ITERS" \
                $(specs "$m" $seq) 2>/dev/null || echo "- -")
        fi
        ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b+0 > 0 && a+0 > 0) printf "%.2f", a/b; else printf "-" }'; }
        name=$(basename "$(dirname "$m")")/$(basename "$m")
        case "$m" in "$TMP"/*) name="resnet50_folded (bench/gen_resnet50.py)" ;; esac
        echo "| $name | $t | $op50 ($omin) | $dp50 ($dmin) | $rp50 ($rmin) | $(ratio $op50 $rp50) | $(ratio $dp50 $rp50) | $(ratio $op50 $dp50) |"
    done
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
