/*
 * test_listing: zt_file_get_names (every name in one block), zt_file_get_objects
 * (every object's description in one call) and zt_file_get_columns (the same, column by
 * column).
 *
 *   test_listing <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * The exact block (names in file order, each followed by a NUL) for a file written here
 * and for a safetensors vector, the same pointer on every call and from 8 threads racing
 * on the first call, an empty file, NULL arguments; entries equal to what
 * zt_object_get_info, zt_component_get_info and zt_component_get_location say, for a file,
 * a safetensors vector and a sharded set, ranges and their refusals; columns equal to the
 * entries, the dimensions count, a too-small dims column (nothing written), refusals;
 * zt_file_get_runs: the exact runs of a layered file (a repeat between objects that
 * don't repeat), every claim of the runs of a file, a safetensors vector and a set
 * checked against the entries, ranges, a too-small array (nothing written), refusals.
 */
#include "zt_test.h"

#define THREADS 8

static const char *const NAMES[] = {"layers.1.w", "b", "\xc3\xbc.weight", "a"};
#define NAME_COUNT (sizeof NAMES / sizeof NAMES[0])

static void write_file(const char *path, size_t count) {
  zt_writer *w = NULL;
  uint64_t shape[1] = {2};
  uint8_t data[2] = {1, 2};
  size_t i;
  CHECK_OK(zt_test_create_v12(path, &w));
  for (i = 0; i < count; i++) {
    CHECK_OK(zt_writer_add(w, NAMES[i], ZT_U8, shape, 1, data, sizeof data, NULL));
  }
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

typedef struct race {
  const zt_reader *reader;
  const char *names;
  size_t size;
  zt_status status;
} race;

static void *get_names(void *arg) {
  race *r = (race *)arg;
  r->status = zt_file_get_names(r->reader, &r->names, &r->size);
  return NULL;
}

static void test_written(void) {
  zt_reader *r = NULL;
  const char *names = NULL, *again = NULL;
  size_t size = 0, again_size = 0, i;
  char expected[64];
  size_t expected_size = 0;
  pthread_t threads[THREADS];
  race races[THREADS];

  write_file("names.zt", NAME_COUNT);
  for (i = 0; i < NAME_COUNT; i++) {
    size_t n = strlen(NAMES[i]) + 1;
    memcpy(expected + expected_size, NAMES[i], n);
    expected_size += n;
  }

  /* 8 threads racing on the first call of a fresh reader: one block for all */
  CHECK_OK(zt_open("names.zt", &r));
  for (i = 0; i < THREADS; i++) {
    races[i].reader = r;
    races[i].names = NULL;
    races[i].size = 0;
    races[i].status = ZT_ERR_INTERNAL;
    CHECK(pthread_create(&threads[i], NULL, get_names, &races[i]) == 0);
  }
  for (i = 0; i < THREADS; i++) {
    CHECK(pthread_join(threads[i], NULL) == 0);
  }
  CHECK_OK(zt_file_get_names(r, &names, &size));
  CHECK_U64(size, expected_size);
  CHECK(memcmp(names, expected, expected_size) == 0);
  for (i = 0; i < THREADS; i++) {
    CHECK_STATUS(ZT_OK, races[i].status);
    CHECK(races[i].names == names);
    CHECK_U64(races[i].size, expected_size);
  }
  CHECK_OK(zt_file_get_names(r, &again, &again_size));
  CHECK(again == names && again_size == size);

  /* NULL arguments leave the outputs untouched */
  again = NULL;
  again_size = 7;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_names(NULL, &again, &again_size));
  CHECK(again == NULL && again_size == 7);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_names(r, NULL, &again_size));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_names(r, &again, NULL));
  CHECK(again == NULL && again_size == 7);
  CHECK(strstr(zt_last_error(), "out_size") != NULL);
  zt_close(r);

  /* a file without objects: size 0 and an empty string, never NULL */
  write_file("empty.zt", 0);
  CHECK_OK(zt_open("empty.zt", &r));
  names = NULL;
  size = 9;
  CHECK_OK(zt_file_get_names(r, &names, &size));
  CHECK(names != NULL && names[0] == '\0');
  CHECK_U64(size, 0);
  zt_close(r);
}

