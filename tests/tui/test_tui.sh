#!/usr/bin/env bash
# End-to-end tests of the TUI: drive the real binary ($ONNXSCOPE_BIN) in a
# private tmux server, send keys, and assert on the captured screen text.
# Waits poll capture-pane (no fixed long sleeps). Exit 77 = skipped.
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
TRF=$SRC/samples/tiny_transformer.onnx
for f in "$CNN" "$TRF"; do
    [ -f "$f" ] || { echo "SKIP: sample $f missing"; exit 77; }
done

TMP=$(mktemp -d /tmp/oxtui.XXXXXX)
RUN=0
# Bench runs stay short in every scenario.
START_ENV=(ONNXSCOPE_TUI_BENCH_ITERS=10)
. "$(dirname "$0")/tmux_lib.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT

check() {   # check DESCRIPTION COMMAND...
    local what=$1
    shift
    CHECKS=$((CHECKS + 1))
    "$@" >/dev/null 2>&1 || fail "$what"
}

# ---------------------------------------------------------------------------
# A full session on the CNN at 80x24 with 256 colours.
run_cnn() {
    local term=$1 w=$2 h=$3
    shift 3
    SCEN="cnn $term ${w}x$h $*"
    RUN=$((RUN + 1))
    local tag="$RUN-$term"
    echo "== $SCEN"
    start "$w" "$h" TERM="$term" "$@" -- "$CNN"
    wait_for "Conv 2" || return
    assert_screen "Params"
    assert_screen "float32[1,3,32,32]"
    # Colours only where the terminal has them and NO_COLOR is unset.
    local esc
    esc=$(tmux -L "$SOCK" capture-pane -p -e -t t | grep -cE $'\e\\[(3[0-7]|38;5;[0-9]+)m')
    CHECKS=$((CHECKS + 1))
    case "$term $*" in
    *NO_COLOR=1*|vt100*) [ "$esc" -eq 0 ] || fail "colour escapes present ($esc lines)" ;;
    *) [ "$esc" -gt 0 ] || fail "no colour escapes on $term" ;;
    esac
    # Nodes, then the detail of the 5th node (Conv) and its producer.
    keys 2
    wait_for "total MACs" || return
    assert_screen "/Conv_0"
    keys j j j j Enter
    wait_for "#4  Conv  /Conv_4" || return
    assert_screen "<- MaxPool /MaxPool_3"
    keys Enter
    wait_for "#3  MaxPool  /MaxPool_3" || return
    keys BSpace
    wait_for "#4  Conv  /Conv_4" || return
    # Search by op type in the Nodes panel, next match.
    keys 2 Home /
    typed "Relu"
    keys Enter
    wait_for "/Relu: row 3 of 10" || return
    keys n
    wait_for "/Relu: row 7 of 10" || return
    # Filter by op type, then clear it.
    keys f C-u
    typed "Conv"
    keys Enter
    wait_for "2 of 10 nodes" || return
    keys f C-u Enter
    wait_for "10 of 10 nodes" || return
    # Initializers with statistics.
    keys 4
    wait_for "conv1.weight" || return
    wait_for "zeros" || return
    assert_screen "mean"
    assert_screen "std"
    # The input shape editor checks what it is given as every command's
    # --shape does: rank, syntax, and the static dims of this input.
    keys 5
    wait_for "float32[1,10]" || return
    keys e C-u
    typed "1x3"
    keys Enter
    wait_for "(rank 4), not rank 2" || return
    keys e C-u
    typed "abc!"
    keys Enter
    wait_for "neither a count" || return
    keys e C-u
    typed "4x3x32x32"
    keys Enter
    wait_for "dim 0 is fixed at 1, not 4" || return
    assert_not_screen "(override)"
    keys 5 c
    wait_for "float32[1,10]" || return
    # Neighbourhood of a node.
    keys 2 Home j j v
    wait_for "/Relu_2" || return
    assert_screen "/BatchNormalization_1"
    assert_screen "/MaxPool_3"
    # Benchmark.
    keys b
    wait_for "p50 ms" 20 || return
    assert_screen "tiny_cnn.onnx  "
    # Bisect: the basic passes keep the outputs, so nothing diverges.
    keys 8 B
    wait_for "bisect: every pass's result agrees" 30 || return
    # Export the neighbourhood as DOT, the whole graph as SVG.
    keys 6 x C-u
    typed "$TMP/n-$tag.dot"
    keys Enter
    wait_for "exported neighbourhood" || return
    check "DOT file written" grep -q "digraph" "$TMP/n-$tag.dot"
    keys 1 x C-u
    typed "$TMP/g-$tag.svg"
    keys Enter
    wait_for "exported graph" || return
    check "SVG file written" grep -q "<svg" "$TMP/g-$tag.svg"
    # Save, refuse to overwrite without confirmation, protect the input.
    keys w C-u
    typed "$TMP/o-$tag.onnx"
    keys Enter
    wait_for "saved the model" || return
    check "saved model loads with 10 nodes" \
        sh -c "'$BIN' info --json '$TMP/o-$tag.onnx' | grep -q '\"nodes\": *10'"
    keys w C-u
    typed "$TMP/o-$tag.onnx"
    keys Enter
    wait_for "the file exists: overwrite? (y/n)" || return
    keys n
    wait_for "not saved" || return
    keys w C-u
    typed "$CNN"
    keys Enter
    wait_for "this is the input model: overwrite? (y/n)" || return
    keys n
    wait_for "not saved" || return
    # Help comes from the key table.
    keys '?'
    wait_for "Keys (from the key table" || return
    assert_screen "show this help"
    keys NPage
    wait_for "search node names, op types and tensor names" || return
    keys q
    wait_for "Peak activ." || return   # help closed, back on the Overview
    quit_clean
}

