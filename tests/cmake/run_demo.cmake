# cmake -DWRITE_MODEL=<exe> -DLOAD_MODEL=<exe> -DZT_INFO=<exe> -P run_demo.cmake
# The `demo` target as a test, in the current (fresh) directory: write a sample model,
# load it, print its table; then the same as a sharded set. Any step failing, or writing
# no file, fails the test.
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

# The same model as a sharded set (zt_writer_create_sharded_with), loaded through its index
# with one zt_batch_load call.
set(_index "${CMAKE_CURRENT_BINARY_DIR}/demo_set.zt.index.json")
file(REMOVE "${_index}")
message(STATUS "$ ${WRITE_MODEL} --shard-size 50000 demo_set.zt")
execute_process(COMMAND "${WRITE_MODEL}" --shard-size 50000 demo_set.zt RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0 OR NOT EXISTS "${_index}")
  message(FATAL_ERROR "${WRITE_MODEL} --shard-size 50000 demo_set.zt failed (${_rc}) or wrote no index")
endif()
foreach(_step LOAD_MODEL ZT_INFO)
  message(STATUS "$ ${${_step}} demo_set.zt.index.json")
  execute_process(COMMAND "${${_step}}" demo_set.zt.index.json RESULT_VARIABLE _rc
                  OUTPUT_VARIABLE _out)
  message("${_out}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${${_step}} demo_set.zt.index.json failed: ${_rc}")
  endif()
  if(_step STREQUAL "LOAD_MODEL" AND NOT _out MATCHES "\nfiles: 4\ntensors: 21 \\(20 zero-copy, 1 decoded")
    message(FATAL_ERROR "load_model of the set did not load 21 tensors from 4 files")
  endif()
endforeach()
