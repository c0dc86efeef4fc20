/*
 * test_hostile_counts: no count a file declares sizes an allocation, and the memory of
 * opening a file and of rendering its attributes stays a small multiple of the input,
 * through the C API with the default options.
 *
 *   test_hostile_counts <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * Each case runs in a child process under an address-space limit (RLIMIT_AS: what the
 * process has mapped plus 2 GiB) and must end in the expected status, never a signal:
 * - a 1 GiB manifest (the default limit) whose objects map declares 500,000,000 entries,
 *   followed by zeros: ZT_ERR_FORMAT at the first entry (this aborted asking for 100 GB);
 * - a manifest of 760,000 real objects whose map declares 30,000,000: ZT_ERR_FORMAT at
 *   its end, mapped and with ZT_OPEN_NO_MMAP;
 * - file attributes holding an array of 100,000,000 zeros (really there): the file
 *   opens, and zt_file_get_attributes_json renders all of it (this aborted asking for 3.2 GB).
 * Memory, in plain builds (sanitizers and valgrind change what a process holds), from
 * getrusage's peak RSS:
 * - opening 2,000,000 objects (ZT_TEST_OBJECTS=N for another count) peaks at most 3x
 *   the manifest, its own mapped pages included;
 * - rendering a 16 MiB attribute array of zeros adds at most 4x its output.
 * Under valgrind only the first case runs, without the limit (the others take hours).
 * The large files are sparse where they can be, and removed at the end.
 */
#define _GNU_SOURCE
#include "zt_test.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* ------------------------------------------------------------------------------------ */
/* CBOR written by hand, streamed to a file                                            */
/* ------------------------------------------------------------------------------------ */

static void head(FILE *f, unsigned major, uint64_t n) {
  unsigned char b[9];
  size_t len = 1;
  int i;
  if (n < 24) {
    b[0] = (unsigned char)(major << 5 | n);
  } else {
    int bytes = n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffffffu ? 4 : 8;
    b[0] = (unsigned char)(major << 5 | (bytes == 1 ? 24 : bytes == 2 ? 25 : bytes == 4 ? 26 : 27));
    for (i = 0; i < bytes; i++) {
      b[1 + i] = (unsigned char)(n >> (8 * (bytes - 1 - i)));
    }
    len = 1 + (size_t)bytes;
  }
  fwrite(b, 1, len, f);
}

static void text(FILE *f, const char *s) {
  head(f, 3, strlen(s));
  fwrite(s, 1, strlen(s), f);
}

/* Starts a zTensor file: the header, `hole` bytes of zeros (left sparse), then the start
   of a manifest map of `keys` keys, the first being "version": "1.2.0". The manifest's
   offset is stored in *manifest_start. */
static FILE *begin_file(const char *path, uint64_t hole, unsigned keys, long *manifest_start) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    return NULL;
  }
  fwrite("ZTEN1000", 1, 8, f);
  fseek(f, (long)(8 + hole), SEEK_SET);
  *manifest_start = 8 + (long)hole;
  head(f, 5, keys);
  text(f, "version");
  text(f, "1.2.0");
  return f;
}

/* Skips `zeros` bytes of the manifest (left sparse), then ends the file with the footer. */
static int end_file(FILE *f, long manifest_start, uint64_t zeros) {
  long end;
  uint64_t size;
  unsigned char le[8];
  int i;
  fseek(f, (long)zeros, SEEK_CUR);
  end = ftell(f);
  size = (uint64_t)(end - manifest_start);
  for (i = 0; i < 8; i++) {
    le[i] = (unsigned char)(size >> (8 * i));
  }
  fwrite(le, 1, 8, f);
  fwrite("ZTEN1000", 1, 8, f);
  return fclose(f) == 0;
}

/* One dense f32 object of one element whose data is at `offset`. */
static void object(FILE *f, uint64_t i, uint64_t offset) {
  char name[32];
  snprintf(name, sizeof name, "layer%07llu", (unsigned long long)i);
  text(f, name);
  head(f, 5, 3);
  text(f, "shape");
  head(f, 4, 1);
  head(f, 0, 1);
  text(f, "format");
  text(f, "dense");
  text(f, "components");
  head(f, 5, 1);
  text(f, "data");
  head(f, 5, 3);
  text(f, "dtype");
  text(f, "f32");
  text(f, "offset");
  head(f, 0, offset);
  text(f, "length");
  head(f, 0, 4);
}

