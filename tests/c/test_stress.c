/*
 * test_stress: many threads on one reader, with the decoded-view caches filled concurrently.
 *
 *   test_stress <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * Each round opens one reader (in turn: mapped, ZT_OPEN_NO_MMAP, caller memory) with
 * max_total_cached set to exactly the bytes its views must cache, then 16 threads:
 *   1. race for every cached component: a barrier, then all call zt_component_view on the
 *      same component at the same moment; every thread must get the same pointer (decoded
 *      once) and, after one more barrier, exact bytes; the exact cache limit means a double
 *      count would fail a view with ZT_ERR_LIMIT (and a second reader at the limit minus one
 *      byte must refuse the last view);
 *   2. each thread, in its own random order: zt_component_read, zt_component_read_range
 *      (random ranges), zt_component_read_as (a widening dtype), zt_component_verify
 *      (ZT_ERR_NOT_FOUND without a digest, with a message naming the object),
 *      zt_component_view, zt_object_find / zt_object_get_info, and zt_file_verify; every result
 *      is compared with the expected bytes or values;
 *   3. after a barrier the views are checked again: same pointers, same bytes.
 * The zstd components include one over 4 MiB (several frames: the parallel decode path).
 *
 * A last section checks the cache accounting when a decode fails: while one thread keeps
 * viewing a corrupt zstd component (each attempt fails with ZT_ERR_FORMAT), a view of a good
 * component that fits the cache limit on its own must succeed (a reader that reserves the
 * budget before decoding fails this nearly every time: the failing decode holds its size
 * against max_total_cached while it runs).
 *
 * Thread checkers: see tests/c/helgrind.supp for DRD and helgrind; ThreadSanitizer needs the
 * library and Rust's std built with -Zsanitizer=thread to see inside them.
 *
 * ZT_STRESS_THREADS (default 16) and ZT_STRESS_ROUNDS (default 6) scale the work. Under
 * valgrind (RUNNING_ON_VALGRIND, or ZT_TEST_UNDER=valgrind|helgrind|drd) there are 3 rounds,
 * the components are 4x smaller except the one over 4 MiB, and only one thread in four
 * reads, converts and compares that one.
 */
#define _GNU_SOURCE
#include "zt_test.h"

#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define ZT_HAVE_VALGRIND_H 1
#endif
#endif

#define MAX_THREADS 64
#define N_COMP 10

