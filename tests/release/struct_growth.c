/*
 * The header's struct growth rules, held by the library a program runs with:
 *
 *   struct_growth <work dir>
 *
 * ctest builds this program twice, against the release's header (abi/ztensor.h, the
 * baseline) and against the current one, and runs both with the current library: a
 * program built against an older header must keep working. It uses only what the
 * release's header declares.
 *
 * - A struct with struct_size is read up to that size and no further: an "older"
 *   zt_loader_options or zt_device (struct_size cut before its last members, the bytes
 *   past it garbage) works, and the garbage is never used (a garbage callback called
 *   would crash).
 * - A larger struct_size (a newer header) is accepted when the bytes past the library's
 *   members are zero, refused with ZT_ERR_UNSUPPORTED when they aren't (checked built
 *   against the current header: past an older header's size lie members this library
 *   knows).
 * - zt_loader_options of the header's size (0 too) loads a tensor whole into host memory.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

static int failures;

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: failed: %s (%s)\n", __FILE__, __LINE__, #cond, \
              zt_last_error());                                              \
      failures++;                                                            \
    }                                                                        \
  } while (0)

/* A device whose memory is host memory; copies are done when copy_async returns. */
static int copies;
static int dev_copy(void *ctx, void *dst, uint64_t offset, const void *src, size_t size) {
  (void)ctx;
  memcpy((unsigned char *)dst + offset, src, size);
  copies++;
  return 0;
}
static int dev_event_create(void *ctx, void **out) {
  *out = ctx;
  return 0;
}
static int dev_event_destroy(void *ctx, void *e) {
  (void)ctx;
  (void)e;
  return 0;
}
static int dev_event_record(void *ctx, void *e) {
  (void)ctx;
  (void)e;
  return 0;
}
static int dev_event_query(void *ctx, void *e, int *done) {
  (void)ctx;
  (void)e;
  *done = 1;
  return 0;
}

static void fill_garbage(void *from, size_t n) { memset(from, 0xA5, n); }

