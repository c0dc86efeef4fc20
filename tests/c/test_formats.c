/*
 * safetensors and GGUF files through the same C API as zTensor files: the committed
 * vectors in tests/vectors/{safetensors,gguf} (written by the formats' own Python
 * packages, see tests/interop/make_format_vectors.py) opened with zt_open (mmap),
 * zt_open_with(ZT_OPEN_NO_MMAP) and zt_open_memory. Checks format and version strings,
 * names, shapes, dtypes, logical types, exact values through zero-copy views, file and
 * object attributes as JSON (GGUF key/values, safetensors __metadata__, the block
 * parameters of a quantized GGUF tensor), and the statuses of files that must be refused.
 *
 * Usage: test_formats <repo>/tests/vectors
 */
#include "zt_test.h"

#include <stdbool.h>

enum mode { MODE_MMAP, MODE_PREAD, MODE_MEMORY };
static const char *const MODE_NAMES[] = {"mmap", "pread", "memory"};

typedef struct opened {
  zt_reader *reader;
  void *memory; /* the bytes of MODE_MEMORY, 64-byte aligned; freed by close_file */
  unsigned char *bytes; /* the file's bytes, for comparing views */
  size_t size;
} opened;

/* Opens a vector one way; returns the status. */
static zt_status open_file(const char *vectors, const char *rel, enum mode mode, opened *out) {
  char path[1024];
  zt_status st = ZT_ERR_INTERNAL;
  memset(out, 0, sizeof *out);
  snprintf(path, sizeof path, "%s/%s", vectors, rel);
  out->bytes = zt_test_slurp(path, &out->size);
  if (!CHECK(out->bytes != NULL)) {
    fprintf(stderr, "cannot read %s\n", path);
    return ZT_ERR_IO;
  }
  if (mode == MODE_MMAP) {
    st = zt_open(path, &out->reader);
  } else if (mode == MODE_PREAD) {
    zt_open_options options;
    memset(&options, 0, sizeof options);
    options.flags = ZT_OPEN_NO_MMAP;
    st = zt_open_with(path, &options, &out->reader);
  } else {
    if (posix_memalign(&out->memory, 64, out->size + 1) != 0) {
      out->memory = NULL;
      CHECK(0);
      return ZT_ERR_IO;
    }
    memcpy(out->memory, out->bytes, out->size);
    st = zt_open_memory(out->memory, out->size, &out->reader);
  }
  return st;
}

static void close_file(opened *f) {
  zt_close(f->reader);
  free(f->memory);
  free(f->bytes);
  memset(f, 0, sizeof *f);
}

/* Checks one dense or quantized object: format, shape, dtype, type; returns its index. */
static size_t check_object(const zt_reader *r, const char *name, const char *format, size_t ndim,
                           const uint64_t *shape, uint32_t dtype, const char *type, uint64_t nbytes) {
  size_t index = SIZE_MAX, i;
  zt_object_info info;
  zt_component_info comp;
  if (!CHECK_OK(zt_object_find(r, name, &index))) {
    fprintf(stderr, "  object %s\n", name);
    return SIZE_MAX;
  }
  if (CHECK_OK(zt_object_get_info(r, index, &info))) {
    CHECK_STR(info.name, name);
    CHECK_STR(info.format, format);
    CHECK_U64(info.ndim, ndim);
    for (i = 0; i < ndim && i < info.ndim; i++) {
      CHECK_U64(info.shape[i], shape[i]);
    }
    CHECK_U64(info.component_count, 1);
  }
  if (CHECK_OK(zt_component_get_info(r, index, 0, &comp))) {
    CHECK_STR(comp.role, "data");
    CHECK_U64(comp.dtype, dtype);
    CHECK_STR(comp.type, type);
    CHECK_U64(comp.encoding, ZT_ENCODING_RAW);
    CHECK_U64(comp.decoded_length, nbytes);
    CHECK_U64(comp.length, nbytes);
    CHECK(comp.digest == NULL);
  }
  return index;
}

