/*
 * test_names: zt_file_get_names, every name in one block.
 *
 *   test_names <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * The exact block (names in file order, each followed by a NUL) for a file written here
 * and for a safetensors vector, the same pointer on every call and from 8 threads racing
 * on the first call, an empty file, NULL arguments.
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
  CHECK_OK(zt_writer_create(path, &w));
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
  /* the block splits into exactly the names zt_object_info_get gives, in file order */
  for (i = 0; i < zt_object_count(r); i++) {
    zt_object_info info;
    CHECK_OK(zt_object_info_get(r, i, &info));
    CHECK(at + strlen(info.name) < size);
    CHECK(strcmp(names + at, info.name) == 0);
    at += strlen(info.name) + 1;
  }
  CHECK(zt_object_count(r) > 0);
  CHECK_U64(at, size);
  zt_close(r);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  test_written();
  test_safetensors(argv[1]);
  return zt_test_summary();
}