# The transformer at another size and terminal: search, detail, help, bench cancel.
run_trf() {
    local term=$1 w=$2 h=$3
    shift 3
    SCEN="transformer $term ${w}x$h $*"
    echo "== $SCEN"
    start "$w" "$h" TERM="$term" "$@" -- "$TRF"
    wait_for "MatMul" || return
    keys 2 /
    typed "MatMul"
    keys Enter
    wait_for "/MatMul:" || return
    keys Enter
    wait_for "MatMul  /MatMul" || return
    keys 6
    wait_for "producers above, consumers below" || return
    keys 3 End Home PPage NPage Down Up
    keys 7
    wait_for "node / attribute / body" || return
    # Passes: apply all, toggle a pass (live re-run changes the diff),
    # reset, then step passes one at a time.
    keys 8
    wait_for "[x] constant_to_initializer" || return
    keys a
    wait_for "applied: 129 -> " 20 || return
    applied1=$(screen | grep -o 'applied: [0-9]* -> [0-9]*')
    keys 9
    wait_for "Diff: original -> all enabled passes" || return
    assert_screen "Constant"
    diff_before=$(screen | grep -E '^ +nodes ' | tr -s ' ')
    keys 8 /
    typed "cse"
    keys Enter Space
    wait_for "[ ] cse" 20 || return
    applied2=$(screen | grep -o 'applied: [0-9]* -> [0-9]*')
    CHECKS=$((CHECKS + 1))
    [ -n "$applied2" ] && [ "$applied1" != "$applied2" ] ||
        fail "toggling cse did not change the result ($applied1 / $applied2)"
    keys 9
    wait_for "Diff: original" || return
    diff_after=$(screen | grep -E '^ +nodes ' | tr -s ' ')
    CHECKS=$((CHECKS + 1))
    [ "$diff_before" != "$diff_after" ] || fail "diff node counts did not change ($diff_before)"
    # Nodes touched by the last action are marked; export the diff, save
    # the optimized model.
    keys 2
    wait_for "total MACs" || return
    CHECKS=$((CHECKS + 1))
    screen | grep -q '^[*+]' || fail "no node marked as touched in the Nodes panel"
    keys 9 x C-u
    typed "$TMP/diff-$NSOCK.dot"
    keys Enter
    wait_for "exported diff" || return
    check "diff DOT written" grep -q "digraph" "$TMP/diff-$NSOCK.dot"
    keys w C-u
    typed "$TMP/opt-$NSOCK.onnx"
    keys Enter
    wait_for "saved the optimized model" || return
    check "optimized model is valid" "$BIN" check "$TMP/opt-$NSOCK.onnx"
    keys 8 r
    wait_for "reset to the original model" || return
    keys s
    wait_for "constant_to_initializer #1: -1 +0" 20 || return
    keys S
    wait_for "(rest of the pass)" 20 || return
    # The symbolic batch leaves no shape chain to fold: the stepper skips
    # the passes with no match and greys them.
    keys s
    wait_for "(no match)" 20 || return
    keys Home
    wait_re "fold_shape_chains +folding +onnx +no match" || return
    keys 2
    wait_for "total MACs" || return
    # Unknown dims are not guessed: the benchmark names the dim to set.
    keys 0 b
    wait_for "dim 0 ('batch') is unknown" 30 || return
    # Fixing the shape in the I/O editor reaches the output type.
    keys 5
    wait_for "int64[batch,sequence]" || return
    keys e C-u
    typed "2x8"
    keys Enter
    wait_for "float32[2,8,64]" || return
    assert_screen "(override)"
    # Benchmark original vs optimized, with the equivalence check: runs
    # set to 3 in the panel (g: least, 1; l l: +2), the rows named after
    # the file and "optimized", the per-operator table of the last run.
    keys 0 g l l
    wait_for " runs 3 " || return
    keys b
    wait_for "speedup x" 30 || return
    assert_screen "max abs error"
    assert_screen "3 timed runs after 1 warm-up"
    wait_re "^  $(basename "$TRF") +[0-9]+\.[0-9]{3} " || return
    wait_re "^  optimized +[0-9]+\.[0-9]{3} " || return
    assert_screen "operator types of optimized (fastest of 3 profiled runs"
    wait_re "^  [A-Za-z:.]+ +[1-9][0-9]* +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]%" || return
    keys b Escape
    wait_for "Bench" || return
    keys Tab
    wait_for "Overview" || return
    quit_clean
}

