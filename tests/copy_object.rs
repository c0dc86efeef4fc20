//! `Writer::copy_object`: objects of every format copied into a new zTensor file, stored
//! bytes copied as they are where they can be, exact values everywhere.

use std::path::{Path, PathBuf};

use ztensor::{
    CopyOptions, DType, DigestAlgorithm, Encoding, ErrorKind, Reader, WriteOptions, Writer,
};

fn vectors(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(dir)
}

/// Copies every object of `reader` with `options` and reopens the result.
fn copy_all(reader: &Reader<'_>, options: &CopyOptions) -> Vec<u8> {
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    for i in 0..reader.objects().len() {
        w.copy_object(reader, i, options).unwrap();
    }
    w.finish().unwrap()
}

/// Every object and component of `b` equals `a`'s: names, formats, shapes, attributes,
/// dtypes, logical types and decoded bytes.
fn same_content(a: &Reader<'_>, b: &Reader<'_>) {
    assert_eq!(a.objects().len(), b.objects().len());
    for (i, (oa, ob)) in a.objects().iter().zip(b.objects()).enumerate() {
        assert_eq!(
            (oa.name(), oa.format(), oa.shape()),
            (ob.name(), ob.format(), ob.shape())
        );
        assert_eq!(oa.attributes(), ob.attributes());
        for (ci, (ca, cb)) in oa.components().iter().zip(ob.components()).enumerate() {
            assert_eq!(ca.role(), cb.role());
            assert_eq!(ca.logical_type(), cb.logical_type());
            let (va, vb) = (a.read_to_vec(i, ci).unwrap(), b.read_to_vec(i, ci).unwrap());
            if ca.dtype() == DType::U32 && cb.dtype() == DType::U64 {
                let wide: Vec<u8> = va
                    .chunks_exact(4)
                    .flat_map(|x| {
                        u64::from(u32::from_le_bytes(x.try_into().unwrap())).to_le_bytes()
                    })
                    .collect();
                assert_eq!(wide, vb, "{} {}", oa.name(), ca.role());
            } else {
                assert_eq!(ca.dtype(), cb.dtype());
                assert_eq!(va, vb, "{} {}", oa.name(), ca.role());
            }
        }
    }
}

fn stored(r: &Reader<'_>, o: usize, c: usize) -> Vec<u8> {
    let mut v = vec![0u8; r.objects()[o].components()[c].length() as usize];
    r.read_stored(o, c, 0, &mut v).unwrap();
    v
}

#[test]
fn zstd_and_raw_are_copied_as_stored_with_their_digests() {
    let data: Vec<u8> = (0..3 * (4 << 20) + 5)
        .map(|i| (i * 7 % 253) as u8)
        .collect();
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    let n = [data.len() as u64];
    let z = WriteOptions::zstd(5).with_digest(DigestAlgorithm::Sha256);
    w.add("z", DType::U8, &n, &data, &z).unwrap();
    let raw = WriteOptions::default().with_digest(DigestAlgorithm::Crc32c);
    w.add("r", DType::U8, &n, &data, &raw).unwrap();
    let src = w.finish().unwrap();
    let a = Reader::from_slice(&src).unwrap();
    let out = copy_all(&a, &CopyOptions::default());
    let b = Reader::from_slice(&out).unwrap();
    same_content(&a, &b);
    for o in 0..2 {
        let (ca, cb) = (
            &a.objects()[o].components()[0],
            &b.objects()[o].components()[0],
        );
        assert_eq!(ca.encoding(), cb.encoding());
        assert_eq!(ca.digest(), cb.digest());
        assert_eq!(
            stored(&a, o, 0),
            stored(&b, o, 0),
            "stored bytes copied as they are"
        );
    }
    b.verify().unwrap();

    // Asked to: re-encoded raw, a digest of another algorithm.
    let opts = CopyOptions {
        encoding: Some(Encoding::Raw),
        digest: Some(DigestAlgorithm::Crc32c),
        ..Default::default()
    };
    let out = copy_all(&a, &opts);
    let b = Reader::from_slice(&out).unwrap();
    same_content(&a, &b);
    let c = &b.objects()[0].components()[0];
    assert_eq!(c.encoding(), Encoding::Raw);
    assert!(c.digest().unwrap().starts_with("crc32c:0x"));
    b.verify().unwrap();
}

