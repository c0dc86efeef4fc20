//! The files a set opens (docs/reliability.md, "The files a set opens"), for every kind
//! of set: a safetensors index's shards, a GGUF split set's other splits, a zTensor v2
//! root's shards, an ONNX model's external data. Each is opened beneath the directory of
//! the file opened, once, and read only through that descriptor:
//!
//! - a link that leads out of the directory (absolute, relative, or climbing out and back
//!   in) is refused with `Format`, in every open mode; a link inside it is followed;
//! - a name swapped for a link to an outside file after the open reads the original
//!   bytes (the file the set holds) or fails clearly (a v2 shard not opened yet), never
//!   the outside file's bytes, with and without a mapping and with every shard opened at
//!   open;
//! - the same while another thread swaps the name back and forth during the opens;
//! - a Hugging Face hub cache snapshot (`snapshots/<rev>/`, every file a relative link into
//!   `../../blobs/`) opens as a set, each file a link beneath the real directory of the
//!   file opened, in every open mode, and reads the plain set's bytes; a link from it into
//!   any third directory stays refused, as does every link out when the file opened is
//!   not itself a link.

mod common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ztensor::cbor::Value;
use ztensor::{CreateOptions, DType, ErrorKind, FileVersion, OpenOptions, Reader, Writer};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A set in a directory of its own: the file to open, the file of the set the tests
/// replace ("victim") and an object whose bytes are in it.
struct Set {
    kind: &'static str,
    dir: PathBuf,
    open: &'static str,
    victim: &'static str,
}

/// The open modes every case runs in: mapped (shards mapped when first read), pread
/// only, and every shard opened and mapped at open.
fn modes() -> [(&'static str, OpenOptions); 3] {
    [
        ("mapped", OpenOptions::default()),
        (
            "no mmap",
            OpenOptions {
                use_mmap: false,
                ..OpenOptions::default()
            },
        ),
        (
            "all shards",
            OpenOptions {
                open_all_shards: true,
                ..OpenOptions::default()
            },
        ),
    ]
}

const KINDS: [&str; 4] = ["safetensors", "gguf", "onnx", "v2"];

/// A fresh copy of the set of `kind` in `<test dir>/model`.
fn make(kind: &'static str, test: &str) -> Set {
    let root = common::temp_dir(&format!("set_files_{test}_{kind}"));
    let dir = root.join("model");
    std::fs::create_dir(&dir).unwrap();
    let copy_all = |from: &Path| {
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    };
    let (open, victim) = match kind {
        "safetensors" => {
            copy_all(&repo().join("tests/vectors/sets/safetensors"));
            (
                "model.safetensors.index.json",
                "model-00003-of-00003.safetensors",
            )
        }
        "gguf" => {
            copy_all(&repo().join("tests/vectors/sets/gguf"));
            ("split-00001-of-00003.gguf", "split-00003-of-00003.gguf")
        }
        "onnx" => {
            for name in ["model_external.onnx", "model_external.weights"] {
                let from = repo().join("tests/vectors/onnx").join(name);
                std::fs::copy(from, dir.join(name)).unwrap();
            }
            ("model_external.onnx", "model_external.weights")
        }
        "v2" => {
            write_v2_set(&dir);
            ("model.zt", "model-00002.zt")
        }
        _ => unreachable!(),
    };
    Set {
        kind,
        dir,
        open,
        victim,
    }
}

impl Set {
    fn open(&self, options: &OpenOptions) -> ztensor::Result<Reader<'static>> {
        Reader::open_with(self.dir.join(self.open), options)
    }

    /// The first object whose bytes are in the victim, and those bytes' range in it.
    fn target(&self, r: &Reader<'_>) -> (usize, std::ops::Range<usize>) {
        let shard = (0..r.shard_count())
            .find(|&i| r.shard_path(i).unwrap().unwrap() == self.dir.join(self.victim))
            .unwrap_or_else(|| panic!("{}: no shard {}", self.kind, self.victim));
        let o = (r.objects().iter())
            .position(|o| o.components()[0].file() as usize == shard)
            .unwrap_or_else(|| panic!("{}: nothing in {}", self.kind, self.victim));
        let c = &r.objects()[o].components()[0];
        let at = c.offset() as usize;
        (o, at..at + c.length() as usize)
    }

    /// A directory beside the set's (outside it), made fresh.
    fn outside(&self) -> PathBuf {
        let out = self.dir.parent().unwrap().join("outside");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir(&out).unwrap();
        out
    }

    /// Puts a symbolic link to `target` under the victim's name, atomically (a rename).
    fn link_victim(&self, target: &Path) {
        let tmp = self.dir.join(".swap");
        let _ = std::fs::remove_file(&tmp);
        symlink(target, &tmp).unwrap();
        std::fs::rename(&tmp, self.dir.join(self.victim)).unwrap();
    }
}

