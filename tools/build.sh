#!/usr/bin/env bash
# Installs the Debian packages onnxscope needs (when missing) and builds it
# into ./build. Safe to run again: it only does what is left to do.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(meson ninja-build pkg-config gcc protobuf-c-compiler libprotobuf-c-dev
      libncurses-dev libgraphviz-dev graphviz libjansson-dev libcmocka-dev
      tmux python3-onnx libdnnl-dev
      libcairo2-dev)  # optional: PNG charts of `matrix --chart` (docs/CLI.md)
missing=()
for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -f build/build.ninja ]; then
    meson setup build --buildtype=debugoptimized
fi
ninja -C build
