/*
 * Remote objects from C: zt_open_url_with's argument checks, zt_file_get_remote_stats, a refused
 * connection as ZT_ERR_IO naming the URL (or ZT_ERR_UNSUPPORTED in a build without
 * remote support, ZT_TEST_NO_REMOTE), and, when tests/remote.rs runs this program with a
 * server started (ZT_REMOTE_URL and ZT_REMOTE_LOCAL set, credentials and endpoint in the
 * AWS_* environment), a model opened by URL with zt_open and loaded whole: every
 * component equal to the local copy's, and the bytes moved reported; and, with
 * ZT_REMOTE_FAULTS set to the base URL of tests/interop/range_server.py serving m.zt,
 * every fault that server injects, at open and at a read: ZT_ERR_IO naming the URL;
 * with ZT_REMOTE_SET_URL and ZT_REMOTE_SET_LOCAL (an index of 3 shards), the set opened
 * by the index's URL as by its local path, its shards found next to the index.
 */
#include "zt_test.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void test_arguments(void) {
  zt_reader *r = NULL;
  zt_remote_options o;
  const char *bad_header[1] = {"no colon here"};
  const char *bad_config[1] = {"no equals sign"};
  uint64_t requests = 0, bytes = 0;
  uint64_t shape[1] = {4};
  unsigned char data[4] = {1, 2, 3, 4};
  zt_writer *w = NULL;

  memset(&o, 0, sizeof o);
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_url_with(NULL, NULL, NULL, &r));
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_url_with("http://127.0.0.1:1/m.zt", NULL, NULL, NULL));
  o.flags = 0x100;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_url_with("http://127.0.0.1:1/m.zt", NULL, &o, &r));
  CHECK_ERROR_MENTIONS("unknown remote flags 0x100");
  o.flags = 0;
  o.headers = bad_header;
  o.header_count = 1;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_url_with("http://127.0.0.1:1/m.zt", NULL, &o, &r));
  CHECK_ERROR_MENTIONS("headers[0] 'no colon here' has no ':'");
  o.headers = NULL;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_url_with("http://127.0.0.1:1/m.zt", NULL, &o, &r));
  CHECK_ERROR_MENTIONS("headers is NULL");
  o.header_count = 0;
  o.config = bad_config;
  o.config_count = 1;
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_open_url_with("http://127.0.0.1:1/m.zt", NULL, &o, &r));
  CHECK_ERROR_MENTIONS("config[0] 'no equals sign' has no '='");
  CHECK(r == NULL);

  /* A local reader has no transfer counts. */
  CHECK_OK(zt_writer_create("local.zt", &w));
  CHECK_OK(zt_writer_add(w, "a", ZT_U8, shape, 1, data, sizeof data, NULL));
  CHECK_OK(zt_writer_finish(w));
  zt_writer_free(w);
  if (CHECK_OK(zt_open("local.zt", &r))) {
    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_file_get_remote_stats(r, &requests, &bytes));
    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_remote_stats(r, NULL, &bytes));
    zt_close(r);
  }
  CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_file_get_remote_stats(NULL, &requests, &bytes));
  unlink("local.zt");
}

/* Nothing listens on port 1 of 127.0.0.1: the connection is refused at once. */
static void test_refused(void) {
  zt_reader *r = NULL;
  zt_remote_options o;
  memset(&o, 0, sizeof o);
  o.flags = ZT_REMOTE_NO_RETRY;
#ifdef ZT_TEST_NO_REMOTE
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_open_url_with("http://127.0.0.1:1/m.zt", NULL, &o, &r));
  CHECK_ERROR_MENTIONS("no remote support");
  CHECK_STATUS(ZT_ERR_UNSUPPORTED, zt_open("s3://bucket/m.zt", &r));
#else
  CHECK_STATUS(ZT_ERR_IO, zt_open_url_with("http://127.0.0.1:1/m.zt", NULL, &o, &r));
  CHECK_ERROR_MENTIONS("http://127.0.0.1:1/m.zt");
#endif
  CHECK(r == NULL);
}

/* Malformed URLs with user info (and a signature): no message shows them, whichever
   call opens them. */
