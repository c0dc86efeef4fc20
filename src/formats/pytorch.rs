//! PyTorch checkpoints as `torch.save` writes them since 1.6 (`pytorch_model.bin`,
//! `*.pt`, `*.pth`): a zip archive of `<dir>/data.pkl` (a pickle of the state dict, read
//! by `pickle` without running it), `<dir>/data/<key>` (each storage's raw bytes, 64-byte
//! aligned by torch's writer), `<dir>/byteorder` ("little" or "big"; absent in files
//! older than torch 2.1, which are little-endian) and version records.
//!
//! Choices:
//! - Each tensor is a "dense" object with one "data" component, named by its path in the
//!   nested dicts and lists, joined with "." (`encoder.layer.0.weight`), as
//!   `state_dict()` names them. A bare tensor saved alone is the object "tensor". A dict
//!   with an empty key is refused (`Format`): its path would be ambiguous ("a." is also
//!   the key "a." of the outer dict, and "tensor" a real key of that name).
//! - A tensor whose view is row-major (contiguous) is its storage's bytes from its
//!   offset: zero-copy when aligned. A non-contiguous view (a transpose, a step) is
//!   gathered into row-major order on read (a copy). Tensors that share a storage share
//!   its bytes, overlapping or not (the format's blobs may overlap).
//! - dtypes: every torch dtype with a plain layout: floats, ints, uints, bool, bfloat16,
//!   complex32/64/128 (f16/f32/f64 + the complex logical type), the float8 types (u8 +
//!   the fp8 logical type), float4_e2m1fn_x2 (u8 + `f4_e2m1fn_x2`, its shape counting
//!   values: the last dimension doubled). Quantized tensors are refused (their rebuild
//!   function is not an allowed global).
//! - Values that are not tensors (an epoch, a learning rate, a config string) become
//!   file attributes under their path; values of other kinds are refused.
//! - The legacy format (before torch 1.6, a bare pickle stream starting with a magic
//!   number) is refused with a message saying how to convert it.
//!
//! Bounds: `data.pkl` may be at most `max_manifest_size / 16` bytes (64 MiB by default;
//! torch writes about 100 bytes of pickle a tensor, so kilobytes to a few MiB), read or
//! inflated fallibly as it comes; the pickle's state and what the walk makes of it
//! (names, attribute values: a value reached through several references counts each
//! time) share one budget of 16 times its size plus 1 MiB (`pickle::Budget`). Every
//! offset, size and stride is checked arithmetic: a view must lie inside its storage
//! (`Format` otherwise), and each object's bytes are its shape times its element size.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Result, bail, err};
use crate::formats::ReadAt;
use crate::formats::pickle::{self, Budget, Id, Node, Pickle, grow};
use crate::formats::strided::{Strided, is_row_major};
use crate::formats::zip::{Archive, Entry};
use crate::limits::Limits;
use crate::model::{
    Attributes, Blob, CText, Component, Components, Container, Encoding, Model, Object, Step,
    TextArena, Traits, check_name_text,
};
use crate::value::cbor::Value;

/// The start of a legacy (pre-1.6) checkpoint: protocol 2, then the magic number
/// 0x1950a86a20f9469cfc6c as a 10-byte LONG1.
const LEGACY: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

pub(crate) fn detect_legacy(head: &[u8]) -> bool {
    head.starts_with(LEGACY)
}

/// Refuses a legacy checkpoint, saying what to do.
pub(crate) fn parse_legacy(_: &ReadAt<'_>, _: u64, _: &Limits) -> Result<(Model, u64)> {
    bail!(
        Unsupported,
        "a PyTorch checkpoint in the legacy format (torch.save before 1.6, or \
         _use_new_zipfile_serialization=False): its layout is a pickle stream that only \
         torch reads; load it with torch and save it again with torch.save (or convert it \
         to safetensors)"
    )
}

/// The archive's directory when it holds `<dir>/data.pkl` (or `data.pkl` at its top).
pub(crate) fn prefix_of(archive: &Archive) -> Option<&str> {
    archive.entries.iter().find_map(|e| {
        if e.name == "data.pkl" {
            return Some("");
        }
        let dir = e.name.strip_suffix("/data.pkl")?;
        (!dir.is_empty() && !dir.contains('/')).then_some(dir)
    })
}

/// `data.pkl` may take at most this share of `max_manifest_size`: its state may then take
/// 16 times its size (`pickle::STATE_PER_BYTE`), about the manifest limit in all.
const PICKLE_SHARE: u64 = 16;

