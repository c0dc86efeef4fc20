/*
 * test_api: every function of include/ztensor.h, through the C ABI.
 *
 *   test_api <repo>/tests/vectors      (run in an empty scratch directory)
 *
 * Success paths with exact values (files written here with the C writer, files built
 * byte by byte, and the reference vectors in <vectors>/reference/ when present), every
 * status each function can return, NULL for every pointer argument, unknown enum values,
 * wrong buffer sizes, writer states, open options, corrupted / truncated / legacy files.
 */
#define _POSIX_C_SOURCE 200809L
#include "zt_test.h"

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------ */
/* Small utilities: growable byte buffers, files, hashes, CBOR                           */
/* ------------------------------------------------------------------------------------ */

typedef struct bytes {
  unsigned char *p;
  size_t n, cap;
} bytes;

static void b_put(bytes *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) {
      cap *= 2;
    }
    b->p = (unsigned char *)realloc(b->p, cap);
    if (b->p == NULL) {
      abort();
    }
    b->cap = cap;
  }
  if (n) {
    memcpy(b->p + b->n, data, n);
  }
  b->n += n;
}

static void b_byte(bytes *b, unsigned v) {
  unsigned char c = (unsigned char)v;
  b_put(b, &c, 1);
}

static void b_str(bytes *b, const char *s) { b_put(b, s, strlen(s)); }

static void b_pad64(bytes *b) {
  while (b->n % 64) {
    b_byte(b, 0);
  }
}

static void b_u64le(bytes *b, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) {
    b_byte(b, (unsigned)(v >> (8 * i)) & 0xff);
  }
}

static void b_free(bytes *b) {
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* CBOR (RFC 8949) heads, shortest form, as any writer emits them. */
static void cb_head(bytes *b, unsigned major, uint64_t n) {
  if (n < 24) {
    b_byte(b, major << 5 | (unsigned)n);
  } else if (n <= 0xff) {
    b_byte(b, major << 5 | 24);
    b_byte(b, (unsigned)n);
  } else if (n <= 0xffff) {
    b_byte(b, major << 5 | 25);
    b_byte(b, (unsigned)(n >> 8) & 0xff);
    b_byte(b, (unsigned)n & 0xff);
  } else if (n <= 0xffffffffu) {
    int i;
    b_byte(b, major << 5 | 26);
    for (i = 3; i >= 0; i--) {
      b_byte(b, (unsigned)(n >> (8 * i)) & 0xff);
    }
  } else {
    int i;
    b_byte(b, major << 5 | 27);
    for (i = 7; i >= 0; i--) {
      b_byte(b, (unsigned)(n >> (8 * i)) & 0xff);
    }
  }
}
static void cb_uint(bytes *b, uint64_t v) { cb_head(b, 0, v); }
static void cb_text(bytes *b, const char *s) {
  cb_head(b, 3, strlen(s));
  b_str(b, s);
}
static void cb_array(bytes *b, uint64_t n) { cb_head(b, 4, n); }
static void cb_map(bytes *b, uint64_t n) { cb_head(b, 5, n); }
static void cb_kv_text(bytes *b, const char *k, const char *v) {
  cb_text(b, k);
  cb_text(b, v);
}
static void cb_kv_uint(bytes *b, const char *k, uint64_t v) {
  cb_text(b, k);
  cb_uint(b, v);
}

static int spit(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  int ok;
  if (f == NULL) {
    return 0;
  }
  ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Entries of a directory other than "." and ".."; -1 when it can't be read. */
static int dir_entries(const char *dir, char *first, size_t first_size) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  if (d == NULL) {
    return -1;
  }
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
      continue;
    }
    if (n == 0 && first != NULL) {
      snprintf(first, first_size, "%s", e->d_name);
    }
    n++;
  }
  closedir(d);
  return n;
}

static uint32_t crc32c(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  size_t i;
  int k;
  for (i = 0; i < n; i++) {
    c ^= p[i];
    for (k = 0; k < 8; k++) {
      c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
  }
  return ~c;
}

/* SHA-256 (FIPS 180-4), enough to recompute the digests the writer records. */
static const uint32_t SHA_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR32(x, r) (((x) >> (r)) | ((x) << (32 - (r))))

static void sha256_block(uint32_t h[8], const unsigned char *p) {
  uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
  int i;
  for (i = 0; i < 16; i++) {
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  }
  for (i = 16; i < 64; i++) {
    uint32_t s0 = ROR32(w[i - 15], 7) ^ ROR32(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ROR32(w[i - 2], 17) ^ ROR32(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (i = 0; i < 64; i++) {
    t1 = hh + (ROR32(e, 6) ^ ROR32(e, 11) ^ ROR32(e, 25)) + ((e & f) ^ (~e & g)) + SHA_K[i] + w[i];
    t2 = (ROR32(a, 2) ^ ROR32(a, 13) ^ ROR32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

static void sha256_hex(const unsigned char *p, size_t n, char out[65]) {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char last[128];
  size_t i, rest = n % 64, tail;
  uint64_t bits = (uint64_t)n * 8;
  for (i = 0; i + 64 <= n; i += 64) {
    sha256_block(h, p + i);
  }
  memset(last, 0, sizeof last);
  if (rest) {
    memcpy(last, p + n - rest, rest);
  }
  last[rest] = 0x80;
  tail = rest < 56 ? 64 : 128;
  for (i = 0; i < 8; i++) {
    last[tail - 1 - i] = (unsigned char)(bits >> (8 * i));
  }
  sha256_block(h, last);
  if (tail == 128) {
    sha256_block(h, last + 64);
  }
  for (i = 0; i < 8; i++) {
    snprintf(out + 8 * i, 9, "%08x", (unsigned)h[i]);
  }
}

/* The digest string the writer records for `algo` over the stored bytes. */
static void digest_string(uint32_t algo, const unsigned char *p, size_t n, char out[80]) {
  if (algo == ZT_DIGEST_SHA256) {
    char hex[65];
    sha256_hex(p, n, hex);
    snprintf(out, 80, "sha256:%s", hex);
  } else {
    snprintf(out, 80, "crc32c:0x%08X", (unsigned)crc32c(p, n));
  }
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static uint64_t f64_bits(double f) {
  uint64_t u;
  memcpy(&u, &f, 8);
  return u;
}

static int is_aligned64(const void *p) { return ((uintptr_t)p % 64) == 0; }

/* A 64-byte aligned copy of `n` bytes (free with free()). */
static unsigned char *aligned_copy(const void *src, size_t n, size_t extra_offset) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n + extra_offset + 64) != 0) {
    abort();
  }
  memcpy((unsigned char *)p + extra_offset, src, n);
  return (unsigned char *)p;
}

static const char *const DTYPE_NAMES[13] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16",
                                            "i8",  "u64", "u32", "u16", "u8",  "bool"};
static const size_t DTYPE_SIZES[13] = {8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1};

static uint32_t dtype_from_name(const char *name) {
  uint32_t i;
  for (i = 0; i < 13; i++) {
    if (strcmp(DTYPE_NAMES[i], name) == 0) {
      return i;
    }
  }
  return 99;
}

/* Opens `path`, checking the status; NULL on failure. */
static zt_reader *open_ok(const char *path) {
  zt_reader *r = NULL;
  if (!CHECK_OK(zt_open(path, &r))) {
    return NULL;
  }
  return r;
}

static size_t find_ok(const zt_reader *r, const char *name) {
  size_t i = (size_t)-1;
  CHECK_OK(zt_object_find(r, name, &i));
  return i;
}

/* ------------------------------------------------------------------------------------ */
/* Expected contents of all.zt                                                           */
/* ------------------------------------------------------------------------------------ */

#define N_EL 6 /* elements of each dtype_* object, shape [2, 3] */

static unsigned char DTYPE_DATA[13][N_EL * 8];

static const double V_F64[N_EL] = {0.0, 1.5, -2.25, 1e300, -0.0, 3.0};
static const float V_F32[N_EL] = {1.5f, -2.25f, 0.0f, 65504.0f, -0.5f, 1024.0f};
static const uint16_t V_F16[N_EL] = {0x3C00, 0xC000, 0x3555, 0x7BFF, 0x0001, 0x8000};
static const uint16_t V_BF16[N_EL] = {0x3F80, 0xC010, 0x3FC0, 0x4049, 0x8000, 0x7F80};
static const int64_t V_I64[N_EL] = {INT64_MIN, -1, 0, 1, INT64_MAX, 0x0102030405060708};
static const int32_t V_I32[N_EL] = {INT32_MIN, -1, 0, 1, INT32_MAX, 0x01020304};
static const int16_t V_I16[N_EL] = {INT16_MIN, -1, 0, 1, INT16_MAX, 300};
static const int8_t V_I8[N_EL] = {-128, -1, 0, 1, 127, 42};
static const uint64_t V_U64[N_EL] = {0, 1, 2, 0x0102030405060708u, UINT64_MAX, (uint64_t)1 << 63};
static const uint32_t V_U32[N_EL] = {0, 1, 2, 0xDEADBEEFu, UINT32_MAX, 1u << 31};
static const uint16_t V_U16[N_EL] = {0, 1, 2, 0xABCD, UINT16_MAX, 1u << 15};
static const uint8_t V_U8[N_EL] = {0, 1, 2, 200, 255, 128};
static const uint8_t V_BOOL[N_EL] = {1, 0, 1, 1, 0, 0};

#define ZSTD_N 4096 /* f32 elements of "zstd_f32", shape [64, 64] */
static float ZSTD_DATA[ZSTD_N];
#define CRC_N 100
static int32_t CRC_DATA[CRC_N];
#define SHA_N 1000
static uint8_t SHA_DATA[SHA_N];
#define STREAM_N 25000 /* f32 elements of "streamed_zstd" */
static float STREAM_DATA[STREAM_N];
#define STREAM_RAW_N 777 /* i16 elements of "streamed_raw" */
static int16_t STREAM_RAW_DATA[STREAM_RAW_N];

static const uint8_t FP8_DATA[4] = {0x38, 0xb8, 0x7e, 0x01};
static const float CPLX_DATA[4] = {1.0f, -1.0f, 0.5f, 2.0f};
static const float CSR_VALUES[4] = {1.0f, 2.0f, 3.0f, 4.0f};
static const uint64_t CSR_INDICES[4] = {0, 2, 1, 3};
static const uint64_t CSR_INDPTR[4] = {0, 2, 3, 4};
static int32_t Q_PACKED[8];
static const uint16_t Q_SCALES[4] = {0x3C00, 0x3800, 0x3400, 0x4000}; /* 1, 0.5, 0.25, 2 */
static const uint16_t Q_ZEROS[4] = {0x4800, 0x4800, 0x4400, 0x0000};  /* 8, 8, 4, 0 */
static const uint8_t BOOLS[5] = {1, 1, 0, 1, 0};

static const char FILE_ATTRS_IN[] =
    "{ \"framework\": \"ztensor-c\", \"count\": 42, \"neg\": -7, \"ratio\": 0.5,\n"
    "  \"ok\": true, \"no\": false, \"none\": null, \"list\": [1, \"two\", 3.5, [4]],\n"
    "  \"nested\": {\"a\": {\"b\": [], \"c\": {}}}, \"blob\": {\"$bytes\": \"DEADbeef00\"},\n"
    "  \"text\": \"tab\\t quote\\\" \\u00df \\ud83d\\ude00\" }";
static const char FILE_ATTRS_OUT[] =
    "{\"framework\":\"ztensor-c\",\"count\":42,\"neg\":-7,\"ratio\":0.5,\"ok\":true,\"no\":false,"
    "\"none\":null,\"list\":[1,\"two\",3.5,[4]],\"nested\":{\"a\":{\"b\":[],\"c\":{}}},"
    "\"blob\":{\"$bytes\":\"deadbeef00\"},\"text\":\"tab\\t quote\\\" \xc3\x9f \xf0\x9f\x98\x80\"}";
static const char F64_ATTRS_IN[] =
    "{\"f\":[0.1, -0.0, 1e300, 100, 100.0, 2.5e-8, -1.5E+3, 65504, 3.4028234663852886e38],"
    " \"ctl\": \"\\u0001\\/\\\\\", \"\\u00e9\": {}}";
static const char F64_ATTRS_OUT[] =
    "{\"f\":[0.1,-0.0,1e300,100,100.0,2.5e-8,-1500.0,65504,3.4028234663852886e38],"
    "\"ctl\":\"\\u0001/\\\\\",\"\xc3\xa9\":{}}";
static const char QUANT_ATTRS[] = "{\"bits\":4,\"group_size\":16,\"packing\":\"8_per_i32\"}";
static const char CSR_ATTRS[] = "{\"note\":\"csr\"}";

static void make_expected(void) {
  int i;
  memcpy(DTYPE_DATA[ZT_F64], V_F64, sizeof V_F64);
  memcpy(DTYPE_DATA[ZT_F32], V_F32, sizeof V_F32);
  memcpy(DTYPE_DATA[ZT_F16], V_F16, sizeof V_F16);
  memcpy(DTYPE_DATA[ZT_BF16], V_BF16, sizeof V_BF16);
  memcpy(DTYPE_DATA[ZT_I64], V_I64, sizeof V_I64);
  memcpy(DTYPE_DATA[ZT_I32], V_I32, sizeof V_I32);
  memcpy(DTYPE_DATA[ZT_I16], V_I16, sizeof V_I16);
  memcpy(DTYPE_DATA[ZT_I8], V_I8, sizeof V_I8);
  memcpy(DTYPE_DATA[ZT_U64], V_U64, sizeof V_U64);
  memcpy(DTYPE_DATA[ZT_U32], V_U32, sizeof V_U32);
  memcpy(DTYPE_DATA[ZT_U16], V_U16, sizeof V_U16);
  memcpy(DTYPE_DATA[ZT_U8], V_U8, sizeof V_U8);
  memcpy(DTYPE_DATA[ZT_BOOL], V_BOOL, sizeof V_BOOL);
  for (i = 0; i < ZSTD_N; i++) {
    ZSTD_DATA[i] = (float)(i % 17) * 0.5f - 3.0f;
  }
  for (i = 0; i < CRC_N; i++) {
    CRC_DATA[i] = i * 1000 - 50000;
  }
  for (i = 0; i < SHA_N; i++) {
    SHA_DATA[i] = (uint8_t)(i * 7 + 3);
  }
  for (i = 0; i < STREAM_N; i++) {
    STREAM_DATA[i] = (float)((i * 37) % 1001) / 8.0f;
  }
  for (i = 0; i < STREAM_RAW_N; i++) {
    STREAM_RAW_DATA[i] = (int16_t)(i * 91 - 30000);
  }
  for (i = 0; i < 8; i++) {
    Q_PACKED[i] = (int32_t)(0x76543210u + (uint32_t)i * 0x11111111u);
  }
}

/* Object names of all.zt, in the order they are written. */
enum {
  OBJ_SCALAR = 13,
  OBJ_EMPTY,
  OBJ_ZSTD,
  OBJ_CRC,
  OBJ_SHA,
  OBJ_FP8,
  OBJ_CPLX,
  OBJ_CSR,
  OBJ_QUANT,
  OBJ_STREAM_ZSTD,
  OBJ_STREAM_RAW,
  OBJ_ZSTD_EMPTY,
  OBJ_BOOLS,
  OBJ_COUNT
};

static void dtype_object_name(int d, char *out, size_t size) { snprintf(out, size, "dtype_%s", DTYPE_NAMES[d]); }

/* Sends `data` in chunks of odd sizes (1, 7, 13, 333, 4093, ...) plus empty writes. */
static void stream_chunks(zt_writer *w, const void *data, size_t size) {
  static const size_t sizes[] = {1, 7, 13, 333, 4093, 3, 65537, 5};
  const unsigned char *p = (const unsigned char *)data;
  size_t done = 0, k = 0;
  CHECK_OK(zt_writer_write(w, NULL, 0));
  while (done < size) {
    size_t n = sizes[k++ % (sizeof sizes / sizeof sizes[0])];
    if (n > size - done) {
      n = size - done;
    }
    CHECK_OK(zt_writer_write(w, p + done, n));
    done += n;
    if (k == 3) {
      CHECK_OK(zt_writer_write(w, p + done, 0));
    }
  }
}

/* ------------------------------------------------------------------------------------ */
/* Library functions                                                                     */
/* ------------------------------------------------------------------------------------ */

static void test_library(void) {
  static const char *const names[12] = {"ZT_OK",
                                         "ZT_ERR_INVALID_ARGUMENT",
                                         "ZT_ERR_IO",
                                         "ZT_ERR_FORMAT",
                                         "ZT_ERR_UNSUPPORTED",
                                         "ZT_ERR_NOT_FOUND",
                                         "ZT_ERR_CHECKSUM",
                                         "ZT_ERR_LIMIT",
                                         "ZT_ERR_BUFFER_TOO_SMALL",
                                         "ZT_ERR_STATE",
                                         "ZT_ERR_INTERNAL",
                                         "ZT_ERR_CANCELED"};
  char version[64];
  uint32_t s;
  size_t idx = 7;

  snprintf(version, sizeof version, "%d.%d.%d", ZT_VERSION_MAJOR, ZT_VERSION_MINOR, ZT_VERSION_PATCH);
  CHECK(zt_version() != NULL);
  CHECK_STR(zt_version(), version);

  for (s = 0; s <= 11; s++) {
    CHECK_STR(zt_status_name(s), names[s]);
  }
  CHECK_STR(zt_status_name(12), "ZT_UNKNOWN_STATUS");
  CHECK_STR(zt_status_name(100), "ZT_UNKNOWN_STATUS");
  CHECK_STR(zt_status_name(UINT32_MAX), "ZT_UNKNOWN_STATUS");

  /* the enum values are stable */
  CHECK(ZT_OK == 0 && ZT_ERR_INVALID_ARGUMENT == 1 && ZT_ERR_IO == 2 && ZT_ERR_FORMAT == 3 &&
        ZT_ERR_UNSUPPORTED == 4 && ZT_ERR_NOT_FOUND == 5 && ZT_ERR_CHECKSUM == 6 && ZT_ERR_LIMIT == 7 &&
        ZT_ERR_BUFFER_TOO_SMALL == 8 && ZT_ERR_STATE == 9 && ZT_ERR_INTERNAL == 10);
  CHECK(ZT_F64 == 0 && ZT_F32 == 1 && ZT_F16 == 2 && ZT_BF16 == 3 && ZT_I64 == 4 && ZT_I32 == 5 &&
        ZT_I16 == 6 && ZT_I8 == 7 && ZT_U64 == 8 && ZT_U32 == 9 && ZT_U16 == 10 && ZT_U8 == 11 && ZT_BOOL == 12);
  CHECK(ZT_ENCODING_RAW == 0 && ZT_ENCODING_ZSTD == 1 && ZT_ENCODING_PIPELINE == 2);
  CHECK(ZT_DIGEST_NONE == 0 && ZT_DIGEST_SHA256 == 1 && ZT_DIGEST_CRC32C == 2);
  CHECK(ZT_OPEN_NO_MMAP == 1 && ZT_OPEN_VERIFY == 2);

  /* zt_last_error: never NULL, "" after success, a message after failure, per call */
  CHECK(zt_last_error() != NULL);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_find(NULL, "x", &idx));
  CHECK(idx == 7);
  CHECK_ERROR_MENTIONS("reader");
  CHECK(zt_last_error() == zt_last_error()); /* stable until the next call */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open("no/such/dir/file.zt", NULL)); /* NULL out first */
  CHECK_ERROR_MENTIONS("out");
  {
    zt_reader *r = (zt_reader *)&idx; /* sentinel: must stay untouched */
    CHECK_STATUS(ZT_ERR_IO, zt_open("no_such_file.zt", &r));
    CHECK(r == (zt_reader *)&idx);
    CHECK_ERROR_MENTIONS("no_such_file.zt");
  }
  /* a getter clears the message too ("" after a successful call) */
  CHECK(zt_object_count(NULL) == 0);
  CHECK_STR(zt_last_error(), "");
  CHECK_STR(zt_file_version(NULL), "");
  CHECK_STR(zt_file_format(NULL), "");
  /* NULL is a no-op for both destructors */
  zt_close(NULL);
  zt_writer_free(NULL);
  CHECK_STR(zt_last_error(), "");
}

/* zt_dtype_get_size / zt_dtype_name / zt_dtype_find against the test's own tables, and
   the version number macro against the library's. */
static void test_dtypes_and_version_number(void) {
  uint32_t d, value;
  size_t size;
  char version[64];

  for (d = 0; d < 13; d++) {
    size = 99;
    CHECK_OK(zt_dtype_get_size(d, &size));
    CHECK_U64(size, DTYPE_SIZES[d]);
    CHECK_STR(zt_dtype_name(d), DTYPE_NAMES[d]);
    value = 99;
    CHECK_OK(zt_dtype_find(DTYPE_NAMES[d], &value));
    CHECK_U64(value, d);
  }
  /* a few by their enum names, so a shifted table can't pass */
  CHECK_OK(zt_dtype_get_size(ZT_F64, &size));
  CHECK_U64(size, 8);
  CHECK_OK(zt_dtype_get_size(ZT_BF16, &size));
  CHECK_U64(size, 2);
  CHECK_OK(zt_dtype_get_size(ZT_BOOL, &size));
  CHECK_U64(size, 1);
  CHECK_STR(zt_dtype_name(ZT_F32), "f32");
  CHECK_STR(zt_dtype_name(ZT_BF16), "bf16");
  CHECK_STR(zt_dtype_name(ZT_BOOL), "bool");
  CHECK_OK(zt_dtype_find("u16", &value));
  CHECK_U64(value, ZT_U16);

  /* bad input: ZT_ERR_INVALID_ARGUMENT with a message, out-parameters untouched */
  size = 77;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_get_size(13, &size));
  CHECK_STR(zt_last_error(), "unknown dtype value 13");
  CHECK_U64(size, 77);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_get_size(UINT32_MAX, &size));
  CHECK_STR(zt_last_error(), "unknown dtype value 4294967295");
  CHECK_U64(size, 77);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_get_size(ZT_F32, NULL));
  CHECK_STR(zt_last_error(), "out_size is NULL");
  value = 77;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_find("float32", &value));
  CHECK_STR(zt_last_error(),
            "unknown dtype name 'float32' (the names are f64, f32, f16, bf16, i64, i32, i16, i8, u64, u32, u16, "
            "u8, bool)");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_find("F32", &value));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_find("", &value));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_find("unknown", &value));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_find("f32 ", &value));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_find("\xff", &value));
  CHECK_STR(zt_last_error(), "name is not valid UTF-8");
  CHECK_U64(value, 77);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_find(NULL, &value));
  CHECK_STR(zt_last_error(), "name is NULL");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_find("f32", NULL));
  CHECK_STR(zt_last_error(), "out is NULL");
  CHECK_U64(value, 77);

  /* an unknown value has a name that no dtype has; the name leaves zt_last_error alone */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_dtype_get_size(13, &size));
  CHECK_STR(zt_dtype_name(13), "unknown");
  CHECK_STR(zt_dtype_name(UINT32_MAX), "unknown");
  CHECK_STR(zt_last_error(), "unknown dtype value 13");
  CHECK(zt_dtype_name(ZT_F16) == zt_dtype_name(ZT_F16)); /* static storage */

  /* the version as a number: the macro is the header's, the function the library's */
  CHECK_U64(ZT_VERSION_NUMBER, ZT_VERSION_MAJOR * 10000 + ZT_VERSION_MINOR * 100 + ZT_VERSION_PATCH);
  CHECK_U64(zt_version_number(), ZT_VERSION_NUMBER);
  snprintf(version, sizeof version, "%u.%u.%u", zt_version_number() / 10000, zt_version_number() / 100 % 100,
           zt_version_number() % 100);
  CHECK_STR(version, zt_version());