run_ascii() {
    SCEN="ascii"
    echo "== $SCEN"
    start 80 24 TERM=xterm-256color -- --ascii "$CNN"
    wait_for "Conv 2" || return
    keys 2 j j v
    wait_for "/Relu_2" || return
    assert_screen "[Relu /Relu_2]"
    assert_screen "| 1x8x32x32"
    assert_not_screen "│"
    quit_clean
    SCEN="non-UTF-8 locale"
    echo "== $SCEN"
    start 80 24 TERM=vt100 LANG=C LC_ALL=C -- "$CNN"
    wait_for "Conv 2" || return
    keys 2 j j v
    wait_for "/Relu_2" || return
    assert_screen "| 1x8x32x32"
    assert_not_screen "│"
    quit_clean
}

run_errors() {
    SCEN="bad file"
    echo "== $SCEN"
    printf 'this is not an onnx model' >"$TMP/bad.onnx"
    start 80 24 TERM=xterm-256color -- "$TMP/bad.onnx"
    wait_for "Cannot open" || return
    keys q
    wait_for "EXIT=1" || return
    SCEN="missing file"
    echo "== $SCEN"
    start 80 24 TERM=xterm-256color -- "$TMP/nonexistent.onnx"
    wait_for "Cannot open" || return
    keys q
    wait_for "EXIT=3" || return
}

