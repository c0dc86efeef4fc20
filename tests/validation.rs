//! One test per validation rule a reader owes its users (format-notes.md, "Validation a
//! reader owes its users"). Every hostile file is built by hand: a valid file is built
//! first and must open, then exactly one thing of it is changed and the result must be
//! refused with the exact `ErrorKind` and a message naming the problem. `refused` opens
//! each file three ways (caller memory, mmap, pread) and, for v1.2 manifests, also as a
//! v1.1 file, since every manifest rule applies to both.
//!
//! What is checked when (as tested here): the container, the CBOR, the manifest schema,
//! blob bounds/alignment/overlap and sizes against shapes at open; zstd integrity and
//! exact decoded length on access (`read_into`, `view`); digests by `verify`; sparse index
//! values and bool bytes by `validate_values`.

mod common;

use ErrorKind::{Checksum, Format, Limit, Unsupported};
use common::manifests::*;
use common::{f32s, u64s};
use ztensor::cbor::{self, Value};
use ztensor::{DType, Error, ErrorKind, OpenOptions, Reader};

// ---------------------------------------------------------------------------------------
// Container: header, footer, manifest size
// ---------------------------------------------------------------------------------------

#[test]
fn rule_file_shorter_than_header_and_footer() {
    let good = empty().bytes();
    assert_eq!(good.len(), 8 + cbor::to_vec(&empty().manifest).len() + 16);
    open_three_ways(&good, &OpenOptions::default())
        .into_iter()
        .for_each(|r| r.unwrap());
    let size_and_footer = [&1u64.to_le_bytes()[..], b"ZTEN1000"].concat();
    for short in [
        &b""[..],
        b"ZTEN",
        b"ZTEN1000",
        &[&b"ZTEN1000"[..], &size_and_footer].concat(),
    ] {
        refused_bytes(short, &OpenOptions::default(), Format, "too short");
    }
    refused_bytes(&good[..20], &OpenOptions::default(), Format, "too short");
}

#[test]
fn rule_wrong_magic_at_start() {
    let mut bad = open_ok(&dense());
    bad[..8].copy_from_slice(b"ZTEN1001");
    refused_bytes(&bad, &OpenOptions::default(), Format, "header magic");
    // Not a magic of any format we read (a PNG's): the zTensor footer decides and the
    // header magic is named. (A zip's "PK\x03\x04" is now a format of its own.)
    bad[..8].copy_from_slice(b"\x89PNG\r\n\x1a\n");
    refused_bytes(&bad, &OpenOptions::default(), Format, "header magic");
}

#[test]
fn rule_wrong_magic_at_end() {
    let good = open_ok(&dense());
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 1] = b'1';
    refused_bytes(&bad, &OpenOptions::default(), Format, "footer magic");
    // A truncated file has no footer magic either.
    refused_bytes(
        &good[..n - 1],
        &OpenOptions::default(),
        Format,
        "footer magic",
    );
}

/// Sets the 8-byte manifest size field of a v1 file.
fn set_manifest_size(bytes: &[u8], size: u64) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let n = b.len();
    b[n - 16..n - 8].copy_from_slice(&size.to_le_bytes());
    b
}

#[test]
fn rule_manifest_size_zero() {
    let good = open_ok(&dense());
    refused_bytes(
        &set_manifest_size(&good, 0),
        &OpenOptions::default(),
        Format,
        "manifest size is 0",
    );
}

#[test]
fn rule_manifest_size_past_the_file() {
    let good = open_ok(&dense());
    let past = good.len() as u64 + 100;
    refused_bytes(
        &set_manifest_size(&good, past),
        &OpenOptions::default(),
        Format,
        "does not fit",
    );
    // Without a limit in the way, the largest size must not overflow the arithmetic.
    let unlimited = limits(|l| l.max_manifest_size = u64::MAX);
    refused_bytes(
        &set_manifest_size(&good, u64::MAX),
        &unlimited,
        Format,
        "does not fit",
    );
}

#[test]
fn rule_manifest_size_over_the_limit() {
    let f = dense();
    let size = cbor::to_vec(&f.manifest).len() as u64;
    let at_limit = limits(|l| l.max_manifest_size = size);
    let under = limits(|l| l.max_manifest_size = size - 1);
    opens_with(&f, &at_limit);
    refused_under(&f, &under, Limit, "over the limit");
    // The default limit is 1 GiB: a size just over it is a Limit, not a Format error.
    let good = open_ok(&f);
    refused_bytes(
        &set_manifest_size(&good, (1 << 30) + 1),
        &OpenOptions::default(),
        Limit,
        "over the limit",
    );
}

#[test]
fn rule_manifest_size_overlapping_the_header() {
    // With no blobs the manifest starts right after the 8-byte header.
    let good = open_ok(&empty());
    let exact = good.len() as u64 - 24;
    Reader::from_slice(&set_manifest_size(&good, exact)).unwrap();
    refused_bytes(
        &set_manifest_size(&good, exact + 1),
        &OpenOptions::default(),
        Format,
        "between the header and the footer",
    );
    refused_bytes(
        &set_manifest_size(&good, exact + 8),
        &OpenOptions::default(),
        Format,
        "between the header and the footer",
    );
}

// ---------------------------------------------------------------------------------------
// CBOR
// ---------------------------------------------------------------------------------------

/// The dense fixture's blobs with arbitrary manifest bytes.
fn with_manifest_bytes(manifest: &[u8]) -> Vec<u8> {
    assemble(false, &dense().blobs, manifest)
}

fn good_manifest_bytes() -> Vec<u8> {
    let bytes = cbor::to_vec(&dense().manifest);
    Reader::from_slice(&with_manifest_bytes(&bytes)).unwrap();
    bytes
}

#[test]
fn rule_cbor_malformed() {
    let good = good_manifest_bytes();
    let version = b"\x651.2.0";
    for bad in [
        replace_once(&good, version, b"\xff"),         // a stray break
        replace_once(&good, version, b"\x7c\0\0\0\0"), // reserved additional information
        replace_once(&good, version, b"\x7f\x41\x31\xff"), // byte-string chunk in a text string
        vec![0xff],
    ] {
        refused_bytes(
            &with_manifest_bytes(&bad),
            &OpenOptions::default(),
            Format,
            "CBOR error",
        );
    }
}

