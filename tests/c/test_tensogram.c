/*
 * test_tensogram: Tensogram v3 (.tgm) files through the C ABI.
 *
 *   test_tensogram <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * Opens the vectors written by the real `tensogram` package (<vectors>/tensogram/):
 * format name, names, shapes, dtypes, raw and pipeline encodings, exact values (raw,
 * byte-swapped, simple_packing, shuffle + zstd / lz4, NaN/Inf masks, bitmask), xxh3
 * digests verified by zt_file_verify (ZT_OK, then ZT_ERR_CHECKSUM on a corrupted copy), and
 * ZT_ERR_UNSUPPORTED naming the codec for pipelines this build can't decode.
 */
#define _POSIX_C_SOURCE 200809L
#include "zt_test.h"

#include <math.h>

static char vectors[4096];

static const char *path_of(const char *name) {
  static char path[4200];
  snprintf(path, sizeof path, "%s/tensogram/%s", vectors, name);
  return path;
}

static zt_reader *open_vector(const char *name) {
  zt_reader *r = NULL;
  if (!CHECK_OK(zt_open(path_of(name), &r))) {
    return NULL;
  }
  return r;
}

/* Index of an object by name (SIZE_MAX when missing, counted as a failure). */
static size_t find(const zt_reader *r, const char *name) {
  size_t i = (size_t)-1;
  if (!CHECK_OK(zt_object_find(r, name, &i))) {
    fprintf(stderr, "  (object %s)\n", name);
  }
  return i;
}

static void test_raw_dtypes(void) {
  zt_reader *r = open_vector("raw_dtypes.tgm");
  if (r == NULL) {
    return;
  }
  CHECK_STR(zt_file_format(r), "tensogram");
  CHECK_STR(zt_file_version(r), "3");
  CHECK_U64(zt_object_count(r), 8);

  size_t t = find(r, "temperature");
  zt_object_info oi;
  zt_component_info ci;
  CHECK_OK(zt_object_get_info(r, t, &oi));
  CHECK_STR(oi.name, "temperature");
  CHECK_STR(oi.format, "dense");
  CHECK_U64(oi.ndim, 2);
  CHECK_U64(oi.shape[0], 2);
  CHECK_U64(oi.shape[1], 3);
  CHECK_OK(zt_component_get_info(r, t, 0, &ci));
  CHECK_STR(ci.role, "data");
  CHECK_U64(ci.dtype, ZT_F32);
  CHECK_U64(ci.encoding, ZT_ENCODING_RAW);
  CHECK_U64(ci.decoded_length, 24);
  CHECK(ci.digest != NULL && strncmp(ci.digest, "xxh3:", 5) == 0 && strlen(ci.digest) == 21);
  float f[6];
  const float fe[6] = {0, 0.25f, 0.5f, 0.75f, 1, 1.25f};
  CHECK_OK(zt_component_read(r, t, "data", f, sizeof f));
  CHECK_MEM(f, fe, sizeof f);
  zt_view v;
  CHECK_OK(zt_component_view(r, t, "data", &v));
  CHECK(v.zero_copy);
  CHECK_MEM(v.data, fe, sizeof fe);

  /* Big-endian int32 payload, swapped on read. */
  size_t b = find(r, "big_i32");
  int32_t i3[3];
  const int32_t ie[3] = {1, -2, 0x01020304};
  CHECK_OK(zt_component_read(r, b, "data", i3, sizeof i3));
  CHECK_MEM(i3, ie, sizeof i3);

  /* complex64: f32 storage, logical type. */
  size_t w = find(r, "wave");
  CHECK_OK(zt_component_get_info(r, w, 0, &ci));
  CHECK_U64(ci.dtype, ZT_F32);
  CHECK_STR(ci.type, "complex64");
  float c[4];
  const float ce[4] = {1, 2, 3, -4};
  CHECK_OK(zt_component_read(r, w, "data", c, sizeof c));
  CHECK_MEM(c, ce, sizeof c);

  /* Scalar. */
  size_t s = find(r, "scalar");
  CHECK_OK(zt_object_get_info(r, s, &oi));
  CHECK_U64(oi.ndim, 0);
  double d;
  CHECK_OK(zt_component_read(r, s, "data", &d, sizeof d));
  CHECK(d == 3.5);

  CHECK_OK(zt_file_verify(r));
  zt_close(r);
}

