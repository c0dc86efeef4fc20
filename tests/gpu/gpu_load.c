/*
 * gpu_load: the staged loader into GPU memory through the library's CUDA backend. Built
 * with the library's header only: no CUDA headers or toolkit (the backend loads the
 * driver at run time), so it builds everywhere and says so where there is no GPU.
 *
 *   gpu_load selftest                     a small file of its own: host loads checked, then
 *                                         the same into the GPU if there is one (else a
 *                                         "skipped" line); exit 0. The ctest gpu_load_selftest.
 *   gpu_load convert IN OUT               every object of IN (any format) into OUT, a .zt
 *                                         whose components are zstd (level 1) frames
 *   gpu_load check FILE                   every tensor whole, and the 4th eighth of its
 *                                         columns, into the GPU; copied back and compared
 *                                         byte for byte with host reads
 *   gpu_load bench FILE warm|cold whole|columns8 REPEATS
 *                                         times open + load of every tensor (cold: the
 *                                         file's pages dropped first); one JSON line
 *   gpu_load read FILE THREADS REPEATS    the plain read limit: THREADS threads pread the
 *                                         file in 16 MiB blocks, cold; one JSON line
 *   gpu_load layout                       the C structs' sizes and field offsets, one JSON
 *                                         line (ztloader.py checks its ctypes copies)
 *
 * Environment: ZT_READERS, ZT_STAGING_COUNT, ZT_STAGING_SIZE, ZT_MAX_BYTES_IN_FLIGHT, ZT_IO
 * (loader options; ZT_IO a zt_io_mode: 0 auto, 1 mmap, 2 pread, 3 O_DIRECT), ZT_CUDA_LIB
 * (the driver library to load). Exit 3 when a command needs a GPU and there is none.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ztensor.h"

static int fail(const char *what) {
  fprintf(stderr, "gpu_load: %s: %s\n", what, zt_last_error());
  return 1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0' ? strtoull(v, NULL, 10) : fallback;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Drops the file's pages from the page cache (written back first), and all clean pages
   when allowed (root): a cold read of it comes from storage. */
