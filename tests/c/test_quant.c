/*
 * Block-quantized (ggml) objects through the C API: zt_object_get_quant_info for every
 * ggml type, zt_file_get_layout, zt_component_read_as dequantizing to f32, f16 and bf16
 * exactly as gguf-py does (the committed values of tests/vectors/dequant/, written by
 * tests/interop/make_dequant_vectors.py), zt_component_read_as_range by rows, GGUF files
 * with ggml type 42 and with unknown type ids (they open; only those tensors fail),
 * zt_object_get_ggml_type of every tensor (dense ones and other formats' too), and every
 * refusal with its exact status and message.
 *
 * Usage: test_quant <repo>/tests/vectors
 */
#include "zt_test.h"

#include <math.h>

/* --- a GGUF file built in memory --------------------------------------------------- */

typedef struct gguf {
  unsigned char *bytes;
  size_t size, cap;
} gguf;

static void put(gguf *g, const void *p, size_t n) {
  if (g->size + n > g->cap) {
    g->cap = (g->size + n) * 2 + 64;
    g->bytes = (unsigned char *)realloc(g->bytes, g->cap);
    if (g->bytes == NULL) {
      abort();
    }
  }
  memcpy(g->bytes + g->size, p, n);
  g->size += n;
}

static void put_u32(gguf *g, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  put(g, b, 4);
}

static void put_u64(gguf *g, uint64_t v) {
  put_u32(g, (uint32_t)v);
  put_u32(g, (uint32_t)(v >> 32));
}

typedef struct tensor {
  const char *name;
  uint64_t ne0, ne1; /* ggml's order: ne[0] varies fastest */
  uint32_t type;
  const void *data;
  size_t size; /* bytes written for it (0 for a type whose size is unknown) */
} tensor;

/* GGUF v3, no key/values, alignment 32, tensors packed in order. */
static gguf gguf_file(const tensor *t, size_t n) {
  gguf g = {NULL, 0, 0};
  uint64_t offset = 0;
  size_t i;
  static const unsigned char zeros[32] = {0};
  put(&g, "GGUF", 4);
  put_u32(&g, 3);
  put_u64(&g, n);
  put_u64(&g, 0);
  for (i = 0; i < n; i++) {
    put_u64(&g, strlen(t[i].name));
    put(&g, t[i].name, strlen(t[i].name));
    put_u32(&g, 2);
    put_u64(&g, t[i].ne0);
    put_u64(&g, t[i].ne1);
    put_u32(&g, t[i].type);
    put_u64(&g, offset);
    offset += (t[i].size + 31) / 32 * 32;
  }
  put(&g, zeros, (32 - g.size % 32) % 32);
  for (i = 0; i < n; i++) {
    put(&g, t[i].data, t[i].size);
    put(&g, zeros, (32 - t[i].size % 32) % 32);
  }
  return g;
}

/* Opens bytes held in memory (messages then carry no path). */
static zt_reader *open_bytes(const gguf *g) {
  zt_reader *r = NULL;
  if (!CHECK_OK(zt_open_memory(g->bytes, g->size, &r))) {
    return NULL;
  }
  return r;
}

/* The last error is exactly `message`. */
#define CHECK_ERROR_IS(message) CHECK_STR(zt_last_error(), message)

/* --- every ggml type ------------------------------------------------------------------ */

typedef struct ggml_row {
  uint32_t id;
  const char *name;
  uint64_t block_size, type_size;
  bool dequantizable;
} ggml_row;

