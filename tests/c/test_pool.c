/*
 * test_pool: the library's thread pool from C. zt_pool_thread_count() is one thread per
 * core until zt_pool_set_threads(n) says otherwise; a size above 1024 is refused with its
 * message and changes nothing; a zstd file written and batch-loaded with pools of 1, 2
 * and 4 threads (and resized between the writes and the loads) comes back byte for byte;
 * a child forked after the pool started (whose copy of the process has none of its
 * threads) still loads in parallel instead of waiting forever for them; a child forked
 * right after a resize holds nothing of the replaced pool (under valgrind: nothing lost
 * in the child, whose exit status the parent checks). Run in any directory (it works in
 * a fresh one under /tmp).
 */
#define _GNU_SOURCE 1 /* sched_getaffinity, CPU_COUNT */
#include "zt_test.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

enum { TENSORS = 4, VALUES = (3 << 20) / 4 }; /* 3 MiB each: one zstd frame each, in flight together */

static float DATA[TENSORS][VALUES];
static float GOT[TENSORS][VALUES];

static void fill(void) {
  size_t t, i;
  for (t = 0; t < TENSORS; t++) {
    for (i = 0; i < VALUES; i++) {
      DATA[t][i] = (float)((i * 7 + t * 13) % 1000) * 0.25f;
    }
  }
}

/* Loads every tensor of `path` in one batch (in parallel: 12 MiB) and compares. */
static int load_all(const char *path) {
  zt_reader *r = NULL;
  zt_load_request q[TENSORS];
  size_t t;
  int ok = 1;
  if (!CHECK_OK(zt_open(path, &r))) return 0;
  memset(q, 0, sizeof q);
  memset(GOT, 0, sizeof GOT);
  for (t = 0; t < TENSORS; t++) {
    q[t].object = t;
    q[t].dst = GOT[t];
    q[t].dst_size = sizeof GOT[t];
  }
  ok &= CHECK_OK(zt_batch_load(r, q, TENSORS, NULL));
  for (t = 0; t < TENSORS; t++) {
    ok &= CHECK_U64(q[t].status, ZT_OK);
  }
  ok &= CHECK_MEM(GOT, DATA, sizeof DATA);
  zt_close(r);
  return ok;
}

/* A child forked now, after the pool started, loads `path` in parallel; killed by an
 * alarm if it waits for threads it doesn't have. */
static void fork_and_load(const char *path) {
  int status = 0;
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid == 0) {
    alarm(300);
    _exit(load_all(path) ? 0 : 1);
  }
  if (!CHECK(pid > 0)) return;
  CHECK(waitpid(pid, &status, 0) == pid);
  if (!CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    printf("note: the forked child %s %d\n", WIFSIGNALED(status) ? "died of signal" : "exited with",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
}

/* Writes the tensors zstd-compressed with a pool of `threads`, then loads them in one batch. */
static void round_trip(const char *path, size_t threads) {
  zt_writer *w = NULL;
  zt_write_options o;
  uint64_t shape[1] = {VALUES};
  char name[16];
  size_t t;
  memset(&o, 0, sizeof o);
  o.encoding = ZT_ENCODING_ZSTD;
  o.level = 1;
  CHECK_OK(zt_pool_set_threads(threads));
  CHECK_U64(zt_pool_thread_count(), threads);
  if (!CHECK_OK(zt_writer_create(path, &w))) return;
  for (t = 0; t < TENSORS; t++) {
    snprintf(name, sizeof name, "t%u", (unsigned)t);
    CHECK_OK(zt_writer_add(w, name, ZT_F32, shape, 1, DATA[t], sizeof DATA[t], &o));
  }
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  /* Another size between writing and reading: the new pool serves the loads. */
  CHECK_OK(zt_pool_set_threads(threads == 1 ? 4 : 1));
  load_all(path);
}

int main(void) {
  char dir[] = "/tmp/zt-pool-XXXXXX";
  cpu_set_t cpus;
  size_t cores = 1;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
    cores = (size_t)CPU_COUNT(&cpus);
  }
  /* One thread per core until told otherwise (the pool isn't started by asking). */
  CHECK_U64(zt_pool_thread_count(), cores);
  if (!CHECK(mkdtemp(dir) != NULL) || !CHECK(chdir(dir) == 0)) return zt_test_summary();
  fill();
  round_trip("one.zt", 1);
  round_trip("two.zt", 2);
  round_trip("four.zt", 4);
  /* A resize, then at once a fork: the replaced pool (idle) has ended with its threads
   * before zt_pool_set_threads returns, so the child has none of its memory (a pool's
   * deques and registry, held only by threads the child doesn't have, would be lost
   * there). */
  CHECK_OK(zt_pool_set_threads(2));
  fork_and_load("four.zt");
  /* A pool of 2 running, then a fork: the child's batch runs on two threads. */
  load_all("four.zt");
  fork_and_load("four.zt");
  /* Refused sizes change nothing. */
  CHECK_OK(zt_pool_set_threads(3));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_pool_set_threads(1025));
  CHECK_CONTAINS(zt_last_error(), "1025 threads asked for the pool, more than 1024");
  CHECK_U64(zt_pool_thread_count(), 3);
  /* 0: back to one per core. */
  CHECK_OK(zt_pool_set_threads(0));
  CHECK_U64(zt_pool_thread_count(), cores);
  CHECK(remove("one.zt") == 0 && remove("two.zt") == 0 && remove("four.zt") == 0);
  CHECK(chdir("/") == 0 && rmdir(dir) == 0);
  return zt_test_summary();
}
