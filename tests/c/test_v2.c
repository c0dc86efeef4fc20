/*
 * zTensor v2 through the C API: writing (ZT_WRITER_V2 in zt_writer_options.flags, objects
 * added out of order, tied weights, zstd, a GGUF block layout, attributes), reading the
 * file back (version "2", zero-copy views sharing one blob, digests, quant info of a
 * gguf.<type>/1 object), the content digest, and the reference conformance corpus when
 * ZTENSOR_V2_CORPUS names it (every file opened three ways and walked through every
 * call; valid files must open, reject files must be refused by some call; none may
 * crash, which is what the asan_ and valgrind_ runs of this program are for).
 *
 * Usage: test_v2 <path to tests/vectors>  (the argument is not used)
 */
#include "zt_test.h"

#include <dirent.h>
#include <unistd.h>

static float weights[1000];

static void write_model(const char *path, uint32_t flags) {
  zt_writer *w = NULL;
  zt_writer_options opts = {0};
  zt_write_options zstd = {ZT_ENCODING_ZSTD, 3, ZT_DIGEST_NONE};
  uint64_t shape[1] = {1000};
  uint64_t qshape[2] = {2, 64};
  unsigned char blocks[4 * 34];
  unsigned char mask[3] = {1, 0, 1};
  uint64_t mshape[1] = {3};
  size_t i;
  for (i = 0; i < 1000; i++) weights[i] = (float)i * 0.5f - 3.0f;
  for (i = 0; i < sizeof blocks; i++) blocks[i] = (unsigned char)(i * 7);
  opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_V2 | flags;
  CHECK_OK(zt_writer_create_with(path, &opts, &w));
  /* Out of name order on purpose: with ZT_WRITER_CANONICAL the blobs still end up in name
     order (reordered at finish); a compact file keeps the written order. */
  CHECK_OK(zt_writer_add(w, "tok.weight", ZT_F32, shape, 1, weights, sizeof weights, NULL));
  CHECK_OK(zt_writer_add(w, "lm_head", ZT_F32, shape, 1, weights, sizeof weights, NULL));
  CHECK_OK(zt_writer_add(w, "mask", ZT_BOOL, mshape, 1, mask, sizeof mask, NULL));
  CHECK_OK(zt_writer_add(w, "packed", ZT_F32, shape, 1, weights, sizeof weights, &zstd));
  CHECK_OK(zt_writer_begin_object(w, "blk.0.q8", "gguf.q8_0/1", qshape, 2));
  CHECK_OK(zt_writer_add_component(w, "data", ZT_U8, NULL, blocks, sizeof blocks, NULL));
  CHECK_OK(zt_writer_set_object_attributes_json(w, "blk.0.q8", "{\"elems_per_block\":32,\"block_bytes\":34}"));
  CHECK_OK(zt_writer_end_object(w));
  CHECK_OK(zt_writer_set_object_attributes_json(w, "tok.weight", "{\"tied\":true}"));
  CHECK_OK(zt_writer_set_file_attributes_json(w, "{\"model\":\"tiny\",\"layers\":1}"));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

static void test_write_and_read(const char *dir) {
  char path[4096], kept[4096];
  zt_reader *r = NULL, *k = NULL;
  zt_object_info oi;
  zt_view a, b, p;
  zt_quant_info q;
  const char *digest = NULL, *again = NULL, *sha = NULL, *kept_digest = NULL;
  size_t i, n;
  snprintf(path, sizeof path, "%s/v2_model.zt", dir);
  snprintf(kept, sizeof kept, "%s/v2_kept.zt", dir);
  write_model(path, ZT_WRITER_CANONICAL);
  write_model(kept, ZT_WRITER_CANONICAL | ZT_WRITER_KEEP_ORDER);

  CHECK_OK(zt_open(path, &r));
  CHECK_STR(zt_file_version(r), "2");
  CHECK_STR(zt_file_format(r), "zt");
  CHECK_U64(zt_object_count(r), 5);
  /* Listed in name order. */
  CHECK_OK(zt_object_get_info(r, 0, &oi));
  CHECK_STR(oi.name, "blk.0.q8");
  CHECK_STR(oi.format, "gguf.q8_0/1");
  CHECK_OK(zt_object_find(r, "tok.weight", &i));
  CHECK_OK(zt_component_view(r, i, "data", &a));
  CHECK_OK(zt_object_find(r, "lm_head", &n));
  CHECK_OK(zt_component_view(r, n, "data", &b));
  CHECK(a.zero_copy && b.zero_copy);
  CHECK(a.data == b.data); /* tied weights: one blob */
  CHECK(((uintptr_t)a.data % 4096) == 0);
  CHECK_MEM(a.data, weights, sizeof weights);
  CHECK_OK(zt_object_find(r, "packed", &i));
  CHECK_OK(zt_component_view(r, i, "data", &p));
  CHECK(!p.zero_copy);
  CHECK_MEM(p.data, weights, sizeof weights);
  CHECK_OK(zt_object_find(r, "mask", &i));
  CHECK_OK(zt_component_view(r, i, "data", &p));
  CHECK_U64(p.dtype, ZT_BOOL);
  CHECK_OK(zt_object_find(r, "blk.0.q8", &i));
  CHECK_OK(zt_object_get_quant_info(r, i, &q));
  CHECK_STR(q.name, "Q8_0");
  CHECK_U64(q.block_size, 32);
  CHECK_U64(q.type_size, 34);
  CHECK_OK(zt_file_verify(r));
  for (i = 0; i < zt_object_count(r); i++) CHECK_OK(zt_object_validate(r, i));

  /* ZT_OPEN_VERIFY checks the xxh3 digests of the decoded bytes while opening. */
  {
    zt_component_info ci;
    zt_open_options o = {0};
    zt_reader *bad = NULL;
    size_t size;
    unsigned char *bytes = zt_test_slurp(path, &size);
    o.flags = ZT_OPEN_VERIFY;
    CHECK_OK(zt_object_find(r, "packed", &i));
    CHECK_OK(zt_component_get_info(r, i, 0, &ci));
    CHECK(bytes != NULL && ci.offset + 16 < size);
    if (bytes != NULL) {
      size_t packed_byte = (size_t)(ci.offset + ci.length - 30); /* in the last frame */
      CHECK_OK(zt_open_memory_with(bytes, size, &o, &bad));
      zt_close(bad);
      bad = NULL;
      bytes[packed_byte] ^= 0x40;
      CHECK(zt_open_memory_with(bytes, size, &o, &bad) != ZT_OK);
      CHECK(bad == NULL);
      bytes[packed_byte] ^= 0x40; /* undo, then break the tied blob */
      CHECK_OK(zt_object_find(r, "lm_head", &i));
      CHECK_OK(zt_component_get_info(r, i, 0, &ci));
      CHECK_OK(zt_open_memory_with(bytes, size, &o, &bad));
      zt_close(bad);
      bad = NULL;
      bytes[ci.offset + 5] ^= 1;
      CHECK_STATUS(ZT_ERR_CHECKSUM, zt_open_memory_with(bytes, size, &o, &bad));
      CHECK_ERROR_MENTIONS("does not match the decoded bytes");
    }
    free(bytes);
  }

  /* The content digest: cached, one per algorithm; the same for the same tensors
     however they were written. */
  CHECK_OK(zt_file_get_content_digest(r, ZT_DIGEST_XXH3, &digest));
  CHECK(digest != NULL && strncmp(digest, "xxh3:", 5) == 0 && strlen(digest) == 21);
  CHECK_OK(zt_file_get_content_digest(r, ZT_DIGEST_XXH3, &again));
  CHECK(again == digest);
  CHECK_OK(zt_file_get_content_digest(r, ZT_DIGEST_SHA256, &sha));
  CHECK(sha != NULL && strncmp(sha, "sha256:", 7) == 0 && strlen(sha) == 71);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_content_digest(r, ZT_DIGEST_CRC32C, &again));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_content_digest(r, 99, &again));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_content_digest(r, ZT_DIGEST_XXH3, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_content_digest(NULL, ZT_DIGEST_XXH3, &again));
  CHECK_OK(zt_open(kept, &k));
  CHECK_OK(zt_file_get_content_digest(k, ZT_DIGEST_XXH3, &kept_digest));
  CHECK_STR(kept_digest, digest);
  zt_close(k);
  zt_close(r);

  /* Canonical bytes don't depend on the order objects were added in; kept order does. */
  {
    size_t na, nb;
    unsigned char *fa = zt_test_slurp(path, &na), *fb = zt_test_slurp(kept, &nb);
    CHECK(fa != NULL && fb != NULL && na == nb);
    CHECK(fa != NULL && fb != NULL && memcmp(fa, fb, na < nb ? na : nb) != 0);
    free(fa);
    free(fb);
  }
  /* A compact file (the default placement) is never canonical: it keeps the written order,
     with or without ZT_WRITER_KEEP_ORDER, and nothing is copied at finish. */
  {
    size_t na, nb;
    unsigned char *fa, *fb;
    write_model(path, 0);
    write_model(kept, ZT_WRITER_KEEP_ORDER);
    fa = zt_test_slurp(path, &na);
    fb = zt_test_slurp(kept, &nb);
    CHECK(fa != NULL && fb != NULL && na == nb && memcmp(fa, fb, na) == 0);
    free(fa);
    free(fb);
    CHECK_OK(zt_open(path, &r));
    CHECK_OK(zt_object_find(r, "tok.weight", &i));
    CHECK_OK(zt_object_find(r, "lm_head", &n));
    {
      zt_component_info ct, cl;
      CHECK_OK(zt_component_get_info(r, i, 0, &ct));
      CHECK_OK(zt_component_get_info(r, n, 0, &cl));
      CHECK(ct.offset == cl.offset); /* tied: one blob, where tok.weight was written */
      CHECK(ct.offset == 4096);
    }
    zt_close(r);
  }
  unlink(path);
  unlink(kept);
}