static int under_valgrind(void) {
  const char *under = getenv("ZT_TEST_UNDER");
  const char *preload = getenv("LD_PRELOAD");
  if (under != NULL && (strcmp(under, "valgrind") == 0 || strcmp(under, "helgrind") == 0 ||
                        strcmp(under, "drd") == 0)) {
    return 1;
  }
#ifdef ZT_HAVE_VALGRIND_H
  if (RUNNING_ON_VALGRIND) {
    return 1;
  }
#endif
  return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CHECK_MEM, with memcmp's speed on the (usual) equal path. */
#define CHECK_SAME(actual, expected, size)                                                         \
  (memcmp((actual), (expected), (size)) == 0 ? (zt_test_count(1), 1) : CHECK_MEM((actual), (expected), (size)))

static const size_t DTYPE_SIZE[13] = {8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1};

/* One component of the test file, and what a reader must return for it. */
typedef struct comp {
  char name[16];
  uint32_t dtype;
  uint32_t as_dtype; /* zt_component_read_as target */
  uint32_t encoding;
  uint32_t digest;
  size_t numel;
  size_t size;
  unsigned char *data;
  unsigned char *as; /* data converted to as_dtype */
  size_t as_size;
  size_t index; /* object index in the file */
} comp;

static comp C[N_COMP];
static int NT = 16;
static int ROUNDS = 6;
static size_t SCALE = 1; /* sizes divided by this */
static int VALGRIND = 0;

static void make_components(void) {
  /* name, dtype, as, encoding, digest, numel */
  static const struct {
    const char *name;
    uint32_t dtype, as, enc, dig;
    size_t numel;
  } spec[N_COMP] = {
      {"z.f32", ZT_F32, ZT_F64, ZT_ENCODING_ZSTD, ZT_DIGEST_CRC32C, 64 * 1024},
      {"z.i16", ZT_I16, ZT_I64, ZT_ENCODING_ZSTD, ZT_DIGEST_SHA256, 512 * 1024},
      {"z.u8", ZT_U8, ZT_U32, ZT_ENCODING_ZSTD, ZT_DIGEST_NONE, 4096},
      {"z.big", ZT_F32, ZT_F64, ZT_ENCODING_ZSTD, ZT_DIGEST_CRC32C, 1100 * 1024}, /* > 4 MiB */
      {"z.u16", ZT_U16, ZT_U64, ZT_ENCODING_ZSTD, ZT_DIGEST_CRC32C, 300000},
      {"z.f64", ZT_F64, ZT_F64, ZT_ENCODING_ZSTD, ZT_DIGEST_SHA256, 8192},
      {"r.f32", ZT_F32, ZT_F64, ZT_ENCODING_RAW, ZT_DIGEST_CRC32C, 256 * 256},
      {"r.u8", ZT_U8, ZT_I16, ZT_ENCODING_RAW, ZT_DIGEST_NONE, 100000},
      {"r.i32", ZT_I32, ZT_I64, ZT_ENCODING_RAW, ZT_DIGEST_SHA256, 50000},
      {"r.i8", ZT_I8, ZT_F32, ZT_ENCODING_RAW, ZT_DIGEST_CRC32C, 3000},
  };
  int k;
  size_t i;
  for (k = 0; k < N_COMP; k++) {
    comp *c = &C[k];
    snprintf(c->name, sizeof c->name, "%s", spec[k].name);
    c->dtype = spec[k].dtype;
    c->as_dtype = spec[k].as;
    c->encoding = spec[k].enc;
    c->digest = spec[k].dig;
    c->numel = spec[k].numel / (k == 3 ? 1 : SCALE); /* keep z.big over one 4 MiB frame */
    c->size = c->numel * DTYPE_SIZE[c->dtype];
    c->data = (unsigned char *)malloc(c->size);
    for (i = 0; i < c->numel; i++) {
      switch (c->dtype) {
        case ZT_F32: {
          float f = (float)((i * 7 + (size_t)k) % 5000) * 0.125f - 100.0f;
          memcpy(c->data + 4 * i, &f, 4);
          break;
        }
        case ZT_F64: {
          double d = (double)(i % 777) / 3.0;
          memcpy(c->data + 8 * i, &d, 8);
          break;
        }
        case ZT_I16: {
          int16_t v = (int16_t)((long)((i * 31) % 65536) - 32768);
          memcpy(c->data + 2 * i, &v, 2);
          break;
        }
        case ZT_U16: {
          uint16_t v = (uint16_t)(i / 3);
          memcpy(c->data + 2 * i, &v, 2);
          break;
        }
        case ZT_I32: {
          int32_t v = (int32_t)(i * 2654435761u);
          memcpy(c->data + 4 * i, &v, 4);
          break;
        }
        default: /* u8, i8 */
          c->data[i] = (unsigned char)((i * 13 + (i >> 9)) & 0xff);
          break;
      }
    }
  }
}

/* Element i of a component, converted to as_dtype, into out (as_dtype's size). */
static void expected_as(const comp *c, size_t i, unsigned char *out) {
  switch (c->dtype) {
    case ZT_F32: {
      float f;
      double d;
      memcpy(&f, c->data + 4 * i, 4);
      d = f;
      memcpy(out, &d, 8);
      break;
    }
    case ZT_F64:
      memcpy(out, c->data + 8 * i, 8);
      break;
    case ZT_I16: {
      int16_t v;
      int64_t w;
      memcpy(&v, c->data + 2 * i, 2);
      w = v;
      memcpy(out, &w, 8);
      break;
    }
    case ZT_U16: {
      uint16_t v;
      uint64_t w;
      memcpy(&v, c->data + 2 * i, 2);
      w = v;
      memcpy(out, &w, 8);
      break;
    }
    case ZT_I32: {
      int32_t v;
      int64_t w;
      memcpy(&v, c->data + 4 * i, 4);
      w = v;
      memcpy(out, &w, 8);
      break;
    }
    case ZT_U8: {
      if (c->as_dtype == ZT_U32) {
        uint32_t w = c->data[i];
        memcpy(out, &w, 4);
      } else {
        int16_t w = (int16_t)c->data[i];
        memcpy(out, &w, 2);
      }
      break;
    }
    case ZT_I8: {
      float f = (float)(int8_t)c->data[i];
      memcpy(out, &f, 4);
      break;
    }
    default:
      break;
  }
}

static void make_converted(void) {
  int k;
  size_t i;
  for (k = 0; k < N_COMP; k++) {
    size_t es = DTYPE_SIZE[C[k].as_dtype];
    C[k].as_size = C[k].numel * es;
    C[k].as = (unsigned char *)malloc(C[k].as_size);
    for (i = 0; i < C[k].numel; i++) {
      expected_as(&C[k], i, C[k].as + i * es);
    }
  }
}

static int write_file(const char *path) {
  zt_writer *w = NULL;
  int k, ok;
  ok = CHECK_OK(zt_test_create_v12(path, &w));
  for (k = 0; ok && k < N_COMP; k++) {
    zt_write_options o;
    uint64_t shape[1];
    o.encoding = C[k].encoding;
    o.level = 0;
    o.digest = C[k].digest;
    shape[0] = C[k].numel;
    ok = CHECK_OK(zt_writer_add(w, C[k].name, C[k].dtype, shape, 1, C[k].data, C[k].size, &o));
  }
  ok = ok && CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  return ok;
}

/* ------------------------------------------------------------------------------------ */
/* The threads                                                                          */
/* ------------------------------------------------------------------------------------ */

enum { MODE_MMAP, MODE_PREAD, MODE_MEMORY };
static const char *MODE_NAMES[3] = {"mmap", "pread", "memory"};

typedef struct shared {
  pthread_barrier_t barrier;
  zt_reader *reader;
  int mode;
  const void *ptr[MAX_THREADS][N_COMP]; /* view pointers, per thread */
  int cached[N_COMP];                   /* does a view of this component decode into the cache? */
  unsigned char *file;                  /* MODE_MEMORY: the file, 64-byte aligned */
  size_t file_size;
  long calls[MAX_THREADS];
} shared;

static shared S;

typedef struct worker {
  int id;
  uint64_t rng;
  unsigned char *buf;    /* largest component */
  unsigned char *as;     /* largest converted component */
} worker;

static uint64_t next_rand(worker *w) {
  w->rng ^= w->rng << 13;
  w->rng ^= w->rng >> 7;
  w->rng ^= w->rng << 17;
  return w->rng;
}

/* Under valgrind only one thread in four reads, converts and compares the 4 MiB component. */
static int heavy(const worker *w, int k) { return !VALGRIND || C[k].size < (1u << 20) || w->id % 4 == 0; }

static int check_view(worker *w, int k, const zt_view *v) {
  int ok = CHECK(v->size == C[k].size && v->dtype == C[k].dtype && ((uintptr_t)v->data % 64) == 0);
  ok = ok && CHECK_SAME(v->data, C[k].data, C[k].size);
  if (ok && S.cached[k] == v->zero_copy) {
    ok = CHECK(!"a view is zero-copy exactly when the component is raw in mapped or aligned memory");
    fprintf(stderr, "  thread %d, %s, %s: zero_copy %d\n", w->id, MODE_NAMES[S.mode], C[k].name, v->zero_copy);
  }
  return ok;
}

static void do_read(worker *w, int k) {
  CHECK_OK(zt_component_read(S.reader, C[k].index, "data", w->buf, C[k].size));
  CHECK_SAME(w->buf, C[k].data, C[k].size);
}

static void do_range(worker *w, int k) {
  size_t off = (size_t)(next_rand(w) % C[k].size);
  size_t len = (size_t)(next_rand(w) % (C[k].size - off + 1));
  if (next_rand(w) % 4 == 0 && len > 70000) {
    len = 70000;
  }
  CHECK_OK(zt_component_read_range(S.reader, C[k].index, "data", off, w->buf, len));
  CHECK_SAME(w->buf, C[k].data + off, len);
}

static void do_read_as(worker *w, int k) {
  if (CHECK_OK(zt_component_read_as(S.reader, C[k].index, "data", C[k].as_dtype, w->as, C[k].as_size))) {
    CHECK_SAME(w->as, C[k].as, C[k].as_size);
  }
}

static void do_verify(worker *w, int k) {
  (void)w;
  if (C[k].digest == ZT_DIGEST_NONE) {
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(S.reader, C[k].index, "data"));
    CHECK_ERROR_MENTIONS(C[k].name); /* this thread's own message */
  } else {
    CHECK_OK(zt_component_verify(S.reader, C[k].index, "data"));
  }
}

