/*
 * PyTorch checkpoints, NumPy .npy/.npz files and ONNX models through the same C API as
 * every other format (tests/vectors/{torch,numpy,onnx}, written by torch, numpy and onnx
 * themselves; tests/vectors/hostile for small hand-made ones): the format name, views
 * (zero-copy for contiguous data of a mapped file, decoded copies for transposed views,
 * Fortran order, big-endian and deflated data), exact values, ONNX external data read
 * from the file beside the model, and the refusals (a pickle that calls os.system, the
 * legacy checkpoint format, external data opened from memory).
 *
 * Usage: test_torch_numpy_onnx <repo>/tests/vectors
 */
#include "zt_test.h"

static char g_path[1024];

static const char *path_of(const char *vectors, const char *rel) {
  snprintf(g_path, sizeof g_path, "%s/%s", vectors, rel);
  return g_path;
}

/* The view of object `name`'s data, checked to exist. */
static int view_of(zt_reader *r, const char *name, zt_view *v) {
  size_t index = SIZE_MAX;
  if (!CHECK_OK(zt_object_find(r, name, &index))) {
    fprintf(stderr, "  object %s: %s\n", name, zt_last_error());
    return 0;
  }
  return CHECK_OK(zt_component_view(r, index, "data", v));
}

static void test_torch(const char *vectors) {
  zt_reader *r = NULL;
  if (!CHECK_OK(zt_open(path_of(vectors, "torch/views.pt"), &r))) {
    return;
  }
  CHECK_STR(zt_file_format(r), "pytorch");
  zt_view v;
  /* base = arange(24).reshape(4, 6) as f32: contiguous, zero-copy. */
  if (view_of(r, "base", &v)) {
    const float *f = (const float *)v.data;
    CHECK_U64(v.size, 24 * sizeof(float));
    CHECK(v.zero_copy);
    CHECK(f[0] == 0.0f && f[23] == 23.0f && f[7] == 7.0f);
  }
  /* t = base.t(): a transposed view, gathered into a row-major copy. */
  if (view_of(r, "t", &v)) {
    const float *f = (const float *)v.data;
    CHECK(!v.zero_copy);
    CHECK_U64(v.size, 24 * sizeof(float));
    int all = 1;
    for (int i = 0; i < 6; i++) {
      for (int j = 0; j < 4; j++) {
        all &= f[i * 4 + j] == (float)(j * 6 + i);
      }
    }
    CHECK(all);
  }
  /* col = base[:, 2] and row = base[1]: a strided view and an offset one. */
  if (view_of(r, "col", &v)) {
    const float *f = (const float *)v.data;
    CHECK(f[0] == 2.0f && f[1] == 8.0f && f[2] == 14.0f && f[3] == 20.0f);
  }
  if (view_of(r, "row", &v)) {
    const float *f = (const float *)v.data;
    CHECK(v.zero_copy);
    CHECK(f[0] == 6.0f && f[5] == 11.0f);
  }
  /* overlap_b = int16 arange(20)[5:15], which overlaps overlap_a partially. */
  if (view_of(r, "overlap_b", &v)) {
    const int16_t *s = (const int16_t *)v.data;
    CHECK_U64(v.size, 10 * sizeof(int16_t));
    CHECK(s[0] == 5 && s[9] == 14);
  }
  zt_close(r);

  /* The sharded checkpoint through its index. */
  r = NULL;
  if (CHECK_OK(zt_open(path_of(vectors, "torch/pytorch_model.bin.index.json"), &r))) {
    CHECK_STR(zt_file_format(r), "pytorch");
    CHECK_U64(zt_object_count(r), 3);
    CHECK_U64(zt_shard_count(r), 2);
    if (view_of(r, "b.weight", &v)) {
      CHECK_U64(v.size, 8 * 2);
      CHECK_U64(v.dtype, ZT_BF16);
    }
    zt_close(r);
  }

  /* Refused: a pickle calling os.system (nothing runs), the legacy format. */
  r = NULL;
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_open(path_of(vectors, "hostile/pt_os_system.zt"), &r));
  CHECK_CONTAINS(zt_last_error(), "os.system");
  CHECK(r == NULL);
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_open(path_of(vectors, "torch/legacy.pt"), &r));
  CHECK_CONTAINS(zt_last_error(), "legacy");
}

