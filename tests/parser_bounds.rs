//! Issue 35, the parsers' holes: PyTorch views whose arithmetic passed u64, pickles whose
//! memo references, keys or opcodes multiplied memory, zip members that inflate to more
//! than the format needs, ONNX typed fields and external data that committed or took
//! more than their bytes, duplicate zip names and empty dict keys. Each case is built
//! here byte by byte and opened from memory; the memory an open (or a read) allocates is
//! measured by a counting global allocator (per thread: the tests run side by side), so
//! every bound below is on bytes the library really asked for.
//!
//! Run with `--nocapture` to see the peaks.

use ztensor::{ErrorKind, Reader};

#[path = "common/counting.rs"]
mod counting;

use counting::peak_during;

const MIB: u64 = 1 << 20;

/// Opens `bytes` from memory, measuring the open's peak: the error kind (None when it
/// opened), the message, and the peak.
fn open_measured(what: &str, bytes: &[u8]) -> (Option<ErrorKind>, String, u64) {
    let (r, peak) = peak_during(|| Reader::from_slice(bytes).map(drop));
    let (kind, message) = match r {
        Ok(()) => (None, String::new()),
        Err(e) => (Some(e.kind()), e.to_string()),
    };
    println!(
        "{what}: {} bytes open with {kind:?} ({message}), peak {:.2} MiB",
        bytes.len(),
        peak as f64 / MIB as f64
    );
    (kind, message, peak)
}

// ---------------------------------------------------------------------------------------
// Zip archives, deflate streams, CRC-32
// ---------------------------------------------------------------------------------------

fn crc32(bytes: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|i| {
            (0..8).fold(i, |c, _| {
                if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                }
            })
        })
        .collect();
    !bytes.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// A member of an archive: its name, its content's size and CRC-32, and what is stored
/// (the content itself, or a deflate stream of it).
struct Member {
    name: String,
    stored: Vec<u8>,
    deflated: bool,
    size: u32,
    crc: u32,
}

fn stored(name: &str, data: &[u8]) -> Member {
    Member {
        name: name.into(),
        stored: data.to_vec(),
        deflated: false,
        size: data.len() as u32,
        crc: crc32(data),
    }
}

/// A member whose content `data` is stored as deflate's stored blocks (inflated as any
/// deflated member is, at no compression cost here).
fn deflated(name: &str, data: &[u8]) -> Member {
    Member {
        name: name.into(),
        stored: deflate_stored(data),
        deflated: true,
        size: data.len() as u32,
        crc: crc32(data),
    }
}

/// A zip archive of `members`, in order (a name may repeat).
fn zip(members: &[Member]) -> Vec<u8> {
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for m in members {
        let method: u16 = if m.deflated { 8 } else { 0 };
        let offset = out.len() as u32;
        let mut head = Vec::new();
        head.extend(20u16.to_le_bytes());
        head.extend(0u16.to_le_bytes());
        head.extend(method.to_le_bytes());
        head.extend([0; 4]);
        head.extend(m.crc.to_le_bytes());
        head.extend((m.stored.len() as u32).to_le_bytes());
        head.extend(m.size.to_le_bytes());
        head.extend((m.name.len() as u16).to_le_bytes());
        out.extend(b"PK\x03\x04");
        out.extend(&head);
        out.extend([0, 0]);
        out.extend(m.name.as_bytes());
        out.extend(&m.stored);
        central.extend(b"PK\x01\x02\x14\x00");
        central.extend(&head);
        central.extend([0; 12]);
        central.extend(offset.to_le_bytes());
        central.extend(m.name.as_bytes());
    }
    let start = out.len() as u32;
    out.extend(&central);
    out.extend(b"PK\x05\x06\0\0\0\0");
    let n = members.len() as u16;
    out.extend(n.to_le_bytes());
    out.extend(n.to_le_bytes());
    out.extend((central.len() as u32).to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend([0, 0]);
    out
}

/// A deflate stream of stored blocks (no compression).
fn deflate_stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65535 * 5 + 5);
    let mut chunks = data.chunks(65535).peekable();
    if chunks.peek().is_none() {
        out.extend([1, 0, 0, 0xff, 0xff]);
    }
    while let Some(c) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        out.extend((c.len() as u16).to_le_bytes());
        out.extend((!(c.len() as u16)).to_le_bytes());
        out.extend(c);
    }
    out
}

