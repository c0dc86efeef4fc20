//! Element conversions through every public path that runs them on large outputs, where
//! they split over the pool and write with non-temporal stores: `read_as` (and
//! `read_as_range`), and the loader's rows and column slices into host memory. Every
//! value of every path is checked against the widening's definition, bytes exact, with
//! the pieces that stream and the ones that don't (a small staging size).

use ztensor::load::{Destination, NoEvents, Request, Slice};
use ztensor::{DType, Loader, LoaderOptions, Reader, WriteOptions, Writer};

const ROWS: usize = 1024;
const COLS: usize = 4096;

/// Deterministic 16-bit patterns: every class (zeros, subnormals, normals, infinities,
/// NaNs quiet and signalling) appears many times.
fn patterns(seed: u64, n: usize) -> Vec<u16> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 40) as u16
        })
        .collect()
}

/// The f32 bits of an IEEE half, exactly (NaN payloads kept): the definition.
fn f16_bits(h: u16) -> u32 {
    let sign = u32::from(h & 0x8000) << 16;
    let (exp, man) = (u32::from(h >> 10) & 0x1f, u32::from(h & 0x3ff));
    let rest = match (exp, man) {
        (0, 0) => 0,
        (0, m) => {
            // m x 2^-24, normalized.
            let top = 31 - m.leading_zeros();
            ((top + 103) << 23) | ((m << (23 - top)) & 0x7f_ffff)
        }
        (31, m) => 0x7f80_0000 | (m << 13),
        (e, m) => ((e + 112) << 23) | (m << 13),
    };
    sign | rest
}

fn widen(dtype: DType, h: u16) -> u32 {
    match dtype {
        DType::BF16 => u32::from(h) << 16,
        _ => f16_bits(h),
    }
}

/// A file with "bf16" and "f16", ROWS x COLS each, and the values.
fn file(dir: &std::path::Path) -> (std::path::PathBuf, Vec<Vec<u16>>) {
    let path = dir.join("conversions.zt");
    let mut w = Writer::create(&path).unwrap();
    let mut all = Vec::new();
    for (i, (name, dtype)) in [("bf16", DType::BF16), ("f16", DType::F16)]
        .into_iter()
        .enumerate()
    {
        let v = patterns(i as u64 + 1, ROWS * COLS);
        let bytes: Vec<u8> = v.iter().flat_map(|h| h.to_le_bytes()).collect();
        w.add(
            name,
            dtype,
            &[ROWS as u64, COLS as u64],
            &bytes,
            &WriteOptions::default(),
        )
        .unwrap();
        all.push(v);
    }
    w.finish().unwrap();
    (path, all)
}

fn scratch_dir() -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("conversions-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The first element of `got` (f32 bits, little-endian) that differs from `want`.
fn first_difference(got: &[u8], want: &[u32]) -> Option<(usize, u32, u32)> {
    got.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .zip(want)
        .enumerate()
        .find(|(_, (g, w))| g != *w)
        .map(|(i, (g, w))| (i, g, *w))
}

#[test]
fn large_conversions_write_every_value_exactly_on_every_path() {
    let dir = scratch_dir();
    let (path, values) = file(&dir);
    let r = Reader::open(&path).unwrap();
    for (object, dtype) in [(0usize, DType::BF16), (1, DType::F16)] {
        let v = &values[object];
        let want: Vec<u32> = v.iter().map(|&h| widen(dtype, h)).collect();

        // read_as: 16 MiB of f32 (split over the pool, streamed).
        let mut out = vec![0u8; want.len() * 4 + 4];
        r.read_as(object, 0, DType::F32, &mut out[..want.len() * 4])
            .unwrap();
        assert_eq!(first_difference(&out, &want), None, "{dtype} read_as");
        // An element-aligned destination that is not line-aligned.
        r.read_as(object, 0, DType::F32, &mut out[4..]).unwrap();
        assert_eq!(
            first_difference(&out[4..], &want),
            None,
            "{dtype} read_as +4"
        );

        // read_as_range: a middle range, unaligned to anything.
        let (first, count) = (12_345usize, 2_100_001usize);
        let mut part = vec![0u8; count * 4];
        r.read_as_range(object, 0, DType::F32, first as u64, &mut part)
            .unwrap();
        assert_eq!(
            first_difference(&part, &want[first..first + count]),
            None,
            "{dtype} read_as_range"
        );

        // The loader: rows [50, 850) and the columns [1024, 3072) of every row (8 MiB of
        // f32), with the default staging (chunks of 16 MiB: streamed) and a small one
        // (64 KiB chunks: not streamed), on the pool.
        let (r0, rn) = (50usize, 800usize);
        let (c0, cn) = (COLS / 4, COLS / 2);
        let want_rows = &want[r0 * COLS..(r0 + rn) * COLS];
        let want_cols: Vec<u32> = (0..ROWS)
            .flat_map(|row| want[row * COLS + c0..row * COLS + c0 + cn].iter().copied())
            .collect();
        for staging in [0usize, 64 << 10] {
            let loader = Loader::new(
                None,
                &LoaderOptions {
                    staging_size: staging,
                    ..LoaderOptions::default()
                },
            )
            .unwrap();
            let mut rows_out = vec![0u8; rn * COLS * 4];
            let mut cols_out = vec![0u8; ROWS * cn * 4];
            let mut requests = [
                Request {
                    object,
                    component: 0,
                    slice: Slice::Rows {
                        first: r0 as u64,
                        count: rn as u64,
                    },
                    convert: Some(DType::F32),
                    verify: false,
                    dst: Destination::Host(&mut rows_out),
                },
                Request {
                    object,
                    component: 0,
                    slice: Slice::Columns {
                        first: c0 as u64,
                        count: cn as u64,
                    },
                    convert: Some(DType::F32),
                    verify: false,
                    dst: Destination::Host(&mut cols_out),
                },
            ];
            for (result, _) in loader.load(&r, &mut requests, &NoEvents) {
                result.unwrap();
            }
            assert_eq!(
                first_difference(&rows_out, want_rows),
                None,
                "{dtype} rows, staging {staging}"
            );
            assert_eq!(
                first_difference(&cols_out, &want_cols),
                None,
                "{dtype} columns, staging {staging}"
            );
        }
    }
    drop(r);
    std::fs::remove_dir_all(&dir).unwrap();
}