static void test_safetensors(const char *vectors) {
  char path[1200];
  zt_reader *r = NULL;
  const char *names = NULL;
  size_t size = 0, i, at = 0;
  snprintf(path, sizeof path, "%s/safetensors/dtypes.safetensors", vectors);
  if (zt_open(path, &r) != ZT_OK) {
    printf("note: %s: %s: safetensors case not run\n", path, zt_last_error());
    return;
  }
  CHECK_OK(zt_file_get_names(r, &names, &size));
  /* the block splits into exactly the names zt_object_get_info gives, in file order */
  for (i = 0; i < zt_object_count(r); i++) {
    zt_object_info info;
    CHECK_OK(zt_object_get_info(r, i, &info));
    CHECK(at + strlen(info.name) < size);
    CHECK(strcmp(names + at, info.name) == 0);
    at += strlen(info.name) + 1;
  }
  CHECK(zt_object_count(r) > 0);
  CHECK_U64(at, size);
  zt_close(r);
}

/* The columns of `r` against its entries `e`: all at once and from object 1 on; a dims
 * column one too small (nothing but dims_count written); the refusals. */
static void check_columns(const zt_reader *r, const zt_object_entry *e) {
  size_t n = zt_object_count(r), i, d, at = 0, total = 0;
  uint64_t *offset = (uint64_t *)calloc(n + 1, sizeof *offset);
  uint64_t *decoded = (uint64_t *)calloc(n + 1, sizeof *decoded);
  uint32_t *dtype = (uint32_t *)calloc(n + 1, sizeof *dtype);
  uint32_t *shard = (uint32_t *)calloc(n + 1, sizeof *shard);
  uint32_t *flags = (uint32_t *)calloc(n + 1, sizeof *flags);
  uint32_t *ndim = (uint32_t *)calloc(n + 1, sizeof *ndim);
  uint64_t *dims;
  zt_object_columns c;
  for (i = 0; i < n; i++) {
    total += e[i].ndim;
  }
  dims = (uint64_t *)calloc(total + 1, sizeof *dims);
  CHECK(offset && decoded && dtype && shard && flags && ndim && dims);

  memset(&c, 0, sizeof c); /* every column NULL: only the count of dimensions */
  c.dims_count = 99;
  CHECK_OK(zt_file_get_columns(r, 0, n, &c));
  CHECK_U64(c.dims_count, total);

  c.offset = offset;
  c.decoded_length = decoded;
  c.dtype = dtype;
  c.shard = shard;
  c.flags = flags;
  c.ndim = ndim;
  c.dims = dims;
  if (total > 0) {
    flags[0] = 77;
    c.dims_capacity = total - 1;
    c.dims_count = 0;
    CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_file_get_columns(r, 0, n, &c));
    CHECK_U64(c.dims_count, total);
    CHECK_U64(flags[0], 77); /* nothing else written */
  }
  c.dims_capacity = total;
  CHECK_OK(zt_file_get_columns(r, 0, n, &c));
  CHECK_U64(c.dims_count, total);
  for (i = 0; i < n; i++) {
    uint32_t want = 0;
    if (e[i].component_count == 1 && strcmp(e[i].format, "dense") == 0) {
      want |= ZT_OBJECT_DENSE;
    }
    if (e[i].component_count > 0 && e[i].encoding == ZT_ENCODING_RAW) {
      want |= ZT_OBJECT_PLAIN;
    }
    if (e[i].type != NULL) {
      want |= ZT_OBJECT_TYPED;
    }
    CHECK_U64(flags[i], want);
    CHECK_U64(offset[i], e[i].offset);
    CHECK_U64(decoded[i], e[i].decoded_length);
    CHECK_U64(dtype[i], e[i].dtype);
    CHECK_U64(shard[i], e[i].shard);
    CHECK_U64(ndim[i], e[i].ndim);
    for (d = 0; d < e[i].ndim; d++) {
      CHECK_U64(dims[at + d], e[i].shape[d]);
    }
    at += e[i].ndim;
  }
  if (n > 1) { /* from object 1: its values first, its dimensions first */
    memset(dims, 0, (total + 1) * sizeof *dims);
    CHECK_OK(zt_file_get_columns(r, 1, n - 1, &c));
    CHECK_U64(c.dims_count, total - e[0].ndim);
    CHECK_U64(offset[0], e[1].offset);
    CHECK_U64(ndim[n - 2], e[n - 1].ndim);
    if (e[1].ndim > 0) {
      CHECK_U64(dims[0], e[1].shape[0]);
    }
  }
  /* ranges: count 0 at the end; past it, overflowing; NULL columns or reader */
  CHECK_OK(zt_file_get_columns(r, n, 0, &c));
  CHECK_U64(c.dims_count, 0);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_columns(r, n, 1, &c));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_columns(r, 1, SIZE_MAX, &c));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_columns(r, 0, n, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_columns(NULL, 0, 0, &c));
  free(offset);
  free(decoded);
  free(dtype);
  free(shard);
  free(flags);
  free(ndim);
  free(dims);
}

