/*
 * Typed attribute writing through the C API (issue 23 item 3): values made with
 * zt_value_create_* read back as made; zt_writer_set_file_attribute(s) and
 * zt_writer_set_object_attribute(s) write a reader's values (a GGUF's, with every GGUF
 * type) or made ones, and the written file gives back every type and value, element
 * types of arrays included; zt_writer_copy_object keeps an object's types; every
 * argument error and misuse gets its status.
 *
 * Usage: test_attributes_write <repo>/tests/vectors   (run in an empty scratch directory)
 */
#include "zt_test.h"

/* Whether a and b have the same type and value, recursively (arrays: element type,
   count, elements; maps: entries in order). Reports the first difference under `path`. */
static int same_value(const zt_value *a, const zt_value *b, const char *path) {
  uint32_t ta = 99, tb = 98;
  if (!CHECK_OK(zt_value_get_type(a, &ta)) || !CHECK_OK(zt_value_get_type(b, &tb))) return 0;
  if (ta != tb) {
    zt_test_report(0, __FILE__, __LINE__, "%s: type %s, not %s", path, zt_value_type_name(tb), zt_value_type_name(ta));
    return 0;
  }
  switch (ta) {
    case ZT_VALUE_NULL:
      return 1;
    case ZT_VALUE_BOOL: {
      bool x = 0, y = 1;
      return CHECK_OK(zt_value_get_bool(a, &x)) && CHECK_OK(zt_value_get_bool(b, &y)) && CHECK(x == y);
    }
    case ZT_VALUE_I8: case ZT_VALUE_I16: case ZT_VALUE_I32: case ZT_VALUE_I64: {
      int64_t x = 0, y = 1;
      return CHECK_OK(zt_value_get_i64(a, &x)) && CHECK_OK(zt_value_get_i64(b, &y)) && CHECK(x == y);
    }
    case ZT_VALUE_U8: case ZT_VALUE_U16: case ZT_VALUE_U32: case ZT_VALUE_U64: {
      uint64_t x = 0, y = 1;
      return CHECK_OK(zt_value_get_u64(a, &x)) && CHECK_OK(zt_value_get_u64(b, &y)) && CHECK_U64(x, y);
    }
    case ZT_VALUE_F32: case ZT_VALUE_F64: {
      double x = 0, y = 1;
      return CHECK_OK(zt_value_get_f64(a, &x)) && CHECK_OK(zt_value_get_f64(b, &y)) && CHECK_MEM(&x, &y, sizeof x);
    }
    case ZT_VALUE_STRING: case ZT_VALUE_BYTES: {
      const char *x = NULL, *y = NULL;
      size_t nx = 0, ny = 1;
      if (ta == ZT_VALUE_STRING) {
        if (!CHECK_OK(zt_value_get_string(a, &x, &nx)) || !CHECK_OK(zt_value_get_string(b, &y, &ny))) return 0;
      } else if (!CHECK_OK(zt_value_get_bytes(a, (const uint8_t **)&x, &nx)) ||
                 !CHECK_OK(zt_value_get_bytes(b, (const uint8_t **)&y, &ny))) {
        return 0;
      }
      return CHECK_U64(nx, ny) && CHECK_MEM(x, y, nx);
    }
    case ZT_VALUE_ARRAY: {
      size_t na = 0, nb = 1, i;
      uint32_t ea = 99, eb = 98;
      const void *da = NULL, *db = NULL;
      if (!CHECK_OK(zt_value_get_count(a, &na)) || !CHECK_OK(zt_value_get_count(b, &nb)) || !CHECK_U64(na, nb) ||
          !CHECK_OK(zt_value_get_array_type(a, &ea)) || !CHECK_OK(zt_value_get_array_type(b, &eb)))
        return 0;
      if (ea != eb) {
        zt_test_report(0, __FILE__, __LINE__, "%s: elements %s, not %s", path, zt_value_type_name(eb),
                       zt_value_type_name(ea));
        return 0;
      }
      if (zt_value_get_array_data(a, &da, &na) == ZT_OK) { /* contiguous: the same bytes */
        size_t w = ea == ZT_VALUE_BOOL || ea == ZT_VALUE_I8 || ea == ZT_VALUE_U8     ? 1
                   : ea == ZT_VALUE_I16 || ea == ZT_VALUE_U16                        ? 2
                   : ea == ZT_VALUE_I32 || ea == ZT_VALUE_U32 || ea == ZT_VALUE_F32 ? 4
                                                                                     : 8;
        return CHECK_OK(zt_value_get_array_data(b, &db, &nb)) && CHECK_MEM(da, db, na * w);
      }
      for (i = 0; i < na; i++) {
        const zt_value *x = NULL, *y = NULL;
        char sub[256];
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        if (!CHECK_OK(zt_value_get_element(a, i, &x)) || !CHECK_OK(zt_value_get_element(b, i, &y)) ||
            !same_value(x, y, sub))
          return 0;
      }
      return 1;
    }
    case ZT_VALUE_MAP: {
      size_t na = 0, nb = 1, i;
      if (!CHECK_OK(zt_value_get_count(a, &na)) || !CHECK_OK(zt_value_get_count(b, &nb)) || !CHECK_U64(na, nb)) return 0;
      for (i = 0; i < na; i++) {
        const zt_value *ka = NULL, *kb = NULL, *va = NULL, *vb = NULL;
        const char *key = "?";
        size_t klen = 1;
        char sub[256];
        if (!CHECK_OK(zt_value_get_entry(a, i, &ka, &va)) || !CHECK_OK(zt_value_get_entry(b, i, &kb, &vb))) return 0;
        if (zt_value_get_string(ka, &key, &klen) != ZT_OK) klen = 1;
        snprintf(sub, sizeof sub, "%s.%.*s", path, (int)klen, key);
        if (!same_value(ka, kb, sub) || !same_value(va, vb, sub)) return 0;
      }
      return 1;
    }
    default:
      return CHECK(0);
  }
}

