//! Fuzz target: writer call sequences. The input drives a sequence of writer calls with
//! arbitrary arguments (names from a small pool so they collide, shapes, dtypes, logical
//! types, raw and zstd components, digests, streamed chunks, attributes up to and past
//! the depth a default reader accepts, calls out of order). The target keeps its own
//! account of what each call that succeeded added, as the writer documents it (a refused
//! `add` or `end_object` drops the object, a refused `end_component` its component ...).
//! The first input byte picks the version: v1.2 (odd) or v2 (even, the default).
//! After `finish`, the file must open with the default limits and read back exactly that
//! account: for v1.2, objects in order, formats, shapes, components (role, dtype, logical
//! type, encoding, bytes) and attributes byte for byte; for v2 (`check_v2`), objects in
//! name order, names, shapes, every part's bytes, attributes in deterministic form, and
//! what v2 names as we do. Every digest verifies, then the walk of `ztensor_fuzz::walk`
//! runs. The writer must never write what its reader refuses.
#![no_main]

use libfuzzer_sys::arbitrary::{Result as AResult, Unstructured};
use libfuzzer_sys::fuzz_target;
use ztensor::cbor::Value;
use ztensor::{
    CreateOptions, DType, DigestAlgorithm, Encoding, FileVersion, Reader, WriteOptions, Writer,
};

const NAMES: [&str; 6] = ["a", "b", "w", "layer.0", "", "x\u{e9}"];
const FORMATS: [&str; 6] = [
    "dense",
    "sparse_csr",
    "sparse_coo",
    "quantized_group",
    "mine",
    "",
];
const ROLES: [&str; 9] = [
    "data", "indices", "indptr", "values", "coords", "scales", "zeros", "extra", "",
];
const LOGICAL: [&str; 8] = [
    "f8_e4m3fn",
    "f8_e8m0fnu",
    "f4_e2m1fn_x2",
    "f6_e2m3fn_x4",
    "complex64",
    "complex128",
    "ggml_q4_0",
    "my_type",
];

/// What the target expects the file to hold.
struct Expected {
    name: String,
    format: String,
    shape: Vec<u64>,
    attributes: Option<Vec<u8>>,
    components: Vec<(String, DType, Option<String>, Encoding, Vec<u8>)>,
}

fn pick<'a>(u: &mut Unstructured<'_>, pool: &[&'a str]) -> AResult<String> {
    if u.ratio(1, 8)? {
        // Now and then, any text at all (NUL bytes and long names included).
        let s: &str = u.arbitrary()?;
        return Ok(s.to_owned());
    }
    Ok(u.choose(pool)?.to_string())
}

fn shape(u: &mut Unstructured<'_>) -> AResult<Vec<u64>> {
    let rank = if u.ratio(1, 64)? {
        u.int_in_range(60..=70)?
    } else {
        u.int_in_range(0..=4)?
    };
    (0..rank)
        .map(|_| {
            Ok(if u.ratio(1, 32)? {
                u.arbitrary::<u64>()?
            } else {
                u.int_in_range(0..=12)?
            })
        })
        .collect()
}

fn dtype(u: &mut Unstructured<'_>) -> AResult<DType> {
    Ok(*u.choose(&ztensor::dtype::ALL_DTYPES)?)
}

fn logical(u: &mut Unstructured<'_>) -> AResult<Option<String>> {
    Ok(if u.ratio(1, 4)? {
        Some(pick(u, &LOGICAL)?)
    } else {
        None
    })
}

fn options(u: &mut Unstructured<'_>) -> AResult<WriteOptions> {
    let mut o = if u.arbitrary()? {
        WriteOptions::zstd(u.int_in_range(-5..=25)?)
    } else {
        WriteOptions::default()
    };
    o.digest = *u.choose(&[
        DigestAlgorithm::None,
        DigestAlgorithm::Sha256,
        DigestAlgorithm::Crc32c,
    ])?;
    Ok(o)
}

/// Data bytes: mostly the size the shape needs (so calls get past the size check), else
/// any length; bool data mostly 0/1.
fn data(u: &mut Unstructured<'_>, want: Option<u64>, dtype: DType) -> AResult<Vec<u8>> {
    let len = match want {
        Some(n) if n <= 1 << 16 && !u.ratio(1, 8)? => n as usize,
        _ => u.int_in_range(0..=300)?,
    };
    let mut out = vec![0u8; len];
    if !u.ratio(1, 4)? {
        u.fill_buffer(&mut out)?;
    }
    if dtype == DType::Bool && !u.ratio(1, 8)? {
        out.iter_mut().for_each(|b| *b &= 1);
    }
    Ok(out)
}

