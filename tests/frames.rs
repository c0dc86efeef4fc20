//! Range reads of zstd components through their frame index: the seek table this library
//! writes, another writer's frames without a table (indexed from their headers), the
//! reference writer's single frame (decoded from its start, streaming), and seek tables
//! that lie (Format errors, never a wrong byte). Every kind of source: mapped, pread and
//! caller memory.

mod common;

use std::path::Path;

use common::*;
use ztensor::cbor::{self, Value};
use ztensor::{DType, ErrorKind, OpenOptions, Reader, WriteOptions, Writer, ZSTD_FRAME_SIZE};

const FRAME: usize = ZSTD_FRAME_SIZE;

/// Compressible bytes (nibbles), so debug-build compression stays quick.
fn data(seed: u64, len: usize) -> Vec<u8> {
    bytes(seed, len).iter().map(|b| b & 0x0f).collect()
}

/// A v1.2 file holding `stream` as the zstd "data" component of a dense u8 object "w"
/// of `decoded` bytes, as another writer could make it.
fn file_with_stream(stream: &[u8], decoded: u64) -> Vec<u8> {
    let t = |s: &str| Value::Text(s.into());
    let u = Value::Unsigned;
    let component = Value::Map(vec![
        (t("dtype"), t("u8")),
        (t("offset"), u(64)),
        (t("length"), u(stream.len() as u64)),
        (t("uncompressed_length"), u(decoded)),
        (t("encoding"), t("zstd")),
    ]);
    let object = Value::Map(vec![
        (t("shape"), Value::Array(vec![u(decoded)])),
        (t("format"), t("dense")),
        (t("components"), Value::Map(vec![(t("data"), component)])),
    ]);
    let root = Value::Map(vec![
        (t("version"), t("1.2.0")),
        (t("objects"), Value::Map(vec![(t("w"), object)])),
    ]);
    let manifest = cbor::to_vec(&root);
    let mut file = b"ZTEN1000".to_vec();
    file.resize(64, 0);
    file.extend_from_slice(stream);
    file.extend_from_slice(&manifest);
    file.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
    file.extend_from_slice(b"ZTEN1000");
    file
}

/// Our writer's file of `data` as zstd level 1.
fn ours(data: &[u8]) -> Vec<u8> {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add(
        "w",
        DType::U8,
        &[data.len() as u64],
        data,
        &WriteOptions::zstd(1),
    )
    .unwrap();
    w.finish().unwrap()
}

/// A frame recording its content size.
fn sized_frame(data: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(data, 1).unwrap()
}

/// A frame without a content size, like the reference writer's.
fn unsized_frame(data: &[u8]) -> Vec<u8> {
    let mut c = zstd::bulk::Compressor::new(3).unwrap();
    c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))
        .unwrap();
    c.compress(data).unwrap()
}

/// The seek table of zstd's seekable format for frames of (compressed, decompressed)
/// sizes, with an XXH64 checksum per frame when given.
fn seek_table(frames: &[(u32, u32)], checksums: Option<&[u32]>) -> Vec<u8> {
    let entry = if checksums.is_some() { 12 } else { 8 };
    let mut t = vec![0x5E, 0x2A, 0x4D, 0x18];
    t.extend_from_slice(&((frames.len() * entry + 9) as u32).to_le_bytes());
    for (i, (c, d)) in frames.iter().enumerate() {
        t.extend_from_slice(&c.to_le_bytes());
        t.extend_from_slice(&d.to_le_bytes());
        if let Some(sums) = checksums {
            t.extend_from_slice(&sums[i].to_le_bytes());
        }
    }
    t.extend_from_slice(&(frames.len() as u32).to_le_bytes());
    t.push(if checksums.is_some() { 0x80 } else { 0 });
    t.extend_from_slice(&[0xB1, 0xEA, 0x92, 0x8F]);
    t
}