/* Every block type of ggml.h's enum ggml_type (ids 0-42 today), from ggml-common.h. */
static const ggml_row TYPES[] = {
    {2, "Q4_0", 32, 18, true},      {3, "Q4_1", 32, 20, true},       {6, "Q5_0", 32, 22, true},
    {7, "Q5_1", 32, 24, true},      {8, "Q8_0", 32, 34, true},       {9, "Q8_1", 32, 36, false},
    {10, "Q2_K", 256, 84, true},    {11, "Q3_K", 256, 110, true},    {12, "Q4_K", 256, 144, true},
    {13, "Q5_K", 256, 176, true},   {14, "Q6_K", 256, 210, true},    {15, "Q8_K", 256, 292, true},
    {16, "IQ2_XXS", 256, 66, true}, {17, "IQ2_XS", 256, 74, true},   {18, "IQ3_XXS", 256, 98, true},
    {19, "IQ1_S", 256, 50, true},   {20, "IQ4_NL", 32, 18, true},    {21, "IQ3_S", 256, 110, true},
    {22, "IQ2_S", 256, 82, true},   {23, "IQ4_XS", 256, 136, true},  {29, "IQ1_M", 256, 56, true},
    {31, "Q4_0_4_4", 32, 18, false}, {32, "Q4_0_4_8", 32, 18, false}, {33, "Q4_0_8_8", 32, 18, false},
    {34, "TQ1_0", 256, 54, true},   {35, "TQ2_0", 256, 66, true},    {36, "IQ4_NL_4_4", 32, 18, false},
    {39, "MXFP4", 32, 17, true},    {40, "NVFP4", 64, 36, true},     {41, "Q1_0", 128, 18, true},
    {42, "Q2_0", 64, 18, true},
};
#define TYPE_COUNT (sizeof TYPES / sizeof TYPES[0])

/* One tensor of 3 rows of two blocks per ggml block type, then one of each plain type. */
static void quant_info_of_every_type(void) {
  static unsigned char data[3 * 2 * 292];
  tensor t[TYPE_COUNT + 8];
  char names[TYPE_COUNT + 8][32];
  static const uint32_t plain[8] = {0, 1, 24, 25, 26, 27, 28, 30};
  static const uint64_t plain_size[8] = {4, 2, 1, 2, 4, 8, 8, 2};
  size_t i, n = 0;
  memset(data, 0x11, sizeof data);
  for (i = 0; i < TYPE_COUNT; i++, n++) {
    snprintf(names[n], sizeof names[n], "t%u", TYPES[i].id);
    t[n].name = names[n];
    t[n].ne0 = 2 * TYPES[i].block_size;
    t[n].ne1 = 3;
    t[n].type = TYPES[i].id;
    t[n].data = data;
    t[n].size = (size_t)(3 * 2 * TYPES[i].type_size);
  }
  for (i = 0; i < 8; i++, n++) {
    snprintf(names[n], sizeof names[n], "p%u", plain[i]);
    t[n].name = names[n];
    t[n].ne0 = 4;
    t[n].ne1 = 3;
    t[n].type = plain[i];
    t[n].data = data;
    t[n].size = (size_t)(12 * plain_size[i]);
  }
  gguf g = gguf_file(t, n);
  zt_reader *r = open_bytes(&g);
  if (r != NULL) {
    CHECK_U64(zt_object_count(r), n);
    for (i = 0; i < TYPE_COUNT; i++) {
      zt_quant_info q;
      zt_object_info info;
      zt_component_info comp;
      memset(&q, 0xee, sizeof q);
      if (!CHECK_OK(zt_object_get_quant_info(r, i, &q))) {
        continue;
      }
      CHECK_U64(q.ggml_type, TYPES[i].id);
      CHECK_STR(q.name, TYPES[i].name);
      CHECK_STR(q.role, "data");
      CHECK_U64(q.block_size, TYPES[i].block_size);
      CHECK_U64(q.type_size, TYPES[i].type_size);
      CHECK_U64(q.row_size, 2 * TYPES[i].type_size);
      CHECK_U64(q.row_count, 3);
      CHECK(q.dequantizable == TYPES[i].dequantizable);
      /* The shape is row-major; ggml's ne[] is it reversed: ne[i] = shape[ndim - 1 - i]. */
      if (CHECK_OK(zt_object_get_info(r, i, &info)) && CHECK(info.ndim == 2)) {
        CHECK_U64(info.shape[info.ndim - 1 - 0], 2 * TYPES[i].block_size); /* ne[0] */
        CHECK_U64(info.shape[info.ndim - 1 - 1], 3);                       /* ne[1] */
      }
      if (CHECK_OK(zt_component_get_info(r, i, 0, &comp))) {
        CHECK_U64(comp.decoded_length, q.row_count * q.row_size);
        CHECK_U64(comp.dtype, ZT_U8);
      }
    }
    for (i = TYPE_COUNT; i < n; i++) {
      zt_quant_info q;
      char want[128];
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_quant_info(r, i, &q));
      snprintf(want, sizeof want,
               "object '%s' (dense) is not block-quantized: none of its components holds ggml blocks",
               names[i]);
      CHECK_ERROR_IS(want);
    }
    {
      zt_quant_info q;
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_get_quant_info(r, 0, NULL));
      CHECK_ERROR_IS("out is NULL");
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_get_quant_info(NULL, 0, &q));
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_quant_info(r, n, &q));
    }
  }
  zt_close(r);
  free(g.bytes);
}