/// The deepest nesting of dicts and lists walked, and the most values visited. Each
/// item of a list or dict takes at least a byte of opcodes to put there (a memo
/// reference to a shared value, 2), and a tree of `n` items is walked in at most about
/// 3n visits (a list's items are looked at once to see whether it holds tensors, then
/// once more): 8 visits per byte of the pickle walk any tree, and stop a pickle whose
/// values share lists (2^60 paths through 60 lists) at once. (Counted by bytes, not by
/// values made: integers, None and the booleans are made once and shared.)
const MAX_DEPTH: usize = 64;
const MAX_VISITS: u64 = 1 << 24;

fn visit_budget(pickle_bytes: usize) -> u64 {
    (pickle_bytes as u64)
        .saturating_mul(8)
        .saturating_add(4096)
        .min(MAX_VISITS)
}

pub(crate) fn parse(read: &ReadAt<'_>, archive: &Archive, limits: &Limits) -> Result<(Model, u64)> {
    let dir = prefix_of(archive).ok_or_else(|| err!(Internal, "a zip without data.pkl"))?;
    let join = |name: &str| {
        if dir.is_empty() {
            name.to_owned()
        } else {
            format!("{dir}/{name}")
        }
    };
    let pkl = archive
        .find(&join("data.pkl"))
        .ok_or_else(|| err!(Internal, "data.pkl not found again"))?;
    let code = archive
        .contents(
            read,
            pkl,
            limits.max_manifest_size / PICKLE_SHARE,
            "a checkpoint's data.pkl (max_manifest_size / 16)",
        )
        .map_err(|e| e.context("data.pkl"))?;
    let (pickle, mut budget) = pickle::load(&code).map_err(|e| e.context("data.pkl"))?;
    let big = match archive.find(&join("byteorder")) {
        None => false,
        Some(e) => match &archive.prefix(read, e, 16)?[..] {
            b"little" => false,
            b"big" => true,
            other => bail!(Format, "byteorder record {}", super::printable(other)),
        },
    };
    let storages: HashMap<&str, &Entry> = archive
        .entries
        .iter()
        .filter_map(|e| {
            let key = e.name.strip_prefix(&join("data/"))?;
            Some((key, e))
        })
        .collect();
    let mut walk = Walk {
        pickle: &pickle,
        budget: &mut budget,
        tensors: Vec::new(),
        attributes: Vec::new(),
        visits: 0,
        visit_budget: visit_budget(code.len()),
        limits,
    };
    walk.value(pickle.root, &mut String::new(), 0)?;
    let Walk {
        tensors,
        attributes,
        ..
    } = walk;
    let mut builder = Builder {
        read,
        archive,
        storages,
        big,
        arena: TextArena::default(),
        dense: CText::new("dense")?,
        data: CText::new("data")?,
        limits,
    };
    let objects = builder.objects(&pickle, tensors)?;
    let attributes =
        (!attributes.is_empty()).then(|| Attributes::from_value(&Value::Map(attributes)));
    let version = match archive.find(&join("version")) {
        Some(e) => {
            let v = archive.prefix(read, e, 16)?;
            String::from_utf8_lossy(&v).trim().to_owned()
        }
        None => "1".to_owned(),
    };
    let version = if version.is_empty() || version.len() > 8 {
        "1".to_owned()
    } else {
        version
    };
    // Views of one storage may overlap (a tensor and a slice of it): blobs may too.
    let traits = Traits {
        shared_blobs: true,
        ..super::UNALIGNED
    };
    let model = Model::new(Container::PyTorch, traits, &version, attributes, objects)
        .map_err(|e| e.context("PyTorch checkpoint"))?;
    Ok((model, archive.data_end))
}

/// A copy of `s` the budget was charged for, allocated fallibly.
fn owned(s: &str, budget: &mut Budget) -> Result<String> {
    budget.charge(s.len() as u64)?;
    let mut t = String::new();
    t.try_reserve_exact(s.len())
        .map_err(|_| err!(Limit, "no memory for {} bytes of the checkpoint", s.len()))?;
    t.push_str(s);
    Ok(t)
}

/// The first bytes of a path, for messages.
fn short(path: &str) -> &str {
    let mut end = path.len().min(80);
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    &path[..end]
}

/// The tensors and other values of the pickle's tree, by path. What it makes (names,
/// attribute values) is charged to the pickle's budget before it is allocated.
struct Walk<'p, 'c> {
    pickle: &'p Pickle<'c>,
    budget: &'p mut Budget,
    /// Each tensor's name and its index in the pickle's tensors.
    tensors: Vec<(String, u32)>,
    attributes: Vec<(Value, Value)>,
    visits: u64,
    visit_budget: u64,
    limits: &'p Limits,
}

