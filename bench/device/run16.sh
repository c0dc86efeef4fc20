#!/usr/bin/env bash
# The 16-core table of issue 28, on a machine without cargo or network (the device tool's
# H100 box: 16 cores, 128 GiB): the prebuilt benchmark (bench/device/build.sh) measures
# ours, the peers and the limits on W1, W2, W3, then the scaling table (the library's
# pool at 1, 2, 4, 8, 16 threads) and its chart.
#
#   bash bench/device/run16.sh [OUT]     # OUT: results, table, charts (default $OUT, else /tmp/zt16)
#
# About 6-9 minutes on 16 cores (the data, ~6 GiB, is generated first in $ZT_DATA, default
# /tmp/zt16-data). Environment: ZT_RUNS (default 3), ZT_SECTIONS (default the issue's),
# ZT_QUICK=1 (workloads ~16x smaller: a smoke test of the script).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/ztensor-bench"
out="${1:-${OUT:-/tmp/zt16}}"
data="${ZT_DATA:-/tmp/zt16-data}"
runs="${ZT_RUNS:-3}"
sections="${ZT_SECTIONS:-list,views,load,batch,hostcold,zstd,write,verify,scaling}"
if [[ ! -x "$bin" ]]; then
  echo "run16.sh: $bin is missing: run bench/device/build.sh first and carry it" >&2
  exit 2
fi
mkdir -p "$out" "$data"
{
  echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo || true)"
  echo "memory: $(grep MemTotal /proc/meminfo)"
  echo "load: $(cat /proc/loadavg)"
  echo "disk: $(df -h "$data" | tail -1)"
} | tee "$out/machine.txt"
start=$(date +%s)
quick=()
if [[ "${ZT_QUICK:-0}" == 1 ]]; then quick=(--quick); fi
"$bin" "${quick[@]}" --dir "$data" --runs "$runs" --only "$sections" --out "$out/results-16.json" \
  2> >(tee "$out/progress.log" >&2) | tee "$out/table-16.txt"
"$bin" charts --in "$out/results-16.json" --dir "$out/charts"
echo "run16.sh: done in $(( $(date +%s) - start )) s; results in $out"
