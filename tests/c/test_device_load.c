/*
 * test_device_load: the staged loader (zt_loader_*) from C, against a host "device" made
 * of callbacks (zt_device): its memory is a malloc'd block, its async copies are carried
 * out by a thread of its own after random delays, and some calls fail on purpose. It
 * checks what the loader promises: every byte right (whole tensors, row and column slices
 * of every dtype width, conversions, quantized rows); every completion exactly once and
 * only after its bytes landed; no staging byte changed while a copy out of it is pending
 * (hashed when the copy is issued and again when it runs); never two serialized callbacks
 * at once; cancellation and errors clean (nothing in flight when the load returns);
 * digests checked; staging memory as the options say. Then the CUDA backend: a clear
 * ZT_ERR_UNSUPPORTED where there is no driver, and a whole load through it against a fake
 * driver (tests/c/fake_cuda.c) when the build gives its path (ZT_FAKE_CUDA).
 */
#define _GNU_SOURCE 1
#include "zt_test.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

/* --- the host device ---------------------------------------------------------------- */

typedef struct op {
  unsigned char *dst;
  const unsigned char *src;
  size_t len;
  uint64_t hash;
} op;

typedef struct host_device {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  op *ops;
  size_t head, tail, cap;
  uint64_t issued, completed;
  int stop;
  pthread_t worker;
  unsigned char *memory;
  size_t size;
  uint64_t targets[64];
  size_t events;
  unsigned rng;
  int fail_copy, fail_query; /* per 1000 */
  int max_delay_us;
  size_t pending, peak_pending;
  long allocated, freed, alloc_calls, free_calls;
  long violations;
  int in_call;
  long direct_reads;
  long registered, unregistered;
} host_device;

static uint64_t fnv(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static unsigned next_rand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return *s >> 8;
}

static void *run_copies(void *arg) {
  host_device *d = (host_device *)arg;
  unsigned seed = 777;
  for (;;) {
    op o;
    struct timespec pause = {0, 0};
    pthread_mutex_lock(&d->lock);
    while (d->head == d->tail && !d->stop) pthread_cond_wait(&d->cv, &d->lock);
    if (d->head == d->tail) {
      pthread_mutex_unlock(&d->lock);
      return NULL;
    }
    o = d->ops[d->head++];
    pthread_mutex_unlock(&d->lock);
    if (d->max_delay_us > 0) {
      pause.tv_nsec = (long)(next_rand(&seed) % (unsigned)d->max_delay_us) * 1000;
      nanosleep(&pause, NULL);
    }
    if (fnv(o.src, o.len) != o.hash) {
      pthread_mutex_lock(&d->lock);
      d->violations++;
      pthread_mutex_unlock(&d->lock);
    }
    memcpy(o.dst, o.src, o.len);
    pthread_mutex_lock(&d->lock);
    d->completed++;
    d->pending -= o.len;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->lock);
  }
}

static void device_start(host_device *d, size_t size, int fail_copy, int fail_query, int max_delay_us) {
  memset(d, 0, sizeof *d);
  pthread_mutex_init(&d->lock, NULL);
  pthread_cond_init(&d->cv, NULL);
  d->memory = (unsigned char *)malloc(size);
  memset(d->memory, 0xEE, size);
  d->size = size;
  d->rng = 4242;
  d->fail_copy = fail_copy;
  d->fail_query = fail_query;
  d->max_delay_us = max_delay_us;
  pthread_create(&d->worker, NULL, run_copies, d);
}

static int device_idle(host_device *d) {
  int idle;
  pthread_mutex_lock(&d->lock);
  idle = d->head == d->tail && d->completed == d->issued;
  pthread_mutex_unlock(&d->lock);
  return idle;
}

static void device_stop(host_device *d) {
  pthread_mutex_lock(&d->lock);
  d->stop = 1;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->lock);
  pthread_join(d->worker, NULL);
  free(d->ops);
  free(d->memory);
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->lock);
}

/* Serialized callbacks count themselves in and out: two at once is a violation. */
static void enter(host_device *d) {
  pthread_mutex_lock(&d->lock);
  if (++d->in_call > 1) d->violations++;
  pthread_mutex_unlock(&d->lock);
}
static void leave(host_device *d) {
  pthread_mutex_lock(&d->lock);
  d->in_call--;
  pthread_mutex_unlock(&d->lock);
}

static int roll(host_device *d, int per_thousand) {
  return per_thousand > 0 && (int)(next_rand(&d->rng) % 1000) < per_thousand;
}

