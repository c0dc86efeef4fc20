/*
 * test_mapped: what happens to an open reader when its file is truncated, rewritten in
 * place, or replaced by rename.
 *
 *   test_mapped <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * 1. Mapped (the default): truncating the file under an open reader and then touching
 *    the vanished bytes raises SIGBUS: through a zero-copy view (the caller's own load),
 *    and inside zt_component_read, zt_component_read_range, zt_component_view (first
 *    decode of a zstd component), zt_component_read_as and zt_component_verify. Each case
 *    runs in a forked child that must die of SIGBUS; bytes before the cut still read
 *    correctly first. One truncation is done by another process. Bytes cut away within
 *    the new last page read as zeros instead (no signal, no error).
 * 2. ZT_OPEN_NO_MMAP (pread): the same truncations give ZT_ERR_IO (or ZT_ERR_FORMAT) with
 *    a message naming the object, never a signal; bytes before the cut and views taken
 *    before the truncation (owned copies) stay correct; truncating to 0 too.
 * 3. Replaced by rename (what zt_writer_finish does): readers of the old file, in both
 *    modes, keep reading the old bytes exactly (views taken before and after, reads,
 *    ranges, first zstd decodes, verify), even after the new file is deleted as well; a new
 *    reader sees the new file.
 * 4. Rewritten in place (what not to do): both modes see the new bytes under the old
 *    manifest; zt_component_verify reports ZT_ERR_CHECKSUM; views cached before stay old.
 *
 * Under valgrind the children still die of SIGBUS (valgrind reports "Process terminating
 * with default action of signal 7" for them; that is expected).
 */
#define _GNU_SOURCE
#include "zt_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define RAW_A_SIZE (64 * 1024)
#define BIG_N (256 * 1024) /* f32 elements: 1 MiB */
#define Z_N (64 * 1024)    /* f32 elements: 256 KiB decoded */
#define TAIL_SIZE (64 * 1024)

/* The content of one version of the file. */
typedef struct content {
  unsigned char raw_a[RAW_A_SIZE];
  float big[BIG_N];
  float z[Z_N];
  unsigned char tail[TAIL_SIZE];
} content;

static content V[2];

/* File layout, read back from the manifest. */
typedef struct layout {
  size_t obj_a, obj_big, obj_z, obj_tail;
  uint64_t big_offset;
  uint64_t size;
} layout;

static void make_content(int v) {
  content *c = &V[v];
  size_t i;
  for (i = 0; i < RAW_A_SIZE; i++) {
    c->raw_a[i] = (unsigned char)(i * 7 + 1 + (size_t)v * 100);
  }
  for (i = 0; i < BIG_N; i++) {
    c->big[i] = (float)i * 0.5f + (float)v * 1000.0f;
  }
  for (i = 0; i < Z_N; i++) {
    c->z[i] = (float)((i / 16) % 100) + (float)v * 0.25f;
  }
  for (i = 0; i < TAIL_SIZE; i++) {
    c->tail[i] = (unsigned char)(i * 13 + (size_t)v);
  }
}

static int write_version(const char *path, int v) {
  content *c = &V[v];
  zt_writer *w = NULL;
  zt_write_options crc = {ZT_ENCODING_RAW, 0, ZT_DIGEST_CRC32C};
  zt_write_options zcrc = {ZT_ENCODING_ZSTD, 0, ZT_DIGEST_CRC32C};
  zt_write_options sha = {ZT_ENCODING_RAW, 0, ZT_DIGEST_SHA256};
  uint64_t s_a[1] = {RAW_A_SIZE}, s_big[2] = {BIG_N / 256, 256}, s_z[1] = {Z_N}, s_tail[1] = {TAIL_SIZE};
  int ok = CHECK_OK(zt_test_create_v12(path, &w)) &&
           CHECK_OK(zt_writer_add(w, "raw_a", ZT_U8, s_a, 1, c->raw_a, sizeof c->raw_a, &crc)) &&
           CHECK_OK(zt_writer_add(w, "raw_big", ZT_F32, s_big, 2, c->big, sizeof c->big, &crc)) &&
           CHECK_OK(zt_writer_add(w, "zstd_c", ZT_F32, s_z, 1, c->z, sizeof c->z, &zcrc)) &&
           CHECK_OK(zt_writer_add(w, "raw_tail", ZT_U8, s_tail, 1, c->tail, sizeof c->tail, &sha)) &&
           CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  return ok;
}

