//! A pickle reader for PyTorch state dicts that never executes anything. It interprets
//! the binary opcodes (protocols 2 to 5) that build plain data (None, bools, integers,
//! floats, strings, bytes, tuples, lists, dicts, the memo, persistent ids) and only the
//! globals a state dict needs: `collections.OrderedDict`, `torch._utils._rebuild_tensor_v2`
//! and `_v3`, `torch._utils._rebuild_parameter` (and `_with_state`), the storage classes
//! (`torch.FloatStorage` ..., `torch.UntypedStorage`) and the dtypes (`torch.bfloat16`,
//! `torch.float8_e4m3fn` ...). Any other global is refused (`Unsupported`, naming it) when
//! the opcode that names it is read, so `os.system` or `builtins.eval` never become
//! callable; REDUCE calls only the allowed ones, and those only build values here.
//!
//! Values live in an arena (indices, no reference counting), so the memo's identity
//! semantics (a dict filled after it was memoized) hold, a memo reference shares its value
//! instead of copying it, cycles cost nothing, and everything is freed at once. Strings
//! and bytes are spans of the pickle itself (never copied); None, True, False and the
//! empty tuple are made once.
//!
//! Bounded by bytes from the first opcode: everything the reader holds (values, their
//! lists, the stack, marks, the memo, tensors' sizes) is charged to a `Budget` of
//! `STATE_PER_BYTE` times the pickle's size plus `STATE_BASE` before it is allocated, and
//! `pytorch`'s walk of the values charges what it makes of them (names, attribute values)
//! to the same budget, so a value reached through many references costs each time it is
//! reached. Past the budget: `Limit`. Counts are bounded too (values, memo entries, stack
//! and mark depth, every length against the bytes left), and every allocation the pickle
//! sizes is fallible.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::error::{Result, bail, err};

/// An index into the arena.
pub(crate) type Id = u32;

/// The most values one pickle may make.
const MAX_NODES: usize = 1 << 24;
/// The most memo entries.
const MAX_MEMO: usize = 1 << 22;
/// The deepest stack and the most open marks.
const MAX_STACK: usize = 1 << 20;
const MAX_MARKS: usize = 1 << 12;

/// Bytes of state a pickle may hold per byte of itself. A state dict as torch writes it
/// holds about 5 to 8, tables' room to grow included
/// (`tests::torch_pickles_hold_a_few_bytes_per_byte`); a pickle of two-byte opcodes that
/// each make a 32-byte value would hold 16 and more.
pub(crate) const STATE_PER_BYTE: u64 = 16;
/// Bytes of state any pickle may hold, however small.
pub(crate) const STATE_BASE: u64 = 1 << 20;

/// The bytes a pickle's reader and the walk of its values hold, against their bound.
#[derive(Debug)]
pub(crate) struct Budget {
    held: u64,
    max: u64,
    /// The pickle's size, for the message.
    pickle: u64,
}

impl Budget {
    /// The budget of a pickle of `len` bytes.
    pub(crate) fn for_pickle(len: usize) -> Budget {
        let pickle = len as u64;
        Budget {
            held: 0,
            max: pickle
                .saturating_mul(STATE_PER_BYTE)
                .saturating_add(STATE_BASE),
            pickle,
        }
    }

    /// Counts `bytes` more as held; `Limit` past the budget (called before they are
    /// allocated).
    pub(crate) fn charge(&mut self, bytes: u64) -> Result<()> {
        self.held = self.held.saturating_add(bytes);
        if self.held > self.max {
            bail!(
                Limit,
                "the checkpoint's values take more than {} bytes, the most a pickle of {} \
                 bytes may hold ({STATE_PER_BYTE} times its size plus {STATE_BASE}; a value \
                 reached through several references counts each time it is reached)",
                self.max,
                self.pickle
            );
        }
        Ok(())
    }

    /// The bytes held so far.
    #[cfg(test)]
    pub(crate) fn held(&self) -> u64 {
        self.held
    }
}

/// Makes room for `extra` more items in `v`, charging what its capacity grows by (by half
/// at least, so that pushes stay amortized O(1) and a table's room to grow stays within
/// half its size); fallible.
pub(crate) fn grow<T>(v: &mut Vec<T>, extra: usize, budget: &mut Budget) -> Result<()> {
    let need = v
        .len()
        .checked_add(extra)
        .ok_or_else(|| err!(Limit, "a list of the pickle's values overflows"))?;
    if need <= v.capacity() {
        return Ok(());
    }
    let cap = match v.capacity() {
        0 => need,
        c => need.max(c.saturating_add(c / 2).max(4)),
    };
    let bytes = (cap - v.capacity()).saturating_mul(std::mem::size_of::<T>());
    budget.charge(bytes as u64)?;
    v.try_reserve_exact(cap - v.len())
        .map_err(|_| err!(Limit, "no memory for {bytes} bytes of the pickle's values"))
}

/// The dtypes of torch tensors, by their torch names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TorchType {
    F64,
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    U8,
    U16,
    U32,
    U64,
    Bool,
    C32,
    C64,
    C128,
    F8E4M3FN,
    F8E5M2,
    F8E4M3FNUZ,
    F8E5M2FNUZ,
    F8E8M0FNU,
    F4E2M1FNx2,
}

