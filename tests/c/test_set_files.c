/*
 * test_set_files: the files a set opens (docs/reliability.md, "The files a set opens"),
 * from C, for an ONNX model's external data, a safetensors index's shards and a GGUF
 * split set's other splits (tests/set_files.rs covers zTensor v2 shard tables too, and
 * races the swaps against opens):
 *
 * - after zt_open, the file's name is swapped (a rename) for a link to a file outside
 *   the model's directory, of the same size, whose tensor bytes differ: reads, range
 *   reads and views return the original bytes, mapped, with ZT_OPEN_NO_MMAP and with
 *   ZT_OPEN_ALL_SHARDS, from a reader that read the file before the swap and from one
 *   that did not;
 * - a link that leads out of the directory (absolute, relative, or out and back in) is
 *   refused at zt_open with ZT_ERR_FORMAT naming the file; a link that stays inside is
 *   followed.
 *
 *   test_set_files VECTORS   (tests/vectors; works in a fresh directory under /tmp)
 */
#include "zt_test.h"

#include <sys/stat.h>
#include <unistd.h>

static char ROOT[] = "/tmp/zt-set-files-XXXXXX";
static char MODEL[256], OUTSIDE[256];

typedef struct kind {
  const char *name;
  const char *from;   /* directory under the vectors */
  const char *files[4];
  const char *open;   /* the file opened */
  const char *victim; /* the file of the set swapped */
} kind;

static const kind KINDS[] = {
    {"onnx", "onnx", {"model_external.onnx", "model_external.weights", NULL}, "model_external.onnx",
     "model_external.weights"},
    {"safetensors",
     "sets/safetensors",
     {"model.safetensors.index.json", "model-00001-of-00003.safetensors",
      "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"},
     "model.safetensors.index.json",
     "model-00003-of-00003.safetensors"},
    {"gguf",
     "sets/gguf",
     {"split-00001-of-00003.gguf", "split-00002-of-00003.gguf", "split-00003-of-00003.gguf", NULL},
     "split-00001-of-00003.gguf",
     "split-00003-of-00003.gguf"},
};

static const uint32_t MODES[] = {0, ZT_OPEN_NO_MMAP, ZT_OPEN_ALL_SHARDS};
static const char *const MODE_NAMES[] = {"mapped", "no mmap", "all shards"};

static void join(char *out, size_t size, const char *dir, const char *name) {
  snprintf(out, size, "%s/%s", dir, name);
}

static int write_file(const char *path, const unsigned char *bytes, size_t size) {
  FILE *f = fopen(path, "wb");
  int ok = f != NULL && fwrite(bytes, 1, size, f) == size;
  if (f != NULL) ok &= fclose(f) == 0;
  return ok;
}

/* Puts a link to `target` under `name` in the model's directory, atomically. */
static int link_over(const char *target, const char *name) {
  char tmp[512], path[512];
  join(tmp, sizeof tmp, MODEL, ".swap");
  join(path, sizeof path, MODEL, name);
  unlink(tmp);
  return symlink(target, tmp) == 0 && rename(tmp, path) == 0;
}

static zt_status open_mode(const kind *k, uint32_t flags, zt_reader **r) {
  char path[512];
  zt_open_options o;
  memset(&o, 0, sizeof o);
  o.flags = flags;
  join(path, sizeof path, MODEL, k->open);
  return zt_open_with(path, &o, r);
}

/* The first object whose data is in the victim (its stored range there in *loc). */
static size_t target_of(const zt_reader *r, const kind *k, zt_location *loc) {
  size_t o, n = zt_object_count(r);
  for (o = 0; o < n; o++) {
    const char *path = NULL;
    size_t len;
    if (zt_component_get_location(r, o, 0, loc) != ZT_OK) continue;
    if (zt_shard_get_path(r, loc->shard, &path) != ZT_OK) continue;
    len = strlen(path);
    if (len >= strlen(k->victim) && strcmp(path + len - strlen(k->victim), k->victim) == 0) return o;
  }
  return (size_t)-1;
}

/* The object's bytes by every path a reader has: read, range read, view. */
static void check_bytes(const zt_reader *r, size_t object, const unsigned char *want, size_t size,
                        const char *what) {
  unsigned char *got = calloc(1, size);
  zt_view v;
  if (!CHECK(got != NULL)) return;
  if (CHECK_OK(zt_component_read(r, object, "data", got, size)) && !CHECK_MEM(got, want, size)) {
    printf("note: %s: read\n", what);
  }
  memset(got, 0, size);
  if (CHECK_OK(zt_component_read_range(r, object, "data", 1, got, size - 1)) &&
      !CHECK_MEM(got, want + 1, size - 1)) {
    printf("note: %s: range read\n", what);
  }
  if (CHECK_OK(zt_component_view(r, object, "data", &v)) && CHECK_U64(v.size, size) &&
      !CHECK_MEM(v.data, want, size)) {
    printf("note: %s: view\n", what);
  }
  free(got);
}

