/*
 * load_model: a llama.cpp-style loader over the zTensor C API.
 *
 *   load_model model.zt
 *   load_model model.zt.index.json      a sharded model (or model.safetensors.index.json,
 *                                        or any split of a GGUF split set)
 *
 * Opens the file or the set (memory-mapped), builds a name -> pointer table for every
 * "data" component: raw little-endian tensors are zero-copy views into the mapping,
 * anything else (zstd, legacy big-endian ...) is decoded into memory we allocate, all of
 * them in one zt_batch_load call, in parallel, whichever shard holds them. Then looks
 * tensors up by name the way a model graph builder would, reports what was mapped and
 * what was decoded, and checks every stored digest.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

/* One loaded tensor. `data` points into the mapping, or into `owned` when decoded. */
typedef struct tensor {
  const char *name; /* borrowed from the reader: valid until zt_close */
  const uint64_t *shape;
  size_t ndim;
  uint32_t dtype;
  const void *data;
  uint64_t size;
  void *owned; /* malloc'd copy, or NULL when zero-copy */
} tensor;

/* Open-addressing hash table: name -> tensor. Capacity is a power of two > 2 * count. */
typedef struct table {
  tensor *slots;
  size_t capacity;
} table;

static uint64_t hash_name(const char *s) { /* FNV-1a */
  uint64_t h = 1469598103934665603u;
  while (*s) {
    h = (h ^ (unsigned char)*s++) * 1099511628211u;
  }
  return h;
}

static tensor *table_slot(const table *t, const char *name) {
  size_t i = (size_t)hash_name(name) & (t->capacity - 1);
  while (t->slots[i].name != NULL && strcmp(t->slots[i].name, name) != 0) {
    i = (i + 1) & (t->capacity - 1);
  }
  return &t->slots[i];
}

static const tensor *table_get(const table *t, const char *name) {
  const tensor *slot = table_slot(t, name);
  return slot->name != NULL ? slot : NULL;
}

static zt_reader *g_reader;
static table g_table;

static void cleanup(void) {
  size_t i;
  for (i = 0; g_table.slots != NULL && i < g_table.capacity; i++) {
    free(g_table.slots[i].owned);
  }
  free(g_table.slots);
  zt_close(g_reader); /* every view and borrowed string dies here */
}

/* On failure: one line on stderr, release everything, exit non-zero. */
static void check(zt_status status, const char *what) {
  if (status != ZT_OK) {
    /* zt_last_error() is valid until the next zt_ call: print it before anything else */
    fprintf(stderr, "load_model: %s: %s", what, zt_last_error());
    fprintf(stderr, " (%s)\n", zt_status_name(status));
    cleanup();
    exit(1);
  }
}

static void fail(const char *message, const char *name) {
  fprintf(stderr, "load_model: %s '%s'\n", message, name);
  cleanup();
  exit(1);
}

/* bf16 / f16 / f32 element -> float, for printing a few values. */
static float element(const tensor *t, size_t i) {
  uint32_t u;
  float f;
  if (t->dtype == ZT_F32) {
    memcpy(&f, (const char *)t->data + 4 * i, 4);
    return f;
  }
  if (t->dtype == ZT_BF16) {
    uint16_t h;
    memcpy(&h, (const char *)t->data + 2 * i, 2);
    u = (uint32_t)h << 16;
    memcpy(&f, &u, 4);
    return f;
  }
  return 0.0f; /* other dtypes: not needed by this example */
}

static void show(const char *name) {
  const tensor *t = table_get(&g_table, name);
  size_t i, width;
  if (t == NULL) {
    fail("missing tensor", name);
  }
  check(zt_dtype_get_size(t->dtype, &width), name); /* bytes per element: 2 for bf16 */
  printf("%s: [", t->name);
  for (i = 0; i < t->ndim; i++) {
    printf(i ? ", %llu" : "%llu", (unsigned long long)t->shape[i]);
  }
  printf("] %s, %llu bytes, %s, first values:", zt_dtype_name(t->dtype), (unsigned long long)t->size,
         t->owned ? "decoded" : "zero-copy");
  for (i = 0; i < 4 && i < t->size / width; i++) {
    printf(" %.6f", element(t, i));
  }
  printf("\n");
}

