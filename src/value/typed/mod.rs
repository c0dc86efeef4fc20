//! Typed attribute values: a compact, immutable tree built once from the CBOR bytes of an
//! attribute map, so that a loader reads `llama.block_count` as a `u32` and 152,000
//! token strings by index without JSON, and without a copy per call.
//!
//! - Every item is one 16-byte `Node`: its type, a count or length, and a payload (the
//!   scalar's bits, or a pointer). A container's children are contiguous nodes, so an
//!   element by index is one addition. Strings point into the attribute CBOR itself
//!   (copied only when the CBOR split them into chunks).
//! - An array whose elements all have one numeric type (or bool) is stored as those
//!   numbers, contiguous and aligned ("packed"), so C gets a `const uint32_t *`. Its
//!   element nodes are made only when someone asks for an element as a value handle,
//!   `ELEMENT_CHUNK` at a time, within the tree's budget.
//! - CBOR integers carry no width: they are `U64` (non-negative) or `I64`, floats `F64`.
//!   A format that has widths (GGUF) records them as `widths` at parse time, a pre-order
//!   stream of `ValueType` codes for the top-level values: a scalar's type; for an array
//!   `Array`, then its element type, and when the elements are arrays, each one's stream.
//! - Tags are transparent (the tagged item); undefined is `Null`; simple values other
//!   than bool, null and undefined, and integers below -2^63, are `Other`.
//!
//! Memory: 16 bytes per item (fewer for packed numbers, which are read as numbers, not
//! nodes). What a tree keeps, element values made later included, is at most
//! `BUDGET_PER_BYTE` bytes per byte of its CBOR plus `BUDGET_BASE` (a pathological file,
//! e.g. an array of alternating one-byte items, needs more and gets a `Limit` error);
//! allocation failure is a `Limit` error too.

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Result, bail, err};

mod build;
mod desc;
mod owned;

pub(crate) use desc::Desc;
pub use owned::TypedValue;

/// The type of an attribute value. The numbers are stable (the C enum `zt_value_type`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// No value: CBOR null or undefined, JSON null.
    Null = 0,
    /// false or true.
    Bool = 1,
    /// A signed 8-bit integer (a width GGUF records).
    I8 = 2,
    /// A signed 16-bit integer (a width GGUF records).
    I16 = 3,
    /// A signed 32-bit integer (a width GGUF records).
    I32 = 4,
    /// A signed 64-bit integer; a negative integer of a format without widths.
    I64 = 5,
    /// An unsigned 8-bit integer (a width GGUF records).
    U8 = 6,
    /// An unsigned 16-bit integer (a width GGUF records).
    U16 = 7,
    /// An unsigned 32-bit integer (a width GGUF records).
    U32 = 8,
    /// An unsigned 64-bit integer; a non-negative integer of a format without widths.
    U64 = 9,
    /// A 32-bit float (a width GGUF records).
    F32 = 10,
    /// A 64-bit float; any float of a format without widths.
    F64 = 11,
    /// Text: UTF-8, except a GGUF string that is not (its bytes kept as stored).
    String = 12,
    /// A byte string.
    Bytes = 13,
    /// An array: of one numeric type or of bools, contiguous, or of any values.
    Array = 14,
    /// A map of keys to values, in their stored order.
    Map = 15,
    /// A CBOR simple value other than false/true/null/undefined, or an integer below
    /// -2^63: no typed equivalent (`zt_file_get_attributes_json` renders it).
    Other = 16,
}

const ALL: [ValueType; 17] = [
    ValueType::Null,
    ValueType::Bool,
    ValueType::I8,
    ValueType::I16,
    ValueType::I32,
    ValueType::I64,
    ValueType::U8,
    ValueType::U16,
    ValueType::U32,
    ValueType::U64,
    ValueType::F32,
    ValueType::F64,
    ValueType::String,
    ValueType::Bytes,
    ValueType::Array,
    ValueType::Map,
    ValueType::Other,
];

