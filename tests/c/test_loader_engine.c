/*
 * test_loader_engine: the loader's host engine and its edges, from C (issues 35, 36, 39,
 * 40): every read mode (automatic, mapped, pread, O_DIRECT) lands the same bytes, with
 * neighbouring tensors read in one read; ranges (ZT_SLICE_RANGE); the exact size of a
 * request (zt_loader_get_request_size); the memory budget; loads on a shared loader
 * queued (or refused with ZT_LOADER_NO_QUEUE); zt_loader_free during a load (from another
 * thread: it waits; from a callback: the loader goes when the load returns); staging
 * buffers retired after a failed event freed with the loader (ASan and valgrind see a
 * leak otherwise); struct sizes past any version refused without being read; a device
 * destination whose offset + size overflows refused before any copy.
 */
#define _GNU_SOURCE 1 /* O_DIRECT */
#include "zt_test.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define SMALL 300  /* 256-byte tensors, adjacent in the file */
#define BIG (3 << 20) /* values of one f32 tensor of 12 MiB */

static float small[SMALL][64];
static float *big_values;

static void write_model(const char *path) {
  zt_writer *w = NULL;
  char name[32];
  uint64_t shape[1] = {64}, big_shape[2] = {BIG / 1024, 1024};
  size_t i, k;
  for (i = 0; i < SMALL; i++)
    for (k = 0; k < 64; k++) small[i][k] = (float)(i * 64 + k) * 0.25f;
  big_values = (float *)malloc((size_t)BIG * sizeof(float));
  for (i = 0; i < (size_t)BIG; i++) big_values[i] = (float)(i % 4093) - 2000.5f;
  zt_writer_options wo;
  memset(&wo, 0, sizeof wo);
  /* Names in ascending order, "big" after every small one, so that small tensor i is
     object i and "big" object SMALL in every version's listing (v2 lists by name). v1.2:
     its 64-byte alignment keeps the 256-byte tensors adjacent in the file, which the
     read count below relies on (a local file's reads merge adjacent pieces only; v2
     places blobs at least 4 KiB apart). */
  wo.flags = ZT_WRITER_V1_2;
  CHECK_OK(zt_writer_create_with(path, &wo, &w));
  for (i = 0; i < SMALL; i++) {
    snprintf(name, sizeof name, "a.%03zu", i);
    CHECK_OK(zt_writer_add(w, name, ZT_F32, shape, 1, small[i], sizeof small[i], NULL));
  }
  CHECK_OK(zt_writer_add(w, "big", ZT_F32, big_shape, 2, big_values, (size_t)BIG * sizeof(float), NULL));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

static zt_loader_request host_request(size_t object, void *dst, uint64_t size) {
  zt_loader_request q;
  memset(&q, 0, sizeof q);
  q.object = object;
  q.dst = dst;
  q.dst_size = size;
  q.flags = ZT_LOAD_HOST;
  return q;
}

/* 1 when this directory's filesystem takes O_DIRECT reads. */
static int direct_works(const char *path) {
  static char buf[8192] __attribute__((aligned(4096)));
  int fd = open(path, O_RDONLY | O_DIRECT);
  ssize_t n;
  if (fd < 0) return 0;
  n = pread(fd, buf, 4096, 0);
  close(fd);
  return n > 0;
}

/* Every tensor, host, in each read mode, mapped and not: the same bytes; the small
   neighbours read with few reads; O_DIRECT used where the filesystem allows it. */
static void every_mode_lands_the_same_bytes(const char *path) {
  uint32_t modes[4] = {ZT_IO_AUTO, ZT_IO_MMAP, ZT_IO_PREAD, ZT_IO_DIRECT};
  uint32_t open_flags[2] = {0, ZT_OPEN_NO_MMAP};
  size_t m, f, i, big;
  static float got_small[SMALL][64];
  float *got_big = (float *)malloc((size_t)BIG * sizeof(float));
  zt_loader_request *q = (zt_loader_request *)calloc(SMALL + 1, sizeof *q);
  int direct = direct_works(path);
  for (f = 0; f < 2; f++) {
    zt_open_options oo;
    zt_reader *r = NULL;
    memset(&oo, 0, sizeof oo);
    oo.flags = open_flags[f];
    CHECK_OK(zt_open_with(path, &oo, &r));
    CHECK_OK(zt_object_find(r, "big", &big));
    for (m = 0; m < 4; m++) {
      zt_loader_options o;
      zt_loader *l = NULL;
      zt_loader_stats st;
      memset(&o, 0, sizeof o);
      o.io = modes[m];
      CHECK_OK(zt_loader_create_with(NULL, &o, &l));
      memset(got_small, 0, sizeof got_small);
      memset(got_big, 0, (size_t)BIG * sizeof(float));
      for (i = 0; i < SMALL; i++) q[i] = host_request(i, got_small[i], sizeof got_small[i]);
      q[SMALL] = host_request(big, got_big, (uint64_t)BIG * sizeof(float));
      CHECK_OK(zt_loader_load(l, r, q, SMALL + 1));
      CHECK_MEM(got_small, small, sizeof small);
      CHECK_MEM(got_big, big_values, (size_t)BIG * sizeof(float));
      CHECK_OK(zt_loader_get_stats(l, &st));
      if (modes[m] == ZT_IO_PREAD || (modes[m] == ZT_IO_MMAP && f == 1)) {
        /* The 12 MiB tensor in the 64 chunks of a load's progress steps, the 300
           neighbours in a few reads: not one per tensor. */
        CHECK(st.reads >= 64 && st.reads <= 72);
      }
      if (modes[m] == ZT_IO_DIRECT) {
        CHECK(direct ? st.direct_io_reads >= 1 : st.direct_io_reads == 0);
      } else {
        CHECK_U64(st.direct_io_reads, 0);
      }
      CHECK(st.peak_bytes_in_flight <= st.max_bytes_in_flight);
      zt_loader_free(l);
    }
    zt_close(r);
  }
  {
    zt_loader_options o;
    zt_loader *l = NULL;
    memset(&o, 0, sizeof o);
    o.io = 4;
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(NULL, &o, &l));
    CHECK(l == NULL);
  }
  free(q);
  free(got_big);
}