#[test]
fn rule_cbor_trailing_bytes_after_the_manifest() {
    let good = good_manifest_bytes();
    let bad = [&good[..], &[0x00]].concat();
    refused_bytes(
        &with_manifest_bytes(&bad),
        &OpenOptions::default(),
        Format,
        "trailing bytes",
    );
}

#[test]
fn rule_cbor_nesting_deeper_than_the_limit() {
    let good = dense().with(&["attributes"], m(&[("deep", nested_arrays(10))]));
    let levels = depth(&good.manifest);
    assert_eq!(levels, 12); // root map, attributes map, 10 arrays
    opens_with(&good, &limits(|l| l.max_cbor_depth = levels));
    refused_under(
        &good,
        &limits(|l| l.max_cbor_depth = levels - 1),
        Limit,
        "nesting deeper",
    );
    // At the default limit (128), absurd nesting is a Limit error, not a stack overflow.
    let deep = dense().with(&["attributes"], m(&[("deep", nested_arrays(126))]));
    assert_eq!(depth(&deep.manifest), 128);
    let deeper = dense().with(&["attributes"], m(&[("deep", nested_arrays(127))]));
    refused(&deep, &deeper, Limit, "nesting deeper");
    // A million nested arrays inside the attributes: a Limit, without recursion trouble.
    let mut bomb = vec![0xa3u8];
    for (k, v) in [
        ("version", &b"\x65\x31\x2e\x32\x2e\x30"[..]),
        ("objects", &b"\xa0"[..]),
    ] {
        bomb.push(0x60 | k.len() as u8);
        bomb.extend_from_slice(k.as_bytes());
        bomb.extend_from_slice(v);
    }
    bomb.extend_from_slice(b"\x6aattributes\xa1\x64deep");
    bomb.extend(std::iter::repeat_n(0x81u8, 1_000_000));
    bomb.push(0);
    refused_bytes(
        &with_manifest_bytes(&bomb),
        &OpenOptions::default(),
        Limit,
        "nesting deeper",
    );
    // The same bomb as the whole manifest: reported as the nesting fault, not as "not a map".
    let root_bomb = [vec![0x81u8; 1_000_000], vec![0]].concat();
    refused_bytes(
        &with_manifest_bytes(&root_bomb),
        &OpenOptions::default(),
        Limit,
        "nesting deeper",
    );
}

#[test]
fn rule_cbor_declared_lengths_larger_than_the_bytes_present() {
    let good = good_manifest_bytes();
    assert_eq!(good[0], 0xa2); // the root map of two entries
    let version = b"\x651.2.0";
    for bad in [
        [&[0xbb][..], &u64::MAX.to_be_bytes(), &good[1..]].concat(), // root map of 2^64-1 entries
        [&[0xa3][..], &good[1..]].concat(),                          // three entries, two present
        replace_once(&good, version, b"\x7b\x10\0\0\0\0\0\0\0"),     // text of 2^60 bytes
        replace_once(&good, version, b"\x5a\xff\xff\xff\xff"),       // bytes of 4 GiB
        replace_once(&good, version, b"\x9b\xff\xff\xff\xff\xff\xff\xff\xff"), // huge array
        good[..good.len() - 1].to_vec(),                             // truncated item
    ] {
        refused_bytes(
            &with_manifest_bytes(&bad),
            &OpenOptions::default(),
            Format,
            "end of input",
        );
    }
}

// ---------------------------------------------------------------------------------------
// Manifest schema: required keys, value types, names of things
// ---------------------------------------------------------------------------------------

#[test]
fn rule_root_not_a_map() {
    let good = dense();
    let bad = Fixture {
        manifest: Value::Array(vec![good.manifest.clone()]),
        ..good.clone()
    };
    refused(&good, &bad, Format, "the manifest must be a map");
}

#[test]
fn rule_missing_version() {
    refused(
        &dense(),
        &dense().without(&["version"]),
        Format,
        "lacks the required key 'version'",
    );
}

#[test]
fn rule_missing_objects() {
    refused(
        &dense(),
        &dense().without(&["objects"]),
        Format,
        "lacks the required key 'objects'",
    );
}

#[test]
fn rule_missing_shape() {
    refused(
        &dense(),
        &dense().without(&w("shape")),
        Format,
        "lacks the required key 'shape'",
    );
}

#[test]
fn rule_missing_format() {
    refused(
        &dense(),
        &dense().without(&w("format")),
        Format,
        "lacks the required key 'format'",
    );
}

#[test]
fn rule_missing_components() {
    refused(
        &dense(),
        &dense().without(&w("components")),
        Format,
        "lacks the required key 'components'",
    );
}

#[test]
fn rule_missing_dtype() {
    refused(
        &dense(),
        &dense().without(&d("dtype")),
        Format,
        "lacks the required key 'dtype'",
    );
}

#[test]
fn rule_missing_offset() {
    refused(
        &dense(),
        &dense().without(&d("offset")),
        Format,
        "lacks the required key 'offset'",
    );
}

#[test]
fn rule_missing_length() {
    refused(
        &dense(),
        &dense().without(&d("length")),
        Format,
        "lacks the required key 'length'",
    );
}

#[test]
fn rule_wrong_type_version() {
    refused(
        &dense(),
        &dense().with(&["version"], u(1)),
        Format,
        "version must be text",
    );
}

#[test]
fn rule_wrong_type_objects() {
    refused(
        &dense(),
        &dense().with(&["objects"], Value::Array(vec![])),
        Format,
        "objects must be a map",
    );
}

#[test]
fn rule_wrong_type_object() {
    refused(
        &dense(),
        &dense().with(&["objects", "w"], dims(&[2, 2])),
        Format,
        "an object must be a map",
    );
}

#[test]
fn rule_wrong_type_shape() {
    let good = dense();
    refused(
        &good,
        &good.with(&w("shape"), t("2x2")),
        Format,
        "shape must be an array",
    );
    let negative = Value::Array(vec![u(2), Value::Negative(1)]);
    refused(
        &good,
        &good.with(&w("shape"), negative),
        Format,
        "shape dimension must be an unsigned integer",
    );
    let float = Value::Array(vec![u(2), Value::Float(2.0)]);
    refused(
        &good,
        &good.with(&w("shape"), float),
        Format,
        "shape dimension must be an unsigned integer",
    );
}

#[test]
fn rule_wrong_type_format() {
    refused(
        &dense(),
        &dense().with(&w("format"), u(0)),
        Format,
        "format must be text",
    );
    refused(
        &dense(),
        &dense().with(&w("format"), t("")),
        Format,
        "format is empty",
    );
}

