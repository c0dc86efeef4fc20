/*
 * gguf_loader: what a llama.cpp-style runtime does with a GGUF model, through the
 * typed attribute API (no JSON anywhere).
 *
 *   gguf_loader model.gguf [expected.f32]
 *
 * 1. Hyperparameters: llama.block_count, llama.context_length, llama.embedding_length and
 *    llama.attention.head_count as uint32_t, the RMS norm epsilon as float, each checked
 *    to be of the width the file declares (ZT_VALUE_U32, ZT_VALUE_F32).
 * 2. The vocabulary: tokenizer.ggml.tokens (strings, by index, borrowed from the reader),
 *    tokenizer.ggml.scores (a contiguous float array) and tokenizer.ggml.token_type
 *    (int32_t array).
 * 3. Every tensor sized without attributes: dense ones by shape x dtype size, quantized
 *    ones by zt_object_get_quant_info (ggml type, row size, rows), with the dimensions
 *    given back in ggml's order (ne[0] first: the shape reversed).
 * 4. Every quantized tensor dequantized to f32 with zt_component_read_as. With
 *    expected.f32 (the values gguf-py's gguf.quants.dequantize gives, in tensor order, as
 *    tests/interop/make_loader_vector.py writes them), the values must match bit for bit.
 *
 * Exit status 0 when everything loaded (and matched), 1 otherwise.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"

static int fail(const char *what, zt_status s) {
  fprintf(stderr, "gguf_loader: %s: %s: %s\n", what, zt_status_name((uint32_t)s), zt_last_error());
  return 1;
}

/* A u32 hyperparameter, refusing any other declared type (llama.cpp's rule). */
static int hparam_u32(const zt_reader *r, const char *key, uint32_t *out) {
  const zt_value *v = NULL;
  uint32_t type = 0;
  zt_status s = zt_file_find_attribute(r, key, &v);
  if (s != ZT_OK) {
    return fail(key, s);
  }
  if ((s = zt_value_get_type(v, &type)) != ZT_OK) {
    return fail(key, s);
  }
  if (type != ZT_VALUE_U32) {
    fprintf(stderr, "gguf_loader: %s is %s, not u32\n", key, zt_value_type_name(type));
    return 1;
  }
  s = zt_value_get_u32(v, out);
  return s == ZT_OK ? 0 : fail(key, s);
}

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *bytes = NULL;
  long n;
  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
      (bytes = (unsigned char *)malloc((size_t)n + 1)) == NULL || fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    if (f != NULL) {
      fclose(f);
    }
    free(bytes);
    return NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return bytes;
}

