/*
 * test_limits: every zt_open_options limit at its boundary, through the C API.
 *
 *   test_limits <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * For each limit a file needs exactly V: the limit set to V opens (or views), V - 1 gives
 * ZT_ERR_LIMIT with a message saying so. Open-time limits are checked in all three ways
 * of opening (mapped, ZT_OPEN_NO_MMAP, caller memory). Also:
 * - 0 in a field, or NULL options, means that limit's default, and each default is checked
 *   at its own boundary (manifest 1 GiB, decoded component 64 GiB, rank 64, name 65536
 *   bytes, CBOR depth 128; the depth's hard cap of 256 applies whatever larger value is
 *   asked for). Files over the defaults are made by editing a writer's manifest, since the
 *   writer itself refuses to exceed them.
 * - max_total_cached: views of two zstd components whose decoded sizes sum to the limit
 *   both fit; one byte less and the second view fails with ZT_ERR_LIMIT while the first
 *   stays valid; a refused view uses no budget; zero-copy views cost nothing, decoded
 *   copies of raw components (pread, unaligned memory) do; reads, range reads, read_as
 *   and verify into caller buffers are never limited.
 */
#define _GNU_SOURCE
#include "zt_test.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------ */
/* Bytes and files                                                                      */
/* ------------------------------------------------------------------------------------ */

typedef struct bytes {
  unsigned char *p;
  size_t n;
} bytes;

static bytes slurp(const char *path) {
  bytes b = {NULL, 0};
  FILE *f = fopen(path, "rb");
  long n;
  if (f == NULL) {
    return b;
  }
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    b.p = (unsigned char *)malloc((size_t)n + 1);
    if (b.p != NULL && fread(b.p, 1, (size_t)n, f) == (size_t)n) {
      b.n = (size_t)n;
    }
  }
  fclose(f);
  return b;
}

static int put(const char *path, bytes b) {
  FILE *f = fopen(path, "wb");
  int ok = f != NULL && fwrite(b.p, 1, b.n, f) == b.n;
  if (f != NULL) {
    ok = fclose(f) == 0 && ok;
  }
  return ok;
}

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--) {
    v = v << 8 | p[i];
  }
  return v;
}

static void put_le64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) {
    p[i] = (unsigned char)(v >> (8 * i));
  }
}

/* The manifest size a v1 file's footer states. */
static uint64_t manifest_size(const char *path) {
  bytes b = slurp(path);
  uint64_t m = b.n >= 16 ? get_le64(b.p + b.n - 16) : 0;
  free(b.p);
  return m;
}

/*
 * Rewrites a v1 file with its manifest edited: the one occurrence of `old` replaced by
 * `repl`; the footer's size follows. Returns 0 when `old` does not occur exactly once.
 */
static int edit_manifest(const char *from, const char *to, const unsigned char *old, size_t old_n,
                         const unsigned char *repl, size_t repl_n) {
  bytes f = slurp(from), out = {NULL, 0};
  uint64_t m;
  size_t start, i, hit = 0, hits = 0, k;
  int ok;
  if (f.n < 24) {
    free(f.p);
    return 0;
  }
  m = get_le64(f.p + f.n - 16);
  start = f.n - 16 - (size_t)m;
  for (i = start; i + old_n <= f.n - 16; i++) {
    if (memcmp(f.p + i, old, old_n) == 0) {
      hit = i;
      hits++;
    }
  }
  if (hits != 1) {
    fprintf(stderr, "  edit_manifest(%s): the pattern occurs %zu times\n", from, hits);
    free(f.p);
    return 0;
  }
  out.n = f.n - old_n + repl_n;
  out.p = (unsigned char *)malloc(out.n);
  k = 0;
  memcpy(out.p, f.p, hit);
  k = hit;
  memcpy(out.p + k, repl, repl_n);
  k += repl_n;
  memcpy(out.p + k, f.p + hit + old_n, f.n - hit - old_n);
  put_le64(out.p + out.n - 16, m - old_n + repl_n);
  ok = put(to, out);
  free(f.p);
  free(out.p);
  return ok;
}

