/*
 * Runs every file of the hostile corpus (tests/vectors/hostile/) through the C API and
 * checks the statuses listed in hostile/expected.tsv.
 *
 * Usage: test_hostile <path to tests/vectors>
 *
 * Each file is opened three ways, each of which must give the expected statuses:
 *   mmap    zt_open(path)
 *   pread   zt_open_with(path, {flags = ZT_OPEN_NO_MMAP})
 *   memory  zt_open_memory() on the file's bytes (in a 64-byte aligned buffer)
 * open_status is the status of the open. When it is ZT_OK, walk_status is the FIRST
 * non-OK status of this walk (ZT_OK if none); every call is made even after a failure:
 *
 *   for each object i in 0 .. zt_object_count() - 1:
 *     zt_object_get_info(i)                         (on failure: skip to the next object)
 *     for each component c in 0 .. component_count - 1:
 *       zt_component_get_info(i, c)                 (on failure: skip to the next component)
 *       if decoded_length > 0: zt_component_read_range(i, role) of byte 0, then of byte
 *         decoded_length - 1 (1 byte each)
 *       zt_component_read(i, role) into a malloc'd buffer of exactly decoded_length bytes
 *       zt_component_view(i, role)                  (on success every byte is read)
 *       zt_component_verify(i, role)                (ZT_ERR_NOT_FOUND = "no digest": not a failure)
 *     zt_object_validate(i)
 *     zt_object_get_attributes_json(i)
 *   zt_file_get_attributes_json()                   (the file's attributes)
 *   zt_file_verify()
 *
 * Range reads and the read come before the view on purpose: a view caches the decoded
 * bytes and later reads are served from that cache, which would hide faults of the
 * streaming (range) and direct (read) decode paths.
 *
 * Bytes returned by several calls (range reads, read, view) must agree, views must be
 * 64-byte aligned (zero-copy views into other formats: aligned to their element size), and a component that has a digest must not verify as NOT_FOUND;
 * a breach of these is reported as a failure whatever the statuses.
 *
 * hostile/alloc/ (claims that cannot be allocated) is not run here: it needs an address
 * space limit, which ASan and valgrind can't run under; tests/hostile_corpus.rs runs it.
 *
 * Prints one line per mismatch and ends with "N passed, M failed" (one check per file
 * and open mode); exits 0 only when everything matched. The same walk is implemented
 * in Rust in tests/hostile_corpus.rs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

#define MAX_LINE 65536
#define MAX_PATH 4096

typedef struct walk_result {
  zt_status first;     /* first non-OK status, ZT_OK if none */
  char first_msg[512]; /* zt_last_error() of that call */
  char problem[512];   /* first breach of an invariant, "" if none */
} walk_result;

static void record(walk_result *w, zt_status s, const char *call) {
  if (s != ZT_OK && w->first == ZT_OK) {
    w->first = s;
    snprintf(w->first_msg, sizeof w->first_msg, "%s: %s", call, zt_last_error());
  }
}

static void problem(walk_result *w, const char *what, size_t object, const char *role) {
  if (w->problem[0] == '\0') {
    snprintf(w->problem, sizeof w->problem, "object %zu component '%s': %s", object, role ? role : "?", what);
  }
}

