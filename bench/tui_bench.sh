#!/usr/bin/env bash
# TUI responsiveness on a generated 100,000-node model: time to the first
# screen after loading and the redraw time of every keypress, measured by the
# binary itself (ONNXSCOPE_TUI_TIMING=FILE logs them) while tmux drives it.
# usage: bench/tui_bench.sh [BUILD_DIR] [NODES]   (defaults: build, 100000)
set -eu

BUILD=${1:-build}
NODES=${2:-100000}
BIN=$BUILD/onnxscope
GEN=$BUILD/tools/gen_samples
command -v tmux >/dev/null || { echo "tmux is required" >&2; exit 1; }
[ -x "$BIN" ] && [ -x "$GEN" ] || { echo "build $BUILD first" >&2; exit 1; }

TMP=$(mktemp -d /tmp/oxtuibench.XXXXXX)
SOCK="oxtuibench-$$"
trap 'tmux -L "$SOCK" kill-server >/dev/null 2>&1; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"; rm -rf "$TMP"' EXIT
MODEL=$TMP/wide.onnx
LOG=$TMP/timing.log
"$GEN" --wide "$NODES" "$MODEL" >/dev/null

lines() { [ -f "$LOG" ] && wc -l <"$LOG" || echo 0; }

# Waits until the log has at least N lines (each handled key adds one).
wait_lines() {
    local n=$1 i
    for i in $(seq 1 600); do
        [ "$(lines)" -ge "$n" ] && return 0
        sleep 0.05
    done
    echo "timed out waiting for the TUI (log has $(lines) lines)" >&2
    exit 1
}

run_size() {
    local w=$1 h=$2
    rm -f "$LOG"
    tmux -L "$SOCK" kill-server >/dev/null 2>&1 || true
    sleep 0.2
    tmux -L "$SOCK" new-session -d -s t -x "$w" -y "$h" \
        "env TERM=xterm-256color ONNXSCOPE_TUI_TIMING=$LOG $BIN $MODEL"
    wait_lines 2   # load_ms, first_screen_ms
    # One key at a time, waiting for its redraw, so every figure is a
    # real keypress-to-screen time and not a queue of keys.
    local seq=(2 j j j j j j j j j j NPage NPage NPage NPage NPage End Home
               o o o o / R e l u Enter n n n n n N N 3 Enter BSpace 6 l l Enter
               4 5 7 8 9 0 1 Tab Tab Tab BTab 2 G g)
    local n=2 k
    for k in "${seq[@]}"; do
        tmux -L "$SOCK" send-keys -t t "$k"
        n=$((n + 1))
        wait_lines "$n"
    done
    tmux -L "$SOCK" send-keys -t t q
    sleep 0.3
    echo "== ${w}x$h, $NODES nodes"
    awk '/^load_ms/ { printf "load + inference + costs: %.0f ms\n", $2 }
         /^first_screen_ms/ { printf "first screen after loading: %.1f ms\n", $2 }' "$LOG"
    # mawk has no asort: sort the redraw times with sort(1).
    grep '^key' "$LOG" | awk '{ print $4, $2 }' | sort -g | awk '
        { v[NR] = $1; k[NR] = $2 }
        END {
            printf "keypresses: %d, redraw p50 %.2f ms, p90 %.2f ms, max %.2f ms (%s)\n",
                   NR, v[int(NR * 0.5) + 1], v[int(NR * 0.9) + 1], v[NR], k[NR]
        }'
}

run_size 80 24
run_size 200 60
