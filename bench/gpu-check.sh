#!/usr/bin/env bash
# GPU check of the CUDA backend, in one call of at most ~10 minutes on a GPU
# machine (H200, CUDA 13 driver) that has none of our Debian libraries and
# no package registry (docs/EXECUTOR.md "CUDA backend", docs/PERFORMANCE.md):
#   1. starts the carried binary (gpu-bundle/, made here by tools/gpu_bundle.sh)
#      with its libraries via LD_LIBRARY_PATH, plus the host's cuBLAS/cuDNN;
#      if it does not start, with the carried loader and C library; if that
#      fails too, builds here (meson + nvcc) when the tools exist;
#   2. runs the GPU tests (exec_cuda: the CUDA executor against the CPU one
#      on the shared models and on every kernel family's node cases, rtol 1e-3
#      in fp32, every run compared, so the CUDA Graph replays too; fp16 within
#      rtol 1e-2 on the shared models and the GEMM/Conv/attention cases;
#      exec_cuda_graph: plan-time shape arithmetic, MultiHeadAttention and the
#      other contrib kernels, the shared models as exported and optimized,
#      each captured and replayed);
#   3. benchmarks each carried model on the CPU and on the GPU: fp32 with
#      CUDA Graphs (the default), fp32 eager (ONNXSCOPE_CUDA_GRAPHS=0) and
#      fp16 (--precision fp16), noting whether the graph was replayed; the
#      transformers also as optimized here (optimize --level all --target
#      ort: Attention, EmbedLayerNormalization, BiasGelu... on the GPU);
#   4. prints a short table last.
# usage: bench/gpu-check.sh [--dry-run] [--bundle DIR] [--models DIR] [--iters N]
#   --dry-run  what can be checked without a GPU: the probe must report "no
#              GPU" (exit 4), the tests run (GPU ones skip), and the GPU column
#              of the table comes from the emulated device (ONNXSCOPE_CUDA_EMULATE:
#              CPU kernels behind the CUDA plan; not GPU timings).
# Exit: 0 all GPU tests passed; 1 a test or benchmark failed; 3 nothing to
# run (no bundle, no build); 4 no usable GPU (the table says why).
set -u
cd "$(dirname "$0")/.."
t_start=$(date +%s)
budget_s=${GPU_CHECK_BUDGET_S:-540}   # leave the device tool its margin of 10 min
dry=0
bundle=gpu-bundle
models=
iters=50
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry=1 ;;
        --bundle) bundle=$2; shift ;;
        --models) models=$2; shift ;;
        --iters) iters=$2; shift ;;
        *) echo "gpu-check: unknown option '$1'" >&2; exit 2 ;;
    esac
    shift
done
left() { echo $(( budget_s - ($(date +%s) - t_start) )); }
say() { echo "gpu-check: $*"; }
out=${GPU_CHECK_OUT:-${OUT:-/tmp}/gpu-check}
mkdir -p "$out"