/// An attribute value: a map, mostly, of leaves, small containers, or a chain of nested
/// arrays as deep as the input says (around the depth limits).
fn value(u: &mut Unstructured<'_>, budget: u32) -> AResult<Value> {
    let kind = if budget == 0 {
        u.int_in_range(0..=6)?
    } else {
        u.int_in_range(0..=10)?
    };
    Ok(match kind {
        0 => Value::Unsigned(u.arbitrary()?),
        1 => Value::Negative(u.arbitrary()?),
        2 => Value::Float(u.arbitrary()?),
        3 => Value::Text(u.arbitrary::<&str>()?.to_owned()),
        4 => Value::Bytes(u.arbitrary::<&[u8]>()?.to_vec()),
        5 => Value::Bool(u.arbitrary()?),
        6 => Value::Null,
        7 => Value::Array(
            (0..u.int_in_range(0..=3)?)
                .map(|_| value(u, budget - 1))
                .collect::<AResult<_>>()?,
        ),
        8 => Value::Map(
            (0..u.int_in_range(0..=3)?)
                .map(|_| Ok((value(u, budget - 1)?, value(u, budget - 1)?)))
                .collect::<AResult<_>>()?,
        ),
        9 => Value::Tag(u.arbitrary()?, Box::new(value(u, budget - 1)?)),
        _ => {
            let depth: u8 = u.arbitrary()?;
            let mut v = value(u, 0)?;
            for _ in 0..depth {
                v = Value::Array(vec![v]);
            }
            v
        }
    })
}

fn attributes(u: &mut Unstructured<'_>) -> AResult<Value> {
    if u.ratio(1, 16)? {
        return value(u, 2); // not necessarily a map
    }
    let n = u.int_in_range(0..=3)?;
    Ok(Value::Map(
        (0..n)
            .map(|_| Ok((Value::Text(pick(u, &NAMES)?), value(u, 3)?)))
            .collect::<AResult<_>>()?,
    ))
}

/// The state of the sequence: the writer, the objects it holds (the last one open when
/// `open`), the component being streamed.
struct Run {
    w: Writer<Vec<u8>>,
    /// The file is zTensor v2 (else v1.2).
    v2: bool,
    objects: Vec<Expected>,
    open: bool,
    stream: Option<(String, DType, Option<String>, Encoding, Vec<u8>)>,
    file_attributes: Option<Vec<u8>>,
}

