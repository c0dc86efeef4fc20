//! The name index of a model's objects, and the digest regions wider than a blob.

use crate::error::{Result, bail};

use super::Object;

/// The regions `(offset, length)` digests cover where that is not the component's blob,
/// by (object, component) index, in that order: a sorted list (24 bytes a region, where a
/// hash map took three times that for a message of many small objects).
#[derive(Clone, Debug, Default)]
pub(crate) struct DigestRegions(Vec<(u32, u32, u64, u64)>);

impl DigestRegions {
    /// Adds the region of a component after every one added so far.
    pub(crate) fn push(&mut self, object: usize, component: usize, (offset, length): (u64, u64)) {
        let key = (object as u32, component as u32);
        debug_assert!(self.0.last().is_none_or(|&(o, c, ..)| (o, c) < key));
        self.0.push((key.0, key.1, offset, length));
    }
    /// The region of a component, if it has one.
    pub(crate) fn get(&self, object: usize, component: usize) -> Option<(u64, u64)> {
        let key = (u32::try_from(object).ok()?, u32::try_from(component).ok()?);
        let at = self
            .0
            .binary_search_by(|&(o, c, ..)| (o, c).cmp(&key))
            .ok()?;
        let (_, _, offset, length) = self.0[at];
        Some((offset, length))
    }
    /// Every region: ((object, component), (offset, length)), in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = ((usize, usize), (u64, u64))> + '_ {
        self.0
            .iter()
            .map(|&(o, c, offset, length)| ((o as usize, c as usize), (offset, length)))
    }
}

/// Object index by name: open addressing (linear probing) over object indices. The hash is
/// XXH3 (from `xxhash-rust`, already a dependency for Tensogram's frame hashes): about 50
/// instructions for a 40-byte name where SipHash takes about 250, and seeded at random for
/// each index (from std's randomly keyed `RandomState`), so a hostile file can't be
/// crafted for its names to collide and make lookups quadratic. It holds no copies of the
/// names: 6 bytes per slot (an index and 16 bits of the hash, in two arrays), at most two
/// thirds of the slots used: 9 bytes per object.
#[derive(Clone, Debug)]
pub(crate) struct NameIndex {
    /// Object index + 1 per slot; 0 marks an empty slot.
    entries: Box<[u32]>,
    /// Other bits of the hash of the slot's name, compared before the name.
    tags: Box<[u16]>,
    seed: u64,
}

impl NameIndex {
    /// Indexes `objects` by name, refusing a duplicate name (a `Format` error).
    pub(crate) fn build(objects: &[Object]) -> Result<NameIndex> {
        match NameIndex::try_build(objects)? {
            Ok(index) => Ok(index),
            Err((_, at)) => bail!(Format, "duplicate object name '{}'", objects[at].name()),
        }
    }

    /// Indexes `objects` by name; `Ok(Err((before, i)))` when object `i` is the first to
    /// repeat a name, object `before`'s (for callers that rename repeats, or say where
    /// both are).
    pub(crate) fn try_build(
        objects: &[Object],
    ) -> Result<std::result::Result<NameIndex, (usize, usize)>> {
        if objects.len() >= u32::MAX as usize / 2 {
            bail!(
                Limit,
                "{} objects is more than this library indexes",
                objects.len()
            );
        }
        use std::hash::BuildHasher;
        let size = (objects.len() + objects.len() / 2 + 1).max(8);
        let mut index = NameIndex {
            entries: vec![0u32; size].into_boxed_slice(),
            tags: vec![0u16; size].into_boxed_slice(),
            seed: std::collections::hash_map::RandomState::new().hash_one(size),
        };
        for (i, o) in objects.iter().enumerate() {
            let name = o.name.as_bytes();
            let (mut at, tag) = index.place(name);
            loop {
                let entry = index.entries[at];
                if entry == 0 {
                    index.entries[at] = i as u32 + 1;
                    index.tags[at] = tag;
                    break;
                }
                if index.tags[at] == tag && objects[entry as usize - 1].name.as_bytes() == name {
                    return Ok(Err((entry as usize - 1, i)));
                }
                at = index.next(at);
            }
        }
        Ok(Ok(index))
    }

    /// The first slot to look at for `name` (from the hash's high bits), and its tag (low).
    #[inline]
    fn place(&self, name: &[u8]) -> (usize, u16) {
        let h = xxhash_rust::xxh3::xxh3_64_with_seed(name, self.seed);
        let at = ((u128::from(h) * self.entries.len() as u128) >> 64) as usize;
        (at, h as u16)
    }

    #[inline]
    fn next(&self, at: usize) -> usize {
        if at + 1 == self.entries.len() {
            0
        } else {
            at + 1
        }
    }

    /// The index of the object called `name` among `objects` (those it was built from).
    /// Bytes, so that the C API needn't check a name is UTF-8 before looking it up (no
    /// object's name matches bytes that aren't).
    #[inline]
    pub(crate) fn find(&self, objects: &[Object], name: &[u8]) -> Option<usize> {
        let (mut at, tag) = self.place(name);
        loop {
            let entry = self.entries[at];
            if entry == 0 {
                return None;
            }
            if self.tags[at] == tag && objects[entry as usize - 1].name.as_bytes() == name {
                return Some(entry as usize - 1);
            }
            at = self.next(at);
        }
    }
}
