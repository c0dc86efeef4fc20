/*
 * The old names of renamed functions (src/ffi/deprecated.rs, the table in docs/c-api.md):
 * each is still exported and declared, and is called here once with the results of its
 * new name beside it: the same status, the same outputs (the same borrowed pointers where
 * the reader lends one), the same message on failure. The two that were split by their
 * SIZE_MAX "the file" index (zt_attributes_json, zt_attributes) are called both ways, and
 * zt_mapping keeps its own rule for sets (ZT_ERR_NOT_FOUND, where zt_shard_get_mapping of
 * file 0 answers).
 *
 * Built with -Wno-deprecated-declarations (CMakeLists.txt): calling them is the point.
 * That the header makes compilers warn about them is the deprecated_warns test's job.
 *
 * Usage: test_deprecated_names <repo>/tests/vectors   (run in an empty scratch directory)
 */
#include "zt_test.h"

#include <fcntl.h>
#include <unistd.h>

/* One failing call of each name, with the same status and message. */
#define SAME_FAILURE(expected, old_call, new_call)                  \
  do {                                                              \
    char old_message[512];                                          \
    CHECK_STATUS((expected), (old_call));                           \
    snprintf(old_message, sizeof old_message, "%s", zt_last_error()); \
    CHECK_STATUS((expected), (new_call));                           \
    CHECK_STR(old_message, zt_last_error());                        \
  } while (0)

static float data[1024];

