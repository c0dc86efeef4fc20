/*
 * tp_llama_layer: one Llama decoder layer sharded for tensor parallelism over two ranks,
 * as Megatron-LM and vLLM shard it, checked against the layer computed whole.
 *
 *   tp_llama_layer layer.zt
 *
 * Writes a small layer with random bf16 weights under Hugging Face's names, each linear
 * weight stored [out, in] as PyTorch stores it (y = x W^T), then computes it on a few
 * tokens three ways:
 *
 *  1. whole: every weight read whole, as f32 (zt_component_read_as);
 *  2. two ranks, both loaded from one reader in one zt_loader_load call:
 *       q_proj, k_proj, v_proj, gate_proj, up_proj  column-parallel (a slice of the
 *                                                   outputs): ZT_SLICE_ROWS
 *       o_proj, down_proj                           row-parallel (a slice of the inputs):
 *                                                   ZT_SLICE_COLUMNS
 *       input_layernorm, post_attention_layernorm   replicated: ZT_SLICE_WHOLE
 *     Each rank computes attention for its own heads (and the key/value heads they share)
 *     and the MLP for its slice of the intermediate size; the ranks' partial outputs of
 *     o_proj and of down_proj are summed (the all-reduce). The result must equal 1.
 *  3. the same with q_proj sliced by columns, the wrong way round for [out, in] weights:
 *     q_proj is square, so every request succeeds; the output must differ from 1.
 *
 * Exits 0 when 2 matches and 3 doesn't; prints the largest differences.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

/* A small Llama layer with grouped-query attention: 4 heads over 2 key/value heads. */
enum {
  HIDDEN = 64,
  HEADS = 4,
  KV_HEADS = 2,
  HEAD_DIM = HIDDEN / HEADS,
  INTER = 96,
  TOKENS = 5,
  TP = 2
};
#define RMS_EPS 1e-5f
#define ROPE_THETA 10000.0f

/* The weights of one layer, or of one rank's shard of it, as f32. */
typedef struct layer {
  float *q, *k, *v, *o, *gate, *up, *down, *norm_in, *norm_post;
  int heads, kv_heads, inter; /* what these weights hold: all, or one rank's part */
} layer;

static const char *const NAMES[9] = {
    "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
    "model.layers.0.mlp.gate_proj.weight",    "model.layers.0.mlp.up_proj.weight",
    "model.layers.0.mlp.down_proj.weight",    "model.layers.0.input_layernorm.weight",
    "model.layers.0.post_attention_layernorm.weight"};

static void fail(const char *what) {
  fprintf(stderr, "tp_llama_layer: %s: %s\n", what, zt_last_error());
  exit(1);
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (p == NULL) {
    fprintf(stderr, "tp_llama_layer: out of memory\n");
    exit(1);
  }
  return p;
}

/* xorshift32: reproducible values in [-scale, scale]. */
static float random_value(uint32_t *state, float scale) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *state = x;
  return ((float)(x % 20001u) / 10000.0f - 1.0f) * scale;
}

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* --- The file: the weights of one layer, [out, in], bf16 ------------------------------ */

static void write_layer(const char *path) {
  /* {out, in} of each weight; the norms are vectors of HIDDEN. */
  const uint64_t shapes[9][2] = {{HEADS * HEAD_DIM, HIDDEN}, {KV_HEADS * HEAD_DIM, HIDDEN},
                                 {KV_HEADS * HEAD_DIM, HIDDEN}, {HIDDEN, HEADS * HEAD_DIM},
                                 {INTER, HIDDEN}, {INTER, HIDDEN}, {HIDDEN, INTER},
                                 {HIDDEN, 0}, {HIDDEN, 0}};
  zt_writer *w = NULL;
  uint32_t state = 0x2545F491u;
  int t;
  if (zt_writer_create(path, &w) != ZT_OK) fail(path);
  for (t = 0; t < 9; t++) {
    int vector = shapes[t][1] == 0;
    size_t n = (size_t)(vector ? shapes[t][0] : shapes[t][0] * shapes[t][1]), i;
    uint16_t *data = xcalloc(n, sizeof *data);
    for (i = 0; i < n; i++)
      data[i] = to_bf16(vector ? 1.0f + random_value(&state, 0.1f) : random_value(&state, 0.25f));
    if (zt_writer_add(w, NAMES[t], ZT_BF16, shapes[t], vector ? 1 : 2, data, n * sizeof *data, NULL) != ZT_OK) {
      zt_writer_free(w);
      fail(NAMES[t]);
    }
    free(data);
  }
  if (zt_writer_finish(w) != ZT_OK) fail("finish");
  zt_writer_free(w);
}