static void test_options_are_checked(const char *dir) {
  char path[4096];
  zt_writer *w = NULL;
  zt_writer_options opts = {0};
  zt_write_options xxh3 = {ZT_ENCODING_RAW, 0, ZT_DIGEST_XXH3};
  zt_write_options crc = {ZT_ENCODING_RAW, 0, ZT_DIGEST_CRC32C};
  zt_reader *r = NULL;
  const char *d = NULL;
  uint64_t shape[1] = {2};
  float v[2] = {1.0f, 2.0f};
  snprintf(path, sizeof path, "%s/v2_options.zt", dir);
  opts.flags = ZT_WRITER_V2 | ZT_WRITER_V1_2;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_create_with(path, &opts, &w));
  CHECK_ERROR_MENTIONS("ZT_WRITER_V2 and ZT_WRITER_V1_2 together");
  CHECK(w == NULL);
  /* v1.2 records no xxh3; v2 no crc32c. */
  opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_V1_2;
  CHECK_OK(zt_writer_create_with(path, &opts, &w));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "x", ZT_F32, shape, 1, v, sizeof v, &xxh3));
  CHECK_OK(zt_writer_add(w, "y", ZT_F32, shape, 1, v, sizeof v, NULL));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  CHECK_OK(zt_open(path, &r));
  CHECK_STR(zt_file_version(r), "1.2.0");
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_file_get_content_digest(r, ZT_DIGEST_XXH3, &d));
  zt_close(r);
  opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_V2;
  w = NULL;
  CHECK_OK(zt_writer_create_with(path, &opts, &w));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "x", ZT_F32, shape, 1, v, sizeof v, &crc));
  /* A layout v2 doesn't register must be namespaced and versioned. */
  CHECK_OK(zt_writer_begin_object(w, "q", "mylayout", shape, 1));
  CHECK_OK(zt_writer_add_component(w, "data", ZT_U8, NULL, v, 2, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w));
  CHECK_ERROR_MENTIONS("namespaced");
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  unlink(path);
}

