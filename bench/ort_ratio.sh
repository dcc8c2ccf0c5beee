#!/usr/bin/env bash
# Our latency against ONNX Runtime's, interleaved on a shared machine:
# per model and thread count, ROUNDS rounds of [ours as is, ours after
# `optimize --level all --target ort`, ONNX Runtime], each one
# `--warmup 3 --iters ITERS` (p50 of its runs); the table gives the median
# of the rounds' p50s and the ratios of those medians, the spread of ONNX
# Runtime's own round p50s (lowest-highest: how noisy the machine was for
# both), the 1-minute load average at the start of the row (the machine is
# shared: only ratios measured in the same run mean anything), and whether
# our load guard (EXECUTOR.md, "Threads") ran some of our runs on fewer
# threads than asked.
# Issue 14's acceptance table. ONNXSCOPE_THREADS_LOAD_CAP=0 in the
# environment measures without the guard.
#   bench/ort_ratio.sh [ITERS] [ROUNDS] [THREADS...]    (defaults 20 5 "1 2")
#   MODELS="a.onnx b.onnx" bench/ort_ratio.sh ...       (default: the list below)
# Needs build/onnxscope (or $ONNXSCOPE_BIN), /usr/bin/python3 with onnx for
# the generated ResNet-50, and onnxruntime-node under $ORT_NODE_PATH
# (default /tmp/ort/node_modules). ONNX Runtime: default optimization level,
# intraOpNumThreads = threads, sequential (bench/ort_bench.js).
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-20}
ROUNDS=${2:-5}
shift 2 || shift $# || true
THREADS=${*:-1 2}
B=${ONNXSCOPE_BIN:-build/onnxscope}
S=../shared
ORT=${ORT_NODE_PATH:-/tmp/ort/node_modules}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# This machine's environment sets OpenBLAS tuning variables a user's does not.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

if [ -n "${MODELS:-}" ]; then
    read -r -a models <<< "$MODELS"
else
    models=()
    /usr/bin/python3 bench/gen_resnet50.py "$TMP/resnet50_folded.onnx" && models+=("$TMP/resnet50_folded.onnx")
    [ -f $S/onnx-backend/light/light_resnet50.onnx ] && models+=($S/onnx-backend/light/light_resnet50.onnx)
    for d in $S/models/*/; do [ -f "$d/model.onnx" ] && models+=("$d/model.onnx"); done
    for f in samples/*.onnx; do [ -f "$f" ] && models+=("$f"); done
fi

specs() {  # model seq -> ort_bench.js input specs, symbolic dims set like --dim
    $B info "$1" | awk -v seq="$2" '
        /^inputs:/ {on=1; next} /^[a-z]/ {on=0}
        on && NF >= 2 {
            name=$1; t=$2; sub(/\[.*/, "", t); d=$2; sub(/^[^[]*\[/, "", d); sub(/\]$/, "", d)
            gsub(/batch/, "1", d); gsub(/seq[a-z_]*/, seq, d); gsub(/,/, "x", d)
            if (t == "float32") print name ":float:" d
            else if (name ~ /mask|type/) print name ":int64:" d ":2"
            else print name ":int64:" d ":100"
        }'
}
dims() {  # model seq -> --dim flags for its symbolic dims (batch*: 1, seq*: seq)
    $B info "$1" | sed -n '/^inputs:/,/^[a-z]/p' | grep -o '[A-Za-z_][A-Za-z0-9_]*' | sort -u |
        awk -v seq="$2" '/^batch/ {print "--dim " $0 "=1"} /^seq/ {print "--dim " $0 "=" seq}'
}
ours() {  # model seq threads -> p50; notes in $TMP/capped when the load guard capped a team
    $B bench "$1" $(dims "$1" "$2") --threads "$3" --warmup 3 --iters "$ITERS" --no-profile \
        --json 2>/dev/null | awk -F'[:,]' -v cap="$TMP/capped" '
            /"p50"/ {p=$2} /"capped_sections"/ {c=$2+0} /"min_team"/ {m=$2+0}
            END {printf "%.3f\n", p; if (c > 0) print m > cap}'
}
. bench/lib.sh

echo "| model | threads | ours as is p50 ms | ours optimized p50 ms | ORT p50 ms | as is / ORT | optimized / ORT | ORT rounds | load | our load guard |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for m in "${models[@]}"; do
    seq=128
    case "$m" in *gpt2*) seq=64 ;; *tiny_transformer*) seq=16 ;; esac
    opt="$TMP/$(basename "$(dirname "$m")")_$(basename "$m" .onnx).opt.onnx"
    $B optimize "$m" $(dims "$m" $seq) --level all --target ort -o "$opt" > /dev/null 2>&1 || opt=
    sp=$(specs "$m" $seq)
    for t in $THREADS; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        rm -f "$TMP/capped"
        a=() o=() r=()
        for _ in $(seq "$ROUNDS"); do
            a+=("$(ours "$m" $seq $t)")
            [ -n "$opt" ] && o+=("$(ours "$opt" $seq $t)")
            [ -d "$ORT/onnxruntime-node" ] &&
                r+=("$(NODE_PATH=$ORT node bench/ort_bench.js "$m" $t 3 "$ITERS" $sp 2>/dev/null | awk '{print $2}')")
        done
        ma=$(echo "${a[*]}" | median); mo=$(echo "${o[*]:-}" | median); mr=$(echo "${r[*]:-}" | median)
        name=$(basename "$(dirname "$m")")/$(basename "$m")
        case "$m" in "$TMP"/*) name="resnet50_folded (bench/gen_resnet50.py)" ;; esac
        guard=-
        [ -f "$TMP/capped" ] && guard="capped to $(sort -n "$TMP/capped" | head -1)"
        spread=$(echo "${r[*]:-}" | tr ' ' '\n' | grep -v '^$' | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {print (NR ? lo "-" hi : "-")}')
        echo "| $name | $t | $ma | $mo | $mr | $(ratio "$ma" "$mr") | $(ratio "$mo" "$mr") | $spread | $load | $guard |"
    done
done
