/*
 * What the writer does to make a file durable, observed from outside: this program
 * defines fsync() and fdatasync() itself, so the library's calls land here (an executable's symbols come
 * before libc's), are counted by the kind of file they sync, and are passed on to the
 * kernel. Also: the temporary file of a failed writer is gone at once, and names up to
 * NAME_MAX bytes can be written.
 */
#define _DEFAULT_SOURCE 1 /* syscall() */
#include "zt_test.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int fsync_files, fsync_dirs, writebacks;

/* Writeback the writer starts early (SYNC_FILE_RANGE_WRITE), counted and passed on. */
int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags) {
  writebacks++;
  return (int)syscall(SYS_sync_file_range, fd, offset, nbytes, flags);
}

static void count_sync(int fd) {
  struct stat st;
  if (fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      fsync_dirs++;
    } else if (S_ISREG(st.st_mode)) {
      fsync_files++;
    }
  }
}

/* fsync and fdatasync count alike: either makes the file's data durable (the writer
   syncs a file's data with fdatasync, its directory with fsync). */
int fsync(int fd) {
  count_sync(fd);
  return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd) {
  count_sync(fd);
  return (int)syscall(SYS_fdatasync, fd);
}

/* Files in the current directory whose names start with '.' and end with ".tmp". */
static int temp_files(void) {
  DIR *d = opendir(".");
  struct dirent *e;
  int n = 0;
  if (d == NULL) return -1;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    n += e->d_name[0] == '.' && len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0;
  }
  closedir(d);
  return n;
}

static void write_small(const char *path) {
  zt_writer *w = NULL;
  uint64_t shape[1] = {4};
  float v[4] = {1, 2, 3, 4};
  if (CHECK_OK(zt_test_create_v12(path, &w))) {
    CHECK_OK(zt_writer_add(w, "v", ZT_F32, shape, 1, v, sizeof v, NULL));
    CHECK_OK(zt_writer_finish(w));
  }
  zt_writer_free(w);
}

/* Each way of naming the file syncs the file once and its directory once. */
static void test_fsyncs(void) {
  const char *paths[] = {"model.zt", "./model2.zt", "sub/model3.zt"};
  size_t i;
  char abs[4096];
  CHECK(mkdir("sub", 0700) == 0 || errno == EEXIST);
  for (i = 0; i < sizeof paths / sizeof paths[0]; i++) {
    fsync_files = fsync_dirs = 0;
    write_small(paths[i]);
    if (!CHECK(fsync_files == 1 && fsync_dirs == 1)) {
      fprintf(stderr, "  %s: %d file and %d directory fsyncs\n", paths[i], fsync_files, fsync_dirs);
    }
    unlink(paths[i]);
  }
  if (CHECK(getcwd(abs, sizeof abs - 32) != NULL)) {
    strcat(abs, "/model4.zt");
    fsync_files = fsync_dirs = 0;
    write_small(abs);
    CHECK(fsync_files == 1 && fsync_dirs == 1);
    unlink(abs);
  }
  rmdir("sub");
}

/* ZT_WRITER_NO_SYNC: no fsync at all, the file still appears whole. A large durable file
   starts its writeback while it is written, so the final fsync has little left. */
