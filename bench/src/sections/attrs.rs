//! (10) typed attributes: reading a 152,000-token vocabulary (`tokenizer.ggml.tokens`) of a
//! GGUF file through the C API, typed (`zt_file_find_attribute`, `zt_value_get_element_string`)
//! against JSON (`zt_file_get_attributes_json`, and JSON parsed with serde_json as a C caller would
//! with its own parser), and gguf-py's `GGUFReader` when a Python with gguf is at hand.
//! Measured in CPU seconds of the calling thread (`CLOCK_THREAD_CPUTIME_ID`): every case
//! runs on one thread, so a busy machine doesn't change the figures.

use std::ffi::{CStr, c_char};
use std::process::Command;

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::datagen::Rng;
use crate::report::Row;

use ztensor::ffi::{self, zt_reader, zt_status, zt_value};

pub const SECTION: Section = Section {
    name: "attrs",
    runs: Runs::Alone(run),
};

/// Qwen2-sized vocabulary.
const TOKENS: usize = 152_000;

/// A GGUF v3 file with no tensors and llama-style key/values: hyperparameters, and a
/// vocabulary of `TOKENS` strings (1 to 16 bytes of letters), their f32 scores and i32
/// types. Returns the bytes and the total length of the token strings.
fn vocab_gguf() -> (Vec<u8>, usize) {
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(0u64.to_le_bytes()); // tensors
    out.extend(6u64.to_le_bytes()); // key/values
    let key = |out: &mut Vec<u8>, k: &str, ty: u32| {
        out.extend((k.len() as u64).to_le_bytes());
        out.extend(k.as_bytes());
        out.extend(ty.to_le_bytes());
    };
    key(&mut out, "general.architecture", 8);
    out.extend(5u64.to_le_bytes());
    out.extend(b"llama");
    key(&mut out, "llama.block_count", 4);
    out.extend(28u32.to_le_bytes());
    key(&mut out, "llama.context_length", 4);
    out.extend(32768u32.to_le_bytes());
    let mut rng = Rng::new(152);
    let mut total = 0;
    key(&mut out, "tokenizer.ggml.tokens", 9);
    out.extend(8u32.to_le_bytes());
    out.extend((TOKENS as u64).to_le_bytes());
    for _ in 0..TOKENS {
        let len = 1 + (rng.next() % 16) as usize;
        total += len;
        out.extend((len as u64).to_le_bytes());
        out.extend((0..len).map(|_| b'a' + (rng.next() % 26) as u8));
    }
    key(&mut out, "tokenizer.ggml.scores", 9);
    out.extend(6u32.to_le_bytes());
    out.extend((TOKENS as u64).to_le_bytes());
    for i in 0..TOKENS {
        out.extend((-(i as f32)).to_le_bytes());
    }
    key(&mut out, "tokenizer.ggml.token_type", 9);
    out.extend(5u32.to_le_bytes());
    out.extend((TOKENS as u64).to_le_bytes());
    for _ in 0..TOKENS {
        out.extend(1i32.to_le_bytes());
    }
    out.resize(out.len().next_multiple_of(32), 0);
    (out, total)
}

/// CPU seconds this thread has used.
fn thread_cpu() -> f64 {
    // SAFETY: clock_gettime fills the timespec we hand it.
    unsafe {
        let mut t: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t);
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    }
}

type Run<'a> = Box<dyn FnMut() -> Res<usize> + 'a>;

/// Median CPU seconds per call of each case: rounds rotated as the harness does, each
/// sample repeating the call until it used 20 ms of CPU. Every call must return `expect`.
fn cpu_measure(runs: usize, cases: &mut [(&str, Run<'_>)], expect: usize) -> Res<Vec<f64>> {
    let k = cases.len();
    for (name, run) in cases.iter_mut() {
        let got = run()?;
        if got != expect {
            return Err(format!("{name}: {got} bytes of tokens, expected {expect}").into());
        }
    }
    let mut samples = vec![Vec::new(); k];
    for round in 0..runs {
        for j in 0..k {
            let i = (j + round) % k;
            let (_, run) = &mut cases[i];
            let (c0, mut calls) = (thread_cpu(), 0u32);
            loop {
                run()?;
                calls += 1;
                let used = thread_cpu() - c0;
                if used >= 0.02 {
                    samples[i].push(used / f64::from(calls));
                    break;
                }
            }
        }
    }
    Ok(samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        })
        .collect())
}