impl TorchType {
    /// From a `torch.<name>` dtype global.
    fn of_dtype(name: &str) -> Option<TorchType> {
        use TorchType::*;
        Some(match name {
            "float64" | "double" => F64,
            "float32" | "float" => F32,
            "float16" | "half" => F16,
            "bfloat16" => BF16,
            "int64" | "long" => I64,
            "int32" | "int" => I32,
            "int16" | "short" => I16,
            "int8" => I8,
            "uint8" => U8,
            "uint16" => U16,
            "uint32" => U32,
            "uint64" => U64,
            "bool" => Bool,
            "complex32" | "chalf" => C32,
            "complex64" | "cfloat" => C64,
            "complex128" | "cdouble" => C128,
            "float8_e4m3fn" => F8E4M3FN,
            "float8_e5m2" => F8E5M2,
            "float8_e4m3fnuz" => F8E4M3FNUZ,
            "float8_e5m2fnuz" => F8E5M2FNUZ,
            "float8_e8m0fnu" => F8E8M0FNU,
            "float4_e2m1fn_x2" => F4E2M1FNx2,
            _ => return None,
        })
    }

    /// From a `torch.<Name>Storage` class global (the typed storages of old dtypes).
    fn of_storage(name: &str) -> Option<TorchType> {
        use TorchType::*;
        Some(match name {
            "DoubleStorage" => F64,
            "FloatStorage" => F32,
            "HalfStorage" => F16,
            "BFloat16Storage" => BF16,
            "LongStorage" => I64,
            "IntStorage" => I32,
            "ShortStorage" => I16,
            "CharStorage" => I8,
            "ByteStorage" => U8,
            "BoolStorage" => Bool,
            "ComplexFloatStorage" => C64,
            "ComplexDoubleStorage" => C128,
            _ => return None,
        })
    }

    /// The storage dtype, logical type, and bytes of one torch element.
    pub(crate) fn layout(self) -> (crate::dtype::DType, Option<&'static str>, u64) {
        use crate::dtype::DType as D;
        use TorchType::*;
        match self {
            F64 => (D::F64, None, 8),
            F32 => (D::F32, None, 4),
            F16 => (D::F16, None, 2),
            BF16 => (D::BF16, None, 2),
            I64 => (D::I64, None, 8),
            I32 => (D::I32, None, 4),
            I16 => (D::I16, None, 2),
            I8 => (D::I8, None, 1),
            U8 => (D::U8, None, 1),
            U16 => (D::U16, None, 2),
            U32 => (D::U32, None, 4),
            U64 => (D::U64, None, 8),
            Bool => (D::Bool, None, 1),
            C32 => (D::F16, Some("complex32"), 4),
            C64 => (D::F32, Some("complex64"), 8),
            C128 => (D::F64, Some("complex128"), 16),
            F8E4M3FN => (D::U8, Some("f8_e4m3fn"), 1),
            F8E5M2 => (D::U8, Some("f8_e5m2"), 1),
            F8E4M3FNUZ => (D::U8, Some("f8_e4m3fnuz"), 1),
            F8E5M2FNUZ => (D::U8, Some("f8_e5m2fnuz"), 1),
            F8E8M0FNU => (D::U8, Some("f8_e8m0fnu"), 1),
            F4E2M1FNx2 => (D::U8, Some("f4_e2m1fn_x2"), 1),
        }
    }

    /// The torch name, for attributes and messages.
    pub(crate) fn name(self) -> &'static str {
        use TorchType::*;
        match self {
            F64 => "float64",
            F32 => "float32",
            F16 => "float16",
            BF16 => "bfloat16",
            I64 => "int64",
            I32 => "int32",
            I16 => "int16",
            I8 => "int8",
            U8 => "uint8",
            U16 => "uint16",
            U32 => "uint32",
            U64 => "uint64",
            Bool => "bool",
            C32 => "complex32",
            C64 => "complex64",
            C128 => "complex128",
            F8E4M3FN => "float8_e4m3fn",
            F8E5M2 => "float8_e5m2",
            F8E4M3FNUZ => "float8_e4m3fnuz",
            F8E5M2FNUZ => "float8_e5m2fnuz",
            F8E8M0FNU => "float8_e8m0fnu",
            F4E2M1FNx2 => "float4_e2m1fn_x2",
        }
    }
}

/// The globals a state dict may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Global {
    OrderedDict,
    RebuildTensorV2,
    RebuildTensorV3,
    RebuildParameter,
    RebuildParameterWithState,
    /// A typed storage class (`torch.FloatStorage`), or `torch.UntypedStorage` (None).
    Storage(Option<TorchType>),
    DType(TorchType),
}

fn global(module: &str, name: &str) -> Result<Global> {
    Ok(match (module, name) {
        ("collections", "OrderedDict") => Global::OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2") => Global::RebuildTensorV2,
        ("torch._utils", "_rebuild_tensor_v3") => Global::RebuildTensorV3,
        ("torch._utils", "_rebuild_parameter") => Global::RebuildParameter,
        ("torch._utils", "_rebuild_parameter_with_state") => Global::RebuildParameterWithState,
        ("torch" | "torch.storage", "UntypedStorage") => Global::Storage(None),
        ("torch", n) if TorchType::of_storage(n).is_some() => {
            Global::Storage(TorchType::of_storage(n))
        }
        ("torch", n) if TorchType::of_dtype(n).is_some() => {
            Global::DType(TorchType::of_dtype(n).expect("checked"))
        }
        _ => bail!(
            Unsupported,
            "the pickle names the global {module}.{name}, which a state dict doesn't need: \
             only tensors, storages, dtypes and (ordered) dicts are read, and no code is run"
        ),
    })
}

