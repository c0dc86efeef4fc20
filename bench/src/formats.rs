//! Each contender's way of writing a workload (to make the data files, and timed in the write
//! section), and the whole-workload reads that more than one section times.

use std::borrow::Cow;
use std::fs::File;
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::Res;
use memmap2::Mmap;

use crate::workloads::Workload;

/// Our writer as users get it: `Writer::create_with` (temporary file, rename), durable
/// (fsyncs, early writeback) or not.
pub fn write_ours(
    w: &Workload,
    path: &Path,
    opts: &ztensor::WriteOptions,
    durable: bool,
) -> Res<()> {
    let options = ztensor::CreateOptions {
        durable,
        ..Default::default()
    };
    write_ours_with(w, path, opts, &options)
}

/// zTensor v1.2, durable: our data files (the reference 1.2.3's peers, objects in the
/// workload's order; v2 lists them by name and pads W2's 50,000 small tensors to 4 KiB
/// each) and the write rows' v1.2 case.
pub fn v1_2() -> ztensor::CreateOptions {
    ztensor::CreateOptions {
        version: ztensor::FileVersion::V1_2,
        ..Default::default()
    }
}

/// `write_ours` with every option of the file given.
pub fn write_ours_with(
    w: &Workload,
    path: &Path,
    opts: &ztensor::WriteOptions,
    options: &ztensor::CreateOptions,
) -> Res<()> {
    let mut wr = ztensor::Writer::create_with(path, options)?;
    for (i, t) in w.tensors.iter().enumerate() {
        wr.add(&t.name, t.dt.ours(), &t.shape, w.bytes(i), opts)?;
    }
    wr.finish()?;
    Ok(())
}

/// Ours as zTensor v2: canonical, the tensors added in name order (canonical placement
/// order, so nothing is reordered at the end).
pub fn write_ours_v2(w: &Workload, path: &Path) -> Res<()> {
    let options = ztensor::CreateOptions {
        version: ztensor::FileVersion::V2,
        ..Default::default()
    };
    let mut wr = ztensor::Writer::create_with(path, &options)?;
    let mut order: Vec<usize> = (0..w.tensors.len()).collect();
    order.sort_by(|&a, &b| {
        w.tensors[a]
            .name
            .as_bytes()
            .cmp(w.tensors[b].name.as_bytes())
    });
    for i in order {
        let t = &w.tensors[i];
        wr.add(
            &t.name,
            t.dt.ours(),
            &t.shape,
            w.bytes(i),
            &ztensor::WriteOptions::default(),
        )?;
    }
    wr.finish()?;
    Ok(())
}

pub fn write_ref(w: &Workload, path: &Path, compression: ztensor_ref::Compression) -> Res<()> {
    let mut wr = ztensor_ref::Writer::create(path)?;
    for (i, t) in w.tensors.iter().enumerate() {
        wr.add_bytes(
            &t.name,
            t.shape.clone(),
            t.dt.reference(),
            compression,
            w.bytes(i),
            ztensor_ref::Checksum::None,
        )?;
    }
    wr.finish()?;
    Ok(())
}

pub struct StView<'a> {
    pub dtype: safetensors::Dtype,
    pub shape: Vec<usize>,
    pub data: &'a [u8],
}

impl safetensors::View for StView<'_> {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

pub fn write_safetensors(w: &Workload, path: &Path) -> Res<()> {
    let views = w.tensors.iter().enumerate().map(|(i, t)| {
        (
            t.name.clone(),
            StView {
                dtype: t.dt.safetensors(),
                shape: t.shape.iter().map(|&d| d as usize).collect(),
                data: w.bytes(i),
            },
        )
    });
    safetensors::serialize_to_file(views, None, path)?;
    Ok(())
}

