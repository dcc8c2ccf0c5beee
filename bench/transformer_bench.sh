#!/bin/sh
# Our latency and ONNX Runtime's in one run on the transformer models of
# ../shared/models (test_data_set_0 inputs for both), 1 and 2 threads, plus
# our per-operator profile. Usage (from the repository root, after building):
#   bench/transformer_bench.sh [ITERS]       (default 30; median of ITERS runs)
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for the runs only (this
# machine's environment sets them; a user's does not). Prints one row per
# model and thread count with `uptime`'s load, since the machine is shared.
set -eu
ITERS=${1:-30}
BIN=${ONNXSCOPE_BIN:-build/onnxscope}
SHARED=${SHARED:-../shared/models}
ORT=${ORT_NODE_PATH:-/tmp/ort/node_modules}
HERE=$(dirname "$0")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -d "$SHARED" ] || { echo "skip: $SHARED absent"; exit 0; }
printf '| model | threads | ours min / p50 ms | ours after `optimize --level all --target ort`, min / p50 ms | ORT min / p50 ms | ratio p50 (min) | optimized ratio p50 (min) | load |\n|---|---|---|---|---|---|---|---|\n'
for m in bert_l2_h128_nofold_op13 gpt2_like_l2_h128_nofold_op13 torch_transformer_encoder_l4_h256_op17; do
  d=$SHARED/$m
  # Inputs: the .pb files for us, the same values as JSON for ONNX Runtime.
  /usr/bin/python3 - "$d" "$TMP/$m.json" > "$TMP/$m.args" <<'PY'
import json, sys, glob, onnx
from onnx import numpy_helper
d, out = sys.argv[1], sys.argv[2]
spec, args = {}, []
for f in sorted(glob.glob(d + "/test_data_set_0/input_*.pb")):
    t = onnx.TensorProto()
    t.ParseFromString(open(f, "rb").read())
    a = numpy_helper.to_array(t)
    spec[t.name] = {"type": "int64" if a.dtype.kind == "i" else "float32",
                    "dims": list(a.shape), "data": a.ravel().tolist()}
    args.append("--input %s=%s" % (t.name, f))
json.dump(spec, open(out, "w"))
print(" ".join(args))
PY
  # Our full pipeline with ONNX Runtime's contrib ops (Attention, BiasGelu,
  # SkipLayerNormalization...), as ONNX Runtime applies its own at its default level.
  "$BIN" optimize "$d/model.onnx" -o "$TMP/$m.opt.onnx" --level all --target ort > /dev/null
  for th in 1 2; do
    load=$(uptime | sed 's/.*load average: //; s/,.*//')
    ours=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$BIN" bench "$d/model.onnx" \
           $(cat "$TMP/$m.args") --threads $th --warmup 3 --iters "$ITERS" --no-profile --json |
           /usr/bin/python3 -c 'import json,sys; o=json.load(sys.stdin)["latency_ms"]; print("%.3f %.3f" % (o["min"], o["p50"]))')
    opt=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$BIN" bench "$TMP/$m.opt.onnx" \
           $(cat "$TMP/$m.args") --threads $th --warmup 3 --iters "$ITERS" --no-profile --json |
           /usr/bin/python3 -c 'import json,sys; o=json.load(sys.stdin)["latency_ms"]; print("%.3f %.3f" % (o["min"], o["p50"]))')
    ort=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE NODE_PATH="$ORT" node "$HERE/ort_latency.js" \
          "$d/model.onnx" "$TMP/$m.json" $th 3 "$ITERS")
    set -- $ours $opt $ort
    printf '| %s | %s | %s / %s | %s / %s | %s / %s | %.2f (%.2f) | %.2f (%.2f) | %s |\n' "$m" "$th" \
      "$1" "$2" "$3" "$4" "$5" "$6" "$(echo "$2 / $6" | bc -l)" "$(echo "$1 / $5" | bc -l)" \
      "$(echo "$4 / $6" | bc -l)" "$(echo "$3 / $5" | bc -l)" "$load"
  done
done
