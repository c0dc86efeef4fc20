/*
 * Sets of files as one reader, through the C API: a Hugging Face index of safetensors
 * shards written by safetensors 0.8.0 (tests/vectors/sets, made by
 * tests/interop/make_sets.py), a GGUF split set written by gguf 0.19.0's GGUFWriter,
 * a set written by zt_writer_create_sharded_with, and sets that must be refused. Every
 * tensor read through the set equals its bytes in its own file (found with
 * zt_component_get_location), and one zt_batch_load over the whole set equals the single
 * reads.
 */
#include "zt_test.h"

#include <fcntl.h>
#include <unistd.h>

static char vectors[1024];

/* make_sets.py's values: ((i * 7 + seed * 13) % 101 - 50). */
static double expected_value(size_t i, int seed) {
  return (double)((long)((i * 7 + (size_t)seed * 13) % 101) - 50);
}

/* Every object of `r` (a set of `shards` files) read whole, compared with its stored
   bytes in the file zt_component_get_location names (raw tensors: stored = decoded), and
   with the same bytes from zt_batch_load over the whole set in one call. */
static void check_against_files(const zt_reader *r, size_t shards) {
  size_t n = zt_object_count(r), i;
  zt_load_request *q = (zt_load_request *)calloc(n, sizeof *q);
  unsigned char **files = (unsigned char **)calloc(shards, sizeof *files);
  size_t *sizes = (size_t *)calloc(shards, sizeof *sizes);
  zt_batch_options one = {1};
  CHECK_U64(zt_shard_count(r), shards);
  for (i = 0; i < shards; i++) {
    const char *path = NULL;
    if (CHECK_OK(zt_shard_get_path(r, i, &path))) files[i] = zt_test_slurp(path, &sizes[i]);
    CHECK(files[i] != NULL);
  }
  for (i = 0; i < n; i++) {
    zt_location at;
    zt_component_info ci;
    unsigned char *got;
    CHECK_OK(zt_component_get_info(r, i, 0, &ci));
    CHECK_OK(zt_component_get_location(r, i, 0, &at));
    CHECK_U64(at.offset, ci.offset);
    CHECK_U64(at.length, ci.decoded_length);
    got = (unsigned char *)malloc(ci.decoded_length);
    CHECK_OK(zt_component_read(r, i, "data", got, ci.decoded_length));
    if (CHECK(at.shard < shards) && files[at.shard] != NULL && CHECK(at.offset + at.length <= sizes[at.shard])) {
      CHECK_MEM(got, files[at.shard] + at.offset, ci.decoded_length);
    }
    free(got);
    q[i].object = i;
    q[i].dst = malloc(ci.decoded_length);
    q[i].dst_size = ci.decoded_length;
    q[i].status = 999;
  }
  CHECK_OK(zt_batch_load(r, q, n, NULL));
  for (i = 0; i < n; i++) {
    zt_location at;
    CHECK_U64(q[i].status, ZT_OK);
    CHECK_OK(zt_component_get_location(r, i, 0, &at));
    if (files[at.shard] != NULL) CHECK_MEM(q[i].dst, files[at.shard] + at.offset, q[i].dst_size);
    memset(q[i].dst, 0, q[i].dst_size);
  }
  CHECK_OK(zt_batch_load(r, q, n, &one));
  for (i = 0; i < n; i++) {
    zt_location at;
    CHECK_OK(zt_component_get_location(r, i, 0, &at));
    if (files[at.shard] != NULL) CHECK_MEM(q[i].dst, files[at.shard] + at.offset, q[i].dst_size);
    free(q[i].dst);
  }
  for (i = 0; i < shards; i++) free(files[i]);
  free(files);
  free(sizes);
  free(q);
}

/* Every object of a reader of the one file `path` equals its bytes there. */
static void check_against_files_of(const zt_reader *r, const char *path) {
  size_t size = 0, i;
  unsigned char *file = zt_test_slurp(path, &size);
  if (!CHECK(file != NULL)) return;
  for (i = 0; i < zt_object_count(r); i++) {
    zt_component_info ci;
    unsigned char *got;
    CHECK_OK(zt_component_get_info(r, i, 0, &ci));
    got = (unsigned char *)malloc(ci.decoded_length);
    if (CHECK_OK(zt_component_read(r, i, "data", got, ci.decoded_length)) &&
        CHECK(ci.offset + ci.decoded_length <= size)) {
      CHECK_MEM(got, file + ci.offset, ci.decoded_length);
    }
    free(got);
  }
  free(file);
}

