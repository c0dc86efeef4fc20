//! NumPy's `.npy` (one array) and `.npz` (a zip of `.npy` members, stored by `savez`,
//! deflated by `savez_compressed`).
//!
//! A `.npy` file is `\x93NUMPY`, a version (1.0, 2.0 or 3.0), a header length (2 bytes in
//! 1.0, 4 after), and a Python dict literal `{'descr': .., 'fortran_order': .., 'shape':
//! (..)}`, then the array's bytes. Only that literal's grammar is read (strings, True and
//! False, tuples of integers); nothing is evaluated.
//!
//! Choices:
//! - The array of a `.npy` file is the object "array"; an npz member `x.npy` is the object
//!   `x`. Each is "dense" with one "data" component.
//! - dtypes: `b1` bool, `i1`..`i8`, `u1`..`u8`, `f2` `f4` `f8` as themselves; `c8` and
//!   `c16` as f32/f64 with the logical type complex64/complex128. Byte strings `S<n>` and
//!   raw `V<n>` (ml_dtypes' bfloat16 and fp8 are saved as `V`) become u8 with a last
//!   dimension of n bytes; unicode `U<n>` u32 with a last dimension of n code points;
//!   `M8[..]`/`m8[..]` (datetimes) i64. Those objects carry the attribute `numpy.descr`
//!   (the descr as written), so nothing is lost. Object arrays (`O`, which are pickles),
//!   structured dtypes and long doubles (`f16`, `c32`: no portable layout) are
//!   `Unsupported`, naming the descr.
//! - Big-endian arrays (`>`) are byte-swapped on read (a copy); the native order `=`
//!   is little-endian on every platform this library builds for.
//! - Fortran-ordered arrays keep their shape and are read as a copy transposed into
//!   row-major order, so element `[i, j]` is `a[i, j]` whatever the order on disk.
//! - Stored arrays aligned to their element size are zero-copy; deflated npz members are
//!   inflated once (a copy of the array only, the header dropped as it is inflated) and
//!   their CRC-32 checked.
//! - Sizes are checked arithmetic: the array's byte size (shape times item size) must
//!   not overflow and must fit after the header, in the file or the member.

use std::sync::Arc;

use crate::dtype::{DType, dense_byte_size};
use crate::error::{Result, bail, err};
use crate::formats::ReadAt;
use crate::formats::strided::{Strided, fortran_strides};
use crate::formats::zip::Archive;
use crate::limits::Limits;
use crate::model::{
    Attributes, Blob, CText, Component, Components, Container, Encoding, Model, Object, Step,
    check_name,
};
use crate::value::cbor::Value;

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The largest `.npy` header read (NumPy writes a few hundred bytes; version 2 allows 4 GiB).
const MAX_HEADER: u64 = 1 << 20;

