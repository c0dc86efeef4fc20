# The C API from other languages, and the documentation's code blocks, as ctest tests.
# Included by CMakeLists.txt inside its tests section (it uses _ztensor_add_test).
#
#   lang_venv      fixture: the venv ${PROJECT_BINARY_DIR}/venv-lang with the pinned
#                  tests/languages/requirements.txt (numpy, ziglang, markdown-it-py)
#   lang_go        c_examples/go: gofmt, go vet, go test (-race where Go supports it)
#   lang_zig       c_examples/zig: built with the pinned Zig from PyPI, run on a vector
#   lang_python    c_examples/python: the ctypes + NumPy example's tests
#   docs_examples  every code block of README.md, docs/*.md, c_examples/*/README.md
#
# Julia (c_examples/julia) is not run: no Julia on the test machines.
# Every tool and cache lives in the build tree (venv-lang/, go/, zig-cache/), so a fresh
# machine needs only python3 with venv, Go, and network access for the first pip install.

if(NOT ZTENSOR_BUILD_TESTS)
  return()
endif()

set(_lang_dir "${PROJECT_SOURCE_DIR}/tests/languages")
set(_lang_venv "${PROJECT_BINARY_DIR}/venv-lang")
set(_lang_python "${_lang_venv}/bin/python")
set(_lang_library "${ZTENSOR_LIBRARY_DIR}/${ZTENSOR_SONAME}")

# --- The venv (a fixture: made once per ctest run, reused while its pins are unchanged) --
find_program(ZTENSOR_PYTHON3 NAMES python3 python)
if(ZTENSOR_PYTHON3)
  add_test(NAME lang_venv
    COMMAND "${ZTENSOR_PYTHON3}" "${_lang_dir}/make_venv.py" "${_lang_venv}"
            "${_lang_dir}/requirements.txt" "${PROJECT_SOURCE_DIR}/tests/interop/requirements.txt")
else()
  message(STATUS "python3 not found: the lang_venv test will fail (install python3 and python3-venv)")
  add_test(NAME lang_venv
    COMMAND "${CMAKE_COMMAND}" "-DMESSAGE=python3 not found (install python3 and python3-venv)"
            -P "${_ztensor_fail_script}")
endif()
set_tests_properties(lang_venv PROPERTIES FIXTURES_SETUP ztensor_lang_venv TIMEOUT 900)

# --- Go ----------------------------------------------------------------------------------
find_program(ZTENSOR_GO_EXECUTABLE go HINTS /usr/local/go/bin /usr/lib/go/bin)
# The Go environment of every go command the tests run: the build tree's library and
# header, caches inside the build tree, no network and no toolchain downloads.
set(_lang_go_env
  "CC=${CMAKE_C_COMPILER}"
  "CGO_ENABLED=1"
  "CGO_CFLAGS=-I${PROJECT_SOURCE_DIR}/include"
  "CGO_LDFLAGS=-L${ZTENSOR_LIBRARY_DIR} -Wl,-rpath,${ZTENSOR_LIBRARY_DIR}"
  "GOCACHE=${PROJECT_BINARY_DIR}/go/cache"
  "GOPATH=${PROJECT_BINARY_DIR}/go/path"
  "GOMODCACHE=${PROJECT_BINARY_DIR}/go/path/pkg/mod"
  "GOFLAGS=-mod=mod"
  "GOPROXY=off"
  "GOTOOLCHAIN=local"
  "GOENV=off")
if(ZTENSOR_GO_EXECUTABLE)
  _ztensor_add_test(lang_go "${CMAKE_COMMAND}"
    "-DGO=${ZTENSOR_GO_EXECUTABLE}"
    "-DPACKAGE_DIR=${PROJECT_SOURCE_DIR}/c_examples/go"
    -P "${_lang_dir}/run_go.cmake")
  set_tests_properties(lang_go PROPERTIES TIMEOUT 1800
    ENVIRONMENT "${_lang_go_env};ZT_TEST_VECTORS=${ZTENSOR_TEST_VECTORS};TMPDIR=${ZTENSOR_TEST_WORK_ROOT}/lang_go")
