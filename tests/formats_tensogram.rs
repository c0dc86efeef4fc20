//! Tensogram v3 (.tgm) files: the committed vectors written by the real `tensogram`
//! package (tests/vectors/tensogram, expectations in the .json next to each file), and
//! messages built here by a small test-only encoder for every layout, pipeline stage and
//! validation rule.

mod common;
mod tensogram_check;

use std::path::Path;

use tensogram_check::check_vector;
use ztensor::cbor::{Value, to_vec};
use ztensor::{DType, Encoding, ErrorKind, Reader};

// ---------------------------------------------------------------------------------------
// The committed vectors.

fn vectors() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/tensogram")
}

#[test]
fn committed_vectors_read_exactly() {
    let mut files = 0;
    for entry in std::fs::read_dir(vectors()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "tgm") {
            check_vector(&path, &path.with_extension("json"));
            files += 1;
        }
    }
    assert!(files >= 5, "only {files} vectors");
}

#[test]
fn vector_attributes_and_digests() {
    let r = Reader::open(vectors().join("raw_dtypes.tgm")).unwrap();
    let attrs = r.attributes().unwrap();
    assert_eq!(
        attrs
            .get("_extra_")
            .and_then(|e| e.get("source"))
            .and_then(Value::as_text),
        Some("make_tensogram_vectors.py")
    );
    let o = r.find("temperature").unwrap();
    let a = r.objects()[o].attributes().unwrap();
    assert_eq!(a.get("units").and_then(Value::as_text), Some("K"));
    assert_eq!(a.get("_tensogram_message").and_then(Value::as_u64), Some(0));
    let d = a.get("_tensogram_descriptor").unwrap();
    assert_eq!(d.get("dtype").and_then(Value::as_text), Some("float32"));
    let c = &r.objects()[o].components()[0];
    assert!(c.digest().unwrap().starts_with("xxh3:"));
    assert!(c.is_plain());
    // Raw little-endian payloads are lent out of the mapping.
    assert!(r.view(o, 0).unwrap().zero_copy);
    r.verify_component(o, 0).unwrap();

    // The streamed/multi file: the third message has no hashes.
    let r = Reader::open(vectors().join("streamed_multi.tgm")).unwrap();
    let attrs = r.attributes().unwrap();
    assert_eq!(attrs.get("messages").unwrap().as_array().unwrap().len(), 3);
    let last = r.find("message_2/a").unwrap();
    assert!(r.objects()[last].components()[0].digest().is_none());
    assert_eq!(
        r.verify_component(last, 0).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn corrupted_vector_fails_verification_but_reads() {
    let bytes = std::fs::read(vectors().join("raw_dtypes.tgm")).unwrap();
    let r = Reader::from_slice(&bytes).unwrap();
    let o = r.find("flags").unwrap();
    let at = r.objects()[o].components()[0].offset() as usize;
    let mut bad = bytes.clone();
    bad[at] ^= 0x40;
    let r = Reader::from_slice(&bad).unwrap();
    assert_eq!(r.verify().unwrap_err().kind(), ErrorKind::Checksum);
    assert_eq!(
        r.verify_component(o, 0).unwrap_err().kind(),
        ErrorKind::Checksum
    );
    assert_eq!(r.read_to_vec(o, 0).unwrap(), [0x40, 1, 2, 254, 255]);
    // A flipped byte in the descriptor region (hashed, but not the payload) is caught too.
    let c = &Reader::from_slice(&bytes).unwrap().objects()[o].components()[0].clone();
    let mut bad = bytes.clone();
    bad[(c.offset() + c.length()) as usize + 1] ^= 0x01;
    if let Ok(r) = Reader::from_slice(&bad) {
        assert_eq!(r.verify().unwrap_err().kind(), ErrorKind::Checksum);
    }
}

// ---------------------------------------------------------------------------------------
// A small test-only Tensogram encoder.

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

fn map(entries: &[(&str, Value)]) -> Value {
    Value::Map(entries.iter().map(|(k, v)| (text(k), v.clone())).collect())
}

fn uints(v: &[u64]) -> Value {
    Value::Array(v.iter().map(|&n| Value::Unsigned(n)).collect())
}

fn xxh3(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(b)
}

/// A frame: header, body, hash slot (xxh3 of the body when `hash`), ENDF.
fn frame(ftype: u16, body: &[u8], hash: bool) -> Vec<u8> {
    let mut f = b"FR".to_vec();
    f.extend_from_slice(&ftype.to_be_bytes());
    f.extend_from_slice(&1u16.to_be_bytes());
    f.extend_from_slice(&2u16.to_be_bytes());
    f.extend_from_slice(&((16 + body.len() + 12) as u64).to_be_bytes());
    f.extend_from_slice(body);
    f.extend_from_slice(&(if hash { xxh3(body) } else { 0 }).to_be_bytes());
    f.extend_from_slice(b"ENDF");
    f
}

/// One data object: descriptor, payload and mask blobs (kind, method, bytes).
#[derive(Clone)]
struct Obj {
    desc: Vec<(&'static str, Value)>,
    payload: Vec<u8>,
    masks: Vec<(&'static str, &'static str, Vec<u8>)>,
    cbor_before: bool,
}

impl Obj {
    fn new(shape: &[u64], dtype: &str, payload: Vec<u8>) -> Obj {
        Obj {
            desc: vec![
                ("type", text("ntensor")),
                ("ndim", Value::Unsigned(shape.len() as u64)),
                ("shape", uints(shape)),
                ("strides", uints(&vec![1; shape.len()])),
                ("dtype", text(dtype)),
                ("byte_order", text("little")),
                ("encoding", text("none")),
                ("filter", text("none")),
                ("compression", text("none")),
            ],
            payload,
            masks: Vec::new(),
            cbor_before: false,
        }
    }
    /// Sets (or adds) a descriptor key.
    fn set(mut self, key: &'static str, v: Value) -> Obj {
        match self.desc.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = v,
            None => self.desc.push((key, v)),
        }
        self
    }
    fn mask(mut self, kind: &'static str, method: &'static str, blob: Vec<u8>) -> Obj {
        self.masks.push((kind, method, blob));
        self
    }
    /// The NTensorFrame.
    fn frame(&self, hash: bool) -> Vec<u8> {
        let mut data = self.payload.clone();
        let mut mask_entries = Vec::new();
        for (kind, method, blob) in &self.masks {
            mask_entries.push((
                text(kind),
                map(&[
                    ("method", text(method)),
                    ("offset", Value::Unsigned(data.len() as u64)),
                    ("length", Value::Unsigned(blob.len() as u64)),
                ]),
            ));
            data.extend_from_slice(blob);
        }
        let mut desc = map(&self.desc);
        if !mask_entries.is_empty()
            && let Value::Map(m) = &mut desc
        {
            m.push((text("masks"), Value::Map(mask_entries)));
        }
        let cbor = to_vec(&desc);
        let (body, cbor_offset, flags) = if self.cbor_before {
            assert!(self.masks.is_empty(), "test encoder: masks need cbor after");
            let mut b = cbor.clone();
            b.extend_from_slice(&data);
            (b, 16u64, 2u16)
        } else {
            let mut b = data.clone();
            b.extend_from_slice(&cbor);
            (b, 16 + data.len() as u64, 3u16)
        };
        let mut f = b"FR".to_vec();
        f.extend_from_slice(&9u16.to_be_bytes());
        f.extend_from_slice(&1u16.to_be_bytes());
        f.extend_from_slice(&flags.to_be_bytes());
        f.extend_from_slice(&((16 + body.len() + 20) as u64).to_be_bytes());
        f.extend_from_slice(&body);
        f.extend_from_slice(&cbor_offset.to_be_bytes());
        f.extend_from_slice(&(if hash { xxh3(&body) } else { 0 }).to_be_bytes());
        f.extend_from_slice(b"ENDF");
        f
    }
}

/// How to lay a message out.
#[derive(Clone, Copy)]
struct Layout {
    streamed: bool,
    hashes: bool,
    index: bool,
    pad: bool,
}

const BUFFERED: Layout = Layout {
    streamed: false,
    hashes: true,
    index: true,
    pad: true,
};
const STREAMED: Layout = Layout {
    streamed: true,
    hashes: true,
    index: true,
    pad: false,
};

fn pad8(out: &mut Vec<u8>, on: bool) {
    while on && !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

/// A whole message with metadata `meta` (global map) and `objects`.
fn message(meta: &Value, objects: &[Obj], l: Layout) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = objects.iter().map(|o| o.frame(l.hashes)).collect();
    let hashes = Value::Array(
        frames
            .iter()
            .map(|f| {
                text(&format!(
                    "{:016x}",
                    u64::from_be_bytes(f[f.len() - 12..f.len() - 4].try_into().unwrap())
                ))
            })
            .collect(),
    );
    let hash_frame = frame(
        if l.streamed { 5 } else { 3 },
        &to_vec(&map(&[("algorithm", text("xxh3")), ("hashes", hashes)])),
        l.hashes,
    );
    let meta_frame = frame(if l.streamed { 7 } else { 1 }, &to_vec(meta), l.hashes);
    // Object offsets depend on the header size, which (buffered) holds the index itself:
    // iterate until stable.
    let mut offsets = vec![0u64; frames.len()];
    let lengths: Vec<u64> = frames.iter().map(|f| f.len() as u64).collect();
    let index_frame = |offsets: &[u64]| {
        frame(
            if l.streamed { 6 } else { 2 },
            &to_vec(&map(&[
                ("offsets", uints(offsets)),
                ("lengths", uints(&lengths)),
            ])),
            l.hashes,
        )
    };
    let mut out;
    loop {
        out = vec![0u8; 24];
        if !l.streamed {
            out.extend_from_slice(&meta_frame);
            pad8(&mut out, l.pad);
            if l.index {
                out.extend_from_slice(&index_frame(&offsets));
                pad8(&mut out, l.pad);
            }
            if l.hashes {
                out.extend_from_slice(&hash_frame);
                pad8(&mut out, l.pad);
            }
        }
        let mut found = Vec::new();
        for f in &frames {
            found.push(out.len() as u64);
            out.extend_from_slice(f);
            pad8(&mut out, l.pad);
        }
        if found == offsets || l.streamed || !l.index {
            offsets = found;
            break;
        }
        offsets = found;
    }
    let first_footer = out.len() as u64;
    if l.streamed {
        out.extend_from_slice(&meta_frame);
        if l.hashes {
            out.extend_from_slice(&hash_frame);
        }
        if l.index {
            out.extend_from_slice(&index_frame(&offsets));
        }
    }
    let total = out.len() as u64 + 24;
    out.extend_from_slice(&first_footer.to_be_bytes());
    out.extend_from_slice(&(if l.streamed { 0 } else { total }).to_be_bytes());
    out.extend_from_slice(b"39277777");
    let mut flags: u16 = if l.streamed { 0b10 } else { 0b1 };
    if l.index {
        flags |= if l.streamed { 0b1000 } else { 0b100 };
    }
    if l.hashes {
        flags |= if l.streamed { 0b10_0000 } else { 0b1_0000 };
        flags |= 0x80;
    }
    out[..8].copy_from_slice(b"TENSOGRM");
    out[8..10].copy_from_slice(&3u16.to_be_bytes());
    out[10..12].copy_from_slice(&flags.to_be_bytes());
    out[16..24].copy_from_slice(&(if l.streamed { 0 } else { total }).to_be_bytes());
    out
}

/// Global metadata naming the objects.
fn names(names: &[&str]) -> Value {
    map(&[(
        "base",
        Value::Array(names.iter().map(|n| map(&[("name", text(n))])).collect()),
    )])
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn as_f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn open_err(bytes: &[u8]) -> ztensor::Error {
    Reader::from_slice(bytes).expect_err("the file should be refused")
}

// ---------------------------------------------------------------------------------------
// Layouts.

#[test]
fn buffered_and_streamed_layouts_read_the_same() {
    let objs = [
        Obj::new(&[2, 2], "float64", f64s(&[1.0, 2.0, 3.0, -4.5])),
        Obj::new(&[3], "uint16", vec![1, 0, 2, 0, 3, 0]),
    ];
    for layout in [
        BUFFERED,
        STREAMED,
        Layout {
            hashes: false,
            index: false,
            pad: false,
            ..BUFFERED
        },
        Layout {
            hashes: false,
            ..STREAMED
        },
    ] {
        let bytes = message(&names(&["x", "y"]), &objs, layout);
        let r = Reader::from_slice(&bytes).unwrap();
        assert_eq!(r.container().name(), "tensogram");
        assert_eq!(r.objects().len(), 2);
        assert_eq!(r.objects()[0].name(), "x");
        assert_eq!(r.objects()[0].shape(), [2, 2]);
        assert_eq!(
            as_f64s(&r.read_to_vec(0, 0).unwrap()),
            [1.0, 2.0, 3.0, -4.5]
        );
        assert_eq!(r.read_to_vec(1, 0).unwrap(), [1, 0, 2, 0, 3, 0]);
        assert_eq!(r.objects()[1].components()[0].dtype(), DType::U16);
        assert!(r.objects()[0].components()[0].is_plain());
        assert_eq!(
            r.objects()[0].components()[0].digest().is_some(),
            layout.hashes
        );
        r.verify().unwrap();
    }
}

#[test]
fn several_messages_prefix_and_dedupe_names() {
    let a = message(
        &names(&["t", "t"]),
        &[
            Obj::new(&[1], "int8", vec![1]),
            Obj::new(&[1], "int8", vec![2]),
        ],
        BUFFERED,
    );
    let b = message(&map(&[]), &[Obj::new(&[1], "int8", vec![3])], STREAMED);
    let mut file = a.clone();
    file.extend_from_slice(&b);
    file.extend_from_slice(&a);
    let r = Reader::from_slice(&file).unwrap();
    let got: Vec<&str> = r.objects().iter().map(|o| o.name()).collect();
    assert_eq!(
        got,
        [
            "message_0/t",
            "message_0/t_1",
            "message_1/object_0",
            "message_2/t",
            "message_2/t_1"
        ]
    );
    assert_eq!(r.read_to_vec(2, 0).unwrap(), [3]);
    assert_eq!(r.read_to_vec(4, 0).unwrap(), [2]);
    // A single message with no names.
    let r = Reader::from_slice(&b).unwrap();
    assert_eq!(r.objects()[0].name(), "object_0");
    // A suffixed name that another object was given already is suffixed again, in order;
    // the attributes keep the names as given.
    let objs: Vec<Obj> = (1..=4).map(|v| Obj::new(&[1], "int8", vec![v])).collect();
    let c = message(&names(&["a", "a_1", "a", "a"]), &objs, BUFFERED);
    let r = Reader::from_slice(&c).unwrap();
    let got: Vec<&str> = r.objects().iter().map(|o| o.name()).collect();
    assert_eq!(got, ["a", "a_1", "a_2", "a_3"]);
    let c = message(&names(&["a", "a", "a_1"]), &objs[..3], BUFFERED);
    let r = Reader::from_slice(&c).unwrap();
    let got: Vec<&str> = r.objects().iter().map(|o| o.name()).collect();
    assert_eq!(got, ["a", "a_1", "a_1_1"]);
    let given = r.objects()[2].attributes().unwrap();
    assert_eq!(given.get("name").and_then(Value::as_text), Some("a_1"));
    assert_eq!(r.read_to_vec(2, 0).unwrap(), [3]);
    // Trailing bytes that are not a message.
    let mut bad = a.clone();
    bad.extend_from_slice(b"garbage!");
    let e = open_err(&bad);
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(e.message().contains("message 1"), "{}", e.message());
}

#[test]
fn descriptor_before_payload_and_preceders() {
    let mut o = Obj::new(&[2], "int32", vec![1, 0, 0, 0, 2, 0, 0, 0]);
    o.cbor_before = true;
    let bytes = message(&names(&["before"]), &[o], BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), [1, 0, 0, 0, 2, 0, 0, 0]);
    r.verify().unwrap();

    // A preceder frame's keys override base[i]; build a streamed message by hand.
    let obj = Obj::new(&[1], "uint8", vec![9]);
    let mut bytes = message(&names(&["old"]), std::slice::from_ref(&obj), STREAMED);
    let pre = frame(
        8,
        &to_vec(&map(&[(
            "base",
            Value::Array(vec![map(&[("name", text("new")), ("units", text("m"))])]),
        )])),
        true,
    );
    // Insert the preceder right after the preamble (before the data frame) and fix the
    // offsets that moved: the footer index and the postamble's first_footer_offset.
    let shift = pre.len() as u64;
    bytes.splice(24..24, pre.iter().copied());
    let n = bytes.len();
    let ffo = u64::from_be_bytes(bytes[n - 24..n - 16].try_into().unwrap()) + shift;
    bytes[n - 24..n - 16].copy_from_slice(&ffo.to_be_bytes());
    let without_index = {
        let mut m = message(
            &names(&["old"]),
            std::slice::from_ref(&obj),
            Layout {
                index: false,
                ..STREAMED
            },
        );
        m.splice(24..24, pre.iter().copied());
        let n = m.len();
        let ffo = u64::from_be_bytes(m[n - 24..n - 16].try_into().unwrap()) + shift;
        m[n - 24..n - 16].copy_from_slice(&ffo.to_be_bytes());
        m
    };
    // The index frame still lists the old offset: refused.
    assert_eq!(open_err(&bytes).kind(), ErrorKind::Format);
    let r = Reader::from_slice(&without_index).unwrap();
    assert_eq!(r.objects()[0].name(), "new");
    let a = r.objects()[0].attributes().unwrap();
    assert_eq!(a.get("units").and_then(Value::as_text), Some("m"));

    // A dangling preceder (no data frame after it).
    let mut dangling = message(
        &map(&[]),
        &[],
        Layout {
            index: false,
            hashes: false,
            ..STREAMED
        },
    );
    dangling.splice(24..24, pre.iter().copied());
    let n = dangling.len();
    let ffo = u64::from_be_bytes(dangling[n - 24..n - 16].try_into().unwrap()) + shift;
    dangling[n - 24..n - 16].copy_from_slice(&ffo.to_be_bytes());
    let e = open_err(&dangling);
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(e.message().contains("preceder"), "{}", e.message());
}

// ---------------------------------------------------------------------------------------
// Pipeline stages.

/// Packs values MSB-first in `bits` bits each.
fn pack_bits(values: &[u64], bits: u32) -> Vec<u8> {
    let mut out = vec![0u8; (values.len() * bits as usize).div_ceil(8)];
    let mut pos = 0usize;
    for &v in values {
        for b in (0..bits).rev() {
            if v >> b & 1 == 1 {
                out[pos / 8] |= 0x80 >> (pos % 8);
            }
            pos += 1;
        }
    }
    out
}

fn sp(obj: Obj, bits: u64, reference: f64, e: i64, d: i64) -> Obj {
    let int = |v: i64| {
        if v < 0 {
            Value::Negative((-1 - v) as u64)
        } else {
            Value::Unsigned(v as u64)
        }
    };
    obj.set("encoding", text("simple_packing"))
        .set("sp_bits_per_value", Value::Unsigned(bits))
        .set("sp_reference_value", Value::Float(reference))
        .set("sp_binary_scale_factor", int(e))
        .set("sp_decimal_scale_factor", int(d))
}

fn shuffle(data: &[u8], width: usize) -> Vec<u8> {
    let n = data.len() / width;
    let mut out = vec![0u8; data.len()];
    for i in 0..n {
        for b in 0..width {
            out[b * n + i] = data[i * width + b];
        }
    }
    out
}

#[test]
fn simple_packing_at_every_width_class() {
    let q: Vec<u64> = vec![0, 1, 5, 3, 7, 2];
    let mut objs = Vec::new();
    let mut expect = Vec::new();
    for bits in [3u32, 8, 13, 16, 33, 64] {
        let vals: Vec<u64> = q.iter().map(|&v| v << (bits - 3)).collect();
        let o = sp(
            Obj::new(&[6], "float64", pack_bits(&vals, bits)),
            bits as u64,
            100.0,
            -3,
            1,
        );
        objs.push(o);
        let scale = 2f64.powi(-3) * 10f64.powi(-1);
        expect.push(
            vals.iter()
                .map(|&v| 100.0 + v as f64 * scale)
                .collect::<Vec<_>>(),
        );
    }
    // Zero bits: every value is the reference.
    objs.push(sp(Obj::new(&[4], "float64", vec![]), 0, -7.25, 0, 0));
    expect.push(vec![-7.25; 4]);
    // float32 output, through shuffle (1-byte elements) and zstd.
    let packed = pack_bits(&[0, 255, 128], 8);
    let z = zstd::bulk::compress(&shuffle(&packed, 1), 3).unwrap();
    objs.push(
        sp(Obj::new(&[3], "float32", z), 8, 1.0, 0, 0)
            .set("filter", text("shuffle"))
            .set("shuffle_element_size", Value::Unsigned(1))
            .set("compression", text("zstd")),
    );
    let names_list: Vec<String> = (0..objs.len()).map(|i| format!("o{i}")).collect();
    let refs: Vec<&str> = names_list.iter().map(String::as_str).collect();
    let bytes = message(&names(&refs), &objs, BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    for (i, e) in expect.iter().enumerate() {
        let c = &r.objects()[i].components()[0];
        assert_eq!(c.encoding(), Encoding::Pipeline);
        assert_eq!(as_f64s(&r.read_to_vec(i, 0).unwrap()), *e, "object {i}");
    }
    let last = objs.len() - 1;
    let got: Vec<f32> = r
        .read_to_vec(last, 0)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [1.0, 256.0, 129.0]);
    r.verify().unwrap();

    // Wrong packed size (uncompressed) is refused at open; bits over 64 too.
    let bad = sp(Obj::new(&[6], "float64", vec![0; 3]), 8, 0.0, 0, 0);
    assert_eq!(
        open_err(&message(&map(&[]), &[bad], BUFFERED)).kind(),
        ErrorKind::Format
    );
    let bad = sp(Obj::new(&[1], "float64", vec![0; 9]), 65, 0.0, 0, 0);
    assert_eq!(
        open_err(&message(&map(&[]), &[bad], BUFFERED)).kind(),
        ErrorKind::Format
    );
    let bad = sp(Obj::new(&[1], "int32", vec![0; 1]), 8, 0.0, 0, 0);
    assert_eq!(
        open_err(&message(&map(&[]), &[bad], BUFFERED)).kind(),
        ErrorKind::Unsupported
    );
}

#[test]
fn shuffle_zstd_lz4_and_byte_order() {
    let vals = [1.5f64, -2.0, 1e300, 0.0, 7.0];
    let raw = f64s(&vals);
    let objs = [
        Obj::new(
            &[5],
            "float64",
            zstd::bulk::compress(&shuffle(&raw, 8), 1).unwrap(),
        )
        .set("filter", text("shuffle"))
        .set("shuffle_element_size", Value::Unsigned(8))
        .set("compression", text("zstd")),
        Obj::new(&[5], "float64", lz4_flex::compress_prepend_size(&raw))
            .set("compression", text("lz4")),
        Obj::new(&[5], "float64", shuffle(&raw, 8))
            .set("filter", text("shuffle"))
            .set("shuffle_element_size", Value::Unsigned(8)),
        Obj::new(
            &[5],
            "float64",
            vals.iter().flat_map(|v| v.to_be_bytes()).collect(),
        )
        .set("byte_order", text("big")),
        Obj::new(
            &[2],
            "complex64",
            [1.0f32, 2.0, -3.0, 4.0]
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect(),
        )
        .set("byte_order", text("big")),
    ];
    let bytes = message(&names(&["a", "b", "c", "d", "e"]), &objs, BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    for i in 0..4 {
        assert_eq!(as_f64s(&r.read_to_vec(i, 0).unwrap()), vals, "object {i}");
    }
    let c = &r.objects()[3].components()[0];
    assert_eq!(c.encoding(), Encoding::Raw);
    assert!(!c.is_plain());
    let c = &r.objects()[4].components()[0];
    assert_eq!(
        (c.dtype(), c.logical_type()),
        (DType::F32, Some("complex64"))
    );
    assert_eq!(
        r.read_to_vec(4, 0).unwrap(),
        common::f32s(&[1.0, 2.0, -3.0, 4.0])
    );
    r.verify().unwrap();
    // Range reads of pipeline components.
    let mut part = [0u8; 8];
    r.read_range(1, 0, 16, &mut part).unwrap();
    assert_eq!(f64::from_le_bytes(part), 1e300);

    // Corrupt compressed streams fail on access with Format, after opening.
    let mut broken = objs[1].clone();
    broken.payload[0] ^= 1; // the size prefix
    let bytes = message(&map(&[]), &[broken], BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap_err().kind(), ErrorKind::Format);
    let broken = Obj::new(&[5], "float64", vec![0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0])
        .set("compression", text("zstd"));
    let bytes = message(&map(&[]), &[broken], BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap_err().kind(), ErrorKind::Format);
}

#[test]
fn bitmask_dtype_unpacks_to_bool() {
    let o = Obj::new(&[10], "bitmask", vec![0b1011_0000, 0b1100_0000]);
    let bytes = message(&map(&[]), &[o], BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    let c = &r.objects()[0].components()[0];
    assert_eq!(c.dtype(), DType::Bool);
    assert_eq!(r.read_to_vec(0, 0).unwrap(), [1, 0, 1, 1, 0, 0, 0, 0, 1, 1]);
}

#[test]
fn nan_and_inf_masks_are_restored() {
    let n = 12usize;
    let payload = f64s(&(0..n).map(|i| i as f64).collect::<Vec<_>>());
    let nan_pos = [1usize, 5, 11];
    let mut packed = vec![0u8; n.div_ceil(8)];
    for &p in &nan_pos {
        packed[p / 8] |= 0x80 >> (p % 8);
    }
    // inf+ at 2..=3 by rle; inf- at 7 by roaring (one array container).
    let rle = vec![0u8, 2, 2, 8];
    let roaring = vec![0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 7, 0];
    let obj = Obj::new(&[n as u64], "float64", payload.clone())
        .mask("nan", "none", packed.clone())
        .mask("inf+", "rle", rle.clone())
        .mask("inf-", "roaring", roaring.clone());
    let z = Obj::new(&[n as u64], "float64", payload.clone())
        .mask("nan", "zstd", zstd::bulk::compress(&packed, 3).unwrap())
        .mask(
            "inf+",
            "lz4",
            lz4_flex::compress_prepend_size(&[0b0011_0000, 0]),
        );
    // complex64: both parts of element 1 become NaN.
    let c = Obj::new(&[2], "complex64", common::f32s(&[1.0, 2.0, 3.0, 4.0])).mask(
        "nan",
        "none",
        vec![0b0100_0000],
    );
    let f16 = Obj::new(&[2], "float16", vec![0, 0x3c, 0, 0x3c]).mask("inf-", "none", vec![0x80]);
    let bytes = message(&names(&["a", "b", "c", "h"]), &[obj, z, c, f16], BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    let got = as_f64s(&r.read_to_vec(0, 0).unwrap());
    for (i, v) in got.iter().enumerate() {
        match i {
            1 | 5 | 11 => assert_eq!(v.to_bits(), 0x7FF8_0000_0000_0000),
            2 | 3 => assert_eq!(*v, f64::INFINITY),
            7 => assert_eq!(*v, f64::NEG_INFINITY),
            _ => assert_eq!(*v, i as f64),
        }
    }
    let got = as_f64s(&r.read_to_vec(1, 0).unwrap());
    assert!(got[1].is_nan() && got[5].is_nan() && got[11].is_nan());
    assert_eq!(
        (got[2], got[3], got[4]),
        (f64::INFINITY, f64::INFINITY, 4.0)
    );
    let got = r.read_to_vec(2, 0).unwrap();
    assert_eq!(&got[..8], &common::f32s(&[1.0, 2.0])[..]);
    assert_eq!(&got[8..], &[0, 0, 0xC0, 0x7F, 0, 0, 0xC0, 0x7F]);
    assert_eq!(r.read_to_vec(3, 0).unwrap(), [0, 0xFC, 0, 0x3C]);
    r.verify().unwrap();

    // Masks that don't fit the element count fail on access; masks on integers at open.
    let bad = Obj::new(&[n as u64], "float64", payload.clone()).mask("nan", "rle", vec![0, 50]);
    let bytes = message(&map(&[]), &[bad], BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap_err().kind(), ErrorKind::Format);
    let bad = Obj::new(&[1], "int8", vec![0]).mask("nan", "none", vec![0x80]);
    assert_eq!(
        open_err(&message(&map(&[]), &[bad], BUFFERED)).kind(),
        ErrorKind::Format
    );
    let bad = Obj::new(&[1], "float64", vec![0; 8]).mask("nan", "magic", vec![0x80]);
    assert_eq!(
        open_err(&message(&map(&[]), &[bad], BUFFERED)).kind(),
        ErrorKind::Format
    );
    let blosc = Obj::new(&[1], "float64", vec![0; 8]).mask("nan", "blosc2", vec![0x80]);
    let bytes = message(&map(&[]), &[blosc], BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    let e = r.read_to_vec(0, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("blosc2"), "{}", e.message());
}

#[test]
fn unsupported_codecs_open_and_fail_on_access() {
    let mut objs = Vec::new();
    for codec in ["szip", "blosc2", "zfp", "sz3"] {
        objs.push(
            Obj::new(&[4], "float32", vec![1, 2, 3])
                .set("compression", text(codec))
                .set(
                    "szip_rsi",
                    Value::Unsigned(32), // parameters are ignored
                ),
        );
    }
    let bytes = message(&names(&["szip", "blosc2", "zfp", "sz3"]), &objs, BUFFERED);
    let r = Reader::from_slice(&bytes).unwrap();
    for (i, codec) in ["szip", "blosc2", "zfp", "sz3"].iter().enumerate() {
        let c = &r.objects()[i].components()[0];
        assert_eq!(c.encoding(), Encoding::Pipeline);
        assert_eq!(c.decoded_length(), 16);
        let e = r.read_to_vec(i, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{codec}");
        assert!(
            e.message().contains(&format!(
                "compression '{codec}' is not supported by this build"
            )),
            "{}",
            e.message()
        );
        assert_eq!(r.view(i, 0).unwrap_err().kind(), ErrorKind::Unsupported);
    }
    // The digests still verify: they cover the stored bytes.
    r.verify().unwrap();
    // An unknown dtype or object type is refused at open, naming it.
    let e = open_err(&message(
        &map(&[]),
        &[Obj::new(&[1], "float8", vec![0])],
        BUFFERED,
    ));
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("float8"), "{}", e.message());
    let e = open_err(&message(
        &map(&[]),
        &[Obj::new(&[1], "uint8", vec![0]).set("type", text("table"))],
        BUFFERED,
    ));
    assert_eq!(e.kind(), ErrorKind::Unsupported);
}

// ---------------------------------------------------------------------------------------
// Validation.

fn one() -> Vec<u8> {
    message(
        &names(&["x"]),
        &[Obj::new(&[2], "uint8", vec![1, 2])],
        BUFFERED,
    )
}

/// Offset of the first data-object frame of a message.
fn data_frame_at(m: &[u8]) -> usize {
    m.windows(4).position(|w| w == b"FR\x00\x09").unwrap()
}

#[test]
fn preamble_and_postamble_rules() {
    let good = one();
    Reader::from_slice(&good).unwrap();
    // Version 2.
    let mut b = good.clone();
    b[9] = 2;
    let e = open_err(&b);
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(
        e.message().contains("message 0 at offset 0"),
        "{}",
        e.message()
    );
    // total_length past the end / too small.
    let mut b = good.clone();
    b[16..24].copy_from_slice(&(good.len() as u64 + 8).to_be_bytes());
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
    let mut b = good.clone();
    b[16..24].copy_from_slice(&30u64.to_be_bytes());
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
    // Truncated file.
    assert_eq!(open_err(&good[..good.len() - 1]).kind(), ErrorKind::Format);
    assert_eq!(open_err(&good[..30]).kind(), ErrorKind::Format);
    // Wrong end magic.
    let mut b = good.clone();
    let n = b.len();
    b[n - 1] = b'8';
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
    // first_footer_offset wrong.
    let mut b = good.clone();
    b[n - 17] ^= 8;
    let e = open_err(&b);
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(
        e.message().contains("first_footer_offset"),
        "{}",
        e.message()
    );
    // Postamble total_length disagreeing.
    let mut b = good.clone();
    b[n - 9] ^= 1;
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
}

#[test]
fn frame_rules() {
    let good = one();
    let at = data_frame_at(&good);
    // Missing ENDF of the data frame.
    let len = u64::from_be_bytes(good[at + 8..at + 16].try_into().unwrap()) as usize;
    let mut b = good.clone();
    b[at + len - 1] = b'X';
    let e = open_err(&b);
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(e.message().contains("ENDF"), "{}", e.message());
    assert!(
        e.message().contains(&format!("offset {at}")),
        "{}",
        e.message()
    );
    // A frame length running past the message.
    let mut b = good.clone();
    b[at + 8..at + 16].copy_from_slice(&(1u64 << 40).to_be_bytes());
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
    let mut b = good.clone();
    b[at + 8..at + 16].copy_from_slice(&20u64.to_be_bytes());
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
    // Obsolete type 4, unknown type 12.
    let mut b = good.clone();
    b[at + 3] = 4;
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
    let mut b = good.clone();
    b[at + 3] = 12;
    assert_eq!(open_err(&b).kind(), ErrorKind::Unsupported);
    // Garbage where a frame should be.
    let mut b = good.clone();
    b[at] = b'X';
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
    // cbor_offset outside the body.
    let mut b = good.clone();
    b[at + len - 20..at + len - 12].copy_from_slice(&5u64.to_be_bytes());
    assert_eq!(open_err(&b).kind(), ErrorKind::Format);
    // Header frame after a data frame: a streamed message whose footer metadata frame
    // is relabelled a header metadata frame.
    let mut s = message(
        &names(&["x"]),
        &[Obj::new(&[1], "uint8", vec![1])],
        STREAMED,
    );
    let meta_at = s.windows(4).position(|w| w == b"FR\x00\x07").unwrap();
    s[meta_at + 3] = 1;
    let e = open_err(&s);
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(e.message().contains("out of order"), "{}", e.message());
}

#[test]
fn metadata_index_and_descriptor_rules() {
    // No metadata frame at all.
    let mut m = message(&map(&[]), &[], BUFFERED);
    let meta_at = 24;
    m[meta_at + 3] = 2; // relabel the metadata frame as an index frame: not a valid index
    assert_eq!(open_err(&m).kind(), ErrorKind::Format);
    // base with more entries than objects.
    let e = open_err(&message(
        &names(&["a", "b"]),
        &[Obj::new(&[1], "uint8", vec![1])],
        BUFFERED,
    ));
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(e.message().contains("base"), "{}", e.message());
    // Index frame disagreeing with the frames: drop the inter-frame padding so the
    // offsets shift.
    let objs = [
        Obj::new(&[3], "uint8", vec![1, 2, 3]),
        Obj::new(&[1], "uint8", vec![4]),
    ];
    let good = message(&map(&[]), &objs, BUFFERED);
    Reader::from_slice(&good).unwrap();
    let second = good
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"FR\x00\x09")
        .nth(1)
        .unwrap()
        .0;
    let mut b = good.clone();
    // Move the second frame one byte later (into the padding) if there is room.
    if b[second - 1] == 0 {
        b.remove(second - 1);
        b.insert(second + 10, 0);
        assert!(Reader::from_slice(&b).is_err());
    }
    // Payload shorter than shape x dtype.
    let e = open_err(&message(
        &map(&[]),
        &[Obj::new(&[3], "uint16", vec![1, 2, 3])],
        BUFFERED,
    ));
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(e.message().contains("object 0"), "{}", e.message());
    // ndim disagreeing with shape, missing dtype, byte order unknown.
    for o in [
        Obj::new(&[2], "uint8", vec![1, 2]).set("ndim", Value::Unsigned(2)),
        Obj::new(&[2], "uint8", vec![1, 2]).set("byte_order", text("middle")),
        Obj::new(&[2], "uint8", vec![1, 2]).set("dtype", Value::Unsigned(1)),
        Obj::new(&[2], "uint8", vec![1, 2]).set("shape", text("2")),
        Obj::new(&[2], "uint8", vec![1, 2])
            .set("filter", text("shuffle"))
            .set("shuffle_element_size", Value::Unsigned(0)),
    ] {
        assert_eq!(
            open_err(&message(&map(&[]), &[o], BUFFERED)).kind(),
            ErrorKind::Format
        );
    }
    // Shape overflowing u64, and a rank over the limit.
    let o = Obj::new(&[u64::MAX, 3], "uint8", vec![]);
    assert_eq!(
        open_err(&message(&map(&[]), &[o], BUFFERED)).kind(),
        ErrorKind::Format
    );
    let o = Obj::new(&vec![1; 65], "uint8", vec![1]);
    assert_eq!(
        open_err(&message(&map(&[]), &[o], BUFFERED)).kind(),
        ErrorKind::Limit
    );
    // A huge tensor claimed by a tiny compressed payload: over the decode limit.
    let o = Obj::new(&[1 << 40], "float64", vec![1, 2, 3]).set("compression", text("zstd"));
    assert_eq!(
        open_err(&message(&map(&[]), &[o], BUFFERED)).kind(),
        ErrorKind::Limit
    );
    // A mask pointing outside the data region.
    let mut o = Obj::new(&[1], "float64", vec![0; 8]).mask("nan", "none", vec![0x80]);
    o.masks[0].2 = vec![0x80];
    let mut m = message(&map(&[]), &[o], BUFFERED);
    let text_at = m.windows(6).position(|w| w == b"offset").unwrap();
    m[text_at + 6] = 0x18; // offset 8 -> the next byte as a 1-byte integer follows
    assert!(Reader::from_slice(&m).is_err());
}

#[test]
fn hash_mismatch_is_a_checksum_error() {
    let good = one();
    let at = data_frame_at(&good);
    let mut b = good.clone();
    b[at + 16] ^= 0xFF; // first payload byte
    let r = Reader::from_slice(&b).unwrap();
    let e = r.verify().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checksum);
    assert!(e.message().contains("'x'"), "{}", e.message());
    // The stored hash itself corrupted: same.
    let mut b = good.clone();
    let len = u64::from_be_bytes(good[at + 8..at + 16].try_into().unwrap()) as usize;
    b[at + len - 5] ^= 1;
    let r = Reader::from_slice(&b).unwrap();
    assert_eq!(r.verify().unwrap_err().kind(), ErrorKind::Checksum);
    // Verify-on-open refuses it.
    let opts = ztensor::OpenOptions {
        verify_on_open: true,
        ..Default::default()
    };
    assert_eq!(
        Reader::from_slice_with(&b, &opts).unwrap_err().kind(),
        ErrorKind::Checksum
    );
}

#[test]
fn vectors_read_the_same_without_mmap() {
    let opts = ztensor::OpenOptions {
        use_mmap: false,
        ..Default::default()
    };
    for name in ["masks.tgm", "compressed.tgm", "streamed_multi.tgm"] {
        let mapped = Reader::open(vectors().join(name)).unwrap();
        let pread = Reader::open_with(vectors().join(name), &opts).unwrap();
        assert_eq!(mapped.objects().len(), pread.objects().len());
        for i in 0..mapped.objects().len() {
            assert_eq!(
                mapped.read_to_vec(i, 0).unwrap(),
                pread.read_to_vec(i, 0).unwrap()
            );
        }
        pread.verify().unwrap();
    }
}

/// Flipped bytes, truncations and overwritten lengths anywhere in the vectors: the reader
/// returns errors, never panics, and reads what it opens within the decoded size.
#[test]
fn random_corruptions_never_panic() {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(vectors()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "tgm") {
            files.push(std::fs::read(path).unwrap());
        }
    }
    let noise = common::bytes(99, 1 << 16);
    let mut k = 0usize;
    let mut next = || {
        k += 1;
        let i = k * 4 % (noise.len() - 4);
        u32::from_le_bytes(noise[i..i + 4].try_into().unwrap()) as usize
    };
    let mut opened = 0;
    for file in &files {
        for round in 0..400 {
            let mut b = file.clone();
            match round % 4 {
                0 => {
                    let at = next() % b.len();
                    b[at] ^= 1 << (next() % 8);
                }
                1 => b.truncate(next() % b.len()),
                2 => {
                    // A big-endian u64 length somewhere: make it huge or small.
                    let at = next() % (b.len() - 8);
                    let v = [u64::MAX, 1 << 40, 0, 17][next() % 4];
                    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
                }
                _ => {
                    for _ in 0..8 {
                        let at = next() % b.len();
                        b[at] = next() as u8;
                    }
                }
            }
            let Ok(r) = Reader::from_slice(&b) else {
                continue;
            };
            opened += 1;
            for i in 0..r.objects().len() {
                let c = &r.objects()[i].components()[0];
                assert!(c.decoded_length() <= 1 << 20);
                if let Ok(v) = r.read_to_vec(i, 0) {
                    assert_eq!(v.len() as u64, c.decoded_length());
                }
            }
            let _ = r.verify();
        }
    }
    assert!(opened > 100, "only {opened} mutants opened");
}
