/*
 * test_threads: 8 threads share one zt_reader and hammer it with every read-side call at
 * once (find, info, view, read, read_range, read_as, verify, attributes), checking every
 * result exactly; zt_last_error() must stay per-thread.
 *
 *   test_threads <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * ZT_THREAD_ROUNDS overrides the number of rounds per thread (default 12, or 1 under
 * valgrind, detected by its LD_PRELOAD or ZT_TEST_UNDER=valgrind, as valgrind serializes
 * threads and is ~50x slower).
 */
#define _POSIX_C_SOURCE 200809L
#include "zt_test.h"

#define N_THREADS 8
#define N_OBJECTS 40

typedef struct expected_object {
  char name[32];
  char attrs[96];
  uint32_t dtype;
  uint32_t encoding;
  uint64_t shape[2];
  size_t numel;
  unsigned char *data; /* stored dtype, little-endian */
  uint32_t as_dtype;   /* a widening read_as target */
  unsigned char *as;   /* the data converted to as_dtype */
  size_t as_size;
} expected_object;

static expected_object OBJ[N_OBJECTS];
static int ROUNDS = 12;

static const size_t SIZES[13] = {8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1};

static void make_objects(void) {
  static const uint32_t dtypes[4] = {ZT_F32, ZT_BF16, ZT_I16, ZT_U8};
  static const uint32_t as[4] = {ZT_F64, ZT_F32, ZT_I64, ZT_U16};
  int i;
  size_t k;
  for (i = 0; i < N_OBJECTS; i++) {
    expected_object *o = &OBJ[i];
    snprintf(o->name, sizeof o->name, "layers.%02d.weight", i);
    snprintf(o->attrs, sizeof o->attrs, "{\"index\":%d,\"name\":\"layers.%02d.weight\"}", i, i);
    o->dtype = dtypes[i % 4];
    o->as_dtype = as[i % 4];
    o->encoding = (i / 4) % 2 ? ZT_ENCODING_ZSTD : ZT_ENCODING_RAW; /* half compressed */
    o->shape[0] = 8 + (uint64_t)i;
    o->shape[1] = 40 + (uint64_t)(i % 5) * 24;
    o->numel = (size_t)(o->shape[0] * o->shape[1]);
    o->data = (unsigned char *)malloc(o->numel * SIZES[o->dtype]);
    o->as_size = o->numel * SIZES[o->as_dtype];
    o->as = (unsigned char *)malloc(o->as_size);
    for (k = 0; k < o->numel; k++) {
      switch (o->dtype) {
        case ZT_F32: {
          float f = (float)((k * 7 + (size_t)i) % 1000) * 0.25f;
          double d = f;
          memcpy(o->data + 4 * k, &f, 4);
          memcpy(o->as + 8 * k, &d, 8);
          break;
        }
        case ZT_BF16: { /* small integers: exact in bf16 */
          float f = (float)((int)((k + (size_t)i) % 256) - 128);
          uint32_t bits;
          uint16_t top;
          memcpy(&bits, &f, 4);
          top = (uint16_t)(bits >> 16);
          memcpy(o->data + 2 * k, &top, 2);
          memcpy(o->as + 4 * k, &f, 4);
          break;
        }
        case ZT_I16: {
          int16_t v = (int16_t)((long)((k * 31 + (size_t)i) % 65536) - 32768);
          int64_t w = v;
          memcpy(o->data + 2 * k, &v, 2);
          memcpy(o->as + 8 * k, &w, 8);
          break;
        }
        default: {
          uint8_t v = (uint8_t)(k * 13 + (size_t)i);
          uint16_t w = v;
          o->data[k] = v;
          memcpy(o->as + 2 * k, &w, 2);
          break;
        }
      }
    }
  }
}

static int write_file(const char *path) {
  zt_writer *w = NULL;
  int i, ok = 1;
  if (!CHECK_OK(zt_test_create_v12(path, &w))) {
    return 0;
  }
  for (i = 0; i < N_OBJECTS; i++) {
    const expected_object *o = &OBJ[i];
    zt_write_options opt;
    memset(&opt, 0, sizeof opt);
    opt.encoding = o->encoding;
    opt.digest = i % 2 ? ZT_DIGEST_CRC32C : ZT_DIGEST_SHA256; /* a digest on every object */
    ok &= CHECK_OK(zt_writer_add(w, o->name, o->dtype, o->shape, 2, o->data, o->numel * SIZES[o->dtype], &opt));
    ok &= CHECK_OK(zt_writer_set_object_attributes_json(w, o->name, o->attrs));
  }
  ok &= CHECK_OK(zt_writer_set_file_attributes_json(w, "{\"threads\":8}"));
  ok &= CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  return ok;
}

