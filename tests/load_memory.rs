//! The memory a load holds (issue 39 item 5, issue 35 item 7): a loader run holds at most
//! `max_bytes_in_flight` besides its destinations, waiting instead of allocating past it.
//! A 4 GiB model (a sparse safetensors file: holes read as zeros, a few marked values) is
//! loaded through a 64 MiB budget into a "device" that checks what arrives and keeps
//! nothing, in a child process (this test binary again) whose peak resident set is
//! measured; a component that can only be decoded whole (a deflated `.npz` member) is
//! counted against the budget and refused when it can't fit, and the stats report what
//! was held. Run with `--nocapture` to see the numbers.

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use ztensor::load::{Device, Event, NoEvents, Request, Slice};
use ztensor::{DType, ErrorKind, Loader, LoaderOptions, Reader};

const CHILD: &str = "ZT_LOAD_MEMORY_CHILD";
const MIB: u64 = 1 << 20;
/// 16 tensors of 256 MiB (bf16, 8192 x 16384).
const TENSORS: u64 = 16;
const ROWS: u64 = 8192;
const COLS: u64 = 16384;
const TENSOR_BYTES: u64 = ROWS * COLS * 2;

/// The marked bf16 values of tensor `t`: (row, column, bits).
fn marks(t: u64) -> Vec<(u64, u64, u16)> {
    let mut out = Vec::new();
    for (k, row) in [0, 511, 2048, ROWS / 2 + 3, ROWS - 1]
        .into_iter()
        .enumerate()
    {
        for (j, col) in [0, 4095, 4096, COLS - 1].into_iter().enumerate() {
            out.push((row, col, 0x3F80 + (t * 64 + k as u64 * 8 + j as u64) as u16));
        }
    }
    out
}

/// The sparse 4 GiB safetensors file, with its marks.
fn sparse_model(path: &Path) {
    let mut header = String::from("{");
    for t in 0..TENSORS {
        if t > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            "\"t{t}\":{{\"dtype\":\"BF16\",\"shape\":[{ROWS},{COLS}],\"data_offsets\":[{},{}]}}",
            t * TENSOR_BYTES,
            (t + 1) * TENSOR_BYTES
        ));
    }
    header.push('}');
    while (header.len() + 8) % 8 != 0 {
        header.push(' ');
    }
    let data_start = 8 + header.len() as u64;
    let f = std::fs::File::create(path).unwrap();
    f.write_all_at(&(header.len() as u64).to_le_bytes(), 0)
        .unwrap();
    f.write_all_at(header.as_bytes(), 8).unwrap();
    f.set_len(data_start + TENSORS * TENSOR_BYTES).unwrap();
    for t in 0..TENSORS {
        for (row, col, bits) in marks(t) {
            let at = data_start + t * TENSOR_BYTES + (row * COLS + col) * 2;
            f.write_all_at(&bits.to_le_bytes(), at).unwrap();
        }
    }
}

/// A device whose memory is nowhere: each copy's bytes are checked against what the
/// requests expect at the marks (destination offset -> bytes) and counted.
struct Checker {
    /// Per request (the destination address is its index): offset -> expected bytes.
    expect: Vec<Vec<(u64, Vec<u8>)>>,
    copied: AtomicU64,
    found: AtomicU64,
    wrong: Mutex<Vec<String>>,
}