/* The committed GGUF written by gguf-py: every object of quant_v3.gguf explains itself. */
static void quant_info_of_a_gguf_py_file(const char *vectors) {
  char path[1024];
  zt_reader *r = NULL;
  size_t i, j, found = 0;
  snprintf(path, sizeof path, "%s/gguf/quant_v3.gguf", vectors);
  if (!CHECK_OK(zt_open(path, &r))) {
    return;
  }
  for (i = 0; i < zt_object_count(r); i++) {
    zt_quant_info q;
    zt_object_info info;
    if (!CHECK_OK(zt_object_get_quant_info(r, i, &q)) || !CHECK_OK(zt_object_get_info(r, i, &info))) {
      continue;
    }
    for (j = 0; j < TYPE_COUNT; j++) {
      if (TYPES[j].id == q.ggml_type) {
        char name[32];
        size_t k;
        found++;
        CHECK_STR(q.name, TYPES[j].name);
        CHECK_U64(q.block_size, TYPES[j].block_size);
        CHECK_U64(q.type_size, TYPES[j].type_size);
        /* The object is "q." and the lower-case name; one block per row. */
        snprintf(name, sizeof name, "q.%s", TYPES[j].name);
        for (k = 0; name[k] != '\0'; k++) {
          name[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] - 'A' + 'a' : name[k]);
        }
        CHECK_STR(info.name, name);
        CHECK_U64(q.row_size, TYPES[j].type_size);
        CHECK_U64(q.row_count, info.shape[0]);
      }
    }
  }
  CHECK_U64(found, zt_object_count(r));
  CHECK_U64(found, 25); /* every block type gguf-py 0.19 knows but Q8_1 (it sizes it the old way) */
  zt_close(r);
}

/* --- values: the committed expectations of gguf.quants.dequantize ---------------------- */

/* True for a NaN of `dtype` (ZT_F32, ZT_F16 or ZT_BF16) at `v`. */
static int is_nan(const unsigned char *v, uint32_t dtype) {
  if (dtype == ZT_F32) {
    float f;
    memcpy(&f, v, 4);
    return isnan(f);
  } else {
    unsigned h = (unsigned)v[0] | (unsigned)v[1] << 8;
    unsigned exp = dtype == ZT_F16 ? 0x7c00u : 0x7f80u;
    return (h & exp) == exp && (h & ~(exp | 0x8000u)) != 0;
  }
}

/* The first of `count` values of `dtype` whose bits differ (unless both are NaN: their
   payloads are the CPU's choice); SIZE_MAX when none does. */
static size_t first_difference(const unsigned char *a, const unsigned char *b, size_t count, uint32_t dtype) {
  size_t i, w = dtype == ZT_F32 ? 4 : 2;
  for (i = 0; i < count; i++) {
    if (memcmp(a + i * w, b + i * w, w) != 0 && !(is_nan(a + i * w, dtype) && is_nan(b + i * w, dtype))) {
      return i;
    }
  }
  return SIZE_MAX;
}