/// The error `r` gives, or the error reading `object` from it (a v2 shard is opened
/// when first read).
fn open_and_read(set: &Set, options: &OpenOptions, object: usize) -> ztensor::Result<Vec<u8>> {
    set.open(options)?.read_to_vec(object, 0)
}

/// The victim's bytes with those of `range` inverted: a file an attacker could put
/// outside, of the same size and layout, whose bytes differ from the victim's.
fn altered(victim: &[u8], range: &std::ops::Range<usize>) -> Vec<u8> {
    let mut bytes = victim.to_vec();
    bytes[range.clone()].iter_mut().for_each(|b| *b ^= 0xff);
    bytes
}

#[test]
fn links_out_of_the_directory_are_refused_for_every_kind_of_set() {
    for kind in KINDS {
        let set = make(kind, "links");
        let r = set.open(&OpenOptions::default()).unwrap();
        let (object, range) = set.target(&r);
        let want = r.read_to_vec(object, 0).unwrap();
        drop(r);
        let victim = set.dir.join(set.victim);
        let original = std::fs::read(&victim).unwrap();
        assert_eq!(original[range.clone()], want[..], "{kind}");
        // The very same bytes outside the directory: refused by the rule, not by what
        // they hold.
        let outside = set.outside().join(set.victim);
        std::fs::write(&outside, &original).unwrap();
        let dir_name = set.dir.file_name().unwrap().to_str().unwrap();
        let real = set.dir.join("real.bin");
        std::fs::write(&real, &original).unwrap();
        let climbs_back = PathBuf::from(format!("../{dir_name}/real.bin"));
        for target in [
            outside.clone(),
            PathBuf::from(format!("../outside/{}", set.victim)),
            // Out of the directory and back in: refused as well (it leaves on the way).
            climbs_back,
            // Absolute, even to a file inside the directory.
            real.clone(),
        ] {
            set.link_victim(&target);
            for (mode, options) in modes() {
                let e = open_and_read(&set, &options, object).unwrap_err();
                let what = format!("{kind}, {mode}, link to {}", target.display());
                assert_eq!(e.kind(), ErrorKind::Format, "{what}: {e}");
                assert!(
                    e.message().contains("leads outside the directory"),
                    "{what}: {e}"
                );
                assert!(e.message().contains(set.victim), "{what}: {e}");
            }
        }
        // Links that stay inside are followed: to a file beside it, through a
        // subdirectory, through a link to a directory.
        std::fs::create_dir(set.dir.join("blobs")).unwrap();
        std::fs::write(set.dir.join("blobs/x"), &original).unwrap();
        symlink("blobs", set.dir.join("store")).unwrap();
        for target in ["real.bin", "blobs/x", "./blobs/../real.bin", "store/x"] {
            set.link_victim(Path::new(target));
            for (mode, options) in modes() {
                let got = open_and_read(&set, &options, object)
                    .unwrap_or_else(|e| panic!("{kind}, {mode}, link to {target}: {e}"));
                assert_eq!(got, want, "{kind}, {mode}, link to {target}");
            }
        }
        // A link to a directory inside, to a FIFO (which must not block the open), a
        // dangling link, a loop (the victim leads to "loop", which leads back): the
        // system's refusals.
        symlink(set.victim, set.dir.join("loop")).unwrap();
        let fifo = std::ffi::CString::new(set.dir.join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        for target in ["blobs", "fifo", "missing", "loop"] {
            set.link_victim(Path::new(target));
            for (mode, options) in modes() {
                let e = open_and_read(&set, &options, object).unwrap_err();
                let what = format!("{kind}, {mode}, link to {target}");
                assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}");
                assert!(e.message().contains(set.victim), "{what}: {e}");
            }
        }
    }
}

