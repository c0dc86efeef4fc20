# ctest registrations of the release checks (RELEASING.md); included from the test section
# of CMakeLists.txt (it uses _ztensor_add_test and the variables set there).
#
#   release_versions   tests/release/check_release.py on the tree and this build: the
#                      version agrees everywhere (Cargo.toml, lockfiles, header, changelog,
#                      Python, CMake, pkg-config, documentation), the library's SONAME and
#                      real name follow the soname policy, ztensorConfigVersion.cmake
#                      accepts this minor series only, `zt --version`, the ABI baseline
#   release_abi        tests/release/abi.py: the header's ABI against abi/ (abidiff), then
#                      the checker's self-test; skipped (77), saying so, without
#                      abigail-tools unless ZT_ABI_REQUIRED is set (.ci/run sets it)
#   release_struct_growth_{release,current}_header
#                      tests/release/struct_growth.c built against the release's header
#                      (abi/ztensor.h) and against the current one, run with this library
#
# `cargo package` and `cargo publish --dry-run` run in .ci/run (check_release.py
# --cargo-package): they build the packaged crate, minutes on two cores.

set(_release_dir "${PROJECT_SOURCE_DIR}/tests/release")
if(ZTENSOR_PYTHON3)
  _ztensor_add_test(release_versions "${ZTENSOR_PYTHON3}" "${_release_dir}/check_release.py"
    "--build-dir=${PROJECT_BINARY_DIR}" "--soname=${ZTENSOR_SONAME}")
  _ztensor_add_test(release_abi "${CMAKE_COMMAND}" -E env "CC=${CMAKE_C_COMPILER}"
    "${ZTENSOR_PYTHON3}" "${_release_dir}/abi.py" ci "--soname=${ZTENSOR_SONAME}")
  set_tests_properties(release_abi PROPERTIES SKIP_RETURN_CODE 77)
else()
  foreach(_name release_versions release_abi)
    _ztensor_add_test(${_name} "${CMAKE_COMMAND}" "-DMESSAGE=python3 not found (install python3)"
      -P "${_ztensor_fail_script}")
  endforeach()
endif()

foreach(_header release current)
  set(_target release_struct_growth_${_header}_header)
  add_executable(${_target} "${_release_dir}/struct_growth.c")
  if(_header STREQUAL "release")
    # Before the imported target's include/: the release's ztensor.h wins.
    target_include_directories(${_target} BEFORE PRIVATE "${PROJECT_SOURCE_DIR}/abi")
  else()
    # Only the current header's struct sizes are the library's own (struct_growth.c).
    target_compile_definitions(${_target} PRIVATE ZT_GROWTH_CURRENT_HEADER=1)
  endif()
  target_link_libraries(${_target} PRIVATE ztensor::ztensor)
  target_compile_options(${_target} PRIVATE ${ZTENSOR_WARNING_FLAGS})
  set_target_properties(${_target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests/release")
  _ztensor_add_test(${_target} ${_target} "${ZTENSOR_TEST_WORK_ROOT}/${_target}")
endforeach()
