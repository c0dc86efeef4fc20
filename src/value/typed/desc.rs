//! Width records by key: what turns CBOR's own types (non-negative integers `u64`,
//! negative ones `i64`, floats `f64`) back into the types a value was written with (a
//! GGUF `u32`, an array of `f32` ...). A zTensor manifest keeps one beside an attribute
//! map, under `attribute_types` (docs/format.md); the attribute values themselves stay
//! plain CBOR, so every other reader reads them as before.
//!
//! In CBOR a record is, for one value:
//! - a text naming a type: `"u8"` ... `"u64"`, `"i8"` ... `"i64"`, `"f32"`, `"f64"`,
//!   `"bool"`, `"string"` (a string kept as a CBOR byte string because it is not
//!   UTF-8), `"bytes"`, `"null"`; followed by `[]` for an array whose every element
//!   has that type (and which, when empty, declares it), `[][]` for arrays of such
//!   arrays, and so on;
//! - an array, for an array value: one record (or null) per element;
//! - a map, for a map value: a record per text key (values not named keep CBOR's types).
//!
//! Records are only hints: a record that does not fit its value (`"u8"` on 300, `"f32"`
//! on 0.1, a text where a map is) is ignored, so a damaged or foreign record can't
//! misstate a value; a type name this version doesn't know is ignored too.

use crate::value::cbor::Value;

use super::ValueType;

/// The width record of one value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Desc {
    /// A scalar of this type (or `String` for a string stored as bytes).
    Scalar(ValueType),
    /// An array whose elements all have this record; an empty one declares it.
    Elements(Box<Desc>),
    /// An array described element by element (None: CBOR's own type).
    Items(Vec<Option<Desc>>),
    /// A map whose values under these text keys have these records, sorted by key.
    Keys(Vec<(Vec<u8>, Desc)>),
}

impl Desc {
    /// The record of `v` (a record as CBOR); None when it says nothing this version
    /// understands.
    pub(crate) fn from_value(v: &Value) -> Option<Desc> {
        match v {
            Value::Text(t) => Desc::from_text(t),
            Value::Array(items) => Some(Desc::Items(items.iter().map(Desc::from_value).collect())),
            Value::Map(pairs) => {
                let mut keys: Vec<(Vec<u8>, Desc)> = pairs
                    .iter()
                    .filter_map(|(k, v)| {
                        Some((k.as_text()?.as_bytes().to_vec(), Desc::from_value(v)?))
                    })
                    .collect();
                keys.sort_by(|a, b| a.0.cmp(&b.0));
                // A key named twice keeps its first record.
                keys.dedup_by(|b, a| a.0 == b.0);
                Some(Desc::Keys(keys))
            }
            _ => None,
        }
    }

    fn from_text(t: &str) -> Option<Desc> {
        match t.strip_suffix("[]") {
            Some(inner) => Some(Desc::Elements(Box::new(Desc::from_text(inner)?))),
            // Every type by its name ("array" and "map" only declare an empty array's
            // element type); "other" names nothing a value could be written as.
            None => (0..)
                .map_while(ValueType::from_u32)
                .filter(|v| *v != ValueType::Other)
                .find(|v| v.name() == t)
                .map(Desc::Scalar),
        }
    }

    /// Whether the record is a text (a type, or arrays of it), which `Elements` can hold.
    pub(crate) fn is_text(&self) -> bool {
        self.text().is_some()
    }

    /// The record as CBOR, as a manifest stores it. (`Elements` is only ever made of a
    /// text record: `from_text` and `TypedValue::encode` make no other.)
    pub(crate) fn to_value(&self) -> Value {
        if let Some(text) = self.text() {
            return Value::Text(text);
        }
        match self {
            Desc::Scalar(_) | Desc::Elements(_) => Value::Null,
            Desc::Items(items) => Value::Array(
                items
                    .iter()
                    .map(|d| d.as_ref().map_or(Value::Null, Desc::to_value))
                    .collect(),
            ),
            Desc::Keys(keys) => Value::Map(
                keys.iter()
                    .map(|(k, d)| {
                        (
                            Value::Text(String::from_utf8_lossy(k).into_owned()),
                            d.to_value(),
                        )
                    })
                    .collect(),
            ),
        }
    }