/* Object `name` is an f32 tensor of `count` make_sets.py values of `seed`, in shard
   `shard`. */
static void check_values(const zt_reader *r, const char *name, size_t count, int seed, uint32_t shard) {
  size_t o, i;
  zt_location at;
  float got[16];
  if (!CHECK_OK(zt_object_find(r, name, &o))) return;
  CHECK_OK(zt_component_get_location(r, o, 0, &at));
  CHECK_U64(at.shard, shard);
  CHECK_OK(zt_component_read(r, o, "data", got, count * sizeof(float)));
  for (i = 0; i < count; i++) CHECK(got[i] == (float)expected_value(i, seed));
}

static void test_safetensors_index(void) {
  char path[1200];
  const char *shard = NULL;
  const void *base = NULL;
  uint64_t size = 0;
  zt_reader *r = NULL;
  zt_open_options o;
  const char *json = NULL;
  size_t flags[3] = {0, ZT_OPEN_ALL_SHARDS, ZT_OPEN_NO_MMAP}, k;
  snprintf(path, sizeof path, "%s/sets/safetensors/model.safetensors.index.json", vectors);
  for (k = 0; k < 3; k++) {
    memset(&o, 0, sizeof o);
    o.flags = (uint32_t)flags[k];
    if (!CHECK_OK(zt_open_with(path, &o, &r))) continue;
    CHECK_STR(zt_file_format(r), "safetensors");
    CHECK_U64(zt_object_count(r), 5);
    check_against_files(r, 3);
    check_values(r, "model.embed_tokens.weight", 12, 1, 0);
    check_values(r, "model.layers.0.attn.bias", 3, 3, 1);
    CHECK_OK(zt_shard_get_path(r, 2, &shard));
    CHECK_CONTAINS(shard, "/sets/safetensors/model-00003-of-00003.safetensors");
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_shard_get_path(r, 3, &shard));
    if (k == 2) {
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_shard_get_mapping(r, 0, &base, &size));
    } else {
      zt_location at;
      size_t lm;
      CHECK_OK(zt_object_find(r, "lm_head.weight", &lm));
      CHECK_OK(zt_component_get_location(r, lm, 0, &at));
      if (CHECK_OK(zt_shard_get_mapping(r, at.shard, &base, &size))) {
        double want[4];
        size_t i;
        for (i = 0; i < 4; i++) want[i] = expected_value(i, 5);
        CHECK_MEM((const unsigned char *)base + at.offset, want, sizeof want);
      }
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_shard_get_mapping(r, 3, &base, &size));
    }
    CHECK_OK(zt_object_prefetch(r, 0));
    CHECK_OK(zt_object_evict(r, 4));
    CHECK_OK(zt_file_verify(r));
    CHECK_OK(zt_file_get_attributes_json(r, &json));
    CHECK_STR(json, "{\"total_size\":124}");
    zt_close(r);
    r = NULL;
  }
}

static void test_gguf_split(void) {
  char path[1200];
  zt_reader *r = NULL;
  zt_open_options o;
  const void *base = NULL;
  uint64_t size = 0;
  int k;
  for (k = 1; k <= 3; k++) {
    snprintf(path, sizeof path, "%s/sets/gguf/split-%05d-of-00003.gguf", vectors, k);
    if (!CHECK_OK(zt_open(path, &r))) continue;
    CHECK_STR(zt_file_format(r), "gguf");
    CHECK_U64(zt_object_count(r), 5);
    check_against_files(r, 3);
    check_values(r, "tok.weight", 12, 6, 0);
    check_values(r, "blk.0.attn_norm.weight", 3, 8, 1);
    check_values(r, "out.weight", 5, 10, 2);
    zt_close(r);
    r = NULL;
  }
  /* One split alone, when asked: it has a mapping of its own and one file. */
  memset(&o, 0, sizeof o);
  o.flags = ZT_OPEN_ONE_FILE;
  snprintf(path, sizeof path, "%s/sets/gguf/split-00002-of-00003.gguf", vectors);
  if (CHECK_OK(zt_open_with(path, &o, &r))) {
    const char *p = NULL;
    CHECK_U64(zt_object_count(r), 2);
    CHECK_U64(zt_shard_count(r), 1);
    CHECK_OK(zt_shard_get_path(r, 0, &p));
    CHECK_STR(p, path);
    CHECK_OK(zt_shard_get_mapping(r, 0, &base, &size));
    CHECK_U64(size, 288);
    check_against_files(r, 1);
    zt_close(r);
  }
}