static void test_pipelines(void) {
  zt_reader *r = open_vector("simple_packing.tgm");
  if (r == NULL) {
    return;
  }
  double v[37], e[37];
  for (int i = 0; i < 37; i++) {
    e[i] = 250.0 + 10.0 * i / 36.0;
  }
  zt_component_info ci;
  size_t o = find(r, "sp16");
  CHECK_OK(zt_component_get_info(r, o, 0, &ci));
  CHECK_U64(ci.encoding, ZT_ENCODING_PIPELINE);
  CHECK_U64(ci.dtype, ZT_F64);
  CHECK_U64(ci.decoded_length, 37 * 8);
  CHECK_OK(zt_component_read(r, o, "data", v, sizeof v));
  int close = 1;
  for (int i = 0; i < 37; i++) {
    close &= fabs(v[i] - e[i]) <= 10.0 / 65535;
  }
  CHECK(close);
  CHECK(v[0] == 250.0);
  o = find(r, "sp0");
  CHECK_OK(zt_component_read(r, o, "data", v, sizeof v));
  CHECK(v[0] == 250.0 && v[36] == 250.0);
  o = find(r, "sp64");
  CHECK_OK(zt_component_read(r, o, "data", v, sizeof v));
  close = 1;
  for (int i = 0; i < 37; i++) {
    close &= fabs(v[i] - e[i]) <= 1e-9;
  }
  CHECK(close);
  CHECK_OK(zt_file_verify(r));
  zt_close(r);

  r = open_vector("compressed.tgm");
  if (r == NULL) {
    return;
  }
  /* shuffle + zstd (f32) and plain shuffle of the same values agree. */
  float a[64], b[64];
  size_t x = find(r, "shuffle_zstd"), y = find(r, "shuffle_only");
  CHECK_OK(zt_component_get_info(r, x, 0, &ci));
  CHECK_U64(ci.encoding, ZT_ENCODING_PIPELINE);
  CHECK_OK(zt_component_read(r, x, "data", a, sizeof a));
  CHECK_OK(zt_component_read(r, y, "data", b, sizeof b));
  CHECK_MEM(a, b, sizeof a);
  /* lz4 and shuffle + lz4 of the same f64 values agree. */
  double p[40], q[40];
  CHECK_OK(zt_component_read(r, find(r, "lz4"), "data", p, sizeof p));
  CHECK_OK(zt_component_read(r, find(r, "shuffle_lz4"), "data", q, sizeof q));
  CHECK_MEM(p, q, sizeof p);
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read(r, find(r, "lz4"), "data", p, 8));
  CHECK_OK(zt_file_verify(r));
  zt_close(r);
}

static void test_masks(void) {
  zt_reader *r = open_vector("masks.tgm");
  if (r == NULL) {
    return;
  }
  const char *names[] = {"message_0/mask_none", "message_1/mask_rle", "message_2/mask_roaring",
                         "message_3/mask_zstd", "message_4/mask_lz4"};
  for (int k = 0; k < 5; k++) {
    double v[300];
    size_t o = find(r, names[k]);
    CHECK_OK(zt_component_read(r, o, "data", v, sizeof v));
    int ok = 1;
    for (int i = 0; i < 300; i++) {
      if (i == 3 || i == 4 || i == 5 || i == 100 || i == 299) {
        ok &= isnan(v[i]);
      } else if (i == 7 || i == 200) {
        ok &= isinf(v[i]) && v[i] > 0;
      } else if (i == 8) {
        ok &= isinf(v[i]) && v[i] < 0;
      } else {
        ok &= fabs(v[i] - (-1.0 + 2.0 * i / 299.0)) < 1e-12;
      }
    }
    CHECK(ok);
  }
  CHECK_OK(zt_file_verify(r));
  zt_close(r);

  r = open_vector("streamed_multi.tgm");
  if (r == NULL) {
    return;
  }
  CHECK_U64(zt_object_count(r), 5);
  unsigned char bits[10];
  const unsigned char be[10] = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1};
  zt_component_info ci;
  size_t o = find(r, "message_2/object_1");
  CHECK_OK(zt_component_get_info(r, o, 0, &ci));
  CHECK_U64(ci.dtype, ZT_BOOL);
  CHECK(ci.digest == NULL);
  CHECK_OK(zt_component_read(r, o, "data", bits, sizeof bits));
  CHECK_MEM(bits, be, sizeof bits);
  uint16_t u[3];
  const uint16_t ue[3] = {1, 2, 3};
  CHECK_OK(zt_component_read(r, find(r, "message_0/a"), "data", u, sizeof u));
  CHECK_MEM(u, ue, sizeof u);
  CHECK_OK(zt_file_verify(r));
  zt_close(r);
}

