/*
 * zt_writer_copy_object: objects copied from a reader into a writer, from C. Stored bytes
 * are copied as they are by default; the options re-encode, change the digest, rename.
 */
#include "zt_test.h"

#include <unistd.h>

#define N 3000

static float values[N];

/* A file with a raw f32 object (crc32c), a zstd one (sha256) and a sparse CSR one. */
static void write_source(const char *path) {
  zt_writer *w = NULL;
  uint64_t shape[1] = {N};
  zt_write_options raw = {ZT_ENCODING_RAW, 0, ZT_DIGEST_CRC32C};
  zt_write_options zstd = {ZT_ENCODING_ZSTD, 5, ZT_DIGEST_SHA256};
  uint64_t csr_shape[2] = {2, 3};
  float csr_values[2] = {1.5f, -2.0f};
  uint64_t indices[2] = {0, 2};
  uint64_t indptr[3] = {0, 1, 2};
  size_t i;
  for (i = 0; i < N; i++) values[i] = (float)i * 0.25f - 7.0f;
  CHECK_OK(zt_test_create_v12(path, &w));
  CHECK_OK(zt_writer_add(w, "raw", ZT_F32, shape, 1, values, sizeof values, &raw));
  CHECK_OK(zt_writer_add(w, "packed", ZT_F32, shape, 1, values, sizeof values, &zstd));
  CHECK_OK(zt_writer_set_object_attributes_json(w, "packed", "{\"scale\":2,\"tag\":\"x\"}"));
  CHECK_OK(zt_writer_begin_object(w, "csr", "sparse_csr", csr_shape, 2));
  CHECK_OK(zt_writer_add_component(w, "values", ZT_F32, NULL, csr_values, sizeof csr_values, NULL));
  CHECK_OK(zt_writer_add_component(w, "indices", ZT_U64, NULL, indices, sizeof indices, NULL));
  CHECK_OK(zt_writer_add_component(w, "indptr", ZT_U64, NULL, indptr, sizeof indptr, NULL));
  CHECK_OK(zt_writer_end_object(w));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

/* The stored bytes of a component, read through its offset and length. */
static int same_stored(const char *a_path, const zt_reader *a, size_t ao, const char *b_path,
                       const zt_reader *b, size_t bo) {
  zt_component_info ia, ib;
  size_t na, nb;
  unsigned char *fa, *fb;
  int same;
  if (zt_component_get_info(a, ao, 0, &ia) != ZT_OK || zt_component_get_info(b, bo, 0, &ib) != ZT_OK)
    return 0;
  fa = zt_test_slurp(a_path, &na);
  fb = zt_test_slurp(b_path, &nb);
  same = fa != NULL && fb != NULL && ia.length == ib.length && ia.encoding == ib.encoding &&
         memcmp(fa + ia.offset, fb + ib.offset, (size_t)ia.length) == 0;
  free(fa);
  free(fb);
  return same;
}

static void test_default_copy(const zt_reader *src) {
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_component_info ci;
  float back[N];
  const char *json = NULL;
  size_t i, k;
  CHECK_OK(zt_test_create_v12("copy_default.zt", &w));
  for (i = 0; i < zt_object_count(src); i++) CHECK_OK(zt_writer_copy_object(w, src, i, NULL));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  CHECK_OK(zt_open("copy_default.zt", &r));
  CHECK_U64(zt_object_count(r), 3);
  for (i = 0; i < 2; i++) {
    CHECK(same_stored("copy_source.zt", src, i, "copy_default.zt", r, i));
    CHECK_OK(zt_component_read(r, i, "data", back, sizeof back));
    CHECK_MEM(back, values, sizeof back);
  }
  CHECK_OK(zt_component_get_info(r, 0, 0, &ci));
  CHECK(ci.digest != NULL && strncmp(ci.digest, "crc32c:0x", 9) == 0);
  CHECK_OK(zt_component_get_info(r, 1, 0, &ci));
  CHECK_U64(ci.encoding, ZT_ENCODING_ZSTD);
  CHECK(ci.digest != NULL && strncmp(ci.digest, "sha256:", 7) == 0);
  CHECK_OK(zt_object_get_attributes_json(r, 1, &json));
  CHECK_STR(json, "{\"scale\":2,\"tag\":\"x\"}");
  CHECK_OK(zt_object_find(r, "csr", &k));
  CHECK_OK(zt_object_validate(r, k));
  CHECK_OK(zt_file_verify(r));
  zt_close(r);
}

static void test_options(const zt_reader *src) {
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_component_info ci;
  zt_object_info oi;
  zt_copy_options o;
  float back[N];
  memset(&o, 0, sizeof o);
  CHECK_OK(zt_test_create_v12("copy_options.zt", &w));
  o.flags = ZT_COPY_ENCODING | ZT_COPY_DIGEST;
  o.encoding = ZT_ENCODING_RAW;
  o.digest = ZT_DIGEST_NONE;
  o.name = "unpacked";
  CHECK_OK(zt_writer_copy_object(w, src, 1, &o));
  o.flags = ZT_COPY_ENCODING;
  o.encoding = ZT_ENCODING_ZSTD;
  o.level = 1;
  o.name = "repacked";
  CHECK_OK(zt_writer_copy_object(w, src, 0, &o));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  CHECK_OK(zt_open("copy_options.zt", &r));
  CHECK_OK(zt_object_get_info(r, 0, &oi));
  CHECK_STR(oi.name, "unpacked");
  CHECK_OK(zt_component_get_info(r, 0, 0, &ci));
  CHECK_U64(ci.encoding, ZT_ENCODING_RAW);
  CHECK(ci.digest == NULL);
  CHECK_OK(zt_component_read(r, 0, "data", back, sizeof back));
  CHECK_MEM(back, values, sizeof back);
  CHECK_OK(zt_object_get_info(r, 1, &oi));
  CHECK_STR(oi.name, "repacked");
  CHECK_OK(zt_component_get_info(r, 1, 0, &ci));
  CHECK_U64(ci.encoding, ZT_ENCODING_ZSTD);
  CHECK(ci.digest != NULL && strncmp(ci.digest, "crc32c:0x", 9) == 0);
  CHECK_OK(zt_component_read(r, 1, "data", back, sizeof back));
  CHECK_MEM(back, values, sizeof back);
  CHECK_OK(zt_file_verify(r));
  zt_close(r);
}

static void test_refusals(const zt_reader *src) {
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_copy_options o;
  uint64_t shape[1] = {1};
  float one = 1.0f;
  memset(&o, 0, sizeof o);
  CHECK_OK(zt_test_create_v12("copy_refused.zt", &w));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_copy_object(NULL, src, 0, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_copy_object(w, NULL, 0, NULL));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_writer_copy_object(w, src, 3, NULL));
  o.flags = 4;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_copy_object(w, src, 0, &o));
  CHECK_ERROR_MENTIONS("unknown copy flags 0x4");
  o.flags = ZT_COPY_ENCODING;
  o.encoding = ZT_ENCODING_PIPELINE;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_copy_object(w, src, 0, &o));
  o.encoding = 7;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_copy_object(w, src, 0, &o));
  o.flags = ZT_COPY_DIGEST;
  o.digest = 9;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_copy_object(w, src, 0, &o));
  CHECK_OK(zt_writer_copy_object(w, src, 0, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_copy_object(w, src, 0, NULL));
  CHECK_ERROR_MENTIONS("an object named 'raw' was already added");
  /* No copy while an object is open. */
  CHECK_OK(zt_writer_begin_object(w, "open", "dense", shape, 1));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_copy_object(w, src, 1, NULL));
  CHECK_OK(zt_writer_add_component(w, "data", ZT_F32, NULL, &one, sizeof one, NULL));
  CHECK_OK(zt_writer_end_object(w));
  CHECK_OK(zt_writer_finish(w));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_copy_object(w, src, 1, NULL));
  zt_writer_free(w);
  CHECK_OK(zt_open("copy_refused.zt", &r));
  CHECK_U64(zt_object_count(r), 2);
  zt_close(r);
}