impl ValueType {
    /// The type of a code, None outside the enum.
    pub fn from_u32(code: u32) -> Option<ValueType> {
        ALL.get(code as usize).copied()
    }

    /// "null", "bool", "i8" ... "f64", "string", "bytes", "array", "map", "other".
    pub fn name(self) -> &'static str {
        self.c_name().to_str().expect("ASCII")
    }

    /// `name` as a static C string.
    pub fn c_name(self) -> &'static std::ffi::CStr {
        use ValueType::*;
        match self {
            Null => c"null",
            Bool => c"bool",
            I8 => c"i8",
            I16 => c"i16",
            I32 => c"i32",
            I64 => c"i64",
            U8 => c"u8",
            U16 => c"u16",
            U32 => c"u32",
            U64 => c"u64",
            F32 => c"f32",
            F64 => c"f64",
            String => c"string",
            Bytes => c"bytes",
            Array => c"array",
            Map => c"map",
            Other => c"other",
        }
    }

    /// Bytes per element in a packed array: bool and the numeric types.
    pub fn packed_width(self) -> Option<usize> {
        use ValueType::*;
        match self {
            Bool | I8 | U8 => Some(1),
            I16 | U16 => Some(2),
            I32 | U32 | F32 => Some(4),
            I64 | U64 | F64 => Some(8),
            _ => None,
        }
    }

    fn is_signed(self) -> bool {
        matches!(
            self,
            ValueType::I8 | ValueType::I16 | ValueType::I32 | ValueType::I64
        )
    }

    fn is_integer(self) -> bool {
        self.is_signed()
            || matches!(
                self,
                ValueType::U8 | ValueType::U16 | ValueType::U32 | ValueType::U64
            )
    }

    fn is_float(self) -> bool {
        matches!(self, ValueType::F32 | ValueType::F64)
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes a tree may keep per byte of its CBOR: 8 covers every packed CBOR integer (a
/// one-byte item becomes a u64) and every node of an item of two bytes or more.
pub(crate) const BUDGET_PER_BYTE: usize = 8;
/// Bytes every tree may keep beyond `BUDGET_PER_BYTE`.
pub(crate) const BUDGET_BASE: usize = 1 << 20;

/// Nodes made while building point at their children by index; `finish` turns these into
/// pointers.
const PACKED: u8 = 1;
const OWNED_TEXT: u8 = 2;

/// One value. Scalars: `x` holds the bits (integers as i64/u64, floats as f64 bits,
/// bool 0/1). Strings and bytes: `x` points at `n` bytes. Arrays: `n` elements of type
/// `elem` (`MIXED` when they differ); `x` points at the first child node, or at the
/// `Packed` record. Maps: `n` entries, `x` points at 2n nodes, key then value.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Node {
    kind: u8,
    elem: u8,
    flags: u8,
    _pad: u8,
    n: u32,
    x: u64,
}

/// `Node::elem` of an array whose elements differ in type, or an empty array whose
/// format declared no element type.
const MIXED: u8 = 0xff;

impl Node {
    fn scalar(kind: ValueType, x: u64) -> Node {
        Node {
            kind: kind as u8,
            elem: 0,
            flags: 0,
            _pad: 0,
            n: 0,
            x,
        }
    }

    fn kind(&self) -> ValueType {
        ALL[self.kind as usize]
    }
}

/// A packed array's numbers and, made on request, their element values.
struct Packed {
    data: *const u8,
    elem: ValueType,
    count: usize,
    /// The element values, made `ELEMENT_CHUNK` at a time as they are asked for
    /// (`element`): a table of chunks, then each chunk.
    chunks: OnceLock<Box<[Chunk]>>,
    /// The bytes the tree may still take (its `Doc`'s `spare`).
    spare: *const AtomicUsize,
}

/// Element values of a packed array are made this many at a time (16 KiB).
const ELEMENT_CHUNK: usize = 1024;

/// `ELEMENT_CHUNK` element values of a packed array, once made.
type Chunk = OnceLock<Box<[Node]>>;

/// The typed tree of one attribute map. Immutable once built (the lazily made element
/// nodes of packed arrays are `OnceLock`s), so it is shared between threads.
pub struct Doc {
    nodes: Box<[Node]>,
    _packed: Box<[Packed]>,
    _data: Box<[u64]>,
    _text: Box<[u8]>,
    /// What the tree may still take of its budget: element values of packed arrays are
    /// made on request, within it.
    _spare: Box<AtomicUsize>,
}

// SAFETY: the raw pointers in `Node` and `Packed` point into the boxes the `Doc` owns or
// into the attribute CBOR its owner keeps alive and unchanged; nothing is mutated after
// `build` except through `OnceLock`.
unsafe impl Send for Doc {}
// SAFETY: as for Send: shared access only reads, and the lazily made parts go through
// `OnceLock`, which synchronizes.
unsafe impl Sync for Doc {}

impl fmt::Debug for Doc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Doc({} nodes)", self.nodes.len())
    }
}

