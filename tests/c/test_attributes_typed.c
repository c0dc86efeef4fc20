/*
 * Typed attribute values through the C API (zt_file_get_attributes,
 * zt_object_get_attributes, zt_file_find_attribute, zt_object_find_attribute, zt_value_*),
 * in every format: GGUF key/values keep the width the
 * file declared (tests/vectors/gguf/plain_v3.gguf has every GGUF type), zTensor v1.2 and
 * v0.1 CBOR attributes, safetensors __metadata__ strings, Tensogram metadata. Exact
 * values, exact statuses and messages for wrong types and bad arguments, handles that
 * stay put, and hostile inputs: 127 levels of nesting, a million-element array, an array
 * that declares more elements than the file holds, many threads at once.
 *
 * Usage: test_attributes_typed <repo>/tests/vectors   (run in an empty scratch directory)
 */
#include "zt_test.h"

#include <pthread.h>

static const char *g_vectors;

static zt_reader *open_vector(const char *name) {
  char path[1024];
  zt_reader *r = NULL;
  snprintf(path, sizeof path, "%s/%s", g_vectors, name);
  if (!CHECK_OK(zt_open(path, &r))) {
    fprintf(stderr, "  (%s: %s)\n", path, zt_last_error());
    return NULL;
  }
  return r;
}

static uint32_t type_of(const zt_value *v) {
  uint32_t t = 9999;
  CHECK_OK(zt_value_get_type(v, &t));
  return t;
}

static const zt_value *file_attr(const zt_reader *r, const char *key) {
  const zt_value *v = NULL;
  if (!CHECK_OK(zt_file_find_attribute(r, key, &v))) {
    fprintf(stderr, "  (key %s: %s)\n", key, zt_last_error());
  }
  return v;
}

/* A string value equals `expected` (length given: may hold any byte). */
static void check_string(const zt_value *v, const char *expected, size_t len) {
  const char *s = NULL;
  size_t n = 99;
  if (CHECK_OK(zt_value_get_string(v, &s, &n)) && CHECK_U64(n, len)) {
    CHECK(s != NULL);
    CHECK_MEM(s, expected, len);
  }
}

/* --- GGUF: every value type, with its width ----------------------------------------- */