/// The file opened the three ways: mapped, pread, caller memory.
fn each_reader(file: &[u8], name: &str, check: impl Fn(&Reader<'_>, &str)) {
    let path = temp_dir(&format!("frames_{name}")).join("f.zt");
    std::fs::write(&path, file).unwrap();
    for use_mmap in [true, false] {
        let opts = OpenOptions {
            use_mmap,
            ..Default::default()
        };
        let r = Reader::open_with(&path, &opts).unwrap();
        check(&r, if use_mmap { "mmap" } else { "pread" });
    }
    check(&Reader::from_slice(file).unwrap(), "memory");
}

/// Range reads around every decoded entry boundary of the index, across boundaries, of
/// whole entries and of everything, against `data`; and `for_each_piece`.
fn check_ranges(r: &Reader<'_>, data: &[u8], how: &str) {
    let index = r.frame_index(0, 0).unwrap();
    let len = data.len() as u64;
    let mut ranges: Vec<(u64, u64)> = vec![(0, 1), (len - 1, len), (0, len), (len / 3, len / 2)];
    for f in index.iter() {
        let (a, b) = (f.decoded.start, f.decoded.end);
        ranges.push((a, b));
        for p in [a, b] {
            for (lo, hi) in [(1, 1), (0, 1), (1, 0), (4096, 4096), (0, 100_000)] {
                ranges.push((p.saturating_sub(lo), (p + hi).min(len)));
            }
        }
    }
    // Across two boundaries: from the middle of one entry to the middle of the one after next.
    let spans: Vec<_> = index.iter().collect();
    for w in spans.windows(3) {
        let mid = |f: &ztensor::FrameSpan| (f.decoded.start + f.decoded.end) / 2;
        ranges.push((mid(&w[0]), mid(&w[2])));
    }
    for (a, b) in ranges {
        if a >= b {
            continue;
        }
        let mut dst = vec![0xEEu8; (b - a) as usize];
        r.read_range(0, 0, a, &mut dst)
            .unwrap_or_else(|e| panic!("{how}: range [{a}, {b}): {e}"));
        assert!(
            dst == data[a as usize..b as usize],
            "{how}: range [{a}, {b})"
        );
    }
    let mut streamed = Vec::new();
    r.for_each_piece(0, 0, |p| {
        assert!(p.len() == FRAME || streamed.len() + p.len() == data.len());
        streamed.extend_from_slice(p);
        Ok(())
    })
    .unwrap();
    assert!(streamed == data, "{how}: for_each_piece");
    assert!(r.read_to_vec(0, 0).unwrap() == data, "{how}: read");
}

/// (stored, decoded) ranges of every index entry.
fn spans(r: &Reader<'_>) -> Vec<(std::ops::Range<u64>, std::ops::Range<u64>)> {
    r.frame_index(0, 0)
        .unwrap()
        .iter()
        .map(|f| (f.stored, f.decoded))
        .collect()
}

#[test]
fn our_frames_are_found_through_the_seek_table() {
    let d = data(1, 3 * FRAME + FRAME / 2 + 5);
    let file = ours(&d);
    each_reader(&file, "ours", |r, how| {
        let index = r.frame_index(0, 0).unwrap();
        assert!(index.has_seek_table(), "{how}");
        assert_eq!(index.len(), 4);
        assert_eq!(index.frames_per_entry(), 1);
        let decoded: Vec<_> = index.iter().map(|f| f.decoded).collect();
        let f = FRAME as u64;
        assert_eq!(
            decoded,
            [0..f, f..2 * f, 2 * f..3 * f, 3 * f..d.len() as u64]
        );
        // The entries cover the stored bytes up to the table, without gaps.
        let c = &r.objects()[0].components()[0];
        let last = index.get(3).unwrap().stored.end;
        assert_eq!(index.get(0).unwrap().stored.start, 0);
        assert_eq!(c.length() - last, 8 + 4 * 8 + 9, "{how}: the table follows");
        assert!(r.range_reads_are_cheap(0, 0).unwrap(), "{how}");
        check_ranges(r, &d, how);
        // The same Arc each time: built once, cached.
        assert!(std::sync::Arc::ptr_eq(
            &index,
            &r.frame_index(0, 0).unwrap()
        ));
    });
    // One frame: no table.
    let small = data(2, 1000);
    let file = ours(&small);
    let r = Reader::from_slice(&file).unwrap();
    let index = r.frame_index(0, 0).unwrap();
    assert!(!index.has_seek_table());
    assert_eq!(
        spans(&r),
        [(0..r.objects()[0].components()[0].length(), 0..1000)]
    );
    check_ranges(&r, &small, "one frame");
}

#[test]
fn another_writers_frames_without_a_table_are_indexed_from_their_headers() {
    let parts = [
        data(3, 1 << 20),
        data(4, 3 << 20),
        data(5, 100_000),
        data(6, (2 << 20) + 7),
    ];
    let mut frames: Vec<Vec<u8>> = parts.iter().map(|p| sized_frame(p)).collect();
    // A skippable frame between the second and the third.
    frames.insert(
        2,
        [&[0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0][..], b"skip"].concat(),
    );
    let stream = frames.concat();
    let d = parts.concat();
    let file = file_with_stream(&stream, d.len() as u64);
    each_reader(&file, "foreign", |r, how| {
        let index = r.frame_index(0, 0).unwrap();
        assert!(!index.has_seek_table(), "{how}");
        let decoded: Vec<_> = index.iter().map(|f| f.decoded).collect();
        let (a, b, c) = (1u64 << 20, 4u64 << 20, (4u64 << 20) + 100_000);
        // Every frame placed from its headers; the last one (holding the last bytes) is not
        // walked: it ends the stream.
        assert_eq!(decoded, [0..a, a..b, b..b, b..c, c..d.len() as u64]);
        let stored: Vec<u64> = index
            .iter()
            .map(|f| f.stored.end - f.stored.start)
            .collect();
        let lens: Vec<u64> = frames.iter().map(|f| f.len() as u64).collect();
        assert_eq!(stored, lens);
        assert!(r.range_reads_are_cheap(0, 0).unwrap(), "{how}");
        check_ranges(r, &d, how);
    });

    // A frame without a content size in the middle: the walk places the frames before it;
    // it and everything after it are one entry, decoded from its start.
    let mixed = [
        sized_frame(&parts[0]),
        unsized_frame(&parts[1]),
        sized_frame(&parts[3]),
    ]
    .concat();
    let d = [&parts[0][..], &parts[1], &parts[3]].concat();
    let file = file_with_stream(&mixed, d.len() as u64);
    each_reader(&file, "mixed", |r, how| {
        let s = sized_frame(&parts[0]).len() as u64;
        assert_eq!(
            spans(r),
            [
                (0..s, 0..1 << 20),
                (s..mixed.len() as u64, 1 << 20..d.len() as u64)
            ]
        );
        // The last entry holds 5 MiB: more than a frame of ours.
        assert!(!r.range_reads_are_cheap(0, 0).unwrap(), "{how}");
        check_ranges(r, &d, how);
    });
}

#[test]
fn the_reference_writers_single_frame_is_decoded_from_its_start_only_as_far_as_needed() {
    let d = data(7, 2 * FRAME + 12_345);
    let stream = unsized_frame(&d);
    let file = file_with_stream(&stream, d.len() as u64);
    each_reader(&file, "reference", |r, how| {
        assert_eq!(spans(r), [(0..stream.len() as u64, 0..d.len() as u64)]);
        assert!(!r.range_reads_are_cheap(0, 0).unwrap(), "{how}");
        check_ranges(r, &d, how);
    });
    // The reference writer's own files: one frame per component, without a content size.
    for name in [
        "v12_zstd_default",
        "v12_zstd_level22",
        "v12_sparse_coo_3d_zstd_sha256",
    ] {
        let theirs = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("tests/vectors/reference/{name}.zt")),
        )
        .unwrap();
        let r = Reader::from_slice(&theirs).unwrap();
        check_reference_file(&r);
    }
}

