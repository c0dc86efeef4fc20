//! The `zt` command-line tool, run as a program: exact output, JSON, exit codes, and
//! files it writes read back through the library. Needs the `cli` feature
//! (`cargo test --features cli --test cli`).
#![cfg(feature = "cli")]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use ztensor::cbor::Value;
use ztensor::json::from_json;
use ztensor::{DType, DigestAlgorithm, Encoding, Reader, WriteOptions, Writer};

mod common;
use common::{bytes, f32s, temp_dir, u64s};

/// What a run of `zt` gave.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `zt` with `args` in `dir`.
fn zt<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_zt"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("zt runs");
    Run {
        code: out
            .status
            .code()
            .expect("zt exited, not killed by a signal"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// Runs `zt`, expecting success with nothing on stderr; returns stdout.
fn ok<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> String {
    let run = zt(dir, args);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (0, ""),
        "zt {:?}",
        args.iter().map(|a| a.as_ref()).collect::<Vec<_>>()
    );
    run.stdout
}

fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/reference")
        .join(name)
}

/// A fresh directory holding copies of the named reference vectors (so that output
/// shows short relative paths).
fn dir_with(test: &str, vectors: &[&str]) -> PathBuf {
    let dir = temp_dir(&format!("cli_{test}"));
    for v in vectors {
        std::fs::copy(reference(v), dir.join(v)).unwrap();
    }
    dir
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

// --- info ------------------------------------------------------------------------------

#[test]
fn info_prints_a_header_and_one_row_per_component() {
    let dir = dir_with("info", &["v12_mixed.zt", "v12_rust_file_attributes.zt"]);
    assert_eq!(
        ok(&dir, &["info", "v12_mixed.zt"]),
        "\
v12_mixed.zt: version 1.2.0, 13 objects, no file attributes

name            format           shape      role           dtype           encoding  stored  decoded  digest
--------------------------------------------------------------------------------------------------------------------------------
adj             sparse_csr       [3, 3]     indices        u64             zstd        21 B     24 B  crc32c:0xD1809903
adj             sparse_csr       [3, 3]     indptr         u64             zstd        30 B     32 B  crc32c:0x0BA369ED
adj             sparse_csr       [3, 3]     values         u8              zstd        12 B      3 B  crc32c:0xADB2CC34
big             dense            [300]      data           u8              zstd        21 B    300 B  -
embed           dense            [4, 6]     data           bf16            zstd        57 B     48 B  crc32c:0x5E59DF89
fp8             dense            [9]        data           u8 (f8_e4m3fn)  raw          9 B      9 B  -
layer.0.bias    dense            [3]        data           f32             raw         12 B     12 B  crc32c:0x5C5639BC
layer.0.weight  dense            [3, 4]     data           f32             raw         48 B     48 B  -
mask            dense            [10]       data           bool            zstd        19 B     10 B  -
nothing         dense            [3, 0, 2]  data           i16             raw          0 B      0 B  -
pts             sparse_coo       [10, 10]   coords         u64             raw         32 B     32 B  -
pts             sparse_coo       [10, 10]   values         f16             raw          4 B      4 B  -
q4              quantized_group  [2, 8]     packed_weight  i32             raw          8 B      8 B  sha256:2bf8cb87f7bce821...
q4              quantized_group  [2, 8]     scales         f16             raw          4 B      4 B  sha256:0d7fafebf787d028...
q4              quantized_group  [2, 8]     zeros          f16             raw          4 B      4 B  sha256:6b6b0f7315d31682...
scalar          dense            []         data           f64             raw          8 B      8 B  -
step            dense            [1]        data           i64             raw          8 B      8 B  sha256:94ccf68f4e90ce49...
u               dense            [2]        data           u64             raw         16 B     16 B  -

18 components: 313 B stored, 570 B decoded
"
    );
    assert_eq!(
        ok(&dir, &["info", "v12_rust_file_attributes.zt"]),
        r#"v12_rust_file_attributes.zt: version 1.2.0, 1 object, 13 file attributes: beta, epoch, flag, framework, half, license, neg, nested, ... (5 more)

key        type      value
-----------------------------------------
beta       f64       0.9
epoch      u64       3
flag       bool      false
framework  string    "zt-vectors"
half       f64       0.5
license    string    "MIT"
neg        i64       -12
nested     map[1]    {"depth": {"k": 1}}
none       null      null
raw        bytes     <4 bytes>
tags       array[3]  ["x", "y", 1]
u64max     u64       18446744073709551615
名前       string    "ü ß"

name  format  shape   role  dtype  encoding  stored  decoded  digest
--------------------------------------------------------------------
a     dense   [2, 2]  data  f32    raw         16 B     16 B  -

1 component: 16 B stored, 16 B decoded
"#
    );
    // No objects: the header line only. Legacy files show their version.
    assert_eq!(
        ok(&reference(""), &["info", "v12_empty.zt"]),
        "v12_empty.zt: version 1.2.0, 0 objects, no file attributes\n"
    );
    assert_eq!(
        ok(&reference(""), &["info", "v01_rust_scalar.zt"]),
        "\
v01_rust_scalar.zt: version 0.1.0, 1 object, no file attributes

name  format  shape  role  dtype  encoding  stored  decoded  digest
-------------------------------------------------------------------
s     dense   []     data  f32    raw          4 B      4 B  -

1 component: 4 B stored, 4 B decoded
"
    );
}

/// GGUF key/values are listed with the types the file declared (u32 stays u32), arrays
/// with their element type and length, long values cut.
#[test]
fn info_shows_gguf_key_values_with_their_types() {
    let dir = temp_dir("cli_info_gguf");
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/gguf");
    for v in ["llama_tiny.gguf", "plain_v3.gguf"] {
        std::fs::copy(vectors.join(v), dir.join(v)).unwrap();
    }
    let out = ok(&dir, &["info", "llama_tiny.gguf"]);
    assert_eq!(
        out.split("\n\nname").next().unwrap(),
        r#"llama_tiny.gguf: version 3, 5 objects, 14 file attributes: general.architecture, general.name, llama.block_count, ... (11 more)

key                                     type         value
--------------------------------------------------------------------------------------------------------------------
general.architecture                    string       "llama"
general.name                            string       "tiny"
llama.block_count                       u32          2
llama.context_length                    u32          256
llama.embedding_length                  u32          64
llama.attention.head_count              u32          4
llama.attention.layer_norm_rms_epsilon  f32          1e-5
llama.rope.freq_base                    f32          10000.0
general.file_type                       u32          2
tokenizer.ggml.model                    string       "llama"
tokenizer.ggml.tokens                   string[100]  ["<unk>", "<s>", "</s>", "tok3", "tok4", "tok5", "tok6", "to...
tokenizer.ggml.scores                   f32[100]     [-0.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0, -9.0,...
tokenizer.ggml.token_type               i32[100]     [2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,...
tokenizer.ggml.bos_token_id             u32          1"#
    );
    let out = ok(&dir, &["info", "plain_v3.gguf"]);
    for line in [
        "test.u8                    u8         200\n",
        "test.i8                    i8         -100\n",
        "test.u16                   u16        60000\n",
        "test.i16                   i16        -30000\n",
        "test.u32                   u32        4000000000\n",
        "test.i32                   i32        -2000000000\n",
        "test.u64                   u64        18446744073709551615\n",
        "test.i64                   i64        -9223372036854775808\n",
        "test.f32                   f32        0.1\n",
        "test.f64                   f64        0.1\n",
        "test.bool_true             bool       true\n",
        "test.array_u8              u8[2]      [0, 255]\n",
        "test.array_bool            bool[2]    [true, false]\n",
        "test.array_nested          array[2]   [[1, 2], [3]]\n",
        "test.array_nested_strings  array[2]   [[\"x\"], [\"y\", \"z\"]]\n",
    ] {
        assert!(out.contains(line), "{line:?} not in\n{out}");
    }
}

#[test]
fn info_sizes_are_human_readable() {
    let dir = temp_dir("cli_info_sizes");
    let mut w = Writer::create_with(dir.join("sizes.zt"), &common::v12()).unwrap();
    let big = vec![0u8; 3 << 20];
    w.add("big", DType::U8, &[3 << 20], &big, &WriteOptions::zstd(1))
        .unwrap();
    w.add("kib", DType::F64, &[192], &[0u8; 1536], &Default::default())
        .unwrap();
    w.finish().unwrap();
    let out = ok(&dir, &["info", "sizes.zt"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[2..],
        [
            "name  format  shape      role  dtype  encoding   stored  decoded  digest",
            "------------------------------------------------------------------------",
            "big   dense   [3145728]  data  u8     zstd        115 B  3.0 MiB  -",
            "kib   dense   [192]      data  f64    raw       1.5 KiB  1.5 KiB  -",
            "",
            "2 components: 1.6 KiB stored, 3.0 MiB decoded",
        ]
    );
}

#[test]
fn info_json_is_the_whole_manifest() {
    let dir = dir_with(
        "info_json",
        &["v12_sparse_csr.zt", "v12_rust_file_attributes.zt"],
    );
    let out = ok(&dir, &["info", "--json", "v12_sparse_csr.zt"]);
    assert_eq!(
        out,
        concat!(
            r#"{"file":"v12_sparse_csr.zt","version":"1.2.0","attributes":null,"objects":[{"name":"m","format":"sparse_csr","shape":[3,5],"attributes":null,"components":["#,
            r#"{"role":"indices","dtype":"u64","type":null,"encoding":"raw","offset":128,"stored_size":32,"decoded_size":32,"digest":null},"#,
            r#"{"role":"indptr","dtype":"u64","type":null,"encoding":"raw","offset":192,"stored_size":32,"decoded_size":32,"digest":null},"#,
            r#"{"role":"values","dtype":"f32","type":null,"encoding":"raw","offset":64,"stored_size":16,"decoded_size":16,"digest":null}]}]}"#,
            "\n"
        )
    );
    let parsed = from_json(out.trim_end(), 64).unwrap();
    assert_eq!(parsed.get("version"), Some(&text("1.2.0")));

    let out = ok(&dir, &["info", "v12_rust_file_attributes.zt", "--json"]);
    let parsed = from_json(out.trim_end(), 64).unwrap();
    let attributes = Reader::open(dir.join("v12_rust_file_attributes.zt"))
        .unwrap()
        .attributes()
        .unwrap();
    assert_eq!(
        parsed.get("attributes").unwrap().get("license"),
        Some(&text("MIT"))
    );
    assert_eq!(
        parsed.get("attributes").unwrap().as_map().unwrap().len(),
        attributes.as_map().unwrap().len()
    );
    assert!(out.contains(&format!(
        "\"attributes\":{},\"objects\"",
        ztensor::json::to_json(&attributes)
    )));
}

// --- verify ----------------------------------------------------------------------------

#[test]
fn verify_passes_a_good_file() {
    let dir = dir_with("verify_ok", &["v12_mixed.zt"]);
    assert_eq!(
        ok(&dir, &["verify", "v12_mixed.zt"]),
        "\
v12_mixed.zt: 13 objects, 18 components
digests: 9 ok, 0 failed, 9 absent
decoded: 6 ok, 0 failed
values:  13 ok, 0 failed
OK
"
    );
    assert_eq!(
        ok(&dir, &["verify", "--json", "v12_mixed.zt"]),
        concat!(
            r#"{"file":"v12_mixed.zt","ok":true,"objects":13,"components":18,"#,
            r#""digests":{"ok":9,"failed":0,"absent":9},"decoded":{"ok":6,"failed":0},"#,
            r#""values":{"ok":13,"failed":0},"problems":[]}"#,
            "\n"
        )
    );
}

/// Flips one bit of the stored bytes of an object's first component.
fn flip(path: &Path, object: &str, at: u64) {
    let offset = {
        let r = Reader::open(path).unwrap();
        r.objects()[r.find(object).unwrap()].components()[0].offset()
    };
    let mut bytes = std::fs::read(path).unwrap();
    bytes[(offset + at) as usize] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn verify_reports_every_failure_by_object_and_component() {
    let dir = temp_dir("cli_verify_bad");
    let path = dir.join("bad.zt");
    let mut w = Writer::create_with(&path, &common::v12()).unwrap();
    let sha = WriteOptions::default().with_digest(DigestAlgorithm::Sha256);
    w.add("good", DType::F32, &[2], &f32s(&[1.0, 2.0]), &sha)
        .unwrap();
    w.add(
        "weights",
        DType::F32,
        &[4],
        &f32s(&[1.0, 2.0, 3.0, 4.0]),
        &sha,
    )
    .unwrap();
    let zeros = vec![0u8; 4096];
    w.add("packed", DType::U8, &[4096], &zeros, &WriteOptions::zstd(1))
        .unwrap();
    w.add("mask", DType::Bool, &[3], &[0, 1, 0], &Default::default())
        .unwrap();
    w.finish().unwrap();
    assert_eq!(zt(&dir, &["verify", "bad.zt"]).code, 0);

    flip(&path, "weights", 5);
    let run = zt(&dir, &["verify", "bad.zt"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "\
FAIL object 'weights' component 'data' digest: ZT_ERR_CHECKSUM: stored digest does not match the stored bytes
bad.zt: 4 objects, 4 components
digests: 1 ok, 1 failed, 2 absent
decoded: 1 ok, 0 failed
values:  4 ok, 0 failed
FAILED: 1 problem
"
    );
    assert_eq!(
        run.stderr,
        "zt: error: 'bad.zt' failed verification: 1 problem\n"
    );

    // A damaged zstd frame header (no digest to catch it: the decode does) and a bool
    // byte that is neither 0 nor 1.
    flip(&path, "packed", 0);
    flip(&path, "mask", 1);
    let run = zt(&dir, &["verify", "bad.zt", "--json"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        concat!(
            r#"{"file":"bad.zt","ok":false,"objects":4,"components":4,"#,
            r#""digests":{"ok":1,"failed":1,"absent":2},"decoded":{"ok":0,"failed":1},"#,
            r#""values":{"ok":3,"failed":1},"problems":["#,
            r#"{"object":"weights","component":"data","check":"digest","status":"ZT_ERR_CHECKSUM","message":"stored digest does not match the stored bytes"},"#,
            r#"{"object":"packed","component":"data","check":"decode","status":"ZT_ERR_FORMAT","message":"corrupt zstd data: Unknown frame descriptor"},"#,
            r#"{"object":"mask","component":null,"check":"values","status":"ZT_ERR_FORMAT","message":"component 'data': bool byte 17 at index 1 is neither 0 nor 1"}]}"#,
            "\n"
        )
    );
    assert_eq!(
        run.stderr,
        "zt: error: 'bad.zt' failed verification: 3 problems\n"
    );
}

#[test]
fn verify_agrees_with_the_hostile_corpus() {
    // expected.tsv: file, the status opening it gives, the first failure of a walk that
    // reads, verifies and validates everything (ZT_OK: none).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/hostile");
    let table = std::fs::read_to_string(dir.join("expected.tsv")).unwrap();
    let mut checked = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, open, walk) = (cols[0], cols[1], cols[2]);
        if file == "file" {
            continue;
        }
        let run = zt(&dir, &["verify", "--quiet", file]);
        if open != "ZT_OK" {
            assert_eq!(run.code, 1, "{file}: {run:?}");
            assert!(
                run.stderr
                    .starts_with(&format!("zt: error: cannot open '{file}': {open}: ")),
                "{file}: {run:?}"
            );
            assert_eq!(run.stdout, "", "{file}");
        } else if walk == "ZT_OK" {
            assert_eq!(
                (run.code, run.stdout.ends_with("\nOK\n")),
                (0, true),
                "{file}: {run:?}"
            );
        } else {
            assert_eq!(run.code, 1, "{file}: {run:?}");
            assert!(
                run.stdout.contains(&format!(": {walk}: ")),
                "{file}: expected a {walk} failure: {run:?}"
            );
        }
        checked += 1;
    }
    assert!(checked > 400, "only {checked} files");
}

// --- convert ---------------------------------------------------------------------------

/// Asserts that `b` holds what `a` holds: objects in order, attributes, components with
/// their roles and types, byte-identical decoded values (u32 sparse indices widened).
fn assert_same_content(a: &Reader<'_>, b: &Reader<'_>, what: &str) {
    assert_eq!(b.version(), "1.2.0", "{what}");
    let attrs = |r: &Reader<'_>| r.attributes().filter(|v| v.as_map() != Some(&[]));
    assert_eq!(attrs(a), attrs(b), "{what}: file attributes");
    assert_eq!(a.objects().len(), b.objects().len(), "{what}: object count");
    for (oi, (x, y)) in a.objects().iter().zip(b.objects()).enumerate() {
        let ctx = format!("{what}: object '{}'", x.name());
        assert_eq!(
            (x.name(), x.format(), x.shape()),
            (y.name(), y.format(), y.shape()),
            "{ctx}"
        );
        assert_eq!(x.attributes(), y.attributes(), "{ctx}: attributes");
        assert_eq!(x.components().len(), y.components().len(), "{ctx}");
        for (ci, (p, q)) in x.components().iter().zip(y.components()).enumerate() {
            assert_eq!(
                (p.role(), p.logical_type()),
                (q.role(), q.logical_type()),
                "{ctx}"
            );
            let mut want = a.read_to_vec(oi, ci).unwrap();
            if p.dtype() == DType::U32 && x.format().starts_with("sparse") && p.role() != "values" {
                assert_eq!(q.dtype(), DType::U64, "{ctx}: widened index");
                want = want
                    .chunks_exact(4)
                    .flat_map(|b| {
                        u64::from(u32::from_le_bytes(b.try_into().unwrap())).to_le_bytes()
                    })
                    .collect();
            } else {
                assert_eq!(p.dtype(), q.dtype(), "{ctx} component '{}'", p.role());
            }
            assert!(
                b.read_to_vec(oi, ci).unwrap() == want,
                "{ctx} component '{}': values differ",
                p.role()
            );
        }
    }
}

/// A file with file and object attributes, every kind of object, and components larger
/// than the 4 MiB pieces the tool streams in.
fn sample(path: &Path) {
    let mut w = Writer::create_with(path, &common::v12()).unwrap();
    w.set_file_attributes(Value::Map(vec![
        (text("model"), text("tiny")),
        (text("epoch"), Value::Unsigned(3)),
    ]))
    .unwrap();
    let crc = WriteOptions::default().with_digest(DigestAlgorithm::Crc32c);
    w.add(
        "w",
        DType::F32,
        &[2, 3],
        &f32s(&[1.0, -2.5, 3.0, 0.0, 1e-3, 6.0]),
        &crc,
    )
    .unwrap();
    w.set_object_attributes("w", Value::Map(vec![(text("unit"), text("m"))]))
        .unwrap();
    let big = bytes(7, (9 << 20) + 12);
    w.add(
        "big_raw",
        DType::U8,
        &[big.len() as u64],
        &big,
        &Default::default(),
    )
    .unwrap();
    let zopts = WriteOptions::zstd(1).with_digest(DigestAlgorithm::Sha256);
    w.add(
        "big_zstd",
        DType::I32,
        &[big.len() as u64 / 4],
        &big,
        &zopts,
    )
    .unwrap();
    w.add_typed(
        "z",
        DType::F32,
        Some("complex64"),
        &[2],
        &f32s(&[1.0, 2.0, 3.0, -4.0]),
        &Default::default(),
    )
    .unwrap();
    w.add_typed(
        "f8",
        DType::U8,
        Some("f8_e5m2"),
        &[3],
        &[0x3c, 0xc0, 0x7c],
        &Default::default(),
    )
    .unwrap();
    w.add_typed(
        "odd",
        DType::U8,
        Some("x_custom"),
        &[2],
        &[9, 8],
        &Default::default(),
    )
    .unwrap();
    w.add(
        "flags",
        DType::Bool,
        &[3],
        &[1, 0, 1],
        &WriteOptions::zstd(3),
    )
    .unwrap();
    w.add("none", DType::F64, &[0, 4], &[], &Default::default())
        .unwrap();
    w.begin_object("csr", "sparse_csr", &[2, 3]).unwrap();
    w.add_component(
        "values",
        DType::F32,
        None,
        &f32s(&[5.0, 6.0]),
        &Default::default(),
    )
    .unwrap();
    w.add_component(
        "indices",
        DType::U64,
        None,
        &u64s(&[2, 0]),
        &WriteOptions::zstd(1),
    )
    .unwrap();
    w.add_component("indptr", DType::U64, None, &u64s(&[0, 1, 2]), &crc)
        .unwrap();
    w.end_object().unwrap();
    w.begin_object("custom", "my_format", &[5]).unwrap();
    w.add_component("a", DType::I16, None, &[1, 0, 2, 0], &Default::default())
        .unwrap();
    w.add_component("b", DType::U8, None, &[], &WriteOptions::zstd(1))
        .unwrap();
    w.end_object().unwrap();
    w.finish().unwrap();
}

/// (encoding, digest algorithm name) of every component, in order.
fn storage(r: &Reader<'_>) -> Vec<(String, Encoding, Option<String>)> {
    r.objects()
        .iter()
        .flat_map(|o| {
            o.components().iter().map(|c| {
                (
                    format!("{}/{}", o.name(), c.role()),
                    c.encoding(),
                    c.digest().map(|d| d.split(':').next().unwrap().to_owned()),
                )
            })
        })
        .collect()
}

#[test]
fn convert_copies_everything_and_applies_the_options() {
    let dir = temp_dir("cli_convert");
    let src = dir.join("src.zt");
    sample(&src);
    let a = Reader::open(&src).unwrap();

    // No options: every component keeps its encoding and digest algorithm.
    assert_eq!(
        ok(&dir, &["convert", "--to", "v1.2", "src.zt", "same.zt"]),
        ""
    );
    let b = Reader::open(dir.join("same.zt")).unwrap();
    assert_same_content(&a, &b, "default");
    assert_eq!(storage(&a), storage(&b));
    assert_eq!(
        ok(&dir, &["verify", "-q", "same.zt"]).lines().last(),
        Some("OK")
    );

    // --zstd and --digest apply to every component.
    assert_eq!(
        ok(
            &dir,
            &[
                "convert",
                "--to=v1.2",
                "src.zt",
                "z.zt",
                "--zstd",
                "5",
                "--digest",
                "sha256"
            ]
        ),
        ""
    );
    let b = Reader::open(dir.join("z.zt")).unwrap();
    assert_same_content(&a, &b, "--zstd 5 --digest sha256");
    for (name, encoding, digest) in storage(&b) {
        assert_eq!(
            (encoding, digest.as_deref()),
            (Encoding::Zstd, Some("sha256")),
            "{name}"
        );
    }
    let level5 = b.objects()[b.find("big_raw").unwrap()].components()[0].length();

    // --raw and --digest=none: plain components, no digests.
    assert_eq!(
        ok(
            &dir,
            &[
                "convert",
                "--to=v1.2",
                "--raw",
                "--digest=none",
                "z.zt",
                "raw.zt"
            ]
        ),
        ""
    );
    let b = Reader::open(dir.join("raw.zt")).unwrap();
    assert_same_content(&a, &b, "--raw --digest none");
    for (name, encoding, digest) in storage(&b) {
        assert_eq!((encoding, digest), (Encoding::Raw, None), "{name}");
    }

    // The level is passed on: 19 compresses the random-looking bytes no worse than 5.
    assert_eq!(
        ok(
            &dir,
            &[
                "convert",
                "--to=v1.2",
                "raw.zt",
                "z19.zt",
                "--zstd=19",
                "--digest",
                "crc32c"
            ]
        ),
        ""
    );
    let b = Reader::open(dir.join("z19.zt")).unwrap();
    assert_same_content(&a, &b, "--zstd 19");
    assert!(b.objects()[b.find("big_raw").unwrap()].components()[0].length() <= level5);
    assert!(
        storage(&b)
            .iter()
            .all(|(_, _, d)| d.as_deref() == Some("crc32c"))
    );
}

#[test]
fn convert_reads_every_reference_vector_legacy_included() {
    let dir = temp_dir("cli_convert_reference");
    let mut names: Vec<String> = std::fs::read_dir(reference(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".zt"))
        .collect();
    names.sort();
    assert!(names.iter().any(|n| n.starts_with("v01_")));
    for name in &names {
        let out = dir.join(name);
        let run = zt(
            &dir,
            &[
                OsStr::new("convert"),
                OsStr::new("--to=v1.2"),
                reference(name).as_os_str(),
                out.as_os_str(),
            ],
        );
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, "", ""),
            "{name}"
        );
        let a = Reader::open(reference(name)).unwrap();
        let b = Reader::open(&out).unwrap();
        assert_same_content(&a, &b, name);
    }
}

#[test]
fn convert_of_a_legacy_file_is_a_v12_file_with_the_same_values() {
    let dir = dir_with("convert_legacy", &["v01_rust_bigendian.zt"]);
    assert_eq!(
        ok(
            &dir,
            &["convert", "--to=v1.2", "v01_rust_bigendian.zt", "new.zt"]
        ),
        ""
    );
    let info = ok(&dir, &["info", "new.zt"]);
    assert!(info.starts_with("new.zt: version 1.2.0, "), "{info}");
    // Big-endian in the legacy file, little-endian in the new one: the same values.
    for file in ["v01_rust_bigendian.zt", "new.zt"] {
        assert_eq!(
            ok(&dir, &["cat", file, "be_f32"]),
            "object 'be_f32' component 'data': dense [2, 2], f32, 4 values\n[1.0, -0.5, 3.25, 65504.0]\n"
        );
    }
}

#[test]
fn convert_failures_leave_no_output() {
    let dir = dir_with("convert_fail", &["v12_mixed.zt"]);
    let run = zt(&dir, &["convert", "missing.zt", "out.zt"]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            "zt: error: cannot open 'missing.zt': ZT_ERR_IO: No such file or directory\n"
        )
    );
    // A corrupt zstd stream fails the copy; nothing appears under the output name.
    std::fs::copy(dir.join("v12_mixed.zt"), dir.join("bad.zt")).unwrap();
    flip(&dir.join("bad.zt"), "big", 0);
    let run = zt(&dir, &["convert", "bad.zt", "out.zt"]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            "zt: error: cannot copy 'bad.zt' to 'out.zt': ZT_ERR_FORMAT: object 'big' component 'data': corrupt zstd data: Unknown frame descriptor\n"
        )
    );
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["bad.zt", "v12_mixed.zt"]);
}

// --- cat -------------------------------------------------------------------------------

#[test]
fn cat_prints_values_formatted_by_type() {
    let dir = reference("");
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "v12_dtype_f32.zt",
            &[],
            "object 'x' component 'data': dense [2, 5], f32, 10 values\n\
             [0.0, -0.0, 1.5, -2.25, 3.4028235e38, 1e-45, inf, -inf, NaN, 0.1]\n",
        ),
        (
            "v12_dtype_f16.zt",
            &["--count", "10"],
            "object 'x' component 'data': dense [10], f16, 10 values\n\
             [0.0, -0.0, 1.0, -2.0, 65500.0, 6e-8, inf, -inf, NaN, 0.1]\n",
        ),
        (
            "v12_dtype_bf16.zt",
            &[],
            "object 'x' component 'data': dense [2, 4], bf16, 8 values\n\
             [0.0, -0.0, 1.0, -2.0, 3.39e38, inf, -inf, NaN]\n",
        ),
        (
            "v12_dtype_i64.zt",
            &[],
            "object 'x' component 'data': dense [6], i64, 6 values\n\
             [-9223372036854775808, -1, 0, 1, 9223372036854775807, 72623859790382856]\n",
        ),
        (
            "v12_dtype_u64.zt",
            &["--count=3"],
            "object 'x' component 'data': dense [5], u64, 5 values (first 3 shown)\n\
             [0, 1, 18446744073709551615, ...]\n",
        ),
        (
            "v12_dtype_bool.zt",
            &[],
            "object 'x' component 'data': dense [2, 3], bool, 6 values\n\
             [true, false, true, true, false, false]\n",
        ),
        (
            "v12_type_complex64.zt",
            &[],
            "object 'z' component 'data': dense [2, 2], f32 (complex64), 4 values\n\
             [(1.0, 2.0), (-0.5, 0.25), (3.0, -4.0), (0.0, 1.0)]\n",
        ),
        (
            "v12_type_f8_e4m3fn.zt",
            &["--count", "0"],
            "object 'x' component 'data': dense [9], u8 (f8_e4m3fn), 9 values (first 0 shown)\n\
             [...]\n",
        ),
        (
            "v12_type_f8_e4m3fn.zt",
            &[],
            "object 'x' component 'data': dense [9], u8 (f8_e4m3fn), 9 values\n\
             [0.0, -0.0, 0.5, -1.0, 1.5, 448.0, -448.0, NaN, 0.001953125]\n",
        ),
    ];
    for (file, extra, want) in cases {
        let name = if file.contains("complex") { "z" } else { "x" };
        let mut args = vec!["cat", file, name];
        args.extend_from_slice(extra);
        assert_eq!(ok(&dir, &args), *want, "zt {args:?}");
    }
}