static void run_kind(const char *vectors, const kind *k) {
  char path[512], from[512], outside[512], victim[512], real[512];
  unsigned char *original = NULL, *theirs = NULL, *want = NULL;
  size_t size = 0, i, m, object;
  zt_reader *r = NULL;
  zt_location loc;
  for (i = 0; i < 4 && k->files[i] != NULL; i++) {
    unsigned char *bytes;
    size_t n;
    snprintf(from, sizeof from, "%s/%s/%s", vectors, k->from, k->files[i]);
    bytes = zt_test_slurp(from, &n);
    join(path, sizeof path, MODEL, k->files[i]);
    if (!CHECK(bytes != NULL) || !CHECK(write_file(path, bytes, n))) {
      free(bytes);
      return;
    }
    free(bytes);
  }
  join(victim, sizeof victim, MODEL, k->victim);
  join(outside, sizeof outside, OUTSIDE, k->victim);
  join(real, sizeof real, MODEL, "real.bin");
  original = zt_test_slurp(victim, &size);
  if (!CHECK(original != NULL) || !CHECK_OK(open_mode(k, 0, &r))) goto out;
  object = target_of(r, k, &loc);
  if (!CHECK(object != (size_t)-1) || !CHECK(loc.offset + loc.length <= size)) goto out;
  want = malloc(loc.length);
  theirs = malloc(size);
  if (!CHECK(want != NULL && theirs != NULL)) goto out;
  CHECK_OK(zt_component_read(r, object, "data", want, loc.length));
  CHECK_MEM(want, original + loc.offset, loc.length);
  zt_close(r);
  r = NULL;
  /* Outside: the same file with the tensor's bytes inverted. A second name of the real
   * file inside (real.bin) to put it back with a rename. */
  memcpy(theirs, original, size);
  for (i = 0; i < loc.length; i++) theirs[loc.offset + i] ^= 0xff;
  if (!CHECK(write_file(outside, theirs, size)) || !CHECK(link(victim, real) == 0)) goto out;

  for (m = 0; m < sizeof MODES / sizeof MODES[0]; m++) {
    zt_reader *before = NULL, *after = NULL;
    char what[128];
    snprintf(what, sizeof what, "%s, %s", k->name, MODE_NAMES[m]);
    /* The real file back under its name (a second hard link to it). */
    unlink(victim);
    if (!CHECK(link(real, victim) == 0)) break;
    if (!CHECK_OK(open_mode(k, MODES[m], &before)) || !CHECK_OK(open_mode(k, MODES[m], &after))) {
      zt_close(before);
      break;
    }
    check_bytes(before, object, want, loc.length, what);
    /* The swap: the name now leads outside. */
    if (CHECK(link_over(outside, k->victim))) {
      check_bytes(before, object, want, loc.length, what);
      check_bytes(after, object, want, loc.length, what);
    }
    zt_close(before);
    zt_close(after);
    /* Opened now, with the link in place: refused. */
    CHECK_STATUS(ZT_ERR_FORMAT, open_mode(k, MODES[m], &r));
    CHECK_CONTAINS(zt_last_error(), "leads outside the directory");
    CHECK_CONTAINS(zt_last_error(), k->victim);
  }
  /* Relative links out, and out and back in: refused. Inside: followed. */
  {
    char out_rel[512], back_in[512];
    snprintf(out_rel, sizeof out_rel, "../outside/%s", k->victim);
    snprintf(back_in, sizeof back_in, "../%s/real.bin", strrchr(MODEL, '/') + 1);
    if (CHECK(link_over(out_rel, k->victim))) {
      CHECK_STATUS(ZT_ERR_FORMAT, open_mode(k, 0, &r));
    }
    if (CHECK(link_over(back_in, k->victim))) {
      CHECK_STATUS(ZT_ERR_FORMAT, open_mode(k, ZT_OPEN_NO_MMAP, &r));
    }
  }
  if (CHECK(link_over("real.bin", k->victim)) && CHECK_OK(open_mode(k, 0, &r))) {
    check_bytes(r, object, want, loc.length, k->name);
    zt_close(r);
    r = NULL;
  }
out:
  zt_close(r);
  for (i = 0; i < 4 && k->files[i] != NULL; i++) {
    join(path, sizeof path, MODEL, k->files[i]);
    unlink(path);
  }
  unlink(real);
  unlink(outside);
  free(original);
  free(theirs);
  free(want);
}

int main(int argc, char **argv) {
  size_t k;
  if (argc != 2) {
    fprintf(stderr, "usage: test_set_files VECTORS\n");
    return 2;
  }
  if (!CHECK(mkdtemp(ROOT) != NULL)) return zt_test_summary();
  join(MODEL, sizeof MODEL, ROOT, "model");
  join(OUTSIDE, sizeof OUTSIDE, ROOT, "outside");
  if (!CHECK(mkdir(MODEL, 0700) == 0 && mkdir(OUTSIDE, 0700) == 0)) return zt_test_summary();
  for (k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
    run_kind(argv[1], &KINDS[k]);
  }
  CHECK(rmdir(MODEL) == 0 && rmdir(OUTSIDE) == 0 && rmdir(ROOT) == 0);
  return zt_test_summary();
}