static int hd_host_alloc(void *ctx, size_t size, void **out) {
  host_device *d = (host_device *)ctx;
  enter(d);
  *out = malloc(size);
  d->allocated += (long)size;
  d->alloc_calls++;
  leave(d);
  return *out ? 0 : 12;
}
static int hd_host_free(void *ctx, void *p, size_t size) {
  host_device *d = (host_device *)ctx;
  enter(d);
  free(p);
  d->freed += (long)size;
  d->free_calls++;
  leave(d);
  return 0;
}
static int hd_host_register(void *ctx, void *p, size_t size) {
  host_device *d = (host_device *)ctx;
  enter(d);
  d->registered += p != NULL && size > 0;
  leave(d);
  return 0;
}
static int hd_host_unregister(void *ctx, void *p) {
  host_device *d = (host_device *)ctx;
  enter(d);
  d->unregistered += p != NULL;
  leave(d);
  return 0;
}
static int hd_copy_async(void *ctx, void *dst, uint64_t offset, const void *src, size_t size) {
  host_device *d = (host_device *)ctx;
  unsigned char *to = (unsigned char *)dst + offset;
  int rc = 0;
  enter(d);
  if (roll(d, d->fail_copy)) {
    rc = 77;
  } else if (to < d->memory || to + size > d->memory + d->size) {
    d->violations++;
  } else {
    uint64_t h = fnv((const unsigned char *)src, size);
    pthread_mutex_lock(&d->lock);
    if (d->tail == d->cap) {
      d->cap = d->cap ? d->cap * 2 : 256;
      d->ops = (op *)realloc(d->ops, d->cap * sizeof *d->ops);
    }
    d->ops[d->tail].dst = to;
    d->ops[d->tail].src = (const unsigned char *)src;
    d->ops[d->tail].len = size;
    d->ops[d->tail].hash = h;
    d->tail++;
    d->issued++;
    d->pending += size;
    if (d->pending > d->peak_pending) d->peak_pending = d->pending;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->lock);
  }
  leave(d);
  return rc;
}
static int hd_event_create(void *ctx, void **out) {
  host_device *d = (host_device *)ctx;
  enter(d);
  if (d->events == 64) {
    leave(d);
    return 5;
  }
  *out = (void *)(uintptr_t)(++d->events);
  leave(d);
  return 0;
}
static int hd_event_destroy(void *ctx, void *e) {
  (void)ctx;
  (void)e;
  return 0;
}
static int hd_event_record(void *ctx, void *e) {
  host_device *d = (host_device *)ctx;
  enter(d);
  pthread_mutex_lock(&d->lock);
  d->targets[(uintptr_t)e - 1] = d->issued;
  pthread_mutex_unlock(&d->lock);
  leave(d);
  return 0;
}
static int hd_event_query(void *ctx, void *e, int *done) {
  host_device *d = (host_device *)ctx;
  int rc = 0;
  enter(d);
  pthread_mutex_lock(&d->lock);
  *done = d->completed >= d->targets[(uintptr_t)e - 1];
  pthread_mutex_unlock(&d->lock);
  if (*done && roll(d, d->fail_query)) rc = 78;
  leave(d);
  return rc;
}
static int hd_event_wait(void *ctx, void *e) {
  host_device *d = (host_device *)ctx;
  pthread_mutex_lock(&d->lock);
  while (d->completed < d->targets[(uintptr_t)e - 1]) pthread_cond_wait(&d->cv, &d->lock);
  pthread_mutex_unlock(&d->lock);
  return 0;
}
static int hd_read_direct(void *ctx, int fd, uint64_t file_offset, void *dst, uint64_t offset, size_t size,
                          int *handled) {
  host_device *d = (host_device *)ctx;
  unsigned char *to = (unsigned char *)dst + offset;
  ssize_t got = pread(fd, to, size, (off_t)file_offset);
  *handled = 1;
  pthread_mutex_lock(&d->lock);
  d->direct_reads++;
  pthread_mutex_unlock(&d->lock);
  return got == (ssize_t)size ? 0 : 9;
}
static const char *hd_error_string(void *ctx, int code) {
  (void)ctx;
  return code == 77 ? "injected copy failure" : code == 78 ? "injected event failure" : "host device error";
}

static zt_device device_of(host_device *d, int wait, int direct) {
  zt_device dev;
  memset(&dev, 0, sizeof dev);
  dev.struct_size = sizeof dev;
  dev.context = d;
  dev.host_alloc = hd_host_alloc;
  dev.host_free = hd_host_free;
  dev.copy_async = hd_copy_async;
  dev.event_create = hd_event_create;
  dev.event_destroy = hd_event_destroy;
  dev.event_record = hd_event_record;
  dev.event_query = hd_event_query;
  dev.event_wait = wait ? hd_event_wait : NULL;
  dev.read_direct = direct ? hd_read_direct : NULL;
  dev.error_string = hd_error_string;
  return dev;
}

/* --- the requests and what they should land ------------------------------------------ */

enum { MAX_REQUESTS = 128 };

typedef struct expectation {
  unsigned char *bytes;
  size_t size;
  unsigned char *where; /* in device memory or a host buffer */
} expectation;

typedef struct run {
  pthread_mutex_t lock;
  expectation want[MAX_REQUESTS];
  int calls[MAX_REQUESTS];
  uint32_t status[MAX_REQUESTS];
  long early;
  uint64_t last_progress;
  int backwards;
  uint64_t cancel_at;
  zt_loader *loader;
} run;

