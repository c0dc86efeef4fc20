#!/usr/bin/env bash
# The install_consumer test (registered by CMakeLists.txt, which sets the ZT_* variables):
# installs the build into a temporary prefix, checks the installed files, then builds and
# runs tests/install/consumer against that prefix
#   1. with find_package(ztensor CONFIG), linking ztensor::ztensor (RPATH into the prefix),
#   2. with find_package(ztensor CONFIG), linking ztensor::ztensor_static,
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
cmp -s "$ZT_BUILD_DIR/lib/$ZT_REALNAME" "$libdir/$ZT_REALNAME" || fail "installed library differs from the build's"
if [[ "${ZT_HAVE_CPP:-OFF}" == "ON" ]]; then
  compgen -G "$includedir/*.hpp" >/dev/null || fail "cpp/include exists but no .hpp was installed"
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

step "find_package(ztensor $request CONFIG REQUIRED) + ztensor::ztensor"
cpp_args=("-DZTENSOR_EXPECT_CPP=$expect_cpp")
if [[ $expect_cpp == ON && -n "${ZT_CXX:-}" ]]; then cpp_args+=("-DCMAKE_CXX_COMPILER=$ZT_CXX"); fi
cmake_consumer cmake-shared -DZTENSOR_LINK=shared "-DZTENSOR_REQUEST_VERSION=$request" "${cpp_args[@]}"
"$ZT_CMAKE" --build "$work/cmake-shared"
expect_resolved "$work/cmake-shared/consumer"
run_in "$work/run-cmake-shared" "$work/cmake-shared/consumer"
if [[ $expect_cpp == ON ]]; then
  expect_resolved "$work/cmake-shared/cpp_consumer"
  "$work/cmake-shared/cpp_consumer"
fi

step "find_package(ztensor $request CONFIG REQUIRED) + ztensor::ztensor_static"
cmake_consumer cmake-static -DZTENSOR_LINK=static "-DZTENSOR_REQUEST_VERSION=$request"
"$ZT_CMAKE" --build "$work/cmake-static"
expect_static "$work/cmake-static/consumer"
run_in "$work/run-cmake-static" "$work/cmake-static/consumer"

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