static uint32_t type_of(const zt_value *v) {
  uint32_t t = 99;
  CHECK_OK(zt_value_get_type(v, &t));
  return t;
}

/* Values made here read back as made: every scalar width, strings, bytes, arrays of
   numbers and of strings, arrays of values, maps. */
static void test_made_values(void) {
  zt_value *v = NULL, *items[3] = {NULL, NULL, NULL};
  const float scores[3] = {0.5f, -1.25f, 3.0f};
  const bool flags[2] = {true, false};
  const char *tokens[3] = {"a", "bc", ""};
  const size_t lengths[3] = {1, 2, 0};
  const void *data = NULL;
  size_t n = 0;
  uint32_t u = 0, t = 0;
  int32_t i32 = 0;
  double f = 0;
  float f32 = 0;
  const char *s = NULL;

  CHECK_OK(zt_value_create_u32(4096, &v));
  CHECK_U64(type_of(v), ZT_VALUE_U32);
  CHECK_OK(zt_value_get_u32(v, &u));
  CHECK_U64(u, 4096);
  zt_value_free(v);
  CHECK_OK(zt_value_create_i32(-7, &v));
  CHECK_U64(type_of(v), ZT_VALUE_I32);
  CHECK_OK(zt_value_get_i32(v, &i32));
  CHECK(i32 == -7);
  zt_value_free(v);
  CHECK_OK(zt_value_create_i64(5, &v));
  CHECK_U64(type_of(v), ZT_VALUE_I64);
  zt_value_free(v);
  CHECK_OK(zt_value_create_f32(1e-5f, &v));
  CHECK_U64(type_of(v), ZT_VALUE_F32);
  CHECK_OK(zt_value_get_f32(v, &f32));
  CHECK(f32 == 1e-5f);
  zt_value_free(v);
  CHECK_OK(zt_value_create_f64(0.1, &v));
  CHECK_U64(type_of(v), ZT_VALUE_F64);
  CHECK_OK(zt_value_get_f64(v, &f));
  CHECK(f == 0.1);
  zt_value_free(v);
  {
    zt_value *w[8];
    CHECK_OK(zt_value_create_null(&w[0]));
    CHECK_OK(zt_value_create_bool(true, &w[1]));
    CHECK_OK(zt_value_create_i8(-1, &w[2]));
    CHECK_OK(zt_value_create_i16(-300, &w[3]));
    CHECK_OK(zt_value_create_u8(255, &w[4]));
    CHECK_OK(zt_value_create_u16(65535, &w[5]));
    CHECK_OK(zt_value_create_u64(UINT64_MAX, &w[6]));
    CHECK_OK(zt_value_create_bytes("\0\1", 2, &w[7]));
    CHECK_U64(type_of(w[0]), ZT_VALUE_NULL);
    CHECK_U64(type_of(w[1]), ZT_VALUE_BOOL);
    CHECK_U64(type_of(w[2]), ZT_VALUE_I8);
    CHECK_U64(type_of(w[3]), ZT_VALUE_I16);
    CHECK_U64(type_of(w[4]), ZT_VALUE_U8);
    CHECK_U64(type_of(w[5]), ZT_VALUE_U16);
    CHECK_U64(type_of(w[6]), ZT_VALUE_U64);
    CHECK_U64(type_of(w[7]), ZT_VALUE_BYTES);
    for (n = 0; n < 8; n++) zt_value_free(w[n]);
  }
  /* a string holding NUL, and one that is not UTF-8: both strings */
  CHECK_OK(zt_value_create_string("a\0b", 3, &v));
  CHECK_OK(zt_value_get_string(v, &s, &n));
  CHECK(n == 3 && memcmp(s, "a\0b", 3) == 0);
  zt_value_free(v);
  CHECK_OK(zt_value_create_string("\xff\xfe", 2, &v));
  CHECK_U64(type_of(v), ZT_VALUE_STRING);
  zt_value_free(v);
  /* numbers from a pointer and a count */
  CHECK_OK(zt_value_create_array_data(ZT_VALUE_F32, scores, 3, &v));
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_F32);
  CHECK_OK(zt_value_get_array_data(v, &data, &n));
  CHECK(n == 3 && data != (const void *)scores);
  CHECK_MEM(data, scores, sizeof scores);
  items[0] = v;
  CHECK_OK(zt_value_create_array_data(ZT_VALUE_BOOL, flags, 2, &items[1]));
  CHECK_OK(zt_value_create_array_data(ZT_VALUE_U32, NULL, 0, &v));
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_U32); /* empty, still typed */
  zt_value_free(v);
  /* strings, with lengths and NUL-terminated */
  CHECK_OK(zt_value_create_string_array(tokens, lengths, 3, &v));
  CHECK_OK(zt_value_get_element_string(v, 1, &s, &n));
  CHECK(n == 2 && memcmp(s, "bc", 2) == 0);
  zt_value_free(v);
  CHECK_OK(zt_value_create_string_array(tokens, NULL, 3, &items[2]));
  CHECK_OK(zt_value_get_array_type(items[2], &t));
  CHECK_U64(t, ZT_VALUE_STRING);
  /* an array of those values, and a map of them */
  CHECK_OK(zt_value_create_array((const zt_value *const *)items, 3, &v));
  CHECK_OK(zt_value_get_count(v, &n));
  CHECK_U64(n, 3);
  CHECK_OK(zt_value_get_array_type(v, &t));
  CHECK_U64(t, ZT_VALUE_ARRAY);
  {
    const zt_value *e = NULL;
    CHECK_OK(zt_value_get_element(v, 0, &e));
    CHECK(same_value(items[0], e, "array[0]"));
    CHECK_OK(zt_value_get_element(v, 2, &e));
    CHECK(same_value(items[2], e, "array[2]"));
  }
  {
    const char *keys[3] = {"scores", "flags", "tokens"};
    zt_value *m = NULL;
    const zt_value *got = NULL;
    CHECK_OK(zt_value_create_map(keys, (const zt_value *const *)items, 3, &m));
    CHECK_OK(zt_value_find(m, "flags", &got));
    CHECK(same_value(items[1], got, "map.flags"));
    zt_value_free(m);
  }
  zt_value_free(v);
  for (n = 0; n < 3; n++) zt_value_free(items[n]);
}

