#!/usr/bin/env bash
# free_threaded_python.sh DEST: builds CPython 3.14 with --disable-gil (the free-threaded
# build, "python3.14t") into DEST, for ctest's python_free_threaded (.ci/run runs it; a
# machine that has a free-threaded CPython already can pass it with
# ZT_FREE_THREADED_PYTHON instead). Prints the interpreter's path on its last line.
#
# The sources are CPython's v3.14.0 tag, fetched as the Go module proxy serves any public
# repository (a registry this machine class reaches; python.org and GitHub are not
# reachable from it), checked against the SHA-256 below. Debian has no free-threaded
# build, and PyPI none of CPython. A plain build (no PGO/LTO): about 10 minutes on
# 2 cores. Reused when DEST already holds it.
set -euo pipefail
dest=$1
version=3.14.0
sha256=ee8cc1d04b099fe2cda89240f24ca110cc8e150fd32586692fb9c2cdabaa5b0d
url="https://proxy.golang.org/github.com/python/cpython/@v/v${version}+incompatible.zip"
python="$dest/bin/python3.14t"
if [[ -x "$python" ]] && "$python" -c 'import sys, ctypes, ssl, zlib; sys.exit(sys._is_gil_enabled())' 2>/dev/null; then
  echo "$python"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 3 -o "$work/cpython.zip" "$url"
echo "$sha256  $work/cpython.zip" | sha256sum -c - >&2
(cd "$work" && unzip -q cpython.zip && mv github.com/python/cpython@* src)
cd "$work/src"
# A module zip keeps no file modes: the build's scripts need their executable bit back.
chmod +x configure install-sh config.guess config.sub Tools/*/*.py
find . -name '*.sh' -exec chmod +x {} +
./configure --disable-gil --prefix="$dest" --with-ensurepip=install >"$work/configure.log" 2>&1 ||
  { tail -n 30 "$work/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -n 30 "$work/make.log" >&2; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -n 30 "$work/install.log" >&2; exit 1; }
# What the test needs of it: no GIL; ctypes (libffi), ssl and zlib for pip and the
# package (a machine without libffi-dev or libssl-dev builds a CPython without them).
"$python" -c 'import sys, ctypes, ssl, zlib; assert not sys._is_gil_enabled(), "the GIL is on"' >&2
echo "$python"
