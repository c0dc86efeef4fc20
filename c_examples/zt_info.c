/*
 * zt_info: prints what a tensor file holds, as a table (zTensor, safetensors, GGUF or
 * Tensogram: zt_open reads them all).
 *
 *   zt_info model.zt
 *
 * One line per component: object name, format and shape (on the object's first line),
 * then role, dtype, logical type, encoding, stored and decoded bytes, and digest.
 * Only the manifest is read: no tensor data is touched.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

static const char *encoding_name(uint32_t encoding) {
  switch (encoding) {
  case ZT_ENCODING_RAW:
    return "raw";
  case ZT_ENCODING_ZSTD:
    return "zstd";
  case ZT_ENCODING_PIPELINE:
    return "pipeline"; /* another format's decode steps (Tensogram) */
  default:
    return "?";
  }
}

/* "[2, 3]", "[]" for a scalar. */
static void format_shape(const zt_object_info *info, char *out, size_t size) {
  size_t i, used = (size_t)snprintf(out, size, "[");
  for (i = 0; i < info->ndim && used < size; i++) {
    used += (size_t)snprintf(out + used, size - used, i ? ", %llu" : "%llu", (unsigned long long)info->shape[i]);
  }
  if (used < size) {
    snprintf(out + used, size - used, "]");
  }
}

static zt_reader *g_reader;

static void check(zt_status status, const char *what) {
  if (status != ZT_OK) {
    /* zt_last_error() is valid until the next zt_ call: print it before anything else */
    fprintf(stderr, "zt_info: %s: %s", what, zt_last_error());
    fprintf(stderr, " (%s)\n", zt_status_name(status));
    zt_close(g_reader);
    exit(1);
  }
}

/* Column widths: at least the header's width, grown to the longest value. */
enum { C_NAME, C_FORMAT, C_SHAPE, C_ROLE, C_DTYPE, C_TYPE, C_ENCODING, C_STORED, C_DECODED, C_COUNT };
static const char *const HEADERS[C_COUNT] = {"name", "format", "shape", "role", "dtype",
                                             "type", "encoding", "stored", "decoded"};
static int g_width[C_COUNT];

static void widen(int column, const char *text) {
  int n = (int)strlen(text);
  if (n > g_width[column]) {
    g_width[column] = n;
  }
}

/* Fills the cells of one component line; object cells only on its first line. */
static void cells(size_t object, size_t component, char cell[C_COUNT][256]) {
  zt_object_info info;
  zt_component_info comp;
  check(zt_object_get_info(g_reader, object, &info), "object info");
  check(zt_component_get_info(g_reader, object, component, &comp), info.name);
  snprintf(cell[C_NAME], 256, "%s", component == 0 ? info.name : "");
  snprintf(cell[C_FORMAT], 256, "%s", component == 0 ? info.format : "");
  if (component == 0) {
    format_shape(&info, cell[C_SHAPE], 256);
  } else {
    cell[C_SHAPE][0] = '\0';
  }
  snprintf(cell[C_ROLE], 256, "%s", comp.role);
  snprintf(cell[C_DTYPE], 256, "%s", zt_dtype_name(comp.dtype)); /* "f32", "bf16" ... */
  snprintf(cell[C_TYPE], 256, "%s", comp.type ? comp.type : "-");
  snprintf(cell[C_ENCODING], 256, "%s", encoding_name(comp.encoding));
  snprintf(cell[C_STORED], 256, "%llu", (unsigned long long)comp.length);
  snprintf(cell[C_DECODED], 256, "%llu", (unsigned long long)comp.decoded_length);
}

static void print_row(char cell[C_COUNT][256], const char *digest) {
  int c;
  for (c = 0; c < C_COUNT; c++) {
    /* numbers right-aligned, text left-aligned */
    int right = c == C_STORED || c == C_DECODED;
    printf(right ? "%*s  " : "%-*s  ", g_width[c], cell[c]);
  }
  printf("%s\n", digest);
}

int main(int argc, char **argv) {
  size_t count, o, c;
  const char *json = NULL;
  char cell[C_COUNT][256];
  int k;

  if (argc != 2) {
    fprintf(stderr, "usage: zt_info <file.zt>\n");
    return 2;
  }
  check(zt_open(argv[1], &g_reader), argv[1]);
  count = zt_object_count(g_reader);
  printf("file: %s\nformat: %s %s\nobjects: %zu\n\n", argv[1], zt_file_format(g_reader), zt_file_version(g_reader),
         count);

  /* pass 1: column widths */
  for (k = 0; k < C_COUNT; k++) {
    widen(k, HEADERS[k]);
  }
  for (o = 0; o < count; o++) {
    zt_object_info info;
    check(zt_object_get_info(g_reader, o, &info), "object info");
    for (c = 0; c < info.component_count; c++) {
      cells(o, c, cell);
      for (k = 0; k < C_COUNT; k++) {
        widen(k, cell[k]);
      }
    }
  }

  /* pass 2: the table */
  for (k = 0; k < C_COUNT; k++) {
    snprintf(cell[k], 256, "%s", HEADERS[k]);
  }
  print_row(cell, "digest");
  for (o = 0; o < count; o++) {
    zt_object_info info;
    check(zt_object_get_info(g_reader, o, &info), "object info");
    for (c = 0; c < info.component_count; c++) {
      zt_component_info comp;
      check(zt_component_get_info(g_reader, o, c, &comp), info.name);
      cells(o, c, cell);
      print_row(cell, comp.digest ? comp.digest : "-");
    }
  }

  check(zt_file_get_attributes_json(g_reader, &json), "file attributes");
  printf("\nattributes: %s\n", json);
  zt_close(g_reader);
  return 0;
}
