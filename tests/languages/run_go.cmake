# cmake -DGO=<go> -DPACKAGE_DIR=<c_examples/go> -P run_go.cmake
# The lang_go test: gofmt, go vet and go test of the example package. ctest sets the Go
# environment (cmake/languages.cmake): CGO_CFLAGS/CGO_LDFLAGS point at the build tree,
# caches live in the build tree, GOPROXY=off.
cmake_minimum_required(VERSION 3.16)

foreach(_var GO PACKAGE_DIR)
  if(NOT ${_var})
    message(FATAL_ERROR "run_go.cmake: ${_var} is not set")
  endif()
endforeach()

function(_go_step)
  string(REPLACE ";" " " _shown "${ARGN}")
  message(STATUS "$ ${_shown}")
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${PACKAGE_DIR}" RESULT_VARIABLE _rc
                  OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  message("${_out}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "failed (${_rc}): ${ARGN}")
  endif()
  set(_go_out "${_out}" PARENT_SCOPE)
endfunction()

_go_step("${GO}" version)
_go_step("${GO}" env GOOS GOARCH)
string(REPLACE "\n" ";" _platform "${_go_out}")
list(GET _platform 0 _goos)
list(GET _platform 1 _goarch)

# gofmt: no file may need reformatting.
get_filename_component(_gobin "${GO}" DIRECTORY)
find_program(_gofmt gofmt HINTS "${_gobin}" NO_DEFAULT_PATH)
if(NOT _gofmt)
  find_program(_gofmt gofmt)
endif()
if(_gofmt)
  _go_step("${_gofmt}" -l .)
  string(STRIP "${_go_out}" _unformatted)
  if(_unformatted)
    message(FATAL_ERROR "gofmt would change: ${_unformatted}")
  endif()
else()
  message(STATUS "gofmt not found next to ${GO}: format check skipped")
endif()

_go_step("${GO}" vet ./...)

# The race detector also watches the goroutines sharing one Reader.
set(_race "")
if(_goos STREQUAL "linux" AND _goarch MATCHES "^(amd64|arm64)$")
  set(_race -race)
endif()
_go_step("${GO}" test -count=1 -v ${_race} ./...)
