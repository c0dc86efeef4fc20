// The span checks as C++17 (zt's own span). Build with -std=c++17.
#include "span_checks.inc"
