#!/bin/sh
# Regenerates the example images of docs/EXPORT.md: a sample model's graph and
# its before/after diff against `onnxscope optimize`'s output, as small SVGs in
# docs/images/. Usage: tools/render_examples.sh [MODEL [OPTIMIZED.onnx]]
# (run from the project root; ONNXSCOPE_BIN picks the binary, default build/onnxscope).
set -eu

cd "$(dirname "$0")/.."
bin=${ONNXSCOPE_BIN:-build/onnxscope}
shared=${ONNXSCOPE_SHARED:-../shared}
model=${1:-$shared/models/shape_chain_cnn_nofold_op13/model.onnx}
optimized=${2:-}
out=docs/images

if [ ! -x "$bin" ]; then
    echo "render_examples: $bin not found; build first or set ONNXSCOPE_BIN" >&2
    exit 2
fi
if [ ! -f "$model" ]; then
    echo "render_examples: no model at $model (set ONNXSCOPE_SHARED or pass one)" >&2
    exit 2
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

"$bin" dot "$model" -o "$out/export-example.svg"

if [ -z "$optimized" ]; then
    optimized="$tmp/optimized.onnx"
    if ! "$bin" optimize "$model" -o "$optimized" >"$tmp/optimize.log" 2>&1; then
        echo "render_examples: 'onnxscope optimize' failed; diff image not updated:" >&2
        cat "$tmp/optimize.log" >&2
        exit 1
    fi
fi
"$bin" dot "$model" --diff "$optimized" -o "$out/export-diff.svg"

# The images are committed: keep an eye on their size.
for f in "$out/export-example.svg" "$out/export-diff.svg"; do
    size=$(wc -c <"$f")
    echo "$f: $size bytes"
    if [ "$size" -gt 300000 ]; then
        echo "render_examples: warning: $f is large for the repository" >&2
    fi
done
