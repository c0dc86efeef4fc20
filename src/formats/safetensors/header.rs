//! The safetensors header turned into objects: `State`, where the streamed header
//! (`stream`) puts each entry and the metadata, the entry's fields as read (`Entry`), and
//! the one function that turns an entry into an object.

use crate::dtype::dense_byte_size;
use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::model::{Attributes, CText, Component, Components, Object, TextArena, check_name_text};
use crate::value::json::Item;

use super::dtype_of;

/// What the streamed header has produced so far.
pub(super) struct State<'l> {
    pub(super) data_start: u64,
    pub(super) size: u64,
    pub(super) limits: &'l Limits,
    pub(super) names: Names,
    pub(super) objects: Vec<Object>,
    pub(super) attributes: Option<Attributes>,
    /// The first error in what the header says (as opposed to its JSON syntax, which is
    /// reported first, as for a parsed tree). Once set, the rest is only skimmed.
    pub(super) error: Option<crate::error::Error>,
}

impl State<'_> {
    /// Records an error in what the header says (the first one is kept).
    pub(super) fn fail(&mut self, e: crate::error::Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }
    /// `__metadata__`: the bytes of a CBOR map of text, or None for `null`.
    pub(super) fn metadata(&mut self, map: Option<Vec<u8>>) {
        self.attributes = map.map(Attributes::from_vec);
    }
    /// One tensor entry, in header order.
    pub(super) fn entry(&mut self, name: &str, entry: Entry<'_>) {
        match tensor(name, entry, self)
            .map_err(|e| e.context(format!("safetensors tensor '{name}'")))
        {
            Ok(object) => self.objects.push(object),
            Err(e) => self.fail(e),
        }
    }
}

/// A tensor entry's fields as read (each checked by `tensor`, in a fixed order), or the
/// type of an entry that is not an object.
pub(super) enum Entry<'de> {
    Fields {
        dtype: Option<Item<'de>>,
        shape: Option<std::result::Result<Dims, &'static str>>,
        offsets: Option<std::result::Result<Dims, &'static str>>,
        /// The first key met twice.
        repeated: Option<&'static str>,
    },
    NotObject(&'static str),
}

/// A shape or data_offsets array as skimmed: how many items, the first ones that are
/// unsigned (up to the most any rank limit lets through), and the type of the first item
/// that is not an unsigned integer.
pub(super) struct Dims {
    pub(super) count: usize,
    pub(super) items: Vec<u64>,
    pub(super) bad: Option<&'static str>,
}

/// Texts shared by every object, allocated once.
#[derive(Default)]
pub(super) struct Names {
    /// The tensor names, side by side.
    arena: TextArena,
    dense: Option<CText>,
    data: Option<CText>,
    logical: Vec<CText>,
}

impl Names {
    fn get(slot: &mut Option<CText>, s: &str) -> Result<CText> {
        match slot {
            Some(t) => Ok(t.clone()),
            None => Ok(slot.insert(CText::new(s)?).clone()),
        }
    }
    fn logical(&mut self, s: &str) -> Result<CText> {
        if let Some(t) = self.logical.iter().find(|t| t.as_str() == s) {
            return Ok(t.clone());
        }
        let t = CText::new(s)?;
        self.logical.push(t.clone());
        Ok(t)
    }
}

/// One tensor entry: checks its fields (in a fixed order, whatever the header's) and
/// builds its object.
fn tensor(name: &str, entry: Entry<'_>, state: &mut State<'_>) -> Result<Object> {
    let limits = state.limits;
    check_name_text("tensor", name, limits.max_name_length)?;
    let name_c = state.names.arena.text(name)?;
    let (dtype, shape, offsets, repeated) = match entry {
        Entry::Fields {
            dtype,
            shape,
            offsets,
            repeated,
        } => (dtype, shape, offsets, repeated),
        Entry::NotObject(type_name) => {
            bail!(Format, "the entry must be a JSON object, not {type_name}")
        }
    };
    if let Some(key) = repeated {
        bail!(Format, "the entry has the key '{key}' more than once");
    }
    let dtype = match dtype.ok_or_else(|| missing("dtype"))? {
        Item::Text(t) => t,
        other => bail!(
            Format,
            "'dtype' must be a string, not {}",
            other.type_name()
        ),
    };
    let dtype = dtype.as_ref();
    let (storage, logical) = dtype_of(dtype)?;
    let shape = shape_of(shape, limits)?;
    let (begin, end) = offsets_of(offsets)?;
    let length = end - begin;
    let expected = dense_byte_size(&shape, storage, logical).ok_or_else(|| match logical {
        Some(t) if crate::dtype::numel(&shape).is_some() => err!(
            Format,
            "shape {shape:?} of {dtype} is not a whole number of bytes ({t} packs several values per byte)"
        ),
        _ => err!(
            Format,
            "the byte size of shape {shape:?} of {dtype} overflows u64"
        ),
    })?;
    if length != expected {
        bail!(
            Format,
            "data_offsets [{begin}, {end}) hold {length} bytes but shape {shape:?} of {dtype} \
             needs {expected}"
        );
    }
    let (data_start, size) = (state.data_start, state.size);
    let data_len = size - data_start;
    if end > data_len {
        bail!(
            Format,
            "data_offsets [{begin}, {end}) reach past the end of the data section, which \
             holds {data_len} bytes (file offset {data_start} to {size})"
        );
    }
    let names = &mut state.names;
    let component = Component::raw(
        Names::get(&mut names.data, "data")?,
        storage,
        logical.map(|t| names.logical(t)).transpose()?,
        data_start + begin,
        length,
    );
    Ok(Object {
        name: name_c,
        format: Names::get(&mut names.dense, "dense")?,
        shape: shape.as_slice().into(),
        attributes: None,
        components: Components::One(component),
    })
}

#[cold]
fn missing(key: &str) -> crate::error::Error {
    err!(Format, "the entry lacks the required key '{key}'")
}

/// An entry's `shape`: an array of non-negative integers, no longer than the rank limit.
#[inline]
fn shape_of(shape: Option<std::result::Result<Dims, &str>>, limits: &Limits) -> Result<Vec<u64>> {
    let dims = match shape.ok_or_else(|| missing("shape"))? {
        Ok(d) => d,
        Err(type_name) => bail!(Format, "'shape' must be an array, not {type_name}"),
    };
    if dims.count > limits.max_rank {
        bail!(
            Limit,
            "shape has {} dimensions, over the limit of {}",
            dims.count,
            limits.max_rank
        );
    }
    if let Some(type_name) = dims.bad {
        bail!(
            Format,
            "a shape dimension must be a non-negative integer, not {type_name}"
        );
    }
    Ok(dims.items)
}

/// An entry's `data_offsets`: [begin, end], begin not after end.
#[inline]
fn offsets_of(offsets: Option<std::result::Result<Dims, &str>>) -> Result<(u64, u64)> {
    let (begin, end) = match offsets.ok_or_else(|| missing("data_offsets"))? {
        Ok(Dims {
            count: 2,
            items,
            bad: None,
        }) => (items[0], items[1]),
        Ok(Dims { count: 2, .. }) => {
            bail!(Format, "'data_offsets' must be two non-negative integers")
        }
        _ => bail!(
            Format,
            "'data_offsets' must be an array of two integers [begin, end]"
        ),
    };
    if begin > end {
        bail!(Format, "data_offsets [{begin}, {end}) begin after they end");
    }
    Ok((begin, end))
}
