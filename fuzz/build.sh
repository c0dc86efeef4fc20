#!/usr/bin/env bash
# Builds the libFuzzer target fuzz/target/<triple>/release/open_walk with coverage
# instrumentation (sancov: inline 8-bit counters, PC table, compare tracing) and, when the
# toolchain allows it, AddressSanitizer. Needs no cargo-fuzz: libfuzzer-sys compiles
# libFuzzer itself (a C++ compiler is needed) and the instrumentation flags are stable
# rustc flags. ASan needs -Zsanitizer: a nightly toolchain, or stable with
# RUSTC_BOOTSTRAP=1. Set ZT_FUZZ_ASAN=0 to build without it.
# Prints the path of the fuzzer binary on its last line.
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
  if [ ${#toolchain[@]} -eq 0 ]; then
    export RUSTC_BOOTSTRAP=1
  fi
fi
# --target keeps the flags off build scripts and proc-macros.
RUSTFLAGS="$flags" cargo "${toolchain[@]}" build --release --manifest-path "$here/Cargo.toml" \
  --target "$triple" --bin open_walk >&2
echo "$here/target/$triple/release/open_walk"