/* Views of a set from many threads at once, each shard touched first by these views
   (default options: no shard is open yet): every thread gets the same zero-copy view of
   each tensor, into that shard's mapping, and the reader makes no decoded copy. */
#define VIEW_THREADS 8
#define VIEW_MAX_OBJECTS 8

typedef struct view_job {
  const zt_reader *r;
  size_t first;
  zt_view got[VIEW_MAX_OBJECTS];
  zt_status status[VIEW_MAX_OBJECTS];
} view_job;

static void *view_all(void *arg) {
  view_job *job = (view_job *)arg;
  size_t n = zt_object_count(job->r), k;
  /* Each thread starts at another object, so first touches of a shard race. */
  for (k = 0; k < n; k++) {
    size_t i = (job->first + k) % n;
    job->status[i] = zt_component_view(job->r, i, "data", &job->got[i]);
  }
  return NULL;
}

static void check_first_touch_views(const char *path, size_t objects) {
  zt_reader *r = NULL;
  pthread_t threads[VIEW_THREADS];
  static view_job jobs[VIEW_THREADS];
  size_t t, i;
  if (!CHECK_OK(zt_open(path, &r))) return;
  if (!CHECK_U64(zt_object_count(r), objects) || !CHECK(objects <= VIEW_MAX_OBJECTS)) {
    zt_close(r);
    return;
  }
  for (t = 0; t < VIEW_THREADS; t++) {
    memset(&jobs[t], 0, sizeof jobs[t]);
    jobs[t].r = r;
    jobs[t].first = t;
    CHECK(pthread_create(&threads[t], NULL, view_all, &jobs[t]) == 0);
  }
  for (t = 0; t < VIEW_THREADS; t++) CHECK(pthread_join(threads[t], NULL) == 0);
  for (i = 0; i < objects; i++) {
    zt_location at;
    const void *base = NULL;
    uint64_t size = 0;
    CHECK_OK(zt_component_get_location(r, i, 0, &at));
    CHECK_OK(zt_shard_get_mapping(r, at.shard, &base, &size));
    for (t = 0; t < VIEW_THREADS; t++) {
      CHECK_U64(jobs[t].status[i], ZT_OK);
      CHECK(jobs[t].got[i].zero_copy);
      CHECK(jobs[t].got[i].data == jobs[0].got[i].data);
      CHECK(jobs[t].got[i].data == (const unsigned char *)base + at.offset);
    }
  }
  zt_close(r);
}

static void test_first_touch_views(void) {
  char path[1200];
  snprintf(path, sizeof path, "%s/sets/safetensors/model.safetensors.index.json", vectors);
  check_first_touch_views(path, 5);
  snprintf(path, sizeof path, "%s/sets/gguf/split-00001-of-00003.gguf", vectors);
  check_first_touch_views(path, 5);
}

/* Every shard of a set has its own layout: the one the shard has opened on its own, and
   each component's offset - data_offset is its offset in its shard's data section. */
static void check_shard_layouts(const char *path) {
  zt_reader *r = NULL;
  size_t i, shards;
  zt_file_layout set_layout, l;
  if (!CHECK_OK(zt_open(path, &r))) return;
  shards = zt_shard_count(r);
  CHECK(shards > 1);
  for (i = 0; i < shards; i++) {
    const char *file = NULL;
    zt_reader *alone = NULL;
    zt_open_options one;
    memset(&one, 0, sizeof one);
    one.flags = ZT_OPEN_ONE_FILE;
    if (!CHECK_OK(zt_shard_get_layout(r, i, &l)) || !CHECK_OK(zt_shard_get_path(r, i, &file))) continue;
    if (CHECK_OK(zt_open_with(file, &one, &alone))) {
      zt_file_layout own;
      CHECK_OK(zt_file_get_layout(alone, &own));
      CHECK_U64(l.data_offset, own.data_offset);
      CHECK_U64(l.alignment, own.alignment);
      zt_close(alone);
    }
  }
  CHECK_OK(zt_file_get_layout(r, &set_layout));
  CHECK_OK(zt_shard_get_layout(r, 0, &l));
  CHECK_U64(set_layout.data_offset, l.data_offset);
  for (i = 0; i < zt_object_count(r); i++) {
    zt_location at;
    CHECK_OK(zt_component_get_location(r, i, 0, &at));
    if (CHECK_OK(zt_shard_get_layout(r, at.shard, &l))) {
      CHECK(at.offset >= l.data_offset);
      CHECK((at.offset - l.data_offset) % l.alignment == 0);
    }
  }
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_shard_get_layout(r, shards, &l));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_shard_get_layout(r, 0, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_shard_get_layout(NULL, 0, &l));
  zt_close(r);
}