static void test_gguf_scalars(const zt_reader *r) {
  const zt_value *v;
  uint8_t u8 = 0;
  int8_t i8 = 0;
  uint16_t u16 = 0;
  int16_t i16 = 0;
  uint32_t u32 = 0;
  int32_t i32 = 0;
  uint64_t u64 = 0;
  int64_t i64 = 0;
  float f32 = 0;
  double f64 = 0;
  bool b = false;

  v = file_attr(r, "test.u8");
  CHECK_U64(type_of(v), ZT_VALUE_U8);
  CHECK_OK(zt_value_get_u8(v, &u8));
  CHECK_U64(u8, 200);
  /* Lossless conversions: to every wider integer type, signed too. */
  CHECK_OK(zt_value_get_u32(v, &u32));
  CHECK_U64(u32, 200);
  CHECK_OK(zt_value_get_i16(v, &i16));
  CHECK_U64(i16, 200);
  CHECK_OK(zt_value_get_u64(v, &u64));
  CHECK_U64(u64, 200);
  /* 200 does not fit int8_t. */
  i8 = 7;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_i8(v, &i8));
  CHECK_STR(zt_last_error(), "attribute value is u8 (200), not i8");
  CHECK_U64(i8, 7); /* untouched */
  /* No integer reads as a float or a bool. */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_f64(v, &f64));
  CHECK_STR(zt_last_error(), "attribute value is u8 (200), not f64");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_bool(v, &b));
  CHECK_STR(zt_last_error(), "attribute value is u8 (200), not bool");

  v = file_attr(r, "test.i8");
  CHECK_U64(type_of(v), ZT_VALUE_I8);
  CHECK_OK(zt_value_get_i8(v, &i8));
  CHECK_U64((int64_t)i8, (int64_t)-100);
  CHECK_OK(zt_value_get_i64(v, &i64));
  CHECK(i64 == -100);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_u32(v, &u32));
  CHECK_STR(zt_last_error(), "attribute value is i8 (-100), not u32");

  v = file_attr(r, "test.u16");
  CHECK_U64(type_of(v), ZT_VALUE_U16);
  CHECK_OK(zt_value_get_u16(v, &u16));
  CHECK_U64(u16, 60000);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_u8(v, &u8));
  CHECK_STR(zt_last_error(), "attribute value is u16 (60000), not u8");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_i16(v, &i16));
  CHECK_STR(zt_last_error(), "attribute value is u16 (60000), not i16");

  v = file_attr(r, "test.i16");
  CHECK_U64(type_of(v), ZT_VALUE_I16);
  CHECK_OK(zt_value_get_i16(v, &i16));
  CHECK(i16 == -30000);

  v = file_attr(r, "test.u32");
  CHECK_U64(type_of(v), ZT_VALUE_U32);
  CHECK_OK(zt_value_get_u32(v, &u32));
  CHECK_U64(u32, 4000000000u);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_i32(v, &i32));
  CHECK_STR(zt_last_error(), "attribute value is u32 (4000000000), not i32");
  CHECK_OK(zt_value_get_i64(v, &i64));
  CHECK(i64 == 4000000000);

  v = file_attr(r, "test.i32");
  CHECK_U64(type_of(v), ZT_VALUE_I32);
  CHECK_OK(zt_value_get_i32(v, &i32));
  CHECK(i32 == -2000000000);

  v = file_attr(r, "test.u64");
  CHECK_U64(type_of(v), ZT_VALUE_U64);
  CHECK_OK(zt_value_get_u64(v, &u64));
  CHECK_U64(u64, UINT64_MAX);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_i64(v, &i64));
  CHECK_STR(zt_last_error(), "attribute value is u64 (18446744073709551615), not i64");

  v = file_attr(r, "test.i64");
  CHECK_U64(type_of(v), ZT_VALUE_I64);
  CHECK_OK(zt_value_get_i64(v, &i64));
  CHECK(i64 == INT64_MIN);

  v = file_attr(r, "test.f32");
  CHECK_U64(type_of(v), ZT_VALUE_F32);
  CHECK_OK(zt_value_get_f32(v, &f32));
  CHECK(f32 == 0.1f);
  CHECK_OK(zt_value_get_f64(v, &f64));
  CHECK(f64 == (double)0.1f);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_u32(v, &u32));
  CHECK_STR(zt_last_error(), "attribute value is f32 (0.10000000149011612), not u32");

  v = file_attr(r, "test.f64");
  CHECK_U64(type_of(v), ZT_VALUE_F64);
  CHECK_OK(zt_value_get_f64(v, &f64));
  CHECK(f64 == 0.1);
  /* 0.1 as f64 is not an f32 value. */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_f32(v, &f32));
  CHECK_STR(zt_last_error(), "attribute value is f64 (0.1), not f32");

  v = file_attr(r, "test.bool_true");
  CHECK_U64(type_of(v), ZT_VALUE_BOOL);
  CHECK_OK(zt_value_get_bool(v, &b));
  CHECK(b == true);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_u8(v, &u8));
  CHECK_STR(zt_last_error(), "attribute value is bool (true), not u8");
  v = file_attr(r, "test.bool_false");
  CHECK_OK(zt_value_get_bool(v, &b));
  CHECK(b == false);

  v = file_attr(r, "test.string");
  CHECK_U64(type_of(v), ZT_VALUE_STRING);
  check_string(v, "h\xc3\xa9llo w\xc3\xb6rld", 13);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_u32(v, &u32));
  CHECK_STR(zt_last_error(), "attribute value is a string, not u32");
  {
    const uint8_t *bytes = NULL;
    size_t n = 0;
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_bytes(v, &bytes, &n));
    CHECK_STR(zt_last_error(), "attribute value is a string, not bytes");
  }
  v = file_attr(r, "test.string_empty");
  check_string(v, "", 0);
  /* A GGUF string that is not UTF-8 is still a string, its bytes as stored. */
  v = file_attr(r, "test.string_not_utf8");
  CHECK_U64(type_of(v), ZT_VALUE_STRING);
  check_string(v, "ab\xff" "cd", 5);
}