/* Ranges of bytes and of converted values, the sizes every kind of request fills, and
   requests the size helper refuses. */
static void ranges_and_request_sizes(const char *path, const char *vectors) {
  zt_reader *r = NULL, *g = NULL;
  zt_loader *l = NULL;
  zt_loader_request q[2];
  size_t big;
  uint64_t size = 0;
  unsigned char bytes[1001];
  double values[100], want_values[100];
  char gguf[1200];
  zt_object_info info;
  size_t i;
  CHECK_OK(zt_open(path, &r));
  CHECK_OK(zt_object_find(r, "big", &big));
  CHECK_OK(zt_loader_create(&l));
  /* Bytes 4099.. (not whole floats), and values 777.. as f64. */
  q[0] = host_request(big, bytes, sizeof bytes);
  q[0].slice = ZT_SLICE_RANGE;
  q[0].first = 4099;
  q[0].count = sizeof bytes;
  q[1] = host_request(big, values, sizeof values);
  q[1].slice = ZT_SLICE_RANGE;
  q[1].first = 777;
  q[1].count = 100;
  q[1].flags |= ZT_LOAD_CONVERT;
  q[1].dtype = ZT_F64;
  CHECK_OK(zt_loader_load(l, r, q, 2));
  CHECK_MEM(bytes, (const unsigned char *)big_values + 4099, sizeof bytes);
  for (i = 0; i < 100; i++) want_values[i] = (double)big_values[777 + i];
  CHECK_MEM(values, want_values, sizeof values);
  /* Past the end: that request alone. */
  q[0].first = (uint64_t)BIG * 4 - 1000;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(l, r, q, 2));
  CHECK_U64(q[0].status, ZT_ERR_INVALID_ARGUMENT);
  CHECK_U64(q[1].status, ZT_OK);

  /* Sizes: whole, rows, columns, converted, ranges. */
  q[0] = host_request(big, NULL, 0);
  CHECK_OK(zt_loader_get_request_size(r, &q[0], &size));
  CHECK_U64(size, (uint64_t)BIG * 4);
  q[0].slice = ZT_SLICE_ROWS;
  q[0].first = 3;
  q[0].count = 5;
  CHECK_OK(zt_loader_get_request_size(r, &q[0], &size));
  CHECK_U64(size, 5 * 1024 * 4);
  q[0].slice = ZT_SLICE_COLUMNS;
  q[0].first = 100;
  q[0].count = 7;
  CHECK_OK(zt_loader_get_request_size(r, &q[0], &size));
  CHECK_U64(size, (uint64_t)(BIG / 1024) * 7 * 4);
  q[0].flags |= ZT_LOAD_CONVERT;
  q[0].dtype = ZT_BF16;
  CHECK_OK(zt_loader_get_request_size(r, &q[0], &size));
  CHECK_U64(size, (uint64_t)(BIG / 1024) * 7 * 2);
  q[0].slice = ZT_SLICE_RANGE;
  q[0].first = 10;
  q[0].count = 3;
  CHECK_OK(zt_loader_get_request_size(r, &q[0], &size));
  CHECK_U64(size, 3 * 2);
  q[0].flags = ZT_LOAD_HOST;
  CHECK_OK(zt_loader_get_request_size(r, &q[0], &size));
  CHECK_U64(size, 3);
  q[0].slice = ZT_SLICE_ROWS;
  q[0].first = BIG / 1024;
  q[0].count = 1;
  size = 77;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_get_request_size(r, &q[0], &size));
  CHECK_U64(size, 77);
  q[0].slice = 9;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_get_request_size(r, &q[0], &size));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_get_request_size(r, NULL, &size));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_get_request_size(r, &q[1], NULL));
  q[0] = host_request(SMALL + 5, NULL, 0);
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_loader_get_request_size(r, &q[0], &size));

  /* ggml blocks dequantized: the object's values as f32. */
  snprintf(gguf, sizeof gguf, "%s/dequant/dequant.gguf", vectors);
  CHECK_OK(zt_open(gguf, &g));
  CHECK_OK(zt_object_get_info(g, 0, &info));
  {
    uint64_t numel = 1;
    for (i = 0; i < info.ndim; i++) numel *= info.shape[i];
    q[0] = host_request(0, NULL, 0);
    q[0].flags |= ZT_LOAD_CONVERT;
    q[0].dtype = ZT_F32;
    CHECK_OK(zt_loader_get_request_size(g, &q[0], &size));
    CHECK_U64(size, numel * 4);
  }
  zt_close(g);
  zt_loader_free(l);
  zt_close(r);
}