/* A view of an object's data: the expected bytes, zero-copy unless read with pread. */
static void check_view(const opened *f, enum mode mode, size_t index, const void *expected, size_t n) {
  zt_view v;
  zt_component_info comp;
  if (index == SIZE_MAX || !CHECK_OK(zt_component_view(f->reader, index, "data", &v))) {
    return;
  }
  CHECK_U64(v.size, n);
  CHECK_MEM(v.data, expected, n);
  CHECK(v.zero_copy == (mode != MODE_PREAD));
  if (CHECK_OK(zt_component_get_info(f->reader, index, 0, &comp)) && comp.offset + n <= f->size) {
    /* the stored bytes at the reported offset are the view's bytes */
    CHECK_MEM(f->bytes + comp.offset, expected, n);
    if (mode == MODE_MEMORY) {
      CHECK(v.data == (const unsigned char *)f->memory + comp.offset);
    }
  }
}

static void test_safetensors(const char *vectors, enum mode mode) {
  opened f;
  size_t i, index;
  float w[12];
  const int16_t b[3] = {1, -2, 3};
  const char *json = NULL;
  printf("safetensors (%s)\n", MODE_NAMES[mode]);
  if (!CHECK_OK(open_file(vectors, "safetensors/small.safetensors", mode, &f))) {
    close_file(&f);
    return;
  }
  CHECK_STR(zt_file_format(f.reader), "safetensors");
  CHECK_STR(zt_file_version(f.reader), "1");
  CHECK_U64(zt_object_count(f.reader), 2);
  for (i = 0; i < 12; i++) {
    w[i] = (float)i;
  }
  {
    const uint64_t shape[2] = {3, 4};
    index = check_object(f.reader, "w", "dense", 2, shape, ZT_F32, NULL, sizeof w);
    check_view(&f, mode, index, w, sizeof w);
  }
  {
    const uint64_t shape[1] = {3};
    index = check_object(f.reader, "b", "dense", 1, shape, ZT_I16, NULL, sizeof b);
    check_view(&f, mode, index, b, sizeof b);
  }
  if (CHECK_OK(zt_file_get_attributes_json(f.reader, &json))) {
    CHECK_STR(json, "{}");
  }
  close_file(&f);

  if (!CHECK_OK(open_file(vectors, "safetensors/dtypes.safetensors", mode, &f))) {
    close_file(&f);
    return;
  }
  if (CHECK_OK(zt_file_get_attributes_json(f.reader, &json))) {
    CHECK_CONTAINS(json, "\"format\":\"np\"");
    CHECK_CONTAINS(json, "\"note\":\"\xc3\xbcn\xc3\xaf");
    CHECK_CONTAINS(json, "\"empty\":\"\"");
  }
  {
    const uint64_t scalar_shape[1] = {0};
    const float scalar = 3.5f;
    const uint64_t empty_shape[2] = {0, 3};
    const uint64_t fp8_shape[1] = {5};
    const uint64_t c64_shape[3] = {2, 2, 2};
    const uint64_t rows_shape[2] = {2, 3};
    zt_view v;
    index = check_object(f.reader, "scalar", "dense", 0, scalar_shape, ZT_F32, NULL, 4);
    check_view(&f, mode, index, &scalar, 4);
    index = check_object(f.reader, "empty", "dense", 2, empty_shape, ZT_F32, NULL, 0);
    if (index != SIZE_MAX && CHECK_OK(zt_component_view(f.reader, index, "data", &v))) {
      CHECK_U64(v.size, 0);
    }
    /* fp8 as u8 + its logical type, complex64 as f32 pairs */
    check_object(f.reader, "t.float8_e4m3fn", "dense", 1, fp8_shape, ZT_U8, "f8_e4m3fn", 5);
    check_object(f.reader, "t.float8_e5m2", "dense", 3, c64_shape, ZT_U8, "f8_e5m2", 8);
    check_object(f.reader, "t.complex64", "dense", 3, c64_shape, ZT_F32, "complex64", 64);
    check_object(f.reader, "t.bfloat16", "dense", 2, rows_shape, ZT_BF16, NULL, 12);
    check_object(f.reader, "t.bool", "dense", 2, rows_shape, ZT_BOOL, NULL, 6);
    if (CHECK_OK(zt_object_find(f.reader, "t.bool", &index))) {
      CHECK_OK(zt_object_validate(f.reader, index));
    }
  }
  close_file(&f);
}

