# cmake -DZT=<zt> -DVECTORS=<tests/vectors> [-DINSTALL_FROM=<build dir> -DPREFIX=<dir>]
#       -P cli_smoke.cmake
# The zt tool on a reference vector, in the current (fresh) directory: exact `zt info`
# output, `zt verify`, `zt convert` with options, and `zt cat` of the result. With
# INSTALL_FROM, first installs the `cli` component of that build tree into PREFIX (ZT
# then names the installed program).
cmake_minimum_required(VERSION 3.16)

if(DEFINED INSTALL_FROM)
  file(REMOVE_RECURSE "${PREFIX}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${PREFIX}" --component cli
    RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "cmake --install ${INSTALL_FROM} --component cli failed: ${_rc}")
  endif()
endif()
if(NOT EXISTS "${ZT}")
  message(FATAL_ERROR "cli_smoke.cmake: ZT (\"${ZT}\") does not exist")
endif()

# In script mode CMAKE_CURRENT_BINARY_DIR is the working directory.
set(_dir "${CMAKE_CURRENT_BINARY_DIR}")
file(COPY "${VECTORS}/reference/v12_digest_sha256.zt" DESTINATION "${_dir}")

# _zt(<expected stdout> <args>...): runs zt in the directory; it must exit 0, print
# nothing on stderr and exactly <expected stdout> ("*" accepts any stdout).
function(_zt expected)
  string(REPLACE ";" " " _shown "${ARGN}")
  message(STATUS "$ zt ${_shown}")
  execute_process(COMMAND "${ZT}" ${ARGN}
    WORKING_DIRECTORY "${_dir}"
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0 OR NOT _err STREQUAL "")
    message(FATAL_ERROR "zt ${_shown}: exit ${_rc}\n${_out}${_err}")
  endif()
  if(NOT expected STREQUAL "*" AND NOT _out STREQUAL expected)
    message(FATAL_ERROR "zt ${_shown} printed:\n${_out}\nexpected:\n${expected}")
  endif()
endfunction()

_zt("*" --version)
_zt([=[v12_digest_sha256.zt: version 1.2.0, 1 object, no file attributes

name  format  shape  role  dtype  encoding  stored  decoded  digest
---------------------------------------------------------------------------------------
x     dense   [10]   data  f32    raw         40 B     40 B  sha256:64142f47e37e5ee6...

1 component: 40 B stored, 40 B decoded
]=] info v12_digest_sha256.zt)
_zt([=[v12_digest_sha256.zt: 1 object, 1 component
digests: 1 ok, 0 failed, 0 absent
decoded: 0 ok, 0 failed
values:  1 ok, 0 failed
OK
]=] verify v12_digest_sha256.zt)
_zt("" convert v12_digest_sha256.zt converted.zt --to v1.2 --zstd 3 --digest crc32c)
_zt([=[converted.zt: version 1.2.0, 1 object, no file attributes

name  format  shape  role  dtype  encoding  stored  decoded  digest
------------------------------------------------------------------------------
x     dense   [10]   data  f32    zstd        49 B     40 B  crc32c:0xE2EC6251

1 component: 49 B stored, 40 B decoded
]=] info converted.zt)
_zt([=[object 'x' component 'data': dense [10], f32, 10 values
[0.0, 0.75, 1.5, 2.25, 3.0, 3.75, 4.5, 5.25, 6.0, 6.75]
]=] cat converted.zt x)