/* --- a synchronous host "device" --------------------------------------------------- */

typedef struct sync_device {
  int fail_record; /* event_record fails */
  long alloc_calls, free_calls, copies;
} sync_device;

static int sd_copy(void *ctx, void *dst, uint64_t offset, const void *src, size_t size) {
  sync_device *d = (sync_device *)ctx;
  memcpy((unsigned char *)dst + offset, src, size);
  __atomic_add_fetch(&d->copies, 1, __ATOMIC_SEQ_CST);
  return 0;
}
static int sd_event_create(void *ctx, void **out) {
  (void)ctx;
  *out = malloc(1);
  return *out == NULL;
}
static int sd_event_destroy(void *ctx, void *e) {
  (void)ctx;
  free(e);
  return 0;
}
static int sd_event_record(void *ctx, void *e) {
  (void)e;
  return ((sync_device *)ctx)->fail_record ? 5 : 0;
}
static int sd_event_query(void *ctx, void *e, int *done) {
  (void)ctx;
  (void)e;
  *done = 1;
  return 0;
}
static int sd_host_alloc(void *ctx, size_t size, void **out) {
  sync_device *d = (sync_device *)ctx;
  *out = malloc(size);
  if (*out == NULL) return 1;
  __atomic_add_fetch(&d->alloc_calls, 1, __ATOMIC_SEQ_CST);
  return 0;
}
static int sd_host_free(void *ctx, void *p, size_t size) {
  sync_device *d = (sync_device *)ctx;
  (void)size;
  free(p);
  __atomic_add_fetch(&d->free_calls, 1, __ATOMIC_SEQ_CST);
  return 0;
}

static zt_device sync_device_of(sync_device *d, int allocates) {
  zt_device dev;
  memset(&dev, 0, sizeof dev);
  dev.struct_size = sizeof dev;
  dev.context = d;
  dev.copy_async = sd_copy;
  dev.event_create = sd_event_create;
  dev.event_destroy = sd_event_destroy;
  dev.event_record = sd_event_record;
  dev.event_query = sd_event_query;
  if (allocates) {
    dev.host_alloc = sd_host_alloc;
    dev.host_free = sd_host_free;
  }
  return dev;
}

/* struct_size: a size past any version is refused without reading the bytes it claims;
   zeros past ours up to the cap are fine, a set byte there is a newer header's field. */