static void test_corrupted_copy(void) {
  zt_reader *r = open_vector("raw_dtypes.tgm");
  if (r == NULL) {
    return;
  }
  zt_component_info ci;
  CHECK_OK(zt_component_get_info(r, find(r, "flags"), 0, &ci));
  zt_close(r);
  FILE *in = fopen(path_of("raw_dtypes.tgm"), "rb");
  if (!CHECK(in != NULL)) {
    return;
  }
  unsigned char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, in);
  fclose(in);
  CHECK(n > ci.offset && n < sizeof buf);
  buf[ci.offset] ^= 0x40;
  FILE *out = fopen("corrupt.tgm", "wb");
  if (!CHECK(out != NULL)) {
    return;
  }
  CHECK_U64(fwrite(buf, 1, n, out), n);
  fclose(out);
  CHECK_OK(zt_open("corrupt.tgm", &r));
  if (r == NULL) {
    return;
  }
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_file_verify(r));
  CHECK_ERROR_MENTIONS("flags");
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(r, find(r, "flags"), "data"));
  CHECK_OK(zt_component_verify(r, find(r, "temperature"), "data"));
  /* The bytes still read (verification is separate from access). */
  unsigned char f[5];
  CHECK_OK(zt_component_read(r, find(r, "flags"), "data", f, sizeof f));
  CHECK_U64(f[0], 0x40);
  zt_close(r);

  /* Verify-on-open refuses the file. */
  zt_open_options opts;
  memset(&opts, 0, sizeof opts);
  opts.flags = ZT_OPEN_VERIFY;
  r = NULL;
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_open_with("corrupt.tgm", &opts, &r));
  CHECK(r == NULL);
  remove("corrupt.tgm");
}

static void test_unsupported(void) {
  zt_reader *r = open_vector("unsupported.tgm");
  if (r == NULL) {
    return;
  }
  const char *objects[] = {"szip_i32", "sp_szip", "blosc2", "zfp", "sz3"};
  const char *codecs[] = {"'szip'", "'szip'", "'blosc2'", "'zfp'", "'sz3'"};
  for (int k = 0; k < 5; k++) {
    size_t o = find(r, objects[k]);
    zt_component_info ci;
    CHECK_OK(zt_component_get_info(r, o, 0, &ci));
    CHECK_U64(ci.encoding, ZT_ENCODING_PIPELINE);
    CHECK_U64(ci.decoded_length, k == 0 || k == 2 ? 256 : 512);
    unsigned char buf[512];
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read(r, o, "data", buf, (size_t)ci.decoded_length));
    CHECK_ERROR_MENTIONS(codecs[k]);
    CHECK_ERROR_MENTIONS("not supported by this build");
    zt_view v;
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_view(r, o, "data", &v));
  }
  unsigned char fine[2];
  const unsigned char fe[2] = {4, 2};
  CHECK_OK(zt_component_read(r, find(r, "fine"), "data", fine, sizeof fine));
  CHECK_MEM(fine, fe, sizeof fine);
  CHECK_OK(zt_file_verify(r));
  zt_close(r);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_tensogram <repo>/tests/vectors\n");
    return 2;
  }
  snprintf(vectors, sizeof vectors, "%s", argv[1]);
  test_raw_dtypes();
  test_pipelines();
  test_masks();
  test_corrupted_copy();
  test_unsupported();
  return zt_test_summary();
}
