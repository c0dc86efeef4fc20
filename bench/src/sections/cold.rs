//! Cold reads (issue 39 item 2's measurement): W1 loaded when none of its pages are in
//! the page cache, as after a boot, a download, or for a model larger than memory.
//! Before each timed call the file's pages are dropped (`fdatasync`, then
//! `POSIX_FADV_DONTNEED`) and the residency left is checked with `mincore` (the run fails
//! if more than 1% stays). Ours (whatever path the library picks by default: `load_batch`
//! with the open, and the loader's host path) against safetensors (mmap + copy of every
//! tensor) and the raw reads of the same file into one aligned buffer: `O_DIRECT` with 1, 4
//! and 16 reads in flight (threads, 4 MiB each) and with 16 of 1 MiB (the library's own
//! shape), buffered `pread` on one thread and on several. The row's limit is the best raw
//! read of the run.

use std::cell::RefCell;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::batch::{batch_into, order_of};
use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::Files;
use crate::formats::safetensors_copy;
use crate::harness::{Case, caller_buffers, case, filled_right, measure, names_of};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "cold",
    runs: Runs::On(&["W1"], run),
};

/// Bytes per raw read.
const PIECE: usize = 4 << 20;

/// Bytes per raw read in the row that reads as the library does.
const SMALL_PIECE: usize = 1 << 20;

/// Drops the page-cache pages of `path` and returns the share still resident.
pub fn drop_pages(path: &Path) -> Res<f64> {
    let f = File::open(path)?;
    f.sync_data()?;
    // SAFETY: a descriptor we own; advice only.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(format!("posix_fadvise(DONTNEED) of {}: error {rc}", path.display()).into());
    }
    resident(&f)
}

/// The share of `f`'s pages in the page cache (`mincore` on a mapping never touched).
pub fn resident(f: &File) -> Res<f64> {
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok(0.0);
    }
    // SAFETY: a fresh shared read-only mapping of a file we opened, unmapped below;
    // mincore only reports on it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED {
            return Err("mmap for mincore failed".into());
        }
        let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
        let mut vec = vec![0u8; len.div_ceil(page)];
        let rc = libc::mincore(p, len, vec.as_mut_ptr());
        libc::munmap(p, len);
        if rc != 0 {
            return Err("mincore failed".into());
        }
        Ok(vec.iter().filter(|&&b| b & 1 != 0).count() as f64 / vec.len() as f64)
    }
}

/// A buffer of `len` bytes aligned to 4096 (what `O_DIRECT` needs), touched once.
struct Aligned {
    ptr: *mut u8,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len.max(4096), 4096).expect("layout");
        // SAFETY: a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        Aligned { ptr, len }
    }
    fn slice(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes allocated above, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len.max(4096), 4096).expect("layout");
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) };
    }
}

/// Reads all of `path` into `dst` (at least the file's size rounded up to 4096) with
/// `threads` threads taking pieces of `piece` bytes in turn, each with `pread`; through
/// `O_DIRECT` when `direct`.
fn raw_read(path: &Path, dst: &mut [u8], threads: usize, direct: bool, piece: usize) -> Res<()> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    let f = o.open(path)?;
    let len = f.metadata()?.len() as usize;
    let pieces: Vec<&mut [u8]> = dst[..len.next_multiple_of(4096)]
        .chunks_mut(piece)
        .collect();
    let pieces: Vec<std::sync::Mutex<Option<&mut [u8]>>> = pieces
        .into_iter()
        .map(|p| std::sync::Mutex::new(Some(p)))
        .collect();
    let next = AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(None::<String>);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = pieces.get(i) else { break };
                    let buf = slot.lock().unwrap().take().expect("each piece once");
                    let at = (i * piece) as u64;
                    let want = (len - i * piece).min(buf.len());
                    let mut done = 0;
                    while done < want {
                        // O_DIRECT wants whole blocks: read the rounded length, which
                        // stops at the end of the file.
                        match f.read_at(&mut buf[done..], at + done as u64) {
                            Ok(0) => break,
                            Ok(n) => done += n,
                            Err(e) => {
                                *failed.lock().unwrap() = Some(e.to_string());
                                return;
                            }
                        }
                    }
                    if done < want {
                        *failed.lock().unwrap() = Some(format!("short read at {at}"));
                        return;
                    }
                }
            });
        }
    });
    match failed.into_inner().unwrap() {
        Some(e) => Err(format!("{}: {e}", path.display()).into()),
        None => Ok(()),
    }
}

