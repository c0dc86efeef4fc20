/*
 * What a model loader does around single reads: batch loads (equal to per-tensor loads
 * byte for byte, with errors in some requests and not others), opening a descriptor
 * (kept or handed over), the mapping itself, populating it, and prefetching and releasing
 * an object's pages (RssFile and mincore before and after, on a 1 GiB file; 64 MiB under
 * valgrind).
 */
#define _DEFAULT_SOURCE 1 /* mincore, MADV_* */
#include "zt_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SMALL 300

static int under_valgrind(void) {
  const char *p = getenv("LD_PRELOAD");
  return (p != NULL && strstr(p, "vgpreload") != NULL) || getenv("ZT_TEST_UNDER") != NULL;
}

/* ------------------------------------------------------------------------------------ */
/* batch loads                                                                          */
/* ------------------------------------------------------------------------------------ */

static float small[SMALL][64];
static float big_values[1 << 20]; /* 4 MiB: several zstd frames */

/* SMALL small raw tensors, one zstd tensor of several frames, one sparse CSR. */
static void write_model(const char *path) {
  zt_writer *w = NULL;
  char name[32];
  uint64_t shape[1] = {64}, big_shape[1] = {1 << 20}, csr_shape[2] = {2, 3};
  zt_write_options z = {ZT_ENCODING_ZSTD, 1, ZT_DIGEST_NONE};
  float vals[2] = {1.5f, 2.5f};
  uint64_t idx[2] = {0, 2}, ptr[3] = {0, 1, 2};
  size_t i, k;
  for (i = 0; i < SMALL; i++)
    for (k = 0; k < 64; k++) small[i][k] = (float)(i * 64 + k) * 0.5f;
  for (i = 0; i < (size_t)1 << 20; i++) big_values[i] = (float)(i % 1000) - 500.0f;
  CHECK_OK(zt_test_create_v12(path, &w));
  for (i = 0; i < SMALL; i++) {
    snprintf(name, sizeof name, "layer.%zu", i);
    CHECK_OK(zt_writer_add(w, name, ZT_F32, shape, 1, small[i], sizeof small[i], NULL));
  }
  CHECK_OK(zt_writer_add(w, "big", ZT_F32, big_shape, 1, big_values, sizeof big_values, &z));
  CHECK_OK(zt_writer_begin_object(w, "csr", "sparse_csr", csr_shape, 2));
  CHECK_OK(zt_writer_add_component(w, "values", ZT_F32, NULL, vals, sizeof vals, NULL));
  CHECK_OK(zt_writer_add_component(w, "indices", ZT_U64, NULL, idx, sizeof idx, NULL));
  CHECK_OK(zt_writer_add_component(w, "indptr", ZT_U64, NULL, ptr, sizeof ptr, NULL));
  CHECK_OK(zt_writer_end_object(w));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

/* Every small tensor, the big one whole, the big one as f64, a range of it, the CSR
   indices: one batch, equal to the single calls. */
static void test_batch_equals_single_reads(const zt_reader *r, uint32_t threads) {
  size_t n = SMALL + 4, i, big, csr;
  zt_load_request *q = (zt_load_request *)calloc(n, sizeof *q);
  static float got_small[SMALL][64], got_big[1 << 20], want_range[1000], got_range[1000];
  static double got_f64[1 << 20];
  uint64_t got_idx[2];
  zt_batch_options o;
  memset(&o, 0, sizeof o);
  o.threads = threads;
  CHECK_OK(zt_object_find(r, "big", &big));
  CHECK_OK(zt_object_find(r, "csr", &csr));
  for (i = 0; i < SMALL; i++) {
    q[i].object = i;
    q[i].dst = got_small[i];
    q[i].dst_size = sizeof got_small[i];
    q[i].status = 12345; /* whatever was there: overwritten */
  }
  q[SMALL].object = big;
  q[SMALL].dst = got_big;
  q[SMALL].dst_size = sizeof got_big;
  q[SMALL + 1].object = big;
  q[SMALL + 1].flags = ZT_LOAD_CONVERT;
  q[SMALL + 1].dtype = ZT_F64;
  q[SMALL + 1].dst = got_f64;
  q[SMALL + 1].dst_size = sizeof got_f64;
  q[SMALL + 2].object = big;
  q[SMALL + 2].flags = ZT_LOAD_RANGE;
  q[SMALL + 2].offset = 4 * 1000 * 1000; /* crosses no frame; starts mid-frame */
  q[SMALL + 2].dst = got_range;
  q[SMALL + 2].dst_size = sizeof got_range;
  q[SMALL + 3].object = csr;
  q[SMALL + 3].role = "indices";
  q[SMALL + 3].dst = got_idx;
  q[SMALL + 3].dst_size = sizeof got_idx;
  CHECK_OK(zt_batch_load(r, q, n, threads == 99 ? NULL : &o));
  for (i = 0; i < n; i++) CHECK_U64(q[i].status, ZT_OK);
  CHECK_MEM(got_small, small, sizeof small);
  CHECK_MEM(got_big, big_values, sizeof got_big);
  for (i = 0; i < (size_t)1 << 20; i++) {
    if (got_f64[i] != (double)big_values[i]) break;
  }
  CHECK_U64(i, (uint64_t)1 << 20);
  CHECK_OK(zt_component_read_range(r, big, "data", 4 * 1000 * 1000, want_range, sizeof want_range));
  CHECK_MEM(got_range, want_range, sizeof got_range);
  CHECK(got_idx[0] == 0 && got_idx[1] == 2);
  free(q);
}

/* Some requests fail, the others succeed; the call reports the first failure. */
static void test_batch_errors(const zt_reader *r) {
  zt_load_request q[7];
  float a[64], b[64], c[63], d[64], e[64];
  int8_t as_i8[64];
  memset(q, 0, sizeof q);
  memset(a, 0, sizeof a);
  q[0].object = 0, q[0].dst = a, q[0].dst_size = sizeof a;
  q[1].object = 1, q[1].role = "nope", q[1].dst = b, q[1].dst_size = sizeof b;
  q[2].object = 2, q[2].dst = c, q[2].dst_size = sizeof c;                         /* too small */
  q[3].object = 3, q[3].flags = ZT_LOAD_RANGE, q[3].offset = 200, q[3].dst = d, q[3].dst_size = sizeof d;
  q[4].object = 4, q[4].flags = ZT_LOAD_CONVERT, q[4].dtype = ZT_I8, q[4].dst = as_i8, q[4].dst_size = 64;
  q[5].object = 5, q[5].flags = 64, q[5].dst = e, q[5].dst_size = sizeof e;      /* unknown flag */
  q[6].object = 100000, q[6].dst = e, q[6].dst_size = sizeof e;                  /* no such object */
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_batch_load(r, q, 7, NULL));
  CHECK_ERROR_MENTIONS("request 1: ");
  CHECK_ERROR_MENTIONS("no 'nope' component");
  CHECK_U64(q[0].status, ZT_OK);
  CHECK_MEM(a, small[0], sizeof a);
  CHECK_U64(q[1].status, ZT_ERR_NOT_FOUND);
  CHECK_U64(q[2].status, ZT_ERR_BUFFER_TOO_SMALL);
  CHECK_U64(q[3].status, ZT_ERR_INVALID_ARGUMENT);
  CHECK_U64(q[4].status, ZT_ERR_UNSUPPORTED);
  CHECK_U64(q[5].status, ZT_ERR_INVALID_ARGUMENT);
  CHECK_U64(q[6].status, ZT_ERR_NOT_FOUND);
  /* Arguments of the call itself. */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_batch_load(NULL, q, 1, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_batch_load(r, NULL, 1, NULL));
  CHECK_OK(zt_batch_load(r, NULL, 0, NULL));
}

