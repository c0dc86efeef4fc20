/* Compiled by the header_c99 / header_c11 tests with -Wall -Wextra -Werror -pedantic:
 * include/ztensor.h must not produce a single warning. Included twice for the guard. */
#include "ztensor.h"
#include "ztensor.h"

int main(void) {
  zt_open_options options = {0};
  (void)options;
  return zt_version() == NULL;
}