/// A torch tensor as `_rebuild_tensor_v2/_v3` describe it.
#[derive(Debug)]
pub(crate) struct Tensor {
    /// The storage value (a `Node::Storage`).
    pub(crate) storage: Id,
    pub(crate) offset: u64,
    pub(crate) size: Vec<u64>,
    pub(crate) stride: Vec<u64>,
    pub(crate) dtype: TorchType,
}

/// Bytes `[at, at + len)` of the pickle: a string (checked to be UTF-8 when it was read)
/// or bytes; never copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    at: usize,
    len: usize,
}

/// A value the pickle made (32 bytes).
#[derive(Debug)]
pub(crate) enum Node {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Span),
    Bytes(Span),
    Tuple(Vec<Id>),
    List(Vec<Id>),
    Dict(Vec<(Id, Id)>),
    Global(Global),
    /// A persistent id `('storage', class, key, location, numel)`: the storage's entry
    /// `data/<key>` (`key` a string or integer value; `Pickle::key`); its dtype (None for
    /// an untyped storage, counted in bytes).
    Storage {
        dtype: Option<TorchType>,
        key: Id,
        numel: u64,
    },
    /// A tensor: its index in the pickle's tensors (`Pickle::tensor`).
    Tensor(u32),
}

impl Node {
    /// What kind of value it is, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Node::None => "None",
            Node::Bool(_) => "a bool",
            Node::Int(_) => "an integer",
            Node::Float(_) => "a float",
            Node::Str(_) => "a string",
            Node::Bytes(_) => "bytes",
            Node::Tuple(_) => "a tuple",
            Node::List(_) => "a list",
            Node::Dict(_) => "a dict",
            Node::Global(_) => "a global",
            Node::Storage { .. } => "a storage",
            Node::Tensor(_) => "a tensor",
        }
    }
}

/// None, True, False and () are made once, at these ids (immutable values).
const NONE: Id = 0;
const TRUE: Id = 1;
const FALSE: Id = 2;
const EMPTY_TUPLE: Id = 3;

/// The values of one pickle (borrowing its bytes) and the one it returns.
pub(crate) struct Pickle<'c> {
    code: &'c [u8],
    nodes: Vec<Node>,
    tensors: Vec<Tensor>,
    pub(crate) root: Id,
}

impl<'c> Pickle<'c> {
    pub(crate) fn get(&self, id: Id) -> &Node {
        &self.nodes[id as usize]
    }
    /// How many values the pickle made.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }
    pub(crate) fn tensor(&self, i: u32) -> &Tensor {
        &self.tensors[i as usize]
    }
    /// A string's text.
    pub(crate) fn text(&self, s: Span) -> &'c str {
        text_of(self.code, s)
    }
    /// The bytes of a bytes value.
    pub(crate) fn bytes(&self, s: Span) -> &'c [u8] {
        &self.code[s.at..s.at + s.len]
    }
    /// A storage's key (a string, or an integer in decimal), as text.
    pub(crate) fn key(&self, id: Id) -> Cow<'c, str> {
        match self.get(id) {
            Node::Str(s) => Cow::Borrowed(self.text(*s)),
            Node::Int(i) => Cow::Owned(i.to_string()),
            // `persistent` takes only strings and integers.
            _ => Cow::Borrowed(""),
        }
    }
}

/// The text of a span, which was checked to be UTF-8 when it was read.
fn text_of(code: &[u8], s: Span) -> &str {
    std::str::from_utf8(&code[s.at..s.at + s.len]).unwrap_or_default()
}

/// A non-negative integer value (or a bool, as torch writes `requires_grad`).
fn int_of(node: &Node, what: &str) -> Result<u64> {
    match node {
        Node::Int(v) if *v >= 0 => Ok(*v as u64),
        Node::Bool(b) => Ok(u64::from(*b)),
        Node::Int(v) => bail!(Format, "{what} is {v}, not a non-negative integer"),
        other => bail!(
            Format,
            "{what} is {}, not a non-negative integer",
            other.kind()
        ),
    }
}

struct Vm<'c> {
    code: &'c [u8],
    at: usize,
    nodes: Vec<Node>,
    tensors: Vec<Tensor>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: HashMap<u32, Id>,
    /// The value of each BININT1 integer made so far (0: not yet), shared: torch writes
    /// sizes, strides and offsets so, and an integer is immutable.
    small: [Id; 256],
    budget: Budget,
}

/// Reads a pickle into its values; never runs code. Returns them, and the budget they
/// were charged to (the walk of the values goes on charging it).
pub(crate) fn load(code: &[u8]) -> Result<(Pickle<'_>, Budget)> {
    let mut vm = Vm {
        code,
        at: 0,
        nodes: Vec::new(),
        tensors: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        small: [0; 256],
        budget: Budget::for_pickle(code.len()),
    };
    for node in [
        Node::None,
        Node::Bool(true),
        Node::Bool(false),
        Node::Tuple(Vec::new()),
    ] {
        vm.add(node)?;
    }
    let root = vm.run()?;
    let pickle = Pickle {
        code,
        nodes: vm.nodes,
        tensors: vm.tensors,
        root,
    };
    Ok((pickle, vm.budget))
}

