//! A set's index (`*.index.json`, Hugging Face style): a top-level object whose
//! `weight_map` maps tensor names to file names and whose `metadata` describes the whole
//! set; other keys are skipped. Read in one pass by serde_json, without a tree of the
//! weight map: each entry is reported as it is read, so that the shards it names can be
//! opened while the rest of the index is still being read.

use std::borrow::Cow;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::{Result, bail, err};
use crate::value::cbor::Value;
use crate::value::json::{Key, from_json};

/// A weight map as read: (tensor name, file) in the index's order, borrowed from the
/// index's text unless escaped.
pub(crate) type WeightMap<'t> = Vec<(Cow<'t, str>, Cow<'t, str>)>;

/// Where each entry of the weight map is reported as it is read: (tensor name, file).
pub(crate) type Entry<'e> = &'e mut dyn FnMut(&str, &str);

/// An index as read.
pub(crate) struct Index<'t> {
    /// The text of its `metadata` value, if it has one.
    pub(crate) metadata: Option<&'t str>,
    /// Its `weight_map` (the last one, should the key be repeated).
    pub(crate) weight_map: WeightMap<'t>,
    /// True when the entries reported while reading are `weight_map`'s: false when the
    /// key was repeated (only the first map's entries were reported).
    pub(crate) streamed: bool,
}

/// Reads the index `text`, calling `entry(name, file)` for every entry of its first
/// `weight_map` as it is read. Errors say what is wrong, where.
pub(crate) fn parse_index<'t>(text: &'t str, entry: Entry<'_>) -> Result<Index<'t>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let read = IndexSeed { entry }
        .deserialize(&mut de)
        .and_then(|read| de.end().map(|()| read))
        .map_err(|e| err!(Format, "the index is not JSON of the expected shape: {e}"))?;
    let Some(weight_map) = read.weight_map else {
        bail!(Format, "the index has no weight_map");
    };
    Ok(Index {
        metadata: read.metadata.map(RawValue::get),
        weight_map,
        streamed: read.maps == 1,
    })
}

/// The index's `metadata` text as a value (key order kept): None when absent or null,
/// an error unless it is a JSON object nesting at most `max_depth` deep.
pub(crate) fn metadata_value(metadata: Option<&str>, max_depth: usize) -> Result<Option<Value>> {
    Ok(match metadata {
        None | Some("null") => None,
        Some(text) => match from_json(text, max_depth) {
            Ok(value @ Value::Map(_)) => Some(value),
            Ok(_) => bail!(Format, "the index's metadata is not a JSON object"),
            Err(e) => bail!(Format, "the index's metadata: {e}"),
        },
    })
}

/// What the top-level object gave.
struct Read<'t> {
    metadata: Option<&'t RawValue>,
    weight_map: Option<WeightMap<'t>>,
    /// `weight_map` keys met.
    maps: usize,
}

/// Reads the top-level object, reporting the first weight map's entries to `entry`.
struct IndexSeed<'e> {
    entry: Entry<'e>,
}

/// Reads a weight map, reporting each entry to `entry` when given.
struct PairsSeed<'e> {
    entry: Option<Entry<'e>>,
}

impl<'de> DeserializeSeed<'de> for PairsSeed<'_> {
    type Value = WeightMap<'de>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PairsSeed<'_> {
    type Value = WeightMap<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object of tensor names to file names")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut entry = self.entry;
        let mut pairs: WeightMap<'de> = Vec::new();
        while let Some((k, v)) = map.next_entry_seed(Key, Key)? {
            // Grown fallibly: the index's size bounds the entries, not memory.
            if pairs.len() == pairs.capacity() && pairs.try_reserve(pairs.len().max(64)).is_err() {
                return Err(de::Error::custom("out of memory for the weight map"));
            }
            if let Some(entry) = entry.as_mut() {
                entry(&k, &v);
            }
            pairs.push((k, v));
        }
        Ok(pairs)
    }
}

impl<'de> DeserializeSeed<'de> for IndexSeed<'_> {
    type Value = Read<'de>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IndexSeed<'_> {
    type Value = Read<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object (the index)")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut read = Read {
            metadata: None,
            weight_map: None,
            maps: 0,
        };
        while let Some(key) = map.next_key_seed(Key)? {
            match &*key {
                "metadata" => read.metadata = Some(map.next_value::<&'de RawValue>()?),
                "weight_map" => {
                    read.maps += 1;
                    // Only the first map's entries are reported: a later one replaces it.
                    let entry: Option<Entry<'_>> = if read.maps == 1 {
                        Some(&mut *self.entry)
                    } else {
                        None
                    };
                    read.weight_map = Some(map.next_value_seed(PairsSeed { entry })?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<(Index<'_>, Vec<(String, String)>)> {
        let mut seen = Vec::new();
        let index = parse_index(text, &mut |n, f| seen.push((n.to_owned(), f.to_owned())))?;
        Ok((index, seen))
    }

    #[test]
    fn entries_are_reported_as_read_and_escapes_resolved() {
        let text = r#"{"metadata": {"total_size": 8}, "x": [1, {"weight_map": 2}],
            "weight_map": {"a": "one.safetensors", "b\u002ec": "two\u002esafetensors"}}"#;
        let (index, seen) = read(text).unwrap();
        assert_eq!(index.metadata, Some(r#"{"total_size": 8}"#));
        assert!(index.streamed);
        let pairs: Vec<(&str, &str)> = index.weight_map.iter().map(|(n, f)| (&**n, &**f)).collect();
        assert_eq!(
            pairs,
            [("a", "one.safetensors"), ("b.c", "two.safetensors")]
        );
        assert_eq!(
            seen,
            [
                ("a".into(), "one.safetensors".into()),
                ("b.c".into(), "two.safetensors".into())
            ]
        );
        assert!(matches!(index.weight_map[0].0, Cow::Borrowed(_)));
        assert!(matches!(index.weight_map[1].0, Cow::Owned(_)));
    }

    #[test]
    fn a_repeated_weight_map_is_the_last_and_not_streamed() {
        let (index, seen) =
            read(r#"{"weight_map": {"a": "1"}, "weight_map": {"b": "2"}}"#).unwrap();
        assert!(!index.streamed);
        assert_eq!(seen, [("a".to_owned(), "1".to_owned())]);
        assert_eq!(index.weight_map, [(Cow::Borrowed("b"), Cow::Borrowed("2"))]);
    }

    #[test]
    fn malformed_indexes_say_what_is_wrong() {
        for (text, want) in [
            ("{}", "no weight_map"),
            ("[]", "a JSON object (the index)"),
            (r#"{"weight_map": {"a": 1}}"#, "expected a string"),
            (
                r#"{"weight_map": []}"#,
                "an object of tensor names to file names",
            ),
            ("{\"weight_map\": {\"a\t\": \"x\"}}", "control character"),
            (r#"{"weight_map": {}} x"#, "trailing characters"),
        ] {
            let e = read(text).err().unwrap_or_else(|| panic!("{text} read"));
            assert!(e.to_string().contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn metadata_must_be_an_object() {
        assert_eq!(metadata_value(None, 8).unwrap(), None);
        assert_eq!(metadata_value(Some("null"), 8).unwrap(), None);
        assert!(matches!(
            metadata_value(Some(r#"{"a": 1}"#), 8).unwrap(),
            Some(Value::Map(_))
        ));
        let e = metadata_value(Some("[1]"), 8).unwrap_err().to_string();
        assert!(e.contains("not a JSON object"), "{e}");
        let e = metadata_value(Some("[[[[1]]]]"), 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the index's metadata:"), "{e}");
    }
}