static int get_layout(zt_reader *r, layout *l) {
  zt_component_info ci;
  struct stat st;
  int ok = CHECK_OK(zt_object_find(r, "raw_a", &l->obj_a)) && CHECK_OK(zt_object_find(r, "raw_big", &l->obj_big)) &&
           CHECK_OK(zt_object_find(r, "zstd_c", &l->obj_z)) && CHECK_OK(zt_object_find(r, "raw_tail", &l->obj_tail)) &&
           CHECK_OK(zt_component_get_info(r, l->obj_big, 0, &ci));
  if (ok) {
    l->big_offset = ci.offset;
    ok = CHECK(zt_component_get_info(r, l->obj_a, 0, &ci) == ZT_OK && ci.offset + ci.length <= l->big_offset);
  }
  l->size = stat("v0.zt", &st) == 0 ? (uint64_t)st.st_size : 0;
  return ok;
}

static int copy_file(const char *from, const char *to) {
  char buf[65536];
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ssize_t n;
  int ok = in >= 0 && out >= 0;
  while (ok && (n = read(in, buf, sizeof buf)) > 0) {
    ok = write(out, buf, (size_t)n) == n;
  }
  if (in >= 0) {
    close(in);
  }
  if (out >= 0) {
    close(out);
  }
  return ok;
}

/* ------------------------------------------------------------------------------------ */
/* 1b. mmap: bytes cut away within the file's new last page read as zeros              */
/* ------------------------------------------------------------------------------------ */

/* The kernel maps whole pages: after a cut, the rest of the page that holds the new end
   still reads (as zeros), without a signal or an error; only pages wholly past the end
   fault. Nothing can tell these zeros from data: docs/reliability.md says so. */
static void test_mmap_partial_page(const layout *l) {
  zt_reader *r = NULL;
  zt_view v;
  long page = sysconf(_SC_PAGESIZE);
  uint64_t cut = l->big_offset + 100, page_end;
  unsigned char four[4];
  size_t i, zeros = 0;
  if (!CHECK(copy_file("v0.zt", "partial.zt")) || !CHECK_OK(zt_open("partial.zt", &r))) {
    zt_close(r);
    return;
  }
  page_end = (cut / (uint64_t)page + 1) * (uint64_t)page;
  if (CHECK_OK(zt_component_view(r, l->obj_big, "data", &v)) && CHECK(v.zero_copy) &&
      CHECK(truncate("partial.zt", (off_t)cut) == 0)) {
    const unsigned char *b = (const unsigned char *)v.data;
    CHECK_MEM(b, V[0].big, 100); /* before the cut: the data */
    for (i = 100; i < page_end - l->big_offset; i++) {
      zeros += b[i] == 0;
    }
    CHECK_U64(zeros, page_end - l->big_offset - 100); /* after it, to the page's end: zeros */
    CHECK_OK(zt_component_read_range(r, l->obj_big, "data", 200, four, sizeof four));
    CHECK(four[0] == 0 && four[1] == 0 && four[2] == 0 && four[3] == 0);
    printf("note: mmap, bytes cut away in the last page (%" PRIu64 " of them) read as zeros\n",
           page_end - cut);
  }
  zt_close(r);
  unlink("partial.zt");
}

/* ------------------------------------------------------------------------------------ */
/* 1. mmap: SIGBUS                                                                      */
/* ------------------------------------------------------------------------------------ */

