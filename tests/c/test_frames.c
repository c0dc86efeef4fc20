/*
 * The frame index of zstd components from C: zt_component_get_frame_count / _get on a file of
 * our writer (frames of 4 MiB and a seek table), range reads at and across every frame
 * boundary in mapped, pread and memory readers, and seek tables that lie: ZT_ERR_FORMAT
 * for the index and for range reads (never a wrong byte or a read out of bounds), while
 * whole reads, which skip the table as any zstd decoder does, still work.
 */
#include "zt_test.h"

#include <unistd.h>

#define FRAME ((size_t)4 << 20)
#define LEN (2 * FRAME + 1000)
/* Skippable header, 3 entries of 8 bytes, footer. */
#define TABLE (8 + 3 * 8 + 9)

static unsigned char *data;

static void write_file(const char *path) {
  zt_writer *w = NULL;
  uint64_t shape[1] = {LEN};
  zt_write_options zstd = {ZT_ENCODING_ZSTD, 1, ZT_DIGEST_NONE};
  unsigned char raw[4] = {1, 2, 3, 4};
  uint64_t raw_shape[1] = {4};
  size_t i;
  uint32_t x = 12345;
  for (i = 0; i < LEN; i++) {
    x = x * 1103515245u + 12345u;
    data[i] = (unsigned char)((x >> 16) & 0x0f);
  }
  CHECK_OK(zt_test_create_v12(path, &w));
  CHECK_OK(zt_writer_add(w, "z", ZT_U8, shape, 1, data, LEN, &zstd));
  CHECK_OK(zt_writer_add(w, "raw", ZT_U8, raw_shape, 1, raw, sizeof raw, NULL));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
}

/* Reads [a, b) and compares it with the data. */
static void check_range(const zt_reader *r, uint64_t a, uint64_t b) {
  size_t n = (size_t)(b - a);
  unsigned char *dst = malloc(n);
  if (!CHECK(dst != NULL)) return;
  memset(dst, 0xEE, n);
  if (CHECK_OK(zt_component_read_range(r, 0, "data", a, dst, n))) CHECK_MEM(dst, data + a, n);
  free(dst);
}

/* The index of a sound file, and range reads around and across its frame boundaries. */
static void check_reader(const zt_reader *r, const unsigned char *file) {
  zt_component_info ci;
  zt_frame_info f[3], none;
  size_t count = 0, i;
  uint64_t at = 0, decoded = 0, b;
  static const unsigned char magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  CHECK_OK(zt_component_get_info(r, 0, 0, &ci));
  CHECK_OK(zt_component_get_frame_count(r, 0, "data", &count));
  CHECK_U64(count, 3);
  at = ci.offset;
  for (i = 0; i < 3; i++) {
    if (!CHECK_OK(zt_component_get_frame(r, 0, "data", i, &f[i]))) return;
    CHECK_U64(f[i].offset, at);
    CHECK_U64(f[i].decoded_offset, decoded);
    CHECK_U64(f[i].decoded_length, i < 2 ? FRAME : 1000);
    /* A loader fetches [offset, offset + length) itself: a whole zstd frame. */
    CHECK_MEM(file + f[i].offset, magic, 4);
    at += f[i].length;
    decoded += f[i].decoded_length;
  }
  /* The frames, then the seek table, fill the component. */
  CHECK_U64(at + TABLE, ci.offset + ci.length);
  CHECK_U64(decoded, LEN);
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_frame(r, 0, "data", 3, &none));
  CHECK_ERROR_MENTIONS("no frame 3: the component has 3 frames");
  for (i = 0; i < 3; i++) {
    b = f[i].decoded_offset;
    if (b > 0) check_range(r, b - 1, b + 1);
    check_range(r, b, b + 1);
    check_range(r, b, b + f[i].decoded_length);
    if (b + 5000 <= LEN && b >= 5000) check_range(r, b - 5000, b + 5000);
  }
  check_range(r, LEN - 1, LEN);
  check_range(r, FRAME / 2, FRAME + FRAME + 500); /* across two boundaries */
  check_range(r, 0, LEN);
}

static void test_sound(const unsigned char *file, size_t size) {
  zt_reader *r = NULL;
  zt_open_options pread = {0};
  size_t count = 0;
  zt_frame_info f;
  pread.flags = ZT_OPEN_NO_MMAP;
  if (CHECK_OK(zt_open("frames.zt", &r))) check_reader(r, file);
  zt_close(r);
  r = NULL;
  if (CHECK_OK(zt_open_with("frames.zt", &pread, &r))) check_reader(r, file);
  zt_close(r);
  r = NULL;
  if (!CHECK_OK(zt_open_memory(file, size, &r))) return;
  check_reader(r, file);
  /* Argument checks, and components without frames. */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_frame_count(NULL, 0, "data", &count));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_frame_count(r, 0, "data", NULL));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_frame_count(r, 0, NULL, &count));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_frame(r, 0, "data", 0, NULL));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_frame_count(r, 0, "nope", &count));
  CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_component_get_frame(r, 7, "data", 0, &f));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_component_get_frame_count(r, 1, "data", &count));
  CHECK_ERROR_MENTIONS("not stored as zstd frames of its bytes (encoding raw)");
  zt_close(r);
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