/* --- Loading ----------------------------------------------------------------------------- */

static float **field(layer *l, int t) {
  float **fields[9] = {&l->q, &l->k, &l->v, &l->o, &l->gate, &l->up, &l->down, &l->norm_in, &l->norm_post};
  return fields[t];
}

/* The whole layer, each weight read whole as f32. */
static void load_whole(const zt_reader *r, layer *l) {
  int t;
  l->heads = HEADS;
  l->kv_heads = KV_HEADS;
  l->inter = INTER;
  for (t = 0; t < 9; t++) {
    size_t i;
    zt_object_info info;
    uint64_t n = 1;
    unsigned d;
    if (zt_object_find(r, NAMES[t], &i) != ZT_OK || zt_object_get_info(r, i, &info) != ZT_OK) fail(NAMES[t]);
    for (d = 0; d < info.ndim; d++) n *= info.shape[d];
    *field(l, t) = xcalloc((size_t)n, sizeof(float));
    if (zt_component_read_as(r, i, "data", ZT_F32, *field(l, t), (size_t)n * sizeof(float)) != ZT_OK)
      fail(NAMES[t]);
  }
}

/* Rank `rank`'s requests (9 of them, into `q`), and the memory they fill, in `l`.
   q_by_columns: q_proj sliced the wrong way (by its inputs). */
static void plan_rank(const zt_reader *r, int rank, int q_by_columns, layer *l, zt_loader_request *q) {
  const uint64_t q_rows = HEADS * HEAD_DIM / TP, kv_rows = KV_HEADS * HEAD_DIM / TP, inter = INTER / TP;
  /* For each weight: the slice, the part's first index and count, the other dimension. */
  const struct {
    uint32_t slice;
    uint64_t count, other;
  } plan[9] = {
      {ZT_SLICE_ROWS, q_rows, HIDDEN},           /* q_proj: column-parallel */
      {ZT_SLICE_ROWS, kv_rows, HIDDEN},          /* k_proj */
      {ZT_SLICE_ROWS, kv_rows, HIDDEN},          /* v_proj */
      {ZT_SLICE_COLUMNS, q_rows, HIDDEN},        /* o_proj: row-parallel */
      {ZT_SLICE_ROWS, inter, HIDDEN},            /* gate_proj: column-parallel */
      {ZT_SLICE_ROWS, inter, HIDDEN},            /* up_proj */
      {ZT_SLICE_COLUMNS, inter, HIDDEN},         /* down_proj: row-parallel */
      {ZT_SLICE_WHOLE, HIDDEN, 1},               /* the norms: replicated */
      {ZT_SLICE_WHOLE, HIDDEN, 1}};
  int t;
  l->heads = HEADS / TP;
  l->kv_heads = KV_HEADS / TP;
  l->inter = INTER / TP;
  for (t = 0; t < 9; t++) {
    uint64_t n = plan[t].count * plan[t].other;
    memset(&q[t], 0, sizeof q[t]);
    if (zt_object_find(r, NAMES[t], &q[t].object) != ZT_OK) fail(NAMES[t]);
    *field(l, t) = xcalloc((size_t)n, sizeof(float));
    q[t].dst = *field(l, t);
    q[t].dst_size = n * sizeof(float);
    q[t].flags = ZT_LOAD_HOST | ZT_LOAD_CONVERT;
    q[t].dtype = ZT_F32;
    q[t].slice = plan[t].slice;
    if (plan[t].slice != ZT_SLICE_WHOLE) {
      q[t].first = (uint64_t)rank * plan[t].count;
      q[t].count = plan[t].count;
    }
  }
  if (q_by_columns) q[0].slice = ZT_SLICE_COLUMNS; /* q_proj is square: the same size */
}