/// Bits written least significant first, as deflate packs them.
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, v: u32, n: u32) {
        self.acc |= u64::from(v) << self.n;
        self.n += n;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }
    /// A Huffman code: its bits most significant first.
    fn code(&mut self, code: u32, n: u32) {
        self.put(code.reverse_bits() >> (32 - n), n);
    }
    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// A deflate stream (one block of the fixed codes) that inflates to `prefix`, `n` bytes
/// of `pattern` repeated (1 to 4 bytes), then `suffix`: literals, except for copies of
/// 258 bytes at the pattern's distance (13 bits each: deflate's largest ratio).
fn deflate_pattern(prefix: &[u8], pattern: &[u8], n: u64, suffix: &[u8]) -> Vec<u8> {
    assert!((1..=4).contains(&pattern.len()) && n >= pattern.len() as u64);
    let mut b = Bits::default();
    b.put(1, 1); // the last block
    b.put(1, 2); // fixed codes
    let literal = |b: &mut Bits, v: u8| {
        if v < 144 {
            b.code(0x30 + u32::from(v), 8)
        } else {
            b.code(0x190 + u32::from(v) - 144, 9)
        }
    };
    for &v in prefix.iter().chain(pattern) {
        literal(&mut b, v);
    }
    let mut made = pattern.len() as u64;
    while n - made >= 258 {
        b.code(0xc0 + 5, 8); // length code 285: 258 bytes
        b.code(pattern.len() as u32 - 1, 5); // distance codes 0 to 3: 1 to 4 bytes back
        made += 258;
    }
    while made < n {
        literal(&mut b, pattern[(made % pattern.len() as u64) as usize]);
        made += 1;
    }
    for &v in suffix {
        literal(&mut b, v);
    }
    b.code(0, 7); // end of block
    b.finish()
}

fn deflate_run(byte: u8, n: u64) -> Vec<u8> {
    deflate_pattern(&[], &[byte], n, &[])
}

/// A deflated member of `n` copies of `byte` that declares `size` bytes and a CRC-32 of
/// 0 (the tests that use it are refused before a CRC is checked).
fn deflated_run(name: &str, byte: u8, n: u64, size: u32) -> Member {
    Member {
        name: name.into(),
        stored: deflate_run(byte, n),
        deflated: true,
        size,
        crc: 0,
    }
}

// ---------------------------------------------------------------------------------------
// Pickles
// ---------------------------------------------------------------------------------------

fn text(s: &str) -> Vec<u8> {
    let mut v = vec![b'X'];
    v.extend((s.len() as u32).to_le_bytes());
    v.extend(s.as_bytes());
    v
}

/// An integer: BININT when it fits, else an 8-byte LONG1.
fn int(v: u64) -> Vec<u8> {
    if v < 1 << 31 {
        let mut p = vec![b'J'];
        p.extend((v as u32).to_le_bytes());
        p
    } else {
        let mut p = vec![0x8a, 8];
        p.extend(v.to_le_bytes());
        p
    }
}

fn tuple(v: &[u64]) -> Vec<u8> {
    let mut p = vec![b'('];
    for &x in v {
        p.extend(int(x));
    }
    p.push(b't');
    p
}

/// `_rebuild_tensor_v2` of storage `key` (a FloatStorage of `numel` floats) at `offset`,
/// `size`, `stride`.
fn tensor(key: &str, numel: u64, offset: u64, size: &[u64], stride: &[u64]) -> Vec<u8> {
    let mut p = b"ctorch._utils\n_rebuild_tensor_v2\n((".to_vec();
    p.extend(text("storage"));
    p.extend(b"ctorch\nFloatStorage\n");
    p.extend(text(key));
    p.extend(text("cpu"));
    p.extend(int(numel));
    p.extend(b"tQ");
    p.extend(int(offset));
    p.extend(tuple(size));
    p.extend(tuple(stride));
    p.extend(b"\x89ccollections\nOrderedDict\n)RtR");
    p
}

/// A protocol 2 pickle of a dict of (key, pickled value) items.
fn dict(items: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut p = b"\x80\x02}(".to_vec();
    for (k, v) in items {
        p.extend(text(k));
        p.extend(v);
    }
    p.extend(b"u.");
    p
}

