//! Block-quantized objects through the reader: what `quant_info` and `layout` say,
//! `read_as` and `read_as_range` of hand-made blocks with exact values, every refusal with
//! its exact kind and message, GGUF files with ggml type 42 and with unknown type ids
//! (they open; only those tensors fail), the rule that block bytes are never converted as
//! numbers (also after a copy into a zTensor file), and converted range reads of plain
//! dtypes. Bit-exactness against gguf-py is tests/interop_dequant.rs.

mod common;

use common::gguf::Gguf;
use common::{f32s, temp_dir};
use ztensor::ErrorKind::{self, Format, InvalidArgument, NotFound, Unsupported};
use ztensor::{CopyOptions, DType, Encoding, OpenOptions, Reader, WriteOptions, Writer};

/// A Q4_0 block: d, then 16 bytes of nibbles (low nibbles are values 0..16).
fn q4_0_block(d: f32, nibbles: impl Fn(usize) -> u8) -> Vec<u8> {
    let mut b = half::f16::from_f32(d).to_le_bytes().to_vec();
    b.extend((0..16).map(|j| nibbles(j) | nibbles(j + 16) << 4));
    b
}

/// Adds an object of one u8 "data" component of logical type `logical` to a zTensor file.
fn add_bytes(
    w: &mut Writer<Vec<u8>>,
    name: &str,
    format: &str,
    shape: &[u64],
    logical: Option<&str>,
    bytes: &[u8],
) {
    w.begin_object(name, format, shape).unwrap();
    w.add_component("data", DType::U8, logical, bytes, &WriteOptions::default())
        .unwrap();
    w.end_object().unwrap();
}