/// Quantized tensors print their values (gguf-py's, see llama_tiny.f32), not block bytes.
#[test]
fn cat_dequantizes_ggml_blocks() {
    let dir = temp_dir("cli_cat_quant");
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/gguf");
    std::fs::copy(vectors.join("llama_tiny.gguf"), dir.join("m.gguf")).unwrap();
    assert_eq!(
        ok(
            &dir,
            &["cat", "m.gguf", "token_embd.weight", "--count", "4"]
        ),
        "object 'token_embd.weight' component 'data': ggml_q4_0 [100, 64], u8 (ggml_q4_0), \
         6400 values, Q4_0 blocks dequantized to f32 (first 4 shown)\n\
         [-0.3869629, 1.1608887, -0.7739258, -1.1608887, ...]\n"
    );
    // Past the first block (32 values) of a Q4_K block of 256: whole blocks are read.
    let json = ok(
        &dir,
        &[
            "cat",
            "m.gguf",
            "blk.0.ffn_down.weight",
            "--count",
            "3",
            "--json",
        ],
    );
    assert_eq!(
        json,
        r#"{"object":"blk.0.ffn_down.weight","component":"data","format":"ggml_q4_k","shape":[4,256],"dtype":"u8","type":"ggml_q4_k","dequantized":"f32","total":1024,"values":[1.337986,0.26187515,1.337986]}"#.to_owned()
            + "\n"
    );
    // Every value, compared with gguf-py's.
    let all = ok(
        &dir,
        &[
            "cat",
            "m.gguf",
            "blk.0.attn_q.weight",
            "--count",
            "4096",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&all).unwrap();
    let expected = std::fs::read(vectors.join("llama_tiny.f32")).unwrap();
    let values = v["values"].as_array().unwrap();
    assert_eq!(values.len(), 4096);
    for (i, x) in values.iter().enumerate() {
        let at = (6400 + i) * 4;
        let want = f32::from_le_bytes(expected[at..at + 4].try_into().unwrap());
        assert_eq!(x.as_f64().unwrap() as f32, want, "value {i}");
    }
}

#[test]
fn cat_picks_components_and_prints_json() {
    let dir = reference("");
    // A sparse object shows its values unless told otherwise.
    assert_eq!(
        ok(&dir, &["cat", "v12_mixed.zt", "pts"]),
        "object 'pts' component 'values': sparse_coo [10, 10], f16, 2 values\n[0.25, 0.75]\n"
    );
    assert_eq!(
        ok(
            &dir,
            &["cat", "v12_mixed.zt", "adj", "--component", "indptr"]
        ),
        "object 'adj' component 'indptr': sparse_csr [3, 3], u64, 4 values\n[0, 1, 2, 3]\n"
    );
    assert_eq!(
        ok(&dir, &["cat", "--json", "v12_type_complex128.zt", "z"]),
        r#"{"object":"z","component":"data","format":"dense","shape":[3],"dtype":"f64","type":"complex128","total":3,"values":[[1e-300,1.0],[-2.5,0.0],["inf",0.5]]}"#
            .to_owned()
            + "\n"
    );
    assert_eq!(
        ok(&dir, &["cat", "v12_dtype_f16.zt", "x", "--json", "--count", "9"]),
        r#"{"object":"x","component":"data","format":"dense","shape":[10],"dtype":"f16","type":null,"total":10,"values":[0.0,-0.0,1.0,-2.0,65500.0,6e-8,"inf","-inf","NaN"]}"#
            .to_owned()
            + "\n"
    );
    assert_eq!(
        ok(&dir, &["cat", "v12_type_unknown.zt", "x", "--json"]),
        r#"{"object":"x","component":"data","format":"dense","shape":[6],"dtype":"u8","type":"x_custom_logical","total":6,"values":[0,1,2,3,4,5]}"#
            .to_owned()
            + "\n"
    );
    let run = zt(&dir, &["cat", "v12_mixed.zt", "adj", "--component", "nope"]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "zt: error: object 'adj' has no component 'nope' (it has: indices, indptr, values)\n"
        )
    );
    let run = zt(&dir, &["cat", "v12_mixed.zt", "nope"]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (1, "zt: error: 'v12_mixed.zt' has no object named 'nope'\n")
    );
}