/* A CBOR head: major type and argument. */
static size_t cbor_head(unsigned char *p, unsigned major, uint64_t v) {
  unsigned m = major << 5;
  if (v < 24) {
    p[0] = (unsigned char)(m | v);
    return 1;
  }
  if (v < 0x100) {
    p[0] = (unsigned char)(m | 24);
    p[1] = (unsigned char)v;
    return 2;
  }
  if (v < 0x10000) {
    p[0] = (unsigned char)(m | 25);
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)v;
    return 3;
  }
  if (v < 0x100000000ull) {
    p[0] = (unsigned char)(m | 26);
    p[1] = (unsigned char)(v >> 24);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 8);
    p[4] = (unsigned char)v;
    return 5;
  }
  p[0] = (unsigned char)(m | 27);
  {
    int i;
    for (i = 0; i < 8; i++) {
      p[1 + i] = (unsigned char)(v >> (56 - 8 * i));
    }
  }
  return 9;
}

/* ------------------------------------------------------------------------------------ */
/* Opening in the three ways                                                            */
/* ------------------------------------------------------------------------------------ */

enum { MODE_MMAP, MODE_PREAD, MODE_MEMORY, N_MODES };
static const char *MODE_NAMES[N_MODES] = {"mmap", "pread", "memory"};

typedef struct opened {
  zt_reader *r;
  void *mem; /* MODE_MEMORY: the file's bytes, 64-byte aligned */
} opened;

static zt_status open_mode(const char *path, int mode, zt_open_options o, opened *out) {
  zt_status s;
  out->r = NULL;
  out->mem = NULL;
  if (mode == MODE_PREAD) {
    o.flags |= ZT_OPEN_NO_MMAP;
  }
  if (mode == MODE_MEMORY) {
    bytes b = slurp(path);
    if (b.p == NULL || posix_memalign(&out->mem, 64, b.n + 1) != 0) {
      free(b.p);
      out->mem = NULL;
      return ZT_ERR_IO;
    }
    memcpy(out->mem, b.p, b.n);
    free(b.p);
    s = zt_open_memory_with(out->mem, b.n, &o, &out->r);
  } else {
    s = zt_open_with(path, &o, &out->r);
  }
  return s;
}

static void close_mode(opened *o) {
  zt_close(o->r);
  free(o->mem);
  o->r = NULL;
  o->mem = NULL;
}

/*
 * The boundary of one open-time limit: `set(o, v)` sets it; at `at` the file opens in
 * every mode, at `at - 1` it is refused with ZT_ERR_LIMIT and a message mentioning
 * `mention`.
 */
typedef void (*setter)(zt_open_options *o, uint64_t v);

static void check_open_boundary(const char *path, setter set, uint64_t at, const char *mention, const char *what) {
  int mode;
  for (mode = 0; mode < N_MODES; mode++) {
    zt_open_options o;
    opened h;
    int ok;
    memset(&o, 0, sizeof o);
    set(&o, at);
    ok = CHECK_OK(open_mode(path, mode, o, &h));
    close_mode(&h);
    memset(&o, 0, sizeof o);
    set(&o, at - 1);
    ok &= CHECK_STATUS(ZT_ERR_LIMIT, open_mode(path, mode, o, &h));
    ok &= CHECK_ERROR_MENTIONS(mention);
    ok &= CHECK(h.r == NULL);
    close_mode(&h);
    if (!ok) {
      fprintf(stderr, "  (%s = %" PRIu64 ", %s)\n", what, at, MODE_NAMES[mode]);
    }
  }
}

/* With default options (NULL, and a zero-filled struct) in every mode: `expected`. */
static void check_default(const char *path, zt_status expected, const char *what) {
  int mode;
  zt_reader *r = NULL;
  if (!CHECK_STATUS(expected, zt_open_with(path, NULL, &r))) {
    fprintf(stderr, "  (%s, NULL options)\n", what);
  }
  zt_close(r);
  for (mode = 0; mode < N_MODES; mode++) {
    zt_open_options o;
    opened h;
    memset(&o, 0, sizeof o);
    if (!CHECK_STATUS(expected, open_mode(path, mode, o, &h))) {
      fprintf(stderr, "  (%s, zero options, %s)\n", what, MODE_NAMES[mode]);
    }
    close_mode(&h);
  }
}