static void test_shard_layouts(void) {
  char path[1200];
  zt_reader *r = NULL;
  zt_file_layout l, own;
  snprintf(path, sizeof path, "%s/sets/gguf/split-00001-of-00003.gguf", vectors);
  check_shard_layouts(path);
  snprintf(path, sizeof path, "%s/sets/safetensors/model.safetensors.index.json", vectors);
  check_shard_layouts(path);
  /* A single file: shard 0 is the file's layout, there is no shard 1. */
  snprintf(path, sizeof path, "%s/gguf/plain_v3.gguf", vectors);
  if (CHECK_OK(zt_open(path, &r))) {
    CHECK_OK(zt_shard_get_layout(r, 0, &l));
    CHECK_OK(zt_file_get_layout(r, &own));
    CHECK_U64(l.data_offset, own.data_offset);
    CHECK_U64(l.alignment, own.alignment);
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_shard_get_layout(r, 1, &l));
    zt_close(r);
  }
}

static void test_sharded_writer(void) {
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_writer_options no_sync = {ZT_WRITER_NO_SYNC | ZT_WRITER_V1_2, 0};
  static float data[4][1000];
  uint64_t shape[1] = {1000};
  char name[16];
  size_t i, k;
  for (i = 0; i < 4; i++)
    for (k = 0; k < 1000; k++) data[i][k] = (float)(i * 1000 + k);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_create_sharded_with("set", 0, NULL, &w));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_create_sharded_with(NULL, 10, NULL, &w));
  if (!CHECK_OK(zt_writer_create_sharded_with("set", 6000, &no_sync, &w))) return;
  for (i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "w%zu", i);
    CHECK_OK(zt_writer_add(w, name, ZT_F32, shape, 1, data[i], sizeof data[i], NULL));
  }
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "w0", ZT_F32, shape, 1, data[0], sizeof data[0], NULL));
  CHECK_OK(zt_writer_set_file_attributes_json(w, "{\"model\":\"tiny\"}"));
  CHECK(access("set.zt.index.json", F_OK) != 0);
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  if (CHECK_OK(zt_open("set.zt.index.json", &r))) {
    const char *json = NULL;
    float got[1000];
    CHECK_STR(zt_file_format(r), "zt");
    CHECK_U64(zt_shard_count(r), 4);
    for (i = 0; i < 4; i++) {
      zt_location at;
      snprintf(name, sizeof name, "w%zu", i);
      CHECK_OK(zt_object_find(r, name, &k));
      CHECK_OK(zt_component_get_location(r, k, 0, &at));
      CHECK_U64(at.shard, i);
      CHECK_OK(zt_component_read(r, k, "data", got, sizeof got));
      CHECK_MEM(got, data[i], sizeof got);
    }
    check_against_files(r, 4);
    CHECK_OK(zt_file_get_attributes_json(r, &json));
    CHECK_STR(json, "{\"model\":\"tiny\",\"total_size\":16000}");
    zt_close(r);
  }
  for (i = 1; i <= 4; i++) {
    char file[64];
    snprintf(file, sizeof file, "set-%05zu-of-00004.zt", i);
    CHECK(unlink(file) == 0);
  }
  CHECK(unlink("set.zt.index.json") == 0);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!CHECK(f != NULL)) return;
  fputs(text, f);
  fclose(f);
}

