//! Building a `Doc`: one walk over the CBOR of an attribute map, making 16-byte nodes,
//! packing arrays of one numeric type, applying the widths a format recorded.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;

use ciborium_ll::Header;

use super::desc::Desc;
use super::{
    BUDGET_BASE, BUDGET_PER_BYTE, Doc, MIXED, Node, OWNED_TEXT, PACKED, Packed, ValueType, unpack,
};
use crate::error::{Error, Result, bail, err};
use crate::value::cbor::Cursor;

/// Builds the tree of `cbor` (one item, validated when the file was opened), with the
/// format's integer and float widths when it has them: a GGUF parse's stream `widths`,
/// or a record by key `desc` (of the root item). `cbor` must outlive the `Doc` and never
/// move or change (strings point into it).
pub(super) fn build(
    cbor: &[u8],
    widths: Option<&[u8]>,
    desc: Option<&Desc>,
    max_depth: usize,
) -> Result<Doc> {
    let mut b = Builder {
        cur: Cursor::new(cbor, max_depth),
        widths: widths.unwrap_or(&[]),
        wpos: 0,
        nodes: Vec::new(),
        packed: Vec::new(),
        data: Vec::new(),
        data_len: 0,
        text: Vec::new(),
        kept: 0,
        budget: cbor
            .len()
            .saturating_mul(BUDGET_PER_BYTE)
            .saturating_add(BUDGET_BASE),
    };
    let root = b.item(0, desc.map_or(Hint::Root, Hint::Desc))?;
    b.cur.finish().map_err(|e| e.positioned("attributes", 0))?;
    b.finish(root)
}

/// What a value's width record says.
#[derive(Clone, Copy)]
enum Hint<'d> {
    None,
    /// The root map: its values each read their widths from the stream.
    Root,
    /// Read this value's widths from the stream.
    Next,
    /// This scalar type (elements of an array whose element type was declared).
    Type(ValueType),
    /// This record by key (`desc.rs`); for a container's children, the container's.
    Desc(&'d Desc),
}

impl<'d> Hint<'d> {
    /// The hint of element `i` of an array whose children's hint is `self`.
    fn element(self, i: usize) -> Hint<'d> {
        match self {
            Hint::Desc(d) => d.element(i).map_or(Hint::None, Hint::Desc),
            h => h,
        }
    }
}

/// Whether the integer `v` is a value of the integer type `t`.
fn int_fits(t: ValueType, v: i128) -> bool {
    match t {
        ValueType::I8 => i8::try_from(v).is_ok(),
        ValueType::I16 => i16::try_from(v).is_ok(),
        ValueType::I32 => i32::try_from(v).is_ok(),
        ValueType::I64 => i64::try_from(v).is_ok(),
        ValueType::U8 => u8::try_from(v).is_ok(),
        ValueType::U16 => u16::try_from(v).is_ok(),
        ValueType::U32 => u32::try_from(v).is_ok(),
        ValueType::U64 => u64::try_from(v).is_ok(),
        _ => false,
    }
}

/// The type of a float whose record says `own`: f32 only when the value is one exactly
/// (NaN included), so that packing it as f32 loses nothing.
fn float_kind(own: Option<ValueType>, f: f64) -> ValueType {
    if own == Some(ValueType::F32) && (f.is_nan() || f64::from(f as f32) == f) {
        ValueType::F32
    } else {
        ValueType::F64
    }
}

struct Builder<'a> {
    cur: Cursor<'a>,
    widths: &'a [u8],
    wpos: usize,
    nodes: Vec<Node>,
    packed: Vec<(usize, ValueType, usize)>,
    data: Vec<u64>,
    data_len: usize,
    text: Vec<u8>,
    /// Bytes of nodes, numbers, strings and records kept so far, and the most allowed.
    kept: usize,
    budget: usize,
}

pub(super) fn oom(what: &str) -> Error {
    err!(Limit, "attributes: out of memory for the typed {what}")
}

impl<'a> Builder<'a> {
    /// Counts `bytes` more kept; `Limit` past the budget.
    fn charge(&mut self, bytes: usize) -> Result<()> {
        self.kept = self.kept.saturating_add(bytes);
        if self.kept > self.budget {
            bail!(
                Limit,
                "attributes: their typed values would take more than {} bytes ({} per byte \
                 of their {}-byte encoding, plus {})",
                self.budget,
                BUDGET_PER_BYTE,
                self.cur.bytes().len(),
                BUDGET_BASE
            );
        }
        Ok(())
    }

