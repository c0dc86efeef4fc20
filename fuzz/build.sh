#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz/target/<triple>/release/<target>; the list is
# `targets` below, one per fuzz_targets/*.rs) with coverage
# instrumentation (sancov: inline 8-bit counters, PC table, compare tracing) and, when the
# toolchain allows it, AddressSanitizer. Needs no cargo-fuzz: libfuzzer-sys compiles
# libFuzzer itself (a C++ compiler is needed) and the instrumentation flags are stable
# rustc flags. ASan needs -Zsanitizer: a nightly toolchain, or stable with
# RUSTC_BOOTSTRAP=1. Set ZT_FUZZ_ASAN=0 to build without it.
# Prints the path of the binary of the target named by the first argument (default
# open_walk) on its last line; the others are beside it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
triple="$(rustc -vV | sed -n 's/^host: //p')"
toolchain=()
if rustup run nightly rustc --version >/dev/null 2>&1; then
  toolchain=(+nightly)
fi
flags="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
flags+=" -Cforce-frame-pointers"
if [ "${ZT_FUZZ_ASAN:-1}" = 1 ]; then
  flags+=" -Zsanitizer=address"
  # With a nightly rustc, the cc crate instruments C code too (-fsanitize=address), built
  # by GCC here but run with the ASan runtime of rustc's LLVM: that mix reported
  # stack-use-after-scope on a global of zstd's compressor (zstd_opt.c getAllMatchesFns),
  # only after earlier inputs, never alone; a false report. The C code (zstd, which
  # upstream fuzzes itself) is left uninstrumented; the Rust code is what is tested here.
  export CFLAGS="${CFLAGS:-} -fno-sanitize=address"
  if [ ${#toolchain[@]} -eq 0 ]; then
    export RUSTC_BOOTSTRAP=1
  fi
fi
# --target keeps the flags off build scripts and proc-macros.
RUSTFLAGS="$flags" cargo "${toolchain[@]}" build --release --manifest-path "$here/Cargo.toml" \
  --target "$triple" --bins >&2
echo "$here/target/$triple/release/${1:-open_walk}"