impl Doc {
    /// Builds the tree of `cbor` (one item, validated when the file was opened), with the
    /// format's integer and float widths when it has them. `cbor` must outlive the `Doc`
    /// and never move or change (strings point into it).
    pub fn build(cbor: &[u8], widths: Option<&[u8]>, max_depth: usize) -> Result<Doc> {
        build::build(cbor, widths, None, max_depth)
    }

    /// `build` with a width record by key of the root item (`desc.rs`).
    pub(crate) fn build_with_record(cbor: &[u8], desc: &Desc, max_depth: usize) -> Result<Doc> {
        build::build(cbor, None, Some(desc), max_depth)
    }

    /// `build` with the CBOR bytes of a width record by key of the root item (`desc.rs`), as a
    /// zTensor manifest keeps one beside an attribute map (validated when the file was
    /// opened; a record this version can't read is no record).
    pub(crate) fn build_with_record_bytes(
        cbor: &[u8],
        record: &[u8],
        max_depth: usize,
    ) -> Result<Doc> {
        // The record's tree is bounded like any attribute tree: by its bytes.
        let budget = record
            .len()
            .saturating_mul(BUDGET_PER_BYTE * 8)
            .saturating_add(BUDGET_BASE);
        let desc = crate::value::cbor::decode_within(record, max_depth, budget)
            .ok()
            .and_then(|(v, _)| Desc::from_value(&v));
        match desc {
            Some(d) => build::build(cbor, None, Some(&d), max_depth),
            None => build::build(cbor, None, None, max_depth),
        }
    }

    /// The root value.
    pub fn root(&self) -> AttrValue<'_> {
        AttrValue {
            node: self.nodes.last().expect("the root is the last node"),
        }
    }

    /// Bytes this tree takes (without the CBOR its strings point into).
    pub fn heap_size(&self) -> usize {
        self.nodes.len() * size_of::<Node>()
            + self._packed.len() * size_of::<Packed>()
            + self._data.len() * 8
            + self._text.len()
    }
}

/// A value of an attribute tree, borrowed from the reader that holds the tree.
#[derive(Clone, Copy)]
pub struct AttrValue<'a> {
    node: &'a Node,
}

impl fmt::Debug for AttrValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value_type() {
            ValueType::String => write!(f, "{:?}", String::from_utf8_lossy(self.bytes_unchecked())),
            ValueType::Bytes => write!(f, "bytes({})", self.node.n),
            ValueType::Array => f
                .debug_list()
                .entries(self.elements().map_while(Result::ok))
                .finish(),
            ValueType::Map => f
                .debug_map()
                .entries((0..self.node.n as usize).map(|i| self.entry(i).expect("in range")))
                .finish(),
            _ => f.write_str(&self.scalar_text()),
        }
    }
}

fn wrong(v: &AttrValue<'_>, want: &str) -> Error {
    err!(
        InvalidArgument,
        "attribute value is {}, not {want}",
        v.describe()
    )
}

