//! Sets of files read as one reader: Hugging Face `*.index.json` sets of safetensors
//! shards written by `safetensors` itself (with the index as `transformers` writes it),
//! GGUF split sets written by `gguf`'s own writer, zTensor shards; and the sets a loader
//! must refuse, each with an error naming the file at fault.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use ztensor::cbor::Value;
use ztensor::{ErrorKind, OpenOptions, Reader};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn vectors() -> PathBuf {
    repo().join("tests/vectors/sets")
}

/// A copy of the committed set `name` in a fresh directory, to break.
fn copy_set(name: &str, test: &str) -> PathBuf {
    let dir = common::temp_dir(test);
    for entry in std::fs::read_dir(vectors().join(name)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    dir
}

fn field<'v>(v: &'v Value, key: &str) -> &'v Value {
    match v {
        Value::Map(m) => m
            .iter()
            .find(|(k, _)| *k == Value::Text(key.into()))
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no {key}")),
        _ => panic!("not a map"),
    }
}

fn text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => panic!("not text: {v:?}"),
    }
}

fn list(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) => a,
        _ => panic!("not an array"),
    }
}

/// What `make_sets.py` says set `name` holds.
fn expected(name: &str) -> Value {
    let doc = std::fs::read_to_string(vectors().join("sets.json")).unwrap();
    let all = ztensor::json::from_json(&doc, 64).unwrap();
    field(&all, name).clone()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Every object of the set is there, in the shard the writer put it, with exactly the
/// bytes and shape handed to the writer; the set's attributes are as expected.
fn check_set(r: &Reader<'_>, dir: &Path, want: &Value) {
    let shards = list(field(want, "shards"));
    assert!(r.is_set());
    assert_eq!(r.shard_count(), shards.len());
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(r.shard_path(i).unwrap().unwrap(), dir.join(text(s)));
    }
    assert_eq!(
        r.shard_path(shards.len()).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert!(r.mapping().is_none(), "a set has no one mapping");
    let objects = list(field(want, "objects"));
    assert_eq!(r.objects().len(), objects.len());
    for o in objects {
        let name = text(field(o, "name"));
        let i = r.find(name).unwrap_or_else(|| panic!("{name} missing"));
        let obj = r.object(i).unwrap();
        let shape: Vec<u64> = list(field(o, "shape"))
            .iter()
            .map(|d| match d {
                Value::Unsigned(n) => *n,
                _ => panic!(),
            })
            .collect();
        assert_eq!(obj.shape(), &shape[..], "{name}");
        let c = &obj.components()[0];
        assert_eq!(
            Value::Unsigned(u64::from(c.file())),
            *field(o, "shard"),
            "{name}"
        );
        let bytes = unhex(text(field(o, "hex")));
        assert_eq!(r.read_to_vec(i, 0).unwrap(), bytes, "{name}");
        assert_eq!(r.view(i, 0).unwrap().data, &bytes[..], "{name}");
        // The location is meaningful in the shard's own file.
        let map = r.shard_mapping(c.file() as usize).unwrap();
        if let Some(map) = map {
            let at = c.offset() as usize;
            assert_eq!(&map[at..at + c.length() as usize], &bytes[..], "{name}");
        }
        let file = std::fs::read(r.shard_path(c.file() as usize).unwrap().unwrap()).unwrap();
        let at = c.offset() as usize;
        assert_eq!(&file[at..at + bytes.len()], &bytes[..], "{name}");
    }
    assert!(common::same(
        &r.attributes().unwrap(),
        field(want, "attributes")
    ));
    r.verify().unwrap();
}

#[test]
fn sets_from_the_real_tools_are_current() {
    let python = common::pinned_python("tests/interop/formats-requirements.txt", "formats-venv");
    let out = common::temp_dir("shards_fresh");
    common::run_ok(
        Command::new(&python)
            .arg(repo().join("tests/interop/make_sets.py"))
            .arg(&out),
    );
    let mut compared = 0;
    for sub in ["", "safetensors", "gguf"] {
        for entry in std::fs::read_dir(out.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                continue;
            }
            let rel = path.strip_prefix(&out).unwrap();
            let committed = std::fs::read(vectors().join(rel))
                .unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
            assert!(
                std::fs::read(&path).unwrap() == committed,
                "tests/vectors/sets/{} is stale: run tests/interop/make_sets.py",
                rel.display()
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 8);
}

#[test]
fn a_safetensors_index_opens_as_one_reader() {
    let dir = vectors().join("safetensors");
    let index = dir.join("model.safetensors.index.json");
    let want = expected("safetensors");
    for (use_mmap, open_all_shards) in [(true, false), (false, false), (true, true)] {
        let opts = OpenOptions {
            use_mmap,
            open_all_shards,
            ..Default::default()
        };
        let r = Reader::open_with(&index, &opts).unwrap();
        assert_eq!(r.container(), ztensor::Container::Safetensors);
        assert_eq!(r.origin(), Some(index.to_str().unwrap()));
        check_set(&r, &dir, &want);
    }
    // A batch over the whole set in one call.
    let r = Reader::open(&index).unwrap();
    let mut bufs: Vec<Vec<u8>> = r
        .objects()
        .iter()
        .map(|o| vec![0u8; o.components()[0].decoded_length() as usize])
        .collect();
    let mut requests = common::whole_loads(&mut bufs, None);
    assert!(r.load_batch(&mut requests, 2).iter().all(Result::is_ok));
    for (i, buf) in bufs.iter().enumerate() {
        assert_eq!(*buf, r.read_to_vec(i, 0).unwrap());
    }
}

#[test]
fn any_split_of_a_gguf_set_opens_the_set() {
    let dir = vectors().join("gguf");
    let want = expected("gguf");
    for name in list(field(&want, "shards")) {
        for open_all_shards in [false, true] {
            let opts = OpenOptions {
                open_all_shards,
                ..Default::default()
            };
            let r = Reader::open_with(dir.join(text(name)), &opts).unwrap();
            assert_eq!(r.container(), ztensor::Container::Gguf);
            check_set(&r, &dir, &want);
        }
    }
    // One split alone, when asked.
    let opts = OpenOptions {
        one_file: true,
        ..Default::default()
    };
    let r = Reader::open_with(dir.join("split-00002-of-00003.gguf"), &opts).unwrap();
    assert!(!r.is_set());
    assert_eq!(r.objects().len(), 2);
    assert_eq!(r.shard_count(), 1);
    assert!(r.mapping().is_some());
}

/// A view of a tensor in a shard not open yet opens the shard first: from many threads at
/// once, every view of a tensor is the one zero-copy slice of its shard's mapping (before,
/// the first view decoded a copy into the reader's cache and the next ones pointed into
/// the mapping: two addresses for one tensor, and the copy kept).
#[test]
fn first_views_of_a_set_are_zero_copy_from_every_thread() {
    for (set, first) in [
        ("gguf", "split-00001-of-00003.gguf"),
        ("safetensors", "model.safetensors.index.json"),
    ] {
        let r = Reader::open(vectors().join(set).join(first)).unwrap();
        let n = r.objects().len();
        let seen: Vec<Vec<(usize, bool)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|t| {
                    let r = &r;
                    s.spawn(move || {
                        let mut got = vec![(0, false); n];
                        for k in 0..n {
                            let i = (t + k) % n;
                            let v = r.view(i, 0).unwrap();
                            got[i] = (v.data.as_ptr() as usize, v.zero_copy);
                        }
                        got
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (i, o) in r.objects().iter().enumerate() {
            let c = &o.components()[0];
            let map = r.shard_mapping(c.file() as usize).unwrap().unwrap();
            let at = map.as_ptr() as usize + c.offset() as usize;
            for got in &seen {
                assert_eq!(got[i], (at, true), "{set}: {}", o.name());
            }
        }
    }
}

/// A set's index opened from a descriptor (or memory) is refused with a message saying
/// how a set is opened.
#[test]
fn an_index_by_descriptor_says_how_to_open_a_set() {
    let index = vectors().join("safetensors/model.safetensors.index.json");
    let file = std::fs::File::open(&index).unwrap();
    let e = Reader::from_file(file, "fd 7", &OpenOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(
        e.message().ends_with(
            "it looks like JSON, such as a sharded set's index: a set is opened by the path \
             of its *.index.json (its shards are opened next to it), not from a file \
             descriptor or memory, which hold one file (open each shard so instead)"
        ),
        "{e}"
    );
    assert!(e.message().starts_with("fd 7: "), "{e}");
    let bytes = std::fs::read(&index).unwrap();
    let e = Reader::from_slice(&bytes).unwrap_err();
    assert!(e.message().contains("a set is opened by the path"), "{e}");
}

/// A JSON file opened by path that is no index (a model directory's config.json) gets a
/// message about what to open by path, not about descriptors and memory.
#[test]
fn a_json_file_by_path_says_what_to_open() {
    let dir = common::temp_dir("shards_config_json");
    let config = dir.join("config.json");
    std::fs::write(&config, "{\"architectures\": [\"LlamaForCausalLM\"]}\n").unwrap();
    let e = Reader::open(&config).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format);
    assert_eq!(
        e.message(),
        format!(
            "{}: a JSON file, not a tensor file (it starts \"{{\\\"archit\"): a model's \
             configuration (config.json, tokenizer.json ...) holds no tensors; open its \
             weights (*.safetensors, *.gguf, *.bin ...) by their paths, or a sharded set by \
             the path of its *.index.json",
            config.display()
        )
    );
    // Leading white space is JSON too; a file that isn't JSON keeps the general message.
    std::fs::write(&config, "\n  {}\n\n\n\n\n").unwrap();
    let e = Reader::open(&config).unwrap_err();
    assert!(
        e.message().contains("a JSON file, not a tensor file"),
        "{e}"
    );
    std::fs::write(&config, "architectures = 1\n").unwrap();
    let e = Reader::open(&config).unwrap_err();
    assert!(e.message().contains("not a zTensor, safetensors"), "{e}");
    assert!(!e.message().contains("JSON"), "{e}");
}

/// Each shard of a set has its own layout: its data section is where the shard's own
/// header ends, so a component's `offset - data_offset` is computed with its shard's
/// layout (with the first shard's, a tensor of split 2 underflowed).
#[test]
fn every_shard_has_its_own_layout() {
    for (set, first) in [
        ("gguf", "split-00001-of-00003.gguf"),
        ("safetensors", "model.safetensors.index.json"),
    ] {
        let dir = vectors().join(set);
        let r = Reader::open(dir.join(first)).unwrap();
        let alone = |shard: usize| {
            let opts = OpenOptions {
                one_file: true,
                ..Default::default()
            };
            let path = r.shard_path(shard).unwrap().unwrap();
            Reader::open_with(path, &opts).unwrap().layout()
        };
        let layouts: Vec<_> = (0..r.shard_count())
            .map(|i| r.shard_layout(i).unwrap())
            .collect();
        for (i, l) in layouts.iter().enumerate() {
            assert_eq!(*l, alone(i), "{set} shard {i}");
        }
        assert_eq!(layouts[0], r.layout());
        assert!(
            layouts
                .iter()
                .any(|l| l.data_offset != layouts[0].data_offset),
            "{set}: the shards' headers differ in length, so do their data sections"
        );
        for o in r.objects() {
            let c = &o.components()[0];
            let l = layouts[c.file() as usize];
            assert!(c.offset() >= l.data_offset, "{set}: {}", o.name());
            assert_eq!((c.offset() - l.data_offset) % l.alignment, 0);
        }
        let e = r.shard_layout(r.shard_count()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }
    // A single file: shard 0 is the file.
    let r = Reader::open(repo().join("tests/vectors/gguf/plain_v3.gguf")).unwrap();
    assert_eq!(r.shard_layout(0).unwrap(), r.layout());
    assert_eq!(r.shard_layout(1).unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn shards_are_held_from_the_open_whatever_happens_to_their_names() {
    for name in ["safetensors", "gguf"] {
        let dir = copy_set(name, &format!("shards_lazy_{name}"));
        let (open, gone) = match name {
            "safetensors" => (
                "model.safetensors.index.json",
                "model-00003-of-00003.safetensors",
            ),
            _ => ("split-00001-of-00003.gguf", "split-00003-of-00003.gguf"),
        };
        let lazy = Reader::open(dir.join(open)).unwrap();
        let eager = Reader::open_with(
            dir.join(open),
            &OpenOptions {
                open_all_shards: true,
                ..Default::default()
            },
        )
        .unwrap();
        let no_mmap = Reader::open_with(
            dir.join(open),
            &OpenOptions {
                use_mmap: false,
                ..Default::default()
            },
        )
        .unwrap();
        let last = lazy.objects().len() - 1;
        assert_eq!(lazy.objects()[last].components()[0].file(), 2);
        let original = std::fs::read(dir.join(gone)).unwrap();
        // The shard removed and another file put under its name after the open: every
        // reader reads the shard it opened (it holds the file, never reopens the name),
        // first read included.
        std::fs::remove_file(dir.join(gone)).unwrap();
        std::fs::write(dir.join(gone), b"not the shard").unwrap();
        let want = eager.read_to_vec(last, 0).unwrap();
        assert_eq!(lazy.read_to_vec(last, 0).unwrap(), want);
        assert_eq!(no_mmap.read_to_vec(last, 0).unwrap(), want);
        let c = &lazy.objects()[last].components()[0];
        let (at, len) = (c.offset() as usize, c.length() as usize);
        assert_eq!(want, original[at..at + len]);
        // The same file cut short in place before its first read is refused when read
        // (its pages are not mapped past the end).
        std::fs::write(dir.join(gone), &original).unwrap();
        let lazy = Reader::open(dir.join(open)).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join(gone))
            .unwrap()
            .set_len(original.len() as u64 - 1)
            .unwrap();
        let e = lazy.read_to_vec(last, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{e}");
        assert!(e.message().contains("bytes now"), "{e}");
        // A missing shard is refused at the open, naming it.
        std::fs::remove_file(dir.join(gone)).unwrap();
        let e = Reader::open(dir.join(open)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(e.message().contains(gone), "{e}");
    }
}

/// The error opening `path`, which must fail with `kind` and a message holding `says`.
fn refused(path: &Path, kind: ErrorKind, says: &[&str]) {
    let e = Reader::open(path).unwrap_err();
    assert_eq!(e.kind(), kind, "{e}");
    for s in says {
        assert!(e.message().contains(s), "'{s}' not in: {e}");
    }
}

/// The committed index with its text edited.
fn edit_index(dir: &Path, edit: impl FnOnce(String) -> String) -> PathBuf {
    let index = dir.join("model.safetensors.index.json");
    let text = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, edit(text)).unwrap();
    index
}

#[test]
fn broken_indexes_are_refused_naming_the_file() {
    let st1 = "model-00001-of-00003.safetensors";
    let st3 = "model-00003-of-00003.safetensors";
    let dir = copy_set("safetensors", "shards_missing");
    std::fs::remove_file(dir.join(st3)).unwrap();
    refused(
        &dir.join("model.safetensors.index.json"),
        ErrorKind::Io,
        &["shard", st3],
    );

    // The index maps a tensor to a shard that doesn't hold it.
    let dir = copy_set("safetensors", "shards_lacking");
    let index = edit_index(&dir, |t| {
        t.replace(
            &format!("\"lm_head.weight\": \"{st3}\""),
            &format!("\"lm_head.weight\": \"{st1}\""),
        )
    });
    refused(
        &index,
        ErrorKind::Format,
        &["'lm_head.weight'", st1, "doesn't hold it"],
    );

    // A shard holds a tensor the index doesn't list.
    let dir = copy_set("safetensors", "shards_unlisted");
    let st2 = "model-00002-of-00003.safetensors";
    let index = edit_index(&dir, |t| {
        t.replace(
            &format!("    \"model.layers.0.attn.bias\": \"{st2}\",\n"),
            "",
        )
    });
    refused(
        &index,
        ErrorKind::Format,
        &[st2, "'model.layers.0.attn.bias'", "doesn't list"],
    );

    // A shard holds a tensor the index maps to another shard.
    let dir = copy_set("safetensors", "shards_elsewhere");
    let index = edit_index(&dir, |t| {
        t.replace(
            &format!("\"model.embed_tokens.weight\": \"{st1}\""),
            &format!("\"model.embed_tokens.weight\": \"{st3}\""),
        )
    });
    refused(
        &index,
        ErrorKind::Format,
        &[st1, "'model.embed_tokens.weight'", st3],
    );

    // Files outside the index's directory, named relatively or absolutely.
    for bad in [
        "../model-00003-of-00003.safetensors",
        "/etc/passwd",
        "a/../../x",
    ] {
        let dir = copy_set("safetensors", "shards_escape");
        let index = edit_index(&dir, |t| {
            t.replace(&format!("\"{st3}\""), &format!("\"{bad}\""))
        });
        refused(&index, ErrorKind::Format, &["'lm_head.weight'", bad]);
    }

    // Not an index at all.
    for (body, says) in [
        ("{\"metadata\": {}}", "no weight_map"),
        ("[1, 2]", "expected a JSON object (the index)"),
        (
            "{\"weight_map\": {\"a\": 1}}",
            "invalid type: integer `1`, expected a string",
        ),
        (
            "{\"weight_map\": {}, \"metadata\": 3}",
            "metadata is not a JSON object",
        ),
        ("{\"weight_map\": {", "not JSON"),
    ] {
        let dir = common::temp_dir("shards_not_index");
        let index = dir.join("x.index.json");
        std::fs::write(&index, body).unwrap();
        refused(&index, ErrorKind::Format, &[says, "x.index.json"]);
    }
    // A tensor listed twice (JSON allows repeated keys).
    let dir = copy_set("safetensors", "shards_twice");
    let index = edit_index(&dir, |t| {
        t.replace(
            &format!("\"lm_head.weight\": \"{st3}\","),
            &format!("\"lm_head.weight\": \"{st3}\", \"lm_head.weight\": \"{st3}\","),
        )
    });
    refused(&index, ErrorKind::Format, &["'lm_head.weight' twice"]);

    // An empty weight_map is a set of no files.
    let dir = common::temp_dir("shards_empty");
    let index = dir.join("x.index.json");
    std::fs::write(&index, "{\"weight_map\": {}}").unwrap();
    refused(&index, ErrorKind::Format, &["no files"]);
}

/// Indexes with an escape, a repeated key or a raw control character read exactly as
/// serde_json reads them, whatever shards the reading had already found and started
/// parsing.
#[test]
fn indexes_with_escapes_or_repeated_keys_read_as_json_says() {
    let st1 = "model-00001-of-00003.safetensors";
    let st2 = "model-00002-of-00003.safetensors";
    let st3 = "model-00003-of-00003.safetensors";
    let want = expected("safetensors");
    // Escapes in a name and in a file name, after entries the scan has handed on.
    let dir = copy_set("safetensors", "shards_escaped");
    let index = edit_index(&dir, |t| {
        t.replace(
            &format!("\"model.layers.0.attn.weight\": \"{st1}\""),
            "\"model.layers.0.attn\\u002eweight\": \"model-00001-of-00003\\u002esafetensors\"",
        )
    });
    assert!(
        std::fs::read_to_string(&index)
            .unwrap()
            .contains("attn\\u002eweight")
    );
    check_set(&Reader::open(&index).unwrap(), &dir, &want);

    // A repeated weight_map: the last one is the index's (serde_json's reading), so the
    // shards of the first, already found, are not the set's.
    let dir = copy_set("safetensors", "shards_repeated");
    let index = edit_index(&dir, |t| {
        t.replacen(
            "\"weight_map\": {",
            &format!("\"weight_map\": {{\"x\": \"{st2}\"}}, \"weight_map\": {{"),
            1,
        )
    });
    check_set(&Reader::open(&index).unwrap(), &dir, &want);
    let index = edit_index(&dir, |t| {
        let end = t.rfind('}').unwrap();
        format!(
            "{}, \"weight_map\": {{\"x\": \"gone.safetensors\"}}}}",
            &t[..end]
        )
    });
    refused(&index, ErrorKind::Io, &["shard gone.safetensors"]);

    // A raw tab inside a name is not JSON.
    let dir = copy_set("safetensors", "shards_control");
    let index = edit_index(&dir, |t| {
        t.replace("\"lm_head.weight\"", "\"lm_head\t.weight\"")
    });
    refused(
        &index,
        ErrorKind::Format,
        &["not JSON", "control character"],
    );

    // Shards found in the order 3, 1, 2, two of them missing: the first missing in the
    // set's order is named, whichever was parsed first.
    let dir = copy_set("safetensors", "shards_two_missing");
    std::fs::remove_file(dir.join(st1)).unwrap();
    std::fs::remove_file(dir.join(st3)).unwrap();
    for _ in 0..20 {
        refused(
            &dir.join("model.safetensors.index.json"),
            ErrorKind::Io,
            &["shard", st1],
        );
    }
}

/// Replaces the only occurrence of `from` in a file with `to` (as long).
fn patch(path: &Path, from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let mut bytes = std::fs::read(path).unwrap();
    let at: Vec<usize> = (0..bytes.len() - from.len() + 1)
        .filter(|&i| &bytes[i..i + from.len()] == from)
        .collect();
    assert_eq!(at.len(), 1, "{}", path.display());
    bytes[at[0]..at[0] + from.len()].copy_from_slice(to);
    std::fs::write(path, bytes).unwrap();
}

/// The bytes of a GGUF key/value of type uint16 (2).
fn kv_u16(key: &str, value: u16) -> Vec<u8> {
    let mut v = (key.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(key.as_bytes());
    v.extend_from_slice(&2u32.to_le_bytes());
    v.extend_from_slice(&value.to_le_bytes());
    v
}

#[test]
fn broken_split_sets_are_refused_naming_the_file() {
    let [s1, s2, s3] = [1, 2, 3].map(|i| format!("split-0000{i}-of-00003.gguf"));
    // A missing split.
    let dir = copy_set("gguf", "splits_missing");
    std::fs::remove_file(dir.join(&s3)).unwrap();
    refused(&dir.join(&s1), ErrorKind::Io, &[&s3]);

    // A name in two splits.
    let dir = copy_set("gguf", "splits_duplicate");
    patch(&dir.join(&s3), b"out.weight", b"tok.weight");
    refused(
        &dir.join(&s2),
        ErrorKind::Format,
        &["'tok.weight'", &s1, &s3],
    );

    // A split that says it belongs to a set of another size.
    let dir = copy_set("gguf", "splits_count");
    patch(
        &dir.join(&s2),
        &kv_u16("split.count", 3),
        &kv_u16("split.count", 4),
    );
    refused(&dir.join(&s1), ErrorKind::Format, &[&s2, "split.count 4"]);
    // ... opened itself, its name contradicts it.
    refused(&dir.join(&s2), ErrorKind::Format, &[&s2, "contradicts"]);

    // A split that says it is another split.
    let dir = copy_set("gguf", "splits_number");
    patch(
        &dir.join(&s3),
        &kv_u16("split.no", 2),
        &kv_u16("split.no", 1),
    );
    refused(&dir.join(&s1), ErrorKind::Format, &[&s3, "split.no 1"]);

    // A split file renamed: its set can't be found.
    let dir = copy_set("gguf", "splits_renamed");
    std::fs::rename(dir.join(&s2), dir.join("renamed.gguf")).unwrap();
    refused(
        &dir.join("renamed.gguf"),
        ErrorKind::Format,
        &["renamed.gguf", "name"],
    );
    let opts = OpenOptions {
        one_file: true,
        ..Default::default()
    };
    assert_eq!(
        Reader::open_with(dir.join("renamed.gguf"), &opts)
            .unwrap()
            .objects()
            .len(),
        2
    );
}

#[test]
fn ztensor_shards_open_through_an_index() {
    use ztensor::{DType, WriteOptions, Writer};
    let dir = common::temp_dir("shards_zt");
    let data = common::bytes(7, 4096);
    for (i, names) in [["a", "b"], ["c", "d"]].iter().enumerate() {
        let mut w = Writer::create(dir.join(format!("m-{:05}-of-00002.zt", i + 1))).unwrap();
        for (j, n) in names.iter().enumerate() {
            let opts = if j == 0 {
                WriteOptions::zstd(3)
            } else {
                WriteOptions::default()
            };
            w.add(n, DType::U8, &[4096], &data, &opts).unwrap();
        }
        w.finish().unwrap();
    }
    std::fs::write(
        dir.join("m.zt.index.json"),
        "{\"metadata\": {\"total_size\": 16384, \"note\": \"zt\"},\n \"weight_map\": {\
         \"a\": \"m-00001-of-00002.zt\", \"b\": \"m-00001-of-00002.zt\", \
         \"c\": \"m-00002-of-00002.zt\", \"d\": \"m-00002-of-00002.zt\"}}",
    )
    .unwrap();
    let r = Reader::open(dir.join("m.zt.index.json")).unwrap();
    assert_eq!(r.container(), ztensor::Container::ZTensor);
    let names: Vec<&str> = r.objects().iter().map(|o| o.name()).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    for (i, o) in r.objects().iter().enumerate() {
        assert_eq!(o.components()[0].file(), (i / 2) as u32);
        assert_eq!(r.read_to_vec(i, 0).unwrap(), data);
        let mut piece = [0u8; 10];
        r.read_range(i, 0, 4000, &mut piece).unwrap();
        assert_eq!(piece, data[4000..4010]);
        r.prefetch(i).unwrap();
        r.release(i).unwrap();
    }
    r.verify().unwrap();
    assert_eq!(
        r.attributes().unwrap(),
        ztensor::json::from_json("{\"total_size\": 16384, \"note\": \"zt\"}", 8).unwrap()
    );
    // Mixed formats in one set are refused.
    std::fs::copy(
        vectors().join("safetensors/model-00003-of-00003.safetensors"),
        dir.join("m-00002-of-00002.zt"),
    )
    .unwrap();
    refused(
        &dir.join("m.zt.index.json"),
        ErrorKind::Format,
        &["m-00002-of-00002.zt"],
    );
}

/// The names in a directory, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn the_sharded_writer_writes_a_set_the_reader_opens() {
    use ztensor::{DType, ShardedWriter, WriteOptions};
    let dir = common::temp_dir("shards_writer");
    let data: Vec<Vec<u8>> = (0..5).map(|i| common::bytes(i, 4096)).collect();
    let mut w = ShardedWriter::create_with(dir.join("model.zt"), 10_000, &common::v12()).unwrap();
    for (i, d) in data.iter().enumerate().take(4) {
        let opts = match i {
            1 => WriteOptions::zstd(3),
            _ => WriteOptions::default(),
        };
        w.add(&format!("t{i}"), DType::U8, &[4096], d, &opts)
            .unwrap();
    }
    // Names are unique across the set, not only within a shard.
    let e = w
        .add("t0", DType::U8, &[4096], &data[0], &WriteOptions::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // Streamed: its size is unknown when it begins, so it joins the current shard, not
    // yet at the limit.
    w.begin_object("t4", "dense", &[4096]).unwrap();
    w.begin_component("data", DType::U8, None, &WriteOptions::default())
        .unwrap();
    w.write(&data[4][..1000]).unwrap();
    w.write(&data[4][1000..]).unwrap();
    w.end_component().unwrap();
    w.end_object().unwrap();
    w.set_file_attributes(ztensor::json::from_json("{\"format\": \"zt\"}", 8).unwrap())
        .unwrap();
    // Nothing is visible under a final name before finish.
    assert!(
        listing(&dir).iter().all(|n| n.starts_with('.')),
        "{:?}",
        listing(&dir)
    );
    let index = w.finish().unwrap();
    assert_eq!(index, dir.join("model.zt.index.json"));
    assert_eq!(
        listing(&dir),
        [
            "model-00001-of-00002.zt",
            "model-00002-of-00002.zt",
            "model.zt.index.json"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&index).unwrap(),
        "{\n  \"metadata\": {\n    \"format\": \"zt\",\n    \"total_size\": 20480\n  },\n  \
         \"weight_map\": {\n    \"t0\": \"model-00001-of-00002.zt\",\n    \
         \"t1\": \"model-00001-of-00002.zt\",\n    \"t2\": \"model-00002-of-00002.zt\",\n    \
         \"t3\": \"model-00002-of-00002.zt\",\n    \"t4\": \"model-00002-of-00002.zt\"\n  }\n}\n"
    );
    let r = Reader::open(&index).unwrap();
    assert_eq!(r.shard_count(), 2);
    for (i, d) in data.iter().enumerate() {
        let o = r.find(&format!("t{i}")).unwrap();
        assert_eq!(
            r.object(o).unwrap().components()[0].file(),
            (i / 2).min(1) as u32
        );
        assert_eq!(r.read_to_vec(o, 0).unwrap(), *d);
    }
    r.verify().unwrap();

    // An object larger than the limit gets a shard of its own; a set copied from a set.
    let out = common::temp_dir("shards_writer_copy");
    let mut w = ShardedWriter::create(out.join("copy"), 100).unwrap();
    for o in 0..r.objects().len() {
        w.copy_object(&r, o, &Default::default()).unwrap();
    }
    let copy = Reader::open(w.finish().unwrap()).unwrap();
    assert_eq!(copy.shard_count(), 5);
    for o in 0..5 {
        assert_eq!(
            copy.read_to_vec(o, 0).unwrap(),
            r.read_to_vec(o, 0).unwrap()
        );
    }

    // Dropped unfinished: nothing is left behind.
    let gone = common::temp_dir("shards_writer_dropped");
    let mut w = ShardedWriter::create(gone.join("m"), 5000).unwrap();
    for (i, d) in data.iter().enumerate() {
        w.add(
            &format!("t{i}"),
            DType::U8,
            &[4096],
            d,
            &WriteOptions::default(),
        )
        .unwrap();
    }
    drop(w);
    assert!(listing(&gone).is_empty(), "{:?}", listing(&gone));
    // An empty set, a zero limit, a path that names no set.
    let e = ShardedWriter::create(gone.join("m"), 5000)
        .unwrap()
        .finish()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert!(listing(&gone).is_empty(), "{:?}", listing(&gone));
    let e = ShardedWriter::create(gone.join("m"), 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = ShardedWriter::create(gone.join(".zt"), 10).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn digests_of_a_set_are_checked_in_the_shard_that_holds_them() {
    use ztensor::{DType, DigestAlgorithm, ShardedWriter, WriteOptions};
    let dir = common::temp_dir("shards_verify");
    let data: Vec<Vec<u8>> = (0..3).map(|i| common::bytes(100 + i, 1000)).collect();
    let mut w = ShardedWriter::create(dir.join("v"), 1).unwrap();
    for (i, d) in data.iter().enumerate() {
        let opts = WriteOptions::default().with_digest(DigestAlgorithm::Sha256);
        w.add(&format!("t{i}"), DType::U8, &[1000], d, &opts)
            .unwrap();
    }
    let index = w.finish().unwrap();
    let verify = OpenOptions {
        verify_on_open: true,
        ..Default::default()
    };
    Reader::open_with(&index, &verify).unwrap();
    // One byte of t1's data, in the second shard, changed.
    let shard = dir.join("v-00002-of-00003.zt");
    let r = Reader::open(&index).unwrap();
    let at = r.object(1).unwrap().components()[0].offset() as usize;
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[at + 10] ^= 1;
    std::fs::write(&shard, bytes).unwrap();
    let e = Reader::open_with(&index, &verify).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checksum, "{e}");
    assert!(
        e.message().contains("v-00002-of-00003.zt: object 't1'"),
        "{e}"
    );
    let e = r.verify_component(1, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checksum, "{e}");
    r.verify_component(0, 0).unwrap();
    r.verify_component(2, 0).unwrap();
}

#[test]
fn an_object_refused_in_a_set_is_left_out_of_its_index() {
    use ztensor::{DType, WriteOptions, Writer};
    let dir = common::temp_dir("shards_refused");
    let raw = WriteOptions::default();
    // The set is the same writer as a single file, with another destination.
    let mut w = Writer::create_sharded_with(dir.join("m"), 1 << 20, &Default::default()).unwrap();
    w.add("a", DType::U8, &[4], &[1, 2, 3, 4], &raw).unwrap();
    // Dense data short of its shape: refused at end_object, and left out.
    w.begin_object("bad", "dense", &[8]).unwrap();
    w.add_component("data", DType::U8, None, &[0; 4], &raw)
        .unwrap();
    let e = w.end_object().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // Its name is free again, and the index lists only what the shards hold.
    w.add("bad", DType::U8, &[2], &[5, 6], &raw).unwrap();
    w.finish().unwrap();
    let index = dir.join("m.zt.index.json");
    assert_eq!(
        std::fs::read_to_string(&index).unwrap(),
        "{\n  \"metadata\": {\n    \"total_size\": 6\n  },\n  \"weight_map\": {\n    \
         \"a\": \"m-00001-of-00001.zt\",\n    \"bad\": \"m-00001-of-00001.zt\"\n  }\n}\n"
    );
    let r = Reader::open(&index).unwrap();
    assert_eq!(r.objects().len(), 2);
    assert_eq!(r.read_to_vec(r.find("bad").unwrap(), 0).unwrap(), [5, 6]);

    // An object's attributes can be set while its shard is being written, not after.
    let mut w = Writer::create_sharded_with(dir.join("n"), 1, &Default::default()).unwrap();
    w.add("x", DType::U8, &[1], &[1], &raw).unwrap();
    w.add("y", DType::U8, &[1], &[2], &raw).unwrap();
    let attrs = || ztensor::json::from_json("{\"k\": 1}", 8).unwrap();
    let e = w.set_object_attributes("x", attrs()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State, "{e}");
    assert_eq!(
        e.message(),
        "object 'x' is in a shard already finished: set its attributes before adding \
         objects that start another shard"
    );
    let e = w.set_object_attributes("z", attrs()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    w.set_object_attributes("y", attrs()).unwrap();
    let e = w.add("x", DType::U8, &[1], &[1], &raw).unwrap_err();
    assert_eq!(
        e.message(),
        "an object named 'x' was already added to the set"
    );
    w.finish().unwrap();
    let r = Reader::open(dir.join("n.zt.index.json")).unwrap();
    assert_eq!(r.shard_count(), 2);
    let y = r.object(r.find("y").unwrap()).unwrap();
    assert!(y.raw_attributes().is_some());
}

#[test]
fn a_sets_attributes_become_the_index_metadata_as_json_values() {
    use ztensor::{DType, ShardedWriter, WriteOptions};
    let dir = common::temp_dir("shards_metadata");
    let mut w = ShardedWriter::create(dir.join("m"), 1 << 20).unwrap();
    w.add("a", DType::U8, &[1], &[7], &WriteOptions::default())
        .unwrap();
    let text = |s: &str| Value::Text(s.into());
    w.set_file_attributes(Value::Map(vec![
        (text("z"), Value::Bytes(vec![0xab, 1])),
        (text("big"), Value::Negative(u64::MAX)),
        (
            text("list"),
            Value::Array(vec![Value::Float(0.5), Value::Null]),
        ),
    ]))
    .unwrap();
    // Not a map: refused, the attributes set before stay.
    let e = w.set_file_attributes(Value::Unsigned(1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let index = w.finish().unwrap();
    // Keys sorted; bytes as {"$bytes": hex}; an integer below i64's range as the
    // nearest float.
    assert_eq!(
        std::fs::read_to_string(&index).unwrap(),
        "{\n  \"metadata\": {\n    \"big\": -1.8446744073709552e+19,\n    \"list\": [\n      \
         0.5,\n      null\n    ],\n    \"total_size\": 1,\n    \"z\": {\n      \
         \"$bytes\": \"ab01\"\n    }\n  },\n  \"weight_map\": {\n    \
         \"a\": \"m-00001-of-00001.zt\"\n  }\n}\n"
    );
}
