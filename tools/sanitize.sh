#!/usr/bin/env bash
# Builds onnxscope with AddressSanitizer and UndefinedBehaviorSanitizer into
# ./build-asan and runs the unit and fuzz suites plus the quick conformance
# tests under them (leak checking on). Not part of CI (it doubles the build
# time); run it before landing changes to the loader, IR or kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh >/dev/null
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Dbuildtype=debug
ninja -C build-asan
meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite fuzz
meson test -C build-asan --print-errorlogs --num-processes 2 io_roundtrip backend_simple backend_models