/// GGUF v3 with `general.alignment` = 64; dimensions innermost first, as ggml stores them.
pub fn write_gguf(w: &Workload, path: &Path) -> Res<()> {
    const ALIGN: u64 = 64;
    fn string(h: &mut Vec<u8>, s: &str) {
        h.extend_from_slice(&(s.len() as u64).to_le_bytes());
        h.extend_from_slice(s.as_bytes());
    }
    let mut head = Vec::new();
    head.extend_from_slice(b"GGUF");
    head.extend_from_slice(&3u32.to_le_bytes());
    head.extend_from_slice(&(w.tensors.len() as u64).to_le_bytes());
    head.extend_from_slice(&1u64.to_le_bytes());
    string(&mut head, "general.alignment");
    head.extend_from_slice(&4u32.to_le_bytes()); // UINT32
    head.extend_from_slice(&(ALIGN as u32).to_le_bytes());
    let mut offset = 0u64;
    let mut offsets = Vec::with_capacity(w.tensors.len());
    for t in &w.tensors {
        string(&mut head, &t.name);
        head.extend_from_slice(&(t.shape.len() as u32).to_le_bytes());
        for d in t.shape.iter().rev() {
            head.extend_from_slice(&d.to_le_bytes());
        }
        head.extend_from_slice(&t.dt.gguf().to_le_bytes());
        head.extend_from_slice(&offset.to_le_bytes());
        offsets.push(offset);
        offset = (offset + t.len as u64).next_multiple_of(ALIGN);
    }
    head.resize((head.len() as u64).next_multiple_of(ALIGN) as usize, 0);
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    out.write_all(&head)?;
    let mut pos = 0u64;
    for (i, _) in w.tensors.iter().enumerate() {
        let pad = offsets[i] - pos;
        out.write_all(&vec![0u8; pad as usize])?;
        out.write_all(w.bytes(i))?;
        pos = offsets[i] + w.bytes(i).len() as u64;
    }
    out.flush()?;
    Ok(())
}

/// Ours: opens the file with `opts` and reads every tensor into its caller buffer.
pub fn read_all_ours(path: &Path, opts: &ztensor::OpenOptions, bufs: &mut [Vec<u8>]) -> Res<()> {
    let r = ztensor::Reader::open_with(path, opts)?;
    for (i, b) in bufs.iter_mut().enumerate() {
        r.read_into(i, 0, b)?;
    }
    Ok(())
}

/// The reference crate has no read-into-caller-buffer API: its `read()` allocates.
pub fn read_all_ref(path: &Path, names: &[&str]) -> Res<()> {
    let r = ztensor_ref::Reader::open(path)?;
    let mut acc = 0usize;
    for name in names {
        acc = acc.wrapping_add(r.read(name, false)?.len());
    }
    black_box(acc);
    Ok(())
}

/// safetensors' way of loading into caller buffers: map, deserialize, copy every tensor
/// into its buffer (the workload's order).
pub fn safetensors_copy(w: &Workload, path: &Path, bufs: &mut [Vec<u8>]) -> Res<()> {
    let m = map(path)?;
    let s = safetensors::SafeTensors::deserialize(&m)?;
    for (name, v) in s.iter() {
        bufs[w.by_name[name]].copy_from_slice(v.data());
    }
    Ok(())
}

/// The one-thread hashing limit: sha2 over each stored range of the file.
pub fn sha2_ranges(path: &Path, ranges: &[(usize, usize)]) -> Res<()> {
    use sha2::Digest as _;
    let m = map(path)?;
    let mut acc = 0u8;
    for &(off, len) in ranges {
        acc ^= sha2::Sha256::digest(&m[off..off + len])[0];
    }
    black_box(acc);
    Ok(())
}

/// The one-thread compression limit: `zstd::bulk::compress` of every tensor at `level`,
/// in memory only.
pub fn zstd_compress_all(w: &Workload, level: i32) -> Res<()> {
    let mut acc = 0usize;
    for i in 0..w.tensors.len() {
        acc += zstd::bulk::compress(w.bytes(i), level)?.len();
    }
    black_box(acc);
    Ok(())
}

/// The one-thread decoding limit: the `zstd` crate decoding each tensor's stored frames
/// (`stored[order[i]]`: buffer i's) on this thread into its buffer.
pub fn zstd_decode_all(
    path: &Path,
    stored: &[(usize, usize)],
    order: &[usize],
    bufs: &mut [Vec<u8>],
) -> Res<()> {
    let m = map(path)?;
    let mut d = zstd::bulk::Decompressor::new()?;
    for (i, b) in bufs.iter_mut().enumerate() {
        let (off, len) = stored[order[i]];
        if d.decompress_to_buffer(&m[off..off + len], &mut b[..])? != b.len() {
            return Err("short zstd decode".into());
        }
    }
    Ok(())
}

/// Maps a file read-only.
pub fn map(path: &Path) -> Res<Mmap> {
    let f = File::open(path)?;
    // SAFETY: read-only map of a file this process wrote and nobody modifies meanwhile.
    Ok(unsafe { Mmap::map(&f)? })
}
