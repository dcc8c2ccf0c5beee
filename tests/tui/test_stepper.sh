#!/usr/bin/env bash
# End-to-end tests of the TUI's fusion stepper and node navigation (issue
# 13, items 1 and 4): the real binary ($ONNXSCOPE_BIN) in a private tmux
# server on the model of tests/tui/gen_step_model.c, whose rewrites are
# known by construction (1 Constant, 2 Identity, Log(Softmax), MatMul+Add).
# Exit 77 = skipped.
set -u

BIN=${ONNXSCOPE_BIN:-}
GEN=${ONNXSCOPE_GEN_STEP:-}
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed (the TUI tests drive the binary in tmux)"
    exit 77
fi
if [ -z "$BIN" ] || [ ! -x "$BIN" ] || [ -z "$GEN" ] || [ ! -x "$GEN" ]; then
    echo "SKIP: ONNXSCOPE_BIN / ONNXSCOPE_GEN_STEP are not set to the built programs"
    exit 77
fi
TMP=$(mktemp -d /tmp/oxstep.XXXXXX)
. "$(dirname "$0")/tmux_lib.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT
MODEL=$TMP/step.onnx
"$GEN" "$MODEL" >/dev/null || { echo "FAIL: gen_step_model"; exit 1; }

# s, S, the cursor on the new node, next/previous changed node, the
# changed-only list, undo, "no match" in the Passes panel, the fixed point.
run_stepping() {
    SCEN="stepping 80x24"
    echo "== $SCEN"
    start 80 24 TERM=xterm-256color -- "$MODEL"
    wait_for "Peak activ." || return
    keys 2
    wait_for "7 of 7 nodes" || return
    keys s
    wait_for "constant_to_initializer #1: -1 +0 ~0 nodes" 20 || return
    # The Constant pass has no second match: skipped.
    keys s
    wait_for "eliminate_identity #1: -1 +0 ~1 nodes" 20 || return
    keys S
    wait_for "eliminate_identity #2 (rest of the pass)" 20 || return
    wait_for "4 of 4 nodes" || return
    # The fusion: two nodes out, one in; fewer MACs; the Nodes cursor on
    # the new node, which is marked '+'.
    keys s
    wait_for "fuse_log_softmax #1: -2 +1 ~0 nodes, MACs -" 20 || return
    wait_for "3 of 3 nodes" || return
    CHECKS=$((CHECKS + 1))
    screen | grep -qE '^\+ +[0-9]+ LogSoftmax' || fail "the new LogSoftmax row is not marked '+'"
    keys Enter
    wait_re "^#[0-9]+  LogSoftmax" || return
    # The neighbourhood is centred on it too: MatMul below.
    keys 6
    wait_for "matmul" || return
    assert_screen "LogSoftmax"
    # Only the changed nodes, then all; ] goes to the changed node.
    keys 2 C
    wait_for "1 of 3 nodes" || return
    keys C
    wait_for "3 of 3 nodes" || return
    keys End ']'
    wait_for "+ LogSoftmax" || return
    # At 80x24 the Diff shows the per-pass table first; the rest of the
    # page (op rows below, the pass table's "peak" column to the right)
    # is reached by scrolling.
    keys 9
    wait_re "fuse_log_softmax +1 +2 +1 " || return
    assert_screen "(more below)"
    assert_screen "(more right)"
    CHECKS=$((CHECKS + 1))
    if screen | grep -qE "bytes saved +MACs +peak|LogSoftmax +0 +1 +\\+1"; then
        fail "the peak column or the LogSoftmax op row is visible before scrolling"
    fi
    keys G
    wait_re "LogSoftmax +0 +1 +\\+1" || return
    keys l
    wait_re "bytes saved +MACs +peak" || return
    keys g
    wait_for "Diff: original -> " || return
    # [ from the top wraps to the (only) changed node as well.
    keys 2 Home '['
    wait_for "+ LogSoftmax" || return
    # Undo brings Softmax and Log back.
    keys u
    wait_for "undid step 4: fuse_log_softmax #1" || return
    wait_for "4 of 4 nodes" || return
    assert_screen "softmax"
    assert_not_screen "LogSoftmax"
    # Passes known to have nothing to rewrite are greyed "no match".
    keys 8
    wait_re "eliminate_dropout +elimination +onnx +no match" || return
    # Step to the end: the fusion again, MatMul + Add -> Gemm, then nothing.
    keys s
    wait_for "fuse_log_softmax #1:" 20 || return
    keys s
    wait_for "fuse_matmul_add #1: -2 +1" 20 || return
    keys s
    wait_for "no enabled pass has a match" 20 || return
    keys 2
    wait_for "2 of 2 nodes" || return
    assert_screen "Gemm"
    quit_clean
}