#[test]
fn names_that_climb_out_are_refused() {
    // An index naming a shard through `..`, and ONNX external data at `../`: refused
    // before anything is opened (the files named exist).
    let set = make("safetensors", "dotdot");
    let index = set.dir.join(set.open);
    let text = std::fs::read_to_string(&index).unwrap();
    std::fs::copy(
        set.dir.join(set.victim),
        set.dir.parent().unwrap().join(set.victim),
    )
    .unwrap();
    let climbing = format!("../{}", set.victim);
    std::fs::write(&index, text.replace(set.victim, &climbing)).unwrap();
    for (mode, options) in modes() {
        let e = set.open(&options).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{mode}: {e}");
        assert!(e.message().contains("outside"), "{mode}: {e}");
    }
    let onnx = repo().join("tests/vectors/onnx/external_traversal.onnx");
    for (mode, options) in modes() {
        let e = Reader::open_with(&onnx, &options).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{mode}: {e}");
    }
}

#[test]
fn a_name_swapped_for_a_link_after_the_open_never_reads_the_outside_file() {
    for kind in KINDS {
        let set = make(kind, "swap");
        let r = set.open(&OpenOptions::default()).unwrap();
        let (object, range) = set.target(&r);
        let want = r.read_to_vec(object, 0).unwrap();
        drop(r);
        let victim = set.dir.join(set.victim);
        let original = std::fs::read(&victim).unwrap();
        let outside = set.outside().join(set.victim);
        let theirs = altered(&original, &range);
        std::fs::write(&outside, &theirs).unwrap();
        for (mode, options) in modes() {
            let what = format!("{kind}, {mode}");
            std::fs::write(&victim, &original).unwrap();
            let readers = [set.open(&options).unwrap(), set.open(&options).unwrap()];
            // One reader has read the victim before the swap, one not yet.
            assert_eq!(readers[0].read_to_vec(object, 0).unwrap(), want, "{what}");
            set.link_victim(&outside);
            for (i, r) in readers.iter().enumerate() {
                match r.read_to_vec(object, 0) {
                    Ok(got) => assert_eq!(got, want, "{what}, reader {i}"),
                    Err(e) => {
                        // Only a v2 shard not opened yet is opened after the open: it is
                        // then refused, as at the open.
                        assert!(
                            kind == "v2" && i == 1 && mode != "all shards",
                            "{what}, reader {i}: {e}"
                        );
                        assert_eq!(e.kind(), ErrorKind::Format, "{what}: {e}");
                        assert!(e.message().contains("leads outside"), "{what}: {e}");
                    }
                }
                // Range reads and views go through the same descriptor.
                let mut first = [0u8; 4];
                if r.read_range(object, 0, 0, &mut first).is_ok() {
                    assert_eq!(first[..], want[..4], "{what}, reader {i}");
                }
                if let Ok(view) = r.view(object, 0) {
                    assert_eq!(view.data, &want[..], "{what}, reader {i}");
                }
            }
            // The outside file is untouched, and is what the name now leads to.
            assert_eq!(std::fs::read(&victim).unwrap(), theirs, "{what}");
            std::fs::remove_file(&victim).unwrap();
        }
    }
}