/* A stored byte flipped under a digest: the copy says so and leaves the object out. */
static void test_corrupt_source(void) {
  size_t size;
  unsigned char *bytes = zt_test_slurp("copy_source.zt", &size);
  zt_reader *src = NULL;
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_component_info ci;
  CHECK(bytes != NULL);
  if (bytes == NULL) return;
  CHECK_OK(zt_open_memory(bytes, size, &src));
  CHECK_OK(zt_component_get_info(src, 0, 0, &ci));
  zt_close(src);
  bytes[ci.offset + 5] ^= 0x10;
  CHECK_OK(zt_open_memory(bytes, size, &src));
  CHECK_OK(zt_test_create_v12("copy_corrupt.zt", &w));
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_writer_copy_object(w, src, 0, NULL));
  CHECK_ERROR_MENTIONS("object 'raw' component 'data': the stored bytes do not match their digest crc32c:0x");
  CHECK_OK(zt_writer_copy_object(w, src, 2, NULL));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  zt_close(src);
  free(bytes);
  CHECK_OK(zt_open("copy_corrupt.zt", &r));
  CHECK_U64(zt_object_count(r), 1);
  zt_close(r);
}

int main(void) {
  zt_reader *src = NULL;
  write_source("copy_source.zt");
  CHECK_OK(zt_open("copy_source.zt", &src));
  test_default_copy(src);
  test_options(src);
  test_refusals(src);
  zt_close(src);
  test_corrupt_source();
  unlink("copy_source.zt");
  unlink("copy_default.zt");
  unlink("copy_options.zt");
  unlink("copy_refused.zt");
  unlink("copy_corrupt.zt");
  return zt_test_summary();
}