#if ZT_VERSION_NUMBER < 100
#error "ZT_VERSION_NUMBER must be usable in #if"
#endif
}

/* ------------------------------------------------------------------------------------ */
/* Writing all.zt with every writer entry point                                          */
/* ------------------------------------------------------------------------------------ */

static void write_all(const char *path) {
  zt_writer *w = NULL;
  zt_write_options zstd_sha = {ZT_ENCODING_ZSTD, 0, ZT_DIGEST_SHA256};
  zt_write_options raw_crc = {ZT_ENCODING_RAW, 0, ZT_DIGEST_CRC32C};
  zt_write_options raw_sha = {ZT_ENCODING_RAW, 0, ZT_DIGEST_SHA256};
  zt_write_options zstd5_sha = {ZT_ENCODING_ZSTD, 5, ZT_DIGEST_SHA256};
  zt_write_options zstd_crc = {ZT_ENCODING_ZSTD, -3, ZT_DIGEST_CRC32C};
  zt_write_options zeros;
  const uint64_t shape23[2] = {2, 3};
  int d;
  char name[32];
  memset(&zeros, 0, sizeof zeros);

  if (!CHECK_OK(zt_test_create_v12(path, &w))) {
    return;
  }
  CHECK(!exists(path));
  for (d = 0; d < 13; d++) {
    dtype_object_name(d, name, sizeof name);
    /* alternate NULL options and a zero-filled struct: both mean raw, no digest */
    CHECK_OK(zt_writer_add(w, name, (uint32_t)d, shape23, 2, DTYPE_DATA[d], N_EL * DTYPE_SIZES[d],
                           d % 2 ? NULL : &zeros));
  }
  {
    double scalar = 3.25;
    const uint64_t shape_empty[2] = {0, 4};
    const uint64_t shape_zstd[2] = {64, 64};
    const uint64_t shape_crc[1] = {CRC_N};
    const uint64_t shape_sha[1] = {SHA_N};
    CHECK_OK(zt_writer_add(w, "scalar", ZT_F64, NULL, 0, &scalar, sizeof scalar, NULL));
    CHECK_OK(zt_writer_add(w, "empty", ZT_F32, shape_empty, 2, NULL, 0, NULL));
    CHECK_OK(zt_writer_add(w, "zstd_f32", ZT_F32, shape_zstd, 2, ZSTD_DATA, sizeof ZSTD_DATA, &zstd_sha));
    CHECK_OK(zt_writer_add(w, "crc_i32", ZT_I32, shape_crc, 1, CRC_DATA, sizeof CRC_DATA, &raw_crc));
    CHECK_OK(zt_writer_add(w, "sha_u8", ZT_U8, shape_sha, 1, SHA_DATA, sizeof SHA_DATA, &raw_sha));
  }
  {
    const uint64_t shape4[1] = {4}, shape2[1] = {2}, shape34[2] = {3, 4}, shape_q[2] = {4, 16};
    CHECK_OK(zt_writer_begin_object(w, "fp8", "dense", shape4, 1));
    CHECK_OK(zt_writer_add_component(w, "data", ZT_U8, "f8_e4m3fn", FP8_DATA, sizeof FP8_DATA, NULL));
    CHECK_OK(zt_writer_end_object(w));

    CHECK_OK(zt_writer_begin_object(w, "cplx", "dense", shape2, 1));
    CHECK_OK(zt_writer_add_component(w, "data", ZT_F32, "complex64", CPLX_DATA, sizeof CPLX_DATA, NULL));
    CHECK_OK(zt_writer_end_object(w));

    CHECK_OK(zt_writer_begin_object(w, "csr", "sparse_csr", shape34, 2));
    CHECK_OK(zt_writer_set_object_attributes_json(w, "csr", "{\"replaced\": true}")); /* while open */
    CHECK_OK(zt_writer_add_component(w, "values", ZT_F32, NULL, CSR_VALUES, sizeof CSR_VALUES, &raw_sha));
    CHECK_OK(zt_writer_add_component(w, "indices", ZT_U64, NULL, CSR_INDICES, sizeof CSR_INDICES, NULL));
    CHECK_OK(zt_writer_add_component(w, "indptr", ZT_U64, NULL, CSR_INDPTR, sizeof CSR_INDPTR, &raw_crc));
    CHECK_OK(zt_writer_end_object(w));
    CHECK_OK(zt_writer_set_object_attributes_json(w, "csr", CSR_ATTRS)); /* after end; replaces */

    CHECK_OK(zt_writer_begin_object(w, "quant", "quantized_group", shape_q, 2));
    CHECK_OK(zt_writer_add_component(w, "packed_weight", ZT_I32, NULL, Q_PACKED, sizeof Q_PACKED, &zstd_crc));
    CHECK_OK(zt_writer_add_component(w, "scales", ZT_F16, NULL, Q_SCALES, sizeof Q_SCALES, NULL));
    CHECK_OK(zt_writer_add_component(w, "zeros", ZT_F16, NULL, Q_ZEROS, sizeof Q_ZEROS, NULL));
    CHECK_OK(zt_writer_set_object_attributes_json(w, "quant", QUANT_ATTRS));
    CHECK_OK(zt_writer_end_object(w));
  }
  {
    const uint64_t shape_s[1] = {STREAM_N}, shape_r[1] = {STREAM_RAW_N}, shape0[1] = {0};
    CHECK_OK(zt_writer_begin_object(w, "streamed_zstd", "dense", shape_s, 1));
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_F32, NULL, &zstd5_sha));
    stream_chunks(w, STREAM_DATA, sizeof STREAM_DATA);
    CHECK_OK(zt_writer_end_component(w));
    CHECK_OK(zt_writer_end_object(w));

    CHECK_OK(zt_writer_begin_object(w, "streamed_raw", "dense", shape_r, 1));
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_I16, NULL, &raw_crc));
    stream_chunks(w, STREAM_RAW_DATA, sizeof STREAM_RAW_DATA);
    CHECK_OK(zt_writer_end_component(w));
    CHECK_OK(zt_writer_end_object(w));

    CHECK_OK(zt_writer_add(w, "zstd_empty", ZT_F32, shape0, 1, NULL, 0, &zstd_sha));
  }
  {
    const uint64_t shape5[1] = {5};
    CHECK_OK(zt_writer_add(w, "bools", ZT_BOOL, shape5, 1, BOOLS, sizeof BOOLS, NULL));
  }
  CHECK_OK(zt_writer_set_file_attributes_json(w, "{\"first\": 1}"));
  CHECK_OK(zt_writer_set_file_attributes_json(w, FILE_ATTRS_IN)); /* a second call replaces */
  CHECK_OK(zt_writer_set_object_attributes_json(w, "dtype_f32", "{\"unit\":\"m/s\",\"scale\":-1.25e-3}"));
  CHECK_OK(zt_writer_set_object_attributes_json(w, "dtype_f64", F64_ATTRS_IN));
  CHECK(!exists(path));
  CHECK_OK(zt_writer_finish(w));
  CHECK(exists(path));
  zt_writer_free(w);
}

/* Checks the raw bytes of all.zt: magic, blob placement, zero padding, footer, digests. */
static void check_all_layout(const char *path, zt_reader *r) {
  size_t size = 0, o, c, count = zt_object_count(r);
  unsigned char *file = zt_test_slurp(path, &size);
  uint64_t expect_offset = 64, prev_end = 8, manifest_size;
  if (!CHECK(file != NULL && size > 80)) {
    free(file);
    return;
  }
  CHECK_MEM(file, "ZTEN1000", 8);
  CHECK_MEM(file + size - 8, "ZTEN1000", 8);
  memcpy(&manifest_size, file + size - 16, 8);
  for (o = 0; o < count; o++) {
    zt_object_info oi;
    CHECK_OK(zt_object_get_info(r, o, &oi));
    for (c = 0; c < oi.component_count; c++) {
      zt_component_info ci;
      CHECK_OK(zt_component_get_info(r, o, c, &ci));
      /* blobs follow each other in write order, each at the next multiple of 64 */
      if (!CHECK_U64(ci.offset, expect_offset)) {
        fprintf(stderr, "  (object '%s' component '%s')\n", oi.name, ci.role);
      }
      CHECK(ci.offset % 64 == 0);
      if (ci.offset >= prev_end && ci.offset <= size) {
        /* the padding before this blob is zero */
        uint64_t i;
        int zero = 1;
        for (i = prev_end; i < ci.offset; i++) {
          zero &= file[i] == 0;
        }
        CHECK(zero);
      }
      CHECK(ci.offset + ci.length <= size);
      if (ci.encoding == ZT_ENCODING_RAW) {
        CHECK_U64(ci.length, ci.decoded_length);
      }
      if (ci.digest != NULL && ci.offset + ci.length <= size) {
        char want[80];
        digest_string(strncmp(ci.digest, "sha256:", 7) == 0 ? ZT_DIGEST_SHA256 : ZT_DIGEST_CRC32C,
                      file + ci.offset, (size_t)ci.length, want);
        CHECK_STR(ci.digest, want);
      }
      prev_end = ci.offset + ci.length;
      expect_offset = (prev_end + 63) / 64 * 64;
    }
  }
  /* the manifest follows the last blob directly and fills the rest up to the footer */
  CHECK_U64(manifest_size, size - 16 - prev_end);
  free(file);
}

/* ------------------------------------------------------------------------------------ */
/* Reading all.zt                                                                        */
/* ------------------------------------------------------------------------------------ */

static void check_dense(zt_reader *r, const char *name, uint32_t dtype, const uint64_t *shape, size_t ndim,
                        const void *data, size_t size, uint32_t encoding, const char *digest_prefix) {
  size_t idx = 0, comp = 99;
  zt_object_info oi;
  zt_component_info ci;
  zt_view v;
  size_t k;
  unsigned char *buf;
  if (!CHECK_OK(zt_object_find(r, name, &idx))) {
    return;
  }
  CHECK_OK(zt_object_get_info(r, idx, &oi));
  CHECK_STR(oi.name, name);
  CHECK_STR(oi.format, "dense");
  CHECK_U64(oi.ndim, ndim);
  CHECK_U64(oi.component_count, 1);
  if (ndim == 0) {
    CHECK(oi.shape == NULL);
  } else if (CHECK(oi.shape != NULL)) {
    for (k = 0; k < ndim; k++) {
      CHECK_U64(oi.shape[k], shape[k]);
    }
  }
  CHECK_OK(zt_component_find(r, idx, "data", &comp));
  CHECK_U64(comp, 0);
  CHECK_OK(zt_component_get_info(r, idx, 0, &ci));
  CHECK_STR(ci.role, "data");
  CHECK_U64(ci.dtype, dtype);
  CHECK(ci.type == NULL);
  CHECK_U64(ci.encoding, encoding);
  CHECK_U64(ci.decoded_length, size);
  if (digest_prefix == NULL) {
    CHECK(ci.digest == NULL);
  } else {
    CHECK(ci.digest != NULL && strncmp(ci.digest, digest_prefix, strlen(digest_prefix)) == 0);
  }

  CHECK_OK(zt_component_view(r, idx, "data", &v));
  CHECK_U64(v.size, size);
  CHECK_U64(v.dtype, dtype);
  CHECK(v.zero_copy == (encoding == ZT_ENCODING_RAW));
  if (size > 0) {
    CHECK(v.data != NULL && is_aligned64(v.data));
    CHECK_MEM(v.data, data, size);
  }
  if (encoding == ZT_ENCODING_ZSTD) {
    /* decoded once, then the same memory every time */
    zt_view again;
    CHECK_OK(zt_component_view(r, idx, "data", &again));
    CHECK(again.data == v.data);
  }

  buf = (unsigned char *)malloc(size + 1);
  memset(buf, 0xAB, size + 1);
  CHECK_OK(zt_component_read(r, idx, "data", size ? buf : NULL, size));
  CHECK_MEM(buf, data, size);
  CHECK(buf[size] == 0xAB);
  free(buf);
}

static void test_read_all(const char *path) {
  zt_reader *r = open_ok(path);
  int d;
  char name[32];
  const uint64_t shape23[2] = {2, 3};
  if (r == NULL) {
    return;
  }
  CHECK_STR(zt_file_version(r), "1.2.0");
  CHECK_STR(zt_file_format(r), "zt");
  CHECK_STR(zt_last_error(), "");
  CHECK_U64(zt_object_count(r), OBJ_COUNT);

  /* objects come back in write order */
  for (d = 0; d < 13; d++) {
    zt_object_info oi;
    dtype_object_name(d, name, sizeof name);
    CHECK_OK(zt_object_get_info(r, (size_t)d, &oi));
    CHECK_STR(oi.name, name);
    check_dense(r, name, (uint32_t)d, shape23, 2, DTYPE_DATA[d], N_EL * DTYPE_SIZES[d], ZT_ENCODING_RAW, NULL);
  }
  {
    double scalar = 3.25;
    const uint64_t s_empty[2] = {0, 4}, s_zstd[2] = {64, 64}, s_crc[1] = {CRC_N}, s_sha[1] = {SHA_N};
    const uint64_t s_stream[1] = {STREAM_N}, s_raw[1] = {STREAM_RAW_N}, s0[1] = {0}, s5[1] = {5};
    check_dense(r, "scalar", ZT_F64, NULL, 0, &scalar, 8, ZT_ENCODING_RAW, NULL);
    check_dense(r, "empty", ZT_F32, s_empty, 2, NULL, 0, ZT_ENCODING_RAW, NULL);
    check_dense(r, "zstd_f32", ZT_F32, s_zstd, 2, ZSTD_DATA, sizeof ZSTD_DATA, ZT_ENCODING_ZSTD, "sha256:");
    check_dense(r, "crc_i32", ZT_I32, s_crc, 1, CRC_DATA, sizeof CRC_DATA, ZT_ENCODING_RAW, "crc32c:0x");
    check_dense(r, "sha_u8", ZT_U8, s_sha, 1, SHA_DATA, sizeof SHA_DATA, ZT_ENCODING_RAW, "sha256:");
    check_dense(r, "streamed_zstd", ZT_F32, s_stream, 1, STREAM_DATA, sizeof STREAM_DATA, ZT_ENCODING_ZSTD,
                "sha256:");
    check_dense(r, "streamed_raw", ZT_I16, s_raw, 1, STREAM_RAW_DATA, sizeof STREAM_RAW_DATA, ZT_ENCODING_RAW,
                "crc32c:0x");
    check_dense(r, "zstd_empty", ZT_F32, s0, 1, NULL, 0, ZT_ENCODING_ZSTD, "sha256:");
    check_dense(r, "bools", ZT_BOOL, s5, 1, BOOLS, sizeof BOOLS, ZT_ENCODING_RAW, NULL);
  }
  {
    /* compressed components are smaller on disk than decoded */
    zt_component_info ci;
    CHECK_OK(zt_component_get_info(r, OBJ_ZSTD, 0, &ci));
    CHECK(ci.length > 0 && ci.length < ci.decoded_length);
    CHECK_OK(zt_component_get_info(r, OBJ_STREAM_ZSTD, 0, &ci));
    CHECK(ci.length > 0 && ci.length < ci.decoded_length);
    CHECK_OK(zt_component_get_info(r, OBJ_ZSTD_EMPTY, 0, &ci));
    CHECK(ci.length > 0 && ci.decoded_length == 0); /* an empty zstd frame */
    CHECK_OK(zt_component_get_info(r, 0, 0, &ci));
    CHECK_U64(ci.offset, 64); /* the first blob right after the 8-byte header, aligned */
  }
  {
    /* logical types */
    zt_component_info ci;
    zt_view v;
    zt_object_info oi;
    CHECK_OK(zt_component_get_info(r, OBJ_FP8, 0, &ci));
    CHECK_STR(ci.type, "f8_e4m3fn");
    CHECK_U64(ci.dtype, ZT_U8);
    CHECK_OK(zt_component_view(r, OBJ_FP8, "data", &v));
    CHECK(v.zero_copy && v.size == 4);
    CHECK_MEM(v.data, FP8_DATA, 4);
    CHECK_OK(zt_object_get_info(r, OBJ_CPLX, &oi));
    CHECK(oi.ndim == 1 && oi.shape[0] == 2);
    CHECK_OK(zt_component_get_info(r, OBJ_CPLX, 0, &ci));
    CHECK_STR(ci.type, "complex64");
    CHECK_U64(ci.dtype, ZT_F32);
    CHECK_U64(ci.decoded_length, 16);
  }
  {
    /* sparse_csr through begin_object / add_component / end_object */
    zt_object_info oi;
    zt_component_info ci;
    size_t c = 99;
    float values[4];
    uint64_t idx[4], ptr[4];
    CHECK_OK(zt_object_get_info(r, OBJ_CSR, &oi));
    CHECK_STR(oi.name, "csr");
    CHECK_STR(oi.format, "sparse_csr");
    CHECK(oi.ndim == 2 && oi.shape[0] == 3 && oi.shape[1] == 4);
    CHECK_U64(oi.component_count, 3);
    CHECK_OK(zt_component_get_info(r, OBJ_CSR, 0, &ci));
    CHECK_STR(ci.role, "values");
    CHECK(ci.digest != NULL && strncmp(ci.digest, "sha256:", 7) == 0);
    CHECK_OK(zt_component_get_info(r, OBJ_CSR, 1, &ci));
    CHECK_STR(ci.role, "indices");
    CHECK(ci.dtype == ZT_U64 && ci.digest == NULL);
    CHECK_OK(zt_component_get_info(r, OBJ_CSR, 2, &ci));
    CHECK_STR(ci.role, "indptr");
    CHECK(ci.digest != NULL && strncmp(ci.digest, "crc32c:0x", 9) == 0);
    CHECK_OK(zt_component_find(r, OBJ_CSR, "indptr", &c));
    CHECK_U64(c, 2);
    CHECK_OK(zt_component_read(r, OBJ_CSR, "values", values, sizeof values));
    CHECK_MEM(values, CSR_VALUES, sizeof values);
    CHECK_OK(zt_component_read(r, OBJ_CSR, "indices", idx, sizeof idx));
    CHECK_MEM(idx, CSR_INDICES, sizeof idx);
    CHECK_OK(zt_component_read(r, OBJ_CSR, "indptr", ptr, sizeof ptr));
    CHECK_MEM(ptr, CSR_INDPTR, sizeof ptr);
    CHECK_OK(zt_component_verify(r, OBJ_CSR, "values"));
    CHECK_OK(zt_component_verify(r, OBJ_CSR, "indptr"));
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, OBJ_CSR, "indices")); /* no digest */
    CHECK_OK(zt_object_validate(r, OBJ_CSR));
  }
  {
    /* quantized_group */
    zt_object_info oi;
    zt_component_info ci;
    zt_view v;
    int32_t packed[8];
    uint16_t h[4];
    const char *json = NULL;
    CHECK_OK(zt_object_get_info(r, OBJ_QUANT, &oi));
    CHECK_STR(oi.format, "quantized_group");
    CHECK(oi.ndim == 2 && oi.shape[0] == 4 && oi.shape[1] == 16);
    CHECK_U64(oi.component_count, 3);
    CHECK_OK(zt_component_get_info(r, OBJ_QUANT, 0, &ci));
    CHECK_STR(ci.role, "packed_weight");
    CHECK(ci.encoding == ZT_ENCODING_ZSTD && ci.dtype == ZT_I32 && ci.decoded_length == 32);
    CHECK(ci.digest != NULL && strncmp(ci.digest, "crc32c:0x", 9) == 0);
    CHECK_OK(zt_component_read(r, OBJ_QUANT, "packed_weight", packed, sizeof packed));
    CHECK_MEM(packed, Q_PACKED, sizeof packed);
    CHECK_OK(zt_component_view(r, OBJ_QUANT, "scales", &v));
    CHECK(v.zero_copy && v.size == 8 && v.dtype == ZT_F16);
    CHECK_MEM(v.data, Q_SCALES, 8);
    CHECK_OK(zt_component_read(r, OBJ_QUANT, "zeros", h, sizeof h));
    CHECK_MEM(h, Q_ZEROS, sizeof h);
    CHECK_OK(zt_component_verify(r, OBJ_QUANT, "packed_weight"));
    CHECK_OK(zt_object_get_attributes_json(r, OBJ_QUANT, &json));
    CHECK_STR(json, QUANT_ATTRS);
    CHECK_OK(zt_object_validate(r, OBJ_QUANT));
  }
  {
    /* attributes: exact compact JSON, borrowed and stable */
    const char *json = NULL, *again = NULL;
    CHECK_OK(zt_file_get_attributes_json(r, &json));
    CHECK_STR(json, FILE_ATTRS_OUT);
    CHECK_OK(zt_file_get_attributes_json(r, &again));
    CHECK(again == json);
    CHECK_OK(zt_object_get_attributes_json(r, ZT_F32, &json));
    CHECK_STR(json, "{\"unit\":\"m/s\",\"scale\":-0.00125}");
    CHECK_OK(zt_object_get_attributes_json(r, OBJ_CSR, &json));
    CHECK_STR(json, CSR_ATTRS);
    CHECK_OK(zt_object_get_attributes_json(r, 0, &json));
    CHECK_STR(json, F64_ATTRS_OUT);
    CHECK_OK(zt_object_get_attributes_json(r, 1, &json));
    CHECK_STR(json, "{\"unit\":\"m/s\",\"scale\":-0.00125}");
    CHECK_OK(zt_object_get_attributes_json(r, 2, &json));
    CHECK_STR(json, "{}");
    CHECK_OK(zt_object_get_attributes_json(r, OBJ_COUNT - 1, &json));
    CHECK_STR(json, "{}");
  }
  {
    /* digests: every one verifies, and the whole file */
    CHECK_OK(zt_component_verify(r, OBJ_ZSTD, "data"));
    CHECK_OK(zt_component_verify(r, OBJ_CRC, "data"));
    CHECK_OK(zt_component_verify(r, OBJ_SHA, "data"));
    CHECK_OK(zt_component_verify(r, OBJ_STREAM_ZSTD, "data"));
    CHECK_OK(zt_component_verify(r, OBJ_STREAM_RAW, "data"));
    CHECK_OK(zt_component_verify(r, OBJ_ZSTD_EMPTY, "data"));
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, 0, "data"));
    CHECK_ERROR_MENTIONS("dtype_f64");
    CHECK_OK(zt_file_verify(r));
  }
  {
    /* value checks */
    size_t o;
    for (o = 0; o < OBJ_COUNT; o++) {
      CHECK_OK(zt_object_validate(r, o));
    }
  }
  check_all_layout(path, r);
  zt_close(r);
}

