//! What the fuzz targets share: opening bytes with a lowered decode limit and walking
//! what opens (every read path, checked against each other). Each target differs only in
//! how it turns the fuzzer's bytes into a file, so that the fuzzer spends its time inside
//! one parser instead of rediscovering its magic and framing.
//!
//! Errors are fine; a panic, an abort, a hang, an out-of-bounds access (under ASan) or a
//! broken invariant is a finding:
//! - no call returns ErrorKind::Internal (a caught bug);
//! - range reads, read and view return the same bytes, views are 64-byte aligned
//!   (zero-copy views into files of other formats: aligned to their element size);
//! - a component with a digest never verifies as NotFound, one without never verifies
//!   (NotFound, or the failure of a zTensor v2 value check: bool bytes, the fp4 nibble).
//!
//! The decode limit is lowered to 64 MiB so that a claimed size can't make the harness
//! itself allocate gigabytes: the fuzzer looks for faults, not for the allocation of
//! plausible-but-huge claims (tests/hostile_corpus.rs covers those separately).

use ztensor::{Container, DType, ErrorKind, Limits, OpenOptions, Reader};

/// The decode limit the targets open with.
pub const MAX_DECODED: u64 = 64 << 20;

/// Fails the run when `r` is an internal error.
pub fn ok_or_expected<T>(r: &ztensor::Result<T>, call: &str) {
    if let Err(e) = r {
        assert!(
            e.kind() != ErrorKind::Internal,
            "{call} returned an internal error: {e}"
        );
    }
}

/// Opens `data` as a file (any format) with the lowered decode limit and walks it.
pub fn open_and_walk(data: &[u8]) {
    let options = OpenOptions {
        limits: Limits {
            max_decoded_size: MAX_DECODED,
            ..Limits::default()
        },
        ..OpenOptions::default()
    };
    match Reader::from_slice_with(data, &options) {
        Ok(r) => walk(&r),
        Err(e) => assert!(
            e.kind() != ErrorKind::Internal,
            "open returned an internal error: {e}"
        ),
    }
}

/// Every access of every component of an open file, results checked against each other.
pub fn walk(r: &Reader<'_>) {
    for i in 0..r.objects().len() {
        let obj = r.object(i).expect("object index in range");
        for (c, comp) in obj.components().iter().enumerate() {
            let dl = comp.decoded_length();
            assert!(
                dl <= MAX_DECODED,
                "decoded_length {dl} passed the open with a {MAX_DECODED} limit"
            );
            let (mut first, mut last) = ([0u8], [0u8]);
            let (mut r0, mut r1) = (Ok(()), Ok(()));
            if dl > 0 {
                r0 = r.read_range(i, c, 0, &mut first);
                ok_or_expected(&r0, "read_range");
                r1 = r.read_range(i, c, dl - 1, &mut last);
                ok_or_expected(&r1, "read_range");
            }
            let mut buf = vec![0u8; dl as usize];
            let rd = r.read_into(i, c, &mut buf);
            ok_or_expected(&rd, "read_into");
            if rd.is_ok() && dl > 0 {
                assert!(
                    r0.is_err() || first[0] == buf[0],
                    "first byte differs between read_range and read"
                );
                assert!(
                    r1.is_err() || last[0] == buf[buf.len() - 1],
                    "last byte differs between read_range and read"
                );
            }
            let view = r.view(i, c);
            ok_or_expected(&view, "view");
            if let Ok(v) = &view {
                assert_eq!(v.data.len() as u64, dl, "view size");
                // Zero-copy views into other formats' files are only element-aligned.
                let align = if v.zero_copy && r.container() != Container::ZTensor {
                    comp.dtype().size()
                } else {
                    64
                };
                assert!(
                    v.data.is_empty() || (v.data.as_ptr() as usize).is_multiple_of(align),
                    "view alignment"
                );
                if rd.is_ok() {
                    assert!(v.data == &buf[..], "view and read differ");
                }
            }
            match r.verify_component(i, c) {
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    assert!(comp.digest().is_none(), "a digest verified as NotFound")
                }
                other => {
                    ok_or_expected(&other, "verify_component");
                    // Without a digest, only a failing value check (zTensor v2 verifies
                    // bool and packed fp4 values) comes before the NotFound.
                    assert!(
                        comp.digest().is_some() || other.is_err(),
                        "no digest, yet verified"
                    );
                }
            }
            let elements = comp.element_count();
            if elements <= MAX_DECODED / 8 {
                let mut wide = vec![0u8; elements as usize * 8];
                let to = if comp.dtype().is_float() {
                    DType::F64
                } else {
                    DType::I64
                };
                ok_or_expected(&r.read_as(i, c, to, &mut wide), "read_as");
            }
        }
        ok_or_expected(&r.validate_values(i), "validate_values");
        if let Some(a) = obj.attributes() {
            let json = ztensor::json::to_json(&a);
            assert!(json.starts_with('{'), "object attributes JSON");
        }
        if let Some(a) = obj.raw_attributes() {
            ok_or_expected(&a.to_json(), "object attributes to_json");
        }
    }
    if let Some(a) = r.attributes() {
        assert!(
            ztensor::json::to_json(&a).starts_with('{'),
            "file attributes JSON"
        );
    }
    if let Some(a) = r.raw_attributes() {
        ok_or_expected(&a.to_json(), "file attributes to_json");
    }
    ok_or_expected(&r.verify(), "verify");
}

/// `magic` followed by `data`: for targets whose format starts with a fixed magic.
pub fn after_magic(magic: &[u8], data: &[u8]) -> Vec<u8> {
    let mut file = Vec::with_capacity(magic.len() + data.len());
    file.extend_from_slice(magic);
    file.extend_from_slice(data);
    file
}

/// A PyTorch checkpoint (a stored zip archive, as `torch.save` writes it) around a
/// pickle: `archive/data.pkl` is `pickle`, with four storages `archive/data/0` to `3` of
/// 64 bytes each and a `byteorder` record, so that tensors the pickle names can open.
pub fn checkpoint(pickle: &[u8]) -> Vec<u8> {
    let storage: Vec<u8> = (0..64u8).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("archive/data.pkl", pickle)];
    entries.push(("archive/byteorder", b"little"));
    for name in ["archive/data/0", "archive/data/1", "archive/data/2", "archive/data/3"] {
        entries.push((name, &storage));
    }
    stored_zip(&entries)
}

/// A zip archive of stored entries (CRCs left 0: the reader checks only inflated ones).
pub fn stored_zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for (name, data) in entries {
        let offset = out.len() as u32;
        let fixed = |sig: &[u8], v: &mut Vec<u8>| {
            v.extend_from_slice(sig);
            v.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            v.extend_from_slice(&(data.len() as u32).to_le_bytes());
            v.extend_from_slice(&(data.len() as u32).to_le_bytes());
            v.extend_from_slice(&(name.len() as u16).to_le_bytes());
        };
        fixed(b"PK\x03\x04", &mut out);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        central.extend_from_slice(b"PK\x01\x02\x14\x00");
        let mut rec = Vec::new();
        fixed(b"", &mut rec);
        central.extend_from_slice(&rec[..rec.len()]);
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

/// A `.npy` file (version 1.0) of a header dict text and the array's bytes.
pub fn npy(header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len().min(u16::MAX as usize) as u16).to_le_bytes());
    out.extend_from_slice(&header[..header.len().min(u16::MAX as usize)]);
    out.extend_from_slice(data);
    out
}
