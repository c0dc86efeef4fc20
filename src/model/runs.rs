//! Runs: objects laid out as a strided batch, found for bindings.
//!
//! A model's layers repeat: layer j holds the same tensors (names aside) as layer 0, of
//! the same dtypes and shapes, each `stride` bytes after its layer-0 peer. A binding that
//! pays for each view it makes (Python: a PyTorch view costs a microsecond, a run of them
//! one view and one `unbind`) asks for the runs and makes one view per object of a run's
//! first repeat, `repeats` long, instead of one per object. The search is a heuristic with
//! a bound on its work; what it reports is exact (every claim checked), what it misses is
//! reported as objects without a repeat.

use super::Object;

/// Objects `start .. start + period * repeats` of a list. With `repeats` > 1, for every
/// `i < period` and `j < repeats`, object `start + j * period + i` is like object
/// `start + i` (dense, one plain component of the same dtype, logical type, decoded size
/// and file, the same shape) and its component's offset is `start + i`'s plus
/// `j * stride`. With `repeats` 1 the run claims nothing (`stride` 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: usize,
    pub period: usize,
    pub repeats: usize,
    pub stride: u64,
}

/// The longest period searched for (objects in one repeat: a transformer layer has 9 to
/// a few dozen tensors).
pub(crate) const MAX_PERIOD: usize = 64;

/// Like-checks allowed per object in all (`MAX_PERIOD` each), so the search is linear
/// in the objects whatever they are.
const BUDGET_PER_OBJECT: usize = MAX_PERIOD;

/// What two objects must share to be alike, of a dense object with one plain component.
#[derive(PartialEq, Eq)]
struct Like<'a> {
    dtype: crate::dtype::DType,
    logical: Option<&'a str>,
    decoded: u64,
    file: u32,
    shape: &'a [u64],
}

struct Item<'a> {
    like: Option<Like<'a>>,
    offset: u64,
}

/// An object's like (None unless dense with one plain component), and a cheap digest of
/// it: equal likes have equal digests, never 0 (0: no like).
fn item(o: &Object) -> (Item<'_>, u64) {
    let Some(c) = o.single_dense().filter(|c| c.is_plain()) else {
        return (
            Item {
                like: None,
                offset: 0,
            },
            0,
        );
    };
    let like = Like {
        dtype: c.dtype(),
        logical: c.logical_type(),
        decoded: c.decoded_length(),
        file: c.file(),
        shape: o.shape(),
    };
    // FNV-1a-style mixing of what tells shapes apart quickly.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |v: u64| h = (h ^ v).wrapping_mul(0x0000_0100_0000_01b3);
    mix(like.dtype as u64);
    mix(like.decoded);
    mix(like.file as u64);
    mix(like.shape.len() as u64);
    like.shape.iter().for_each(|&d| mix(d));
    (
        Item {
            like: Some(like),
            offset: c.offset(),
        },
        h | 1,
    )
}

/// The runs of `objects`, in order, covering every object once: repeats found greedily
/// from the front (the shortest period first), the objects between them as runs of one
/// repeat.
pub fn runs(objects: &[Object]) -> Vec<Run> {
    search(objects, BUDGET_PER_OBJECT.saturating_mul(objects.len()))
}