impl Run {
    fn step(&mut self, u: &mut Unstructured<'_>) -> AResult<()> {
        match u.int_in_range(0..=8)? {
            0 => {
                let (name, dt, lt, sh) = (pick(u, &NAMES)?, dtype(u)?, logical(u)?, shape(u)?);
                let want = ztensor::dtype::dense_byte_size(&sh, dt, lt.as_deref());
                let bytes = data(u, want, dt)?;
                let o = options(u)?;
                let was_open = self.open;
                if self
                    .w
                    .add_typed(&name, dt, lt.as_deref(), &sh, &bytes, &o)
                    .is_ok()
                {
                    assert!(!was_open, "add succeeded while an object was open");
                    self.objects.push(Expected {
                        name,
                        format: "dense".into(),
                        shape: sh,
                        attributes: None,
                        components: vec![("data".into(), dt, lt, o.encoding, bytes)],
                    });
                }
            }
            1 => {
                let (name, format, sh) = (pick(u, &NAMES)?, pick(u, &FORMATS)?, shape(u)?);
                if self.w.begin_object(&name, &format, &sh).is_ok() {
                    assert!(
                        !self.open,
                        "begin_object succeeded while an object was open"
                    );
                    self.objects.push(Expected {
                        name,
                        format,
                        shape: sh,
                        attributes: None,
                        components: Vec::new(),
                    });
                    self.open = true;
                }
            }
            2 => {
                let (role, dt, lt) = (pick(u, &ROLES)?, dtype(u)?, logical(u)?);
                let bytes = data(u, None, dt)?;
                let o = options(u)?;
                let streaming = self.stream.is_some();
                if self
                    .w
                    .add_component(&role, dt, lt.as_deref(), &bytes, &o)
                    .is_ok()
                {
                    assert!(
                        self.open && !streaming,
                        "add_component succeeded out of order"
                    );
                    let obj = self.objects.last_mut().expect("an open object");
                    obj.components.push((role, dt, lt, o.encoding, bytes));
                }
            }
            3 => {
                let (role, dt, lt, o) = (pick(u, &ROLES)?, dtype(u)?, logical(u)?, options(u)?);
                if self.w.begin_component(&role, dt, lt.as_deref(), &o).is_ok() {
                    assert!(
                        self.open && self.stream.is_none(),
                        "begin_component out of order"
                    );
                    self.stream = Some((role, dt, lt, o.encoding, Vec::new()));
                }
            }
            4 => {
                let dt = self.stream.as_ref().map_or(DType::U8, |s| s.1);
                let bytes = data(u, None, dt)?;
                if self.w.write(&bytes).is_ok() {
                    let s = self
                        .stream
                        .as_mut()
                        .expect("write succeeded without a stream");
                    s.4.extend_from_slice(&bytes);
                }
            }
            5 => {
                let had = self.stream.take();
                if self.w.end_component().is_ok() {
                    let s = had.expect("end_component succeeded without a stream");
                    self.objects
                        .last_mut()
                        .expect("open object")
                        .components
                        .push(s);
                }
                // Refused with a stream: the component is dropped.
            }
            6 => {
                let (open, streaming) = (self.open, self.stream.is_some());
                match self.w.end_object() {
                    Ok(()) => {
                        assert!(open && !streaming, "end_object succeeded out of order");
                        self.open = false;
                    }
                    Err(_) if open && !streaming => {
                        // A refused object is dropped from the file.
                        self.objects.pop();
                        self.open = false;
                    }
                    Err(_) => {}
                }
            }
            7 => {
                let v = attributes(u)?;
                if self.w.set_file_attributes(v.clone()).is_ok() {
                    self.file_attributes = Some(stored(&v, self.v2));
                }
            }
            _ => {
                let (name, v) = (pick(u, &NAMES)?, attributes(u)?);
                if self.w.set_object_attributes(&name, v.clone()).is_ok() {
                    let obj = self.objects.iter_mut().find(|o| o.name == name);
                    obj.expect("attributes set on an object never added")
                        .attributes = Some(stored(&v, self.v2));
                }
            }
        }
        Ok(())
    }
}

/// The bytes a writer stores for attributes it accepted: v1.2 as given; v2 the
/// deterministic encoding, which is `cbor::to_vec`'s (shortest heads and floats, one NaN)
/// with every map's entries in the bytewise order of their keys' encodings.
fn stored(v: &Value, v2: bool) -> Vec<u8> {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            Value::Map(pairs) => {
                let mut pairs: Vec<(Value, Value)> =
                    pairs.iter().map(|(k, v)| (sorted(k), sorted(v))).collect();
                pairs.sort_by_cached_key(|(k, _)| ztensor::cbor::to_vec(k));
                Value::Map(pairs)
            }
            other => other.clone(),
        }
    }
    if v2 {
        ztensor::cbor::to_vec(&sorted(v))
    } else {
        ztensor::cbor::to_vec(v)
    }
}

