#!/usr/bin/env bash
# Placement of the shared models on the CUDA backend, float32 and after the
# to_fp16 pass, each with and without --precision fp16, and the fused models
# (optimize --level all --target ort) without and with to_fp16
# (docs/PERFORMANCE.md "CUDA: placement of float16 models"). Runs on the emulated device
# (ONNXSCOPE_CUDA_EMULATE=1), so it needs no GPU: placement, FLOPs shares,
# transfer counts and CUDA Graph use (the last of 2 timed runs) are the
# plan's, the same as on a GPU.
# usage: bench/fp16_placement.sh [BIN] [MODELS_DIR]   (defaults build/onnxscope, ../shared/models)
set -u
bin=${1:-build/onnxscope}
models=${2:-../shared/models}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-40s %-24s %9s %9s %10s %8s %9s %9s\n' model variant "GPU nodes" "CPU nodes" "GPU FLOPs" uploads \
    downloads "graph"
for mdir in "$models"/*/; do
    m=$(basename "$mdir")
    [ -f "$mdir/model.onnx" ] || continue
    dims=(--dim batch=1)
    "$bin" info "$mdir/model.onnx" --json 2>/dev/null | grep -q '"seq"' && dims+=(--dim seq=128)
    "$bin" optimize "$mdir/model.onnx" -o "$tmp/$m.fp16.onnx" --passes to_fp16 >/dev/null 2>&1 ||
        { echo "$m: to_fp16 failed"; continue; }
    fuse=(--level all --target ort "${dims[@]}")
    "$bin" optimize "$mdir/model.onnx" -o "$tmp/$m.fused.onnx" "${fuse[@]}" >/dev/null 2>&1 &&
        "$bin" optimize "$mdir/model.onnx" -o "$tmp/$m.fused16.onnx" "${fuse[@]}" --passes +to_fp16 \
            >/dev/null 2>&1 || { echo "$m: optimize failed"; continue; }
    for v in "fp32" "fp32 --precision fp16" "to_fp16" "to_fp16 --precision fp16" "fused" "fused + to_fp16"; do
        f=$mdir/model.onnx
        case $v in
            to_fp16*) f=$tmp/$m.fp16.onnx ;;
            fused) f=$tmp/$m.fused.onnx ;;
            "fused + to_fp16") f=$tmp/$m.fused16.onnx ;;
        esac
        extra=()
        case $v in *precision*) extra=(--precision fp16) ;; esac
        bdims=("${dims[@]}")
        case $v in fused*) bdims=() ;; esac   # the fused models have those dims fixed
        j=$(ONNXSCOPE_CUDA_EMULATE=1 "$bin" bench "$f" ${bdims[@]+"${bdims[@]}"} --device cuda ${extra[@]+"${extra[@]}"} \
            --iters 2 --warmup 1 --no-profile --json 2>/dev/null)
        g() { echo "$j" | grep -o "\"$1\": *[0-9]*" | head -1 | sed 's/.*: *//'; }
        gn=$(g gpu_nodes) cn=$(g cpu_nodes) gf=$(g gpu_flops) cf=$(g cpu_flops)
        share=$(awk -v g="${gf:-0}" -v c="${cf:-0}" 'BEGIN{ if (g + c > 0) printf "%.2f%%", 100*g/(g+c); else print "-" }')
        graph=$(echo "$j" | grep -o '"graph": *"[^"]*"' | head -1 | sed 's/.*: *"//; s/"$//')
        printf '%-40s %-24s %9s %9s %10s %8s %9s %9s\n' "$m" "$v" "${gn:-?}" "${cn:-?}" "$share" \
            "$(g uploads)" "$(g downloads)" "${graph:-?}"
    done
done
