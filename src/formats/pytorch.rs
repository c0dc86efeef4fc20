//! PyTorch checkpoints as `torch.save` writes them since 1.6 (`pytorch_model.bin`,
//! `*.pt`, `*.pth`): a zip archive of `<dir>/data.pkl` (a pickle of the state dict, read
//! by `pickle` without running it), `<dir>/data/<key>` (each storage's raw bytes, 64-byte
//! aligned by torch's writer), `<dir>/byteorder` ("little" or "big"; absent in files
//! older than torch 2.1, which are little-endian) and version records.
//!
//! Choices:
//! - Each tensor is a "dense" object with one "data" component, named by its path in the
//!   nested dicts and lists, joined with "." (`encoder.layer.0.weight`), as
//!   `state_dict()` names them. A bare tensor saved alone is the object "tensor".
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

use std::collections::HashMap;
use std::sync::Arc;

use crate::cbor::Value;
use crate::error::{Result, bail, err};
use crate::formats::ReadAt;
use crate::formats::pickle::{self, Id, Node, Pickle, Tensor};
use crate::formats::strided::{Strided, is_row_major};
use crate::formats::zip::{Archive, Entry};
use crate::limits::Limits;
use crate::model::{
    Attributes, Blob, CText, Component, Components, Container, Encoding, Model, Object, Step,
    TextArena, Traits, check_name_text,
};

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

/// The deepest nesting of dicts and lists walked, and the most values visited: a tree
/// of `n` values is walked in at most about 3n visits (a list's items are looked at
/// once to see whether it holds tensors, then once more), so 8 per value the pickle made
/// stops a pickle whose values share lists (2^60 paths through 60 lists) at once.
const MAX_DEPTH: usize = 64;
const MAX_VISITS: u64 = 1 << 24;

fn visit_budget(values: usize) -> u64 {
    (values as u64)
        .saturating_mul(8)
        .saturating_add(4096)
        .min(MAX_VISITS)
}

pub(crate) fn parse(read: &ReadAt<'_>, archive: &Archive, limits: &Limits) -> Result<(Model, u64)> {
    let dir = prefix_of(archive).expect("checked by the caller");
    let join = |name: &str| {
        if dir.is_empty() {
            name.to_owned()
        } else {
            format!("{dir}/{name}")
        }
    };
    let pkl = archive.find(&join("data.pkl")).expect("found by prefix_of");
    if pkl.size > limits.max_manifest_size {
        bail!(
            Limit,
            "data.pkl of {} bytes is over the manifest limit of {}",
            pkl.size,
            limits.max_manifest_size
        );
    }
    let code = archive.prefix(read, pkl, pkl.size)?;
    let pickle = pickle::load(&code).map_err(|e| e.context("data.pkl"))?;
    drop(code);
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
        tensors: Vec::new(),
        attributes: Vec::new(),
        visits: 0,
        budget: visit_budget(pickle.nodes.len()),
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

/// The tensors and other values of the pickle's tree, by path.
struct Walk<'p> {
    pickle: &'p Pickle,
    tensors: Vec<(String, Id)>,
    attributes: Vec<(Value, Value)>,
    visits: u64,
    budget: u64,
    limits: &'p Limits,
}