run_themes() {
    SCEN="themes"
    echo "== $SCEN"
    mkdir -p "$TMP/xdg/onnxscope/themes"
    printf 'name = mine\nui.title = red on black bold\n' >"$TMP/xdg/onnxscope/themes/mine.theme"
    printf 'name = broken\nui.title = notacolour\n' >"$TMP/xdg/onnxscope/themes/broken.theme"
    start 80 24 TERM=xterm-256color XDG_CONFIG_HOME="$TMP/xdg" -- --theme mine "$CNN"
    wait_for "Conv 2" || return
    assert_not_screen "using the default"
    quit_clean
    start 80 24 TERM=xterm-256color XDG_CONFIG_HOME="$TMP/xdg" -- --theme broken "$CNN"
    wait_for "using the default" || return
    assert_screen "broken.theme:2"
    quit_clean
    for th in light high-contrast mono; do
        start 80 24 TERM=xterm-256color -- --theme "$th" "$CNN"
        wait_for "Conv 2" || return
        assert_not_screen "using the default"
        quit_clean
    done
}

# Subgraph bodies (a Loop from the ONNX backend data) and a terminal resize.
run_subgraphs() {
    SCEN="subgraphs + resize"
    echo "== $SCEN"
    local m=${ONNXSCOPE_SHARED:-}/onnx-backend/node/test_loop11/model.onnx
    if [ -z "${ONNXSCOPE_SHARED:-}" ] || [ ! -f "$m" ]; then
        echo "SKIP [$SCEN]: ONNXSCOPE_SHARED/onnx-backend/node/test_loop11 not available"
        return
    fi
    start 80 24 TERM=xterm-256color -- "$m"
    wait_for "1 nodes (10 with subgraphs)" || return
    keys 7
    wait_for "loop_body" || return
    keys Enter
    wait_for "entered main > loop_body" || return
    keys 2
    wait_for "9 of 9 nodes" || return
    keys BSpace
    wait_for "left the subgraph" || return
    keys 2
    wait_for "1 of 1 nodes" || return
    # Resize: the tab bar switches to its wide form.
    tmux -L "$SOCK" resize-window -t t -x 120 -y 40
    wait_for " 1 Overview " || return
    tmux -L "$SOCK" resize-window -t t -x 80 -y 24
    wait_for "1Overview 2Nodes" || return
    quit_clean
}

# Unknown MACs are "?" in every panel and footer, never 0 or a partial sum
# (a model whose input has a symbolic dim); fixing the shape makes them known.
run_unknown_macs() {
    SCEN="unknown MACs"
    echo "== $SCEN"
    if [ -z "${ONNXSCOPE_GEN_BIG:-}" ] || [ ! -x "$ONNXSCOPE_GEN_BIG" ]; then
        echo "SKIP [$SCEN]: ONNXSCOPE_GEN_BIG (tests/tui/gen_big_model) not built"
        return
    fi
    "$ONNXSCOPE_GEN_BIG" "$TMP/sym.onnx" 3 8 batch || { fail "gen_big_model failed"; return; }
    start 120 30 TERM=xterm-256color -- "$TMP/sym.onnx"
    wait_for "Peak activ." || return
    CHECKS=$((CHECKS + 1))
    screen | grep -qE '^ *MACs +\? ' || fail "Overview: MACs is not '?'"
    keys 2
    wait_for "total MACs ?" || return
    CHECKS=$((CHECKS + 1))
    [ "$(screen | grep -cE ' Add .* \? +- *$')" -eq 3 ] || fail "Nodes: rows are not '?' / '-'"
    keys Enter
    wait_for "MACs ?   params" || return
    keys 5
    wait_for "MACs ?   peak ?" || return
    keys 8 a
    wait_for "MACs ? -> ?" 20 || return
    keys 9
    wait_for "Diff: original" || return
    CHECKS=$((CHECKS + 1))
    screen | grep -qE '^ +MACs +\? +\?' || fail "Diff: MACs are not '? ?'"
    assert_not_screen "MACs 0"
    # A fixed shape makes them numbers: 3 Adds x 4x8 elements.
    keys 8 r
    wait_for "reset to the original model" || return
    keys 5 e C-u
    typed "4x8"
    keys Enter
    wait_for "MACs 96   peak" || return
    keys 2
    wait_for "total MACs 96" || return
    quit_clean
}

