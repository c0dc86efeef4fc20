//! GGUF files built by hand for the tests: key/values and tensors as given.

/// GGUF's value types (gguf.h's `enum gguf_type`).
#[allow(dead_code)]
pub mod types {
    pub const T_U8: u32 = 0;
    pub const T_I8: u32 = 1;
    pub const T_U16: u32 = 2;
    pub const T_I16: u32 = 3;
    pub const T_U32: u32 = 4;
    pub const T_I32: u32 = 5;
    pub const T_F32: u32 = 6;
    pub const T_BOOL: u32 = 7;
    pub const T_STRING: u32 = 8;
    pub const T_ARRAY: u32 = 9;
    pub const T_U64: u32 = 10;
    pub const T_I64: u32 = 11;
    pub const T_F64: u32 = 12;
}

/// A GGUF array value: element type, count, then the elements' bytes.
#[allow(dead_code)]
pub fn garr(elem: u32, count: usize, bytes: &[u8]) -> Vec<u8> {
    let mut v = elem.to_le_bytes().to_vec();
    v.extend((count as u64).to_le_bytes());
    v.extend(bytes);
    v
}

/// A GGUF string: u64 length, then the bytes.
pub fn gstr(s: &[u8]) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend(s);
    v
}

/// A GGUF file under construction: key/values and tensors as given; tensors are placed
/// back to back at multiples of the alignment unless an offset is forced.
#[derive(Clone)]
pub struct Gguf {
    pub version: u32,
    pub kvs: Vec<u8>,
    pub kv_count: u64,
    pub infos: Vec<u8>,
    pub tensor_count: u64,
    pub data: Vec<u8>,
    pub alignment: usize,
}

impl Gguf {
    pub fn new() -> Gguf {
        Gguf {
            version: 3,
            kvs: Vec::new(),
            kv_count: 0,
            infos: Vec::new(),
            tensor_count: 0,
            data: Vec::new(),
            alignment: 32,
        }
    }
    /// A key/value with its raw value bytes.
    pub fn kv(mut self, key: &str, ty: u32, value: &[u8]) -> Gguf {
        self.kvs.extend(gstr(key.as_bytes()));
        self.kvs.extend(ty.to_le_bytes());
        self.kvs.extend(value);
        self.kv_count += 1;
        self
    }
    pub fn alignment(self, a: u32) -> Gguf {
        let mut g = self.kv("general.alignment", 4, &a.to_le_bytes());
        if a.is_power_of_two() {
            g.alignment = a as usize;
        }
        g
    }
    /// A tensor with dims in GGUF order (ne[0] first) and its bytes.
    pub fn tensor(self, name: &str, ne: &[u64], ty: u32, bytes: &[u8]) -> Gguf {
        let offset = self.data.len().next_multiple_of(self.alignment);
        self.tensor_at(name, ne, ty, bytes, offset as u64)
    }
    pub fn tensor_at(mut self, name: &str, ne: &[u64], ty: u32, bytes: &[u8], offset: u64) -> Gguf {
        self.infos.extend(gstr(name.as_bytes()));
        self.infos.extend((ne.len() as u32).to_le_bytes());
        for d in ne {
            self.infos.extend(d.to_le_bytes());
        }
        self.infos.extend(ty.to_le_bytes());
        self.infos.extend(offset.to_le_bytes());
        self.tensor_count += 1;
        let at = offset as usize;
        if bytes.is_empty() {
            return self;
        }
        if self.data.len() < at + bytes.len() {
            self.data.resize(at + bytes.len(), 0);
        }
        self.data[at..at + bytes.len()].copy_from_slice(bytes);
        self
    }
    pub fn header(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(self.version.to_le_bytes());
        out.extend(self.tensor_count.to_le_bytes());
        out.extend(self.kv_count.to_le_bytes());
        out.extend(&self.kvs);
        out.extend(&self.infos);
        out
    }
    pub fn build(&self) -> Vec<u8> {
        let mut out = self.header();
        out.resize(out.len().next_multiple_of(self.alignment), 0);
        out.extend(&self.data);
        // Writers pad after every tensor, so the file ends aligned too.
        out.resize(out.len().next_multiple_of(self.alignment), 0);
        out
    }
}
