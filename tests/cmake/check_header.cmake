# cmake -DCBINDGEN=<path> -DCBINDGEN_VERSION=<x.y.z> -DSOURCE_DIR=<repo> -DOUTPUT=<file>
#       -P check_header.cmake
# Regenerates the C header with the pinned cbindgen into OUTPUT and fails unless it is
# byte for byte the committed include/ztensor.h.
foreach(_var CBINDGEN_VERSION SOURCE_DIR OUTPUT)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "check_header.cmake: ${_var} is not set")
  endif()
endforeach()

set(_install_hint "cargo install cbindgen --version ${CBINDGEN_VERSION} --locked")
if(NOT CBINDGEN)
  message(FATAL_ERROR "cbindgen not found; install it with: ${_install_hint}")
endif()

execute_process(COMMAND "${CBINDGEN}" --version
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _version ERROR_VARIABLE _version
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "`${CBINDGEN} --version` failed (${_rc}): ${_version}")
endif()
if(NOT _version STREQUAL "cbindgen ${CBINDGEN_VERSION}")
  message(FATAL_ERROR "${CBINDGEN} is \"${_version}\", but the header is generated with "
                      "cbindgen ${CBINDGEN_VERSION} (other versions format it differently). "
                      "Install the pinned one: ${_install_hint}")
endif()

get_filename_component(_outdir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_outdir}")
file(REMOVE "${OUTPUT}")
execute_process(
  COMMAND "${CBINDGEN}" --config cbindgen.toml --crate ztensor --output "${OUTPUT}" "${SOURCE_DIR}"
  WORKING_DIRECTORY "${SOURCE_DIR}"
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0 OR NOT EXISTS "${OUTPUT}")
  message(FATAL_ERROR "cbindgen failed (${_rc})")
endif()

set(_header "${SOURCE_DIR}/include/ztensor.h")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUTPUT}" "${_header}"
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  find_program(_diff diff)
  if(_diff)
    execute_process(COMMAND "${_diff}" -u "${_header}" "${OUTPUT}")
  endif()
  message(FATAL_ERROR "include/ztensor.h differs from cbindgen's output (${OUTPUT}). "
                      "Regenerate it from the repository root with:\n"
                      "  cbindgen --config cbindgen.toml --crate ztensor --output include/ztensor.h .")
endif()
message(STATUS "include/ztensor.h is cbindgen ${CBINDGEN_VERSION}'s output")
