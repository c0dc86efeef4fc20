//! Conversions (issue 39 item 1): 64 Mi bf16 and f16 values read as f32 with
//! `zt_component_read_as` (the C API, on a file in the page cache) into one resident
//! buffer, on one thread (the pool of one thread, the calling thread pinned to one CPU)
//! against the loop a user would write (a shift for bf16, F16C's `vcvtph2ps` for f16), and
//! with the pool against `memcpy` of the output's size; then a column slice of the bf16
//! tensor (a column-parallel rank's quarter) converted to f32 through the loader against
//! the plain strided loop. The limits read the same mapped bytes.

use std::cell::RefCell;
use std::ffi::CString;
use std::path::Path;

use super::dequant::{affinity, first_cpu, set_affinity};
use super::{Ctx, Runs, Section};
use crate::Res;
use crate::datagen::Rng;
use crate::files::warm;
use crate::harness::{Timing, case, measure};
use crate::report::Row;

pub const SECTION: Section = Section {
    name: "convert",
    runs: Runs::Alone(run),
};

/// A reader opened with `zt_open`, closed when dropped.
struct CReader(*mut ztensor::ffi::zt_reader);

impl CReader {
    fn open(path: &Path) -> Res<CReader> {
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

    /// `zt_component_read_as` of object `index`'s data as f32 into `dst`.
    fn read_f32(&self, index: usize, dst: &mut [u8]) -> Res<()> {
        // SAFETY: a reader from zt_open, a NUL-terminated role, `dst` writable.
        let status = unsafe {
            ztensor::ffi::zt_component_read_as(
                self.0,
                index,
                c"data".as_ptr(),
                ztensor::DType::F32 as u32,
                dst.as_mut_ptr().cast(),
                dst.len(),
            )
        };
        if status != ztensor::ffi::zt_status::ZT_OK {
            return Err(format!("zt_component_read_as: {status:?}").into());
        }
        Ok(())
    }
}

impl Drop for CReader {
    fn drop(&mut self) {
        // SAFETY: opened by zt_open, closed once.
        unsafe { ztensor::ffi::zt_close(self.0) }
    }
}

/// The loop a user writes for bf16 -> f32: each value's bits shifted into the top half.
#[inline(never)]
fn shift_loop(src: &[u16], dst: &mut [u32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = u32::from(*s) << 16;
    }
}

/// f16 -> f32 with F16C (`vcvtph2ps`, 8 values an instruction), when the CPU has it.
fn f16c_loop(src: &[u16], dst: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx,f16c")]
        fn run(src: &[u16], dst: &mut [f32]) {
            use std::arch::x86_64::*;
            let n = src.len().min(dst.len()) / 8 * 8;
            for i in (0..n).step_by(8) {
                // SAFETY: i + 8 <= n, within both slices.
                unsafe {
                    let h = _mm_loadu_si128(src.as_ptr().add(i).cast());
                    _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
                }
            }
            for i in n..src.len().min(dst.len()) {
                dst[i] = half_to_f32(src[i]);
            }
        }
        if std::arch::is_x86_feature_detected!("f16c") {
            // SAFETY: the CPU has AVX and F16C (F16C implies AVX).
            unsafe { run(src, dst) };
            return true;
        }
    }
    let _ = (src, dst);
    false
}

/// f16 bits as f32 (normal and subnormal values only: the data has no NaN), for a tail.
fn half_to_f32(h: u16) -> f32 {
    let (sign, exp, man) = (h >> 15, (h >> 10) & 0x1f, f32::from(h & 0x3ff));
    let v = if exp == 0 {
        man * 2f32.powi(-24)
    } else {
        (1.0 + man / 1024.0) * 2f32.powi(i32::from(exp) - 15)
    };
    if sign == 1 { -v } else { v }
}

/// The plain strided loop of a column slice: rows of `width` bf16 values, columns
/// `[first, first + count)` of each, as f32 bits.
#[inline(never)]
fn strided_loop(src: &[u16], width: usize, first: usize, count: usize, dst: &mut [u32]) {
    for (row, d) in src.chunks_exact(width).zip(dst.chunks_exact_mut(count)) {
        for (d, s) in d.iter_mut().zip(&row[first..first + count]) {
            *d = u32::from(*s) << 16;
        }
    }
}

/// A 16-bit float's bits with a random sign and mantissa and an exponent of a weight's
/// size (no zero, infinity or NaN: the F16C limit would quiet a signalling NaN that ours
/// keeps).
fn value_bits(rng: &mut Rng, bf16: bool) -> u16 {
    let r = rng.next();
    if bf16 {
        // Exponents 2^-20 .. 2^3.
        let exp = 107 + (r % 24) as u16;
        ((r >> 8) as u16 & 0x8000) | exp << 7 | ((r >> 24) as u16 & 0x7f)
    } else {
        // Exponents 2^-14 .. 2^3 and a few subnormals.
        let exp = (r % 19) as u16;
        ((r >> 8) as u16 & 0x8000) | exp << 10 | ((r >> 24) as u16 & 0x3ff)
    }
}