/// A Rust type an attribute scalar reads as: the integers, f32, f64 and bool.
pub trait AttrScalar: Sized + Copy {
    /// The value type of this Rust type.
    const TYPE: ValueType;
    #[doc(hidden)]
    fn from_value(v: &AttrValue<'_>) -> Option<Self>;
}

macro_rules! int_scalar {
    ($($t:ty => $vt:ident),*) => {$(
        impl AttrScalar for $t {
            const TYPE: ValueType = ValueType::$vt;
            fn from_value(v: &AttrValue<'_>) -> Option<Self> {
                let k = v.value_type();
                if !k.is_integer() {
                    return None;
                }
                let wide: i128 = if k.is_signed() {
                    i128::from(v.node.x as i64)
                } else {
                    i128::from(v.node.x)
                };
                <$t>::try_from(wide).ok()
            }
        }
    )*};
}
int_scalar!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

impl AttrScalar for f64 {
    const TYPE: ValueType = ValueType::F64;
    fn from_value(v: &AttrValue<'_>) -> Option<Self> {
        v.value_type().is_float().then(|| f64::from_bits(v.node.x))
    }
}

impl AttrScalar for f32 {
    const TYPE: ValueType = ValueType::F32;
    fn from_value(v: &AttrValue<'_>) -> Option<Self> {
        let f = f64::from_bits(v.node.x);
        match v.value_type() {
            ValueType::F32 => Some(f as f32),
            // Exactly representable (CBOR floats carry no width): 0.5 reads as f32.
            ValueType::F64 if f64::from(f as f32) == f || f.is_nan() => Some(f as f32),
            _ => None,
        }
    }
}

impl AttrScalar for bool {
    const TYPE: ValueType = ValueType::Bool;
    fn from_value(v: &AttrValue<'_>) -> Option<Self> {
        (v.value_type() == ValueType::Bool).then_some(v.node.x != 0)
    }
}

impl<'a> AttrValue<'a> {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        self.node.kind()
    }

    /// The address C sees as the value handle (the FFI's accessor; not Rust API).
    pub(crate) fn as_ptr(&self) -> *const Node {
        self.node
    }