static void test_numpy(const char *vectors) {
  zt_reader *r = NULL;
  zt_view v;
  /* Big-endian, Fortran-ordered i16 [[1, 2, 3], [4, 5, 6]]: a swapped, gathered copy. */
  if (CHECK_OK(zt_open(path_of(vectors, "hostile/npy_ok_fortran_be.zt"), &r))) {
    CHECK_STR(zt_file_format(r), "numpy");
    CHECK_STR(zt_file_version(r), "1.0");
    if (view_of(r, "array", &v)) {
      const int16_t *s = (const int16_t *)v.data;
      CHECK(!v.zero_copy);
      CHECK(s[0] == 1 && s[1] == 2 && s[2] == 3 && s[3] == 4 && s[4] == 5 && s[5] == 6);
    }
    zt_close(r);
  }
  /* The same arrays stored and deflated in an .npz read the same. */
  zt_reader *stored = NULL, *deflated = NULL;
  if (CHECK_OK(zt_open(path_of(vectors, "numpy/npz_stored.npz"), &stored)) &&
      CHECK_OK(zt_open(path_of(vectors, "numpy/npz_deflated.npz"), &deflated))) {
    CHECK_U64(zt_object_count(deflated), zt_object_count(stored));
    const char *names[] = {"weights", "bias", "fortran", "names", "nested/path"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      zt_view a, b;
      if (view_of(stored, names[i], &a) && view_of(deflated, names[i], &b)) {
        CHECK_U64(b.size, a.size);
        CHECK(!b.zero_copy);
        CHECK_MEM(b.data, a.data, (size_t)a.size);
      }
    }
    /* A read into a caller buffer inflates straight into it. */
    size_t index = SIZE_MAX;
    if (CHECK_OK(zt_object_find(deflated, "weights", &index))) {
      float buf[20];
      zt_view a;
      if (CHECK_OK(zt_component_read(deflated, index, "data", buf, sizeof buf)) &&
          view_of(stored, "weights", &a)) {
        CHECK_MEM(buf, a.data, sizeof buf);
      }
    }
  }
  zt_close(stored);
  zt_close(deflated);
}

static void test_onnx(const char *vectors) {
  zt_reader *r = NULL;
  zt_view v;
  if (CHECK_OK(zt_open(path_of(vectors, "hostile/onnx_ok_raw.zt"), &r))) {
    CHECK_STR(zt_file_format(r), "onnx");
    if (view_of(r, "w", &v)) {
      const float *f = (const float *)v.data;
      CHECK(f[0] == 1.0f && f[1] == 2.0f && f[2] == 3.0f && f[3] == 4.0f);
    }
    zt_close(r);
  }
  /* External data: the bytes come from the file beside the model, where the location
   * says. */
  r = NULL;
  if (CHECK_OK(zt_open(path_of(vectors, "onnx/model_external.onnx"), &r))) {
    size_t index = SIZE_MAX;
    zt_location at;
    const char *shard = NULL;
    size_t size = 0;
    unsigned char *weights = zt_test_slurp(path_of(vectors, "onnx/model_external.weights"), &size);
    if (CHECK(weights != NULL) && CHECK_OK(zt_object_find(r, "w0", &index)) &&
        CHECK_OK(zt_component_get_location(r, index, 0, &at)) && view_of(r, "w0", &v)) {
      CHECK_U64(at.shard, 1);
      CHECK_OK(zt_shard_get_path(r, at.shard, &shard));
      CHECK_CONTAINS(shard, "model_external.weights");
      CHECK_U64(v.size, 12 * sizeof(float));
      CHECK(at.offset + v.size <= size);
      CHECK_MEM(v.data, weights + at.offset, (size_t)v.size);
    }
    free(weights);
    zt_close(r);
  }
  /* From memory there is no directory to find the external file in. */
  size_t size = 0;
  unsigned char *model = zt_test_slurp(path_of(vectors, "onnx/model_external.onnx"), &size);
  if (CHECK(model != NULL)) {
    r = NULL;
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_open_memory(model, size, &r));
    CHECK_CONTAINS(zt_last_error(), "open it by path");
    free(model);
  }
  r = NULL;
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open(path_of(vectors, "onnx/external_traversal.onnx"), &r));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <tests/vectors>\n", argv[0]);
    return 2;
  }
  test_torch(argv[1]);
  test_numpy(argv[1]);
  test_onnx(argv[1]);
  return zt_test_summary();
}
