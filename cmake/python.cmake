# The Python package (python/, ztensor-c) as ctest tests. Included by CMakeLists.txt inside
# its tests section (it uses _ztensor_add_test).
#
#   python_venv    fixture: three venvs in the build tree, pinned, made by
#                  tests/languages/make_venv.py: venv-python (runtime and test packages,
#                  no build tools), venv-python-ref2 (ztensor==2.1.2), venv-python-build
#                  (pypa/build, for the sdist)
#   python_wheel   fixture: `pip wheel ./python` (pip's isolated build environment runs
#                  maturin, which compiles the library against this build's cargo
#                  directory: only the library itself is compiled again), the wheel
#                  installed into venv-python with --no-deps
#   python_tests   pytest python/tests in venv-python, on the installed wheel
#   python_sdist   the sdist (python -m build --sdist), a wheel built from it, the same files
#   python_wheel_musl  the musllinux_1_2 wheel (maturin + zig), its tag and its library's
#                  needs checked; skipped, saying so, without Rust's musl target
#   python_free_threaded  the suite on a free-threaded CPython (3.14t) with the same wheel,
#                  the GIL checked off; skipped, saying so, where none is given
#
# The first run needs network access (pip); later runs reuse the venvs while their pins
# are unchanged, and pip's cache for the build environment.

if(NOT ZTENSOR_BUILD_TESTS)
  return()
endif()

set(_py_dir "${PROJECT_SOURCE_DIR}/python")
set(_py_venv "${PROJECT_BINARY_DIR}/venv-python")
set(_py_python "${_py_venv}/bin/python")
set(_py_ref2 "${PROJECT_BINARY_DIR}/venv-python-ref2")
set(_py_build "${PROJECT_BINARY_DIR}/venv-python-build")
set(_py_dist "${PROJECT_BINARY_DIR}/python-dist")
set(_py_make_venv "${PROJECT_SOURCE_DIR}/tests/languages/make_venv.py")
set(_py_interop_pins "${PROJECT_SOURCE_DIR}/tests/interop/requirements.txt")

if(ZTENSOR_PYTHON3)
  add_test(NAME python_venv
    COMMAND "${CMAKE_COMMAND}"
            "-DPYTHON=${ZTENSOR_PYTHON3}"
            "-DMAKE_VENV=${_py_make_venv}"
            "-DVENVS=${_py_venv}|${_py_dir}/tests/requirements.txt;${_py_ref2}|${_py_dir}/tests/requirements-ref2.txt;${_py_build}|${_py_dir}/tests/requirements-build.txt"
            "-DINTEROP_PINS=${_py_interop_pins}"
            -P "${_py_dir}/tests/make_venvs.cmake")
else()
  add_test(NAME python_venv
    COMMAND "${CMAKE_COMMAND}" "-DMESSAGE=python3 not found (install python3 and python3-venv)"
            -P "${_ztensor_fail_script}")
endif()
set_tests_properties(python_venv PROPERTIES FIXTURES_SETUP ztensor_python_venv TIMEOUT 900)

# The cargo environment of the CMake build (target directory, profile settings), so that
# maturin's cargo run finds the dependencies already compiled.
set(_py_cargo_env ${_ztensor_cargo_env})
if(CMAKE_BUILD_TYPE STREQUAL "Debug")
  list(APPEND _py_cargo_env "MATURIN_PEP517_ARGS=--profile dev")
endif()
_ztensor_add_test(python_wheel "${CMAKE_COMMAND}" -E env ${_py_cargo_env} "CARGO=${CARGO_EXECUTABLE}"
  "${_py_python}" "${_py_dir}/tests/wheel.py" build "${_py_dist}")
set_tests_properties(python_wheel PROPERTIES TIMEOUT 1800 FIXTURES_SETUP ztensor_python_wheel)

_ztensor_add_test(python_tests "${_py_python}" -m pytest -p no:cacheprovider -rs
  "${_py_dir}/tests")
set_tests_properties(python_tests PROPERTIES TIMEOUT 1200
  ENVIRONMENT "ZT_TEST_VECTORS=${ZTENSOR_TEST_VECTORS};ZT_REF2_PYTHON=${_py_ref2}/bin/python;PYTHONDONTWRITEBYTECODE=1;ZT_REFERENCE_SDISTS=${PROJECT_BINARY_DIR}/reference-sdists")

_ztensor_add_test(python_sdist "${CMAKE_COMMAND}" -E env ${_py_cargo_env} "CARGO=${CARGO_EXECUTABLE}"
  "${_py_python}" "${_py_dir}/tests/wheel.py" sdist "${_py_dist}" "${_py_build}/bin/python")
set_tests_properties(python_sdist PROPERTIES TIMEOUT 1800)

# python_wheel_musl: the musllinux wheel, built with its own cargo target directory (the
# musl target shares nothing with the CMake build's); skipped where Rust's musl target is
# not installed (.ci/run installs it).
_ztensor_add_test(python_wheel_musl "${CMAKE_COMMAND}" -E env
  "CARGO_TARGET_DIR=${PROJECT_BINARY_DIR}/cargo-musl" "CARGO=${CARGO_EXECUTABLE}"
  "${_py_python}" "${_py_dir}/tests/wheel.py" musl "${_py_dist}")
set_tests_properties(python_wheel_musl PROPERTIES TIMEOUT 1800 SKIP_RETURN_CODE 77)

set_property(TEST python_wheel python_tests python_sdist python_wheel_musl APPEND PROPERTY FIXTURES_REQUIRED ztensor_python_venv)
set_property(TEST python_tests python_sdist APPEND PROPERTY FIXTURES_REQUIRED ztensor_python_wheel)

# python_free_threaded: the same suite on a free-threaded CPython (python/tests/
# free_threaded.py), with the wheel python_wheel built; skipped, saying so, where none is
# given: -DZTENSOR_FREE_THREADED_PYTHON=... or ZT_FREE_THREADED_PYTHON in the environment
# at configure time (.ci/run builds CPython 3.14t from its sources and sets it).
set(ZTENSOR_FREE_THREADED_PYTHON "$ENV{ZT_FREE_THREADED_PYTHON}" CACHE FILEPATH
    "a free-threaded CPython (python3.14t) for the python_free_threaded test; empty: skipped")
if(ZTENSOR_FREE_THREADED_PYTHON)
  _ztensor_add_test(python_free_threaded "${_py_python}" "${_py_dir}/tests/free_threaded.py"
    "${ZTENSOR_FREE_THREADED_PYTHON}" "${PROJECT_BINARY_DIR}/venv-python-ft" "${_py_dist}")
  set_tests_properties(python_free_threaded PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77
    FIXTURES_REQUIRED "ztensor_python_venv;ztensor_python_wheel"
    ENVIRONMENT "ZT_TEST_VECTORS=${ZTENSOR_TEST_VECTORS};ZT_REFERENCE_SDISTS=${PROJECT_BINARY_DIR}/reference-sdists")
else()
  # The skip is registered as such: CMake before 3.31 (policy CMP0178) drops an empty
  # argument from a test's command line, so the script would see its arguments shifted
  # and exit with its usage instead of skipping. Nothing to build or install for it.
  # (No semicolon in the command: CMake would split the argument there.)
  _ztensor_add_test(python_free_threaded sh -c "echo 'skipped: no free-threaded CPython \
here (configure with -DZTENSOR_FREE_THREADED_PYTHON=/path/to/python3.14t, or set \
ZT_FREE_THREADED_PYTHON, which .ci/run does after building one)' && exit 77")
  set_tests_properties(python_free_threaded PROPERTIES SKIP_RETURN_CODE 77)
endif()