impl Device for Checker {
    unsafe fn copy_async(
        &self,
        dst: u64,
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> ztensor::Result<()> {
        // SAFETY: the loader's promise: `len` bytes at `src` until the event completes.
        let bytes = unsafe { std::slice::from_raw_parts(src, len) };
        // Merged copies may span requests placed one after the other: dst + offset is the
        // address of the first byte.
        let start = dst + offset;
        for (request, marks) in self.expect.iter().enumerate() {
            let base = (request as u64) << 40;
            for (at, want) in marks {
                let a = base + at;
                if a >= start && a + want.len() as u64 <= start + len as u64 {
                    let from = (a - start) as usize;
                    self.found.fetch_add(1, Ordering::Relaxed);
                    if bytes[from..from + want.len()] != want[..] {
                        self.wrong
                            .lock()
                            .unwrap()
                            .push(format!("request {request} at {at}"));
                    }
                }
            }
        }
        self.copied.fetch_add(len as u64, Ordering::Relaxed);
        Ok(())
    }
    fn event_create(&self) -> ztensor::Result<Event> {
        Ok(Event(1))
    }
    fn event_destroy(&self, _: Event) {}
    fn event_record(&self, _: Event) -> ztensor::Result<()> {
        Ok(())
    }
    fn event_query(&self, _: Event) -> ztensor::Result<bool> {
        Ok(true)
    }
    fn host_alloc(&self, _: usize) -> ztensor::Result<Option<NonNull<u8>>> {
        Ok(None)
    }
}

/// The child: loads the model through a 64 MiB budget; prints
/// "ZT_RESULT <bytes copied> <marks found> <wrong> <rss before KiB> <peak KiB> <stats peak>".
#[test]
fn child() {
    let Ok(path) = std::env::var(CHILD) else {
        return; // Run directly: nothing to do.
    };
    let r = Reader::open(&path).unwrap();
    // Tensors 0..14 whole, 14: columns [0, 4096) of every row, 15: rows [0, 512) as f32.
    let mut expect = Vec::new();
    let mut sizes = Vec::new();
    for t in 0..TENSORS {
        let mut m = Vec::new();
        for (row, col, bits) in marks(t) {
            match t {
                14 if col < 4096 => m.push(((row * 4096 + col) * 2, bits.to_le_bytes().to_vec())),
                14 => {}
                15 if row < 512 => m.push((
                    (row * COLS + col) * 4,
                    (u32::from(bits) << 16).to_le_bytes().to_vec(),
                )),
                15 => {}
                _ => m.push(((row * COLS + col) * 2, bits.to_le_bytes().to_vec())),
            }
        }
        expect.push(m);
        sizes.push(match t {
            14 => ROWS * 4096 * 2,
            15 => 512 * COLS * 4,
            _ => TENSOR_BYTES,
        });
    }
    let checker = Arc::new(Checker {
        expect,
        copied: AtomicU64::new(0),
        found: AtomicU64::new(0),
        wrong: Mutex::new(Vec::new()),
    });
    // O_DIRECT: the holes read as zeros without filling the page cache with 4 GiB (the
    // reads' aligned buffers come out of the budget too); where the filesystem refuses
    // O_DIRECT, pread.
    let options = LoaderOptions {
        max_bytes_in_flight: 64 * MIB,
        io: ztensor::ReadMode::Direct,
        ..LoaderOptions::default()
    };
    // The peak from here on: the staging buffers count too.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = common::status_kib("VmRSS:");
    let loader = Loader::new(Some(checker.clone()), &options).unwrap();
    let mut requests: Vec<Request<'_>> = (0..TENSORS as usize)
        .map(|t| {
            let object = r.find(&format!("t{t}")).unwrap();
            let q = Request::device(object, 0, (t as u64) << 40, 0, sizes[t]);
            match t {
                14 => q.slice(Slice::Columns {
                    first: 0,
                    count: 4096,
                }),
                15 => q
                    .slice(Slice::Rows {
                        first: 0,
                        count: 512,
                    })
                    .convert(DType::F32),
                _ => q,
            }
        })
        .collect();
    let results = loader.load(&r, &mut requests, &NoEvents);
    let peak = common::status_kib("VmHWM:");
    for (i, (result, _)) in results.iter().enumerate() {
        assert!(result.is_ok(), "request {i}: {result:?}");
    }
    let stats = loader.stats();
    eprintln!("{stats:?}");
    println!(
        "ZT_RESULT {} {} {} {before} {peak} {}",
        checker.copied.load(Ordering::Relaxed),
        checker.found.load(Ordering::Relaxed),
        checker.wrong.lock().unwrap().len(),
        stats.peak_bytes_in_flight
    );
}

#[test]
fn a_4_gib_load_holds_at_most_its_64_mib_budget() {
    let dir = common::temp_dir("load_memory");
    let path = dir.join("sparse-4g.safetensors");
    sparse_model(&path);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, &path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("ZT_RESULT ").map(|p| p.1))
        .unwrap_or_else(|| panic!("no result: {stdout}\n{stderr}"));
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let (copied, found, wrong, before, peak, held) = (v[0], v[1], v[2], v[3], v[4], v[5]);
    let total = 14 * TENSOR_BYTES + ROWS * 4096 * 2 + 512 * COLS * 4;
    let growth = (peak.saturating_sub(before)) * 1024;
    eprintln!(
        "loaded {:.0} MiB; resident set grew {:.1} MiB (peak over what it held before); \
         the loader held at most {:.1} MiB",
        copied as f64 / MIB as f64,
        growth as f64 / MIB as f64,
        held as f64 / MIB as f64
    );
    assert_eq!(copied, total);
    // Every mark of every tensor reached the device (the columns' and rows' in part).
    // Whole: 5 rows x 4 columns each; the columns' 5 x 2; the rows' 2 x 4.
    assert_eq!(found, 14 * 20 + 10 + 8, "{stderr}");
    assert_eq!(wrong, 0, "{stderr}");
    assert!(held > 0 && held <= 64 * MIB, "{held}");
    // The budget, plus what a process's threads and bookkeeping take (stacks, the
    // request tables): far from the 4 GiB it loaded.
    assert!(growth <= 64 * MIB + 16 * MIB, "{growth}");
}