static void dequantized_values_match_gguf_py(const char *vectors) {
  static const char *const FILES[3] = {"dequant.f32", "dequant.f16", "dequant.bf16"};
  static const uint32_t DTYPES[3] = {ZT_F32, ZT_F16, ZT_BF16};
  static const size_t WIDTHS[3] = {4, 2, 2};
  unsigned char *expected[3];
  size_t sizes[3], k, i;
  char path[1024];
  zt_reader *r = NULL;
  uint64_t at = 0;
  for (k = 0; k < 3; k++) {
    snprintf(path, sizeof path, "%s/dequant/%s", vectors, FILES[k]);
    expected[k] = zt_test_slurp(path, &sizes[k]);
    CHECK(expected[k] != NULL);
  }
  snprintf(path, sizeof path, "%s/dequant/dequant.gguf", vectors);
  if (expected[0] != NULL && expected[1] != NULL && expected[2] != NULL && CHECK_OK(zt_open(path, &r))) {
    CHECK_U64(zt_object_count(r), 58);
    for (i = 0; i < zt_object_count(r); i++) {
      zt_object_info info;
      uint64_t values, row;
      if (!CHECK_OK(zt_object_get_info(r, i, &info)) || !CHECK(info.ndim == 2)) {
        continue;
      }
      values = info.shape[0] * info.shape[1];
      row = info.shape[1];
      if (!CHECK((at + values) * 4 <= sizes[0])) {
        break;
      }
      for (k = 0; k < 3; k++) {
        size_t w = WIDTHS[k], bad;
        unsigned char *out = (unsigned char *)malloc((size_t)values * w);
        uint64_t r0;
        if (!CHECK(out != NULL)) {
          continue;
        }
        if (CHECK_OK(zt_component_read_as(r, i, "data", DTYPES[k], out, (size_t)values * w))) {
          bad = first_difference(out, expected[k] + at * w, (size_t)values, DTYPES[k]);
          if (!CHECK(bad == SIZE_MAX)) {
            fprintf(stderr, "  %s as %s: value %zu differs\n", info.name, FILES[k], bad);
          }
        }
        /* Row by row through range reads. */
        memset(out, 0, (size_t)values * w);
        for (r0 = 0; r0 < info.shape[0]; r0++) {
          CHECK_OK(zt_component_read_as_range(r, i, "data", DTYPES[k], r0 * row, out + r0 * row * w,
                                              (size_t)(row * w)));
        }
        bad = first_difference(out, expected[k] + at * w, (size_t)values, DTYPES[k]);
        if (!CHECK(bad == SIZE_MAX)) {
          fprintf(stderr, "  %s as %s by rows: value %zu differs\n", info.name, FILES[k], bad);
        }
        free(out);
      }
      at += values;
    }
    CHECK_U64(at * 4, sizes[0]);
    {
      /* GGUF's data section: the first tensor starts it; alignment 32 (the default). */
      zt_file_layout l;
      zt_component_info first;
      if (CHECK_OK(zt_file_get_layout(r, &l)) && CHECK_OK(zt_component_get_info(r, 0, 0, &first))) {
        CHECK_U64(l.alignment, 32);
        CHECK_U64(l.data_offset, first.offset);
        CHECK_U64(l.data_offset % 32, 0);
      }
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_layout(r, NULL));
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_layout(NULL, &l));
    }
  }
  zt_close(r);
  for (k = 0; k < 3; k++) {
    free(expected[k]);
  }
}

/* --- exact values and refusals on hand-made blocks ------------------------------------- */

/* 2 rows of two Q4_0 blocks: d = 0.5 and -2 (row 0), 1 and 0.25 (row 1); nibble j of a
   block is j % 16. Value j of a block is (j % 16 - 8) x d. */
static const uint16_t Q4_D[4] = {0x3800, 0xc000, 0x3c00, 0x3400};
static const float Q4_F[4] = {0.5f, -2.0f, 1.0f, 0.25f};