#[test]
fn rule_wrong_type_components() {
    let list = Value::Array(vec![comp("f32", 64, 16)]);
    refused(
        &dense(),
        &dense().with(&w("components"), list),
        Format,
        "components must be a map",
    );
}

#[test]
fn rule_wrong_type_component() {
    refused(
        &dense(),
        &dense().with(&["objects", "w", "components", "data"], t("f32")),
        Format,
        "a component must be a map",
    );
}

#[test]
fn rule_wrong_type_dtype() {
    refused(
        &dense(),
        &dense().with(&d("dtype"), u(1)),
        Format,
        "dtype must be text",
    );
}

#[test]
fn rule_wrong_type_offset() {
    let good = dense();
    for bad in [
        t("64"),
        Value::Negative(63),
        Value::Float(64.0),
        Value::Tag(2, Box::new(Value::Bytes(vec![64]))),
    ] {
        refused(
            &good,
            &good.with(&d("offset"), bad),
            Format,
            "offset must be an unsigned integer",
        );
    }
}

#[test]
fn rule_wrong_type_length() {
    refused(
        &dense(),
        &dense().with(&d("length"), Value::Float(16.0)),
        Format,
        "length must be an unsigned integer",
    );
}

#[test]
fn rule_wrong_type_encoding() {
    refused(
        &dense(),
        &dense().with(&d("encoding"), u(0)),
        Format,
        "encoding must be text",
    );
}

#[test]
fn rule_wrong_type_uncompressed_length() {
    let good = zstd_ok();
    refused(
        &good,
        &good.with(&d("uncompressed_length"), t("64")),
        Format,
        "uncompressed_length must be an unsigned integer",
    );
}

#[test]
fn rule_wrong_type_digest() {
    refused(
        &dense(),
        &dense().with(&d("digest"), Value::Bytes(vec![0; 32])),
        Format,
        "digest must be text",
    );
}

#[test]
fn rule_wrong_type_logical_type() {
    refused(
        &fp8(),
        &fp8().with(&d("type"), u(8)),
        Format,
        "type must be text",
    );
}

#[test]
fn rule_wrong_type_attributes() {
    let good = dense().with(&["attributes"], m(&[("license", t("MIT"))]));
    refused(
        &good,
        &good.with(&["attributes"], t("MIT")),
        Format,
        "file attributes must be a map",
    );
    let good = dense().with(&w("attributes"), m(&[("bits", u(4))]));
    refused(
        &good,
        &good.with(&w("attributes"), Value::Array(vec![])),
        Format,
        "object attributes must be a map",
    );
}

#[test]
fn rule_unknown_dtype() {
    let good = dense();
    for name in ["f128", "float32", "F32", ""] {
        refused(
            &good,
            &good.with(&d("dtype"), t(name)),
            Format,
            "unknown dtype",
        );
    }
}

#[test]
fn rule_unsupported_major_version() {
    let good = dense();
    opens(&good.with(&["version"], t("1.9.0")));
    for version in ["2.0.0", "0.1.0", "10.0.0", ""] {
        refused(
            &good,
            &good.with(&["version"], t(version)),
            Unsupported,
            "not a 1.x version",
        );
    }
}

#[test]
fn rule_unknown_encoding() {
    let good = dense().with(&d("encoding"), t("raw"));
    refused(
        &good,
        &good.with(&d("encoding"), t("lz4")),
        Unsupported,
        "encoding 'lz4' is not supported",
    );
}

// ---------------------------------------------------------------------------------------
// Blob placement
// ---------------------------------------------------------------------------------------

#[test]
fn rule_offset_not_a_multiple_of_64() {
    for offset in [72, 96, 65] {
        refused(
            &dense(),
            &dense().with(&d("offset"), u(offset)),
            Format,
            "not a multiple of 64",
        );
    }
}

#[test]
fn rule_offset_zero() {
    refused(
        &dense(),
        &dense().with(&d("offset"), u(0)),
        Format,
        "offset 0 points at the file header",
    );
}

#[test]
fn rule_offset_past_the_end() {
    refused(
        &dense(),
        &dense().with(&d("offset"), u(1 << 40)),
        Format,
        "reach past the data region",
    );
}

#[test]
fn rule_offset_plus_length_overflows() {
    // "a" is 128 bytes long: at the last aligned offset, its end is past u64::MAX.
    let offset = !63;
    let bad = two_blobs().with(&["objects", "a", "components", "data", "offset"], u(offset));
    refused(&two_blobs(), &bad, Format, "overflows");
}

#[test]
fn rule_blob_overlapping_the_manifest() {
    // The blob ends exactly where the manifest starts (80): fine. One byte more is not.
    let good = dense();
    let bytes = open_ok(&good);
    assert_eq!(
        bytes.len() as u64 - 16 - cbor::to_vec(&good.manifest).len() as u64,
        80
    );
    refused(
        &good,
        &good.with(&d("length"), u(17)),
        Format,
        "where the manifest starts",
    );
}

#[test]
fn rule_non_empty_blobs_partially_overlapping() {
    let good = two_blobs();
    refused(
        &good,
        &good.with(&["objects", "b", "components", "data", "offset"], u(128)),
        Format,
        "overlap",
    );
    refused(
        &good,
        &good.with(&["objects", "b", "components", "data", "offset"], u(64)),
        Format,
        "overlap",
    );
}

#[test]
fn rule_identical_blobs_shared_by_two_objects_are_accepted() {
    let shared = object(&[2, 2], "dense", &[("data", comp("f32", 64, 16))]);
    let f = Fixture::v1(
        root("1.2.0", &[("a", shared.clone()), ("b", shared)]),
        &dense().blobs,
    );
    opens(&f);
    let bytes = f.bytes();
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), r.read_to_vec(1, 0).unwrap());
}

