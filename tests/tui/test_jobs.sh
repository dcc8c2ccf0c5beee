#!/usr/bin/env bash
# End-to-end tests of the TUI's worker-thread jobs (issue 13, item 3): on a
# generated 100,000-node model, an export runs while the UI answers a panel
# switch and scrolling, Esc abandons it (no file, the temporary one removed
# when the worker ends), a second export completes; a step's search runs
# while the Passes panel is shown and `a` waits for it. Exit 77 = skipped.
set -u

BIN=${ONNXSCOPE_BIN:-}
GEN=${ONNXSCOPE_GEN_BIG:-}
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed (the TUI tests drive the binary in tmux)"
    exit 77
fi
if [ -z "$BIN" ] || [ ! -x "$BIN" ] || [ -z "$GEN" ] || [ ! -x "$GEN" ]; then
    echo "SKIP: ONNXSCOPE_BIN / ONNXSCOPE_GEN_BIG are not set to the built programs"
    exit 77
fi
TMP=$(mktemp -d /tmp/oxjobs.XXXXXX)
. "$(dirname "$0")/tmux_lib.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT
MODEL=$TMP/big.onnx
# A chain of 100,000 Add nodes: its DOT export takes seconds.
"$GEN" "$MODEL" 100000 1 >/dev/null || { echo "FAIL: gen_big_model"; exit 1; }

# both TEXT1 TEXT2 [SECONDS]: waits for one screen showing both.
both() {
    local a=$1 b=$2 limit=${3:-30}
    local deadline=$(( $(date +%s%N) / 1000000 + limit * 1000 ))
    CHECKS=$((CHECKS + 1))
    while :; do
        local s
        s=$(screen)
        if grep -qF -- "$a" <<<"$s" && grep -qF -- "$b" <<<"$s"; then
            return 0
        fi
        if [ $(( $(date +%s%N) / 1000000 )) -ge $deadline ]; then
            fail "no screen with both '$a' and '$b'"
            return 1
        fi
        sleep 0.05
    done
}

run_export() {
    SCEN="export in a worker, Esc abandons it"
    echo "== $SCEN"
    # The gate holds each job's thread at its end until the file exists:
    # the export is still running while the test looks, on any machine.
    rm -f "$TMP/gate"
    start 80 24 TERM=xterm-256color "ONNXSCOPE_TUI_JOB_GATE=$TMP/gate" -- "$MODEL"
    wait_for "Peak activ." 120 || return
    keys x C-u
    typed "$TMP/out.dot"
    keys Enter
    wait_for "exporting graph to" || return
    # The UI answers while the export runs: a panel switch, then a scroll.
    keys 2
    both "of 100000 nodes" "exporting graph to" || return
    keys j
    both " 2/100000" "exporting graph to" || return
    keys Escape
    wait_for "cancelled: exporting graph" || return
    CHECKS=$((CHECKS + 1))
    [ ! -e "$TMP/out.dot" ] || fail "the abandoned export wrote its file"
    keys 1
    wait_for "Peak activ." || return
    # The abandoned worker, once it ends, removes its temporary file.
    touch "$TMP/gate"
    # A second export runs to its end.
    keys x C-u
    typed "$TMP/out2.dot"
    keys Enter
    wait_for "exported graph (100000 nodes)" 180 || return
    CHECKS=$((CHECKS + 1))
    grep -q "digraph" "$TMP/out2.dot" || fail "out2.dot is not DOT"
    local i
    for i in $(seq 1 1200); do
        ls "$TMP"/.out.dot.part-* >/dev/null 2>&1 || break
        sleep 0.1
    done
    CHECKS=$((CHECKS + 1))
    ! ls "$TMP"/.out.dot.part-* >/dev/null 2>&1 || fail "temporary export file left behind"
    CHECKS=$((CHECKS + 1))
    [ ! -e "$TMP/out.dot" ] || fail "the abandoned export wrote its file"
    quit_clean
}

