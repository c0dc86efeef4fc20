//! The data files of every workload in every format, rewritten only when their `.stamp` says
//! they are stale; page-cache warming; and the layout of our files' stored components.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::formats::{
    v1_2, write_gguf, write_ours_v2, write_ours_with, write_ref, write_safetensors,
};
use crate::workloads::Workload;
use crate::{MIB, Res};

/// Fingerprint of the library's sources (build.rs): files our writer made are rewritten when
/// it changes.
const LIB_HASH: &str = env!("ZT_BENCH_LIB_HASH");

/// A data file and how to make it; skipped when its stamp says it is already there.
struct DataFile {
    path: PathBuf,
    /// The file is made by our library: its stamp includes the library's fingerprint.
    ours: bool,
}

fn stamp_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".stamp");
    PathBuf::from(s)
}

fn stamp_text(w: &Workload, f: &DataFile, quick: bool) -> String {
    format!(
        "{} quick={quick}{}",
        w.spec(),
        if f.ours {
            format!(" lib={LIB_HASH}")
        } else {
            String::new()
        }
    )
}

fn up_to_date(w: &Workload, f: &DataFile, quick: bool) -> bool {
    let Ok(stamp) = fs::read_to_string(stamp_path(&f.path)) else {
        return false;
    };
    let Ok(meta) = fs::metadata(&f.path) else {
        return false;
    };
    stamp == format!("{} size={}", stamp_text(w, f, quick), meta.len())
}

fn ensure(
    w: &Workload,
    quick: bool,
    path: PathBuf,
    ours: bool,
    make: impl FnOnce(&Path) -> Res<()>,
) -> Res<PathBuf> {
    let f = DataFile { path, ours };
    if up_to_date(w, &f, quick) {
        return Ok(f.path);
    }
    let _ = fs::remove_file(stamp_path(&f.path));
    let t = Instant::now();
    make(&f.path)?;
    let size = fs::metadata(&f.path)?.len();
    fs::write(
        stamp_path(&f.path),
        format!("{} size={size}", stamp_text(w, &f, quick)),
    )?;
    eprintln!(
        "  wrote {} ({:.1} MiB) in {:.1} s",
        f.path.display(),
        size as f64 / MIB,
        t.elapsed().as_secs_f64()
    );
    Ok(f.path)
}

/// Reads a file once so that its pages are in the page cache.
pub fn warm(path: &Path) -> Res<()> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 8 << 20];
    while f.read(&mut buf)? > 0 {}
    Ok(())
}

/// The files of a workload in every format that a peer reads.
pub struct Files {
    pub ours: PathBuf,
    pub reference: PathBuf,
    pub safetensors: Option<PathBuf>,
    pub gguf: Option<PathBuf>,
    /// Ours with sha256 digests (W1 only).
    pub ours_sha: Option<PathBuf>,
    /// Ours as zTensor v2, canonical (the raw workloads W1, W2): not warmed with the
    /// others (its 64 KiB placement leaves holes between small tensors, which a whole-file
    /// read would fill the page cache with); its cases' warm-up calls read what they use.
    pub v2: Option<PathBuf>,
}

impl Files {
    pub fn all(&self) -> Vec<&PathBuf> {
        let mut v = vec![&self.ours, &self.reference];
        v.extend(self.safetensors.iter());
        v.extend(self.gguf.iter());
        v.extend(self.ours_sha.iter());
        v
    }
    /// The safetensors and GGUF files, which only the raw workloads (W1, W2) have.
    pub fn raw_peers(&self) -> (&Path, &Path) {
        let st = self
            .safetensors
            .as_ref()
            .expect("raw workloads have safetensors");
        let gg = self.gguf.as_ref().expect("raw workloads have gguf");
        (st, gg)
    }
}

/// Makes (or finds up to date) the files of `w` in `d`.
pub fn files_for(w: &Workload, d: &Path, quick: bool) -> Res<Files> {
    let id = w.id.to_lowercase();
    let zstd = w.id == "W3";
    let ours_opts = if zstd {
        ztensor::WriteOptions::zstd(3)
    } else {
        ztensor::WriteOptions::default()
    };
    let ref_comp = if zstd {
        ztensor_ref::Compression::Zstd(3)
    } else {
        ztensor_ref::Compression::Raw
    };
    let ours = ensure(w, quick, d.join(format!("{id}.zt")), true, |p| {
        write_ours_with(w, p, &ours_opts, &v1_2())
    })?;
    let reference = ensure(w, quick, d.join(format!("{id}.ref.zt")), false, |p| {
        write_ref(w, p, ref_comp)
    })?;
    // safetensors and GGUF store raw bytes only: they have no W3 (compressed) file.
    let (safetensors, gguf) = if zstd {
        (None, None)
    } else {
        (
            Some(ensure(
                w,
                quick,
                d.join(format!("{id}.safetensors")),
                false,
                |p| write_safetensors(w, p),
            )?),
            Some(ensure(
                w,
                quick,
                d.join(format!("{id}.gguf")),
                false,
                |p| write_gguf(w, p),
            )?),
        )
    };
    let ours_sha = if w.id == "W1" {
        let opts = ztensor::WriteOptions::default().with_digest(ztensor::DigestAlgorithm::Sha256);
        Some(ensure(
            w,
            quick,
            d.join(format!("{id}.sha256.zt")),
            true,
            |p| write_ours_with(w, p, &opts, &v1_2()),
        )?)
    } else {
        None
    };
    let v2 = if zstd {
        None
    } else {
        Some(ensure(
            w,
            quick,
            d.join(format!("{id}.v2.zt")),
            true,
            |p| write_ours_v2(w, p),
        )?)
    };
    Ok(Files {
        ours,
        reference,
        safetensors,
        gguf,
        ours_sha,
        v2,
    })
}

/// A frame of a zstd stream: (compressed start, compressed length, decoded start, decoded
/// length).
pub type Frame = (usize, usize, u64, u64);

/// The frames of a zstd stream.
pub fn zstd_frames(src: &[u8]) -> Res<Vec<Frame>> {
    let mut frames = Vec::new();
    let mut pos = 0usize;
    let mut decoded = 0u64;
    while pos < src.len() {
        let len = zstd::zstd_safe::find_frame_compressed_size(&src[pos..])
            .map_err(|c| format!("bad zstd frame at {pos}: code {c}"))?;
        let size = match zstd::zstd_safe::get_frame_content_size(&src[pos..pos + len]) {
            Ok(Some(s)) => s,
            _ => {
                // No recorded size: decode once to learn it (setup, untimed).
                let mut out = Vec::new();
                let mut d = zstd::stream::read::Decoder::with_buffer(&src[pos..pos + len])?;
                std::io::copy(&mut d, &mut out)?;
                out.len() as u64
            }
        };
        frames.push((pos, len, decoded, size));
        pos += len;
        decoded += size;
    }
    Ok(frames)
}

/// (offset, length) of the stored bytes of every object's first component in our file `path`,
/// in the file's order (the workload's order).
pub fn stored_ranges(path: &Path) -> Res<Vec<(usize, usize)>> {
    let r = ztensor::Reader::open(path)?;
    Ok(r.objects()
        .iter()
        .map(|o| {
            let c = &o.components()[0];
            (c.offset() as usize, c.length() as usize)
        })
        .collect())
}