/// Writes the file: "bf16" and "f16", `rows` x `cols` each.
fn write_file(path: &Path, rows: usize, cols: usize) -> Res<()> {
    let stamp = path.with_extension("stamp");
    let want = format!("convert v1 {rows}x{cols} {}", env!("ZT_BENCH_LIB_HASH"));
    if path.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&want) {
        return Ok(());
    }
    let mut w = ztensor::Writer::create(path)?;
    for (name, dtype, bf16) in [
        ("bf16", ztensor::DType::BF16, true),
        ("f16", ztensor::DType::F16, false),
    ] {
        let mut rng = Rng::new(if bf16 { 16 } else { 61 });
        let data: Vec<u8> = (0..rows * cols)
            .flat_map(|_| value_bits(&mut rng, bf16).to_le_bytes())
            .collect();
        w.add(
            name,
            dtype,
            &[rows as u64, cols as u64],
            &data,
            &ztensor::WriteOptions::default(),
        )?;
    }
    w.finish()?;
    std::fs::write(stamp, want)?;
    Ok(())
}

/// The stored bytes of object `i`'s data in the mapped file, as u16 values.
fn values<'m>(map: &'m [u8], r: &ztensor::Reader<'_>, i: usize) -> &'m [u16] {
    let c = &r.objects()[i].components()[0];
    let bytes = &map[c.offset() as usize..(c.offset() + c.length()) as usize];
    // SAFETY: u16 has no invalid bit patterns; align_to returns only the aligned middle,
    // which is all of it for a component at a 64-byte offset.
    let (head, v, _) = unsafe { bytes.align_to::<u16>() };
    assert!(head.is_empty(), "the component is aligned");
    v
}

fn as_u32(v: &mut [u8]) -> &mut [u32] {
    // SAFETY: any bits are a valid u32; only the aligned middle is used (all of a Vec's
    // allocation of this size).
    let (head, v, _) = unsafe { v.align_to_mut::<u32>() };
    assert!(head.is_empty());
    v
}

fn as_f32(v: &mut [u8]) -> &mut [f32] {
    // SAFETY: as `as_u32`.
    let (head, v, _) = unsafe { v.align_to_mut::<f32>() };
    assert!(head.is_empty());
    v
}

fn gbps(bytes: u64, t: Timing) -> f64 {
    bytes as f64 / t.secs / 1e9
}

fn run(ctx: &Ctx, rows: &mut Vec<Row>) -> Res<()> {
    let a = ctx.args;
    // 64 Mi values (quick: 4 Mi), 8192 wide.
    let (nrows, cols) = if a.quick { (512, 8192) } else { (8192, 8192) };
    let n = nrows * cols;
    let wl = if a.quick {
        "4 Mi values"
    } else {
        "64 Mi values"
    };
    let path = a.dir.join("convert.zt");
    eprintln!("convert: {wl} of bf16 and f16");
    write_file(&path, nrows, cols)?;
    warm(&path)?;
    let file = std::fs::File::open(&path)?;
    // SAFETY: a file this run wrote and nobody changes while it is mapped.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    let reader = ztensor::Reader::open(&path)?;
    let c = CReader::open(&path)?;
    let all = affinity()?;
    let one = first_cpu(&all);
    let out_bytes = (n * 4) as u64;
    let out = RefCell::new(vec![0x55u8; n * 4]);
    let limit_out = RefCell::new(vec![0x55u8; n * 4]);
    let copy_src = vec![0x33u8; n * 4];
    let one_thread = || -> Res<()> {
        ztensor::pool::set_threads(1)?;
        set_affinity(&one)
    };
    let every_core = || -> Res<()> {
        // Affinity first: the pool's new threads inherit this thread's.
        set_affinity(&all)?;
        ztensor::pool::set_threads(a.threads)?;
        Ok(())
    };
    let same = |who: &'static str| {
        let (out, limit_out) = (&out, &limit_out);
        move || -> Res<()> {
            if out.borrow()[..] != limit_out.borrow()[..] {
                return Err(
                    format!("{who}: ours and the limit's loop wrote different values").into(),
                );
            }
            Ok(())
        }
    };
    for (index, name, bf16) in [(0usize, "bf16", true), (1, "f16", false)] {
        let src = values(&map, &reader, index);
        let limit_name = if bf16 {
            "plain shift loop, 1 thread"
        } else {
            "F16C loop (vcvtph2ps), 1 thread"
        };
        let has_f16c = bf16 || f16c_loop(&src[..8], &mut [0f32; 8]);
        if !has_f16c {
            eprintln!("convert: no F16C on this CPU: the f16 rows are skipped");
            continue;
        }
        let cases = vec![
            case("ours, 1 thread", || {
                c.read_f32(index, &mut out.borrow_mut())
            })
            .setup(one_thread),
            case("ours, the pool", || {
                c.read_f32(index, &mut out.borrow_mut())
            })
            .setup(every_core),
            case("memcpy of the output, 1 call", || {
                limit_out.borrow_mut().copy_from_slice(&copy_src);
                Ok(())
            })
            .setup(every_core),
            case(limit_name, || {
                let mut o = limit_out.borrow_mut();
                if bf16 {
                    shift_loop(src, as_u32(&mut o));
                } else {
                    f16c_loop(src, as_f32(&mut o));
                }
                Ok(())
            })
            .setup(one_thread)
            .check(same(name)),
        ];
        let t = measure(a.runs, cases);
        every_core()?;
        let t = t?;
        let (one, pool, copy, lim) = (t[0], t[1], t[2], t[3]);
        let row = Row::new(&format!("{name} -> f32, 1 thread"), wl, "s", one.secs)
            .cpu(one.cpu)
            .peer("memcpy of the output, 1 call", copy.secs)
            .limit(limit_name, lim.secs)
            .bytes(out_bytes)
            .note(format!(
                "zt_component_read_as into a resident buffer, pool of 1 thread, pinned; \
                 {:.2} GB/s of f32 out, the loop {:.2}",
                gbps(out_bytes, one),
                gbps(out_bytes, lim)
            ));
        let met = row.vs_limit().is_some_and(|r| r >= 1.0);
        rows.push(row.target(">= 1x the 1-thread loop", met));
        let row = Row::new(&format!("{name} -> f32, the pool"), wl, "s", pool.secs)
            .cpu(pool.cpu)
            .peer(limit_name, lim.secs)
            .limit("memcpy of the output, 1 call", copy.secs)
            .bytes(out_bytes)
            .note(format!(
                "zt_component_read_as, the library's pool ({} threads); {:.2} GB/s of f32 \
                 out, memcpy {:.2}",
                ztensor::pool::threads(),
                gbps(out_bytes, pool),
                gbps(out_bytes, copy)
            ));
        let met = row.vs_limit().is_some_and(|r| r >= 0.8);
        rows.push(row.target(">= 0.8x memcpy of the output", met));
    }
    columns(ctx, &reader, &map, rows)
}