fn values(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The call failed with `kind` and `message` (after the file's path, when opened by path).
fn refused(result: ztensor::Result<()>, kind: ErrorKind, message: &str) {
    let e = result.expect_err(message);
    assert_eq!(e.kind(), kind, "{e}");
    let prefix = e
        .message()
        .strip_suffix(message)
        .unwrap_or_else(|| panic!("{e}"));
    assert!(prefix.is_empty() || prefix.ends_with(".gguf: "), "{e}");
}

/// Each file opened from memory, by mmap and by pread: every way must agree.
fn opens(bytes: &[u8], check: impl Fn(&Reader<'_>)) {
    check(&Reader::from_slice(bytes).unwrap());
    let path = temp_dir("dequant_opens").join("file.gguf");
    std::fs::write(&path, bytes).unwrap();
    check(&Reader::open(&path).unwrap());
    let no_mmap = OpenOptions {
        use_mmap: false,
        ..OpenOptions::default()
    };
    check(&Reader::open_with(&path, &no_mmap).unwrap());
}

/// Three rows of two Q4_0 blocks (ne = [64, 3]): row r, block k has d = r + 1 and
/// value j of the block is (j % 16 - 8) x d, negated in block 1.
fn q4_0_rows() -> (Vec<u8>, Vec<f32>) {
    let mut bytes = Vec::new();
    let mut want = Vec::new();
    for r in 0..3 {
        for k in 0..2 {
            let d = if k == 0 {
                r as f32 + 1.0
            } else {
                -(r as f32 + 1.0)
            };
            bytes.extend(q4_0_block(d, |j| (j % 16) as u8));
            want.extend((0..32).map(|j| ((j % 16) as f32 - 8.0) * d));
        }
    }
    (bytes, want)
}

#[test]
fn quantized_objects_explain_themselves() {
    let (q4, _) = q4_0_rows();
    let g = Gguf::new()
        .alignment(64)
        .tensor("dense", &[2, 2], 0, &f32s(&[1.0, 2.0, 3.0, 4.0]))
        .tensor("q4", &[64, 3], 2, &q4)
        .tensor("q4k", &[512, 2, 2], 12, &common::bytes(3, 4 * 2 * 144))
        .tensor("q2_0", &[64], 42, &common::bytes(4, 18))
        .tensor("q8_1", &[32], 9, &common::bytes(5, 36));
    let file = g.build();
    opens(&file, |r| {
        let q = r.quant_info(1).unwrap();
        assert_eq!(
            (
                q.block_type.id(),
                q.block_type.name(),
                q.block_type.logical_type()
            ),
            (2, "Q4_0", "ggml_q4_0")
        );
        assert_eq!(
            (q.block_type.block_size(), q.block_type.type_size()),
            (32, 18)
        );
        assert_eq!((q.component, q.rows, q.row_size), (0, 3, 36));
        assert!(q.block_type.can_dequantize());
        let q = r.quant_info(2).unwrap();
        assert_eq!((q.block_type.name(), q.rows, q.row_size), ("Q4_K", 4, 288));
        let q = r.quant_info(3).unwrap();
        assert_eq!(
            (q.block_type.id(), q.block_type.name(), q.rows, q.row_size),
            (42, "Q2_0", 1, 18)
        );
        let q = r.quant_info(4).unwrap();
        assert_eq!((q.block_type.name(), q.row_size), ("Q8_1", 36));
        assert!(!q.block_type.can_dequantize());
        let e = r.quant_info(0).unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (
                NotFound,
                "object 'dense' (dense) is not block-quantized: none of its components holds \
                 ggml blocks"
            )
        );
        assert_eq!(r.quant_info(5).unwrap_err().kind(), NotFound);
        // The component says what its bytes are.
        let c = &r.objects()[1].components()[0];
        assert_eq!(
            (c.dtype(), c.logical_type()),
            (DType::U8, Some("ggml_q4_0"))
        );
        // GGUF's data section: after the header, aligned to general.alignment.
        let l = r.layout();
        assert_eq!(l.alignment, 64);
        assert_eq!(l.data_offset % 64, 0);
        assert_eq!(c.offset() - l.data_offset, 64, "q4 is the second tensor");
        assert_eq!(r.objects()[0].components()[0].offset(), l.data_offset);
    });
}

#[test]
fn layout_of_every_format() {
    let g = Gguf::new().tensor("w", &[2], 0, &f32s(&[1.0, 2.0])).build();
    let r = Reader::from_slice(&g).unwrap();
    assert_eq!(r.layout().alignment, 32);
    assert_eq!(r.layout().data_offset, g.len() as u64 - 32);
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add(
        "w",
        DType::F32,
        &[2],
        &f32s(&[1.0, 2.0]),
        &WriteOptions::default(),
    )
    .unwrap();
    let zt = w.finish().unwrap();
    let l = Reader::from_slice(&zt).unwrap().layout();
    assert_eq!((l.data_offset, l.alignment), (0, 64));
    let header = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    let mut st = (header.len() as u64).to_le_bytes().to_vec();
    st.extend(header);
    st.extend(f32s(&[1.0, 2.0]));
    let l = Reader::from_slice(&st).unwrap().layout();
    assert_eq!((l.data_offset, l.alignment), (8 + header.len() as u64, 1));
}

#[test]
fn read_as_dequantizes_exactly() {
    let (q4, want) = q4_0_rows();
    let file = Gguf::new().tensor("q4", &[64, 3], 2, &q4).build();
    opens(&file, |r| {
        let mut out = vec![0u8; 192 * 4];
        r.read_as(0, 0, DType::F32, &mut out).unwrap();
        assert_eq!(values(&out), want);
        assert_eq!(values(&out)[..3], [-8.0, -7.0, -6.0]);
        assert_eq!(values(&out)[191], 7.0 * -3.0);
        let mut half = vec![0u8; 192 * 2];
        r.read_as(0, 0, DType::F16, &mut half).unwrap();
        let got: Vec<f32> = half
            .chunks(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect();
        assert_eq!(got, want);
        r.read_as(0, 0, DType::BF16, &mut half).unwrap();
        let got: Vec<f32> = half
            .chunks(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect();
        assert_eq!(got, want);
        // Its own bytes, as a plain read.
        let mut raw = vec![0u8; q4.len()];
        r.read_as(0, 0, DType::U8, &mut raw).unwrap();
        assert_eq!(raw, q4);
    });
}

#[test]
fn block_bytes_are_never_converted_as_numbers() {
    let (q4, _) = q4_0_rows();
    let file = Gguf::new().tensor("q4", &[64, 3], 2, &q4).build();
    let r = Reader::from_slice(&file).unwrap();
    for to in [DType::I16, DType::U16, DType::F64, DType::I64, DType::U64] {
        let mut out = vec![0xabu8; 192 * to.size()];
        refused(
            r.read_as(0, 0, to, &mut out),
            Unsupported,
            &format!(
                "object 'q4' component 'data': Q4_0 blocks are read as their u8 bytes or \
                 dequantized to f32, f16 or bf16, not converted to {to}"
            ),
        );
        assert!(
            out.iter().all(|&b| b == 0xab),
            "a refused call writes nothing"
        );
    }
    // Sizes: the element count of the object, not the bytes.
    let mut small = vec![0u8; 191 * 4];
    refused(
        r.read_as(0, 0, DType::F32, &mut small),
        ErrorKind::BufferTooSmall,
        "object 'q4' component 'data': buffer of 764 bytes is smaller than the 768 bytes to read",
    );
    let mut too_big = vec![0u8; 193 * 4];
    refused(
        r.read_as(0, 0, DType::F32, &mut too_big),
        InvalidArgument,
        "object 'q4' component 'data': buffer of 772 bytes is larger than the 768 bytes to \
         read; sizes must match",
    );

    // The rule travels with the logical type: a zTensor copy dequantizes, and a u8
    // component written with a ggml type refuses element conversion too.
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.copy_object(&r, 0, &CopyOptions::default()).unwrap();
    add_bytes(
        &mut w,
        "mine",
        "quantized_group",
        &[32],
        Some("ggml_q4_0"),
        &q4[..18],
    );
    add_bytes(&mut w, "plain", "dense", &[18], None, &q4[..18]);
    let zt = w.finish().unwrap();
    let z = Reader::from_slice(&zt).unwrap();
    let mut a = vec![0u8; 192 * 4];
    let mut b = vec![0u8; 192 * 4];
    r.read_as(0, 0, DType::F32, &mut a).unwrap();
    z.read_as(0, 0, DType::F32, &mut b).unwrap();
    assert_eq!(a, b);
    assert_eq!(z.quant_info(0).unwrap().block_type.name(), "Q4_0");
    let mut one = vec![0u8; 32 * 4];
    z.read_as(1, 0, DType::F32, &mut one).unwrap();
    assert_eq!(values(&one), values(&a[..128]));
    refused(
        z.read_as(1, 0, DType::I32, &mut one),
        Unsupported,
        "object 'mine' component 'data': Q4_0 blocks are read as their u8 bytes or \
         dequantized to f32, f16 or bf16, not converted to i32",
    );
    // Plain u8 bytes still widen.
    let mut wide = vec![0u8; 18 * 4];
    z.read_as(2, 0, DType::F32, &mut wide).unwrap();
    assert_eq!(values(&wide)[2], f32::from(q4[2]));
}

#[test]
fn block_objects_inconsistent_with_their_shape_are_refused_on_access() {
    // A zTensor object whose shape is not whole blocks per row: refused by quant_info and
    // dequantization, readable as bytes.
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    add_bytes(
        &mut w,
        "odd",
        "quantized_group",
        &[2, 16],
        Some("ggml_q4_0"),
        &[0; 18],
    );
    add_bytes(
        &mut w,
        "short",
        "quantized_group",
        &[2, 32],
        Some("ggml_q4_0"),
        &[0; 18],
    );
    let zt = w.finish().unwrap();
    let r = Reader::from_slice(&zt).unwrap();
    let e = r.quant_info(0).unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (
            Format,
            "object 'odd' component 'data': a row of 16 values is not whole Q4_0 blocks of 32"
        )
    );
    refused(
        r.read_as(0, 0, DType::F32, &mut [0u8; 128]),
        Format,
        "object 'odd' component 'data': a row of 16 values is not whole Q4_0 blocks of 32",
    );
    refused(
        r.read_as(1, 0, DType::F32, &mut [0u8; 256]),
        Format,
        "object 'short' component 'data': 18 bytes of Q4_0 blocks do not make shape [2, 32] \
         (2 rows of 18 bytes)",
    );
    let mut raw = [1u8; 18];
    r.read_as(0, 0, DType::U8, &mut raw).unwrap();
    assert_eq!(raw, [0; 18]);
}

#[test]
fn range_reads_of_whole_blocks() {
    let (q4, want) = q4_0_rows();
    // Stored raw in GGUF, and zstd in a zTensor copy (range reads decode only what they need).
    let file = Gguf::new().tensor("q4", &[64, 3], 2, &q4).build();
    let g = Reader::from_slice(&file).unwrap();
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let zstd = CopyOptions {
        encoding: Some(Encoding::Zstd),
        ..CopyOptions::default()
    };
    w.copy_object(&g, 0, &zstd).unwrap();
    let zt = w.finish().unwrap();
    let z = Reader::from_slice(&zt).unwrap();
    assert_eq!(z.objects()[0].components()[0].encoding(), Encoding::Zstd);
    for r in [&g, &z] {
        // Row 1 (values 64..128), rows 1..3, block 3 alone, nothing.
        for (first, count) in [
            (64usize, 64usize),
            (64, 128),
            (96, 32),
            (0, 192),
            (160, 32),
            (32, 0),
        ] {
            let mut out = vec![0u8; count * 4];
            r.read_as_range(0, 0, DType::F32, first as u64, &mut out)
                .unwrap();
            assert_eq!(
                values(&out),
                want[first..first + count],
                "[{first}, +{count})"
            );
            let mut half = vec![0u8; count * 2];
            r.read_as_range(0, 0, DType::F16, first as u64, &mut half)
                .unwrap();
            let got: Vec<f32> = half
                .chunks(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect();
            assert_eq!(got, want[first..first + count]);
        }
        let ctx = "object 'q4' component 'data': ";
        let mut out = vec![0xcdu8; 32 * 4];
        refused(
            r.read_as_range(0, 0, DType::F32, 16, &mut out),
            InvalidArgument,
            &format!(
                "{ctx}values [16, 16 + 32) don't start and end on Q4_0 block boundaries \
                 (multiples of 32 values)"
            ),
        );
        refused(
            r.read_as_range(0, 0, DType::F32, 32, &mut out[..16 * 4]),
            InvalidArgument,
            &format!(
                "{ctx}values [32, 32 + 16) don't start and end on Q4_0 block boundaries \
                 (multiples of 32 values)"
            ),
        );
        refused(
            r.read_as_range(0, 0, DType::F32, 192, &mut out),
            InvalidArgument,
            &format!("{ctx}values [192, 192 + 32) are outside the component's 192"),
        );
        refused(
            r.read_as_range(0, 0, DType::F32, u64::MAX, &mut out),
            InvalidArgument,
            &format!(
                "{ctx}values [18446744073709551615, 18446744073709551615 + 32) are outside the component's 192"
            ),
        );
        refused(
            r.read_as_range(0, 0, DType::F32, 0, &mut out[..6]),
            InvalidArgument,
            &format!("{ctx}a buffer of 6 bytes is not whole f32 values"),
        );
        refused(
            r.read_as_range(0, 0, DType::I32, 0, &mut out),
            Unsupported,
            &format!(
                "{ctx}Q4_0 blocks are read as their u8 bytes or dequantized to f32, f16 or \
                 bf16, not converted to i32"
            ),
        );
        assert!(
            out.iter().all(|&b| b == 0xcd),
            "refused calls write nothing"
        );
        // As bytes: a byte range of the blocks.
        let mut raw = vec![0u8; 36];
        r.read_as_range(0, 0, DType::U8, 36, &mut raw).unwrap();
        assert_eq!(raw, q4[36..72]);
    }
}

#[test]
fn range_reads_of_plain_dtypes_convert() {
    // Values bf16 holds exactly.
    let v: Vec<f32> = (0..1000)
        .map(|i| half::bf16::from_f32(i as f32 * 0.5 - 100.0).to_f32())
        .collect();
    let bf: Vec<u8> = v
        .iter()
        .flat_map(|x| half::bf16::from_f32(*x).to_le_bytes())
        .collect();
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add("raw", DType::BF16, &[1000], &bf, &WriteOptions::default())
        .unwrap();
    w.add("zstd", DType::BF16, &[10, 100], &bf, &WriteOptions::zstd(3))
        .unwrap();
    let i8s: Vec<u8> = (0..100).map(|i| (i as i8 - 50) as u8).collect();
    w.add("i8", DType::I8, &[100], &i8s, &WriteOptions::default())
        .unwrap();
    let zt = w.finish().unwrap();
    let r = Reader::from_slice(&zt).unwrap();
    for o in 0..2 {
        let mut out = vec![0u8; 300 * 4];
        r.read_as_range(o, 0, DType::F32, 500, &mut out).unwrap();
        assert_eq!(values(&out), v[500..800]);
        let mut out = vec![0u8; 7 * 8];
        r.read_as_range(o, 0, DType::F64, 993, &mut out).unwrap();
        let got: Vec<f64> = out
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            got,
            v[993..].iter().map(|&x| f64::from(x)).collect::<Vec<_>>()
        );
        // Any element boundary goes for plain dtypes.
        let mut out = vec![0u8; 4];
        r.read_as_range(o, 0, DType::F32, 1, &mut out).unwrap();
        assert_eq!(values(&out), [v[1]]);
    }
    let mut out = vec![0u8; 3 * 2];
    r.read_as_range(2, 0, DType::I16, 48, &mut out).unwrap();
    assert_eq!(out, [0xfe, 0xff, 0xff, 0xff, 0, 0]);
    refused(
        r.read_as_range(2, 0, DType::U16, 0, &mut out),
        Unsupported,
        "object 'i8' component 'data': converting i8 to u16 would lose values or has no meaning",
    );
    refused(
        r.read_as_range(0, 0, DType::F32, 999, &mut [0u8; 8]),
        InvalidArgument,
        "object 'raw' component 'data': values [999, 999 + 2) are outside the component's 1000",
    );
}

#[test]
fn ggml_type_42_and_unknown_ids_fail_only_their_tensors() {
    let q2_0 = {
        // d = 2, values (q - 1) x 2 for q = 0, 1, 2, 3 repeating.
        let mut b = half::f16::from_f32(2.0).to_le_bytes().to_vec();
        b.extend([0b11_10_01_00u8; 16]);
        b
    };
    let g = Gguf::new()
        .tensor("before", &[2], 0, &f32s(&[1.0, 2.0]))
        .tensor("future", &[64, 3], 43, &[0x55; 96])
        .tensor("q2_0", &[64], 42, &q2_0)
        .tensor("removed", &[16], 4, &[])
        .tensor("far", &[128], 1000, &[])
        .tensor("after", &[2], 0, &f32s(&[3.0, 4.0]));
    opens(&g.build(), |r| {
        assert_eq!(r.objects().len(), 6);
        let mut out = [0u8; 8];
        r.read_as(0, 0, DType::F32, &mut out).unwrap();
        assert_eq!(values(&out), [1.0, 2.0]);
        r.read_as(5, 0, DType::F32, &mut out).unwrap();
        assert_eq!(values(&out), [3.0, 4.0]);
        let mut q = vec![0u8; 64 * 4];
        r.read_as(2, 0, DType::F32, &mut q).unwrap();
        assert_eq!(values(&q)[..5], [-2.0, 0.0, 2.0, 4.0, -2.0]);

        for (i, id, name, note) in [
            (1usize, 43u32, "future", ""),
            (
                3,
                4,
                "removed",
                " (Q4_2, removed from ggml before GGUF existed)",
            ),
            (4, 1000, "far", ""),
        ] {
            let o = &r.objects()[i];
            assert_eq!(o.format(), format!("ggml_type_{id}"));
            let c = &o.components()[0];
            let logical = format!("ggml_type_{id}");
            assert_eq!(
                (c.dtype(), c.logical_type(), c.length(), c.decoded_length()),
                (DType::U8, Some(logical.as_str()), 0, 0)
            );
            let ctx = format!("object '{name}' component 'data': ");
            let unknown = format!("ggml type id {id}{note} is not one this build knows");
            let step = format!(
                "{ctx}{unknown}: the byte size of its tensors can't be computed, so their \
                 bytes can't be read"
            );
            refused(r.view(i, 0).map(|_| ()), Unsupported, &step);
            refused(r.read_into(i, 0, &mut []), Unsupported, &step);
            refused(r.read_to_vec(i, 0).map(|_| ()), Unsupported, &step);
            refused(
                r.read_as(i, 0, DType::F32, &mut []),
                Unsupported,
                &format!("{ctx}{unknown}"),
            );
            refused(
                r.read_as(i, 0, DType::U8, &mut []),
                Unsupported,
                &format!("{ctx}{unknown}"),
            );
            refused(
                r.quant_info(i).map(|_| ()),
                Unsupported,
                &format!("{ctx}{unknown}"),
            );
            // A copy into a zTensor file refuses that object and goes on.
            let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
            assert_eq!(
                w.copy_object(r, i, &CopyOptions::default())
                    .unwrap_err()
                    .kind(),
                Unsupported
            );
            w.copy_object(r, 0, &CopyOptions::default()).unwrap();
            w.finish().unwrap();
        }
        // The file's other checks still apply to it: its offset is in the file.
    });
    let bad = Gguf::new()
        .tensor_at("far", &[128], 1000, &[], 1 << 20)
        .build();
    let e = Reader::from_slice(&bad).unwrap_err();
    assert_eq!(e.kind(), Format, "{e}");
}

#[test]
fn types_without_a_dequantizer_read_as_bytes_only() {
    let g = Gguf::new()
        .tensor("q8_1", &[32], 9, &common::bytes(1, 36))
        .tensor("q4_0_4_4", &[32, 4], 31, &common::bytes(2, 72))
        .build();
    let r = Reader::from_slice(&g).unwrap();
    let mut out = vec![0u8; 128 * 4];
    refused(
        r.read_as(0, 0, DType::F32, &mut out[..128]),
        Unsupported,
        "object 'q8_1' component 'data': ggml type Q8_1 (id 9) can't be dequantized: ggml \
         defines no dequantization for it (it is an intermediate type of its dot products, \
         not one models are stored in)",
    );
    refused(
        r.read_as(1, 0, DType::BF16, &mut out[..256]),
        Unsupported,
        "object 'q4_0_4_4' component 'data': ggml type Q4_0_4_4 (id 31) can't be dequantized: \
         its blocks are interleaved across rows for ggml's old ARM kernels, which ggml removed \
         with no dequantizer; convert the model again from its Q4_0 or IQ4_NL form",
    );
    let q = r.quant_info(1).unwrap();
    assert_eq!(
        (q.rows, q.row_size, q.block_type.can_dequantize()),
        (4, 18, false)
    );
    let mut raw = vec![0u8; 72];
    r.read_as(1, 0, DType::U8, &mut raw).unwrap();
    assert_eq!(raw, common::bytes(2, 72));
}

#[test]
fn large_tensors_dequantize_the_same_on_every_thread_count() {
    // 2 MiB of Q8_0 blocks: 8 MiB of f32, split across threads; ranges of rows must give
    // the same values as the whole.
    let rows = 1024usize;
    let ne0 = 2048usize;
    let mut bytes = common::bytes(9, rows * ne0 / 32 * 34);
    for (i, b) in bytes.chunks_mut(34).enumerate() {
        b[..2].copy_from_slice(&half::f16::from_f32((i % 7) as f32 * 0.25 - 0.5).to_le_bytes());
    }
    let file = Gguf::new()
        .tensor("q8", &[ne0 as u64, rows as u64], 8, &bytes)
        .build();
    let r = Reader::from_slice(&file).unwrap();
    let mut whole = vec![0u8; rows * ne0 * 4];
    r.read_as(0, 0, DType::F32, &mut whole).unwrap();
    let v = values(&whole);
    for (i, b) in bytes.chunks(34).enumerate() {
        let d = (i % 7) as f32 * 0.25 - 0.5;
        for j in 0..32 {
            assert_eq!(
                v[i * 32 + j],
                f32::from(b[2 + j] as i8) * d,
                "block {i} value {j}"
            );
        }
    }
    let mut part = vec![0u8; 100 * ne0 * 4];
    r.read_as_range(0, 0, DType::F32, (500 * ne0) as u64, &mut part)
        .unwrap();
    assert!(part == whole[500 * ne0 * 4..600 * ne0 * 4]);
    // A destination not aligned for f32 gives the same values.
    let mut skewed = vec![0u8; rows * ne0 * 4 + 1];
    r.read_as(0, 0, DType::F32, &mut skewed[1..]).unwrap();
    assert!(skewed[1..] == whole[..]);
}