/// A v2 file says what an object is in v2's vocabulary (layout ids, parts sorted by name,
/// a part's dtype and logical type in v2's names, GGUF and group attributes as v2 states
/// them): for v2, the target checks names, shapes, every part's bytes and encoding, and
/// the format, types and attributes of objects whose names are the same in both.
fn check_v2(r: &Reader<'_>, objects: &[Expected]) {
    for (i, (got, want)) in r.objects().iter().zip(objects).enumerate() {
        assert_eq!(got.name(), want.name, "name of object {i}");
        assert_eq!(got.shape(), &want.shape[..], "shape of '{}'", want.name);
        assert_eq!(got.components().len(), want.components.len());
        let same_vocabulary = want.format == "dense";
        if same_vocabulary {
            assert_eq!(got.format(), want.format, "format of '{}'", want.name);
            assert_eq!(
                got.raw_attributes().map(|a| a.as_cbor()),
                want.attributes.as_deref(),
                "attributes of '{}'",
                want.name
            );
        }
        for (role, dt, lt, enc, bytes) in &want.components {
            let role = if role == "packed_weight" {
                "data"
            } else {
                role
            };
            let c = (0..got.components().len())
                .find(|&c| got.components()[c].role() == role)
                .unwrap_or_else(|| panic!("'{}' has no part '{role}'", want.name));
            let comp = &got.components()[c];
            assert_eq!(comp.encoding(), *enc);
            assert_eq!(comp.decoded_length(), bytes.len() as u64);
            if same_vocabulary && *dt != DType::Bool && lt.is_none() {
                assert_eq!(comp.dtype(), *dt);
                assert_eq!(comp.logical_type(), None);
            }
            let back = r.read_to_vec(i, c).expect("a written part reads back");
            assert!(back == *bytes, "bytes of '{}' part '{role}'", want.name);
        }
    }
}

/// v1.2 keeps everything as written: objects in order, formats, types and attributes
/// byte for byte.
fn check_v1_2(r: &Reader<'_>, objects: &[Expected]) {
    for (i, (got, want)) in r.objects().iter().zip(objects).enumerate() {
        assert_eq!(got.name(), want.name, "name of object {i}");
        assert_eq!(got.format(), want.format, "format of '{}'", want.name);
        assert_eq!(got.shape(), &want.shape[..], "shape of '{}'", want.name);
        assert_eq!(
            got.raw_attributes().map(|a| a.as_cbor()),
            want.attributes.as_deref(),
            "attributes of '{}'",
            want.name
        );
        assert_eq!(
            got.components().len(),
            want.components.len(),
            "components of '{}'",
            want.name
        );
        for (c, (comp, (role, dt, lt, enc, bytes))) in
            got.components().iter().zip(&want.components).enumerate()
        {
            assert_eq!(comp.role(), role);
            assert_eq!(comp.dtype(), *dt);
            assert_eq!(comp.logical_type(), lt.as_deref());
            assert_eq!(comp.encoding(), *enc);
            assert_eq!(comp.decoded_length(), bytes.len() as u64);
            let back = r.read_to_vec(i, c).expect("a written component reads back");
            assert!(
                back == *bytes,
                "bytes of '{}' component '{role}'",
                want.name
            );
        }
    }
}

fn check(file: &[u8], objects: &mut [Expected], file_attributes: Option<&[u8]>, v2: bool) {
    let r = match Reader::from_slice(file) {
        Ok(r) => r,
        Err(e) => panic!("the reader refuses what the writer wrote: {e}"),
    };
    assert_eq!(r.objects().len(), objects.len(), "object count");
    assert_eq!(
        r.raw_attributes().map(|a| a.as_cbor()),
        file_attributes,
        "file attributes"
    );
    if v2 {
        // v2's manifest is a map of objects by name: a reader lists them in name order
        // (bytewise), whatever order they were added in.
        objects.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        check_v2(&r, objects);
    } else {
        check_v1_2(&r, objects);
    }
    if let Err(e) = r.verify() {
        panic!("a file just written does not verify: {e}");
    }
    ztensor_fuzz::walk(&r);
}

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    // The first byte: zTensor v2 (the default) when even, else v1.2.
    let v2 = input.first().is_none_or(|b| b & 1 == 0);
    let version = if v2 {
        FileVersion::V2
    } else {
        FileVersion::V1_2
    };
    if !input.is_empty() {
        let _ = u.bytes(1);
    }
    let options = CreateOptions {
        version,
        ..CreateOptions::default()
    };
    let mut run = Run {
        w: Writer::new_with(Vec::new(), &options).expect("a writer into memory"),
        v2,
        objects: Vec::new(),
        open: false,
        stream: None,
        file_attributes: None,
    };
    for _ in 0..64 {
        if u.is_empty() || run.step(&mut u).is_err() {
            break;
        }
    }
    let clean = !run.open && run.stream.is_none();
    match run.w.finish() {
        Ok(file) => {
            assert!(!run.open, "finish succeeded with an object open");
            check(
                &file,
                &mut run.objects,
                run.file_attributes.as_deref(),
                run.v2,
            );
        }
        Err(e) => assert!(!clean, "finish refused a writer with nothing open: {e}"),
    }
});
