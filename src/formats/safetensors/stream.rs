//! The safetensors header read as JSON, streamed through serde_json without a tree: the
//! top-level object's tensor entries go to `State` one by one as they are read (their
//! fields skimmed: dtype, shape and data_offsets as read, checked by `header::tensor` in a
//! fixed order), and `__metadata__`, an object of strings, becomes the bytes of a CBOR map
//! of text in header order.
//!
//! One visitor (`Typed`) reads every value: an object or an array through what its
//! `Read` does with one, any other value (or the kind it doesn't take) named by its type,
//! so that what the header says wrong is recorded with the type it found (and reported
//! after its JSON syntax, which serde_json checks to the end).

use std::fmt;

use ciborium_ll::Header;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::header::{Dims, Entry, State};
use crate::error::{Error, err};
use crate::value::cbor::Writer;
use crate::value::json::{Item, Key, Level, Skim};

/// What a value of the header is read as. A kind of value a reader does not take is
/// walked (its syntax and depth checked, nothing kept) and named by its type in `other`.
trait Read<'de>: Sized {
    type Out;
    /// An object, its entries read at `level` (the object's own).
    fn object<A: MapAccess<'de>>(
        self,
        level: Level<'_, '_>,
        map: A,
    ) -> Result<Self::Out, A::Error> {
        let item = skim(level).visit_map(map)?;
        Ok(self.other(item.type_name()))
    }
    /// An array, its items read at `level` (the array's own).
    fn array<A: SeqAccess<'de>>(self, level: Level<'_, '_>, seq: A) -> Result<Self::Out, A::Error> {
        let item = skim(level).visit_seq(seq)?;
        Ok(self.other(item.type_name()))
    }
    /// Any other value, by its type name (`Value::type_name`'s spelling).
    fn other(self, type_name: &'static str) -> Self::Out;
}

fn skim<'c, 't>(level: Level<'c, 't>) -> Skim<'c, 't> {
    Skim {
        level,
        keep_text: false,
    }
}

/// The one visitor of the header: a value read by `read` at `level`.
struct Typed<'c, 't, R> {
    level: Level<'c, 't>,
    read: R,
}