fn check_reference_file(r: &Reader<'_>) {
    for o in 0..r.objects().len() {
        for c in 0..r.objects()[o].components().len() {
            if r.frame_index(o, c).is_err() {
                continue; // a raw component
            }
            let all = r.read_to_vec(o, c).unwrap();
            let index = r.frame_index(o, c).unwrap();
            assert_eq!(index.len(), 1);
            assert_eq!(index.get(0).unwrap().decoded, 0..all.len() as u64);
            for (at, &want) in all.iter().enumerate() {
                let mut b = [0u8];
                r.read_range(o, c, at as u64, &mut b).unwrap();
                assert_eq!(b[0], want);
            }
        }
    }
}

/// Our file of three frames and a half, and where its table starts in the file.
fn ours_with_table() -> (Vec<u8>, Vec<u8>, usize) {
    let d = data(8, 3 * FRAME + FRAME / 2);
    let file = ours(&d);
    let r = Reader::from_slice(&file).unwrap();
    let c = &r.objects()[0].components()[0];
    let end = (c.offset() + c.length()) as usize;
    (d, file.clone(), end - (8 + 4 * 8 + 9))
}

/// `file` with the little-endian u32 at `at` replaced by `f(old)`.
fn patched(file: &[u8], at: usize, f: impl Fn(u32) -> u32) -> Vec<u8> {
    let mut out = file.to_vec();
    let old = u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
    out[at..at + 4].copy_from_slice(&f(old).to_le_bytes());
    out
}