static void do_view(worker *w, int k) {
  zt_view v;
  if (CHECK_OK(zt_component_view(S.reader, C[k].index, "data", &v)) && (!heavy(w, k) || check_view(w, k, &v))) {
    if (!CHECK(S.ptr[w->id][k] == NULL || S.ptr[w->id][k] == v.data)) {
      fprintf(stderr, "  thread %d: %s: a second view moved\n", w->id, C[k].name);
    }
    S.ptr[w->id][k] = v.data;
  }
}

static void do_lookup(worker *w, int k) {
  size_t idx = 0;
  zt_object_info info;
  (void)w;
  CHECK_OK(zt_object_find(S.reader, C[k].name, &idx));
  CHECK_U64(idx, C[k].index);
  if (CHECK_OK(zt_object_get_info(S.reader, idx, &info))) {
    CHECK_STR(info.name, C[k].name);
    CHECK(info.ndim == 1 && info.shape[0] == C[k].numel && info.component_count == 1);
  }
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(S.reader, "no such object", &idx));
}

static void *worker_main(void *arg) {
  worker *w = (worker *)arg;
  int round, k, j;
  zt_view views[N_COMP];
  for (round = 0; round < ROUNDS; round++) {
    int order[N_COMP * 6];
    int n = 0;
    pthread_barrier_wait(&S.barrier); /* the reader is open */

    /* 1. all threads view the same component at the same moment */
    for (k = 0; k < N_COMP; k++) {
      if (!S.cached[k]) {
        continue;
      }
      pthread_barrier_wait(&S.barrier);
      views[k].data = NULL;
      CHECK_OK(zt_component_view(S.reader, C[k].index, "data", &views[k]));
      S.ptr[w->id][k] = views[k].data;
      S.calls[w->id]++;
    }
    /*
     * The bytes are checked after a barrier: the library publishes a decoded buffer with
     * atomics and futexes, which helgrind and DRD can't see; the barrier gives them a
     * happens-before edge they understand, so they don't report the reads below.
     */
    pthread_barrier_wait(&S.barrier);
    for (k = 0; k < N_COMP; k++) {
      if (S.cached[k] && views[k].data != NULL && heavy(w, k)) {
        check_view(w, k, &views[k]);
      }
    }

    /* 2. everything else, in a random order of this thread's own */
    for (k = 0; k < N_COMP; k++) {
      for (j = 0; j < 6; j++) {
        order[n++] = k * 6 + j;
      }
    }
    for (j = n - 1; j > 0; j--) {
      int r = (int)(next_rand(w) % (uint64_t)(j + 1)), t = order[j];
      order[j] = order[r];
      order[r] = t;
    }
    for (j = 0; j < n; j++) {
      int comp_index = order[j] / 6;
      if (!heavy(w, comp_index) && order[j] % 6 < 3) {
        continue;
      }
      switch (order[j] % 6) {
        case 0:
          do_read(w, comp_index);
          break;
        case 1:
          do_range(w, comp_index);
          break;
        case 2:
          do_read_as(w, comp_index);
          break;
        case 3:
          do_verify(w, comp_index);
          break;
        case 4:
          do_view(w, comp_index);
          break;
        default:
          do_lookup(w, comp_index);
          break;
      }
      S.calls[w->id]++;
      if (j == n / 2 && w->id % 4 == round % 4) {
        CHECK_OK(zt_file_verify(S.reader));
        S.calls[w->id]++;
      }
    }
    pthread_barrier_wait(&S.barrier); /* 3. main checks, then closes the reader */
    pthread_barrier_wait(&S.barrier);
  }
  return NULL;
}