    fn next_width(&mut self) -> Option<ValueType> {
        let code = *self.widths.get(self.wpos)?;
        self.wpos += 1;
        ValueType::from_u32(u32::from(code))
    }

    /// The value's own type hint, its children's, and an array's declared element type.
    fn resolve<'d>(&mut self, hint: Hint<'d>) -> (Option<ValueType>, Hint<'d>, Option<ValueType>) {
        match hint {
            Hint::None => (None, Hint::None, None),
            Hint::Desc(d) => (d.scalar(), Hint::Desc(d), d.declared()),
            Hint::Root => (None, Hint::Next, None),
            Hint::Type(t) => (Some(t), Hint::None, None),
            Hint::Next => match self.next_width() {
                Some(ValueType::Array) => match self.next_width() {
                    Some(ValueType::Array) => {
                        (Some(ValueType::Array), Hint::Next, Some(ValueType::Array))
                    }
                    Some(e) => (Some(ValueType::Array), Hint::Type(e), Some(e)),
                    None => (None, Hint::None, None),
                },
                t => (t, Hint::None, None),
            },
        }
    }

    fn decode_err(e: crate::value::cbor::DecodeError) -> Error {
        e.positioned("attributes", 0)
    }

    fn item(&mut self, depth: usize, hint: Hint<'_>) -> Result<Node> {
        let (own, children, declared) = match hint {
            Hint::Desc(_) => self.resolve(hint),
            _ if self.widths.is_empty() => (None, Hint::None, None),
            _ => self.resolve(hint),
        };
        if let Some(f) = self.cur.float() {
            return Ok(Node::scalar(float_kind(own, f), f.to_bits()));
        }
        let start = self.cur.position();
        let header = self.cur.head().map_err(Self::decode_err)?;
        Ok(match header {
            Header::Positive(n) => match own {
                Some(t) if int_fits(t, i128::from(n)) => Node::scalar(t, n),
                _ => Node::scalar(ValueType::U64, n),
            },
            Header::Negative(n) => {
                if n > i64::MAX as u64 {
                    Node::scalar(ValueType::Other, 0)
                } else {
                    let v = -1 - n as i64;
                    match own {
                        Some(t) if int_fits(t, i128::from(v)) => Node::scalar(t, v as u64),
                        _ => Node::scalar(ValueType::I64, v as u64),
                    }
                }
            }
            Header::Float(f) => Node::scalar(float_kind(own, f), f.to_bits()),
            Header::Simple(20) => Node::scalar(ValueType::Bool, 0),
            Header::Simple(21) => Node::scalar(ValueType::Bool, 1),
            Header::Simple(22 | 23) => Node::scalar(ValueType::Null, 0),
            Header::Simple(_) => Node::scalar(ValueType::Other, 0),
            Header::Bytes(len) | Header::Text(len) => {
                let text = matches!(header, Header::Text(_));
                let body = self.cur.string(text, len).map_err(Self::decode_err)?;
                // GGUF strings that are not UTF-8 are byte strings in the CBOR; typed,
                // they stay strings (as the file stored them).
                let kind = if text || own == Some(ValueType::String) {
                    ValueType::String
                } else {
                    ValueType::Bytes
                };
                self.string(kind, body)?
            }
            Header::Tag(_) => {
                // Transparent; the widths (GGUF's, which has no tags) were already taken,
                // and a record by key describes the tagged item.
                let depth = self.cur.enter(depth, start).map_err(Self::decode_err)?;
                let inner = match hint {
                    Hint::Desc(d) => Hint::Desc(d),
                    _ => Hint::None,
                };
                return self.item(depth, inner);
            }
            Header::Array(len) => {
                let depth = self.cur.enter(depth, start).map_err(Self::decode_err)?;
                let mut len = self.cur.declared(len, 1).map_err(Self::decode_err)?;
                let mut items = Items::default();
                while self.cur.more(&mut len).map_err(Self::decode_err)? {
                    let child = self.item(depth, children.element(items.len()))?;
                    items.push(child)?;
                }
                self.array(items, declared)?
            }
            Header::Map(len) => {
                let depth = self.cur.enter(depth, start).map_err(Self::decode_err)?;
                let mut len = self.cur.declared(len, 2).map_err(Self::decode_err)?;
                let mut items = Vec::new();
                items
                    .try_reserve(len.reserve() * 2)
                    .map_err(|_| oom("map"))?;
                while self.cur.more(&mut len).map_err(Self::decode_err)? {
                    let key = self.item(depth, Hint::None)?;
                    let value_hint = match children {
                        Hint::Desc(d) => self
                            .key_text(&key)
                            .and_then(|k| d.key(k))
                            .map_or(Hint::None, Hint::Desc),
                        h => h,
                    };
                    let value = self.item(depth, value_hint)?;
                    items.try_reserve(2).map_err(|_| oom("map"))?;
                    items.push(key);
                    items.push(value);
                }
                let n = count(items.len() / 2)?;
                let first = self.append(&items)?;
                Node {
                    kind: ValueType::Map as u8,
                    elem: 0,
                    flags: 0,
                    _pad: 0,
                    n,
                    x: first as u64,
                }
            }
            Header::Break => bail!(Format, "attributes: unexpected break at byte {start}"),
        })
    }

    fn string(&mut self, kind: ValueType, body: Cow<'a, [u8]>) -> Result<Node> {
        let n = count(body.len())?;
        Ok(match body {
            Cow::Borrowed(b) => Node {
                kind: kind as u8,
                elem: 0,
                flags: 0,
                _pad: 0,
                n,
                x: b.as_ptr() as u64,
            },
            Cow::Owned(b) => {
                self.charge(b.len())?;
                let at = self.text.len();
                self.text.try_reserve(b.len()).map_err(|_| oom("strings"))?;
                self.text.extend_from_slice(&b);
                Node {
                    kind: kind as u8,
                    elem: 0,
                    flags: OWNED_TEXT,
                    _pad: 0,
                    n,
                    x: at as u64,
                }
            }
        })
    }

    /// The bytes of a text key node made by `string`.
    fn key_text(&self, key: &Node) -> Option<&[u8]> {
        if key.kind() != ValueType::String {
            return None;
        }
        let n = key.n as usize;
        if key.flags & OWNED_TEXT != 0 {
            return self.text.get(key.x as usize..key.x as usize + n);
        }
        if n == 0 {
            return Some(&[]);
        }
        // SAFETY: a borrowed string node points at `n` bytes of the CBOR being read.
        Some(unsafe { std::slice::from_raw_parts(key.x as *const u8, n) })
    }

    /// Appends children, returning the index of the first.
    fn append(&mut self, items: &[Node]) -> Result<usize> {
        self.charge(std::mem::size_of_val(items))?;
        let first = self.nodes.len();
        self.nodes
            .try_reserve(items.len())
            .map_err(|_| oom("values"))?;
        self.nodes.extend_from_slice(items);
        Ok(first)
    }

    fn array(&mut self, items: Items, declared: Option<ValueType>) -> Result<Node> {
        let packed = items.nodes.is_empty();
        let n = count(if packed {
            items.count
        } else {
            items.nodes.len()
        })?;
        let elem = match items.nodes.first() {
            None => items.kind.or(declared),
            Some(first) => items
                .nodes
                .iter()
                .all(|c| c.kind == first.kind)
                .then(|| first.kind()),
        };
        let mut node = Node {
            kind: ValueType::Array as u8,
            elem: elem.map_or(MIXED, |t| t as u8),
            flags: 0,
            _pad: 0,
            n,
            x: 0,
        };
        match elem.and_then(|t| t.packed_width().map(|w| (t, w))) {
            Some((t, w)) if packed => {
                debug_assert_eq!(items.packed.len(), w * items.count);
                let offset = self.data_len.next_multiple_of(8);
                let end = offset + items.packed.len();
                self.charge(end - self.data_len + size_of::<Packed>())?;
                let words = end.div_ceil(8);
                if words > self.data.len() {
                    self.data
                        .try_reserve(words - self.data.len())
                        .map_err(|_| oom("numbers"))?;
                    self.data.resize(words, 0);
                }
                // SAFETY: `data` holds at least `end` bytes; u64 storage viewed as bytes.
                let bytes = unsafe {
                    std::slice::from_raw_parts_mut(self.data.as_mut_ptr().cast::<u8>(), end)
                };
                bytes[offset..end].copy_from_slice(&items.packed);
                self.data_len = end;
                self.packed.try_reserve(1).map_err(|_| oom("arrays"))?;
                self.packed.push((offset, t, items.count));
                node.flags = PACKED;
                node.x = (self.packed.len() - 1) as u64;
            }
            _ => node.x = self.append(&items.nodes)? as u64,
        }
        Ok(node)
    }

    /// Boxes the storage and turns indexes into pointers.
    fn finish(mut self, root: Node) -> Result<Doc> {
        self.append(&[root])?;
        let data = std::mem::take(&mut self.data).into_boxed_slice();
        let text = std::mem::take(&mut self.text).into_boxed_slice();
        let base = data.as_ptr().cast::<u8>();
        let spare = Box::new(AtomicUsize::new(self.budget.saturating_sub(self.kept)));
        let packed: Box<[Packed]> = self
            .packed
            .iter()
            .map(|&(offset, elem, count)| Packed {
                // SAFETY: offset is within (or one past) the data.
                data: unsafe { base.add(offset) },
                elem,
                count,
                chunks: OnceLock::new(),
                spare: &*spare,
            })
            .collect();
        let mut nodes = std::mem::take(&mut self.nodes).into_boxed_slice();
        let nodes_at = nodes.as_ptr() as u64;
        for node in nodes.iter_mut() {
            match node.kind() {
                ValueType::Array if node.flags & PACKED != 0 => {
                    node.x = &packed[node.x as usize] as *const Packed as u64;
                }
                ValueType::Array | ValueType::Map => {
                    node.x = nodes_at + node.x * size_of::<Node>() as u64;
                }
                ValueType::String | ValueType::Bytes if node.flags & OWNED_TEXT != 0 => {
                    node.x += text.as_ptr() as u64;
                }
                _ => {}
            }
        }
        Ok(Doc {
            nodes,
            _packed: packed,
            _data: data,
            _text: text,
            _spare: spare,
        })
    }
}