static void set_manifest(zt_open_options *o, uint64_t v) { o->max_manifest_size = v; }
static void set_decoded(zt_open_options *o, uint64_t v) { o->max_decoded_size = v; }
static void set_rank(zt_open_options *o, uint64_t v) { o->max_rank = (uint32_t)v; }
static void set_name(zt_open_options *o, uint64_t v) { o->max_name_length = (uint32_t)v; }
static void set_depth(zt_open_options *o, uint64_t v) { o->max_cbor_depth = (uint32_t)v; }

/* ------------------------------------------------------------------------------------ */
/* max_manifest_size                                                                    */
/* ------------------------------------------------------------------------------------ */

static int write_small(const char *path, const char *attrs) {
  zt_writer *w = NULL;
  uint8_t data[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  uint64_t shape[1] = {16};
  int ok = CHECK_OK(zt_test_create_v12(path, &w)) && CHECK_OK(zt_writer_add(w, "w", ZT_U8, shape, 1, data, 16, NULL));
  if (ok && attrs != NULL) {
    ok = CHECK_OK(zt_writer_set_file_attributes_json(w, attrs));
  }
  ok = ok && CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  return ok;
}

static void test_manifest_size(void) {
  uint64_t m;
  bytes b;
  if (!write_small("manifest.zt", "{\"about\":\"a manifest of some size\"}")) {
    return;
  }
  m = manifest_size("manifest.zt");
  CHECK(m > 50);
  check_open_boundary("manifest.zt", set_manifest, m, "manifest size", "max_manifest_size");
  {
    zt_open_options o;
    opened h;
    memset(&o, 0, sizeof o);
    o.max_manifest_size = 1;
    CHECK_STATUS(ZT_ERR_LIMIT, open_mode("manifest.zt", MODE_MMAP, o, &h));
    o.max_manifest_size = UINT64_MAX;
    CHECK_OK(open_mode("manifest.zt", MODE_MMAP, o, &h));
    close_mode(&h);
  }
  check_default("manifest.zt", ZT_OK, "manifest");

  /*
   * The default, 1 GiB: a footer claiming 1 GiB + 1 is over the limit; one claiming
   * exactly 1 GiB passes the limit and is refused as a lie (it does not fit the file).
   */
  b = slurp("manifest.zt");
  if (CHECK(b.n > 16)) {
    put_le64(b.p + b.n - 16, ((uint64_t)1 << 30) + 1);
    CHECK(put("manifest_1g1.zt", b));
    put_le64(b.p + b.n - 16, (uint64_t)1 << 30);
    CHECK(put("manifest_1g.zt", b));
    check_default("manifest_1g1.zt", ZT_ERR_LIMIT, "manifest 1 GiB + 1");
    check_default("manifest_1g.zt", ZT_ERR_FORMAT, "manifest 1 GiB");
    {
      zt_open_options o;
      opened h;
      memset(&o, 0, sizeof o);
      o.max_manifest_size = ((uint64_t)1 << 30) + 1; /* raised: now it is the lie that counts */
      CHECK_STATUS(ZT_ERR_FORMAT, open_mode("manifest_1g1.zt", MODE_PREAD, o, &h));
      close_mode(&h);
    }
  }
  free(b.p);
}

/* ------------------------------------------------------------------------------------ */
/* max_cbor_depth                                                                       */
/* ------------------------------------------------------------------------------------ */

static const unsigned char MARK[17] = {0x50, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33,
                                       0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};

/*
 * A file whose attributes hold `arrays` nested one-element arrays: the manifest's depth is
 * arrays + 2 (the manifest map, the attributes map, the arrays; scalars add nothing), or 5
 * (the object structure), whichever is larger.
 */
static int make_deep(const char *path, size_t arrays) {
  unsigned char *nest = (unsigned char *)malloc(arrays + 1);
  int ok;
  memset(nest, 0x81, arrays);
  nest[arrays] = 0x00;
  ok = edit_manifest("deep_base.zt", path, MARK, sizeof MARK, nest, arrays + 1);
  free(nest);
  return CHECK(ok);
}

static void test_cbor_depth(void) {
  zt_open_options o;
  opened h;
  if (!write_small("deep_base.zt", "{\"deep\":{\"$bytes\":\"deadbeef00112233445566778899aabb\"}}")) {
    return;
  }
  /* a depth of 12 */
  if (make_deep("deep12.zt", 10)) {
    check_open_boundary("deep12.zt", set_depth, 12, "nest", "max_cbor_depth");
  }
  /*
   * Without the arrays the deepest path is manifest > objects > object > components >
   * component: 5 containers, the tightest limit that opens any v1.2 file with an object
   */
  if (make_deep("deep5.zt", 0)) {
    check_open_boundary("deep5.zt", set_depth, 5, "nest", "max_cbor_depth");
  }
  /* the default, 128 */
  if (make_deep("deep128.zt", 126) && make_deep("deep129.zt", 127)) {
    check_default("deep128.zt", ZT_OK, "depth 128");
    check_default("deep129.zt", ZT_ERR_LIMIT, "depth 129");
    check_open_boundary("deep129.zt", set_depth, 129, "nest", "max_cbor_depth");
  }
  /* the hard cap, 256: larger values act as 256 */
  if (make_deep("deep256.zt", 254) && make_deep("deep257.zt", 255)) {
    uint32_t big[3] = {257, 1000, UINT32_MAX};
    int i, mode;
    check_open_boundary("deep256.zt", set_depth, 256, "nest", "max_cbor_depth");
    for (i = 0; i < 3; i++) {
      for (mode = 0; mode < N_MODES; mode++) {
        memset(&o, 0, sizeof o);
        o.max_cbor_depth = big[i];
        CHECK_OK(open_mode("deep256.zt", mode, o, &h));
        close_mode(&h);
        CHECK_STATUS(ZT_ERR_LIMIT, open_mode("deep257.zt", mode, o, &h));
        close_mode(&h);
      }
    }
  }
}

/* ------------------------------------------------------------------------------------ */
/* max_rank                                                                             */
/* ------------------------------------------------------------------------------------ */

static int write_rank(const char *path, size_t rank) {
  zt_writer *w = NULL;
  uint64_t shape[64];
  float data[4] = {1, 2, 3, 4};
  size_t i;
  int ok;
  for (i = 0; i < rank; i++) {
    shape[i] = i < 2 ? 2 : 1;
  }
  ok = CHECK_OK(zt_test_create_v12(path, &w)) &&
       CHECK_OK(zt_writer_add(w, "low", ZT_F32, shape, 1, data, 8, NULL)) && /* rank 1 */
       CHECK_OK(zt_writer_add(w, "t", ZT_F32, shape, rank, data, sizeof data, NULL)) && CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  return ok;
}

static void test_rank(void) {
  if (write_rank("rank5.zt", 5)) {
    check_open_boundary("rank5.zt", set_rank, 5, "dimensions", "max_rank");
  }
  if (write_rank("rank2.zt", 2)) {
    check_open_boundary("rank2.zt", set_rank, 2, "dimensions", "max_rank");
  }
  /* the default, 64; the writer won't go further, so rank 65 is an edited manifest */
  if (write_rank("rank64.zt", 64)) {
    unsigned char old[2 + 64], repl[2 + 65];
    zt_writer *w = NULL;
    uint64_t shape[65];
    size_t i;
    float one = 1;
    check_default("rank64.zt", ZT_OK, "rank 64");
    check_open_boundary("rank64.zt", set_rank, 64, "dimensions", "max_rank");
    /* shape [2, 2, 1 x 62] becomes [2, 2, 1 x 63]: the same element count */
    old[0] = 0x98;
    old[1] = 64;
    repl[0] = 0x98;
    repl[1] = 65;
    for (i = 0; i < 65; i++) {
      repl[2 + i] = i < 2 ? 2 : 1;
      if (i < 64) {
        old[2 + i] = i < 2 ? 2 : 1;
      }
    }
    if (CHECK(edit_manifest("rank64.zt", "rank65.zt", old, sizeof old, repl, sizeof repl))) {
      check_default("rank65.zt", ZT_ERR_LIMIT, "rank 65");
      check_open_boundary("rank65.zt", set_rank, 65, "dimensions", "max_rank");
    }
    /* the writer refuses what default readers would refuse */
    for (i = 0; i < 65; i++) {
      shape[i] = 1;
    }
    if (CHECK_OK(zt_test_create_v12("rank_refused.zt", &w))) {
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "t", ZT_F32, shape, 65, &one, 4, NULL));
      CHECK_ERROR_MENTIONS("64");
    }
    zt_writer_free(w);
  }
}