#[test]
fn rule_zero_length_components_overlap_nothing() {
    // "e" is empty at the offset the next blob uses; "z" is empty at the aligned end of the
    // data, where a reference writer that pads before each blob starts the manifest.
    let manifest = root(
        "1.2.0",
        &[
            (
                "e",
                object(&[0, 4], "dense", &[("data", comp("f32", 64, 0))]),
            ),
            (
                "w",
                object(&[2, 2], "dense", &[("data", comp("f32", 64, 16))]),
            ),
            ("z", object(&[0], "dense", &[("data", comp("f32", 128, 0))])),
        ],
    );
    let f = Fixture::v1(
        manifest,
        &[(64, f32s(&[1.0, 2.0, 3.0, 4.0])), (128, vec![])],
    );
    opens(&f);
    let bytes = f.bytes();
    let r = Reader::from_slice(&bytes).unwrap();
    assert!(r.read_to_vec(0, 0).unwrap().is_empty());
    assert_eq!(r.read_to_vec(1, 0).unwrap(), f32s(&[1.0, 2.0, 3.0, 4.0]));
    // Even inside another blob an empty component overlaps nothing.
    let inside = two_blobs().with(
        &["objects", "e"],
        object(&[0], "dense", &[("data", comp("f32", 128, 0))]),
    );
    opens(&inside);
    // An empty component must still lie inside the data region.
    let past = f.with(&["objects", "z", "components", "data", "offset"], u(192));
    refused(&f, &past, Format, "reach past the data region");
}

// ---------------------------------------------------------------------------------------
// Sizes: shapes, dtypes, logical types, uncompressed_length
// ---------------------------------------------------------------------------------------

#[test]
fn rule_shape_element_count_overflows() {
    refused(
        &dense(),
        &dense().with(&w("shape"), dims(&[1 << 32, 1 << 32, 2])),
        Format,
        "overflows u64",
    );
}

#[test]
fn rule_rank_over_the_limit() {
    let rank = |n: usize| dims(&[[2u64, 2].as_slice(), &vec![1; n - 2]].concat());
    let at_limit = dense().with(&w("shape"), rank(64));
    opens(&at_limit);
    refused(
        &at_limit,
        &dense().with(&w("shape"), rank(65)),
        Limit,
        "over the limit of 64",
    );
    let small = limits(|l| l.max_rank = 2);
    refused_with(
        &dense(),
        &dense().with(&w("shape"), rank(3)),
        &small,
        Limit,
        "over the limit of 2",
    );
}

#[test]
fn rule_dense_length_not_numel_times_dtype_size() {
    refused(
        &dense(),
        &dense().with(&d("length"), u(12)),
        Format,
        "needs 16",
    );
    refused(
        &dense(),
        &dense().with(&w("shape"), dims(&[2, 3])),
        Format,
        "needs 24",
    );
    refused(
        &dense(),
        &dense().with(&d("dtype"), t("f64")),
        Format,
        "needs 32",
    );
}

#[test]
fn rule_dense_length_includes_the_compound_ratio() {
    let good = complex();
    let bytes = open_ok(&good);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(
        r.objects()[0].components()[0].logical_type(),
        Some("complex64")
    );
    refused(
        &good,
        &good.with(&w("shape"), dims(&[4])),
        Format,
        "needs 32",
    );
    refused(
        &good,
        &good.with(&w("shape"), dims(&[1])),
        Format,
        "needs 8",
    );
    // complex128 on f64 needs 2 * 2 * 8 = 32 bytes, not 16.
    let c128 = good
        .with(&d("dtype"), t("f64"))
        .with(&d("type"), t("complex128"));
    refused(&good, &c128, Format, "needs 32");
}

#[test]
fn rule_uncompressed_length_disagrees_with_the_shape() {
    let good = zstd_ok();
    refused(
        &good,
        &good.with(&d("uncompressed_length"), u(60)),
        Format,
        "needs 64",
    );
    refused(
        &good,
        &good.with(&d("uncompressed_length"), u(68)),
        Format,
        "needs 64",
    );
}

#[test]
fn rule_uncompressed_length_over_the_decode_limit() {
    let good = zstd_ok();
    opens_with(&good, &limits(|l| l.max_decoded_size = 64));
    refused_under(
        &good,
        &limits(|l| l.max_decoded_size = 63),
        Limit,
        "over the decode limit",
    );
    // Default limit (64 GiB): a file claiming 1 TiB is refused before anything is decoded.
    let huge = good
        .with(&w("shape"), dims(&[1 << 38]))
        .with(&d("uncompressed_length"), u(1 << 40));
    refused(&good, &huge, Limit, "over the decode limit");
}

#[test]
fn rule_uncompressed_length_impossible_for_the_stored_zstd_length() {
    let good = zstd_ok();
    let stored = good.blobs[0].1.len() as u64;
    let impossible = stored * 65536 + 65537;
    refused(
        &good,
        &good.with(&d("uncompressed_length"), u(impossible)),
        Format,
        "impossible",
    );
    let empty = good.with(&d("length"), u(0));
    refused(
        &good,
        &empty,
        Format,
        "zstd blob of 0 bytes cannot decode to 64 bytes",
    );
}

#[test]
fn rule_raw_uncompressed_length_differs_from_length() {
    let good = dense().with(&d("uncompressed_length"), u(16));
    refused(
        &good,
        &good.with(&d("uncompressed_length"), u(20)),
        Format,
        "states uncompressed_length 20",
    );
}

// ---------------------------------------------------------------------------------------
// zstd on access
// ---------------------------------------------------------------------------------------

#[test]
fn rule_corrupt_zstd_found_on_access() {
    let good = zstd_ok();
    let bytes = good.bytes();
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), dense_values());

    let mut garbage = good.blobs[0].1.clone();
    garbage[..4].copy_from_slice(b"junk"); // not a zstd frame
    let mut damaged = good.blobs[0].1.clone();
    let n = damaged.len();
    damaged[6..n].iter_mut().for_each(|b| *b ^= 0x5a); // a frame header, then noise
    for blob in [garbage, damaged] {
        let bytes = good.with_blob(0, blob).bytes();
        let r = Reader::from_slice(&bytes).expect("zstd data is only decoded on access");
        let mut dst = vec![0u8; 64];
        assert_err(r.read_into(0, 0, &mut dst), Format, "zstd");
        assert_err(r.view(0, 0), Format, "zstd");
        assert_err(r.read_range(0, 0, 0, &mut dst), Format, "zstd");
    }
}

#[test]
fn rule_zstd_decoding_to_fewer_bytes_than_uncompressed_length() {
    let short = zstd_dense(zstd_frame(&dense_values()[..48]), 64);
    let bytes = short.bytes();
    let r = Reader::from_slice(&bytes).unwrap();
    let mut dst = vec![0u8; 64];
    assert_err(r.read_into(0, 0, &mut dst), Format, "decodes to 48 bytes");
    assert_err(r.view(0, 0), Format, "decodes to 48 bytes");
    // Range reads refuse exactly what reads refuse, with the same message.
    assert_err(
        r.read_range(0, 0, 0, &mut dst),
        Format,
        "decodes to 48 bytes",
    );
}

