#!/usr/bin/env bash
# Issue 27 on a CUDA machine, in one script: builds tests/gpu/gpu_load against the carried
# library, runs its self-test, checks the Python (ctypes) bindings' struct layout, makes
# the 8 GiB Llama-like bf16 safetensors file and its zstd .zt twin, checks every tensor
# the loader puts on the GPU against safetensors.torch.load_file (whole, a column eighth,
# the .zt), and prints the issue's table with the loader's rows (bench_torch.py).
#
#   bash tests/gpu/run_device.sh [OUT]         # OUT: default $OUT, else /tmp/zt-gpu
#
# Where there is no CUDA GPU (or no torch) every part that needs one is skipped with a
# message and the script exits 0: the ctest gpu_run_device runs it that way here, with
# ZT_GPU_QUICK=1 (a ~1 MB file instead of 8 GiB).
#
# The library: $ZT_LIBDIR/libztensor.so, by default build/gpu-carry (made by
# tests/gpu/pack.sh: the library stripped, small enough to carry) or else build/lib.
# On the device machine (no cargo, no network; nvcc, PyTorch, safetensors, a C compiler):
#   here:   cmake --build build && bash tests/gpu/pack.sh
#   there:  bash tests/gpu/run_device.sh "$OUT"      (carry: build/gpu-carry)
# About 4-6 minutes on a 16-core H100 machine, most of it making the file and the cold
# reads. Environment: ZT_GPU_DATA (where the files go, default /tmp/zt-gpu-data),
# ZT_GPU_REPEATS (default 3), CC (default cc), ZT_GPU_QUICK=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="${1:-${OUT:-/tmp/zt-gpu}}"
data="${ZT_GPU_DATA:-/tmp/zt-gpu-data}"
repeats="${ZT_GPU_REPEATS:-3}"
quick="${ZT_GPU_QUICK:-0}"
if [[ -z "${ZT_LIBDIR:-}" ]]; then
  if [[ -e "$root/build/gpu-carry/libztensor.so" ]]; then
    ZT_LIBDIR="$root/build/gpu-carry"
  else
    ZT_LIBDIR="$root/build/lib"
  fi
fi
if [[ ! -e "$ZT_LIBDIR/libztensor.so" ]]; then
  echo "run_device.sh: no libztensor.so in $ZT_LIBDIR: build it here (cmake --build build;" \
    "bash tests/gpu/pack.sh) and carry build/gpu-carry" >&2
  exit 2
fi
mkdir -p "$out/lib" "$data"
out=$(cd "$out" && pwd)
data=$(cd "$data" && pwd)
# The library under its own name and its soname (what the program records), as copies:
# links may not survive the carry.
cp -f "$ZT_LIBDIR/libztensor.so" "$out/lib/libztensor.so"
soname=$(readelf -d "$out/lib/libztensor.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ -z "$soname" ]] || cp -f "$out/lib/libztensor.so" "$out/lib/$soname"
ZT_LIBDIR="$out/lib"
export ZT_LIBRARY="$ZT_LIBDIR/libztensor.so"
start=$(date +%s)
{
  echo "machine: $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo || true)"
  echo "memory: $(grep MemTotal /proc/meminfo)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
} | tee "$out/machine.txt"

# 1. The C program, built warning-free against the header (no CUDA headers needed).
"${CC:-cc}" -std=c11 -O2 -Wall -Wextra -Werror -pedantic -I"$root/include" "$root/tests/gpu/gpu_load.c" \
  -L"$ZT_LIBDIR" -lztensor -Wl,-rpath,"$ZT_LIBDIR" -lpthread -o "$out/gpu_load"
(cd "$out" && ./gpu_load selftest)
python3 "$root/tests/gpu/ztloader.py" layout "$out/gpu_load"

# 2. The file (and its zstd twin).
st="$data/llama-bf16.safetensors"
zt="$data/llama-bf16-zstd.zt"
if [[ "$quick" == 1 ]]; then
  st="$data/llama-quick.safetensors"
  zt="$data/llama-quick-zstd.zt"
  python3 "$root/tests/gpu/make_llama.py" --quick "$st"
elif [[ ! -e "$st" ]]; then
  python3 "$root/tests/gpu/make_llama.py" "$st"
fi
python3 "$root/tests/gpu/ztloader.py" host-check "$st"
[[ -e "$zt" && "$quick" != 1 ]] || "$out/gpu_load" convert "$st" "$zt"
python3 "$root/tests/gpu/ztloader.py" host-check "$st" "$zt"

# 3. The GPU: correctness through the C program, then the table through torch.
set +e
"$out/gpu_load" check "$st"
rc=$?
set -e
if [[ $rc == 3 ]]; then
  echo "skipped: no CUDA GPU here (the GPU checks and the table need one); done in $(( $(date +%s) - start )) s"
  exit 0
fi
[[ $rc == 0 ]] || exit "$rc"
"$out/gpu_load" check "$zt"
python3 "$root/tests/gpu/bench_torch.py" "$st" "$zt" "$out/gpu_load" "$out" "$repeats" | tee "$out/table.md"
# 4. Issue 39's host rows at this machine's cores, in the same call, when the prebuilt
# benchmark was carried (bench/device/build.sh here; carry bench/device/ztensor-bench):
# cold loads against O_DIRECT and buffered reads on this machine's NVMe, the durable
# write, the conversions. ZT_GPU_BENCH=0 leaves them out.
bench_bin="$root/bench/device/ztensor-bench"
if [[ "${ZT_GPU_BENCH:-1}" == 1 && -x "$bench_bin" ]]; then
  bench_quick=()
  [[ "$quick" == 1 ]] && bench_quick=(--quick)
  "$bench_bin" "${bench_quick[@]}" --dir "$data/bench" --runs "$repeats" --only cold,write,convert \
    --out "$out/bench-39.json" | tee "$out/bench-39.txt"
elif [[ "${ZT_GPU_BENCH:-1}" == 1 ]]; then
  echo "issue 39's host rows skipped: $bench_bin was not carried (bash bench/device/build.sh)"
fi
echo "run_device.sh: done in $(( $(date +%s) - start )) s; results in $out"