/// Columns `[cols * 3 / 8, + cols / 4)` of every row of the bf16 tensor, as f32, through
/// the loader (host destination) against the plain strided loop.
fn columns(ctx: &Ctx, reader: &ztensor::Reader<'_>, map: &[u8], rows: &mut Vec<Row>) -> Res<()> {
    use ztensor::load::{Destination, NoEvents, Request, Slice};
    let a = ctx.args;
    let shape = reader.objects()[0].shape().to_vec();
    let (nrows, width) = (shape[0] as usize, shape[1] as usize);
    let (first, count) = (width * 3 / 8, width / 4);
    let bytes = (nrows * count * 4) as u64;
    let wl = format!("{nrows}x{width} bf16, {count} columns");
    eprintln!("convert: columns through the loader ({wl})");
    let src = values(map, reader, 0);
    let out = RefCell::new(vec![0x55u8; nrows * count * 4]);
    let limit_out = RefCell::new(vec![0x55u8; nrows * count * 4]);
    let all = affinity()?;
    let one = first_cpu(&all);
    let load = || -> Res<()> {
        let loader = ztensor::Loader::new(None, &ztensor::LoaderOptions::default())?;
        let mut o = out.borrow_mut();
        let mut requests = [Request {
            object: 0,
            component: 0,
            slice: Slice::Columns {
                first: first as u64,
                count: count as u64,
            },
            convert: Some(ztensor::DType::F32),
            verify: false,
            dst: Destination::Host(&mut o),
        }];
        for (r, _) in loader.load(reader, &mut requests, &NoEvents) {
            r?;
        }
        Ok(())
    };
    let one_thread = || -> Res<()> {
        ztensor::pool::set_threads(1)?;
        set_affinity(&one)
    };
    let every_core = || -> Res<()> {
        set_affinity(&all)?;
        ztensor::pool::set_threads(a.threads)?;
        Ok(())
    };
    let same = || -> Res<()> {
        if out.borrow()[..] != limit_out.borrow()[..] {
            return Err("the loader's columns differ from the strided loop's".into());
        }
        Ok(())
    };
    let cases = vec![
        case("ours, 1 thread", load).setup(one_thread),
        case("ours, the pool", load).setup(every_core),
        case("plain strided loop, 1 thread", || {
            strided_loop(
                src,
                width,
                first,
                count,
                as_u32(&mut limit_out.borrow_mut()),
            );
            Ok(())
        })
        .setup(one_thread)
        .check(same),
    ];
    let t = measure(a.runs, cases);
    every_core()?;
    let t = t?;
    for (i, label) in [(0usize, "1 thread"), (1, "the pool")] {
        let row = Row::new(
            &format!("columns -> f32 through the loader, {label}"),
            &wl,
            "s",
            t[i].secs,
        )
        .cpu(t[i].cpu)
        .limit("plain strided loop, 1 thread", t[2].secs)
        .bytes(bytes)
        .note(format!(
            "Loader::load of one Slice::Columns request converted to f32 into host memory \
             (a new loader per call); {:.2} GB/s of f32 out, the loop {:.2}",
            gbps(bytes, t[i]),
            gbps(bytes, t[2])
        ));
        let met = row.vs_limit().is_some_and(|r| r >= 0.8);
        rows.push(row.target(">= 0.8x the plain strided loop", met));
    }
    Ok(())
}