/* {"version":"1.2.0","objects":{ `declared` entries }}, of which `real` are written
   (blobs 64 bytes apart from offset 64); then zeros up to a manifest of `pad_to` bytes
   (0: none). Returns the manifest size, 0 on failure. */
static uint64_t objects_file(const char *path, uint64_t declared, uint64_t real, uint64_t pad_to) {
  long start;
  uint64_t i;
  FILE *f = begin_file(path, 56 + 64 * real, 2, &start);
  if (f == NULL) {
    return 0;
  }
  text(f, "objects");
  head(f, 5, declared);
  for (i = 0; i < real; i++) {
    object(f, i, 64 + 64 * i);
  }
  {
    uint64_t written = (uint64_t)(ftell(f) - start);
    uint64_t zeros = pad_to > written ? pad_to - written : 0;
    return end_file(f, start, zeros) ? written + zeros : 0;
  }
}

/* {"version":"1.2.0","attributes":{"a":[n zeros]},"objects":{}}. */
static int attributes_file(const char *path, uint64_t n) {
  long start;
  FILE *f = begin_file(path, 0, 3, &start);
  if (f == NULL) {
    return 0;
  }
  text(f, "attributes");
  head(f, 5, 1);
  text(f, "a");
  head(f, 4, n);
  fseek(f, (long)n, SEEK_CUR);
  text(f, "objects");
  head(f, 5, 0);
  return end_file(f, start, 0);
}

/* ------------------------------------------------------------------------------------ */
/* Children under a limit                                                               */
/* ------------------------------------------------------------------------------------ */

static int under_valgrind(void) {
  const char *preload = getenv("LD_PRELOAD");
  return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

/* A line of /proc/self/status in kB ("VmSize:", "VmRSS:"), 0 if absent. */
static uint64_t status_kb(const char *key) {
  char line[256];
  uint64_t kb = 0;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) {
    return 0;
  }
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, strlen(key)) == 0) {
      kb = strtoull(line + strlen(key), NULL, 10);
    }
  }
  fclose(f);
  return kb;
}

static uint64_t peak_rss_kb(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (uint64_t)u.ru_maxrss;
}

/* A child's work: returns its exit code (a zt_status, or 100 + k for a failed check). */
typedef int (*child_fn)(const void *arg);

/* Runs `fn` in a child under the address-space limit; it must exit with `expected`. */
static void in_child(const char *what, child_fn fn, const void *arg, int expected) {
  pid_t pid;
  int st = 0;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid == 0) {
    if (!under_valgrind()) {
      struct rlimit rl;
      rl.rlim_cur = rl.rlim_max = (rlim_t)(status_kb("VmSize:") * 1024 + ((uint64_t)2 << 30));
      if (setrlimit(RLIMIT_AS, &rl) != 0) {
        _exit(99);
      }
    }
    {
      int code = fn(arg);
      fflush(stdout);
      _exit(code);
    }
  }
  if (!CHECK(pid > 0) || !CHECK(waitpid(pid, &st, 0) == pid)) {
    return;
  }
  if (WIFSIGNALED(st)) {
    zt_test_report(0, __FILE__, __LINE__, "%s: the child died of signal %d", what, WTERMSIG(st));
  } else {
    zt_test_report(WIFEXITED(st) && WEXITSTATUS(st) == expected, __FILE__, __LINE__,
                   "%s: the child exited with %d, expected %d", what, WEXITSTATUS(st), expected);
  }
}

typedef struct open_case {
  const char *path;
  uint32_t flags;
  const char *message; /* zt_last_error() must mention it */
} open_case;

static int open_status(const void *arg) {
  const open_case *c = (const open_case *)arg;
  zt_open_options o;
  zt_reader *r = NULL;
  zt_status st;
  memset(&o, 0, sizeof o);
  o.flags = c->flags;
  st = zt_open_with(c->path, &o, &r);
  if (r != NULL) {
    zt_close(r);
  }
  if (st != ZT_OK && strstr(zt_last_error(), c->message) == NULL) {
    fprintf(stderr, "%s: unexpected message \"%s\"\n", c->path, zt_last_error());
    return 100;
  }
  return (int)st;
}

typedef struct render_case {
  const char *path;
  uint64_t items;
  int measure; /* check the rendering's memory against its output */
} render_case;