static void test_malformed_urls(void) {
  static const char *const urls[] = {
      "http://user:SECRETPW@127.0.0.1:99999/x.zt", "http://user:SECRETPW@256.1.1.1/x.zt",
      "http://user:SECRETPW@[::g]/x.zt",           "http://user:SECRETPW@ho st/x.zt",
      "https://user:SECRETPW@/x.zt",               "http://user:SECRET/PW@host:1/x.zt",
      "s3://user:SECRETPW@bu cket/x.zt",           "http://user:SECRETPW@127.0.0.1:99999/x.zt?sig=SECRETSIG",
      "ftp://user:SECRETPW@host/x.zt",             "http://user:SECRET PW@127.0.0.1:1/x.zt",
  };
  size_t i;
  zt_remote_options o;
  memset(&o, 0, sizeof o);
  o.flags = ZT_REMOTE_NO_RETRY;
  for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
    zt_reader *r = NULL;
    zt_status s = zt_open_url_with(urls[i], NULL, &o, &r);
    CHECK(s != ZT_OK && r == NULL);
    CHECK(zt_last_error()[0] != '\0');
    if (!CHECK(strstr(zt_last_error(), "SECRET") == NULL)) fprintf(stderr, "%s: %s\n", urls[i], zt_last_error());
    if (strncmp(urls[i], "ftp:", 4) != 0) {
      s = zt_open(urls[i], &r);
      CHECK(s != ZT_OK && r == NULL);
      CHECK(strstr(zt_last_error(), "SECRET") == NULL);
    }
  }
}

/* Opens `url` as zt_open does (the environment's settings) and reads every component,
 * comparing with the local file (or set: `shards` files, each small enough for one
 * request at open; 1 for a single file, which takes at most 3). */
static void test_load(const char *url, const char *local_path, size_t shards) {
  zt_reader *remote = NULL, *local = NULL;
  size_t i, c, n;
  uint64_t requests = 0, bytes = 0, total = 0, stored = 0;
  if (!CHECK_OK(zt_open(url, &remote)) || !CHECK_OK(zt_open(local_path, &local))) {
    fprintf(stderr, "%s\n", zt_last_error());
    zt_close(remote);
    zt_close(local);
    return;
  }
  CHECK_OK(zt_file_get_remote_stats(remote, &requests, &bytes));
  printf("open: %llu requests, %llu bytes\n", (unsigned long long)requests, (unsigned long long)bytes);
  if (shards == 1) {
    CHECK(requests <= 3 && bytes < (1u << 20));
  } else {
    CHECK_U64(requests, shards + 1);
  }
  CHECK_U64(zt_shard_count(remote), shards);
  n = zt_object_count(local);
  CHECK_U64(zt_object_count(remote), n);
  for (i = 0; i < n; i++) {
    zt_object_info oi;
    if (!CHECK_OK(zt_object_get_info(local, i, &oi))) continue;
    for (c = 0; c < oi.component_count; c++) {
      zt_component_info ci;
      unsigned char *a, *b;
      if (!CHECK_OK(zt_component_get_info(local, i, c, &ci))) continue;
      a = malloc(ci.decoded_length + 1);
      b = malloc(ci.decoded_length + 1);
      if (CHECK(a != NULL && b != NULL) &&
          CHECK_OK(zt_component_read(remote, i, ci.role, a, (size_t)ci.decoded_length)) &&
          CHECK_OK(zt_component_read(local, i, ci.role, b, (size_t)ci.decoded_length))) {
        CHECK_MEM(a, b, (size_t)ci.decoded_length);
        total += ci.decoded_length;
        stored += ci.length;
      }
      free(a);
      free(b);
    }
  }
  CHECK_OK(zt_file_get_remote_stats(remote, &requests, &bytes));
  printf("open + full load of %llu bytes (%llu stored): %llu requests, %llu bytes\n", (unsigned long long)total,
         (unsigned long long)stored, (unsigned long long)requests, (unsigned long long)bytes);
  /* Every stored byte once, plus what the open and the cached blocks took. */
  CHECK(bytes >= stored && bytes <= stored + (2u << 20));
  zt_close(remote);
  zt_close(local);
}

/* Asks the range server for a fault on its next file GET: a GET of its control path
 * (answered without a range, so the open fails; only the request matters). */
static void inject(const char *base, const char *kind) {
  char url[512];
  zt_reader *r = NULL;
  zt_remote_options o;
  memset(&o, 0, sizeof o);
  o.flags = ZT_REMOTE_NO_RETRY;
  snprintf(url, sizeof url, "%s/__fault/%s/1", base, kind);
  if (zt_open_url_with(url, NULL, &o, &r) == ZT_OK) zt_close(r);
}

