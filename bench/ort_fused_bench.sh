#!/bin/sh
# ONNX Runtime (a measuring peer, never a build or test dependency) running
# our `optimize --level all --target ort` output against the original, both
# at ONNX Runtime's default level (all), on the transformer models of
# ../shared/models with test_data_set_0 inputs: interleaved in one process,
# one intra-op thread, ROUNDS rounds of RUNS runs each (bench/ort_versus.js).
# Also times `--level extended` (--target onnx) output, and both without
# residual_sum (`--skip residual_sum`: ONNX Runtime then turns the residual
# Add + LayerNormalization pairs into its SkipLayerNormalization), to show
# what that pass changes.
# Usage (from the repository root, after building):
#   bench/ort_fused_bench.sh [ROUNDS] [RUNS]     (default 7 rounds of 40 runs)
set -eu
ROUNDS=${1:-7}
RUNS=${2:-40}
BIN=${ONNXSCOPE_BIN:-build/onnxscope}
SHARED=${SHARED:-../shared/models}
ORT=${ORT_NODE_PATH:-/tmp/ort/node_modules}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -d "$SHARED" ] || { echo "skip: $SHARED absent"; exit 0; }
[ -d "$ORT/onnxruntime-node" ] || { echo "skip: $ORT/onnxruntime-node absent"; exit 0; }
for m in bert_l2_h128_nofold_op13 torch_transformer_encoder_l4_h256_op17 gpt2_like_l2_h128_nofold_op13; do
  d=$SHARED/$m
  "$BIN" optimize "$d/model.onnx" -o "$TMP/$m.ours.onnx" --level all --target ort >/dev/null 2>&1
  "$BIN" optimize "$d/model.onnx" -o "$TMP/$m.noguard.onnx" --level all --target ort \
    --skip residual_sum >/dev/null 2>&1
  "$BIN" optimize "$d/model.onnx" -o "$TMP/$m.ext.onnx" --level extended >/dev/null 2>&1
  "$BIN" optimize "$d/model.onnx" -o "$TMP/$m.ext_noguard.onnx" --level extended \
    --skip residual_sum >/dev/null 2>&1
  /usr/bin/python3 - "$d" "$TMP/$m.json" <<'PY'
import json, os, sys, onnx
from onnx import numpy_helper
d, out = sys.argv[1], sys.argv[2]
m = onnx.load(d + "/model.onnx", load_external_data=False)
inits = {x.name for x in m.graph.initializer}
spec = {}
for k, i in enumerate(x for x in m.graph.input if x.name not in inits):
    t = onnx.TensorProto()
    t.ParseFromString(open("%s/test_data_set_0/input_%d.pb" % (d, k), "rb").read())
    a = numpy_helper.to_array(t)
    f = "%s.in%d" % (out, k)
    a.tofile(f)
    spec[i.name] = {"type": str(a.dtype), "dims": list(a.shape), "file": f}
json.dump(spec, open(out, "w"))
PY
  echo "== $m (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  NODE_PATH=$ORT node "$HERE/ort_versus.js" "$TMP/$m.json" "$ROUNDS" "$RUNS" \
    "original=$d/model.onnx" "all_ort=$TMP/$m.ours.onnx" "all_ort_no_rsum=$TMP/$m.noguard.onnx" \
    "ext_onnx=$TMP/$m.ext.onnx" "ext_onnx_no_rsum=$TMP/$m.ext_noguard.onnx" 2>&1 |
    grep -v 'Serializing\|W:onnxruntime'
  echo "   load after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
