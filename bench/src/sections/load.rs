//! (3) load into caller buffers: open, then copy every tensor into pre-allocated, resident
//! buffers. Ours with the default mmap and with `use_mmap: false` (pread), two rows against
//! the same peers and limit (`read()` of the whole file into one buffer).

use std::cell::RefCell;
use std::fs::{self, File};
use std::io::Read;

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::datagen::fingerprint;
use crate::files::Files;
use crate::formats::{read_all_ours, read_all_ref, safetensors_copy};
use crate::harness::{Case, caller_buffers, case, filled_right, measure, names_of};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "load",
    runs: Runs::On(&["W2", "W1"], run),
};

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let wl = w.id;
    let names = w.names();
    eprintln!("{wl}: load into caller buffers");
    let bufs = RefCell::new(caller_buffers(w));
    let size = fs::metadata(&f.ours)?.len() as usize;
    let whole = RefCell::new(vec![0x55u8; size]);
    let cases = cases(w, f, &names, &bufs, &whole);
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    // Two rows: ours with mmap (default) and with pread, against the same peers and limit.
    for (label, ours) in [
        ("load into caller buffers", 0usize),
        ("load (use_mmap=false)", 1),
    ] {
        let mut row = Row::new(label, wl, "s", t[ours].secs).cpu(t[ours].cpu);
        for i in 2..t.len() - 1 {
            row = row.peer(labels[i], t[i].secs);
        }
        let row = row
            .limit(labels[t.len() - 1], t[t.len() - 1].secs)
            .bytes(w.total());
        let met = row.vs_limit().is_some_and(|r| r >= 0.9);
        rows.push(row.target(">= 0.9x read()", met));
    }
    Ok(())
}

/// Ours (mmap, then pread), the peers, and last the limit, which reads into `whole`.
fn cases<'a>(
    w: &'a Workload,
    f: &'a Files,
    names: &'a [&'a str],
    bufs: &'a RefCell<Vec<Vec<u8>>>,
    whole: &'a RefCell<Vec<u8>>,
) -> Vec<Case<'a>> {
    let (st, gg) = f.raw_peers();
    let load_ours =
        |opts: ztensor::OpenOptions| move || read_all_ours(&f.ours, &opts, &mut bufs.borrow_mut());
    let check = |who| filled_right(w, bufs, who);
    let pread = ztensor::OpenOptions {
        use_mmap: false,
        ..Default::default()
    };
    vec![
        case("ours", load_ours(ztensor::OpenOptions::default())).check(check("ours")),
        case("ours use_mmap=false", load_ours(pread)).check(check("ours pread")),
        case("ztensor-1.2.3 read() (allocates)", move || {
            read_all_ref(&f.reference, names)
        })
        .check(move || {
            let r = ztensor_ref::Reader::open(&f.reference)?;
            for (i, name) in names.iter().enumerate() {
                if fingerprint(&r.read(name, false)?) != w.prints[i] {
                    return Err("ztensor-1.2.3 read wrong bytes".into());
                }
            }
            Ok(())
        }),
        case("ztensor-1.2.3 mmap view+copy", move || {
            let r = ztensor_ref::Reader::open_mmap_shared(&f.reference)?;
            for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                b.copy_from_slice(r.view(names[i])?);
            }
            Ok(())
        })
        .check(check("ztensor-1.2.3 view+copy")),
        case("safetensors mmap+copy", move || {
            safetensors_copy(w, st, &mut bufs.borrow_mut())
        })
        .check(check("safetensors")),
        case("gguf (ztensor-1.2.3) view+copy", move || {
            let r = ztensor_ref::GgufReader::open(gg)?;
            for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                b.copy_from_slice(r.view(names[i])?);
            }
            Ok(())
        })
        .check(check("gguf")),
        case("read() whole file, 1 buffer", move || {
            File::open(&f.ours)?.read_exact(&mut whole.borrow_mut())?;
            Ok(())
        }),
    ]
}