static void test_gguf_arrays(const zt_reader *r) {
  const zt_value *v, *e = NULL, *inner = NULL;
  const void *data = NULL;
  size_t n = 0;
  uint32_t t = 0;
  int32_t i32 = 0;
  const char *s = NULL;

  v = file_attr(r, "test.array_i32");
  CHECK_U64(type_of(v), ZT_VALUE_ARRAY);
  CHECK_OK(zt_value_get_count(v, &n));
  CHECK_U64(n, 3);
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_I32);
  if (CHECK_OK(zt_value_get_array_data(v, &data, &n)) && CHECK_U64(n, 3)) {
    const int32_t expected[3] = {1, -2, 3};
    CHECK((uintptr_t)data % sizeof(int32_t) == 0);
    CHECK_MEM(data, expected, sizeof expected);
  }
  /* The same elements as values. */
  if (CHECK_OK(zt_value_get_element(v, 1, &e))) {
    CHECK_U64(type_of(e), ZT_VALUE_I32);
    CHECK_OK(zt_value_get_i32(e, &i32));
    CHECK(i32 == -2);
  }
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_element(v, 3, &e));
  CHECK_STR(zt_last_error(), "index 3 is out of range for an attribute array of 3");
  /* An array of numbers asked for a string: refused by its type, before anything is
     made (at any index). */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_element_string(v, 0, &s, &n));
  CHECK_STR(zt_last_error(), "attribute value is an array of i32, not of strings");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_element_string(v, 7, &s, &n));
  CHECK_STR(zt_last_error(), "attribute value is an array of i32, not of strings");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_i32(v, &i32));
  CHECK_STR(zt_last_error(), "attribute value is an array of 3, not i32");

  v = file_attr(r, "test.array_u8");
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_U8);
  if (CHECK_OK(zt_value_get_array_data(v, &data, &n)) && CHECK_U64(n, 2)) {
    CHECK_MEM(data, "\x00\xff", 2);
  }

  v = file_attr(r, "test.array_f32");
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_F32);
  if (CHECK_OK(zt_value_get_array_data(v, &data, &n)) && CHECK_U64(n, 3)) {
    const float expected[3] = {0.5f, -1.25f, 0.1f};
    CHECK_MEM(data, expected, sizeof expected);
  }

  v = file_attr(r, "test.array_bool");
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_BOOL);
  if (CHECK_OK(zt_value_get_array_data(v, &data, &n)) && CHECK_U64(n, 2)) {
    CHECK(((const bool *)data)[0] == true && ((const bool *)data)[1] == false);
  }

  v = file_attr(r, "test.array_string");
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_STRING);
  CHECK_OK(zt_value_get_count(v, &n));
  CHECK_U64(n, 3);
  if (CHECK_OK(zt_value_get_element_string(v, 2, &s, &n))) {
    CHECK_U64(n, 2);
    CHECK_MEM(s, "\xc3\xbc", 2);
  }
  if (CHECK_OK(zt_value_get_element_string(v, 1, &s, &n))) {
    CHECK_U64(n, 0);
    CHECK(s != NULL);
  }
  if (CHECK_OK(zt_value_get_element(v, 0, &e))) {
    check_string(e, "a", 1);
  }
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_array_data(v, &data, &n));
  CHECK_STR(zt_last_error(), "attribute array of string has no contiguous numbers: read its elements by index");

  /* Arrays of arrays: the inner ones keep their declared element type. */
  v = file_attr(r, "test.array_nested");
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_ARRAY);
  if (CHECK_OK(zt_value_get_element(v, 1, &inner))) {
    CHECK_OK(zt_value_get_array_type(inner, &t));
    CHECK_U64(t, ZT_VALUE_I32);
    if (CHECK_OK(zt_value_get_array_data(inner, &data, &n)) && CHECK_U64(n, 1)) {
      CHECK(((const int32_t *)data)[0] == 3);
    }
  }
  v = file_attr(r, "test.array_nested_strings");
  if (CHECK_OK(zt_value_get_element(v, 1, &inner))) {
    CHECK_OK(zt_value_get_array_type(inner, &t));
    CHECK_U64(t, ZT_VALUE_STRING);
    if (CHECK_OK(zt_value_get_element_string(inner, 1, &s, &n))) {
      CHECK_U64(n, 1);
      CHECK_MEM(s, "z", 1);
    }
  }
}

