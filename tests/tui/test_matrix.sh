#!/usr/bin/env bash
# End-to-end test of the Bench panel's Matrix view (issue 16): `m` runs the
# evaluation matrix in the worker thread with progress on the screen, the
# table, recommendation and notes replace the benchmark, `b` goes back to
# the benchmark; Esc during a long sweep keeps the rows measured so far.
# Exit 77 = skipped.
set -u

BIN=${ONNXSCOPE_BIN:-}
SRC=${ONNXSCOPE_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed (the TUI tests drive the binary in tmux)"
    exit 77
fi
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "SKIP: ONNXSCOPE_BIN is not set to the onnxscope binary"
    exit 77
fi
CNN=$SRC/samples/tiny_cnn.onnx
[ -f "$CNN" ] || { echo "SKIP: sample $CNN missing"; exit 77; }
TMP=$(mktemp -d /tmp/oxmatrix.XXXXXX)
# The peak calibration's cache stays private to the test.
START_ENV=(XDG_CACHE_HOME="$TMP")
. "$(dirname "$0")/tmux_lib.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT

# A short sweep to the end, then back to the benchmark.
run_complete() {
    SCEN="matrix"
    start 150 45 ONNXSCOPE_TUI_BENCH_ITERS=3 -- "$CNN"
    wait_for "Overview" || return
    keys m
    wait_for "Evaluation matrix" || return
    wait_for "recommended:" 90 || return
    assert_screen "original"
    assert_screen "extended"
    assert_screen "ok (recommended)"
    # fp16/int8 run or say why (their passes come from other branches).
    CHECKS=$((CHECKS + 1))
    screen | grep -E "^ *fp16 " | grep -qE "ok|not available in this build" ||
        fail "no fp16 row"
    assert_screen "matrix done: 12 rows"
    keys b
    wait_for "benchmark done" 30 || return
    assert_not_screen "Evaluation matrix"
    quit_clean
}

# Esc stops a long sweep after the row in progress; the partial table stays.
run_escape() {
    SCEN="matrix Esc"
    start 150 45 ONNXSCOPE_TUI_BENCH_ITERS=100000 -- "$CNN"
    wait_for "Overview" || return
    keys m
    wait_for "[2/12]" 30 || return
    keys Escape
    wait_for "matrix interrupted: partial table" 30 || return
    assert_screen "cancelled: interrupted"
    assert_screen "interrupted:"
    quit_clean
}

run_complete
run_escape
echo "$CHECKS checks, $FAILS failures"
[ "$FAILS" -eq 0 ]