enum {
  TOUCH_VIEW,       /* the caller loads from a zero-copy view taken before the cut */
  TOUCH_VIEW_OTHER, /* the same, the file truncated to 0 by another process */
  CALL_READ_SMALL,  /* zt_component_read of a 64 KiB raw component */
  CALL_READ_LARGE,  /* zt_component_read of a 1 MiB raw component */
  CALL_RANGE,       /* zt_component_read_range */
  CALL_VIEW_ZSTD,   /* zt_component_view of a zstd component: first decode */
  CALL_READ_AS,     /* zt_component_read_as (f32 -> f64) */
  CALL_VERIFY,      /* zt_component_verify */
  N_CASES
};

static const char *CASE_NAMES[N_CASES] = {
    "load from a zero-copy view",
    "load from a zero-copy view, truncated by another process",
    "zt_component_read (64 KiB)",
    "zt_component_read (1 MiB)",
    "zt_component_read_range",
    "zt_component_view of a zstd component",
    "zt_component_read_as",
    "zt_component_verify",
};

/*
 * The child: opens victim.zt mapped, truncates it (at the start of raw_big, or to 0), checks
 * that raw_a (before the cut) still reads, then touches the vanished bytes. Exit codes:
 * 20 = a load from the view survived; 30 + status = the library call returned that status;
 * 21..29 = something failed before the trigger.
 */
static void sigbus_child(int which, const layout *l, int go_read, int done_write) {
  zt_reader *r = NULL;
  zt_view view;
  struct sigaction sa;
  static unsigned char a_back[RAW_A_SIZE];
  volatile unsigned char sink = 0;
  zt_status s = ZT_OK;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL; /* sanitizers install their own SIGBUS handler: die plainly */
  sigaction(SIGBUS, &sa, NULL);
  if (zt_open("victim.zt", &r) != ZT_OK) {
    _exit(21);
  }
  if (zt_component_view(r, l->obj_big, "data", &view) != ZT_OK || !view.zero_copy) {
    _exit(22);
  }
  sink = ((const volatile unsigned char *)view.data)[view.size - 1]; /* fine before the cut */
  if (which == TOUCH_VIEW_OTHER) {
    unsigned char b = 1;
    /* tell the parent to truncate, wait until it has */
    if (write(done_write, &b, 1) != 1 || read(go_read, &b, 1) != 1) {
      _exit(23);
    }
  } else if (truncate("victim.zt", which == TOUCH_VIEW ? 0 : (off_t)l->big_offset) != 0) {
    _exit(24);
  }
  if (which != TOUCH_VIEW && which != TOUCH_VIEW_OTHER) {
    /* the bytes before the cut are still there */
    if (zt_component_read(r, l->obj_a, "data", a_back, sizeof a_back) != ZT_OK ||
        memcmp(a_back, V[0].raw_a, sizeof a_back) != 0) {
      _exit(25);
    }
  }
  switch (which) {
    case TOUCH_VIEW:
    case TOUCH_VIEW_OTHER:
      sink = ((const volatile unsigned char *)view.data)[view.size - 1];
      (void)sink;
      _exit(20);
    case CALL_READ_SMALL: {
      static unsigned char tail[TAIL_SIZE];
      s = zt_component_read(r, l->obj_tail, "data", tail, sizeof tail);
      break;
    }
    case CALL_READ_LARGE: {
      float *big = (float *)malloc(sizeof V[0].big);
      s = zt_component_read(r, l->obj_big, "data", big, sizeof V[0].big);
      free(big);
      break;
    }
    case CALL_RANGE: {
      float f[4];
      s = zt_component_read_range(r, l->obj_big, "data", sizeof V[0].big - sizeof f, f, sizeof f);
      break;
    }
    case CALL_VIEW_ZSTD:
      s = zt_component_view(r, l->obj_z, "data", &view);
      break;
    case CALL_READ_AS: {
      double *d = (double *)malloc(BIG_N * sizeof(double));
      s = zt_component_read_as(r, l->obj_big, "data", ZT_F64, d, BIG_N * sizeof(double));
      free(d);
      break;
    }
    case CALL_VERIFY:
      s = zt_component_verify(r, l->obj_tail, "data");
      break;
    default:
      break;
  }
  zt_close(r);
  _exit(30 + (int)s);
}

