/*
 * lookups: the C API's hot paths in a loop, for counting instructions with callgrind
 * (issue 19). Wall-clock timing on a shared machine is noise; instruction counts are not.
 *
 *   lookups write-w1 FILE        300 tensors with W1's names (tiny bf16 data)
 *   lookups write-w2 FILE        50,000 tensors of 16 bytes (W2's count)
 *   lookups views FILE LOOPS     open, then LOOPS x (zt_object_find + zt_component_view
 *                                of every tensor by name)
 *   lookups list FILE LOOPS      LOOPS x (open, every object's and component's info, close)
 *
 * The measured work is in the functions `views_pass` and `list_once`, so
 *
 *   valgrind --tool=callgrind --toggle-collect=views_pass ./lookups views w1.zt 10
 *
 * counts only the lookups and views (divide by 10 x 300 for one view by name).
 * See bench/README.md ("Instruction counts").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

static void check(zt_status s, const char *what) {
  if (s != ZT_OK) {
    fprintf(stderr, "lookups: %s: %s (%s)\n", what, zt_last_error(), zt_status_name(s));
    exit(1);
  }
}

enum { W1_LAYERS = 33, W1_TENSORS = 300, W2_TENSORS = 50000 };

static const char *const PARTS[9] = {
    "input_layernorm", "self_attn.q_proj", "self_attn.k_proj",
    "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
    "mlp.gate_proj",   "mlp.up_proj",      "mlp.down_proj"};

static char g_names[W1_TENSORS][64];

/* W1's names, in the bench's order (bench/src/workloads.rs). */
static void w1_names(void) {
  int n = 0, l, p;
  snprintf(g_names[n++], 64, "model.embed_tokens.weight");
  for (l = 0; l < W1_LAYERS; l++) {
    for (p = 0; p < 9; p++) {
      snprintf(g_names[n++], 64, "model.layers.%d.%s.weight", l, PARTS[p]);
    }
  }
  snprintf(g_names[n++], 64, "model.norm.weight");
  snprintf(g_names[n++], 64, "lm_head.weight");
}

static void write_file(const char *path, int w2) {
  zt_writer *w = NULL;
  uint16_t data[8] = {0};
  const uint64_t shape[2] = {2, 4};
  char name[64];
  int i, count = w2 ? W2_TENSORS : W1_TENSORS;
  check(zt_writer_create(path, &w), "create");
  for (i = 0; i < count; i++) {
    if (w2) {
      snprintf(name, sizeof name, "blocks.%d.tensor_%d.weight", i / 100, i);
    }
    data[0] = (uint16_t)i;
    check(zt_writer_add(w, w2 ? name : g_names[i], ZT_BF16, shape, 2, data, sizeof data, NULL),
          "add");
  }
  check(zt_writer_finish(w), "finish");
}

/* One view of every W1 tensor by name; returns a checksum of the views. */
__attribute__((noinline)) size_t views_pass(const zt_reader *r) {
  size_t acc = 0, index;
  zt_view v;
  int i;
  for (i = 0; i < W1_TENSORS; i++) {
    check(zt_object_find(r, g_names[i], &index), g_names[i]);
    check(zt_component_view(r, index, "data", &v), "view");
    acc += (size_t)v.data ^ (size_t)v.size;
  }
  return acc;
}

/* Open, read every name, shape, dtype and offset, close. */
__attribute__((noinline)) size_t list_once(const char *path) {
  zt_reader *r = NULL;
  zt_object_info o;
  zt_component_info c;
  size_t acc = 0, i, n, d;
  check(zt_open(path, &r), "open");
  n = zt_object_count(r);
  for (i = 0; i < n; i++) {
    check(zt_object_get_info(r, i, &o), "info");
    acc += strlen(o.name);
    for (d = 0; d < o.ndim; d++) {
      acc ^= o.shape[d];
    }
    check(zt_component_get_info(r, i, 0, &c), "component");
    acc += c.dtype + c.offset;
  }
  zt_close(r);
  return acc;
}

int main(int argc, char **argv) {
  size_t acc = 0;
  long loops, k;
  if (argc < 3) {
    fprintf(stderr, "usage: lookups write-w1|write-w2 FILE | views|list FILE LOOPS\n");
    return 2;
  }
  w1_names();
  if (strcmp(argv[1], "write-w1") == 0 || strcmp(argv[1], "write-w2") == 0) {
    write_file(argv[2], argv[1][7] == '2');
    return 0;
  }
  loops = argc > 3 ? atol(argv[3]) : 1;
  if (strcmp(argv[1], "views") == 0) {
    zt_reader *r = NULL;
    check(zt_open(argv[2], &r), "open");
    for (k = 0; k < loops; k++) {
      acc += views_pass(r);
    }
    zt_close(r);
  } else if (strcmp(argv[1], "list") == 0) {
    for (k = 0; k < loops; k++) {
      acc += list_once(argv[2]);
    }
  } else {
    fprintf(stderr, "lookups: unknown mode %s\n", argv[1]);
    return 2;
  }
  printf("%zu\n", acc);
  return 0;
}