impl Walk<'_, '_> {
    fn visit(&mut self, depth: usize, what: &str) -> Result<()> {
        self.visits += 1;
        if self.visits > self.visit_budget {
            bail!(
                Limit,
                "the checkpoint's tree takes more than {} visits to walk ({what})",
                self.visit_budget
            );
        }
        if depth > MAX_DEPTH {
            bail!(
                Limit,
                "the checkpoint nests dicts and lists deeper than {MAX_DEPTH} ({what})"
            );
        }
        Ok(())
    }

    fn value(&mut self, id: Id, path: &mut String, depth: usize) -> Result<()> {
        self.visit(depth, "values")?;
        let name = if path.is_empty() {
            "tensor"
        } else {
            path.as_str()
        };
        match self.pickle.get(id) {
            Node::Tensor(t) => {
                let t = *t;
                grow(&mut self.tensors, 1, self.budget)?;
                let name = owned(name, self.budget)?;
                self.tensors.push((name, t));
            }
            Node::Dict(items) if items.is_empty() && !path.is_empty() => {
                let key = owned(path, self.budget)?;
                self.attribute(key, Value::Map(Vec::new()))?;
            }
            Node::Dict(items) => {
                for &(k, v) in items {
                    let key: Cow<'_, str> = match self.pickle.get(k) {
                        Node::Str(s) => Cow::Borrowed(self.pickle.text(*s)),
                        Node::Int(i) => Cow::Owned(i.to_string()),
                        other => bail!(
                            Unsupported,
                            "a dict key that is {} at '{}'",
                            other.kind(),
                            short(path)
                        ),
                    };
                    if key.is_empty() {
                        bail!(
                            Format,
                            "an empty dict key at '{}': the name of what it holds would be \
                             ambiguous",
                            short(path)
                        );
                    }
                    self.child(v, path, &key, depth)?;
                }
            }
            Node::List(items) | Node::Tuple(items) if self.any_holds_tensors(items, depth)? => {
                for (i, &v) in items.iter().enumerate() {
                    self.child(v, path, &i.to_string(), depth)?;
                }
            }
            _ => {
                let key = owned(name, self.budget)?;
                let v = self.plain(id, depth)?;
                self.attribute(key, v)?;
            }
        }
        Ok(())
    }

    fn attribute(&mut self, key: String, v: Value) -> Result<()> {
        grow(&mut self.attributes, 1, self.budget)?;
        self.attributes.push((Value::Text(key), v));
        Ok(())
    }

    /// Walks `v` at `path.key`; a path over the name limit is refused before it is made.
    fn child(&mut self, v: Id, path: &mut String, key: &str, depth: usize) -> Result<()> {
        let len = path.len();
        let dot = usize::from(!path.is_empty());
        if len + dot + key.len() > self.limits.max_name_length {
            let start = if path.is_empty() { key } else { path.as_str() };
            bail!(
                Limit,
                "a path of {} bytes ('{}...') is over the name limit of {}",
                len + dot + key.len(),
                short(start),
                self.limits.max_name_length
            );
        }
        path.try_reserve(dot + key.len())
            .map_err(|_| err!(Limit, "no memory for a path"))?;
        if dot == 1 {
            path.push('.');
        }
        path.push_str(key);
        let r = self.value(v, path, depth + 1);
        path.truncate(len);
        r
    }

    /// Whether a list's items are (or hold) a tensor or a dict, so that the list is
    /// walked by index; each value looked at counts as a visit (a list that holds
    /// itself, or the same list twice at every level, is bounded so).
    fn any_holds_tensors(&mut self, items: &[Id], depth: usize) -> Result<bool> {
        for &i in items {
            self.visit(depth, "lists")?;
            let found = match self.pickle.get(i) {
                Node::Tensor(_) | Node::Dict(_) => true,
                Node::List(v) | Node::Tuple(v) => self.any_holds_tensors(v, depth + 1)?,
                _ => false,
            };
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A value that is not a tensor, as an attribute value: its text and bytes are
    /// copied (charged), so a value referenced many times costs each time.
    fn plain(&mut self, id: Id, depth: usize) -> Result<Value> {
        self.visit(depth, "values")?;
        Ok(match self.pickle.get(id) {
            Node::None => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) if *i >= 0 => Value::Unsigned(*i as u64),
            Node::Int(i) => Value::Negative(!(*i as u64)),
            Node::Float(f) => Value::Float(*f),
            Node::Str(s) => Value::Text(owned(self.pickle.text(*s), self.budget)?),
            Node::Bytes(b) => {
                let b = self.pickle.bytes(*b);
                self.budget.charge(b.len() as u64)?;
                let mut v = Vec::new();
                v.try_reserve_exact(b.len())
                    .map_err(|_| err!(Limit, "no memory for {} bytes", b.len()))?;
                v.extend_from_slice(b);
                Value::Bytes(v)
            }
            Node::List(items) | Node::Tuple(items) => {
                let mut out = Vec::new();
                grow(&mut out, items.len(), self.budget)?;
                for &i in items {
                    out.push(self.plain(i, depth + 1)?);
                }
                Value::Array(out)
            }
            Node::Global(pickle::Global::DType(t)) => Value::Text(format!("torch.{}", t.name())),
            other => bail!(
                Unsupported,
                "a value that is {}, neither a tensor nor plain data",
                other.kind()
            ),
        })
    }
}