/* ------------------------------------------------------------------------------------ */
/* max_name_length                                                                      */
/* ------------------------------------------------------------------------------------ */

static int write_names(const char *path, size_t object_len, size_t role_len) {
  zt_writer *w = NULL;
  char *name = (char *)malloc(object_len + 1), *role = (char *)malloc(role_len + 1);
  uint64_t shape[1] = {4};
  uint8_t data[4] = {1, 2, 3, 4};
  int ok;
  memset(name, 'n', object_len);
  name[object_len] = '\0';
  memset(role, 'r', role_len);
  role[role_len] = '\0';
  ok = CHECK_OK(zt_test_create_v12(path, &w)) && CHECK_OK(zt_writer_add(w, "a", ZT_U8, shape, 1, data, 4, NULL)) &&
       CHECK_OK(zt_writer_begin_object(w, name, "custom", shape, 1)) &&
       CHECK_OK(zt_writer_add_component(w, role, ZT_U8, NULL, data, 4, NULL)) && CHECK_OK(zt_writer_end_object(w)) &&
       CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  free(name);
  free(role);
  return ok;
}

static void test_name_length(void) {
  /* the object name is the longest */
  if (write_names("name_obj.zt", 40, 7)) {
    check_open_boundary("name_obj.zt", set_name, 40, "object name is 40 bytes", "max_name_length");
  }
  /* the component role is the longest */
  if (write_names("name_role.zt", 5, 33)) {
    check_open_boundary("name_role.zt", set_name, 33, "component name is 33 bytes", "max_name_length");
  }
  /* the default, 65536 bytes; 65537 is an edited manifest */
  if (write_names("name64k.zt", 65536, 4)) {
    unsigned char *old = (unsigned char *)malloc(5 + 65536), *repl = (unsigned char *)malloc(5 + 65537);
    zt_writer *w = NULL;
    char *name = (char *)malloc(65538);
    check_default("name64k.zt", ZT_OK, "name of 65536 bytes");
    check_open_boundary("name64k.zt", set_name, 65536, "65536 bytes", "max_name_length");
    cbor_head(old, 3, 65536);
    memset(old + 5, 'n', 65536);
    cbor_head(repl, 3, 65537);
    memset(repl + 5, 'n', 65537);
    if (CHECK(edit_manifest("name64k.zt", "name64k1.zt", old, 5 + 65536, repl, 5 + 65537))) {
      check_default("name64k1.zt", ZT_ERR_LIMIT, "name of 65537 bytes");
      check_open_boundary("name64k1.zt", set_name, 65537, "65537 bytes", "max_name_length");
    }
    memset(name, 'n', 65537);
    name[65537] = '\0';
    if (CHECK_OK(zt_test_create_v12("name_refused.zt", &w))) {
      uint64_t shape[1] = {1};
      uint8_t one = 1;
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, name, ZT_U8, shape, 1, &one, 1, NULL));
    }
    zt_writer_free(w);
    free(old);
    free(repl);
    free(name);
  }
}

