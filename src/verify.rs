//! Checking stored digests: one component's, or every one of a file on the library's
//! pool, reporting the first failure in file order as a sequential pass would.

use crate::codec::digest;
use crate::error::{Result, err};
use crate::model::Model;
use crate::source::Source;

/// Checks one component's stored digest against the bytes it covers. `NotFound` when it
/// has none, `Unsupported` for an algorithm the file's format doesn't define, `Checksum`
/// on mismatch. Reads every covered byte once, in pieces when the file is not in memory.
pub(crate) fn component(
    source: &Source<'_>,
    model: &Model,
    object: usize,
    component: usize,
) -> Result<()> {
    let c = &model.objects[object].components[component];
    let text = c
        .digest()
        .ok_or_else(|| err!(NotFound, "the component has no digest"))?;
    let expected = digest::expected(text, model.traits.digest_kinds)?;
    let (offset, length) = model.digest_region(object, component);
    let mut hasher = expected.hasher();
    source.for_each_piece(offset, length, |piece| hasher.update(piece))?;
    expected.check(hasher)
}

/// The components whose digests cover distinct regions (each stored region is hashed
/// once, however many components share it), in file order.
fn distinct_digests(model: &Model) -> Vec<(usize, usize)> {
    let mut seen = std::collections::HashSet::new();
    let mut work = Vec::new();
    for (oi, obj) in model.objects.iter().enumerate() {
        for (ci, c) in obj.components.iter().enumerate() {
            if let Some(d) = c.digest()
                && seen.insert((model.digest_region(oi, ci), d))
            {
                work.push((oi, ci));
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
