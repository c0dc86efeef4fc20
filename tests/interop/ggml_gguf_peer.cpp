// ggml's own GGUF reader (gguf.h, built from the ggml sources ggml-python's sdist
// vendors: tests/writers.rs) opens a file and prints what it found, one fact a line, for
// tests/writers.rs to compare with what was written. Exit 1 when ggml refuses the file.
#include "ggml.h"
#include "gguf.h"

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  struct gguf_init_params params = {true, NULL};  // no_alloc: the header only
  struct gguf_context *ctx = gguf_init_from_file(argv[1], params);
  if (ctx == NULL) {
    std::printf("refused\n");
    return 1;
  }
  std::printf("version %u alignment %zu data_offset %zu\n", gguf_get_version(ctx),
              gguf_get_alignment(ctx), gguf_get_data_offset(ctx));
  for (int64_t i = 0; i < gguf_get_n_kv(ctx); i++) {
    std::printf("kv %s %d\n", gguf_get_key(ctx, i), (int)gguf_get_kv_type(ctx, i));
  }
  for (int64_t i = 0; i < gguf_get_n_tensors(ctx); i++) {
    std::printf("tensor %s %d %zu %zu\n", gguf_get_tensor_name(ctx, i),
                (int)gguf_get_tensor_type(ctx, i), gguf_get_tensor_offset(ctx, i),
                gguf_get_tensor_size(ctx, i));
  }
  gguf_free(ctx);
  return 0;
}

// ggml's backend is not built: reading a header with no_alloc never touches tensor data.
extern "C" {
void ggml_backend_tensor_set(struct ggml_tensor *, const void *, size_t, size_t) { std::abort(); }
void ggml_backend_tensor_get(const struct ggml_tensor *, void *, size_t, size_t) { std::abort(); }
void ggml_backend_tensor_memset(struct ggml_tensor *, uint8_t, size_t, size_t) { std::abort(); }
}