/// Makes the objects of the tensors found.
struct Builder<'a, 'r> {
    read: &'a ReadAt<'r>,
    archive: &'a Archive,
    storages: HashMap<&'a str, &'a Entry>,
    big: bool,
    arena: TextArena,
    dense: CText,
    data: CText,
    limits: &'a Limits,
}

impl Builder<'_, '_> {
    fn objects(&mut self, pickle: &Pickle<'_>, tensors: Vec<(String, u32)>) -> Result<Vec<Object>> {
        let mut objects = Vec::new();
        objects
            .try_reserve_exact(tensors.len())
            .map_err(|_| err!(Limit, "no memory for {} tensors", tensors.len()))?;
        for (name, t) in tensors {
            let o = self
                .object(&name, t, pickle)
                .map_err(|e| e.context(format_args!("tensor '{}'", short(&name))))?;
            objects.push(o);
        }
        Ok(objects)
    }

    fn object(&mut self, name: &str, t: u32, pickle: &Pickle<'_>) -> Result<Object> {
        let t = pickle.tensor(t);
        let Node::Storage { dtype, numel, key } = *pickle.get(t.storage) else {
            bail!(Internal, "a tensor whose storage is not one");
        };
        let key = pickle.key(key);
        let (dtype_z, logical, width) = t.dtype.layout();
        // An untyped storage counts bytes; a typed one elements of its dtype.
        let storage_bytes = match dtype {
            Some(d) => numel.checked_mul(d.layout().2),
            None => Some(numel),
        }
        .ok_or_else(|| err!(Format, "storage size overflows"))?;
        let entry = *self
            .storages
            .get(&*key)
            .ok_or_else(|| err!(Format, "its storage data/{key} is not in the archive"))?;
        if entry.size < storage_bytes {
            bail!(
                Format,
                "storage data/{key} holds {} bytes, not the {storage_bytes} the pickle says",
                entry.size
            );
        }
        let elements = storage_bytes / width;
        let (first, end) = span(t)?;
        if end > elements {
            bail!(
                Format,
                "its view reaches element {end} of a storage of {elements}"
            );
        }
        let count = crate::dtype::numel(&t.size).ok_or_else(|| err!(Format, "size overflows"))?;
        let len = count
            .checked_mul(width)
            .ok_or_else(|| err!(Format, "its byte size overflows u64"))?;
        if len > self.limits.max_decoded_size {
            bail!(Limit, "{len} bytes are over the decode limit");
        }
        if t.size.len() > self.limits.max_rank {
            bail!(Limit, "{} dimensions are over the limit", t.size.len());
        }
        let (blob, mut steps) = if count == 0 {
            let offset = self.archive.data_offset(self.read, entry)?;
            let empty = Blob {
                file: 0,
                offset,
                length: 0,
                encoding: Encoding::Raw,
                decoded_length: 0,
            };
            (empty, Vec::new())
        } else {
            // The bytes the view touches, which must lie in its storage.
            let bytes = |e: u64| {
                e.checked_mul(width)
                    .ok_or_else(|| err!(Format, "its view's offset overflows"))
            };
            let (start, span_len) = (bytes(first)?, bytes(end - first)?);
            if start
                .checked_add(span_len)
                .is_none_or(|e| e > storage_bytes)
            {
                bail!(
                    Format,
                    "its view [{start}, {start} + {span_len}) leaves its storage of {storage_bytes} bytes"
                );
            }
            let (blob, mut steps) = self.archive.blob_range(self.read, entry, start, span_len)?;
            if !(is_row_major(&t.size, &t.stride) && span_len == len) {
                // Gathered into row-major order from the span it touches.
                let g = Strided::new(
                    width as usize,
                    &t.size,
                    &t.stride,
                    t.offset - first,
                    end - first,
                )?;
                steps.push(Step::Format(Arc::new(g)));
            }
            (blob, steps)
        };
        let unit = if logical.is_some_and(|l| l.starts_with("complex")) {
            width / 2
        } else {
            width
        };
        if self.big && unit > 1 && count > 0 {
            steps.push(Step::SwapBytes(unit as u8));
        }
        let mut shape = t.size.clone();
        if t.dtype == pickle::TorchType::F4E2M1FNx2 {
            match shape.last_mut() {
                Some(d) => {
                    *d = d
                        .checked_mul(2)
                        .ok_or_else(|| err!(Format, "shape overflows"))?
                }
                None => shape.push(2),
            }
        }
        check_name_text("tensor", name, self.limits.max_name_length)?;
        Ok(Object {
            name: self.arena.text(name)?,
            format: self.dense.clone(),
            shape: shape.into(),
            attributes: None,
            components: Components::One(Component {
                role: self.data.clone(),
                dtype: dtype_z,
                logical_type: logical.map(CText::new).transpose()?,
                blob,
                decoded_length: len,
                digest: None,
                steps: steps.into(),
            }),
        })
    }
}

