/*
 * test_attribute_depth: the writer refuses attributes nested deeper than a reader with the
 * default limits accepts, at the exact boundary, through the C API.
 *
 *   test_attribute_depth <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * The manifest may nest max_cbor_depth (128 by default) containers deep. The file's
 * attribute map sits inside the manifest map, so it may nest 127 levels (itself counted);
 * an object's sits inside the manifest, its objects map and the object's map: 125. At the
 * limit the writer accepts, the default reader opens the file and gives the JSON back;
 * one level more and zt_writer_set_{file,object}_attributes_json is ZT_ERR_INVALID_ARGUMENT naming the
 * depth, and the attributes set before stay in place. A reader whose limit is one less
 * than the default refuses the file written at the limit: the boundary is the reader's.
 */
#include "zt_test.h"

/* An attribute map nesting `levels` containers deep (itself included):
   {"a":[[...[]...]]} with levels - 1 arrays. Free with free(). */
static char *nested(int levels) {
  size_t n = (size_t)levels - 1;
  char *s = malloc(2 * n + 16);
  size_t at = 0;
  if (s == NULL) {
    return NULL;
  }
  at += (size_t)sprintf(s, "{\"a\":");
  memset(s + at, '[', n);
  at += n;
  memset(s + at, ']', n);
  at += n;
  strcpy(s + at, "}");
  return s;
}

/* Writes a file with the file's attributes nested `file_levels` deep and the object's
   `object_levels` deep; the statuses of setting each are checked against the expected. */
static void write_file(const char *path, int file_levels, zt_status file_status, int object_levels,
                       zt_status object_status) {
  zt_writer *w = NULL;
  uint64_t shape[1] = {1};
  float one = 1.0f;
  char *file_json = nested(file_levels);
  char *object_json = nested(object_levels);
  if (!CHECK(file_json != NULL && object_json != NULL) || !CHECK_OK(zt_test_create_v12(path, &w))) {
    free(file_json);
    free(object_json);
    return;
  }
  CHECK_OK(zt_writer_add(w, "x", ZT_F32, shape, 1, &one, sizeof one, NULL));
  CHECK_OK(zt_writer_set_file_attributes_json(w, "{\"kept\":true}"));
  CHECK_OK(zt_writer_set_object_attributes_json(w, "x", "{\"kept\":true}"));
  if (CHECK_STATUS(file_status, zt_writer_set_file_attributes_json(w, file_json)) &&
      file_status != ZT_OK) {
    CHECK_ERROR_MENTIONS("the file's attributes nest deeper than 127 levels");
    CHECK_ERROR_MENTIONS("max_cbor_depth of 128");
  }
  if (CHECK_STATUS(object_status, zt_writer_set_object_attributes_json(w, "x", object_json)) &&
      object_status != ZT_OK) {
    CHECK_ERROR_MENTIONS("an object's attributes nest deeper than 125 levels");
  }
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  free(file_json);
  free(object_json);
}

/* Opens `path` with the default options; the attributes must read back as expected. */
static void check_reads_back(const char *path, const char *file_json, const char *object_json) {
  zt_reader *r = NULL;
  const char *json = NULL;
  if (!CHECK_OK(zt_open(path, &r))) {
    return;
  }
  if (CHECK_OK(zt_file_get_attributes_json(r, &json))) {
    CHECK_STR(json, file_json);
  }
  if (CHECK_OK(zt_object_get_attributes_json(r, 0, &json))) {
    CHECK_STR(json, object_json);
  }
  zt_close(r);
}

int main(void) {
  char *file_127 = nested(127);
  char *object_125 = nested(125);
  zt_open_options strict;

  /* At the boundary: written, and read back by the default reader. */
  write_file("limit.zt", 127, ZT_OK, 125, ZT_OK);
  check_reads_back("limit.zt", file_127, object_125);

  /* One level more, each in turn: refused, the earlier attributes kept. */
  write_file("file_over.zt", 128, ZT_ERR_INVALID_ARGUMENT, 125, ZT_OK);
  check_reads_back("file_over.zt", "{\"kept\":true}", object_125);
  write_file("object_over.zt", 127, ZT_OK, 126, ZT_ERR_INVALID_ARGUMENT);
  check_reads_back("object_over.zt", file_127, "{\"kept\":true}");

  /* Far over: the JSON parser's own limit (128) refuses it first, naming it too. */
  {
    zt_writer *w = NULL;
    char *deep = nested(200);
    if (CHECK(deep != NULL) && CHECK_OK(zt_test_create_v12("deep.zt", &w))) {
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, deep));
      CHECK_ERROR_MENTIONS("nesting deeper than 128 levels");
      zt_writer_free(w);
    }
    free(deep);
  }

  /* The boundary is the reader's: one level less of max_cbor_depth refuses limit.zt. */
  memset(&strict, 0, sizeof strict);
  strict.max_cbor_depth = 127;
  {
    zt_reader *r = NULL;
    CHECK_STATUS(ZT_ERR_LIMIT, zt_open_with("limit.zt", &strict, &r));
    CHECK_ERROR_MENTIONS("nesting deeper than 127 levels");
  }

  free(file_127);
  free(object_125);
  return zt_test_summary();
}