#[test]
fn rule_zstd_decoding_to_more_bytes_than_uncompressed_length() {
    let long = zstd_dense(zstd_frame(&[dense_values(), vec![0; 16]].concat()), 64);
    let bytes = long.bytes();
    let r = Reader::from_slice(&bytes).unwrap();
    let mut dst = vec![0u8; 64];
    assert_err(
        r.read_into(0, 0, &mut dst),
        Format,
        "more than the 64 bytes",
    );
    assert_err(r.view(0, 0), Format, "more than the 64 bytes");
}

#[test]
fn rule_zstd_bomb_stops_at_the_declared_size() {
    // The hand-made frame is real zstd.
    let small = zstd_rle_bomb(2);
    assert_eq!(
        zstd::stream::decode_all(&small[..]).unwrap(),
        vec![0xab; 256 * 1024]
    );
    // 65536 blocks: 8 GiB decoded from 256 KiB stored, declared as 64 bytes. Decoding must
    // stop at 64 bytes and fail, without producing (or allocating) the rest.
    let bomb = zstd_dense(zstd_rle_bomb(65536), 64);
    let bytes = bomb.bytes();
    let r = Reader::from_slice(&bytes).expect("plausible sizes open");
    let mut dst = vec![0u8; 64];
    assert_err(
        r.read_into(0, 0, &mut dst),
        Format,
        "more than the 64 bytes",
    );
    assert_err(r.view(0, 0), Format, "more than the 64 bytes");
}

// ---------------------------------------------------------------------------------------
// Digests
// ---------------------------------------------------------------------------------------

fn sha256_of(data: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", ztensor::hex_lower(&sha2::Sha256::digest(data)))
}

#[test]
fn rule_digest_without_a_colon() {
    let good = dense().with(&d("digest"), t(&sha256_of(&dense().blobs[0].1)));
    let bad = sha256_of(&dense().blobs[0].1).replace(':', "");
    refused(
        &good,
        &good.with(&d("digest"), t(&bad)),
        Format,
        "malformed digest",
    );
}

#[test]
fn rule_digest_sha256_with_63_hex_digits() {
    let digest = sha256_of(&dense().blobs[0].1);
    let good = dense().with(
        &d("digest"),
        t(&digest.to_uppercase().replace("SHA256", "sha256")),
    );
    refused(
        &good,
        &good.with(&d("digest"), t(&digest[..digest.len() - 1])),
        Format,
        "malformed digest",
    );
    refused(
        &good,
        &good.with(&d("digest"), t(&format!("{digest}0"))),
        Format,
        "malformed digest",
    );
    let not_hex = format!("sha256:{}g", &digest[7..70]);
    refused(
        &good,
        &good.with(&d("digest"), t(&not_hex)),
        Format,
        "malformed digest",
    );
}

#[test]
fn rule_digest_crc32c_without_0x() {
    let crc = crc32c::crc32c(&dense().blobs[0].1);
    let good = dense().with(&d("digest"), t(&format!("crc32c:0x{crc:08X}")));
    opens(&good.with(&d("digest"), t(&format!("crc32c:0x{crc:08x}"))));
    refused(
        &good,
        &good.with(&d("digest"), t(&format!("crc32c:{crc:08X}"))),
        Format,
        "malformed digest",
    );
    let seven_digits = &format!("crc32c:0x{crc:08X}")[..16];
    refused(
        &good,
        &good.with(&d("digest"), t(seven_digits)),
        Format,
        "malformed digest",
    );
}

#[test]
fn rule_digest_mismatch_on_verify() {
    let good = dense().with(&d("digest"), t(&sha256_of(&dense().blobs[0].1)));
    let bytes = open_ok(&good);
    Reader::from_slice(&bytes).unwrap().verify().unwrap();
    let crc = crc32c::crc32c(&dense().blobs[0].1);
    for wrong in [
        format!("sha256:{}", "0".repeat(64)),
        format!("crc32c:0x{:08X}", crc ^ 1),
    ] {
        let bytes = good.with(&d("digest"), t(&wrong)).bytes();
        let r = Reader::from_slice(&bytes).expect("digests are checked by verify, not at open");
        assert_err(r.verify_component(0, 0), Checksum, "does not match");
        assert_err(r.verify(), Checksum, "does not match");
        let on_open = OpenOptions {
            verify_on_open: true,
            ..Default::default()
        };
        assert_err(
            Reader::from_slice_with(&bytes, &on_open),
            Checksum,
            "does not match",
        );
    }
    // Changing one stored byte is a mismatch too.
    let bytes = good.with_blob(0, f32s(&[1.0, 2.0, 3.0, 5.0])).bytes();
    assert_err(
        Reader::from_slice(&bytes).unwrap().verify(),
        Checksum,
        "does not match",
    );
}

#[test]
fn rule_digest_unknown_algorithm_is_never_verified() {
    let good = dense().with(&d("digest"), t(&sha256_of(&dense().blobs[0].1)));
    let bytes = open_ok(&good.with(&d("digest"), t("md5:0123456789abcdef0123456789abcdef")));
    let r = Reader::from_slice(&bytes).expect("unknown algorithms open");
    assert_err(
        r.verify_component(0, 0),
        Unsupported,
        "'md5' is not supported",
    );
    assert_err(r.verify(), Unsupported, "'md5' is not supported");
    let on_open = OpenOptions {
        verify_on_open: true,
        ..Default::default()
    };
    assert_err(
        Reader::from_slice_with(&bytes, &on_open),
        Unsupported,
        "'md5'",
    );
}

// ---------------------------------------------------------------------------------------
// Values and logical types
// ---------------------------------------------------------------------------------------

#[test]
fn rule_bool_bytes_other_than_0_or_1() {
    let bytes = open_ok(&bools());
    Reader::from_slice(&bytes)
        .unwrap()
        .validate_values(0)
        .unwrap();
    let bytes = bools().with_blob(0, vec![0, 1, 2, 0]).bytes();
    let r = Reader::from_slice(&bytes).expect("bool bytes are checked by validate_values");
    assert_err(r.validate_values(0), Format, "bool byte 2 at index 2");
}

