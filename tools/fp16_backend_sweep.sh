#!/bin/sh
# Converts every ONNX backend node case with to_fp16 (float32 graph inputs
# and outputs, so the stored test data still applies) and runs the results
# with `onnxscope test-backend` at a float16 tolerance: which kernels or
# conversions break in float16. Not a unit test (the stored outputs of some
# cases are beyond float16's precision); docs/PASSES.md "to_fp16" quotes it.
# usage: tools/fp16_backend_sweep.sh ONNXSCOPE NODE_DIR OUT_DIR [KEEP]
#   KEEP: --keep-fp32 value ("=" converts the default block list too)
set -u
bin=$1 src=$2 out=$3 keep=${4:-}
mkdir -p "$out"
conv=0 same=0 fail=0
for d in "$src"/*/; do
    n=$(basename "$d")
    [ -f "$d/model.onnx" ] || continue
    mkdir -p "$out/$n"
    if timeout 60 "$bin" optimize "$d/model.onnx" -o "$out/$n/model.onnx" --passes to_fp16 \
        ${keep:+--keep-fp32 "$keep"} --json >"$out/$n/optimize.json" 2>"$out/$n/optimize.err"; then
        if grep -q '"rewrites": [1-9]' "$out/$n/optimize.json"; then
            conv=$((conv + 1))
            for t in "$d"/test_data_set_*; do ln -sfn "$(realpath "$t")" "$out/$n/"; done
        else
            same=$((same + 1)); rm -rf "${out:?}/$n"
        fi
    else
        fail=$((fail + 1)); echo "optimize failed: $n: $(head -c 300 "$out/$n/optimize.err")"
        rm -rf "${out:?}/$n"
    fi
done
echo "converted $conv, unchanged $same, optimize failed $fail"
"$bin" test-backend "$out" --rtol 1e-2 --atol 1e-2 --timeout 60 --verbose 2>&1 | grep -v "^PASS\|^ok " 