static zt_reader *open_round(int mode, uint64_t cache_limit) {
  zt_open_options o;
  zt_reader *r = NULL;
  memset(&o, 0, sizeof o);
  o.max_total_cached = cache_limit;
  if (mode == MODE_PREAD) {
    o.flags = ZT_OPEN_NO_MMAP;
  }
  if (mode == MODE_MEMORY) {
    CHECK_OK(zt_open_memory_with(S.file, S.file_size, &o, &r));
  } else {
    CHECK_OK(zt_open_with("stress.zt", &o, &r));
  }
  return r;
}

static void run_rounds(void) {
  pthread_t th[MAX_THREADS];
  worker wk[MAX_THREADS];
  size_t largest = 0, largest_as = 0;
  int t, k, round;
  long calls = 0;
  double t0 = now_seconds();
  for (k = 0; k < N_COMP; k++) {
    if (C[k].size > largest) {
      largest = C[k].size;
    }
    if (C[k].as_size > largest_as) {
      largest_as = C[k].as_size;
    }
  }
  pthread_barrier_init(&S.barrier, NULL, (unsigned)NT + 1);
  for (t = 0; t < NT; t++) {
    wk[t].id = t;
    wk[t].rng = 0x2545F4914F6CDD1Dull * (uint64_t)(t + 1);
    wk[t].buf = (unsigned char *)malloc(largest);
    wk[t].as = (unsigned char *)malloc(largest_as);
    pthread_create(&th[t], NULL, worker_main, &wk[t]);
  }
  for (round = 0; round < ROUNDS; round++) {
    uint64_t limit = 0;
    int mode = round % 3;
    S.mode = mode;
    memset((void *)S.ptr, 0, sizeof S.ptr);
    for (k = 0; k < N_COMP; k++) {
      /* mapped or aligned memory: raw components are zero-copy; otherwise decoded */
      S.cached[k] = C[k].encoding == ZT_ENCODING_ZSTD || mode == MODE_PREAD;
      if (S.cached[k]) {
        limit += C[k].size; /* exactly what the views need */
      }
    }
    S.reader = open_round(mode, limit);
    if (S.reader == NULL) {
      break; /* the workers stay at the barrier: the failure is reported, join would hang */
    }
    pthread_barrier_wait(&S.barrier); /* go */
    for (k = 0; k < N_COMP; k++) {
      if (S.cached[k]) {
        pthread_barrier_wait(&S.barrier); /* everyone views component k now */
      }
    }
    pthread_barrier_wait(&S.barrier); /* the views are in: check their bytes */
    pthread_barrier_wait(&S.barrier); /* all done */
    for (k = 0; k < N_COMP; k++) {
      const void *p = S.ptr[0][k];
      int same = p != NULL;
      for (t = 1; t < NT; t++) {
        same = same && S.ptr[t][k] == p;
      }
      if (!CHECK(same)) {
        fprintf(stderr, "  round %d (%s): the threads got different views of %s\n", round, MODE_NAMES[mode],
                C[k].name);
      } else if (p != NULL) {
        CHECK_SAME(p, C[k].data, C[k].size); /* still intact after all the traffic */
      }
    }
    {
      /* once everything is cached, nothing more fits: the limit was exact */
      zt_view v;
      zt_reader *r2 = open_round(mode, limit - 1);
      int last = -1;
      for (k = 0; k < N_COMP; k++) {
        if (S.cached[k]) {
          last = k;
        }
      }
      if (r2 != NULL && last >= 0) {
        for (k = 0; k < last; k++) {
          if (S.cached[k]) {
            CHECK_OK(zt_component_view(r2, C[k].index, "data", &v));
          }
        }
        CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(r2, C[last].index, "data", &v));
      }
      zt_close(r2);
    }
    zt_close(S.reader);
    S.reader = NULL;
    pthread_barrier_wait(&S.barrier); /* next round */
  }
  if (round == ROUNDS) {
    for (t = 0; t < NT; t++) {
      pthread_join(th[t], NULL);
    }
  }
  for (t = 0; t < NT; t++) {
    calls += S.calls[t];
    if (round == ROUNDS) {
      free(wk[t].buf);
      free(wk[t].as);
    }
  }
  if (round == ROUNDS) {
    pthread_barrier_destroy(&S.barrier);
  }
  printf("note: %d threads x %d rounds (mmap, pread, memory): %ld calls checked in %.2f s\n", NT, ROUNDS, calls,
         now_seconds() - t0);
}