/* A copy of the file whose table is edited by `edit` (given the table's first byte). */
typedef void (*edit_fn)(unsigned char *table);

static void count_huge(unsigned char *t) { put32(t + TABLE - 9, 0xFFFFFFFFu); }
static void count_short(unsigned char *t) { put32(t + TABLE - 9, 2); }
static void decoded_sum(unsigned char *t) { put32(t + 8 + 4, le32(t + 8 + 4) + 1); }
static void stored_past_end(unsigned char *t) { put32(t + 8 + 8, 0xFFFFFFF0u); }
static void zero_frame(unsigned char *t) { put32(t + 8 + 16, 0); }
static void reserved_bits(unsigned char *t) { t[TABLE - 5] = 0x20; }
static void checksum_flag(unsigned char *t) { t[TABLE - 5] = 0x80; }
static void skippable_size(unsigned char *t) { put32(t + 4, le32(t + 4) - 8); }

static void test_lies(const unsigned char *file, size_t size, uint64_t table_at) {
  static const struct {
    const char *what;
    edit_fn edit;
    const char *message;
  } lies[] = {
      {"count past the start", count_huge, "4294967295 frames need a 34359738377-byte table"},
      {"count short", count_short, "2 frames, but the table frame at byte"},
      {"decoded sizes disagree", decoded_sum, "decode to 8389609 bytes, but the component has 8389608"},
      {"a size past the end", stored_past_end, "bytes precede the table"},
      {"a zero-sized frame", zero_frame, "frame 2 has a compressed size of 0"},
      {"reserved bits", reserved_bits, "descriptor 0x20 sets reserved bits"},
      {"a checksum flag without checksums", checksum_flag, "3 frames, but the table frame at byte"},
      {"the table frame's size", skippable_size, "and size 25 (expected 0x184d2a5e and 33)"},
  };
  unsigned char *copy = malloc(size);
  unsigned char *whole = malloc(LEN);
  unsigned char b[64];
  size_t i, count;
  if (!CHECK(copy != NULL && whole != NULL)) {
    free(copy);
    free(whole);
    return;
  }
  for (i = 0; i < sizeof lies / sizeof lies[0]; i++) {
    zt_reader *r = NULL;
    memcpy(copy, file, size);
    lies[i].edit(copy + table_at);
    if (!CHECK_OK(zt_open_memory(copy, size, &r))) continue;
    CHECK_STATUS(ZT_ERR_FORMAT, zt_component_get_frame_count(r, 0, "data", &count));
    CHECK_ERROR_MENTIONS("zstd seek table: ");
    CHECK_ERROR_MENTIONS(lies[i].message);
    CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_range(r, 0, "data", FRAME - 10, b, sizeof b));
    CHECK_ERROR_MENTIONS("object 'z' component 'data': zstd seek table: ");
    if (lies[i].edit != skippable_size) {
      /* The table is a skippable frame: whole reads never look inside it. */
      memset(whole, 0, LEN);
      if (CHECK_OK(zt_component_read(r, 0, "data", whole, LEN))) CHECK_MEM(whole, data, LEN);
    }
    zt_close(r);
  }
  /* Sizes that add up but misplace the boundaries: each frame's header says where it is,
     so the index is refused, naming the frame; no range reads; whole reads do. */
  {
    zt_reader *r = NULL;
    unsigned char *t = copy + table_at;
    uint32_t c0, c1;
    memcpy(copy, file, size);
    c0 = le32(t + 8);
    c1 = le32(t + 16);
    put32(t + 8, c0 + 7);
    put32(t + 16, c1 - 7);
    if (CHECK_OK(zt_open_memory(copy, size, &r))) {
      zt_frame_info f;
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_get_frame_count(r, 0, "data", &count));
      CHECK_ERROR_MENTIONS("zstd seek table: frame 1 (stored bytes ");
      CHECK_ERROR_MENTIONS("no zstd frame starts there");
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_get_frame(r, 0, "data", 1, &f));
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_range(r, 0, "data", 0, whole, FRAME));
      CHECK_STATUS(ZT_ERR_FORMAT, zt_component_read_range(r, 0, "data", 2 * FRAME, whole, 1000));
      memset(whole, 0, LEN);
      if (CHECK_OK(zt_component_read(r, 0, "data", whole, LEN))) CHECK_MEM(whole, data, LEN);
      zt_close(r);
    }
  }
  free(copy);
  free(whole);
}

int main(void) {
  unsigned char *file;
  size_t size = 0;
  zt_reader *r = NULL;
  zt_component_info ci;
  data = malloc(LEN);
  if (!CHECK(data != NULL)) return zt_test_summary();
  write_file("frames.zt");
  file = zt_test_slurp("frames.zt", &size);
  if (CHECK(file != NULL) && CHECK_OK(zt_open_memory(file, size, &r)) &&
      CHECK_OK(zt_component_get_info(r, 0, 0, &ci))) {
    zt_close(r);
    test_sound(file, size);
    test_lies(file, size, ci.offset + ci.length - TABLE);
  }
  free(file);
  free(data);
  unlink("frames.zt");
  return zt_test_summary();
}
