/*
 * A fake CUDA driver (libcuda's driver API, the functions the CUDA backend loads) over
 * host memory, for testing the backend where there is no GPU: device pointers are host
 * pointers, async copies are carried out in order by a thread of the fake's after a short
 * delay, events are positions in that order. Every call that needs a context checks that
 * one is current on the calling thread (pushed and not popped), as the real driver does,
 * so the backend's push/pop discipline is tested too. test_device_load loads it with
 * zt_cuda_create_with(library = its path); fake_cuda_counts() tells the test what it did.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
enum {
  OK = 0,
  ERR_INVALID_VALUE = 1,
  ERR_OUT_OF_MEMORY = 2,
  ERR_INVALID_CONTEXT = 201,
  ERR_INVALID_HANDLE = 400,
  ERR_NOT_READY = 600
};

typedef struct copy_op {
  unsigned char *dst;
  const unsigned char *src;
  size_t len;
} copy_op;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static copy_op *ops;
static size_t ops_head, ops_tail, ops_cap;
static uint64_t issued, completed;
static int worker_started;
static pthread_t worker;
static int context_token;
static __thread int current_depth;
static long counts[8]; /* retains, releases, host allocs, host frees, copies, events, streams made, bad contexts */

/* What the fake saw: counts[0..7] as above. */
void fake_cuda_counts(long out[8]) {
  pthread_mutex_lock(&lock);
  memcpy(out, counts, sizeof counts);
  pthread_mutex_unlock(&lock);
}

static void *run_copies(void *arg) {
  unsigned seed = 12345;
  (void)arg;
  for (;;) {
    copy_op op;
    struct timespec pause = {0, 0};
    pthread_mutex_lock(&lock);
    while (ops_head == ops_tail) pthread_cond_wait(&cv, &lock);
    op = ops[ops_head++];
    pthread_mutex_unlock(&lock);
    seed = seed * 1103515245u + 12345u;
    pause.tv_nsec = (long)((seed >> 8) % 100) * 1000;
    nanosleep(&pause, NULL);
    memcpy(op.dst, op.src, op.len);
    pthread_mutex_lock(&lock);
    completed++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
  }
  return NULL;
}