pub(crate) fn detect(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// A parsed `.npy` header.
#[derive(Debug)]
pub(crate) struct Header {
    /// Bytes before the array's (magic, version, length, dict).
    pub(crate) len: u64,
    pub(crate) version: &'static str,
    pub(crate) dtype: DType,
    pub(crate) logical: Option<&'static str>,
    /// The shape the object has (the array's, plus the item's bytes or code points for
    /// string and void dtypes).
    pub(crate) shape: Vec<u64>,
    /// The array's own shape.
    array_shape: Vec<u64>,
    /// Bytes of one array item.
    item: usize,
    /// Width of the byte swap a big-endian array needs; 0 for none.
    swap: u8,
    fortran: bool,
    /// The descr, kept as an attribute when the dtype alone doesn't say it.
    pub(crate) descr_attr: Option<String>,
}

impl Header {
    /// Bytes of the array.
    pub(crate) fn data_len(&self) -> Result<u64> {
        dense_byte_size(&self.shape, self.dtype, self.logical)
            .ok_or_else(|| err!(Format, "the size of shape {:?} overflows", self.shape))
    }

    /// The steps from the array's stored bytes to row-major little-endian ones.
    pub(crate) fn steps(&self) -> Result<Vec<Step>> {
        let mut steps = Vec::new();
        if self.swap > 1 {
            steps.push(Step::SwapBytes(self.swap));
        }
        if self.fortran && self.array_shape.iter().filter(|&&d| d != 1).count() > 1 {
            let n = crate::dtype::numel(&self.array_shape)
                .ok_or_else(|| err!(Format, "shape {:?} overflows", self.array_shape))?;
            let strides = fortran_strides(&self.array_shape);
            steps.push(Step::Format(Arc::new(Strided::new(
                self.item,
                &self.array_shape,
                &strides,
                0,
                n,
            )?)));
        }
        Ok(steps)
    }
}

/// Reads the header at the start of `bytes` (which hold at least its first 10 bytes,
/// and the whole header when it fits in them).
pub(crate) fn parse_header(bytes: &[u8], limits: &Limits) -> Result<Header> {
    if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
        bail!(Format, "not a .npy array: no \\x93NUMPY magic");
    }
    let (version, dict_at, dict_len) = match (bytes[6], bytes[7]) {
        (1, 0) => (
            "1.0",
            10,
            u64::from(u16::from_le_bytes([bytes[8], bytes[9]])),
        ),
        (major @ (2 | 3), 0) if bytes.len() >= 12 => (
            if major == 2 { "2.0" } else { "3.0" },
            12,
            u64::from(u32::from_le_bytes(bytes[8..12].try_into().expect("4"))),
        ),
        (major, minor) => bail!(
            Unsupported,
            ".npy version {major}.{minor} (versions 1.0, 2.0 and 3.0 are read)"
        ),
    };
    if dict_len > MAX_HEADER {
        bail!(
            Limit,
            ".npy header of {dict_len} bytes is over the limit of {MAX_HEADER}"
        );
    }
    let end = dict_at + dict_len as usize;
    let Some(dict) = bytes.get(dict_at..end) else {
        bail!(Format, ".npy header of {dict_len} bytes is cut short");
    };
    // Versions 1 and 2 are latin-1: a byte outside ASCII can't be in a header numpy wrote.
    let text = std::str::from_utf8(dict).map_err(|_| err!(Format, ".npy header is not text"))?;
    if text.contains("'descr': [") {
        bail!(
            Unsupported,
            ".npy array of a structured dtype (a list of fields): only arrays of one \
             element type are read"
        );
    }
    let fields = Literal {
        s: text.as_bytes(),
        at: 0,
    }
    .dict()
    .map_err(|m| {
        err!(
            Format,
            ".npy header {}: {m}",
            super::printable(&dict[..dict.len().min(120)])
        )
    })?;
    let (descr, fortran, array_shape) = fields;
    let mut h = descr_of(&descr)?;
    if array_shape.len() + usize::from(h.extra.is_some()) > limits.max_rank {
        bail!(
            Limit,
            ".npy shape {array_shape:?} has more dimensions than the limit of {}",
            limits.max_rank
        );
    }
    let mut shape = array_shape.clone();
    if let Some(n) = h.extra {
        shape.push(n);
    }
    Ok(Header {
        len: end as u64,
        version,
        dtype: h.dtype,
        logical: h.logical,
        shape,
        array_shape,
        item: h.item,
        swap: if h.big { h.swap } else { 0 },
        fortran,
        descr_attr: h.keep.then(|| std::mem::take(&mut h.descr)),
    })
}

/// What a descr says.
struct Descr {
    dtype: DType,
    logical: Option<&'static str>,
    /// Bytes of one item.
    item: usize,
    /// Width of one swapped unit.
    swap: u8,
    big: bool,
    /// The last dimension string and void items add.
    extra: Option<u64>,
    /// Keep the descr as an attribute.
    keep: bool,
    descr: String,
}

fn descr_of(descr: &str) -> Result<Descr> {
    let unsupported = |why: &str| err!(Unsupported, ".npy dtype {descr:?}: {why}");
    // Every descr numpy writes is ASCII (found by fuzzing: a multi-byte character where
    // the type code is split off panicked).
    if !descr.is_ascii() {
        return Err(unsupported("not a dtype this reader knows"));
    }
    let (order, code) = match descr.as_bytes().first() {
        Some(b'<' | b'=' | b'|') => (false, &descr[1..]),
        Some(b'>') => (true, &descr[1..]),
        _ => (false, descr),
    };
    let (kind, rest) = code.split_at(code.len().min(1));
    let simple = |dtype: DType, logical: Option<&'static str>, swap: u8| Descr {
        dtype,
        logical,
        item: dtype.size() * if logical.is_some() { 2 } else { 1 },
        swap,
        big: order,
        extra: None,
        keep: false,
        descr: descr.to_owned(),
    };
    Ok(match (kind, rest) {
        ("b", "1") => simple(DType::Bool, None, 1),
        ("i", "1") => simple(DType::I8, None, 1),
        ("i", "2") => simple(DType::I16, None, 2),
        ("i", "4") => simple(DType::I32, None, 4),
        ("i", "8") => simple(DType::I64, None, 8),
        ("u", "1") => simple(DType::U8, None, 1),
        ("u", "2") => simple(DType::U16, None, 2),
        ("u", "4") => simple(DType::U32, None, 4),
        ("u", "8") => simple(DType::U64, None, 8),
        ("f", "2") => simple(DType::F16, None, 2),
        ("f", "4") => simple(DType::F32, None, 4),
        ("f", "8") => simple(DType::F64, None, 8),
        ("c", "8") => simple(DType::F32, Some("complex64"), 4),
        ("c", "16") => simple(DType::F64, Some("complex128"), 8),
        ("M" | "m", r) if r.starts_with('8') => Descr {
            keep: true,
            ..simple(DType::I64, None, 8)
        },
        ("S" | "V" | "U", n) => {
            let n: u64 = n
                .parse()
                .map_err(|_| err!(Format, ".npy dtype {descr:?} has no item size"))?;
            if n == 0 || n > u32::MAX as u64 {
                bail!(Format, ".npy dtype {descr:?} has an item size of {n}");
            }
            let (dtype, swap, unit) = if kind == "U" {
                (DType::U32, 4, 4)
            } else {
                (DType::U8, 1, 1)
            };
            Descr {
                item: usize::try_from(n * unit)
                    .map_err(|_| err!(Limit, ".npy dtype {descr:?} does not fit in memory"))?,
                extra: Some(n),
                keep: true,
                ..simple(dtype, None, swap)
            }
        }
        ("O", _) => return Err(unsupported("object arrays are pickles, which are not read")),
        ("f" | "c", _) => {
            return Err(unsupported("long double has no portable layout"));
        }
        _ => return Err(unsupported("not a dtype this reader knows")),
    })
}