/* ------------------------------------------------------------------------------------ */
/* read_as: conversions with exact values, refusals                                      */
/* ------------------------------------------------------------------------------------ */

typedef struct conv_case {
  int line;
  size_t object;
  uint32_t to;
  uint32_t status;
  const void *expected; /* N elements of `to`, or NULL when refused */
} conv_case;

static void test_read_as(const char *path) {
  static const float bf16_f32[N_EL] = {1.0f, -2.25f, 1.5f, 3.140625f, -0.0f, INFINITY};
  static const double bf16_f64[N_EL] = {1.0, -2.25, 1.5, 3.140625, -0.0, INFINITY};
  static const float f16_f32[N_EL] = {1.0f, -2.0f, 0.333251953125f, 65504.0f, 5.9604644775390625e-08f, -0.0f};
  static const double f16_f64[N_EL] = {1.0, -2.0, 0.333251953125, 65504.0, 5.9604644775390625e-08, -0.0};
  static const float f64_f32[N_EL] = {0.0f, 1.5f, -2.25f, INFINITY, -0.0f, 3.0f};
  static const double f32_f64[N_EL] = {1.5, -2.25, 0.0, 65504.0, -0.5, 1024.0};
  static const uint16_t f32_bf16[N_EL] = {0x3FC0, 0xC010, 0x0000, 0x4780, 0xBF00, 0x4480};
  static const uint16_t f32_f16[N_EL] = {0x3E00, 0xC080, 0x0000, 0x7BFF, 0xB800, 0x6400};
  static const int64_t i8_i64[N_EL] = {-128, -1, 0, 1, 127, 42};
  static const int16_t i8_i16[N_EL] = {-128, -1, 0, 1, 127, 42};
  static const float i8_f32[N_EL] = {-128.0f, -1.0f, 0.0f, 1.0f, 127.0f, 42.0f};
  static const int16_t u8_i16[N_EL] = {0, 1, 2, 200, 255, 128};
  static const uint64_t u8_u64[N_EL] = {0, 1, 2, 200, 255, 128};
  static const float u8_f32[N_EL] = {0.0f, 1.0f, 2.0f, 200.0f, 255.0f, 128.0f};
  static const int32_t i16_i32[N_EL] = {INT16_MIN, -1, 0, 1, INT16_MAX, 300};
  static const float i16_f32[N_EL] = {-32768.0f, -1.0f, 0.0f, 1.0f, 32767.0f, 300.0f};
  static const uint32_t u16_u32[N_EL] = {0, 1, 2, 0xABCD, 65535, 32768};
  static const int32_t u16_i32[N_EL] = {0, 1, 2, 0xABCD, 65535, 32768};
  static const int64_t i32_i64[N_EL] = {INT32_MIN, -1, 0, 1, INT32_MAX, 0x01020304};
  static const double i32_f64[N_EL] = {-2147483648.0, -1.0, 0.0, 1.0, 2147483647.0, 16909060.0};
  static const uint64_t u32_u64[N_EL] = {0, 1, 2, 0xDEADBEEFu, UINT32_MAX, 1u << 31};
  static const int64_t u32_i64[N_EL] = {0, 1, 2, 0xDEADBEEFll, 4294967295ll, 2147483648ll};
  static const uint8_t bool_u8[N_EL] = {1, 0, 1, 1, 0, 0};
  static const int32_t bool_i32[N_EL] = {1, 0, 1, 1, 0, 0};
  static const float bool_f32[N_EL] = {1.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f};
  const conv_case cases[] = {
      {__LINE__, ZT_BF16, ZT_F32, ZT_OK, bf16_f32},
      {__LINE__, ZT_BF16, ZT_F64, ZT_OK, bf16_f64},
      {__LINE__, ZT_F16, ZT_F32, ZT_OK, f16_f32},
      {__LINE__, ZT_F16, ZT_F64, ZT_OK, f16_f64},
      {__LINE__, ZT_F64, ZT_F32, ZT_OK, f64_f32},
      {__LINE__, ZT_F32, ZT_F64, ZT_OK, f32_f64},
      {__LINE__, ZT_F32, ZT_BF16, ZT_OK, f32_bf16},
      {__LINE__, ZT_F32, ZT_F16, ZT_OK, f32_f16},
      {__LINE__, ZT_F32, ZT_F32, ZT_OK, V_F32}, /* same dtype: a plain read */
      {__LINE__, ZT_I8, ZT_I64, ZT_OK, i8_i64},
      {__LINE__, ZT_I8, ZT_I16, ZT_OK, i8_i16},
      {__LINE__, ZT_I8, ZT_F32, ZT_OK, i8_f32},
      {__LINE__, ZT_U8, ZT_I16, ZT_OK, u8_i16},
      {__LINE__, ZT_U8, ZT_U64, ZT_OK, u8_u64},
      {__LINE__, ZT_U8, ZT_F32, ZT_OK, u8_f32},
      {__LINE__, ZT_I16, ZT_I32, ZT_OK, i16_i32},
      {__LINE__, ZT_I16, ZT_F32, ZT_OK, i16_f32},
      {__LINE__, ZT_U16, ZT_U32, ZT_OK, u16_u32},
      {__LINE__, ZT_U16, ZT_I32, ZT_OK, u16_i32},
      {__LINE__, ZT_I32, ZT_I64, ZT_OK, i32_i64},
      {__LINE__, ZT_I32, ZT_F64, ZT_OK, i32_f64},
      {__LINE__, ZT_U32, ZT_U64, ZT_OK, u32_u64},
      {__LINE__, ZT_U32, ZT_I64, ZT_OK, u32_i64},
      {__LINE__, ZT_I64, ZT_I64, ZT_OK, V_I64},
      {__LINE__, ZT_BOOL, ZT_U8, ZT_OK, bool_u8},
      {__LINE__, ZT_BOOL, ZT_I32, ZT_OK, bool_i32},
      {__LINE__, ZT_BOOL, ZT_F32, ZT_OK, bool_f32},
      {__LINE__, ZT_BOOL, ZT_BOOL, ZT_OK, V_BOOL},
      /* lossy or meaningless: refused */
      {__LINE__, ZT_F32, ZT_I32, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_F64, ZT_I64, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_F32, ZT_BOOL, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I8, ZT_U8, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I8, ZT_U64, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_U8, ZT_I8, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_U8, ZT_BOOL, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I16, ZT_F16, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I16, ZT_I8, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_U16, ZT_BF16, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_U16, ZT_I16, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I32, ZT_F32, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I32, ZT_I16, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_U32, ZT_I32, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_U32, ZT_F32, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I64, ZT_F64, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I64, ZT_I32, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_I64, ZT_U64, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_U64, ZT_I64, ZT_ERR_UNSUPPORTED, NULL},
      {__LINE__, ZT_U64, ZT_F64, ZT_ERR_UNSUPPORTED, NULL},
  };
  size_t i;
  zt_reader *r = open_ok(path);
  if (r == NULL) {
    return;
  }
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const conv_case *t = &cases[i];
    size_t n = N_EL * DTYPE_SIZES[t->to];
    unsigned char out[N_EL * 8 + 8];
    uint32_t s;
    memset(out, 0xAB, sizeof out);
    s = (uint32_t)zt_component_read_as(r, t->object, "data", t->to, out, n);
    if (!zt_test_status(t->status, s, "zt_component_read_as (case)", __FILE__, t->line)) {
      continue;
    }
    if (t->expected != NULL) {
      zt_test_mem(out, t->expected, n, "read_as result", __FILE__, t->line);
    } else {
      CHECK_CONTAINS(zt_last_error(), DTYPE_NAMES[t->object]);
      CHECK(out[0] == 0xAB && out[n - 1] == 0xAB); /* untouched */
    }
    CHECK(out[n] == 0xAB);
  }
  {
    /* fp8 and complex logical types; zstd sources; scalar; zero-size */
    static const float fp8_f32[4] = {1.0f, -1.0f, 448.0f, 0.001953125f};
    static const uint16_t fp8_f16[4] = {0x3C00, 0xBC00, 0x5F00, 0x1800};
    float f[4];
    uint16_t h[4];
    int32_t i32s[4];
    double d[4], *zd;
    float sc = 0;
    CHECK_OK(zt_component_read_as(r, OBJ_FP8, "data", ZT_F32, f, sizeof f));
    CHECK_MEM(f, fp8_f32, sizeof f);
    CHECK_OK(zt_component_read_as(r, OBJ_FP8, "data", ZT_F16, h, sizeof h));
    CHECK_MEM(h, fp8_f16, sizeof h);
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(r, OBJ_FP8, "data", ZT_I32, i32s, sizeof i32s));
    CHECK_OK(zt_component_read_as(r, OBJ_CPLX, "data", ZT_F32, f, sizeof f));
    CHECK_MEM(f, CPLX_DATA, sizeof f);
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(r, OBJ_CPLX, "data", ZT_F64, d, sizeof d));
    CHECK_ERROR_MENTIONS("complex64");
    zd = (double *)malloc(ZSTD_N * sizeof(double));
    CHECK_OK(zt_component_read_as(r, OBJ_ZSTD, "data", ZT_F64, zd, ZSTD_N * sizeof(double)));
    {
      int k, same = 1;
      for (k = 0; k < ZSTD_N; k++) {
        same &= f64_bits(zd[k]) == f64_bits((double)ZSTD_DATA[k]);
      }
      CHECK(same);
    }
    free(zd);
    CHECK_OK(zt_component_read_as(r, OBJ_SCALAR, "data", ZT_F32, &sc, sizeof sc));
    CHECK(f32_bits(sc) == f32_bits(3.25f));
    CHECK_OK(zt_component_read_as(r, OBJ_EMPTY, "data", ZT_F64, NULL, 0));
    CHECK_OK(zt_component_read_as(r, OBJ_ZSTD_EMPTY, "data", ZT_F16, NULL, 0));
    CHECK_OK(zt_component_read_as(r, OBJ_CSR, "values", ZT_F64, d, sizeof d));
    CHECK(d[0] == 1.0 && d[1] == 2.0 && d[2] == 3.0 && d[3] == 4.0);
    CHECK_OK(zt_component_read_as(r, OBJ_CSR, "indptr", ZT_U64, d, sizeof d));
    CHECK_MEM(d, CSR_INDPTR, sizeof d);
  }
  {
    /* sizes: exact numel * size of the destination dtype; refused calls leave dst alone */
    unsigned char out[64];
    memset(out, 0xAB, sizeof out);
    CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read_as(r, ZT_BF16, "data", ZT_F32, out, N_EL * 4 - 1));
    CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read_as(r, ZT_BF16, "data", ZT_F32, out, N_EL * 2));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as(r, ZT_BF16, "data", ZT_F32, out, N_EL * 4 + 4));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as(r, ZT_BF16, "data", ZT_F64, out, N_EL * 8 + 1));
    CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read_as(r, ZT_BF16, "data", ZT_BF16, out, 0));
    CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read_as(r, OBJ_ZSTD, "data", ZT_F64, out, sizeof out));
    {
      int k, untouched = 1;
      for (k = 0; k < 64; k++) {
        untouched &= out[k] == 0xAB;
      }
      CHECK(untouched);
    }
    /* unknown dtype values, NULLs, unknown names and indices */
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as(r, ZT_F32, "data", 13, out, 24));
    CHECK_ERROR_MENTIONS("13");
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as(r, ZT_F32, "data", UINT32_MAX, out, 24));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as(NULL, ZT_F32, "data", ZT_F64, out, 48));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as(r, ZT_F32, NULL, ZT_F64, out, 48));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_as(r, ZT_F32, "data", ZT_F64, NULL, 48));
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_read_as(r, ZT_F32, "values", ZT_F64, out, 48));
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_read_as(r, OBJ_COUNT, "data", ZT_F64, out, 48));
    CHECK(out[0] == 0xAB);
  }
  zt_close(r);
}

/* ------------------------------------------------------------------------------------ */
/* Argument checks and error statuses of every reader function                           */
/* ------------------------------------------------------------------------------------ */

static void test_reader_errors(const char *path) {
  zt_reader *r = open_ok(path);
  size_t idx = 777;
  zt_object_info oi;
  zt_component_info ci;
  zt_view v;
  const char *json = "sentinel";
  unsigned char buf[64];
  if (r == NULL) {
    return;
  }
  memset(&oi, 0x5A, sizeof oi);
  memset(&ci, 0x5A, sizeof ci);
  memset(&v, 0x5A, sizeof v);

  /* zt_open / zt_open_with */
  {
    zt_reader *r2 = NULL;
    zt_open_options o;
    memset(&o, 0, sizeof o);
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open(NULL, &r2));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open(path, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_with(NULL, &o, &r2));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_with(path, &o, NULL));
    CHECK(r2 == NULL);
    CHECK_STATUS(ZT_ERR_IO, zt_open("", &r2));
    CHECK_STATUS(ZT_ERR_IO, zt_open("does_not_exist.zt", &r2));
    CHECK_ERROR_MENTIONS("does_not_exist.zt");
    CHECK_STATUS(ZT_ERR_IO, zt_open_with("does_not_exist.zt", &o, &r2));
    o.flags = ZT_OPEN_NO_MMAP;
    CHECK_STATUS(ZT_ERR_IO, zt_open_with("does_not_exist.zt", &o, &r2));
    CHECK(r2 == NULL);
  }

  /* zt_object_find */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_find(NULL, "scalar", &idx));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_find(r, NULL, &idx));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_find(r, "scalar", NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_find(r, "bad\xff\xfe", &idx));
  CHECK_ERROR_MENTIONS("UTF-8");
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(r, "no_such_object", &idx));
  CHECK_ERROR_MENTIONS("no_such_object");
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(r, "", &idx));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(r, "Scalar", &idx));
  CHECK_U64(idx, 777);
  CHECK_OK(zt_object_find(r, "scalar", &idx));
  CHECK_U64(idx, OBJ_SCALAR);

  /* zt_object_get_info */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_get_info(NULL, 0, &oi));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_get_info(r, 0, NULL));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_info(r, OBJ_COUNT, &oi));
  CHECK_ERROR_MENTIONS("index");
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_info(r, SIZE_MAX, &oi));
  {
    zt_object_info poisoned;
    memset(&poisoned, 0x5A, sizeof poisoned);
    CHECK_MEM(&oi, &poisoned, sizeof oi); /* untouched on failure */
  }

  /* zt_component_get_info */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_info(NULL, 0, 0, &ci));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_info(r, 0, 0, NULL));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_info(r, 0, 1, &ci));
  CHECK_ERROR_MENTIONS("dtype_f64");
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_info(r, OBJ_CSR, 3, &ci));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_info(r, OBJ_COUNT, 0, &ci));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_info(r, SIZE_MAX, SIZE_MAX, &ci));
  {
    zt_component_info poisoned;
    memset(&poisoned, 0x5A, sizeof poisoned);
    CHECK_MEM(&ci, &poisoned, sizeof ci);
  }

  /* zt_component_find */
  idx = 777;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_find(NULL, 0, "data", &idx));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_find(r, 0, NULL, &idx));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_find(r, 0, "data", NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_find(r, 0, "\xc3\x28", &idx));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_find(r, 0, "values", &idx));
  CHECK_ERROR_MENTIONS("values");
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_find(r, OBJ_COUNT, "data", &idx));
  CHECK_U64(idx, 777);

  /* zt_component_view */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_view(NULL, 0, "data", &v));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_view(r, 0, NULL, &v));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_view(r, 0, "data", NULL));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_view(r, 0, "scales", &v));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_view(r, OBJ_COUNT, "data", &v));
  {
    zt_view poisoned;
    memset(&poisoned, 0x5A, sizeof poisoned);
    CHECK_MEM(&v, &poisoned, sizeof v);
  }

  /* zt_component_read: exact size only; refused calls leave the buffer untouched */
  memset(buf, 0xAB, sizeof buf);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read(NULL, ZT_F32, "data", buf, 24));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read(r, ZT_F32, NULL, buf, 24));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read(r, ZT_F32, "data", NULL, 24));
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read(r, ZT_F32, "data", buf, 23));
  CHECK_ERROR_MENTIONS("23");
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read(r, ZT_F32, "data", buf, 0));
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read(r, ZT_F32, "data", NULL, 0));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read(r, ZT_F32, "data", buf, 25));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read(r, ZT_F32, "data", buf, 64));
  CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read(r, OBJ_ZSTD, "data", buf, 64));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read(r, OBJ_EMPTY, "data", buf, 1));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_read(r, ZT_F32, "indices", buf, 24));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_read(r, OBJ_COUNT, "data", buf, 24));
  {
    int k, untouched = 1;
    for (k = 0; k < 64; k++) {
      untouched &= buf[k] == 0xAB;
    }
    CHECK(untouched);
  }
  CHECK_OK(zt_component_read(r, OBJ_EMPTY, "data", NULL, 0));
  CHECK_OK(zt_component_read(r, OBJ_ZSTD_EMPTY, "data", buf, 0));

  /* zt_component_read_range */
  memset(buf, 0xAB, sizeof buf);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(NULL, ZT_F32, "data", 0, buf, 4));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(r, ZT_F32, NULL, 0, buf, 4));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(r, ZT_F32, "data", 0, NULL, 4));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(r, ZT_F32, "data", 20, buf, 5));
  CHECK_ERROR_MENTIONS("24");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(r, ZT_F32, "data", 25, buf, 0));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(r, ZT_F32, "data", UINT64_MAX, buf, 2));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(r, ZT_F32, "data", UINT64_MAX, buf, 0));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(r, ZT_F32, "data", 0, buf, 25));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT,
               zt_component_read_range(r, OBJ_ZSTD, "data", sizeof ZSTD_DATA - 3, buf, 4));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_read_range(r, ZT_F32, "zeros", 0, buf, 4));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_read_range(r, OBJ_COUNT, "data", 0, buf, 4));
  CHECK(buf[0] == 0xAB && buf[4] == 0xAB);

  /* zt_component_verify / zt_file_verify / zt_object_validate */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_verify(NULL, OBJ_SHA, "data"));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_verify(r, OBJ_SHA, NULL));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, OBJ_SHA, "nope"));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, OBJ_COUNT, "data"));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, OBJ_SCALAR, "data")); /* no digest */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_verify(NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_validate(NULL, 0));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_validate(r, OBJ_COUNT));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_validate(r, SIZE_MAX));

  /* zt_file_get_attributes_json, zt_object_get_attributes_json */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_attributes_json(NULL, &json));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_attributes_json(r, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_get_attributes_json(NULL, 0, &json));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_object_get_attributes_json(r, 0, NULL));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_attributes_json(r, OBJ_COUNT, &json));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_attributes_json(r, SIZE_MAX - 1, &json));
  /* no index stands for the file: SIZE_MAX is an object index like any other */
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_attributes_json(r, SIZE_MAX, &json));
  CHECK_STR(json, "sentinel");

  /* the getters tolerate NULL */
  CHECK_U64(zt_object_count(NULL), 0);
  CHECK_STR(zt_file_version(NULL), "");
  zt_close(r);
}

/* ------------------------------------------------------------------------------------ */
/* read_range on raw and zstd components                                                 */
/* ------------------------------------------------------------------------------------ */

static void check_ranges(zt_reader *r, size_t object, const unsigned char *expected, size_t total) {
  /* odd offsets and sizes, the first and last bytes, empty ranges, the whole component */
  static const size_t offs[] = {0, 1, 3, 63, 64, 1000, 4095, 65536, 99999};
  static const size_t lens[] = {0, 1, 2, 7, 64, 333, 4096, 70000};
  unsigned char *buf = (unsigned char *)malloc(total + 1);
  size_t i, j;
  for (i = 0; i < sizeof offs / sizeof offs[0]; i++) {
    for (j = 0; j < sizeof lens / sizeof lens[0]; j++) {
      size_t off = offs[i], len = lens[j];
      if (off + len > total) {
        continue;
      }
      buf[len] = 0xCD;
      if (CHECK_OK(zt_component_read_range(r, object, "data", off, len ? buf : NULL, len))) {
        if (!CHECK_MEM(buf, expected + off, len)) {
          fprintf(stderr, "  (range [%zu, %zu + %zu))\n", off, off, len);
        }
        CHECK(buf[len] == 0xCD);
      }
    }
  }
  CHECK_OK(zt_component_read_range(r, object, "data", total - 5, buf, 5));
  CHECK_MEM(buf, expected + total - 5, 5);
  CHECK_OK(zt_component_read_range(r, object, "data", total, buf, 0));
  CHECK_OK(zt_component_read_range(r, object, "data", 0, buf, total));
  CHECK_MEM(buf, expected, total);
  free(buf);
}