/* ------------------------------------------------------------------------------------ */
/* Cache accounting while a decode fails                                                */
/* ------------------------------------------------------------------------------------ */

/*
 * Makes the last block of the first zstd frame in `p` (the stored bytes of a component)
 * invalid (block type 3 is reserved), so decoding fails only after all the other blocks.
 */
static int corrupt_last_block(unsigned char *p, size_t n) {
  size_t pos = 4, fcs, did;
  unsigned fhd;
  if (n < 6 || p[0] != 0x28 || p[1] != 0xB5 || p[2] != 0x2F || p[3] != 0xFD) {
    return 0;
  }
  fhd = p[pos++];
  did = (size_t[]){0, 1, 2, 4}[fhd & 3];
  fcs = (size_t[]){0, 2, 4, 8}[fhd >> 6];
  if (fcs == 0 && (fhd & 0x20)) {
    fcs = 1;
  }
  if (!(fhd & 0x20)) {
    pos++; /* window descriptor */
  }
  pos += did + fcs;
  while (pos + 3 <= n) {
    unsigned h = (unsigned)p[pos] | (unsigned)p[pos + 1] << 8 | (unsigned)p[pos + 2] << 16;
    unsigned last = h & 1, type = (h >> 1) & 3;
    size_t size = h >> 3;
    if (last) {
      p[pos] |= 6; /* type 3: reserved */
      return 1;
    }
    pos += 3 + (type == 1 ? 1 : size);
  }
  return 0;
}

