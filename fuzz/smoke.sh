#!/usr/bin/env bash
# CI smoke run of the fuzzer: builds fuzz/build.sh's target, seeds it with the hostile
# corpus, the reference vectors and the Tensogram vectors (copied to a scratch directory,
# so nothing in the source tree changes) and fuzzes for ZT_FUZZ_SECONDS (default 45, at
# most 60) on one core. Exits non-zero on a crash, a timeout, an out-of-memory or a leak;
# the reproducer is then under fuzz/artifacts/. Prints libFuzzer's final stats
# (executions, coverage).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
seconds="${ZT_FUZZ_SECONDS:-45}"
if [ "$seconds" -gt 60 ]; then seconds=60; fi
bin="$("$here/build.sh" | tail -n 1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here"/../tests/vectors/hostile/*.zt "$work"/
cp "$here"/../tests/vectors/reference/*.zt "$work"/ 2>/dev/null || true
cp "$here"/../tests/vectors/tensogram/*.tgm "$work"/ 2>/dev/null || true
mkdir -p "$here/artifacts"
echo "fuzz smoke: $(ls "$work" | wc -l) seeds, ${seconds}s" >&2
status=0
"$bin" "$work" -dict="$here/ztensor.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -max_len=262144 -artifact_prefix="$here/artifacts/" -print_final_stats=1 -close_fd_mask=1 \
  >"$work/fuzz.log" 2>&1 || status=$?
grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)' "$work/fuzz.log" >&2 || true
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/fuzz.log" >&2
  echo "fuzz smoke: FAILED (exit $status); reproducer under $here/artifacts/" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
echo "fuzz smoke: no crash" >&2
echo "1 passed, 0 failed"