static void struct_sizes_are_capped(void) {
  sync_device d;
  zt_device dev;
  zt_loader *l = NULL;
  zt_loader_options o;
  unsigned char bigger[ZT_STRUCT_SIZE_MAX + 64];
  memset(&d, 0, sizeof d);
  dev = sync_device_of(&d, 0);
  memset(&o, 0, sizeof o);
  o.struct_size = 0xFFFFFFFFu;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(NULL, &o, &l));
  CHECK_ERROR_MENTIONS("struct_size");
  CHECK(l == NULL);
  o.struct_size = ZT_STRUCT_SIZE_MAX + 1;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(NULL, &o, &l));
  dev.struct_size = 0xFFFFFFFFu;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&dev, NULL, &l));
  CHECK(l == NULL);
  /* The largest size allowed, zeros past our fields: accepted. */
  memset(bigger, 0, sizeof bigger);
  dev.struct_size = ZT_STRUCT_SIZE_MAX;
  memcpy(bigger, &dev, sizeof dev);
  CHECK_OK(zt_loader_create_with((const zt_device *)(const void *)bigger, NULL, &l));
  zt_loader_free(l);
  l = NULL;
  bigger[ZT_STRUCT_SIZE_MAX - 1] = 1;
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_loader_create_with((const zt_device *)(const void *)bigger, NULL, &l));
  CHECK(l == NULL);
}

/* A device destination whose offset + size wraps: refused, nothing copied. */
static void wrapping_destinations_are_refused(const char *path) {
  sync_device d;
  zt_device dev;
  zt_loader *l = NULL;
  zt_reader *r = NULL;
  zt_loader_request q;
  static unsigned char target[256];
  memset(&d, 0, sizeof d);
  dev = sync_device_of(&d, 0);
  CHECK_OK(zt_open(path, &r));
  CHECK_OK(zt_loader_create_with(&dev, NULL, &l));
  memset(&q, 0, sizeof q);
  q.object = 0;
  q.dst = target;
  q.dst_offset = UINT64_MAX - 100;
  q.dst_size = 256;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(l, r, &q, 1));
  CHECK_ERROR_MENTIONS("overflows");
  CHECK_U64(q.status, ZT_ERR_INVALID_ARGUMENT);
  CHECK_U64(q.bytes, 0);
  CHECK(d.copies == 0);
  /* The same request at offset 0 lands. */
  q.dst_offset = 0;
  CHECK_OK(zt_loader_load(l, r, &q, 1));
  CHECK_MEM(target, small[0], 256);
  zt_loader_free(l);
  zt_close(r);
}

/* Every event fails to record: the buffers are retired (the load fails with ZT_ERR_IO),
   and zt_loader_free frees them all the same: the device's host_free is called for each
   it allocated, and buffers the loader allocated are freed too (ASan and valgrind report
   them lost otherwise). */
static void retired_buffers_are_freed_with_the_loader(const char *path) {
  int allocates;
  for (allocates = 0; allocates < 2; allocates++) {
    sync_device d;
    zt_device dev;
    zt_loader *l = NULL;
    zt_reader *r = NULL;
    zt_loader_options o;
    zt_loader_request q[4];
    static unsigned char target[4][256];
    size_t i;
    memset(&d, 0, sizeof d);
    d.fail_record = 1;
    dev = sync_device_of(&d, allocates);
    memset(&o, 0, sizeof o);
    o.readers = 1;
    o.staging_count = 3;
    o.staging_size = 64 << 10;
    CHECK_OK(zt_open(path, &r));
    CHECK_OK(zt_loader_create_with(&dev, &o, &l));
    for (i = 0; i < 4; i++) {
      memset(&q[i], 0, sizeof q[i]);
      q[i].object = i;
      q[i].dst = target[i];
      q[i].dst_size = 256;
      /* Apart: one buffer each. */
      q[i].dst_offset = 0;
    }
    CHECK_STATUS(ZT_ERR_IO, zt_loader_load(l, r, q, 4));
    zt_loader_free(l);
    if (allocates) {
      CHECK(d.alloc_calls == 3);
      CHECK(d.free_calls == d.alloc_calls);
    }
    zt_close(r);
  }
}

/* --- loads that share a loader, and frees during a load ----------------------------- */

typedef struct shared {
  zt_loader *loader;
  zt_reader *reader;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  int first_in_callback, second_calling, first_done;
  int release; /* the first load's callback may go on */
  zt_status second_status;
  long completions;
  int free_in_callback;
  int order[2], orders;
  pthread_t second;
  int second_known;
  long first_completions, early_second; /* callbacks of the first load; of the second
                                             before the first's were all done */
} shared;

