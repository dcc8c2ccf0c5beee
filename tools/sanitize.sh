#!/usr/bin/env bash
# Builds onnxscope with AddressSanitizer and UndefinedBehaviorSanitizer
# (gcc, -Db_sanitize=address,undefined, debug) into ./build-asan and runs
# test suites under them, leak checking on (tools/lsan.supp silences only
# third-party libraries' process-lifetime caches). Any sanitizer report fails the test.
#   tools/sanitize.sh        the unit and fuzz suites plus the quick
#                            conformance tests; builds ./build first
#   tools/sanitize.sh --ci   every suite: unit, fuzz (the replay of
#                            tests/fuzz/regress/), conformance and tui; .ci/run
#                            calls it after the normal suite. Closing line:
#                            "N passed, N failed, N skipped".
# The whole suite under the sanitizers takes about 8 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ci=0
case "${1:-}" in
    --ci) ci=1 ;;
    '') ;;
    *) echo "sanitize.sh: unknown option '$1' (use --ci or nothing)" >&2; exit 2 ;;
esac

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:print_summary=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tools/lsan.supp:print_suppressions=0}

[ $ci -eq 1 ] || bash tools/build.sh >/dev/null
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined \
    -Dbuildtype=debug >/dev/null
ninja -C build-asan >/dev/null
# Sanitized code runs 2-3 times slower: scale the tests' timeouts.
if [ $ci -eq 0 ]; then
    meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3 \
        --suite unit --suite fuzz
    meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3 \
        io_roundtrip backend_simple backend_models
    exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3 \
    2>&1 | tee "$log" || rc=$?
ok=$(awk '/^Ok:/ {print $2}' "$log")
fail=$(awk '/^(Fail|Timeout|Unexpected Pass):/ {n += $NF} END {print n + 0}' "$log")
skipped=$(awk '/^Skipped:/ {print $2}' "$log")
echo "${ok:-0} passed, ${fail:-0} failed, ${skipped:-0} skipped"
exit "$rc"
