#!/usr/bin/env bash
# Streaming save benchmark: `optimize` on a generated model whose 2.7 GB of
# weights live in an external data file (sparse, so generating it costs no
# disk; the copy does write 2.7 GB). Unchanged tensors are copied file to
# file, so the goal (docs/PERFORMANCE.md) is peak RSS under 10% of the data.
# Needs python3 with the onnx package (PYTHON, default /usr/bin/python3) and
# GNU time (/usr/bin/time) or falls back to the shell's rusage via python.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-bench/out/save}
mkdir -p "$OUT"
MODEL=$OUT/big_external.onnx
N=${N:-225000000}            # floats per tensor: 3 x 900 MB
"$PYTHON" - "$MODEL" "$N" <<'PY'
import os, sys
import onnx
from onnx import helper, TensorProto
path, n = sys.argv[1], int(sys.argv[2])
data = os.path.basename(path) + ".weights"
nbytes = 4 * n
with open(os.path.join(os.path.dirname(path), data), "wb") as f:
    f.truncate(3 * nbytes)          # sparse: holes read as zeros
    for i in range(3):              # distinct tensors (else dedup merges them)
        f.seek(i * nbytes)
        f.write(bytes([i + 1]) * 4096)
inits, nodes, prev = [], [], "x"
for i in range(3):
    t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[n])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", data), ("offset", str(i * nbytes)), ("length", str(nbytes))):
        e = t.external_data.add(); e.key = k; e.value = v
    inits.append(t)
    nodes.append(helper.make_node("Add", [prev, f"w{i}"], [f"y{i}"]))
    prev = f"y{i}"
g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                      [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [n])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
with open(path, "wb") as f:
    f.write(m.SerializeToString())
PY
data_bytes=$(stat -c %s "$MODEL.weights")
rm -f "$OUT/opt.onnx" "$OUT/opt.onnx.data"
/usr/bin/time -f "wall_s=%e peak_rss_kib=%M" -o "$OUT/time.txt" \
    "$BUILD/onnxscope" optimize "$MODEL" -o "$OUT/opt.onnx" >/dev/null
line=$(cat "$OUT/time.txt")
echo "data_bytes=$data_bytes $line"
out_bytes=$(stat -c %s "$OUT/opt.onnx.data")
[ -n "${KEEP:-}" ] || rm -f "$OUT/opt.onnx.data" "$MODEL.weights"     # 2.7 GB each
rss=$(sed -n 's/.*peak_rss_kib=\([0-9]*\).*/\1/p' <<<"$line")
awk -v s="$data_bytes" -v o="$out_bytes" -v r="$rss" 'BEGIN{
  printf "written %.0f bytes, peak rss / data = %.4f\n", o, r*1024/s;
  if (o < s || r*1024 >= 0.10*s) { print "GOAL MISSED"; exit 1 } }'
