#!/usr/bin/env bash
# 1 vs 2 threads (issue 14 item 2: "the second core brings close to 2x on
# large models") on resnet50_folded (bench/gen_resnet50.py) and a one-node
# 2048^3 MatMul, with the load guard off (ONNXSCOPE_THREADS_LOAD_CAP=0) so
# that 2 threads means 2: ROUNDS interleaved rounds of `onnxscope bench` at 1
# then 2 threads, p50 per run, the load average before each; prints the
# median p50 per thread count and their ratio. Meaningful only when the load
# average leaves both cores free (below about 1).
#   bench/thread_scaling.sh [ROUNDS] [ITERS]      (defaults: 3, 10)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
ITERS=${2:-10}
B=${ONNXSCOPE_BIN:-build/onnxscope}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export ONNXSCOPE_THREADS_LOAD_CAP=0
/usr/bin/python3 bench/gen_resnet50.py "$TMP/resnet50_folded.onnx"
/usr/bin/python3 - "$TMP/matmul2048.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
n = 2048
b = numpy_helper.from_array(np.random.default_rng(1).uniform(-1, 1, (n, n)).astype(np.float32), "B")
g = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["Y"])], "mm",
                      [helper.make_tensor_value_info("A", TensorProto.FLOAT, [n, n])],
                      [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [n, n])], [b])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
p50() {  # model threads -> p50 ms
    "$B" bench "$1" --threads "$2" --warmup 2 --iters "$ITERS" --no-profile --json 2>/dev/null |
        awk -F'[:,]' '/"p50"/ {print $2; exit}'
}
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| model | round | load | 1 thread p50 ms | 2 threads p50 ms | 1 / 2 |"
echo "|---|---|---|---|---|---|"
for m in resnet50_folded matmul2048; do
    : > "$TMP/t1"; : > "$TMP/t2"
    for r in $(seq "$ROUNDS"); do
        load=$(cut -d' ' -f1 /proc/loadavg)
        a=$(p50 "$TMP/$m.onnx" 1); b=$(p50 "$TMP/$m.onnx" 2)
        echo "$a" >> "$TMP/t1"; echo "$b" >> "$TMP/t2"
        echo "| $m | $r | $load | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a/b}') |"
    done
    a=$(med < "$TMP/t1"); b=$(med < "$TMP/t2")
    echo "| $m | median | | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a/b}') |"
done
