//! `__child count`: ours' and safetensors' lookups and listings in a loop, each pass in a
//! function of its own, so that callgrind counts the instructions of exactly that work
//! (instruction counts don't change with the machine's load; wall times on a shared
//! machine do). See "Instruction counts" in bench/README.md.
//!
//! `views`: with the file open, a view of every tensor by name (the `views` section's case);
//! `list`: open, every name, shape, dtype and offset (the `list` section's case). The
//! safetensors file is made from the `.zt` file's tensors beside it (`PATH.safetensors`).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use crate::Res;
use crate::formats::StView;
use crate::formats::map;

pub fn run(what: &str, who: &str, path: &Path, iters: u64) -> Res<()> {
    let r = ztensor::Reader::open(path)?;
    let names: Vec<String> = r.objects().iter().map(|o| o.name().to_owned()).collect();
    let mut acc = 0usize;
    match (what, who) {
        ("views", "ours") => {
            for _ in 0..iters {
                acc ^= views_ours(&r, &names)?;
            }
        }
        ("list", "ours") => {
            for _ in 0..iters {
                acc ^= list_ours(path)?;
            }
        }
        ("views", "safetensors") => {
            let m = map(&safetensors_of(&r, path)?)?;
            let s = safetensors::SafeTensors::deserialize(&m)?;
            for _ in 0..iters {
                acc ^= views_st(&s, &names)?;
            }
        }
        ("list", "safetensors") => {
            let st = safetensors_of(&r, path)?;
            for _ in 0..iters {
                acc ^= list_st(&st)?;
            }
        }
        _ => return Err(format!("unknown count '{what} {who}'").into()),
    }
    println!("RESULT acc={acc}");
    Ok(())
}

/// `PATH.safetensors` with the tensors of our file (written once).
fn safetensors_of(r: &ztensor::Reader, path: &Path) -> Res<PathBuf> {
    let out = path.with_extension("safetensors");
    if out.exists() {
        return Ok(out);
    }
    let mut views = Vec::new();
    for (i, o) in r.objects().iter().enumerate() {
        let c = &o.components()[0];
        let dtype = match c.dtype() {
            ztensor::DType::BF16 => safetensors::Dtype::BF16,
            ztensor::DType::F32 => safetensors::Dtype::F32,
            ztensor::DType::U8 => safetensors::Dtype::U8,
            other => return Err(format!("no safetensors dtype for {other:?}").into()),
        };
        let shape = o.shape().iter().map(|&d| d as usize).collect();
        let data = r.view(i, 0)?.data;
        views.push((o.name().to_owned(), StView { dtype, shape, data }));
    }
    safetensors::serialize_to_file(views, None, &out)?;
    Ok(out)
}

#[inline(never)]
fn views_ours(r: &ztensor::Reader, names: &[String]) -> Res<usize> {
    let mut acc = 0usize;
    for name in names {
        let v = r.view(r.find(name).ok_or("missing tensor")?, 0)?;
        acc = acc.wrapping_add(v.data.as_ptr() as usize ^ v.data.len());
    }
    Ok(black_box(acc))
}

#[inline(never)]
fn views_st(s: &safetensors::SafeTensors, names: &[String]) -> Res<usize> {
    let mut acc = 0usize;
    for name in names {
        let v = s.tensor(name)?;
        acc = acc.wrapping_add(v.data().as_ptr() as usize ^ v.data().len());
    }
    Ok(black_box(acc))
}

#[inline(never)]
fn list_ours(path: &Path) -> Res<usize> {
    let r = ztensor::Reader::open(path)?;
    Ok(black_box(crate::harness::listing(&r)) as usize)
}

/// As the `list` section's `safetensors deserialize` case.
#[inline(never)]
fn list_st(path: &Path) -> Res<usize> {
    let m = map(path)?;
    let s = safetensors::SafeTensors::deserialize(&m)?;
    let base = m.as_ptr() as usize;
    let mut acc = 0usize;
    for (name, v) in s.iter() {
        acc = acc.wrapping_add(name.len());
        for &d in v.shape() {
            acc ^= d;
        }
        acc = acc.wrapping_add(v.dtype().bitsize() / 8 + (v.data().as_ptr() as usize - base));
    }
    Ok(black_box(acc))
}
