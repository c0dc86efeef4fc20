/*
 * Consumer of an installed ztensor: checks that the library it runs with is the version
 * of the header it was compiled with, then writes a tiny file and reads it back.
 * Needs no input; writes consumer.zt in the current directory. Exit 0 on success.
 */
#include <stdio.h>
#include <string.h>

#include <ztensor.h>

static int failed(const char *what, zt_status status) {
  fprintf(stderr, "consumer: %s: %s (%s)\n", what, zt_status_name((uint32_t)status),
          zt_last_error());
  return 1;
}

static int write_file(const char *path, const float *values, size_t size,
                      const uint64_t *shape, size_t ndim) {
  zt_writer *writer = NULL;
  zt_status status = zt_writer_create(path, &writer);
  if (status != ZT_OK) {
    return failed("zt_writer_create", status);
  }
  status = zt_writer_add(writer, "weights", ZT_F32, shape, ndim, values, size, NULL);
  if (status != ZT_OK) {
    zt_writer_free(writer);
    return failed("zt_writer_add", status);
  }
  status = zt_writer_finish(writer);
  zt_writer_free(writer);
  return status == ZT_OK ? 0 : failed("zt_writer_finish", status);
}

static int read_file(const char *path, const float *expected, size_t size,
                     const uint64_t *shape, size_t ndim) {
  zt_reader *reader = NULL;
  size_t index = 0;
  zt_object_info info;
  float values[6];
  int result = 1;
  zt_status status;
  memset(&info, 0, sizeof info);
  status = zt_open(path, &reader);
  if (status != ZT_OK) {
    return failed("zt_open", status);
  }
  if (zt_object_count(reader) != 1) {
    fprintf(stderr, "consumer: %lu objects, expected 1\n", (unsigned long)zt_object_count(reader));
  } else if ((status = zt_object_find(reader, "weights", &index)) != ZT_OK) {
    failed("zt_object_find", status);
  } else if ((status = zt_object_get_info(reader, index, &info)) != ZT_OK) {
    failed("zt_object_get_info", status);
  } else if (info.ndim != ndim || memcmp(info.shape, shape, ndim * sizeof *shape) != 0) {
    fprintf(stderr, "consumer: wrong shape read back\n");
  } else if ((status = zt_component_read(reader, index, "data", values, sizeof values)) != ZT_OK) {
    failed("zt_component_read", status);
  } else if (sizeof values != size || memcmp(values, expected, size) != 0) {
    fprintf(stderr, "consumer: wrong values read back\n");
  } else {
    result = 0;
  }
  zt_close(reader);
  return result;
}

int main(void) {
  static const float values[6] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.5f};
  static const uint64_t shape[2] = {2, 3};
  char header_version[64];
  const char *library_version = zt_version();

  snprintf(header_version, sizeof header_version, "%d.%d.%d", ZT_VERSION_MAJOR, ZT_VERSION_MINOR,
           ZT_VERSION_PATCH);
  printf("zt_version() = %s\n", library_version);
  if (strcmp(library_version, header_version) != 0) {
    fprintf(stderr, "consumer: library %s, header %s\n", library_version, header_version);
    return 1;
  }
  if (write_file("consumer.zt", values, sizeof values, shape, 2) != 0 ||
      read_file("consumer.zt", values, sizeof values, shape, 2) != 0) {
    return 1;
  }
  printf("wrote and read back consumer.zt\n");
  return 0;
}