static void test_mmap_sigbus(const layout *l) {
  int which, sigbus = 0, errors = 0;
  for (which = 0; which < N_CASES; which++) {
    int to_parent[2], to_child[2];
    pid_t pid;
    int status = 0;
    int bus, clean_error;
    if (!CHECK(copy_file("v0.zt", "victim.zt")) || !CHECK(pipe(to_parent) == 0 && pipe(to_child) == 0)) {
      return;
    }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
      close(to_parent[0]);
      close(to_child[1]);
      sigbus_child(which, l, to_child[0], to_parent[1]);
    }
    close(to_parent[1]);
    close(to_child[0]);
    if (which == TOUCH_VIEW_OTHER) {
      unsigned char b = 0;
      if (CHECK(read(to_parent[0], &b, 1) == 1)) {
        CHECK(truncate("victim.zt", 0) == 0); /* this process truncates the child's file */
        CHECK(write(to_child[1], &b, 1) == 1);
      }
    }
    close(to_parent[0]);
    close(to_child[1]);
    waitpid(pid, &status, 0);
    bus = WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
    clean_error = WIFEXITED(status) &&
                  (WEXITSTATUS(status) == 30 + ZT_ERR_IO || WEXITSTATUS(status) == 30 + ZT_ERR_FORMAT);
    sigbus += bus;
    errors += clean_error;
    /*
     * A load from a mapping always faults. Inside the library, which path a call takes
     * (the mapping, or pread into the caller's buffer for large raw reads) is its own
     * business: SIGBUS or a clean ZT_ERR_IO are both what the documentation promises for
     * mapped files; returning ZT_OK, or any other death, is not.
     */
    if (!CHECK(bus || (which != TOUCH_VIEW && which != TOUCH_VIEW_OTHER && clean_error))) {
      fprintf(stderr, "  mmap, %s after truncation: the child %s %d, expected death by SIGBUS (%d)%s\n",
              CASE_NAMES[which], WIFSIGNALED(status) ? "died of signal" : "exited with",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), SIGBUS,
              which >= CALL_READ_SMALL ? " or exit 32/33 (ZT_ERR_IO/FORMAT)" : "");
    }
    printf("note: mmap, %s after truncation: %s\n", CASE_NAMES[which],
           bus ? "SIGBUS"
               : clean_error ? zt_status_name((uint32_t)(WEXITSTATUS(status) - 30)) : "something else");
  }
  printf("note: mmap: %d ways of touching a truncated file: %d raised SIGBUS, %d returned an error\n", N_CASES,
         sigbus, errors);
  unlink("victim.zt");
}

/* ------------------------------------------------------------------------------------ */
/* 2. pread: errors, never a signal                                                     */
/* ------------------------------------------------------------------------------------ */

/* ZT_ERR_IO or ZT_ERR_FORMAT, with a message naming `what`. */
static void check_gone(zt_status s, const char *expr, const char *what, int line) {
  const char *msg = zt_last_error();
  int ok = (s == ZT_ERR_IO || s == ZT_ERR_FORMAT) && msg[0] != '\0' && strstr(msg, what) != NULL;
  zt_test_report(ok, __FILE__, line, "%s: expected ZT_ERR_IO or ZT_ERR_FORMAT naming '%s', got %s (\"%s\")", expr,
                 what, zt_status_name(s), msg);
}
#define CHECK_GONE(call, what) check_gone((call), #call, (what), __LINE__)