/* ------------------------------------------------------------------------------------ */
/* file descriptors and the mapping                                                     */
/* ------------------------------------------------------------------------------------ */

static int fd_is_open(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

static void test_fd(const char *path) {
  zt_reader *r = NULL;
  zt_open_options o;
  float got[64];
  int fd = open(path, O_RDONLY);
  memset(&o, 0, sizeof o);
  CHECK(fd >= 0);
  /* Kept by the caller: closed at once after the open, the reader goes on. */
  if (CHECK_OK(zt_open_fd_with(fd, NULL, &r))) {
    CHECK(close(fd) == 0);
    CHECK_OK(zt_component_read(r, 7, "data", got, sizeof got));
    CHECK_MEM(got, small[7], sizeof got);
  }
  zt_close(r);
  /* Handed over: open until zt_close (as the header says), with or without a mapping. */
  {
    uint32_t flags[2] = {ZT_OPEN_TAKE_FD | ZT_OPEN_NO_MMAP, ZT_OPEN_TAKE_FD};
    size_t k;
    for (k = 0; k < 2; k++) {
      fd = open(path, O_RDONLY);
      o.flags = flags[k];
      r = NULL;
      if (CHECK_OK(zt_open_fd_with(fd, &o, &r))) {
        CHECK(fd_is_open(fd));
        CHECK_OK(zt_component_read(r, 9, "data", got, sizeof got));
        CHECK_MEM(got, small[9], sizeof got);
        CHECK(fd_is_open(fd));
      }
      zt_close(r);
      CHECK(!fd_is_open(fd));
    }
  }
  /* A failed open leaves a handed-over descriptor to the caller. */
  fd = open("not_a_model.txt", O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK(write(fd, "plain text, not a tensor file\n", 30) == 30);
  r = NULL;
  o.flags = ZT_OPEN_TAKE_FD;
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open_fd_with(fd, &o, &r));
  CHECK(r == NULL);
  CHECK_ERROR_MENTIONS("fd ");
  CHECK(fd_is_open(fd));
  close(fd);
  unlink("not_a_model.txt");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_fd_with(-1, NULL, &r));
  CHECK_STATUS(ZT_ERR_IO, zt_open_fd_with(fd, NULL, &r)); /* closed just now */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_fd_with(0, NULL, NULL));
}