static void drop_cache(const char *path) {
  int fd = open(path, O_RDONLY);
  FILE *f;
  if (fd >= 0) {
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  sync();
  f = fopen("/proc/sys/vm/drop_caches", "w");
  if (f != NULL) {
    fputs("1\n", f);
    fclose(f);
  }
}

/* --- the CUDA backend ----------------------------------------------------------------- */

/* Opens the backend; 0 with a "skipped" message when there is no driver or GPU. */
static zt_cuda *open_cuda(int quiet) {
  zt_cuda *cuda = NULL;
  zt_cuda_options o;
  zt_status s;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.library = getenv("ZT_CUDA_LIB");
  s = zt_cuda_create_with(&o, &cuda);
  if (s == ZT_OK) return cuda;
  if (!quiet) printf("skipped: no CUDA GPU here (%s: %s)\n", zt_status_name(s), zt_last_error());
  return NULL;
}

static zt_loader *make_loader(const zt_device *device) {
  zt_loader *l = NULL;
  zt_loader_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.readers = (uint32_t)env_u64("ZT_READERS", 0);
  o.staging_count = (uint32_t)env_u64("ZT_STAGING_COUNT", 0);
  o.staging_size = env_u64("ZT_STAGING_SIZE", 0);
  o.max_bytes_in_flight = env_u64("ZT_MAX_BYTES_IN_FLIGHT", 0);
  o.io = (uint32_t)env_u64("ZT_IO", 0);
  if (zt_loader_create_with(device, &o, &l) != ZT_OK) {
    fail("creating the loader");
    return NULL;
  }
  return l;
}

/* --- requests ------------------------------------------------------------------------- */

/* One request per object (its first component): whole, or with `eighth` >= 0 that eighth
   of the last dimension's columns. Destinations are consecutive from `base` (NULL: only
   sizes). Returns the total bytes, or 0 on failure. */
static uint64_t requests_for(zt_reader *r, zt_loader_request *q, int eighth, char *base, int host) {
  size_t n = zt_object_count(r), i;
  uint64_t total = 0;
  for (i = 0; i < n; i++) {
    zt_object_info info;
    zt_component_info ci;
    size_t width;
    if (zt_object_get_info(r, i, &info) != ZT_OK || zt_component_get_info(r, i, 0, &ci) != ZT_OK ||
        zt_dtype_get_size(ci.dtype, &width) != ZT_OK)
      return 0;
    memset(&q[i], 0, sizeof q[i]);
    q[i].object = i;
    q[i].role = ci.role;
    q[i].flags = host ? ZT_LOAD_HOST : 0;
    if (eighth < 0 || info.ndim == 0) {
      q[i].dst_size = ci.decoded_length;
    } else {
      uint64_t cols = info.shape[info.ndim - 1], rows = ci.decoded_length / width / (cols ? cols : 1);
      q[i].slice = ZT_SLICE_COLUMNS;
      q[i].count = cols / 8;
      q[i].first = q[i].count * (uint64_t)eighth;
      q[i].dst_size = rows * q[i].count * width;
    }
    q[i].dst = base != NULL ? base + total : NULL;
    total += q[i].dst_size;
  }
  return total;
}

/* The expected bytes of request `q` from host reads (`all` holds the whole component). */
static void expected_of(zt_reader *r, const zt_loader_request *q, const unsigned char *all, unsigned char *out) {
  zt_object_info info;
  zt_component_info ci;
  size_t width;
  uint64_t cols, rows, row;
  zt_object_get_info(r, q->object, &info);
  zt_component_get_info(r, q->object, 0, &ci);
  zt_dtype_get_size(ci.dtype, &width);
  if (q->slice == ZT_SLICE_WHOLE) {
    memcpy(out, all, (size_t)q->dst_size);
    return;
  }
  cols = info.shape[info.ndim - 1];
  rows = ci.decoded_length / width / cols;
  for (row = 0; row < rows; row++)
    memcpy(out + row * q->count * width, all + (row * cols + q->first) * width, (size_t)(q->count * width));
}

/* Loads `q` into the GPU and compares every request with host reads. */
static int load_and_compare(zt_cuda *cuda, zt_reader *r, int eighth) {
  size_t n = zt_object_count(r), i;
  zt_loader_request *q = calloc(n ? n : 1, sizeof *q);
  zt_device device;
  zt_loader *l = NULL;
  void *gpu = NULL;
  unsigned char *all = NULL, *want = NULL, *got = NULL;
  uint64_t total = requests_for(r, q, eighth, NULL, 0), biggest = 0, offset = 0;
  int rc = 1;
  double t;
  if (q == NULL || (n > 0 && total == 0)) goto out;
  if (zt_cuda_alloc_memory(cuda, (size_t)total, &gpu) != ZT_OK) { fail("allocating device memory"); goto out; }
  requests_for(r, q, eighth, (char *)gpu, 0);
  if (zt_cuda_get_device(cuda, &device) != ZT_OK || (l = make_loader(&device)) == NULL) goto out;
  t = now();
  if (zt_loader_load(l, r, q, n) != ZT_OK) { fail("loading"); goto out; }
  printf("  %zu tensors, %.3f GB %s in %.3f s\n", n, (double)total / 1e9, eighth < 0 ? "whole" : "(an eighth of the columns)",
         now() - t);
  for (i = 0; i < n; i++) {
    zt_component_info ci;
    zt_component_get_info(r, i, 0, &ci);
    if (ci.decoded_length > biggest) biggest = ci.decoded_length;
  }
  all = malloc((size_t)biggest + 1);
  want = malloc((size_t)biggest + 1);
  got = malloc((size_t)biggest + 1);
  if (all == NULL || want == NULL || got == NULL) goto out;
  for (i = 0; i < n; i++) {
    zt_component_info ci;
    zt_component_get_info(r, i, 0, &ci);
    if (q[i].status != ZT_OK || q[i].bytes != q[i].dst_size) { fprintf(stderr, "request %zu: status %u\n", i, q[i].status); goto out; }
    if (zt_component_read(r, i, ci.role, all, (size_t)ci.decoded_length) != ZT_OK) { fail("a host read"); goto out; }
    expected_of(r, &q[i], all, want);
    if (zt_cuda_copy_to_host(cuda, got, (char *)gpu + offset, (size_t)q[i].dst_size) != ZT_OK) { fail("copying back"); goto out; }
    if (memcmp(got, want, (size_t)q[i].dst_size) != 0) {
      zt_object_info info;
      zt_object_get_info(r, i, &info);
      fprintf(stderr, "gpu_load: tensor %zu (%s): the GPU's bytes differ from a host read\n", i, info.name);
      goto out;
    }
    offset += q[i].dst_size;
  }
  rc = 0;
out:
  zt_loader_free(l);
  if (gpu != NULL) zt_cuda_free_memory(cuda, gpu);
  free(q);
  free(all);
  free(want);
  free(got);
  return rc;
}

/* --- commands ------------------------------------------------------------------------- */

static int selftest(void) {
  enum { ROWS = 96, COLS = 80 };
  static uint16_t data[ROWS * COLS];
  uint64_t shape[2] = {ROWS, COLS};
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_loader *host = NULL;
  zt_loader_request q[4];
  zt_write_options zstd;
  zt_cuda *cuda;
  uint16_t *buf[4];
  unsigned char *all;
  size_t i, k;
  int rc = 1;
  for (i = 0; i < ROWS * COLS; i++) data[i] = (uint16_t)(i * 2654435761u >> 16);
  memset(&zstd, 0, sizeof zstd);
  zstd.encoding = ZT_ENCODING_ZSTD;
  if (zt_writer_create("gpu_selftest.zt", &w) != ZT_OK ||
      zt_writer_add(w, "raw", ZT_BF16, shape, 2, data, sizeof data, NULL) != ZT_OK ||
      zt_writer_add(w, "packed", ZT_BF16, shape, 2, data, sizeof data, &zstd) != ZT_OK ||
      zt_writer_finish(w) != ZT_OK)
    return fail("writing gpu_selftest.zt");
  zt_writer_free(w);
  if (zt_open("gpu_selftest.zt", &r) != ZT_OK) return fail("opening gpu_selftest.zt");
  /* Host destinations: the loader without a device. */
  for (k = 0; k < 2; k++) {
    requests_for(r, q + 2 * k, k == 0 ? -1 : 3, NULL, 1);
  }
  for (k = 0; k < 4; k++) {
    buf[k] = malloc((size_t)q[k].dst_size);
    q[k].dst = buf[k];
  }
  if (zt_loader_create(&host) != ZT_OK || zt_loader_load(host, r, q, 4) != ZT_OK) {
    fail("a host load");
    goto out;
  }
  all = (unsigned char *)data;
  for (k = 0; k < 4; k++) {
    unsigned char *want = malloc((size_t)q[k].dst_size);
    int same;
    expected_of(r, &q[k], all, want);
    same = memcmp(want, buf[k], (size_t)q[k].dst_size) == 0;
    free(want);
    if (!same) {
      fprintf(stderr, "gpu_load: host request %zu: wrong bytes\n", k);
      goto out;
    }
  }
  printf("host loads: 4 requests (whole and columns, raw and zstd) right\n");
  cuda = open_cuda(0);
  if (cuda != NULL) {
    int bad = load_and_compare(cuda, r, -1) || load_and_compare(cuda, r, 3);
    zt_cuda_free(cuda);
    if (bad) goto out;
    printf("GPU loads: right\n");
  }
  rc = 0;
out:
  for (k = 0; k < 4; k++) free(buf[k]);
  zt_loader_free(host);
  zt_close(r);
  remove("gpu_selftest.zt");
  return rc;
}

static int convert(const char *in, const char *out) {
  zt_reader *r = NULL;
  zt_writer *w = NULL;
  zt_copy_options o;
  size_t i, n;
  double t = now();
  memset(&o, 0, sizeof o);
  o.flags = ZT_COPY_ENCODING;
  o.encoding = ZT_ENCODING_ZSTD;
  o.level = 1;
  if (zt_open(in, &r) != ZT_OK) return fail(in);
  if (zt_writer_create(out, &w) != ZT_OK) return fail(out);
  n = zt_object_count(r);
  for (i = 0; i < n; i++)
    if (zt_writer_copy_object(w, r, i, &o) != ZT_OK) return fail("copying an object");
  if (zt_writer_finish(w) != ZT_OK) return fail("finishing");
  zt_writer_free(w);
  zt_close(r);
  printf("converted %zu objects to zstd-1 frames in %.1f s\n", n, now() - t);
  return 0;
}

static int check(const char *path) {
  zt_reader *r = NULL;
  zt_cuda *cuda = open_cuda(0);
  int rc;
  if (cuda == NULL) return 3;
  if (zt_open(path, &r) != ZT_OK) return fail(path);
  rc = load_and_compare(cuda, r, -1) || load_and_compare(cuda, r, 3);
  if (rc == 0) printf("check: every tensor, whole and an eighth of its columns, equal on the GPU to host reads\n");
  zt_close(r);
  zt_cuda_free(cuda);
  return rc;
}

static int bench(const char *path, const char *mode, const char *slice, int repeats) {
  int cold = strcmp(mode, "cold") == 0, eighth = strcmp(slice, "whole") == 0 ? -1 : 3, k;
  zt_cuda *cuda = open_cuda(0);
  zt_reader *r = NULL;
  zt_loader *l = NULL;
  zt_loader_request *q;
  zt_device device;
  zt_loader_stats st;
  void *gpu = NULL;
  uint64_t total;
  size_t n;
  double times[16], t0, created;
  if (cuda == NULL) return 3;
  if (repeats < 1 || repeats > 16) repeats = 3;
  if (zt_open(path, &r) != ZT_OK) return fail(path);
  n = zt_object_count(r);
  q = calloc(n ? n : 1, sizeof *q);
  total = requests_for(r, q, eighth, NULL, 0);
  zt_close(r);
  if (zt_cuda_alloc_memory(cuda, (size_t)total, &gpu) != ZT_OK) return fail("allocating device memory");
  t0 = now();
  if (zt_cuda_get_device(cuda, &device) != ZT_OK || (l = make_loader(&device)) == NULL) return 1;
  created = now() - t0;
  /* A warm-up load (warm runs only: it reads the file into the page cache). */
  if (!cold) {
    if (zt_open(path, &r) != ZT_OK) return fail(path);
    requests_for(r, q, eighth, (char *)gpu, 0);
    if (zt_loader_load(l, r, q, n) != ZT_OK) return fail("loading");
    zt_close(r);
  }
  for (k = 0; k < repeats; k++) {
    if (cold) drop_cache(path);
    t0 = now();
    if (zt_open(path, &r) != ZT_OK) return fail(path);
    requests_for(r, q, eighth, (char *)gpu, 0);
    if (zt_loader_load(l, r, q, n) != ZT_OK) return fail("loading");
    times[k] = now() - t0;
    zt_close(r);
  }
  zt_loader_get_stats(l, &st);
  {
    double m = median(times, repeats);
    printf("{\"path\": \"%s\", \"mode\": \"%s\", \"slice\": \"%s\", \"bytes\": %" PRIu64 ", \"repeats\": %d, "
           "\"median_s\": %.4f, \"gbps\": %.2f, \"loader_create_s\": %.4f, \"readers\": %u, "
           "\"staging_count\": %" PRIu64 ", \"staging_size\": %" PRIu64 ", \"pinned\": %u, \"copies\": %" PRIu64 "}\n",
           path, mode, slice, total, repeats, m, (double)total / m / 1e9, created, st.readers, st.staging_count,
           st.staging_size, st.pinned, st.copies);
  }
  zt_loader_free(l);
  zt_cuda_free_memory(cuda, gpu);
  zt_cuda_free(cuda);
  free(q);
  return 0;
}

typedef struct reader_arg {
  int fd;
  int index, threads;
  off_t size;
  int ok;
} reader_arg;

static void *read_blocks(void *p) {
  enum { BLOCK = 16 << 20 };
  reader_arg *a = (reader_arg *)p;
  char *buf = malloc(BLOCK);
  off_t at;
  a->ok = buf != NULL;
  for (at = (off_t)a->index * BLOCK; a->ok && at < a->size; at += (off_t)a->threads * BLOCK) {
    size_t want = (size_t)(a->size - at < BLOCK ? a->size - at : BLOCK), done = 0;
    while (done < want) {
      ssize_t got = pread(a->fd, buf + done, want - done, at + (off_t)done);
      if (got <= 0) {
        a->ok = 0;
        break;
      }
      done += (size_t)got;
    }
  }
  free(buf);
  return NULL;
}

static int read_limit(const char *path, int threads, int repeats) {
  struct stat s;
  double times[16];
  int k, t;
  if (stat(path, &s) != 0) {
    perror(path);
    return 1;
  }
  if (threads < 1 || threads > 256) threads = 1;
  if (repeats < 1 || repeats > 16) repeats = 3;
  for (k = 0; k < repeats; k++) {
    pthread_t ids[256];
    reader_arg args[256];
    int fd;
    double t0;
    drop_cache(path);
    fd = open(path, O_RDONLY);
    if (fd < 0) {
      perror(path);
      return 1;
    }
    t0 = now();
    for (t = 0; t < threads; t++) {
      args[t].fd = fd;
      args[t].index = t;
      args[t].threads = threads;
      args[t].size = s.st_size;
      pthread_create(&ids[t], NULL, read_blocks, &args[t]);
    }
    for (t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    times[k] = now() - t0;
    close(fd);
    for (t = 0; t < threads; t++)
      if (!args[t].ok) {
        fprintf(stderr, "gpu_load: reading %s failed\n", path);
        return 1;
      }
  }
  {
    double m = median(times, repeats);
    printf("{\"path\": \"%s\", \"read_threads\": %d, \"bytes\": %lld, \"repeats\": %d, \"median_s\": %.4f, \"gbps\": %.2f}\n",
           path, threads, (long long)s.st_size, repeats, m, (double)s.st_size / m / 1e9);
  }
  return 0;
}

/* The layout of the structs ztloader.py declares with ctypes. */
#define FIELD(t, f) printf("\"%s.%s\": %zu, ", #t, #f, offsetof(t, f))
static int layout(void) {
  printf("{");
  FIELD(zt_loader_request, object);
  FIELD(zt_loader_request, role);
  FIELD(zt_loader_request, dst);
  FIELD(zt_loader_request, dst_offset);
  FIELD(zt_loader_request, dst_size);
  FIELD(zt_loader_request, flags);
  FIELD(zt_loader_request, dtype);
  FIELD(zt_loader_request, slice);
  FIELD(zt_loader_request, status);
  FIELD(zt_loader_request, first);
  FIELD(zt_loader_request, count);
  FIELD(zt_loader_request, bytes);
  FIELD(zt_device, context);
  FIELD(zt_device, error_string);
  FIELD(zt_cuda_options, device);
  FIELD(zt_cuda_options, stream);
  FIELD(zt_cuda_options, library);
  FIELD(zt_loader_options, flags);
  FIELD(zt_loader_options, user);
  FIELD(zt_loader_options, max_bytes_in_flight);
  FIELD(zt_loader_options, io);
  printf("\"sizeof.zt_loader_request\": %zu, \"sizeof.zt_device\": %zu, \"sizeof.zt_cuda_options\": %zu, "
         "\"sizeof.zt_loader_options\": %zu}\n",
         sizeof(zt_loader_request), sizeof(zt_device), sizeof(zt_cuda_options), sizeof(zt_loader_options));
  return 0;
}

int main(int argc, char **argv) {
  const char *cmd = argc > 1 ? argv[1] : "";
  if (strcmp(cmd, "selftest") == 0) return selftest();
  if (strcmp(cmd, "convert") == 0 && argc == 4) return convert(argv[2], argv[3]);
  if (strcmp(cmd, "check") == 0 && argc == 3) return check(argv[2]);
  if (strcmp(cmd, "bench") == 0 && argc == 6) return bench(argv[2], argv[3], argv[4], atoi(argv[5]));
  if (strcmp(cmd, "read") == 0 && argc == 5) return read_limit(argv[2], atoi(argv[3]), atoi(argv[4]));
  if (strcmp(cmd, "layout") == 0) return layout();
  fprintf(stderr,
          "usage: gpu_load selftest | convert IN OUT | check FILE | bench FILE warm|cold whole|columns8 REPEATS |"
          " read FILE THREADS REPEATS | layout\n");
  return 2;
}