#[test]
fn rule_fp8_type_on_the_wrong_storage_dtype() {
    refused(
        &fp8(),
        &fp8().with(&d("dtype"), t("f32")),
        Format,
        "'f8_e4m3fn' must be stored as u8, not f32",
    );
}

#[test]
fn rule_complex64_type_on_the_wrong_storage_dtype() {
    refused(
        &complex(),
        &complex().with(&d("dtype"), t("f64")),
        Format,
        "'complex64' must be stored as f32, not f64",
    );
}

#[test]
fn rule_v11_dtype_spellings_read_as_storage_and_logical_type() {
    let manifest = root(
        "1.1.0",
        &[
            (
                "f8",
                object(&[4], "dense", &[("data", comp("f8_e4m3", 64, 4))]),
            ),
            (
                "c",
                object(&[2], "dense", &[("data", comp("complex64", 128, 16))]),
            ),
        ],
    );
    let good = Fixture::v1(
        manifest,
        &[(64, vec![1, 2, 3, 4]), (128, f32s(&[1.0, 2.0, 3.0, 4.0]))],
    );
    let bytes = open_ok(&good);
    let r = Reader::from_slice(&bytes).unwrap();
    let f8 = &r.objects()[0].components()[0];
    assert_eq!(
        (f8.dtype(), f8.logical_type()),
        (DType::U8, Some("f8_e4m3fn"))
    );
    let c = &r.objects()[1].components()[0];
    assert_eq!(
        (c.dtype(), c.logical_type()),
        (DType::F32, Some("complex64"))
    );
    assert_eq!(r.read_to_vec(1, 0).unwrap(), f32s(&[1.0, 2.0, 3.0, 4.0]));
    // The compound ratio applies to the v1.1 spelling too, and a contradicting type is refused.
    refused(
        &good,
        &good.with(&["objects", "c", "shape"], dims(&[4])),
        Format,
        "needs 32",
    );
    let contradiction = good.with(
        &["objects", "f8", "components", "data", "type"],
        t("f8_e5m2"),
    );
    refused(&good, &contradiction, Format, "implies type 'f8_e4m3fn'");
}

#[test]
fn rule_v11_zstd_without_uncompressed_length() {
    // A dense component: the decoded size comes from the shape.
    let good = zstd_ok()
        .with(&["version"], t("1.1.0"))
        .without(&d("uncompressed_length"));
    let bytes = open_ok(&good);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.objects()[0].components()[0].decoded_length(), 64);
    assert_eq!(r.read_to_vec(0, 0).unwrap(), dense_values());
    // Still bounded by that size: a frame that decodes to more is refused on access.
    let long = zstd_frame(&[dense_values(), vec![0; 4]].concat());
    let bad = good
        .with_blob(0, long.clone())
        .with(&d("length"), u(long.len() as u64));
    let bytes = open_ok(&bad);
    assert_err(
        Reader::from_slice(&bytes).unwrap().read_to_vec(0, 0),
        Format,
        "more than the 64 bytes",
    );
    // A non-dense component has no shape to size it: refused at open.
    let stored = good.blobs[0].1.len() as u64;
    let scales = Fixture::v1(
        root(
            "1.1.0",
            &[(
                "q",
                object(
                    &[4, 4],
                    "quantized_group",
                    &[("scales", zcomp("f32", 64, stored, 64))],
                ),
            )],
        ),
        &good.blobs,
    );
    let bad = scales.without(&[
        "objects",
        "q",
        "components",
        "scales",
        "uncompressed_length",
    ]);
    refused(&scales, &bad, Format, "lacks uncompressed_length");
}

// ---------------------------------------------------------------------------------------
// Sparse structure
// ---------------------------------------------------------------------------------------

#[test]
fn rule_csr_indptr_of_the_wrong_length() {
    refused(
        &csr(),
        &csr().with(&sparse_path("indptr", "length"), u(16)),
        Format,
        "indptr has 2 entries, expected rows + 1 = 3",
    );
}

#[test]
fn rule_csr_indices_count_not_values_count() {
    refused(
        &csr(),
        &csr().with(&sparse_path("indices", "length"), u(16)),
        Format,
        "indices has 2 entries but values has 3",
    );
}

#[test]
fn rule_csr_shape_not_2d() {
    refused(
        &csr(),
        &csr().with(&["objects", "s", "shape"], dims(&[6])),
        Format,
        "needs a 2-d shape",
    );
    refused(
        &csr(),
        &csr().with(&["objects", "s", "shape"], dims(&[2, 3, 1])),
        Format,
        "needs a 2-d shape",
    );
}

#[test]
fn rule_csr_missing_component() {
    refused(
        &csr(),
        &csr().without(&["objects", "s", "components", "indptr"]),
        Format,
        "no 'indptr' component",
    );
}

/// Opens `f` (which must open) and runs `validate_values` on object 0.
fn validate_values(f: &Fixture) -> Result<(), Error> {
    let bytes = open_ok(f);
    Reader::from_slice(&bytes).unwrap().validate_values(0)
}

#[test]
fn rule_csr_indptr_not_starting_at_0() {
    validate_values(&csr()).unwrap();
    assert_err(
        validate_values(&csr().with_blob(2, u64s(&[1, 2, 3]))),
        Format,
        "indptr must start at 0",
    );
}

#[test]
fn rule_csr_indptr_decreasing() {
    validate_values(&csr()).unwrap();
    assert_err(
        validate_values(&csr().with_blob(2, u64s(&[0, 4, 3]))),
        Format,
        "indptr decreases at row 1: 4 then 3",
    );
}

#[test]
fn rule_csr_indptr_not_ending_at_nnz() {
    validate_values(&csr()).unwrap();
    assert_err(
        validate_values(&csr().with_blob(2, u64s(&[0, 1, 2]))),
        Format,
        "not at nnz 3",
    );
}

#[test]
fn rule_csr_column_index_out_of_range() {
    validate_values(&csr()).unwrap();
    assert_err(
        validate_values(&csr().with_blob(1, u64s(&[0, 3, 1]))),
        Format,
        "column index 3 at position 1",
    );
    assert_err(
        validate_values(&csr().with_blob(1, u64s(&[0, u64::MAX, 1]))),
        Format,
        "out of range",
    );
}

