#!/bin/sh
# Converts every model of ../shared/models with `optimize --passes to_fp16`
# and runs the results in ONNX Runtime (onnxruntime-node, a measuring peer:
# never a test dependency) on the stored inputs, comparing with the stored
# float32 outputs (tools/fp16_ort.js); also prints our own --check figures
# and the size ratio. docs/PASSES.md "to_fp16" quotes its output.
# usage: tools/fp16_ort.sh ONNXSCOPE SHARED_MODELS_DIR ORT_NODE_MODULES [OUT_DIR]
set -u
bin=$1 src=$2 mods=$3 out=${4:-/tmp/onnxscope_fp16_ort}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for d in "$src"/*/; do
    n=$(basename "$d")
    [ -f "$d/model.onnx" ] || continue
    o="$out/$n.fp16.onnx"
    "$bin" optimize "$d/model.onnx" -o "$o" --passes to_fp16 >/dev/null || { echo "$n: optimize failed"; continue; }
    a=$(stat -c %s "$d/model.onnx") b=$(stat -c %s "$o")
    echo "$n: size $b / $a = $(awk "BEGIN{printf \"%.1f\", 100*$b/$a}") %"
    for s in 0 1; do
        NODE_PATH="$mods" node "$here/fp16_ort.js" "$d" "$o" $s
        NODE_PATH="$mods" node "$here/fp16_ort.js" "$d" "$d/model.onnx" $s
    done
done
