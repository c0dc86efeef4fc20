# cmake -DROOT=<dir> -DLIST=<file> -P reset_workdirs.cmake
# Fixture setup of ctest: deletes <dir> and recreates one empty subdirectory per test name
# listed (one per line) in <file>, so every test starts in a fresh working directory.
if(NOT ROOT OR NOT LIST)
  message(FATAL_ERROR "usage: cmake -DROOT=<dir> -DLIST=<file> -P reset_workdirs.cmake")
endif()
file(REMOVE_RECURSE "${ROOT}")
file(STRINGS "${LIST}" _names)
foreach(_name IN LISTS _names)
  file(MAKE_DIRECTORY "${ROOT}/${_name}")
endforeach()
