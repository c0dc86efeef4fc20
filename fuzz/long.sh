#!/usr/bin/env bash
# long.sh <cpu-seconds> [target ...]: the long runs. Runs each target (default: all) one
# after the other, under `nice -n 15` (ZT_FUZZ_NICE to change it), with a persistent corpus fuzz/corpus/<target>
# (seeded by seeds.sh when empty), until the fuzzer process has used <cpu-seconds> of CPU
# time (user + system, read from /proc; on a shared machine wall time says little), then
# stops it with SIGINT so libFuzzer prints its final stats. Logs: fuzz/logs/<target>.log;
# findings: fuzz/artifacts/<target>-*. Prints one summary line per target.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
budget=$1
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(open_walk safetensors gguf tensogram ztensor_v01 ztensor_v2 manifest writer pytorch npy zip onnx)
fi
bin_dir="$(dirname "$("$here/build.sh" | tail -n 1)")"
mkdir -p "$here/corpus" "$here/artifacts" "$here/logs"
tick=$(getconf CLK_TCK)
for t in "${targets[@]}"; do
  corpus="$here/corpus/$t"
  if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
    "$here/seeds.sh" "$t" "$corpus"
  fi
  log="$here/logs/$t.log"
  nice -n "${ZT_FUZZ_NICE:-15}" "$bin_dir/$t" "$corpus" -dict="$here/ztensor.dict" -timeout=10 -rss_limit_mb=4096 \
    -max_len=262144 -artifact_prefix="$here/artifacts/$t-" -print_final_stats=1 -close_fd_mask=1 \
    >"$log" 2>&1 &
  pid=$!
  used=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    if [ -r "/proc/$pid/stat" ]; then
      used=$(awk -v t="$tick" '{print int(($14 + $15) / t)}' "/proc/$pid/stat" 2>/dev/null || echo "$used")
    fi
    if [ "$used" -ge "$budget" ]; then
      kill -INT "$pid" 2>/dev/null || true
      break
    fi
  done
  status=0
  wait "$pid" || status=$?
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  echo "$t: ${used} CPU-s, exit $status, last: $last"
done