/* Writes "x" (two f32) at `path` with `opts` (NULL: the defaults) and reopens it; the
 * reader, or NULL. */
static zt_reader *write_one(const char *path, const zt_writer_options *opts) {
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  uint64_t shape[1] = {2};
  float v[2] = {1.0f, 2.0f};
  if (!CHECK_OK(zt_writer_create_with(path, opts, &w))) return NULL;
  CHECK_OK(zt_writer_add(w, "x", ZT_F32, shape, 1, v, sizeof v, NULL));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  if (!CHECK_OK(zt_open(path, &r))) return NULL;
  return r;
}

/* New files are zTensor v2 unless asked otherwise; the format goes by the options
 * (with ZT_WRITER_HAS_FORMAT) or the path's extension; a program built against the
 * earlier header (a struct of flags alone) keeps working; v2's placement is a flag. */
static void test_defaults_formats_and_placement(const char *dir) {
  char path[4096];
  zt_reader *r;
  zt_writer *w = NULL;
  zt_writer_options opts = {0};
  uint32_t old_struct = ZT_WRITER_NO_SYNC; /* what an earlier header's zt_writer_options was */
  zt_component_info ci;
  snprintf(path, sizeof path, "%s/default.zt", dir);
  if ((r = write_one(path, NULL)) != NULL) {
    CHECK_STR(zt_file_version(r), "2");
    CHECK_STR(zt_file_format(r), "zt");
    zt_close(r);
  }
  unlink(path);
  /* The earlier struct: 4 bytes, no format field read. */
  if ((r = write_one(path, (const zt_writer_options *)(const void *)&old_struct)) != NULL) {
    CHECK_STR(zt_file_version(r), "2");
    zt_close(r);
  }
  unlink(path);
  /* By extension. */
  snprintf(path, sizeof path, "%s/by_name.safetensors", dir);
  if ((r = write_one(path, NULL)) != NULL) {
    CHECK_STR(zt_file_format(r), "safetensors");
    zt_close(r);
  }
  unlink(path);
  snprintf(path, sizeof path, "%s/by_name.gguf", dir);
  if ((r = write_one(path, NULL)) != NULL) {
    CHECK_STR(zt_file_format(r), "gguf");
    CHECK_STR(zt_file_version(r), "3");
    zt_close(r);
  }
  unlink(path);
  /* By the options, whatever the name; without ZT_WRITER_HAS_FORMAT the field is not read. */
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_HAS_FORMAT;
  opts.format = ZT_WRITER_FORMAT_SAFETENSORS;
  if ((r = write_one(path, &opts)) != NULL) {
    CHECK_STR(zt_file_format(r), "safetensors");
    zt_close(r);
  }
  unlink(path);
  opts.format = ZT_WRITER_FORMAT_GGUF;
  if ((r = write_one(path, &opts)) != NULL) {
    CHECK_STR(zt_file_format(r), "gguf");
    zt_close(r);
  }
  unlink(path);
  opts.flags = ZT_WRITER_NO_SYNC;
  if ((r = write_one(path, &opts)) != NULL) {
    CHECK_STR(zt_file_format(r), "zt");
    zt_close(r);
  }
  unlink(path);
  opts.flags = ZT_WRITER_HAS_FORMAT;
  opts.format = 4;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_create_with(path, &opts, &w));
  CHECK_ERROR_MENTIONS("unknown writer format value 4");
  /* Placement: 4 KiB by default and with ZT_WRITER_COMPACT, 64 KiB with
     ZT_WRITER_CANONICAL. */
  snprintf(path, sizeof path, "%s/placed.zt", dir);
  opts.format = 0;
  opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_V2;
  if ((r = write_one(path, &opts)) != NULL) {
    if (CHECK_OK(zt_component_get_info(r, 0, 0, &ci))) CHECK_U64(ci.offset, 4096);
    zt_close(r);
  }
  unlink(path);
  opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_COMPACT;
  if ((r = write_one(path, &opts)) != NULL) {
    if (CHECK_OK(zt_component_get_info(r, 0, 0, &ci))) CHECK_U64(ci.offset, 4096);
    zt_close(r);
  }
  unlink(path);
  opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_CANONICAL;
  if ((r = write_one(path, &opts)) != NULL) {
    if (CHECK_OK(zt_component_get_info(r, 0, 0, &ci))) CHECK_U64(ci.offset, 65536);
    zt_close(r);
  }
  unlink(path);
  opts.flags = ZT_WRITER_COMPACT | ZT_WRITER_CANONICAL;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_create_with(path, &opts, &w));
  CHECK_ERROR_MENTIONS("one placement");
}