    /// The value behind a handle `as_ptr` gave.
    ///
    /// # Safety
    /// `ptr` came from `as_ptr` of a value whose tree outlives `'a`.
    pub(crate) unsafe fn from_ptr(ptr: *const Node) -> AttrValue<'a> {
        AttrValue {
            // SAFETY: per the contract, `ptr` is a node of a tree that outlives 'a.
            node: unsafe { &*ptr },
        }
    }

    /// The scalar as `T`: integers of any type convert when the value fits `T` exactly
    /// (a u8 reads as u32, an i64 of 5 as u8; -1 never as unsigned), floats to f64, and to
    /// f32 when f32 or exactly representable; bool only as bool. Anything else is
    /// `InvalidArgument` naming both types.
    pub fn get<T: AttrScalar>(&self) -> Result<T> {
        T::from_value(self).ok_or_else(|| wrong(self, T::TYPE.name()))
    }

    fn bytes_unchecked(&self) -> &'a [u8] {
        if self.node.n == 0 {
            return &[];
        }
        // SAFETY: strings point at `n` bytes the tree's owner keeps alive.
        unsafe { std::slice::from_raw_parts(self.node.x as *const u8, self.node.n as usize) }
    }

    /// A string's bytes as the file stored them (UTF-8, except a GGUF string that was
    /// not); not NUL-terminated.
    pub fn string_bytes(&self) -> Result<&'a [u8]> {
        if self.value_type() != ValueType::String {
            return Err(wrong(self, "string"));
        }
        Ok(self.bytes_unchecked())
    }

    /// A string; `InvalidArgument` for another type or a GGUF string that isn't UTF-8.
    pub fn as_str(&self) -> Result<&'a str> {
        std::str::from_utf8(self.string_bytes()?)
            .map_err(|_| err!(InvalidArgument, "attribute string is not valid UTF-8"))
    }

    /// A byte string's bytes.
    pub fn as_bytes(&self) -> Result<&'a [u8]> {
        if self.value_type() != ValueType::Bytes {
            return Err(wrong(self, "bytes"));
        }
        Ok(self.bytes_unchecked())
    }

    /// Elements of an array, entries of a map.
    pub fn len(&self) -> Result<usize> {
        match self.value_type() {
            ValueType::Array | ValueType::Map => Ok(self.node.n as usize),
            _ => Err(wrong(self, "an array or a map")),
        }
    }

    /// True for an empty array or map.
    pub fn is_empty(&self) -> Result<bool> {
        self.len().map(|n| n == 0)
    }

    /// An array's element type: None when the elements differ in type, or the array is
    /// empty and its format declared none.
    pub fn elem_type(&self) -> Result<Option<ValueType>> {
        if self.value_type() != ValueType::Array {
            return Err(wrong(self, "array"));
        }
        Ok(ValueType::from_u32(u32::from(self.node.elem)))
    }

    fn packed(&self) -> Option<&'a Packed> {
        (self.value_type() == ValueType::Array && self.node.flags & PACKED != 0)
            // SAFETY: packed arrays point at their record in the tree.
            .then(|| unsafe { &*(self.node.x as *const Packed) })
    }

    /// The contiguous elements of an array of one numeric type (or bool, one byte 0/1):
    /// type, pointer (aligned for the type) and count. `InvalidArgument` for other arrays.
    /// (The FFI's accessor, `zt_value_get_array_data`; Rust callers use `as_slice`.)
    pub(crate) fn array_data(&self) -> Result<(ValueType, *const u8, usize)> {
        match self.packed() {
            Some(p) => Ok((p.elem, p.data, p.count)),
            None if self.value_type() == ValueType::Array => bail!(
                InvalidArgument,
                "attribute array of {} has no contiguous numbers: read its elements by index",
                self.elem_type()?.map_or("mixed types", |t| t.name())
            ),
            None => Err(wrong(self, "array")),
        }
    }

    /// The elements of an array whose element type is exactly `T`'s.
    pub fn as_slice<T: AttrScalar>(&self) -> Result<&'a [T]> {
        let (t, data, count) = self.array_data()?;
        if t != T::TYPE {
            bail!(
                InvalidArgument,
                "attribute value is an array of {t}, not of {}",
                T::TYPE
            );
        }
        if count == 0 {
            return Ok(&[]);
        }
        // SAFETY: packed data of type T: aligned, `count` elements, owned by the tree.
        // (bool: stored as bytes 0 and 1.)
        Ok(unsafe { std::slice::from_raw_parts(data.cast::<T>(), count) })
    }

    fn children(&self) -> &'a [Node] {
        let n = self.node.n as usize
            * if self.value_type() == ValueType::Map {
                2
            } else {
                1
            };
        if n == 0 {
            return &[];
        }
        // SAFETY: `x` of a non-empty array or map points at its `n` child
        // nodes (2n for a map), contiguous in the tree that `'a` borrows.
        unsafe { std::slice::from_raw_parts(self.node.x as *const Node, n) }
    }

    fn out_of_range(&self, i: usize) -> Error {
        err!(
            InvalidArgument,
            "index {i} is out of range for an attribute {} of {}",
            self.value_type(),
            self.node.n
        )
    }

    /// An array's element `i`.
    pub fn at(&self, i: usize) -> Result<AttrValue<'a>> {
        if self.value_type() != ValueType::Array {
            return Err(wrong(self, "array"));
        }
        if i >= self.node.n as usize {
            return Err(self.out_of_range(i));
        }
        match self.packed() {
            Some(p) => p.element(i).map(|node| AttrValue { node }),
            None => Ok(AttrValue {
                node: &self.children()[i],
            }),
        }
    }

    /// Element `i` of an array of strings, without making a value for it. An array of
    /// numbers is refused before anything is made.
    pub fn string_at(&self, i: usize) -> Result<&'a [u8]> {
        if let Some(p) = self.packed() {
            bail!(
                InvalidArgument,
                "attribute value is an array of {}, not of strings",
                p.elem
            );
        }
        if self.value_type() != ValueType::Array {
            return Err(wrong(self, "array"));
        }
        let node = self.children().get(i).ok_or_else(|| self.out_of_range(i))?;
        AttrValue { node }.string_bytes()
    }

    /// All elements of an array (nothing for other types), as `at` gives them: an
    /// element of a packed array whose value can't be made (`Limit`) is an error.
    pub fn elements(&self) -> impl Iterator<Item = Result<AttrValue<'a>>> + 'a {
        let this = *self;
        let n = if this.value_type() == ValueType::Array {
            this.node.n as usize
        } else {
            0
        };
        (0..n).map(move |i| this.at(i))
    }

    /// A map's entry `i`: key and value, in the file's order.
    pub fn entry(&self, i: usize) -> Result<(AttrValue<'a>, AttrValue<'a>)> {
        if self.value_type() != ValueType::Map {
            return Err(wrong(self, "map"));
        }
        let nodes = self.children();
        if i >= self.node.n as usize {
            return Err(self.out_of_range(i));
        }
        Ok((
            AttrValue {
                node: &nodes[2 * i],
            },
            AttrValue {
                node: &nodes[2 * i + 1],
            },
        ))
    }

    /// The value of a map's first entry whose key is the text `key`; None when absent.
    pub fn find(&self, key: &str) -> Result<Option<AttrValue<'a>>> {
        if self.value_type() != ValueType::Map {
            return Err(wrong(self, "map"));
        }
        let key = key.as_bytes();
        Ok(self.children().chunks_exact(2).find_map(|kv| {
            let k = AttrValue { node: &kv[0] };
            (k.value_type() == ValueType::String && k.bytes_unchecked() == key)
                .then_some(AttrValue { node: &kv[1] })
        }))
    }

    fn scalar_text(&self) -> String {
        let x = self.node.x;
        match self.value_type() {
            ValueType::Null => "null".into(),
            ValueType::Bool => (x != 0).to_string(),
            t if t.is_signed() => (x as i64).to_string(),
            t if t.is_integer() => x.to_string(),
            t if t.is_float() => f64::from_bits(x).to_string(),
            t => t.name().into(),
        }
    }

    /// "u64 (300)", "a string", "an array of 3" ... for messages.
    fn describe(&self) -> String {
        match self.value_type() {
            ValueType::String => "a string".into(),
            ValueType::Bytes => "bytes".into(),
            ValueType::Array => format!("an array of {}", self.node.n),
            ValueType::Map => format!("a map of {} entries", self.node.n),
            ValueType::Null => "null".into(),
            ValueType::Other => "other (no typed equivalent)".into(),
            t => format!("{t} ({})", self.scalar_text()),
        }
    }
}