static void test_pread_truncation(const layout *l) {
  zt_open_options o;
  zt_reader *r = NULL;
  zt_view va, vz, v;
  float *big = (float *)malloc(sizeof V[0].big);
  double *d = (double *)malloc(BIG_N * sizeof(double));
  unsigned char *a = (unsigned char *)malloc(RAW_A_SIZE);
  float f[4];
  int cut;
  memset(&o, 0, sizeof o);
  o.flags = ZT_OPEN_NO_MMAP;
  for (cut = 0; cut < 2; cut++) {
    r = NULL;
    if (!CHECK(copy_file("v0.zt", "victim.zt")) || !CHECK_OK(zt_open_with("victim.zt", &o, &r))) {
      break;
    }
    /* before: everything reads; views are owned copies */
    CHECK_OK(zt_component_view(r, l->obj_a, "data", &va));
    CHECK(!va.zero_copy);
    CHECK_OK(zt_component_view(r, l->obj_z, "data", &vz));
    CHECK_OK(zt_file_verify(r));
    CHECK(truncate("victim.zt", cut == 0 ? (off_t)l->big_offset : 0) == 0);

    /* after: what lay beyond the cut is an error */
    CHECK_GONE(zt_component_read(r, l->obj_big, "data", big, sizeof V[0].big), "raw_big");
    CHECK_GONE(zt_component_view(r, l->obj_big, "data", &v), "raw_big");
    CHECK_GONE(zt_component_read_range(r, l->obj_big, "data", sizeof V[0].big - sizeof f, f, sizeof f), "raw_big");
    CHECK_GONE(zt_component_read_as(r, l->obj_big, "data", ZT_F64, d, BIG_N * sizeof(double)), "raw_big");
    CHECK_GONE(zt_component_verify(r, l->obj_tail, "data"), "raw_tail");
    CHECK_GONE(zt_file_verify(r), cut == 0 ? "raw_big" : "raw_a");
    {
      float *z = (float *)malloc(sizeof V[0].z);
      /* zstd_c was viewed before the cut: its decoded copy serves reads */
      CHECK_OK(zt_component_read(r, l->obj_z, "data", z, sizeof V[0].z));
      CHECK_MEM(z, V[0].z, sizeof V[0].z);
      free(z);
    }
    /* views taken before the cut are the reader's own memory: still intact */
    CHECK_MEM(va.data, V[0].raw_a, RAW_A_SIZE);
    CHECK_MEM(vz.data, V[0].z, sizeof V[0].z);
    if (cut == 0) {
      /* bytes before the cut still read from the file */
      CHECK_OK(zt_component_read(r, l->obj_a, "data", a, RAW_A_SIZE));
      CHECK_MEM(a, V[0].raw_a, RAW_A_SIZE);
      CHECK_OK(zt_component_read_range(r, l->obj_a, "data", 100, a, 100));
      CHECK_MEM(a, V[0].raw_a + 100, 100);
      CHECK_OK(zt_component_verify(r, l->obj_a, "data"));
    } else {
      /* raw_a was viewed before the cut: reads are served from that copy, but verify
         reads the stored bytes */
      CHECK_OK(zt_component_read_range(r, l->obj_a, "data", 100, a, 100));
      CHECK_MEM(a, V[0].raw_a + 100, 100);
      CHECK_GONE(zt_component_verify(r, l->obj_a, "data"), "raw_a");
    }
    if (cut == 0) {
      zt_status s = zt_component_read(r, l->obj_big, "data", big, sizeof V[0].big);
      printf("note: pread, read after truncation: %s: %s\n", zt_status_name(s), zt_last_error());
    }
    zt_close(r);
  }
  /* a file truncated before the open is refused cleanly, in both modes */
  if (CHECK(truncate("victim.zt", (off_t)l->big_offset) == 0)) {
    r = NULL;
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open_with("victim.zt", &o, &r));
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open("victim.zt", &r));
    CHECK(r == NULL);
  }
  unlink("victim.zt");
  free(big);
  free(d);
  free(a);
}