#[test]
fn tables_that_lie_are_format_errors_and_reads_still_work() {
    let (d, file, table) = ours_with_table();
    let entry = |i: usize| table + 8 + 8 * i;
    let footer = table + 8 + 4 * 8;
    let sums_disagree = format!(
        "decode to {} bytes, but the component has {}",
        d.len() + 1,
        d.len()
    );
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "count past the start",
            patched(&file, footer, |_| u32::MAX),
            "4294967295 frames need a 34359738377-byte table",
        ),
        (
            "count one short",
            patched(&file, footer, |n| n - 1),
            "3 frames, but the table frame at byte",
        ),
        (
            "decompressed sizes add up to more",
            patched(&file, entry(1) + 4, |n| n + 1),
            &sums_disagree,
        ),
        (
            "a compressed size past the end",
            patched(&file, entry(3), |_| u32::MAX),
            "bytes precede the table",
        ),
        (
            "a zero compressed size",
            patched(&file, entry(2), |_| 0),
            "frame 2 has a compressed size of 0",
        ),
        (
            "reserved descriptor bits",
            {
                let mut f = file.clone();
                f[footer + 4] = 0x40;
                f
            },
            "descriptor 0x40 sets reserved bits",
        ),
        (
            "a checksum flag over 8-byte entries",
            {
                let mut f = file.clone();
                f[footer + 4] = 0x80;
                f
            },
            "4 frames, but the table frame at byte",
        ),
        (
            "another skippable magic",
            patched(&file, table, |_| 0x184D_2A50),
            "has magic 0x184d2a50 and size 41 (expected 0x184d2a5e and 41)",
        ),
    ];
    for (what, bad, message) in cases {
        each_reader(&bad, "lies", |r, how| {
            let e = r.frame_index(0, 0).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Format, "{what} ({how}): {e}");
            assert!(e.message().contains("zstd seek table: "), "{what}: {e}");
            assert!(e.message().contains(message), "{what}: {e}");
            let mut b = [0u8; 16];
            let e = r.read_range(0, 0, 100, &mut b).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Format, "{what} ({how}): {e}");
            assert!(!r.range_reads_are_cheap(0, 0).unwrap());
            // Any zstd decoder skips the table: whole reads are unaffected.
            assert!(r.read_to_vec(0, 0).unwrap() == d, "{what} ({how})");
            // Streaming piece by piece goes through the index: refused, before any piece.
            let mut n = 0;
            let e = r
                .for_each_piece(0, 0, |p| {
                    n += p.len();
                    Ok(())
                })
                .unwrap_err();
            assert_eq!((e.kind(), n), (ErrorKind::Format, 0), "{what}: {e}");
        });
    }

    // Copying the object as stored would spread the lie: refused.
    let bad = patched(&file, footer, |n| n - 1);
    let r = Reader::from_slice(&bad).unwrap();
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let e = w
        .copy_object(&r, 0, &ztensor::CopyOptions::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format, "{e}");
    assert!(e.message().contains("zstd seek table: 3 frames"), "{e}");

    // Sizes that add up but put the boundaries in the wrong places: each frame's header
    // says where it is and what it decodes to, so the index is refused, naming the frame;
    // whole reads are unaffected.
    let swapped = patched(&patched(&file, entry(0), |n| n + 1), entry(1), |n| n - 1);
    let shifted = patched(
        &patched(&file, entry(2) + 4, |n| n - 1000),
        entry(3) + 4,
        |n| n + 1000,
    );
    for (what, bad, message) in [
        ("compressed", swapped, "frame 1 (stored bytes "),
        ("decompressed", shifted, "frame 2 (stored bytes "),
    ] {
        each_reader(&bad, "misplaced", |r, how| {
            let e = r.frame_index(0, 0).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Format, "{what} ({how}): {e}");
            assert!(e.message().contains(message), "{what} ({how}): {e}");
            for f in [0u64, FRAME as u64 + 5, 3 * FRAME as u64 + 5] {
                let mut dst = [0u8; 100];
                let e = r.read_range(0, 0, f, &mut dst).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Format, "{what} ({how}): {e}");
            }
            assert!(r.read_to_vec(0, 0).unwrap() == d);
        });
    }
}