/* Every failure: NULL arguments, types that are not numbers, bool bytes, repeated keys,
   values that aren't maps where maps are wanted, unknown objects, a finished writer. */
static void test_errors(const char *vectors) {
  zt_value *v = (zt_value *)1, *one = NULL;
  const uint8_t two = 2;
  const char *keys[2] = {"k", "k"};
  const zt_value *vals[2];
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  const zt_value *reader_map = NULL;
  char path[1200];

  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_u32(1, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_string(NULL, 3, &v));
  CHECK(v == (zt_value *)1); /* untouched on failure */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_array_data(ZT_VALUE_STRING, "x", 1, &v));
  CHECK_ERROR_MENTIONS("not bool, an integer or a float type");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_array_data(ZT_VALUE_MIXED, "x", 1, &v));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_array_data(ZT_VALUE_BOOL, &two, 1, &v));
  CHECK_ERROR_MENTIONS("neither 0 nor 1");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_array_data(ZT_VALUE_F64, NULL, 2, &v));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_array_data(ZT_VALUE_U64, "x", SIZE_MAX, &v));
  CHECK_ERROR_MENTIONS("overflow");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_array(NULL, 2, &v));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_string_array(NULL, NULL, 1, &v));
  CHECK_OK(zt_value_create_u8(1, &one));
  vals[0] = one;
  vals[1] = one;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_map(keys, vals, 2, &v));
  CHECK_ERROR_MENTIONS("given twice");
  vals[1] = NULL;
  keys[1] = "other";
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_value_create_map(keys, vals, 2, &v));
  CHECK(v == (zt_value *)1);
  zt_value_free(NULL); /* no-op */

  CHECK_OK(zt_test_create_v12("errors.zt", &w));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attribute(NULL, "k", one));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attribute(w, NULL, one));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attribute(w, "k", NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes(w, one));
  CHECK_ERROR_MENTIONS("must be a map");
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_writer_set_object_attribute(w, "nope", "k", one));
  CHECK_ERROR_MENTIONS("nope");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_object_attribute(w, NULL, "k", one));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_writer_set_object_attributes(w, "nope", one));
  CHECK_OK(zt_writer_finish(w));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_set_file_attribute(w, "k", one));
  zt_writer_free(w);

  /* a reader's value passed to zt_value_free is left alone: the reader keeps it */
  snprintf(path, sizeof path, "%s/gguf/plain_v3.gguf", vectors);
  if (CHECK_OK(zt_open(path, &r))) {
    uint32_t got = 0;
    const zt_value *u32v = NULL;
    CHECK_OK(zt_file_get_attributes(r, &reader_map));
    zt_value_free((zt_value *)reader_map);
    CHECK_OK(zt_file_find_attribute(r, "test.u32", &u32v));
    CHECK_OK(zt_value_get_u32(u32v, &got));
    CHECK_U64(got, 4000000000u);
    zt_close(r);
  }
  zt_value_free(one);
}