#[test]
fn rule_coo_coords_length_not_ndim_times_nnz() {
    refused(
        &coo(),
        &coo().with(&sparse_path("coords", "length"), u(24)),
        Format,
        "coords has 3 entries, expected ndim 2 x nnz 2",
    );
    refused(
        &coo(),
        &coo().with(&["objects", "s", "shape"], dims(&[2, 3, 1])),
        Format,
        "expected ndim 3 x nnz 2",
    );
}

#[test]
fn rule_coo_coordinate_out_of_range() {
    validate_values(&coo()).unwrap();
    assert_err(
        validate_values(&coo().with_blob(1, u64s(&[0, 2, 2, 0]))),
        Format,
        "in dimension 0 is out of range for extent 2",
    );
    assert_err(
        validate_values(&coo().with_blob(1, u64s(&[0, 1, 3, 0]))),
        Format,
        "in dimension 1 is out of range for extent 3",
    );
}

#[test]
fn rule_sparse_index_dtype_i32_refused_u32_accepted() {
    refused(
        &csr(),
        &csr().with(&sparse_path("indices", "dtype"), t("i32")),
        Format,
        "must be u64 (or u32), not i32",
    );
    refused(
        &csr(),
        &csr().with(&sparse_path("indptr", "dtype"), t("f64")),
        Format,
        "must be u64 (or u32), not f64",
    );
    refused(
        &coo(),
        &coo().with(&sparse_path("coords", "dtype"), t("i64")),
        Format,
        "must be u64 (or u32), not i64",
    );
    // u32 indices (written by the reference Python API) are read, and checked the same way.
    let narrow = csr()
        .with(&sparse_path("indices", "dtype"), t("u32"))
        .with(&sparse_path("indices", "length"), u(12))
        .with(&sparse_path("indptr", "dtype"), t("u32"))
        .with(&sparse_path("indptr", "length"), u(12))
        .with_blob(1, u32s(&[0, 2, 1]))
        .with_blob(2, u32s(&[0, 2, 3]));
    validate_values(&narrow).unwrap();
    assert_err(
        validate_values(&narrow.with_blob(1, u32s(&[0, 2, 7]))),
        Format,
        "column index 7",
    );
}

// ---------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------

#[test]
fn rule_empty_object_name() {
    refused(
        &dense(),
        &dense().renamed(&["objects"], "w", t("")),
        Format,
        "object name is empty",
    );
}

#[test]
fn rule_empty_component_role() {
    let bad = dense().renamed(&["objects", "w", "components"], "data", t(""));
    refused(&dense(), &bad, Format, "component name is empty");
}

#[test]
fn rule_name_with_nul() {
    refused(
        &dense(),
        &dense().renamed(&["objects"], "w", t("a\0b")),
        Format,
        "contains a NUL byte",
    );
    let bad = dense().renamed(&["objects", "w", "components"], "data", t("da\0ta"));
    refused(&dense(), &bad, Format, "contains a NUL byte");
}

#[test]
fn rule_name_not_utf8_text() {
    let good = dense().renamed(&["objects"], "w", t("NAME"));
    let manifest = cbor::to_vec(&good.manifest);
    Reader::from_slice(&assemble(false, &good.blobs, &manifest)).unwrap();
    let bad = replace_once(&manifest, b"\x64NAME", b"\x64\xffAM\xfe");
    refused_bytes(
        &assemble(false, &good.blobs, &bad),
        &OpenOptions::default(),
        Format,
        "invalid UTF-8",
    );
    // A byte-string key is not a name either.
    refused(
        &good,
        &good.renamed(&["objects"], "NAME", Value::Bytes(b"NAME".to_vec())),
        Format,
        "object name must be text",
    );
}

#[test]
fn rule_name_over_max_name_length() {
    let short = limits(|l| l.max_name_length = 4);
    let good = dense().renamed(&["objects"], "w", t("abcd"));
    let bad = dense().renamed(&["objects"], "w", t("abcde"));
    refused_with(
        &good,
        &bad,
        &short,
        Limit,
        "object name is 5 bytes, over the limit of 4",
    );
    let custom = dense().with(&w("format"), t("custom"));
    let good = custom.renamed(&["objects", "w", "components"], "data", t("dat"));
    let bad = custom.renamed(&["objects", "w", "components"], "data", t("datum"));
    refused_with(
        &good,
        &bad,
        &limits(|l| l.max_name_length = 3),
        Limit,
        "component name is 5 bytes",
    );
}

#[test]
fn rule_duplicate_object_names() {
    refused(
        &dense(),
        &dense().duplicated(&["objects"], "w"),
        Format,
        "duplicate object name 'w'",
    );
}

#[test]
fn rule_duplicate_keys_in_a_manifest_map() {
    // First-wins and last-wins readers would see different files: refuse them.
    let twice = |path: &[&str], key: &str, value: Value| {
        let mut f = dense();
        entries(at(&mut f.manifest, path)).push((t(key), value));
        f
    };
    let component = twice(&["objects", "w", "components", "data"], "offset", u(128));
    refused(
        &dense(),
        &component,
        Format,
        "the component has the key 'offset' more than once",
    );
    let object = twice(&["objects", "w"], "shape", dims(&[4]));
    refused(
        &dense(),
        &object,
        Format,
        "the object has the key 'shape' more than once",
    );
    let manifest = twice(&[], "version", t("2.0.0"));
    refused(
        &dense(),
        &manifest,
        Format,
        "the manifest has the key 'version' more than once",
    );
    let mut legacy = legacy_dense();
    entries(at(&mut legacy.manifest, &["0"])).push((t("offset"), u(128)));
    refused(
        &legacy_dense(),
        &legacy,
        Format,
        "the legacy tensor has the key 'offset' more than once",
    );
    // Repeated keys inside attributes are the user's business.
    opens(&dense().with(
        &["attributes"],
        Value::Map(vec![(t("k"), u(1)), (t("k"), u(2))]),
    ));
}

/// CBOR with indefinite lengths and 8-byte integer heads everywhere, map entries reversed.
fn lenient_cbor(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Unsigned(n) => {
            out.push(0x1b);
            out.extend(n.to_be_bytes());
        }
        Value::Array(items) => {
            out.push(0x9f);
            items.iter().for_each(|i| lenient_cbor(i, out));
            out.push(0xff);
        }
        Value::Map(pairs) => {
            out.push(0xbf);
            for (k, v) in pairs.iter().rev() {
                lenient_cbor(k, out);
                lenient_cbor(v, out);
            }
            out.push(0xff);
        }
        Value::Text(s) => {
            out.push(0x7f); // one chunk per character
            for c in s.chars() {
                cbor::encode(&Value::Text(c.to_string()), out);
            }
            out.push(0xff);
        }
        other => cbor::encode(other, out),
    }
}