static void test_mapping(const char *path) {
  zt_reader *r = NULL;
  zt_open_options o;
  zt_component_info ci;
  zt_view v;
  const void *base = NULL;
  uint64_t size = 0;
  size_t bytes_n = 0;
  unsigned char *bytes = zt_test_slurp(path, &bytes_n);
  memset(&o, 0, sizeof o);
  if (CHECK_OK(zt_open(path, &r))) {
    CHECK_OK(zt_shard_get_mapping(r, 0, &base, &size));
    CHECK_U64(size, bytes_n);
    CHECK_OK(zt_component_get_info(r, 3, 0, &ci));
    CHECK_OK(zt_component_view(r, 3, "data", &v));
    CHECK(v.zero_copy && v.data == (const unsigned char *)base + ci.offset);
    CHECK_MEM(base, bytes, bytes_n);
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_shard_get_mapping(r, 0, NULL, &size));
  }
  zt_close(r);
  o.flags = ZT_OPEN_NO_MMAP;
  if (CHECK_OK(zt_open_with(path, &o, &r))) {
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_shard_get_mapping(r, 0, &base, &size));
    CHECK_ERROR_MENTIONS("ZT_OPEN_NO_MMAP");
    CHECK_OK(zt_object_prefetch(r, 0)); /* a hint in pread mode too */
    CHECK_OK(zt_object_evict(r, 0));
  }
  zt_close(r);
  if (CHECK_OK(zt_open_memory(bytes, bytes_n, &r))) {
    CHECK_OK(zt_shard_get_mapping(r, 0, &base, &size));
    CHECK(base == bytes && size == bytes_n);
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_prefetch(r, 100000));
  }
  zt_close(r);
  free(bytes);
}

/* ------------------------------------------------------------------------------------ */
/* prefetch, release, populate: resident memory                                         */
/* ------------------------------------------------------------------------------------ */

static long rss_file_kib(void) {
  char line[256];
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "RssFile:", 8) == 0) v = strtol(line + 8, NULL, 10);
  }
  if (f != NULL) fclose(f);
  return v;
}

/* Pages of [p, p + len) in the page cache, by mincore. */
static size_t cached_pages(const void *p, size_t len) {
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t start = (uintptr_t)p / (uintptr_t)page * (uintptr_t)page;
  size_t pages = (size_t)(((uintptr_t)p + len - start + (uintptr_t)page - 1) / (uintptr_t)page), i, n = 0;
  unsigned char *vec = (unsigned char *)malloc(pages);
  if (vec == NULL || mincore((void *)start, pages * (size_t)page, vec) != 0) {
    free(vec);
    return 0;
  }
  for (i = 0; i < pages; i++) n += vec[i] & 1;
  free(vec);
  return n;
}