static void q4_blocks(unsigned char *out) {
  size_t b, j;
  for (b = 0; b < 4; b++) {
    out[b * 18] = (unsigned char)Q4_D[b];
    out[b * 18 + 1] = (unsigned char)(Q4_D[b] >> 8);
    for (j = 0; j < 16; j++) {
      out[b * 18 + 2 + j] = (unsigned char)(j | j << 4);
    }
  }
}

static void exact_values_and_refusals(void) {
  unsigned char q4[72], q8_1[36];
  float out[128], want[128];
  unsigned char bytes[128 * 4];
  size_t i;
  q4_blocks(q4);
  memset(q8_1, 0, sizeof q8_1);
  for (i = 0; i < 128; i++) {
    want[i] = (float)((int)(i % 16) - 8) * Q4_F[i / 32];
  }
  tensor t[3] = {{"q4", 64, 2, 2, q4, sizeof q4},
                 {"q8_1", 32, 1, 9, q8_1, sizeof q8_1},
                 {"w", 4, 1, 0, want, 16}};
  gguf g = gguf_file(t, 3);
  zt_reader *r = open_bytes(&g);
  if (r == NULL) {
    free(g.bytes);
    return;
  }
  CHECK_OK(zt_component_read_as(r, 0, "data", ZT_F32, out, sizeof out));
  CHECK_MEM(out, want, sizeof want);
  CHECK(out[0] == -4.0f && out[31] == 3.5f && out[32] == 16.0f && out[127] == 1.75f);
  /* Row 1 alone, then block 1 alone (values 32..64). */
  memset(out, 0, sizeof out);
  CHECK_OK(zt_component_read_as_range(r, 0, "data", ZT_F32, 64, out, 64 * sizeof(float)));
  CHECK_MEM(out, want + 64, 64 * sizeof(float));
  CHECK_OK(zt_component_read_as_range(r, 0, "data", ZT_F32, 32, out, 32 * sizeof(float)));
  CHECK_MEM(out, want + 32, 32 * sizeof(float));
  CHECK_OK(zt_component_read_as_range(r, 0, "data", ZT_F32, 128, NULL, 0));
  /* Its own bytes, as u8: a plain read. */
  CHECK_OK(zt_component_read_as(r, 0, "data", ZT_U8, bytes, sizeof q4));
  CHECK_MEM(bytes, q4, sizeof q4);

  /* Refusals leave the buffer untouched. */
  memset(bytes, 0xab, sizeof bytes);
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(r, 0, "data", ZT_I32, bytes, 128 * 4));
  CHECK_ERROR_IS("object 'q4' component 'data': Q4_0 blocks are read as their u8 bytes or dequantized to "
                 "f32, f16 or bf16, not converted to i32");
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(r, 0, "data", ZT_F64, bytes, 128 * 8 / 2));
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read_as(r, 0, "data", ZT_F32, bytes, 72 * 4));
  CHECK_ERROR_IS("object 'q4' component 'data': buffer of 288 bytes is smaller than the 512 bytes to read");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as(r, 0, "data", 99, bytes, 512));
  CHECK_ERROR_IS("unknown dtype value 99");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as_range(r, 0, "data", 99, 0, bytes, 4));
  CHECK_ERROR_IS("unknown dtype value 99");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as_range(r, 0, "data", ZT_F32, 16, bytes, 128));
  CHECK_ERROR_IS("object 'q4' component 'data': values [16, 16 + 32) don't start and end on Q4_0 block "
                 "boundaries (multiples of 32 values)");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as_range(r, 0, "data", ZT_F32, 96, bytes, 256));
  CHECK_ERROR_IS("object 'q4' component 'data': values [96, 96 + 64) are outside the component's 128");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as_range(r, 0, "data", ZT_F32, 0, bytes, 6));
  CHECK_ERROR_IS("object 'q4' component 'data': a buffer of 6 bytes is not whole f32 values");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as_range(r, 0, "data", ZT_F32, 0, NULL, 128));
  CHECK_ERROR_IS("dst is NULL but its size is 128");
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_read_as_range(r, 0, "scales", ZT_F32, 0, bytes, 128));
  CHECK_ERROR_IS("object 'q4' has no 'scales' component");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as_range(NULL, 0, "data", ZT_F32, 0, bytes, 128));
  for (i = 0; i < sizeof bytes; i++) {
    if (bytes[i] != 0xab) {
      break;
    }
  }
  CHECK_U64(i, sizeof bytes);

  /* A type ggml has no dequantizer for. */
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(r, 1, "data", ZT_F32, bytes, 128));
  CHECK_ERROR_IS("object 'q8_1' component 'data': ggml type Q8_1 (id 9) can't be dequantized: ggml defines "
                 "no dequantization for it (it is an intermediate type of its dot products, not one models "
                 "are stored in)");
  /* Plain dtypes get the same converted range read. */
  CHECK_OK(zt_component_read_as_range(r, 2, "data", ZT_F64, 1, bytes, 2 * sizeof(double)));
  {
    double d[2];
    memcpy(d, bytes, sizeof d);
    CHECK(d[0] == (double)want[1] && d[1] == (double)want[2]);
  }
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as_range(r, 2, "data", ZT_I32, 0, bytes, 16));
  CHECK_ERROR_IS("object 'w' component 'data': converting f32 to i32 would lose values or has no meaning");
  zt_close(r);
  free(g.bytes);
}