static CUresult need_context(void) {
  if (current_depth > 0) return OK;
  pthread_mutex_lock(&lock);
  counts[7]++;
  pthread_mutex_unlock(&lock);
  return ERR_INVALID_CONTEXT;
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  pthread_mutex_lock(&lock);
  if (!worker_started) {
    worker_started = pthread_create(&worker, NULL, run_copies, NULL) == 0;
    if (worker_started) pthread_detach(worker);
  }
  pthread_mutex_unlock(&lock);
  return worker_started ? OK : ERR_OUT_OF_MEMORY;
}
CUresult cuDriverGetVersion(int *v) { *v = 12040; return OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }
CUresult cuDeviceGet(int *d, int ordinal) { if (ordinal != 0) return ERR_INVALID_VALUE; *d = 0; return OK; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  (void)dev;
  *ctx = &context_token;
  pthread_mutex_lock(&lock);
  counts[0]++;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  pthread_mutex_lock(&lock);
  counts[1]++;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuCtxPushCurrent_v2(void *ctx) { if (ctx != &context_token) return ERR_INVALID_CONTEXT; current_depth++; return OK; }
CUresult cuCtxPopCurrent_v2(void **ctx) {
  if (current_depth == 0) return ERR_INVALID_CONTEXT;
  current_depth--;
  if (ctx) *ctx = &context_token;
  return OK;
}
static CUresult host_alloc(void **p, size_t size) {
  CUresult r = need_context();
  if (r != OK) return r;
  *p = malloc(size);
  if (*p == NULL) return ERR_OUT_OF_MEMORY;
  pthread_mutex_lock(&lock);
  counts[2]++;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuMemHostAlloc(void **p, size_t size, unsigned flags) { (void)flags; return host_alloc(p, size); }
CUresult cuMemFreeHost(void *p) {
  CUresult r = need_context();
  if (r != OK) return r;
  free(p);
  pthread_mutex_lock(&lock);
  counts[3]++;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags) { (void)p; (void)size; (void)flags; return need_context(); }
CUresult cuMemHostUnregister(void *p) { (void)p; return need_context(); }
CUresult cuMemAlloc_v2(uint64_t *dptr, size_t size) {
  void *p;
  CUresult r = need_context();
  if (r != OK) return r;
  p = calloc(1, size);
  if (p == NULL) return ERR_OUT_OF_MEMORY;
  *dptr = (uint64_t)(uintptr_t)p;
  return OK;
}
CUresult cuMemFree_v2(uint64_t dptr) {
  CUresult r = need_context();
  if (r != OK) return r;
  free((void *)(uintptr_t)dptr);
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t len, void *stream) {
  CUresult r = need_context();
  (void)stream;
  if (r != OK) return r;
  pthread_mutex_lock(&lock);
  if (ops_tail == ops_cap) {
    size_t cap = ops_cap ? ops_cap * 2 : 64;
    copy_op *grown = (copy_op *)realloc(ops, cap * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&lock);
      return ERR_OUT_OF_MEMORY;
    }
    ops = grown;
    ops_cap = cap;
  }
  ops[ops_tail].dst = (unsigned char *)(uintptr_t)dst;
  ops[ops_tail].src = (const unsigned char *)src;
  ops[ops_tail].len = len;
  ops_tail++;
  issued++;
  counts[4]++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&lock);
  return OK;
}
static void wait_for(uint64_t target) {
  pthread_mutex_lock(&lock);
  while (completed < target) pthread_cond_wait(&cv, &lock);
  pthread_mutex_unlock(&lock);
}
CUresult cuStreamSynchronize(void *stream) {
  uint64_t target;
  CUresult r = need_context();
  (void)stream;
  if (r != OK) return r;
  pthread_mutex_lock(&lock);
  target = issued;
  pthread_mutex_unlock(&lock);
  wait_for(target);
  return OK;
}
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t len) {
  CUresult r = cuStreamSynchronize(NULL);
  if (r != OK) return r;
  memcpy(dst, (const void *)(uintptr_t)src, len);
  return OK;
}
CUresult cuStreamCreate(void **s, unsigned flags) {
  static int stream_token;
  CUresult r = need_context();
  (void)flags;
  if (r != OK) return r;
  *s = &stream_token;
  pthread_mutex_lock(&lock);
  counts[6]++;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuStreamDestroy_v2(void *s) { (void)s; return need_context(); }
CUresult cuEventCreate(void **e, unsigned flags) {
  CUresult r = need_context();
  (void)flags;
  if (r != OK) return r;
  *e = calloc(1, sizeof(uint64_t));
  if (*e == NULL) return ERR_OUT_OF_MEMORY;
  pthread_mutex_lock(&lock);
  counts[5]++;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuEventDestroy_v2(void *e) {
  CUresult r = need_context();
  if (r != OK) return r;
  free(e);
  pthread_mutex_lock(&lock);
  counts[5]--;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuEventRecord(void *e, void *stream) {
  CUresult r = need_context();
  (void)stream;
  if (r != OK) return r;
  pthread_mutex_lock(&lock);
  *(uint64_t *)e = issued;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuEventQuery(void *e) {
  CUresult r = need_context();
  int done;
  if (r != OK) return r;
  pthread_mutex_lock(&lock);
  done = completed >= *(uint64_t *)e;
  pthread_mutex_unlock(&lock);
  return done ? OK : ERR_NOT_READY;
}
CUresult cuEventSynchronize(void *e) {
  uint64_t target;
  CUresult r = need_context();
  if (r != OK) return r;
  pthread_mutex_lock(&lock);
  target = *(uint64_t *)e;
  pthread_mutex_unlock(&lock);
  wait_for(target);
  return OK;
}
CUresult cuGetErrorName(CUresult code, const char **name) {
  switch (code) {
    case ERR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
    case ERR_NOT_READY: *name = "CUDA_ERROR_NOT_READY"; return OK;
    default: *name = "CUDA_ERROR_UNKNOWN"; return OK;
  }
}