static void test_read_range(const char *path) {
  zt_reader *r = open_ok(path);
  zt_open_options o;
  zt_view v;
  if (r == NULL) {
    return;
  }
  check_ranges(r, OBJ_STREAM_ZSTD, (const unsigned char *)STREAM_DATA, sizeof STREAM_DATA);
  check_ranges(r, OBJ_STREAM_RAW, (const unsigned char *)STREAM_RAW_DATA, sizeof STREAM_RAW_DATA);
  check_ranges(r, OBJ_ZSTD, (const unsigned char *)ZSTD_DATA, sizeof ZSTD_DATA);
  check_ranges(r, OBJ_SHA, SHA_DATA, sizeof SHA_DATA);
  /* after a view has cached the decoded bytes, ranges come from the cache: same answers */
  CHECK_OK(zt_component_view(r, OBJ_STREAM_ZSTD, "data", &v));
  check_ranges(r, OBJ_STREAM_ZSTD, (const unsigned char *)STREAM_DATA, sizeof STREAM_DATA);
  {
    float x[2];
    CHECK_OK(zt_component_read_range(r, ZT_F32, "data", 4, x, 8));
    CHECK(f32_bits(x[0]) == f32_bits(-2.25f) && f32_bits(x[1]) == f32_bits(0.0f));
    CHECK_OK(zt_component_read_range(r, OBJ_EMPTY, "data", 0, NULL, 0));
    CHECK_OK(zt_component_read_range(r, OBJ_ZSTD_EMPTY, "data", 0, NULL, 0));
  }
  zt_close(r);
  /* and through pread */
  memset(&o, 0, sizeof o);
  o.flags = ZT_OPEN_NO_MMAP;
  if (CHECK_OK(zt_open_with(path, &o, &r))) {
    check_ranges(r, OBJ_STREAM_ZSTD, (const unsigned char *)STREAM_DATA, sizeof STREAM_DATA);
    check_ranges(r, OBJ_STREAM_RAW, (const unsigned char *)STREAM_RAW_DATA, sizeof STREAM_RAW_DATA);
    zt_close(r);
  }
}

/* ------------------------------------------------------------------------------------ */
/* Digests, corrupted and truncated copies                                               */
/* ------------------------------------------------------------------------------------ */

#define DIG_N 256
static float DIG_A[DIG_N];
static int32_t DIG_B[DIG_N];
static float DIG_C[1024];

static void write_digest_file(const char *path) {
  zt_writer *w = NULL;
  zt_write_options sha = {ZT_ENCODING_RAW, 0, ZT_DIGEST_SHA256};
  zt_write_options crc = {ZT_ENCODING_RAW, 0, ZT_DIGEST_CRC32C};
  zt_write_options zsha = {ZT_ENCODING_ZSTD, 1, ZT_DIGEST_SHA256};
  const uint64_t s256[1] = {DIG_N}, s1024[1] = {1024}, s10[1] = {10}, s4[1] = {4};
  const uint8_t plain[10] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  const uint8_t bools[4] = {0, 1, 1, 0};
  int i;
  for (i = 0; i < DIG_N; i++) {
    DIG_A[i] = (float)i / 4.0f;
    DIG_B[i] = -i * 3;
  }
  for (i = 0; i < 1024; i++) {
    DIG_C[i] = (float)(i % 10);
  }
  if (!CHECK_OK(zt_test_create_v12(path, &w))) {
    return;
  }
  CHECK_OK(zt_writer_add(w, "a_sha", ZT_F32, s256, 1, DIG_A, sizeof DIG_A, &sha));
  CHECK_OK(zt_writer_add(w, "b_crc", ZT_I32, s256, 1, DIG_B, sizeof DIG_B, &crc));
  CHECK_OK(zt_writer_add(w, "c_zstd_sha", ZT_F32, s1024, 1, DIG_C, sizeof DIG_C, &zsha));
  CHECK_OK(zt_writer_add(w, "d_plain", ZT_U8, s10, 1, plain, sizeof plain, NULL));
  CHECK_OK(zt_writer_add(w, "e_bool", ZT_BOOL, s4, 1, bools, sizeof bools, NULL));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

/* Writes a copy of `src` to `dst` with the byte at `at` xor-ed with 0xFF. */
static void corrupt_copy(const unsigned char *src, size_t size, const char *dst, uint64_t at) {
  unsigned char *copy = (unsigned char *)malloc(size);
  memcpy(copy, src, size);
  copy[at] ^= 0xFF;
  CHECK(spit(dst, copy, size));
  free(copy);
}

static void test_digests_and_corruption(void) {
  zt_reader *r = NULL, *bad = NULL;
  zt_component_info a, b, c, e;
  unsigned char *file;
  size_t size = 0;
  zt_open_options vo;
  memset(&vo, 0, sizeof vo);
  vo.flags = ZT_OPEN_VERIFY;

  write_digest_file("digests.zt");
  if ((r = open_ok("digests.zt")) == NULL) {
    return;
  }
  CHECK_OK(zt_component_get_info(r, 0, 0, &a));
  CHECK_OK(zt_component_get_info(r, 1, 0, &b));
  CHECK_OK(zt_component_get_info(r, 2, 0, &c));
  CHECK_OK(zt_component_get_info(r, 4, 0, &e));
  CHECK_OK(zt_component_verify(r, 0, "data"));
  CHECK_OK(zt_component_verify(r, 1, "data"));
  CHECK_OK(zt_component_verify(r, 2, "data"));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, 3, "data"));
  CHECK_OK(zt_file_verify(r));

  file = zt_test_slurp("digests.zt", &size);
  if (!CHECK(file != NULL)) {
    zt_close(r);
    return;
  }
  {
    /* exact digest strings over the stored bytes */
    char want[80];
    digest_string(ZT_DIGEST_SHA256, file + a.offset, (size_t)a.length, want);
    CHECK_STR(a.digest, want);
    digest_string(ZT_DIGEST_CRC32C, file + b.offset, (size_t)b.length, want);
    CHECK_STR(b.digest, want);
    digest_string(ZT_DIGEST_SHA256, file + c.offset, (size_t)c.length, want);
    CHECK_STR(c.digest, want);
    CHECK_U64(strlen(a.digest), 7 + 64);
    CHECK_U64(strlen(b.digest), 7 + 2 + 8);
  }
  zt_close(r); /* the digest strings above were borrowed from r */
  CHECK_OK(zt_open_with("digests.zt", &vo, &r));
  zt_close(r);

  /* one byte flipped inside the sha256 blob */
  corrupt_copy(file, size, "bad_a.zt", a.offset + 17);
  if ((bad = open_ok("bad_a.zt")) != NULL) { /* no verification at open by default */
    float got[DIG_N];
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(bad, 0, "data"));
    CHECK_ERROR_MENTIONS("a_sha");
    CHECK_OK(zt_component_verify(bad, 1, "data"));
    CHECK_OK(zt_component_verify(bad, 2, "data"));
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_file_verify(bad));
    CHECK_ERROR_MENTIONS("a_sha");
    /* reads don't verify: the flipped byte comes back */
    CHECK_OK(zt_component_read(bad, 0, "data", got, sizeof got));
    CHECK(((unsigned char *)got)[17] == (((const unsigned char *)DIG_A)[17] ^ 0xFF));
    CHECK_MEM(got, DIG_A, 17);
    zt_close(bad);
  }
  bad = (zt_reader *)&size;
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_open_with("bad_a.zt", &vo, &bad));
  CHECK(bad == (zt_reader *)&size); /* untouched on failure */
  vo.flags = ZT_OPEN_VERIFY | ZT_OPEN_NO_MMAP;
  CHECK_STATUS(ZT_ERR_CHECKSUM, zt_open_with("bad_a.zt", &vo, &bad));
  vo.flags = ZT_OPEN_NO_MMAP;
  if (CHECK_OK(zt_open_with("bad_a.zt", &vo, &bad))) {
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(bad, 0, "data"));
    CHECK_OK(zt_component_verify(bad, 1, "data"));
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_file_verify(bad));
    zt_close(bad);
  }
  {
    unsigned char *mem = aligned_copy(file, size, 0);
    mem[a.offset + 17] ^= 0xFF;
    vo.flags = ZT_OPEN_VERIFY;
    bad = NULL;
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_open_memory_with(mem, size, &vo, &bad));
    CHECK(bad == NULL);
    free(mem);
  }

  /* one byte flipped in the crc32c blob, then in the compressed blob */
  corrupt_copy(file, size, "bad_b.zt", b.offset + b.length - 1);
  if ((bad = open_ok("bad_b.zt")) != NULL) {
    CHECK_OK(zt_component_verify(bad, 0, "data"));
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(bad, 1, "data"));
    CHECK_ERROR_MENTIONS("b_crc");
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_file_verify(bad));
    zt_close(bad);
  }
  corrupt_copy(file, size, "bad_c.zt", c.offset + c.length / 2);
  if ((bad = open_ok("bad_c.zt")) != NULL) {
    CHECK_OK(zt_component_verify(bad, 0, "data"));
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(bad, 2, "data"));
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_file_verify(bad));
    zt_close(bad);
  }

  /* a bool byte that is neither 0 nor 1: found by zt_object_validate only */
  corrupt_copy(file, size, "bad_bool.zt", e.offset); /* 0x00 -> 0xFF */
  if ((bad = open_ok("bad_bool.zt")) != NULL) {
    unsigned char got[4];
    CHECK_OK(zt_file_verify(bad));
    CHECK_OK(zt_object_validate(bad, 0));
    CHECK_STATUS(ZT_ERR_FORMAT, zt_object_validate(bad, 4));
    CHECK_ERROR_MENTIONS("e_bool");
    CHECK_OK(zt_component_read(bad, 4, "data", got, 4));
    CHECK(got[0] == 0xFF && got[1] == 1);
    zt_close(bad);
  }

  /* truncated copies, a wrong header, not a zTensor file at all */
  {
    const size_t cuts[] = {size - 1, size - 8, size - 16, size - 17, size / 2, 64, 17, 16, 9, 8, 1, 0};
    size_t i;
    for (i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
      zt_open_options po;
      unsigned char *mem = aligned_copy(file, cuts[i], 0);
      memset(&po, 0, sizeof po);
      po.flags = ZT_OPEN_NO_MMAP;
      CHECK(spit("truncated.zt", file, cuts[i]));
      bad = NULL;
      if (!CHECK_STATUS(ZT_ERR_FORMAT, zt_open("truncated.zt", &bad))) {
        fprintf(stderr, "  (truncated to %zu bytes)\n", cuts[i]);
      }
      CHECK_STATUS(ZT_ERR_FORMAT, zt_open_with("truncated.zt", &po, &bad));
      CHECK_STATUS(ZT_ERR_FORMAT, zt_open_memory(cuts[i] ? mem : NULL, cuts[i], &bad));
      CHECK(bad == NULL);
      free(mem);
    }
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open("truncated.zt", &bad));
    CHECK_ERROR_MENTIONS("truncated.zt");
  }
  {
    unsigned char *copy = (unsigned char *)malloc(size);
    memcpy(copy, file, size);
    memcpy(copy, "ZTEN9999", 8);
    CHECK(spit("bad_magic.zt", copy, size));
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open("bad_magic.zt", &bad));
    memcpy(copy, "ZTEN1000", 8);
    memcpy(copy + size - 8, "ZTEN1001", 8);
    CHECK(spit("bad_footer.zt", copy, size));
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open("bad_footer.zt", &bad));
    memcpy(copy + size - 8, "ZTEN1000", 8);
    memset(copy + size - 16, 0, 8); /* manifest size 0 */
    CHECK(spit("bad_msize.zt", copy, size));
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open("bad_msize.zt", &bad));
    memset(copy + size - 16, 0x7F, 7); /* manifest larger than the file, under the limit */
    copy[size - 9] = 0;
    CHECK(spit("bad_msize.zt", copy, size));
    CHECK_STATUS(ZT_ERR_LIMIT, zt_open("bad_msize.zt", &bad)); /* over 1 GiB: the limit first */
    {
      uint64_t too_big = (uint64_t)size - 16 - 8 + 1; /* one byte more than fits */
      memcpy(copy + size - 16, &too_big, 8);
      CHECK(spit("bad_msize.zt", copy, size));
      CHECK_STATUS(ZT_ERR_FORMAT, zt_open("bad_msize.zt", &bad));
    }
    free(copy);
    CHECK(spit("text.zt", "this is not a zTensor file, just some text\n", 43));
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open("text.zt", &bad));
    CHECK(bad == NULL);
  }
  free(file);
}

/* ------------------------------------------------------------------------------------ */
/* Open options and memory readers                                                       */
/* ------------------------------------------------------------------------------------ */

static void test_open_options(const char *path) {
  zt_open_options o;
  zt_reader *r = NULL;
  size_t size = 0;
  uint64_t manifest_size = 0;
  unsigned char *file = zt_test_slurp(path, &size);
  if (!CHECK(file != NULL)) {
    return;
  }
  memcpy(&manifest_size, file + size - 16, 8);
  free(file);

  CHECK_OK(zt_open_with(path, NULL, &r));
  zt_close(r);
  memset(&o, 0, sizeof o);
  CHECK_OK(zt_open_with(path, &o, &r));
  zt_close(r);

  /* ZT_OPEN_NO_MMAP: every view is a copy, with the right bytes */
  o.flags = ZT_OPEN_NO_MMAP;
  if (CHECK_OK(zt_open_with(path, &o, &r))) {
    zt_view v, again;
    int d;
    const char *json = NULL;
    for (d = 0; d < 13; d++) {
      char name[32];
      dtype_object_name(d, name, sizeof name);
      CHECK_OK(zt_component_view(r, (size_t)d, "data", &v));
      CHECK(!v.zero_copy);
      CHECK(is_aligned64(v.data));
      CHECK_U64(v.size, N_EL * DTYPE_SIZES[d]);
      CHECK_MEM(v.data, DTYPE_DATA[d], N_EL * DTYPE_SIZES[d]);
      CHECK_OK(zt_component_view(r, (size_t)d, "data", &again));
      CHECK(again.data == v.data);
    }
    CHECK_OK(zt_component_view(r, OBJ_STREAM_ZSTD, "data", &v));
    CHECK(!v.zero_copy && v.size == sizeof STREAM_DATA);
    CHECK_MEM(v.data, STREAM_DATA, sizeof STREAM_DATA);
    CHECK_OK(zt_component_view(r, OBJ_EMPTY, "data", &v));
    CHECK(v.size == 0);
    {
      float f[N_EL];
      CHECK_OK(zt_component_read_as(r, ZT_BF16, "data", ZT_F32, f, sizeof f));
      CHECK(f32_bits(f[3]) == f32_bits(3.140625f));
    }
    CHECK_OK(zt_file_verify(r));
    CHECK_OK(zt_file_get_attributes_json(r, &json));
    CHECK_STR(json, FILE_ATTRS_OUT);
    zt_close(r);
  }

  /* ZT_OPEN_VERIFY on a good file */
  o.flags = ZT_OPEN_VERIFY;
  CHECK_OK(zt_open_with(path, &o, &r));
  zt_close(r);
  o.flags = ZT_OPEN_VERIFY | ZT_OPEN_NO_MMAP;
  CHECK_OK(zt_open_with(path, &o, &r));
  zt_close(r);

  /* unknown flags */
  r = NULL;
  o.flags = 4;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_with(path, &o, &r));
  CHECK_ERROR_MENTIONS("flags");
  o.flags = ZT_OPEN_NO_MMAP | ZT_OPEN_VERIFY | 8;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_with(path, &o, &r));
  o.flags = 0x80000000u;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_with(path, &o, &r));
  CHECK(r == NULL);
  o.flags = 0;

  /* limits, at their exact boundaries */
  o.max_manifest_size = 16;
  CHECK_STATUS(ZT_ERR_LIMIT, zt_open_with(path, &o, &r));
  CHECK_ERROR_MENTIONS("manifest");
  o.max_manifest_size = manifest_size - 1;
  CHECK_STATUS(ZT_ERR_LIMIT, zt_open_with(path, &o, &r));
  o.max_manifest_size = manifest_size;
  CHECK_OK(zt_open_with(path, &o, &r));
  zt_close(r);
  o.max_manifest_size = 0;

  o.max_rank = 1;
  CHECK_STATUS(ZT_ERR_LIMIT, zt_open_with(path, &o, &r));
  o.max_rank = 2;
  CHECK_OK(zt_open_with(path, &o, &r));
  zt_close(r);
  o.max_rank = 0;

  o.max_name_length = 12; /* "streamed_zstd" and "packed_weight" have 13 bytes */
  CHECK_STATUS(ZT_ERR_LIMIT, zt_open_with(path, &o, &r));
  o.max_name_length = 13;
  CHECK_OK(zt_open_with(path, &o, &r));
  zt_close(r);
  o.max_name_length = 0;

  o.max_decoded_size = sizeof STREAM_DATA - 1; /* the largest component */
  CHECK_STATUS(ZT_ERR_LIMIT, zt_open_with(path, &o, &r));
  o.max_decoded_size = sizeof STREAM_DATA;
  CHECK_OK(zt_open_with(path, &o, &r));
  zt_close(r);
  o.max_decoded_size = 0;

  o.max_cbor_depth = 2;
  CHECK_STATUS(ZT_ERR_LIMIT, zt_open_with(path, &o, &r));
  o.max_cbor_depth = 0;

  /* the cache limit applies to views of decoded components, not to reads */
  o.max_total_cached = 1000;
  if (CHECK_OK(zt_open_with(path, &o, &r))) {
    zt_view v;
    float *f = (float *)malloc(sizeof ZSTD_DATA);
    CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(r, OBJ_ZSTD, "data", &v));
    CHECK_ERROR_MENTIONS("zstd_f32");
    CHECK_OK(zt_component_read(r, OBJ_ZSTD, "data", f, sizeof ZSTD_DATA));
    CHECK_MEM(f, ZSTD_DATA, sizeof ZSTD_DATA);
    CHECK_OK(zt_component_view(r, OBJ_QUANT, "packed_weight", &v)); /* 32 bytes fit */
    CHECK_MEM(v.data, Q_PACKED, sizeof Q_PACKED);
    CHECK_OK(zt_component_view(r, OBJ_SHA, "data", &v)); /* zero-copy: not cached */
    CHECK(v.zero_copy);
    CHECK_STATUS(ZT_ERR_LIMIT, zt_component_view(r, OBJ_STREAM_ZSTD, "data", &v));
    free(f);
    zt_close(r);
  }
}

static void test_open_memory(const char *path) {
  size_t size = 0;
  unsigned char *file = zt_test_slurp(path, &size);
  unsigned char *mem, *odd;
  zt_reader *r = NULL;
  zt_open_options o;
  if (!CHECK(file != NULL)) {
    return;
  }
  memset(&o, 0, sizeof o);

  /* aligned: raw components are views into the caller's bytes */
  mem = aligned_copy(file, size, 0);
  if (CHECK_OK(zt_open_memory(mem, size, &r))) {
    zt_view v;
    int d;
    CHECK_STR(zt_file_version(r), "1.2.0");
    CHECK_U64(zt_object_count(r), OBJ_COUNT);
    for (d = 0; d < 13; d++) {
      CHECK_OK(zt_component_view(r, (size_t)d, "data", &v));
      CHECK(v.zero_copy);
      CHECK((const unsigned char *)v.data >= mem && (const unsigned char *)v.data < mem + size);
      CHECK_MEM(v.data, DTYPE_DATA[d], N_EL * DTYPE_SIZES[d]);
    }
    CHECK_OK(zt_component_view(r, OBJ_ZSTD, "data", &v));
    CHECK(!v.zero_copy && is_aligned64(v.data));
    CHECK((const unsigned char *)v.data < mem || (const unsigned char *)v.data >= mem + size);
    CHECK_MEM(v.data, ZSTD_DATA, sizeof ZSTD_DATA);
    CHECK_OK(zt_file_verify(r));
    check_ranges(r, OBJ_STREAM_ZSTD, (const unsigned char *)STREAM_DATA, sizeof STREAM_DATA);
    /* no path to name */
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(r, "nope", &(size_t){0}));
    CHECK_STR(zt_last_error(), "no object named 'nope'");
    zt_close(r);
  }
  /* options: NULL, NO_MMAP (no effect), unknown flags, limits, verify */
  CHECK_OK(zt_open_memory_with(mem, size, NULL, &r));
  zt_close(r);
  o.flags = ZT_OPEN_NO_MMAP | ZT_OPEN_VERIFY;
  if (CHECK_OK(zt_open_memory_with(mem, size, &o, &r))) {
    zt_view v;
    CHECK_OK(zt_component_view(r, ZT_F32, "data", &v));
    CHECK(v.zero_copy);
    zt_close(r);
  }
  r = NULL;
  o.flags = 16;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_memory_with(mem, size, &o, &r));
  o.flags = 0;
  o.max_manifest_size = 100;
  CHECK_STATUS(ZT_ERR_LIMIT, zt_open_memory_with(mem, size, &o, &r));
  CHECK(r == NULL);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_memory_with(mem, size, NULL, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_memory_with(NULL, size, NULL, &r));

  /* misaligned: nothing is zero-copy, but views are still 64-byte aligned copies */
  odd = aligned_copy(file, size, 1);
  if (CHECK_OK(zt_open_memory(odd + 1, size, &r))) {
    zt_view v;
    int d;
    for (d = 0; d < 13; d++) {
      CHECK_OK(zt_component_view(r, (size_t)d, "data", &v));
      CHECK(!v.zero_copy);
      CHECK(is_aligned64(v.data));
      CHECK_MEM(v.data, DTYPE_DATA[d], N_EL * DTYPE_SIZES[d]);
    }
    CHECK_OK(zt_component_view(r, OBJ_EMPTY, "data", &v));
    CHECK_U64(v.size, 0);
    CHECK_OK(zt_file_verify(r));
    check_ranges(r, OBJ_SHA, SHA_DATA, sizeof SHA_DATA);
    zt_close(r);
  }
  free(odd);

  /* argument checks */
  r = NULL;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_memory(NULL, 100, &r));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_memory(mem, size, NULL));
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open_memory(NULL, 0, &r));
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open_memory(mem, 0, &r));
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open_memory(mem, size - 1, &r));
  CHECK_STATUS(ZT_ERR_FORMAT, zt_open_memory(mem + 1, size - 1, &r));
  CHECK(r == NULL);
  free(mem);
  free(file);
}