/// The library's 9 MiB component (frames of 4, 4 and 1 MiB, and a seek table), and
/// where its table's entries are in the file.
fn nine_mib() -> (Vec<u8>, Vec<u8>, usize) {
    let d = data(14, 9 << 20);
    let file = ours(&d);
    let r = Reader::from_slice(&file).unwrap();
    let c = &r.objects()[0].components()[0];
    let table = (c.offset() + c.length()) as usize - (8 + 3 * 8 + 9);
    (d, file.clone(), table + 8)
}

/// A seek table whose decoded sizes add up but are not the frames' (0, 0 and 9 MiB for
/// frames of 4, 4 and 1 MiB) is a Format error naming the component and the frame, for
/// every range and every kind of source: never the bytes of another frame with Ok. Also
/// with frames and a table made by hand; and with frames that don't state their size,
/// whose table can't be checked without decoding them, every range reads right (the
/// index places nothing after the first such frame).
#[test]
fn decoded_sizes_that_add_up_but_lie_never_give_wrong_bytes() {
    let (d, file, entries) = nine_mib();
    let sizes = |file: &[u8], sizes: [u32; 3]| {
        let mut f = file.to_vec();
        for (k, size) in sizes.iter().enumerate() {
            let at = entries + 8 * k + 4;
            f[at..at + 4].copy_from_slice(&size.to_le_bytes());
        }
        f
    };
    let nine = 9u32 << 20;
    let four = 4u32 << 20;
    for (lie, frame, says) in [
        ([0, 0, nine], 0, 0),
        ([four, 0, four + (1 << 20)], 1, 0),
        ([four + 1, four - 1, 1 << 20], 0, four + 1),
        // Frame 2 read: the first two entries together are right, frame 2's own is not.
        ([four, four + 1, (1 << 20) - 1], 1, four + 1),
    ] {
        let bad = sizes(&file, lie);
        each_reader(&bad, "lying_sizes", |r, how| {
            let e = r.frame_index(0, 0).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Format, "{lie:?} ({how}): {e}");
            assert!(
                e.message().starts_with("object 'w' component 'data': ")
                    || e.message().contains(": object 'w' component 'data': "),
                "{how}: {e}"
            );
            assert!(
                e.message()
                    .contains(&format!("zstd seek table: frame {frame} (stored bytes "))
                    && e.message().contains(&format!(
                        "decodes to {says} bytes per the table, but its header says it \
                     decodes to "
                    )),
                "{lie:?} ({how}): {e}"
            );
            for at in [0u64, 100, 4 << 20, (8 << 20) + 7, (9 << 20) - 100] {
                let mut b = [0u8; 100];
                let e = r.read_range(0, 0, at, &mut b).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Format, "{how}: {e}");
            }
            assert!(r.read_to_vec(0, 0).unwrap() == d, "{how}");
        });
    }

    // Hand-made: frames of 300, 200 and 100 KB, the table saying 0, 0 and 600 KB.
    let parts = [data(15, 300_000), data(16, 200_000), data(17, 100_000)];
    let all = parts.concat();
    let table = |frames: &[Vec<u8>], decoded: [u32; 3]| {
        let sizes: Vec<(u32, u32)> = frames
            .iter()
            .zip(decoded)
            .map(|(f, n)| (f.len() as u32, n))
            .collect();
        [frames.concat(), seek_table(&sizes, None)].concat()
    };
    let sized: Vec<Vec<u8>> = parts.iter().map(|p| sized_frame(p)).collect();
    let file = file_with_stream(&table(&sized, [0, 0, 600_000]), 600_000);
    each_reader(&file, "hand_made_lie", |r, how| {
        let mut b = [0u8; 100];
        let e = r.read_range(0, 0, 0, &mut b).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{how}: {e}");
        let frame0 = format!(
            "zstd seek table: frame 0 (stored bytes 0..{}) decodes to 0 bytes per the table, \
             but its header says it decodes to 300000 bytes",
            sized[0].len()
        );
        assert!(e.message().ends_with(&frame0), "{how}: {e}");
        assert!(r.read_to_vec(0, 0).unwrap() == all);
    });
    // Frames that state no size: the same lies read every byte right.
    let unsized_frames: Vec<Vec<u8>> = parts.iter().map(|p| unsized_frame(p)).collect();
    for lie in [
        [0, 0, 600_000],
        [300_000, 250_000, 50_000],
        [300_000, 200_000, 100_000],
    ] {
        let file = file_with_stream(&table(&unsized_frames, lie), 600_000);
        each_reader(&file, "hand_made_unsized", |r, how| {
            let index = r.frame_index(0, 0).unwrap();
            assert!(index.has_seek_table());
            assert_eq!(
                index.len(),
                1,
                "{how}: nothing is placed after an unsized frame"
            );
            check_ranges(r, &all, how);
        });
    }
    // Sized frames, then unsized ones: the sized ones are checked and placed.
    let mixed = [
        sized[0].clone(),
        unsized_frames[1].clone(),
        unsized_frames[2].clone(),
    ];
    let file = file_with_stream(&table(&mixed, [300_000, 0, 300_000]), 600_000);
    each_reader(&file, "hand_made_mixed", |r, how| {
        let decoded: Vec<_> = r
            .frame_index(0, 0)
            .unwrap()
            .iter()
            .map(|f| f.decoded)
            .collect();
        assert_eq!(decoded, [0..300_000, 300_000..600_000], "{how}");
        check_ranges(r, &all, how);
    });
}