static void test_faults(const char *base) {
  static const char *const kinds[] = {"drop", "truncate", "short", "wrong_range", "full", "status:500",
                                      "status:403"};
  char url[512];
  size_t i;
  zt_remote_options o;
  memset(&o, 0, sizeof o);
  o.flags = ZT_REMOTE_NO_RETRY;
  snprintf(url, sizeof url, "%s/m.zt", base);
  for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    zt_reader *r = NULL;
    static unsigned char dst[200000];
    inject(base, kinds[i]);
    CHECK_STATUS(ZT_ERR_IO, zt_open_url_with(url, NULL, &o, &r));
    CHECK_ERROR_MENTIONS(url);
    CHECK(r == NULL);
    if (CHECK_OK(zt_open_url_with(url, NULL, &o, &r))) {
      inject(base, kinds[i]);
      CHECK_STATUS(ZT_ERR_IO, zt_component_read(r, 0, "data", dst, sizeof dst));
      CHECK_ERROR_MENTIONS(url);
      /* The reader stays usable: the next read succeeds. */
      CHECK_OK(zt_component_read(r, 0, "data", dst, sizeof dst));
      zt_close(r);
    }
  }
  printf("faults: %zu kinds at open and at a read\n", i);
}

/* A URL opened in a child made by fork() after the parent opened one (its runtime's
   threads exist only in the parent): the child's open and reads work, and the parent's
   reader, used in the child, is refused (ZT_ERR_STATE) instead of waiting forever. The
   parent bounds the child's time (a hang fails the check, it doesn't hang the test). */
static void test_fork(const char *base) {
  char url[512];
  zt_reader *r = NULL;
  static unsigned char want[200000], got[200000];
  pid_t child;
  int status = 0, waited = 0, exited = 0;
  snprintf(url, sizeof url, "%s/m.zt", base);
  if (!CHECK_OK(zt_open_url_with(url, NULL, NULL, &r))) return;
  CHECK_OK(zt_component_read(r, 0, "data", want, sizeof want));
  fflush(stdout);
  fflush(stderr);
  child = fork();
  if (!CHECK(child >= 0)) {
    zt_close(r);
    return;
  }
  if (child == 0) {
    zt_reader *mine = NULL;
    int bad = 0;
    alarm(60); /* a hang ends the child, whatever the parent does */
    if (zt_open_url_with(url, NULL, NULL, &mine) != ZT_OK) {
      bad |= 1;
    } else {
      if (zt_component_read(mine, 0, "data", got, sizeof got) != ZT_OK) bad |= 2;
      if (memcmp(got, want, sizeof got) != 0) bad |= 4;
      zt_close(mine);
    }
    if (zt_component_read(r, 0, "data", got, sizeof got) != ZT_ERR_STATE) bad |= 8;
    if (strstr(zt_last_error(), "fork") == NULL) bad |= 16;
    if (bad != 0) fprintf(stderr, "fork child: failure bits %d: %s\n", bad, zt_last_error());
    _exit(bad);
  }
  while (waited < 900) { /* 90 s */
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      exited = 1;
      break;
    }
    {
      struct timespec tenth = {0, 100000000L};
      nanosleep(&tenth, NULL);
    }
    waited++;
  }
  if (!CHECK(exited)) {
    fprintf(stderr, "fork child: still running after 90 s (a hang)\n");
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  } else {
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  /* The parent's reader is unaffected. */
  CHECK_OK(zt_component_read(r, 0, "data", got, sizeof got));
  CHECK_MEM(got, want, sizeof got);
  zt_close(r);
  printf("fork: a URL opened in the child\n");
}

int main(void) {
  const char *faults = getenv("ZT_REMOTE_FAULTS");
  const char *url = getenv("ZT_REMOTE_URL");
  const char *local = getenv("ZT_REMOTE_LOCAL");
  const char *set_url = getenv("ZT_REMOTE_SET_URL");
  const char *set_local = getenv("ZT_REMOTE_SET_LOCAL");
  test_arguments();
  test_refused();
#ifndef ZT_TEST_NO_REMOTE
  test_malformed_urls();
#endif
  if (url != NULL && local != NULL) {
    test_load(url, local, 1);
  }
  if (set_url != NULL && set_local != NULL) {
    test_load(set_url, set_local, 3);
  }
  if (faults != NULL) {
    test_faults(faults);
    test_fork(faults);
  }
  return zt_test_summary();
}
