#!/usr/bin/env bash
# Runs every libFuzzer harness of tests/fuzz for MINUTES minutes each
# (default 10) and prints each one's executions, coverage and findings.
#   bench/fuzz.sh [MINUTES] [HARNESS...]     harnesses: load infer passes opset exec theme
# Environment: JOBS (harnesses run at once, default 1), BUILD (default
# build-fuzz, configured with CC=clang -Dfuzz=true), SHARED (test data,
# default ../shared), NICE (default 10).
# Seeds are made at run time in $BUILD/seeds/: our samples/ and themes/ and
# the small (< 8 KiB) ONNX backend conformance models of $SHARED (copied,
# never committed). The growing corpus stays in $BUILD/corpus/<harness>/
# between runs; crashes land in $BUILD/crashes/<harness>/ and belong in
# tests/fuzz/regress/<harness>/ once fixed (the fuzz suite replays them).
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-10}
shift || true
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(load infer passes opset exec theme)
BUILD=${BUILD:-build-fuzz}
SHARED=${SHARED:-../shared}
JOBS=${JOBS:-1}
NICE=${NICE:-10}
case "$MINUTES" in
    ''|*[!0-9.]*) echo "fuzz.sh: MINUTES must be a number (got '$MINUTES')" >&2; exit 2 ;;
esac
for h in "${HARNESSES[@]}"; do
    case "$h" in
        load|infer|passes|opset|exec|theme) ;;
        *) echo "fuzz.sh: unknown harness '$h' (load, infer, passes, opset, exec, theme)" >&2; exit 2 ;;
    esac
done
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (libFuzzer)" >&2; exit 2; }

if [ ! -f "$BUILD/build.ninja" ]; then
    CC=clang meson setup "$BUILD" -Dfuzz=true --buildtype=debugoptimized >/dev/null
fi
nice -n "$NICE" ninja -C "$BUILD" $(printf 'tests/fuzz/fuzz_%s ' "${HARNESSES[@]}") >/dev/null

# Seeds: model harnesses share one folder, the theme harness has its own.
models=$BUILD/seeds/models
themes=$BUILD/seeds/theme
rm -rf "$BUILD/seeds"
mkdir -p "$models" "$themes"
cp samples/*.onnx "$models/"
cp themes/*.theme "$themes/"
if [ -d "$SHARED/onnx-backend" ]; then
    find "$SHARED/onnx-backend" -name model.onnx -size -8k | while read -r f; do
        d=${f%/model.onnx}
        cp "$f" "$models/$(basename "$(dirname "$d")")_$(basename "$d").onnx"
    done
else
    echo "fuzz.sh: $SHARED/onnx-backend not found: seeds are samples/ only" >&2
fi
echo "seeds: $(ls "$models" | wc -l) models, $(ls "$themes" | wc -l) themes"

# Dictionaries: operator names (from docs/OPERATORS.md, the registry's
# listing) let mutations turn one op into another of the same length;
# theme keys and words let the theme harness reach every slot.
awk -F'|' '/^\| [A-Z]/ { gsub(/ /, "", $2); print "\"" $2 "\"" }' docs/OPERATORS.md |
    sort -u >"$BUILD/seeds/models.dict"
{ sed -n 's/^\([a-z0-9_.]*\) *=.*/"\1"/p' themes/*.theme
  for w in on bold dim underline reverse italic default bright- grey '#' '/'; do echo "\"$w\""; done
} | sort -u >"$BUILD/seeds/theme.dict"

secs=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 }')
run_one() {
    local h=$1 seeds=$models dict=$BUILD/seeds/models.dict
    [ "$h" = theme ] && seeds=$themes dict=$BUILD/seeds/theme.dict
    mkdir -p "$BUILD/corpus/$h" "$BUILD/crashes/$h"
    # -timeout: a unit slower than 10 s is a finding (bounded time);
    # -rss_limit_mb: so is one that needs 2 GiB.
    nice -n "$NICE" "$BUILD/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -dict="$dict" -print_final_stats=1 -artifact_prefix="$BUILD/crashes/$h/" \
        "$BUILD/corpus/$h" "$seeds" >"$BUILD/fuzz_$h.log" 2>&1 || true
}
export -f run_one
export BUILD NICE secs models themes
printf '%s\n' "${HARNESSES[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one {}'

printf '%-8s %12s %8s %8s %8s %s\n' harness executions exec/s cov ft findings
for h in "${HARNESSES[@]}"; do
    log=$BUILD/fuzz_$h.log
    execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -1)
    rate=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    found=$(ls "$BUILD/crashes/$h" | wc -l)
    printf '%-8s %12s %8s %8s %8s %s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
        "$found (in $BUILD/crashes/$h, log $log)"
done