static void test_refused(void) {
  zt_reader *r = NULL;
  zt_location at;
  const char *p = NULL;
  zt_open_options bad;
  write_text("escape.index.json", "{\"weight_map\": {\"a\": \"../a.safetensors\"}}");
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open("escape.index.json", &r));
  CHECK_ERROR_MENTIONS("'../a.safetensors', a path outside the index's directory");
  CHECK(r == NULL);
  write_text("absolute.index.json", "{\"weight_map\": {\"a\": \"/etc/hostname\"}}");
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open("absolute.index.json", &r));
  CHECK_ERROR_MENTIONS("an absolute path");
  write_text("missing.index.json", "{\"weight_map\": {\"a\": \"nope.safetensors\"}}");
  CHECK_STATUS(ZT_ERR_IO, zt_open("missing.index.json", &r));
  CHECK_ERROR_MENTIONS("shard nope.safetensors");
  write_text("broken.index.json", "{\"weight_map\": ");
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open("broken.index.json", &r));
  CHECK_ERROR_MENTIONS("broken.index.json");
  memset(&bad, 0, sizeof bad);
  bad.flags = 0x80000000u; /* no flag (yet) */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_with("missing.index.json", &bad, &r));
  /* A set can't be opened from one descriptor: the message says how to open it. One
     split of a GGUF split set opens from its descriptor as that file alone. */
  {
    char path[1200];
    int fd;
    snprintf(path, sizeof path, "%s/sets/safetensors/model.safetensors.index.json", vectors);
    fd = open(path, O_RDONLY);
    if (CHECK(fd >= 0)) {
      CHECK_STATUS(ZT_ERR_FORMAT, zt_open_fd_with(fd, NULL, &r));
      CHECK_ERROR_MENTIONS("looks like JSON, such as a sharded set's index: a set is opened by the path of its *.index.json");
      CHECK(r == NULL);
      close(fd);
    }
    snprintf(path, sizeof path, "%s/sets/gguf/split-00002-of-00003.gguf", vectors);
    fd = open(path, O_RDONLY);
    if (CHECK(fd >= 0) && CHECK_OK(zt_open_fd_with(fd, NULL, &r))) {
      CHECK_U64(zt_object_count(r), 2);
      CHECK_U64(zt_shard_count(r), 1);
      check_against_files_of(r, path);
      zt_close(r);
      r = NULL;
    }
    if (fd >= 0) close(fd);
  }
  unlink("escape.index.json");
  unlink("absolute.index.json");
  unlink("missing.index.json");
  unlink("broken.index.json");
  /* Arguments. */
  CHECK_U64(zt_shard_count(NULL), 0);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_shard_get_path(NULL, 0, &p));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_location(NULL, 0, 0, &at));
  {
    zt_writer *w = NULL;
    uint8_t b = 7;
    uint64_t shape[1] = {1};
    const void *base = NULL;
    uint64_t size = 0;
    CHECK_OK(zt_test_create_v12("one.zt", &w));
    CHECK_OK(zt_writer_add(w, "b", ZT_U8, shape, 1, &b, 1, NULL));
    CHECK_OK(zt_writer_finish(w));
    zt_writer_free(w);
    if (CHECK_OK(zt_open("one.zt", &r))) {
      CHECK_U64(zt_shard_count(r), 1);
      CHECK_OK(zt_shard_get_path(r, 0, &p));
      CHECK_STR(p, "one.zt");
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_shard_get_path(r, 0, NULL));
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_location(r, 0, 1, &at));
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_location(r, 1, 0, &at));
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_location(r, 0, 0, NULL));
      CHECK_OK(zt_component_get_location(r, 0, 0, &at));
      CHECK_U64(at.shard, 0);
      CHECK_U64(at.offset, 64);
      CHECK_U64(at.length, 1);
      CHECK_OK(zt_shard_get_mapping(r, 0, &base, &size));
      CHECK(((const uint8_t *)base)[64] == 7);
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_shard_get_mapping(r, 0, NULL, &size));
      zt_close(r);
    }
  }
  {
    size_t size = 0;
    unsigned char *bytes = zt_test_slurp("one.zt", &size);
    if (CHECK(bytes != NULL) && CHECK_OK(zt_open_memory(bytes, size, &r))) {
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_shard_get_path(r, 0, &p));
      zt_close(r);
    }
    free(bytes);
  }
  unlink("one.zt");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  snprintf(vectors, sizeof vectors, "%s", argv[1]);
  test_safetensors_index();
  test_gguf_split();
  test_first_touch_views();
  test_shard_layouts();
  test_sharded_writer();
  test_refused();
  return zt_test_summary();
}