/* One object of a zstd component and typed attributes, on the file and on the object. */
static void write_file(const char *path) {
  zt_writer *w = NULL;
  uint64_t shape[1] = {1024};
  zt_write_options z = {ZT_ENCODING_ZSTD, 1, ZT_DIGEST_CRC32C};
  size_t i;
  for (i = 0; i < 1024; i++) data[i] = (float)i * 0.25f;
  CHECK_OK(zt_test_create_v12(path, &w));
  CHECK_OK(zt_writer_add(w, "w", ZT_F32, shape, 1, data, sizeof data, &z));
  CHECK_OK(zt_writer_set_attributes_json(
      w, NULL, "{\"n\": 3, \"s\": \"text\", \"b\": {\"$bytes\": \"0102\"}, \"a\": [1, 2, 3], \"t\": [\"x\", \"yz\"]}"));
  CHECK_OK(zt_writer_set_attributes_json(w, "w", "{\"unit\": \"m\"}"));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

static void test_library_and_dtypes(void) {
  size_t a = 0, b = 0;
  uint32_t x = 99, y = 98;
  CHECK_OK(zt_dtype_size(ZT_BF16, &a));
  CHECK_OK(zt_dtype_get_size(ZT_BF16, &b));
  CHECK_U64(a, 2);
  CHECK_U64(a, b);
  SAME_FAILURE(ZT_ERR_INVALID_ARGUMENT, zt_dtype_size(13, &a), zt_dtype_get_size(13, &b));
  CHECK_OK(zt_dtype_from_name("f16", &x));
  CHECK_OK(zt_dtype_find("f16", &y));
  CHECK_U64(x, ZT_F16);
  CHECK_U64(x, y);
  SAME_FAILURE(ZT_ERR_INVALID_ARGUMENT, zt_dtype_from_name("float32", &x), zt_dtype_find("float32", &y));
}

static void test_reader(const char *path) {
  zt_reader *r = NULL;
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  if (!CHECK_OK(zt_open_fd(fd, NULL, &r))) {
    close(fd);
    return;
  }
  close(fd); /* the reader works on its own duplicate */

  { /* the file: mapping, layout, remote stats, shards */
    const void *b1 = NULL, *b2 = NULL, *b3 = NULL;
    uint64_t s1 = 0, s2 = 0, s3 = 0, requests = 0, bytes = 0;
    zt_file_layout l1, l2;
    const char *p1 = NULL, *p2 = NULL;
    CHECK_OK(zt_mapping(r, &b1, &s1));
    CHECK_OK(zt_shard_get_mapping(r, 0, &b2, &s2));
    CHECK_OK(zt_shard_mapping(r, 0, &b3, &s3));
    CHECK(b1 != NULL && b1 == b2 && b2 == b3);
    CHECK(s1 > 0 && s1 == s2 && s2 == s3);
    CHECK_OK(zt_file_layout_get(r, &l1));
    CHECK_OK(zt_file_get_layout(r, &l2));
    CHECK_U64(l1.data_offset, l2.data_offset);
    CHECK_U64(l1.alignment, 64);
    CHECK_U64(l2.alignment, 64);
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_remote_stats(r, &requests, &bytes),
                 zt_file_get_remote_stats(r, &requests, &bytes));
    /* opened from a descriptor: no path, either way */
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_shard_path(r, 0, &p1), zt_shard_get_path(r, 0, &p2));
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_shard_mapping(r, 1, &b1, &s1), zt_shard_get_mapping(r, 1, &b2, &s2));
  }
  { /* listing */
    zt_object_info o1, o2;
    zt_component_info c1, c2;
    zt_location loc1, loc2;
    zt_quant_info q1, q2;
    size_t n1 = 0, n2 = 0;
    zt_frame_info f1, f2;
    CHECK_OK(zt_object_info_get(r, 0, &o1));
    CHECK_OK(zt_object_get_info(r, 0, &o2));
    CHECK(o1.name == o2.name && o1.format == o2.format && o1.shape == o2.shape && o1.ndim == o2.ndim &&
          o1.component_count == o2.component_count);
    CHECK_STR(o1.name, "w");
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_object_info_get(r, 1, &o1), zt_object_get_info(r, 1, &o2));
    CHECK_OK(zt_component_info_get(r, 0, 0, &c1));
    CHECK_OK(zt_component_get_info(r, 0, 0, &c2));
    CHECK(c1.role == c2.role && c1.dtype == c2.dtype && c1.type == c2.type && c1.encoding == c2.encoding &&
          c1.offset == c2.offset && c1.length == c2.length && c1.decoded_length == c2.decoded_length &&
          c1.digest == c2.digest && c1.digest != NULL);
    CHECK_U64(c1.encoding, ZT_ENCODING_ZSTD);
    CHECK_OK(zt_component_location(r, 0, 0, &loc1));
    CHECK_OK(zt_component_get_location(r, 0, 0, &loc2));
    CHECK_U64(loc1.shard, 0);
    CHECK_U64(loc1.offset, c1.offset);
    CHECK(loc1.shard == loc2.shard && loc1.offset == loc2.offset && loc1.length == loc2.length);
    CHECK_U64(loc1.length, c1.length);
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_object_quant_info_get(r, 0, &q1), zt_object_get_quant_info(r, 0, &q2));
    CHECK_OK(zt_component_frame_count(r, 0, "data", &n1));
    CHECK_OK(zt_component_get_frame_count(r, 0, "data", &n2));
    CHECK_U64(n1, 1);
    CHECK_U64(n1, n2);
    CHECK_OK(zt_component_frame_get(r, 0, "data", 0, &f1));
    CHECK_OK(zt_component_get_frame(r, 0, "data", 0, &f2));
    CHECK(f1.offset == f2.offset && f1.length == f2.length && f1.decoded_offset == f2.decoded_offset &&
          f1.decoded_length == f2.decoded_length);
    CHECK_U64(f1.decoded_length, sizeof data);
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_component_frame_get(r, 0, "data", 1, &f1),
                 zt_component_get_frame(r, 0, "data", 1, &f2));
  }
  { /* reading and checking */
    static float got[1024];
    zt_load_request q;
    memset(&q, 0, sizeof q);
    q.object = 0;
    q.dst = got;
    q.dst_size = sizeof got;
    q.status = 99;
    CHECK_OK(zt_load_batch(r, &q, 1, NULL));
    CHECK_U64(q.status, ZT_OK);
    CHECK_MEM(got, data, sizeof data);
    q.object = 7;
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_load_batch(r, &q, 1, NULL), zt_batch_load(r, &q, 1, NULL));
    CHECK_OK(zt_verify(r));
    CHECK_OK(zt_file_verify(r));
  }
  { /* attributes: the split functions, both ways */
    const char *j1 = NULL, *j2 = NULL;
    const zt_value *m1 = NULL, *m2 = NULL;
    CHECK_OK(zt_attributes_json(r, SIZE_MAX, &j1));
    CHECK_OK(zt_file_get_attributes_json(r, &j2));
    CHECK(j1 == j2);
    CHECK_STR(j1, "{\"n\":3,\"s\":\"text\",\"b\":{\"$bytes\":\"0102\"},\"a\":[1,2,3],\"t\":[\"x\",\"yz\"]}");
    CHECK_OK(zt_attributes_json(r, 0, &j1));
    CHECK_OK(zt_object_get_attributes_json(r, 0, &j2));
    CHECK(j1 == j2);
    CHECK_STR(j1, "{\"unit\":\"m\"}");
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_attributes_json(r, 1, &j1), zt_object_get_attributes_json(r, 1, &j2));
    CHECK_OK(zt_attributes(r, SIZE_MAX, &m1));
    CHECK_OK(zt_file_get_attributes(r, &m2));
    CHECK(m1 == m2);
    CHECK_OK(zt_attributes(r, 0, &m1));
    CHECK_OK(zt_object_get_attributes(r, 0, &m2));
    CHECK(m1 == m2);
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_attributes(r, 1, &m1), zt_object_get_attributes(r, 1, &m2));
  }
  { /* typed values */
    const zt_value *v1 = NULL, *v2 = NULL, *k1 = NULL, *k2 = NULL, *e1 = NULL, *e2 = NULL, *map = NULL;
    const char *s1 = NULL, *s2 = NULL;
    const uint8_t *b1 = NULL, *b2 = NULL;
    const void *d1 = NULL, *d2 = NULL;
    size_t n1 = 0, n2 = 0, c1 = 0, c2 = 0;
    uint32_t t1 = 99, t2 = 98;
    CHECK_OK(zt_object_attribute(r, 0, "unit", &v1));
    CHECK_OK(zt_object_get_attribute(r, 0, "unit", &v2));
    CHECK(v1 == v2);
    CHECK_OK(zt_file_attribute(r, "s", &v1));
    CHECK_OK(zt_file_get_attribute(r, "s", &v2));
    CHECK(v1 == v2);
    CHECK_OK(zt_value_string(v1, &s1, &n1));
    CHECK_OK(zt_value_get_string(v2, &s2, &n2));
    CHECK(s1 == s2 && n1 == 4 && n2 == 4 && memcmp(s1, "text", 4) == 0);
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_file_attribute(r, "nope", &v1), zt_file_get_attribute(r, "nope", &v2));
    CHECK_OK(zt_file_get_attribute(r, "b", &v1));
    CHECK_OK(zt_value_bytes(v1, &b1, &n1));
    CHECK_OK(zt_value_get_bytes(v1, &b2, &n2));
    CHECK(b1 == b2 && n1 == 2 && b1[0] == 1 && b1[1] == 2);
    CHECK_OK(zt_file_get_attribute(r, "a", &v1));
    CHECK_OK(zt_value_count(v1, &n1));
    CHECK_OK(zt_value_get_count(v1, &n2));
    CHECK_U64(n1, 3);
    CHECK_U64(n1, n2);
    CHECK_OK(zt_value_array_type(v1, &t1));
    CHECK_OK(zt_value_get_array_type(v1, &t2));
    CHECK_U64(t1, ZT_VALUE_U64);
    CHECK_U64(t1, t2);
    CHECK_OK(zt_value_array_data(v1, &d1, &c1));
    CHECK_OK(zt_value_get_array_data(v1, &d2, &c2));
    CHECK(d1 == d2 && c1 == 3 && c2 == 3 && ((const uint64_t *)d1)[2] == 3);
    CHECK_OK(zt_value_array_get(v1, 1, &e1));
    CHECK_OK(zt_value_get_element(v1, 1, &e2));
    CHECK(e1 == e2);
    SAME_FAILURE(ZT_ERR_INVALID_ARGUMENT, zt_value_array_get(v1, 3, &e1), zt_value_get_element(v1, 3, &e2));
    CHECK_OK(zt_file_get_attribute(r, "t", &v1));
    CHECK_OK(zt_value_array_string(v1, 1, &s1, &n1));
    CHECK_OK(zt_value_get_element_string(v1, 1, &s2, &n2));
    CHECK(s1 == s2 && n1 == 2 && memcmp(s1, "yz", 2) == 0);
    CHECK_OK(zt_file_get_attributes(r, &map));
    CHECK_OK(zt_value_map_entry(map, 1, &k1, &v1));
    CHECK_OK(zt_value_get_entry(map, 1, &k2, &v2));
    CHECK(k1 == k2 && v1 == v2);
    CHECK_OK(zt_value_map_find(map, "n", &v1));
    CHECK_OK(zt_value_find(map, "n", &v2));
    CHECK(v1 == v2);
    SAME_FAILURE(ZT_ERR_NOT_FOUND, zt_value_map_find(map, "zz", &v1), zt_value_find(map, "zz", &v2));
  }
  zt_close(r);
}

