# Helpers for driving the Rust crate from CMake.

# ztensor_cargo_package_version(<Cargo.toml> <out-var>)
#
# Reads `version = "X.Y.Z"` from the [package] table of a Cargo manifest (the one source
# of the version: CMake's project version, the library file names and the package
# files all derive from it). Only the numeric X.Y.Z part is returned; a pre-release
# suffix ("-alpha.1") is dropped because CMake versions are numeric.
function(ztensor_cargo_package_version manifest out_var)
  file(STRINGS "${manifest}" _lines)
  set(_section "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^[ \t]*\\[([^]]*)\\][ \t]*(#.*)?$")
      set(_section "${CMAKE_MATCH_1}")
    elseif(_section STREQUAL "package"
           AND _line MATCHES "^[ \t]*version[ \t]*=[ \t]*\"([0-9]+\\.[0-9]+\\.[0-9]+)[^\"]*\"")
      set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "No `version = \"X.Y.Z\"` in the [package] table of ${manifest}")
endfunction()