static void walk_component(const zt_reader *r, size_t i, size_t c, walk_result *w) {
  zt_component_info ci;
  zt_status s = zt_component_get_info(r, i, c, &ci);
  record(w, s, "zt_component_get_info");
  if (s != ZT_OK) {
    return;
  }
  const char *role = ci.role;
  uint64_t dl = ci.decoded_length;

  unsigned char first = 0, last = 0;
  zt_status s0 = ZT_OK, s1 = ZT_OK;
  if (dl > 0) {
    s0 = zt_component_read_range(r, i, role, 0, &first, 1);
    record(w, s0, "zt_component_read_range(first byte)");
    s1 = zt_component_read_range(r, i, role, dl - 1, &last, 1);
    record(w, s1, "zt_component_read_range(last byte)");
  }

  unsigned char *buf = NULL;
  zt_status rs = ZT_ERR_INTERNAL;
  if (dl > (uint64_t)SIZE_MAX) {
    problem(w, "decoded_length does not fit in size_t", i, role);
  } else {
    buf = malloc(dl > 0 ? (size_t)dl : 1);
    if (buf == NULL) {
      problem(w, "the walk could not allocate decoded_length bytes", i, role);
    } else {
      rs = zt_component_read(r, i, role, buf, (size_t)dl);
      record(w, rs, "zt_component_read");
      if (rs == ZT_OK && dl > 0) {
        if (s0 == ZT_OK && first != buf[0]) {
          problem(w, "range read of the first byte differs from read", i, role);
        }
        if (s1 == ZT_OK && last != buf[dl - 1]) {
          problem(w, "range read of the last byte differs from read", i, role);
        }
      }
    }
  }

  zt_view view;
  zt_status vs = zt_component_view(r, i, role, &view);
  record(w, vs, "zt_component_view");
  if (vs == ZT_OK) {
    if (view.size != dl) {
      problem(w, "view size differs from decoded_length", i, role);
    }
    if (view.size > 0) {
      /* zero-copy views into other formats (safetensors, GGUF) are aligned to their
         element size only; zTensor views and decoded copies to 64 bytes */
      static const unsigned dtype_size[13] = {8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1};
      unsigned align = 64;
      if (view.zero_copy && strcmp(zt_file_format(r), "zt") != 0) {
        align = view.dtype < 13 ? dtype_size[view.dtype] : 64;
      }
      if (view.data == NULL || (uintptr_t)view.data % align != 0) {
        problem(w, "view data is NULL or not aligned (64 bytes, or the element size for zero-copy views of other formats)", i, role);
      } else {
        /* Touch every byte, so that an out-of-bounds view shows under ASan/valgrind. */
        const volatile unsigned char *p = (const unsigned char *)view.data;
        unsigned sum = 0;
        for (uint64_t k = 0; k < view.size; k++) {
          sum += p[k];
        }
        (void)sum;
        if (rs == ZT_OK && buf != NULL && view.size == dl && memcmp(view.data, buf, (size_t)dl) != 0) {
          problem(w, "view and read bytes differ", i, role);
        }
      }
    }
  }
  free(buf);

  zt_status ds = zt_component_verify(r, i, role);
  if (ds == ZT_ERR_NOT_FOUND) {
    if (ci.digest != NULL) {
      problem(w, "component has a digest but verifies as NOT_FOUND", i, role);
    }
  } else {
    record(w, ds, "zt_component_verify");
    if (ci.digest == NULL) {
      problem(w, "component without a digest did not verify as NOT_FOUND", i, role);
    }
  }
}

static zt_status walk(const zt_reader *r, walk_result *w) {
  memset(w, 0, sizeof *w);
  w->first = ZT_OK;
  size_t count = zt_object_count(r);
  for (size_t i = 0; i < count; i++) {
    zt_object_info oi;
    zt_status s = zt_object_get_info(r, i, &oi);
    record(w, s, "zt_object_get_info");
    if (s != ZT_OK) {
      continue;
    }
    if (oi.name == NULL || oi.format == NULL || (oi.ndim > 0 && oi.shape == NULL)) {
      problem(w, "object info has NULL name, format or shape", i, NULL);
    }
    for (size_t c = 0; c < oi.component_count; c++) {
      walk_component(r, i, c, w);
    }
    record(w, zt_object_validate(r, i), "zt_object_validate");
    const char *json = NULL;
    s = zt_object_get_attributes_json(r, i, &json);
    record(w, s, "zt_object_get_attributes_json");
    if (s == ZT_OK && (json == NULL || json[0] != '{')) {
      problem(w, "attributes JSON is not an object", i, NULL);
    }
  }
  const char *json = NULL;
  zt_status s = zt_file_get_attributes_json(r, &json);
  record(w, s, "zt_file_get_attributes_json");
  if (s == ZT_OK && (json == NULL || json[0] != '{')) {
    problem(w, "file attributes JSON is not an object", 0, NULL);
  }
  record(w, zt_file_verify(r), "zt_file_verify");
  return w->first;
}

/* Reads a whole file into memory: *block is what to free, the return value the bytes,
 * 64-byte aligned (so that zero-copy views are possible). NULL on failure. */
static unsigned char *read_file(const char *path, size_t *size, unsigned char **block) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  unsigned char *data = malloc(cap);
  while (data != NULL) {
    if (len == cap) {
      unsigned char *bigger = realloc(data, cap * 2);
      if (bigger == NULL) {
        free(data);
        data = NULL;
        break;
      }
      data = bigger;
      cap *= 2;
    }
    size_t n = fread(data + len, 1, cap - len, f);
    len += n;
    if (n == 0) {
      break;
    }
  }
  int failed = ferror(f);
  fclose(f);
  if (data == NULL || failed) {
    free(data);
    return NULL;
  }
  *block = malloc(len + 64);
  unsigned char *aligned = NULL;
  if (*block != NULL) {
    aligned = *block + (64 - (uintptr_t)*block % 64) % 64;
    memcpy(aligned, data, len);
  }
  free(data);
  *size = len;
  return aligned;
}

