#!/usr/bin/env bash
# The install_consumer test (registered by CMakeLists.txt, which sets the ZT_* variables):
# installs the build into a temporary prefix, checks the installed files, then builds and
# runs tests/install/consumer against that prefix
#   1. with find_package(ztensor CONFIG), linking ztensor::ztensor (RPATH into the prefix),
#      and its C++ consumer linking ztensor::ztensor_cpp,
#   2. with find_package(ztensor CONFIG), linking ztensor::ztensor_static, and its C++
#      consumer linking ztensor::ztensor_cpp_static,
#   3. with pkg-config and a plain compiler command, run as built: the .pc file's rpath
#      finds the library (no LD_LIBRARY_PATH, no ldconfig),
#   4. with pkg-config --static, linking libztensor.a,
# and asserts each time (ldd) that libztensor is resolved from the prefix, or not needed.
# Any failure fails the test.
set -euo pipefail

for var in ZT_CMAKE ZT_BUILD_DIR ZT_WORK_DIR ZT_CONSUMER_DIR ZT_GENERATOR ZT_CC ZT_LIBDIR \
           ZT_INCLUDEDIR ZT_VERSION ZT_SONAME ZT_REALNAME; do
  if [[ -z "${!var:-}" ]]; then
    echo "run.sh: $var is not set (run this through ctest)" >&2
    exit 2
  fi
done

fail() { echo "install_consumer: FAIL: $*" >&2; exit 1; }
step() { echo; echo "=== $*"; }

# Nothing from the environment may point the loader or pkg-config elsewhere.
unset LD_LIBRARY_PATH PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR CMAKE_PREFIX_PATH

work=$ZT_WORK_DIR
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
cd "$work"
libdir=$prefix/$ZT_LIBDIR
includedir=$prefix/$ZT_INCLUDEDIR
libdir_real=$(mkdir -p "$libdir" && cd "$libdir" && pwd -P)

step "cmake --install $ZT_BUILD_DIR --prefix $prefix"
"$ZT_CMAKE" --install "$ZT_BUILD_DIR" --prefix "$prefix"

step "installed files"
expect_file() { [[ -f "$1" && ! -L "$1" ]] || fail "missing file $1"; }
expect_link() { [[ -L "$1" && "$(readlink "$1")" == "$2" ]] || fail "$1 is not a symlink to $2"; }
expect_file "$libdir/$ZT_REALNAME"
expect_link "$libdir/$ZT_SONAME" "$ZT_REALNAME"
expect_link "$libdir/libztensor.so" "$ZT_SONAME"
expect_file "$libdir/libztensor.a"
expect_file "$includedir/ztensor.h"
expect_file "$libdir/cmake/ztensor/ztensorConfig.cmake"
expect_file "$libdir/cmake/ztensor/ztensorConfigVersion.cmake"
expect_file "$libdir/cmake/ztensor/ztensorTargets.cmake"
expect_file "$libdir/pkgconfig/ztensor.pc"
[[ -x "$libdir/$ZT_REALNAME" ]] || fail "$libdir/$ZT_REALNAME is not executable"
soname=$(LC_ALL=C readelf -d "$libdir/$ZT_REALNAME" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" == "$ZT_SONAME" ]] || fail "SONAME of $ZT_REALNAME is '$soname', expected $ZT_SONAME"
cmp -s "${ZT_INSTALLED_SO:-$ZT_BUILD_DIR/lib/$ZT_REALNAME}" "$libdir/$ZT_REALNAME" \
  || fail "installed library differs from the build's"

# Stripped, with the debug information in separate files the debugger finds (issue 23
# item 15): no debug sections in what is installed, a .gnu_debuglink naming lib/.debug's
# (or bin/.debug's) file with its CRC-32, and that file holding the line tables.
# (readelf complains about a debug file of an executable, which has no interpreter: its
# status is not the answer.)
has_section() { { LC_ALL=C readelf -S -W "$1" 2>/dev/null || true; } | grep -q " $2 "; }
check_debuglink() {  # <stripped file> <debug file>
  local file=$1 debug=$2
  expect_file "$debug"
  ! has_section "$file" .debug_info && ! has_section "$file" .debug_line \
    || fail "$file still holds debug information"
  has_section "$debug" .debug_line || fail "$debug holds no line tables"
  python3 - "$file" "$debug" <<'PY' || fail "$file's .gnu_debuglink does not name $debug with its CRC"
import subprocess, sys, zlib, os, tempfile
file, debug = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "link")
    subprocess.run(["objcopy", "--dump-section", ".gnu_debuglink=" + out, file], check=True)
    link = open(out, "rb").read()
name = link[:link.index(b"\0")].decode()
crc = int.from_bytes(link[-4:], "little")
want = zlib.crc32(open(debug, "rb").read()) & 0xffffffff
sys.exit(0 if name == os.path.basename(debug) and crc == want else 1)
PY
  echo "ok: $(basename "$file") $(stat -c %s "$file") bytes, debug information in $debug ($(stat -c %s "$debug") bytes)"
}
if [[ "${ZT_STRIPPED:-0}" == "1" ]]; then
  check_debuglink "$libdir/$ZT_REALNAME" "$libdir/.debug/$ZT_REALNAME.debug"
  has_section "$libdir/libztensor.a" .debug_info && fail "$libdir/libztensor.a still holds debug information"
  echo "ok: libztensor.a $(stat -c %s "$libdir/libztensor.a") bytes, no debug information"
  if [[ -x "$prefix/bin/zt" ]]; then
    check_debuglink "$prefix/bin/zt" "$prefix/bin/.debug/zt.debug"
    "$prefix/bin/zt" --version >/dev/null || fail "the stripped zt does not run"
  fi
  # A debugger finds the debug file by itself: the stripped library's functions have lines.
  if command -v gdb >/dev/null; then
    gdb -batch -ex "info line zt_open" "$libdir/$ZT_REALNAME" 2>&1 | grep -q 'Line [0-9]* of' \
      || fail "gdb finds no line information for zt_open in the installed library"
    echo "ok: gdb reads zt_open's line from the separate debug file"
  fi