fn check(s: zt_status, what: &str) -> Res<()> {
    if s != zt_status::ZT_OK {
        // SAFETY: a NUL-terminated thread-local string.
        let m = unsafe { CStr::from_ptr(ffi::zt_last_error()) };
        return Err(format!("{what}: {s:?}: {}", m.to_string_lossy()).into());
    }
    Ok(())
}

fn open(bytes: &[u8]) -> Res<*mut zt_reader> {
    let mut r = std::ptr::null_mut();
    // SAFETY: bytes outlive the reader (closed by the caller before they go).
    check(
        unsafe { ffi::zt_open_memory(bytes.as_ptr().cast(), bytes.len(), &mut r) },
        "zt_open_memory",
    )?;
    Ok(r)
}

/// Every token through the typed API: the total of their lengths.
fn typed_tokens(r: *const zt_reader) -> Res<usize> {
    let mut v: *const zt_value = std::ptr::null();
    // SAFETY: a valid reader, a NUL-terminated key, out-pointers to locals.
    unsafe {
        check(
            ffi::zt_file_find_attribute(r, c"tokenizer.ggml.tokens".as_ptr(), &mut v),
            "zt_file_find_attribute",
        )?;
        let mut n = 0usize;
        check(ffi::zt_value_get_count(v, &mut n), "zt_value_get_count")?;
        let mut total = 0;
        for i in 0..n {
            let (mut s, mut len): (*const c_char, usize) = (std::ptr::null(), 0);
            check(
                ffi::zt_value_get_element_string(v, i, &mut s, &mut len),
                "zt_value_get_element_string",
            )?;
            total += len;
        }
        Ok(total)
    }
}

/// The file attributes as JSON through the C API: its length.
fn json_text(r: *const zt_reader) -> Res<&'static str> {
    let mut json: *const c_char = std::ptr::null();
    // SAFETY: a valid reader; the text lives until zt_close, and the caller uses it before.
    unsafe {
        check(
            ffi::zt_file_get_attributes_json(r, &mut json),
            "zt_file_get_attributes_json",
        )?;
        Ok(CStr::from_ptr(json).to_str()?)
    }
}

/// The total length of the tokens in parsed JSON.
fn json_tokens(text: &str) -> Res<usize> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    let tokens = v["tokenizer.ggml.tokens"]
        .as_array()
        .ok_or("no tokens in the JSON")?;
    Ok(tokens.iter().map(|t| t.as_str().map_or(0, str::len)).sum())
}