impl<'de, R: Read<'de>> DeserializeSeed<'de> for Typed<'_, '_, R> {
    type Value = R::Out;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<R::Out, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, R: Read<'de>> Visitor<'de> for Typed<'_, '_, R> {
    type Value = R::Out;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<R::Out, A::Error> {
        self.read.object(self.level, map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<R::Out, A::Error> {
        self.read.array(self.level, seq)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<R::Out, E> {
        Ok(self.read.other("bool"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<R::Out, E> {
        Ok(self.read.other("unsigned integer"))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<R::Out, E> {
        Ok(self.read.other(if n < 0 {
            "negative integer"
        } else {
            "unsigned integer"
        }))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<R::Out, E> {
        Ok(self.read.other("float"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<R::Out, E> {
        Ok(self.read.other("text"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<R::Out, E> {
        Ok(self.read.other("null"))
    }
}

/// Streams the header `text` (a whole document, its top level at `level`) into `state`.
pub(super) fn header<'de, D: de::Deserializer<'de>>(
    level: Level<'_, '_>,
    de: D,
    state: &mut State<'_>,
) -> Result<(), D::Error> {
    de.deserialize_any(Typed {
        level,
        read: Root { state },
    })
}

/// The top level: a JSON object of tensor entries and `__metadata__`, into the state.
struct Root<'s, 'l> {
    state: &'s mut State<'l>,
}

impl<'de> Read<'de> for Root<'_, '_> {
    type Out = ();

    fn object<A: MapAccess<'de>>(self, level: Level<'_, '_>, mut map: A) -> Result<(), A::Error> {
        let inner = level.enter()?;
        let mut metadata_seen = false;
        while let Some(key) = map.next_key_seed(Key)? {
            if key == "__metadata__" {
                if metadata_seen {
                    return Err(inner.duplicate_key(&key));
                }
                metadata_seen = true;
            }
            // Once the header said something wrong, the rest is only skimmed.
            if self.state.error.is_some() {
                map.next_value_seed(skim(inner))?;
            } else if key == "__metadata__" {
                let read = Metadata;
                match map.next_value_seed(Typed { level: inner, read })? {
                    Ok(map) => self.state.metadata(map),
                    Err(e) => self.state.fail(e),
                }
            } else {
                let read = EntryFields;
                let entry = map.next_value_seed(Typed { level: inner, read })?;
                self.state.entry(&key, entry);
            }
        }
        Ok(())
    }

    fn other(self, type_name: &'static str) {
        self.state.fail(err!(
            Format,
            "the safetensors header must be a JSON object, not {type_name}"
        ));
    }
}

/// A tensor entry's fields as read, or the type of an entry that is not an object.
struct EntryFields;

impl<'de> Read<'de> for EntryFields {
    type Out = Entry<'de>;

    fn object<A: MapAccess<'de>>(
        self,
        level: Level<'_, '_>,
        mut map: A,
    ) -> Result<Entry<'de>, A::Error> {
        let inner = level.enter()?;
        let (mut dtype, mut shape, mut offsets, mut repeated) = (None, None, None, None);
        while let Some(key) = map.next_key_seed(Key)? {
            let dims = || Typed {
                level: inner,
                read: DimsRead,
            };
            // A key met again: the first is named (each field keeps the last value).
            let (field, again) = match key.as_ref() {
                "dtype" => {
                    let text = Skim {
                        level: inner,
                        keep_text: true,
                    };
                    ("dtype", dtype.replace(map.next_value_seed(text)?).is_some())
                }
                "shape" => (
                    "shape",
                    shape.replace(map.next_value_seed(dims())?).is_some(),
                ),
                "data_offsets" => (
                    "data_offsets",
                    offsets.replace(map.next_value_seed(dims())?).is_some(),
                ),
                _ => ("", map.next_value_seed(skim(inner)).map(|_| false)?),
            };
            if again {
                repeated.get_or_insert(field);
            }
        }
        Ok(Entry::Fields {
            dtype,
            shape,
            offsets,
            repeated,
        })
    }

    fn other(self, type_name: &'static str) -> Entry<'de> {
        Entry::NotObject(type_name)
    }
}

/// More items than any shape the rank limit lets through are counted, not kept.
const CAP: usize = crate::limits::MAX_CBOR_DEPTH;

/// A shape or data_offsets array as skimmed (`Dims`), or the type of a value that is not
/// an array.
struct DimsRead;

impl<'de> Read<'de> for DimsRead {
    type Out = Result<Dims, &'static str>;

    fn array<A: SeqAccess<'de>>(
        self,
        level: Level<'_, '_>,
        mut seq: A,
    ) -> Result<Self::Out, A::Error> {
        let items = skim(level.enter()?);
        let mut dims = Dims {
            count: 0,
            items: Vec::new(),
            bad: None,
        };
        while let Some(item) = seq.next_element_seed(items)? {
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

    fn other(self, type_name: &'static str) -> Self::Out {
        Err(type_name)
    }
}

/// `__metadata__`: null (None), or an object of strings, streamed into a CBOR map of text
/// in header order. An object that is exactly {"$bytes": "<hex>"} keeps its hex in lower
/// case (as JSON attributes spell bytes). Err: what the metadata says wrong.
struct Metadata;

impl<'de> Read<'de> for Metadata {
    type Out = Result<Option<Vec<u8>>, Error>;

    fn object<A: MapAccess<'de>>(
        self,
        level: Level<'_, '_>,
        mut map: A,
    ) -> Result<Self::Out, A::Error> {
        let inner = level.enter()?;
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

    fn other(self, type_name: &'static str) -> Self::Out {
        match type_name {
            "null" => Ok(None),
            _ => Err(err!(
                Format,
                "safetensors __metadata__ must be an object of strings, not {type_name}"
            )),
        }
    }
}
