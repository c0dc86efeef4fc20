# cmake -DWRITE_MODEL=<exe> -DLOAD_MODEL=<exe> -DZT_INFO=<exe> -P run_demo.cmake
# The `demo` target as a test, in the current (fresh) directory: write a sample model,
# load it, print its table. Any step failing, or writing no file, fails the test.
foreach(_var WRITE_MODEL LOAD_MODEL ZT_INFO)
  if(NOT EXISTS "${${_var}}")
    message(FATAL_ERROR "run_demo.cmake: ${_var} (\"${${_var}}\") does not exist")
  endif()
endforeach()

# In script mode CMAKE_CURRENT_BINARY_DIR is the working directory.
set(_file "${CMAKE_CURRENT_BINARY_DIR}/demo.zt")
file(REMOVE "${_file}")
foreach(_step WRITE_MODEL LOAD_MODEL ZT_INFO)
  message(STATUS "$ ${${_step}} demo.zt")
  execute_process(COMMAND "${${_step}}" demo.zt RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${${_step}} demo.zt failed: ${_rc}")
  endif()
  if(_step STREQUAL "WRITE_MODEL" AND NOT EXISTS "${_file}")
    message(FATAL_ERROR "${WRITE_MODEL} exited 0 but wrote no demo.zt")
  endif()
endforeach()