#[test]
fn seek_table_checksums_are_checked() {
    let parts = [data(9, 300_000), data(10, 200_000), data(11, 50_000)];
    let frames: Vec<Vec<u8>> = parts.iter().map(|p| sized_frame(p)).collect();
    let sizes: Vec<(u32, u32)> = frames
        .iter()
        .zip(&parts)
        .map(|(f, p)| (f.len() as u32, p.len() as u32))
        .collect();
    let sums: Vec<u32> = parts.iter().map(|p| xxh64_low(p)).collect();
    let d = parts.concat();
    let good = [frames.concat(), seek_table(&sizes, Some(&sums))].concat();
    let file = file_with_stream(&good, d.len() as u64);
    each_reader(&file, "checksums", |r, how| {
        assert!(r.frame_index(0, 0).unwrap().has_seek_table());
        check_ranges(r, &d, how);
    });
    let mut wrong = sums.clone();
    wrong[1] ^= 1;
    let bad = [frames.concat(), seek_table(&sizes, Some(&wrong))].concat();
    let file = file_with_stream(&bad, d.len() as u64);
    each_reader(&file, "bad_checksums", |r, how| {
        let mut b = [0u8; 10];
        // A frame whose checksum is right reads; the one whose checksum is wrong doesn't,
        // whether it is decoded whole or in part.
        r.read_range(0, 0, 5, &mut b).unwrap();
        for (at, len) in [(300_000u64, 200_000usize), (300_010, 10)] {
            let mut dst = vec![0u8; len];
            let e = r.read_range(0, 0, at, &mut dst).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Format, "{how}: {e}");
            assert!(e.message().contains("the seek table says"), "{e}");
        }
        assert!(r.read_to_vec(0, 0).unwrap() == d);
    });
}

