# ctest labels, and the `quick` build target; included at the end of the test section of
# CMakeLists.txt, once every test is registered. The README's commands:
#
#   cmake --build build --target quick && ctest --test-dir build -L quick -j$(nproc)
#       the quick set: what a change most often breaks, in minutes
#   cmake --build build && ctest --test-dir build -LE quick -j$(nproc)
#       everything else (.ci/run runs both lines: the full set)
#   ctest --test-dir build -L <label>
#       one set: sanitizers, valgrind, tsan, warnings, free-threaded, rust, python,
#       languages, install, gpu
#
# Every test gets one label from its name, so tests added later land in a set without
# touching this file (a name no rule knows gets `other`, run with the rest, and is listed
# at configure time):
#
#   quick          the header checks (generated = committed, warning-free in C99/C11/
#                  C++17/C++20, names, deprecations), every plain C and C++ test program,
#                  the C++ wrapper's coverage and lone-header checks and ABI mix, the
#                  examples and the demo, the built zt tool, the release checks
#   sanitizers     asan_*: the C and C++ programs under ASan+UBSan
#   valgrind       valgrind_*
#   tsan           tsan_threads: the Rust tests under ThreadSanitizer (nightly)
#   warnings       cpp_warnings_*: the C++ wrapper with g++ and clang++ at -O0..-O3
#   free-threaded  python_free_threaded
#   rust           rust_tests (cargo test), loom_pipeline_core
#   python         the Python package: venvs, wheel, sdist, its tests
#   languages      Go, Zig, Python ctypes, and every code block of the documentation
#   install        install_consumer, cli_installed
#   gpu            tests/gpu/run_device.sh without a GPU (and with the fake CUDA driver)

set(_ztensor_label_rules
  "^asan_"                        sanitizers
  "^valgrind_"                    valgrind
  "^tsan_"                        tsan
  "^cpp_warnings_"                warnings
  "^python_free_threaded$"        free-threaded
  "^python_"                      python
  "^(lang_|docs_examples$)"       languages
  "^(rust_tests|loom_)"           rust
  "^(install_consumer|cli_installed)$" install
  "^gpu_"                         gpu
  "^workdirs_reset$"              fixture
  "^(header_|c_test_|cpp_test_|examples?_|cli_built$|cpp_abi_|cpp_wrapper_covers_c_api$|cpp_header_alone_|cpp_examples$|release_)" quick)

get_property(_ztensor_all_tests DIRECTORY PROPERTY TESTS)
set(_ztensor_unlabelled "")
foreach(_test IN LISTS _ztensor_all_tests)
  set(_label other)
  set(_rules ${_ztensor_label_rules})
  while(_rules)
    list(POP_FRONT _rules _regex _name)
    if(_test MATCHES "${_regex}")
      set(_label ${_name})
      break()
    endif()
  endwhile()
  if(_label STREQUAL "other")
    list(APPEND _ztensor_unlabelled ${_test})
  endif()
  set_property(TEST ${_test} APPEND PROPERTY LABELS ${_label})
endforeach()
if(_ztensor_unlabelled)
  string(REPLACE ";" ", " _ztensor_unlabelled "${_ztensor_unlabelled}")
  message(STATUS "ctest: no label rule for ${_ztensor_unlabelled} (label 'other': cmake/labels.cmake)")
endif()

# What the quick set runs, and nothing more: the library and zt (cargo), the plain test
# programs, the examples, the struct growth programs.
add_custom_target(quick)
foreach(_target ztensor_cargo ztensor_plain_tests ztensor_fake_cuda write_model load_model zt_info
                gguf_loader tp_llama_layer cpp_example_loader cpp_example_convert cpp_abi_mix
                release_struct_growth_release_header release_struct_growth_current_header)
  if(TARGET ${_target})
    add_dependencies(quick ${_target})
  endif()
endforeach()