/// A Python literal as `numpy.lib.format` writes it (no evaluation).
struct Literal<'a> {
    s: &'a [u8],
    at: usize,
}

type Fields = (String, bool, Vec<u64>);

impl Literal<'_> {
    fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.at))
        }
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        self.ws();
        let q = match self.s.get(self.at) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a string at byte {}", self.at)),
        };
        let start = self.at + 1;
        let len = self.s[start..]
            .iter()
            .position(|&b| b == q || b == b'\\')
            .ok_or("unterminated string")?;
        if self.s[start + len] == b'\\' {
            return Err("escapes in strings are not read".into());
        }
        self.at = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }
    fn word(&mut self) -> &[u8] {
        self.ws();
        let start = self.at;
        while self
            .s
            .get(self.at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            self.at += 1;
        }
        &self.s[start..self.at]
    }
    fn shape(&mut self) -> std::result::Result<Vec<u64>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Ok(dims);
            }
            let w = self.word();
            let w = w.strip_suffix(b"L").unwrap_or(w);
            let d = std::str::from_utf8(w)
                .ok()
                .and_then(|w| w.parse::<u64>().ok())
                .ok_or_else(|| format!("a dimension is not an integer at byte {}", self.at))?;
            if dims.len() >= crate::limits::MAX_CBOR_DEPTH {
                return Err("too many dimensions".into());
            }
            dims.push(d);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
    fn dict(&mut self) -> std::result::Result<Fields, String> {
        self.expect(b'{')?;
        let (mut descr, mut fortran, mut shape) = (None, None, None);
        loop {
            if self.eat(b'}') {
                break;
            }
            let key = self.string()?;
            self.expect(b':')?;
            match key.as_str() {
                "descr" if descr.is_none() => {
                    self.ws();
                    if self.s.get(self.at) == Some(&b'[') {
                        return Err("structured dtypes (a list of fields) are not read".into());
                    }
                    descr = Some(self.string()?);
                }
                "fortran_order" if fortran.is_none() => {
                    fortran = Some(match self.word() {
                        b"True" => true,
                        b"False" => false,
                        _ => return Err("fortran_order is not True or False".into()),
                    })
                }
                "shape" if shape.is_none() => shape = Some(self.shape()?),
                k => return Err(format!("unexpected or repeated key {k:?}")),
            }
            if !self.eat(b',') {
                self.expect(b'}')?;
                break;
            }
        }
        match (descr, fortran, shape) {
            (Some(d), Some(f), Some(s)) => Ok((d, f, s)),
            _ => Err("a key of descr, fortran_order, shape is missing".into()),
        }
    }
}

/// How many bytes the header whose first 12 bytes (or fewer) are `first` takes, at most
/// `MAX_HEADER + 12` (`parse_header` refuses longer ones); None when `first` can't say.
fn header_span(first: &[u8]) -> Option<u64> {
    let len = match first.get(6) {
        Some(1) if first.len() >= 10 => 10 + u64::from(u16::from_le_bytes([first[8], first[9]])),
        Some(2 | 3) if first.len() >= 12 => {
            12 + u64::from(u32::from_le_bytes(first[8..12].try_into().expect("4")))
        }
        _ => return None,
    };
    Some(len.min(MAX_HEADER + 12))
}