// --- merge -----------------------------------------------------------------------------

#[test]
fn merge_combines_objects_and_refuses_duplicates() {
    let dir = dir_with(
        "merge",
        &[
            "v12_rust_file_attributes.zt",
            "v12_mixed.zt",
            "v01_multi.zt",
            "v12_dtype_f32.zt",
            "v12_dtype_f16.zt",
        ],
    );
    assert_eq!(
        ok(
            &dir,
            &[
                "merge",
                "--to=v1.2",
                "all.zt",
                "v12_rust_file_attributes.zt",
                "v12_mixed.zt",
                "v01_multi.zt",
                "-q"
            ]
        ),
        ""
    );
    let merged = Reader::open(dir.join("all.zt")).unwrap();
    let first = Reader::open(dir.join("v12_rust_file_attributes.zt")).unwrap();
    assert_eq!(
        merged.attributes(),
        first.attributes(),
        "the first file's attributes"
    );
    let names: Vec<&str> = merged.objects().iter().map(|o| o.name()).collect();
    let mut expected = Vec::new();
    for f in [
        "v12_rust_file_attributes.zt",
        "v12_mixed.zt",
        "v01_multi.zt",
    ] {
        let r = Reader::open(dir.join(f)).unwrap();
        expected.extend(r.objects().iter().map(|o| o.name().to_owned()));
        for (oi, obj) in r.objects().iter().enumerate() {
            let mi = merged.find(obj.name()).unwrap();
            assert_eq!(merged.objects()[mi].attributes(), obj.attributes());
            for ci in 0..obj.components().len() {
                assert!(merged.read_to_vec(mi, ci).unwrap() == r.read_to_vec(oi, ci).unwrap());
            }
        }
    }
    assert_eq!(names, expected);
    assert_eq!(ok(&dir, &["verify", "all.zt"]).lines().last(), Some("OK"));

    let run = zt(
        &dir,
        &[
            "merge",
            "dup.zt",
            "v12_dtype_f32.zt",
            "v12_mixed.zt",
            "v12_dtype_f16.zt",
        ],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            "zt: error: object 'x' is in both 'v12_dtype_f32.zt' and 'v12_dtype_f16.zt'\n"
        )
    );
    assert!(!dir.join("dup.zt").exists());
}