/* ------------------------------------------------------------------------------------ */
/* max_decoded_size                                                                     */
/* ------------------------------------------------------------------------------------ */

static void test_decoded_size(void) {
  zt_writer *w = NULL;
  zt_write_options z = {ZT_ENCODING_ZSTD, 0, ZT_DIGEST_NONE};
  static uint8_t raw[1000], big[5000];
  uint64_t s_raw[1] = {1000}, s_big[1] = {5000};
  size_t i;
  int ok;
  for (i = 0; i < sizeof big; i++) {
    big[i] = (uint8_t)(i % 10);
  }
  /* raw only: the raw component's length counts */
  ok = CHECK_OK(zt_test_create_v12("decoded_raw.zt", &w)) &&
       CHECK_OK(zt_writer_add(w, "raw", ZT_U8, s_raw, 1, raw, sizeof raw, NULL)) && CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  if (ok) {
    check_open_boundary("decoded_raw.zt", set_decoded, 1000, "decode limit", "max_decoded_size");
  }
  /* a zstd component decoding to 5000 bytes (stored in far fewer) */
  w = NULL;
  ok = CHECK_OK(zt_test_create_v12("decoded_zstd.zt", &w)) &&
       CHECK_OK(zt_writer_add(w, "raw", ZT_U8, s_raw, 1, raw, sizeof raw, NULL)) &&
       CHECK_OK(zt_writer_add(w, "big", ZT_U8, s_big, 1, big, sizeof big, &z)) && CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  if (ok) {
    check_open_boundary("decoded_zstd.zt", set_decoded, 5000, "decode limit", "max_decoded_size");
    check_default("decoded_zstd.zt", ZT_OK, "decoded 5000");
    /*
     * The default, 64 GiB: uncompressed_length edited to 64 GiB + 1 is over the limit;
     * exactly 64 GiB passes the limit (and is then refused as impossible for the stored
     * bytes, a format error).
     */
    {
      unsigned char old[32], repl[32];
      size_t on, rn;
      const char *key = "uncompressed_length";
      old[0] = (unsigned char)(0x60 | strlen(key));
      memcpy(old + 1, key, strlen(key));
      on = 1 + strlen(key);
      memcpy(repl, old, on);
      rn = on;
      on += cbor_head(old + on, 0, 5000);
      rn += cbor_head(repl + rn, 0, ((uint64_t)64 << 30) + 1);
      if (CHECK(edit_manifest("decoded_zstd.zt", "decoded_64g1.zt", old, on, repl, rn))) {
        zt_reader *r = NULL;
        check_default("decoded_64g1.zt", ZT_ERR_LIMIT, "decoded 64 GiB + 1");
        CHECK_STATUS(ZT_ERR_LIMIT, zt_open("decoded_64g1.zt", &r));
        CHECK_ERROR_MENTIONS("decode limit");
      }
      rn = 1 + strlen(key);
      rn += cbor_head(repl + rn, 0, (uint64_t)64 << 30);
      if (CHECK(edit_manifest("decoded_zstd.zt", "decoded_64g.zt", old, on, repl, rn))) {
        check_default("decoded_64g.zt", ZT_ERR_FORMAT, "decoded 64 GiB");
      }
    }
  }
}