fi
if [[ "${ZT_HAVE_CPP:-OFF}" == "ON" ]]; then
  compgen -G "$includedir/*.hpp" >/dev/null || fail "cpp/include exists but no .hpp was installed"
  # Every header of the wrapper (ztensor.hpp and its parts in ztensor/), nothing else.
  if [[ -n "${ZT_CPP_INCLUDE_DIR:-}" ]]; then
    want=$(cd "$ZT_CPP_INCLUDE_DIR" && find . -name '*.hpp' | sort)
    have=$(cd "$includedir" && find . -name '*.hpp' | sort)
    [[ "$want" == "$have" ]] || fail "installed C++ headers differ from cpp/include:"$'\n'"$(diff <(echo "$want") <(echo "$have"))"
    echo "ok: C++ headers: $(tr '\n' ' ' <<<"$have")"
  fi
fi
echo "ok: libraries, symlinks, SONAME $soname, header, CMake package, pkg-config file"
grep -v '^$' "$libdir/pkgconfig/ztensor.pc" | sed 's/^/    /'

# expect_resolved <exe> : libztensor must resolve to the installed file, nothing else.
expect_resolved() {
  local line path
  line=$(ldd "$1" | grep 'libztensor' || true)
  echo "ldd: ${line:-<no libztensor>}"
  path=$(awk '/libztensor/ { print $3 }' <<<"$line")
  [[ -n "$path" && -e "$path" ]] || fail "$1: libztensor not resolved: $line"
  [[ "$(readlink -f "$path")" == "$libdir_real/$ZT_REALNAME" ]] \
    || fail "$1 loads $path, not the installed $libdir/$ZT_REALNAME"
}
expect_static() {
  if ldd "$1" | grep -q libztensor; then fail "$1 is linked statically but needs libztensor.so"; fi
  echo "ldd: no libztensor (static)"
}
# run_in <dir> <command...> : run a consumer in a fresh directory (it writes consumer.zt).
run_in() {
  local dir=$1
  shift
  mkdir -p "$dir"
  (cd "$dir" && "$@")
  [[ -f "$dir/consumer.zt" ]] || fail "$* wrote no consumer.zt"
}

# The version a dependent project would ask for: this major.minor.
request=${ZT_VERSION%.*}
cmake_consumer() {
  local name=$1
  shift
  local args=(-S "$ZT_CONSUMER_DIR" -B "$work/$name" -G "$ZT_GENERATOR"
              "-DCMAKE_C_COMPILER=$ZT_CC" "-DCMAKE_PREFIX_PATH=$prefix"
              "-DCMAKE_BUILD_TYPE=${ZT_BUILD_TYPE:-Release}")
  [[ -n "${ZT_MAKE_PROGRAM:-}" ]] && args+=("-DCMAKE_MAKE_PROGRAM=$ZT_MAKE_PROGRAM")
  "$ZT_CMAKE" "${args[@]}" "$@"
}

expect_cpp=OFF
[[ "${ZT_HAVE_CPP:-OFF}" == "ON" ]] && expect_cpp=ON