static void test_gguf(void) {
  zt_reader *r = open_vector("gguf/plain_v3.gguf");
  const zt_value *all = NULL, *k = NULL, *v = NULL, *again = NULL;
  size_t n = 0;
  uint32_t u32 = 0;
  if (r == NULL) {
    return;
  }
  test_gguf_scalars(r);
  test_gguf_arrays(r);

  /* The top-level keys in file order. */
  if (CHECK_OK(zt_file_get_attributes(r, &all))) {
    CHECK_U64(type_of(all), ZT_VALUE_MAP);
    CHECK_OK(zt_value_get_count(all, &n));
    CHECK_U64(n, 23);
    if (CHECK_OK(zt_value_get_entry(all, 0, &k, &v))) {
      check_string(k, "general.architecture", 20);
      check_string(v, "test", 4);
    }
    if (CHECK_OK(zt_value_get_entry(all, 22, &k, NULL))) {
      check_string(k, "test.array_nested_strings", 25);
    }
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_entry(all, 23, &k, &v));
    CHECK_STR(zt_last_error(), "index 23 is out of range for an attribute map of 23");
    if (CHECK_OK(zt_value_find(all, "test.u32", &v))) {
      CHECK_OK(zt_value_get_u32(v, &u32));
      CHECK_U64(u32, 4000000000u);
    }
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_value_find(all, "test.nope", &v));
    CHECK_STR(zt_last_error(), "the map has no key 'test.nope'");
  }
  /* Handles are built once: the same pointers on every call. */
  v = file_attr(r, "test.u8");
  again = file_attr(r, "test.u8");
  CHECK(v != NULL && v == again);
  if (CHECK_OK(zt_file_get_attributes(r, &again))) {
    CHECK(again == all);
  }

  /* Absent keys and objects. */
  v = (const zt_value *)&n;
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_file_find_attribute(r, "llama.block_count", &v));
  CHECK_STR(zt_last_error(), "the file has no attribute 'llama.block_count'");
  CHECK(v == (const zt_value *)&n); /* untouched */
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find_attribute(r, 0, "ggml_type", &v));
  CHECK_STR(zt_last_error(), "object 'f32' has no attribute 'ggml_type'");
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find_attribute(r, 9, "x", &v));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_attributes(r, 9, &v));
  /* A dense GGUF tensor has no attributes: an empty map. */
  if (CHECK_OK(zt_object_get_attributes(r, 0, &v))) {
    CHECK_U64(type_of(v), ZT_VALUE_MAP);
    CHECK_OK(zt_value_get_count(v, &n));
    CHECK_U64(n, 0);
  }
  zt_close(r);

  /* Object attributes of quantized tensors; general.alignment is u32. */
  r = open_vector("gguf/quant_v3.gguf");
  if (r != NULL) {
    if (CHECK_OK(zt_object_find_attribute(r, 0, "ggml_type", &v))) {
      check_string(v, "Q4_0", 4);
    }
    if (CHECK_OK(zt_object_find_attribute(r, 0, "type_size", &v))) {
      CHECK_OK(zt_value_get_u32(v, &u32));
      CHECK_U64(u32, 18);
    }
    zt_close(r);
  }
  r = open_vector("gguf/align64_v2.gguf");
  if (r != NULL) {
    v = file_attr(r, "general.alignment");
    CHECK_U64(type_of(v), ZT_VALUE_U32);
    CHECK_OK(zt_value_get_u32(v, &u32));
    CHECK_U64(u32, 64);
    zt_close(r);
  }
}

/* --- zTensor CBOR attributes: no widths, so u64/i64/f64 -------------------------------- */

