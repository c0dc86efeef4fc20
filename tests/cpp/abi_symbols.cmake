# cmake -DNM=<nm> -DOBJECTS=<a.o|b.o|...> -P abi_symbols.cmake
# The cpp_abi_symbols test: the objects are abi_mix_part.cpp compiled in the wrapper's
# four configurations at -O0. Fails when a zt:: symbol is defined in two of them (two
# configurations sharing a mangled name: the linker would keep one definition for both),
# or when an object defines no zt:: symbol of its own (the check would be empty).
if(NOT NM)
  message(FATAL_ERROR "no nm (CMAKE_NM is empty)")
endif()
string(REPLACE "|" ";" OBJECTS "${OBJECTS}")
list(LENGTH OBJECTS count)
if(count LESS 2)
  message(FATAL_ERROR "expected the objects of several configurations, got: ${OBJECTS}")
endif()

set(failures "")
set(index 0)
foreach(object IN LISTS OBJECTS)
  execute_process(COMMAND "${NM}" --defined-only "${object}"
    OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} ${object}: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${listing}")
  set(own 0)
  foreach(line IN LISTS lines)
    # "<address> <type> <mangled name>": code, data, vtables ... of namespace zt
    # (_ZN2zt..., _ZNK2zt..., _ZTVN2zt..., _ZZN2zt...; mangled names hold no ';').
    if(line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (_Z[A-Z]*N[A-Z]*2zt[^ ]*)$")
      set(name "${CMAKE_MATCH_1}")
      string(MD5 key "${name}")
      if(DEFINED seen_${key} AND NOT seen_${key} EQUAL index)
        list(APPEND failures "${name}")
      endif()
      set(seen_${key} ${index})
      math(EXPR own "${own} + 1")
    endif()
  endforeach()
  message(STATUS "${object}: ${own} zt:: symbols")
  if(own EQUAL 0)
    message(FATAL_ERROR "${object} defines no zt:: symbol: nothing to compare")
  endif()
  math(EXPR index "${index} + 1")
endforeach()

if(failures)
  list(REMOVE_DUPLICATES failures)
  list(LENGTH failures n)
  string(REPLACE ";" "\n  " failures "${failures}")
  message(FATAL_ERROR "${n} zt:: symbols are defined by two configurations (c++filt them):\n  ${failures}")
endif()
message(STATUS "no zt:: symbol shared between ${count} configurations")
