#!/usr/bin/env bash
# Gathers what bench/gpu-check.sh needs on a GPU machine that has none of
# our Debian libraries: the onnxscope binary and the exec_cuda and
# exec_cuda_graph test programs (stripped), every shared library they load that is not the C library
# itself or the NVIDIA driver, the loader and C library as a fallback for
# an older host, and as many shared models (with test_data_set_0/1) as fit
# the budget. The CUDA runtime is linked in statically; cuBLAS and cuDNN
# are the GPU machine's own (too big to carry: cuBLASLt alone is 540 MB).
#   tools/gpu_bundle.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, gpu-bundle)
#   GPU_BUNDLE_MIB=62   size budget in MiB (the device tool carries 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-gpu-bundle}
budget=$(( ${GPU_BUNDLE_MIB:-62} * 1024 * 1024 ))
shared=${ONNXSCOPE_SHARED:-../shared}
for f in "$build/onnxscope" "$build/tests/exec/test_cuda" "$build/tests/exec/test_cuda_graph"; do
    [ -x "$f" ] || { echo "gpu_bundle: $f missing: build first (ninja -C $build)" >&2; exit 3; }
done
grep -q 'OX_HAVE_CUDA' "$build/build.ninja" ||
    { echo "gpu_bundle: $build was configured without CUDA (meson -Dcuda=enabled)" >&2; exit 3; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/glibc" "$out/models"
strip -o "$out/bin/onnxscope" "$build/onnxscope"
strip -o "$out/bin/test_cuda" "$build/tests/exec/test_cuda"
strip -o "$out/bin/test_cuda_graph" "$build/tests/exec/test_cuda_graph"
# Libraries: everything ldd resolves except the C library family, which a
# host always has (a copy goes to lib/glibc for the loader fallback).
ldd "$build/onnxscope" "$build/tests/exec/test_cuda" | awk '/=> \//{print $1, $3}' | sort -u |
while read -r name path; do
    case "$name" in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*)
            cp -L "$path" "$out/lib/glibc/$name" ;;
        libcuda.so*|libnvidia*) ;;   # the driver is the host's
        *) cp -L "$path" "$out/lib/$name" ;;
    esac
done
loader=$(ldd "$build/onnxscope" | awk '/ld-linux/{print $1}')
cp -L "$loader" "$out/lib/glibc/"
size() { du -sb "$1" | cut -f1; }
# Models, smallest first, while they fit.
if [ -d "$shared/models" ]; then
    for m in $(cd "$shared/models" && for d in */; do echo "$(du -sb "$d" | cut -f1) ${d%/}"; done |
               sort -n | awk '{print $2}'); do
        need=$(du -sb "$shared/models/$m/model.onnx" "$shared/models/$m"/test_data_set_[01] |
               awk '{s += $1} END {print s}')
        if [ $(( $(size "$out") + need )) -le "$budget" ]; then
            mkdir -p "$out/models/$m"
            cp "$shared/models/$m/model.onnx" "$out/models/$m/"
            cp -r "$shared/models/$m"/test_data_set_[01] "$out/models/$m/" 2>/dev/null || true
        else
            echo "gpu_bundle: $m left out (its $(( need / 1048576 )) MiB would pass the budget)" >&2
        fi
    done
fi
git rev-parse --short HEAD > "$out/COMMIT" 2>/dev/null || true
echo "gpu_bundle: $out: $(( $(size "$out") / 1048576 )) MiB," \
     "$(ls "$out/lib" | grep -c so) libraries, models: $(ls "$out/models" | tr '\n' ' ')"