/// Whether `path` can be read with `O_DIRECT` (tmpfs and some filesystems refuse it).
fn direct_works(path: &Path) -> bool {
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    else {
        return false;
    };
    let mut probe = Aligned::new(4096);
    f.read_at(probe.slice(), 0).is_ok()
}

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("{}: cold loads (pages dropped before each call)", w.id);
    let st = f.safetensors.as_ref().ok_or("no safetensors file")?;
    let order = {
        let r = ztensor::Reader::open(&f.ours)?;
        order_of(&r, w)?
    };
    let bufs = RefCell::new(caller_buffers(w));
    let check = |who| filled_right(w, &bufs, who);
    let size = std::fs::metadata(&f.ours)?.len() as usize;
    let whole = RefCell::new(Aligned::new(size.next_multiple_of(4096)));
    whole.borrow_mut().slice().fill(0x55);
    let worst = RefCell::new(0.0f64);
    let cold = |path: &'static str| {
        let p = if path == "st" {
            st.clone()
        } else {
            f.ours.clone()
        };
        let worst = &worst;
        move || -> Res<()> {
            let left = drop_pages(&p)?;
            if left > 0.01 {
                return Err(format!(
                    "{:.1}% of {} stayed in the page cache after POSIX_FADV_DONTNEED",
                    left * 100.0,
                    p.display()
                )
                .into());
            }
            let mut w = worst.borrow_mut();
            *w = w.max(left);
            Ok(())
        }
    };
    let parallel = ctx.cores.max(4);
    let raw = |threads: usize, direct: bool, piece: usize| {
        let whole = &whole;
        let path = f.ours.clone();
        move || raw_read(&path, whole.borrow_mut().slice(), threads, direct, piece)
    };
    let direct_ok = direct_works(&f.ours);
    let mut cases: Vec<Case<'_>> = vec![
        case("ours load_batch (with open)", || {
            let r = ztensor::Reader::open(&f.ours)?;
            batch_into(&r, &mut bufs.borrow_mut(), &order)
        })
        .setup(cold("ours"))
        .check(check("batch")),
        case("ours loader, host (with open)", || {
            use ztensor::load::{Destination, NoEvents, Request, Slice};
            let r = ztensor::Reader::open(&f.ours)?;
            let loader = ztensor::Loader::new(None, &ztensor::LoaderOptions::default())?;
            let mut b = bufs.borrow_mut();
            let mut requests: Vec<Request<'_>> = b
                .iter_mut()
                .enumerate()
                .map(|(i, dst)| Request {
                    object: order[i],
                    component: 0,
                    slice: Slice::Whole,
                    convert: None,
                    verify: false,
                    dst: Destination::Host(dst),
                })
                .collect();
            for (result, _) in loader.load(&r, &mut requests, &NoEvents) {
                result?;
            }
            Ok(())
        })
        .setup(cold("ours"))
        .check(check("loader")),
        case("safetensors mmap+copy (with open)", || {
            safetensors_copy(w, st, &mut bufs.borrow_mut())
        })
        .setup(cold("st"))
        .check(check("safetensors")),
        case("raw: buffered pread, 1 thread", raw(1, false, PIECE)).setup(cold("ours")),
        case("raw: buffered pread, parallel", raw(parallel, false, PIECE)).setup(cold("ours")),
    ];
    if direct_ok {
        cases.push(case("raw: O_DIRECT, 1 in flight", raw(1, true, PIECE)).setup(cold("ours")));
        cases.push(case("raw: O_DIRECT, 4 in flight", raw(4, true, PIECE)).setup(cold("ours")));
        cases.push(case("raw: O_DIRECT, 16 in flight", raw(16, true, PIECE)).setup(cold("ours")));
        // The library's own shape of O_DIRECT reads (1 MiB at 16 in flight), raw.
        cases.push(
            case("raw: O_DIRECT, 16 in flight of 1 MiB", raw(16, true, SMALL_PIECE))
                .setup(cold("ours")),
        );
    } else {
        eprintln!("cold: O_DIRECT is refused on this filesystem: no O_DIRECT rows");
    }
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let bytes = w.total();
    // The best raw read: the limit.
    let raw_at = 3;
    let best = (raw_at..t.len())
        .min_by(|&a, &b| t[a].secs.total_cmp(&t[b].secs))
        .expect("raw cases");
    let gbps = |s: f64| bytes as f64 / s / 1e9;
    let raw_note: Vec<String> = (raw_at..t.len())
        .map(|i| format!("{} {:.2} GB/s", &labels[i][5..], gbps(t[i].secs)))
        .collect();
    for (i, metric) in [
        (0usize, "cold load, load_batch"),
        (1, "cold load, loader host path"),
    ] {
        let mut row = Row::new(metric, w.id, "s", t[i].secs).cpu(t[i].cpu);
        for j in 2..t.len() {
            row = row.peer(labels[j], t[j].secs);
        }
        let row = row
            .limit(labels[best], t[best].secs)
            .bytes(bytes)
            .note(format!(
                "pages dropped before each call (fdatasync + POSIX_FADV_DONTNEED; at most \
                 {:.2}% stayed, by mincore); {:.2} GB/s; raw reads of the file: {}; \
                 {parallel} threads for the parallel pread{}",
                worst.borrow().max(0.0) * 100.0,
                gbps(t[i].secs),
                raw_note.join(", "),
                if direct_ok {
                    ""
                } else {
                    "; O_DIRECT refused here"
                }
            ));
        let met = row.vs_limit().is_some_and(|r| r >= 0.9);
        rows.push(row.target(">= 0.9x the best raw read", met));
    }
    Ok(())
}