// --- usage, help, version, errors -------------------------------------------------------

#[test]
fn usage_errors_exit_2_with_one_line() {
    // clap's messages, on one line, after the command and before where help is.
    let dir = reference("");
    let cases: &[(&[&str], &str)] = &[
        (
            &[],
            "'zt' requires a subcommand but one was not provided \
             [subcommands: info, verify, cat, convert, merge, help] (see 'zt --help')",
        ),
        (
            &["frobnicate"],
            "unrecognized subcommand 'frobnicate' (see 'zt --help')",
        ),
        (
            &["--frob"],
            "unexpected argument '--frob' found (see 'zt --help')",
        ),
        (
            &["help", "frob"],
            "unrecognized subcommand 'frob' (see 'zt --help')",
        ),
        (
            &["info"],
            "info: the following required arguments were not provided: <FILE> (see 'zt info --help')",
        ),
        (
            &["info", "a.zt", "b.zt"],
            "info: unexpected argument 'b.zt' found (see 'zt info --help')",
        ),
        (
            &["info", "--bogus", "a.zt"],
            "info: unexpected argument '--bogus' found (see 'zt info --help')",
        ),
        (
            &["info", "--jsn", "a.zt"],
            "info: unexpected argument '--jsn' found; did you mean '--json'? (see 'zt info --help')",
        ),
        (
            &["ifno", "a.zt"],
            "unrecognized subcommand 'ifno'; did you mean 'info'? (see 'zt --help')",
        ),
        (
            &["verify", "--json=yes", "a.zt"],
            "verify: unexpected value 'yes' for '--json' found; no more were expected (see 'zt verify --help')",
        ),
        (
            &["cat", "a.zt"],
            "cat: the following required arguments were not provided: <NAME> (see 'zt cat --help')",
        ),
        (
            &["cat", "a.zt", "x", "--count"],
            "cat: a value is required for '--count <N>' but none was supplied (see 'zt cat --help')",
        ),
        (
            &["cat", "a.zt", "x", "--count", "-1"],
            "cat: invalid value '-1' for '--count <N>': invalid digit found in string (see 'zt cat --help')",
        ),
        (
            &["convert", "a.zt"],
            "convert: the following required arguments were not provided: <OUT> (see 'zt convert --help')",
        ),
        (
            &["convert", "a", "b", "--zstd", "x"],
            "convert: invalid value 'x' for '--zstd <LEVEL>': expected an integer (see 'zt convert --help')",
        ),
        (
            &["convert", "a", "b", "--zstd", "23"],
            "convert: invalid value '23' for '--zstd <LEVEL>': zstd levels are -131072 to 22 (0 = default) (see 'zt convert --help')",
        ),
        (
            &["convert", "a", "b", "--zstd", "3", "--raw"],
            "convert: the argument '--zstd <LEVEL>' cannot be used with '--raw' (see 'zt convert --help')",
        ),
        (
            &["convert", "a", "b", "--digest", "md5"],
            "convert: invalid value 'md5' for '--digest <ALGO>' [possible values: sha256, crc32c, xxh3, none] (see 'zt convert --help')",
        ),
        (
            &["merge", "out.zt"],
            "merge: the following required arguments were not provided: <IN>... (see 'zt merge --help')",
        ),
        (
            &["merge", "o", "a", "--zstd", "1", "--zstd", "2"],
            "merge: the argument '--zstd <LEVEL>' cannot be used multiple times (see 'zt merge --help')",
        ),
    ];
    for (args, message) in cases {
        let run = zt(&dir, args);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (2, "", format!("zt: error: {message}\n").as_str()),
            "zt {args:?}"
        );
    }
    // A flag given twice is still the flag; a negative zstd level is a value.
    assert_eq!(
        ok(&dir, &["info", "--json", "v12_empty.zt", "--json"]),
        ok(&dir, &["info", "--json", "v12_empty.zt"])
    );
    let out = temp_dir("cli_negative_level").join("neg.zt");
    let args = ["convert", "v12_dtype_f32.zt", out.to_str().unwrap()];
    assert_eq!(
        ok(&dir, &[&args[..], &["--zstd", "-5", "-q", "-q"]].concat()),
        ""
    );
    let r = Reader::open(&out).unwrap();
    assert_eq!(r.objects()[0].components()[0].encoding(), Encoding::Zstd);
}

