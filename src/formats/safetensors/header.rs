//! The safetensors header streamed into objects: serde seeds that read the JSON object of
//! tensor entries and `__metadata__` without building a tree, and the one function that
//! turns an entry into an object.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::cbor::{Value, encode, encode_head};
use crate::dtype::dense_byte_size;
use crate::error::{Result, bail, err};
use crate::json::{self, Item, Key, Skim};
use crate::limits::Limits;
use crate::model::{Attributes, CText, Component, Components, Object, TextArena, check_name_text};

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
    fn fail(&mut self, e: crate::error::Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }
}

/// The top level: a JSON object of tensor entries and `__metadata__`.
pub(super) struct Root<'c, 't, 's, 'l> {
    pub(super) level: json::Level<'c, 't>,
    pub(super) state: &'s mut State<'l>,
}

impl<'de> Visitor<'de> for Root<'_, '_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let inner = self.level.enter()?;
        let skim = Skim {
            level: inner,
            keep_text: false,
        };
        let mut metadata_seen = false;
        while let Some(key) = map.next_key_seed(Key)? {
            if key == "__metadata__" {
                if metadata_seen {
                    return Err(inner.duplicate_key(&key));
                }
                metadata_seen = true;
                if self.state.error.is_some() {
                    map.next_value_seed(skim)?;
                } else {
                    let meta = map.next_value_seed(Metadata { level: inner })?;
                    match meta {
                        Ok(attributes) => self.state.attributes = attributes,
                        Err(e) => self.state.fail(e),
                    }
                }
                continue;
            }
            if self.state.error.is_some() {
                map.next_value_seed(skim)?;
                continue;
            }
            let entry = map.next_value_seed(EntrySeed { level: inner })?;
            let state = &mut *self.state;
            match tensor(&key, entry, state)
                .map_err(|e| e.context(format!("safetensors tensor '{key}'")))
            {
                Ok(object) => state.objects.push(object),
                Err(e) => state.fail(e),
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        let item = Skim {
            level: self.level,
            keep_text: false,
        }
        .visit_seq(seq)?;
        self.not_an_object(item.type_name());
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<(), E> {
        self.not_an_object("bool");
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<(), E> {
        self.not_an_object("unsigned integer");
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> std::result::Result<(), E> {
        self.not_an_object(if n < 0 {
            "negative integer"
        } else {
            "unsigned integer"
        });
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<(), E> {
        self.not_an_object("float");
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<(), E> {
        self.not_an_object("text");
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        self.not_an_object("null");
        Ok(())
    }
}

impl Root<'_, '_, '_, '_> {
    fn not_an_object(self, type_name: &str) {
        self.state.fail(err!(
            Format,
            "the safetensors header must be a JSON object, not {type_name}"
        ));
    }
}

/// A shape or data_offsets array as skimmed: how many items, the first `CAP` unsigned
/// ones, and the type of the first item that is not an unsigned integer. Err: the type
/// of a value that is not an array.
struct Dims {
    count: usize,
    items: Vec<u64>,
    bad: Option<&'static str>,
}

/// More items than any shape the rank limit lets through are counted, not kept.
const CAP: usize = crate::limits::MAX_CBOR_DEPTH;

struct DimsSeed<'c, 't> {
    level: json::Level<'c, 't>,
}

impl<'de> DeserializeSeed<'de> for DimsSeed<'_, '_> {
    type Value = std::result::Result<Dims, &'static str>;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DimsSeed<'_, '_> {
    type Value = std::result::Result<Dims, &'static str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let skim = Skim {
            level: self.level.enter()?,
            keep_text: false,
        };
        let mut dims = Dims {
            count: 0,
            items: Vec::new(),
            bad: None,
        };
        while let Some(item) = seq.next_element_seed(skim)? {
            dims.count += 1;
            match item {
                Item::Unsigned(n) if dims.items.len() < CAP => dims.items.push(n),
                Item::Unsigned(_) => {}
                other => {
                    dims.bad.get_or_insert(other.type_name());
                }
            }
        }
        Ok(Ok(dims))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Self::Value, A::Error> {
        Skim {
            level: self.level,
            keep_text: false,
        }
        .visit_map(map)
        .map(|i| Err(i.type_name()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok(Err("bool"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok(Err("unsigned integer"))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> std::result::Result<Self::Value, E> {
        Ok(Err(if n < 0 {
            "negative integer"
        } else {
            "unsigned integer"
        }))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok(Err("float"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Self::Value, E> {
        Ok(Err("text"))
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
        Ok(Err("null"))
    }
}

/// A tensor entry's fields as read (each checked later, in a fixed order), or the type of
/// an entry that is not an object.
enum Entry<'de> {
    Fields {
        dtype: Option<Item<'de>>,
        shape: Option<std::result::Result<Dims, &'static str>>,
        offsets: Option<std::result::Result<Dims, &'static str>>,
        repeated: Option<&'static str>,
    },
    NotObject(&'static str),
}

struct EntrySeed<'c, 't> {
    level: json::Level<'c, 't>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_, '_> {
    type Value = Entry<'de>;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Entry<'de>, D::Error> {
        let skim = Skim {
            level: self.level,
            keep_text: false,
        };
        d.deserialize_any(EntryVisitor { skim })
    }
}

struct EntryVisitor<'c, 't> {
    skim: Skim<'c, 't>,
}

impl<'de> Visitor<'de> for EntryVisitor<'_, '_> {
    type Value = Entry<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Entry<'de>, A::Error> {
        let inner = self.skim.level.enter()?;
        let (mut dtype, mut shape, mut offsets, mut repeated) = (None, None, None, None);
        while let Some(key) = map.next_key_seed(Key)? {
            match key.as_ref() {
                "dtype" => {
                    let v = map.next_value_seed(Skim {
                        level: inner,
                        keep_text: true,
                    })?;
                    if dtype.replace(v).is_some() {
                        repeated.get_or_insert("dtype");
                    }
                }
                "shape" => {
                    if shape
                        .replace(map.next_value_seed(DimsSeed { level: inner })?)
                        .is_some()
                    {
                        repeated.get_or_insert("shape");
                    }
                }
                "data_offsets" => {
                    if offsets
                        .replace(map.next_value_seed(DimsSeed { level: inner })?)
                        .is_some()
                    {
                        repeated.get_or_insert("data_offsets");
                    }
                }
                _ => {
                    map.next_value_seed(Skim {
                        level: inner,
                        keep_text: false,
                    })?;
                }
            }
        }
        Ok(Entry::Fields {
            dtype,
            shape,
            offsets,
            repeated,
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<Entry<'de>, A::Error> {
        self.skim
            .visit_seq(seq)
            .map(|i| Entry::NotObject(i.type_name()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Entry<'de>, E> {
        Ok(Entry::NotObject("bool"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Entry<'de>, E> {
        Ok(Entry::NotObject("unsigned integer"))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> std::result::Result<Entry<'de>, E> {
        Ok(Entry::NotObject(if n < 0 {
            "negative integer"
        } else {
            "unsigned integer"
        }))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Entry<'de>, E> {
        Ok(Entry::NotObject("float"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Entry<'de>, E> {
        Ok(Entry::NotObject("text"))
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Entry<'de>, E> {
        Ok(Entry::NotObject("null"))
    }
}

/// `__metadata__`: null, or an object of strings, streamed into a CBOR map of text in
/// header order. An object that is exactly {"$bytes": "<hex>"} keeps its hex in lower
/// case (as JSON attributes spell bytes). The inner Err is what the metadata says wrong.
struct Metadata<'c, 't> {
    level: json::Level<'c, 't>,
}

type MetaResult = std::result::Result<Option<Attributes>, crate::error::Error>;

impl<'de> DeserializeSeed<'de> for Metadata<'_, '_> {
    type Value = MetaResult;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<MetaResult, D::Error> {
        d.deserialize_any(self)
    }
}

impl Metadata<'_, '_> {
    fn not_an_object(type_name: &str) -> MetaResult {
        Err(err!(
            Format,
            "safetensors __metadata__ must be an object of strings, not {type_name}"
        ))
    }
}

impl<'de> Visitor<'de> for Metadata<'_, '_> {
    type Value = MetaResult;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of strings")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<MetaResult, A::Error> {
        let inner = self.level.enter()?;
        // The map's head goes in front once the entries are counted: 9 bytes kept free.
        let mut body = vec![0u8; 9];
        // (start, length) of each key's text in `body`, to find repeated keys at the end
        // (a set of the keys would cost several times their bytes).
        let mut keys: Vec<(u32, u32)> = Vec::new();
        let mut bad = None;
        let mut bytes_hex = None;
        while let Some(key) = map.next_key_seed(Key)? {
            let value = map.next_value_seed(Skim {
                level: inner,
                keep_text: bad.is_none(),
            })?;
            if bad.is_some() {
                continue;
            }
            match value {
                Item::Text(v) if body.len() + key.len() + v.len() + 18 > u32::MAX as usize => {
                    bad = Some(err!(
                        Limit,
                        "safetensors __metadata__ holds more than 4 GiB of strings"
                    ));
                }
                Item::Text(v) => {
                    encode_head(&mut body, 3, key.len() as u64);
                    keys.push((body.len() as u32, key.len() as u32));
                    body.extend_from_slice(key.as_bytes());
                    if keys.len() == 1 && key == "$bytes" {
                        bytes_hex = Some(v.to_ascii_lowercase());
                    }
                    encode_head(&mut body, 3, v.len() as u64);
                    body.extend_from_slice(v.as_bytes());
                }
                other => {
                    bad = Some(err!(
                        Format,
                        "safetensors __metadata__ value of {:?} must be a string, not {}",
                        key.as_ref(),
                        other.type_name()
                    ));
                }
            }
        }
        if let Some(e) = bad {
            return Ok(Err(e));
        }
        let text = |k: (u32, u32)| &body[k.0 as usize..(k.0 + k.1) as usize];
        keys.sort_unstable_by(|a, b| text(*a).cmp(text(*b)));
        if let Some(w) = keys.windows(2).find(|w| text(w[0]) == text(w[1])) {
            let key = String::from_utf8_lossy(text(w[0]));
            return Ok(Err(err!(
                Format,
                "safetensors __metadata__ has the key {key:?} more than once"
            )));
        }
        if keys.len() == 1
            && let Some(hex) = bytes_hex
                .filter(|h| h.len().is_multiple_of(2) && h.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            body.truncate(9);
            encode(&Value::Text("$bytes".into()), &mut body);
            encode(&Value::Text(hex), &mut body);
        }
        let mut head = Vec::with_capacity(9);
        encode_head(&mut head, 5, keys.len() as u64);
        drop(keys);
        let skip = 9 - head.len();
        body[skip..9].copy_from_slice(&head);
        body.drain(..skip);
        Ok(Ok(Some(Attributes::from_vec(body))))
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<MetaResult, E> {
        Ok(Ok(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<MetaResult, A::Error> {
        let item = Skim {
            level: self.level,
            keep_text: false,
        }
        .visit_seq(seq)?;
        Ok(Self::not_an_object(item.type_name()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<MetaResult, E> {
        Ok(Self::not_an_object("bool"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<MetaResult, E> {
        Ok(Self::not_an_object("unsigned integer"))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> std::result::Result<MetaResult, E> {
        Ok(Self::not_an_object(if n < 0 {
            "negative integer"
        } else {
            "unsigned integer"
        }))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<MetaResult, E> {
        Ok(Self::not_an_object("float"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<MetaResult, E> {
        Ok(Self::not_an_object("text"))
    }
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
    let missing = |key: &str| err!(Format, "the entry lacks the required key '{key}'");
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
    let shape = dims.items;
    let offsets = offsets.ok_or_else(|| missing("data_offsets"))?;
    let (begin, end) = match offsets {
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
