/*
 * test_copy_on_write: ZT_OPEN_COPY_ON_WRITE, and the two calls bindings use to raise their
 * language's own errors (zt_last_os_error, zt_path_is_url).
 *
 *   test_copy_on_write <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * 1. Without the flag a zero-copy view is read-only memory: a write through it kills a
 *    forked child with SIGSEGV (what PyTorch did to Python users before the flag).
 * 2. With it the same write succeeds: the reader's later views and reads of those bytes
 *    see it, zt_component_verify reports the mismatch, the file on disk keeps its bytes,
 *    another reader of the file (with or without the flag) sees the file's bytes, and so
 *    does the same reader's other tensors and a reader opened after it is closed. With
 *    ZT_OPEN_POPULATE as well: the same. With ZT_OPEN_NO_MMAP the flag changes nothing.
 * 3. zt_last_os_error: ENOENT / EISDIR after a failed open, 0 after a success and after
 *    a format error; zt_path_is_url for each scheme the library opens, in any case, and
 *    for local paths.
 */
#define _GNU_SOURCE
#include "zt_test.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096 /* f32 elements of "w": 16 KiB, four pages */

static float W[N];
static float O[N]; /* "other": bytes of its own (zTensor v2 stores equal blobs once) */
static float Z[N];

static void write_file(const char *path) {
  zt_writer *w = NULL;
  zt_write_options raw = {ZT_ENCODING_RAW, 0, ZT_DIGEST_XXH3};
  zt_write_options zstd = {ZT_ENCODING_ZSTD, 0, ZT_DIGEST_XXH3};
  uint64_t shape[1] = {N};
  size_t i;
  for (i = 0; i < N; i++) {
    W[i] = (float)i * 0.5f;
    O[i] = (float)i * 0.5f + 1.0f;
    Z[i] = (float)(i % 7);
  }
  CHECK_OK(zt_writer_create(path, &w));
  CHECK_OK(zt_writer_add(w, "w", ZT_F32, shape, 1, W, sizeof W, &raw));
  CHECK_OK(zt_writer_add(w, "other", ZT_F32, shape, 1, O, sizeof O, &raw));
  CHECK_OK(zt_writer_add(w, "z", ZT_F32, shape, 1, Z, sizeof Z, &zstd));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

static zt_reader *open_flags(const char *path, uint32_t flags) {
  zt_open_options o;
  zt_reader *r = NULL;
  memset(&o, 0, sizeof o);
  o.flags = flags;
  CHECK_OK(zt_open_with(path, &o, &r));
  return r;
}

/* The index of `name` (v2 lists objects by name, not in write order). */
static size_t index_of(zt_reader *r, const char *name) {
  size_t index = 0;
  CHECK_OK(zt_object_find(r, name, &index));
  return index;
}

static float *view_of(zt_reader *r, const char *name) {
  size_t index = 0;
  zt_view v;
  if (zt_object_find(r, name, &index) != ZT_OK || zt_component_view(r, index, "data", &v) != ZT_OK) {
    CHECK(!"view");
    return NULL;
  }
  CHECK(v.size == sizeof W);
  return (float *)(uintptr_t)v.data; /* the cast a binding makes for a writable array */
}

/* 1. The default mapping: a write faults. */
static void read_only_write_faults(const char *path) {
  pid_t pid;
  int status = 0;
  fflush(NULL);
  pid = fork();
  if (pid == 0) {
    struct sigaction sa;
    zt_reader *r = NULL;
    float *p;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL; /* sanitizers install their own SIGSEGV handler: die plainly */
    sigaction(SIGSEGV, &sa, NULL);
    if (zt_open(path, &r) != ZT_OK) {
      _exit(2);
    }
    p = view_of(r, "w");
    if (p == NULL) {
      _exit(3);
    }
    p[1] = 42.0f;
    _exit(0); /* not reached: the page is read-only */
  }
  CHECK(pid > 0);
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

/* 2. ZT_OPEN_COPY_ON_WRITE: the write is the process's own. */
static void copy_on_write(const char *path, uint32_t extra) {
  zt_reader *r = open_flags(path, ZT_OPEN_COPY_ON_WRITE | extra);
  zt_reader *plain = open_flags(path, 0);
  zt_reader *other_cow = open_flags(path, ZT_OPEN_COPY_ON_WRITE);
  float *p, *again, *o;
  float back[N];
  unsigned char *disk;
  size_t disk_size = 0;
  if (r == NULL || plain == NULL || other_cow == NULL) {
    return;
  }
  p = view_of(r, "w");
  o = view_of(r, "other");
  if (p == NULL || o == NULL) {
    return;
  }
  CHECK(p[1] == 0.5f);
  p[1] = 42.0f;         /* first page */
  p[N - 1] = -1.0f;     /* last page */
  again = view_of(r, "w");
  CHECK(again == p && again[1] == 42.0f && again[N - 1] == -1.0f);
  CHECK_OK(zt_component_read(r, index_of(r, "w"), "data", back, sizeof back));
  CHECK(back[1] == 42.0f && back[2] == 1.0f);
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(r, index_of(r, "w"), "data"));
  CHECK(o[1] == 1.5f); /* the same file's other tensor: untouched */
  CHECK(view_of(plain, "w")[1] == 0.5f);
  CHECK(view_of(other_cow, "w")[1] == 0.5f);
  CHECK_OK(zt_component_verify(plain, index_of(plain, "w"), "data"));
  disk = zt_test_slurp(path, &disk_size);
  CHECK(disk != NULL && disk_size > 0);
  if (disk != NULL) {
    zt_location loc;
    CHECK_OK(zt_component_get_location(plain, index_of(plain, "w"), 0, &loc));
    CHECK(loc.offset + sizeof W <= disk_size);
    if (loc.offset + sizeof W <= disk_size) {
      CHECK_MEM(disk + loc.offset, W, sizeof W); /* the file never changes */
    }
    free(disk);
  }
  zt_close(r);
  zt_close(plain);
  zt_close(other_cow);
  /* A new reader sees the file, not the closed reader's private pages. */
  r = open_flags(path, ZT_OPEN_COPY_ON_WRITE);
  if (r != NULL) {
    CHECK(view_of(r, "w")[1] == 0.5f);
    zt_close(r);
  }
}

static void os_errors_and_urls(void) {
  zt_reader *r = NULL;
  CHECK_STATUS(ZT_ERR_IO, zt_open("no-such-file.zt", &r));
  CHECK(zt_last_os_error() == ENOENT);
  CHECK(zt_last_os_error() == ENOENT); /* reading it changes nothing */
  CHECK_CONTAINS(zt_last_error(), "no-such-file.zt");
  CHECK_STATUS(ZT_ERR_IO, zt_open(".", &r));
  CHECK(zt_last_os_error() == 0 || zt_last_os_error() == EISDIR);
  {
    FILE *f = fopen("not-a-tensor-file", "wb");
    CHECK(f != NULL);
    if (f != NULL) {
      fputs("this is no tensor file at all, just text", f);
      fclose(f);
    }
  }
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open("not-a-tensor-file", &r));
  CHECK(zt_last_os_error() == 0);
  CHECK_STATUS(ZT_ERR_IO, zt_open("no-such-file.zt", &r));
  CHECK(zt_status_name(ZT_OK) != NULL);
  CHECK_OK(zt_open("cow.zt", &r));
  CHECK(zt_last_os_error() == 0); /* a success clears it */
  zt_close(r);

  CHECK(zt_path_is_url("s3://bucket/model.safetensors"));
  CHECK(zt_path_is_url("S3A://bucket/x"));
  CHECK(zt_path_is_url("gs://b/x"));
  CHECK(zt_path_is_url("az://c/x"));
  CHECK(zt_path_is_url("azure://c/x"));
  CHECK(zt_path_is_url("abfs://c/x"));
  CHECK(zt_path_is_url("abfss://c/x"));
  CHECK(zt_path_is_url("adl://c/x"));
  CHECK(zt_path_is_url("http://127.0.0.1/x"));
  CHECK(zt_path_is_url("HTTPS://example.org/x"));
  CHECK(!zt_path_is_url("model.zt"));
  CHECK(!zt_path_is_url("/data/s3://bucket"));
  CHECK(!zt_path_is_url("./s3://bucket/x"));
  CHECK(!zt_path_is_url("s3://"));
  CHECK(!zt_path_is_url("ftp://host/x"));
  CHECK(!zt_path_is_url(""));
  CHECK(!zt_path_is_url(NULL));
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  write_file("cow.zt");
  read_only_write_faults("cow.zt");
  copy_on_write("cow.zt", 0);
  copy_on_write("cow.zt", ZT_OPEN_POPULATE);
  {
    /* ZT_OPEN_NO_MMAP wins: views are copies the reader owns, writable heap memory. */
    zt_reader *r = open_flags("cow.zt", ZT_OPEN_COPY_ON_WRITE | ZT_OPEN_NO_MMAP);
    if (r != NULL) {
      CHECK(view_of(r, "w")[1] == 0.5f);
      zt_close(r);
    }
  }
  os_errors_and_urls();
  return zt_test_summary();
}
