/*
 * write_model: writes a tiny Llama-shaped model to a zTensor file with the C writer.
 *
 *   write_model model.zt
 *   write_model --shard-size BYTES model.zt    a sharded set: model-0000k-of-0000n.zt of
 *                                              about BYTES each and model.zt.index.json
 *
 * Shows: dense tensors in bf16 and f32, a zstd-compressed tensor streamed row by row
 * (how you would write a tensor larger than memory), sha256 digests, and file attributes
 * (the architecture metadata a loader needs) as JSON. Values are deterministic.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

enum { VOCAB = 128, DIM = 64, FFN = 128, LAYERS = 2, HEADS = 4 };

static const char *g_path;
static zt_writer *g_writer;

/* Every zt_ call goes through this: on failure print one line and exit non-zero. */
static void check(zt_status status, const char *what) {
  if (status != ZT_OK) {
    /* zt_last_error() is valid until the next zt_ call: print it before anything else */
    fprintf(stderr, "write_model: %s: %s", what, zt_last_error());
    fprintf(stderr, " (%s)\n", zt_status_name(status));
    zt_writer_free(g_writer); /* unfinished: removes its temporary file, nothing at the path */
    exit(1);
  }
}

/* float -> bfloat16 bits, rounding to nearest even (the values here are finite). */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* A deterministic "weight" in [-0.02, 0.02], different per tensor (seed) and element. */
static float weight(unsigned seed, size_t i) {
  uint32_t x = (uint32_t)seed * 2654435761u ^ (uint32_t)i * 2246822519u;
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  return ((float)(x % 2001u) - 1000.0f) * 2e-5f;
}

/* Adds a 2-d bf16 matrix in one call. */
static void add_matrix(const char *name, uint64_t rows, uint64_t cols, unsigned seed,
                       const zt_write_options *options) {
  const uint64_t shape[2] = {rows, cols};
  size_t n = (size_t)(rows * cols), i;
  uint16_t *data = malloc(n * sizeof *data);
  if (data == NULL) {
    fprintf(stderr, "write_model: out of memory for %s\n", name);
    zt_writer_free(g_writer); /* also removes the temporary file */
    exit(1);
  }
  for (i = 0; i < n; i++) {
    data[i] = to_bf16(weight(seed, i));
  }
  check(zt_writer_add(g_writer, name, ZT_BF16, shape, 2, data, n * sizeof *data, options), name);
  free(data);
}

/* Adds a 1-d f32 norm weight (values around 1). */
static void add_norm(const char *name, unsigned seed) {
  const uint64_t shape[1] = {DIM};
  float data[DIM];
  size_t i;
  for (i = 0; i < DIM; i++) {
    data[i] = 1.0f + weight(seed, i);
  }
  check(zt_writer_add(g_writer, name, ZT_F32, shape, 1, data, sizeof data, NULL), name);
}

int main(int argc, char **argv) {
  const zt_write_options sha256 = {ZT_ENCODING_RAW, 0, ZT_DIGEST_SHA256};
  const zt_write_options zstd_sha256 = {ZT_ENCODING_ZSTD, 0, ZT_DIGEST_SHA256};
  const uint64_t emb_shape[2] = {VOCAB, DIM};
  uint16_t row[DIM];
  char name[96];
  unsigned seed = 1;
  int layer, r, c;

  if (argc == 4 && strcmp(argv[1], "--shard-size") == 0) {
    /* A set: every zt_writer_* call below works on it as on one file. Shards and the
       index appear only at finish. */
    char *end;
    unsigned long long max = strtoull(argv[2], &end, 10);
    if (*end != '\0' || max == 0) {
      fprintf(stderr, "write_model: bad shard size '%s'\n", argv[2]);
      return 2;
    }
    g_path = argv[3];
    check(zt_writer_create_sharded_with(g_path, (uint64_t)max, NULL, &g_writer), g_path);
  } else if (argc == 2) {
    g_path = argv[1];
    /* The bytes go to a temporary file next to g_path; it appears there only at finish. */
    check(zt_writer_create(g_path, &g_writer), g_path);
  } else {
    fprintf(stderr, "usage: write_model [--shard-size BYTES] <out.zt>\n");
    return 2;
  }

  /* Token embeddings, streamed one row at a time and zstd-compressed as they go. */
  check(zt_writer_begin_object(g_writer, "tok_embeddings.weight", "dense", emb_shape, 2), "tok_embeddings");
  check(zt_writer_begin_component(g_writer, "data", ZT_BF16, NULL, &zstd_sha256), "tok_embeddings");
  for (r = 0; r < VOCAB; r++) {
    for (c = 0; c < DIM; c++) {
      /* embeddings repeat a little across rows, so they compress */
      row[c] = to_bf16(weight(seed, (size_t)((r % 16) * DIM + c)));
    }
    check(zt_writer_write(g_writer, row, sizeof row), "tok_embeddings");
  }
  check(zt_writer_end_component(g_writer), "tok_embeddings");
  check(zt_writer_end_object(g_writer), "tok_embeddings"); /* checks the size against the shape */

  for (layer = 0; layer < LAYERS; layer++) {
    static const char *const attn[4] = {"wq", "wk", "wv", "wo"};
    int k;
    for (k = 0; k < 4; k++) {
      snprintf(name, sizeof name, "layers.%d.attention.%s.weight", layer, attn[k]);
      add_matrix(name, DIM, DIM, ++seed, k == 0 ? &sha256 : NULL);
    }
    snprintf(name, sizeof name, "layers.%d.feed_forward.w1.weight", layer);
    add_matrix(name, FFN, DIM, ++seed, NULL);
    snprintf(name, sizeof name, "layers.%d.feed_forward.w2.weight", layer);
    add_matrix(name, DIM, FFN, ++seed, NULL);
    snprintf(name, sizeof name, "layers.%d.feed_forward.w3.weight", layer);
    add_matrix(name, FFN, DIM, ++seed, NULL);
    snprintf(name, sizeof name, "layers.%d.attention_norm.weight", layer);
    add_norm(name, ++seed);
    snprintf(name, sizeof name, "layers.%d.ffn_norm.weight", layer);
    add_norm(name, ++seed);
  }
  add_norm("norm.weight", ++seed);
  add_matrix("output.weight", VOCAB, DIM, ++seed, &sha256);

  /* What a loader needs to rebuild the graph, as file attributes. */
  {
    char json[512];
    snprintf(json, sizeof json,
             "{\"general\": {\"architecture\": \"llama\", \"name\": \"tiny-llama-demo\", \"file_type\": \"bf16\"},"
             " \"llama\": {\"vocab_size\": %d, \"embedding_length\": %d, \"feed_forward_length\": %d,"
             " \"block_count\": %d, \"attention.head_count\": %d, \"context_length\": 256,"
             " \"rope.freq_base\": 10000.0, \"attention.layer_norm_rms_epsilon\": 1e-5}}",
             VOCAB, DIM, FFN, LAYERS, HEADS);
    check(zt_writer_set_file_attributes_json(g_writer, json), "file attributes");
  }

  /* Manifest, footer, fsync, atomic rename. After this the writer only accepts free. */
  check(zt_writer_finish(g_writer), g_path);
  zt_writer_free(g_writer);
  printf("wrote %s: %d tensors\n", g_path, 1 + LAYERS * 9 + 2);
  return 0;
}
