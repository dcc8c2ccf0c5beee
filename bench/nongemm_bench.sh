#!/bin/sh
# Non-GEMM kernels of the transformers (Erf, Tanh, Softmax, LayerNormalization,
# Gelu, bias Add) at their BERT/encoder sizes, two onnxscope binaries
# interleaved in one run (e.g. main's build against this tree's):
#   bench/nongemm_bench.sh OLD_BIN NEW_BIN [ITERS]     (default 200)
# Prints min and p50 (ms) of ITERS runs per kernel, 1 thread (no --no-profile:
# older binaries lack it; the profiled runs come after the timed ones), and the
# `uptime` load (the machine is shared: min is the steadier figure).
set -eu
OLD=$1 NEW=$2 ITERS=${3:-200}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 - "$TMP" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
d = sys.argv[1]
def save(name, nodes, ins, shape, inits=(), opset=17, dom=()):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in ins],
                     [h.make_tensor_value_info("y", T.FLOAT, shape)], initializer=list(inits))
    ops = [h.make_opsetid("", opset)] + [h.make_opsetid(x, 1) for x in dom]
    onnx.save(h.make_model(g, opset_imports=ops), "%s/%s.onnx" % (d, name))
r = np.random.default_rng(1)
save("erf_128x1024", [h.make_node("Erf", ["x"], ["y"])], [("x", [128, 1024])], [128, 1024])
save("tanh_64x512", [h.make_node("Tanh", ["x"], ["y"])], [("x", [64, 512])], [64, 512])
save("gelu_128x1024", [h.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
     [("x", [128, 1024])], [128, 1024], dom=["com.microsoft"])
save("softmax_4x128x128", [h.make_node("Softmax", ["x"], ["y"])], [("x", [4, 128, 128])], [4, 128, 128])
for n in (256, 768):
    save("layernorm_128x%d" % n, [h.make_node("LayerNormalization", ["x", "s", "b"], ["y"])],
         [("x", [128, n])], [128, n],
         [nh.from_array(r.random(n, dtype=np.float32), "s"), nh.from_array(r.random(n, dtype=np.float32), "b")])
save("add_bias_128x1024", [h.make_node("Add", ["x", "b"], ["y"])], [("x", [128, 1024])], [128, 1024],
     [nh.from_array(r.random(1024, dtype=np.float32), "b")])
PY
printf '| kernel | old min / p50 ms | new min / p50 ms | speedup (min) | load |\n|---|---|---|---|---|\n'
for f in "$TMP"/*.onnx; do
  k=$(basename "$f" .onnx)
  row=""
  for b in "$OLD" "$NEW"; do
    row="$row $("$b" bench "$f" --threads 1 --warmup 5 --iters "$ITERS" --json 2>/dev/null |
      /usr/bin/python3 -c 'import json,sys; o=json.load(sys.stdin)["latency_ms"]; print("%.4f %.4f" % (o["min"], o["p50"]))' 2>/dev/null || echo "- -")"
  done
  set -- $row
  sp=$(/usr/bin/python3 -c "import sys; a,b=sys.argv[1:]; print('%.2f' % (float(a)/float(b)) if '-' not in (a,b) else '-')" "$1" "$3")
  printf '| %s | %s / %s | %s / %s | %s | %s |\n' "$k" "$1" "$2" "$3" "$4" "$sp" \
    "$(uptime | sed 's/.*load average: //; s/,.*//')"
done