impl Walk<'_> {
    fn value(&mut self, id: Id, path: &mut String, depth: usize) -> Result<()> {
        self.visits += 1;
        if self.visits > self.budget {
            bail!(
                Limit,
                "the checkpoint's tree takes more than {} visits to walk",
                self.budget
            );
        }
        if depth > MAX_DEPTH {
            bail!(
                Limit,
                "the checkpoint nests dicts and lists deeper than {MAX_DEPTH}"
            );
        }
        let name = |path: &str| {
            if path.is_empty() {
                "tensor".to_owned()
            } else {
                path.to_owned()
            }
        };
        match self.pickle.get(id) {
            Node::Tensor(_) => self.tensors.push((name(path), id)),
            Node::Dict(items) if items.is_empty() && !path.is_empty() => {
                self.attributes
                    .push((Value::Text(path.clone()), Value::Map(Vec::new())));
            }
            Node::Dict(items) => {
                for &(k, v) in items {
                    let key = match self.pickle.get(k) {
                        Node::Str(s) => s.to_string(),
                        Node::Int(i) => i.to_string(),
                        other => bail!(Unsupported, "a dict key {other:?} at '{path}'"),
                    };
                    self.child(v, path, &key, depth)?;
                }
            }
            Node::List(items) | Node::Tuple(items) if self.any_holds_tensors(items, depth)? => {
                for (i, &v) in items.iter().enumerate() {
                    self.child(v, path, &i.to_string(), depth)?;
                }
            }
            _ => {
                let v = self.plain(id, depth)?;
                if path.len() > self.limits.max_name_length {
                    bail!(Limit, "a value's path is over the name limit");
                }
                self.attributes.push((Value::Text(name(path)), v));
            }
        }
        Ok(())
    }

    fn child(&mut self, v: Id, path: &mut String, key: &str, depth: usize) -> Result<()> {
        let len = path.len();
        if !path.is_empty() {
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
            self.visits += 1;
            if self.visits > self.budget || depth > MAX_DEPTH {
                bail!(
                    Limit,
                    "the checkpoint's lists nest too deep or hold too many values"
                );
            }
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

    /// A value that is not a tensor, as an attribute value.
    fn plain(&mut self, id: Id, depth: usize) -> Result<Value> {
        self.visits += 1;
        if self.visits > self.budget || depth > MAX_DEPTH {
            bail!(
                Limit,
                "the checkpoint's values nest too deep or are too many"
            );
        }
        Ok(match self.pickle.get(id) {
            Node::None => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) if *i >= 0 => Value::Unsigned(*i as u64),
            Node::Int(i) => Value::Negative(!(*i as u64)),
            Node::Float(f) => Value::Float(*f),
            Node::Str(s) => Value::Text(s.to_string()),
            Node::Bytes(b) => Value::Bytes(b.to_vec()),
            Node::List(items) | Node::Tuple(items) => Value::Array(
                items
                    .iter()
                    .map(|&i| self.plain(i, depth + 1))
                    .collect::<Result<_>>()?,
            ),
            Node::Global(pickle::Global::DType(t)) => Value::Text(format!("torch.{}", t.name())),
            other => bail!(
                Unsupported,
                "a value {other:?} that is neither a tensor nor plain data"
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

/// A tensor's place in its storage: elements `[first, last]` it touches.
struct Placed<'t> {
    name: String,
    tensor: &'t Tensor,
    key: &'t str,
    first: u64,
    end: u64,
}

impl Builder<'_, '_> {
    fn objects(&mut self, pickle: &Pickle, tensors: Vec<(String, Id)>) -> Result<Vec<Object>> {
        let mut placed = Vec::new();
        placed
            .try_reserve_exact(tensors.len())
            .map_err(|_| err!(Limit, "no memory for {} tensors", tensors.len()))?;
        for (name, id) in tensors {
            let Node::Tensor(t) = pickle.get(id) else {
                unreachable!("walked as a tensor")
            };
            let Node::Storage { key, .. } = pickle.get(t.storage) else {
                unreachable!()
            };
            let (first, end) = span(t).map_err(|e| e.context(format_args!("tensor '{name}'")))?;
            placed.push(Placed {
                name,
                tensor: t,
                key,
                first,
                end,
            });
        }
        let mut objects = Vec::with_capacity(placed.len());
        for p in &placed {
            let o = self
                .object(p, pickle)
                .map_err(|e| e.context(format_args!("tensor '{}'", p.name)))?;
            objects.push(o);
        }
        Ok(objects)
    }

    fn object(&mut self, p: &Placed<'_>, pickle: &Pickle) -> Result<Object> {
        let t = p.tensor;
        let Node::Storage { dtype, numel, .. } = pickle.get(t.storage) else {
            unreachable!()
        };
        let (dtype_z, logical, width) = t.dtype.layout();
        // An untyped storage counts bytes; a typed one elements of its dtype.
        let storage_bytes = match dtype {
            Some(d) => numel.checked_mul(d.layout().2),
            None => Some(*numel),
        }
        .ok_or_else(|| err!(Format, "storage size overflows"))?;
        let entry = self
            .storages
            .get(p.key)
            .ok_or_else(|| err!(Format, "its storage data/{} is not in the archive", p.key))?;
        if entry.size < storage_bytes {
            bail!(
                Format,
                "storage data/{} holds {} bytes, not the {storage_bytes} the pickle says",
                p.key,
                entry.size
            );
        }
        let elements = storage_bytes / width;
        if p.end > elements {
            bail!(
                Format,
                "its view reaches element {} of a storage of {elements}",
                p.end
            );
        }
        let count = crate::dtype::numel(&t.size).ok_or_else(|| err!(Format, "size overflows"))?;
        let len = count * width;
        if len > self.limits.max_decoded_size {
            bail!(Limit, "{len} bytes are over the decode limit");
        }
        if t.size.len() > self.limits.max_rank {
            bail!(Limit, "{} dimensions are over the limit", t.size.len());
        }
        let (mut blob, mut steps) = self.archive.blob(self.read, entry)?;
        let contiguous = is_row_major(&t.size, &t.stride);
        if count == 0 {
            blob = Blob {
                length: 0,
                decoded_length: 0,
                encoding: Encoding::Raw,
                ..blob
            };
            steps.clear();
        } else if contiguous && steps.is_empty() {
            blob.offset += t.offset * width;
            blob.length = len;
            blob.decoded_length = len;
        } else if contiguous {
            steps.push(Step::Slice {
                start: t.offset * width,
                len,
            });
        } else if steps.is_empty() {
            // The span the view touches, gathered from.
            blob.offset += p.first * width;
            blob.length = (p.end - p.first) * width;
            blob.decoded_length = blob.length;
            let g = Strided::new(
                width as usize,
                &t.size,
                &t.stride,
                t.offset - p.first,
                p.end - p.first,
            )?;
            steps.push(Step::Format(Arc::new(g)));
        } else {
            if entry.size != storage_bytes {
                steps.push(Step::Slice {
                    start: 0,
                    len: storage_bytes,
                });
            }
            let g = Strided::new(width as usize, &t.size, &t.stride, t.offset, elements)?;
            steps.push(Step::Format(Arc::new(g)));
        }
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
        check_name_text("tensor", &p.name, self.limits.max_name_length)?;
        Ok(Object {
            name: self.arena.text(&p.name)?,
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

/// The elements `[first, end)` of its storage a view touches.
fn span(t: &Tensor) -> Result<(u64, u64)> {
    if t.size.contains(&0) {
        return Ok((t.offset, t.offset));
    }
    let mut last = t.offset;
    for (&d, &s) in t.size.iter().zip(&t.stride) {
        last = (d - 1)
            .checked_mul(s)
            .and_then(|r| r.checked_add(last))
            .ok_or_else(|| {
                err!(
                    Format,
                    "size {:?} and stride {:?} overflow",
                    t.size,
                    t.stride
                )
            })?;
    }
    Ok((t.offset, last + 1))
}