/* ------------------------------------------------------------------------------------ */
/* max_total_cached                                                                     */
/* ------------------------------------------------------------------------------------ */

#define A_N 3000 /* f32 */
#define B_N 5000 /* i16 */
#define C_N 100  /* u8 */
#define R_N 4096 /* u8, raw */

static float A[A_N];
static int16_t B[B_N];
static uint8_t Csmall[C_N];
static uint8_t R[R_N];
static size_t OA, OB, OC, OR; /* object indices */

static int write_cache_file(void) {
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_write_options z = {ZT_ENCODING_ZSTD, 0, ZT_DIGEST_CRC32C};
  uint64_t sa[1] = {A_N}, sb[1] = {B_N}, sc[1] = {C_N}, sr[1] = {R_N};
  size_t i;
  int ok;
  for (i = 0; i < A_N; i++) {
    A[i] = (float)i * 0.25f;
  }
  for (i = 0; i < B_N; i++) {
    B[i] = (int16_t)(i % 300 - 150);
  }
  for (i = 0; i < C_N; i++) {
    Csmall[i] = (uint8_t)(i * 3);
  }
  for (i = 0; i < R_N; i++) {
    R[i] = (uint8_t)(i * 11);
  }
  ok = CHECK_OK(zt_test_create_v12("cache.zt", &w)) && CHECK_OK(zt_writer_add(w, "A", ZT_F32, sa, 1, A, sizeof A, &z)) &&
       CHECK_OK(zt_writer_add(w, "B", ZT_I16, sb, 1, B, sizeof B, &z)) &&
       CHECK_OK(zt_writer_add(w, "C", ZT_U8, sc, 1, Csmall, sizeof Csmall, &z)) &&
       CHECK_OK(zt_writer_add(w, "R", ZT_U8, sr, 1, R, sizeof R, NULL)) && CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  ok = ok && CHECK_OK(zt_open("cache.zt", &r)) && CHECK_OK(zt_object_find(r, "A", &OA)) &&
       CHECK_OK(zt_object_find(r, "B", &OB)) && CHECK_OK(zt_object_find(r, "C", &OC)) &&
       CHECK_OK(zt_object_find(r, "R", &OR));
  zt_close(r);
  return ok;
}