run_step_search() {
    SCEN="step search in a worker, panels answer, model keys wait"
    echo "== $SCEN"
    local gen
    gen=$(dirname "$BIN")/tools/gen_samples
    if [ ! -x "$gen" ]; then
        echo "SKIP [$SCEN]: $gen not built"
        return
    fi
    # No pass matches on this model: the search tries every pass (Esc
    # stopping it is tested in test_stepper.sh); the gate holds the job.
    "$gen" --wide 100000 "$TMP/wide.onnx" >/dev/null || { fail "gen_samples --wide"; return; }
    rm -f "$TMP/gate"
    start 80 24 TERM=xterm-256color "ONNXSCOPE_TUI_JOB_GATE=$TMP/gate" -- "$TMP/wide.onnx"
    wait_for "Peak activ." 120 || return
    keys s
    wait_re "trying [a-z_]+ \([0-9]+ passes tried; Esc stops\)" 60 || return
    keys 8
    both "category" "passes tried; Esc stops" || return
    # Model keys wait for the job, with a reason.
    keys a
    wait_for "busy (the model is in use)" || return
    touch "$TMP/gate"
    wait_for "no enabled pass has a match" 60 || return
    quit_clean
}

# Undo and bisect on 100k nodes run in the worker (issue 13, item 3): the
# panels answer meanwhile, Esc abandons (nothing changes), a second undo
# completes. The gate holds each job at its end while the test looks.
run_undo_bisect() {
    SCEN="undo and bisect in a worker, Esc abandons"
    echo "== $SCEN"
    touch "$TMP/gate"
    start 80 24 TERM=xterm-256color "ONNXSCOPE_TUI_JOB_GATE=$TMP/gate" -- "$MODEL"
    wait_for "Peak activ." 120 || return
    keys s
    wait_for "dedup_initializers #1:" 180 || return
    wait_for "[opt]" || return
    rm -f "$TMP/gate"
    keys u
    wait_for "undo step 1: dedup_initializers #1" 30 || return
    keys 2
    both "of 100000 nodes" "undo step 1: dedup_initializers #1" || return
    keys Escape
    wait_for "cancelled: undo step 1" || return
    # Still the optimized copy: the abandoned undo changed nothing.
    wait_for "[opt]" || return
    # Once the abandoned worker ends, model keys are taken again.
    touch "$TMP/gate"
    local i
    for i in $(seq 1 60); do
        keys u
        sleep 1
        screen | grep -qF "busy (the model is in use)" || break
    done
    wait_for "undid step 1: dedup_initializers #1: nodes 100000; 0 more to undo" 120 || return
    assert_not_screen "[opt]"
    rm -f "$TMP/gate"
    keys 8 B
    wait_for "bisecting: running the model after each pass (Esc abandons)" 30 || return
    keys 1
    both "Peak activ." "bisecting" || return
    keys Escape
    wait_for "cancelled: bisecting" || return
    touch "$TMP/gate"
    # The exit leaves the abandoned bisect to the process's end; slow under
    # the sanitizers (the leak check walks the 100k-node model).
    keys q
    wait_for "EXIT=0" 180 || return
}

# Above 20,000 nodes the no-match check runs idle in a worker: with no key
# pressed the Passes panel greys every pass (none matches on this model),
# the panel answers meanwhile, and `s` then knows at once.
run_idle_probe() {
    SCEN="idle no-match probe of a 100k-node model in a worker"
    echo "== $SCEN"
    local gen
    gen=$(dirname "$BIN")/tools/gen_samples
    if [ ! -x "$gen" ]; then
        echo "SKIP [$SCEN]: $gen not built"
        return
    fi
    [ -f "$TMP/wide.onnx" ] || "$gen" --wide 100000 "$TMP/wide.onnx" >/dev/null ||
        { fail "gen_samples --wide"; return; }
    start 100 40 TERM=xterm-256color -- "$TMP/wide.onnx"
    wait_for "Peak activ." 120 || return
    keys 8
    wait_for "fuse_reshapes" || return
    keys j
    wait_re "^ \[x\] fold_shape_chains" || return
    # Every enabled pass shown ([x]) gets greyed.
    local i n=0 left=1
    for i in $(seq 1 600); do
        n=$(screen | grep -E '^.\[x\]' | grep -c "no match")
        left=$(screen | grep -E '^.\[x\]' | grep -vc "no match")
        [ "$n" -ge 10 ] && [ "$left" -eq 0 ] && break
        sleep 0.2
    done
    CHECKS=$((CHECKS + 1))
    [ "$n" -ge 10 ] && [ "$left" -eq 0 ] ||
        fail "$left enabled passes not greyed 'no match' after 120 s idle"
    keys s
    wait_for "no enabled pass has a match" 5 || return
    assert_not_screen "passes tried; Esc stops"
    quit_clean
}

run_export
run_step_search
run_undo_bisect
run_idle_probe

echo "$CHECKS checks, $FAILS failures"
[ "$FAILS" -eq 0 ]