static const char *name(zt_status s) { return zt_status_name((uint32_t)s); }

enum { MODE_MMAP, MODE_PREAD, MODE_MEMORY, MODE_COUNT };
static const char *const MODE_NAMES[MODE_COUNT] = {"mmap", "pread", "memory"};

/* Opens `path` one way, walks it, compares with the expectation. Returns 1 on a match. */
static int check(const char *file, const char *path, int mode, const char *want_open, const char *want_walk,
                 const char *note) {
  zt_reader *r = NULL;
  zt_status os;
  unsigned char *bytes = NULL;
  char open_msg[512] = "";
  if (mode == MODE_MMAP) {
    os = zt_open(path, &r);
  } else if (mode == MODE_PREAD) {
    zt_open_options options;
    memset(&options, 0, sizeof options);
    options.flags = ZT_OPEN_NO_MMAP;
    os = zt_open_with(path, &options, &r);
  } else {
    size_t size = 0;
    unsigned char *aligned = read_file(path, &size, &bytes);
    if (aligned == NULL) {
      free(bytes);
      printf("FAIL %s [%s]: cannot read the file\n", file, MODE_NAMES[mode]);
      return 0;
    }
    os = zt_open_memory(aligned, size, &r);
  }
  if (os != ZT_OK) {
    snprintf(open_msg, sizeof open_msg, "%s", zt_last_error());
  }
  int okay = 1;
  if (strcmp(name(os), want_open) != 0) {
    printf("FAIL %s [%s]: open %s, expected %s (%s) -- %s\n", file, MODE_NAMES[mode], name(os), want_open, open_msg,
           note);
    okay = 0;
  } else if (os == ZT_OK) {
    walk_result w;
    zt_status ws = walk(r, &w);
    if (strcmp(name(ws), want_walk) != 0) {
      printf("FAIL %s [%s]: walk %s, expected %s (%s) -- %s\n", file, MODE_NAMES[mode], name(ws), want_walk,
             ws == ZT_OK ? "no failure" : w.first_msg, note);
      okay = 0;
    }
    if (w.problem[0] != '\0') {
      printf("FAIL %s [%s]: %s -- %s\n", file, MODE_NAMES[mode], w.problem, note);
      okay = 0;
    }
  } else if (r != NULL) {
    printf("FAIL %s [%s]: a failed open set its out-parameter\n", file, MODE_NAMES[mode]);
    okay = 0;
  }
  if (os == ZT_OK) {
    zt_close(r);
  }
  free(bytes);
  return okay;
}

/* Splits `line` in place at tabs into at most `n` fields; returns the number found. */
static int split(char *line, char **fields, int n) {
  int count = 0;
  char *p = line;
  while (count < n) {
    fields[count++] = p;
    char *tab = strchr(p, '\t');
    if (tab == NULL) {
      break;
    }
    *tab = '\0';
    p = tab + 1;
  }
  return count;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <path to tests/vectors>\n", argv[0]);
    return 2;
  }
  char tsv[MAX_PATH];
  snprintf(tsv, sizeof tsv, "%s/hostile/expected.tsv", argv[1]);
  FILE *f = fopen(tsv, "r");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", tsv);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  static char line[MAX_LINE];
  long passed = 0, failed = 0, files = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] == '\n') {
      line[--len] = '\0';
    } else if (!feof(f)) {
      printf("FAIL expected.tsv: a line longer than %d bytes\n", MAX_LINE);
      failed++;
      break;
    }
    if (line[0] == '#' || line[0] == '\0' || strncmp(line, "file\t", 5) == 0) {
      continue;
    }
    char *fields[4];
    if (split(line, fields, 4) != 4) {
      printf("FAIL expected.tsv: malformed line '%s'\n", line);
      failed++;
      continue;
    }
    char path[MAX_PATH];
    snprintf(path, sizeof path, "%s/hostile/%s", argv[1], fields[0]);
    files++;
    for (int mode = 0; mode < MODE_COUNT; mode++) {
      if (check(fields[0], path, mode, fields[1], fields[2], fields[3])) {
        passed++;
      } else {
        failed++;
      }
    }
  }
  fclose(f);
  if (files < 150) {
    printf("FAIL expected.tsv lists %ld files, fewer than 150\n", files);
    failed++;
  }
  printf("%ld passed, %ld failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
