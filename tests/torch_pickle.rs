//! PyTorch checkpoints made here byte by byte, for what torch itself doesn't write on this
//! machine: big-endian storages (`byteorder: big`), deflated entries (an archive zipped
//! again by another tool), protocol 4 pickles (STACK_GLOBAL, MEMOIZE, FRAME), and a
//! pickle's refusals naming the global. The committed checkpoints written by torch are
//! checked by tests/interop_numpy_onnx_torch.rs.

use ztensor::{ErrorKind, Reader};

/// A zip archive of (name, bytes, deflate) entries, with their CRC-32.
fn zip(entries: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for &(name, data, deflate) in entries {
        let stored = if deflate {
            miniz_oxide::deflate::compress_to_vec(data, 6)
        } else {
            data.to_vec()
        };
        let crc = crc32(data);
        let method: u16 = if deflate { 8 } else { 0 };
        let offset = out.len() as u32;
        let mut head = Vec::new();
        head.extend_from_slice(&20u16.to_le_bytes());
        head.extend_from_slice(&0u16.to_le_bytes());
        head.extend_from_slice(&method.to_le_bytes());
        head.extend_from_slice(&[0; 4]);
        head.extend_from_slice(&crc.to_le_bytes());
        head.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        head.extend_from_slice(&(data.len() as u32).to_le_bytes());
        head.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(b"PK\x03\x04");
        out.extend_from_slice(&head);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&stored);
        central.extend_from_slice(b"PK\x01\x02\x14\x00");
        central.extend_from_slice(&head);
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let start = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    let n = entries.len() as u16;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn text(s: &str) -> Vec<u8> {
    let mut v = vec![b'X'];
    v.extend_from_slice(&(s.len() as u32).to_le_bytes());
    v.extend_from_slice(s.as_bytes());
    v
}

/// `{name: _rebuild_tensor_v2(storage 0 of `class`, 0, (n,), (1,), False, OrderedDict())}`
/// at protocol 2.
fn state_dict(name: &str, class: &str, n: u8) -> Vec<u8> {
    let mut p = b"\x80\x02}(".to_vec();
    p.extend(text(name));
    p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
    p.extend(text("storage"));
    p.extend_from_slice(format!("ctorch\n{class}\n").as_bytes());
    p.extend(text("0"));
    p.extend(text("cpu"));
    p.extend_from_slice(&[
        b'K', n, b't', b'Q', b'K', 0, b'K', n, 0x85, b'K', 1, 0x85, 0x89,
    ]);
    p.extend_from_slice(b"ccollections\nOrderedDict\n)RtRu.");
    p
}

fn checkpoint(pickle: &[u8], storage: &[u8], byteorder: &[u8], deflate: bool) -> Vec<u8> {
    zip(&[
        ("archive/data.pkl", pickle, deflate),
        ("archive/byteorder", byteorder, false),
        ("archive/data/0", storage, deflate),
        ("archive/version", b"3\n", false),
    ])
}

fn f32s(v: &[f32], big: bool) -> Vec<u8> {
    v.iter()
        .flat_map(|x| {
            if big {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            }
        })
        .collect()
}

#[test]
fn big_endian_storages_are_swapped_on_read() {
    let want = [1.5f32, -2.0, 3.25];
    let file = checkpoint(
        &state_dict("w", "FloatStorage", 3),
        &f32s(&want, true),
        b"big",
        false,
    );
    let r = Reader::from_slice(&file).unwrap();
    assert_eq!(r.container().name(), "pytorch");
    let v = r.view(0, 0).unwrap();
    assert!(!v.zero_copy);
    assert_eq!(v.data, &f32s(&want, false)[..]);
    // The same file saying little: its bytes as they are, zero-copy.
    let file = checkpoint(
        &state_dict("w", "FloatStorage", 3),
        &f32s(&want, false),
        b"little",
        false,
    );
    let r = Reader::from_slice(&file).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), f32s(&want, false));
    // Anything else is refused.
    let file = checkpoint(
        &state_dict("w", "FloatStorage", 3),
        &f32s(&want, false),
        b"middle",
        false,
    );
    assert_eq!(
        Reader::from_slice(&file).unwrap_err().kind(),
        ErrorKind::Format
    );
}

