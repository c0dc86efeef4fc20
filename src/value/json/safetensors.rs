//! A safetensors header read as JSON, streamed: the top-level object of tensor entries and
//! `__metadata__`, without a tree. Each entry's fields are skimmed (`Entry`: dtype, shape
//! and data_offsets as read, checked later by the format in a fixed order) and handed to a
//! `HeaderSink` (the safetensors format, which turns entries into objects); the metadata,
//! an object of strings, becomes the bytes of a CBOR map of text in header order.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::{Item, Key, Level, Skim};
use crate::cbor::Writer;
use crate::error::{Error, err};
use ciborium_ll::Header;

/// Where the streamed header goes.
pub(crate) trait HeaderSink {
    /// Whether an error was recorded: the rest of the header is then only skimmed (its JSON
    /// syntax is still checked, and reported first).
    fn failed(&self) -> bool;
    /// Records an error in what the header says (the first one is kept).
    fn fail(&mut self, e: Error);
    /// `__metadata__`: the bytes of a CBOR map of text, or None for `null`.
    fn metadata(&mut self, map: Option<Vec<u8>>);
    /// One tensor entry, in header order.
    fn entry(&mut self, name: &str, entry: Entry<'_>);
}

/// The top level: a JSON object of tensor entries and `__metadata__`.
pub(crate) struct Root<'c, 't, 's, S: HeaderSink> {
    pub(crate) level: Level<'c, 't>,
    pub(crate) sink: &'s mut S,
}

impl<'de, S: HeaderSink> Visitor<'de> for Root<'_, '_, '_, S> {
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
                if self.sink.failed() {
                    map.next_value_seed(skim)?;
                } else {
                    let meta = map.next_value_seed(Metadata { level: inner })?;
                    match meta {
                        Ok(map) => self.sink.metadata(map),
                        Err(e) => self.sink.fail(e),
                    }
                }
                continue;
            }
            if self.sink.failed() {
                map.next_value_seed(skim)?;
                continue;
            }
            let entry = map.next_value_seed(EntrySeed { level: inner })?;
            self.sink.entry(&key, entry);
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

impl<S: HeaderSink> Root<'_, '_, '_, S> {
    fn not_an_object(self, type_name: &str) {
        self.sink.fail(err!(
            Format,
            "the safetensors header must be a JSON object, not {type_name}"
        ));
    }
}

/// A shape or data_offsets array as skimmed: how many items, the first `CAP` unsigned
/// ones, and the type of the first item that is not an unsigned integer. Err: the type
/// of a value that is not an array.
pub(crate) struct Dims {
    pub(crate) count: usize,
    pub(crate) items: Vec<u64>,
    pub(crate) bad: Option<&'static str>,
}

/// More items than any shape the rank limit lets through are counted, not kept.
const CAP: usize = crate::limits::MAX_CBOR_DEPTH;

struct DimsSeed<'c, 't> {
    level: Level<'c, 't>,
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
pub(crate) enum Entry<'de> {
    Fields {
        dtype: Option<Item<'de>>,
        shape: Option<std::result::Result<Dims, &'static str>>,
        offsets: Option<std::result::Result<Dims, &'static str>>,
        repeated: Option<&'static str>,
    },
    NotObject(&'static str),
}

struct EntrySeed<'c, 't> {
    level: Level<'c, 't>,
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
    level: Level<'c, 't>,
}

type MetaResult = std::result::Result<Option<Vec<u8>>, crate::error::Error>;

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
        // The map's head goes in front once the entries are counted.
        let mut body = Writer::new();
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
                    body.head(Header::Text(Some(key.len())));
                    keys.push((body.len() as u32, key.len() as u32));
                    body.raw(key.as_bytes());
                    if keys.len() == 1 && key == "$bytes" {
                        bytes_hex = Some(v.to_ascii_lowercase());
                    }
                    body.text(&v);
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
        let text = |k: (u32, u32)| &body.as_slice()[k.0 as usize..(k.0 + k.1) as usize];
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
            body.clear();
            body.text("$bytes");
            body.text(&hex);
        }
        body.insert_head(0, Header::Map(Some(keys.len())));
        Ok(Ok(Some(body.into_bytes())))
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