static void wait_for(shared *s, int *flag) {
  pthread_mutex_lock(&s->lock);
  while (!*flag) pthread_cond_wait(&s->cv, &s->lock);
  pthread_mutex_unlock(&s->lock);
}

static void set_flag(shared *s, int *flag) {
  pthread_mutex_lock(&s->lock);
  *flag = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
}

static void sleep_ms(int ms) {
  struct timespec t;
  t.tv_sec = 0;
  t.tv_nsec = (long)ms * 1000000L;
  nanosleep(&t, NULL);
}

/* The first load's on_complete: says it is inside, waits until released. */
static void blocking_complete(void *user, size_t request, zt_status status, uint64_t bytes) {
  shared *s = (shared *)user;
  (void)status;
  (void)bytes;
  __atomic_add_fetch(&s->completions, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&s->lock);
  if (s->second_known && pthread_equal(pthread_self(), s->second)) {
    if (s->first_completions != 4) s->early_second++;
  } else {
    s->first_completions++;
  }
  pthread_mutex_unlock(&s->lock);
  if (request == 0 && !(s->second_known && pthread_equal(pthread_self(), s->second))) {
    set_flag(s, &s->first_in_callback);
    wait_for(s, &s->release);
  }
  if (s->free_in_callback && request == 0) {
    /* From inside its own load: the loader goes when this load returns. */
    zt_loader_free(s->loader);
  }
}

static void load_small(shared *s, size_t first, size_t n, float (*dst)[64], zt_status *out) {
  zt_loader_request q[8];
  size_t i;
  for (i = 0; i < n; i++) q[i] = host_request(first + i, dst[i], sizeof dst[i]);
  *out = zt_loader_load(s->loader, s->reader, q, n);
}

static void *second_load(void *arg) {
  shared *s = (shared *)arg;
  static float dst[4][64];
  wait_for(s, &s->first_in_callback);
  pthread_mutex_lock(&s->lock);
  s->second = pthread_self();
  s->second_known = 1;
  pthread_mutex_unlock(&s->lock);
  set_flag(s, &s->second_calling);
  load_small(s, 10, 4, dst, &s->second_status);
  pthread_mutex_lock(&s->lock);
  s->order[s->orders++] = 2;
  pthread_mutex_unlock(&s->lock);
  if (s->second_status == ZT_OK) CHECK_MEM(dst, small[10], sizeof dst);
  return NULL;
}

static void *first_load(void *arg) {
  shared *s = (shared *)arg;
  static float dst[4][64];
  zt_status st;
  load_small(s, 0, 4, dst, &st);
  CHECK_U64(st, ZT_OK);
  CHECK_MEM(dst, small[0], sizeof dst);
  pthread_mutex_lock(&s->lock);
  s->order[s->orders++] = 1;
  pthread_mutex_unlock(&s->lock);
  set_flag(s, &s->first_done);
  return NULL;
}

static void shared_init(shared *s, zt_reader *r, uint32_t flags) {
  zt_loader_options o;
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->reader = r;
  memset(&o, 0, sizeof o);
  o.flags = flags;
  o.readers = 1;
  o.on_complete = blocking_complete;
  o.user = s;
  CHECK_OK(zt_loader_create_with(NULL, &o, &s->loader));
}

static void shared_destroy(shared *s) {
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cv);
}

/* Two threads, one loader: the second load waits for the first, then runs; with
   ZT_LOADER_NO_QUEUE it is refused at once. */
static void a_second_load_waits_its_turn(zt_reader *r) {
  int queue;
  for (queue = 1; queue >= 0; queue--) {
    shared s;
    pthread_t a, b;
    shared_init(&s, r, queue ? 0u : ZT_LOADER_NO_QUEUE);
    pthread_create(&a, NULL, first_load, &s);
    pthread_create(&b, NULL, second_load, &s);
    wait_for(&s, &s.second_calling);
    if (!queue) {
      /* Refused at once, while the first waits in its callback. */
      pthread_join(b, NULL);
      CHECK_U64(s.second_status, ZT_ERR_STATE);
    } else {
      sleep_ms(30); /* the second is in zt_loader_load, waiting */
      CHECK(s.orders == 0);
    }
    set_flag(&s, &s.release);
    pthread_join(a, NULL);
    if (queue) {
      pthread_join(b, NULL);
      CHECK_U64(s.second_status, ZT_OK);
      /* The second ran after the first: none of its requests ended before the first's
         four (one reader: a load's callbacks run on its calling thread). */
      CHECK(s.orders == 2);
      CHECK(s.completions == 8);
      CHECK(s.first_completions == 4);
      CHECK(s.early_second == 0);
    }
    zt_loader_free(s.loader);
    shared_destroy(&s);
  }
}

