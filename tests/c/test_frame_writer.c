/*
 * The parallel zstd writer (codec/compress.rs): a component of two frames (4 MiB and one
 * byte) is compressed on the library's pool while the writing thread takes the frames in
 * order; it must read back exactly, whole and by range. CMake runs it plain, under
 * ASan/UBSan and under valgrind's memcheck; its synchronisation is checked by
 * ThreadSanitizer (ctest's tsan_threads), which models the atomics and futexes it is made
 * of, where helgrind and DRD don't.
 */
#include "zt_test.h"

#include <unistd.h>

int main(int argc, char **argv) {
  size_t n = ((size_t)4 << 20) + 1, i, frames = 0;
  unsigned char *data = (unsigned char *)malloc(n), *back = (unsigned char *)malloc(n);
  uint64_t shape[1];
  zt_writer *w = NULL;
  zt_reader *r = NULL;
  zt_write_options z = {ZT_ENCODING_ZSTD, 1, ZT_DIGEST_NONE};
  (void)argc;
  (void)argv;
  if (!CHECK(data != NULL && back != NULL)) return zt_test_summary();
  for (i = 0; i < n; i++) data[i] = (unsigned char)((i * 2654435761u) >> 28);
  shape[0] = n;
  if (CHECK_OK(zt_writer_create("frames.zt", &w))) {
    CHECK_OK(zt_writer_add(w, "z", ZT_U8, shape, 1, data, n, &z));
    CHECK_OK(zt_writer_finish(w));
    zt_writer_free(w);
  }
  if (CHECK_OK(zt_open("frames.zt", &r))) {
    CHECK_OK(zt_component_get_frame_count(r, 0, "data", &frames));
    CHECK_U64(frames, 2);
    CHECK_OK(zt_component_read(r, 0, "data", back, n));
    CHECK_MEM(back, data, n);
    memset(back, 0, 8);
    CHECK_OK(zt_component_read_range(r, 0, "data", n - 4, back, 4));
    CHECK_MEM(back, data + n - 4, 4);
    zt_close(r);
  }
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
    printf("one core: the writer compressed without worker threads\n");
  }
  unlink("frames.zt");
  free(data);
  free(back);
  return zt_test_summary();
}
