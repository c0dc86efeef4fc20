# ctest registrations for the C++ wrapper beyond its GoogleTest programs; included from the
# test section of CMakeLists.txt (it uses _ztensor_add_test and the variables set there).
#
#   cpp_abi_mix       the wrapper's four configurations (exceptions or not, C++17 or
#                     C++20) compiled at -O0 into one program, each part checking that it
#                     runs its own code (tests/cpp/abi_mix_*.cpp); linked with
#                     ztensor::ztensor_cpp_static, the one build-tree use of that target
#   cpp_abi_symbols   no zt:: symbol is defined by two of those parts: every
#                     configuration has its own inline namespace (ztensor/config.hpp)
#   cpp_warnings_*    the wrapper and the C++ test programs compile warning-free with g++
#                     and clang++ at every -O level (below)
#   cpp_header_alone_* each header compiles on its own
#   cpp_wrapper_covers_c_api  every function of include/ztensor.h is reached by the wrapper,
#                     but for a short allow-list with reasons (tests/cmake/check_cpp_coverage.py)
#   cpp_examples      cpp/examples/loader and convert (built into build/cpp_examples/ with
#                     ZTENSOR_BUILD_EXAMPLES) on a demo model and on vectors of each format
if(NOT CMAKE_CXX_COMPILER OR NOT ZTENSOR_HAVE_CPP)
  return()
endif()