static void on_complete(void *user, size_t request, zt_status status, uint64_t bytes) {
  run *r = (run *)user;
  pthread_mutex_lock(&r->lock);
  if (request < MAX_REQUESTS) {
    r->calls[request]++;
    r->status[request] = (uint32_t)status;
    if (status == ZT_OK &&
        (bytes != r->want[request].size || memcmp(r->want[request].where, r->want[request].bytes, r->want[request].size) != 0)) {
      r->early++;
    }
  }
  pthread_mutex_unlock(&r->lock);
}

static void on_progress(void *user, uint64_t done, uint64_t total) {
  run *r = (run *)user;
  (void)total;
  pthread_mutex_lock(&r->lock);
  if (done < r->last_progress) r->backwards = 1;
  r->last_progress = done;
  pthread_mutex_unlock(&r->lock);
  if (r->cancel_at > 0 && done >= r->cancel_at) zt_loader_cancel(r->loader);
}

static void run_reset(run *r) {
  size_t i;
  for (i = 0; i < MAX_REQUESTS; i++) free(r->want[i].bytes);
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->lock, NULL);
}

static unsigned char *read_as(zt_reader *rd, size_t object, uint32_t dtype, size_t *size) {
  zt_object_info info;
  size_t width, numel = 1, d;
  unsigned char *out;
  zt_object_get_info(rd, object, &info);
  zt_dtype_get_size(dtype, &width);
  for (d = 0; d < info.ndim; d++) numel *= (size_t)info.shape[d];
  *size = numel * width;
  out = (unsigned char *)malloc(*size ? *size : 1);
  if (zt_component_read_as(rd, object, "data", dtype, out, *size) != ZT_OK) {
    free(out);
    return NULL;
  }
  return out;
}

/* The expected bytes of a request (whole, rows or columns of values as `dtype`). */
static unsigned char *expected(zt_reader *rd, const zt_loader_request *q, uint32_t dtype, size_t *size) {
  zt_object_info info;
  size_t all_size, width, rows, cols, i;
  unsigned char *all = read_as(rd, q->object, dtype, &all_size), *out;
  zt_object_get_info(rd, q->object, &info);
  zt_dtype_get_size(dtype, &width);
  if (q->slice == ZT_SLICE_WHOLE) {
    *size = all_size;
    return all;
  }
  rows = (size_t)info.shape[0];
  cols = all_size / width / rows;
  if (q->slice == ZT_SLICE_ROWS) {
    *size = (size_t)q->count * cols * width;
    out = (unsigned char *)malloc(*size);
    memcpy(out, all + (size_t)q->first * cols * width, *size);
  } else {
    *size = rows * (size_t)q->count * width;
    out = (unsigned char *)malloc(*size);
    for (i = 0; i < rows; i++)
      memcpy(out + i * (size_t)q->count * width, all + (i * cols + (size_t)q->first) * width,
             (size_t)q->count * width);
  }
  free(all);
  return out;
}

/* Adds a request for `object` to `q[*n]`, its expected bytes to the run, and places its
   destination at `*at` (device memory, or a fresh host buffer with ZT_LOAD_HOST). */
static void add(zt_reader *rd, run *r, zt_loader_request *q, size_t *n, size_t object, uint32_t slice,
                uint64_t first, uint64_t count, int convert, uint32_t dtype, unsigned char **at, int host) {
  zt_loader_request *x = &q[*n];
  zt_component_info ci;
  size_t size;
  memset(x, 0, sizeof *x);
  x->object = object;
  x->slice = slice;
  x->first = first;
  x->count = count;
  zt_component_get_info(rd, object, 0, &ci);
  if (convert) {
    x->flags |= ZT_LOAD_CONVERT;
    x->dtype = dtype;
  } else {
    dtype = ci.dtype;
  }
  r->want[*n].bytes = expected(rd, x, dtype, &size);
  r->want[*n].size = size;
  if (host) {
    x->flags |= ZT_LOAD_HOST;
    x->dst = malloc(size ? size : 1);
    memset(x->dst, 0xCD, size);
  } else {
    x->dst = *at;
    *at += size;
  }
  r->want[*n].where = (unsigned char *)x->dst;
  x->dst_size = size;
  (*n)++;
}

/* Every object whole, a range of rows, a range of columns; and some converted. */
static size_t plan(zt_reader *rd, run *r, zt_loader_request *q, unsigned char *base, int host) {
  size_t n = 0, o, count = zt_object_count(rd);
  unsigned char *at = base;
  for (o = 0; o < count; o++) {
    zt_object_info info;
    zt_object_get_info(rd, o, &info);
    add(rd, r, q, &n, o, ZT_SLICE_WHOLE, 0, 0, 0, 0, &at, host);
    add(rd, r, q, &n, o, ZT_SLICE_ROWS, info.shape[0] / 3, info.shape[0] / 2, 0, 0, &at, host);
    add(rd, r, q, &n, o, ZT_SLICE_COLUMNS, info.shape[1] / 5, info.shape[1] / 3, 0, 0, &at, host);
  }
  add(rd, r, q, &n, 3, ZT_SLICE_COLUMNS, 3, 20, 1, ZT_F32, &at, host);  /* bf16 -> f32 */
  add(rd, r, q, &n, 1, ZT_SLICE_WHOLE, 0, 0, 1, ZT_F64, &at, host);     /* f32 (zstd) -> f64 */
  add(rd, r, q, &n, 5, ZT_SLICE_ROWS, 2, 7, 1, ZT_I32, &at, host);      /* u16 -> i32 */
  return n;
}

