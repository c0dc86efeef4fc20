//! (9) dequantize: `read_as` to f32 of GGUF tensors of five ggml block types (Q4_0, Q8_0,
//! Q4_K, Q6_K, MXFP4), 4096 x 4096 (quick: 1024 x 4096), on one thread and on every core,
//! in GB/s of f32 written into one resident buffer. The peer is ggml's own `to_float`,
//! as recorded (`GGML_TO_FLOAT_GBPS`: ggml is never built here), and, when a Python with
//! gguf-py is at hand, `gguf.quants.dequantize` measured on the same blocks.

use std::cell::RefCell;
use std::process::Command;

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::datagen::Rng;
use crate::harness::{case, measure};
use crate::report::Row;

pub const SECTION: Section = Section {
    name: "dequant",
    runs: Runs::Alone(run),
};

/// ggml's `to_float` of each type (the ggml-base library of ggml-org/ggml, one thread) on
/// 4096 x 4096 tensors, in GB/s of f32 out, as measured on this machine by the author of
/// issue 15 ("What a llama.cpp-style loader needs"). Recorded, not measured here: the
/// benchmark builds no ggml. The targets: at least this per core, 1.7x it on 2 cores.
const GGML_TO_FLOAT_GBPS: [(&str, f64); 5] = [
    ("Q4_0", 11.8),
    ("Q8_0", 22.4),
    ("Q4_K", 23.4),
    ("Q6_K", 2.9),
    ("MXFP4", 4.7),
];

/// ggml type id, block size, type size, and the byte offsets of the f16 scales of a block
/// (given finite values, so the output is finite like a real model's).
const TYPES: [(&str, u32, usize, usize, &[usize]); 5] = [
    ("Q4_0", 2, 32, 18, &[0]),
    ("Q8_0", 8, 32, 34, &[0]),
    ("Q4_K", 12, 256, 144, &[0, 2]),
    ("Q6_K", 14, 256, 210, &[208]),
    ("MXFP4", 39, 32, 17, &[]),
];

/// A GGUF v3 file holding one tensor "w" of `rows` x 4096 values of the ggml type: random
/// blocks with scales of a realistic size.
pub(super) fn gguf_file(
    id: u32,
    block: usize,
    size: usize,
    scales: &[usize],
    rows: usize,
) -> Vec<u8> {
    let cols = 4096usize;
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(1u64.to_le_bytes()); // tensors
    out.extend(0u64.to_le_bytes()); // key/values
    out.extend(1u64.to_le_bytes());
    out.push(b'w');
    out.extend(2u32.to_le_bytes());
    out.extend((cols as u64).to_le_bytes());
    out.extend((rows as u64).to_le_bytes());
    out.extend(id.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.resize(out.len().next_multiple_of(32), 0);
    let mut rng = Rng::new(u64::from(id));
    let start = out.len();
    out.resize(start + rows * cols / block * size, 0);
    for b in out[start..].chunks_mut(size) {
        for x in b.chunks_mut(8) {
            let r = rng.next().to_le_bytes();
            x.copy_from_slice(&r[..x.len()]);
        }
        for &at in scales {
            // f16 between 2^-10 and 2^-6, either sign.
            let bits = 0x1400 | (rng.next() as u16 & 0x8fff);
            b[at..at + 2].copy_from_slice(&bits.to_le_bytes());
        }
        if id == 39 {
            b[0] = 118 + (rng.next() % 8) as u8; // E8M0 scale around 2^-6
        }
    }
    out
}

/// The CPUs this thread may run on.
pub(super) fn affinity() -> Res<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err("sched_getaffinity failed".into());
        }
        Ok(set)
    }
}

pub(super) fn set_affinity(set: &libc::cpu_set_t) -> Res<()> {
    // SAFETY: a valid set for this thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
        return Err("sched_setaffinity failed".into());
    }
    Ok(())
}

/// The first CPU of `set` alone (with a pool of one thread, the library then works on
/// this thread alone, on one CPU).
pub(super) fn first_cpu(set: &libc::cpu_set_t) -> libc::cpu_set_t {
    // SAFETY: plain bit operations on a valid set.
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        if let Some(cpu) = (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, set)) {
            libc::CPU_SET(cpu, &mut one);
        }
        one
    }
}

