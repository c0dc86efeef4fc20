#!/usr/bin/env bash
# CI smoke run of the fuzzers: builds every target (fuzz/build.sh), seeds each with the
# committed vectors in its input form (fuzz/seeds.sh, into a scratch directory, so
# nothing in the source tree changes) and fuzzes each for ZT_FUZZ_SECONDS (default 10,
# at most 60) on one core, one target after the other. ZT_FUZZ_TARGETS="a b" runs only
# those. Exits 1 on a crash, a timeout, an out-of-memory or a leak in any target (the
# reproducer is then under fuzz/artifacts/<target>-...), 77 (skipped) when this machine
# can't build a fuzzer: no cargo, or no C++ compiler for libFuzzer. Prints libFuzzer's
# final stats (executions, coverage) per target.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
seconds="${ZT_FUZZ_SECONDS:-10}"
if [ "$seconds" -gt 60 ]; then seconds=60; fi
targets=(${ZT_FUZZ_TARGETS:-open_walk safetensors gguf tensogram ztensor_v01 ztensor_v2 manifest writer pytorch npy zip onnx})
if ! command -v cargo >/dev/null 2>&1; then
  echo "fuzz smoke: SKIP (no cargo)" >&2
  exit 77
fi
if ! command -v "${CXX:-c++}" >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1 \
  && ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz smoke: SKIP (no C++ compiler to build libFuzzer with)" >&2
  exit 77
fi
bin_dir="$(dirname "$("$here/build.sh" | tail -n 1)")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$here/artifacts"
passed=0
failed=0
for t in "${targets[@]}"; do
  "$here/seeds.sh" "$t" "$work/$t" 2>&1 | sed 's/^/  /' >&2
  echo "fuzz smoke: $t, ${seconds}s" >&2
  status=0
  "$bin_dir/$t" "$work/$t" -dict="$here/ztensor.dict" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=4096 -max_len=262144 -artifact_prefix="$here/artifacts/$t-" -print_final_stats=1 \
    -close_fd_mask=1 >"$work/$t.log" 2>&1 || status=$?
  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|Test unit written)' \
    "$work/$t.log" | sed 's/^/  /' >&2 || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$work/$t.log" >&2
    echo "fuzz smoke: $t FAILED (exit $status); reproducer under $here/artifacts/" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