# --- Four configurations in one program ---------------------------------------------------
set(_cpp_strict -Wall -Wextra -Werror -pedantic)
set(_cpp_abi_parts "")
foreach(_errors exceptions results)
  foreach(_std 17 20)
    set(_part zt_abi_${_errors}_cxx${_std})
    add_library(${_part} OBJECT "${PROJECT_SOURCE_DIR}/tests/cpp/abi_mix_part.cpp")
    target_link_libraries(${_part} PRIVATE ztensor::ztensor_cpp)
    set_target_properties(${_part} PROPERTIES CXX_STANDARD ${_std} CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
    # -O0 after the build type's flags: nothing inlined, every zt:: function emitted.
    target_compile_options(${_part} PRIVATE -O0 ${_cpp_strict})
    target_compile_definitions(${_part} PRIVATE ZT_ABI_PART=${_part})
    if(_errors STREQUAL "results")
      target_compile_definitions(${_part} PRIVATE ZT_NO_EXCEPTIONS=1)
      target_compile_options(${_part} PRIVATE -fno-exceptions)
    endif()
    list(APPEND _cpp_abi_parts ${_part})
  endforeach()
endforeach()
add_executable(cpp_abi_mix "${PROJECT_SOURCE_DIR}/tests/cpp/abi_mix_main.cpp")
set(_cpp_abi_objects "")
foreach(_part IN LISTS _cpp_abi_parts)
  target_sources(cpp_abi_mix PRIVATE $<TARGET_OBJECTS:${_part}>)
  list(APPEND _cpp_abi_objects $<TARGET_OBJECTS:${_part}>)
endforeach()
target_link_libraries(cpp_abi_mix PRIVATE ztensor::ztensor_cpp_static)
target_compile_options(cpp_abi_mix PRIVATE -O0 ${_cpp_strict})
set_target_properties(cpp_abi_mix PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests/cpp")
_ztensor_add_test(cpp_abi_mix cpp_abi_mix)

string(REPLACE ";" "|" _cpp_abi_objects "${_cpp_abi_objects}")
_ztensor_add_test(cpp_abi_symbols "${CMAKE_COMMAND}"
  "-DNM=${CMAKE_NM}"
  "-DOBJECTS=${_cpp_abi_objects}"
  -P "${PROJECT_SOURCE_DIR}/tests/cpp/abi_symbols.cmake")

# --- Warning-free at every optimization level, with g++ and clang++ ------------------------
#   cpp_warnings_<gcc|clang>_O<0-3>_<test>   every C++ test program of tests/cpp (the real
#       programs, which use the wrapper as users do: a read_as of a GGUF tensor, builders
#       moved around ...), each in its own standard and mode (test_cxxNN_*: C++NN;
#       test_noexceptions*: -fno-exceptions), compiled with -Wall -Wextra -Werror -pedantic
#   cpp_warnings_<gcc|clang>_cxx<17|20>_O<0-3>[_noexceptions]   tests/cpp/instantiate_all.cpp
#       (every public template of the wrapper, instantiated) in every configuration
# Some warnings only appear once code is inlined (g++'s -Wmaybe-uninitialized at -O1 and
# -O2, -Wdangling-pointer and -Wrestrict at -O3 in g++ 12), so each level is its own test,
# and the programs are compiled (-c), not only parsed.
#   cpp_header_alone_<part>   each header of cpp/include compiles on its own.
set(_cpp_gxx "")
set(_cpp_clangxx "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_cpp_gxx "${CMAKE_CXX_COMPILER}")
elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(_cpp_clangxx "${CMAKE_CXX_COMPILER}")
endif()
if(NOT _cpp_gxx)
  find_program(ZTENSOR_GXX NAMES g++)
  set(_cpp_gxx "${ZTENSOR_GXX}")
endif()
if(NOT _cpp_clangxx)
  find_program(ZTENSOR_CLANGXX NAMES clang++)
  set(_cpp_clangxx "${ZTENSOR_CLANGXX}")
endif()

set(_cpp_includes "-I${PROJECT_SOURCE_DIR}/include" "-I${PROJECT_SOURCE_DIR}/cpp/include")
# GoogleTest's headers, for the test programs: as system headers (their warnings aren't
# ours), except the compiler's own directories, which -isystem would reorder.
set(_cpp_gtest_includes "")
if(ZTENSOR_GTEST_MAIN AND TARGET GTest::gtest)
  get_target_property(_gtest_dirs GTest::gtest INTERFACE_INCLUDE_DIRECTORIES)
  foreach(_dir IN LISTS _gtest_dirs)
    if(_dir AND NOT _dir MATCHES "^/usr(/local)?/include/?$" AND NOT _dir MATCHES "\\$<")
      list(APPEND _cpp_gtest_includes "-isystem" "${_dir}")
    endif()
  endforeach()
endif()
set(_cpp_test_programs "")
if(ZTENSOR_GTEST_MAIN)
  file(GLOB _cpp_test_programs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/cpp/test_*.cpp")
endif()
set(_cpp_remote_flag "")
if(NOT ZTENSOR_REMOTE)
  set(_cpp_remote_flag -DZT_TEST_NO_REMOTE=1)
endif()

# _cpp_warning_test(<name> <compiler kind> <compiler> <args>...): one compile as a test,
# or, without that compiler, a test saying so (clang++ is optional where the README's
# commands run: reported as skipped; g++ is required).
function(_cpp_warning_test name kind cxx)
  if(cxx)
    _ztensor_add_test(${name} "${cxx}" ${ARGN})
  elseif(kind STREQUAL "clang")
    _ztensor_add_test(${name} sh -c "echo 'no clang++ found (apt-get install clang): skipped'; exit 77")
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  else()
    _ztensor_add_test(${name} "${CMAKE_COMMAND}"
      "-DMESSAGE=no g++ found (apt-get install g++)" -P "${_ztensor_fail_script}")
  endif()
endfunction()

foreach(_compiler gcc clang)
  if(_compiler STREQUAL "gcc")
    set(_cxx "${_cpp_gxx}")
  else()
    set(_cxx "${_cpp_clangxx}")
  endif()
  foreach(_level 0 1 2 3)
    foreach(_std 17 20)
      foreach(_mode exceptions noexceptions)
        set(_name cpp_warnings_${_compiler}_cxx${_std}_O${_level})
        set(_flags "")
        if(_mode STREQUAL "noexceptions")
          string(APPEND _name _noexceptions)
          set(_flags -DZT_NO_EXCEPTIONS=1 -fno-exceptions)
        endif()
        _cpp_warning_test(${_name} ${_compiler} "${_cxx}" -std=c++${_std} -O${_level} ${_flags} ${_cpp_strict}
          ${_cpp_includes} -c "${PROJECT_SOURCE_DIR}/tests/cpp/instantiate_all.cpp" -o instantiate_all.o)
      endforeach()
    endforeach()
    foreach(_program IN LISTS _cpp_test_programs)
      get_filename_component(_stem "${_program}" NAME_WE)
      set(_std 17)
      if(_stem MATCHES "^test_cxx([0-9][0-9])(_|$)")
        set(_std ${CMAKE_MATCH_1})
      endif()
      set(_flags "")
      if(_stem MATCHES "^test_noexceptions")
        set(_flags -DZT_NO_EXCEPTIONS=1 -fno-exceptions)
      endif()
      _cpp_warning_test(cpp_warnings_${_compiler}_O${_level}_${_stem} ${_compiler} "${_cxx}"
        -std=c++${_std} -O${_level} ${_flags} ${_cpp_remote_flag} ${_cpp_strict} ${_cpp_includes}
        ${_cpp_gtest_includes} -c "${_program}" -o "${_stem}.o")
    endforeach()
  endforeach()
endforeach()

# --- The wrapper reaches every function of the C header (an allow-list says why not) ------
if(ZTENSOR_PYTHON3)
  _ztensor_add_test(cpp_wrapper_covers_c_api "${ZTENSOR_PYTHON3}"
    "${PROJECT_SOURCE_DIR}/tests/cmake/check_cpp_coverage.py"
    "--header=${PROJECT_SOURCE_DIR}/include/ztensor.h"
    "--wrapper=${PROJECT_SOURCE_DIR}/cpp/include")
else()
  _ztensor_add_test(cpp_wrapper_covers_c_api "${CMAKE_COMMAND}"
    "-DMESSAGE=python3 not found (install python3)" -P "${_ztensor_fail_script}")
endif()

file(GLOB_RECURSE _cpp_headers RELATIVE "${PROJECT_SOURCE_DIR}/cpp/include" CONFIGURE_DEPENDS
  "${PROJECT_SOURCE_DIR}/cpp/include/*.hpp")
foreach(_header IN LISTS _cpp_headers)
  string(REGEX REPLACE "[/.]" "_" _name "${_header}")
  add_test(NAME cpp_header_alone_${_name}
    COMMAND "${CMAKE_CXX_COMPILER}" -std=c++17 ${_cpp_strict} -fsyntax-only ${_cpp_includes}
            -x c++ "${PROJECT_SOURCE_DIR}/cpp/include/${_header}")
endforeach()

# --- The examples of cpp/examples, built strictly and run ---------------------------------
if(ZTENSOR_BUILD_EXAMPLES)
  foreach(_example loader convert)
    add_executable(cpp_example_${_example} "${PROJECT_SOURCE_DIR}/cpp/examples/${_example}.cpp")
    target_link_libraries(cpp_example_${_example} PRIVATE ztensor::ztensor_cpp)
    target_compile_options(cpp_example_${_example} PRIVATE ${_cpp_strict})
    set_target_properties(cpp_example_${_example} PROPERTIES OUTPUT_NAME ${_example}
      RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/cpp_examples")
  endforeach()
  _ztensor_add_test(cpp_examples "${CMAKE_COMMAND}"
    "-DLOADER=$<TARGET_FILE:cpp_example_loader>"
    "-DCONVERT=$<TARGET_FILE:cpp_example_convert>"
    "-DVECTORS=${ZTENSOR_TEST_VECTORS}"
    -P "${PROJECT_SOURCE_DIR}/tests/cpp/run_examples.cmake")
endif()