static void test_resident(void) {
  const size_t per = under_valgrind() ? (16u << 20) : (256u << 20); /* 4 objects */
  const long per_kib = (long)(per >> 10);
  unsigned char *chunk = (unsigned char *)malloc(per);
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_open_options o;
  zt_view v;
  uint64_t shape[1];
  long base, touched, released;
  size_t i, k, sum = 0, pages = per / (size_t)sysconf(_SC_PAGESIZE);
  int fd;
  shape[0] = per;
  for (i = 0; i < per; i++) chunk[i] = (unsigned char)(i * 13 + 1);
  CHECK_OK(zt_test_create_v12("resident.zt", &w));
  for (k = 0; k < 4; k++) {
    char name[16];
    snprintf(name, sizeof name, "w%zu", k);
    CHECK_OK(zt_writer_add(w, name, ZT_U8, shape, 1, chunk, per, NULL));
  }
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  free(chunk);
  /* Out of the page cache, so prefetching has something to do. */
  fd = open("resident.zt", O_RDONLY);
  CHECK(fd >= 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  close(fd);

  if (CHECK_OK(zt_open("resident.zt", &r))) {
    base = rss_file_kib();
    /* Touch all of w0: resident. Release it: gone from this process, views stay valid. */
    CHECK_OK(zt_component_view(r, 0, "data", &v));
    for (i = 0; i < per; i += 4096) sum += ((const unsigned char *)v.data)[i];
    CHECK_U64(sum, per / 4096); /* every byte at a multiple of 4096 is 1 */
    touched = rss_file_kib();
    CHECK(touched - base >= per_kib * 9 / 10);
    CHECK_OK(zt_object_evict(r, 0));
    released = rss_file_kib();
    CHECK(released - base < per_kib / 10);
    CHECK(((const unsigned char *)v.data)[per - 1] == (unsigned char)((per - 1) * 13 + 1));
    printf("note: RssFile %ld KiB, after touching w0 %ld KiB, after releasing it %ld KiB\n", base, touched,
           released);
    /* Prefetch w3: into the page cache in the background, without touching the process. */
    CHECK_OK(zt_component_view(r, 3, "data", &v));
    CHECK(cached_pages(v.data, per) < pages / 2);
    CHECK_OK(zt_object_prefetch(r, 3));
    for (k = 0; k < 200 && cached_pages(v.data, per) < pages * 9 / 10; k++) usleep(10000);
    CHECK(cached_pages(v.data, per) >= pages * 9 / 10);
    CHECK(rss_file_kib() - released < per_kib / 10);
    printf("note: prefetch of %zu MiB in the page cache after %zu ms\n", per >> 20, k * 10);
  }
  zt_close(r);
  /* ZT_OPEN_POPULATE: the whole file resident after the open. */
  memset(&o, 0, sizeof o);
  o.flags = ZT_OPEN_POPULATE;
  base = rss_file_kib();
  if (CHECK_OK(zt_open_with("resident.zt", &o, &r))) {
    long now = rss_file_kib();
    CHECK(now - base >= 4 * per_kib * 9 / 10);
    printf("note: ZT_OPEN_POPULATE: RssFile %ld -> %ld KiB\n", base, now);
  }
  zt_close(r);
  unlink("resident.zt");
}

int main(void) {
  zt_reader *r = NULL;
  char dir[] = "/tmp/zt-loader-XXXXXX";
  if (!CHECK(mkdtemp(dir) != NULL) || !CHECK(chdir(dir) == 0)) return zt_test_summary();
  write_model("model.zt");
  if (CHECK_OK(zt_open("model.zt", &r))) {
    test_batch_equals_single_reads(r, 0);
    test_batch_equals_single_reads(r, 1);
    test_batch_equals_single_reads(r, 8);
    test_batch_equals_single_reads(r, 99); /* NULL options */
    test_batch_errors(r);
  }
  zt_close(r);
  test_fd("model.zt");
  test_mapping("model.zt");
  unlink("model.zt");
  test_resident();
  CHECK(chdir("/") == 0);
  CHECK(rmdir(dir) == 0);
  return zt_test_summary();
}