# The Diff panel's per-pass table fills as you step (no `a` needed).
run_diff() {
    SCEN="diff fills while stepping 200x60"
    echo "== $SCEN"
    start 200 60 TERM=xterm-256color -- "$MODEL"
    wait_for "Peak activ." || return
    # At 200 columns the whole status line shows: what went, what was skipped.
    keys 8 s
    wait_for "constant_to_initializer #1" 20 || return
    assert_screen "removed: Constant bias_const"
    keys s
    wait_for "eliminate_identity #1" 20 || return
    assert_screen "(no match): constant_to_initializer"
    assert_screen "removed: Identity id_in"
    keys S
    wait_for "eliminate_identity #2" 20 || return
    keys s
    wait_for "fuse_log_softmax #1" 20 || return
    keys 9
    wait_for "Diff: original -> step 4: fuse_log_softmax #1" || return
    # pass, rewrites, -nodes, +nodes (the model has 2 Identity nodes).
    wait_re "eliminate_identity +2 +2 +0 " || return
    wait_re "fuse_log_softmax +1 +2 +1 " || return
    wait_re "constant_to_initialize[a-z]* +1 +1 +0 " || return
    assert_screen "last: step 4: fuse_log_softmax #1"
    wait_re "removed: .*softmax" || return
    wait_re "added: LogSoftmax" || return
    quit_clean
}

# Search by tensor name, filters with several ops and negation, H, :N,
# sorting from the top, Enter on an initializer.
run_navigation() {
    SCEN="navigation 80x24"
    echo "== $SCEN"
    start 80 24 TERM=xterm-256color -- "$MODEL"
    wait_for "Peak activ." || return
    keys 2 /
    typed "attn_probs"
    keys Enter
    wait_for "(tensor attn_probs)" || return
    keys f C-u
    typed '!Constant'
    keys Enter
    wait_for "6 of 7 nodes" || return
    assert_not_screen "bias_const"
    # A search that only hidden nodes match says so.
    keys /
    typed "bias_const"
    keys Enter
    wait_for "1 hidden by the filter" || return
    keys f C-u
    typed 'Log,MatMul'
    keys Enter
    wait_for "2 of 7 nodes" || return
    assert_screen "matmul"
    assert_not_screen "softmax"
    keys f C-u
    typed 'Conv,,Add'
    keys Enter
    wait_for "empty op name" || return
    keys f C-u Enter
    wait_for "7 of 7 nodes" || return
    keys H
    wait_for "6 of 7 nodes" || return
    keys H
    wait_for "7 of 7 nodes" || return
    # :N, from a filtered list (the filter is cleared to show it).
    keys f C-u
    typed 'Log'
    keys Enter
    wait_for "1 of 7 nodes" || return
    keys :
    typed "5"
    keys Enter
    wait_for "#5 Add add_bias (the filters hid it: cleared)" || return
    keys :
    typed "99"
    keys Enter
    wait_for "no node 99: this graph has 7 nodes" || return
    # Sorting puts the cursor on the first row.
    keys End o
    wait_for "sorted by MACs" || return
    wait_re " 1/7 *$" || return
    # Enter on an initializer lists its readers; Enter opens one.
    keys 4
    wait_for "float32" || return
    keys Home Enter
    wait_for "W: read by 1 node" || return
    assert_screen "readers of W"
    keys Enter
    wait_for "#4  MatMul  matmul" || return
    quit_clean
}

# Undo after an input shape edit: the restored copy gets today's shapes.
run_undo_shapes() {
    SCEN="undo after a shape edit"
    echo "== $SCEN"
    local trf=${ONNXSCOPE_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}/samples/tiny_transformer.onnx
    if [ ! -f "$trf" ]; then
        echo "SKIP [$SCEN]: $trf missing"
        return
    fi
    start 80 24 TERM=xterm-256color -- "$trf"
    wait_for "Peak activ." || return
    keys s
    wait_for "constant_to_initializer #1" 20 || return
    keys s
    wait_for "constant_to_initializer #2" 20 || return
    keys 5
    wait_for "int64[batch,sequence]" || return
    keys e C-u
    typed "2x8"
    keys Enter
    wait_for "float32[2,8,64]" || return
    keys u
    wait_for "undid step 2: constant_to_initializer #2" || return
    keys 5
    wait_for "float32[2,8,64]" || return
    assert_screen "(override)"
    quit_clean
}

# On a 100,000-node model each pass tried takes a visible time: the status
# line says which, and Esc stops the search (Esc is only sent once the
# second pass is being tried, of the 18 basic ones, none of which matches).
run_big_search() {
    SCEN="search stopped by Esc on 100k nodes"
    echo "== $SCEN"
    local gen
    gen=$(dirname "$BIN")/tools/gen_samples
    if [ ! -x "$gen" ]; then
        echo "SKIP [$SCEN]: $gen not built"
        return
    fi
    "$gen" --wide 100000 "$TMP/wide.onnx" >/dev/null || { fail "gen_samples --wide"; return; }
    start 80 24 TERM=xterm-256color -- "$TMP/wide.onnx"
    wait_for "Peak activ." 120 || return
    keys s
    wait_re "trying [a-z_]+ \([1-9][0-9]* passes tried; Esc stops\)" 60 || return
    keys Escape
    wait_for "stopped (Esc) after trying" 60 || return
    quit_clean
    rm -f "$TMP/wide.onnx"
}