typedef struct worker {
  const zt_reader *reader;
  int id;
  int mapped;
  pthread_barrier_t *barrier;
  const void *views[N_OBJECTS]; /* the view pointer this thread saw for each object */
  long calls;
} worker;

/* Phase 0: zt_last_error() is per thread. */
static void last_error_phase(worker *wk) {
  size_t idx = 0;
  char mine[64];
  snprintf(mine, sizeof mine, "missing-in-thread-%d", wk->id);

  pthread_barrier_wait(wk->barrier);
  if (wk->id == 0) {
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(wk->reader, mine, &idx));
  } else {
    CHECK_OK(zt_object_find(wk->reader, OBJ[wk->id].name, &idx));
  }
  pthread_barrier_wait(wk->barrier);
  /* thread 0's failure did not leak into the others, nor their successes into thread 0 */
  if (wk->id == 0) {
    CHECK_CONTAINS(zt_last_error(), mine);
  } else {
    CHECK_STR(zt_last_error(), "");
  }
  pthread_barrier_wait(wk->barrier);
  /* now everyone fails at once, each with its own message */
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(wk->reader, mine, &idx));
  pthread_barrier_wait(wk->barrier);
  CHECK_CONTAINS(zt_last_error(), mine);
  {
    char other[64];
    snprintf(other, sizeof other, "missing-in-thread-%d", (wk->id + 1) % N_THREADS);
    CHECK(strstr(zt_last_error(), other) == NULL);
  }
  pthread_barrier_wait(wk->barrier);
}

static void one_object(worker *wk, int round, int i, unsigned char *buf, unsigned char *as) {
  const expected_object *o = &OBJ[i];
  size_t idx = 99, comp = 99, size = o->numel * SIZES[o->dtype];
  zt_object_info oi;
  zt_component_info ci;
  zt_view v;
  const char *json = NULL;

  CHECK_OK(zt_object_find(wk->reader, o->name, &idx));
  CHECK_U64(idx, i);
  CHECK_OK(zt_object_get_info(wk->reader, (size_t)i, &oi));
  CHECK_STR(oi.name, o->name);
  CHECK_STR(oi.format, "dense");
  CHECK(oi.ndim == 2 && oi.shape[0] == o->shape[0] && oi.shape[1] == o->shape[1] && oi.component_count == 1);
  CHECK_OK(zt_component_find(wk->reader, (size_t)i, "data", &comp));
  CHECK_U64(comp, 0);
  CHECK_OK(zt_component_get_info(wk->reader, (size_t)i, 0, &ci));
  CHECK(ci.dtype == o->dtype && ci.encoding == o->encoding && ci.decoded_length == size);
  CHECK(ci.digest != NULL && strncmp(ci.digest, i % 2 ? "crc32c:0x" : "sha256:", i % 2 ? 9 : 7) == 0);

  if (CHECK_OK(zt_component_view(wk->reader, (size_t)i, "data", &v))) {
    CHECK(v.size == size && v.dtype == o->dtype);
    CHECK(v.zero_copy == (wk->mapped && o->encoding == ZT_ENCODING_RAW));
    CHECK(((uintptr_t)v.data % 64) == 0);
    CHECK(memcmp(v.data, o->data, size) == 0);
    if (wk->views[i] == NULL) {
      wk->views[i] = v.data;
    }
    CHECK(wk->views[i] == v.data); /* decoded once, kept until close */
  }

  memset(buf, 0, size);
  CHECK_OK(zt_component_read(wk->reader, (size_t)i, "data", buf, size));
  CHECK(memcmp(buf, o->data, size) == 0);

  {
    /* a range that moves with the thread and the round */
    size_t off = ((size_t)wk->id * 997 + (size_t)round * 131 + (size_t)i * 17) % size;
    size_t len = ((size_t)round * 389 + (size_t)wk->id * 53) % (size - off) + 1;
    CHECK_OK(zt_component_read_range(wk->reader, (size_t)i, "data", off, buf, len));
    CHECK(memcmp(buf, o->data + off, len) == 0);
  }

  memset(as, 0, o->as_size);
  CHECK_OK(zt_component_read_as(wk->reader, (size_t)i, "data", o->as_dtype, as, o->as_size));
  CHECK(memcmp(as, o->as, o->as_size) == 0);

  CHECK_OK(zt_component_verify(wk->reader, (size_t)i, "data"));
  CHECK_OK(zt_object_validate(wk->reader, (size_t)i));
  CHECK_OK(zt_object_get_attributes_json(wk->reader, (size_t)i, &json));
  CHECK_STR(json, o->attrs);
  CHECK_STR(zt_last_error(), "");
  wk->calls += 14;
}