static void test_gguf(const char *vectors, enum mode mode) {
  opened f;
  size_t index;
  const char *json = NULL;
  zt_component_info comp;
  printf("gguf (%s)\n", MODE_NAMES[mode]);
  if (!CHECK_OK(open_file(vectors, "gguf/align64_v2.gguf", mode, &f))) {
    close_file(&f);
    return;
  }
  CHECK_STR(zt_file_format(f.reader), "gguf");
  CHECK_STR(zt_file_version(f.reader), "2");
  CHECK_U64(zt_object_count(f.reader), 2);
  {
    const uint64_t a_shape[2] = {2, 3};
    const float a[6] = {0, 1, 2, 3, 4, 5};
    const uint64_t b_shape[1] = {5};
    const int8_t b[5] = {0, 1, 2, 3, 4};
    index = check_object(f.reader, "a", "dense", 2, a_shape, ZT_F32, NULL, sizeof a);
    check_view(&f, mode, index, a, sizeof a);
    if (index != SIZE_MAX && CHECK_OK(zt_component_get_info(f.reader, index, 0, &comp))) {
      CHECK_U64(comp.offset % 64, 0);
    }
    index = check_object(f.reader, "b", "dense", 1, b_shape, ZT_I8, NULL, sizeof b);
    check_view(&f, mode, index, b, sizeof b);
    if (index != SIZE_MAX && CHECK_OK(zt_object_get_attributes_json(f.reader, index, &json))) {
      CHECK_STR(json, "{}");
    }
  }
  if (CHECK_OK(zt_file_get_attributes_json(f.reader, &json))) {
    CHECK_STR(json, "{\"general.architecture\":\"test\",\"general.alignment\":64,\"test.note\":\"v2, alignment 64\"}");
  }
  close_file(&f);

  if (!CHECK_OK(open_file(vectors, "gguf/quant_v3.gguf", mode, &f))) {
    close_file(&f);
    return;
  }
  CHECK_STR(zt_file_version(f.reader), "3");
  {
    /* ne = [32, 2]: two rows of one Q4_0 block (18 bytes) each; shape [2, 32] */
    const uint64_t q4_shape[2] = {2, 32};
    const uint64_t qk_shape[2] = {1, 256};
    index = check_object(f.reader, "q.q4_0", "ggml_q4_0", 2, q4_shape, ZT_U8, "ggml_q4_0", 36);
    if (index != SIZE_MAX && CHECK_OK(zt_object_get_attributes_json(f.reader, index, &json))) {
      CHECK_STR(json, "{\"ggml_type\":\"Q4_0\",\"ggml_type_id\":2,\"block_size\":32,\"type_size\":18}");
    }
    if (index != SIZE_MAX && CHECK_OK(zt_component_get_info(f.reader, index, 0, &comp)) &&
        CHECK(comp.offset + 36 <= f.size)) {
      check_view(&f, mode, index, f.bytes + comp.offset, 36);
    }
    index = check_object(f.reader, "q.q4_k", "ggml_q4_k", 2, qk_shape, ZT_U8, "ggml_q4_k", 144);
    if (index != SIZE_MAX && CHECK_OK(zt_object_get_attributes_json(f.reader, index, &json))) {
      CHECK_STR(json, "{\"ggml_type\":\"Q4_K\",\"ggml_type_id\":12,\"block_size\":256,\"type_size\":144}");
    }
  }
  if (CHECK_OK(zt_file_get_attributes_json(f.reader, &json))) {
    CHECK_STR(json, "{\"general.architecture\":\"test\",\"general.quantization_version\":2}");
  }
  close_file(&f);

  if (!CHECK_OK(open_file(vectors, "gguf/plain_v3.gguf", mode, &f))) {
    close_file(&f);
    return;
  }
  {
    const uint64_t shape[3] = {2, 3, 4};
    index = check_object(f.reader, "f32", "dense", 3, shape, ZT_F32, NULL, 96);
    (void)index;
  }
  if (CHECK_OK(zt_file_get_attributes_json(f.reader, &json))) {
    CHECK_CONTAINS(json, "\"test.i64\":-9223372036854775808");
    CHECK_CONTAINS(json, "\"test.u64\":18446744073709551615");
    CHECK_CONTAINS(json, "\"test.string_not_utf8\":{\"$bytes\":\"6162ff6364\"}");
    CHECK_CONTAINS(json, "\"test.array_nested\":[[1,2],[3]]");
    CHECK_CONTAINS(json, "\"test.bool_false\":false");
  }
  close_file(&f);
}

