# cmake -DPYTHON=<venv python> -DSOURCE=<zt_list.zig> -DEXPECTED=<expected.txt>
#       -DINCLUDE_DIR=<include> -DLIBRARY_DIR=<lib> -DCACHE_DIR=<dir> -DVECTOR=<file.zt>
#       -P run_zig.cmake
# The lang_zig test, in its fresh working directory: checks the Zig example's formatting,
# builds it with the pinned ziglang of the venv (python -m ziglang), runs it on a
# reference vector for two tensors and compares the output with EXPECTED, then checks a
# failing lookup.
cmake_minimum_required(VERSION 3.16)

foreach(_var PYTHON SOURCE EXPECTED INCLUDE_DIR LIBRARY_DIR CACHE_DIR VECTOR)
  if(NOT ${_var})
    message(FATAL_ERROR "run_zig.cmake: ${_var} is not set")
  endif()
endforeach()

execute_process(COMMAND "${PYTHON}" -m ziglang fmt --check "${SOURCE}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "zig fmt --check ${SOURCE}: the file is not formatted")
endif()

set(_exe "${CMAKE_CURRENT_BINARY_DIR}/zt_list")
set(_build
  "${PYTHON}" -m ziglang build-exe "${SOURCE}" -lc "-I${INCLUDE_DIR}" "-L${LIBRARY_DIR}" -lztensor
  -rpath "${LIBRARY_DIR}" --cache-dir "${CACHE_DIR}/local" --global-cache-dir "${CACHE_DIR}/global"
  "-femit-bin=${_exe}")
string(REPLACE ";" " " _shown "${_build}")
message(STATUS "$ ${_shown}")
execute_process(COMMAND ${_build} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "zig build-exe failed: ${_rc}")
endif()
execute_process(COMMAND "${PYTHON}" -m ziglang version OUTPUT_VARIABLE _version)
message(STATUS "zig ${_version}")

# The vector's path is printed nowhere, so the output is the same on every machine.
set(_output "")
foreach(_name layer.0.weight embed)
  message(STATUS "$ zt_list v12_mixed.zt ${_name}")
  execute_process(COMMAND "${_exe}" "${VECTOR}" "${_name}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out)
  message("${_out}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "zt_list ${_name} failed: ${_rc}")
  endif()
  string(APPEND _output "${_out}")
endforeach()
file(READ "${EXPECTED}" _expected)
if(NOT _output STREQUAL _expected)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/actual.txt" "${_output}")
  message(FATAL_ERROR "the output differs from ${EXPECTED} (see ${CMAKE_CURRENT_BINARY_DIR}/actual.txt)")
endif()

# A missing tensor: exit 1 and the library's message with its status.
execute_process(COMMAND "${_exe}" "${VECTOR}" missing RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
set(_want "zt_list: missing: ${VECTOR}: no object named 'missing' (ZT_ERR_NOT_FOUND)\n")
if(NOT _rc EQUAL 1 OR NOT _err STREQUAL _want)
  message(FATAL_ERROR "zt_list missing: exit ${_rc}, stderr '${_err}', want exit 1 and '${_want}'")
endif()
message(STATUS "zt_list missing: exit 1, ${_err}")