static void *run_worker(void *arg) {
  worker *wk = (worker *)arg;
  unsigned char *buf = (unsigned char *)malloc(1 << 20), *as = (unsigned char *)malloc(1 << 20);
  int round, k;
  const char *json = NULL;

  last_error_phase(wk);
  for (round = 0; round < ROUNDS; round++) {
    /* every thread walks the objects in its own order; round 0 starts together, so the
       first views of compressed objects race */
    int start = (wk->id * 5 + round * 3) % N_OBJECTS, step = (wk->id % 2) ? 7 : 33;
    if (round == 0) {
      pthread_barrier_wait(wk->barrier);
    }
    for (k = 0; k < N_OBJECTS; k++) {
      one_object(wk, round, (start + k * step) % N_OBJECTS, buf, as);
    }
    CHECK_U64(zt_object_count(wk->reader), N_OBJECTS);
    CHECK_STR(zt_file_version(wk->reader), "1.2.0");
    CHECK_OK(zt_file_get_attributes_json(wk->reader, &json));
    CHECK_STR(json, "{\"threads\":8}");
    if ((round + wk->id) % 4 == 0) {
      CHECK_OK(zt_file_verify(wk->reader));
    }
  }
  free(buf);
  free(as);
  return NULL;
}

static void run_threads(const zt_reader *reader, int mapped, const char *label) {
  pthread_t threads[N_THREADS];
  worker workers[N_THREADS];
  pthread_barrier_t barrier;
  int t, i;
  long calls = 0;
  pthread_barrier_init(&barrier, NULL, N_THREADS);
  for (t = 0; t < N_THREADS; t++) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].reader = reader;
    workers[t].id = t;
    workers[t].mapped = mapped;
    workers[t].barrier = &barrier;
    if (!CHECK(pthread_create(&threads[t], NULL, run_worker, &workers[t]) == 0)) {
      fprintf(stderr, "pthread_create failed\n");
      exit(1);
    }
  }
  for (t = 0; t < N_THREADS; t++) {
    CHECK(pthread_join(threads[t], NULL) == 0);
    calls += workers[t].calls;
  }
  pthread_barrier_destroy(&barrier);
  /* every thread saw the same memory for each object: concurrent first views decoded once */
  for (i = 0; i < N_OBJECTS; i++) {
    int same = 1;
    for (t = 1; t < N_THREADS; t++) {
      same &= workers[t].views[i] == workers[0].views[i];
    }
    if (!CHECK(same && workers[0].views[i] != NULL)) {
      fprintf(stderr, "  (%s: threads got different views of '%s')\n", label, OBJ[i].name);
    }
  }
  printf("note: %s: %d threads x %d rounds x %d objects, %ld calls checked\n", label, N_THREADS, ROUNDS,
         N_OBJECTS, calls);
}

int main(int argc, char **argv) {
  zt_reader *r = NULL;
  zt_open_options o;
  int i;
  const char *rounds = getenv("ZT_THREAD_ROUNDS");
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  if ((getenv("ZT_TEST_UNDER") != NULL && strcmp(getenv("ZT_TEST_UNDER"), "valgrind") == 0) ||
      (getenv("LD_PRELOAD") != NULL && strstr(getenv("LD_PRELOAD"), "vgpreload") != NULL)) {
    ROUNDS = 1;
  }
  if (rounds != NULL && atoi(rounds) > 0) {
    ROUNDS = atoi(rounds);
  }
  make_objects();
  if (write_file("threads.zt")) {
    /* a mapped file */
    if (CHECK_OK(zt_open("threads.zt", &r))) {
      run_threads(r, 1, "mmap");
      zt_close(r);
    }
    /* pread: every view is a decoded copy, raced for too */
    memset(&o, 0, sizeof o);
    o.flags = ZT_OPEN_NO_MMAP;
    if (CHECK_OK(zt_open_with("threads.zt", &o, &r))) {
      run_threads(r, 0, "pread");
      zt_close(r);
    }
  }
  for (i = 0; i < N_OBJECTS; i++) {
    free(OBJ[i].data);
    free(OBJ[i].as);
  }
  return zt_test_summary();
}