/* ------------------------------------------------------------------------------------ */
/* Writer: argument checks, states, atomic creation                                      */
/* ------------------------------------------------------------------------------------ */

static void test_writer_errors(void) {
  zt_writer *w = NULL;
  const uint64_t s2[1] = {2}, s3[1] = {3}, s4[1] = {4}, s6[1] = {6}, s34[2] = {3, 4};
  const float two[2] = {1.0f, 2.0f};
  const uint8_t bad_bool[2] = {1, 2};
  zt_write_options o;
  uint64_t big_rank[65];
  char *long_name;
  size_t k;

  /* zt_writer_create */
  w = (zt_writer *)&k;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_test_create_v12(NULL, &w));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_test_create_v12("x.zt", NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_test_create_v12("", &w));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_test_create_v12("sub/..", &w));
  CHECK_STATUS(ZT_ERR_IO, zt_test_create_v12("no_such_dir/x.zt", &w));
  CHECK_ERROR_MENTIONS("no_such_dir");
  CHECK(w == (zt_writer *)&k); /* untouched */
  CHECK(!exists("x.zt"));

  if (!CHECK_OK(zt_test_create_v12("errors.zt", &w))) {
    return;
  }

  /* zt_writer_add */
  memset(&o, 0, sizeof o);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(NULL, "a", ZT_F32, s2, 1, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, NULL, ZT_F32, s2, 1, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "", ZT_F32, s2, 1, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "bad\xff", ZT_F32, s2, 1, two, 8, NULL));
  CHECK_ERROR_MENTIONS("UTF-8");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", 13, s2, 1, two, 8, NULL));
  CHECK_ERROR_MENTIONS("13");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", UINT32_MAX, s2, 1, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, NULL, 1, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s2, 1, NULL, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s2, 1, two, 7, NULL));
  CHECK_ERROR_MENTIONS("8");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s2, 1, two, 4, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s3, 1, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, NULL, 0, two, 8, NULL)); /* scalar: 4 */
  o.encoding = 2;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s2, 1, two, 8, &o));
  CHECK_ERROR_MENTIONS("encoding");
  o.encoding = ZT_ENCODING_RAW;
  o.digest = 3;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s2, 1, two, 8, &o));
  CHECK_ERROR_MENTIONS("digest");
  o.digest = ZT_DIGEST_NONE;
  o.encoding = ZT_ENCODING_ZSTD;
  o.level = 1000;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s2, 1, two, 8, &o));
  CHECK_ERROR_MENTIONS("level");
  o.level = 23;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s2, 1, two, 8, &o));
  o.level = 22;
  CHECK_OK(zt_writer_add(w, "zstd22", ZT_F32, s2, 1, two, 8, &o));
  o.level = -5;
  CHECK_OK(zt_writer_add(w, "zstd_fast", ZT_F32, s2, 1, two, 8, &o));
  memset(&o, 0, sizeof o);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_BOOL, s2, 1, bad_bool, 2, NULL));
  for (k = 0; k < 65; k++) {
    big_rank[k] = 1;
  }
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_U8, big_rank, 65, two, 1, NULL));
  CHECK_OK(zt_writer_add(w, "rank64", ZT_U8, big_rank, 64, two, 1, NULL));
  {
    const uint64_t huge[2] = {UINT64_MAX, 2};
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_U8, huge, 2, two, 1, NULL));
  }
  long_name = (char *)malloc(65538);
  memset(long_name, 'n', 65537);
  long_name[65537] = 0;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, long_name, ZT_F32, s2, 1, two, 8, NULL));
  long_name[65536] = 0;
  CHECK_OK(zt_writer_add(w, long_name, ZT_F32, s2, 1, two, 8, NULL)); /* exactly the limit */
  free(long_name);
  /* after all those refusals the writer still works; names are unique */
  CHECK_OK(zt_writer_add(w, "a", ZT_F32, s2, 1, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "a", ZT_F32, s2, 1, two, 8, NULL));
  CHECK_ERROR_MENTIONS("'a'");
  CHECK_OK(zt_writer_add(w, "caf\xc3\xa9 \xe2\x9c\x93", ZT_F32, s2, 1, two, 8, NULL)); /* UTF-8 */

  /* no object open */
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_add_component(w, "data", ZT_F32, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_begin_component(w, "data", ZT_F32, NULL, NULL));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_write(w, two, 8));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_component(w));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_object(w));

  /* zt_writer_begin_object */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_object(NULL, "o", "dense", s2, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_object(w, NULL, "dense", s2, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_object(w, "o", NULL, s2, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_object(w, "o", "", s2, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_object(w, "o", "dense\xff", s2, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_object(w, "o", "dense", NULL, 1));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_object(w, "a", "dense", s2, 1)); /* duplicate */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_object(w, "", "dense", s2, 1));

  /* an open object: finish, add, begin refuse with STATE and the writer stays usable */
  CHECK_OK(zt_writer_begin_object(w, "obj", "dense", s2, 1));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_begin_object(w, "other", "dense", s2, 1));
  CHECK_ERROR_MENTIONS("obj");
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_add(w, "other", ZT_F32, s2, 1, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_finish(w));
  CHECK_ERROR_MENTIONS("obj");
  CHECK(!exists("errors.zt"));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_write(w, two, 8)); /* no component being streamed */
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_component(w));

  /* zt_writer_add_component */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(NULL, "data", ZT_F32, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, NULL, ZT_F32, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "", ZT_F32, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "d\xff", ZT_F32, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", 13, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, "", two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, "t\xff", two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, "f8_e4m3fn", two, 8, NULL));
  CHECK_ERROR_MENTIONS("f8_e4m3fn");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, NULL, NULL, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, NULL, two, 7, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_BOOL, NULL, bad_bool, 2, NULL));
  o.encoding = 7;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, NULL, two, 8, &o));
  o.encoding = 0;
  o.digest = 99;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, NULL, two, 8, &o));
  o.digest = 0;
  CHECK_OK(zt_writer_add_component(w, "data", ZT_F32, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, NULL, two, 8, NULL));
  CHECK_ERROR_MENTIONS("data");
  CHECK_OK(zt_writer_add_component(w, "extra", ZT_U8, "my_logical_type", two, 3, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(NULL));
  CHECK_OK(zt_writer_end_object(w));
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_object(w));

  /* end_object refuses an inconsistent object, leaves it out, and the writer goes on */
  CHECK_OK(zt_writer_begin_object(w, "bad_size", "dense", s3, 1));
  CHECK_OK(zt_writer_add_component(w, "data", ZT_F32, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w));
  CHECK_ERROR_MENTIONS("bad_size");
  CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_object(w)); /* it is no longer open */
  CHECK_OK(zt_writer_add(w, "bad_size", ZT_F32, s2, 1, two, 8, NULL)); /* the name is free again */
  CHECK_OK(zt_writer_begin_object(w, "no_data", "dense", s2, 1));
  CHECK_OK(zt_writer_add_component(w, "other", ZT_F32, NULL, two, 8, NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w));
  {
    const float v4[4] = {1, 2, 3, 4};
    const uint32_t idx32[4] = {0, 1, 2, 3};
    const uint64_t idx3[3] = {0, 1, 2}, idx4[4] = {0, 1, 2, 3}, ptr[4] = {0, 1, 2, 4};
    const uint64_t bad_ptr[4] = {1, 0, 9, 4}, bad_idx[4] = {0, 7, 1, 2};
    CHECK_OK(zt_writer_begin_object(w, "csr_u32", "sparse_csr", s34, 2));
    CHECK_OK(zt_writer_add_component(w, "values", ZT_F32, NULL, v4, sizeof v4, NULL));
    CHECK_OK(zt_writer_add_component(w, "indices", ZT_U32, NULL, idx32, sizeof idx32, NULL));
    CHECK_OK(zt_writer_add_component(w, "indptr", ZT_U64, NULL, ptr, sizeof ptr, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w));
    CHECK_ERROR_MENTIONS("u64");
    CHECK_OK(zt_writer_begin_object(w, "csr_count", "sparse_csr", s34, 2));
    CHECK_OK(zt_writer_add_component(w, "values", ZT_F32, NULL, v4, sizeof v4, NULL));
    CHECK_OK(zt_writer_add_component(w, "indices", ZT_U64, NULL, idx3, sizeof idx3, NULL));
    CHECK_OK(zt_writer_add_component(w, "indptr", ZT_U64, NULL, ptr, sizeof ptr, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w));
    CHECK_OK(zt_writer_begin_object(w, "csr_1d", "sparse_csr", s4, 1));
    CHECK_OK(zt_writer_add_component(w, "values", ZT_F32, NULL, v4, sizeof v4, NULL));
    CHECK_OK(zt_writer_add_component(w, "indices", ZT_U64, NULL, idx4, sizeof idx4, NULL));
    CHECK_OK(zt_writer_add_component(w, "indptr", ZT_U64, NULL, ptr, sizeof ptr, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w));
    /* right sizes, wrong values: accepted, found later by zt_object_validate */
    CHECK_OK(zt_writer_begin_object(w, "csr_bad_ptr", "sparse_csr", s34, 2));
    CHECK_OK(zt_writer_add_component(w, "values", ZT_F32, NULL, v4, sizeof v4, NULL));
    CHECK_OK(zt_writer_add_component(w, "indices", ZT_U64, NULL, idx4, sizeof idx4, NULL));
    CHECK_OK(zt_writer_add_component(w, "indptr", ZT_U64, NULL, bad_ptr, sizeof bad_ptr, NULL));
    CHECK_OK(zt_writer_end_object(w));
    CHECK_OK(zt_writer_begin_object(w, "csr_bad_idx", "sparse_csr", s34, 2));
    CHECK_OK(zt_writer_add_component(w, "values", ZT_F32, NULL, v4, sizeof v4, NULL));
    CHECK_OK(zt_writer_add_component(w, "indices", ZT_U64, NULL, bad_idx, sizeof bad_idx, NULL));
    CHECK_OK(zt_writer_add_component(w, "indptr", ZT_U64, NULL, ptr, sizeof ptr, NULL));
    CHECK_OK(zt_writer_end_object(w));
  }

  /* compound logical types: whole pairs, and the shape counts pairs */
  {
    const float f3[3] = {1, 2, 3};
    CHECK_OK(zt_writer_begin_object(w, "cplx_bad", "dense", s2, 1));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, "complex64", f3, 12, NULL));
    CHECK_OK(zt_writer_add_component(w, "data", ZT_F32, "complex64", f3, 8, NULL)); /* one pair, shape says 2 */
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w));
    /* the refused object is closed: no object is open any more */
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_add_component(w, "data", ZT_F32, "complex64", f3, 8, NULL));
  }

  /* streaming: states and size checks */
  {
    const int16_t six[3] = {-1, 2, -3};
    const uint8_t ok_bool[2] = {1, 0};
    const float f4[4] = {1, 2, 3, 4};
    CHECK_OK(zt_writer_begin_object(w, "st", "dense", s3, 1));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_component(NULL, "data", ZT_I16, NULL, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_component(w, NULL, ZT_I16, NULL, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_component(w, "data", 13, NULL, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_component(w, "data", ZT_I16, "f8_e5m2", NULL));
    o.encoding = 2;
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_begin_component(w, "data", ZT_I16, NULL, &o));
    o.encoding = 0;
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_I16, NULL, NULL));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_begin_component(w, "more", ZT_I16, NULL, NULL));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_add_component(w, "more", ZT_I16, NULL, six, 6, NULL));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_object(w));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_finish(w));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_write(NULL, six, 6));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_write(w, NULL, 6));
    CHECK_OK(zt_writer_write(w, six, 3));
    CHECK_OK(zt_writer_write(w, NULL, 0));
    CHECK_OK(zt_writer_write(w, (const unsigned char *)six + 3, 3));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_component(NULL));
    CHECK_OK(zt_writer_end_component(w));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_component(w));
    CHECK_OK(zt_writer_end_object(w));

    CHECK_OK(zt_writer_begin_object(w, "st_odd", "dense", s2, 1));
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_I16, NULL, NULL));
    CHECK_OK(zt_writer_write(w, six, 3));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_component(w)); /* 3 bytes of i16 */
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w));    /* no data left */

    CHECK_OK(zt_writer_begin_object(w, "st_short", "dense", s4, 1));
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_F32, NULL, NULL));
    CHECK_OK(zt_writer_write(w, f4, 8));
    CHECK_OK(zt_writer_end_component(w));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_end_object(w)); /* 8 of 16 bytes */
    CHECK_ERROR_MENTIONS("st_short");

    CHECK_OK(zt_writer_begin_object(w, "st_bool", "dense", s2, 1));
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_BOOL, NULL, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_write(w, bad_bool, 2));
    CHECK_OK(zt_writer_write(w, ok_bool, 2)); /* the refused chunk was not taken */
    CHECK_OK(zt_writer_end_component(w));
    CHECK_OK(zt_writer_end_object(w));

    CHECK_OK(zt_writer_begin_object(w, "st_zstd_empty", "dense", s6, 1));
    o.encoding = ZT_ENCODING_ZSTD;
    o.digest = ZT_DIGEST_CRC32C;
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_U8, NULL, &o));
    CHECK_OK(zt_writer_write(w, "abc", 3));
    CHECK_OK(zt_writer_write(w, "def", 3));
    CHECK_OK(zt_writer_end_component(w));
    CHECK_OK(zt_writer_end_object(w));
    memset(&o, 0, sizeof o);
  }

  /* zt_writer_set_file_attributes_json / zt_writer_set_object_attributes_json */
  {
    char deep[512];
    int i;
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(NULL, "{}"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "[1, 2]"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "42"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "\"text\""));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{\"bytes\":{\"$bytes\":\"00\"}"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{\"$bytes\":\"0011\"}"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{"));
    CHECK_ERROR_MENTIONS("JSON");
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{\"a\":1,\"a\":2}"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{} {}"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{'a': 1}"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{\"a\":\"\xff\"}"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{\"a\":NaN}"));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, "{\"a\":\"\\ud800\"}"));
    for (i = 0; i < 200; i++) {
      deep[i] = '[';
    }
    deep[200] = 0;
    {
      char doc[600];
      snprintf(doc, sizeof doc, "{\"deep\":%s", deep);
      for (i = 0; i < 200; i++) {
        strcat(doc, "]");
      }
      strcat(doc, "}");
      CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_file_attributes_json(w, doc));
    }
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_writer_set_object_attributes_json(w, "nope", "{}"));
    CHECK_ERROR_MENTIONS("nope");
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_object_attributes_json(w, NULL, "{}"));
    CHECK_ERROR_MENTIONS("object is NULL");
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_writer_set_object_attributes_json(w, "csr_u32", "{}")); /* refused object */
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_object_attributes_json(w, "a\xff", "{}"));
    CHECK_OK(zt_writer_set_object_attributes_json(w, "a", "{}"));
    CHECK_OK(zt_writer_set_object_attributes_json(w, "st", "{\"big\":18446744073709551615,\"small\":-9223372036854775808,"
                                                    "\"e\":1e3,\"x\":{\"$bytes\":\"\"}}"));
    CHECK_OK(zt_writer_set_file_attributes_json(w, "  {\"file\" : \"errors\"}  "));
  }

  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_finish(NULL));
  CHECK(!exists("errors.zt"));
  CHECK_OK(zt_writer_finish(w));
  CHECK(exists("errors.zt"));

  /* after finish only zt_writer_free is valid */
  {
    const float one = 1.0f;
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_add(w, "late", ZT_F32, NULL, 0, &one, 4, NULL));
    CHECK_ERROR_MENTIONS("finished");
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_begin_object(w, "late", "dense", NULL, 0));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_add_component(w, "data", ZT_F32, NULL, &one, 4, NULL));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_object(w));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_begin_component(w, "data", ZT_F32, NULL, NULL));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_write(w, &one, 4));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_end_component(w));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_set_file_attributes_json(w, "{}"));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_finish(w));
  }
  zt_writer_free(w);

  /* what reached the file: exactly the accepted objects, in order */
  {
    static const char *const names[] = {"zstd22", "zstd_fast", "rank64", "(65536 x 'n')", "a",
                                        "caf\xc3\xa9 \xe2\x9c\x93", /* UTF-8: e-acute, a check mark */
                                        "obj", "bad_size", "csr_bad_ptr", "csr_bad_idx", "st", "st_bool",
                                        "st_zstd_empty"};
    zt_reader *r = open_ok("errors.zt");
    size_t i, n = sizeof names / sizeof names[0];
    if (r == NULL) {
      return;
    }
    CHECK_U64(zt_object_count(r), n);
    for (i = 0; i < n && i < zt_object_count(r); i++) {
      zt_object_info oi;
      CHECK_OK(zt_object_get_info(r, i, &oi));
      if (i == 3) {
        CHECK_U64(strlen(oi.name), 65536);
      } else {
        CHECK_STR(oi.name, names[i]);
      }
      if (strncmp(names[i], "csr_bad", 7) == 0) {
        CHECK_STATUS(ZT_ERR_FORMAT, zt_object_validate(r, i));
        CHECK_ERROR_MENTIONS(names[i]);
      } else {
        CHECK_OK(zt_object_validate(r, i));
      }
    }
    {
      zt_object_info oi;
      zt_component_info ci;
      int16_t st[3];
      uint8_t b[2], z[6];
      const char *json = NULL;
      float f[2];
      CHECK_OK(zt_object_get_info(r, 2, &oi));
      CHECK_U64(oi.ndim, 64);
      CHECK_OK(zt_object_get_info(r, 6, &oi));
      CHECK_U64(oi.component_count, 2);
      CHECK_OK(zt_component_get_info(r, 6, 1, &ci));
      CHECK_STR(ci.role, "extra");
      CHECK_STR(ci.type, "my_logical_type");
      {
        uint8_t raw3[3];
        uint16_t wide[3];
        /* a logical type this library doesn't know reads only as its storage dtype */
        CHECK_OK(zt_component_read_as(r, 6, "extra", ZT_U8, raw3, sizeof raw3));
        CHECK_MEM(raw3, two, 3);
        CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(r, 6, "extra", ZT_U16, wide, sizeof wide));
        CHECK_ERROR_MENTIONS("my_logical_type");
      }
      CHECK_OK(zt_component_read(r, 0, "data", f, sizeof f));
      CHECK_MEM(f, two, sizeof f);
      CHECK_OK(zt_component_read(r, 1, "data", f, sizeof f));
      CHECK_MEM(f, two, sizeof f);
      CHECK_OK(zt_component_read(r, find_ok(r, "st"), "data", st, sizeof st));
      CHECK(st[0] == -1 && st[1] == 2 && st[2] == -3);
      CHECK_OK(zt_component_read(r, find_ok(r, "st_bool"), "data", b, sizeof b));
      CHECK(b[0] == 1 && b[1] == 0);
      CHECK_OK(zt_component_read(r, find_ok(r, "st_zstd_empty"), "data", z, sizeof z));
      CHECK_MEM(z, "abcdef", 6);
      CHECK_OK(zt_component_verify(r, find_ok(r, "st_zstd_empty"), "data"));
      CHECK_OK(zt_file_get_attributes_json(r, &json));
      CHECK_STR(json, "{\"file\":\"errors\"}");
      CHECK_OK(zt_object_get_attributes_json(r, find_ok(r, "a"), &json));
      CHECK_STR(json, "{}");
      CHECK_OK(zt_object_get_attributes_json(r, find_ok(r, "st"), &json));
      CHECK_STR(json, "{\"big\":18446744073709551615,\"small\":-9223372036854775808,\"e\":1000.0,"
                      "\"x\":{\"$bytes\":\"\"}}");
      CHECK_OK(zt_file_verify(r));
    }
    zt_close(r);
  }
}