#[test]
fn deflated_entries_are_inflated_and_their_crc_checked() {
    let want = [7.0f32, 8.0, 9.0];
    let file = checkpoint(
        &state_dict("w", "FloatStorage", 3),
        &f32s(&want, false),
        b"little",
        true,
    );
    let r = Reader::from_slice(&file).unwrap();
    let v = r.view(0, 0).unwrap();
    assert!(!v.zero_copy);
    assert_eq!(v.data, &f32s(&want, false)[..]);
    // A CRC that disagrees with the inflated storage is a checksum error on read.
    let mut bad = file.clone();
    let cd = (0..bad.len() - 60)
        .find(|&i| &bad[i..i + 4] == b"PK\x01\x02" && bad[i + 46..].starts_with(b"archive/data/0"))
        .unwrap();
    bad[cd + 16] ^= 1;
    let r = Reader::from_slice(&bad).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap_err().kind(), ErrorKind::Checksum);
}

#[test]
fn protocol_4_opcodes_and_typed_storages() {
    // STACK_GLOBAL of collections.OrderedDict, FRAME, MEMOIZE, SHORT_BINUNICODE.
    let mut p = b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
    p.extend_from_slice(b"\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94");
    p.extend_from_slice(b"\x8c\x01k\x94");
    p.extend_from_slice(b"\x8c\x05hello\x94s.");
    let file = checkpoint(&p, &[], b"little", false);
    let r = Reader::from_slice(&file).unwrap();
    assert_eq!(r.objects().len(), 0);
    let attrs = r.attributes().unwrap();
    assert_eq!(
        attrs.get("k").and_then(ztensor::cbor::Value::as_text),
        Some("hello")
    );
    let storage: Vec<u8> = [5i32, -6].iter().flat_map(|x| x.to_le_bytes()).collect();
    let file = checkpoint(
        &state_dict("ids", "IntStorage", 2),
        &storage,
        b"little",
        false,
    );
    let r = Reader::from_slice(&file).unwrap();
    let o = &r.objects()[0];
    assert_eq!((o.name(), o.shape()), ("ids", &[2u64][..]));
    assert_eq!(o.components()[0].dtype(), ztensor::DType::I32);
    assert_eq!(r.read_to_vec(0, 0).unwrap(), storage);
}

#[test]
fn refusals_name_the_global_and_run_nothing() {
    let marker = std::env::temp_dir().join(format!("zt_pickle_ran_{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    for (module, name) in [
        ("os", "system"),
        ("posix", "system"),
        ("builtins", "exec"),
        ("subprocess", "Popen"),
    ] {
        let mut p = format!("\x00\x00c{module}\n{name}\n(").into_bytes();
        p[0] = 0x80;
        p[1] = 2;
        p.extend(text(&format!("touch {}", marker.display())));
        p.extend_from_slice(b"tR.");
        let e = Reader::from_slice(&checkpoint(&p, &[], b"little", false)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.message().contains(&format!("{module}.{name}")), "{e}");
    }
    assert!(!marker.exists(), "a pickle ran a command");
    // A storage class of quantized tensors is no allowed global either.
    let e = Reader::from_slice(&checkpoint(
        &state_dict("q", "QInt8Storage", 2),
        &[0; 2],
        b"little",
        false,
    ))
    .unwrap_err();
    assert!(e.message().contains("torch.QInt8Storage"), "{e}");
}

#[test]
fn an_entry_merely_ending_in_data_pkl_is_no_checkpoint() {
    // Found by fuzzing: "xdata.pkl" was taken for the pickle of directory "x", whose
    // "x/data.pkl" then wasn't there (a panic).
    let file = zip(&[("xdata.pkl", b"\x80\x02}.", false)]);
    let e = Reader::from_slice(&file).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    // At the top of the archive, data.pkl is a checkpoint's.
    let file = zip(&[("data.pkl", b"\x80\x02}.", false)]);
    let r = Reader::from_slice(&file).unwrap();
    assert_eq!((r.container().name(), r.objects().len()), ("pytorch", 0));
}
