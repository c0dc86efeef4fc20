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
//! semantics (a dict filled after it was memoized) hold, cycles cost nothing, and
//! everything is freed at once. Bounded: values, memo entries, stack and mark depth, and
//! every length against the bytes left; all growth is fallible.

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
#[derive(Clone, Debug)]
pub(crate) struct Tensor {
    /// The storage value (a `Node::Storage`).
    pub(crate) storage: Id,
    pub(crate) offset: u64,
    pub(crate) size: Vec<u64>,
    pub(crate) stride: Vec<u64>,
    pub(crate) dtype: TorchType,
}

/// A value the pickle made.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Box<str>),
    Bytes(Box<[u8]>),
    Tuple(Vec<Id>),
    List(Vec<Id>),
    Dict(Vec<(Id, Id)>),
    Global(Global),
    /// A persistent id `('storage', class, key, location, numel)`: the storage's entry
    /// `data/<key>`; its dtype (None for an untyped storage, counted in bytes).
    Storage {
        dtype: Option<TorchType>,
        key: Box<str>,
        numel: u64,
    },
    Tensor(Tensor),
}

/// The values of one pickle and the one it returns.
pub(crate) struct Pickle {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: Id,
}

impl Pickle {
    pub(crate) fn get(&self, id: Id) -> &Node {
        &self.nodes[id as usize]
    }
}

struct Vm<'a> {
    code: &'a [u8],
    at: usize,
    nodes: Vec<Node>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: std::collections::HashMap<u32, Id>,
}

/// Reads a pickle into its values; never runs code.
pub(crate) fn load(code: &[u8]) -> Result<Pickle> {
    let mut vm = Vm {
        code,
        at: 0,
        nodes: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: std::collections::HashMap::new(),
    };
    let root = vm.run()?;
    Ok(Pickle {
        nodes: vm.nodes,
        root,
    })
}

