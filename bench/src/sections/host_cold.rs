//! Cold host loads (issues 36 and 39): every tensor of a 2 GiB file (quick: 256 MiB) into
//! caller buffers, the file's pages dropped before every timed call (`fdatasync` and
//! `POSIX_FADV_DONTNEED`; residency checked with `mincore`), as the first load after a
//! boot or a download meets it.
//! - The loader's host path against `load_batch` (one engine since issue 36: target
//!   >= 0.95x).
//! - Ours (automatic read mode; forced `pread` and `O_DIRECT` for reference) against the
//!   best raw read of the same bytes into one resident buffer: `pread` of 16 MiB pieces on
//!   one thread and on every core, and `O_DIRECT` reads of 16 MiB at depths 1, 4 and 16
//!   (threads): target >= 0.9x the best.
//! The data is written once (raw bf16-like bytes, 32 tensors; quick: 16) and kept.

use std::cell::RefCell;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::datagen::{Rng, fingerprint};
use crate::harness::{case, measure, names_of};
use crate::report::Row;

pub const SECTION: Section = Section {
    name: "hostcold",
    runs: Runs::Alone(run),
};

const PIECE: usize = 16 << 20;

/// The file: `count` tensors of `each` bytes; written when missing or of another size.
fn data(dir: &Path, count: usize, each: usize) -> Res<PathBuf> {
    let path = dir.join(format!("cold-{count}x{each}.zt"));
    let stamp = path.with_extension("stamp");
    let want = format!("host_cold v1 {count} x {each}");
    if path.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&want) {
        return Ok(path);
    }
    eprintln!("hostcold: writing {count} x {} MiB", each >> 20);
    let mut w = ztensor::Writer::create(&path)?;
    let mut rng = Rng::new(0xC01D);
    let mut buf = vec![0u8; each];
    for t in 0..count {
        for chunk in buf.chunks_exact_mut(8) {
            chunk.copy_from_slice(&rng.next().to_le_bytes());
        }
        let shape = [(each / 2 / 4096) as u64, 4096];
        w.add(
            &format!("t{t}"),
            ztensor::DType::BF16,
            &shape,
            &buf,
            &ztensor::WriteOptions::default(),
        )?;
    }
    w.finish()?;
    std::fs::write(&stamp, want)?;
    Ok(path)
}

/// Drops the file's pages from the page cache; the fraction still resident after.
fn drop_pages(path: &Path) -> Res<f64> {
    let f = File::open(path)?;
    // SAFETY: plain system calls on a descriptor we hold.
    unsafe {
        libc::fdatasync(f.as_raw_fd());
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    resident(&f)
}

/// The fraction of the file's pages in the page cache (`mincore` on a fresh mapping).
fn resident(f: &File) -> Res<f64> {
    let len = f.metadata()?.len() as usize;
    // SAFETY: a read-only shared mapping, never dereferenced; unmapped below.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return Err("mmap for mincore failed".into());
    }
    let pages = len.div_ceil(4096);
    let mut v = vec![0u8; pages];
    // SAFETY: the whole mapping, one byte per page.
    let r = unsafe { libc::mincore(map, len, v.as_mut_ptr()) };
    // SAFETY: what was mapped above.
    unsafe { libc::munmap(map, len) };
    if r != 0 {
        return Err("mincore failed".into());
    }
    Ok(v.iter().filter(|&&b| b & 1 != 0).count() as f64 / pages as f64)
}

/// Memory aligned for O_DIRECT, zeroed and touched (resident).
struct Aligned(*mut u8, usize);
impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len, 4096).unwrap();
        // SAFETY: a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!p.is_null());
        // SAFETY: `len` bytes of ours.
        unsafe { std::slice::from_raw_parts_mut(p, len) }.fill(0x55);
        Aligned(p, len)
    }
    #[allow(clippy::mut_from_ref)]
    fn slice(&self) -> &mut [u8] {
        // SAFETY: `len` bytes of ours; the cases use it one at a time.
        unsafe { std::slice::from_raw_parts_mut(self.0, self.1) }
    }
}
impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe {
            std::alloc::dealloc(
                self.0,
                std::alloc::Layout::from_size_align(self.1, 4096).unwrap(),
            )
        }
    }
}