#[test]
fn racing_swaps_never_reach_the_outside_file() {
    const OPENS: usize = 150;
    for kind in KINDS {
        let set = make(kind, "race");
        let r = set.open(&OpenOptions::default()).unwrap();
        let (object, range) = set.target(&r);
        let want = r.read_to_vec(object, 0).unwrap();
        drop(r);
        let victim = set.dir.join(set.victim);
        let original = std::fs::read(&victim).unwrap();
        let outside = set.outside().join(set.victim);
        std::fs::write(&outside, altered(&original, &range)).unwrap();
        // A second name of the real file, to put it back under the victim's name.
        let stash = set.dir.join(".stash");
        std::fs::hard_link(&victim, &stash).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let swapper = {
            let (stop, swaps, dir, victim, outside, stash) = (
                stop.clone(),
                swaps.clone(),
                set.dir.clone(),
                victim.clone(),
                outside.clone(),
                stash.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let link = dir.join(".link");
                    let _ = std::fs::remove_file(&link);
                    symlink(&outside, &link).unwrap();
                    std::fs::rename(&link, &victim).unwrap();
                    let back = dir.join(".back");
                    let _ = std::fs::remove_file(&back);
                    std::fs::hard_link(&stash, &back).unwrap();
                    std::fs::rename(&back, &victim).unwrap();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let (mut read, mut refused) = (0, 0);
        // At least OPENS opens, and on until the name has been swapped a few hundred
        // times (the thread may start late).
        let mut i = 0;
        while i < OPENS || (swaps.load(Ordering::Relaxed) < 300 && i < 100 * OPENS) {
            let (mode, options) = &modes()[i % 3];
            match open_and_read(&set, options, object) {
                Ok(got) => {
                    assert_eq!(
                        got, want,
                        "{kind}, {mode}, open {i}: the outside file's bytes"
                    );
                    read += 1;
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Format, "{kind}, {mode}: {e}");
                    assert!(e.message().contains("leads outside"), "{kind}, {mode}: {e}");
                    refused += 1;
                }
            }
            i += 1;
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        let swaps = swaps.load(Ordering::Relaxed);
        println!("{kind}: {i} opens during {swaps} swaps: {read} read, {refused} refused");
        assert!(swaps > 0, "{kind}: the name was never swapped");
    }
}

// --- A Hugging Face hub cache: snapshots/<rev>/ holds links into ../../blobs/ -----------

/// The revision the snapshot is of (a commit hash, as the hub names it).
const REV: &str = "4f0c3a1d2b5e6f708192a3b4c5d6e7f801234567";

/// A set laid out as huggingface_hub's cache keeps a download: each file's bytes in
/// `blobs/<digest>` of `models--org--model/`, and under `snapshots/<rev>/` (in `onnx/`
/// below it for an ONNX model, as the hub's ONNX exports are) a relative link of the
/// file's name to its blob. `set` is the same set as real files in a directory of their
/// own, read to compare.
struct Cached {
    set: Set,
    /// The directory of the file opened: `snapshots/<rev>` (or its `onnx/`).
    snapshot: PathBuf,
    blobs: PathBuf,
    /// From the snapshot's directory up to the repository's ("../.." or "../../..").
    up: &'static str,
    /// The victim's blob's name in blobs/.
    victim_digest: String,
}

fn cached(kind: &'static str, test: &str) -> Cached {
    let set = make(kind, test);
    let repo = set.dir.parent().unwrap().join("models--org--model");
    let blobs = repo.join("blobs");
    let (snapshot, up) = match kind {
        "onnx" => (repo.join("snapshots").join(REV).join("onnx"), "../../.."),
        _ => (repo.join("snapshots").join(REV), "../.."),
    };
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), REV).unwrap();
    let mut victim_digest = String::new();
    for entry in std::fs::read_dir(&set.dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let digest = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes));
        if path.file_name().unwrap() == set.victim {
            victim_digest = digest.clone();
        }
        std::fs::write(blobs.join(&digest), &bytes).unwrap();
        symlink(
            format!("{up}/blobs/{digest}"),
            snapshot.join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    Cached {
        set,
        snapshot,
        blobs,
        up,
        victim_digest,
    }
}

impl Cached {
    fn open(&self, options: &OpenOptions) -> ztensor::Result<Reader<'static>> {
        Reader::open_with(self.snapshot.join(self.set.open), options)
    }

    /// The first object whose bytes are in the victim, and their range in it (the same
    /// index in the snapshot's reader as in the plain set's).
    fn target(&self) -> (usize, std::ops::Range<usize>) {
        self.set
            .target(&self.set.open(&OpenOptions::default()).unwrap())
    }

    /// The victim's blob.
    fn victim_blob(&self) -> PathBuf {
        self.blobs.join(&self.victim_digest)
    }

    /// Puts a link to `target` under the victim's name in the snapshot, atomically.
    fn link_victim(&self, target: &Path) {
        let tmp = self.snapshot.join(".swap");
        let _ = std::fs::remove_file(&tmp);
        symlink(target, &tmp).unwrap();
        std::fs::rename(&tmp, self.snapshot.join(self.set.victim)).unwrap();
    }

    /// The victim's link as the hub makes it: relative, into `blobs/`.
    fn hub_link(&self) -> PathBuf {
        PathBuf::from(format!("{}/blobs/{}", self.up, self.victim_digest))
    }
}