/// The first bytes of a `.npy` header that say how long it is, then the whole header.
fn read_header(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<Header> {
    let first = read(0, size.min(12))?;
    let Some(len) = header_span(&first) else {
        return parse_header(&first, limits);
    };
    let bytes = read(0, len.min(size))?;
    parse_header(&bytes, limits)
}

/// The one object of an array: its data component over `blob` and `steps`.
fn array_object(
    name: &str,
    h: &Header,
    blob: Blob,
    steps: Vec<Step>,
    limits: &Limits,
) -> Result<Object> {
    let len = h.data_len()?;
    let attributes = h.descr_attr.as_ref().map(|d| {
        Attributes::from_value(&Value::Map(vec![(
            Value::Text("numpy.descr".into()),
            Value::Text(d.clone()),
        )]))
    });
    Ok(Object {
        name: check_name("object", name, limits.max_name_length)?,
        format: CText::new("dense")?,
        shape: h.shape.clone().into(),
        attributes,
        components: Components::One(Component {
            role: CText::new("data")?,
            dtype: h.dtype,
            logical_type: h.logical.map(CText::new).transpose()?,
            blob,
            decoded_length: len,
            digest: None,
            steps: steps.into(),
        }),
    })
}

/// A `.npy` file: the object "array".
pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let h = read_header(read, size, limits)?;
    let len = h.data_len()?;
    if h.len.checked_add(len).is_none_or(|end| end > size) {
        bail!(
            Format,
            ".npy array of shape {:?} needs {len} bytes after its {}-byte header, but the file is {size} bytes",
            h.shape,
            h.len
        );
    }
    let blob = Blob {
        file: 0,
        offset: h.len,
        length: len,
        encoding: Encoding::Raw,
        decoded_length: len,
    };
    let object = array_object("array", &h, blob, h.steps()?, limits)?;
    let model = Model::new(
        Container::NumPy,
        super::UNALIGNED,
        h.version,
        None,
        vec![object],
    )?;
    Ok((model, size))
}

/// An `.npz` archive: one object per `.npy` member, named without the extension.
pub(crate) fn parse_npz(
    read: &ReadAt<'_>,
    archive: &Archive,
    limits: &Limits,
) -> Result<(Model, u64)> {
    let mut objects = Vec::new();
    objects
        .try_reserve_exact(archive.entries.len())
        .map_err(|_| err!(Limit, "no memory for {} arrays", archive.entries.len()))?;
    for e in &archive.entries {
        let ctx = |er: crate::error::Error| er.context(format_args!("npz member '{}'", e.name));
        let name = e.name.strip_suffix(".npy").expect("checked by the caller");
        // The first 12 bytes say how long the header is; only that much is read (or
        // inflated), not the array.
        let first = archive.prefix(read, e, 12).map_err(ctx)?;
        let head = match header_span(&first) {
            Some(len) => archive.prefix(read, e, len).map_err(ctx)?,
            None => first,
        };
        let h = parse_header(&head, limits).map_err(ctx)?;
        let len = h.data_len().map_err(ctx)?;
        if h.len.checked_add(len).is_none_or(|end| end > e.size) {
            return Err(ctx(err!(
                Format,
                "array of shape {:?} needs {len} bytes after its {}-byte header, but the member holds {}",
                h.shape,
                h.len,
                e.size
            )));
        }
        // Only the array's bytes: in place when stored, inflated without a second copy
        // of the member when deflated.
        let (blob, mut steps) = archive.blob_range(read, e, h.len, len).map_err(ctx)?;
        steps.extend(h.steps().map_err(ctx)?);
        objects.push(array_object(name, &h, blob, steps, limits).map_err(ctx)?);
    }
    let model = Model::new(Container::NumPy, super::UNALIGNED, "npz", None, objects)?;
    Ok((model, archive.data_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(dict: &str) -> Result<Header> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[1, 0]);
        b.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        b.extend_from_slice(dict.as_bytes());
        parse_header(&b, &Limits::default())
    }

    #[test]
    fn headers_as_numpy_writes_them() {
        let h =
            header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }      \n").unwrap();
        assert_eq!(
            (h.dtype, &h.shape[..], h.fortran),
            (DType::F32, &[3u64, 4][..], false)
        );
        let h = header("{'descr': '>c16', 'fortran_order': True, 'shape': (5,), }").unwrap();
        assert_eq!(
            (h.dtype, h.logical, h.swap),
            (DType::F64, Some("complex128"), 8)
        );
        let h = header("{'descr': '<U3', 'fortran_order': False, 'shape': (), }").unwrap();
        assert_eq!(
            (h.dtype, &h.shape[..], h.swap),
            (DType::U32, &[3u64][..], 0)
        );
        assert_eq!(h.descr_attr.as_deref(), Some("<U3"));
        let e = header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
        let e = header("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }")
            .unwrap_err();
        assert!(e.message().contains("structured"), "{e}");
        assert!(header("{'descr': '<f4', 'shape': (2,), }").is_err());
        assert!(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,x), }").is_err());
        assert!(header("{'descr': '<f16', 'fortran_order': False, 'shape': (2,), }").is_err());
        let e =
            header("{'descr': '\u{12a}4', 'fortran_order': False, 'shape': (2,), }").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
    }
}