/* Every entry of `r` against the per-object calls; `first` .. in chunks of 3. */
static void check_entries(const zt_reader *r) {
  size_t n = zt_object_count(r), i, at;
  zt_object_entry *e = (zt_object_entry *)calloc(n + 1, sizeof *e);
  CHECK(e != NULL);
  for (at = 0; at < n; at += 3) {
    size_t count = n - at < 3 ? n - at : 3;
    CHECK_OK(zt_file_get_objects(r, at, e + at, count));
  }
  for (i = 0; i < n; i++) {
    zt_object_info info;
    zt_component_info c;
    zt_location loc;
    size_t d;
    CHECK_OK(zt_object_get_info(r, i, &info));
    CHECK(e[i].name == info.name && e[i].format == info.format && e[i].shape == info.shape);
    CHECK_U64(e[i].ndim, info.ndim);
    CHECK_U64(e[i].component_count, info.component_count);
    for (d = 0; d < info.ndim; d++) {
      CHECK_U64(e[i].shape[d], info.shape[d]);
    }
    if (info.component_count == 0) {
      continue;
    }
    CHECK_OK(zt_component_get_info(r, i, 0, &c));
    CHECK_U64(e[i].dtype, c.dtype);
    CHECK_U64(e[i].encoding, c.encoding);
    CHECK(e[i].type == c.type);
    CHECK_U64(e[i].offset, c.offset);
    CHECK_U64(e[i].length, c.length);
    CHECK_U64(e[i].decoded_length, c.decoded_length);
    CHECK_OK(zt_component_get_location(r, i, 0, &loc));
    CHECK_U64(e[i].shard, loc.shard);
  }
  /* ranges: the end exactly, past it, overflowing; count 0 with NULL */
  e[n].ndim = 77;
  CHECK_OK(zt_file_get_objects(r, n, NULL, 0));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_objects(r, n, e + n, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_objects(r, 1, e, SIZE_MAX));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_objects(r, n + 1, NULL, 0));
  CHECK_U64(e[n].ndim, 77); /* untouched */
  if (n > 0) {
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_objects(r, 0, NULL, 1));
  }
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_objects(NULL, 0, e, 1));
  check_columns(r, e);
  free(e);
}