static void free_host(zt_loader_request *q, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (q[i].flags & ZT_LOAD_HOST) free(q[i].dst);
}

static void check_landed(run *r, const zt_loader_request *q, size_t n, int allow_failures) {
  size_t i;
  for (i = 0; i < n; i++) {
    CHECK(r->calls[i] == 1);
    CHECK_U64(q[i].status, r->status[i]);
    if (q[i].status == ZT_OK) {
      CHECK_U64(q[i].bytes, r->want[i].size);
      CHECK_MEM(r->want[i].where, r->want[i].bytes, r->want[i].size);
    } else if (!allow_failures) {
      CHECK_U64(q[i].status, ZT_OK);
    }
  }
  CHECK(r->early == 0);
  CHECK(!r->backwards);
}

/* A model: [rows, cols] tensors of every dtype width, raw and zstd, and a large one. */
static void write_model(const char *path, int digest) {
  static const uint32_t dtypes[] = {ZT_F64, ZT_F32, ZT_F16, ZT_BF16, ZT_I8, ZT_U16, ZT_I32, ZT_U64};
  zt_writer *w = NULL;
  size_t i, k, b;
  CHECK_OK(zt_test_create_v12(path, &w));
  for (i = 0; i < 8; i++) {
    uint64_t shape[2] = {41 + 13 * i, 97 + 7 * i};
    size_t width, size;
    unsigned char *data;
    zt_write_options opts;
    char name[16];
    zt_dtype_get_size(dtypes[i], &width);
    size = (size_t)(shape[0] * shape[1]) * width;
    data = (unsigned char *)malloc(size);
    for (b = 0; b < size; b++) data[b] = (unsigned char)((b * 131 + i * 17) >> 2);
    if (dtypes[i] == ZT_F16 || dtypes[i] == ZT_BF16)
      for (b = 1; b < size; b += 2) data[b] &= 0x3f; /* finite values: conversions compare bit for bit */
    memset(&opts, 0, sizeof opts);
    opts.encoding = (i % 2) ? ZT_ENCODING_ZSTD : ZT_ENCODING_RAW;
    opts.digest = digest ? ZT_DIGEST_SHA256 : ZT_DIGEST_NONE;
    snprintf(name, sizeof name, "t%zu", i);
    CHECK_OK(zt_writer_add(w, name, dtypes[i], shape, 2, data, size, &opts));
    free(data);
  }
  {
    uint64_t shape[2] = {384, 512};
    float *big = (float *)malloc(384 * 512 * sizeof(float));
    zt_write_options opts;
    memset(&opts, 0, sizeof opts);
    opts.digest = digest ? ZT_DIGEST_SHA256 : ZT_DIGEST_NONE;
    for (k = 0; k < 384 * 512; k++) big[k] = (float)k * 0.5f;
    CHECK_OK(zt_writer_add(w, "big", ZT_F32, shape, 2, big, 384 * 512 * sizeof(float), &opts));
    free(big);
  }
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

static zt_loader_options options_for(run *r, uint32_t readers, uint32_t count) {
  zt_loader_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.readers = readers;
  o.staging_count = count;
  o.staging_size = 64 << 10;
  o.on_complete = on_complete;
  o.on_progress = on_progress;
  o.user = r;
  return o;
}

/* --- the tests ------------------------------------------------------------------------ */

static void every_byte_lands(zt_reader *rd) {
  static const struct {
    uint32_t readers, count;
    int wait, delay;
  } setups[] = {{1, 2, 0, 200}, {3, 4, 1, 300}, {0, 0, 1, 50}};
  size_t s;
  for (s = 0; s < sizeof setups / sizeof setups[0]; s++) {
    static run r;
    static zt_loader_request q[MAX_REQUESTS];
    host_device d;
    zt_device dev;
    zt_loader *l = NULL;
    zt_loader_options o;
    zt_loader_stats st;
    size_t n;
    run_reset(&r);
    device_start(&d, 16 << 20, 0, 0, setups[s].delay);
    dev = device_of(&d, setups[s].wait, 0);
    o = options_for(&r, setups[s].readers, setups[s].count);
    if (!CHECK_OK(zt_loader_create_with(&dev, &o, &l))) return;
    n = plan(rd, &r, q, d.memory + 128, 0);
    CHECK_OK(zt_loader_load(l, rd, q, n));
    CHECK(device_idle(&d));
    check_landed(&r, q, n, 0);
    {
      uint64_t total = 0;
      size_t i;
      for (i = 0; i < n; i++) total += r.want[i].size;
      CHECK_U64(r.last_progress, total); /* the last progress call counts every byte */
    }
    CHECK_OK(zt_loader_get_stats(l, &st));
    CHECK(st.pinned == 1);
    CHECK(st.peak_busy <= st.staging_count);
    CHECK(st.peak_scratch <= 64 << 10);
    CHECK(st.readers < st.staging_count);
    CHECK(d.peak_pending <= st.staging_count * (64 << 10));
    CHECK(d.allocated == (long)(st.staging_count * (64 << 10)));
    CHECK(d.violations == 0);
    zt_loader_free(l);
    CHECK(d.freed == d.allocated);
    device_stop(&d);
  }
}

static void host_destinations_match_a_batch(zt_reader *rd) {
  static run r;
  static zt_loader_request q[MAX_REQUESTS];
  zt_loader *l = NULL;
  zt_loader_options o;
  size_t n, i, count = zt_object_count(rd);
  run_reset(&r);
  o = options_for(&r, 2, 0);
  CHECK_OK(zt_loader_create_with(NULL, &o, &l));
  n = plan(rd, &r, q, NULL, 1);
  CHECK_OK(zt_loader_load(l, rd, q, n));
  check_landed(&r, q, n, 0);
  for (i = 0; i < count; i++) {
    zt_component_info ci;
    zt_load_request b;
    unsigned char *buf;
    zt_component_get_info(rd, i, 0, &ci);
    buf = (unsigned char *)malloc((size_t)ci.decoded_length);
    memset(&b, 0, sizeof b);
    b.object = i;
    b.dst = buf;
    b.dst_size = (size_t)ci.decoded_length;
    CHECK_OK(zt_batch_load(rd, &b, 1, NULL));
    CHECK_MEM(q[i * 3].dst, buf, (size_t)ci.decoded_length);
    free(buf);
  }
  /* A device destination on a host-only loader fails alone. */
  {
    zt_loader_request two[2];
    unsigned char small[8];
    memset(two, 0, sizeof two);
    two[0] = q[0];
    two[1].object = 0;
    two[1].dst = small;
    two[1].dst_size = sizeof small;
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(l, rd, two, 2));
    CHECK_CONTAINS(zt_last_error(), "request 1: ");
    CHECK_U64(two[0].status, ZT_OK);
    CHECK_U64(two[1].status, ZT_ERR_INVALID_ARGUMENT);
  }
  free_host(q, n);
  zt_loader_free(l);
}