/* Writes tensors a (f32 [2,3]), b (i8 [5]), c (f16 [4]) and q (a q8_0 block, GGUF only)
 * to `path` in the format `format`, with one file attribute; declared first when
 * `declared` is 1 (then added in the reverse of zt_writer_declared_order, every tensor
 * away from the cursor but the last), declared with their data when it is 2 (written by
 * zt_writer_finish). Returns the file's bytes (free them) or NULL. */
static unsigned char *write_abc(const char *path, uint32_t format, int declared, size_t *size) {
  zt_writer *w = NULL;
  zt_writer_options opts = {0};
  zt_value *v = NULL;
  static const char *names[4] = {"a", "b", "c", "q"};
  static const uint32_t dtypes[4] = {ZT_F32, ZT_I8, ZT_F16, ZT_U8};
  static const uint64_t shapes[4][2] = {{2, 3}, {5, 0}, {4, 0}, {32, 0}};
  static const size_t ndims[4] = {2, 1, 1, 1}, sizes[4] = {24, 5, 8, 34};
  unsigned char data[4][40];
  size_t order[4], count = 0, n = format == ZT_WRITER_FORMAT_GGUF ? 4 : 3, i, k;
  for (i = 0; i < 4; i++) memset(data[i], (int)(0x11 * (i + 1)), sizeof data[i]);
  opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_HAS_FORMAT;
  opts.format = format;
  if (!CHECK_OK(zt_writer_create_with(path, &opts, &w))) return NULL;
  CHECK_OK(zt_value_create_string("x", 1, &v));
  CHECK_OK(zt_writer_set_file_attribute(w, "general.name", v));
  if (declared == 2) {
    for (i = 0; i < n; i++) {
      CHECK_OK(zt_writer_declare_data(w, names[i], i == 3 ? "ggml_q8_0" : NULL, dtypes[i], NULL, shapes[i], ndims[i],
                                      data[i], sizes[i]));
    }
    n = 0; /* nothing to add */
  } else if (declared) {
    for (i = 0; i < n; i++) {
      CHECK_OK(zt_writer_declare(w, names[i], i == 3 ? "ggml_q8_0" : NULL, dtypes[i], NULL, shapes[i], ndims[i]));
    }
    CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_writer_declared_order(w, NULL, 0, &count));
    CHECK_U64(count, n);
    CHECK_OK(zt_writer_declared_order(w, order, 4, &count));
  } else {
    for (i = 0; i < n; i++) order[i] = n - 1 - i;
  }
  for (k = 0; k < n; k++) {
    i = order[n - 1 - k];
    if (i == 3) {
      CHECK_OK(zt_writer_begin_object(w, names[i], "ggml_q8_0", shapes[i], ndims[i]));
      CHECK_OK(zt_writer_add_component(w, "data", ZT_U8, "ggml_q8_0", data[i], sizes[i], NULL));
      CHECK_OK(zt_writer_end_object(w));
    } else {
      CHECK_OK(zt_writer_add(w, names[i], dtypes[i], shapes[i], ndims[i], data[i], sizes[i], NULL));
    }
  }
  if (declared == 1) {
    /* The header is written: the attributes are fixed. */
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_set_file_attribute(w, "late", v));
    CHECK_ERROR_MENTIONS("before the first tensor's data");
  }
  zt_value_free(v);
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  return zt_test_slurp(path, size);
}