/// The elements `[first, end)` of its storage a view touches, in checked arithmetic: a
/// view whose last element is past what u64 counts (offset 2^63 - 1, stride 2^62) is a
/// `Format` error, never an end that wraps to 0.
fn span(t: &pickle::Tensor) -> Result<(u64, u64)> {
    if t.size.contains(&0) {
        return Ok((t.offset, t.offset));
    }
    let overflow = || {
        err!(
            Format,
            "a view from element {} of size {:?} and stride {:?} reaches past any storage",
            t.offset,
            t.size,
            t.stride
        )
    };
    let mut last = t.offset;
    for (&d, &s) in t.size.iter().zip(&t.stride) {
        last = (d - 1)
            .checked_mul(s)
            .and_then(|r| r.checked_add(last))
            .ok_or_else(overflow)?;
    }
    Ok((t.offset, last.checked_add(1).ok_or_else(overflow)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(offset: u64, size: &[u64], stride: &[u64]) -> pickle::Tensor {
        pickle::Tensor {
            storage: 0,
            offset,
            size: size.to_vec(),
            stride: stride.to_vec(),
            dtype: pickle::TorchType::F32,
        }
    }

    /// Issue 35: offset 2^63 - 1, size [3], stride [2^62] put the last element at
    /// 2^64 - 1, whose end wrapped to 0 and passed the end-of-storage check.
    #[test]
    fn spans_never_wrap() {
        assert_eq!(span(&tensor(2, &[2, 3], &[3, 1])).unwrap(), (2, 8));
        assert_eq!(span(&tensor(5, &[0, 3], &[3, 1])).unwrap(), (5, 5));
        let e = span(&tensor((1 << 63) - 1, &[3], &[1 << 62])).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Format);
        assert!(e.message().contains("reaches past any storage"), "{e}");
        assert!(span(&tensor(u64::MAX, &[1], &[1])).is_err());
        assert!(span(&tensor(0, &[3], &[u64::MAX / 2 + 1])).is_err());
        assert_eq!(
            span(&tensor(u64::MAX - 1, &[1], &[7])).unwrap(),
            (u64::MAX - 1, u64::MAX)
        );
    }

    /// Every logical type the PyTorch reader hands out is one the model's validation
    /// knows, so its objects' shape times element size is checked to be their length.
    #[test]
    fn every_logical_type_is_checked_by_validation() {
        use pickle::TorchType::*;
        for t in [
            F64, F32, F16, BF16, I64, I32, I16, I8, U8, U16, U32, U64, Bool, C32, C64, C128,
            F8E4M3FN, F8E5M2, F8E4M3FNUZ, F8E5M2FNUZ, F8E8M0FNU, F4E2M1FNx2,
        ] {
            let (dtype, logical, width) = t.layout();
            if let Some(l) = logical {
                let info = crate::dtype::logical_type_info(l).unwrap_or_else(|| panic!("{l}"));
                assert_eq!(info.storage, dtype, "{l}");
                // One torch element is one unit of the type (complex: a pair; fp4: two values).
                assert_eq!(info.ratio * dtype.size() as u64, width, "{l}");
            }
        }
    }
}