static void test_writer_files(void) {
  zt_writer *w = NULL;
  const uint64_t s2[1] = {2};
  const float two[2] = {1.0f, 2.0f}, other[2] = {3.0f, 4.0f};
  char entry[256];
  zt_reader *r;

  /* nothing at the path before finish; freeing an unfinished writer leaves no file */
  CHECK(mkdir("unfinished", 0755) == 0);
  if (CHECK_OK(zt_test_create_v12("unfinished/model.zt", &w))) {
    CHECK_OK(zt_writer_add(w, "x", ZT_F32, s2, 1, two, 8, NULL));
    CHECK(!exists("unfinished/model.zt"));
    CHECK(dir_entries("unfinished", entry, sizeof entry) == 1); /* the temporary file */
    CHECK(entry[0] == '.');
    zt_writer_free(w);
    CHECK(dir_entries("unfinished", NULL, 0) == 0);
  }
  /* also in the middle of an object and of a streamed component */
  if (CHECK_OK(zt_test_create_v12("unfinished/model.zt", &w))) {
    CHECK_OK(zt_writer_begin_object(w, "x", "dense", s2, 1));
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_F32, NULL, NULL));
    CHECK_OK(zt_writer_write(w, two, 4));
    zt_writer_free(w);
    CHECK(dir_entries("unfinished", NULL, 0) == 0);
  }
  /* a finish refused for an open object doesn't create the file either */
  if (CHECK_OK(zt_test_create_v12("unfinished/model.zt", &w))) {
    CHECK_OK(zt_writer_begin_object(w, "x", "dense", s2, 1));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_finish(w));
    zt_writer_free(w);
    CHECK(dir_entries("unfinished", NULL, 0) == 0);
  }
  CHECK(rmdir("unfinished") == 0);

  /* an existing file stays intact until finish replaces it */
  if (CHECK_OK(zt_test_create_v12("keep.zt", &w))) {
    CHECK_OK(zt_writer_add(w, "old", ZT_F32, s2, 1, two, 8, NULL));
    CHECK_OK(zt_writer_finish(w));
    zt_writer_free(w);
  }
  if (CHECK_OK(zt_test_create_v12("keep.zt", &w))) {
    CHECK_OK(zt_writer_add(w, "new", ZT_F32, s2, 1, other, 8, NULL));
    if ((r = open_ok("keep.zt")) != NULL) {
      size_t i;
      CHECK_OK(zt_object_find(r, "old", &i));
      zt_close(r);
    }
    zt_writer_free(w);
  }
  if ((r = open_ok("keep.zt")) != NULL) {
    size_t i;
    CHECK_U64(zt_object_count(r), 1);
    CHECK_OK(zt_object_find(r, "old", &i));
    zt_close(r);
  }
  if (CHECK_OK(zt_test_create_v12("keep.zt", &w))) {
    CHECK_OK(zt_writer_add(w, "new", ZT_F32, s2, 1, other, 8, NULL));
    CHECK_OK(zt_writer_finish(w));
    zt_writer_free(w);
  }
  if ((r = open_ok("keep.zt")) != NULL) {
    size_t i;
    float got[2];
    CHECK_U64(zt_object_count(r), 1);
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(r, "old", &i));
    CHECK_OK(zt_component_read(r, find_ok(r, "new"), "data", got, sizeof got));
    CHECK_MEM(got, other, sizeof got);
    zt_close(r);
  }

  /* a finish that fails (the directory vanished) is IO; then only free is valid */
  CHECK(mkdir("vanish", 0755) == 0);
  if (CHECK_OK(zt_test_create_v12("vanish/x.zt", &w))) {
    char temp[600];
    CHECK_OK(zt_writer_add(w, "x", ZT_F32, s2, 1, two, 8, NULL));
    if (CHECK(dir_entries("vanish", entry, sizeof entry) == 1)) {
      snprintf(temp, sizeof temp, "vanish/%s", entry);
      CHECK(unlink(temp) == 0);
    }
    CHECK(rmdir("vanish") == 0);
    CHECK_STATUS(ZT_ERR_IO, zt_writer_finish(w));
    CHECK_ERROR_MENTIONS("vanish");
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_add(w, "y", ZT_F32, s2, 1, two, 8, NULL));
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_finish(w));
    zt_writer_free(w);
    CHECK(!exists("vanish"));
  }

  /* the path names an existing directory (or ends in /): refused before any data is written */
  CHECK(mkdir("a_dir", 0755) == 0);
  w = NULL;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_test_create_v12("a_dir", &w));
  CHECK_ERROR_MENTIONS("a_dir");
  CHECK(w == NULL);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_test_create_v12("new_dir/", &w));
  CHECK(w == NULL);
  CHECK(rmdir("a_dir") == 0); /* still an empty directory */
  CHECK(dir_entries(".", NULL, 0) > 0);
  {
    /* and no temporary file was left behind in the working directory */
    DIR *d = opendir(".");
    struct dirent *e;
    int temps = 0;
    while (d != NULL && (e = readdir(d)) != NULL) {
      temps += strstr(e->d_name, ".tmp") != NULL;
    }
    if (d != NULL) {
      closedir(d);
    }
    CHECK(temps == 0);
  }

  /* paths are bytes: a Latin-1 name that is not UTF-8 */
  if (CHECK_OK(zt_test_create_v12("caf\xe9.zt", &w))) {
    CHECK_OK(zt_writer_finish(w));
    zt_writer_free(w);
    if ((r = open_ok("caf\xe9.zt")) != NULL) {
      const char *json = NULL;
      /* an empty file: no objects, no attributes */
      CHECK_U64(zt_object_count(r), 0);
      CHECK_STR(zt_file_version(r), "1.2.0");
      CHECK_OK(zt_file_get_attributes_json(r, &json));
      CHECK_STR(json, "{}");
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_get_attributes_json(r, 0, &json));
      CHECK_OK(zt_file_verify(r));
      zt_close(r);
    }
    CHECK(unlink("caf\xe9.zt") == 0);
  }
}

/* ------------------------------------------------------------------------------------ */
/* A file that shrinks under a pread reader: IO errors, never a crash                    */
/* ------------------------------------------------------------------------------------ */

static void test_shrunk_file(void) {
  size_t size = 0;
  unsigned char *file = zt_test_slurp("all.zt", &size);
  zt_open_options o;
  zt_reader *r = NULL;
  memset(&o, 0, sizeof o);
  o.flags = ZT_OPEN_NO_MMAP;
  if (!CHECK(file != NULL) || !CHECK(spit("shrink.zt", file, size))) {
    free(file);
    return;
  }
  free(file);
  if (CHECK_OK(zt_open_with("shrink.zt", &o, &r))) {
    int32_t crc[CRC_N];
    float z[ZSTD_N];
    zt_view v;
    const char *json = NULL;
    CHECK(truncate("shrink.zt", 128) == 0); /* keeps the first blob, [64, 112) */
    CHECK_STATUS(ZT_ERR_IO, zt_component_read(r, OBJ_CRC, "data", crc, sizeof crc));
    CHECK_ERROR_MENTIONS("crc_i32");
    CHECK_STATUS(ZT_ERR_IO, zt_component_view(r, OBJ_CRC, "data", &v));
    CHECK_STATUS(ZT_ERR_IO, zt_component_read_range(r, OBJ_CRC, "data", 4, crc, 8));
    CHECK_STATUS(ZT_ERR_IO, zt_component_read_as(r, OBJ_CRC, "data", ZT_I64, z, CRC_N * 8));
    CHECK_STATUS(ZT_ERR_IO, zt_component_verify(r, OBJ_CRC, "data"));
    CHECK_STATUS(ZT_ERR_IO, zt_component_read(r, OBJ_ZSTD, "data", z, sizeof z));
    CHECK_STATUS(ZT_ERR_IO, zt_file_verify(r));
    /* what was read at open is still there */
    CHECK_U64(zt_object_count(r), OBJ_COUNT);
    CHECK_OK(zt_file_get_attributes_json(r, &json));
    CHECK_STR(json, FILE_ATTRS_OUT);
    /* the first blob is still there */
    CHECK_OK(zt_component_read(r, 0, "data", z, N_EL * 8));
    CHECK_MEM(z, DTYPE_DATA[0], N_EL * 8);
    zt_close(r);
  }
}

/* ------------------------------------------------------------------------------------ */
/* Error messages carry their context                                                    */
/* ------------------------------------------------------------------------------------ */

/*
 * The contract: zt_last_error() has "context: file, object, component, offset". Errors
 * from decoding and digests name the object and component; these check the same for
 * buffer-size and range refusals, and for the writer's chunk checks.
 */
static void test_error_context(const char *path) {
  zt_reader *r = open_ok(path);
  zt_writer *w = NULL;
  unsigned char buf[64];
  const uint64_t s2[1] = {2};
  const uint8_t bad_bool[2] = {1, 2};
  const float two[2] = {1.0f, 2.0f};
  if (r != NULL) {
    /* messages made by the C layer name the file too */
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_object_find(r, "nope", &(size_t){0}));
    CHECK_STR(zt_last_error(), "all.zt: no object named 'nope'");
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_find(r, ZT_F32, "values", &(size_t){0}));
    CHECK_STR(zt_last_error(), "all.zt: object 'dtype_f32' has no 'values' component");
    {
      zt_component_info ci;
      CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_info(r, ZT_F32, 1, &ci));
      CHECK_STR(zt_last_error(), "all.zt: object 'dtype_f32' has no component at index 1");
    }
    /* controls: these already carry it */
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_read_as(r, ZT_F32, "data", ZT_I32, buf, 24));
    CHECK_ERROR_MENTIONS("dtype_f32");
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, ZT_F32, "data"));
    CHECK_ERROR_MENTIONS("dtype_f32");
    /* size and range refusals */
    CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read(r, ZT_F32, "data", buf, 23));
    CHECK_ERROR_MENTIONS("dtype_f32");
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read(r, ZT_F32, "data", buf, 25));
    CHECK_ERROR_MENTIONS("dtype_f32");
    CHECK_STATUS(ZT_ERR_BUFFER_TOO_SMALL, zt_component_read_as(r, ZT_BF16, "data", ZT_F32, buf, 4));
    CHECK_ERROR_MENTIONS("dtype_bf16");
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_read_range(r, OBJ_CSR, "indptr", 30, buf, 8));
    CHECK_ERROR_MENTIONS("csr");
    CHECK_ERROR_MENTIONS("indptr");
    zt_close(r);
  }
  if (CHECK_OK(zt_test_create_v12("context.zt", &w))) {
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add(w, "flags", ZT_BOOL, s2, 1, bad_bool, 2, NULL));
    CHECK_ERROR_MENTIONS("flags");
    CHECK_OK(zt_writer_begin_object(w, "obj", "dense", s2, 1));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_add_component(w, "data", ZT_F32, NULL, two, 7, NULL));
    CHECK_ERROR_MENTIONS("obj");
    CHECK_OK(zt_writer_begin_component(w, "mask", ZT_BOOL, NULL, NULL));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_write(w, bad_bool, 2));
    CHECK_ERROR_MENTIONS("mask");
    zt_writer_free(w);
  }
}

/* ------------------------------------------------------------------------------------ */
/* Files built byte by byte: v1.2 / v1.1 manifests with unusual or invalid content        */
/* ------------------------------------------------------------------------------------ */

/* A v1.x file: header, `blob` at offset 64, the manifest, its size and the footer. */
static void make_v1(const char *path, const void *blob, size_t blob_size, const bytes *manifest) {
  bytes f = {NULL, 0, 0};
  b_str(&f, "ZTEN1000");
  b_pad64(&f);
  b_put(&f, blob, blob_size);
  b_put(&f, manifest->p, manifest->n);
  b_u64le(&f, manifest->n);
  b_str(&f, "ZTEN1000");
  CHECK(spit(path, f.p, f.n));
  b_free(&f);
}

typedef struct comp_spec {
  const char *dtype, *type, *encoding, *digest; /* NULL: key absent */
  uint64_t offset, length, uncompressed_length;  /* uncompressed_length 0: absent */
} comp_spec;

/* {"version", ["attributes": <raw CBOR>], "objects": {"x": {shape, format, components: {role: c}}}} */
static void manifest_one(bytes *m, const char *version, const bytes *file_attrs, const char *format,
                         const uint64_t *shape, size_t ndim, const char *role, const comp_spec *c) {
  size_t i, nkeys = 3 + (c->type != NULL) + (c->encoding != NULL) + (c->digest != NULL) +
                    (c->uncompressed_length != 0);
  cb_map(m, file_attrs ? 3 : 2);
  cb_kv_text(m, "version", version);
  if (file_attrs) {
    cb_text(m, "attributes");
    b_put(m, file_attrs->p, file_attrs->n);
  }
  cb_text(m, "objects");
  cb_map(m, 1);
  cb_text(m, "x");
  cb_map(m, 3);
  cb_text(m, "shape");
  cb_array(m, ndim);
  for (i = 0; i < ndim; i++) {
    cb_uint(m, shape[i]);
  }
  cb_kv_text(m, "format", format);
  cb_text(m, "components");
  cb_map(m, 1);
  cb_text(m, role);
  cb_map(m, nkeys);
  cb_kv_text(m, "dtype", c->dtype);
  if (c->type) {
    cb_kv_text(m, "type", c->type);
  }
  cb_kv_uint(m, "offset", c->offset);
  cb_kv_uint(m, "length", c->length);
  if (c->encoding) {
    cb_kv_text(m, "encoding", c->encoding);
  }
  if (c->uncompressed_length) {
    cb_kv_uint(m, "uncompressed_length", c->uncompressed_length);
  }
  if (c->digest) {
    cb_kv_text(m, "digest", c->digest);
  }
}

/* Builds a one-object file and checks what zt_open says about it. */
static void crafted(const char *path, const char *version, const bytes *attrs, const char *format,
                    const uint64_t *shape, size_t ndim, const comp_spec *c, const void *blob, size_t blob_size,
                    uint32_t expected, const char *mention, int line) {
  bytes m = {NULL, 0, 0};
  zt_reader *r = NULL;
  manifest_one(&m, version, attrs, format, shape, ndim, "data", c);
  make_v1(path, blob, blob_size, &m);
  b_free(&m);
  if (zt_test_status(expected, (uint32_t)zt_open(path, &r), path, __FILE__, line) && mention != NULL) {
    zt_test_contains(zt_last_error(), mention, "zt_last_error()", __FILE__, line);
  }
  zt_close(r);
}

/* The stored (compressed) bytes of all.zt's "zstd_f32", which decode to ZSTD_DATA. */
static unsigned char *zstd_sample(size_t *length) {
  zt_reader *all = open_ok("all.zt");
  zt_component_info ci;
  size_t size = 0;
  unsigned char *file = zt_test_slurp("all.zt", &size), *out = NULL;
  *length = 0;
  if (all != NULL && file != NULL && CHECK_OK(zt_component_get_info(all, OBJ_ZSTD, 0, &ci))) {
    out = (unsigned char *)malloc((size_t)ci.length);
    memcpy(out, file + ci.offset, (size_t)ci.length);
    *length = (size_t)ci.length;
  }
  zt_close(all);
  free(file);
  return out;
}

static void test_crafted(void) {
  static const unsigned char blob[64] = {1, 2, 3, 4};
  const uint64_t s4[1] = {4}, s3[1] = {3}, s32[1] = {32}, s22[2] = {2, 2};
  comp_spec u8x4 = {"u8", NULL, NULL, NULL, 64, 4, 0};
  zt_reader *r = NULL;
  zt_open_options o;
  memset(&o, 0, sizeof o);

  crafted("ok.zt", "1.2.0", NULL, "dense", s4, 1, &u8x4, blob, 4, ZT_OK, NULL, __LINE__);
  crafted("v2.zt", "2.0.0", NULL, "dense", s4, 1, &u8x4, blob, 4, ZT_ERR_UNSUPPORTED, "2.0.0", __LINE__);
  {
    comp_spec c = u8x4;
    c.encoding = "lz4";
    crafted("lz4.zt", "1.2.0", NULL, "dense", s4, 1, &c, blob, 4, ZT_ERR_UNSUPPORTED, "lz4", __LINE__);
    c = u8x4;
    c.dtype = "f128";
    crafted("f128.zt", "1.2.0", NULL, "dense", s4, 1, &c, blob, 4, ZT_ERR_FORMAT, NULL, __LINE__);
    c = u8x4;
    c.offset = 72;
    crafted("misaligned.zt", "1.2.0", NULL, "dense", s4, 1, &c, blob, 16, ZT_ERR_FORMAT, "72", __LINE__);
    c = u8x4;
    c.length = 1000;
    crafted("past_end.zt", "1.2.0", NULL, "dense", s4, 1, &c, blob, 4, ZT_ERR_FORMAT, NULL, __LINE__);
    c = u8x4;
    crafted("shape.zt", "1.2.0", NULL, "dense", s3, 1, &c, blob, 4, ZT_ERR_FORMAT, NULL, __LINE__);
    c = u8x4;
    c.digest = "sha256:1234";
    crafted("bad_digest.zt", "1.2.0", NULL, "dense", s4, 1, &c, blob, 4, ZT_ERR_FORMAT, NULL, __LINE__);
    c = u8x4;
    c.encoding = "zstd";
    c.uncompressed_length = (uint64_t)100 << 30; /* over the default 64 GiB decode limit */
    crafted("huge.zt", "1.2.0", NULL, "dense", s4, 1, &c, blob, 4, ZT_ERR_LIMIT, NULL, __LINE__);
    c.uncompressed_length = 4;
    crafted("zstd_no_data.zt", "1.2.0", NULL, "my_format", s4, 1, &c, blob, 4, ZT_OK, NULL, __LINE__);
  }
  {
    /* attributes nested deeper than the default CBOR depth limit (128) */
    bytes deep = {NULL, 0, 0};
    int i;
    cb_map(&deep, 1);
    cb_text(&deep, "deep");
    for (i = 0; i < 200; i++) {
      cb_array(&deep, 1);
    }
    cb_uint(&deep, 0);
    crafted("deep.zt", "1.2.0", &deep, "dense", s4, 1, &u8x4, blob, 4, ZT_ERR_LIMIT, NULL, __LINE__);
    o.max_cbor_depth = 300;
    CHECK_OK(zt_open_with("deep.zt", &o, &r));
    zt_close(r);
    o.max_cbor_depth = 0;
    b_free(&deep);
  }
  {
    /* the manifest must be a map */
    bytes m = {NULL, 0, 0};
    cb_array(&m, 0);
    make_v1("array_manifest.zt", blob, 4, &m);
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open("array_manifest.zt", &r));
    b_free(&m);
  }
  {
    /* an unknown digest algorithm: opens, but can't be verified */
    comp_spec c = u8x4;
    c.digest = "md5:0123456789abcdef";
    crafted("md5.zt", "1.2.0", NULL, "dense", s4, 1, &c, blob, 4, ZT_OK, NULL, __LINE__);
    if ((r = open_ok("md5.zt")) != NULL) {
      zt_component_info ci;
      CHECK_OK(zt_component_get_info(r, 0, 0, &ci));
      CHECK_STR(ci.digest, "md5:0123456789abcdef");
      CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_component_verify(r, 0, "data"));
      CHECK_ERROR_MENTIONS("md5");
      CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_file_verify(r));
      zt_close(r);
    }
    o.flags = ZT_OPEN_VERIFY;
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_open_with("md5.zt", &o, &r));
    o.flags = 0;
  }
  {
    /* zstd bytes that are not zstd: FORMAT from every call that decodes them */
    unsigned char junk[16];
    char digest[80];
    comp_spec c = {"u8", NULL, "zstd", NULL, 64, 16, 32};
    memset(junk, 0xAA, sizeof junk);
    digest_string(ZT_DIGEST_CRC32C, junk, sizeof junk, digest);
    c.digest = digest;
    crafted("junk_zstd.zt", "1.2.0", NULL, "dense", s32, 1, &c, junk, sizeof junk, ZT_OK, NULL, __LINE__);
    if ((r = open_ok("junk_zstd.zt")) != NULL) {
      zt_view v;
      unsigned char out[64];
      memset(out, 0xAB, sizeof out);
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_view(r, 0, "data", &v));
      CHECK_ERROR_MENTIONS("zstd");
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_view(r, 0, "data", &v)); /* not cached as good */
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read(r, 0, "data", out, 32));
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_as(r, 0, "data", ZT_U16, out, 64));
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_range(r, 0, "data", 8, out, 4));
      CHECK_OK(zt_component_verify(r, 0, "data")); /* the digest covers the stored bytes */
      CHECK_OK(zt_file_verify(r));
      zt_close(r);
    }
  }
  {
    /* real zstd bytes (zstd_f32 of all.zt: 16384 bytes) under a wrong uncompressed_length */
    zt_reader *all = open_ok("all.zt");
    zt_component_info ci;
    size_t size = 0;
    unsigned char *file = zt_test_slurp("all.zt", &size);
    if (all != NULL && file != NULL && CHECK_OK(zt_component_get_info(all, OBJ_ZSTD, 0, &ci))) {
      const uint64_t s4000[1] = {4000}, s5000[1] = {5000};
      comp_spec c = {"f32", NULL, "zstd", NULL, 64, 0, 16000};
      unsigned char out[20000];
      c.length = ci.length;
      crafted("zstd_short.zt", "1.2.0", NULL, "dense", s4000, 1, &c, file + ci.offset, (size_t)ci.length, ZT_OK,
              NULL, __LINE__);
      if ((r = open_ok("zstd_short.zt")) != NULL) {
        zt_view v;
        CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read(r, 0, "data", out, 16000));
        CHECK_STATUS(ZT_ERR_FORMAT, zt_component_view(r, 0, "data", &v));
        /* range reads refuse exactly what reads refuse, wherever the range lies */
        CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_range(r, 0, "data", 100, out, 400));
        zt_close(r);
      }
      c.uncompressed_length = 20000;
      crafted("zstd_long.zt", "1.2.0", NULL, "dense", s5000, 1, &c, file + ci.offset, (size_t)ci.length, ZT_OK,
              NULL, __LINE__);
      if ((r = open_ok("zstd_long.zt")) != NULL) {
        CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read(r, 0, "data", out, 20000));
        CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_range(r, 0, "data", 16000, out, 1000));
        CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_range(r, 0, "data", 16000, out, 384));
        CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_range(r, 0, "data", 0, out, 4));
        zt_close(r);
      }
    }
    zt_close(all);
    free(file);
  }
  {
    /* offset 0 points at the header; two objects with one name */
    comp_spec c = u8x4;
    bytes m = {NULL, 0, 0};
    int k;
    c.offset = 0;
    crafted("offset0.zt", "1.2.0", NULL, "dense", s4, 1, &c, blob, 4, ZT_ERR_FORMAT, NULL, __LINE__);
    cb_map(&m, 2);
    cb_kv_text(&m, "version", "1.2.0");
    cb_text(&m, "objects");
    cb_map(&m, 2);
    for (k = 0; k < 2; k++) {
      cb_text(&m, "twin");
      cb_map(&m, 3);
      cb_text(&m, "shape");
      cb_array(&m, 1);
      cb_uint(&m, 4);
      cb_kv_text(&m, "format", "dense");
      cb_text(&m, "components");
      cb_map(&m, 1);
      cb_text(&m, "data");
      cb_map(&m, 3);
      cb_kv_text(&m, "dtype", "u8");
      cb_kv_uint(&m, "offset", 64);
      cb_kv_uint(&m, "length", 4);
    }
    make_v1("twins.zt", blob, 4, &m);
    b_free(&m);
    CHECK_STATUS(ZT_ERR_FORMAT, zt_open("twins.zt", &r));
    CHECK_ERROR_MENTIONS("twin");
  }
  {
    /* a directory is not a file; NO_MMAP reads it with pread */
    CHECK_STATUS(ZT_ERR_IO, zt_open(".", &r));
    o.flags = ZT_OPEN_NO_MMAP;
    CHECK_STATUS(ZT_ERR_IO, zt_open_with(".", &o, &r));
    o.flags = 0;
  }
  {
    /* v1.1: a dense zstd component may omit uncompressed_length (derived from the shape) */
    size_t zlen = 0;
    unsigned char *z = zstd_sample(&zlen);
    const uint64_t s6464[2] = {64, 64};
    comp_spec c = {"f32", NULL, "zstd", NULL, 64, 0, 0};
    c.length = zlen;
    crafted("v11_zstd.zt", "1.1.0", NULL, "dense", s6464, 2, &c, z, zlen, ZT_OK, NULL, __LINE__);
    if ((r = open_ok("v11_zstd.zt")) != NULL) {
      float *f = (float *)malloc(sizeof ZSTD_DATA);
      CHECK_OK(zt_component_read(r, 0, "data", f, sizeof ZSTD_DATA));
      CHECK_MEM(f, ZSTD_DATA, sizeof ZSTD_DATA);
      free(f);
      zt_close(r);
    }
    /* ... but not when the format gives no way to derive it */
    crafted("v11_zstd_custom.zt", "1.1.0", NULL, "custom", s6464, 2, &c, z, zlen, ZT_ERR_FORMAT,
            "uncompressed_length", __LINE__);
    free(z);
  }
  {
    /* v1.1 spelling of fp8 ("f8_e4m3" as the dtype) */
    comp_spec c = {"f8_e4m3", NULL, NULL, NULL, 64, 4, 0};
    static const float fp8_f32[4] = {1.0f, -1.0f, 448.0f, 0.001953125f};
    crafted("v11.zt", "1.1.0", NULL, "dense", s4, 1, &c, FP8_DATA, 4, ZT_OK, NULL, __LINE__);
    if ((r = open_ok("v11.zt")) != NULL) {
      zt_component_info ci;
      float f[4];
      CHECK_STR(zt_file_version(r), "1.1.0");
      CHECK_STR(zt_file_format(r), "zt");
      CHECK_OK(zt_component_get_info(r, 0, 0, &ci));
      CHECK_U64(ci.dtype, ZT_U8);
      CHECK_STR(ci.type, "f8_e4m3fn");
      CHECK_OK(zt_component_read_as(r, 0, "data", ZT_F32, f, sizeof f));
      CHECK_MEM(f, fp8_f32, sizeof f);
      zt_close(r);
    }
  }
  {
    /* a format of our own, and attribute values JSON has no direct form for */
    bytes a = {NULL, 0, 0};
    comp_spec c = u8x4;
    cb_map(&a, 5);
    cb_text(&a, "t");
    b_byte(&a, 0xC1); /* tag 1 */
    cb_uint(&a, 1000);
    cb_text(&a, "b");
    cb_head(&a, 2, 2);
    b_byte(&a, 1);
    b_byte(&a, 2);
    cb_uint(&a, 7); /* a non-text key */
    cb_text(&a, "seven");
    cb_text(&a, "neg");
    b_byte(&a, 0x20); /* -1 */
    cb_text(&a, "f");
    b_byte(&a, 0xF9); /* half-precision 1.5 */
    b_byte(&a, 0x3E);
    b_byte(&a, 0x00);
    crafted("custom.zt", "1.2.0", &a, "my_format", s22, 2, &c, blob, 4, ZT_OK, NULL, __LINE__);
    b_free(&a);
    if ((r = open_ok("custom.zt")) != NULL) {
      zt_object_info oi;
      const char *json = NULL;
      CHECK_OK(zt_object_get_info(r, 0, &oi));
      CHECK_STR(oi.format, "my_format");
      CHECK_OK(zt_object_validate(r, 0));
      CHECK_OK(zt_file_get_attributes_json(r, &json));
      CHECK_STR(json, "{\"t\":{\"$tag\":1,\"value\":1000},\"b\":{\"$bytes\":\"0102\"},\"7\":\"seven\","
                      "\"neg\":-1,\"f\":1.5}");
      zt_close(r);
    }
  }
}

