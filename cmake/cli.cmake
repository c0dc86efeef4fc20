# ctest registrations for the zt command-line tool; included from the test section of
# CMakeLists.txt (it uses _ztensor_add_test and the variables set there). The Rust tests
# of the tool (tests/cli.rs) run in rust_tests, which enables the `cli` feature.
if(NOT ZTENSOR_BUILD_CLI)
  return()
endif()

# The tool as built (build/bin/zt): info with exact output, verify, convert, cat.
_ztensor_add_test(cli_built "${CMAKE_COMMAND}"
  "-DZT=${ZTENSOR_ZT_EXECUTABLE}"
  "-DVECTORS=${ZTENSOR_TEST_VECTORS}"
  -P "${PROJECT_SOURCE_DIR}/tests/cmake/cli_smoke.cmake")

# The tool as installed: `cmake --install --component cli` into a fresh prefix, then the
# same checks on <prefix>/bin/zt. (Installing one component writes its own manifest,
# install_manifest_cli.txt, so this can run beside install_consumer.)
if(ZTENSOR_INSTALL)
  _ztensor_add_test(cli_installed "${CMAKE_COMMAND}"
    "-DINSTALL_FROM=${PROJECT_BINARY_DIR}"
    "-DPREFIX=${ZTENSOR_TEST_WORK_ROOT}/cli_installed/prefix"
    "-DZT=${ZTENSOR_TEST_WORK_ROOT}/cli_installed/prefix/${CMAKE_INSTALL_BINDIR}/zt"
    "-DVECTORS=${ZTENSOR_TEST_VECTORS}"
    -P "${PROJECT_SOURCE_DIR}/tests/cmake/cli_smoke.cmake")
endif()