static void quantized_rows(const char *vectors) {
  static run r;
  static zt_loader_request q[MAX_REQUESTS];
  char path[4096];
  zt_reader *rd = NULL;
  host_device d;
  zt_device dev;
  zt_loader *l = NULL;
  zt_loader_options o;
  size_t n = 0, i, count;
  unsigned char *at;
  snprintf(path, sizeof path, "%s/dequant/dequant.gguf", vectors);
  if (!CHECK_OK(zt_open(path, &rd))) return;
  run_reset(&r);
  device_start(&d, 4 << 20, 0, 0, 50);
  at = d.memory;
  dev = device_of(&d, 0, 0);
  o = options_for(&r, 2, 3);
  CHECK_OK(zt_loader_create_with(&dev, &o, &l));
  count = zt_object_count(rd);
  for (i = 0; i < count && n + 2 < MAX_REQUESTS; i++) {
    zt_quant_info qi;
    zt_object_info info;
    zt_loader_request *x;
    if (zt_object_get_quant_info(rd, i, &qi) != ZT_OK || !qi.dequantizable) continue;
    zt_object_get_info(rd, i, &info);
    /* Row 1, dequantized to f32. */
    x = &q[n];
    memset(x, 0, sizeof *x);
    x->object = i;
    x->slice = ZT_SLICE_ROWS;
    x->first = 1;
    x->count = 1;
    x->flags = ZT_LOAD_CONVERT;
    x->dtype = ZT_F32;
    x->dst = at;
    x->dst_size = (uint64_t)info.shape[1] * 4;
    r.want[n].size = (size_t)x->dst_size;
    r.want[n].bytes = (unsigned char *)malloc(r.want[n].size);
    r.want[n].where = at;
    CHECK_OK(zt_component_read_as_range(rd, i, "data", ZT_F32, info.shape[1], r.want[n].bytes, r.want[n].size));
    at += r.want[n].size;
    n++;
    /* Row 0 as its blocks. */
    x = &q[n];
    memset(x, 0, sizeof *x);
    x->object = i;
    x->slice = ZT_SLICE_ROWS;
    x->first = 0;
    x->count = 1;
    x->dst = at;
    x->dst_size = qi.row_size;
    r.want[n].size = (size_t)qi.row_size;
    r.want[n].bytes = (unsigned char *)malloc(r.want[n].size);
    r.want[n].where = at;
    CHECK_OK(zt_component_read_range(rd, i, "data", 0, r.want[n].bytes, r.want[n].size));
    at += r.want[n].size;
    n++;
  }
  CHECK(n > 40);
  CHECK_OK(zt_loader_load(l, rd, q, n));
  check_landed(&r, q, n, 0);
  CHECK(d.violations == 0);
  zt_loader_free(l);
  device_stop(&d);
  zt_close(rd);
}