/* Both ranks' shards from one reader, in one load. */
static void load_ranks(const zt_reader *r, int q_by_columns, layer ranks[TP]) {
  zt_loader_request q[9 * TP];
  zt_loader *loader = NULL;
  int rank;
  for (rank = 0; rank < TP; rank++) plan_rank(r, rank, q_by_columns, &ranks[rank], &q[9 * rank]);
  if (zt_loader_create(&loader) != ZT_OK) fail("zt_loader_create");
  if (zt_loader_load(loader, r, q, 9 * TP) != ZT_OK) fail("zt_loader_load");
  zt_loader_free(loader);
}

static void free_layer(layer *l) {
  int t;
  for (t = 0; t < 9; t++) free(*field(l, t));
}

/* --- The computation ------------------------------------------------------------------- */

/* y[s][o] = sum_i x[s][i] * w[o][i]: a weight stored [out, in]. */
static void linear(const float *x, const float *w, int in, int out, float *y) {
  int s, o, i;
  for (s = 0; s < TOKENS; s++)
    for (o = 0; o < out; o++) {
      float acc = 0.0f;
      for (i = 0; i < in; i++) acc += x[s * in + i] * w[o * in + i];
      y[s * out + o] = acc;
    }
}

static void rms_norm(const float *x, const float *weight, float *y) {
  int s, i;
  for (s = 0; s < TOKENS; s++) {
    float sum = 0.0f, inverse;
    for (i = 0; i < HIDDEN; i++) sum += x[s * HIDDEN + i] * x[s * HIDDEN + i];
    inverse = 1.0f / sqrtf(sum / HIDDEN + RMS_EPS);
    for (i = 0; i < HIDDEN; i++) y[s * HIDDEN + i] = x[s * HIDDEN + i] * inverse * weight[i];
  }
}

/* Rotary position embedding of `heads` heads of each token (Llama's rotate-half form). */
static void rope(float *x, int heads) {
  int s, h, i;
  for (s = 0; s < TOKENS; s++)
    for (h = 0; h < heads; h++) {
      float *v = x + (s * heads + h) * HEAD_DIM;
      for (i = 0; i < HEAD_DIM / 2; i++) {
        float angle = (float)s * powf(ROPE_THETA, -2.0f * (float)i / HEAD_DIM);
        float a = v[i], b = v[i + HEAD_DIM / 2];
        v[i] = a * cosf(angle) - b * sinf(angle);
        v[i + HEAD_DIM / 2] = b * cosf(angle) + a * sinf(angle);
      }
    }
}

/* The attention block of `l`'s heads on normed input `n`: its contribution to the
   output (o_proj of those heads), TOKENS x HIDDEN, added to `out`. */
static void attention_part(const layer *l, const float *n, float *out) {
  const int qd = l->heads * HEAD_DIM, kvd = l->kv_heads * HEAD_DIM, group = l->heads / l->kv_heads;
  float *q = xcalloc(TOKENS * qd, sizeof *q), *k = xcalloc(TOKENS * kvd, sizeof *k);
  float *v = xcalloc(TOKENS * kvd, sizeof *v), *ctx = xcalloc(TOKENS * qd, sizeof *ctx);
  float *part = xcalloc(TOKENS * HIDDEN, sizeof *part);
  int s, h, t, i;
  linear(n, l->q, HIDDEN, qd, q);
  linear(n, l->k, HIDDEN, kvd, k);
  linear(n, l->v, HIDDEN, kvd, v);
  rope(q, l->heads);
  rope(k, l->kv_heads);
  for (h = 0; h < l->heads; h++) {
    const int kv = h / group;
    for (s = 0; s < TOKENS; s++) {
      float score[TOKENS], max = -INFINITY, sum = 0.0f;
      for (t = 0; t <= s; t++) { /* causal */
        float dot = 0.0f;
        for (i = 0; i < HEAD_DIM; i++)
          dot += q[(s * l->heads + h) * HEAD_DIM + i] * k[(t * l->kv_heads + kv) * HEAD_DIM + i];
        score[t] = dot / sqrtf((float)HEAD_DIM);
        if (score[t] > max) max = score[t];
      }
      for (t = 0; t <= s; t++) {
        score[t] = expf(score[t] - max);
        sum += score[t];
      }
      for (i = 0; i < HEAD_DIM; i++) {
        float acc = 0.0f;
        for (t = 0; t <= s; t++) acc += score[t] / sum * v[(t * l->kv_heads + kv) * HEAD_DIM + i];
        ctx[(s * l->heads + h) * HEAD_DIM + i] = acc;
      }
    }
  }
  linear(ctx, l->o, qd, HIDDEN, part); /* o_proj's columns of these heads */
  for (i = 0; i < TOKENS * HIDDEN; i++) out[i] += part[i];
  free(q);
  free(k);
  free(v);
  free(ctx);
  free(part);
}