# The neighbourhood as a graph (item 2): radius 2 around the MatMul, with
# the shapes of the tensors on the edges; the bus rows keep off the node
# lines in ASCII mode; after a fusion, before and after side by side.
run_neigh_radius() {
    SCEN="neighbourhood radius 2 with shapes"
    echo "== $SCEN"
    start 120 36 TERM=xterm-256color -- "$MODEL"
    wait_for "Peak activ." || return
    keys /
    typed "matmul"
    keys Enter v
    wait_for "radius 1 (+/-)" || return
    assert_screen "[Log log]"
    assert_not_screen "[Softmax softmax]"
    keys +
    wait_for "radius 2 (+/-)" || return
    # Two steps up (Log, then Softmax), two down (Add, then Identity).
    assert_screen "[Softmax softmax]"
    assert_screen "[Log log]"
    assert_screen "[Add add_bias]"
    assert_screen "[Identity id_out]"
    # Softmax and Log pass a 2x8 tensor down, MatMul a 2x4 one.
    CHECKS=$((CHECKS + 1))
    [ "$(screen | grep -cE '│ 2x8$')" -eq 2 ] || fail "expected two edges labelled 2x8"
    CHECKS=$((CHECKS + 1))
    screen | grep -qE '│ 2x4$' || fail "no edge labelled 2x4"
    keys +
    wait_for "radius 3 (+/-)" || return
    keys + 
    wait_for "neighbourhood radius 3 (1-3)" || return
    keys - -
    wait_for "radius 1 (+/-)" || return
    # Step to the LogSoftmax fusion: before (Softmax, Log removed) | after.
    keys s s S s
    wait_for "fuse_log_softmax #1" 20 || return
    keys 6
    wait_for "before step 4: fuse_log_softmax #1" || return
    assert_screen "[- Softmax softmax]"
    assert_screen "[- Log log]"
    assert_screen "[+ LogSoftmax"
    quit_clean

    SCEN="neighbourhood radius 2, ASCII"
    echo "== $SCEN"
    start 80 24 TERM=xterm-256color -- --ascii "$MODEL"
    wait_for "Peak activ." || return
    keys /
    typed "matmul"
    keys Enter v +
    wait_for "radius 2 (+/-)" || return
    CHECKS=$((CHECKS + 1))
    [ "$(screen | grep -cE '\| 2x8$')" -eq 2 ] || fail "expected two ASCII edges labelled 2x8"
    # No bus or stub character on the lines of the nodes themselves.
    CHECKS=$((CHECKS + 1))
    if screen | grep -E '\[[A-Za-z]' | grep -qE '[|+]'; then
        fail "a connector touches a node line"
    fi
    quit_clean
}

# Weights held in Constant nodes (issue 13, item 4): listed in panel 4 with
# the statistics and preview of an initializer. W[i] = (i % 7) * 0.125 - 0.375
# for i < 32 (gen_step_model.c); the expected figures are computed here.
run_const_weights() {
    SCEN="weights in Constant nodes"
    echo "== $SCEN"
    local m=$TMP/constw.onnx
    "$GEN" "$m" --const-weights >/dev/null || { fail "gen_step_model --const-weights"; return; }
    local mn mx mean
    read -r mn mx mean < <(awk 'BEGIN { mn = 1e9; mx = -1e9; s = 0;
        for (i = 0; i < 32; i++) { v = (i % 7) * 0.125 - 0.375; s += v;
            if (v < mn) mn = v; if (v > mx) mx = v }
        printf "%.6g %.6g %.6g\n", mn, mx, s / 32 }')
    start 100 24 TERM=xterm-256color -- "$m"
    wait_for "0 initializers + 2 in Constant nodes" || return
    keys 4
    wait_re "^W +\(Constant\) +float32 +8x4 " || return
    wait_re "^bias +\(Constant\) +float32 +4 " || return
    # The cursor is on W (the first Constant in graph order).
    wait_for "min $mn  max $mx  mean $mean" || return
    wait_for "values: -0.375 -0.25 -0.125 0 0.125 0.25 0.375 -0.375" || return
    wait_for "32 elements" || return
    keys j
    wait_for "min 0  max 1.5  mean 0.75" || return
    wait_for "zeros 25.0%" || return
    # Enter lists its reader in panel 2.
    keys Enter
    wait_for "bias: read by 1 node" || return
    quit_clean
}

run_stepping
run_const_weights
run_neigh_radius
run_big_search
run_undo_shapes
run_diff
run_navigation

echo "$CHECKS checks, $FAILS failures"
[ "$FAILS" -eq 0 ]