fn f32s(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect()
}

/// A checkpoint of `pickle` and the storage `data/0`, stored or deflated.
fn checkpoint(pickle: &[u8], storage: &[u8], deflate_storage: bool) -> Vec<u8> {
    let s = if deflate_storage {
        deflated("archive/data/0", storage)
    } else {
        stored("archive/data/0", storage)
    };
    zip(&[
        stored("archive/data.pkl", pickle),
        stored("archive/byteorder", b"little"),
        s,
    ])
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Item 1: PyTorch views that leave their storage
// ---------------------------------------------------------------------------------------

/// A view's last element at 2^64 - 1 (offset 2^63 - 1, size [3], stride [2^62], over 16
/// elements) made its end wrap to 0, passed the storage check, and its bytes were read
/// from before the storage with ZT_OK. A size of [2^62 + 1] f32 at stride 0 stays in its
/// storage but its byte size wraps. Both are `Format` now, stored or deflated; views that
/// end exactly at the storage's end still read their bytes.
#[test]
fn views_that_leave_their_storage_are_format_errors() {
    let storage = f32s(16);
    for deflate in [false, true] {
        let open = |t: Vec<u8>| {
            Reader::from_slice(&checkpoint(&dict(&[("w", t)]), &storage, deflate)).map(|r| {
                let mut out = vec![0u8; r.objects()[0].components()[0].decoded_length() as usize];
                r.read_into(0, 0, &mut out).unwrap();
                floats(&out)
            })
        };
        let e = open(tensor("0", 16, (1 << 63) - 1, &[3], &[1 << 62])).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{e}");
        assert!(e.to_string().contains("reaches past any storage"), "{e}");
        let e = open(tensor("0", 16, 0, &[(1 << 62) + 1], &[0])).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{e}");
        assert!(e.to_string().contains("byte size overflows"), "{e}");
        let e = open(tensor("0", 16, 14, &[3], &[1])).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{e}");
        let e = open(tensor("0", 16, 1, &[2, 8], &[8, 1])).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{e}");
        // The last three elements; a transposed 2x3 block from element 10; a stride-0
        // broadcast of element 15.
        assert_eq!(
            open(tensor("0", 16, 13, &[3], &[1])).unwrap(),
            [13.0, 14.0, 15.0]
        );
        assert_eq!(
            open(tensor("0", 16, 10, &[2, 3], &[1, 2])).unwrap(),
            [10.0, 12.0, 14.0, 11.0, 13.0, 15.0]
        );
        assert_eq!(open(tensor("0", 16, 15, &[4], &[0])).unwrap(), [15.0; 4]);
    }
}

// ---------------------------------------------------------------------------------------
// Items 3 and 5: the pickle's memory, by bytes
// ---------------------------------------------------------------------------------------

/// Issue 35: a 256 KiB bytes value memoized once and referenced 2,000 times cost +1.5 GiB
/// to open (each reference copied). References share the value in the pickle; what the
/// walk makes of them (attribute values) is charged to the pickle's budget (16 times its
/// size plus 1 MiB): the open ends in `Limit` within that.
#[test]
fn a_bytes_value_referenced_2000_times_opens_in_small_memory() {
    let mut p = b"\x80\x03}(".to_vec();
    p.extend(text("blob"));
    p.extend(b"B\x00\x00\x04\x00");
    p.extend(vec![0x5a; 256 << 10]);
    p.extend(b"q\x01");
    for i in 0..2000 {
        p.extend(text(&format!("copy{i}")));
        p.extend(b"h\x01");
    }
    p.extend(b"u.");
    let file = zip(&[stored("archive/data.pkl", &p)]);
    let (kind, message, peak) = open_measured("256 KiB bytes referenced 2,000 times", &file);
    assert_eq!(kind, Some(ErrorKind::Limit), "{message}");
    assert!(
        message.contains("a value reached through several references"),
        "{message}"
    );
    let bound = 16 * p.len() as u64 + MIB + 2 * p.len() as u64 + 4 * MIB;
    assert!(peak < bound, "peak {peak} over {bound}");
    // Referenced 3 times, it opens: three attributes of the same 256 KiB.
    let mut p = b"\x80\x03}(".to_vec();
    p.extend(text("a"));
    p.extend(b"B\x00\x00\x04\x00");
    p.extend(vec![0x5a; 256 << 10]);
    p.extend(b"q\x01");
    for k in ["b", "c"] {
        p.extend(text(k));
        p.extend(b"h\x01");
    }
    p.extend(b"u.");
    let file = zip(&[stored("archive/data.pkl", &p)]);
    let r = Reader::from_slice(&file).unwrap();
    let attrs = r.attributes().unwrap();
    for k in ["a", "b", "c"] {
        match attrs.get(k) {
            Some(ztensor::cbor::Value::Bytes(b)) => assert_eq!(b.len(), 256 << 10),
            other => panic!("{k}: {other:?}"),
        }
    }
}

/// Shared values are walked as often as they are reached: a list of 10,000 zeros (one
/// integer value, made once) is 10,000 visits, within the walk's bound of 8 per byte of
/// the pickle, and becomes an attribute of 10,000 numbers.
#[test]
fn a_list_of_one_shared_integer_is_walked_in_full() {
    let mut p = b"\x80\x02}(".to_vec();
    p.extend(text("w"));
    p.extend(tensor("0", 2, 0, &[2], &[1]));
    p.extend(text("zeros"));
    p.extend(b"](");
    for _ in 0..10_000 {
        p.extend(b"K\x00");
    }
    p.extend(b"eu.");
    let file = checkpoint(&p, &f32s(2), false);
    let r = Reader::from_slice(&file).unwrap();
    let attrs = r.attributes().unwrap();
    match attrs.get("zeros") {
        Some(ztensor::cbor::Value::Array(a)) => {
            assert_eq!(a.len(), 10_000);
            assert!(a.iter().all(|v| *v == ztensor::cbor::Value::Unsigned(0)));
        }
        other => panic!("{other:?}"),
    }
}

/// Issue 35: a 256 KiB dict key above 1,000 tensors made 1,000 names of 256 KiB
/// (+253 MiB) before the name limit refused them. The path is refused at the first key
/// that makes it too long; a 60 KiB key (under the limit of 64 KiB) on 1,000 paths is
/// refused by the budget, not after 60 MB of names.
#[test]
fn a_long_dict_key_on_1000_paths_is_refused_in_small_memory() {
    for key_len in [256 << 10, 60 << 10] {
        let key = "k".repeat(key_len);
        let mut inner = b"}(".to_vec();
        for i in 0..1000 {
            inner.extend(text(&format!("t{i}")));
            if i == 0 {
                inner.extend(tensor("0", 2, 0, &[2], &[1]));
                inner.extend(b"q\x05");
            } else {
                inner.extend(b"h\x05");
            }
        }
        inner.push(b'u');
        let p = dict(&[(&key, inner)]);
        let file = checkpoint(&p, &f32s(2), false);
        let (kind, message, peak) =
            open_measured(&format!("a {key_len}-byte key on 1,000 paths"), &file);
        assert_eq!(kind, Some(ErrorKind::Limit), "{message}");
        assert!(peak < 8 * MIB + 20 * p.len() as u64, "peak {peak}");
    }
}

/// Issue 35: a 16 KiB deflated data.pkl of 16M one-byte opcodes peaked at +1.55 GiB
/// before `Limit`. The pickle's state is charged from the first opcode: 8M empty lists
/// appended to one (`]a`, 36 bytes of state a pair) stop at the budget of 16 x 16 MiB +
/// 1 MiB; 16M lists left on the stack stop at its depth limit sooner.
#[test]
fn sixteen_million_one_byte_opcodes_stop_at_the_budget() {
    let n: u64 = 16 << 20;
    for (pattern, what, message_has) in [
        (
            &b"]a"[..],
            "8M lists appended to one",
            "values take more than",
        ),
        (&b"]"[..], "16M lists on the stack", "stack grows past"),
    ] {
        // PROTO 2 and a list, the opcodes, STOP: about 100 KB of deflate.
        let run = n - 4;
        let stream = deflate_pattern(b"\x80\x02]", pattern, run, b".");
        let mut content = b"\x80\x02]".to_vec();
        content.extend(pattern.iter().copied().cycle().take(run as usize));
        content.push(b'.');
        let m = Member {
            name: "archive/data.pkl".into(),
            stored: stream,
            deflated: true,
            size: n as u32,
            crc: crc32(&content),
        };
        drop(content);
        let file = zip(&[m]);
        let (kind, message, peak) = open_measured(what, &file);
        assert_eq!(kind, Some(ErrorKind::Limit), "{message}");
        assert!(message.contains(message_has), "{message}");
        // The pickle itself (16 MiB) and its budget (257 MiB), with room for a growing
        // table's old copy.
        let bound = n + 16 * n + MIB + 64 * MIB;
        assert!(peak < bound, "peak {peak} over {bound}");
    }
}

// ---------------------------------------------------------------------------------------
// Item 4: what a member may inflate to
// ---------------------------------------------------------------------------------------

/// Issue 35: a 1 MiB member that inflates to a 1 GiB data.pkl aborted the process (a
/// `vec![0; size]` of the declared size, then the pickle copied). data.pkl may be at most
/// max_manifest_size / 16 (64 MiB): a larger declared size is `Limit` before anything
/// is inflated; a stream that makes more than it declares is `Format` one byte past it;
/// memory grows with what is inflated, never by the declared size at once.
#[test]
fn a_data_pkl_that_claims_or_makes_a_gib_is_refused_in_small_memory() {
    let gib: u64 = 1 << 30;
    // Declares 1 GiB (a stream of 6.5 MB, within deflate's 1032:1).
    let file = zip(&[deflated_run("archive/data.pkl", b'N', gib, gib as u32)]);
    let (kind, message, peak) = open_measured("data.pkl declaring 1 GiB", &file);
    assert_eq!(kind, Some(ErrorKind::Limit), "{message}");
    assert!(message.contains("over the 67108864 bytes"), "{message}");
    assert!(peak < 4 * MIB, "peak {peak}");
    // Declares 1 MiB, makes 1 GiB: refused once it makes one byte more, at 1 MiB.
    let file = zip(&[deflated_run("archive/data.pkl", b'N', gib, MIB as u32)]);
    let (kind, message, peak) = open_measured("data.pkl declaring 1 MiB, making 1 GiB", &file);
    assert_eq!(kind, Some(ErrorKind::Format), "{message}");
    assert!(message.contains("inflates to more than"), "{message}");
    assert!(peak < 4 * MIB, "peak {peak}");
}

// ---------------------------------------------------------------------------------------
// Item 6 and smaller points: ONNX
// ---------------------------------------------------------------------------------------

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn pb_int(field: u64, v: u64) -> Vec<u8> {
    let mut out = varint(field << 3);
    out.extend(varint(v));
    out
}

fn pb_bytes(field: u64, b: &[u8]) -> Vec<u8> {
    let mut out = varint(field << 3 | 2);
    out.extend(varint(b.len() as u64));
    out.extend(b);
    out
}

fn onnx(tensors: &[Vec<u8>], extra: &[u8]) -> Vec<u8> {
    let mut graph = pb_bytes(2, b"g");
    for t in tensors {
        graph.extend(pb_bytes(5, t));
    }
    let mut m = pb_int(1, 10);
    m.extend(pb_bytes(2, b"test"));
    m.extend(pb_bytes(7, &graph));
    m.extend(extra);
    m
}

fn initializer(name: &str, dims: &[u64], data_type: u64, rest: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    for &d in dims {
        t.extend(pb_int(1, d));
    }
    t.extend(pb_int(2, data_type));
    t.extend(pb_bytes(8, name.as_bytes()));
    t.extend(rest);
    t
}

/// Issue 35: a 39-byte model declaring INT8 [2^28] with one value in int32_data
/// committed +258 MiB on a 16-byte range read. The count a typed field can hold is
/// checked against the shape at open: exactly for float_data and double_data, at most a
/// value per byte for the varint fields. Typed fields that hold their values still read
/// right.
#[test]
fn onnx_typed_fields_are_counted_at_open() {
    let model = onnx(&[initializer("w", &[1 << 28], 3, &pb_int(5, 7))], &[]);
    let (kind, message, peak) = open_measured("INT8 [2^28] over one int32_data value", &model);
    assert_eq!(kind, Some(ErrorKind::Format), "{message}");
    assert!(message.contains("holds at most 1 values"), "{message}");
    assert!(peak < MIB, "peak {peak}");
    // float_data: 3 unpacked floats for 4 values, and 5 packed for 4.
    let three: Vec<u8> = [1f32, 2.0, 3.0]
        .iter()
        .flat_map(|v| {
            let mut f = varint(4 << 3 | 5);
            f.extend(v.to_le_bytes());
            f
        })
        .collect();
    let e = Reader::from_slice(&onnx(&[initializer("w", &[4], 1, &three)], &[])).unwrap_err();
    assert!(e.to_string().contains("field 4 holds 3 values"), "{e}");
    let five: Vec<u8> = (0..5).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let e = Reader::from_slice(&onnx(
        &[initializer("w", &[4], 1, &pb_bytes(4, &five))],
        &[],
    ))
    .unwrap_err();
    assert!(e.to_string().contains("field 4 holds 5 values"), "{e}");
    // Right counts read right: INT8 from int32_data, unpacked and packed; f32 unpacked.
    let mut i8s = pb_int(5, 0x7f);
    i8s.extend(pb_bytes(5, &[0x01, 0xff, 0xff, 0xff, 0xff, 0x0f]));
    let mut fs = three.clone();
    fs.extend(varint(4 << 3 | 5));
    fs.extend(4f32.to_le_bytes());
    let model = onnx(
        &[
            initializer("a", &[3], 3, &i8s),
            initializer("b", &[4], 1, &fs),
        ],
        &[],
    );
    let r = Reader::from_slice(&model).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), [0x7f, 0x01, 0xff]);
    assert_eq!(floats(&r.read_to_vec(1, 0).unwrap()), [1.0, 2.0, 3.0, 4.0]);
    let mut last = [0u8; 4];
    r.read_range(1, 0, 12, &mut last).unwrap();
    assert_eq!(f32::from_le_bytes(last), 4.0);
}