#[test]
fn rule_lenient_cbor_and_unknown_keys_are_accepted() {
    let f = csr()
        .with(
            &["attributes"],
            m(&[
                ("when", Value::Tag(1, Box::new(u(1_700_000_000)))),
                ("half", Value::Float(0.5)),
            ]),
        )
        .with(&["future_key"], m(&[("x", Value::Null)]))
        .with(&["objects", "s", "future_key"], Value::Bytes(vec![1, 2]))
        .with(&sparse_path("values", "future_key"), Value::Array(vec![]));
    opens(&f);
    let mut manifest = Vec::new();
    lenient_cbor(&f.manifest, &mut manifest);
    assert_ne!(manifest, cbor::to_vec(&f.manifest));
    let bytes = assemble(false, &f.blobs, &manifest);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.objects()[0].shape(), &[2, 3]);
    assert_eq!(common::read(&r, "s", "indptr"), u64s(&[0, 2, 3]));
    r.validate_values(0).unwrap();
}

#[test]
fn rule_duplicate_component_roles() {
    refused(
        &dense(),
        &dense().duplicated(&["objects", "w", "components"], "data"),
        Format,
        "duplicate component role 'data'",
    );
}

// ---------------------------------------------------------------------------------------
// Legacy v0.1
// ---------------------------------------------------------------------------------------

#[test]
fn rule_legacy_too_short() {
    // The smallest legacy file: header, an empty CBOR array, its size (17 bytes).
    let empty = Fixture::legacy(Value::Array(vec![]), &[]).bytes();
    assert_eq!(empty.len(), 17);
    open_three_ways(&empty, &OpenOptions::default())
        .into_iter()
        .for_each(|r| r.unwrap());
    refused_bytes(&empty[..16], &OpenOptions::default(), Format, "too short");
    refused_bytes(b"ZTEN0001", &OpenOptions::default(), Format, "too short");
}

#[test]
fn rule_legacy_manifest_not_an_array() {
    let good = legacy_dense();
    let bad = Fixture {
        manifest: good.manifest.as_array().unwrap()[0].clone(),
        ..good.clone()
    };
    refused(&good, &bad, Format, "legacy manifest must be an array");
    let bad = Fixture {
        manifest: Value::Array(vec![t("w")]),
        ..good.clone()
    };
    refused(&good, &bad, Format, "legacy tensor entry must be a map");
}

#[test]
fn rule_legacy_missing_keys() {
    for key in ["name", "offset", "size", "dtype", "shape"] {
        let bad = legacy_dense().without(&["0", key]);
        refused(
            &legacy_dense(),
            &bad,
            Format,
            &format!("lacks the required key '{key}'"),
        );
    }
}

#[test]
fn rule_legacy_unknown_long_dtype() {
    let good = legacy_dense();
    opens(&good.with(&["0", "dtype"], t("f32"))); // short names are accepted too
    for name in ["float128", "float", "complex64"] {
        refused(
            &good,
            &good.with(&["0", "dtype"], t(name)),
            Format,
            "unknown dtype",
        );
    }
}

#[test]
fn rule_legacy_big_endian_data_is_swapped_on_read() {
    let values = [1.0f32, -2.5, 3.25, 1.0e-3];
    let big: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    let f = legacy_dense()
        .with(&["0", "data_endianness"], t("big"))
        .with_blob(0, big);
    let bytes = open_ok(&f);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), f32s(&values));
    assert_eq!(r.view(0, 0).unwrap().data, &f32s(&values)[..]);
    let mut second = [0u8; 4];
    r.read_range(0, 0, 4, &mut second).unwrap();
    assert_eq!(f32::from_le_bytes(second), -2.5);
    refused(
        &f,
        &f.with(&["0", "data_endianness"], t("middle")),
        Format,
        "data_endianness 'middle'",
    );
}

#[test]
fn rule_legacy_coo_size_not_whole_records() {
    let good = legacy_coo();
    let bytes = open_ok(&good);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.objects()[0].format(), "sparse_coo");
    assert_eq!(common::read(&r, "w", "coords"), u64s(&[0, 1, 1, 2]));
    assert_eq!(common::read(&r, "w", "values"), f32s(&[1.5, -2.0]));
    refused(
        &good,
        &good.with(&["0", "size"], u(39)),
        Format,
        "not a whole number of 20-byte records",
    );
}

#[test]
fn rule_legacy_csr_size_not_splitting() {
    let good = legacy_csr();
    let bytes = open_ok(&good);
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.objects()[0].format(), "sparse_csr");
    assert_eq!(common::read(&r, "w", "indptr"), u64s(&[0, 1, 2]));
    assert_eq!(common::read(&r, "w", "values"), f32s(&[1.5, -2.0]));
    r.validate_values(0).unwrap();
    refused(
        &good,
        &good.with(&["0", "size"], u(46)),
        Format,
        "does not split into row pointers, indices and values",
    );
    refused(
        &good,
        &good.with(&["0", "size"], u(16)),
        Format,
        "cannot hold 3 row pointers",
    );
    refused(
        &good,
        &good.with(&["0", "shape"], dims(&[6])),
        Format,
        "needs a 2-d shape",
    );
}

#[test]
fn rule_legacy_unknown_layout() {
    let good = legacy_dense();
    refused(
        &good,
        &good.with(&["0", "layout"], t("blocked")),
        Unsupported,
        "legacy layout 'blocked'",
    );
    let bsr = good
        .with(&["0", "layout"], t("sparse"))
        .with(&["0", "sparse_format"], t("bsr"));
    refused(&good, &bsr, Unsupported, "sparse_format");
}

#[test]
fn rule_legacy_blob_placement() {
    let good = legacy_dense();
    refused(
        &good,
        &good.with(&["0", "offset"], u(72)),
        Format,
        "not a multiple of 64",
    );
    refused(
        &good,
        &good.with(&["0", "offset"], u(0)),
        Format,
        "offset 0",
    );
    refused(
        &good,
        &good.with(&["0", "size"], u(20)),
        Format,
        "reach past the data region",
    );
}