/* Tensors declared before their data: safetensors and GGUF written in one pass, byte for
 * byte the spooled file, in any order added; what breaks the declaration refused. */
static void test_declared(const char *dir) {
  char path[4096], other[4096];
  uint32_t formats[2] = {ZT_WRITER_FORMAT_SAFETENSORS, ZT_WRITER_FORMAT_GGUF};
  int f;
  for (f = 0; f < 2; f++) {
    size_t a_size = 0, b_size = 0, order[3], count = 0;
    unsigned char *a, *b;
    zt_writer *w = NULL;
    zt_writer_options opts = {0};
    uint64_t shape[1] = {2}, wrong[1] = {3};
    float two[2] = {1.0f, 2.0f};
    snprintf(path, sizeof path, "%s/declared.bin", dir);
    snprintf(other, sizeof other, "%s/spooled.bin", dir);
    a = write_abc(path, formats[f], 1, &a_size);
    b = write_abc(other, formats[f], 0, &b_size);
    if (CHECK(a != NULL && b != NULL) && CHECK_U64(a_size, b_size)) CHECK_MEM(a, b, a_size);
    free(a);
    a = write_abc(path, formats[f], 2, &a_size);
    if (CHECK(a != NULL && b != NULL) && CHECK_U64(a_size, b_size)) CHECK_MEM(a, b, a_size);
    free(a);
    free(b);
    unlink(path);
    unlink(other);
    /* Refusals, the writer usable after each. */
    opts.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_HAS_FORMAT;
    opts.format = formats[f];
    if (!CHECK_OK(zt_writer_create_with(path, &opts, &w))) continue;
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declare(w, NULL, NULL, ZT_F32, NULL, shape, 1));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declare(w, "s", "sparse_csr", ZT_F32, NULL, shape, 1));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declare(w, "n", NULL, ZT_F32, NULL, NULL, 1));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declare(w, "d", NULL, 99, NULL, shape, 1));
    CHECK_OK(zt_writer_declare(w, "x", NULL, ZT_F32, NULL, shape, 1));
    CHECK_OK(zt_writer_declare(w, "y", "dense", ZT_F32, NULL, shape, 1));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declare(w, "x", NULL, ZT_F32, NULL, shape, 1));
    CHECK_ERROR_MENTIONS("already declared");
    /* Declared with data: the size must be the shape's; the bytes must be there. */
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declare_data(w, "v", NULL, ZT_F32, NULL, shape, 1, two, 4));
    CHECK_ERROR_MENTIONS("4 bytes given");
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declare_data(w, "v", NULL, ZT_F32, NULL, shape, 1, NULL, 8));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declare_data(w, "x", NULL, ZT_F32, NULL, shape, 1, two, 8));
    CHECK_ERROR_MENTIONS("already declared");
    CHECK_OK(zt_writer_declare_data(w, "v", NULL, ZT_F32, NULL, shape, 1, two, sizeof two));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "v", ZT_F32, shape, 1, two, sizeof two, NULL));
    CHECK_ERROR_MENTIONS("declared with its data");
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_declared_order(w, order, 3, NULL));
    CHECK_OK(zt_writer_declared_order(w, order, 3, &count));
    CHECK_U64(count, 3);
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "z", ZT_F32, shape, 1, two, sizeof two, NULL));
    CHECK_ERROR_MENTIONS("'z' was not declared");
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "x", ZT_F32, wrong, 1, two, sizeof two, NULL));
    CHECK_OK(zt_writer_add(w, "y", ZT_F32, shape, 1, two, sizeof two, NULL));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_declare(w, "w", NULL, ZT_F32, NULL, shape, 1));
    /* Too many bytes streamed: refused before they are written. */
    CHECK_OK(zt_writer_begin_object(w, "x", "dense", shape, 1));
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_F32, NULL, NULL));
    CHECK_OK(zt_writer_write(w, two, 4));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_write(w, two, sizeof two));
    CHECK_ERROR_MENTIONS("declared 8 bytes");
    CHECK_OK(zt_writer_write(w, two + 1, 4));
    CHECK_OK(zt_writer_end_component(w));
    CHECK_OK(zt_writer_end_object(w));
    CHECK_OK(zt_writer_finish(w));
    zt_writer_free(w);
    /* A missing tensor: finish refuses, the writer stays usable. */
    if (!CHECK_OK(zt_writer_create_with(path, &opts, &w))) continue;
    CHECK_OK(zt_writer_declare(w, "x", NULL, ZT_F32, NULL, shape, 1));
    CHECK_OK(zt_writer_declare(w, "y", NULL, ZT_F32, NULL, shape, 1));
    CHECK_OK(zt_writer_add(w, "y", ZT_F32, shape, 1, two, sizeof two, NULL));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_finish(w));
    CHECK_ERROR_MENTIONS("'x' was declared but not written");
    CHECK_OK(zt_writer_add(w, "x", ZT_F32, shape, 1, two, sizeof two, NULL));
    CHECK_OK(zt_writer_finish(w));
    zt_writer_free(w);
    {
      zt_reader *r = NULL;
      if (CHECK_OK(zt_open(path, &r))) {
        float back[2] = {0};
        size_t x = 0;
        CHECK_U64(zt_object_count(r), 2);
        if (CHECK_OK(zt_object_find(r, "x", &x)) && CHECK_OK(zt_component_read(r, x, "data", back, sizeof back)))
          CHECK_MEM(back, two, sizeof two);
        zt_close(r);
      }
    }
    unlink(path);
  }
}