/* ------------------------------------------------------------------------------------ */
/* 3. Replaced by rename                                                                */
/* ------------------------------------------------------------------------------------ */

/* Every way of reading: the reader must still see version `v`. */
static void check_reads(zt_reader *r, const layout *l, int v, const char *label) {
  float *big = (float *)malloc(sizeof V[0].big);
  float *z = (float *)malloc(sizeof V[0].z);
  double *d = (double *)malloc(Z_N * sizeof(double));
  unsigned char *tail = (unsigned char *)malloc(TAIL_SIZE);
  zt_view vb, vz;
  float f[8];
  size_t i;
  int ok = 1;
  ok &= CHECK_OK(zt_component_read(r, l->obj_big, "data", big, sizeof V[0].big));
  ok &= CHECK_MEM(big, V[v].big, sizeof V[0].big);
  ok &= CHECK_OK(zt_component_view(r, l->obj_big, "data", &vb));
  ok &= CHECK_MEM(vb.data, V[v].big, sizeof V[0].big);
  ok &= CHECK_OK(zt_component_read_range(r, l->obj_big, "data", 4000, f, sizeof f));
  ok &= CHECK_MEM(f, (const unsigned char *)V[v].big + 4000, sizeof f);
  ok &= CHECK_OK(zt_component_read(r, l->obj_z, "data", z, sizeof V[0].z));
  ok &= CHECK_MEM(z, V[v].z, sizeof V[0].z);
  ok &= CHECK_OK(zt_component_view(r, l->obj_z, "data", &vz));
  ok &= CHECK_MEM(vz.data, V[v].z, sizeof V[0].z);
  ok &= CHECK_OK(zt_component_read_range(r, l->obj_z, "data", 1000, f, sizeof f));
  ok &= CHECK_MEM(f, (const unsigned char *)V[v].z + 1000, sizeof f);
  ok &= CHECK_OK(zt_component_read_as(r, l->obj_z, "data", ZT_F64, d, Z_N * sizeof(double)));
  for (i = 0; i < Z_N; i++) {
    if (d[i] != (double)V[v].z[i]) {
      break;
    }
  }
  ok &= CHECK(i == Z_N);
  ok &= CHECK_OK(zt_component_read(r, l->obj_tail, "data", tail, TAIL_SIZE));
  ok &= CHECK_MEM(tail, V[v].tail, TAIL_SIZE);
  ok &= CHECK_OK(zt_file_verify(r));
  if (!ok) {
    fprintf(stderr, "  (%s)\n", label);
  }
  free(big);
  free(z);
  free(d);
  free(tail);
}

static void test_replaced_by_rename(const layout *l) {
  zt_open_options o;
  zt_reader *rm = NULL, *rp = NULL, *rn = NULL;
  zt_view early;
  memset(&o, 0, sizeof o);
  o.flags = ZT_OPEN_NO_MMAP;
  if (!write_version("live.zt", 0) || !CHECK_OK(zt_open("live.zt", &rm))) {
    return;
  }
  if (!CHECK_OK(zt_open_with("live.zt", &o, &rp))) {
    zt_close(rm);
    return;
  }
  /* a zero-copy view taken before the replacement points into the old mapping */
  CHECK_OK(zt_component_view(rm, l->obj_big, "data", &early));
  CHECK(early.zero_copy);

  /* the writer's way: a temporary file renamed over live.zt */
  if (write_version("live.zt", 1)) {
    check_reads(rm, l, 0, "mmap reader after the rename");
    check_reads(rp, l, 0, "pread reader after the rename");
    CHECK_MEM(early.data, V[0].big, sizeof V[0].big);
    if (CHECK_OK(zt_open("live.zt", &rn))) {
      check_reads(rn, l, 1, "new reader");
      zt_close(rn);
    }
    /* a second replacement, then no file at all: the old readers don't care */
    CHECK(write_version("live.zt", 0));
    CHECK(unlink("live.zt") == 0);
    check_reads(rm, l, 0, "mmap reader after unlink");
    check_reads(rp, l, 0, "pread reader after unlink");
    CHECK_MEM(early.data, V[0].big, sizeof V[0].big);
  }
  zt_close(rm);
  zt_close(rp);
  printf("note: readers of a file replaced by rename (and then deleted) kept reading the old bytes, "
         "mapped and pread\n");
}