/* ------------------------------------------------------------------------------------ */
/* Legacy v0.1 files, built byte by byte                                                 */
/* ------------------------------------------------------------------------------------ */

static void put_be32(bytes *b, float f) {
  uint32_t u = f32_bits(f);
  int i;
  for (i = 3; i >= 0; i--) {
    b_byte(b, (u >> (8 * i)) & 0xff);
  }
}

static const float LEG_A[4] = {1.0f, -2.5f, 3.25f, 65504.0f};
static const int16_t LEG_B[3] = {1, -2, 300};
static const uint64_t LEG_INDPTR[3] = {0, 1, 2}, LEG_INDICES[2] = {2, 0};
static const float LEG_VALUES[2] = {5.0f, 6.0f};

/* "ZTEN0001", 64-aligned blobs, a CBOR array of tensor maps, the 8-byte LE size. */
static size_t make_legacy(const char *path, const char *b_encoding, unsigned char **out) {
  bytes f = {NULL, 0, 0}, m = {NULL, 0, 0};
  char crc[80];
  int i;
  b_str(&f, "ZTEN0001");
  b_pad64(&f);
  for (i = 0; i < 4; i++) { /* offset 64: big-endian float32 */
    put_be32(&f, LEG_A[i]);
  }
  b_pad64(&f);
  b_put(&f, LEG_B, sizeof LEG_B); /* offset 128: little-endian int16 */
  digest_string(ZT_DIGEST_CRC32C, (const unsigned char *)LEG_B, sizeof LEG_B, crc);
  b_pad64(&f);
  b_put(&f, LEG_INDPTR, sizeof LEG_INDPTR); /* offset 192: CSR [indptr][indices][values] */
  b_put(&f, LEG_INDICES, sizeof LEG_INDICES);
  b_put(&f, LEG_VALUES, sizeof LEG_VALUES);

  cb_array(&m, 3);
  cb_map(&m, 8);
  cb_kv_text(&m, "name", "be_f32");
  cb_kv_uint(&m, "offset", 64);
  cb_kv_uint(&m, "size", 16);
  cb_kv_text(&m, "dtype", "float32");
  cb_text(&m, "shape");
  cb_array(&m, 2);
  cb_uint(&m, 2);
  cb_uint(&m, 2);
  cb_kv_text(&m, "encoding", "raw");
  cb_kv_text(&m, "layout", "dense");
  cb_kv_text(&m, "data_endianness", "big");

  cb_map(&m, 10);
  cb_kv_text(&m, "name", "le_i16");
  cb_kv_uint(&m, "offset", 128);
  cb_kv_uint(&m, "size", 6);
  cb_kv_text(&m, "dtype", "int16");
  cb_text(&m, "shape");
  cb_array(&m, 1);
  cb_uint(&m, 3);
  cb_kv_text(&m, "encoding", b_encoding);
  cb_kv_text(&m, "layout", "dense");
  cb_kv_text(&m, "data_endianness", "little");
  cb_kv_text(&m, "checksum", crc);
  cb_kv_text(&m, "author", "c-test"); /* a custom field: an attribute */

  cb_map(&m, 8);
  cb_kv_text(&m, "name", "csr");
  cb_kv_uint(&m, "offset", 192);
  cb_kv_uint(&m, "size", 48);
  cb_kv_text(&m, "dtype", "float32");
  cb_text(&m, "shape");
  cb_array(&m, 2);
  cb_uint(&m, 2);
  cb_uint(&m, 3);
  cb_kv_text(&m, "encoding", "raw");
  cb_kv_text(&m, "layout", "sparse");
  cb_kv_text(&m, "sparse_format", "csr");

  b_put(&f, m.p, m.n);
  b_u64le(&f, m.n);
  CHECK(spit(path, f.p, f.n));
  b_free(&m);
  *out = f.p;
  return f.n;
}

static void check_legacy_reader(zt_reader *r, int mapped) {
  zt_object_info oi;
  zt_component_info ci;
  zt_view v;
  float a[4], two[2];
  double d[4];
  int16_t b[3];
  const char *json = NULL;
  uint64_t u[3];
  CHECK_STR(zt_file_version(r), "0.1.0");
  CHECK_STR(zt_file_format(r), "zt");
  CHECK_U64(zt_object_count(r), 3);

  /* big-endian floats come out swapped, as a decoded copy */
  CHECK_OK(zt_object_get_info(r, 0, &oi));
  CHECK_STR(oi.name, "be_f32");
  CHECK_STR(oi.format, "dense");
  CHECK(oi.ndim == 2 && oi.shape[0] == 2 && oi.shape[1] == 2 && oi.component_count == 1);
  CHECK_OK(zt_component_get_info(r, 0, 0, &ci));
  CHECK_STR(ci.role, "data");
  CHECK(ci.dtype == ZT_F32 && ci.type == NULL && ci.encoding == ZT_ENCODING_RAW && ci.digest == NULL);
  CHECK(ci.offset == 64 && ci.length == 16 && ci.decoded_length == 16);
  CHECK_OK(zt_component_view(r, 0, "data", &v));
  CHECK(!v.zero_copy && is_aligned64(v.data) && v.size == 16 && v.dtype == ZT_F32);
  CHECK_MEM(v.data, LEG_A, 16);
  memset(a, 0, sizeof a);
  CHECK_OK(zt_component_read(r, 0, "data", a, sizeof a));
  CHECK_MEM(a, LEG_A, sizeof a);
  CHECK_OK(zt_component_read_range(r, 0, "data", 4, two, 8));
  CHECK_MEM(two, LEG_A + 1, 8);
  {
    unsigned char odd[6];
    CHECK_OK(zt_component_read_range(r, 0, "data", 1, odd, 6)); /* bytes of the swapped data */
    CHECK_MEM(odd, (const unsigned char *)LEG_A + 1, 6);
  }
  CHECK_OK(zt_component_read_as(r, 0, "data", ZT_F64, d, sizeof d));
  CHECK(d[0] == 1.0 && d[1] == -2.5 && d[2] == 3.25 && d[3] == 65504.0);
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_verify(r, 0, "data"));
  CHECK_OK(zt_object_get_attributes_json(r, 0, &json));
  CHECK_STR(json, "{}");

  /* little-endian int16: zero-copy when mapped; a checksum; a custom field */
  CHECK_OK(zt_object_get_info(r, 1, &oi));
  CHECK_STR(oi.name, "le_i16");
  CHECK_OK(zt_component_get_info(r, 1, 0, &ci));
  CHECK(ci.dtype == ZT_I16 && ci.offset == 128 && ci.length == 6);
  CHECK(ci.digest != NULL && strncmp(ci.digest, "crc32c:0x", 9) == 0);
  CHECK_OK(zt_component_view(r, 1, "data", &v));
  CHECK(v.zero_copy == mapped);
  CHECK_MEM(v.data, LEG_B, sizeof LEG_B);
  CHECK_OK(zt_component_read(r, 1, "data", b, sizeof b));
  CHECK_MEM(b, LEG_B, sizeof b);
  CHECK_OK(zt_component_verify(r, 1, "data"));
  CHECK_OK(zt_object_get_attributes_json(r, 1, &json));
  CHECK_STR(json, "{\"author\":\"c-test\"}");

  /* a legacy CSR blob appears as a sparse_csr object with three components */
  CHECK_OK(zt_object_get_info(r, 2, &oi));
  CHECK_STR(oi.format, "sparse_csr");
  CHECK(oi.ndim == 2 && oi.shape[0] == 2 && oi.shape[1] == 3);
  CHECK_U64(oi.component_count, 3);
  CHECK_OK(zt_component_read(r, 2, "values", two, sizeof two));
  CHECK_MEM(two, LEG_VALUES, sizeof two);
  CHECK_OK(zt_component_read(r, 2, "indices", u, 16));
  CHECK_MEM(u, LEG_INDICES, 16);
  CHECK_OK(zt_component_read(r, 2, "indptr", u, 24));
  CHECK_MEM(u, LEG_INDPTR, 24);
  CHECK_OK(zt_component_view(r, 2, "indptr", &v));
  CHECK(v.size == 24 && is_aligned64(v.data));
  CHECK_MEM(v.data, LEG_INDPTR, 24);
  CHECK_OK(zt_component_read_range(r, 2, "values", 4, two, 4));
  CHECK(two[0] == 6.0f);
  CHECK_OK(zt_object_validate(r, 2));
  CHECK_OK(zt_file_get_attributes_json(r, &json));
  CHECK_STR(json, "{}");
  CHECK_OK(zt_file_verify(r));
}

static void test_legacy(void) {
  unsigned char *file = NULL;
  size_t size = make_legacy("legacy.zt", "raw", &file);
  zt_reader *r = NULL;
  zt_open_options o;
  memset(&o, 0, sizeof o);
  if ((r = open_ok("legacy.zt")) != NULL) {
    check_legacy_reader(r, 1);
    zt_close(r);
  }
  o.flags = ZT_OPEN_NO_MMAP | ZT_OPEN_VERIFY;
  if (CHECK_OK(zt_open_with("legacy.zt", &o, &r))) {
    check_legacy_reader(r, 0);
    zt_close(r);
  }
  {
    unsigned char *mem = aligned_copy(file, size, 0);
    if (CHECK_OK(zt_open_memory(mem, size, &r))) {
      check_legacy_reader(r, 1);
      zt_close(r);
    }
    /* a corrupted checksummed blob */
    mem[129] ^= 0x01;
    if (CHECK_OK(zt_open_memory(mem, size, &r))) {
      CHECK_STATUS(ZT_ERR_CHECKSUM, zt_component_verify(r, 1, "data"));
      CHECK_ERROR_MENTIONS("le_i16");
      CHECK_STATUS(ZT_ERR_CHECKSUM, zt_file_verify(r));
      zt_close(r);
    }
    o.flags = ZT_OPEN_VERIFY;
    CHECK_STATUS(ZT_ERR_CHECKSUM, zt_open_memory_with(mem, size, &o, &r));
    free(mem);
  }
  free(file);

  /* an encoding this build doesn't know */
  make_legacy("legacy_lz4.zt", "lz4", &file);
  free(file);
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_open("legacy_lz4.zt", &r));
  CHECK_ERROR_MENTIONS("lz4");

  /* legacy zstd tensors, little- and big-endian (the decoded bytes are then swapped) */
  {
    size_t zlen = 0, i;
    unsigned char *z = zstd_sample(&zlen);
    bytes f = {NULL, 0, 0}, m = {NULL, 0, 0};
    const char *endian[2] = {"little", "big"};
    b_str(&f, "ZTEN0001");
    b_pad64(&f);
    b_put(&f, z, zlen);
    cb_array(&m, 2);
    for (i = 0; i < 2; i++) {
      cb_map(&m, 8);
      cb_kv_text(&m, "name", endian[i]);
      cb_kv_uint(&m, "offset", 64);
      cb_kv_uint(&m, "size", zlen);
      cb_kv_text(&m, "dtype", "float32");
      cb_text(&m, "shape");
      cb_array(&m, 2);
      cb_uint(&m, 64);
      cb_uint(&m, 64);
      cb_kv_text(&m, "encoding", "zstd");
      cb_kv_text(&m, "layout", "dense");
      cb_kv_text(&m, "data_endianness", endian[i]);
    }
    b_put(&f, m.p, m.n);
    b_u64le(&f, m.n);
    CHECK(spit("legacy_zstd.zt", f.p, f.n));
    if ((r = open_ok("legacy_zstd.zt")) != NULL) {
      unsigned char *got = (unsigned char *)malloc(sizeof ZSTD_DATA);
      unsigned char *swapped = (unsigned char *)malloc(sizeof ZSTD_DATA);
      zt_component_info ci;
      zt_view v;
      for (i = 0; i < sizeof ZSTD_DATA; i++) {
        swapped[i] = ((const unsigned char *)ZSTD_DATA)[(i & ~(size_t)3) + 3 - (i & 3)];
      }
      CHECK_OK(zt_component_get_info(r, 0, 0, &ci));
      CHECK(ci.encoding == ZT_ENCODING_ZSTD && ci.length == zlen && ci.decoded_length == sizeof ZSTD_DATA);
      CHECK_OK(zt_component_read(r, 0, "data", got, sizeof ZSTD_DATA));
      CHECK_MEM(got, ZSTD_DATA, sizeof ZSTD_DATA);
      CHECK_OK(zt_component_read(r, 1, "data", got, sizeof ZSTD_DATA));
      CHECK_MEM(got, swapped, sizeof ZSTD_DATA);
      CHECK_OK(zt_component_view(r, 1, "data", &v));
      CHECK(!v.zero_copy && v.size == sizeof ZSTD_DATA);
      CHECK_MEM(v.data, swapped, sizeof ZSTD_DATA);
      CHECK_OK(zt_component_read_range(r, 1, "data", 1001, got, 333));
      CHECK_MEM(got, swapped + 1001, 333);
      free(got);
      free(swapped);
      zt_close(r);
    }
    /* a zstd legacy sparse tensor records no decoded size: unsupported */
    m.n = 0;
    cb_array(&m, 1);
    cb_map(&m, 8);
    cb_kv_text(&m, "name", "sparse_zstd");
    cb_kv_uint(&m, "offset", 64);
    cb_kv_uint(&m, "size", zlen);
    cb_kv_text(&m, "dtype", "float32");
    cb_text(&m, "shape");
    cb_array(&m, 2);
    cb_uint(&m, 64);
    cb_uint(&m, 64);
    cb_kv_text(&m, "encoding", "zstd");
    cb_kv_text(&m, "layout", "sparse");
    cb_kv_text(&m, "sparse_format", "csr");
    f.n = 64 + zlen;
    b_put(&f, m.p, m.n);
    b_u64le(&f, m.n);
    CHECK(spit("legacy_sparse_zstd.zt", f.p, f.n));
    CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_open("legacy_sparse_zstd.zt", &r));
    b_free(&f);
    b_free(&m);
    free(z);
  }

  /* the smallest legacy file: no tensors, 17 bytes */
  {
    static const unsigned char empty[17] = {'Z', 'T', 'E', 'N', '0', '0', '0', '1', 0x80, 1, 0, 0, 0, 0, 0, 0, 0};
    CHECK(spit("legacy_empty.zt", empty, sizeof empty));
    if ((r = open_ok("legacy_empty.zt")) != NULL) {
      CHECK_STR(zt_file_version(r), "0.1.0");
      CHECK_U64(zt_object_count(r), 0);
      CHECK_OK(zt_file_verify(r));
      zt_close(r);
    }
    /* its size field pointing before the start */
    {
      unsigned char bad[17];
      memcpy(bad, empty, sizeof bad);
      bad[9] = 100;
      CHECK(spit("legacy_bad.zt", bad, sizeof bad));
      CHECK_STATUS(ZT_ERR_FORMAT, zt_open("legacy_bad.zt", &r));
      /* a manifest that is not an array */
      bad[8] = 0xA0; /* empty map */
      bad[9] = 1;
      CHECK(spit("legacy_bad.zt", bad, sizeof bad));
      CHECK_STATUS(ZT_ERR_FORMAT, zt_open("legacy_bad.zt", &r));
    }
  }
}

/* ------------------------------------------------------------------------------------ */
/* Reference vectors (<vectors>/reference/X.zt with X.json), when present                 */
/* ------------------------------------------------------------------------------------ */

/* A small JSON reader for the X.json expectations. */
typedef enum jkind { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jkind;
typedef struct jval {
  jkind kind;
  int boolean;
  double num;
  char *str; /* J_STR: UTF-8, NUL-terminated */
  size_t n;  /* J_ARR, J_OBJ: entries */
  struct jval *items;
  char **keys; /* J_OBJ */
} jval;

typedef struct jparser {
  const char *p;
  int failed;
} jparser;

static void j_ws(jparser *j) {
  while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t') {
    j->p++;
  }
}

static void j_utf8(bytes *b, unsigned long c) {
  if (c < 0x80) {
    b_byte(b, (unsigned)c);
  } else if (c < 0x800) {
    b_byte(b, 0xC0 | (unsigned)(c >> 6));
    b_byte(b, 0x80 | (unsigned)(c & 0x3F));
  } else if (c < 0x10000) {
    b_byte(b, 0xE0 | (unsigned)(c >> 12));
    b_byte(b, 0x80 | (unsigned)((c >> 6) & 0x3F));
    b_byte(b, 0x80 | (unsigned)(c & 0x3F));
  } else {
    b_byte(b, 0xF0 | (unsigned)(c >> 18));
    b_byte(b, 0x80 | (unsigned)((c >> 12) & 0x3F));
    b_byte(b, 0x80 | (unsigned)((c >> 6) & 0x3F));
    b_byte(b, 0x80 | (unsigned)(c & 0x3F));
  }
}

static unsigned long j_hex4(jparser *j) {
  unsigned long v = 0;
  int i;
  for (i = 0; i < 4; i++) {
    char c = *j->p++;
    v = v * 16 + (unsigned long)(c >= '0' && c <= '9'   ? c - '0'
                                 : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                 : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                        : (j->failed = 1, 0));
  }
  return v;
}

static char *j_string(jparser *j) {
  bytes b = {NULL, 0, 0};
  j->p++; /* opening quote */
  while (*j->p && *j->p != '"') {
    if (*j->p == '\\') {
      char e = j->p[1];
      j->p += 2;
      switch (e) {
        case 'n': b_byte(&b, '\n'); break;
        case 't': b_byte(&b, '\t'); break;
        case 'r': b_byte(&b, '\r'); break;
        case 'b': b_byte(&b, '\b'); break;
        case 'f': b_byte(&b, '\f'); break;
        case 'u': {
          unsigned long c = j_hex4(j);
          if (c >= 0xD800 && c < 0xDC00 && j->p[0] == '\\' && j->p[1] == 'u') {
            j->p += 2;
            c = 0x10000 + ((c - 0xD800) << 10) + (j_hex4(j) - 0xDC00);
          }
          j_utf8(&b, c);
          break;
        }
        default: b_byte(&b, (unsigned char)e); break;
      }
    } else {
      b_byte(&b, (unsigned char)*j->p++);
    }
  }
  if (*j->p != '"') {
    j->failed = 1;
  } else {
    j->p++;
  }
  b_byte(&b, 0);
  return (char *)b.p;
}

