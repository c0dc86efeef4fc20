//! (2) views: with the file already open, a zero-copy view of every tensor, looked up by name;
//! and the pages the views touch (minor faults over a first pass on a fresh mapping).

use std::ffi::CString;
use std::hint::black_box;
use std::io::Cursor;

use memmap2::Mmap;

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::Files;
use crate::formats::map;
use crate::harness::{Case, Timing, case, measure, minor_faults, names_of, row_from};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "views",
    runs: Runs::On(&["W2", "W1"], run),
};

/// Minor faults while `pass` runs.
fn faults(pass: impl FnOnce() -> Res<()>) -> Res<f64> {
    let f0 = minor_faults();
    pass()?;
    Ok((minor_faults() - f0) as f64)
}

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let wl = w.id;
    let (st, gg) = f.raw_peers();
    let names = w.names();
    eprintln!("{wl}: views");
    // Faults over a first pass on fresh mappings, one reader at a time.
    let r = ztensor::Reader::open(&f.ours)?;
    let mut zero_copy = true;
    let ours_faults = faults(|| {
        for name in &names {
            let v = r.view(r.find(name).ok_or("missing tensor")?, 0)?;
            zero_copy &= v.zero_copy;
            black_box((v.data.as_ptr(), v.data.len()));
        }
        Ok(())
    })?;
    let rr = ztensor_ref::Reader::open_mmap_shared(&f.reference)?;
    let ref_faults = faults(|| {
        for name in &names {
            black_box(rr.view(name)?.as_ptr());
        }
        Ok(())
    })?;
    let m = map(st)?;
    let s = safetensors::SafeTensors::deserialize(&m)?;
    let st_faults = faults(|| {
        for name in &names {
            black_box(s.tensor(name)?.data().as_ptr());
        }
        Ok(())
    })?;
    let gr = ztensor_ref::GgufReader::open(gg)?;
    let gg_faults = faults(|| {
        for name in &names {
            black_box(gr.view(name)?.as_ptr());
        }
        Ok(())
    })?;

    // Ours through the C API as well (what a C or C++ program pays): the same lookups and
    // views with zt_object_find and zt_component_view, on a reader from zt_open.
    let c = CReader::open(&f.ours)?;
    let c_names: Vec<CString> = names
        .iter()
        .map(|n| CString::new(*n))
        .collect::<Result<_, _>>()?;
    let mut cases = cases(&names, &r, &rr, &s, &gr);
    cases.push(case("ours, C API", || c.views(&c_names)));
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let first = [ours_faults, ref_faults, st_faults, gg_faults];
    push_rows(rows, wl, &labels[..4], &t[..4], zero_copy, first);
    let mut row = Row::new("views by name, C API", wl, "s", t[4].secs).cpu(t[4].cpu);
    for i in 1..4 {
        row = row.peer(labels[i], t[i].secs);
    }
    let met = row.vs_best_peer().is_some_and(|r| r >= 1.0);
    rows.push(
        row.note("zt_object_find + zt_component_view per tensor; the peers through Rust")
            .target("no slower than any peer", met),
    );
    Ok(())
}

/// A reader opened with `zt_open`, closed when dropped.
struct CReader(*mut ztensor::ffi::zt_reader);

impl CReader {
    fn open(path: &std::path::Path) -> Res<CReader> {
        use std::os::unix::ffi::OsStrExt;
        let path = CString::new(path.as_os_str().as_bytes())?;
        let mut r = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and a valid out pointer.
        let status = unsafe { ztensor::ffi::zt_open(path.as_ptr(), &mut r) };
        if status != ztensor::ffi::zt_status::ZT_OK {
            return Err(format!("zt_open: {status:?}").into());
        }
        Ok(CReader(r))
    }

    /// A view of every tensor by name through the C API.
    fn views(&self, names: &[CString]) -> Res<()> {
        use ztensor::ffi::{zt_component_view, zt_object_find, zt_status, zt_view};
        let mut acc = 0usize;
        let mut index = 0usize;
        let mut v = zt_view {
            data: std::ptr::null(),
            size: 0,
            dtype: 0,
            zero_copy: false,
        };
        for name in names {
            // SAFETY: a reader from zt_open, NUL-terminated strings, valid out pointers.
            let ok = unsafe {
                zt_object_find(self.0, name.as_ptr(), &mut index) == zt_status::ZT_OK
                    && zt_component_view(self.0, index, c"data".as_ptr(), &mut v)
                        == zt_status::ZT_OK
            };
            if !ok {
                return Err(format!("C API view of {name:?} failed").into());
            }
            acc = acc.wrapping_add(v.data as usize ^ v.size as usize);
        }
        black_box(acc);
        Ok(())
    }
}

impl Drop for CReader {
    fn drop(&mut self) {
        // SAFETY: opened by zt_open, closed once.
        unsafe { ztensor::ffi::zt_close(self.0) }
    }
}

/// The timing row and the faults row; `first`: each contender's faults over its first pass.
fn push_rows(
    rows: &mut Vec<Row>,
    wl: &str,
    labels: &[&'static str],
    t: &[Timing],
    zero_copy: bool,
    first: [f64; 4],
) {
    let [ours_faults, ref_faults, st_faults, gg_faults] = first;
    let row = row_from("views of every tensor (by name)", wl, labels, t, false).note(format!(
        "every view zero-copy: {zero_copy}; minor faults during the first pass: ours {ours_faults}, \
         ztensor-1.2.3 {ref_faults}, safetensors {st_faults}, gguf {gg_faults}"
    ));
    let met = row.vs_best_peer().is_some_and(|r| r >= 1.0) && ours_faults == 0.0 && zero_copy;
    rows.push(row.target("no slower than any peer, no page touched", met));
    rows.push(
        Row::new("views: pages touched (minflt)", wl, "faults", ours_faults)
            .peer(labels[1], ref_faults)
            .peer(labels[2], st_faults)
            .peer(labels[3], gg_faults)
            .target("0 pages touched", ours_faults == 0.0 && zero_copy),
    );
}

/// The timed views: the file already open, every tensor looked up by name.
fn cases<'a>(
    names: &'a [&'a str],
    r: &'a ztensor::Reader<'static>,
    rr: &'a ztensor_ref::Reader<Cursor<Mmap>>,
    s: &'a safetensors::SafeTensors<'a>,
    gr: &'a ztensor_ref::GgufReader,
) -> Vec<Case<'a>> {
    vec![
        case("ours", move || {
            let mut acc = 0usize;
            for name in names {
                let v = r.view(r.find(name).ok_or("missing tensor")?, 0)?;
                acc = acc.wrapping_add(v.data.as_ptr() as usize ^ v.data.len());
            }
            black_box(acc);
            Ok(())
        }),
        case("ztensor-1.2.3 mmap view", move || {
            let mut acc = 0usize;
            for name in names {
                let v = rr.view(name)?;
                acc = acc.wrapping_add(v.as_ptr() as usize ^ v.len());
            }
            black_box(acc);
            Ok(())
        }),
        case("safetensors tensor().data()", move || {
            let mut acc = 0usize;
            for name in names {
                let v = s.tensor(name)?;
                acc = acc.wrapping_add(v.data().as_ptr() as usize ^ v.data().len());
            }
            black_box(acc);
            Ok(())
        }),
        case("gguf (ztensor-1.2.3) view", move || {
            let mut acc = 0usize;
            for name in names {
                let v = gr.view(name)?;
                acc = acc.wrapping_add(v.as_ptr() as usize ^ v.len());
            }
            black_box(acc);
            Ok(())
        }),
    ]
}