/// Reads the whole file into `dst` in `PIECE`s on `threads` threads (each piece claimed
/// in order), with `fd` (O_DIRECT when it was opened so: `dst` is aligned, and so are the
/// pieces but the file's last).
fn read_all(fd: &File, dst: &mut [u8], threads: usize) -> Res<()> {
    let len = dst.len();
    let next = AtomicU64::new(0);
    let base = dst.as_mut_ptr() as usize;
    let failed = std::sync::Mutex::new(None::<String>);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let at = i * PIECE;
                    if at >= len {
                        break;
                    }
                    let n = PIECE.min(len - at);
                    // O_DIRECT wants whole blocks: the last piece is read rounded up into
                    // the buffer's slack (the buffer is rounded up to 4 KiB).
                    let ask = n
                        .next_multiple_of(4096)
                        .min(len.next_multiple_of(4096) - at);
                    // SAFETY: each piece is a disjoint part of `dst` (plus its slack).
                    let piece =
                        unsafe { std::slice::from_raw_parts_mut((base + at) as *mut u8, ask) };
                    let mut done = 0;
                    while done < n {
                        match fd.read_at(&mut piece[done..], (at + done) as u64) {
                            Ok(0) => break,
                            Ok(k) => done += k,
                            Err(e) => {
                                *failed.lock().unwrap() = Some(e.to_string());
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    match failed.into_inner().unwrap() {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

fn run(ctx: &Ctx, rows: &mut Vec<Row>) -> Res<()> {
    let (count, each) = if ctx.args.quick {
        (16, 16 << 20)
    } else {
        (32, 64 << 20)
    };
    std::fs::create_dir_all(&ctx.args.dir)?;
    let path = data(&ctx.args.dir, count, each)?;
    let size = std::fs::metadata(&path)?.len() as usize;
    let r = ztensor::Reader::open(&path)?;
    let order: Vec<usize> = (0..count)
        .map(|t| r.find(&format!("t{t}")).ok_or("missing tensor"))
        .collect::<Result<_, _>>()?;
    let bufs = RefCell::new(vec![vec![0x55u8; each]; count]);
    // The reference: each tensor's bytes, read warm once.
    let prints: Vec<u64> = order
        .iter()
        .map(|&o| r.read_to_vec(o, 0).map(|v| fingerprint(&v)))
        .collect::<Result<_, _>>()?;
    let check = |who: &'static str| {
        let bufs = &bufs;
        let prints = &prints;
        move || -> Res<()> {
            for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                if fingerprint(b) != prints[i] {
                    return Err(format!("{who}: wrong bytes in tensor {i}").into());
                }
                b.fill(0x55);
            }
            Ok(())
        }
    };
    let residues = RefCell::new(Vec::new());
    let cold = || -> Res<()> {
        residues.borrow_mut().push(drop_pages(&path)?);
        Ok(())
    };
    let loader_with = |io| {
        ztensor::Loader::new(
            None,
            &ztensor::LoaderOptions {
                io,
                ..ztensor::LoaderOptions::default()
            },
        )
    };
    let (auto, pread, direct) = (
        loader_with(ztensor::ReadMode::Auto)?,
        loader_with(ztensor::ReadMode::Pread)?,
        loader_with(ztensor::ReadMode::Direct)?,
    );
    let load = |loader: &ztensor::Loader| -> Res<()> {
        let mut b = bufs.borrow_mut();
        let mut q: Vec<ztensor::load::Request<'_>> = b
            .iter_mut()
            .enumerate()
            .map(|(i, dst)| ztensor::load::Request::host(order[i], 0, dst))
            .collect();
        for (result, _) in loader.load(&r, &mut q, &ztensor::load::NoEvents) {
            result?;
        }
        Ok(())
    };
    let whole = Aligned::new(size.next_multiple_of(4096));
    let buffered = File::open(&path)?;
    let odirect = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .ok();
    let raw = |fd: &File, threads: usize| read_all(fd, &mut whole.slice()[..size], threads);
    let cores = ctx.cores;
    let mut cases = vec![
        case("ours Loader::load (host, auto)", || load(&auto))
            .setup(cold)
            .check(check("loader auto")),
        case("ours load_batch", || {
            let mut b = bufs.borrow_mut();
            let mut q: Vec<ztensor::load::Request<'_>> = b
                .iter_mut()
                .enumerate()
                .map(|(i, dst)| ztensor::load::Request::host(order[i], 0, dst))
                .collect();
            for result in r.load_batch(&mut q, 0) {
                result?;
            }
            Ok(())
        })
        .setup(cold)
        .check(check("load_batch")),
        case("ours Loader::load, pread", || load(&pread))
            .setup(cold)
            .check(check("loader pread")),
        case("ours Loader::load, O_DIRECT", || load(&direct))
            .setup(cold)
            .check(check("loader direct")),
        case("pread 16 MiB, 1 thread", || raw(&buffered, 1)).setup(cold),
        case("pread 16 MiB, every core", || raw(&buffered, cores)).setup(cold),
    ];
    let mut direct_names = Vec::new();
    if let Some(d) = &odirect {
        for (depth, name) in [
            (1, "O_DIRECT 16 MiB, depth 1"),
            (4, "O_DIRECT 16 MiB, depth 4"),
            (16, "O_DIRECT 16 MiB, depth 16"),
        ] {
            cases.push(case(name, move || raw(d, depth)).setup(cold));
            direct_names.push(name);
        }
    }
    eprintln!(
        "hostcold: {} cases, {} MiB each, pages dropped before every call",
        cases.len(),
        size >> 20
    );
    let names = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let left = residues.borrow().iter().cloned().fold(0.0f64, f64::max);
    let note_cold = format!(
        "pages dropped before every call (at most {:.1}% of the file still cached after a drop); \
         load average {}",
        left * 100.0,
        crate::report::loadavg()
    );
    // (1) One engine: the loader's host path against load_batch.
    let row = Row::new(
        "cold host load: Loader::load vs load_batch",
        "cold",
        "s",
        t[0].secs,
    )
    .cpu(t[0].cpu)
    .limit(names[1], t[1].secs)
    .bytes(size as u64)
    .note(note_cold.clone());
    let met = row.vs_limit().is_some_and(|x| x >= 0.95);
    rows.push(row.target(">= 0.95x load_batch", met));
    // (2) Against the best raw read.
    let raws = 4..t.len();
    let best = raws
        .clone()
        .min_by(|&a, &b| t[a].secs.total_cmp(&t[b].secs))
        .expect("raw cases");
    let mut row = Row::new("cold host load vs raw reads", "cold", "s", t[0].secs)
        .cpu(t[0].cpu)
        .peer(names[2], t[2].secs)
        .peer(names[3], t[3].secs);
    for i in raws.filter(|&i| i != best) {
        row = row.peer(names[i], t[i].secs);
    }
    let row = row
        .limit(names[best], t[best].secs)
        .bytes(size as u64)
        .note(format!(
            "{note_cold}; peers: ours with the read mode forced, and the raw reads that were \
             not the best{}",
            if odirect.is_none() {
                "; O_DIRECT refused by this filesystem"
            } else {
                ""
            }
        ));
    let met = row.vs_limit().is_some_and(|x| x >= 0.9);
    rows.push(row.target(">= 0.9x the best raw read", met));
    let _ = direct_names;
    Ok(())
}
