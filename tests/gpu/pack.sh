#!/usr/bin/env bash
# Makes build/gpu-carry/libztensor.so: the built library without its debug information
# (the RelWithDebInfo one is over the device tool's 64 MiB carry limit), for
# tests/gpu/run_device.sh on a machine without cargo. Run after `cmake --build build`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="${1:-$root/build}"
lib=$(readlink -f "$build/lib/libztensor.so")
mkdir -p "$build/gpu-carry"
strip --strip-debug -o "$build/gpu-carry/libztensor.so" "$lib"
ls -l "$build/gpu-carry/libztensor.so"
echo "carry build/gpu-carry; run: bash tests/gpu/run_device.sh \"\$OUT\""
