#!/usr/bin/env bash
# ThreadSanitizer over the library's concurrent cores: the zstd writer's frame pipeline
# (codec/compress.rs), the pool (pool.rs) with nested work, batch loads, frame-parallel
# zstd decoding, typed attribute chunks made from many threads and first views of a
# set's shards. TSan models atomics and futexes, which valgrind's helgrind and DRD do not
# (they report every hand-over through std's Mutex or crossbeam's deques as a race), so
# this is the thread checker of record for Rust code; helgrind/DRD stay on the C tests.
#
# Needs the nightly toolchain with rust-src (std is rebuilt with TSan: -Zbuild-std).
# Usage: tests/tsan/run.sh [target-dir]   (default build/tsan). Exit 0 = no report.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
target_dir=${1:-build/tsan}
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "SKIP: no nightly toolchain (rustup toolchain install nightly --component rust-src)"
  exit 77
fi
sysroot=$(rustup run nightly rustc --print sysroot)
if [[ ! -d "$sysroot/lib/rustlib/src/rust/library" ]]; then
  echo "SKIP: nightly lacks rust-src (rustup component add rust-src --toolchain nightly)"
  exit 77
fi
host=$(rustup run nightly rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Zsanitizer=thread -Cdebuginfo=1"
export RUSTDOCFLAGS="-Zsanitizer=thread"
# halt_on_error: the first report fails the run; second_deadlock_stack for lock reports.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
# run <cargo test selection...> [-- <test filters>]
run() {
  echo "::: tsan: cargo test $*"
  cargo +nightly test -Zbuild-std --target "$host" --target-dir "$target_dir" "$@"
}
run --lib -- codec:: pool:: typed::
run --test pool
run --test batch
run --test frames
run --test shards
echo "::: tsan: no reports"