else()
  message(STATUS "go not found: the lang_go and docs_examples tests will fail (apt-get install golang-go)")
  _ztensor_add_test(lang_go "${CMAKE_COMMAND}"
    "-DMESSAGE=go not found (apt-get install golang-go, or put go on PATH and reconfigure)"
    -P "${_ztensor_fail_script}")
endif()

# --- Zig (pinned ziglang from PyPI, in the venv) -----------------------------------------
_ztensor_add_test(lang_zig "${CMAKE_COMMAND}"
  "-DPYTHON=${_lang_python}"
  "-DSOURCE=${PROJECT_SOURCE_DIR}/c_examples/zig/zt_list.zig"
  "-DEXPECTED=${PROJECT_SOURCE_DIR}/c_examples/zig/expected.txt"
  "-DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include"
  "-DLIBRARY_DIR=${ZTENSOR_LIBRARY_DIR}"
  "-DCACHE_DIR=${PROJECT_BINARY_DIR}/zig-cache"
  "-DVECTOR=${ZTENSOR_TEST_VECTORS}/reference/v12_mixed.zt"
  -P "${_lang_dir}/run_zig.cmake")
set_tests_properties(lang_zig PROPERTIES TIMEOUT 900)

# --- Python: ctypes + NumPy ---------------------------------------------------------------
_ztensor_add_test(lang_python "${_lang_python}"
  "${PROJECT_SOURCE_DIR}/c_examples/python/test_ztensor_ctypes.py")
set_tests_properties(lang_python PROPERTIES
  ENVIRONMENT "ZTENSOR_LIBRARY=${_lang_library};ZT_TEST_VECTORS=${ZTENSOR_TEST_VECTORS};PYTHONDONTWRITEBYTECODE=1")

# The venv fixture comes on top of the working-directory fixture _ztensor_add_test sets
# (set_tests_properties would replace that one).
set_property(TEST lang_zig lang_python APPEND PROPERTY FIXTURES_REQUIRED ztensor_lang_venv)

# --- Every code block of the documentation -----------------------------------------------
if(NOT ZTENSOR_GO_EXECUTABLE)
  set(ZTENSOR_GO_EXECUTABLE "")
endif()
# The programs run on the demo's model, written by the write_model example.
set(_docs_write_model "")
if(TARGET write_model)
  set(_docs_write_model "$<TARGET_FILE:write_model>")
endif()
_ztensor_add_test(docs_examples "${_lang_python}" "${PROJECT_SOURCE_DIR}/tests/docs/check_docs.py")
set_tests_properties(docs_examples PROPERTIES TIMEOUT 1800
  ENVIRONMENT "${_lang_go_env};PYTHONDONTWRITEBYTECODE=1;ZT_SOURCE_DIR=${PROJECT_SOURCE_DIR};ZT_BUILD_DIR=${PROJECT_BINARY_DIR};ZT_LIBRARY=${_lang_library};ZT_INCLUDE_DIR=${PROJECT_SOURCE_DIR}/include;ZT_CPP_INCLUDE_DIR=${PROJECT_SOURCE_DIR}/cpp/include;ZT_CC=${CMAKE_C_COMPILER};ZT_CXX=${CMAKE_CXX_COMPILER};ZT_CMAKE=${CMAKE_COMMAND};ZT_GENERATOR=${CMAKE_GENERATOR};ZT_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM};ZT_LIBDIR=${CMAKE_INSTALL_LIBDIR};ZT_GO=${ZTENSOR_GO_EXECUTABLE};ZT_WRITE_MODEL=${_docs_write_model};ZT_WORK_DIR=${ZTENSOR_TEST_WORK_ROOT}/docs_examples/work")
set_property(TEST docs_examples APPEND PROPERTY FIXTURES_REQUIRED ztensor_lang_venv)
