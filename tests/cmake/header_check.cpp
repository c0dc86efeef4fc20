// Compiled by the header_cxx17 test with -Wall -Wextra -Werror -pedantic: include/ztensor.h
// must not produce a single warning as C++17. Included twice for the guard.
#include "ztensor.h"
#include "ztensor.h"

int main() {
  zt_open_options options{};
  (void)options;
  return zt_version() == nullptr;
}
