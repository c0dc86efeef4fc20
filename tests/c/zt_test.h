/*
 * A tiny test harness shared by the C tests in tests/c/.
 *
 * Include this header first (it selects POSIX declarations before any system header).
 * Each CHECK counts one check; a failure prints "file:line: ..." with the expression and,
 * for status checks, the expected and actual status names and zt_last_error().
 * End main() with `return zt_test_summary();`, which prints exactly "N passed, M failed"
 * and returns 0 only when nothing failed. The counters are thread-safe.
 */
#ifndef ZT_TEST_H
#define ZT_TEST_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

typedef struct zt_test_state {
  pthread_mutex_t lock;
  long passed;
  long failed;
} zt_test_state;

/* One instance per program: tests are single translation units. */
/* The bytes of a file, malloc'd with a NUL after them (*size excludes it); NULL with
   *size 0 when it can't be read. */
static inline unsigned char *zt_test_slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *data;
  long n;
  *size = 0;
  if (f == NULL) {
    return NULL;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  data = (unsigned char *)malloc((size_t)n + 1);
  if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    fclose(f);
    return NULL;
  }
  fclose(f);
  data[n] = 0;
  *size = (size_t)n;
  return data;
}

static zt_test_state zt_test_counts = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

static inline void zt_test_count(int ok) {
  pthread_mutex_lock(&zt_test_counts.lock);
  if (ok) {
    zt_test_counts.passed++;
  } else {
    zt_test_counts.failed++;
  }
  pthread_mutex_unlock(&zt_test_counts.lock);
}

/* Records a check; on failure prints the location and a printf-style explanation. */
static inline int zt_test_report(int ok, const char *file, int line, const char *fmt, ...) {
  zt_test_count(ok);
  if (!ok) {
    va_list ap;
    pthread_mutex_lock(&zt_test_counts.lock);
    fprintf(stderr, "%s:%d: FAILED: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    pthread_mutex_unlock(&zt_test_counts.lock);
  }
  return ok;
}

/* Prints "N passed, M failed" and gives the process exit code. */
static inline int zt_test_summary(void) {
  long passed, failed;
  pthread_mutex_lock(&zt_test_counts.lock);
  passed = zt_test_counts.passed;
  failed = zt_test_counts.failed;
  pthread_mutex_unlock(&zt_test_counts.lock);
  printf("%ld passed, %ld failed\n", passed, failed);
  fflush(stdout);
  return failed == 0 ? 0 : 1;
}

/*
 * A status check. Besides the status itself it checks the zt_last_error() contract on
 * the same call: "" after ZT_OK, a non-empty message after a failure.
 */
static inline int zt_test_status(uint32_t expected, uint32_t actual, const char *expr, const char *file,
                                 int line) {
  /* copied at once: the message is only guaranteed until the next zt_ call */
  char msg[1024];
  const char *last = zt_last_error();
  int msg_ok;
  snprintf(msg, sizeof msg, "%s", last != NULL ? last : "(NULL)");
  msg_ok = last != NULL && (actual == ZT_OK ? last[0] == '\0' : last[0] != '\0');
  int ok = expected == actual && msg_ok;
  if (expected != actual) {
    zt_test_report(0, file, line, "%s: expected %s, got %s (zt_last_error: \"%s\")", expr,
                   zt_status_name(expected), zt_status_name(actual), msg);
  } else if (!msg_ok) {
    zt_test_report(0, file, line, "%s: %s as expected, but zt_last_error() is \"%s\"", expr,
                   zt_status_name(actual), msg);
  } else {
    zt_test_count(1);
  }
  return ok;
}

static inline int zt_test_str(const char *actual, const char *expected, const char *expr, const char *file,
                              int line) {
  int ok = actual != NULL && expected != NULL ? strcmp(actual, expected) == 0 : actual == expected;
  return zt_test_report(ok, file, line, "%s: expected \"%s\", got \"%s\"", expr, expected ? expected : "(NULL)",
                        actual ? actual : "(NULL)");
}

static inline int zt_test_contains(const char *haystack, const char *needle, const char *expr, const char *file,
                                   int line) {
  int ok = haystack != NULL && needle != NULL && strstr(haystack, needle) != NULL;
  return zt_test_report(ok, file, line, "%s: \"%s\" does not contain \"%s\"", expr,
                        haystack ? haystack : "(NULL)", needle ? needle : "(NULL)");
}

static inline int zt_test_u64(uint64_t actual, uint64_t expected, const char *expr, const char *file, int line) {
  return zt_test_report(actual == expected, file, line, "%s: expected %" PRIu64 ", got %" PRIu64, expr,
                        expected, actual);
}

static inline int zt_test_mem(const void *actual, const void *expected, size_t size, const char *expr,
                              const char *file, int line) {
  size_t i = 0;
  const unsigned char *a = (const unsigned char *)actual, *e = (const unsigned char *)expected;
  if (size == 0) {
    zt_test_count(1);
    return 1;
  }
  if (a == NULL || e == NULL) {
    return zt_test_report(0, file, line, "%s: NULL buffer", expr);
  }
  while (i < size && a[i] == e[i]) {
    i++;
  }
  if (i == size) {
    zt_test_count(1);
    return 1;
  }
  return zt_test_report(0, file, line, "%s: %zu bytes differ first at byte %zu: 0x%02x, expected 0x%02x", expr,
                        size, i, a[i], e[i]);
}

/* A plain boolean check. */
/* A writer of zTensor v1.2.0 at `path`. The library writes v2 by default; the tests of
 * what v1.2 has and v2 has not (objects listed in the order written, 64-byte alignment,
 * crc32c digests, unregistered object formats, nesting deeper than v2 allows, one-frame
 * zstd without a seek table) ask for v1.2 with this. */
static inline enum zt_status zt_test_create_v12(const char *path, zt_writer **w) {
  zt_writer_options o = {0};
  o.flags = ZT_WRITER_V1_2;
  return zt_writer_create_with(path, &o, w);
}

#define CHECK(expr) zt_test_report((expr) ? 1 : 0, __FILE__, __LINE__, "%s", #expr)
/* The call must return `expected` (and set zt_last_error() accordingly). */
#define CHECK_STATUS(expected, call) zt_test_status((uint32_t)(expected), (uint32_t)(call), #call, __FILE__, __LINE__)
#define CHECK_OK(call) CHECK_STATUS(ZT_OK, call)
#define CHECK_STR(actual, expected) zt_test_str((actual), (expected), #actual, __FILE__, __LINE__)
#define CHECK_CONTAINS(haystack, needle) zt_test_contains((haystack), (needle), #haystack, __FILE__, __LINE__)
#define CHECK_U64(actual, expected) \
  zt_test_u64((uint64_t)(actual), (uint64_t)(expected), #actual " == " #expected, __FILE__, __LINE__)
#define CHECK_MEM(actual, expected, size) \
  zt_test_mem((actual), (expected), (size), #actual " == " #expected, __FILE__, __LINE__)
/* The last zt_ call on this thread failed with a message that mentions `needle`. */
#define CHECK_ERROR_MENTIONS(needle) \
  zt_test_contains(zt_last_error(), (needle), "zt_last_error()", __FILE__, __LINE__)

#endif /* ZT_TEST_H */
