#!/usr/bin/env bash
# Builds the benchmark here and leaves a stripped x86-64 copy in bench/device/ztensor-bench
# (git-ignored) for run16.sh to carry to a machine that has no cargo and no network:
#
#   bash bench/device/build.sh
#   # then, with the device tool: carry ["bench/device/ztensor-bench"], run
#   #   bash bench/device/run16.sh "$OUT"
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release --manifest-path "$root/bench/Cargo.toml"
strip -o "$root/bench/device/ztensor-bench" "$root/bench/target/release/ztensor-bench"
ls -l "$root/bench/device/ztensor-bench"