/* One walk over every call of a reader; returns the first failing status. */
static zt_status walk(const zt_reader *r) {
  zt_status first = ZT_OK, s;
  size_t i, c;
  const char *json = NULL;
#define NOTE(call)                                     \
  do {                                                 \
    s = (call);                                        \
    if (s != ZT_OK && s != ZT_ERR_NOT_FOUND && first == ZT_OK) first = s; \
  } while (0)
  for (i = 0; i < zt_object_count(r); i++) {
    zt_object_info oi;
    if (zt_object_get_info(r, i, &oi) != ZT_OK) continue;
    for (c = 0; c < oi.component_count; c++) {
      zt_component_info ci;
      zt_view v;
      unsigned char *buf;
      if (zt_component_get_info(r, i, c, &ci) != ZT_OK) continue;
      buf = (unsigned char *)malloc(ci.decoded_length > 0 && ci.decoded_length < (1u << 26) ? (size_t)ci.decoded_length : 1);
      if (ci.decoded_length < (1u << 26)) NOTE(zt_component_read(r, i, ci.role, buf, (size_t)ci.decoded_length));
      free(buf);
      NOTE(zt_component_view(r, i, ci.role, &v));
      NOTE(zt_component_verify(r, i, ci.role));
    }
    NOTE(zt_object_validate(r, i));
    NOTE(zt_object_get_attributes_json(r, i, &json));
  }
  NOTE(zt_file_get_attributes_json(r, &json));
  NOTE(zt_file_verify(r));
#undef NOTE
  return first;
}