static void failures_stay_with_their_requests(zt_reader *rd) {
  int seed, failed = 0, succeeded = 0;
  for (seed = 0; seed < 3; seed++) {
    static run r;
    static zt_loader_request q[MAX_REQUESTS];
    host_device d;
    zt_device dev;
    zt_loader *l = NULL;
    zt_loader_options o;
    size_t n, i;
    zt_status s;
    run_reset(&r);
    device_start(&d, 16 << 20, 40, 5, 80);
    d.rng = (unsigned)(seed * 7919 + 3);
    dev = device_of(&d, seed % 2, 0);
    o = options_for(&r, 3, 5);
    CHECK_OK(zt_loader_create_with(&dev, &o, &l));
    n = plan(rd, &r, q, d.memory, 0);
    s = zt_loader_load(l, rd, q, n);
    CHECK(s == ZT_OK || s == ZT_ERR_IO);
    CHECK(device_idle(&d));
    check_landed(&r, q, n, 1);
    for (i = 0; i < n; i++) {
      if (q[i].status == ZT_OK) {
        succeeded++;
      } else {
        failed++;
        CHECK_U64(q[i].status, ZT_ERR_IO);
        CHECK(q[i].bytes < r.want[i].size);
      }
    }
    CHECK(d.violations == 0);
    zt_loader_free(l);
    device_stop(&d);
  }
  CHECK(failed > 0);
  CHECK(succeeded > failed);
}

static void cancel_is_clean(zt_reader *rd) {
  static run r;
  static zt_loader_request q[MAX_REQUESTS];
  host_device d;
  zt_device dev;
  zt_loader *l = NULL;
  zt_loader_options o;
  size_t n, i, total = 0, cancelled = 0;
  run_reset(&r);
  device_start(&d, 16 << 20, 0, 0, 200);
  dev = device_of(&d, 1, 0);
  o = options_for(&r, 2, 3);
  CHECK_OK(zt_loader_create_with(&dev, &o, &l));
  n = plan(rd, &r, q, d.memory, 0);
  for (i = 0; i < n; i++) total += r.want[i].size;
  r.cancel_at = total / 4;
  r.loader = l;
  CHECK_STATUS(ZT_ERR_CANCELED, zt_loader_load(l, rd, q, n));
  CHECK(device_idle(&d));
  check_landed(&r, q, n, 1);
  for (i = 0; i < n; i++) {
    if (q[i].status != ZT_OK) {
      CHECK_U64(q[i].status, ZT_ERR_CANCELED);
      cancelled++;
    }
  }
  CHECK(cancelled > 0 && cancelled < n);
  /* A cancel before a load cancels that one; the next runs whole. */
  CHECK_OK(zt_loader_cancel(l));
  r.cancel_at = 0;
  CHECK_STATUS(ZT_ERR_CANCELED, zt_loader_load(l, rd, q, n));
  CHECK_U64(q[0].status, ZT_ERR_CANCELED);
  memset(r.calls, 0, sizeof r.calls);
  CHECK_OK(zt_loader_load(l, rd, q, n));
  CHECK(d.violations == 0);
  zt_loader_free(l);
  device_stop(&d);
}

static void digests_and_direct_reads(void) {
  static run r;
  static zt_loader_request q[MAX_REQUESTS];
  zt_reader *rd = NULL;
  host_device d;
  zt_device dev;
  zt_loader *l = NULL;
  zt_loader_options o;
  zt_loader_stats st;
  zt_component_info ci;
  size_t n, i, corrupt;
  FILE *f;
  write_model("digests.zt", 1);
  /* Corrupt a byte of tensor t2 (raw f16). */
  if (!CHECK_OK(zt_open("digests.zt", &rd))) return;
  CHECK_OK(zt_object_find(rd, "t2", &corrupt));
  CHECK_OK(zt_component_get_info(rd, corrupt, 0, &ci));
  zt_close(rd);
  f = fopen("digests.zt", "r+b");
  fseek(f, (long)ci.offset + 10, SEEK_SET);
  fputc(0x5A, f);
  fclose(f);
  CHECK_OK(zt_open("digests.zt", &rd));
  run_reset(&r);
  device_start(&d, 16 << 20, 0, 0, 30);
  dev = device_of(&d, 1, 1);
  o = options_for(&r, 3, 4);
  o.flags = ZT_LOADER_VERIFY;
  CHECK_OK(zt_loader_create_with(&dev, &o, &l));
  n = plan(rd, &r, q, d.memory, 0);
  /* t2's whole request computed its expected bytes from the corrupted file: it must fail. */
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_loader_load(l, rd, q, n));
  for (i = 0; i < n; i++) {
    CHECK(r.calls[i] == 1);
    if (q[i].object == corrupt) {
      CHECK_U64(q[i].status, ZT_ERR_CHECKSUM);
    } else {
      CHECK_U64(q[i].status, ZT_OK);
      CHECK_MEM(r.want[i].where, r.want[i].bytes, r.want[i].size);
    }
  }
  zt_loader_free(l);
  /* Without verification, raw rows go straight from the file to the device. */
  run_reset(&r);
  o = options_for(&r, 2, 3);
  CHECK_OK(zt_loader_create_with(&dev, &o, &l));
  n = plan(rd, &r, q, d.memory, 0);
  CHECK_OK(zt_loader_load(l, rd, q, n));
  check_landed(&r, q, n, 0);
  CHECK_OK(zt_loader_get_stats(l, &st));
  CHECK(st.direct_reads > 0);
  CHECK(d.direct_reads == (long)st.direct_reads);
  zt_loader_free(l);
  device_stop(&d);
  zt_close(rd);
}

