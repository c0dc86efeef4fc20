// The span checks as C++20 (zt::span is std::span). Build with -std=c++20.
#if __cplusplus < 202002L
#error "test_cxx20_span.cpp must be compiled as C++20 (-std=c++20)"
#endif
#include "span_checks.inc"