static void test_ztensor(void) {
  zt_reader *r = open_vector("reference/v12_rust_file_attributes.zt");
  const zt_value *v, *inner = NULL;
  uint64_t u64 = 0;
  uint32_t u32 = 0, t = 0;
  int64_t i64 = 0;
  int8_t i8 = 0;
  double f64 = 0;
  float f32 = 0;
  bool b = true;
  size_t n = 0;
  if (r == NULL) {
    return;
  }
  v = file_attr(r, "epoch");
  CHECK_U64(type_of(v), ZT_VALUE_U64);
  CHECK_OK(zt_value_get_u32(v, &u32)); /* 3 fits */
  CHECK_U64(u32, 3);
  v = file_attr(r, "u64max");
  CHECK_OK(zt_value_get_u64(v, &u64));
  CHECK_U64(u64, UINT64_MAX);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_u32(v, &u32));
  CHECK_STR(zt_last_error(), "attribute value is u64 (18446744073709551615), not u32");
  v = file_attr(r, "neg");
  CHECK_U64(type_of(v), ZT_VALUE_I64);
  CHECK_OK(zt_value_get_i8(v, &i8));
  CHECK(i8 == -12);
  CHECK_OK(zt_value_get_i64(v, &i64));
  CHECK(i64 == -12);
  v = file_attr(r, "beta");
  CHECK_U64(type_of(v), ZT_VALUE_F64);
  CHECK_OK(zt_value_get_f64(v, &f64));
  CHECK(f64 == 0.9);
  v = file_attr(r, "half");
  CHECK_OK(zt_value_get_f32(v, &f32)); /* 0.5 is exact in f32 */
  CHECK(f32 == 0.5f);
  v = file_attr(r, "flag");
  CHECK_OK(zt_value_get_bool(v, &b));
  CHECK(b == false);
  v = file_attr(r, "none");
  CHECK_U64(type_of(v), ZT_VALUE_NULL);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_bool(v, &b));
  CHECK_STR(zt_last_error(), "attribute value is null, not bool");
  v = file_attr(r, "raw");
  CHECK_U64(type_of(v), ZT_VALUE_BYTES);
  {
    const uint8_t *bytes = NULL;
    if (CHECK_OK(zt_value_get_bytes(v, &bytes, &n)) && CHECK_U64(n, 4)) {
      CHECK_MEM(bytes, "\x00\x01\x02\xff", 4);
    }
  }
  v = file_attr(r, "tags"); /* ["x", "y", 1] */
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_MIXED);
  CHECK_STR(zt_value_type_name(t), "mixed");
  if (CHECK_OK(zt_value_get_element(v, 2, &inner))) {
    CHECK_U64(type_of(inner), ZT_VALUE_U64);
  }
  v = file_attr(r, "nested"); /* {"depth": {"k": 1}} */
  CHECK_U64(type_of(v), ZT_VALUE_MAP);
  if (CHECK_OK(zt_value_find(v, "depth", &inner)) && CHECK_OK(zt_value_find(inner, "k", &inner))) {
    CHECK_OK(zt_value_get_u64(inner, &u64));
    CHECK_U64(u64, 1);
  }
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_find(file_attr(r, "epoch"), "k", &inner));
  CHECK_STR(zt_last_error(), "attribute value is u64 (3), not map");
  v = file_attr(r, "\xe5\x90\x8d\xe5\x89\x8d");
  check_string(v, "\xc3\xbc \xc3\x9f", 5);
  zt_close(r);

  /* v0.1 custom fields are the object's attributes. */
  r = open_vector("reference/v01_rust_custom_fields.zt");
  if (r != NULL) {
    const char *s = NULL;
    if (CHECK_OK(zt_object_find_attribute(r, 0, "count", &v))) {
      CHECK_OK(zt_value_get_u64(v, &u64));
      CHECK_U64(u64, 42);
    }
    if (CHECK_OK(zt_object_find_attribute(r, 0, "list", &v))) { /* [1, "two", 3.0] */
      CHECK_OK(zt_value_get_element_string(v, 1, &s, &n));
      CHECK_U64(n, 3);
      if (CHECK_OK(zt_value_get_element(v, 2, &inner))) {
        CHECK_OK(zt_value_get_f64(inner, &f64));
        CHECK(f64 == 3.0);
      }
    }
    zt_close(r);
  }
}

/* --- safetensors __metadata__ and Tensogram metadata ---------------------------------- */