/* zt_object_quant_info_get on a quantized GGUF tensor. */
static void test_quant(const char *vectors) {
  char path[1200];
  zt_reader *r = NULL;
  zt_quant_info q1, q2;
  snprintf(path, sizeof path, "%s/gguf/quant_v3.gguf", vectors);
  if (!CHECK_OK(zt_open(path, &r))) return;
  CHECK_OK(zt_object_quant_info_get(r, 0, &q1));
  CHECK_OK(zt_object_get_quant_info(r, 0, &q2));
  CHECK(q1.ggml_type == q2.ggml_type && q1.name == q2.name && q1.role == q2.role && q1.block_size == q2.block_size &&
        q1.type_size == q2.type_size && q1.row_size == q2.row_size && q1.row_count == q2.row_count &&
        q1.dequantizable == q2.dequantizable);
  CHECK_STR(q1.name, "Q4_0");
  CHECK_U64(q1.block_size, 32);
  zt_close(r);
}

/* zt_writer_create_sharded writes a set; zt_mapping of it is ZT_ERR_NOT_FOUND, its old
   rule, while zt_shard_get_mapping(reader, 0, ...) maps the first shard. */
static void test_sets(void) {
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  uint64_t shape[1] = {256};
  const void *base = NULL;
  uint64_t size = 0;
  zt_writer_options o = {ZT_WRITER_NO_SYNC | ZT_WRITER_V1_2, 0};
  int i;
  if (!CHECK_OK(zt_writer_create_sharded("set", 1500, &o, &w))) return;
  for (i = 0; i < 2; i++) {
    char name[8];
    snprintf(name, sizeof name, "t%d", i);
    CHECK_OK(zt_writer_add(w, name, ZT_F32, shape, 1, data, 1024, NULL));
  }
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  SAME_FAILURE(ZT_ERR_INVALID_ARGUMENT, zt_writer_create_sharded("set2", 0, NULL, &w),
               zt_writer_create_sharded_with("set2", 0, NULL, &w));
  if (!CHECK_OK(zt_open("set.zt.index.json", &r))) return;
  CHECK_U64(zt_shard_count(r), 2);
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_mapping(r, &base, &size));
  CHECK_ERROR_MENTIONS("zt_shard_get_mapping");
  CHECK_OK(zt_shard_get_mapping(r, 0, &base, &size));
  CHECK(base != NULL && size > 1024);
  zt_close(r);
}

/* zt_open_url: a URL that can't be parsed fails before any network, the same way (and
   ZT_ERR_UNSUPPORTED from both in a build without remote support). */
static void test_open_url(void) {
  zt_reader *r = NULL;
#ifdef ZT_TEST_NO_REMOTE
  const zt_status expected = ZT_ERR_UNSUPPORTED;
#else
  const zt_status expected = ZT_ERR_INVALID_ARGUMENT;
#endif
  SAME_FAILURE(expected, zt_open_url("http://[::1/x.zt", NULL, NULL, &r),
               zt_open_url_with("http://[::1/x.zt", NULL, NULL, &r));
  CHECK(r == NULL);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors\n", argv[0]);
    return 2;
  }
  test_library_and_dtypes();
  write_file("names.zt");
  test_reader("names.zt");
  test_quant(argv[1]);
  test_sets();
  test_open_url();
  return zt_test_summary();
}