/// Every component of every object of `r`, read, by object name.
fn contents(r: &Reader<'_>) -> Vec<(String, Vec<Vec<u8>>)> {
    (r.objects().iter().enumerate())
        .map(|(i, o)| {
            let parts = (0..o.components().len())
                .map(|c| (r.read_to_vec(i, c)).unwrap_or_else(|e| panic!("{}[{c}]: {e}", o.name())))
                .collect();
            (o.name().to_owned(), parts)
        })
        .collect()
}

#[test]
fn a_hugging_face_cache_snapshot_opens_as_a_set() {
    for kind in KINDS {
        let hub = cached(kind, "hub");
        let plain = hub.set.open(&OpenOptions::default()).unwrap();
        let want = contents(&plain);
        let (object, range) = hub.set.target(&plain);
        let files = plain.shard_count();
        drop(plain);
        assert!(files > 1, "{kind}");
        let victim = std::fs::read(hub.victim_blob()).unwrap();
        // A file of the same size with other bytes, in a third directory.
        let outside = hub.set.outside().join(hub.set.victim);
        std::fs::write(&outside, altered(&victim, &range)).unwrap();
        for (mode, options) in modes() {
            let what = format!("{kind}, {mode}");
            let r = hub.open(&options).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(r.is_set(), "{what}");
            assert_eq!(r.shard_count(), files, "{what}");
            // The shards are the snapshot's names (as the caller's path names them), not
            // the blobs'.
            for i in 0..files {
                let path = r.shard_path(i).unwrap().unwrap();
                assert_eq!(path.parent().unwrap(), hub.snapshot, "{what}, shard {i}");
            }
            assert_eq!(contents(&r), want, "{what}");
            // The victim's link re-pointed after the open at a file with other bytes in
            // a third directory: the reader reads what it opened.
            hub.link_victim(&outside);
            assert_eq!(
                r.read_to_vec(object, 0).unwrap(),
                want[object].1[0],
                "{what}"
            );
            if let Ok(view) = r.view(object, 0) {
                assert_eq!(view.data, &want[object].1[0][..], "{what}");
            }
            drop(r);
            hub.link_victim(&hub.hub_link());
        }
        // A link of the victim's name to its blob by an absolute path, or through a
        // subdirectory of blobs/: beneath the real directory too.
        let blob = hub.victim_blob();
        std::fs::create_dir(hub.blobs.join("sub")).unwrap();
        std::fs::copy(&blob, hub.blobs.join("sub/copy")).unwrap();
        let through_sub = PathBuf::from(format!("{}/blobs/sub/copy", hub.up));
        for target in [blob.clone(), through_sub] {
            hub.link_victim(&target);
            for (mode, options) in modes() {
                let what = format!("{kind}, {mode}, link to {}", target.display());
                let r = hub.open(&options).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(contents(&r), want, "{what}");
            }
        }
    }
}