/// The low 32 bits of XXH64 (seed 0), as zstd's content checksum and the seekable
/// format use: read back from a frame with a content checksum.
fn xxh64_low(data: &[u8]) -> u32 {
    let mut c = zstd::bulk::Compressor::new(1).unwrap();
    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .unwrap();
    let f = c.compress(data).unwrap();
    u32::from_le_bytes(f[f.len() - 4..].try_into().unwrap())
}

#[test]
fn streams_of_very_many_frames_get_entries_of_several_frames() {
    // 70,000 frames of 16 bytes, with a table: more than an index keeps (65,536).
    let n = 70_000usize;
    let d = data(12, 16 * n);
    let frames: Vec<Vec<u8>> = d.chunks(16).map(sized_frame).collect();
    let sizes: Vec<(u32, u32)> = frames.iter().map(|f| (f.len() as u32, 16)).collect();
    let stream = [frames.concat(), seek_table(&sizes, None)].concat();
    let file = file_with_stream(&stream, d.len() as u64);
    let r = Reader::from_slice(&file).unwrap();
    let index = r.frame_index(0, 0).unwrap();
    assert_eq!(index.frames_per_entry(), 2);
    assert_eq!(index.len(), n / 2);
    assert_eq!(index.get(1).unwrap().decoded, 32..64);
    for at in [0u64, 15, 16, 31, 32, 33, 555_555, d.len() as u64 - 17] {
        let mut b = [0u8; 17];
        r.read_range(0, 0, at, &mut b).unwrap();
        assert_eq!(b[..], d[at as usize..at as usize + 17]);
    }
    // Without the table the walk finds the same frames, from their headers.
    let file = file_with_stream(&frames.concat(), d.len() as u64);
    let r = Reader::from_slice(&file).unwrap();
    let index = r.frame_index(0, 0).unwrap();
    assert_eq!((index.frames_per_entry(), index.len()), (2, n / 2));
    let mut b = [0u8; 40];
    r.read_range(0, 0, 1_000_001, &mut b).unwrap();
    assert_eq!(b[..], d[1_000_001..1_000_041]);
}

#[test]
fn range_reads_from_many_threads_share_one_index() {
    let d = data(13, 2 * FRAME + 999);
    let file = ours(&d);
    let r = Reader::from_slice(&file).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (r, d) = (&r, &d);
            s.spawn(move || {
                for k in 0..20u64 {
                    let at = (t * 1_000_003 + k * 400_009) % (d.len() as u64 - 5000);
                    let mut b = vec![0u8; 5000];
                    r.read_range(0, 0, at, &mut b).unwrap();
                    assert!(b == d[at as usize..at as usize + 5000]);
                }
            });
        }
    });
    assert_eq!(r.frame_index(0, 0).unwrap().len(), 3);
}

#[test]
fn components_without_zstd_frames_have_no_index() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add(
        "raw",
        DType::U8,
        &[4],
        &[1, 2, 3, 4],
        &WriteOptions::default(),
    )
    .unwrap();
    let file = w.finish().unwrap();
    let r = Reader::from_slice(&file).unwrap();
    let e = r.frame_index(0, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        e.message(),
        "object 'raw' component 'data': the component is not stored as zstd frames of its \
         bytes (encoding raw)"
    );
    // Legacy big-endian zstd data: its frames decode to bytes that are swapped after.
    let legacy = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/vectors/hostile/v01_ok_zstd_big_endian.zt"),
    )
    .unwrap();
    let r = Reader::from_slice(&legacy).unwrap();
    let e = r.frame_index(0, 0).unwrap_err();
    assert!(
        e.message()
            .ends_with("(encoding zstd, decoded further after zstd)"),
        "{e}"
    );
}