static void caller_staging_is_registered(zt_reader *rd) {
  static run r;
  static zt_loader_request q[MAX_REQUESTS];
  host_device d;
  zt_device dev;
  zt_loader *l = NULL;
  zt_loader_options o;
  zt_loader_stats st;
  void *buffers[3];
  size_t n, k;
  run_reset(&r);
  device_start(&d, 16 << 20, 0, 0, 100);
  dev = device_of(&d, 1, 0);
  dev.host_alloc = NULL; /* the loader never allocates: the buffers are the caller's */
  dev.host_free = NULL;
  dev.host_register = hd_host_register;
  dev.host_unregister = hd_host_unregister;
  for (k = 0; k < 3; k++) buffers[k] = malloc(64 << 10);
  o = options_for(&r, 0, 3);
  o.staging = buffers;
  o.flags = ZT_LOADER_REGISTER_STAGING;
  if (!CHECK_OK(zt_loader_create_with(&dev, &o, &l))) return;
  CHECK(d.registered == 3);
  n = plan(rd, &r, q, d.memory, 0);
  CHECK_OK(zt_loader_load(l, rd, q, n));
  CHECK(device_idle(&d));
  check_landed(&r, q, n, 0);
  CHECK_OK(zt_loader_get_stats(l, &st));
  CHECK(st.pinned == 1);
  CHECK_U64(st.staging_count, 3);
  CHECK(st.readers <= 2); /* one buffer more than reader tasks */
  CHECK(d.peak_pending <= 3 * (64 << 10));
  CHECK(d.alloc_calls == 0);
  CHECK(d.violations == 0);
  zt_loader_free(l);
  CHECK(d.unregistered == 3);
  /* Not registered: the loader stages in them as they are (pageable). */
  o.flags = 0;
  CHECK_OK(zt_loader_create_with(&dev, &o, &l));
  CHECK_OK(zt_loader_get_stats(l, &st));
  CHECK(st.pinned == 0);
  zt_loader_free(l);
  CHECK(d.registered == 3 && d.unregistered == 3);
  /* A count that disagrees, a NULL buffer, buffers without a device. */
  free(buffers[2]);
  buffers[2] = NULL;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&dev, &o, &l));
  CHECK_ERROR_MENTIONS("staging buffer 2 is NULL");
  o.staging_count = 0;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&dev, &o, &l));
  o.staging_count = 3;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(NULL, &o, &l));
  for (k = 0; k < 2; k++) free(buffers[k]);
  device_stop(&d);
}

static void misuse_is_refused(zt_reader *rd) {
  host_device d;
  zt_device dev, bad;
  zt_loader *l = NULL;
  zt_loader_options o;
  unsigned char big[sizeof(zt_loader_options) + 8];
  zt_loader_request q;
  device_start(&d, 1 << 20, 0, 0, 0);
  dev = device_of(&d, 0, 0);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&dev, NULL, NULL));
  bad = dev;
  bad.copy_async = NULL;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&bad, NULL, &l));
  CHECK_ERROR_MENTIONS("copy_async");
  bad = dev;
  bad.flags = 0x80;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&bad, NULL, &l));
  memset(&o, 0, sizeof o);
  o.staging_size = 1000;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&dev, &o, &l));
  CHECK_ERROR_MENTIONS("65536");
  memset(&o, 0, sizeof o);
  o.staging_count = 1;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&dev, &o, &l));
  memset(&o, 0, sizeof o);
  o.flags = 0x100;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_create_with(&dev, &o, &l));
  /* A newer header's larger struct: zeros past our fields are fine, anything else not. */
  memset(big, 0, sizeof big);
  o.flags = 0;
  o.struct_size = sizeof big;
  memcpy(big, &o, sizeof o);
  CHECK_OK(zt_loader_create_with(&dev, (const zt_loader_options *)(void *)big, &l));
  zt_loader_free(l);
  big[sizeof o + 3] = 1;
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_loader_create_with(&dev, (const zt_loader_options *)(void *)big, &l));
  /* Load arguments. */
  CHECK_OK(zt_loader_create(&l));
  memset(&q, 0, sizeof q);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(NULL, rd, &q, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(l, NULL, &q, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(l, rd, NULL, 1));
  CHECK_OK(zt_loader_load(l, rd, NULL, 0));
  q.flags = ZT_LOAD_HOST | 1; /* ZT_LOAD_RANGE is zt_batch_load's, not the loader's */
  q.dst = big;
  q.dst_size = 8;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(l, rd, &q, 1));
  q.flags = ZT_LOAD_HOST;
  q.slice = 7;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(l, rd, &q, 1));
  q.slice = ZT_SLICE_COLUMNS;
  q.first = 90;
  q.count = 50;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_load(l, rd, &q, 1));
  CHECK_ERROR_MENTIONS("outside");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_cancel(NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_loader_get_stats(NULL, NULL));
  zt_loader_free(l);
  zt_loader_free(NULL);
  device_stop(&d);
}

