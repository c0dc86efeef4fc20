//! Checking stored digests: one component's, or every one of a file on the library's
//! pool, reporting the first failure in file order as a sequential pass would.

use crate::buffer::zeroed_vec;
use crate::codec::digest;
use crate::error::{Result, bail, err};
use crate::formats::ztensor_v2::{Rule, reject};
use crate::model::{Model, schema};
use crate::source::Source;

/// Checks one component: its stored digest against the bytes it covers (the stored bytes,
/// or the decoded bytes where the format says so: zTensor v2), and where the format asks
/// verification to (v2), the values its type constrains (`schema::check_component_values`).
/// `NotFound` when it has no digest (after its values passed), `Unsupported` for an
/// algorithm the file's format doesn't define or an encoding this build can't decode,
/// `Checksum` on mismatch. Reads every covered byte once, in pieces when the file is not
/// in memory or the component is decoded.
pub(crate) fn component(
    source: &Source<'_>,
    model: &Model,
    object: usize,
    component: usize,
) -> Result<()> {
    let obj = &model.objects[object];
    let c = &obj.components[component];
    let digest = c.digest();
    let expected = digest
        .map(|d| digest::expected(d, model.traits.digest_kinds))
        .transpose()?;
    let mut hasher = expected.as_ref().map(digest::Expected::hasher);
    if model.traits.value_rules && schema::has_value_rules(c) {
        // Bool and packed fp4 components, checked whole (their decoded bytes).
        let mut bytes = zeroed_vec(c.decoded_length)?;
        crate::decode::component_into(source, c, &mut bytes)?;
        schema::check_component_values(c, obj.format() == "dense", obj.shape(), &bytes)
            .map_err(|e| reject(Rule::LayoutData, e.message()))?;
        if let Some(h) = &mut hasher {
            h.update(&bytes);
        }
    } else if let Some(h) = &mut hasher {
        if model.traits.decoded_digests && !c.is_plain() {
            decoded_pieces(source, c, &mut |piece| h.update(piece))?;
        } else {
            let (offset, length) = model.digest_region(object, component);
            source.for_each_piece(offset, length, |piece| h.update(piece))?;
        }
    }
    match (expected, hasher) {
        (Some(e), Some(h)) if model.traits.decoded_digests => e.check(h).map_err(|_| {
            err!(
                Checksum,
                "the digest {} does not match the decoded bytes",
                digest.unwrap_or("")
            )
        }),
        (Some(e), Some(h)) => e.check(h),
        _ => bail!(NotFound, "the component has no digest"),
    }
}

/// The decoded bytes of a component, a piece at a time: frame by frame through its frame
/// index for zstd, else decoded whole.
fn decoded_pieces(
    source: &Source<'_>,
    c: &crate::model::Component,
    f: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    if !crate::decode::has_frames(c) {
        let mut all = zeroed_vec(c.decoded_length)?;
        crate::decode::component_into(source, c, &mut all)?;
        f(&all);
        return Ok(());
    }
    let index = crate::decode::frame_index(source, c)?;
    const PIECE: u64 = 16 << 20;
    let mut buf = zeroed_vec(PIECE.min(c.decoded_length))?;
    let mut done = 0u64;
    while done < c.decoded_length {
        let n = PIECE.min(c.decoded_length - done) as usize;
        let read = crate::decode::component_range(source, c, Some(&index), done, &mut buf[..n])?;
        if !read {
            return Err(err!(Internal, "a zstd component without its frame reader"));
        }
        f(&buf[..n]);
        done += n as u64;
    }
    Ok(())
}

/// The components verification checks, each stored region once: those with a digest
/// (per distinct region and digest), and where the format asks for it (v2) those whose
/// type constrains their values. In file order.
fn distinct_digests(model: &Model) -> Vec<(usize, usize)> {
    let mut seen = std::collections::HashSet::new();
    let mut work = Vec::new();
    for (oi, obj) in model.objects.iter().enumerate() {
        for (ci, c) in obj.components.iter().enumerate() {
            let rules = model.traits.value_rules && schema::has_value_rules(c);
            match c.digest() {
                Some(d) if seen.insert((model.digest_region(oi, ci), d)) || rules => {
                    work.push((oi, ci))
                }
                None if rules => work.push((oi, ci)),
                _ => {}
            }
        }
    }
    work
}

/// Runs `check` on every component with a digest (each stored region once) and returns
/// the first failure in file order. Components are hashed in parallel on the pool when
/// there are enough bytes to pay for handing them out.
pub(crate) fn all(
    model: &Model,
    check: &(dyn Fn(usize, usize) -> Result<()> + Sync),
) -> Result<()> {
    let work = distinct_digests(model);
    let bytes: u64 = work
        .iter()
        .map(|&(oi, ci)| model.digest_region(oi, ci).1)
        .sum();
    let workers = crate::pool::threads().min(work.len());
    if workers <= 1 || bytes < 16 << 20 {
        return work.iter().try_for_each(|&(oi, ci)| check(oi, ci));
    }
    // The pool's threads take the next unclaimed component, the largest first (so that
    // no thread is left hashing a large one alone at the end); failures keep their file
    // order.
    let mut order: Vec<usize> = (0..work.len()).collect();
    order.sort_by_key(|&i| {
        let (oi, ci) = work[i];
        std::cmp::Reverse(model.digest_region(oi, ci).1)
    });
    let results = crate::pool::map(order.clone(), workers, |i| {
        let (oi, ci) = work[i];
        check(oi, ci)
    });
    let failures: Vec<(usize, crate::error::Error)> = order
        .into_iter()
        .zip(results)
        .filter_map(|(i, r)| r.err().map(|e| (i, e)))
        .collect();
    match failures.into_iter().min_by_key(|(i, _)| *i) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}