# ---- the host's CUDA libraries (cuBLAS, cuDNN; the driver is found by the
# runtime itself) ----------------------------------------------------------
cuda_dirs=
for d in /usr/local/cuda/lib64 /usr/local/cuda-13*/lib64 /usr/local/cuda/targets/*/lib \
         /usr/lib/x86_64-linux-gnu /usr/lib64 /opt/nvidia/*/lib* \
         /usr/local/lib/python3*/dist-packages/nvidia/*/lib \
         /usr/lib/python3*/site-packages/nvidia/*/lib; do
    if ls "$d"/libcublas.so.13 "$d"/libcudnn.so.9 >/dev/null 2>&1; then
        cuda_dirs="$cuda_dirs:$d"
    fi
done
for lib in libcublas.so.13 libcudnn.so.9; do
    p=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l {print $NF; exit}')
    [ -n "$p" ] && cuda_dirs="$cuda_dirs:$(dirname "$p")"
done
say "host CUDA library dirs: ${cuda_dirs#:}"
command -v nvidia-smi >/dev/null && nvidia-smi -L 2>&1 | head -4

# ---- a binary that starts ------------------------------------------------------
bin= test_bin= runner=()
try_start() {   # try_start BIN TEST [loader-prefix...]
    local b=$1 t=$2
    shift 2
    if ${@+"$@"} "$b" --version >/dev/null 2>"$out/start.err"; then
        bin=$b test_bin=$t runner=("$@")
        return 0
    fi
    say "$b does not start: $(head -1 "$out/start.err")"
    return 1
}
if [ -x "$bundle/bin/onnxscope" ]; then
    export LD_LIBRARY_PATH="$PWD/$bundle/lib${cuda_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    try_start "$bundle/bin/onnxscope" "$bundle/bin/test_cuda" ||
        try_start "$bundle/bin/onnxscope" "$bundle/bin/test_cuda" \
            "$bundle/lib/glibc/ld-linux-x86-64.so.2" --library-path "$LD_LIBRARY_PATH:$PWD/$bundle/lib/glibc"
fi
if [ -z "$bin" ] && [ -x build/onnxscope ]; then
    try_start build/onnxscope build/tests/exec/test_cuda
fi
if [ -z "$bin" ]; then
    # Build here: the whole tree when meson, ninja and nvcc are present.
    if command -v meson >/dev/null && command -v ninja >/dev/null && command -v nvcc >/dev/null; then
        say "building here (meson + nvcc) ..."
        if timeout $(( $(left) / 2 )) meson setup build-gpu -Dcuda=enabled >"$out/build.log" 2>&1 &&
           timeout $(( $(left) - 240 )) ninja -C build-gpu onnxscope tests/exec/test_cuda \
               tests/exec/test_cuda_graph \
               >>"$out/build.log" 2>&1; then
            try_start build-gpu/onnxscope build-gpu/tests/exec/test_cuda
        else
            say "build failed: $(tail -3 "$out/build.log" | tr '\n' ' ')"
        fi
    else
        say "no meson/ninja/nvcc here to build with"
    fi
fi
if [ -z "$bin" ]; then
    say "no onnxscope binary starts here (carry gpu-bundle/ made by tools/gpu_bundle.sh)"
    exit 3
fi
# Programs run the way the binary started: directly, or via the carried loader.
ox() { ${runner[@]+"${runner[@]}"} "$bin" "$@"; }
say "binary: $bin $([ ${#runner[@]} -gt 0 ] && echo "(via the carried loader)") $(cat "$bundle/COMMIT" 2>/dev/null)"

# ---- models -------------------------------------------------------------------
if [ -z "$models" ]; then
    for d in "$bundle/models" ../shared/models shared/models; do
        [ -d "$d" ] && models=$d && break
    done
fi
[ -n "$models" ] && [ -d "$models" ] || { say "no models folder"; models=; }

# ---- the GPU ------------------------------------------------------------------------
ox run samples/tiny_cnn.onnx --random --device cuda >"$out/probe.txt" 2>&1
probe_rc=$?
gpu_line=$(grep -m1 -- '--device cuda' "$out/probe.txt" || true)
gpu_ok=0
[ $probe_rc -eq 0 ] && gpu_ok=1
if [ $gpu_ok -eq 0 ]; then
    if [ $probe_rc -ne 4 ]; then
        say "unexpected exit $probe_rc probing the GPU: $(tail -2 "$out/probe.txt" | tr '\n' ' ')"
    fi
    say "no usable GPU: ${gpu_line:-exit $probe_rc}"
    if [ $dry -eq 0 ]; then
        echo
        echo "GPU check: no usable GPU (${gpu_line#onnxscope: --device cuda: }); nothing measured"
        exit 4
    fi
else
    say "GPU: $(grep -m1 '^device:' "$out/probe.txt")"
fi

# ---- GPU tests -------------------------------------------------------------------------
tests_rc=0
tests_line="not run"
if [ -x "$test_bin" ]; then
    shared_root=${models%/models}
    ONNXSCOPE_SHARED=$shared_root ONNXSCOPE_BIN=$PWD/$bin ONNXSCOPE_SOURCE=$PWD \
        timeout $(( $(left) / 3 )) ${runner[@]+"${runner[@]}"} "$test_bin" >"$out/tests.txt" 2>&1
    tests_rc=$?
    passed=$(grep -c '^\[       OK \]' "$out/tests.txt")
    # cmocka lists skipped and failed tests twice (as they run, then in a summary).
    skipped=$(grep '^\[  SKIPPED \] test_' "$out/tests.txt" | sort -u | wc -l)
    failed=$(grep '^\[  FAILED  \] test_' "$out/tests.txt" | sort -u | wc -l)
    tests_line="exec_cuda: $passed passed, $failed failed, $skipped skipped (exit $tests_rc)"
    say "$tests_line"
    grep -E 'ERROR|error:|nodes,|skipped' "$out/tests.txt" | grep -v '^emulated' | head -90
    # exec_cuda_graph: an emulated group, then the same tests on the GPU.
    graph_bin=$(dirname "$test_bin")/test_cuda_graph
    if [ -x "$graph_bin" ]; then
        ONNXSCOPE_SHARED=$shared_root ONNXSCOPE_BIN=$PWD/$bin ONNXSCOPE_SOURCE=$PWD \
            timeout $(( $(left) / 4 )) ${runner[@]+"${runner[@]}"} "$graph_bin" >"$out/tests_graph.txt" 2>&1
        grc=$?
        gp=$(grep -c '^\[       OK \]' "$out/tests_graph.txt")
        gf=$(grep '^\[  FAILED  \] test_' "$out/tests_graph.txt" | sort -u | wc -l)
        ggpu=$(grep -c '^\[==========\] gpu: Running' "$out/tests_graph.txt")
        tests_line="$tests_line; exec_cuda_graph: $gp passed, $gf failed, GPU group $([ "$ggpu" -gt 0 ] && echo run || echo "not run") (exit $grc)"
        say "$tests_line"
        grep -E 'ERROR|error:|GPU /|GPU group' "$out/tests_graph.txt" | head -40
        [ $grc -ne 0 ] && tests_rc=1
        [ $gpu_ok -eq 1 ] && [ "$ggpu" -eq 0 ] && tests_rc=1
    fi
    # A dry run has no GPU: its GPU tests skip, the rest must pass.
    if [ $gpu_ok -eq 1 ] && [ "$skipped" -gt 0 ]; then
        say "GPU tests skipped on a GPU machine:"; grep -A1 'RUN' "$out/tests.txt" | grep skipped
        tests_rc=1
    fi
else
    say "no test program ($test_bin)"
    tests_rc=1
fi

# ---- benchmarks -----------------------------------------------------------------------
rows=()
bench_rc=0
json_get() {   # json_get FILE KEY...: a number from bench --json (no jq/python needed)
    local f=$1 k=$2
    grep -o "\"$k\": *[-0-9.e+]*" "$f" | head -1 | sed 's/.*: *//'
}
json_str() {   # json_str FILE KEY: a string value
    grep -o "\"$2\": *\"[^\"]*\"" "$1" | head -1 | sed 's/.*: *"//; s/"$//'
}
ms() { [ -n "$1" ] && awk -v v="$1" 'BEGIN{printf "%.3f", v}'; }
# bench_one LABEL MODEL.onnx [BENCH ARGS...]: one row of the table.
bench_one() {
    local m=$1 f=$2
    shift 2
    local key=${m// /_}
    key=${key//[()]/}   # file names
    if [ "$(left)" -lt 45 ]; then
        rows+=("$(printf '%-52s %s' "$m" "not run: time budget spent")")
        return
    fi
    local dims=(--dim batch=1)
    ox info "$f" --json 2>/dev/null | grep -q '"seq"' && dims+=(--dim seq=128)
    local common=("${dims[@]}" --iters "$iters" --warmup 3 --no-profile --json "$@")
    timeout 120 ${runner[@]+"${runner[@]}"} "$bin" bench "$f" "${common[@]}" \
        --device cpu >"$out/$key.cpu.json" 2>"$out/$key.cpu.err"
    local crc=$?
    local cpu gpu="-" share="-" nodes="-" grc=0 eager="-" half="-" graph="-" erc hrc gn cn gf cf
    cpu=$(ms "$(json_get "$out/$key.cpu.json" p50)")
    local emu=()
    [ $gpu_ok -eq 0 ] && emu=(env ONNXSCOPE_CUDA_EMULATE=1)   # dry run
    if [ $gpu_ok -eq 1 ] || [ $dry -eq 1 ]; then
        ${emu[@]+"${emu[@]}"} timeout 120 ${runner[@]+"${runner[@]}"} "$bin" bench "$f" "${common[@]}" \
            --device cuda >"$out/$key.gpu.json" 2>"$out/$key.gpu.err"
        grc=$?
        gpu=$(ms "$(json_get "$out/$key.gpu.json" p50)")
        gn=$(json_get "$out/$key.gpu.json" gpu_nodes)
        cn=$(json_get "$out/$key.gpu.json" cpu_nodes)
        gf=$(json_get "$out/$key.gpu.json" gpu_flops)
        cf=$(json_get "$out/$key.gpu.json" cpu_flops)
        [ -n "$gn" ] && nodes="$gn/$((gn + cn))"
        [ -n "$gf" ] && [ $((gf + cf)) -gt 0 ] && share="$(awk -v g="$gf" -v c="$cf" 'BEGIN{printf "%.1f%%", 100*g/(g+c)}')"
        graph=$(json_str "$out/$key.gpu.json" graph)
        # The same without CUDA Graphs, and in fp16 (its outputs are
        # checked against the CPU by the tests above; here the latency).
        ${emu[@]+"${emu[@]}"} ONNXSCOPE_CUDA_GRAPHS=0 timeout 120 ${runner[@]+"${runner[@]}"} "$bin" bench \
            "$f" "${common[@]}" --device cuda >"$out/$key.eager.json" 2>"$out/$key.eager.err"
        erc=$?
        eager=$(ms "$(json_get "$out/$key.eager.json" p50)")
        [ $erc -ne 0 ] && { eager="err $erc"; bench_rc=1; say "$m eager: $(head -1 "$out/$key.eager.err")"; }
        ${emu[@]+"${emu[@]}"} timeout 120 ${runner[@]+"${runner[@]}"} "$bin" bench "$f" \
            "${common[@]}" --device cuda --precision fp16 >"$out/$key.fp16.json" 2>"$out/$key.fp16.err"
        hrc=$?
        half=$(ms "$(json_get "$out/$key.fp16.json" p50)")
        [ $hrc -ne 0 ] && { half="err $hrc"; bench_rc=1; say "$m fp16: $(head -1 "$out/$key.fp16.err")"; }
    fi
    [ $crc -ne 0 ] && { cpu="err $crc"; bench_rc=1; say "$m cpu: $(head -1 "$out/$key.cpu.err")"; }
    [ $grc -ne 0 ] && { gpu="err $grc"; bench_rc=1; say "$m gpu: $(head -1 "$out/$key.gpu.err")"; }
    local ratio="-"
    case "$cpu$gpu" in *err*|*-*) ;; *)
        ratio=$(awk -v c="$cpu" -v g="$gpu" 'BEGIN{ if (g > 0) printf "x%.2f", c/g }') ;;
    esac
    rows+=("$(printf '%-52s %10s %10s %10s %10s %8s %10s %8s %9s' "$m" "${cpu:-?}" "${gpu:-?}" \
        "${eager:-?}" "${half:-?}" "$ratio" "$nodes" "$share" "${graph:-?}")")
}
if [ -n "$models" ]; then
    for mdir in "$models"/*/; do
        m=$(basename "$mdir")
        [ -f "$mdir/model.onnx" ] || continue
        bench_one "$m" "$mdir/model.onnx"
    done
    # The transformers as our fusions leave them (contrib ops on the GPU).
    for mdir in "$models"/*/; do
        m=$(basename "$mdir")
        case "$m" in bert*|gpt2*|*transformer*) ;; *) continue ;; esac
        [ -f "$mdir/model.onnx" ] && [ "$(left)" -ge 60 ] || continue
        if ox optimize "$mdir/model.onnx" --level all --target ort -o "$out/$m.opt.onnx" \
            >"$out/$m.opt.log" 2>&1; then
            # Token, segment ids and masks reach EmbedLayerNormalization through
            # Casts there, where random inputs do not see the vocabulary: 0/1.
            bench_one "$m (optimized)" "$out/$m.opt.onnx" --int-max 2
        else
            say "$m: optimize failed: $(tail -1 "$out/$m.opt.log")"
            bench_rc=1
        fi
    done