/// A small `.npz` with one deflated member (an f32 array of `n` values `i % 1000`),
/// written without NumPy: the `.npy` header by hand, the archive by Python's zipfile.
fn deflated_npz(path: &Path, n: usize) -> Vec<u8> {
    let values: Vec<u8> = (0..n)
        .flat_map(|i| ((i % 1000) as f32).to_le_bytes())
        .collect();
    let mut dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({n},), }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    npy.extend_from_slice(dict.as_bytes());
    npy.extend_from_slice(&values);
    let raw = path.with_extension("npy");
    std::fs::write(&raw, &npy).unwrap();
    let status = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\n\
             with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
             \x20   z.write(sys.argv[2], 'w.npy')",
        ])
        .arg(path)
        .arg(&raw)
        .status()
        .expect("python3 runs");
    assert!(status.success());
    values
}

#[test]
fn a_component_decoded_whole_counts_against_the_budget() {
    let dir = common::temp_dir("load_memory_whole");
    let path = dir.join("w.npz");
    let values = deflated_npz(&path, 1 << 20); // 4 MiB decoded, compresses well
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.objects().len(), 1);
    let stored = r.objects()[0].components()[0].length();
    assert!(stored < MIB, "{stored}");
    let want: Vec<u8> = values
        .chunks(4)
        .flat_map(|v| f64::from(f32::from_le_bytes(v.try_into().unwrap())).to_le_bytes())
        .collect();
    let load = |budget: u64| {
        let loader = Loader::new(
            None,
            &LoaderOptions {
                max_bytes_in_flight: budget,
                staging_size: 64 << 10,
                readers: 1,
                ..LoaderOptions::default()
            },
        )
        .unwrap();
        let mut out = vec![0u8; want.len()];
        let mut q = [Request::host(0, 0, &mut out).convert(DType::F64)];
        let result = loader.load(&r, &mut q, &NoEvents).remove(0).0;
        (result, out, loader.stats())
    };
    // Converted, it streams from one whole decode: 4 MiB + what is stored + one chunk.
    let (result, out, stats) = load(0);
    assert!(result.is_ok(), "{result:?}");
    assert!(out == want);
    eprintln!("{stats:?}");
    assert!(stats.peak_bytes_in_flight >= 4 * MIB + stored, "{stats:?}");
    assert!(
        stats.peak_bytes_in_flight <= 4 * MIB + stored + (64 << 10),
        "{stats:?}"
    );
    // A budget it can't fit in: refused, saying why, nothing decoded.
    let (result, _, stats) = load(2 * MIB);
    let e = result.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.message().contains("decoded whole"), "{e}");
    assert!(e.message().contains("max_bytes_in_flight"), "{e}");
    assert_eq!(stats.peak_bytes_in_flight, 0, "{stats:?}");
    // Whole, unconverted, to host memory: decoded straight into the destination, holding
    // nothing besides, so even the small budget loads it.
    let loader = Loader::new(
        None,
        &LoaderOptions {
            max_bytes_in_flight: 2 * MIB,
            staging_size: 64 << 10,
            ..LoaderOptions::default()
        },
    )
    .unwrap();
    let mut out = vec![0u8; values.len()];
    let mut q = [Request::host(0, 0, &mut out)];
    assert!(loader.load(&r, &mut q, &NoEvents)[0].0.is_ok());
    assert!(out == values);
    assert_eq!(loader.stats().peak_bytes_in_flight, 0);
}