static int render_attributes(const void *arg) {
  const render_case *c = (const render_case *)arg;
  zt_reader *r = NULL;
  const char *json = NULL;
  uint64_t before, peak, expected = 7 + 2 * c->items; /* {"a":[0,...,0]} */
  size_t len;
  zt_status st = zt_open(c->path, &r);
  if (st != ZT_OK) {
    return (int)st;
  }
  before = status_kb("VmRSS:");
  st = zt_file_get_attributes_json(r, &json);
  peak = peak_rss_kb();
  if (st != ZT_OK) {
    zt_close(r);
    return (int)st;
  }
  len = strlen(json);
  if (len != expected || strncmp(json, "{\"a\":[0,0,", 10) != 0 || strcmp(json + len - 4, ",0]}") != 0) {
    fprintf(stderr, "%s: %zu bytes of JSON, expected %llu\n", c->path, len, (unsigned long long)expected);
    zt_close(r);
    return 101;
  }
  zt_close(r);
  if (c->measure) {
    printf("rendering %zu bytes of JSON: peak RSS %llu kB, %llu kB before (%.2fx the output)\n", len,
           (unsigned long long)peak, (unsigned long long)before, (double)(peak - before) * 1024 / (double)len);
    if ((peak - before) * 1024 > 4 * (uint64_t)len) {
      return 102;
    }
  }
  return 0;
}

typedef struct memory_case {
  const char *path;
  uint64_t manifest;
} memory_case;

static int open_memory(const void *arg) {
  const memory_case *c = (const memory_case *)arg;
  zt_reader *r = NULL;
  uint64_t peak;
  zt_status st = zt_open(c->path, &r);
  peak = peak_rss_kb();
  if (st != ZT_OK) {
    return (int)st;
  }
  zt_close(r);
  printf("opening a %llu-byte manifest: peak RSS %llu kB (%.2fx the manifest)\n",
         (unsigned long long)c->manifest, (unsigned long long)peak, (double)peak * 1024 / (double)c->manifest);
  return peak * 1024 > 3 * c->manifest ? 103 : 0;
}

int main(void) {
  const int full = !under_valgrind();
  const int measure = full && !SANITIZED;

  /* 500,000,000 objects declared in a 1 GiB manifest of zeros. */
  {
    const uint64_t manifest = (uint64_t)1 << 30;
    open_case c = {"declared_500m.zt", 0, "an object name must be text, not unsigned integer"};
    if (CHECK_U64(objects_file(c.path, 500000000, 0, manifest), manifest)) {
      in_child("500,000,000 objects declared", open_status, &c, ZT_ERR_FORMAT);
    }
    unlink(c.path);
  }

  if (full) {
    /* 760,000 real objects (63 MB), 30,000,000 declared (60 MB at least). */
    open_case mapped = {"declared_30m.zt", 0, "unexpected end of input"};
    open_case pread_ = {"declared_30m.zt", ZT_OPEN_NO_MMAP, "unexpected end of input"};
    if (CHECK(objects_file(mapped.path, 30000000, 760000, 0) > 60000000)) {
      in_child("30,000,000 objects declared, mapped", open_status, &mapped, ZT_ERR_FORMAT);
      in_child("30,000,000 objects declared, pread", open_status, &pread_, ZT_ERR_FORMAT);
    }
    unlink(mapped.path);

    /* An attribute array of 100,000,000 zeros. */
    {
      render_case c = {"array_100m.zt", 100000000, 0};
      if (CHECK(attributes_file(c.path, c.items))) {
        in_child("100,000,000 attribute items", render_attributes, &c, 0);
      }
      unlink(c.path);
    }
  }

  if (measure) {
    const char *count = getenv("ZT_TEST_OBJECTS");
    uint64_t n = count != NULL ? strtoull(count, NULL, 10) : 2000000;
    memory_case m = {"many_objects.zt", 0};
    render_case c = {"array_16m.zt", (uint64_t)16 << 20, 1};
    m.manifest = objects_file(m.path, n, n, 0);
    if (CHECK(m.manifest > 0)) {
      in_child("open-time memory", open_memory, &m, 0);
    }
    unlink(m.path);
    if (CHECK(attributes_file(c.path, c.items))) {
      in_child("attribute rendering memory", render_attributes, &c, 0);
    }
    unlink(c.path);
  }
  return zt_test_summary();
}