typedef void (*counts_fn)(long out[8]);

static void the_cuda_backend(zt_reader *rd) {
  zt_cuda *cuda = NULL;
  zt_cuda_options co;
  zt_status s = zt_cuda_create(&cuda);
  if (s == ZT_OK) {
    printf("a CUDA driver and GPU are present: tests/gpu covers them\n");
    zt_cuda_free(cuda);
  } else {
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, s);
    CHECK_ERROR_MENTIONS("CUDA");
  }
  memset(&co, 0, sizeof co);
  co.struct_size = sizeof co;
  co.library = "/nonexistent/libcuda.so.1";
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_cuda_create_with(&co, &cuda));
  CHECK_ERROR_MENTIONS("/nonexistent/libcuda.so.1");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_cuda_get_device(NULL, NULL));
  zt_cuda_free(NULL);
#ifdef ZT_FAKE_CUDA
  {
    static run r;
    static zt_loader_request q[MAX_REQUESTS];
    zt_device dev;
    zt_loader *l = NULL;
    zt_loader_options o;
    zt_loader_stats st;
    void *mem = NULL, *lib;
    unsigned char *host;
    size_t n, i, total = 0;
    long before[8], after[8];
    counts_fn counts;
    /* Loaded here first, so that its counts before the backend opens are known. */
    lib = dlopen(ZT_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    counts = lib ? (counts_fn)(uintptr_t)dlsym(lib, "fake_cuda_counts") : NULL;
    if (!CHECK(counts != NULL)) return;
    counts(before);
    co.library = ZT_FAKE_CUDA;
    co.device = 1;
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_cuda_create_with(&co, &cuda));
    CHECK_ERROR_MENTIONS("CUDA device 1");
    co.device = 0;
    if (!CHECK_OK(zt_cuda_create_with(&co, &cuda))) return;
    CHECK_OK(zt_cuda_get_device(cuda, &dev));
    CHECK_OK(zt_cuda_alloc_memory(cuda, 16 << 20, &mem));
    run_reset(&r);
    o = options_for(&r, 3, 4);
    CHECK_OK(zt_loader_create_with(&dev, &o, &l));
    n = plan(rd, &r, q, (unsigned char *)mem, 0);
    CHECK_OK(zt_loader_load(l, rd, q, n));
    /* The fake's memory is host memory: the completion callback could check it; copy it
       back as a real program would, through the backend. */
    for (i = 0; i < n; i++) total += r.want[i].size;
    host = (unsigned char *)malloc(total);
    CHECK_OK(zt_cuda_copy_to_host(cuda, host, mem, total));
    check_landed(&r, q, n, 0);
    for (i = 0, total = 0; i < n; i++) {
      CHECK_MEM(host + total, r.want[i].bytes, r.want[i].size);
      total += r.want[i].size;
    }
    free(host);
    CHECK_OK(zt_loader_get_stats(l, &st));
    CHECK(st.pinned == 1);
    zt_loader_free(l);
    CHECK_OK(zt_cuda_synchronize(cuda));
    CHECK_OK(zt_cuda_free_memory(cuda, mem));
    zt_cuda_free(cuda);
    counts(after);
    CHECK(after[0] - before[0] == 1 && after[1] - before[1] == 1); /* context retained, released */
    CHECK(after[2] - before[2] == 4 && after[3] - before[3] == 4); /* pinned buffers made, freed */
    CHECK(after[4] > before[4]);                                   /* copies */
    CHECK(after[5] == before[5]);                                  /* every event destroyed */
    CHECK(after[7] == 0);                                          /* never without a context */
    dlclose(lib);
  }
#else
  printf("ZT_FAKE_CUDA not defined: the CUDA backend's load through a fake driver is skipped\n");
#endif
}

int main(int argc, char **argv) {
  zt_reader *rd = NULL;
  const char *vectors = argc > 1 ? argv[1] : "tests/vectors";
  write_model("model.zt", 0);
  if (!CHECK_OK(zt_open("model.zt", &rd))) return zt_test_summary();
  every_byte_lands(rd);
  host_destinations_match_a_batch(rd);
  quantized_rows(vectors);
  failures_stay_with_their_requests(rd);
  cancel_is_clean(rd);
  digests_and_direct_reads();
  caller_staging_is_registered(rd);
  misuse_is_refused(rd);
  the_cuda_backend(rd);
  zt_close(rd);
  {
    static run r;
    run_reset(&r);
  }
  return zt_test_summary();
}