/* A GGUF's key/values (every GGUF type: plain_v3.gguf) copied into a zTensor file, all at
   once and one by one, and its objects with zt_writer_copy_object: every type and value
   reads back the same. Made values set on an object too. */
static void test_gguf_to_zt(const char *vectors) {
  char path[1200];
  zt_reader *g = NULL, *z = NULL;
  zt_writer *w = NULL;
  const zt_value *map = NULL, *got = NULL;
  size_t n = 0, i;
  snprintf(path, sizeof path, "%s/gguf/plain_v3.gguf", vectors);
  if (!CHECK_OK(zt_open(path, &g))) return;
  CHECK_OK(zt_file_get_attributes(g, &map));
  CHECK_OK(zt_value_get_count(map, &n));
  CHECK(n >= 20);

  CHECK_OK(zt_test_create_v12("all.zt", &w));
  CHECK_OK(zt_writer_set_file_attributes(w, map));
  for (i = 0; i < zt_object_count(g); i++) CHECK_OK(zt_writer_copy_object(w, g, i, NULL));
  {
    zt_value *made = NULL;
    CHECK_OK(zt_value_create_u16(7, &made));
    CHECK_OK(zt_writer_set_object_attribute(w, "f32", "u16", made));
    CHECK_OK(zt_writer_set_object_attribute(w, "f32", "u16", made)); /* replaced, once */
    zt_value_free(made);
  }
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);

  CHECK_OK(zt_test_create_v12("each.zt", &w));
  for (i = 0; i < n; i++) {
    const zt_value *key = NULL, *value = NULL;
    const char *k = NULL;
    size_t len = 0;
    char name[256];
    CHECK_OK(zt_value_get_entry(map, i, &key, &value));
    CHECK_OK(zt_value_get_string(key, &k, &len));
    snprintf(name, sizeof name, "%.*s", (int)len, k);
    CHECK_OK(zt_writer_set_file_attribute(w, name, value));
  }
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);

  if (CHECK_OK(zt_open("all.zt", &z))) {
    size_t o = 0;
    const zt_value *attrs = NULL;
    uint32_t t = 0;
    CHECK_OK(zt_file_get_attributes(z, &got));
    CHECK(same_value(map, got, "all.zt"));
    /* an object's attributes (the ggml ones of a quantized GGUF tensor would be here) */
    CHECK_OK(zt_object_find(z, "f32", &o));
    CHECK_OK(zt_object_get_attributes(z, o, &attrs));
    CHECK_OK(zt_value_get_count(attrs, &n));
    CHECK_U64(n, 1);
    CHECK_OK(zt_object_find_attribute(z, o, "u16", &got));
    CHECK_OK(zt_value_get_type(got, &t));
    CHECK_U64(t, ZT_VALUE_U16);
    zt_close(z);
  }
  if (CHECK_OK(zt_open("each.zt", &z))) {
    CHECK_OK(zt_file_get_attributes(z, &got));
    CHECK(same_value(map, got, "each.zt"));
    zt_close(z);
  }
  zt_close(g);

  /* A quantized GGUF's object attributes through zt_writer_copy_object. */
  snprintf(path, sizeof path, "%s/gguf/quant_v3.gguf", vectors);
  if (CHECK_OK(zt_open(path, &g))) {
    CHECK_OK(zt_test_create_v12("quant.zt", &w));
    for (i = 0; i < zt_object_count(g); i++) CHECK_OK(zt_writer_copy_object(w, g, i, NULL));
    CHECK_OK(zt_writer_finish(w));
    zt_writer_free(w);
    if (CHECK_OK(zt_open("quant.zt", &z))) {
      for (i = 0; i < zt_object_count(g); i++) {
        const zt_value *a = NULL, *b = NULL;
        CHECK_OK(zt_object_get_attributes(g, i, &a));
        CHECK_OK(zt_object_get_attributes(z, i, &b));
        CHECK(same_value(a, b, "quant object"));
      }
      zt_close(z);
    }
    zt_close(g);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors\n", argv[0]);
    return 2;
  }
  test_made_values();
  test_errors(argv[1]);
  test_gguf_to_zt(argv[1]);
  return zt_test_summary();
}