/// Issue 35: 65,537 external-data locations took 7 to 13 s to refuse (a linear search per
/// initializer). The locations are found in a hash map: 65,537 are refused at once, and
/// eight times the initializers take about eight times the time.
#[test]
fn onnx_external_locations_are_deduplicated_in_linear_time() {
    let model = |n: usize| {
        let tensors: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let mut rest = pb_bytes(
                    13,
                    &[
                        pb_bytes(1, b"location"),
                        pb_bytes(2, format!("w{i}.bin").as_bytes()),
                    ]
                    .concat(),
                );
                rest.extend(pb_int(14, 1));
                initializer(&format!("t{i}"), &[1], 1, &rest)
            })
            .collect();
        onnx(&tensors, &[])
    };
    let time = |n: usize| {
        let m = model(n);
        let start = std::time::Instant::now();
        let e = Reader::from_slice(&m).err();
        (start.elapsed().as_secs_f64(), e)
    };
    let (_, e) = time(65_537);
    let e = e.unwrap();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.to_string().contains("more than 65536 files"), "{e}");
    time(1_000); // warm up
    let (small, _) = time(8_000);
    let (large, _) = time(64_000);
    println!("external locations: 8,000 in {small:.3} s, 64,000 in {large:.3} s");
    assert!(
        large <= (24.0 * small).max(2.0),
        "8x the locations took {:.0}x the time: quadratic",
        large / small
    );
}