static void test_objects(const char *vectors) {
  char path[1200];
  zt_reader *r = NULL;
  zt_writer *w = NULL;
  uint64_t shape[2] = {2, 3}, one[1] = {4};
  float values[6] = {1, 2, 3, 4, 5, 6};
  uint16_t bits[4] = {0x3f80, 0, 0, 0};
  zt_write_options zstd = {0};
  zstd.encoding = ZT_ENCODING_ZSTD;
  zstd.digest = ZT_DIGEST_CRC32C;
  CHECK_OK(zt_test_create_v12("objects.zt", &w));
  CHECK_OK(zt_writer_add(w, "m", ZT_F32, shape, 2, values, sizeof values, NULL));
  CHECK_OK(zt_writer_add(w, "z", ZT_F32, shape, 2, values, sizeof values, &zstd));
  CHECK_OK(zt_writer_add(w, "s", ZT_F32, NULL, 0, values, sizeof values[0], NULL));
  CHECK_OK(zt_writer_begin_object(w, "f8", "dense", one, 1));
  CHECK_OK(zt_writer_add_component(w, "data", ZT_U8, "f8_e4m3fn", bits, 4, NULL));
  CHECK_OK(zt_writer_end_object(w));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  CHECK_OK(zt_open("objects.zt", &r));
  check_entries(r);
  {
    zt_object_entry e[4];
    CHECK_OK(zt_file_get_objects(r, 0, e, 4));
    CHECK_STR(e[0].name, "m");
    CHECK_U64(e[0].ndim, 2);
    CHECK_U64(e[0].decoded_length, 24);
    CHECK(e[0].type == NULL && e[0].encoding == ZT_ENCODING_RAW && e[0].offset % 64 == 0);
    CHECK_U64(e[1].encoding, ZT_ENCODING_ZSTD);
    CHECK(e[2].ndim == 0 && e[2].shape == NULL);
    CHECK_STR(e[3].type, "f8_e4m3fn");
    CHECK_U64(e[3].dtype, ZT_U8);
  }
  { /* the flags of each kind: raw, compressed, a scalar, a logical type */
    uint32_t flags[4] = {0}, ndim[4] = {0};
    uint64_t dims[5] = {0};
    zt_object_columns c;
    memset(&c, 0, sizeof c);
    c.flags = flags;
    c.ndim = ndim;
    c.dims = dims;
    c.dims_capacity = 5;
    CHECK_OK(zt_file_get_columns(r, 0, 4, &c));
    CHECK_U64(flags[0], ZT_OBJECT_DENSE | ZT_OBJECT_PLAIN);
    CHECK_U64(flags[1], ZT_OBJECT_DENSE);
    CHECK_U64(flags[2], ZT_OBJECT_DENSE | ZT_OBJECT_PLAIN);
    CHECK_U64(flags[3], ZT_OBJECT_DENSE | ZT_OBJECT_PLAIN | ZT_OBJECT_TYPED);
    CHECK(ndim[0] == 2 && ndim[1] == 2 && ndim[2] == 0 && ndim[3] == 1);
    CHECK(dims[0] == 2 && dims[1] == 3 && dims[2] == 2 && dims[3] == 3 && dims[4] == 4);
    CHECK_U64(c.dims_count, 5); /* 2 + 2 + 0 + 1 */
  }
  zt_close(r);

  snprintf(path, sizeof path, "%s/safetensors/dtypes.safetensors", vectors);
  if (zt_open(path, &r) == ZT_OK) {
    check_entries(r);
    zt_close(r);
  } else {
    printf("note: %s: %s: safetensors case not run\n", path, zt_last_error());
  }
  snprintf(path, sizeof path, "%s/sets/safetensors/model.safetensors.index.json", vectors);
  if (zt_open(path, &r) == ZT_OK) {
    zt_object_entry last;
    check_entries(r);
    CHECK_OK(zt_file_get_objects(r, zt_object_count(r) - 1, &last, 1));
    CHECK_U64(last.shard, 2); /* the third shard */
    zt_close(r);
  } else {
    printf("note: %s: %s: set case not run\n", path, zt_last_error());
  }
}

static int is_run(const zt_object_run *run, size_t first, size_t period, size_t repeats, uint64_t stride) {
  return run->first == first && run->period == period && run->repeats == repeats && run->stride == stride;
}

/* Every run of objects first .. first + count - 1 checked against the entries: in order,
 * covering each object once, and a repeat's claims (alike, `stride` apart) true. */
static size_t check_runs(const zt_reader *r, size_t first, size_t count) {
  zt_object_run *runs = (zt_object_run *)calloc(count + 1, sizeof *runs);
  zt_object_entry *e = (zt_object_entry *)calloc(count + 1, sizeof *e);
  size_t found = 0, k, next = first;
  CHECK(runs != NULL && e != NULL);
  CHECK_OK(zt_file_get_objects(r, first, e, count));
  CHECK_OK(zt_file_get_runs(r, first, count, runs, count, &found));
  CHECK(found >= (count > 0) && found <= count);
  for (k = 0; k < found; k++) {
    const zt_object_run *run = &runs[k];
    size_t i, j;
    CHECK_U64(run->first, next);
    CHECK(run->period >= 1 && run->repeats >= 1);
    next += run->period * run->repeats;
    if (run->repeats == 1) {
      CHECK_U64(run->stride, 0);
      continue;
    }
    for (i = 0; i < run->period; i++) {
      const zt_object_entry *head = &e[run->first - first + i];
      CHECK(strcmp(head->format, "dense") == 0 && head->component_count == 1);
      CHECK_U64(head->encoding, ZT_ENCODING_RAW);
      for (j = 1; j < run->repeats; j++) {
        const zt_object_entry *peer = &e[run->first - first + j * run->period + i];
        CHECK(peer->dtype == head->dtype && peer->shard == head->shard && peer->ndim == head->ndim);
        CHECK((peer->type == NULL) == (head->type == NULL));
        CHECK(head->ndim == 0 || memcmp(peer->shape, head->shape, head->ndim * sizeof *head->shape) == 0);
        CHECK_U64(peer->decoded_length, head->decoded_length);
        CHECK_U64(peer->offset, head->offset + j * run->stride);
      }
    }
  }
  CHECK_U64(next, first + count);
  free(runs);
  free(e);
  return found;
}