# The loading bar moves while a large model (438 MB of initializers in
# 107,000 nodes) opens: several distinct fractions are drawn before the
# panels appear.
run_load_progress() {
    SCEN="loading progress"
    echo "== $SCEN"
    if [ -z "${ONNXSCOPE_GEN_BIG:-}" ] || [ ! -x "$ONNXSCOPE_GEN_BIG" ]; then
        echo "SKIP [$SCEN]: ONNXSCOPE_GEN_BIG (tests/tui/gen_big_model) not built"
        return
    fi
    "$ONNXSCOPE_GEN_BIG" "$TMP/big.onnx" 107000 1024 || { fail "gen_big_model failed"; return; }
    CHECKS=$((CHECKS + 1))
    [ "$(stat -c %s "$TMP/big.onnx")" -gt 438000000 ] || fail "the generated model is under 438 MB"
    start 80 24 TERM=xterm-256color -- "$TMP/big.onnx"
    local seen="" deadline=$(( $(date +%s) + 120 ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        local s
        s=$(screen)
        if printf '%s' "$s" | grep -qF "Peak activ."; then
            break
        fi
        local p
        p=$(printf '%s' "$s" | grep -oE '\] +[0-9]+%' | grep -oE '[0-9]+' | head -1)
        case " $seen " in *" $p "*) ;; *) [ -n "$p" ] && seen="$seen $p" ;; esac
        sleep 0.02
    done
    rm -f "$TMP/big.onnx"
    local n_mid=0 v
    for v in $seen; do
        [ "$v" -gt 0 ] && [ "$v" -lt 100 ] && n_mid=$((n_mid + 1))
    done
    echo "   progress values seen:$seen"
    CHECKS=$((CHECKS + 1))
    [ "$n_mid" -ge 3 ] || fail "the loading bar did not move (values seen:$seen)"
    wait_for "107000 nodes" || return
    quit_clean
}

# The Bench panel takes --fill like `onnxscope bench`: the If-branch model
# (tools/gen_samples --if-branch) only runs when sr selects the 16 kHz branch.
run_fill() {
    SCEN="bench --fill"
    echo "== $SCEN"
    local gen
    gen=$(dirname "$BIN")/tools/gen_samples
    if [ ! -x "$gen" ]; then
        echo "SKIP [$SCEN]: $gen not built"
        return
    fi
    "$gen" --if-branch "$TMP/ifb.onnx" >/dev/null || { fail "gen_samples --if-branch"; return; }
    start 80 24 TERM=xterm-256color -- "$TMP/ifb.onnx"
    wait_for "Overview" || return
    keys 0 b
    wait_for "benchmark failed" 20 || return
    quit_clean
    start 80 24 TERM=xterm-256color -- --fill sr=16000 "$TMP/ifb.onnx"
    wait_for "Overview" || return
    keys 0
    wait_for "--input/--fill, rest random" || return
    keys b
    wait_for "benchmark done" 20 || return
    quit_clean
}