/* --- type 42 and unknown ids ----------------------------------------------------------- */

static void unknown_types_fail_only_their_tensors(void) {
  unsigned char q2_0[18], junk[96];
  float w[2] = {1.5f, -2.5f}, got[64];
  size_t i;
  /* Q2_0: d = 2; bit pairs 0, 1, 2, 3 are -1, 0, 1, 2 times d. */
  q2_0[0] = 0x00;
  q2_0[1] = 0x40;
  memset(q2_0 + 2, 0xe4, 16); /* 0b11_10_01_00 */
  memset(junk, 0x55, sizeof junk);
  tensor t[5] = {{"w", 2, 1, 0, w, sizeof w},
                 {"future", 64, 3, 43, junk, 0},
                 {"q2_0", 64, 1, 42, q2_0, sizeof q2_0},
                 {"removed", 16, 1, 4, junk, 0},
                 {"after", 2, 1, 0, w, sizeof w}};
  gguf g = gguf_file(t, 5);
  zt_reader *r = open_bytes(&g);
  if (r == NULL) {
    free(g.bytes);
    return;
  }
  CHECK_U64(zt_object_count(r), 5);
  CHECK_OK(zt_component_read_as(r, 0, "data", ZT_F32, got, 8));
  CHECK(got[0] == 1.5f && got[1] == -2.5f);
  CHECK_OK(zt_component_read_as(r, 4, "data", ZT_F32, got, 8));
  CHECK(got[0] == 1.5f && got[1] == -2.5f);
  CHECK_OK(zt_component_read_as(r, 2, "data", ZT_F32, got, sizeof got));
  for (i = 0; i < 64; i++) {
    if (!CHECK(got[i] == (float)((int)(i % 4) - 1) * 2.0f)) {
      break;
    }
  }
  {
    zt_quant_info q;
    if (CHECK_OK(zt_object_get_quant_info(r, 2, &q))) {
      CHECK_STR(q.name, "Q2_0");
      CHECK_U64(q.ggml_type, 42);
    }
  }
  {
    zt_object_info info;
    zt_component_info comp;
    zt_view v;
    zt_quant_info q;
    unsigned char buf[8];
    const char *unreadable =
        "object 'future' component 'data': ggml type id 43 is not one this build knows: the byte size of "
        "its tensors can't be computed, so their bytes can't be read";
    if (CHECK_OK(zt_object_get_info(r, 1, &info))) {
      CHECK_STR(info.format, "ggml_type_43");
    }
    if (CHECK_OK(zt_component_get_info(r, 1, 0, &comp))) {
      CHECK_STR(comp.type, "ggml_type_43");
      CHECK_U64(comp.length, 0);
      CHECK_U64(comp.decoded_length, 0);
    }
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read(r, 1, "data", NULL, 0));
    CHECK_ERROR_IS(unreadable);
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_view(r, 1, "data", &v));
    CHECK_ERROR_IS(unreadable);
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(r, 1, "data", ZT_F32, buf, 0));
    CHECK_ERROR_IS("object 'future' component 'data': ggml type id 43 is not one this build knows");
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_object_get_quant_info(r, 1, &q));
    CHECK_ERROR_IS("object 'future' component 'data': ggml type id 43 is not one this build knows");
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_object_get_quant_info(r, 3, &q));
    CHECK_ERROR_IS("object 'removed' component 'data': ggml type id 4 (Q4_2, removed from ggml before GGUF "
                   "existed) is not one this build knows");
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, 1, "data")); /* no digest */
  }
  zt_close(r);
  free(g.bytes);
}