impl<'c> Vm<'c> {
    // ----- input -------------------------------------------------------------------

    fn take(&mut self, n: u64) -> Result<&'c [u8]> {
        let left = (self.code.len() - self.at) as u64;
        if n > left {
            bail!(
                Format,
                "the pickle asks for {n} bytes at offset {} where {left} are left",
                self.at
            );
        }
        let code: &'c [u8] = self.code;
        let s = &code[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn le(&mut self, n: u64) -> Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .rev()
            .fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
    }
    fn line(&mut self) -> Result<&'c str> {
        let code: &'c [u8] = self.code;
        let rest = &code[self.at..];
        let n = memchr::memchr(b'\n', &rest[..rest.len().min(512)])
            .ok_or_else(|| err!(Format, "unterminated text in the pickle at {}", self.at))?;
        self.at += n + 1;
        std::str::from_utf8(&rest[..n]).map_err(|_| err!(Format, "a pickle name is not UTF-8"))
    }

    // ----- values, the stack, marks and the memo -----------------------------------

    fn add(&mut self, node: Node) -> Result<Id> {
        if self.nodes.len() >= MAX_NODES {
            bail!(Limit, "the pickle makes more than {MAX_NODES} values");
        }
        grow(&mut self.nodes, 1, &mut self.budget)?;
        self.nodes.push(node);
        Ok((self.nodes.len() - 1) as Id)
    }
    fn push(&mut self, id: Id) -> Result<()> {
        if self.stack.len() >= MAX_STACK {
            bail!(Limit, "the pickle's stack grows past {MAX_STACK} values");
        }
        grow(&mut self.stack, 1, &mut self.budget)?;
        self.stack.push(id);
        Ok(())
    }
    fn push_new(&mut self, node: Node) -> Result<()> {
        let id = self.add(node)?;
        self.push(id)
    }
    fn pop(&mut self) -> Result<Id> {
        if self.marks.last().is_some_and(|&m| m == self.stack.len()) {
            bail!(Format, "the pickle pops past a mark at {}", self.at);
        }
        self.stack
            .pop()
            .ok_or_else(|| err!(Format, "the pickle pops an empty stack at {}", self.at))
    }
    fn top(&self) -> Result<Id> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| err!(Format, "the pickle reads an empty stack at {}", self.at))
    }
    /// The values from stack position `from` up, moved into a list of their own.
    fn take_from(&mut self, from: usize) -> Result<Vec<Id>> {
        let mut items = Vec::new();
        grow(&mut items, self.stack.len() - from, &mut self.budget)?;
        items.extend(self.stack.drain(from..));
        Ok(items)
    }
    /// The values above the last mark, removed with it.
    fn pop_mark(&mut self) -> Result<Vec<Id>> {
        let m = self
            .marks
            .pop()
            .ok_or_else(|| err!(Format, "the pickle has no mark at {}", self.at))?;
        self.take_from(m)
    }
    fn memo_put(&mut self, key: u32) -> Result<()> {
        let id = self.top()?;
        if !self.memo.contains_key(&key) {
            if self.memo.len() >= MAX_MEMO {
                bail!(Limit, "the pickle's memo grows past {MAX_MEMO} entries");
            }
            if self.memo.len() == self.memo.capacity() {
                // A slot of the table holds a key, a value and a control byte, at a load
                // of at most 7/8; the table doubles.
                let more = self.memo.capacity().max(16);
                self.budget
                    .charge((more * (std::mem::size_of::<(u32, Id)>() + 2)) as u64)?;
                self.memo
                    .try_reserve(more)
                    .map_err(|_| err!(Limit, "no memory for the pickle's memo"))?;
            }
        }
        self.memo.insert(key, id);
        Ok(())
    }
    fn memo_get(&mut self, key: u64) -> Result<()> {
        let id = u32::try_from(key)
            .ok()
            .and_then(|k| self.memo.get(&k).copied())
            .ok_or_else(|| {
                err!(
                    Format,
                    "the pickle reads memo entry {key}, which it never stored"
                )
            })?;
        self.push(id)
    }
    fn get(&self, id: Id) -> &Node {
        &self.nodes[id as usize]
    }
    /// The text of a string value; None for any other value.
    fn text_of(&self, id: Id) -> Option<&'c str> {
        let code: &'c [u8] = self.code;
        match self.get(id) {
            Node::Str(s) => Some(text_of(code, *s)),
            _ => None,
        }
    }

    // ----- the opcodes -------------------------------------------------------------

    /// Runs the opcodes up to STOP; the value STOP returns.
    fn run(&mut self) -> Result<Id> {
        loop {
            let at = self.at;
            let op = self
                .u8()
                .map_err(|_| err!(Format, "the pickle ends without its STOP opcode"))?;
            if op == b'.' {
                return self.pop();
            }
            let known = self.framing(op)?
                || self.stack_op(op)?
                || self.scalar(op)?
                || self.text_or_bytes(op)?
                || self.container(op)?
                || self.memo_op(op)?
                || self.call(op)?;
            if !known {
                bail!(
                    Unsupported,
                    "pickle opcode {:?} (0x{op:02x}) at offset {at}, which a state dict doesn't use",
                    op as char
                );
            }
        }
    }

    /// PROTO (protocols 2 to 5 are read) and FRAME (its length is not needed).
    fn framing(&mut self, op: u8) -> Result<bool> {
        match op {
            0x80 => {
                let proto = self.u8()?;
                if !(2..=5).contains(&proto) {
                    bail!(Unsupported, "pickle protocol {proto} (2 to 5 are read)");
                }
            }
            0x95 => {
                self.take(8)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// MARK, POP, POP_MARK and DUP.
    fn stack_op(&mut self, op: u8) -> Result<bool> {
        match op {
            b'(' => {
                if self.marks.len() >= MAX_MARKS {
                    bail!(Limit, "the pickle nests more than {MAX_MARKS} marks");
                }
                grow(&mut self.marks, 1, &mut self.budget)?;
                self.marks.push(self.stack.len());
            }
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let id = self.top()?;
                self.push(id)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// None, the bools, integers (of at most 8 bytes) and floats.
    fn scalar(&mut self, op: u8) -> Result<bool> {
        match op {
            b'N' => self.push(NONE)?,
            0x88 => self.push(TRUE)?,
            0x89 => self.push(FALSE)?,
            b'J' => {
                let v = self.le(4)? as u32 as i32;
                self.push_new(Node::Int(v.into()))?
            }
            b'K' => {
                let v = usize::from(self.u8()?);
                if self.small[v] == 0 {
                    self.small[v] = self.add(Node::Int(v as i64))?;
                }
                self.push(self.small[v])?
            }
            b'M' => {
                let v = self.le(2)?;
                self.push_new(Node::Int(v as i64))?
            }
            0x8a | 0x8b => {
                let n = if op == 0x8a {
                    u64::from(self.u8()?)
                } else {
                    self.le(4)?
                };
                if n > 8 {
                    bail!(
                        Unsupported,
                        "a pickle integer of {n} bytes (at most 8 are read)"
                    );
                }
                let bytes = self.take(n)?;
                let mut v = bytes
                    .iter()
                    .rev()
                    .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
                if n > 0 && n < 8 && bytes[n as usize - 1] & 0x80 != 0 {
                    v |= !0u64 << (8 * n);
                }
                self.push_new(Node::Int(v as i64))?
            }
            b'G' => {
                let b = self.take(8)?;
                let v = f64::from_be_bytes(b.try_into().expect("8"));
                self.push_new(Node::Float(v))?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Strings (checked to be UTF-8) and bytes, of every length width: spans of the
    /// pickle, not copies.
    fn text_or_bytes(&mut self, op: u8) -> Result<bool> {
        let (n, text) = match op {
            0x8c => (u64::from(self.u8()?), true),
            b'X' => (self.le(4)?, true),
            0x8d => (self.le(8)?, true),
            b'U' | b'C' => (u64::from(self.u8()?), false),
            b'T' | b'B' => (self.le(4)?, false),
            0x8e | 0x96 => (self.le(8)?, false),
            _ => return Ok(false),
        };
        let at = self.at;
        let bytes = self.take(n)?;
        let span = Span {
            at,
            len: bytes.len(),
        };
        if text {
            std::str::from_utf8(bytes).map_err(|_| err!(Format, "a pickle string is not UTF-8"))?;
            self.push_new(Node::Str(span))?;
        } else {
            self.push_new(Node::Bytes(span))?;
        }
        Ok(true)
    }

    /// Tuples, lists and dicts: made, appended to, their items set.
    fn container(&mut self, op: u8) -> Result<bool> {
        match op {
            b')' => self.push(EMPTY_TUPLE)?,
            b't' => {
                let items = self.pop_mark()?;
                self.push_new(Node::Tuple(items))?
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                if self.stack.len() < n + self.marks.last().copied().unwrap_or(0) {
                    bail!(
                        Format,
                        "the pickle makes a tuple of {n} from a shorter stack"
                    );
                }
                let items = self.take_from(self.stack.len() - n)?;
                self.push_new(Node::Tuple(items))?
            }
            b']' => self.push_new(Node::List(Vec::new()))?,
            b'l' => {
                let items = self.pop_mark()?;
                self.push_new(Node::List(items))?
            }
            b'a' => {
                let v = self.pop()?;
                let list = self.top()?;
                self.append(list, &[v])?;
            }
            b'e' => {
                let items = self.pop_mark()?;
                let list = self.top()?;
                self.append(list, &items)?;
            }
            b'}' => self.push_new(Node::Dict(Vec::new()))?,
            b'd' => {
                let items = self.pop_mark()?;
                let id = self.add(Node::Dict(Vec::new()))?;
                self.set_items(id, &items)?;
                self.push(id)?
            }
            b's' => {
                let v = self.pop()?;
                let k = self.pop()?;
                let dict = self.top()?;
                self.set_items(dict, &[k, v])?;
            }
            b'u' => {
                let items = self.pop_mark()?;
                let dict = self.top()?;
                self.set_items(dict, &items)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn append(&mut self, list: Id, items: &[Id]) -> Result<()> {
        let Node::List(l) = &mut self.nodes[list as usize] else {
            bail!(Format, "the pickle appends to something not a list");
        };
        grow(l, items.len(), &mut self.budget)?;
        l.extend_from_slice(items);
        Ok(())
    }

    fn set_items(&mut self, dict: Id, items: &[Id]) -> Result<()> {
        if !items.len().is_multiple_of(2) {
            bail!(Format, "the pickle sets a dict item without its value");
        }
        let Node::Dict(d) = &mut self.nodes[dict as usize] else {
            bail!(Format, "the pickle sets items of something not a dict");
        };
        grow(d, items.len() / 2, &mut self.budget)?;
        d.extend(items.chunks_exact(2).map(|kv| (kv[0], kv[1])));
        Ok(())
    }

    /// BINPUT, LONG_BINPUT, MEMOIZE, BINGET and LONG_BINGET: a memo entry names a value,
    /// which a reference shares (never copies).
    fn memo_op(&mut self, op: u8) -> Result<bool> {
        match op {
            b'q' => {
                let k = self.u8()?;
                self.memo_put(k.into())?
            }
            b'r' => {
                let k = self.le(4)? as u32;
                self.memo_put(k)?
            }
            0x94 => {
                let k = self.memo.len() as u32;
                self.memo_put(k)?
            }
            b'h' => {
                let k = self.u8()?;
                self.memo_get(k.into())?
            }
            b'j' => {
                let k = self.le(4)?;
                self.memo_get(k)?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// GLOBAL and STACK_GLOBAL (only the allowed globals), BINPERSID (storages), REDUCE
    /// (only the allowed callables, which build values) and BUILD (the state a dict or a
    /// tensor may be given, ignored).
    fn call(&mut self, op: u8) -> Result<bool> {
        match op {
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                let g = global(module, name)?;
                self.push_new(Node::Global(g))?
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Some(m), Some(n)) = (self.text_of(module), self.text_of(name)) else {
                    bail!(Format, "STACK_GLOBAL of values that are not strings");
                };
                let g = global(m, n)?;
                self.push_new(Node::Global(g))?
            }
            b'Q' => {
                let pid = self.pop()?;
                let storage = self.persistent(pid)?;
                self.push_new(storage)?
            }
            b'R' => {
                let args = self.pop()?;
                let f = self.pop()?;
                let made = self.reduce(f, args)?;
                self.push_new(made)?
            }
            b'b' => {
                let state = self.pop()?;
                let target = self.top()?;
                match (self.get(target), self.get(state)) {
                    (
                        Node::Dict(_) | Node::Tensor(_),
                        Node::Dict(_) | Node::None | Node::Tuple(_),
                    ) => {}
                    _ => bail!(
                        Unsupported,
                        "the pickle sets the state of a value that is not a dict or a tensor"
                    ),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    // ----- what BINPERSID and REDUCE build -----------------------------------------

    /// The integers of a tuple or list (a size or strides), charged to the budget.
    fn ints(&mut self, id: Id, what: &str) -> Result<Vec<u64>> {
        let Vm { nodes, budget, .. } = self;
        let items = match &nodes[id as usize] {
            Node::Tuple(items) | Node::List(items) => items,
            other => bail!(Format, "{what} is {}, not a tuple", other.kind()),
        };
        if items.len() > crate::limits::MAX_CBOR_DEPTH {
            bail!(Limit, "{what} has {} dimensions", items.len());
        }
        let mut out = Vec::new();
        grow(&mut out, items.len(), budget)?;
        for &i in items {
            out.push(int_of(&nodes[i as usize], what)?);
        }
        Ok(out)
    }

    fn args(&self, id: Id) -> Result<&[Id]> {
        match self.get(id) {
            Node::Tuple(items) => Ok(items),
            _ => bail!(Format, "REDUCE arguments that are not a tuple"),
        }
    }

    /// `('storage', class, key, location, numel)`.
    fn persistent(&self, pid: Id) -> Result<Node> {
        let items = match self.get(pid) {
            Node::Tuple(items) if items.len() == 5 => items,
            other => bail!(
                Format,
                "a persistent id that is {}, not a storage's tuple",
                other.kind()
            ),
        };
        if self.text_of(items[0]) != Some("storage") {
            bail!(
                Unsupported,
                "a persistent id of another kind than 'storage' (only storages are read)"
            );
        }
        let Node::Global(Global::Storage(dtype)) = self.get(items[1]) else {
            bail!(Format, "a storage whose class is not a torch storage class");
        };
        match self.get(items[2]) {
            Node::Str(_) | Node::Int(_) => {}
            other => bail!(Format, "a storage key that is {}", other.kind()),
        }
        let numel = int_of(self.get(items[4]), "a storage's size")?;
        Ok(Node::Storage {
            dtype: *dtype,
            key: items[2],
            numel,
        })
    }

    /// What an allowed callable builds from its arguments.
    fn reduce(&mut self, f: Id, args: Id) -> Result<Node> {
        let Node::Global(g) = *self.get(f) else {
            bail!(
                Unsupported,
                "the pickle calls something that is not an allowed global"
            );
        };
        let n = self.args(args)?.len();
        match g {
            Global::OrderedDict => match n {
                0 => Ok(Node::Dict(Vec::new())),
                _ => bail!(Unsupported, "OrderedDict built from arguments"),
            },
            Global::RebuildTensorV2 | Global::RebuildTensorV3 => self.rebuild_tensor(g, args),
            Global::RebuildParameter | Global::RebuildParameterWithState => {
                match self.args(args)?.first().map(|&data| self.get(data)) {
                    Some(Node::Tensor(t)) => Ok(Node::Tensor(*t)),
                    _ => bail!(Format, "a parameter that holds no tensor"),
                }
            }
            Global::Storage(_) | Global::DType(_) => {
                bail!(Unsupported, "the pickle calls a storage class or dtype")
            }
        }
    }

    /// `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, meta])`,
    /// and `_v3` with the dtype after the hooks.
    fn rebuild_tensor(&mut self, g: Global, args: Id) -> Result<Node> {
        let a = self.args(args)?;
        let n = if g == Global::RebuildTensorV2 { 6 } else { 7 };
        if a.len() < n || a.len() > n + 1 {
            bail!(Format, "a tensor rebuilt from {} arguments", a.len());
        }
        let (storage, offset, size, stride) = (a[0], a[1], a[2], a[3]);
        let Node::Storage { dtype, .. } = *self.get(storage) else {
            bail!(Format, "a tensor whose storage is not a storage");
        };
        let dtype = match (g, dtype) {
            (Global::RebuildTensorV3, _) => match self.get(a[6]) {
                Node::Global(Global::DType(t)) => *t,
                _ => bail!(Format, "a tensor whose dtype is not a torch dtype"),
            },
            (_, Some(t)) => t,
            (_, None) => bail!(Format, "an untyped storage without a dtype"),
        };
        let offset = int_of(self.get(offset), "a tensor's storage offset")?;
        let size = self.ints(size, "a tensor's size")?;
        let stride = self.ints(stride, "a tensor's stride")?;
        if size.len() != stride.len() {
            bail!(
                Format,
                "a tensor of {} dimensions with {} strides",
                size.len(),
                stride.len()
            );
        }
        let index = u32::try_from(self.tensors.len())
            .map_err(|_| err!(Limit, "the pickle makes too many tensors"))?;
        grow(&mut self.tensors, 1, &mut self.budget)?;
        self.tensors.push(Tensor {
            storage,
            offset,
            size,
            stride,
            dtype,
        });
        Ok(Node::Tensor(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn plain_data_and_refusals() {
        // {'a': [1, -2, 3.5], 'b': 'x'} at protocol 2, with memo.
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01J\xfe\xff\xff\xffG@\x0c\x00\x00\x00\x00\x00\x00eX\x01\x00\x00\x00bq\x03h\x03u.";
        let (v, _) = load(p).unwrap();
        let Node::Dict(items) = v.get(v.root) else {
            panic!()
        };
        assert_eq!(items.len(), 2);
        let Node::Str(a) = v.get(items[0].0) else {
            panic!()
        };
        assert_eq!(v.text(*a), "a");
        let Node::List(l) = v.get(items[0].1) else {
            panic!()
        };
        assert!(matches!(v.get(l[1]), Node::Int(-2)));
        assert!(matches!(v.get(l[2]), Node::Float(f) if *f == 3.5));
        // 'b' maps to the memoized key itself: the same value, not a copy.
        assert_eq!(items[1].0, items[1].1);
        let e = load(b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsR.")
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("os.system"), "{e}");
        let e = load(b"\x80\x02j\xff\xff\xff\x7f.").err().unwrap();
        assert!(e.message().contains("memo entry 2147483647"), "{e}");
        let e = load(b"\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\x7f.")
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::Format);
        assert!(load(b"\x80\x02N").is_err());
        assert!(load(b"\x80\x02(((N.").is_ok());
        assert!(load(b"\x80\x02(0.").is_err());
    }

    /// A 64 KiB bytes value memoized once and appended to a list 4,000 times: the list
    /// holds 4,000 ids of one value, and the state is the list, not 256 MB of copies.
    #[test]
    fn memo_references_share_their_value() {
        let mut p = b"\x80\x03]q\x00B\x00\x00\x01\x00".to_vec();
        p.extend(std::iter::repeat_n(0x41u8, 1 << 16));
        p.extend(b"q\x010");
        for _ in 0..4000 {
            p.extend(b"h\x01a");
        }
        p.push(b'.');
        let (v, budget) = load(&p).unwrap();
        let Node::List(l) = v.get(v.root) else {
            panic!()
        };
        assert_eq!(l.len(), 4000);
        assert!(l.iter().all(|&i| i == l[0]));
        let Node::Bytes(b) = v.get(l[0]) else {
            panic!()
        };
        assert_eq!(v.bytes(*b).len(), 1 << 16);
        assert!(budget.held() < 64 << 10, "{} bytes held", budget.held());
    }

    /// One-byte opcodes that each make a value are stopped by the bytes they hold, long
    /// before the count limits: a million empty lists (36 bytes each, stack included)
    /// from a pickle of 1 MB stop at its budget of 17 MiB.
    #[test]
    fn state_is_bounded_by_bytes_from_the_start() {
        let mut p = b"\x80\x02".to_vec();
        p.extend(std::iter::repeat_n(b']', 1_000_000));
        p.push(b'.');
        let e = load(&p).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        assert!(e.message().contains("values take more than"), "{e}");
        // Shared immutable values cost nothing: a million Nones popped as they come.
        let mut p = b"\x80\x02".to_vec();
        for _ in 0..1_000_000 {
            p.extend(b"N0");
        }
        p.extend(b"N.");
        let (v, budget) = load(&p).unwrap();
        assert!(matches!(v.get(v.root), Node::None));
        assert_eq!(v.len(), 4);
        assert!(budget.held() < 4096, "{}", budget.held());
    }

    /// A state dict of `n` 2-d f32 tensors with names as a transformer's, pickled as
    /// torch 2.x writes one (protocol 2, memoized globals and strings; the opcodes of
    /// `tests/vectors/torch/views.pt`).
    fn torch_like(n: usize) -> Vec<u8> {
        let mut memo = 0u32;
        let put = |p: &mut Vec<u8>, memo: &mut u32| {
            if *memo < 256 {
                p.extend([b'q', *memo as u8]);
            } else {
                p.push(b'r');
                p.extend(memo.to_le_bytes());
            }
            *memo += 1;
        };
        let get = |p: &mut Vec<u8>, i: u32| p.extend([b'h', i as u8]);
        let text = |p: &mut Vec<u8>, s: &str| {
            p.push(b'X');
            p.extend((s.len() as u32).to_le_bytes());
            p.extend(s.as_bytes());
        };
        let mut p = b"\x80\x02ccollections\nOrderedDict\n".to_vec();
        put(&mut p, &mut memo); // 0
        p.extend(b")R");
        put(&mut p, &mut memo); // 1
        p.push(b'(');
        for i in 0..n {
            text(
                &mut p,
                &format!("model.layers.{}.self_attn.q_proj.weight", i),
            );
            put(&mut p, &mut memo);
            if i == 0 {
                p.extend(b"ctorch._utils\n_rebuild_tensor_v2\n");
                put(&mut p, &mut memo); // 3
                p.extend(b"((");
                text(&mut p, "storage");
                put(&mut p, &mut memo); // 4
                p.extend(b"ctorch\nFloatStorage\n");
                put(&mut p, &mut memo); // 5
            } else {
                get(&mut p, 3);
                p.extend(b"((");
                get(&mut p, 4);
                get(&mut p, 5);
            }
            text(&mut p, &i.to_string());
            put(&mut p, &mut memo);
            if i == 0 {
                text(&mut p, "cpu");
                put(&mut p, &mut memo); // 7
            } else {
                get(&mut p, 7);
            }
            p.extend(b"J\x00\x00\x10\x00tQK\x00M\x00\x04M\x00\x04\x86");
            put(&mut p, &mut memo);
            p.extend(b"M\x00\x04K\x01\x86");
            put(&mut p, &mut memo);
            p.push(0x89);
            get(&mut p, 0);
            p.extend(b")R");
            put(&mut p, &mut memo);
            p.push(b't');
            put(&mut p, &mut memo);
            p.push(b'R');
            put(&mut p, &mut memo);
        }
        p.extend(b"u.");
        p
    }

    /// A state dict of 50,000 tensors holds about 7 bytes per byte of its pickle: half
    /// the budget.
    #[test]
    fn a_large_state_dict_holds_half_its_budget() {
        let p = torch_like(50_000);
        let (v, budget) = load(&p).unwrap();
        let Node::Dict(items) = v.get(v.root) else {
            panic!()
        };
        assert_eq!(items.len(), 50_000);
        assert!(matches!(v.get(items[49_999].1), Node::Tensor(49_999)));
        let ratio = budget.held() as f64 / p.len() as f64;
        println!(
            "{} bytes of pickle hold {} ({ratio:.1}x)",
            p.len(),
            budget.held()
        );
        assert!(ratio < (STATE_PER_BYTE / 2) as f64, "{ratio:.1}x");
    }

    /// Pickles torch wrote (the committed fixtures) hold a few bytes of state per byte:
    /// the budget of `STATE_PER_BYTE` leaves them room.
    #[test]
    fn torch_pickles_hold_a_few_bytes_per_byte() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/torch");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            if !bytes.starts_with(b"PK") {
                continue;
            }
            let read = |at: u64, len: u64| -> Result<Cow<'_, [u8]>> {
                Ok(Cow::Borrowed(&bytes[at as usize..(at + len) as usize]))
            };
            let limits = crate::limits::Limits::default();
            let archive =
                crate::formats::zip::read_archive(&read, bytes.len() as u64, &limits).unwrap();
            let e = archive
                .entries
                .iter()
                .find(|e| e.name.ends_with("data.pkl"))
                .unwrap();
            let code = archive.contents(&read, e, 1 << 20, "data.pkl").unwrap();
            // module.pt pickles a whole nn.Module: refused, as it should be.
            let Ok((_, budget)) = load(&code) else {
                continue;
            };
            let ratio = budget.held() as f64 / code.len() as f64;
            println!(
                "{}: {} bytes of pickle hold {} ({ratio:.1}x)",
                path.display(),
                code.len(),
                budget.held()
            );
            // Half the budget, beyond a few KiB of tables any pickle starts with.
            let bound = STATE_PER_BYTE / 2 * code.len() as u64 + 4096;
            assert!(budget.held() <= bound, "{}: {ratio:.1}x", path.display());
            seen += 1;
        }
        assert!(seen >= 5);
    }
}