step "find_package(ztensor $request CONFIG REQUIRED) + ztensor::ztensor (+ ztensor::ztensor_cpp)"
cpp_args=("-DZTENSOR_EXPECT_CPP=$expect_cpp")
if [[ $expect_cpp == ON && -n "${ZT_CXX:-}" ]]; then cpp_args+=("-DCMAKE_CXX_COMPILER=$ZT_CXX"); fi
cmake_consumer cmake-shared -DZTENSOR_LINK=shared "-DZTENSOR_REQUEST_VERSION=$request" "${cpp_args[@]}"
"$ZT_CMAKE" --build "$work/cmake-shared"
expect_resolved "$work/cmake-shared/consumer"
run_in "$work/run-cmake-shared" "$work/cmake-shared/consumer"
if [[ $expect_cpp == ON ]]; then
  expect_resolved "$work/cmake-shared/cpp_consumer"
  run_in "$work/run-cmake-shared-cpp" "$work/cmake-shared/cpp_consumer"
fi

step "find_package(ztensor $request CONFIG REQUIRED) + ztensor::ztensor_static (+ ztensor::ztensor_cpp_static)"
cmake_consumer cmake-static -DZTENSOR_LINK=static "-DZTENSOR_REQUEST_VERSION=$request" "${cpp_args[@]}"
"$ZT_CMAKE" --build "$work/cmake-static"
expect_static "$work/cmake-static/consumer"
run_in "$work/run-cmake-static" "$work/cmake-static/consumer"
if [[ $expect_cpp == ON ]]; then
  expect_static "$work/cmake-static/cpp_consumer"
  run_in "$work/run-cmake-static-cpp" "$work/cmake-static/cpp_consumer"
fi

# Before 1.0 the next minor is another ABI; after 1.0 the next major is.
IFS=. read -r major minor _ <<<"$ZT_VERSION"
if [[ $major == 0 ]]; then incompatible="0.$((minor + 1))"; else incompatible="$((major + 1)).0"; fi
step "find_package(ztensor $incompatible) must be refused"
if cmake_consumer cmake-incompatible "-DZTENSOR_REQUEST_VERSION=$incompatible" \
     >"$work/incompatible.log" 2>&1; then
  cat "$work/incompatible.log"
  fail "find_package(ztensor $incompatible) accepted version $ZT_VERSION"
fi
grep -q "compatible with requested version \"$incompatible\"" "$work/incompatible.log" \
  || { cat "$work/incompatible.log"; fail "configure failed, but not on the version check"; }
echo "ok: refused"

step "pkg-config (shared)"
export PKG_CONFIG_PATH=$libdir/pkgconfig
pkg-config --exists --print-errors "ztensor = $ZT_VERSION" || fail "pkg-config: no ztensor = $ZT_VERSION"
cflags=$(pkg-config --cflags ztensor)
libs=$(pkg-config --libs ztensor | sed "s/[[:space:]]*$//")
echo "cflags: $cflags"
echo "libs:   $libs"
[[ "$(pkg-config --variable=libdir ztensor)" == "$libdir" ]] || fail "pkg-config libdir is not $libdir"
[[ "$libs" == "-L$libdir -Wl,-rpath,$libdir -lztensor" ]] \
  || fail "pkg-config --libs is '$libs', expected -L, the rpath and -lztensor for $libdir"
mkdir -p "$work/pkg-config"
# Word splitting of the pkg-config output is intended.
# shellcheck disable=SC2086
"$ZT_CC" -std=c99 -Wall -Wextra -Werror -pedantic $cflags "$ZT_CONSUMER_DIR/main.c" \
  -o "$work/pkg-config/consumer" $libs
# As a user runs it: nothing but the rpath from the .pc file points the loader there.
expect_resolved "$work/pkg-config/consumer"
run_in "$work/run-pkg-config" "$work/pkg-config/consumer"

step "pkg-config --static (libztensor.a + Libs.private)"
static_libs=$(pkg-config --static --libs ztensor)
echo "libs:   $static_libs"
static_libs=${static_libs/-lztensor/-l:libztensor.a}
# shellcheck disable=SC2086
"$ZT_CC" -std=c99 -Wall -Wextra -Werror -pedantic $cflags "$ZT_CONSUMER_DIR/main.c" \
  -o "$work/pkg-config/consumer-static" $static_libs
expect_static "$work/pkg-config/consumer-static"
run_in "$work/run-pkg-config-static" "$work/pkg-config/consumer-static"

echo
echo "install_consumer: all passed"