impl Packed {
    /// Element `i`'s value, made with the `ELEMENT_CHUNK` values around it on the first
    /// request for one of them, then kept: a caller that reads a few elements of a
    /// million as values pays for a few chunks. Every chunk (and the table of chunks) is
    /// taken from the tree's budget and allocated fallibly, so reading all elements of a
    /// huge array this way is a `Limit` error at some point, never an abort.
    fn element(&self, i: usize) -> Result<&Node> {
        let table = match self.chunks.get() {
            Some(t) => t,
            None => {
                let n = self.count.div_ceil(ELEMENT_CHUNK);
                let bytes = n * size_of::<Chunk>();
                self.take(bytes)?;
                let mut v = Vec::new();
                if v.try_reserve_exact(n).is_err() {
                    self.give(bytes);
                    return Err(build::oom("element values"));
                }
                v.resize_with(n, OnceLock::new);
                if self.chunks.set(v.into_boxed_slice()).is_err() {
                    self.give(bytes); // another thread made it first
                }
                self.chunks.get().expect("just set")
            }
        };
        let k = i / ELEMENT_CHUNK;
        let cell = &table[k];
        let nodes = match cell.get() {
            Some(nodes) => nodes,
            None => {
                let range = k * ELEMENT_CHUNK..self.count.min((k + 1) * ELEMENT_CHUNK);
                let bytes = range.len() * size_of::<Node>();
                self.take(bytes)?;
                let mut v = Vec::new();
                if v.try_reserve_exact(range.len()).is_err() {
                    self.give(bytes);
                    return Err(build::oom("element values"));
                }
                let w = self.elem.packed_width().expect("packed types have a width");
                // SAFETY: `count` elements of width `w` at `data`.
                let all = unsafe { std::slice::from_raw_parts(self.data, self.count * w) };
                v.extend(
                    all[range.start * w..range.end * w]
                        .chunks_exact(w)
                        .map(|b| Node::scalar(self.elem, unpack(self.elem, b))),
                );
                if cell.set(v.into_boxed_slice()).is_err() {
                    self.give(bytes);
                }
                cell.get().expect("just set")
            }
        };
        Ok(&nodes[i % ELEMENT_CHUNK])
    }