/// The elements of an array being read: while they all have one type that packs, its
/// numbers as the tree will keep them (native order, f32 as f32: `w` bytes each, not a
/// 16-byte node, so reading an array of a million u8 holds about a million bytes); nodes
/// from the first element that doesn't, the numbers before it made nodes then.
#[derive(Default)]
struct Items {
    nodes: Vec<Node>,
    kind: Option<ValueType>,
    packed: Vec<u8>,
    count: usize,
}

impl Items {
    /// The elements read so far.
    fn len(&self) -> usize {
        if self.nodes.is_empty() {
            self.count
        } else {
            self.nodes.len()
        }
    }

    fn push(&mut self, child: Node) -> Result<()> {
        let kind = child.kind();
        if self.nodes.is_empty()
            && self.kind.is_none_or(|k| k == kind)
            && let Some(w) = kind.packed_width()
        {
            self.packed.try_reserve(w).map_err(|_| oom("array"))?;
            let x = child.x;
            match (kind, w) {
                (ValueType::F32, _) => self
                    .packed
                    .extend_from_slice(&(f64::from_bits(x) as f32).to_ne_bytes()),
                (_, 1) => self.packed.push(x as u8),
                (_, 2) => self.packed.extend_from_slice(&(x as u16).to_ne_bytes()),
                (_, 4) => self.packed.extend_from_slice(&(x as u32).to_ne_bytes()),
                _ => self.packed.extend_from_slice(&x.to_ne_bytes()),
            }
            self.kind = Some(kind);
            self.count += 1;
            return Ok(());
        }
        if self.nodes.is_empty()
            && let Some(k) = self.kind.take()
        {
            let w = k.packed_width().expect("packed types have a width");
            self.nodes
                .try_reserve(self.count + 1)
                .map_err(|_| oom("array"))?;
            self.nodes.extend(
                self.packed
                    .chunks_exact(w)
                    .map(|b| Node::scalar(k, unpack(k, b))),
            );
            self.packed = Vec::new();
        }
        self.nodes.try_reserve(1).map_err(|_| oom("array"))?;
        self.nodes.push(child);
        Ok(())
    }
}

fn count(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| err!(Limit, "attributes: {n} items in one container"))
}
