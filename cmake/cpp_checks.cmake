# ctest registrations for the C++ wrapper beyond its GoogleTest programs; included from the
# test section of CMakeLists.txt (it uses _ztensor_add_test and the variables set there).
#
#   cpp_abi_mix       the wrapper's four configurations (exceptions or not, C++17 or
#                     C++20) compiled at -O0 into one program, each part checking that it
#                     runs its own code (tests/cpp/abi_mix_*.cpp)
#   cpp_abi_symbols   no zt:: symbol is defined by two of those parts: every
#                     configuration has its own inline namespace (ztensor/config.hpp)
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
target_link_libraries(cpp_abi_mix PRIVATE ztensor::ztensor_cpp)
target_compile_options(cpp_abi_mix PRIVATE -O0 ${_cpp_strict})
set_target_properties(cpp_abi_mix PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests/cpp")
_ztensor_add_test(cpp_abi_mix cpp_abi_mix)

string(REPLACE ";" "|" _cpp_abi_objects "${_cpp_abi_objects}")
_ztensor_add_test(cpp_abi_symbols "${CMAKE_COMMAND}"
  "-DNM=${CMAKE_NM}"
  "-DOBJECTS=${_cpp_abi_objects}"
  -P "${PROJECT_SOURCE_DIR}/tests/cpp/abi_symbols.cmake")