    /// Takes `bytes` from the tree's budget, or says why not.
    fn take(&self, bytes: usize) -> Result<()> {
        // SAFETY: `spare` points into the `Doc` that owns this record.
        let spare = unsafe { &*self.spare };
        spare
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                s.checked_sub(bytes)
            })
            .map(|_| ())
            .map_err(|_| {
                err!(
                    Limit,
                    "attributes: the element values of an array of {} {} would take more \
                     than the typed values of these attributes may ({BUDGET_PER_BYTE} bytes \
                     per byte of their encoding, plus {BUDGET_BASE}): read its numbers \
                     contiguously (zt_value_get_array_data, AttrValue::array_data)",
                    self.count,
                    self.elem
                )
            })
    }

    /// Gives back what `take` took (a chunk another thread made first, or not allocated).
    fn give(&self, bytes: usize) {
        // SAFETY: as in `take`.
        unsafe { &*self.spare }.fetch_add(bytes, Ordering::AcqRel);
    }
}

/// The node payload of one packed number of type `t` (its bytes, native order).
fn unpack(t: ValueType, b: &[u8]) -> u64 {
    match (t, b.len()) {
        (ValueType::F32, _) => f64::from(f32::from_ne_bytes(b.try_into().expect("4"))).to_bits(),
        (t, 1) if t.is_signed() => b[0] as i8 as i64 as u64,
        (t, 2) if t.is_signed() => i16::from_ne_bytes(b.try_into().expect("2")) as i64 as u64,
        (t, 4) if t.is_signed() => i32::from_ne_bytes(b.try_into().expect("4")) as i64 as u64,
        (_, 1) => u64::from(b[0]),
        (_, 2) => u64::from(u16::from_ne_bytes(b.try_into().expect("2"))),
        (_, 4) => u64::from(u32::from_ne_bytes(b.try_into().expect("4"))),
        _ => u64::from_ne_bytes(b.try_into().expect("8")),
    }
}

/// The typed trees of a reader's attributes, each built on first request.
#[derive(Default)]
pub(crate) struct DocCache {
    file: OnceLock<Result<Doc>>,
    objects: OnceLock<Box<[OnceLock<Result<Doc>>]>>,
}

impl fmt::Debug for DocCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DocCache")
    }
}

impl DocCache {
    /// The tree of the file's attributes (`object` None) or an object's, built by `make`
    /// the first time. `objects` is the object count.
    pub(crate) fn get(
        &self,
        object: Option<usize>,
        objects: usize,
        make: impl FnOnce() -> Result<Doc>,
    ) -> Result<&Doc> {
        let cell = match object {
            None => &self.file,
            Some(i) => &self
                .objects
                .get_or_init(|| (0..objects).map(|_| OnceLock::new()).collect())[i],
        };
        cell.get_or_init(make).as_ref().map_err(Clone::clone)
    }
}

/// The typed tree of an empty map, for files and objects without attributes.
pub(crate) fn empty_map() -> &'static Doc {
    static EMPTY: OnceLock<Doc> = OnceLock::new();
    EMPTY.get_or_init(|| Doc::build(&[0xa0], None, 1).expect("an empty map"))
}

#[cfg(test)]
mod tests;