/* The MLP of `l`'s slice of the intermediate size on normed input `n`, added to `out`. */
static void mlp_part(const layer *l, const float *n, float *out) {
  float *gate = xcalloc(TOKENS * l->inter, sizeof *gate), *up = xcalloc(TOKENS * l->inter, sizeof *up);
  float *part = xcalloc(TOKENS * HIDDEN, sizeof *part);
  int i;
  linear(n, l->gate, HIDDEN, l->inter, gate);
  linear(n, l->up, HIDDEN, l->inter, up);
  for (i = 0; i < TOKENS * l->inter; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i]; /* SiLU */
  linear(gate, l->down, l->inter, HIDDEN, part); /* down_proj's columns of this slice */
  for (i = 0; i < TOKENS * HIDDEN; i++) out[i] += part[i];
  free(gate);
  free(up);
  free(part);
}

/* The layer on `x` over `count` parts (1: whole; TP: the ranks), each adding its share
   of attention and then of the MLP; the sums are the all-reduces. */
static void forward(const layer *parts, int count, const float *x, float *y) {
  float n[TOKENS * HIDDEN], h[TOKENS * HIDDEN];
  int p;
  memcpy(h, x, sizeof h); /* the residual */
  rms_norm(x, parts[0].norm_in, n);
  for (p = 0; p < count; p++) attention_part(&parts[p], n, h);
  memcpy(y, h, sizeof h);
  rms_norm(h, parts[0].norm_post, n);
  for (p = 0; p < count; p++) mlp_part(&parts[p], n, y);
}

static float max_difference(const float *a, const float *b) {
  float d = 0.0f;
  int i;
  for (i = 0; i < TOKENS * HIDDEN; i++)
    if (fabsf(a[i] - b[i]) > d) d = fabsf(a[i] - b[i]);
  return d;
}

int main(int argc, char **argv) {
  float x[TOKENS * HIDDEN], whole_y[TOKENS * HIDDEN], tp_y[TOKENS * HIDDEN], wrong_y[TOKENS * HIDDEN];
  float scale = 0.0f, right, wrong;
  uint32_t state = 0x9E3779B9u;
  layer whole, ranks[TP], wrong_ranks[TP];
  zt_reader *r = NULL;
  int i;
  if (argc != 2) {
    fprintf(stderr, "usage: tp_llama_layer <layer.zt>\n");
    return 2;
  }
  write_layer(argv[1]);
  if (zt_open(argv[1], &r) != ZT_OK) fail(argv[1]);
  for (i = 0; i < TOKENS * HIDDEN; i++) x[i] = random_value(&state, 1.0f);

  load_whole(r, &whole);
  forward(&whole, 1, x, whole_y);
  load_ranks(r, 0, ranks);
  forward(ranks, TP, x, tp_y);
  load_ranks(r, 1, wrong_ranks);
  forward(wrong_ranks, TP, x, wrong_y);

  for (i = 0; i < TOKENS * HIDDEN; i++)
    if (fabsf(whole_y[i]) > scale) scale = fabsf(whole_y[i]);
  right = max_difference(tp_y, whole_y);
  wrong = max_difference(wrong_y, whole_y);
  printf("layer output: %d tokens x %d, largest |value| %.4f\n", TOKENS, HIDDEN, scale);
  printf("TP=2, q/k/v/gate/up by rows, o/down by columns: largest difference %.3g\n", right);
  printf("TP=2, q_proj by columns (wrong for [out, in]):   largest difference %.3g\n", wrong);

  free_layer(&whole);
  for (i = 0; i < TP; i++) {
    free_layer(&ranks[i]);
    free_layer(&wrong_ranks[i]);
  }
  zt_close(r);
  if (!(right <= 1e-5f * scale)) {
    fprintf(stderr, "tp_llama_layer: the sharded layer differs from the whole one\n");
    return 1;
  }
  if (!(wrong > 1e-2f * scale)) {
    fprintf(stderr, "tp_llama_layer: slicing q_proj by columns went unnoticed\n");
    return 1;
  }
  printf("ok\n");
  return 0;
}