/* zt_loader_free from another thread while a load runs: waits for the load's end (every
   callback done, then freed); from the load's own callback: the load goes on, the loader
   is freed when it returns. Never a crash (ASan, valgrind). */
static void *release_later(void *arg) {
  shared *s = (shared *)arg;
  sleep_ms(30);
  set_flag(s, &s->release);
  return NULL;
}

static void freeing_during_a_load(zt_reader *r) {
  shared s;
  pthread_t a, releaser;
  shared_init(&s, r, 0);
  pthread_create(&a, NULL, first_load, &s);
  wait_for(&s, &s.first_in_callback);
  /* The load is held in its callback; it goes on in 30 ms, while this free waits. */
  pthread_create(&releaser, NULL, release_later, &s);
  zt_loader_free(s.loader);
  /* Free returned: the load had ended, every callback of it run. */
  CHECK(s.release == 1);
  CHECK(s.completions == 4);
  pthread_join(a, NULL);
  pthread_join(releaser, NULL);
  shared_destroy(&s);

  shared_init(&s, r, 0);
  s.free_in_callback = 1;
  s.release = 1;
  {
    static float dst[4][64];
    zt_status st;
    load_small(&s, 20, 4, dst, &st);
    CHECK_U64(st, ZT_OK);
    CHECK_MEM(dst, small[20], sizeof dst);
  }
  CHECK(s.completions == 4);
  shared_destroy(&s);
}

/* The budget: too small for the staging buffers is refused; a host load converting a
   12 MiB tensor under a 2 MiB budget works, its peak within the budget. */
static void the_budget_holds(const char *path) {
  sync_device d;
  zt_device dev;
  zt_loader *l = NULL;
  zt_loader_options o;
  zt_loader_stats st;
  zt_loader_request q;
  zt_open_options oo;
  zt_reader *r = NULL;
  size_t big, i;
  double *got = (double *)malloc((size_t)BIG * sizeof(double));
  int same = 1;
  memset(&d, 0, sizeof d);
  dev = sync_device_of(&d, 0);
  memset(&o, 0, sizeof o);
  o.staging_count = 4;
  o.staging_size = 1 << 20;
  o.max_bytes_in_flight = 3 << 20;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&dev, &o, &l));
  CHECK_ERROR_MENTIONS("max_bytes_in_flight");
  memset(&o, 0, sizeof o);
  o.max_bytes_in_flight = 2 << 20;
  o.readers = 2;
  CHECK_OK(zt_loader_create_with(NULL, &o, &l));
  /* Read with pread: every chunk to convert goes through a task's scratch. */
  memset(&oo, 0, sizeof oo);
  oo.flags = ZT_OPEN_NO_MMAP;
  CHECK_OK(zt_open_with(path, &oo, &r));
  CHECK_OK(zt_object_find(r, "big", &big));
  q = host_request(big, got, (uint64_t)BIG * sizeof(double));
  q.flags |= ZT_LOAD_CONVERT;
  q.dtype = ZT_F64;
  CHECK_OK(zt_loader_load(l, r, &q, 1));
  for (i = 0; i < (size_t)BIG && same; i++) same = got[i] == (double)big_values[i];
  CHECK(same);
  CHECK_OK(zt_loader_get_stats(l, &st));
  CHECK_U64(st.max_bytes_in_flight, 2 << 20);
  CHECK(st.peak_bytes_in_flight > 0 && st.peak_bytes_in_flight <= st.max_bytes_in_flight);
  zt_loader_free(l);
  zt_close(r);
  free(got);
}

int main(int argc, char **argv) {
  const char *vectors = argc > 1 ? argv[1] : "tests/vectors";
  const char *path = "loader_engine.zt";
  zt_reader *r = NULL;
  write_model(path);
  every_mode_lands_the_same_bytes(path);
  ranges_and_request_sizes(path, vectors);
  struct_sizes_are_capped();
  wrapping_destinations_are_refused(path);
  retired_buffers_are_freed_with_the_loader(path);
  CHECK_OK(zt_open(path, &r));
  a_second_load_waits_its_turn(r);
  freeing_during_a_load(r);
  zt_close(r);
  the_budget_holds(path);
  free(big_values);
  remove(path);
  return zt_test_summary();
}