static void test_refused(const char *vectors, enum mode mode) {
  opened f;
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, open_file(vectors, "gguf/big_endian.gguf", mode, &f));
  CHECK_ERROR_MENTIONS("big-endian");
  CHECK(f.reader == NULL);
  close_file(&f);
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, open_file(vectors, "safetensors/../hostile/st_unknown_dtype.zt", mode, &f));
  CHECK_ERROR_MENTIONS("unknown safetensors dtype \"Q4\"");
  close_file(&f);
}

/* The sub-byte float types of safetensors: packed values read as floats (the values are
   ml_dtypes', checked bit for bit by tests/interop_formats.rs). */
static void test_subbyte(const char *vectors, enum mode mode) {
  opened f;
  size_t i;
  zt_component_info ci;
  float fp4[32], scales[16];
  int32_t ints[32];
  static const float fp4_codes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  if (!CHECK_OK(open_file(vectors, "safetensors/subbyte.safetensors", mode, &f))) return;
  CHECK_OK(zt_object_find(f.reader, "fp4", &i));
  CHECK_OK(zt_component_get_info(f.reader, i, 0, &ci));
  CHECK_U64(ci.dtype, ZT_U8);
  CHECK_STR(ci.type, "f4_e2m1fn_x2");
  CHECK_U64(ci.decoded_length, 16);
  CHECK_OK(zt_component_read_as(f.reader, i, "data", ZT_F32, fp4, sizeof fp4));
  CHECK_MEM(fp4, fp4_codes, sizeof fp4_codes);
  CHECK(fp4[8] == -0.0f && fp4[9] == -0.5f && fp4[15] == -6.0f);
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(f.reader, i, "data", ZT_I32, ints, sizeof ints));
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read_as(f.reader, i, "data", ZT_F32, fp4, 16 * 4));
  CHECK_OK(zt_object_find(f.reader, "scales", &i));
  CHECK_OK(zt_component_read_as(f.reader, i, "data", ZT_F32, scales, sizeof scales));
  CHECK(scales[6] == 1.0f && scales[7] == 2.0f && scales[14] != scales[14]); /* 127, 128, NaN */
  close_file(&f);
}

int main(int argc, char **argv) {
  int m;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors\n", argv[0]);
    return 2;
  }
  for (m = MODE_MMAP; m <= MODE_MEMORY; m++) {
    test_safetensors(argv[1], (enum mode)m);
    test_gguf(argv[1], (enum mode)m);
    test_refused(argv[1], (enum mode)m);
    test_subbyte(argv[1], (enum mode)m);
  }
  return zt_test_summary();
}