int main(int argc, char **argv) {
  char path[4096];
  float values[64 * 32], got[64 * 32];
  const uint64_t shape[2] = {64, 32};
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_loader *l = NULL;
  size_t i, object;
  if (argc != 2) {
    fprintf(stderr, "usage: struct_growth <work dir>\n");
    return 2;
  }
  printf("built against ztensor.h %d.%d.%d, running with library %s\n", ZT_VERSION_MAJOR, ZT_VERSION_MINOR,
         ZT_VERSION_PATCH, zt_version());
  snprintf(path, sizeof path, "%s/growth.zt", argv[1]);
  for (i = 0; i < 64 * 32; i++) values[i] = (float)i * 0.5f;
  CHECK(zt_writer_create(path, &w) == ZT_OK);
  CHECK(zt_writer_add(w, "w", ZT_F32, shape, 2, values, sizeof values, NULL) == ZT_OK);
  CHECK(zt_writer_finish(w) == ZT_OK);
  zt_writer_free(w);
  if (zt_open(path, &r) != ZT_OK || zt_object_find(r, "w", &object) != ZT_OK) {
    fprintf(stderr, "struct_growth: %s\n", zt_last_error());
    return 1;
  }

  /* zt_loader_options as this header has it, and with struct_size 0. */
  {
    zt_loader_options o;
    zt_loader_request q;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    CHECK(zt_loader_create_with(NULL, &o, &l) == ZT_OK);
    memset(&q, 0, sizeof q);
    q.object = object;
    q.dst = got;
    q.dst_size = sizeof got;
    q.flags = ZT_LOAD_HOST;
    memset(got, 0, sizeof got);
    CHECK(zt_loader_load(l, r, &q, 1) == ZT_OK);
    CHECK(memcmp(got, values, sizeof got) == 0);
    zt_loader_free(l);
    l = NULL;
    o.struct_size = 0;
    CHECK(zt_loader_create_with(NULL, &o, &l) == ZT_OK);
    zt_loader_free(l);
    l = NULL;
  }

  /* An older zt_loader_options: it ends before `staging`; what follows is garbage. */
  {
    zt_loader_options o;
    zt_loader_request q;
    memset(&o, 0, sizeof o);
    fill_garbage((unsigned char *)&o + offsetof(zt_loader_options, staging),
                 sizeof o - offsetof(zt_loader_options, staging));
    o.struct_size = (uint32_t)offsetof(zt_loader_options, staging);
    CHECK(zt_loader_create_with(NULL, &o, &l) == ZT_OK);
    memset(&q, 0, sizeof q);
    q.object = object;
    q.dst = got;
    q.dst_size = sizeof got;
    q.flags = ZT_LOAD_HOST;
    memset(got, 0, sizeof got);
    CHECK(zt_loader_load(l, r, &q, 1) == ZT_OK); /* garbage on_complete never called */
    CHECK(memcmp(got, values, sizeof got) == 0);
    zt_loader_free(l);
    l = NULL;
  }

  /* A newer zt_loader_options: 16 bytes more, zero (accepted: a newer member's zero is
     its default) or set (refused). Built against an older header, the 16 bytes may be
     members this library knows, which take any value: only the current header's size is
     the library's (ZT_GROWTH_CURRENT_HEADER, set by the build of that variant). */
  {
    unsigned char bigger[sizeof(zt_loader_options) + 16];
    zt_loader_options o;
    memset(&o, 0, sizeof o);
    memset(bigger, 0, sizeof bigger);
    o.struct_size = (uint32_t)sizeof bigger;
    memcpy(bigger, &o, sizeof o);
    CHECK(zt_loader_create_with(NULL, (const zt_loader_options *)(void *)bigger, &l) == ZT_OK);
    zt_loader_free(l);
    l = NULL;
#ifdef ZT_GROWTH_CURRENT_HEADER
    bigger[sizeof(zt_loader_options) + 3] = 1;
    CHECK(zt_loader_create_with(NULL, (const zt_loader_options *)(void *)bigger, &l) == ZT_ERR_UNSUPPORTED);
    CHECK(l == NULL);
#endif
  }

  /* An older zt_device: it ends before read_direct; read_direct and error_string are
     garbage, and the loader must not call them. */
  {
    zt_device d;
    zt_loader_request q;
    static unsigned char device_memory[sizeof values];
    memset(&d, 0, sizeof d);
    fill_garbage((unsigned char *)&d + offsetof(zt_device, read_direct),
                 sizeof d - offsetof(zt_device, read_direct));
    d.struct_size = (uint32_t)offsetof(zt_device, read_direct);
    d.copy_async = dev_copy;
    d.event_create = dev_event_create;
    d.event_destroy = dev_event_destroy;
    d.event_record = dev_event_record;
    d.event_query = dev_event_query;
    CHECK(zt_loader_create_with(&d, NULL, &l) == ZT_OK);
    memset(&q, 0, sizeof q);
    q.object = object;
    q.dst = device_memory;
    q.dst_size = sizeof device_memory;
    CHECK(zt_loader_load(l, r, &q, 1) == ZT_OK); /* a raw whole tensor: read_direct's kind */
    CHECK(memcmp(device_memory, values, sizeof values) == 0);
    CHECK(copies > 0);
    zt_loader_free(l);
    l = NULL;
  }

  /* A newer zt_cuda_options with a member set: refused before any driver is looked for
     (current header only, as above). */
#ifdef ZT_GROWTH_CURRENT_HEADER
  {
    unsigned char bigger[sizeof(zt_cuda_options) + 8];
    zt_cuda_options c;
    zt_cuda *cuda = NULL;
    memset(&c, 0, sizeof c);
    c.struct_size = (uint32_t)sizeof bigger;
    memset(bigger, 0, sizeof bigger);
    memcpy(bigger, &c, sizeof c);
    bigger[sizeof(zt_cuda_options)] = 7;
    CHECK(zt_cuda_create_with((const zt_cuda_options *)(void *)bigger, &cuda) == ZT_ERR_UNSUPPORTED);
    CHECK(strstr(zt_last_error(), "doesn't know") != NULL);
    CHECK(cuda == NULL);
  }
#endif

  zt_close(r);
  remove(path);
  if (failures) {
    fprintf(stderr, "struct_growth: %d check(s) failed\n", failures);
    return 1;
  }
  printf("struct_growth: ok\n");
  return 0;
}
