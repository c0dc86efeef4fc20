# The deprecated_warns_<lang> tests: the header declares the old names of renamed functions
# with ZT_DEPRECATED, so that a call to one warns, naming the new name, while a program
# that only includes the header (the header_c* / header_cxx* tests) or calls the new names
# compiles without a warning.
#
#   cmake -DCOMPILER=<cc or c++> -DSTD=<-std=...> -DLANG=<c|c++> -DINCLUDE=<dir> -P check_deprecated.cmake
#
# Compiles two programs with -Wall -Wextra -Werror -pedantic: one calling
# zt_object_info_get must fail with a deprecation naming zt_object_get_info; the same
# calling zt_object_get_info must compile.
foreach(_var COMPILER STD LANG INCLUDE)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "check_deprecated.cmake: -D${_var}=... is missing")
  endif()
endforeach()

if(LANG STREQUAL "c")
  set(_ext c)
else()
  set(_ext cpp)
endif()

function(_compile name function out_result out_output)
  set(_source "${CMAKE_CURRENT_BINARY_DIR}/${name}.${_ext}")
  file(WRITE "${_source}" "#include \"ztensor.h\"
int main(void) {
  zt_object_info info;
  return (int)${function}((const zt_reader *)0, 0, &info);
}
")
  execute_process(
    COMMAND "${COMPILER}" ${STD} -Wall -Wextra -Werror -pedantic "-I${INCLUDE}" -c "${_source}"
            -o "${CMAKE_CURRENT_BINARY_DIR}/${name}.o"
    RESULT_VARIABLE _result OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  set(${out_result} "${_result}" PARENT_SCOPE)
  set(${out_output} "${_out}" PARENT_SCOPE)
endfunction()

_compile(calls_new_name zt_object_get_info _result _out)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "a call of zt_object_get_info does not compile cleanly (${LANG} ${STD}):\n${_out}")
endif()

_compile(calls_old_name zt_object_info_get _result _out)
if(_result EQUAL 0)
  message(FATAL_ERROR "a call of the deprecated zt_object_info_get compiled without a warning "
                      "(${LANG} ${STD}): ZT_DEPRECATED does nothing with this compiler")
endif()
if(NOT _out MATCHES "deprecated" OR NOT _out MATCHES "renamed zt_object_get_info")
  message(FATAL_ERROR "the deprecation of zt_object_info_get does not name its new name "
                      "(${LANG} ${STD}):\n${_out}")
endif()
message(STATUS "${LANG} ${STD}: a call of zt_object_info_get warns: renamed zt_object_get_info")
