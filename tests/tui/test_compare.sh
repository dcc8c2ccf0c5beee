#!/usr/bin/env bash
# Two models (issue 13, item 7): `onnxscope A B` on a model and its
# `optimize -o` copy shows in the Diff panel the counts `optimize --json`
# reports for the pair (parsed here from the JSON, compared at the panel's
# display precision), the nodes the comparison found are jumpable (] and C),
# `onnxscope diff A B --json` agrees with `optimize --json`, and without a
# terminal `onnxscope A B` prints the diff. Exit 77 = skipped.
set -u

BIN=${ONNXSCOPE_BIN:-}
PY=$(command -v python3 || true)
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed (the TUI tests drive the binary in tmux)"
    exit 77
fi
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "SKIP: ONNXSCOPE_BIN is not set to the built program"
    exit 77
fi
if [ -z "$PY" ]; then
    echo "SKIP: python3 is needed to parse the JSON"
    exit 77
fi
SRC=$(cd "$(dirname "$0")/../.." && pwd)
A=$SRC/samples/tiny_cnn.onnx
TMP=$(mktemp -d /tmp/oxcmp.XXXXXX)
. "$(dirname "$0")/tmux_lib.sh"
trap 'tmux_cleanup; rm -rf "$TMP"' EXIT
B=$TMP/opt.onnx
"$BIN" optimize "$A" -o "$B" --json >"$TMP/opt.json" || { echo "FAIL: optimize"; exit 1; }

# check_panel FILE: the Diff panel's totals against optimize --json.
check_panel() {
    CHECKS=$((CHECKS + 1))
    if ! "$PY" - "$TMP/opt.json" "$1" <<'EOF'; then
import json, re, sys
j = json.load(open(sys.argv[1]))
scr = open(sys.argv[2]).read().splitlines()
units = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
bunits = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
def row(label):
    for l in scr:
        m = re.match(r"\s*" + re.escape(label) + r"\s{2,}(\S+(?: \S+)?)\s{2,}(\S+(?: \S+)?)\s*$", l)
        if m:
            return m.group(1), m.group(2)
    sys.exit("no row '%s'" % label)
def count(s):   # "575.49K": value and half the last digit shown
    m = re.fullmatch(r"(-?[0-9.]+)([KMGT]?)", s)
    dec = len(m.group(1).split(".")[1]) if "." in m.group(1) else 0
    u = units[m.group(2)]
    return float(m.group(1)) * u, 0.5 * 10**-dec * u
def nbytes(s):  # "45.84 KiB"
    v, u = s.split(" ")
    dec = len(v.split(".")[1]) if "." in v else 0
    return float(v) * bunits[u], 0.5 * 10**-dec * bunits[u]
bad = []
def near(label, shown, want):
    v, tol = shown
    if abs(v - want) > tol + 1e-9:
        bad.append("%s: panel %g, optimize --json %g" % (label, v, want))
for side, k in (("before", 0), ("after", 1)):
    o = j[side]
    r = row("nodes")
    if int(r[k]) != o["nodes"]:
        bad.append("nodes %s: panel %s, json %d" % (side, r[k], o["nodes"]))
    near("params " + side, count(row("params")[k]), o["params"])
    near("weights " + side, nbytes(row("weights")[k]), o["weights_bytes"])
    near("MACs " + side, count(row("MACs")[k]), o["macs"])
    near("FLOPs " + side, count(row("FLOPs")[k]), o["flops"])
    near("peak " + side, nbytes(row("peak activations")[k]), o["peak_activation_bytes"])
# removed - added = the node count's drop
m = [re.search(r"nodes: (\d+) same, (\d+) changed, (\d+) added, (\d+) removed", l) for l in scr]
m = [x for x in m if x]
if not m:
    bad.append("no 'nodes: N same, ...' line")
else:
    same, changed, added, removed = map(int, m[0].groups())
    if removed - added != j["before"]["nodes"] - j["after"]["nodes"]:
        bad.append("removed %d - added %d != %d - %d" % (removed, added, j["before"]["nodes"],
                                                         j["after"]["nodes"]))
    if same + changed + added != j["after"]["nodes"]:
        bad.append("same+changed+added != B's nodes")
if bad:
    sys.exit("; ".join(bad))
EOF
        fail "Diff panel disagrees with optimize --json"
    fi
}

run_panel() {
    SCEN="two models: Diff panel = optimize --json"
    echo "== $SCEN"
    start 80 24 TERM=xterm-256color -- "$A" "$B"
    wait_for "Compared with" 30 || return
    keys 9
    wait_for "Diff: A tiny_cnn.onnx -> B opt.onnx" || return
    wait_for "peak activations" || return
    screen >"$TMP/panel.txt"
    check_panel "$TMP/panel.txt"
    # The nodes only A has are listed (the folded BatchNormalizations).
    keys G
    wait_for "removed (only in A)" || return
    wait_re "^  - #[0-9]+ +BatchNormalization" || return
    # ] goes to a changed node of B in the Nodes list, marked '*'.
    keys ']'
    wait_re "^\* Conv .*\(row [0-9]+ of [0-9]+\)" || return
    # C lists only the changed/added nodes: as many as the panel counted.
    local ch ad
    ch=$(grep -oE '[0-9]+ changed' "$TMP/panel.txt" | head -1 | cut -d' ' -f1)
    ad=$(grep -oE '[0-9]+ added' "$TMP/panel.txt" | head -1 | cut -d' ' -f1)
    keys 2 C
    wait_for "$((ch + ad)) of " || return
    wait_for "added or changed since A tiny_cnn.onnx" || return
    keys q
    wait_for "EXIT=0" || return
}

run_cli() {
    SCEN="onnxscope diff A B --json agrees with optimize --json"
    echo "== $SCEN"
    CHECKS=$((CHECKS + 1))
    "$BIN" diff "$A" "$B" --json >"$TMP/diff.json" || { fail "diff exit $?"; return; }
    if ! "$PY" - "$TMP/opt.json" "$TMP/diff.json" <<'EOF'; then
import json, sys
o = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))
for k in ("nodes", "params", "weights_bytes", "macs", "flops", "peak_activation_bytes"):
    if o["before"][k] != d["a"][k] or o["after"][k] != d["b"][k]:
        sys.exit("%s: optimize %s -> %s, diff %s -> %s" % (k, o["before"][k], o["after"][k],
                                                           d["a"][k], d["b"][k]))
n = d["nodes"]
if n["removed"] != len(d["removed"]) or n["added"] != len(d["added"]) or \
   n["changed"] != len(d["changed"]):
    sys.exit("counts and lists disagree")
hist_a, hist_b = o["before"]["op_histogram"], o["after"]["op_histogram"]
gone = sum(max(0, c - hist_b.get(op, 0)) for op, c in hist_a.items())
if n["removed"] < gone:
    sys.exit("removed %d < op types' drop %d" % (n["removed"], gone))
EOF
        fail "diff --json disagrees"
    fi
    CHECKS=$((CHECKS + 1))
    "$BIN" diff "$A" >/dev/null 2>"$TMP/err"
    local rc=$?
    [ $rc -eq 2 ] && grep -q "two models" "$TMP/err" || fail "diff with one model: exit $rc"
    # No terminal: `onnxscope A B` prints the diff.
    CHECKS=$((CHECKS + 1))
    "$BIN" "$A" "$B" </dev/null >"$TMP/out" 2>&1
    grep -q "removed (only in A)" "$TMP/out" || fail "no-terminal fallback: $(head -3 "$TMP/out")"
}

run_panel
run_cli
echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]