/// `runs` with `budget` like-checks in all: once they are spent, what is left is one run
/// of one repeat.
fn search(objects: &[Object], mut budget: usize) -> Vec<Run> {
    let (items, digests): (Vec<Item<'_>>, Vec<u64>) = objects.iter().map(item).unzip();
    let next = next_alike(&digests);
    let n = items.len();
    // `b` follows `a` at `distance` bytes: alike, and its offset `distance` further.
    let follows = |a: usize, b: usize, distance: u64| {
        let (x, y) = (&items[a], &items[b]);
        digests[a] == digests[b]
            && x.like.is_some()
            && x.like == y.like
            && x.offset.checked_add(distance) == Some(y.offset)
    };
    let mut out = Vec::new();
    let mut loose = 0; // the first object not yet in a run
    let mut i = 0;
    while i < n {
        let Some((period, stride)) = find(&items, &next, i, &mut budget, &follows) else {
            i += 1;
            continue;
        };
        let mut repeats = 2;
        while (repeats + 1) * period <= n - i {
            let at = repeats * period;
            let Some(distance) = stride.checked_mul(repeats as u64) else {
                break;
            };
            if !(0..period).all(|t| follows(i + t, i + at + t, distance)) {
                break;
            }
            repeats += 1;
        }
        if loose < i {
            out.push(Run {
                start: loose,
                period: i - loose,
                repeats: 1,
                stride: 0,
            });
        }
        out.push(Run {
            start: i,
            period,
            repeats,
            stride,
        });
        i += period * repeats;
        loose = i;
    }
    if loose < n {
        out.push(Run {
            start: loose,
            period: n - loose,
            repeats: 1,
            stride: 0,
        });
    }
    out
}

/// No next object of the same digest (within reach of the search).
const NONE: usize = usize::MAX;

/// For each object, the next one of the same digest, found through a table of the last
/// object seen of each digest (by its low bits): O(1) an object. Two digests sharing a
/// slot hide each other's objects from the search (a repeat may be missed, never claimed).
fn next_alike(digests: &[u64]) -> Vec<usize> {
    const SLOTS: usize = 1 << 12;
    let mut last = vec![NONE; SLOTS];
    let mut next = vec![NONE; digests.len()];
    for (i, &digest) in digests.iter().enumerate().rev() {
        if digest == 0 {
            continue;
        }
        let slot = &mut last[(digest >> 1) as usize % SLOTS];
        if *slot != NONE && digests[*slot] == digest {
            next[i] = *slot;
        }
        *slot = i;
    }
    next
}

/// The shortest period (and its stride) with which the objects from `i` repeat at least
/// twice, if any within `MAX_PERIOD` and the budget: tried at each next object like `i`.
fn find(
    items: &[Item<'_>],
    next: &[usize],
    i: usize,
    budget: &mut usize,
    follows: &impl Fn(usize, usize, u64) -> bool,
) -> Option<(usize, u64)> {
    let longest = MAX_PERIOD.min((items.len() - i) / 2);
    let mut peer = next[i];
    while peer != NONE && peer - i <= longest {
        let period = peer - i;
        peer = next[peer];
        let Some(stride) = items[i + period].offset.checked_sub(items[i].offset) else {
            continue;
        };
        for t in 0..period {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            if !follows(i + t, i + period + t, stride) {
                break;
            }
            if t + 1 == period {
                return Some((period, stride));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::model::{CText, Component, Components, Encoding};

    /// A dense object of one raw component at `offset`.
    fn dense(shape: &[u64], dtype: DType, offset: u64) -> Object {
        let size = shape.iter().product::<u64>() * dtype.size() as u64;
        let c = Component::raw(CText::new("data").unwrap(), dtype, None, offset, size);
        Object {
            name: CText::new("t").unwrap(),
            format: CText::new("dense").unwrap(),
            shape: shape.into(),
            attributes: None,
            components: Components::One(c),
        }
    }

    fn run(start: usize, period: usize, repeats: usize, stride: u64) -> Run {
        Run {
            start,
            period,
            repeats,
            stride,
        }
    }

    /// `layers` layers of (norm [8], weight [8, 8], weight [4, 8]) f32 after an embedding,
    /// each layer `pad` bytes after the last one ends, and a final norm.
    fn layered(layers: u64, pad: u64) -> Vec<Object> {
        let mut objects = vec![dense(&[16, 8], DType::F32, 0)];
        let layer = 32 + 256 + 128 + pad;
        for j in 0..layers {
            let at = 512 + j * layer;
            objects.push(dense(&[8], DType::F32, at));
            objects.push(dense(&[8, 8], DType::F32, at + 32));
            objects.push(dense(&[4, 8], DType::F32, at + 288));
        }
        objects.push(dense(&[8], DType::F32, 512 + layers * layer));
        objects
    }

    #[test]
    fn layers_are_one_run_between_objects_without_repeats() {
        let objects = layered(5, 64);
        assert_eq!(
            runs(&objects),
            [run(0, 1, 1, 0), run(1, 3, 5, 480), run(16, 1, 1, 0)]
        );
        assert_eq!(runs(&objects[1..16]), [run(0, 3, 5, 480)]);
        assert_eq!(runs(&[]), []);
    }

    #[test]
    fn a_broken_layer_ends_the_run_where_it_breaks() {
        // Layer 3's second weight is f16: layers 0..3 repeat, 3 and 4 not with them.
        let mut objects = layered(5, 0);
        objects[3 * 3 + 2] = dense(
            &[8, 8],
            DType::F16,
            objects[3 * 3 + 2].components()[0].offset(),
        );
        assert_eq!(
            runs(&objects),
            [run(0, 1, 1, 0), run(1, 3, 3, 416), run(10, 7, 1, 0)]
        );
        // An offset one byte off in the last layer: four layers repeat.
        let mut objects = layered(5, 0);
        let last = dense(&[4, 8], DType::F32, 512 + 4 * 416 + 289);
        objects[4 * 3 + 3] = last;
        assert_eq!(
            runs(&objects),
            [run(0, 1, 1, 0), run(1, 3, 4, 416), run(13, 4, 1, 0)]
        );
    }

    #[test]
    fn equal_tensors_evenly_spaced_repeat_with_period_one() {
        let objects: Vec<Object> = (0..6)
            .map(|k| dense(&[2, 3], DType::I8, 100 + 8 * k))
            .collect();
        assert_eq!(runs(&objects), [run(0, 1, 6, 8)]);
        // Same bytes for all (zero-size tensors at one offset): stride 0.
        let objects: Vec<Object> = (0..3).map(|_| dense(&[0, 3], DType::F32, 64)).collect();
        assert_eq!(runs(&objects), [run(0, 1, 3, 0)]);
        // Going backwards is no repeat.
        let objects: Vec<Object> = (0..3)
            .map(|k| dense(&[4], DType::F32, 64 - 16 * k))
            .collect();
        assert_eq!(runs(&objects), [run(0, 3, 1, 0)]);
    }

    #[test]
    fn only_dense_plain_objects_repeat() {
        let mut objects: Vec<Object> = (0..4).map(|k| dense(&[4], DType::F32, 16 * k)).collect();
        objects[2].components = Components::One({
            let mut c = objects[2].components()[0].clone();
            c.blob.encoding = Encoding::Zstd;
            c
        });
        assert_eq!(runs(&objects), [run(0, 1, 2, 16), run(2, 2, 1, 0)]);
        let mut objects: Vec<Object> = (0..4).map(|k| dense(&[4], DType::F32, 16 * k)).collect();
        objects[0].format = CText::new("sparse_coo").unwrap();
        assert_eq!(runs(&objects), [run(0, 1, 1, 0), run(1, 1, 3, 16)]);
    }

    #[test]
    fn objects_in_other_files_are_not_alike() {
        let mut objects: Vec<Object> = (0..4).map(|k| dense(&[4], DType::F32, 16 * k)).collect();
        let mut c = objects[3].components()[0].clone();
        c.blob.file = 1;
        objects[3].components = Components::One(c);
        assert_eq!(runs(&objects), [run(0, 1, 3, 16), run(3, 1, 1, 0)]);
    }

    #[test]
    fn pairs_repeat_too() {
        // Two alike objects are a repeat of two, however far apart.
        let objects = [dense(&[4], DType::F32, 0), dense(&[4], DType::F32, 1000)];
        assert_eq!(runs(&objects), [run(0, 1, 2, 1000)]);
    }

    #[test]
    fn the_search_stops_when_its_budget_is_spent() {
        // Finding layers 0 and 1 alike costs three checks (one per object of a layer).
        let objects = layered(5, 64);
        assert_eq!(search(&objects, 3), runs(&objects));
        assert_eq!(search(&objects, 2), [run(0, 17, 1, 0)]);
        assert_eq!(search(&objects, 0), [run(0, 17, 1, 0)]);
        // A, B, A, B ...: every A has an A further on two objects later, every B a B
        // further back, so every even period is tried and fails at its second object:
        // nothing is claimed.
        let objects: Vec<Object> = (0..400u64)
            .map(|k| match k % 2 {
                0 => dense(&[4], DType::F32, 1 << 20 | k * 16),
                _ => dense(&[2], DType::F32, (1 << 20) - k * 16),
            })
            .collect();
        assert_eq!(runs(&objects), [run(0, 400, 1, 0)]);
        // Periods beyond MAX_PERIOD are not searched.
        let long: Vec<Object> = (0..2 * (MAX_PERIOD as u64 + 1))
            .map(|k| dense(&[k % (MAX_PERIOD as u64 + 1) + 1], DType::U8, k * 128))
            .collect();
        assert_eq!(runs(&long), [run(0, long.len(), 1, 0)]);
        let short: Vec<Object> = (0..2 * MAX_PERIOD as u64)
            .map(|k| dense(&[k % MAX_PERIOD as u64 + 1], DType::U8, k * 128))
            .collect();
        assert_eq!(
            runs(&short),
            [run(0, MAX_PERIOD, 2, MAX_PERIOD as u64 * 128)]
        );
    }
}