#[test]
fn links_from_a_snapshot_into_any_other_directory_are_refused() {
    for kind in KINDS {
        let hub = cached(kind, "hub_out");
        let (object, _) = hub.target();
        let blob = hub.victim_blob();
        let repo = hub.blobs.parent().unwrap();
        // The very same bytes in other directories: refused by the rule, not by what
        // they hold. A third directory beside the repository; the repository's own
        // snapshots/ and refs/ (neither the snapshot's directory nor blobs/); the
        // snapshot's directory reached out of blobs/ and back in.
        let outside = hub.set.outside().join(hub.set.victim);
        std::fs::copy(&blob, &outside).unwrap();
        std::fs::copy(&blob, repo.join("snapshots/copy")).unwrap();
        std::fs::copy(&blob, repo.join("refs/copy")).unwrap();
        std::fs::copy(&blob, hub.snapshot.join("real.bin")).unwrap();
        let rel = |s: &str| PathBuf::from(format!("{}/{s}", hub.up));
        let snapshot_from_repo = hub.snapshot.strip_prefix(repo).unwrap().to_str().unwrap();
        for target in [
            rel(&format!("../outside/{}", hub.set.victim)),
            outside.clone(),
            rel("snapshots/copy"),
            rel("refs/copy"),
            rel(&format!("blobs/../{snapshot_from_repo}/real.bin")),
        ] {
            hub.link_victim(&target);
            for (mode, options) in modes() {
                let what = format!("{kind}, {mode}, link to {}", target.display());
                let e = (hub.open(&options))
                    .and_then(|r| r.read_to_vec(object, 0))
                    .unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Format, "{what}: {e}");
                let message = e.message();
                assert!(
                    message.contains("leads outside the directory"),
                    "{what}: {e}"
                );
                assert!(
                    message.contains("where the file opened really is"),
                    "{what}: {e}"
                );
                assert!(message.contains(hub.set.victim), "{what}: {e}");
            }
        }
        // A link to blobs/ itself, and to a blob that isn't there (a download not
        // finished): the system's refusals.
        for target in [rel("blobs"), rel("blobs/missing")] {
            hub.link_victim(&target);
            for (mode, options) in modes() {
                let what = format!("{kind}, {mode}, link to {}", target.display());
                let e = (hub.open(&options))
                    .and_then(|r| r.read_to_vec(object, 0))
                    .unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}");
                assert!(e.message().contains(hub.set.victim), "{what}: {e}");
            }
        }
        hub.link_victim(&hub.hub_link());
        // The file opened a real file of the snapshot's directory (not a link into
        // blobs/): then the directory is the only one, and links into blobs/ lead out.
        let opened = hub.snapshot.join(hub.set.open);
        let bytes = std::fs::read(&opened).unwrap();
        std::fs::remove_file(&opened).unwrap();
        std::fs::write(&opened, bytes).unwrap();
        for (mode, options) in modes() {
            let e = (hub.open(&options))
                .and_then(|r| r.read_to_vec(object, 0))
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Format, "{kind}, {mode}: {e}");
            assert!(
                e.message().contains("leads outside the directory"),
                "{kind}, {mode}: {e}"
            );
            assert!(!e.message().contains("really is"), "{kind}, {mode}: {e}");
        }
    }
}

#[test]
fn a_snapshot_index_naming_blobs_through_dotdot_is_refused() {
    // Only a link may lead into blobs/: a name in the index that climbs out with '..'
    // is refused, though it leads to the very blob.
    let hub = cached("safetensors", "hub_dotdot");
    let index = std::fs::canonicalize(hub.snapshot.join(hub.set.open)).unwrap();
    let text = std::fs::read_to_string(&index).unwrap();
    let direct = hub.hub_link();
    let text = text.replace(hub.set.victim, direct.to_str().unwrap());
    std::fs::remove_file(&index).unwrap();
    std::fs::write(&index, text).unwrap();
    for (mode, options) in modes() {
        let e = hub.open(&options).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{mode}: {e}");
        assert!(e.message().contains("outside"), "{mode}: {e}");
    }
}