    /// "u32", "f32[]", "string[][]"; None for records that are not texts.
    fn text(&self) -> Option<String> {
        match self {
            Desc::Scalar(t) => Some(t.name().to_owned()),
            Desc::Elements(inner) => Some(format!("{}[]", inner.text()?)),
            _ => None,
        }
    }

    /// The scalar type this record gives a value.
    pub(crate) fn scalar(&self) -> Option<ValueType> {
        match self {
            Desc::Scalar(t) => Some(*t),
            _ => None,
        }
    }

    /// The element type an array with this record declares (for an empty one).
    pub(crate) fn declared(&self) -> Option<ValueType> {
        match self {
            Desc::Elements(inner) => Some(match &**inner {
                Desc::Scalar(t) => *t,
                Desc::Elements(_) | Desc::Items(_) => ValueType::Array,
                Desc::Keys(_) => ValueType::Map,
            }),
            _ => None,
        }
    }

    /// The record of element `i` of an array with this record.
    pub(crate) fn element(&self, i: usize) -> Option<&Desc> {
        match self {
            Desc::Elements(inner) => Some(inner),
            Desc::Items(items) => items.get(i).and_then(Option::as_ref),
            _ => None,
        }
    }

    /// The record of a map's value under the text key `key`.
    pub(crate) fn key(&self, key: &[u8]) -> Option<&Desc> {
        match self {
            Desc::Keys(keys) => keys
                .binary_search_by(|(k, _)| k.as_slice().cmp(key))
                .ok()
                .map(|i| &keys[i].1),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value {
        Value::Text(s.into())
    }

    #[test]
    fn records_read_and_write_back() {
        let v = Value::Map(vec![
            (text("b"), text("u32")),
            (text("a"), text("f32[]")),
            (text("c"), text("string[][]")),
            (
                text("d"),
                Value::Array(vec![Value::Null, text("i8"), text("nonsense")]),
            ),
            (text("e"), Value::Map(vec![(text("x"), text("u16"))])),
            (text("unknown"), text("f128")),
            (Value::Unsigned(1), text("u8")),
            (text("b"), text("u8")),
        ]);
        let d = Desc::from_value(&v).unwrap();
        assert_eq!(d.key(b"b"), Some(&Desc::Scalar(ValueType::U32)));
        let a = d.key(b"a").unwrap();
        assert_eq!(a.declared(), Some(ValueType::F32));
        assert_eq!(a.element(7), Some(&Desc::Scalar(ValueType::F32)));
        let c = d.key(b"c").unwrap();
        assert_eq!(c.declared(), Some(ValueType::Array));
        assert_eq!(c.element(0).unwrap().declared(), Some(ValueType::String));
        let items = d.key(b"d").unwrap();
        assert_eq!(items.element(0), None);
        assert_eq!(items.element(1), Some(&Desc::Scalar(ValueType::I8)));
        assert_eq!(items.element(2), None);
        assert_eq!(items.element(3), None);
        assert_eq!(
            d.key(b"e").unwrap().key(b"x"),
            Some(&Desc::Scalar(ValueType::U16))
        );
        assert_eq!(d.key(b"unknown"), None);
        assert_eq!(d.key(b"zz"), None);
        assert_eq!(Desc::from_value(&Value::Unsigned(3)), None);
        // Written back: sorted by key, unknown and non-text keys dropped.
        assert_eq!(
            d.to_value(),
            Value::Map(vec![
                (text("a"), text("f32[]")),
                (text("b"), text("u32")),
                (text("c"), text("string[][]")),
                (
                    text("d"),
                    Value::Array(vec![Value::Null, text("i8"), Value::Null])
                ),
                (text("e"), Value::Map(vec![(text("x"), text("u16"))])),
            ])
        );
    }
}