/// A Python that imports gguf: `ZT_BENCH_PYTHON`, else a venv the tests made.
pub(super) fn gguf_python() -> Option<std::path::PathBuf> {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("ZT_BENCH_PYTHON")
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain(
            ["dequant-venv", "formats-venv"]
                .iter()
                .map(|v| here.join("../target/tmp").join(v).join("bin/python")),
        );
    candidates.into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import gguf.quants"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Median seconds of `gguf.quants.dequantize` of the blocks in `path` (rows x row bytes).
fn gguf_py_seconds(
    python: &std::path::Path,
    path: &std::path::Path,
    id: u32,
    rows: usize,
    runs: usize,
) -> Res<f64> {
    let script = "import sys, time, numpy as np\n\
                  from gguf import GGMLQuantizationType as T\n\
                  from gguf.quants import dequantize\n\
                  path, t, rows, runs = sys.argv[1], T(int(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])\n\
                  raw = np.fromfile(path, dtype=np.uint8).reshape(rows, -1)\n\
                  dequantize(raw, t)\n\
                  times = []\n\
                  for _ in range(runs):\n\
                  \x20   t0 = time.perf_counter(); dequantize(raw, t); times.append(time.perf_counter() - t0)\n\
                  print(sorted(times)[len(times) // 2])\n";
    let out = Command::new(python)
        .args(["-W", "ignore", "-c", script])
        .arg(path)
        .args([id.to_string(), rows.to_string(), runs.to_string()])
        .output()?;
    if !out.status.success() {
        return Err(format!("gguf-py: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

fn run(ctx: &Ctx, rows: &mut Vec<Row>) -> Res<()> {
    let a = ctx.args;
    let (nrows, wl) = if a.quick {
        (1024, "1Kx4K")
    } else {
        (4096, "4Kx4K")
    };
    let values = nrows * 4096;
    let bytes = (values * 4) as u64;
    let all = affinity()?;
    let one = first_cpu(&all);
    let python = gguf_python();
    if python.is_none() {
        eprintln!("dequant: no Python with gguf (set ZT_BENCH_PYTHON): gguf-py not measured");
    }
    let out = RefCell::new(vec![0x55u8; values * 4]);
    let first = RefCell::new(vec![0u8; values * 4]);
    for (name, id, block, size, scales) in TYPES {
        eprintln!("dequant: {name} {wl}");
        let file = gguf_file(id, block, size, scales, nrows);
        let r = ztensor::Reader::from_slice(&file)?;
        let cases = vec![
            case("one thread", || {
                r.read_as(0, 0, ztensor::DType::F32, &mut out.borrow_mut())?;
                Ok(())
            })
            .setup(|| {
                ztensor::pool::set_threads(1)?;
                set_affinity(&one)
            })
            .check(|| {
                first.borrow_mut().copy_from_slice(&out.borrow());
                Ok(())
            }),
            case("all cores", || {
                r.read_as(0, 0, ztensor::DType::F32, &mut out.borrow_mut())?;
                Ok(())
            })
            .setup(|| {
                // Affinity first: the pool's new threads inherit this thread's.
                set_affinity(&all)?;
                ztensor::pool::set_threads(a.threads)?;
                Ok(())
            })
            .check(|| {
                let o = out.borrow();
                if o[..] != first.borrow()[..] {
                    return Err("one thread and all cores wrote different values".into());
                }
                let finite = o
                    .chunks(4)
                    .all(|c| f32::from_le_bytes(c.try_into().expect("4")).is_finite());
                if !finite {
                    return Err("a value is not finite".into());
                }
                Ok(())
            }),
        ];
        let t = measure(a.runs, cases);
        set_affinity(&all)?;
        ztensor::pool::set_threads(a.threads)?;
        let t = t?;
        let ggml = GGML_TO_FLOAT_GBPS
            .iter()
            .find(|g| g.0 == name)
            .map(|g| g.1)
            .expect("recorded");
        let ggml_secs = bytes as f64 / (ggml * 1e9);
        let py = match &python {
            Some(p) => {
                let path = a.dir.join(format!("dequant-{name}.bin"));
                let c = &r.objects()[0].components()[0];
                std::fs::write(
                    &path,
                    &file[c.offset() as usize..(c.offset() + c.length()) as usize],
                )?;
                let s = gguf_py_seconds(p, &path, id, nrows, 3);
                let _ = std::fs::remove_file(&path);
                Some(s?)
            }
            None => None,
        };
        let gbps = |secs: f64| bytes as f64 / secs / 1e9;
        let recorded = format!("ggml to_float, 1 thread (recorded {ggml} GB/s)");
        let with_peers = |row: Row| -> Row {
            let row = row.peer(&recorded, ggml_secs);
            match py {
                Some(s) => row.peer("gguf.quants.dequantize", s),
                None => row,
            }
        };
        let one_ratio = ggml_secs / t[0].secs;
        let py_note = py.map_or(String::new(), |s| {
            format!(
                "; gguf-py {:.2} GB/s ({:.0}x slower)",
                gbps(s),
                s / t[0].secs
            )
        });
        let quick_note = if a.quick {
            "; quick: 1024 rows against ggml's 4096-row figure"
        } else {
            ""
        };
        let row = with_peers(
            Row::new(
                &format!("dequantize {name} -> f32, 1 thread"),
                wl,
                "s",
                t[0].secs,
            )
            .cpu(t[0].cpu)
            .bytes(bytes),
        )
        .note(format!(
            "{:.2} GB/s of f32 ({:.2} GB/s per CPU-second: what a busy machine leaves of a \
             core doesn't lower it), {one_ratio:.2}x ggml's {ggml} GB/s per core{py_note}\
             {quick_note}",
            gbps(t[0].secs),
            gbps(t[0].secs * t[0].cpu.max(f64::MIN_POSITIVE))
        ))
        .target(">= 1.0x ggml to_float per core", one_ratio >= 1.0);
        rows.push(row);
        let all_ratio = ggml_secs / t[1].secs;
        let cores = ctx.cores;
        let want = if cores >= 2 { 1.7 } else { 1.0 };
        let row = with_peers(
            Row::new(
                &format!("dequantize {name} -> f32, all cores"),
                wl,
                "s",
                t[1].secs,
            )
            .cpu(t[1].cpu)
            .bytes(bytes),
        )
        .note(format!(
            "{:.2} GB/s of f32 on {cores} cores, {all_ratio:.2}x ggml's 1-thread {ggml} GB/s, \
             {:.2}x ours on 1 thread{}",
            gbps(t[1].secs),
            t[0].secs / t[1].secs,
            if t[1].cpu < 0.75 * cores as f64 {
                format!(
                    "; MACHINE BUSY: ours had {:.2} of {cores} CPUs, so a parallel speed-up \
                     could not show",
                    t[1].cpu
                )
            } else {
                String::new()
            }
        ))
        .target(
            &format!(">= {want:.1}x ggml to_float on {cores} cores"),
            all_ratio >= want,
        );
        rows.push(row);
    }
    Ok(())
}