static void test_safetensors_and_tensogram(void) {
  zt_reader *r = open_vector("safetensors/dtypes.safetensors");
  const zt_value *v = NULL, *all = NULL, *k = NULL, *inner = NULL;
  size_t n = 0;
  uint64_t u64 = 9;
  if (r != NULL) {
    v = file_attr(r, "note");
    CHECK_U64(type_of(v), ZT_VALUE_STRING);
    check_string(v, "\xc3\xbc" "n" "\xc3\xaf" "c" "\xc3\xb6" "d" "\xc3\xa9" " " "\xe2\x9c\x93", 15);
    check_string(file_attr(r, "empty"), "", 0);
    if (CHECK_OK(zt_file_get_attributes(r, &all))) {
      CHECK_OK(zt_value_get_count(all, &n));
      CHECK_U64(n, 3);
      if (CHECK_OK(zt_value_get_entry(all, 0, &k, NULL))) {
        check_string(k, "format", 6);
      }
    }
    zt_close(r);
  }
  r = open_vector("safetensors/small.safetensors"); /* no __metadata__ */
  if (r != NULL) {
    if (CHECK_OK(zt_file_get_attributes(r, &all))) {
      CHECK_OK(zt_value_get_count(all, &n));
      CHECK_U64(n, 0);
    }
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_file_find_attribute(r, "format", &v));
    zt_close(r);
  }

  r = open_vector("tensogram/raw_dtypes.tgm");
  if (r != NULL) {
    if (CHECK_OK(zt_object_find_attribute(r, 0, "units", &v))) {
      check_string(v, "K", 1);
    }
    if (CHECK_OK(zt_object_find_attribute(r, 0, "_tensogram_message", &v))) {
      CHECK_OK(zt_value_get_u64(v, &u64));
      CHECK_U64(u64, 0);
    }
    if (CHECK_OK(zt_object_find_attribute(r, 0, "_tensogram_descriptor", &v)) &&
        CHECK_OK(zt_value_find(v, "shape", &inner))) {
      const void *data = NULL;
      if (CHECK_OK(zt_value_get_array_data(inner, &data, &n)) && CHECK_U64(n, 2)) {
        CHECK_U64(((const uint64_t *)data)[0], 2);
        CHECK_U64(((const uint64_t *)data)[1], 3);
      }
    }
    v = file_attr(r, "base");
    CHECK_U64(type_of(v), ZT_VALUE_ARRAY);
    CHECK_OK(zt_value_get_count(v, &n));
    CHECK_U64(n, 8);
    zt_close(r);
  }
}

/* --- bad arguments ----------------------------------------------------------------------- */

static void test_arguments(void) {
  zt_reader *r = open_vector("gguf/plain_v3.gguf");
  const zt_value *v = NULL;
  const char *s = NULL;
  size_t n = 0;
  uint32_t u32 = 0;
  if (r == NULL) {
    return;
  }
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_find_attribute(NULL, "test.u8", &v));
  CHECK_STR(zt_last_error(), "reader is NULL");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_find_attribute(r, NULL, &v));
  CHECK_STR(zt_last_error(), "key is NULL");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_find_attribute(r, "test.u8", NULL));
  CHECK_STR(zt_last_error(), "out is NULL");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_find_attribute(r, "\xff", &v));
  CHECK_STR(zt_last_error(), "key is not valid UTF-8");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_find_attribute(r, 0, NULL, &v));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_attributes(r, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_type(NULL, &u32));
  CHECK_STR(zt_last_error(), "value is NULL");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_u32(NULL, &u32));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_string(NULL, &s, &n));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_count(NULL, &n));
  v = file_attr(r, "test.u32");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_type(v, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_u32(v, NULL));
  CHECK_STR(zt_last_error(), "out is NULL");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_count(v, &n));
  CHECK_STR(zt_last_error(), "attribute value is u32 (4000000000), not an array or a map");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_array_type(v, &u32));
  CHECK_STR(zt_last_error(), "attribute value is u32 (4000000000), not array");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_entry(v, 0, NULL, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_get_string(v, NULL, &n));
  CHECK_STR(zt_last_error(), "out_data is NULL");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_find(v, NULL, &v));
  CHECK_STR(zt_last_error(), "key is NULL");
  zt_close(r);

  /* Type names. */
  CHECK_STR(zt_value_type_name(ZT_VALUE_NULL), "null");
  CHECK_STR(zt_value_type_name(ZT_VALUE_U32), "u32");
  CHECK_STR(zt_value_type_name(ZT_VALUE_F64), "f64");
  CHECK_STR(zt_value_type_name(ZT_VALUE_MAP), "map");
  CHECK_STR(zt_value_type_name(ZT_VALUE_OTHER), "other");
  CHECK_STR(zt_value_type_name(17), "unknown");
  CHECK_STR(zt_value_type_name(UINT32_MAX), "unknown");
}

