//! Typed attributes on the writer: maps and single keys of `TypedValue`s, kept with the
//! types a typed read gives back (plain CBOR plus the manifest's `attribute_types`
//! record, docs/format.md), and attributes copied from a reader's model with theirs.

use std::io::Write;

use super::Writer;
use crate::error::{Result, err};
use crate::formats::ztensor::manifest;
use crate::model::Attributes;
use crate::typed::TypedValue;

/// `map` with `key` set to `value`: the entry replaced where it is, or added last.
pub(crate) fn with_entry(map: TypedValue, key: &str, value: &TypedValue) -> TypedValue {
    let TypedValue::Map(mut pairs) = map else {
        return TypedValue::Map(vec![(TypedValue::text(key), value.clone())]);
    };
    let k = TypedValue::text(key);
    match pairs.iter_mut().find(|(existing, _)| *existing == k) {
        Some(entry) => entry.1 = value.clone(),
        None => pairs.push((k, value.clone())),
    }
    TypedValue::Map(pairs)
}

/// The typed map of `attributes` (empty for none).
pub(crate) fn typed_map(attributes: Option<&Attributes>) -> Result<TypedValue> {
    attributes.map_or(Ok(TypedValue::Map(Vec::new())), Attributes::typed_value)
}

impl<W: Write> Writer<W> {
    /// Sets the file's attributes from a typed map (`TypedValue::Map`), each value kept
    /// with its type (a u32 reads back as u32, an array of f32 as f32 ...); a second call
    /// replaces them. `InvalidArgument` for a value that isn't a map, or that nests
    /// deeper than a reader with the default limits accepts.
    pub fn set_file_attributes_typed(&mut self, attributes: &TypedValue) -> Result<()> {
        self.check_usable()?;
        let (attrs, value) = Attributes::from_typed(attributes)?;
        let attrs = self.typed_attributes_for(
            attrs,
            &value,
            manifest::FILE_ATTRIBUTES_DEPTH,
            "the file's",
        )?;
        self.file_attributes = Some(attrs);
        Ok(())
    }

    /// `set_file_attributes_typed` for an object already begun (open or ended).
    pub fn set_object_attributes_typed(
        &mut self,
        name: &str,
        attributes: &TypedValue,
    ) -> Result<()> {
        self.check_usable()?;
        let i = self.object_index(name)?;
        let (attrs, value) = Attributes::from_typed(attributes)?;
        let attrs = self.typed_attributes_for(
            attrs,
            &value,
            manifest::OBJECT_ATTRIBUTES_DEPTH,
            "an object's",
        )?;
        self.replace_object_attributes(i, attrs)
    }

    /// Sets one file attribute, typed: the value of `key` replaced, or the key added last.
    /// The other attributes keep their values and types.
    pub fn set_file_attribute(&mut self, key: &str, value: &TypedValue) -> Result<()> {
        self.check_usable()?;
        let map = typed_map(self.file_attributes.as_ref())?;
        self.set_file_attributes_typed(&with_entry(map, key, value))
    }

    /// `set_file_attribute` for an object already begun (open or ended).
    pub fn set_object_attribute(
        &mut self,
        name: &str,
        key: &str,
        value: &TypedValue,
    ) -> Result<()> {
        self.check_usable()?;
        let i = self.object_index(name)?;
        let map = typed_map(self.objects[i].attributes.as_ref())?;
        self.set_object_attributes_typed(name, &with_entry(map, key, value))
    }

    /// The file's attributes as another file's model holds them, types included: CBOR
    /// and a width record are copied as they are; widths only a format's own parse
    /// records (GGUF's) become a record.
    pub fn set_file_attributes_from(&mut self, attributes: &Attributes) -> Result<()> {
        self.check_usable()?;
        if attributes.widths().is_some() {
            return self.set_file_attributes_typed(&attributes.typed_value()?);
        }
        let attrs = self.typed_attributes_for(
            attributes.clone(),
            &attributes.value(),
            manifest::FILE_ATTRIBUTES_DEPTH,
            "the file's",
        )?;
        self.file_attributes = Some(attrs);
        Ok(())
    }

    /// `set_file_attributes_from` for an object already begun (open or ended).
    pub fn set_object_attributes_from(
        &mut self,
        name: &str,
        attributes: &Attributes,
    ) -> Result<()> {
        self.check_usable()?;
        if attributes.widths().is_some() {
            return self.set_object_attributes_typed(name, &attributes.typed_value()?);
        }
        let i = self.object_index(name)?;
        let attrs = self.typed_attributes_for(
            attributes.clone(),
            &attributes.value(),
            manifest::OBJECT_ATTRIBUTES_DEPTH,
            "an object's",
        )?;
        self.replace_object_attributes(i, attrs)
    }

    /// The index of the object `name` (begun, open or ended).
    fn object_index(&self, name: &str) -> Result<usize> {
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| err!(NotFound, "no object named '{name}' has been added"))
    }
}