fi

# ---- the table (last) -------------------------------------------------------------------
echo
echo "GPU check ($(date -u +%FT%TZ), $(( $(date +%s) - t_start )) s, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)):"
echo "  device: $([ $gpu_ok -eq 1 ] && grep -m1 '^device:' "$out/probe.txt" || echo "no GPU (${gpu_line#onnxscope: --device cuda: })")"
echo "  tests:  $tests_line"
printf '  %-52s %10s %10s %10s %10s %8s %10s %8s %9s\n' model "cpu p50" "gpu p50" "gpu eager" \
    "gpu fp16" speedup "gpu nodes" "gpu FLOPs" "graph"
echo "  (p50 latencies in ms; gpu: fp32 with CUDA Graphs where the plan allows one, eager:"
echo "   ONNXSCOPE_CUDA_GRAPHS=0, fp16: --precision fp16; speedup: cpu / gpu; graph: the"
echo "   last timed run replayed a graph or not. Outputs vs the CPU: the tests line above.)"
for r in "${rows[@]}"; do echo "  $r"; done
if [ $gpu_ok -eq 0 ]; then
    echo "  (dry run: no GPU here; the gpu columns are the emulated device: CPU kernels, not GPU timings)"
    [ $tests_rc -eq 0 ] && [ $bench_rc -eq 0 ] && exit 0
    exit 1
fi
[ $tests_rc -eq 0 ] && [ $bench_rc -eq 0 ] && exit 0
exit 1