/// CPU seconds (median of `runs`) of gguf-py opening the file and decoding every token.
fn gguf_py_seconds(python: &std::path::Path, path: &std::path::Path, runs: usize) -> Res<f64> {
    let script = "import sys, time\n\
                  from gguf import GGUFReader\n\
                  path, runs = sys.argv[1], int(sys.argv[2])\n\
                  def once():\n\
                  \x20   f = GGUFReader(path).fields['tokenizer.ggml.tokens']\n\
                  \x20   return sum(len(bytes(f.parts[i]).decode()) for i in f.data)\n\
                  once()\n\
                  times = []\n\
                  for _ in range(runs):\n\
                  \x20   t0 = time.process_time(); once(); times.append(time.process_time() - t0)\n\
                  print(sorted(times)[len(times) // 2])\n";
    let out = Command::new(python)
        .args(["-W", "ignore", "-c", script])
        .arg(path)
        .arg(runs.to_string())
        .output()?;
    if !out.status.success() {
        return Err(format!("gguf-py: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

fn run(ctx: &Ctx, rows: &mut Vec<Row>) -> Res<()> {
    let a = ctx.args;
    eprintln!("attrs: {TOKENS} token strings");
    let (file, total) = vocab_gguf();
    let built = open(&file)?;
    let mut cases: Vec<(&str, Run<'_>)> = vec![
        (
            "typed: open + build + every token",
            Box::new(|| {
                let r = open(&file)?;
                let n = typed_tokens(r);
                // SAFETY: opened above, closed once.
                unsafe { ffi::zt_close(r) };
                n
            }),
        ),
        (
            "zt_file_get_attributes_json: open + render",
            Box::new(|| {
                let r = open(&file)?;
                let n = json_text(r).map(|_| total);
                // SAFETY: opened above, closed once; the text is not used after.
                unsafe { ffi::zt_close(r) };
                n
            }),
        ),
        (
            "zt_file_get_attributes_json + serde_json parse",
            Box::new(|| {
                let r = open(&file)?;
                let n = json_text(r).and_then(json_tokens);
                // SAFETY: opened above, closed once; the text is not used after.
                unsafe { ffi::zt_close(r) };
                n
            }),
        ),
        (
            "typed, already built: every token",
            Box::new(|| typed_tokens(built)),
        ),
        (
            "open only",
            Box::new(|| {
                let r = open(&file)?;
                // SAFETY: opened above, closed once.
                unsafe { ffi::zt_close(r) };
                Ok(total)
            }),
        ),
    ];
    let t = cpu_measure(a.runs, &mut cases, total);
    let json_bytes = json_text(built).map(str::len);
    // SAFETY: opened above, closed once, after its last use.
    unsafe { ffi::zt_close(built) };
    let (t, json_bytes) = (t?, json_bytes?);
    let py = match super::dequant::gguf_python() {
        Some(p) => {
            let path = a.dir.join("attrs-vocab.gguf");
            std::fs::write(&path, &file)?;
            let s = gguf_py_seconds(&p, &path, a.runs.min(3));
            let _ = std::fs::remove_file(&path);
            Some(s?)
        }
        None => {
            eprintln!("attrs: no Python with gguf (set ZT_BENCH_PYTHON): gguf-py not measured");
            None
        }
    };
    let mut row = Row::new(
        "152,000 token strings: open + typed read (CPU s)",
        "vocab152k",
        "s",
        t[0],
    )
    .peer("zt_file_get_attributes_json (render only)", t[1])
    .peer("zt_file_get_attributes_json + serde_json", t[2])
    .bytes(total as u64);
    if let Some(s) = py {
        row = row.peer("gguf-py GGUFReader", s);
    }
    let ratio = t[1] / t[0];
    // Beyond the open (the GGUF header parsed, the same for both).
    let (typed_own, json_own) = ((t[0] - t[4]).max(1e-9), (t[1] - t[4]).max(1e-9));
    row = row
        .note(format!(
            "typed {:.1} ms vs JSON render {:.1} ms ({ratio:.1}x less CPU; {:.1} MB of JSON); \
             beyond the open ({:.1} ms) typed build + read {:.1} ms vs render {:.1} ms \
             ({:.1}x); vs render + parse {:.1} ms ({:.1}x){}; once built, every token again \
             takes {:.2} ms ({:.1} ns a string)",
            t[0] * 1e3,
            t[1] * 1e3,
            json_bytes as f64 / 1e6,
            t[4] * 1e3,
            typed_own * 1e3,
            json_own * 1e3,
            json_own / typed_own,
            t[2] * 1e3,
            t[2] / t[0],
            py.map_or(String::new(), |s| format!(
                "; gguf-py {:.0} ms ({:.0}x)",
                s * 1e3,
                s / t[0]
            )),
            t[3] * 1e3,
            t[3] / TOKENS as f64 * 1e9
        ))
        .target(
            "typed build + read < 0.5x the CPU of zt_file_get_attributes_json's render (beyond the open)",
            json_own / typed_own > 2.0,
        );
    rows.push(row);
    Ok(())
}