/// Issue 35: an `opset_import` over 1 MiB was refused with "offset 0 past its message's
/// end" (it was read cut at 1 MiB, then parsed). It is walked in the file: a domain over
/// 1 MiB is refused saying so, and a long message whose domain is short opens.
#[test]
fn an_opset_import_over_a_mib_is_read_or_refused_clearly() {
    let w: Vec<u8> = [1f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = initializer("w", &[2], 1, &pb_bytes(9, &w));
    let opset = [pb_bytes(1, &vec![b'x'; (1 << 20) + 1]), pb_int(2, 17)].concat();
    let e = Reader::from_slice(&onnx(std::slice::from_ref(&t), &pb_bytes(8, &opset))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(
        e.to_string()
            .contains("opset_import domain of 1048577 bytes"),
        "{e}"
    );
    let opset = [
        pb_bytes(1, b"ai.onnx.ml"),
        pb_bytes(99, &vec![0; 2 << 20]),
        pb_int(2, 3),
    ]
    .concat();
    let model = onnx(&[t], &pb_bytes(8, &opset));
    let r = Reader::from_slice(&model).unwrap();
    let json = ztensor::json::to_json(&r.attributes().unwrap());
    assert!(
        json.contains(r#""onnx.opset_import":{"ai.onnx.ml":3}"#),
        "{json}"
    );
}

// ---------------------------------------------------------------------------------------
// Smaller points: duplicate names, empty keys, range reads of deflated members
// ---------------------------------------------------------------------------------------

/// Issue 35: with two `data.pkl`, this reader took the first while Python's zipfile takes
/// the last, so a scanner and a loader could see different files. Archives that name a
/// member twice are refused, checkpoints and .npz alike.
#[test]
fn duplicate_member_names_are_refused() {
    let a = dict(&[("a", tensor("0", 2, 0, &[2], &[1]))]);
    let b = dict(&[("b", tensor("0", 2, 0, &[2], &[1]))]);
    let file = zip(&[
        stored("archive/data.pkl", &a),
        stored("archive/data/0", &f32s(2)),
        stored("archive/data.pkl", &b),
    ]);
    let e = Reader::from_slice(&file).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format, "{e}");
    assert!(
        e.to_string().contains("'archive/data.pkl' more than once"),
        "{e}"
    );
    let npy = npy_file(&f32s(4));
    let e = Reader::from_slice(&zip(&[stored("x.npy", &npy), stored("x.npy", &npy)])).unwrap_err();
    assert!(e.to_string().contains("'x.npy' more than once"), "{e}");
    assert!(Reader::from_slice(&zip(&[stored("x.npy", &npy), stored("y.npy", &npy)])).is_ok());
}

/// Issue 35: `{'': tensor}` made a tensor named "tensor", which a real key of that name
/// collides with. An empty key is refused, at any depth.
#[test]
fn an_empty_dict_key_is_refused() {
    for p in [
        dict(&[("", tensor("0", 2, 0, &[2], &[1]))]),
        dict(&[(
            "a",
            [
                b"}(".to_vec(),
                text(""),
                tensor("0", 2, 0, &[2], &[1]),
                b"u".to_vec(),
            ]
            .concat(),
        )]),
        dict(&[("", b"K\x01".to_vec())]),
    ] {
        let e = Reader::from_slice(&checkpoint(&p, &f32s(2), false)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{e}");
        assert!(e.to_string().contains("an empty dict key"), "{e}");
    }
}

/// An `.npy` file (version 1.0) of f32 values in one dimension.
fn npy_file(data: &[u8]) -> Vec<u8> {
    let mut h = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}",
        data.len() / 4
    );
    while (h.len() + 11) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((h.len() as u16).to_le_bytes());
    out.extend(h.as_bytes());
    out.extend(data);
    out
}

/// Issue 35: a range read of a deflated member kept two whole copies (64 MiB member:
/// +130 MiB): the member inflated, then the array sliced out of it. The inflate step
/// makes only the array (the header dropped as it is inflated): one copy.
#[test]
fn range_reads_of_a_deflated_member_hold_one_copy() {
    let values = 4 << 20; // 16 MiB of f32
    let data: Vec<u8> = (0..values as u32).flat_map(|i| i.to_le_bytes()).collect();
    let file = zip(&[deflated("x.npy", &npy_file(&data))]);
    drop(data);
    let r = Reader::from_slice(&file).unwrap();
    let mut got = [0u8; 16];
    let (res, peak) = peak_during(|| r.read_range(0, 0, 4000, &mut got));
    res.unwrap();
    let member = 16 * MIB;
    println!(
        "a 16-byte range read of a 16 MiB deflated member: peak {:.1} MiB",
        peak as f64 / MIB as f64
    );
    assert_eq!(got[..4], 1000u32.to_le_bytes());
    assert_eq!(got[12..], 1003u32.to_le_bytes());
    assert!(
        peak < member + member / 4,
        "peak {peak}: more than one copy"
    );
    // A damaged CRC is still found on the range path.
    let mut bad = zip(&[deflated("x.npy", &npy_file(&f32s(64)))]);
    let cd = bad.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
    bad[cd + 16] ^= 1;
    let r = Reader::from_slice(&bad).unwrap();
    let e = r.read_range(0, 0, 8, &mut [0u8; 4]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checksum, "{e}");
}