static void run_corpus(const char *corpus) {
  const char *kinds[2] = {"valid", "reject"};
  int k;
  long opened = 0, refused = 0;
  for (k = 0; k < 2; k++) {
    char dir[4096];
    DIR *d;
    struct dirent *e;
    snprintf(dir, sizeof dir, "%s/%s", corpus, kinds[k]);
    d = opendir(dir);
    if (!CHECK(d != NULL)) continue;
    while ((e = readdir(d)) != NULL) {
      char path[8192];
      size_t size, mode;
      unsigned char *bytes;
      if (strstr(e->d_name, ".zt") == NULL) continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      bytes = zt_test_slurp(path, &size);
      for (mode = 0; mode < 3; mode++) {
        zt_reader *r = NULL;
        zt_open_options o = {0};
        zt_status s;
        o.flags = ZT_OPEN_NO_MMAP;
        s = mode == 0 ? zt_open(path, &r)
            : mode == 1 ? zt_open_with(path, &o, &r)
                        : zt_open_memory(bytes, size, &r);
        if (s == ZT_OK) s = walk(r);
        zt_close(r);
        if (k == 0) {
          /* A valid file opens; reading a part in a missing shard, verifying packed fp4
             filler or viewing an unknown encoding may still fail later. */
          if (!zt_test_report(mode == 2 || s == ZT_OK || s == ZT_ERR_IO || s == ZT_ERR_FORMAT ||
                                  s == ZT_ERR_UNSUPPORTED || s == ZT_ERR_NOT_FOUND,
                              __FILE__, __LINE__, "%s (mode %zu): %s: %s", e->d_name, mode,
                              zt_status_name(s), zt_last_error()))
            continue;
        } else {
          zt_test_report(s != ZT_OK, __FILE__, __LINE__, "%s (mode %zu) was not refused", e->d_name, mode);
        }
      }
      if (k == 0) {
        zt_reader *r = NULL;
        if (CHECK_OK(zt_open(path, &r))) opened++;
        zt_close(r);
      } else {
        refused++;
      }
      free(bytes);
    }
    closedir(d);
  }
  printf("zTensor v2 corpus: %ld valid opened, %ld reject refused\n", opened, refused);
}

int main(int argc, char **argv) {
  char dir[] = "/tmp/zt_test_v2_XXXXXX";
  const char *corpus = getenv("ZTENSOR_V2_CORPUS");
  (void)argc;
  (void)argv;
  if (!CHECK(mkdtemp(dir) != NULL)) return zt_test_summary();
  test_write_and_read(dir);
  test_options_are_checked(dir);
  test_defaults_formats_and_placement(dir);
  test_declared(dir);
  rmdir(dir);
  if (corpus != NULL && corpus[0] != '\0') {
    run_corpus(corpus);
  } else {
    printf("corpus skipped: ZTENSOR_V2_CORPUS is not set (the zTensor v2 conformance corpus "
           "lives in github.com/pie-project/ztensor, not here)\n");
  }
  return zt_test_summary();
}