int main(int argc, char **argv) {
  zt_reader *r = NULL;
  const zt_value *tokens = NULL, *scores = NULL, *types = NULL, *eps_value = NULL;
  uint32_t n_layer = 0, n_ctx = 0, n_embd = 0, n_head = 0, elem = 0;
  float eps = 0.0f;
  size_t n_vocab = 0, n_scores = 0, n_types = 0, i, n_objects;
  const void *score_data = NULL, *type_data = NULL;
  const float *score;
  const int32_t *token_type;
  unsigned char *expected = NULL;
  size_t expected_size = 0, expected_at = 0;
  uint64_t total_bytes = 0;
  int errors = 0;
  zt_status s;

  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s model.gguf [expected.f32]\n", argv[0]);
    return 2;
  }
  if (argc == 3 && (expected = slurp(argv[2], &expected_size)) == NULL) {
    fprintf(stderr, "gguf_loader: can't read %s\n", argv[2]);
    return 1;
  }
  if ((s = zt_open(argv[1], &r)) != ZT_OK) {
    free(expected);
    return fail(argv[1], s);
  }

  /* 1. Hyperparameters. */
  errors += hparam_u32(r, "llama.block_count", &n_layer);
  errors += hparam_u32(r, "llama.context_length", &n_ctx);
  errors += hparam_u32(r, "llama.embedding_length", &n_embd);
  errors += hparam_u32(r, "llama.attention.head_count", &n_head);
  if ((s = zt_file_find_attribute(r, "llama.attention.layer_norm_rms_epsilon", &eps_value)) != ZT_OK ||
      (s = zt_value_get_f32(eps_value, &eps)) != ZT_OK) {
    errors += fail("llama.attention.layer_norm_rms_epsilon", s);
  }
  printf("hparams: n_layer %u, n_ctx %u, n_embd %u, n_head %u, rms_eps %g\n", n_layer, n_ctx, n_embd, n_head,
         (double)eps);

  /* 2. The vocabulary: strings by index, scores and types as contiguous arrays. */
  if ((s = zt_file_find_attribute(r, "tokenizer.ggml.tokens", &tokens)) != ZT_OK ||
      (s = zt_value_get_count(tokens, &n_vocab)) != ZT_OK) {
    errors += fail("tokenizer.ggml.tokens", s);
  }
  if ((s = zt_file_find_attribute(r, "tokenizer.ggml.scores", &scores)) != ZT_OK ||
      (s = zt_value_get_array_type(scores, &elem)) != ZT_OK || elem != ZT_VALUE_F32 ||
      (s = zt_value_get_array_data(scores, &score_data, &n_scores)) != ZT_OK) {
    errors += fail("tokenizer.ggml.scores (f32 array)", s);
  }
  if ((s = zt_file_find_attribute(r, "tokenizer.ggml.token_type", &types)) != ZT_OK ||
      (s = zt_value_get_array_type(types, &elem)) != ZT_OK || elem != ZT_VALUE_I32 ||
      (s = zt_value_get_array_data(types, &type_data, &n_types)) != ZT_OK) {
    errors += fail("tokenizer.ggml.token_type (i32 array)", s);
  }
  score = (const float *)score_data;
  token_type = (const int32_t *)type_data;
  if (errors == 0 && (n_scores != n_vocab || n_types != n_vocab)) {
    fprintf(stderr, "gguf_loader: %zu tokens, %zu scores, %zu types\n", n_vocab, n_scores, n_types);
    errors++;
  }
  printf("vocab: %zu tokens\n", n_vocab);
  for (i = 0; errors == 0 && i < n_vocab; i++) {
    const char *text = NULL;
    size_t len = 0;
    if ((s = zt_value_get_element_string(tokens, i, &text, &len)) != ZT_OK) {
      errors += fail("token", s);
      break;
    }
    if (i < 4 || i + 1 == n_vocab) {
      printf("  token %zu: \"%.*s\" score %g type %d\n", i, (int)len, text, (double)score[i], (int)token_type[i]);
    }
  }

  /* 3 and 4. Every tensor: sized without JSON; quantized ones dequantized. */
  n_objects = zt_object_count(r);
  for (i = 0; i < n_objects; i++) {
    zt_object_info info;
    zt_quant_info q;
    uint64_t numel = 1, bytes;
    size_t d;
    char dims[128] = "";
    if ((s = zt_object_get_info(r, i, &info)) != ZT_OK) {
      errors += fail("object", s);
      continue;
    }
    for (d = 0; d < info.ndim; d++) {
      /* ggml's order: ne[0] is the last dimension of the row-major shape. */
      size_t used = strlen(dims);
      numel *= info.shape[d];
      snprintf(dims + used, sizeof dims - used, "%s%llu", d ? ", " : "",
               (unsigned long long)info.shape[info.ndim - 1 - d]);
    }
    s = zt_object_get_quant_info(r, i, &q);
    if (s == ZT_ERR_NOT_FOUND) { /* dense: shape x dtype size */
      zt_component_info c;
      size_t width = 0;
      if ((s = zt_component_get_info(r, i, 0, &c)) != ZT_OK || (s = zt_dtype_get_size(c.dtype, &width)) != ZT_OK) {
        errors += fail(info.name, s);
        continue;
      }
      bytes = numel * width;
      printf("tensor %-24s %-6s ne [%s] %llu bytes\n", info.name, zt_dtype_name(c.dtype), dims,
             (unsigned long long)bytes);
      total_bytes += bytes;
      continue;
    }
    if (s != ZT_OK) {
      errors += fail(info.name, s);
      continue;
    }
    bytes = q.row_size * q.row_count;
    total_bytes += bytes;
    printf("tensor %-24s %-6s ne [%s] %llu rows x %llu bytes\n", info.name, q.name, dims,
           (unsigned long long)q.row_count, (unsigned long long)q.row_size);
    {
      size_t out_size = (size_t)numel * sizeof(float);
      float *values = (float *)malloc(out_size ? out_size : 1);
      if (values == NULL) {
        errors++;
        continue;
      }
      if ((s = zt_component_read_as(r, i, q.role, ZT_F32, values, out_size)) != ZT_OK) {
        errors += fail(info.name, s);
      } else if (expected != NULL) {
        if (expected_at + out_size > expected_size || memcmp(expected + expected_at, values, out_size) != 0) {
          fprintf(stderr, "gguf_loader: %s: values differ from gguf-py's\n", info.name);
          errors++;
        } else {
          printf("  %llu values match gguf-py's exactly\n", (unsigned long long)numel);
        }
        expected_at += out_size;
      }
      free(values);
    }
  }
  if (expected != NULL && expected_at != expected_size) {
    fprintf(stderr, "gguf_loader: compared %zu of the %zu expected bytes\n", expected_at, expected_size);
    errors++;
  }
  printf("%zu tensors, %llu bytes; %s\n", n_objects, (unsigned long long)total_bytes,
         errors ? "FAILED" : "ok");
  zt_close(r);
  free(expected);
  return errors ? 1 : 0;
}
