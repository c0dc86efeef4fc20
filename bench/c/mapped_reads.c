/*
 * mapped_reads: what a size check before each read of a mapped file would cost
 * (issue 35, the SIGBUS question; the answer is in docs/reliability.md, "Reading files
 * that change"). A file of many small raw tensors is read whole, tensor by tensor, with
 * zt_component_read into a buffer of the caller's, three ways:
 *
 *   mapped         the default: a copy out of the mapping
 *   mapped+fstat   the same, with an fstat of the file before each read: the cost of the
 *                  check a library would make before touching a component's pages (the
 *                  syscall is the whole cost; where it is made doesn't change it)
 *   pread          ZT_OPEN_NO_MMAP: every read is a pread, so a file cut short is an
 *                  error, never SIGBUS
 *
 * and prints the time per read of each (the best of PASSES passes over a warm page
 * cache, after one pass that faults every page in) and the ratios to "mapped".
 *
 * Built and run as bench/README.md says ("A size check before each mapped read").
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ztensor.h"

enum { PASSES = 7 };

static void check(zt_status s, const char *what) {
  if (s != ZT_OK) {
    fprintf(stderr, "mapped_reads: %s: %s (%s)\n", what, zt_last_error(), zt_status_name(s));
    exit(1);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* `count` raw u8 tensors of `size` bytes each. */
static void write_file(const char *path, size_t count, size_t size) {
  zt_writer *w;
  unsigned char *data = malloc(size);
  uint64_t shape[1];
  size_t i;
  char name[32];
  zt_write_options wo;
  memset(&wo, 0, sizeof wo);
  shape[0] = size;
  check(zt_writer_create(path, &w), "create");
  for (i = 0; i < count; i++) {
    memset(data, (int)(i & 0xff), size);
    snprintf(name, sizeof name, "t%zu", i);
    check(zt_writer_add(w, name, ZT_U8, shape, 1, data, size, &wo), "add");
  }
  check(zt_writer_finish(w), "finish");
  zt_writer_free(w);
  free(data);
}

/* Seconds per read of every tensor of `r` into `dst`, the best of PASSES passes; with
 * an fstat of `fd` before each read when fd >= 0. */
static double per_read(const zt_reader *r, int fd, unsigned char *dst, size_t size) {
  size_t n = zt_object_count(r), i;
  double best = 1e30;
  int pass;
  for (pass = 0; pass <= PASSES; pass++) {
    double t0 = now(), t;
    for (i = 0; i < n; i++) {
      if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < size) {
          fprintf(stderr, "mapped_reads: fstat\n");
          exit(1);
        }
      }
      check(zt_component_read(r, i, "data", dst, size), "read");
    }
    t = (now() - t0) / (double)n;
    if (pass > 0 && t < best) best = t; /* pass 0 faults the pages in */
  }
  return best;
}

int main(int argc, char **argv) {
  static const size_t sizes[] = {64, 256, 4096, 65536};
  size_t s;
  if (argc != 2) {
    fprintf(stderr, "usage: mapped_reads SCRATCH_FILE\n");
    return 2;
  }
  printf("%-8s %8s %12s %14s %12s %14s %10s\n", "bytes", "tensors", "mapped ns", "mapped+fstat",
         "pread ns", "fstat ratio", "pread ratio");
  for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t size = sizes[s], count = sizes[s] <= 4096 ? 20000 : 2000;
    zt_reader *mapped, *pread;
    zt_open_options o;
    unsigned char *dst = malloc(size);
    double a, b, c;
    int fd;
    write_file(argv[1], count, size);
    check(zt_open(argv[1], &mapped), "open");
    memset(&o, 0, sizeof o);
    o.flags = ZT_OPEN_NO_MMAP;
    check(zt_open_with(argv[1], &o, &pread), "open no mmap");
    fd = open(argv[1], O_RDONLY);
    if (fd < 0 || dst == NULL) return 1;
    a = per_read(mapped, -1, dst, size);
    b = per_read(mapped, fd, dst, size);
    c = per_read(pread, -1, dst, size);
    printf("%-8zu %8zu %12.1f %14.1f %12.1f %13.2fx %9.2fx\n", size, count, a * 1e9, b * 1e9, c * 1e9,
           b / a, c / a);
    close(fd);
    zt_close(mapped);
    zt_close(pread);
    free(dst);
  }
  unlink(argv[1]);
  return 0;
}