int main(int argc, char **argv) {
  size_t count, i, zero_copy = 0, decoded = 0, skipped = 0, batch = 0;
  zt_load_request *requests;
  uint64_t mapped_bytes = 0, decoded_bytes = 0;
  const char *json = NULL;

  if (argc != 2) {
    fprintf(stderr, "usage: load_model <model.zt | model.zt.index.json>\n");
    return 2;
  }
  /* Maps the file and reads the manifest; no tensor data is touched yet. */
  check(zt_open(argv[1], &g_reader), argv[1]);
  count = zt_object_count(g_reader);

  g_table.capacity = 16;
  while (g_table.capacity < 2 * count + 1) {
    g_table.capacity *= 2;
  }
  g_table.slots = calloc(g_table.capacity, sizeof(tensor));
  if (g_table.slots == NULL) {
    fail("out of memory for", argv[1]);
  }

  requests = calloc(count ? count : 1, sizeof *requests);
  if (requests == NULL) {
    fail("out of memory for", argv[1]);
  }
  for (i = 0; i < count; i++) {
    zt_object_info info;
    zt_component_info comp;
    zt_view view;
    size_t data_index;
    tensor *slot;

    check(zt_object_get_info(g_reader, i, &info), "object info");
    /* Sparse or quantized objects have no "data" component: a real loader would
       handle their formats; here they are just counted. */
    if (zt_component_find(g_reader, i, "data", &data_index) != ZT_OK) {
      skipped++;
      continue;
    }
    check(zt_component_get_info(g_reader, i, data_index, &comp), info.name);

    slot = table_slot(&g_table, info.name);
    slot->name = info.name;
    slot->shape = info.shape;
    slot->ndim = info.ndim;
    slot->dtype = comp.dtype;
    slot->size = comp.decoded_length;

    /* Raw components: take a view; it is zero-copy when the bytes in the file are usable
       as they are (little-endian, 64-byte aligned, mapped). */
    if (comp.encoding == ZT_ENCODING_RAW) {
      check(zt_component_view(g_reader, i, "data", &view), info.name);
      if (view.zero_copy) {
        slot->data = view.data;
        mapped_bytes += view.size;
        zero_copy++;
        continue;
      }
    }
    /* Anything else (zstd; raw bytes that are big-endian, misaligned or not mapped):
       decode into memory we own, e.g. pinned or device-staging buffers in a real engine,
       with the batch below. malloc(0) may return NULL: allocate at least 1. */
    slot->owned = malloc(comp.decoded_length ? (size_t)comp.decoded_length : 1);
    if (slot->owned == NULL) {
      fail("out of memory for", info.name);
    }
    slot->data = slot->owned;
    requests[batch].object = i; /* role NULL: "data" */
    requests[batch].dst = slot->owned;
    requests[batch].dst_size = (size_t)comp.decoded_length;
    batch++;
    decoded_bytes += comp.decoded_length;
    decoded++;
  }
  /* One call decodes them all, on a pool of threads, whichever file of a set holds
     each; every request has its own status. */
  if (batch > 0) {
    zt_status status = zt_batch_load(g_reader, requests, batch, NULL);
    if (status != ZT_OK) {
      free(requests);
      check(status, "batch load");
    }
  }
  free(requests);

  /* The graph builder looks tensors up by name. */
  show("tok_embeddings.weight");
  show("layers.0.attention.wq.weight");
  show("output.weight");

  check(zt_file_get_attributes_json(g_reader, &json), "file attributes");
  printf("metadata: %s\n", json);
  printf("files: %zu\n", zt_shard_count(g_reader));
  printf("tensors: %zu (%zu zero-copy, %zu decoded, %zu skipped)\n", zero_copy + decoded, zero_copy, decoded,
         skipped);
  printf("bytes mapped zero-copy: %llu\n", (unsigned long long)mapped_bytes);
  printf("bytes decoded: %llu\n", (unsigned long long)decoded_bytes);

  /* Reads every stored byte that has a digest; ZT_ERR_CHECKSUM names the bad tensor. */
  check(zt_file_verify(g_reader), "verify");
  printf("digests: OK\n");

  cleanup();
  return 0;
}
