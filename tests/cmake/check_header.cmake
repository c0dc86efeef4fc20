# cmake -DGENERATED=<file> -DHEADER=<include/ztensor.h> -DBUILD_DIR=<build dir>
#       -P check_header.cmake
# The header_up_to_date test: the committed include/ztensor.h must be byte for byte the
# header build.rs generated from the current sources with the pinned cbindgen crate
# (GENERATED, written by every cargo build of the CMake build).
foreach(_var GENERATED HEADER BUILD_DIR)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "check_header.cmake: ${_var} is not set")
  endif()
endforeach()

if(NOT EXISTS "${GENERATED}")
  message(FATAL_ERROR "${GENERATED} does not exist: build first (cmake --build ${BUILD_DIR}); "
                      "build.rs writes it on every cargo build of this build tree")
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${GENERATED}" "${HEADER}"
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  find_program(_diff diff)
  if(_diff)
    execute_process(COMMAND "${_diff}" -u "${HEADER}" "${GENERATED}")
  endif()
  message(FATAL_ERROR "include/ztensor.h is out of date: it differs from the header generated "
                      "from the sources (${GENERATED}, diff above). Update it with\n"
                      "  cmake --build ${BUILD_DIR} --target update_header\n"
                      "and commit it.")
endif()
message(STATUS "include/ztensor.h is the header generated from the sources")