typedef struct spinner {
  zt_reader *r;
  size_t obj;
  pthread_mutex_t lock;
  int stop;
  long attempts;
  long unexpected;
  pthread_barrier_t started;
} spinner;

static void *spin_corrupt_views(void *arg) {
  spinner *s = (spinner *)arg;
  int first = 1;
  for (;;) {
    zt_view v;
    zt_status st;
    int stop;
    pthread_mutex_lock(&s->lock);
    stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    if (stop) {
      break;
    }
    st = zt_component_view(s->r, s->obj, "data", &v);
    pthread_mutex_lock(&s->lock);
    s->attempts++;
    /* corrupt: ZT_ERR_FORMAT; or ZT_ERR_LIMIT once 'good' is cached and both can't fit */
    s->unexpected += st != ZT_ERR_FORMAT && st != ZT_ERR_LIMIT;
    pthread_mutex_unlock(&s->lock);
    if (first) {
      first = 0;
      pthread_barrier_wait(&s->started);
    }
  }
  return NULL;
}

static void test_failed_decode_budget(void) {
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_write_options z = {ZT_ENCODING_ZSTD, 0, ZT_DIGEST_NONE};
  size_t good_n = (1 << 18) / SCALE, bad_n = (3 << 20) / 4 / SCALE; /* f32: 1 MiB and 3 MiB */
  float *good = (float *)malloc(good_n * 4), *bad = (float *)malloc(bad_n * 4);
  uint64_t s_good[1], s_bad[1];
  size_t i, obj_good = 0, obj_bad = 0;
  zt_component_info info;
  zt_open_options o;
  int attempt, attempts = under_valgrind() ? 4 : 20, refused = 0;
  long spins = 0;
  s_good[0] = good_n;
  s_bad[0] = bad_n;
  for (i = 0; i < good_n; i++) {
    good[i] = (float)(i % 1000);
  }
  for (i = 0; i < bad_n; i++) {
    bad[i] = (float)((i * 7) % 3000);
  }
  if (!(CHECK_OK(zt_test_create_v12("budget.zt", &w)) &&
        CHECK_OK(zt_writer_add(w, "good", ZT_F32, s_good, 1, good, good_n * 4, &z)) &&
        CHECK_OK(zt_writer_add(w, "bad", ZT_F32, s_bad, 1, bad, bad_n * 4, &z)) && CHECK_OK(zt_writer_finish(w)))) {
    zt_writer_free(w);
    free(good);
    free(bad);
    return;
  }
  zt_writer_free(w);
  /* corrupt bad's last zstd block in place */
  if (CHECK_OK(zt_open("budget.zt", &r)) && CHECK_OK(zt_object_find(r, "bad", &obj_bad)) &&
      CHECK_OK(zt_object_find(r, "good", &obj_good)) && CHECK_OK(zt_component_get_info(r, obj_bad, 0, &info))) {
    FILE *f = fopen("budget.zt", "r+b");
    unsigned char *stored = (unsigned char *)malloc((size_t)info.length);
    int ok = f != NULL && fseek(f, (long)info.offset, SEEK_SET) == 0 &&
             fread(stored, 1, (size_t)info.length, f) == (size_t)info.length &&
             corrupt_last_block(stored, (size_t)info.length) && fseek(f, (long)info.offset, SEEK_SET) == 0 &&
             fwrite(stored, 1, (size_t)info.length, f) == (size_t)info.length;
    CHECK(ok);
    if (f != NULL) {
      fclose(f);
    }
    free(stored);
  }
  zt_close(r);

  memset(&o, 0, sizeof o);
  o.max_total_cached = (uint64_t)(good_n + bad_n) * 4 - 1; /* each fits alone, not both */
  /* one thread: bad fails with ZT_ERR_FORMAT (twice: nothing is kept), then good fits */
  r = NULL;
  if (CHECK_OK(zt_open_with("budget.zt", &o, &r))) {
    zt_view v;
    CHECK_STATUS(ZT_ERR_FORMAT, zt_component_view(r, obj_bad, "data", &v));
    CHECK_STATUS(ZT_ERR_FORMAT, zt_component_view(r, obj_bad, "data", &v));
    CHECK_OK(zt_component_view(r, obj_good, "data", &v));
    zt_close(r);
  }
  /* two threads: while one keeps failing to decode bad, a view of good must still fit */
  for (attempt = 0; attempt < attempts; attempt++) {
    spinner s;
    pthread_t th;
    zt_view v;
    zt_status st;
    struct timespec pause = {0, 2000000};
    r = NULL;
    if (!CHECK_OK(zt_open_with("budget.zt", &o, &r))) {
      break;
    }
    memset(&s, 0, sizeof s);
    s.r = r;
    s.obj = obj_bad;
    pthread_mutex_init(&s.lock, NULL);
    pthread_barrier_init(&s.started, NULL, 2);
    pthread_create(&th, NULL, spin_corrupt_views, &s);
    pthread_barrier_wait(&s.started); /* one failed attempt is behind it, more under way */
    nanosleep(&pause, NULL);
    st = zt_component_view(r, obj_good, "data", &v);
    refused += st == ZT_ERR_LIMIT;
    if (!CHECK_OK(st)) {
      fprintf(stderr, "  attempt %d: a view of 'good' (%zu bytes; cache limit %" PRIu64
                      ", nothing cached) was refused while another thread's decode of 'bad' was failing\n",
              attempt, good_n * 4, o.max_total_cached);
    } else {
      CHECK_SAME(v.data, good, good_n * 4);
    }
    pthread_mutex_lock(&s.lock);
    s.stop = 1;
    pthread_mutex_unlock(&s.lock);
    pthread_join(th, NULL);
    CHECK(s.unexpected == 0);
    spins += s.attempts;
    pthread_barrier_destroy(&s.started);
    pthread_mutex_destroy(&s.lock);
    zt_close(r);
  }
  printf("note: cache budget during failed decodes: %d of %d views of a fitting component refused with "
         "ZT_ERR_LIMIT (%ld failed decodes alongside)\n",
         refused, attempts, spins);
  unlink("budget.zt");
  free(good);
  free(bad);
}

