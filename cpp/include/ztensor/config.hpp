// ztensor/config.hpp: part of ztensor.hpp (include that). The C header, the standard
// headers the wrapper uses, and the configuration macros:
//   ZT_CPP_EXCEPTIONS  1 unless ZT_NO_EXCEPTIONS is defined or exceptions are off
//   ZT_CPP_STANDARD    the C++ standard in effect (__cplusplus, or _MSVC_LANG)
//   ZT_CPP_STD_SPAN    1 when zt::span is std::span (C++20 with <span>)
//   ZT_CPP_ABI         the inline namespace every declaration of the wrapper lives in
#ifndef ZTENSOR_CPP_CONFIG_HPP
#define ZTENSOR_CPP_CONFIG_HPP

#include "ztensor.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(ZT_NO_EXCEPTIONS) || !(defined(__cpp_exceptions) || defined(_CPPUNWIND))
#define ZT_CPP_EXCEPTIONS 0
#else
#define ZT_CPP_EXCEPTIONS 1
#include <stdexcept>
#endif

#if defined(_MSVC_LANG)
#define ZT_CPP_STANDARD _MSVC_LANG
#else
#define ZT_CPP_STANDARD __cplusplus
#endif

#if ZT_CPP_STANDARD >= 202002L && defined(__has_include)
#if __has_include(<span>)
#include <span>
#endif
#endif
#if defined(__cpp_lib_span) && __cpp_lib_span >= 202002L
#define ZT_CPP_STD_SPAN 1
#else
#define ZT_CPP_STD_SPAN 0
#endif

#if ZT_CPP_STANDARD > 202002L && defined(__has_include)
#if __has_include(<stdfloat>)
#include <stdfloat>
#endif
#endif

// One inline namespace per configuration, so translation units built with different
// settings can be linked into one program. Both settings change declarations whose
// mangled names would otherwise be equal, and the linker would then keep one inline
// definition for every translation unit (an ODR violation that misbehaves in practice):
// - exceptions or not: every fallible member returns T or zt::result<T> (a return type
//   is not part of a member function's mangled name) and result<T>::value() throws or
//   aborts;
// - std::span or not: Object::shape() and tensor_view::bytes() return one span or the
//   other.
// So both axes are needed, four names in all: the cpp_abi_mix test links all four into
// one program (tests/cpp/abi_mix_*.cpp), and cpp_abi_symbols checks they share no symbol.
#if ZT_CPP_EXCEPTIONS && ZT_CPP_STD_SPAN
#define ZT_CPP_ABI abi_exceptions_stdspan
#elif ZT_CPP_EXCEPTIONS
#define ZT_CPP_ABI abi_exceptions_span
#elif ZT_CPP_STD_SPAN
#define ZT_CPP_ABI abi_results_stdspan
#else
#define ZT_CPP_ABI abi_results_span
#endif

#endif  // ZTENSOR_CPP_CONFIG_HPP