/* Reads of every kind into caller buffers: never limited by the cache. */
static void check_reads_unlimited(zt_reader *r) {
  static float a[A_N];
  static int16_t b[B_N];
  static int64_t b64[B_N];
  static uint8_t rr[R_N];
  size_t i;
  CHECK_OK(zt_component_read(r, OA, "data", a, sizeof a));
  CHECK_MEM(a, A, sizeof A);
  CHECK_OK(zt_component_read(r, OB, "data", b, sizeof b));
  CHECK_MEM(b, B, sizeof B);
  CHECK_OK(zt_component_read_range(r, OB, "data", 1000, b, 2000));
  CHECK_MEM(b, (const unsigned char *)B + 1000, 2000);
  CHECK_OK(zt_component_read_as(r, OB, "data", ZT_I64, b64, sizeof b64));
  for (i = 0; i < B_N && b64[i] == B[i]; i++) {
  }
  CHECK(i == B_N);
  CHECK_OK(zt_component_read(r, OR, "data", rr, sizeof rr));
  CHECK_MEM(rr, R, sizeof R);
  CHECK_OK(zt_file_verify(r));
  CHECK_OK(zt_object_validate(r, OB));
}

static void test_total_cached(void) {
  const uint64_t a = sizeof A, b = sizeof B, c = sizeof Csmall, rsz = sizeof R;
  int mode, order;
  if (!write_cache_file()) {
    return;
  }
  for (mode = 0; mode < N_MODES; mode++) {
    /* raw views: zero-copy (free) when mapped or aligned in memory, decoded copies otherwise */
    int raw_costs = mode == MODE_PREAD;
    for (order = 0; order < 2; order++) {
      size_t first = order ? OB : OA, second = order ? OA : OB;
      const void *first_data = order ? (const void *)B : (const void *)A;
      uint64_t first_size = order ? b : a;
      zt_open_options o;
      opened h;
      zt_view v1, v2, v;

      /* exactly enough for both */
      memset(&o, 0, sizeof o);
      o.max_total_cached = a + b;
      if (CHECK_OK(open_mode("cache.zt", mode, o, &h))) {
        CHECK_OK(zt_component_view(h.r, first, "data", &v1));
        CHECK_OK(zt_component_view(h.r, second, "data", &v2));
        CHECK(!v1.zero_copy && !v2.zero_copy);
        CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(h.r, OC, "data", &v)); /* full now */
        if (raw_costs) {
          CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(h.r, OR, "data", &v));
        } else {
          CHECK_OK(zt_component_view(h.r, OR, "data", &v)); /* zero-copy: free */
          CHECK(v.zero_copy);
          CHECK_MEM(v.data, R, sizeof R);
        }
        check_reads_unlimited(h.r);
      }
      close_mode(&h);

      /* one byte less: the second view is refused, the first stays valid */
      o.max_total_cached = a + b - 1;
      if (CHECK_OK(open_mode("cache.zt", mode, o, &h))) {
        CHECK_OK(zt_component_view(h.r, first, "data", &v1));
        CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(h.r, second, "data", &v2));
        CHECK_ERROR_MENTIONS(order ? "object 'A'" : "object 'B'");
        CHECK_ERROR_MENTIONS("cache limit");
        CHECK_MEM(v1.data, first_data, first_size);
        CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(h.r, second, "data", &v2)); /* still */
        CHECK_OK(zt_component_view(h.r, first, "data", &v)); /* cached: no new cost */
        CHECK(v.data == v1.data);
        /* the refused view used no budget: what is left still fits C */
        if (first_size + c <= a + b - 1) {
          CHECK_OK(zt_component_view(h.r, OC, "data", &v));
          CHECK_MEM(v.data, Csmall, sizeof Csmall);
        }
        check_reads_unlimited(h.r);
        CHECK_MEM(v1.data, first_data, first_size);
      }
      close_mode(&h);
    }

    /* raw components: decoded copies cost their size (pread), zero-copy views nothing */
    {
      zt_open_options o;
      opened h;
      zt_view v;
      memset(&o, 0, sizeof o);
      o.max_total_cached = raw_costs ? rsz : 1;
      if (CHECK_OK(open_mode("cache.zt", mode, o, &h))) {
        CHECK_OK(zt_component_view(h.r, OR, "data", &v));
        CHECK_MEM(v.data, R, sizeof R);
        CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(h.r, OC, "data", &v));
        check_reads_unlimited(h.r);
      }
      close_mode(&h);
      if (raw_costs) {
        o.max_total_cached = rsz - 1;
        if (CHECK_OK(open_mode("cache.zt", mode, o, &h))) {
          CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(h.r, OR, "data", &v));
          check_reads_unlimited(h.r);
        }
        close_mode(&h);
      }
    }
  }

  /* unaligned caller memory: raw views become decoded copies, and count */
  {
    bytes f = slurp("cache.zt");
    unsigned char *mem = NULL;
    zt_open_options o;
    zt_reader *r = NULL;
    zt_view v;
    if (CHECK(f.p != NULL && posix_memalign((void **)&mem, 64, f.n + 1) == 0)) {
      memcpy(mem + 1, f.p, f.n);
      memset(&o, 0, sizeof o);
      o.max_total_cached = rsz;
      if (CHECK_OK(zt_open_memory_with(mem + 1, f.n, &o, &r))) {
        CHECK_OK(zt_component_view(r, OR, "data", &v));
        CHECK(!v.zero_copy);
        CHECK_MEM(v.data, R, sizeof R);
        CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(r, OC, "data", &v));
        zt_close(r);
      }
      o.max_total_cached = rsz - 1;
      r = NULL;
      if (CHECK_OK(zt_open_memory_with(mem + 1, f.n, &o, &r))) {
        CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(r, OR, "data", &v));
        check_reads_unlimited(r);
        zt_close(r);
      }
    }
    free(mem);
    free(f.p);
  }

  /* the default is unlimited: 0 and NULL cache everything */
  {
    zt_reader *r = NULL;
    zt_view v;
    zt_open_options o;
    memset(&o, 0, sizeof o);
    o.flags = ZT_OPEN_NO_MMAP;
    if (CHECK_OK(zt_open_with("cache.zt", &o, &r))) {
      CHECK_OK(zt_component_view(r, OA, "data", &v));
      CHECK_OK(zt_component_view(r, OB, "data", &v));
      CHECK_OK(zt_component_view(r, OC, "data", &v));
      CHECK_OK(zt_component_view(r, OR, "data", &v));
      zt_close(r);
    }
    r = NULL;
    if (CHECK_OK(zt_open_with("cache.zt", NULL, &r))) {
      CHECK_OK(zt_component_view(r, OA, "data", &v));
      CHECK_OK(zt_component_view(r, OB, "data", &v));
      CHECK_OK(zt_component_view(r, OC, "data", &v));
      zt_close(r);
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  test_manifest_size();
  test_cbor_depth();
  test_rank();
  test_name_length();
  test_decoded_size();
  test_total_cached();
  return zt_test_summary();
}