int main(int argc, char **argv) {
  const char *env;
  zt_reader *r = NULL;
  int k;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  if (under_valgrind()) {
    VALGRIND = 1;
    ROUNDS = 3;
    SCALE = 4;
  }
  if ((env = getenv("ZT_STRESS_ROUNDS")) != NULL && atoi(env) > 0) {
    ROUNDS = atoi(env);
  }
  if ((env = getenv("ZT_STRESS_THREADS")) != NULL && atoi(env) > 0) {
    NT = atoi(env) > MAX_THREADS ? MAX_THREADS : atoi(env);
  }
  make_components();
  make_converted();
  if (write_file("stress.zt") && CHECK_OK(zt_open("stress.zt", &r))) {
    for (k = 0; k < N_COMP; k++) {
      CHECK_OK(zt_object_find(r, C[k].name, &C[k].index));
    }
    zt_close(r);
    {
      FILE *f = fopen("stress.zt", "rb");
      long n = -1;
      if (f != NULL && fseek(f, 0, SEEK_END) == 0) {
        n = ftell(f);
        rewind(f);
      }
      S.file_size = n > 0 ? (size_t)n : 0;
      if (posix_memalign((void **)&S.file, 64, S.file_size + 64) != 0) {
        S.file = NULL;
      }
      CHECK(f != NULL && S.file != NULL && fread(S.file, 1, S.file_size, f) == S.file_size);
      if (f != NULL) {
        fclose(f);
      }
    }
    run_rounds();
  }
  test_failed_decode_budget();
  free(S.file);
  for (k = 0; k < N_COMP; k++) {
    free(C[k].data);
    free(C[k].as);
  }
  return zt_test_summary();
}