/* --- hostile and large inputs ------------------------------------------------------------ */

/* A GGUF v3 file in memory with one key/value "a": an array of `count` u8 holding `have`
   bytes (count may claim more than the file has). */
static unsigned char *gguf_u8_array(uint64_t count, size_t have, size_t *size) {
  size_t n = 4 + 4 + 8 + 8 + (8 + 1) + 4 + 4 + 8 + have;
  unsigned char *g = (unsigned char *)calloc(1, n);
  size_t at = 0;
  uint32_t u32;
  uint64_t u64;
  if (g == NULL) {
    return NULL;
  }
#define PUT(p, len) (memcpy(g + at, (p), (len)), at += (len))
  PUT("GGUF", 4);
  u32 = 3, PUT(&u32, 4);
  u64 = 0, PUT(&u64, 8); /* tensors */
  u64 = 1, PUT(&u64, 8); /* key/values */
  u64 = 1, PUT(&u64, 8);
  PUT("a", 1);
  u32 = 9, PUT(&u32, 4); /* array */
  u32 = 0, PUT(&u32, 4); /* of u8 */
  PUT(&count, 8);
#undef PUT
  memset(g + at, 7, have);
  if (have > 0) {
    g[at + have - 1] = 9;
  }
  *size = n;
  return g;
}