impl Vm<'_> {
    fn take(&mut self, n: u64) -> Result<&[u8]> {
        let left = (self.code.len() - self.at) as u64;
        if n > left {
            bail!(
                Format,
                "the pickle asks for {n} bytes at offset {} where {left} are left",
                self.at
            );
        }
        let s = &self.code[self.at..self.at + n as usize];
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
    fn line(&mut self) -> Result<&str> {
        let rest = &self.code[self.at..];
        let n = memchr::memchr(b'\n', &rest[..rest.len().min(512)])
            .ok_or_else(|| err!(Format, "unterminated text in the pickle at {}", self.at))?;
        self.at += n + 1;
        std::str::from_utf8(&rest[..n]).map_err(|_| err!(Format, "a pickle name is not UTF-8"))
    }

    fn add(&mut self, node: Node) -> Result<Id> {
        if self.nodes.len() >= MAX_NODES {
            bail!(Limit, "the pickle makes more than {MAX_NODES} values");
        }
        if self.nodes.len() == self.nodes.capacity() {
            self.nodes
                .try_reserve(self.nodes.len().max(64))
                .map_err(|_| err!(Limit, "no memory for the pickle's values"))?;
        }
        self.nodes.push(node);
        Ok((self.nodes.len() - 1) as Id)
    }
    fn push(&mut self, id: Id) -> Result<()> {
        if self.stack.len() >= MAX_STACK {
            bail!(Limit, "the pickle's stack grows past {MAX_STACK} values");
        }
        if self.stack.len() == self.stack.capacity() {
            self.stack
                .try_reserve(self.stack.len().max(64))
                .map_err(|_| err!(Limit, "no memory for the pickle's stack"))?;
        }
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
    /// The values above the last mark, removed with it.
    fn pop_mark(&mut self) -> Result<Vec<Id>> {
        let m = self
            .marks
            .pop()
            .ok_or_else(|| err!(Format, "the pickle has no mark at {}", self.at))?;
        Ok(self.stack.split_off(m))
    }
    fn memo_put(&mut self, key: u32) -> Result<()> {
        let id = self.top()?;
        if self.memo.len() >= MAX_MEMO && !self.memo.contains_key(&key) {
            bail!(Limit, "the pickle's memo grows past {MAX_MEMO} entries");
        }
        self.memo
            .try_reserve(1)
            .map_err(|_| err!(Limit, "no memory for the pickle's memo"))?;
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
    fn text(&mut self, n: u64) -> Result<()> {
        let s = std::str::from_utf8(self.take(n)?)
            .map_err(|_| err!(Format, "a pickle string is not UTF-8"))?
            .into();
        self.push_new(Node::Str(s))
    }
    fn bytes(&mut self, n: u64) -> Result<()> {
        let b = self.take(n)?.into();
        self.push_new(Node::Bytes(b))
    }
    fn list_mut(&mut self, id: Id) -> Result<&mut Vec<Id>> {
        match &mut self.nodes[id as usize] {
            Node::List(v) => Ok(v),
            _ => bail!(Format, "the pickle appends to something not a list"),
        }
    }
    fn set_items(&mut self, dict: Id, items: &[Id]) -> Result<()> {
        if !items.len().is_multiple_of(2) {
            bail!(Format, "the pickle sets a dict item without its value");
        }
        let Node::Dict(d) = &mut self.nodes[dict as usize] else {
            bail!(Format, "the pickle sets items of something not a dict");
        };
        d.try_reserve(items.len() / 2)
            .map_err(|_| err!(Limit, "no memory for a dict"))?;
        for kv in items.chunks_exact(2) {
            d.push((kv[0], kv[1]));
        }
        Ok(())
    }

    fn run(&mut self) -> Result<Id> {
        loop {
            let at = self.at;
            let op = self
                .u8()
                .map_err(|_| err!(Format, "the pickle ends without its STOP opcode"))?;
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
                b'.' => {
                    let root = self.pop()?;
                    return Ok(root);
                }
                b'(' => {
                    if self.marks.len() >= MAX_MARKS {
                        bail!(Limit, "the pickle nests more than {MAX_MARKS} marks");
                    }
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
                b'N' => self.push_new(Node::None)?,
                0x88 => self.push_new(Node::Bool(true))?,
                0x89 => self.push_new(Node::Bool(false))?,
                b'J' => {
                    let v = self.le(4)? as u32 as i32;
                    self.push_new(Node::Int(v.into()))?
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push_new(Node::Int(v.into()))?
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
                0x8c => {
                    let n = self.u8()?;
                    self.text(n.into())?
                }
                b'X' => {
                    let n = self.le(4)?;
                    self.text(n)?
                }
                0x8d => {
                    let n = self.le(8)?;
                    self.text(n)?
                }
                b'U' => {
                    let n = self.u8()?;
                    self.bytes(n.into())?
                }
                b'T' => {
                    let n = self.le(4)?;
                    self.bytes(n)?
                }
                b'C' => {
                    let n = self.u8()?;
                    self.bytes(n.into())?
                }
                b'B' => {
                    let n = self.le(4)?;
                    self.bytes(n)?
                }
                0x8e | 0x96 => {
                    let n = self.le(8)?;
                    self.bytes(n)?
                }
                b')' => self.push_new(Node::Tuple(Vec::new()))?,
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
                    let items = self.stack.split_off(self.stack.len() - n);
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
                    let l = self.list_mut(list)?;
                    l.try_reserve(1)
                        .map_err(|_| err!(Limit, "no memory for a list"))?;
                    l.push(v);
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    let list = self.top()?;
                    let l = self.list_mut(list)?;
                    l.try_reserve(items.len())
                        .map_err(|_| err!(Limit, "no memory for a list"))?;
                    l.extend(items);
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
                b'c' => {
                    let module = self.line()?.to_owned();
                    let name = self.line()?.to_owned();
                    let g = global(&module, &name)?;
                    self.push_new(Node::Global(g))?
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Node::Str(m), Node::Str(n)) = (self.get(module), self.get(name)) else {
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
                other => bail!(
                    Unsupported,
                    "pickle opcode {:?} (0x{other:02x}) at offset {at}, which a state dict doesn't use",
                    other as char
                ),
            }
        }
    }

    fn get(&self, id: Id) -> &Node {
        &self.nodes[id as usize]
    }

    fn int(&self, id: Id, what: &str) -> Result<u64> {
        match self.get(id) {
            Node::Int(v) if *v >= 0 => Ok(*v as u64),
            Node::Bool(b) => Ok(u64::from(*b)),
            other => bail!(Format, "{what} is {other:?}, not a non-negative integer"),
        }
    }

    fn ints(&self, id: Id, what: &str) -> Result<Vec<u64>> {
        match self.get(id) {
            Node::Tuple(items) | Node::List(items) => {
                if items.len() > crate::limits::MAX_CBOR_DEPTH {
                    bail!(Limit, "{what} has {} dimensions", items.len());
                }
                items.iter().map(|&i| self.int(i, what)).collect()
            }
            other => bail!(Format, "{what} is {other:?}, not a tuple"),
        }
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
            other => bail!(Format, "a persistent id {other:?} that is not a storage"),
        };
        match self.get(items[0]) {
            Node::Str(s) if &**s == "storage" => {}
            other => bail!(
                Unsupported,
                "a persistent id of kind {other:?} (only storages are read)"
            ),
        }
        let Node::Global(Global::Storage(dtype)) = self.get(items[1]) else {
            bail!(Format, "a storage whose class is not a torch storage class");
        };
        let key = match self.get(items[2]) {
            Node::Str(s) => s.clone(),
            Node::Int(i) => i.to_string().into(),
            other => bail!(Format, "a storage key {other:?}"),
        };
        let numel = self.int(items[4], "a storage's size")?;
        Ok(Node::Storage {
            dtype: *dtype,
            key,
            numel,
        })
    }

    /// What an allowed callable builds from its arguments.
    fn reduce(&self, f: Id, args: Id) -> Result<Node> {
        let Node::Global(g) = self.get(f) else {
            bail!(
                Unsupported,
                "the pickle calls something that is not an allowed global"
            );
        };
        let args = self.args(args)?;
        match g {
            Global::OrderedDict => match args {
                [] => Ok(Node::Dict(Vec::new())),
                _ => bail!(Unsupported, "OrderedDict built from arguments"),
            },
            Global::RebuildTensorV2 | Global::RebuildTensorV3 => {
                let n = if *g == Global::RebuildTensorV2 { 6 } else { 7 };
                if args.len() < n || args.len() > n + 1 {
                    bail!(Format, "a tensor rebuilt from {} arguments", args.len());
                }
                let Node::Storage { dtype, .. } = self.get(args[0]) else {
                    bail!(Format, "a tensor whose storage is not a storage");
                };
                let dtype = match (g, dtype) {
                    (Global::RebuildTensorV3, _) => match self.get(args[6]) {
                        Node::Global(Global::DType(t)) => *t,
                        _ => bail!(Format, "a tensor whose dtype is not a torch dtype"),
                    },
                    (_, Some(t)) => *t,
                    (_, None) => bail!(Format, "an untyped storage without a dtype"),
                };
                let size = self.ints(args[2], "a tensor's size")?;
                let stride = self.ints(args[3], "a tensor's stride")?;
                if size.len() != stride.len() {
                    bail!(
                        Format,
                        "a tensor of {} dimensions with {} strides",
                        size.len(),
                        stride.len()
                    );
                }
                Ok(Node::Tensor(Tensor {
                    storage: args[0],
                    offset: self.int(args[1], "a tensor's storage offset")?,
                    size,
                    stride,
                    dtype,
                }))
            }
            Global::RebuildParameter | Global::RebuildParameterWithState => match args.first() {
                Some(&data) if matches!(self.get(data), Node::Tensor(_)) => {
                    Ok(self.get(data).clone())
                }
                _ => bail!(Format, "a parameter that holds no tensor"),
            },
            Global::Storage(_) | Global::DType(_) => {
                bail!(Unsupported, "the pickle calls a storage class or dtype")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_data_and_refusals() {
        // {'a': [1, -2, 3.5], 'b': 'x'} at protocol 2, with memo.
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01J\xfe\xff\xff\xffG@\x0c\x00\x00\x00\x00\x00\x00eX\x01\x00\x00\x00bq\x03h\x03u.";
        let v = load(p).unwrap();
        let Node::Dict(items) = v.get(v.root) else {
            panic!()
        };
        assert_eq!(items.len(), 2);
        let Node::List(l) = v.get(items[0].1) else {
            panic!()
        };
        assert!(matches!(v.get(l[1]), Node::Int(-2)));
        assert!(matches!(v.get(l[2]), Node::Float(f) if *f == 3.5));
        let e = load(b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsR.")
            .err()
            .unwrap();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
        assert!(e.message().contains("os.system"), "{e}");
        let e = load(b"\x80\x02j\xff\xff\xff\x7f.").err().unwrap();
        assert!(e.message().contains("memo entry 2147483647"), "{e}");
        let e = load(b"\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\x7f.")
            .err()
            .unwrap();
        assert_eq!(e.kind(), crate::error::ErrorKind::Format);
        assert!(load(b"\x80\x02N").is_err());
        assert!(load(b"\x80\x02(((N.").is_ok());
        assert!(load(b"\x80\x02(0.").is_err());
    }
}
