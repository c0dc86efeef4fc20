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
 *   followed;
 * - a Hugging Face hub cache snapshot (snapshots/<rev>/, for ONNX its onnx/, every file a
 *   relative link into ../../blobs/) opens as a set in every mode, each object's bytes
 *   those of the plain set; a link from it into a third directory is refused.
 *
 *   test_set_files VECTORS   (tests/vectors; works in a fresh directory under /tmp)
 */
#include "zt_test.h"

#include <sys/stat.h>
#include <unistd.h>

static char ROOT[] = "/tmp/zt-set-files-XXXXXX";
static char MODEL[256], OUTSIDE[256], HUB[256];

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

/* Puts a link to `target` under `name` in `dir`, atomically. */
static int link_in(const char *dir, const char *target, const char *name) {
  char tmp[512], path[512];
  join(tmp, sizeof tmp, dir, ".swap");
  join(path, sizeof path, dir, name);
  unlink(tmp);
  return symlink(target, tmp) == 0 && rename(tmp, path) == 0;
}

/* Puts a link to `target` under `name` in the model's directory, atomically. */
static int link_over(const char *target, const char *name) {
  return link_in(MODEL, target, name);
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

/* --- A Hugging Face hub cache ------------------------------------------------------- */

#define REV "4f0c3a1d2b5e6f708192a3b4c5d6e7f801234567"

/* A blob's name: FNV-1a of its bytes, in hex (the hub names blobs by a digest). */
static void blob_name(char out[17], const unsigned char *bytes, size_t size) {
  uint64_t h = 0xcbf29ce484222325u;
  size_t i;
  for (i = 0; i < size; i++) h = (h ^ bytes[i]) * 0x100000001b3u;
  snprintf(out, 17, "%016" PRIx64, h);
}

/* Every object of `hub` read (its first component), against the same of `plain`. */
static void check_same_objects(const zt_reader *plain, const zt_reader *hub, const char *what) {
  size_t o, n = zt_object_count(plain);
  if (!CHECK_U64(zt_object_count(hub), n)) return;
  for (o = 0; o < n; o++) {
    zt_object_info pi, hi;
    zt_component_info pc, hc;
    unsigned char *want, *got;
    if (!CHECK_OK(zt_object_get_info(plain, o, &pi)) || !CHECK_OK(zt_object_get_info(hub, o, &hi)) ||
        !CHECK_OK(zt_component_get_info(plain, o, 0, &pc)) ||
        !CHECK_OK(zt_component_get_info(hub, o, 0, &hc))) {
      return;
    }
    CHECK_STR(hi.name, pi.name);
    if (!CHECK_U64(hc.decoded_length, pc.decoded_length)) continue;
    want = malloc(pc.decoded_length + 1);
    got = calloc(1, pc.decoded_length + 1);
    if (CHECK(want != NULL && got != NULL) &&
        CHECK_OK(zt_component_read(plain, o, pc.role, want, pc.decoded_length)) &&
        CHECK_OK(zt_component_read(hub, o, hc.role, got, hc.decoded_length)) &&
        !CHECK_MEM(got, want, pc.decoded_length)) {
      printf("note: %s: object %s\n", what, pi.name);
    }
    free(want);
    free(got);
  }
}

/* The set of `k` laid out as huggingface_hub's cache keeps a download (each file's bytes
 * in HUB/models--org--model/blobs/<digest>, and under snapshots/<rev>/ a relative link
 * of its name to the blob), opened through the snapshot in every mode; then the victim's
 * link into a third directory, HUB/third: refused. */
static void run_hub(const char *vectors, const kind *k) {
  /* Each path longer than the one it is made from (HUB: 256). */
  char repo[320], blobs[384], third[384], snapshot[448], path[640], from[640], target[640];
  char plain_path[640], victim_blob[640], third_victim[640], opened[640];
  const char *up = strcmp(k->name, "onnx") == 0 ? "../../.." : "../..";
  unsigned char *victim = NULL;
  size_t victim_size = 0, i, m;
  zt_reader *plain = NULL, *r = NULL;
  join(repo, sizeof repo, HUB, "models--org--model");
  join(blobs, sizeof blobs, repo, "blobs");
  join(third, sizeof third, HUB, "third");
  snprintf(snapshot, sizeof snapshot, "%s/snapshots/" REV "%s", repo,
           strcmp(k->name, "onnx") == 0 ? "/onnx" : "");
  snprintf(path, sizeof path, "%s/snapshots", repo);
  if (!CHECK(mkdir(repo, 0700) == 0 && mkdir(blobs, 0700) == 0 && mkdir(path, 0700) == 0)) return;
  snprintf(path, sizeof path, "%s/snapshots/" REV, repo);
  if (!CHECK(mkdir(path, 0700) == 0)) return;
  if (strcmp(k->name, "onnx") == 0 && !CHECK(mkdir(snapshot, 0700) == 0)) return;
  if (!CHECK(mkdir(third, 0700) == 0)) return;
  for (i = 0; i < 4 && k->files[i] != NULL; i++) {
    char digest[17], blob[640];
    size_t n;
    unsigned char *bytes;
    snprintf(from, sizeof from, "%s/%s/%s", vectors, k->from, k->files[i]);
    bytes = zt_test_slurp(from, &n);
    if (!CHECK(bytes != NULL)) return;
    blob_name(digest, bytes, n);
    join(blob, sizeof blob, blobs, digest);
    snprintf(target, sizeof target, "%s/blobs/%s", up, digest);
    join(path, sizeof path, snapshot, k->files[i]);
    CHECK(write_file(blob, bytes, n));
    CHECK(symlink(target, path) == 0);
    if (strcmp(k->files[i], k->victim) == 0) {
      snprintf(victim_blob, sizeof victim_blob, "%s", target);
      victim = bytes;
      victim_size = n;
    } else {
      free(bytes);
    }
  }
  snprintf(plain_path, sizeof plain_path, "%s/%s/%s", vectors, k->from, k->open);
  join(opened, sizeof opened, snapshot, k->open);
  if (!CHECK(victim != NULL) || !CHECK_OK(zt_open(plain_path, &plain))) goto out;
  for (m = 0; m < sizeof MODES / sizeof MODES[0]; m++) {
    zt_open_options o;
    char what[128];
    snprintf(what, sizeof what, "hub, %s, %s", k->name, MODE_NAMES[m]);
    memset(&o, 0, sizeof o);
    o.flags = MODES[m];
    if (!CHECK_OK(zt_open_with(opened, &o, &r))) continue;
    CHECK_U64(zt_shard_count(r), zt_shard_count(plain));
    for (i = 0; i < zt_shard_count(r); i++) {
      const char *shard = NULL;
      /* The snapshot's names, as the caller's path names them (not the blobs'). */
      if (CHECK_OK(zt_shard_get_path(r, i, &shard))) {
        CHECK(strncmp(shard, snapshot, strlen(snapshot)) == 0 && shard[strlen(snapshot)] == '/');
      }
    }
    check_same_objects(plain, r, what);
    zt_close(r);
    r = NULL;
  }
  /* The same bytes in a third directory, linked relatively and absolutely: refused. */
  join(third_victim, sizeof third_victim, third, k->victim);
  if (CHECK(write_file(third_victim, victim, victim_size))) {
    char rel[512];
    const char *targets[2];
    size_t t;
    snprintf(rel, sizeof rel, "%s/../third/%s", up, k->victim);
    targets[0] = rel;
    targets[1] = third_victim;
    for (t = 0; t < 2; t++) {
      if (!CHECK(link_in(snapshot, targets[t], k->victim))) continue;
      for (m = 0; m < sizeof MODES / sizeof MODES[0]; m++) {
        zt_open_options o;
        memset(&o, 0, sizeof o);
        o.flags = MODES[m];
        CHECK_STATUS(ZT_ERR_FORMAT, zt_open_with(opened, &o, &r));
        CHECK_CONTAINS(zt_last_error(), "leads outside the directory");
        CHECK_CONTAINS(zt_last_error(), "where the file opened really is");
        CHECK_CONTAINS(zt_last_error(), k->victim);
      }
    }
    /* Back to the blob: it opens again. */
    if (CHECK(link_in(snapshot, victim_blob, k->victim)) && CHECK_OK(zt_open(opened, &r))) {
      check_same_objects(plain, r, k->name);
      zt_close(r);
      r = NULL;
    }
  }
out:
  zt_close(plain);
  free(victim);
  /* Everything made above, deepest first. */
  for (i = 0; i < 4 && k->files[i] != NULL; i++) {
    size_t n;
    unsigned char *bytes;
    char digest[17], blob[640];
    join(path, sizeof path, snapshot, k->files[i]);
    unlink(path);
    snprintf(from, sizeof from, "%s/%s/%s", vectors, k->from, k->files[i]);
    bytes = zt_test_slurp(from, &n);
    if (bytes == NULL) continue;
    blob_name(digest, bytes, n);
    join(blob, sizeof blob, blobs, digest);
    unlink(blob);
    free(bytes);
  }
  join(path, sizeof path, snapshot, ".swap");
  unlink(path);
  unlink(third_victim);
  rmdir(third);
  if (strcmp(k->name, "onnx") == 0) rmdir(snapshot);
  snprintf(path, sizeof path, "%s/snapshots/" REV, repo);
  rmdir(path);
  snprintf(path, sizeof path, "%s/snapshots", repo);
  rmdir(path);
  rmdir(blobs);
  CHECK(rmdir(repo) == 0);
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
  join(HUB, sizeof HUB, ROOT, "hub");
  if (!CHECK(mkdir(MODEL, 0700) == 0 && mkdir(OUTSIDE, 0700) == 0 && mkdir(HUB, 0700) == 0)) {
    return zt_test_summary();
  }
  for (k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
    run_kind(argv[1], &KINDS[k]);
    run_hub(argv[1], &KINDS[k]);
  }
  CHECK(rmdir(MODEL) == 0 && rmdir(OUTSIDE) == 0 && rmdir(HUB) == 0 && rmdir(ROOT) == 0);
  return zt_test_summary();
}
