#!/usr/bin/env bash
# End-to-end test of quantize_dynamic in the TUI (issue 15 item 2): toggle
# the opt-in pass in the Passes panel, apply, and read the quantized node's
# scales and error in its Detail panel. The real binary ($ONNXSCOPE_BIN) in
# a private tmux server; the model (one MatMul with a 768x768 weight) is
# written with python3's onnx. Exit 77 = skipped.
set -u

BIN=${ONNXSCOPE_BIN:-}
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed (the TUI tests drive the binary in tmux)"
    exit 77
fi
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "SKIP: ONNXSCOPE_BIN is not set to the built program"
    exit 77
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if ! "$PY" -c "import onnx, numpy" >/dev/null 2>&1; then
    echo "SKIP: python3 with onnx and numpy is needed to write the test model"
    exit 77
fi
TMP=$(mktemp -d /tmp/oxquant.XXXXXX)
. "$(dirname "$0")/tmux_lib.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT
MODEL=$TMP/mm.onnx
"$PY" - "$MODEL" <<'PYEOF' || { echo "FAIL: writing the model"; exit 1; }
import sys
import numpy as np, onnx
from onnx import helper as H, numpy_helper as nh, TensorProto as T
w = np.random.default_rng(0).uniform(-1, 1, (768, 768)).astype(np.float32)
g = H.make_graph([H.make_node("MatMul", ["x", "W"], ["y"], name="proj")], "mm",
                 [H.make_tensor_value_info("x", T.FLOAT, [8, 768])],
                 [H.make_tensor_value_info("y", T.FLOAT, [8, 768])], [nh.from_array(w, "W")])
m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
PYEOF

run_quant_detail() {
    SCEN="quantize_dynamic detail 160x50"
    echo "== $SCEN"
    start 160 50 TERM=xterm-256color -- "$MODEL"
    wait_for "Peak activ." || return
    # Opt-in: unchecked until toggled.
    keys 8
    wait_for "constant_to_initializer" || return
    keys /
    typed quantize_dynamic
    keys Enter
    wait_re "\[ \] quantize_dynamic" || return
    keys Space
    wait_re "\[x\] quantize_dynamic" || return
    keys a
    wait_for "applied: 1 -> 5 nodes" 30 || return
    keys 2 /
    typed MatMulInteger
    keys Enter Enter 3
    wait_re "^#[0-9]+  MatMulInteger  proj_quant" || return
    wait_for "Quantization (quantize_dynamic, was MatMul proj)" || return
    wait_re "weight W: int8, 768 scales [0-9.e-]+\.\.[0-9.e-]+, zero point 0" || return
    wait_re "max abs err [0-9.e-]+, SNR [0-9.]+ dB, 2359296 -> 592896 bytes" || return
    quit_clean
}

run_quant_detail

echo "$CHECKS checks, $FAILS failures"
[ "$FAILS" -eq 0 ]