# Saving after changing an input shape to look at costs asks whether to keep
# the file's symbolic dims (the default, Enter) or fix them (f).
run_save_dims() {
    SCEN="save: keep or fix the symbolic dims"
    echo "== $SCEN"
    start 80 24 TERM=xterm-256color -- "$TRF"
    wait_for "Overview" || return
    keys 5
    wait_for "int64[batch,sequence]" || return
    keys e C-u
    typed "2x8"
    keys Enter
    wait_for "float32[2,8,64]" || return
    keys w C-u
    typed "$TMP/keep.onnx"
    keys Enter
    wait_for "shapes changed: Enter/k keep symbolic dims, f fix them" || return
    keys Enter
    wait_for "nodes, symbolic dims kept) to" || return
    check "kept: the input is still int64[batch,sequence]" \
        sh -c "'$BIN' info '$TMP/keep.onnx' | grep -qF 'int64[batch,sequence]'"
    keys w C-u
    typed "$TMP/fixed.onnx"
    keys Enter
    wait_for "shapes changed: Enter/k keep symbolic dims, f fix them" || return
    keys f
    wait_for "nodes, dims fixed) to" || return
    check "fixed: the input is int64[2,8]" \
        sh -c "'$BIN' info '$TMP/fixed.onnx' | grep -qF 'int64[2,8]'"
    check "fixed: the output's batch is 2" \
        sh -c "'$BIN' info '$TMP/fixed.onnx' | grep -qE 'last_hidden_state +float32\[2,'"
    check "both saved models pass our checker" sh -c "'$BIN' check '$TMP/keep.onnx' && '$BIN' check '$TMP/fixed.onnx'"
    quit_clean
}

run_keymap_docs() {
    SCEN="key map in docs/TUI.md"
    echo "== $SCEN"
    local doc=$SRC/docs/TUI.md
    CHECKS=$((CHECKS + 1))
    if [ ! -f "$doc" ]; then
        fail "docs/TUI.md missing"
        return
    fi
    while IFS= read -r line; do
        CHECKS=$((CHECKS + 1))
        grep -qF -- "$line" "$doc" || fail "docs/TUI.md lacks key map line: $line"
    done < <("$BIN" --help-keys)
}

run_cnn xterm-256color 80 24
run_cnn vt100 80 24
run_cnn xterm-256color 200 60 NO_COLOR=1
run_trf xterm-256color 80 24
run_trf vt100 200 60
run_trf xterm-256color 200 60 NO_COLOR=1
# Layout that uses the terminal (issue 13, item 5): the op column as wide
# as the widest op at 80 and 160 columns, a long error wrapped in full,
# the title and the Overview saying the optimized copy is shown.
run_layout() {
    local w
    for w in 80 160; do
        SCEN="layout ${w}x24"
        echo "== $SCEN"
        start "$w" 24 TERM=xterm-256color -- "$CNN"
        wait_for "Conv 2" || return
        keys 2
        wait_for "/BatchNormalization_1" || return
        CHECKS=$((CHECKS + 1))
        screen | grep -qE '^ +1 BatchNormalization /BatchNormalization_1' ||
            fail "the op column cuts BatchNormalization"
        keys 8 a
        wait_for "applied:" 20 || return
        keys 1
        wait_for "the optimized copy (all enabled passes" || return
        if [ "$w" = 80 ]; then assert_screen "[opt]"; else assert_screen "tiny_cnn.onnx (optimized)"; fi
        quit_clean
    done
    SCEN="long error wraps"
    echo "== $SCEN"
    if [ -z "${ONNXSCOPE_GEN_BIG:-}" ] || [ ! -x "$ONNXSCOPE_GEN_BIG" ]; then
        echo "SKIP [$SCEN]: ONNXSCOPE_GEN_BIG (tests/tui/gen_big_model) not built"
        return
    fi
    "$ONNXSCOPE_GEN_BIG" "$TMP/l2100.onnx" 2100 1 || { fail "gen_big_model failed"; return; }
    start 80 24 TERM=xterm-256color -- "$TMP/l2100.onnx"
    wait_for "Peak activ." || return
    keys x C-u
    typed "$TMP/l2100.svg"
    keys Enter
    # The library's message is ~210 characters: its start and its end show.
    wait_for "export failed: the graph has 2102 nodes" || return
    wait_for "or write .dot text (no layout)" || return
    keys 2
    wait_for "of 2100 nodes" || return
    assert_not_screen "or write .dot text"
    quit_clean
}

run_ascii
run_layout
run_errors
run_themes
run_subgraphs
run_unknown_macs
run_load_progress
run_fill
run_save_dims
run_keymap_docs

echo "$CHECKS checks, $FAILS failures"
[ "$FAILS" -eq 0 ]