/* --- zt_object_get_ggml_type: every tensor's ggml type -------------------------------- */

/* The ggml type id of a plain dtype (ggml.h), or -1: an independent table. */
static long plain_ggml_id(uint32_t dtype) {
  switch (dtype) {
    case ZT_F32: return 0;
    case ZT_F16: return 1;
    case ZT_I8: return 24;
    case ZT_I16: return 25;
    case ZT_I32: return 26;
    case ZT_I64: return 27;
    case ZT_F64: return 28;
    case ZT_BF16: return 30;
    default: return -1;
  }
}

static void ggml_type_of_every_tensor(const char *vectors) {
  static unsigned char data[3 * 2 * 292];
  static const uint32_t plain[8] = {0, 1, 24, 25, 26, 27, 28, 30};
  static const char *const plain_names[8] = {"F32", "F16", "I8", "I16", "I32", "I64", "F64", "BF16"};
  static const uint64_t plain_size[8] = {4, 2, 1, 2, 4, 8, 8, 2};
  tensor t[TYPE_COUNT + 10];
  char names[TYPE_COUNT + 10][32];
  char path[1200];
  size_t i, n = 0, count;
  zt_reader *r;
  memset(data, 0x11, sizeof data);
  /* A GGUF of every block type, every plain type, an unknown id and a retired one: the
     id gguf_get_tensor_type would give, for dense tensors too. */
  for (i = 0; i < TYPE_COUNT; i++, n++) {
    snprintf(names[n], sizeof names[n], "t%u", TYPES[i].id);
    t[n].name = names[n];
    t[n].ne0 = 2 * TYPES[i].block_size;
    t[n].ne1 = 3;
    t[n].type = TYPES[i].id;
    t[n].data = data;
    t[n].size = (size_t)(3 * 2 * TYPES[i].type_size);
  }
  for (i = 0; i < 8; i++, n++) {
    snprintf(names[n], sizeof names[n], "p%u", plain[i]);
    t[n].name = names[n];
    t[n].ne0 = 4;
    t[n].ne1 = 3;
    t[n].type = plain[i];
    t[n].data = data;
    t[n].size = (size_t)(12 * plain_size[i]);
  }
  {
    tensor future = {"future", 64, 3, 43, data, 0}, removed = {"removed", 16, 1, 4, data, 0};
    t[n++] = future;
    t[n++] = removed;
  }
  {
    gguf g = gguf_file(t, n);
    r = open_bytes(&g);
    if (r != NULL) {
      for (i = 0; i < n; i++) {
        uint32_t id = 0xeeeeeeee;
        const char *name = "unset";
        if (!CHECK_OK(zt_object_get_ggml_type(r, i, &id, &name))) continue;
        CHECK_U64(id, t[i].type);
        if (i < TYPE_COUNT) {
          CHECK_STR(name, TYPES[i].name);
        } else if (i < TYPE_COUNT + 8) {
          CHECK_STR(name, plain_names[i - TYPE_COUNT]);
        } else {
          CHECK(name == NULL); /* an id this build doesn't know: no name */
        }
        id = 0;
        CHECK_OK(zt_object_get_ggml_type(r, i, &id, NULL)); /* the name is optional */
        CHECK_U64(id, t[i].type);
      }
      {
        uint32_t id = 7;
        CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_get_ggml_type(r, 0, NULL, NULL));
        CHECK_ERROR_IS("out_type is NULL");
        CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_get_ggml_type(NULL, 0, &id, NULL));
        CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_ggml_type(r, n, &id, NULL));
        CHECK_U64(id, 7); /* untouched on failure */
      }
      zt_close(r);
    }
    free(g.bytes);
  }

  /* safetensors of every dtype: the plain ones have their ggml type, the others none. */
  snprintf(path, sizeof path, "%s/safetensors/dtypes.safetensors", vectors);
  if (CHECK_OK(zt_open(path, &r))) {
    size_t untyped = 0;
    unsigned long seen = 0; /* bit id: a tensor of that ggml type was met */
    count = zt_object_count(r);
    for (i = 0; i < count; i++) {
      zt_component_info c;
      zt_object_info o;
      uint32_t id = 0xeeeeeeee;
      long want;
      if (!CHECK_OK(zt_component_get_info(r, i, 0, &c)) || !CHECK_OK(zt_object_get_info(r, i, &o))) continue;
      want = c.type == NULL ? plain_ggml_id(c.dtype) : -1;
      if (want >= 0) {
        seen |= 1ul << want;
        if (CHECK_OK(zt_object_get_ggml_type(r, i, &id, NULL))) CHECK_U64(id, (uint64_t)want);
      } else {
        char message[256];
        untyped++;
        CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_ggml_type(r, i, &id, NULL));
        if (c.type == NULL) {
          snprintf(message, sizeof message, "object '%s' (dense %s) has no ggml type", o.name, zt_dtype_name(c.dtype));
        } else {
          snprintf(message, sizeof message, "object '%s' (dense %s of logical type %s) has no ggml type", o.name,
                   zt_dtype_name(c.dtype), c.type);
        }
        CHECK_ERROR_MENTIONS(message);
        CHECK_U64(id, 0xeeeeeeee);
      }
    }
    for (i = 0; i < 8; i++) CHECK(seen >> plain[i] & 1); /* every dtype ggml has */
    CHECK(untyped >= 4); /* and others: u8, u16, bool, fp8 ... */
    zt_close(r);
  }

  /* A logical type (complex64 stored as f32 pairs) and a sparse object: no ggml type. */
  snprintf(path, sizeof path, "%s/reference/v12_type_complex64.zt", vectors);
  if (CHECK_OK(zt_open(path, &r))) {
    uint32_t id;
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_ggml_type(r, 0, &id, NULL));
    CHECK_ERROR_MENTIONS("object 'z' (dense f32 of logical type complex64) has no ggml type: ggml holds f32, f16, "
                         "bf16, f64, i8, i16, i32, i64 and its block types");
    zt_close(r);
  }
  snprintf(path, sizeof path, "%s/reference/v01_handmade_sparse_csr.zt", vectors);
  if (CHECK_OK(zt_open(path, &r))) {
    uint32_t id;
    size_t m;
    if (CHECK_OK(zt_object_find(r, "m", &m))) {
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_ggml_type(r, m, &id, NULL));
      CHECK_ERROR_MENTIONS("object 'm' (sparse_csr) has no ggml type");
    }
    zt_close(r);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <tests/vectors>\n", argv[0]);
    return 2;
  }
  quant_info_of_every_type();
  quant_info_of_a_gguf_py_file(argv[1]);
  dequantized_values_match_gguf_py(argv[1]);
  exact_values_and_refusals();
  unknown_types_fail_only_their_tensors();
  ggml_type_of_every_tensor(argv[1]);
  return zt_test_summary();
}