/* An embedding, 4 layers of three tensors, a last tensor and a compressed one: each
 * tensor's bytes fit the writer's 64-byte alignment, so a layer is 192 bytes on. */
static void test_runs(const char *vectors) {
  char path[1200];
  zt_reader *r = NULL;
  zt_writer *w = NULL;
  uint64_t embed[2] = {4, 2}, norm[1] = {2}, weight[2] = {2, 2}, odd[1] = {3};
  float values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint16_t small[3] = {1, 2, 3};
  zt_write_options zstd = {0};
  zt_object_run runs[4], untouched;
  size_t found = 0, layer, k;
  zstd.encoding = ZT_ENCODING_ZSTD;
  CHECK_OK(zt_test_create_v12("runs.zt", &w));
  CHECK_OK(zt_writer_add(w, "embed", ZT_F32, embed, 2, values, sizeof values, NULL));
  for (layer = 0; layer < 4; layer++) {
    char name[32];
    snprintf(name, sizeof name, "layers.%zu.norm", layer);
    CHECK_OK(zt_writer_add(w, name, ZT_F32, norm, 1, values, 2 * sizeof(float), NULL));
    snprintf(name, sizeof name, "layers.%zu.weight", layer);
    CHECK_OK(zt_writer_add(w, name, ZT_F32, weight, 2, values, 4 * sizeof(float), NULL));
    snprintf(name, sizeof name, "layers.%zu.odd", layer);
    CHECK_OK(zt_writer_add(w, name, ZT_U16, odd, 1, small, sizeof small, NULL));
  }
  CHECK_OK(zt_writer_add(w, "out", ZT_F32, norm, 1, values, 2 * sizeof(float), NULL));
  CHECK_OK(zt_writer_add(w, "packed", ZT_F32, norm, 1, values, 2 * sizeof(float), &zstd));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  CHECK_OK(zt_open("runs.zt", &r));
  CHECK_OK(zt_file_get_runs(r, 0, 15, runs, 4, &found));
  CHECK_U64(found, 3);
  CHECK(is_run(&runs[0], 0, 1, 1, 0));
  CHECK(is_run(&runs[1], 1, 3, 4, 192));
  CHECK(is_run(&runs[2], 13, 2, 1, 0));
  CHECK_U64(check_runs(r, 0, 15), 3);
  /* a range: its runs, numbered as in the file */
  CHECK_OK(zt_file_get_runs(r, 4, 9, runs, 4, &found));
  CHECK_U64(found, 1);
  CHECK(is_run(&runs[0], 4, 3, 3, 192));
  /* from layer 0's weight: (weight, odd, next norm) repeats to "out", like a norm */
  CHECK_U64(check_runs(r, 2, 13), 2);
  /* too small: the count needed, nothing written; NULL with capacity 0 asks */
  memset(&untouched, 0xab, sizeof untouched);
  runs[0] = untouched;
  found = 0;
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_file_get_runs(r, 0, 15, runs, 2, &found));
  CHECK_U64(found, 3);
  CHECK(memcmp(&runs[0], &untouched, sizeof untouched) == 0);
  found = 0;
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_file_get_runs(r, 0, 15, NULL, 0, &found));
  CHECK_U64(found, 3);
  CHECK_OK(zt_file_get_runs(r, 15, 0, NULL, 0, &found));
  CHECK_U64(found, 0);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_runs(r, 0, 15, NULL, 4, &found));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_runs(r, 15, 1, runs, 4, &found));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_runs(r, 1, SIZE_MAX, runs, 4, &found));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_runs(r, 0, 15, runs, 4, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_runs(NULL, 0, 0, runs, 4, &found));
  zt_close(r);

  for (k = 0; k < 2; k++) { /* a safetensors vector, a set */
    static const char *const files[] = {"safetensors/dtypes.safetensors",
                                        "sets/safetensors/model.safetensors.index.json"};
    snprintf(path, sizeof path, "%s/%s", vectors, files[k]);
    if (zt_open(path, &r) == ZT_OK) {
      check_runs(r, 0, zt_object_count(r));
      zt_close(r);
    } else {
      printf("note: %s: %s: runs not checked\n", path, zt_last_error());
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  test_written();
  test_safetensors(argv[1]);
  test_objects(argv[1]);
  test_runs(argv[1]);
  return zt_test_summary();
}