#[test]
fn racing_swaps_in_a_snapshot_never_reach_another_directory() {
    const OPENS: usize = 100;
    for kind in KINDS {
        let hub = cached(kind, "hub_race");
        let (object, range) = hub.target();
        let want = hub
            .open(&OpenOptions::default())
            .unwrap()
            .read_to_vec(object, 0);
        let want = want.unwrap();
        let victim = std::fs::read(hub.victim_blob()).unwrap();
        let outside = hub.set.outside().join(hub.set.victim);
        std::fs::write(&outside, altered(&victim, &range)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let swapper = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            let (snapshot, name) = (hub.snapshot.clone(), hub.set.victim);
            let (good, bad) = (hub.hub_link(), outside.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for target in [&bad, &good] {
                        let tmp = snapshot.join(".race");
                        let _ = std::fs::remove_file(&tmp);
                        symlink(target, &tmp).unwrap();
                        std::fs::rename(&tmp, snapshot.join(name)).unwrap();
                    }
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let (mut read, mut refused) = (0, 0);
        let mut i = 0;
        while i < OPENS || (swaps.load(Ordering::Relaxed) < 200 && i < 100 * OPENS) {
            let (mode, options) = &modes()[i % 3];
            match hub.open(options).and_then(|r| r.read_to_vec(object, 0)) {
                Ok(got) => {
                    assert_eq!(got, want, "{kind}, {mode}, open {i}: another file's bytes");
                    read += 1;
                }
                Err(e) => {
                    // Refused as leading out, or the name changed between finding where
                    // it leads and checking what was opened there.
                    let m = e.message();
                    assert!(
                        (e.kind() == ErrorKind::Format && m.contains("leads outside"))
                            || (e.kind() == ErrorKind::Io && m.contains("changed while")),
                        "{kind}, {mode}: {e}"
                    );
                    refused += 1;
                }
            }
            i += 1;
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        let swaps = swaps.load(Ordering::Relaxed);
        println!("{kind}: {i} opens during {swaps} swaps: {read} read, {refused} refused");
        assert!(swaps > 0, "{kind}: the name was never swapped");
    }
}

// --- A zTensor v2 root with a shard table, written by hand ------------------------------

const MAGIC: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0d, 0x0a, 0x1a, 0x0a];

fn t(s: &str) -> Value {
    Value::Text(s.into())
}

/// Deterministic CBOR (map keys sorted by their encodings), as v2 manifests are.
fn det(v: &Value) -> Vec<u8> {
    match v {
        Value::Map(pairs) => {
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> =
                pairs.iter().map(|(k, v)| (det(k), det(v))).collect();
            entries.sort();
            let mut out = Vec::new();
            common::cbor_head(&mut out, 5, entries.len() as u64);
            for (k, v) in entries {
                out.extend(k);
                out.extend(v);
            }
            out
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            common::cbor_head(&mut out, 4, items.len() as u64);
            items.iter().for_each(|i| out.extend(det(i)));
            out
        }
        other => ztensor::cbor::to_vec(other),
    }
}

/// Two shards (ordinary v2 files, one tensor each) and a root `model.zt` whose objects
/// `a` and `b` are those tensors' blobs.
fn write_v2_set(dir: &Path) {
    let xxh3 = |bytes: &[u8]| format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(bytes));
    let mut objects = Vec::new();
    let mut shards = Vec::new();
    for (label, object, seed) in [("00001", "a", 1u64), ("00002", "b", 2)] {
        let file = dir.join(format!("model-{label}.zt"));
        let data = common::bytes(seed, 300);
        let options = CreateOptions {
            durable: false,
            version: FileVersion::V2,
            ..CreateOptions::default()
        };
        let mut w = Writer::create_with(&file, &options).unwrap();
        w.add("x", DType::U8, &[300], &data, &Default::default())
            .unwrap();
        w.finish().unwrap();
        let offset = Reader::open(&file).unwrap().objects()[0].components()[0].offset();
        let part = Value::Map(vec![
            (t("dtype"), t("u8")),
            (
                t("blob"),
                Value::Array(vec![Value::Unsigned(offset), Value::Unsigned(300)]),
            ),
            (t("shard"), t(label)),
        ]);
        objects.push((
            t(object),
            Value::Map(vec![
                (t("shape"), Value::Array(vec![Value::Unsigned(300)])),
                (t("layout"), t("dense")),
                (t("parts"), Value::Map(vec![(t("data"), part)])),
            ]),
        ));
        let bytes = std::fs::read(&file).unwrap();
        shards.push((
            t(label),
            Value::Map(vec![
                (t("size"), Value::Unsigned(bytes.len() as u64)),
                (t("digest"), t(&xxh3(&bytes))),
            ]),
        ));
    }
    let manifest = det(&Value::Map(vec![
        (t("objects"), Value::Map(objects)),
        (t("shards"), Value::Map(shards)),
    ]));
    let mut root = MAGIC.to_vec();
    root.resize(4096, 0);
    let at = root.len() as u64;
    root.extend_from_slice(&manifest);
    let mut footer = [0u8; 40];
    footer[0..8].copy_from_slice(&at.to_le_bytes());
    footer[8..16].copy_from_slice(&(manifest.len() as u64).to_le_bytes());
    footer[16..24].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(&manifest).to_le_bytes());
    footer[24..28].copy_from_slice(&2u32.to_le_bytes());
    footer[32..40].copy_from_slice(&MAGIC);
    root.extend_from_slice(&footer);
    std::fs::write(dir.join("model.zt"), root).unwrap();
}