static void j_value(jparser *j, jval *out, int depth) {
  memset(out, 0, sizeof *out);
  j_ws(j);
  if (depth > 100 || j->failed) {
    j->failed = 1;
    return;
  }
  if (*j->p == '{' || *j->p == '[') {
    int obj = *j->p == '{';
    size_t cap = 0;
    out->kind = obj ? J_OBJ : J_ARR;
    j->p++;
    j_ws(j);
    if (*j->p == (obj ? '}' : ']')) {
      j->p++;
      return;
    }
    for (;;) {
      if (out->n == cap) {
        cap = cap ? cap * 2 : 8;
        out->items = (jval *)realloc(out->items, cap * sizeof(jval));
        if (obj) {
          out->keys = (char **)realloc(out->keys, cap * sizeof(char *));
        }
      }
      j_ws(j);
      if (obj) {
        if (*j->p != '"') {
          j->failed = 1;
          return;
        }
        out->keys[out->n] = j_string(j);
        j_ws(j);
        if (*j->p++ != ':') {
          j->failed = 1;
        }
      }
      j_value(j, &out->items[out->n], depth + 1);
      out->n++;
      if (j->failed) {
        return;
      }
      j_ws(j);
      if (*j->p == ',') {
        j->p++;
        continue;
      }
      if (*j->p == (obj ? '}' : ']')) {
        j->p++;
        return;
      }
      j->failed = 1;
      return;
    }
  } else if (*j->p == '"') {
    out->kind = J_STR;
    out->str = j_string(j);
  } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "false", 5) == 0) {
    out->kind = J_BOOL;
    out->boolean = *j->p == 't';
    j->p += out->boolean ? 4 : 5;
  } else if (strncmp(j->p, "null", 4) == 0) {
    out->kind = J_NULL;
    j->p += 4;
  } else {
    char *end = NULL;
    out->kind = J_NUM;
    out->num = strtod(j->p, &end);
    if (end == j->p) {
      j->failed = 1;
    } else {
      j->p = end;
    }
  }
}

static void j_free(jval *v) {
  size_t i;
  for (i = 0; i < v->n; i++) {
    j_free(&v->items[i]);
    if (v->keys) {
      free(v->keys[i]);
    }
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  memset(v, 0, sizeof *v);
}

/* Parses a whole document; 0 on a syntax error. */
static int j_parse(const char *text, jval *out) {
  jparser j;
  j.p = text;
  j.failed = 0;
  j_value(&j, out, 0);
  j_ws(&j);
  if (j.failed || *j.p != 0) {
    j_free(out);
    return 0;
  }
  return 1;
}

static const jval *j_get(const jval *obj, const char *key) {
  size_t i;
  if (obj == NULL || obj->kind != J_OBJ) {
    return NULL;
  }
  for (i = 0; i < obj->n; i++) {
    if (strcmp(obj->keys[i], key) == 0) {
      return &obj->items[i];
    }
  }
  return NULL;
}

/* Semantic equality: object keys in any order, numbers by value. */
static int j_equal(const jval *a, const jval *b) {
  size_t i;
  if (a->kind != b->kind) {
    return 0;
  }
  switch (a->kind) {
    case J_NULL: return 1;
    case J_BOOL: return a->boolean == b->boolean;
    case J_NUM: return a->num == b->num;
    case J_STR: return strcmp(a->str, b->str) == 0;
    case J_ARR:
      if (a->n != b->n) {
        return 0;
      }
      for (i = 0; i < a->n; i++) {
        if (!j_equal(&a->items[i], &b->items[i])) {
          return 0;
        }
      }
      return 1;
    case J_OBJ:
      if (a->n != b->n) {
        return 0;
      }
      for (i = 0; i < a->n; i++) {
        const jval *other = j_get(b, a->keys[i]);
        if (other == NULL || !j_equal(&a->items[i], other)) {
          return 0;
        }
      }
      return 1;
  }
  return 0;
}

static const char *j_str(const jval *v) { return v != NULL && v->kind == J_STR ? v->str : NULL; }

static int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Checks one component of a vector against its expectation. */
static void check_vector_component(zt_reader *r, size_t oi, const jval *c, const char *where) {
  const char *role = j_str(j_get(c, "role")), *dtype = j_str(j_get(c, "dtype"));
  const char *type = j_str(j_get(c, "type")), *enc = j_str(j_get(c, "encoding"));
  const char *digest = j_str(j_get(c, "digest")), *hex = j_str(j_get(c, "data_hex"));
  size_t ci = 0, n, i;
  zt_component_info info;
  unsigned char *want, *got;
  zt_view v;
  if (!CHECK(role != NULL && dtype != NULL && hex != NULL)) {
    return;
  }
  if (!CHECK_OK(zt_component_find(r, oi, role, &ci))) {
    fprintf(stderr, "  (%s component '%s')\n", where, role);
    return;
  }
  CHECK_OK(zt_component_get_info(r, oi, ci, &info));
  if (!CHECK_U64(info.dtype, dtype_from_name(dtype)) || !CHECK_STR(info.type, type) ||
      !CHECK_U64(info.encoding, enc && strcmp(enc, "zstd") == 0 ? ZT_ENCODING_ZSTD : ZT_ENCODING_RAW) ||
      !CHECK_STR(info.digest, digest)) {
    fprintf(stderr, "  (%s component '%s')\n", where, role);
  }
  n = strlen(hex) / 2;
  want = (unsigned char *)malloc(n + 1);
  got = (unsigned char *)malloc(n + 1);
  for (i = 0; i < n; i++) {
    want[i] = (unsigned char)(hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
  }
  CHECK_U64(info.decoded_length, n);
  if (CHECK_OK(zt_component_read(r, oi, role, n ? got : NULL, n))) {
    if (!CHECK_MEM(got, want, n)) {
      fprintf(stderr, "  (%s component '%s')\n", where, role);
    }
  }
  if (CHECK_OK(zt_component_view(r, oi, role, &v))) {
    CHECK_U64(v.size, n);
    CHECK(n == 0 || is_aligned64(v.data));
    CHECK_MEM(v.data, want, n);
  }
  if (n > 0) {
    /* ranges: the second half, an odd slice in the middle, the last byte */
    size_t offs[3], lens[3], k;
    offs[0] = n / 2, lens[0] = n - n / 2;
    offs[1] = n / 3, lens[1] = n / 3 + (n > 2);
    offs[2] = n - 1, lens[2] = 1;
    for (k = 0; k < 3; k++) {
      if (CHECK_OK(zt_component_read_range(r, oi, role, offs[k], got, lens[k])) &&
          !CHECK_MEM(got, want + offs[k], lens[k])) {
        fprintf(stderr, "  (%s component '%s' range [%zu, +%zu))\n", where, role, offs[k], lens[k]);
      }
    }
  }
  if (digest != NULL) {
    CHECK_OK(zt_component_verify(r, oi, role));
  }
  free(want);
  free(got);
}

static void check_vector_reader(zt_reader *r, const jval *doc, const char *stem);

static int check_vector(const char *dir, const char *stem) {
  char path[1600];
  size_t size = 0;
  char *text;
  jval doc;
  zt_reader *r = NULL;
  zt_open_options o;
  snprintf(path, sizeof path, "%s/%s.json", dir, stem);
  text = (char *)zt_test_slurp(path, &size);
  if (!CHECK(text != NULL) || !CHECK(j_parse(text, &doc))) {
    fprintf(stderr, "  (can't read %s)\n", path);
    free(text);
    return 0;
  }
  free(text);
  snprintf(path, sizeof path, "%s/%s.zt", dir, stem);
  /* mapped, then with pread */
  if (CHECK_OK(zt_open(path, &r))) {
    check_vector_reader(r, &doc, stem);
    zt_close(r);
  }
  memset(&o, 0, sizeof o);
  o.flags = ZT_OPEN_NO_MMAP | ZT_OPEN_VERIFY;
  if (CHECK_OK(zt_open_with(path, &o, &r))) {
    check_vector_reader(r, &doc, stem);
    zt_close(r);
  }
  j_free(&doc);
  return 1;
}

static void check_vector_reader(zt_reader *r, const jval *doc, const char *stem) {
  char where[600];
  size_t i, k;
  const jval *objects, *attrs;
  const char *json = NULL;
  jval got;
  CHECK_STR(zt_file_version(r), j_str(j_get(doc, "version")));
  attrs = j_get(doc, "attributes");
  if (CHECK_OK(zt_file_get_attributes_json(r, &json)) && CHECK(j_parse(json, &got))) {
    if (!CHECK(attrs != NULL && j_equal(&got, attrs))) {
      fprintf(stderr, "  (%s file attributes: %s)\n", stem, json);
    }
    j_free(&got);
  }
  objects = j_get(doc, "objects");
  if (CHECK(objects != NULL && objects->kind == J_ARR)) {
    CHECK_U64(zt_object_count(r), objects->n);
    for (i = 0; i < objects->n; i++) {
      const jval *o = &objects->items[i], *shape = j_get(o, "shape"), *comps = j_get(o, "components");
      const char *name = j_str(j_get(o, "name"));
      size_t oi = 0;
      zt_object_info info;
      snprintf(where, sizeof where, "%s object '%s'", stem, name ? name : "?");
      if (!CHECK(name != NULL) || !CHECK_OK(zt_object_find(r, name, &oi))) {
        fprintf(stderr, "  (%s)\n", where);
        continue;
      }
      CHECK_OK(zt_object_get_info(r, oi, &info));
      if (!CHECK_STR(info.format, j_str(j_get(o, "format")))) {
        fprintf(stderr, "  (%s)\n", where);
      }
      if (CHECK(shape != NULL && shape->kind == J_ARR && info.ndim == shape->n)) {
        for (k = 0; k < shape->n; k++) {
          CHECK_U64(info.shape[k], (uint64_t)shape->items[k].num);
        }
      }
      if (CHECK_OK(zt_object_get_attributes_json(r, oi, &json)) && CHECK(j_parse(json, &got))) {
        if (!CHECK(j_get(o, "attributes") != NULL && j_equal(&got, j_get(o, "attributes")))) {
          fprintf(stderr, "  (%s attributes: %s)\n", where, json);
        }
        j_free(&got);
      }
      if (CHECK(comps != NULL && comps->kind == J_ARR)) {
        CHECK_U64(info.component_count, comps->n);
        for (k = 0; k < comps->n; k++) {
          check_vector_component(r, oi, &comps->items[k], where);
        }
      }
      CHECK_OK(zt_object_validate(r, oi));
    }
  }
  CHECK_OK(zt_file_verify(r));
}

static void test_vectors(const char *vectors) {
  char dir[1024], zt[1600];
  DIR *d;
  struct dirent *e;
  int legacy = 0, current = 0;
  snprintf(dir, sizeof dir, "%s/reference", vectors);
  {
    /* the JSON reader itself */
    jval a, b;
    CHECK(j_parse("{\"x\":[1,2.50,{\"y\":null}],\"s\":\"\\u00df\\ud83d\\ude00\",\"t\":true}", &a));
    CHECK(j_parse(" {\"t\":true,\"s\":\"\xc3\x9f\xf0\x9f\x98\x80\",\"x\":[1.0,2.5,{\"y\":null}]} ", &b));
    CHECK(j_equal(&a, &b));
    j_free(&a);
    j_free(&b);
    CHECK(!j_parse("{\"x\":", &a));
  }
  d = opendir(dir);
  if (d == NULL) {
    printf("note: %s is missing: no reference vectors checked\n", dir);
    return;
  }
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    char stem[512];
    if (n < 6 || n >= sizeof stem || strcmp(e->d_name + n - 5, ".json") != 0) {
      continue;
    }
    if (strncmp(e->d_name, "v01_", 4) != 0 && strncmp(e->d_name, "v12_", 4) != 0) {
      continue;
    }
    memcpy(stem, e->d_name, n - 5);
    stem[n - 5] = 0;
    snprintf(zt, sizeof zt, "%s/%s.zt", dir, stem);
    if (!exists(zt)) {
      continue;
    }
    if (check_vector(dir, stem)) {
      if (stem[1] == '0') {
        legacy++;
      } else {
        current++;
      }
    }
  }
  closedir(d);
  printf("note: checked %d legacy v0.1 and %d v1.2 reference vectors in %s\n", legacy, current, dir);
}

/* ------------------------------------------------------------------------------------ */
/* Coverage guard: every function the header declares is exercised above                 */
/* ------------------------------------------------------------------------------------ */

static const char *const TESTED[] = {
    "zt_version", "zt_status_name", "zt_last_error", "zt_open", "zt_open_with", "zt_open_memory",
    "zt_open_memory_with", "zt_close", "zt_file_version", "zt_file_format", "zt_object_count", "zt_object_find",
    "zt_object_get_info", "zt_component_get_info", "zt_component_find", "zt_component_view",
    "zt_component_read", "zt_component_read_as", "zt_component_read_range", "zt_component_verify",
    "zt_file_verify", "zt_object_validate", "zt_file_get_attributes_json", "zt_object_get_attributes_json",
    "zt_writer_create", "zt_writer_add",
    "zt_writer_begin_object", "zt_writer_add_component", "zt_writer_end_object", "zt_writer_begin_component",
    "zt_writer_write", "zt_writer_end_component", "zt_writer_set_file_attributes_json", "zt_writer_set_object_attributes_json", "zt_writer_finish",
    "zt_writer_free", "zt_dtype_get_size", "zt_dtype_name", "zt_dtype_find", "zt_version_number"};

/* Functions tested in the other C tests, with the file that does. */
static const char *const TESTED_ELSEWHERE[] = {
    "zt_writer_copy_object", /* test_copy.c */
    "zt_last_os_error",      /* test_copy_on_write.c */
    "zt_path_is_url",        /* test_copy_on_write.c */
    "zt_writer_declare",         /* test_v2.c */
    "zt_writer_declare_data",    /* test_v2.c */
    "zt_writer_declared_order",  /* test_v2.c */
    "zt_file_get_names",     /* test_listing.c */
    "zt_file_get_objects",   /* test_listing.c */
    "zt_file_get_columns",   /* test_listing.c */
    "zt_file_get_runs",      /* test_listing.c */
    "zt_open_url_with",           /* test_remote.c */
    "zt_file_get_remote_stats",       /* test_remote.c */
    "zt_open_fd_with",            /* test_loader.c */
    "zt_object_prefetch",    /* test_loader.c */
    "zt_object_evict",     /* test_loader.c */
    "zt_batch_load",         /* test_loader.c */
    "zt_writer_create_with", /* test_durability.c */
    "zt_file_get_content_digest", /* test_v2.c */
    "zt_object_get_quant_info",   /* test_quant.c */
    "zt_object_get_ggml_type",    /* test_quant.c */
    "zt_file_get_layout",         /* test_quant.c */
    "zt_component_read_as_range", /* test_quant.c */
    "zt_component_get_frame_count", /* test_frames.c */
    "zt_component_get_frame",   /* test_frames.c */
    "zt_file_get_attributes", /* test_attributes_typed.c */
    "zt_object_get_attributes", /* test_attributes_typed.c */
    "zt_file_find_attribute", /* test_attributes_typed.c */
    "zt_object_find_attribute", /* test_attributes_typed.c */
    "zt_value_get_type", /* test_attributes_typed.c */
    "zt_value_type_name", /* test_attributes_typed.c */
    "zt_value_get_bool", /* test_attributes_typed.c */
    "zt_value_get_i8", /* test_attributes_typed.c */
    "zt_value_get_i16", /* test_attributes_typed.c */
    "zt_value_get_i32", /* test_attributes_typed.c */
    "zt_value_get_i64", /* test_attributes_typed.c */
    "zt_value_get_u8", /* test_attributes_typed.c */
    "zt_value_get_u16", /* test_attributes_typed.c */
    "zt_value_get_u32", /* test_attributes_typed.c */
    "zt_value_get_u64", /* test_attributes_typed.c */
    "zt_value_get_f32", /* test_attributes_typed.c */
    "zt_value_get_f64", /* test_attributes_typed.c */
    "zt_value_get_string", /* test_attributes_typed.c */
    "zt_value_get_bytes", /* test_attributes_typed.c */
    "zt_value_get_count", /* test_attributes_typed.c */
    "zt_value_get_array_type", /* test_attributes_typed.c */
    "zt_value_get_array_data", /* test_attributes_typed.c */
    "zt_value_get_element", /* test_attributes_typed.c */
    "zt_value_get_element_string", /* test_attributes_typed.c */
    "zt_value_get_entry", /* test_attributes_typed.c */
    "zt_value_find", /* test_attributes_typed.c */
    "zt_shard_count",           /* test_shards.c */
    "zt_shard_get_layout",      /* test_shards.c */
    "zt_cuda_create", /* test_device_load.c */
    "zt_cuda_create_with", /* test_device_load.c */
    "zt_cuda_free", /* test_device_load.c */
    "zt_cuda_get_device", /* test_device_load.c */
    "zt_cuda_alloc_memory", /* test_device_load.c */
    "zt_cuda_free_memory", /* test_device_load.c */
    "zt_cuda_copy_to_host", /* test_device_load.c */
    "zt_cuda_synchronize", /* test_device_load.c */
    "zt_loader_create", /* test_device_load.c */
    "zt_loader_create_with", /* test_device_load.c */
    "zt_loader_free", /* test_device_load.c */
    "zt_loader_load", /* test_device_load.c */
    "zt_loader_cancel", /* test_device_load.c */
    "zt_loader_get_stats", /* test_device_load.c */
    "zt_loader_get_request_size", /* test_loader.c */
    "zt_pool_set_threads",      /* test_pool.c */
    "zt_pool_thread_count",     /* test_pool.c */
    "zt_shard_get_path",            /* test_shards.c */
    "zt_component_get_location",    /* test_shards.c */
    "zt_shard_get_mapping",         /* test_shards.c */
    "zt_writer_create_sharded_with", /* test_shards.c */
    "zt_value_create_null", /* test_attributes_write.c */
    "zt_value_create_bool", /* test_attributes_write.c */
    "zt_value_create_i8", /* test_attributes_write.c */
    "zt_value_create_i16", /* test_attributes_write.c */
    "zt_value_create_i32", /* test_attributes_write.c */
    "zt_value_create_i64", /* test_attributes_write.c */
    "zt_value_create_u8", /* test_attributes_write.c */
    "zt_value_create_u16", /* test_attributes_write.c */
    "zt_value_create_u32", /* test_attributes_write.c */
    "zt_value_create_u64", /* test_attributes_write.c */
    "zt_value_create_f32", /* test_attributes_write.c */
    "zt_value_create_f64", /* test_attributes_write.c */
    "zt_value_create_string", /* test_attributes_write.c */
    "zt_value_create_bytes", /* test_attributes_write.c */
    "zt_value_create_array_data", /* test_attributes_write.c */
    "zt_value_create_string_array", /* test_attributes_write.c */
    "zt_value_create_array", /* test_attributes_write.c */
    "zt_value_create_map", /* test_attributes_write.c */
    "zt_value_free", /* test_attributes_write.c */
    "zt_writer_set_file_attribute", /* test_attributes_write.c */
    "zt_writer_set_object_attribute", /* test_attributes_write.c */
    "zt_writer_set_file_attributes", /* test_attributes_write.c */
    "zt_writer_set_object_attributes", /* test_attributes_write.c */
};

/* Reads <repo>/include/ztensor.h and checks each declared zt_ function is in TESTED. */
static void test_header_coverage(const char *vectors) {
  char path[1200];
  size_t size = 0, declared = 0;
  char *text, *line;
  snprintf(path, sizeof path, "%s/../../include/ztensor.h", vectors);
  text = (char *)zt_test_slurp(path, &size);
  if (text == NULL) {
    printf("note: %s not found: header coverage not checked\n", path);
    return;
  }
  for (line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    char *p = line, *name;
    while (*p == ' ') {
      p++;
    }
    if (*p == '*' || strncmp(p, "/*", 2) == 0 || strncmp(p, "//", 2) == 0 || *p == '#') {
      continue; /* comments and macros */
    }
    for (name = strstr(p, "zt_"); name != NULL; name = strstr(name + 1, "zt_")) {
      size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz_0123456789"), i;
      int known = 0;
      if (name[n] != '(' || (name > p && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z')))) {
        continue;
      }
      declared++;
      for (i = 0; i < sizeof TESTED / sizeof TESTED[0]; i++) {
        known |= strlen(TESTED[i]) == n && strncmp(TESTED[i], name, n) == 0;
      }
      for (i = 0; i < sizeof TESTED_ELSEWHERE / sizeof TESTED_ELSEWHERE[0]; i++) {
        known |= strlen(TESTED_ELSEWHERE[i]) == n && strncmp(TESTED_ELSEWHERE[i], name, n) == 0;
      }
      zt_test_report(known, __FILE__, __LINE__, "the header declares %.*s(), which no C test tests", (int)n,
                     name);
    }
  }
  CHECK_U64(declared, sizeof TESTED / sizeof TESTED[0] + sizeof TESTED_ELSEWHERE / sizeof TESTED_ELSEWHERE[0]);
  free(text);
}

/* ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  const uint16_t one = 1;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <repo>/tests/vectors  (run in an empty scratch directory)\n", argv[0]);
    return 2;
  }
  if (*(const unsigned char *)&one != 1) {
    fprintf(stderr, "these tests assume a little-endian host\n");
    return 2;
  }
  make_expected();
  test_library();
  test_dtypes_and_version_number();
  write_all("all.zt");
  test_read_all("all.zt");
  test_read_as("all.zt");
  test_reader_errors("all.zt");
  test_read_range("all.zt");
  test_open_options("all.zt");
  test_open_memory("all.zt");
  test_digests_and_corruption();
  test_writer_errors();
  test_writer_files();
  test_shrunk_file();
  test_error_context("all.zt");
  test_crafted();
  test_legacy();
  test_vectors(argv[1]);
  test_header_coverage(argv[1]);
  return zt_test_summary();
}