static void test_no_sync_and_writeback(void) {
  zt_writer *w = NULL;
  zt_writer_options o;
  zt_reader *r = NULL;
  static unsigned char big[96 << 20];
  uint64_t shape[1] = {sizeof big};
  memset(&o, 0, sizeof o);
  o.flags = ZT_WRITER_NO_SYNC;
  fsync_files = fsync_dirs = 0;
  if (CHECK_OK(zt_writer_create_with("fast.zt", &o, &w))) {
    uint64_t s1[1] = {4};
    float v[4] = {1, 2, 3, 4};
    CHECK_OK(zt_writer_add(w, "v", ZT_F32, s1, 1, v, sizeof v, NULL));
    CHECK_OK(zt_writer_finish(w));
  }
  zt_writer_free(w);
  CHECK(fsync_files == 0 && fsync_dirs == 0);
  if (CHECK_OK(zt_open("fast.zt", &r))) CHECK_U64(zt_object_count(r), 1);
  zt_close(r);
  unlink("fast.zt");
  o.flags = ZT_WRITER_NO_SYNC | 0x80000000u; /* no flag (yet) */
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_create_with("x.zt", &o, &w));
  CHECK_ERROR_MENTIONS("unknown writer flags 0x80000000");
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_create_with(NULL, NULL, &w));

  /* 96 MiB durable, streamed in 1 MiB chunks: writeback started every 32 MiB written
     (at least twice) before the fsync. */
  writebacks = fsync_files = fsync_dirs = 0;
  w = NULL;
  if (CHECK_OK(zt_writer_create_with("big.zt", NULL, &w))) {
    size_t at;
    CHECK_OK(zt_writer_begin_object(w, "big", "dense", shape, 1));
    CHECK_OK(zt_writer_begin_component(w, "data", ZT_U8, NULL, NULL));
    for (at = 0; at < sizeof big; at += 1 << 20) CHECK_OK(zt_writer_write(w, big + at, 1 << 20));
    CHECK_OK(zt_writer_end_component(w));
    CHECK_OK(zt_writer_end_object(w));
    CHECK_OK(zt_writer_finish(w));
  }
  zt_writer_free(w);
  CHECK(writebacks >= 2);
  CHECK(fsync_files == 1 && fsync_dirs == 1);
  printf("note: 96 MiB durable write: %d early writebacks, %d file and %d directory fsyncs\n", writebacks,
         fsync_files, fsync_dirs);
  unlink("big.zt");
}

/* A name of NAME_MAX bytes is written (its temporary name must fit too). */
static void test_long_names(void) {
  char name[256];
  size_t len;
  for (len = 250; len <= 255; len += 5) {
    zt_reader *r = NULL;
    memset(name, 'n', len);
    memcpy(name + len - 3, ".zt", 3);
    name[len] = 0;
    write_small(name);
    if (CHECK_OK(zt_open(name, &r))) CHECK_U64(zt_object_count(r), 1);
    zt_close(r);
    unlink(name);
  }
  CHECK(temp_files() == 0);
}

/* Over RLIMIT_FSIZE the add fails, and the temporary file is removed before free. */
static void fsize_child(void) {
  struct rlimit rl;
  zt_writer *w = NULL;
  static unsigned char big[1 << 20];
  uint64_t shape[1] = {sizeof big};
  signal(SIGXFSZ, SIG_IGN);
  getrlimit(RLIMIT_FSIZE, &rl);
  rl.rlim_cur = 64 * 1024;
  if (CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0) && CHECK_OK(zt_test_create_v12("full.zt", &w))) {
    CHECK_STATUS(ZT_ERR_IO, zt_writer_add(w, "big", ZT_U8, shape, 1, big, sizeof big, NULL));
    CHECK(temp_files() == 0);
    CHECK_STATUS(ZT_ERR_STATE, zt_writer_finish(w));
    CHECK_ERROR_MENTIONS("failed earlier");
    CHECK(temp_files() == 0);
    CHECK(access("full.zt", F_OK) != 0);
  }
  zt_writer_free(w);
  exit(zt_test_summary());
}

static void test_failed_writer_cleans_up_at_once(void) {
  pid_t pid = fork();
  int status = 0;
  if (pid == 0) fsize_child();
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
  char dir[] = "/tmp/zt-durability-XXXXXX";
  if (!CHECK(mkdtemp(dir) != NULL) || !CHECK(chdir(dir) == 0)) return zt_test_summary();
  test_fsyncs();
  test_no_sync_and_writeback();
  test_long_names();
  test_failed_writer_cleans_up_at_once();
  CHECK(chdir("/") == 0);
  CHECK(rmdir(dir) == 0);
  return zt_test_summary();
}