#[test]
fn missing_and_unreadable_files_exit_1() {
    let dir = temp_dir("cli_missing");
    std::fs::write(dir.join("junk.zt"), b"definitely not a tensor file").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["info", "missing.zt"],
            "cannot open 'missing.zt': ZT_ERR_IO: No such file or directory",
        ),
        (
            &["verify", "missing.zt"],
            "cannot open 'missing.zt': ZT_ERR_IO: No such file or directory",
        ),
        (
            &["cat", "missing.zt", "x"],
            "cannot open 'missing.zt': ZT_ERR_IO: No such file or directory",
        ),
        (
            &["merge", "o.zt", "missing.zt"],
            "cannot open 'missing.zt': ZT_ERR_IO: No such file or directory",
        ),
        (
            &["info", "junk.zt"],
            "cannot open 'junk.zt': ZT_ERR_FORMAT: not a zTensor, safetensors, GGUF, Tensogram, PyTorch, NumPy or ONNX file: the header magic is \"definite\"",
        ),
    ];
    for (args, message) in cases {
        let run = zt(&dir, args);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (1, "", format!("zt: error: {message}\n").as_str()),
            "zt {args:?}"
        );
    }
}

#[test]
fn help_and_version() {
    let dir = reference("");
    assert_eq!(
        ok(&dir, &["--version"]),
        format!(
            "zt {} (writes zTensor 2 and 1.2.0, safetensors, GGUF)\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(ok(&dir, &["-V"]), ok(&dir, &["--version"]));
    let help = ok(&dir, &["--help"]);
    assert_eq!(
        help,
        "\
zt: inspect, check and convert zTensor (.zt) files

Usage: zt <COMMAND>

Commands:
  info     List the objects and components of a file
  verify   Check every digest, decode every component, validate values
  cat      Print the first values of a tensor
  convert  Copy any readable file into a zTensor, safetensors or GGUF file
  merge    Combine the objects of several files into one zTensor file
  help     Print this message or the help of the given subcommand(s)

Options:
  -h, --help     Print help
  -V, --version  Print version

Exit status: 0 success; 1 the operation failed (a file can't be read or written, a
check failed, duplicate object names ...); 2 usage error (unknown command or option,
wrong number of arguments, bad option value).
"
    );
    assert_eq!(
        ok(&dir, &["convert", "-h"]),
        "\
Copy any readable file into a zTensor, safetensors or GGUF file

Usage: zt convert [OPTIONS] <IN> <OUT>

Arguments:
  <IN>   The file to read
  <OUT>  The file to write (a set's base path with --shard-size)

Options:
      --shard-size <BYTES>     Write a set: OUT-0000k-of-0000n.zt of about BYTES each, OUT.zt.index.json (safetensors: .safetensors shards and OUT.safetensors.index.json; GGUF: split files)
      --dequantize <DTYPE>     safetensors or GGUF: write objects the target can't hold as they are (ggml blocks into safetensors ...) as dense tensors of DTYPE (f32, f16, bf16), values decoded [possible values: f32, f16, bf16]
      --zstd <LEVEL>           Compress every component with zstd at LEVEL (0 = the default level)
      --raw                    Store every component uncompressed
      --digest <ALGO>          Record a digest of every component, or none [possible values: sha256, crc32c, xxh3, none]
      --to <FORMAT>            The format to write [default: by OUT's extension, else v2] [possible values: v1.2, v2, safetensors, gguf]
      --placement <PLACEMENT>  zTensor v2: blobs at 64 KiB (canonical) or 4 KiB (compact) boundaries [default: compact] [possible values: canonical, compact]
  -q, --quiet                  No progress bar (it is shown only when stderr is a terminal)
  -h, --help                   Print help (see more with '--help')
"
    );
    assert_eq!(ok(&dir, &["help"]), help);
    assert_eq!(ok(&dir, &["-h"]), help);
    for (command, about, usage) in [
        (
            "info",
            "List the objects and components of a file",
            "Usage: zt info [OPTIONS] <FILE>\n",
        ),
        (
            "verify",
            "Check every digest, decode every component, validate values",
            "Usage: zt verify [OPTIONS] <FILE>\n",
        ),
        (
            "cat",
            "Print the first values of a tensor",
            "Usage: zt cat [OPTIONS] <FILE> <NAME>\n",
        ),
        (
            "convert",
            "Copy any readable file into a zTensor, safetensors or GGUF file",
            "Usage: zt convert [OPTIONS] <IN> <OUT>\n",
        ),
        (
            "merge",
            "Combine the objects of several files into one zTensor file",
            "Usage: zt merge [OPTIONS] <OUT> <IN>...\n",
        ),
    ] {
        // --help: the whole description; -h: its first line.
        let long = ok(&dir, &[command, "--help"]);
        assert!(long.starts_with(&format!("{about}.\n\n")), "{long}");
        assert!(long.contains(&format!("\n\n{usage}\n")), "{long}");
        let short = ok(&dir, &[command, "-h"]);
        assert!(
            short.starts_with(&format!("{about}\n\n{usage}\n")),
            "{short}"
        );
        assert!(
            help.contains(&format!("\n  {command:<7}  {about}\n")),
            "{help}"
        );
        // Help given before a mistake wins.
        assert_eq!(ok(&dir, &[command, "extra", "--help", "--bogus"]), long);
        assert_eq!(ok(&dir, &["help", command]), long);
    }
}

// --- other formats ---------------------------------------------------------------------

/// Every safetensors, GGUF and Tensogram vector through `info`, `verify`, `cat` and
/// `convert`: a file the library opens and decodes converts to a .zt holding the same
/// objects, shapes, types, attributes and bytes; one it can't decode fails to convert
/// and leaves nothing behind; one it can't open fails every command with exit 1.
#[test]
fn every_format_converts_to_zt_with_identical_values() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let dir = temp_dir("cli_formats");
    let mut converted = 0;
    for (sub, ext) in [
        ("safetensors", "safetensors"),
        ("gguf", "gguf"),
        ("tensogram", "tgm"),
        ("numpy", "npy"),
        ("numpy", "npz"),
        ("onnx", "onnx"),
        ("torch", "pt"),
        ("torch", "bin"),
        ("torch", "index.json"),
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_str().unwrap().ends_with(&format!(".{ext}")))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{sub} vectors");
        // Every file of the directory beside the one converted: ONNX external data and
        // a set's shards are found next to it.
        for entry in std::fs::read_dir(root.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
        for file in files {
            let name = file.file_name().unwrap().to_str().unwrap().to_owned();
            let out = format!("{name}.zt");
            let Ok(r) = Reader::open(&file) else {
                for cmd in ["info", "verify"] {
                    let run = zt(&dir, &[cmd, &name]);
                    assert_eq!(run.code, 1, "{cmd} {name}: {run:?}");
                    assert!(
                        run.stderr
                            .starts_with(&format!("zt: error: cannot open '{name}'"))
                    );
                }
                continue;
            };
            let info = ok(&dir, &["info", &name]);
            for o in r.objects() {
                assert!(info.contains(o.name()), "{name}: info lists '{}'", o.name());
            }
            let first = r.objects().first().map(|o| o.name().to_owned());
            let decodable = (0..r.objects().len()).all(|i| {
                (0..r.objects()[i].components().len()).all(|c| r.read_to_vec(i, c).is_ok())
            });
            let run = zt(&dir, &["convert", "--to=v1.2", "--quiet", &name, &out]);
            if !decodable {
                assert_eq!(run.code, 1, "convert {name}: {run:?}");
                assert!(
                    !dir.join(&out).exists(),
                    "{name}: no output after a failure"
                );
                continue;
            }
            assert_eq!((run.code, run.stderr.as_str()), (0, ""), "convert {name}");
            ok(&dir, &["verify", "--quiet", &name]);
            if let Some(first) = &first {
                ok(&dir, &["cat", &name, first]);
            }
            let z = Reader::open(dir.join(&out)).unwrap();
            assert_eq!(z.attributes(), r.attributes(), "{name}: file attributes");
            assert_eq!(z.objects().len(), r.objects().len(), "{name}");
            for (i, o) in r.objects().iter().enumerate() {
                let j = z.find(o.name()).expect("same names");
                let p = &z.objects()[j];
                assert_eq!((p.format(), p.shape()), (o.format(), o.shape()), "{name}");
                assert_eq!(p.attributes(), o.attributes(), "{name}: '{}'", o.name());
                assert_eq!(p.components().len(), o.components().len());
                for (c, oc) in o.components().iter().enumerate() {
                    let k = p.find_component(oc.role()).expect("same roles");
                    let pc = &p.components()[k];
                    assert_eq!(
                        (pc.dtype(), pc.logical_type()),
                        (oc.dtype(), oc.logical_type())
                    );
                    assert!(
                        z.read_to_vec(j, k).unwrap() == r.read_to_vec(i, c).unwrap(),
                        "{name}: '{}' {} bytes",
                        o.name(),
                        oc.role()
                    );
                }
            }
            converted += 1;
        }
    }
    assert!(converted >= 60, "converted {converted} files");
}

// --- sets --------------------------------------------------------------------------------

/// A fresh directory holding a copy of the committed set `name` (tests/vectors/sets).
fn dir_with_set(test: &str, name: &str) -> PathBuf {
    let dir = temp_dir(&format!("cli_{test}"));
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/sets")
        .join(name);
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    dir
}

#[test]
fn info_verify_and_convert_take_a_set() {
    let dir = dir_with_set("sets", "gguf");
    let out = ok(&dir, &["info", "split-00002-of-00003.gguf"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "split-00002-of-00003.gguf: version 3, 5 objects, 6 file attributes: \
             general.architecture, general.name, test.answer, split.no, ... (2 more)",
            "a set of 3 files: split-00001-of-00003.gguf, split-00002-of-00003.gguf, \
             split-00003-of-00003.gguf",
        ]
    );
    assert!(out.contains("\nout.weight "), "{out}");
    assert_eq!(
        ok(&dir, &["verify", "split-00001-of-00003.gguf"]),
        "split-00001-of-00003.gguf: 5 objects, 5 components\n\
         digests: 0 ok, 0 failed, 5 absent\n\
         decoded: 0 ok, 0 failed\n\
         values:  5 ok, 0 failed\n\
         OK\n"
    );
    // A set into one file, and into a set of zTensor shards.
    ok(
        &dir,
        &["convert", "-q", "split-00003-of-00003.gguf", "one.zt"],
    );
    ok(
        &dir,
        &[
            "convert",
            "-q",
            "--shard-size",
            "1",
            "--zstd",
            "1",
            "split-00001-of-00003.gguf",
            "z",
        ],
    );
    let set = Reader::open(dir.join("split-00001-of-00003.gguf")).unwrap();
    let one = Reader::open(dir.join("one.zt")).unwrap();
    let shards = Reader::open(dir.join("z.zt.index.json")).unwrap();
    assert_eq!(shards.shard_count(), 5);
    for r in [&one, &shards] {
        assert_eq!(r.objects().len(), 5);
        for (i, o) in set.objects().iter().enumerate() {
            let j = r.find(o.name()).unwrap();
            assert_eq!(r.read_to_vec(j, 0).unwrap(), set.read_to_vec(i, 0).unwrap());
        }
    }
    assert_eq!(
        shards.objects()[0].components()[0].encoding(),
        Encoding::Zstd
    );
    // A set whose shard is missing: the error names it.
    std::fs::remove_file(dir.join("split-00002-of-00003.gguf")).unwrap();
    let run = zt(&dir, &["info", "split-00001-of-00003.gguf"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("ZT_ERR_IO: shard split-00002-of-00003.gguf: opening"),
        "{}",
        run.stderr
    );
    let run = zt(&dir, &["convert", "--shard-size", "0", "one.zt", "x"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

// --- zTensor v2 --------------------------------------------------------------------------

#[test]
fn convert_to_v2_and_back_info_shows_the_version_verify_the_content_digest() {
    let dir = dir_with("v2", &["v12_mixed.zt"]);
    // v12_mixed's quantized_group object states no zt.quant_group/1 parameters: refused,
    // with the object named and nothing written.
    let run = zt(
        &dir,
        &["convert", "--to", "v2", "v12_mixed.zt", "all.v2.zt", "-q"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("object 'q4': 'quantized_group' is written as zt.quant_group/1"),
        "{}",
        run.stderr
    );
    assert!(!dir.join("all.v2.zt").exists());
    // A file of the kinds v2 has.
    let src = dir.join("src.zt");
    let mut w = Writer::create_with(&src, &common::v12()).unwrap();
    w.add(
        "w",
        DType::F32,
        &[2, 2],
        &f32s(&[1.0, 2.0, 3.0, 4.0]),
        &WriteOptions::zstd(3),
    )
    .unwrap();
    w.add(
        "mask",
        DType::Bool,
        &[3],
        &[1, 0, 1],
        &WriteOptions::default(),
    )
    .unwrap();
    common::add_csr(&mut w, "adj", &[2, 2], &[5.0], &[1], &[0, 1, 1]);
    w.finish().unwrap();
    assert_eq!(
        ok(&dir, &["convert", "--to", "v2", "src.zt", "v2.zt", "-q"]),
        ""
    );
    let info = ok(&dir, &["info", "v2.zt"]);
    assert!(info.starts_with("v2.zt: version 2, 3 objects"), "{info}");
    assert!(info.contains("zt.sparse_csr/1"), "{info}");
    let r = Reader::open(dir.join("v2.zt")).unwrap();
    let content = r.content_digest(DigestAlgorithm::Xxh3).unwrap();
    let verified = ok(&dir, &["verify", "v2.zt", "-q"]);
    assert!(
        verified.ends_with(&format!("content: {content}\nOK\n")),
        "{verified}"
    );
    let json = ok(&dir, &["verify", "v2.zt", "--json", "-q"]);
    assert!(
        json.contains(&format!("\"content\":\"{content}\"")),
        "{json}"
    );
    assert_eq!(
        ok(&dir, &["verify", "v2.zt", "-q", "--content", &content]),
        verified
    );
    let wrong = zt(
        &dir,
        &[
            "verify",
            "v2.zt",
            "-q",
            "--content",
            "xxh3:0000000000000000",
        ],
    );
    assert_eq!(wrong.code, 1);
    assert!(
        wrong.stdout.starts_with(&format!(
            "FAIL content: ZT_ERR_CHECKSUM: the content digest is {content}, not xxh3:0000000000000000\n"
        )),
        "{}",
        wrong.stdout
    );
    // And back: the v1.2 names and the same values.
    assert_eq!(
        ok(&dir, &["convert", "--to", "v1.2", "v2.zt", "back.zt", "-q"]),
        ""
    );
    let back = Reader::open(dir.join("back.zt")).unwrap();
    assert_eq!(back.version(), "1.2.0");
    assert_eq!(
        back.objects()[back.find("adj").unwrap()].format(),
        "sparse_csr"
    );
    let src = Reader::open(&src).unwrap();
    for o in src.objects() {
        for (reader, what) in [(&back, "v1.2 -> v2 -> v1.2"), (&r, "v1.2 -> v2")] {
            let i = reader.find(o.name()).unwrap();
            assert_eq!(reader.objects()[i].shape(), o.shape(), "{what}");
            for (ci, c) in o.components().iter().enumerate() {
                let cj = reader.objects()[i].find_component(c.role()).unwrap();
                let theirs = &reader.objects()[i].components()[cj];
                assert_eq!(theirs.dtype(), c.dtype(), "{what}");
                assert!(
                    reader.read_to_vec(i, cj).unwrap()
                        == src.read_to_vec(src.find(o.name()).unwrap(), ci).unwrap(),
                    "{what}: object '{}' component '{}'",
                    o.name(),
                    c.role()
                );
            }
        }
    }
    // A v1.2 file has no content digest, and says so when one is asked for.
    let run = zt(&dir, &["verify", "src.zt", "-q", "--content", &content]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("FAIL content: ZT_ERR_UNSUPPORTED"),
        "{}",
        run.stdout
    );
}

#[test]
fn convert_to_safetensors_and_gguf_says_what_it_cannot_keep() {
    let dir = temp_dir("cli_convert_foreign");
    let gguf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/gguf/llama_tiny.gguf");
    std::fs::copy(&gguf, dir.join("tiny.gguf")).unwrap();
    // Q4_0 blocks (the first tensor): safetensors can't hold them as they are; nothing is
    // written.
    let run = zt(&dir, &["convert", "-q", "tiny.gguf", "tiny.safetensors"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("object 'token_embd.weight' is ggml_q4_0")
            && run.stderr.contains("--dequantize f32"),
        "{}",
        run.stderr
    );
    assert!(!dir.join("tiny.safetensors").exists());
    // Asked to, their values are written as f32; the u32 key/values are said to be left
    // out, the string ones kept.
    let run = zt(
        &dir,
        &[
            "convert",
            "-q",
            "--dequantize",
            "f32",
            "tiny.gguf",
            "tiny.safetensors",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("note: file attribute 'llama.block_count' is not kept: safetensors' __metadata__ holds strings only: 'llama.block_count' is u32"),
        "{}",
        run.stderr
    );
    let a = Reader::open(dir.join("tiny.gguf")).unwrap();
    let b = Reader::open(dir.join("tiny.safetensors")).unwrap();
    assert_eq!(b.container().name(), "safetensors");
    assert_eq!(
        b.attributes()
            .unwrap()
            .get("general.architecture")
            .and_then(|v| v.as_text()),
        Some("llama")
    );
    for (i, o) in a.objects().iter().enumerate() {
        let j = b.find(o.name()).unwrap();
        assert_eq!(b.objects()[j].shape(), o.shape(), "{}", o.name());
        // Blocks dequantized to f32; plain tensors (f32, f16) copied as they are.
        let blocks = o.format().starts_with("ggml_");
        let dtype = match blocks {
            true => ztensor::DType::F32,
            false => o.components()[0].dtype(),
        };
        assert_eq!(
            b.objects()[j].components()[0].dtype(),
            dtype,
            "{}",
            o.name()
        );
        let n = o.shape().iter().product::<u64>() as usize;
        let mut want = vec![0u8; n * dtype.size()];
        a.read_as(i, 0, dtype, &mut want).unwrap();
        assert_eq!(b.read_to_vec(j, 0).unwrap(), want, "{}", o.name());
    }
    // Back to GGUF: f32 tensors, the string key/values.
    assert_eq!(
        ok(&dir, &["convert", "-q", "tiny.safetensors", "back.gguf"]),
        ""
    );
    let c = Reader::open(dir.join("back.gguf")).unwrap();
    assert_eq!(
        (c.container().name(), c.objects().len()),
        ("gguf", a.objects().len())
    );
    // convert declares every tensor first (one pass): the same bytes as a writer that
    // spools them, the GGUF's tensors in their order; safetensors into safetensors is the
    // file itself.
    assert_eq!(
        ok(
            &dir,
            &["convert", "-q", "tiny.safetensors", "again.safetensors"]
        ),
        ""
    );
    let same = |x: &str, y: &str| {
        std::fs::read(dir.join(x)).unwrap() == std::fs::read(dir.join(y)).unwrap()
    };
    assert!(same("tiny.safetensors", "again.safetensors"));
    assert_eq!(ok(&dir, &["convert", "-q", "tiny.gguf", "copy.gguf"]), "");
    let options = ztensor::CreateOptions {
        durable: false,
        ..Default::default()
    };
    let mut w = ztensor::Writer::create_with(dir.join("spooled.gguf"), &options).unwrap();
    w.set_file_attributes_from(a.raw_attributes().unwrap())
        .unwrap();
    for i in 0..a.objects().len() {
        w.copy_object(&a, i, &Default::default()).unwrap();
    }
    w.finish().unwrap();
    assert!(same("copy.gguf", "spooled.gguf"));
    // gguf-py wrote the vector: ours is its bytes again.
    assert!(same("copy.gguf", "tiny.gguf"));
}