static void test_large_and_hostile(void) {
  zt_reader *r = NULL;
  const zt_value *v = NULL, *e = NULL;
  const void *data = NULL;
  size_t size = 0, n = 0, level;
  uint8_t u8 = 0;
  unsigned char *g;

  /* A million u8: contiguous, and elements as values made on request. */
  g = gguf_u8_array(1000000, 1000000, &size);
  if (CHECK(g != NULL) && CHECK_OK(zt_open_memory(g, size, &r))) {
    v = file_attr(r, "a");
    if (CHECK_OK(zt_value_get_array_data(v, &data, &n)) && CHECK_U64(n, 1000000)) {
      CHECK_U64(((const uint8_t *)data)[0], 7);
      CHECK_U64(((const uint8_t *)data)[999999], 9);
    }
    if (CHECK_OK(zt_value_get_element(v, 999999, &e))) {
      CHECK_OK(zt_value_get_u8(e, &u8));
      CHECK_U64(u8, 9);
    }
    zt_close(r);
  }
  free(g);

  /* An array that claims 2^40 elements in a small file: refused at open, nothing huge
     allocated. */
  g = gguf_u8_array((uint64_t)1 << 40, 16, &size);
  if (CHECK(g != NULL)) {
    r = NULL;
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open_memory(g, size, &r));
    CHECK_ERROR_MENTIONS("declares 1099511627776 elements");
    CHECK(r == NULL);
  }
  free(g);

  /* 300,000 alternating one-byte items: their values would take 16 bytes for each byte
     of the attributes, past the budget of 8 (+ 1 MiB): ZT_ERR_LIMIT, every time, while
     the JSON and the other objects' attributes stay readable. */
  {
    zt_writer *w = NULL;
    uint64_t shape[1] = {1};
    float one = 1.0f;
    size_t items = 300000, at, i;
    char *json = (char *)malloc(items * 5 + 16);
    if (CHECK(json != NULL) && CHECK_OK(zt_test_create_v12("wide.zt", &w))) {
      at = (size_t)sprintf(json, "{\"a\":[");
      for (i = 0; i < items; i++) {
        at += (size_t)sprintf(json + at, i % 2 ? "null," : "0,");
      }
      strcpy(json + at - 1, "]}");
      CHECK_OK(zt_writer_add(w, "x", ZT_F32, shape, 1, &one, sizeof one, NULL));
      CHECK_OK(zt_writer_set_file_attributes_json(w, json));
      CHECK_OK(zt_writer_set_object_attributes_json(w, "x", "{\"k\":1}"));
      CHECK_OK(zt_writer_finish(w));
      zt_writer_free(w);
      if (CHECK_OK(zt_open("wide.zt", &r))) {
        const char *text = NULL;
        CHECK_STATUS(ZT_ERR_LIMIT, zt_file_find_attribute(r, "a", &v));
        CHECK_ERROR_MENTIONS("attributes: their typed values would take more than 3448640 bytes (8 per byte of their 300008-byte encoding, plus 1048576)");
        CHECK_STATUS(ZT_ERR_LIMIT, zt_file_get_attributes(r, &v));
        if (CHECK_OK(zt_object_find_attribute(r, 0, "k", &v))) {
          uint64_t k = 0;
          CHECK_OK(zt_value_get_u64(v, &k));
          CHECK_U64(k, 1);
        }
        CHECK_OK(zt_file_get_attributes_json(r, &text));
        zt_close(r);
      }
    }
    free(json);
  }

  /* 127 levels of nesting (the most a default reader opens): walkable to the bottom. */
  {
    zt_writer *w = NULL;
    uint64_t shape[1] = {1};
    float one = 1.0f;
    char *json = (char *)malloc(2 * 126 + 16);
    if (CHECK(json != NULL) && CHECK_OK(zt_test_create_v12("deep.zt", &w))) {
      size_t at = (size_t)sprintf(json, "{\"a\":");
      memset(json + at, '[', 126);
      memset(json + at + 126, ']', 126);
      strcpy(json + at + 252, "}");
      CHECK_OK(zt_writer_add(w, "x", ZT_F32, shape, 1, &one, sizeof one, NULL));
      CHECK_OK(zt_writer_set_file_attributes_json(w, json));
      CHECK_OK(zt_writer_finish(w));
      zt_writer_free(w);
      if (CHECK_OK(zt_open("deep.zt", &r))) {
        v = file_attr(r, "a");
        for (level = 1; level < 126 && v != NULL; level++) {
          if (!CHECK_OK(zt_value_get_element(v, 0, &v))) {
            v = NULL;
          }
        }
        if (v != NULL) {
          uint32_t t = 0;
          CHECK_OK(zt_value_get_count(v, &n));
          CHECK_U64(n, 0);
          CHECK_OK(zt_value_get_array_type(v, &t));
          CHECK_U64(t, ZT_VALUE_MIXED);
        }
        zt_close(r);
      }
    }
    free(json);
  }
}

/* --- threads: the first calls race to build; all get the same handles ------------------ */

#define THREADS 8

typedef struct job {
  const zt_reader *r;
  const zt_value *tokens;
  const zt_value *object;
  int ok;
} job;

static void *run_job(void *arg) {
  job *j = (job *)arg;
  const char *s = NULL;
  size_t n = 0;
  j->ok = zt_file_find_attribute(j->r, "tokenizer.ggml.tokens", &j->tokens) == ZT_OK &&
          zt_object_find_attribute(j->r, 0, "ggml_type", &j->object) == ZT_OK &&
          zt_value_get_element_string(j->tokens, 99, &s, &n) == ZT_OK && n == 5 && memcmp(s, "tok99", 5) == 0;
  return NULL;
}

static void test_threads(void) {
  zt_reader *r = open_vector("gguf/llama_tiny.gguf");
  pthread_t t[THREADS];
  job jobs[THREADS];
  int i;
  if (r == NULL) {
    return;
  }
  for (i = 0; i < THREADS; i++) {
    jobs[i].r = r;
    jobs[i].ok = 0;
    CHECK(pthread_create(&t[i], NULL, run_job, &jobs[i]) == 0);
  }
  for (i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    CHECK(jobs[i].ok);
    CHECK(jobs[i].tokens == jobs[0].tokens);
    CHECK(jobs[i].object == jobs[0].object);
  }
  zt_close(r);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  g_vectors = argv[1];
  test_gguf();
  test_ztensor();
  test_safetensors_and_tensogram();
  test_arguments();
  test_large_and_hostile();
  test_threads();
  return zt_test_summary();
}