#[test]
fn a_stored_copy_checks_the_digest_it_keeps() {
    let data = vec![9u8; 1000];
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    let opts = WriteOptions::default().with_digest(DigestAlgorithm::Sha256);
    w.add("x", DType::U8, &[1000], &data, &opts).unwrap();
    w.add("y", DType::U8, &[1000], &data, &WriteOptions::default())
        .unwrap();
    let mut src = w.finish().unwrap();
    let at = Reader::from_slice(&src).unwrap().objects()[0].components()[0].offset();
    src[at as usize + 10] ^= 1;
    let a = Reader::from_slice(&src).unwrap();
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    let e = w.copy_object(&a, 0, &CopyOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checksum);
    assert_eq!(
        e.message(),
        format!(
            "object 'x' component 'data': the stored bytes do not match their digest {}",
            a.objects()[0].components()[0].digest().unwrap()
        )
    );
    // The refused object is gone; the writer goes on.
    w.copy_object(&a, 1, &CopyOptions::default()).unwrap();
    let b = w.finish().unwrap();
    let b = Reader::from_slice(&b).unwrap();
    assert_eq!(b.objects().len(), 1);
    assert_eq!(b.objects()[0].name(), "y");
    // Without keeping the digest there is nothing to compare with.
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    let none = CopyOptions {
        digest: Some(DigestAlgorithm::None),
        ..Default::default()
    };
    w.copy_object(&a, 0, &none).unwrap();
}

#[test]
fn every_reference_vector_copies_exactly() {
    for entry in std::fs::read_dir(vectors("reference")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "zt") {
            continue;
        }
        let a = Reader::open(&path).unwrap();
        let out = copy_all(&a, &CopyOptions::default());
        let b = Reader::from_slice(&out).unwrap();
        same_content(&a, &b);
        for (i, o) in b.objects().iter().enumerate() {
            b.validate_values(i).unwrap();
            let kind = ztensor::ObjectKind::of(o.format());
            for c in o.components() {
                if kind.is_index(c.role()) {
                    assert_eq!(c.dtype(), DType::U64, "{}: indices widened", path.display());
                }
                assert!(
                    c.digest().is_none_or(|d| !d.starts_with("xxh3")),
                    "{}",
                    path.display()
                );
            }
        }
        b.verify().unwrap();
    }
}

#[test]
fn other_formats_copy_with_their_pipelines_decoded() {
    for dir in ["safetensors", "gguf", "tensogram"] {
        for entry in std::fs::read_dir(vectors(dir)).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !matches!(ext, "safetensors" | "gguf" | "tgm") {
                continue;
            }
            let Ok(a) = Reader::open(&path) else { continue };
            let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
            let mut copied = 0;
            for i in 0..a.objects().len() {
                match w.copy_object(&a, i, &CopyOptions::default()) {
                    Ok(()) => copied += 1,
                    // A codec this build lacks: refused, and the object left out.
                    Err(e) => assert_eq!(e.kind(), ErrorKind::Unsupported, "{}", path.display()),
                }
            }
            let out = w.finish().unwrap();
            let b = Reader::from_slice(&out).unwrap();
            assert_eq!(b.objects().len(), copied);
            for (i, ob) in b.objects().iter().enumerate() {
                let ia = a.find(ob.name()).unwrap();
                let oa = &a.objects()[ia];
                assert_eq!(oa.shape(), ob.shape());
                for (ci, cb) in ob.components().iter().enumerate() {
                    let ca = &oa.components()[ci];
                    let want = if ca.encoding() == Encoding::Pipeline {
                        Encoding::Zstd
                    } else {
                        ca.encoding()
                    };
                    assert_eq!(cb.encoding(), want, "{}", path.display());
                    assert_eq!(
                        a.read_to_vec(ia, ci).unwrap(),
                        b.read_to_vec(i, ci).unwrap(),
                        "{} {}",
                        path.display(),
                        ob.name()
                    );
                }
            }
        }
    }
}

#[test]
fn copies_can_be_renamed_and_names_stay_unique() {
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    w.add(
        "w",
        DType::F32,
        &[2],
        &[0, 0, 128, 63, 0, 0, 0, 64],
        &WriteOptions::default(),
    )
    .unwrap();
    let src = w.finish().unwrap();
    let a = Reader::from_slice(&src).unwrap();
    let mut w = Writer::new_with(Vec::new(), &v12()).unwrap();
    w.copy_object(&a, 0, &CopyOptions::default()).unwrap();
    let e = w.copy_object(&a, 0, &CopyOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(e.message(), "an object named 'w' was already added");
    w.copy_object_as(&a, 0, "layer1.w", &CopyOptions::default())
        .unwrap();
    assert_eq!(
        w.copy_object(&a, 1, &CopyOptions::default())
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    let pipeline = CopyOptions {
        encoding: Some(Encoding::Pipeline),
        ..Default::default()
    };
    assert_eq!(
        w.copy_object_as(&a, 0, "p", &pipeline).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let out = w.finish().unwrap();
    let b = Reader::from_slice(&out).unwrap();
    let names: Vec<&str> = b.objects().iter().map(|o| o.name()).collect();
    assert_eq!(names, ["w", "layer1.w"]);
    assert_eq!(b.read_to_vec(1, 0).unwrap(), a.read_to_vec(0, 0).unwrap());
}

/// zTensor v1.2.0 (the default is v2): these tests' files list their objects in the order
/// written, as v1.2 keeps them (v2 lists them by name).
fn v12() -> ztensor::CreateOptions {
    ztensor::CreateOptions {
        version: ztensor::FileVersion::V1_2,
        ..ztensor::CreateOptions::default()
    }
}
