//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod gguf;
pub mod manifests;

use ztensor::{DType, Reader};

/// Appends a CBOR head (major type and argument) in its shortest form: for tests that
/// craft manifests the writer would refuse to write.
pub fn cbor_head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xff => out.extend([m | 24, n as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend((n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend((n as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend(n.to_be_bytes());
        }
    }
}

/// Appends a CBOR text string.
pub fn cbor_text(out: &mut Vec<u8>, s: &str) {
    cbor_head(out, 3, s.len() as u64);
    out.extend(s.as_bytes());
}

/// Deterministic pseudo-random bytes (xorshift), so tests need no fixtures.
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Valid element bytes for a dtype (bools are 0/1).
pub fn data_for(dtype: DType, numel: usize, seed: u64) -> Vec<u8> {
    let mut b = bytes(seed, numel * dtype.size());
    if dtype == DType::Bool {
        b.iter_mut().for_each(|x| *x &= 1);
    }
    b
}

/// Little-endian bytes of u64 values.
pub fn u64s(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Little-endian bytes of f32 values.
pub fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Adds a `sparse_csr` object: f32 `values`, u64 `indices` and `indptr`, default options.
pub fn add_csr<W: std::io::Write>(
    w: &mut ztensor::Writer<W>,
    name: &str,
    shape: &[u64],
    values: &[f32],
    indices: &[u64],
    indptr: &[u64],
) {
    w.begin_object(name, "sparse_csr", shape).unwrap();
    for (role, dtype, bytes) in [
        ("values", DType::F32, f32s(values)),
        ("indices", DType::U64, u64s(indices)),
        ("indptr", DType::U64, u64s(indptr)),
    ] {
        w.add_component(role, dtype, None, &bytes, &ztensor::WriteOptions::default())
            .unwrap();
    }
    w.end_object().unwrap();
}

/// Reads a component by object name and role into a vector.
pub fn read(r: &Reader<'_>, name: &str, role: &str) -> Vec<u8> {
    let o = r.find(name).unwrap_or_else(|| panic!("no object {name}"));
    let c = r.objects()[o]
        .find_component(role)
        .unwrap_or_else(|| panic!("no component {role}"));
    r.read_to_vec(o, c).unwrap()
}

/// A fresh directory under the target dir for one test.
pub fn temp_dir(test: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compares attribute trees from two sources, treating integral floats as equal to
/// integers (JSON has one number type) and map key order as irrelevant.
pub fn same(ours: &ztensor::cbor::Value, expected: &ztensor::cbor::Value) -> bool {
    use ztensor::cbor::Value;
    match (ours, expected) {
        (Value::Map(a), Value::Map(b)) => {
            a.len() == b.len()
                && b.iter()
                    .all(|(k, v)| a.iter().any(|(k2, v2)| k2 == k && same(v2, v)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Float(a), Value::Unsigned(b)) | (Value::Unsigned(b), Value::Float(a)) => {
            *a == *b as f64
        }
        _ => ours == expected,
    }
}

/// Runs a command, failing the test with its output when it exits non-zero.
pub fn run_ok(cmd: &mut std::process::Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The python of a venv `name` under the test's target tmp dir holding the pins of
/// `requirements` (a path relative to the repository), created on first use and reused
/// while the file is unchanged. `ZT_PYTHON` chooses the interpreter that makes it.
pub fn pinned_python(requirements: &str, name: &str) -> std::path::PathBuf {
    use std::process::Command;
    let requirements = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(requirements);
    let wanted = std::fs::read_to_string(&requirements).unwrap();
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let python = venv.join("bin/python");
    let marker = venv.join("requirements.installed");
    // Tests of one binary run on several threads, and ctest may run binaries side by
    // side: one lock file per venv keeps a second caller from deleting the venv the
    // first is installing into (which made CI fail with a half-made venv).
    std::fs::create_dir_all(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let lock = std::fs::File::create(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.lock")),
    )
    .unwrap();
    lock.lock().unwrap();
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) && python.exists()
    {
        return python;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let base = std::env::var("ZT_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    run_ok(Command::new(&base).args(["-m", "venv"]).arg(&venv));
    run_ok(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(&requirements),
    );
    std::fs::write(&marker, wanted).unwrap();
    python
}

/// One batch request per buffer: object i's first component, whole, converted to
/// `convert` when given.
pub fn whole_loads(
    bufs: &mut [Vec<u8>],
    convert: Option<DType>,
) -> Vec<ztensor::load::Request<'_>> {
    bufs.iter_mut()
        .enumerate()
        .map(|(object, dst)| {
            let mut q = ztensor::load::Request::host(object, 0, dst);
            q.convert = convert;
            q
        })
        .collect()
}

/// The manifest of a zTensor v1.x file (before its 8-byte size and 8-byte magic).
#[allow(dead_code)]
pub fn manifest_of(file: &[u8]) -> ztensor::cbor::Value {
    let n = file.len();
    let size = u64::from_le_bytes(file[n - 16..n - 8].try_into().unwrap()) as usize;
    ztensor::cbor::decode(&file[n - 16 - size..n - 16], 128).unwrap()
}

/// `file` with the manifest's root entry `key` set to `value`, blobs unchanged.
#[allow(dead_code)]
pub fn replace_manifest_value(file: &[u8], key: &str, value: &ztensor::cbor::Value) -> Vec<u8> {
    use ztensor::cbor::Value;
    let n = file.len();
    let size = u64::from_le_bytes(file[n - 16..n - 8].try_into().unwrap()) as usize;
    let Value::Map(mut pairs) = manifest_of(file) else {
        panic!("the manifest is not a map")
    };
    match pairs.iter_mut().find(|(k, _)| k.as_text() == Some(key)) {
        Some(entry) => entry.1 = value.clone(),
        None => pairs.push((Value::Text(key.into()), value.clone())),
    }
    let manifest = ztensor::cbor::to_vec(&Value::Map(pairs));
    let mut out = file[..n - 16 - size].to_vec();
    out.extend(&manifest);
    out.extend((manifest.len() as u64).to_le_bytes());
    out.extend(&file[n - 8..]);
    out
}

/// Writer options for zTensor v1.2.0 (the default is v2): for tests of what v1.2 has and
/// v2 has not (64-byte alignment, crc32c digests, unregistered object formats, a zstd
/// component of one frame without a seek table ...).
pub fn v12() -> ztensor::CreateOptions {
    ztensor::CreateOptions {
        version: ztensor::FileVersion::V1_2,
        ..ztensor::CreateOptions::default()
    }
}

/// A line of /proc/self/status in KiB ("VmSize:", "VmRSS:", "VmHWM:"); 0 when absent.
pub fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