/* ------------------------------------------------------------------------------------ */
/* 4. Rewritten in place: what the rename avoids                                        */
/* ------------------------------------------------------------------------------------ */

static void test_rewritten_in_place(const layout *l) {
  zt_open_options o;
  zt_reader *rm = NULL, *rp = NULL;
  zt_view zv_m, zv_p, bv_m;
  float *big = (float *)malloc(sizeof V[0].big);
  int fd;
  memset(&o, 0, sizeof o);
  o.flags = ZT_OPEN_NO_MMAP;
  if (!CHECK(copy_file("v0.zt", "inplace.zt")) || !CHECK_OK(zt_open("inplace.zt", &rm)) ||
      !CHECK_OK(zt_open_with("inplace.zt", &o, &rp))) {
    zt_close(rm);
    free(big);
    return;
  }
  CHECK_OK(zt_component_view(rm, l->obj_z, "data", &zv_m)); /* decoded copies, taken before */
  CHECK_OK(zt_component_view(rp, l->obj_z, "data", &zv_p));
  CHECK_OK(zt_component_view(rm, l->obj_big, "data", &bv_m)); /* zero-copy */
  CHECK_MEM(bv_m.data, V[0].big, sizeof V[0].big);

  /* another program overwrites raw_big's bytes in place: no truncation, no rename */
  fd = open("inplace.zt", O_WRONLY);
  if (CHECK(fd >= 0)) {
    CHECK(pwrite(fd, V[1].big, sizeof V[1].big, (off_t)l->big_offset) == (ssize_t)sizeof V[1].big);
    close(fd);
  }
  /* both modes now read the new bytes under the old manifest ... */
  CHECK_OK(zt_component_read(rm, l->obj_big, "data", big, sizeof V[0].big));
  CHECK_MEM(big, V[1].big, sizeof V[0].big);
  CHECK_MEM(bv_m.data, V[1].big, sizeof V[0].big); /* the zero-copy view changed under us */
  CHECK_OK(zt_component_read(rp, l->obj_big, "data", big, sizeof V[0].big));
  CHECK_MEM(big, V[1].big, sizeof V[0].big);
  /* ... which the digests catch ... */
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(rm, l->obj_big, "data"));
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(rp, l->obj_big, "data"));
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_file_verify(rp));
  CHECK_ERROR_MENTIONS("raw_big");
  /* ... and decoded copies cached before keep the old values */
  CHECK_MEM(zv_m.data, V[0].z, sizeof V[0].z);
  CHECK_MEM(zv_p.data, V[0].z, sizeof V[0].z);
  zt_close(rm);
  zt_close(rp);
  unlink("inplace.zt");
  free(big);
}

int main(int argc, char **argv) {
  zt_reader *r = NULL;
  layout l;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  make_content(0);
  make_content(1);
  if (write_version("v0.zt", 0) && CHECK_OK(zt_open("v0.zt", &r))) {
    int ok = get_layout(r, &l);
    zt_close(r);
    if (ok) {
      test_mmap_sigbus(&l);
      test_mmap_partial_page(&l);
      test_pread_truncation(&l);
      test_replaced_by_rename(&l);
      test_rewritten_in_place(&l);
    }
  }
  unlink("v0.zt");
  return zt_test_summary();
}
