//! Attributes on the writer: plain CBOR maps, checked for what the version's readers
//! accept; typed maps and single keys of `TypedValue`s, kept with the types a typed read
//! gives back (plain CBOR plus the manifest's `attribute_types` record, docs/format.md);
//! and attributes copied from a reader's model with theirs.

use std::io::Write;

use super::{FileVersion, Writer, foreign, vocabulary};
use crate::error::{Result, bail, err};
use crate::formats::ztensor::manifest;
use crate::limits::Limits;
use crate::model::Attributes;
use crate::value::cbor::Value;
use crate::value::typed::TypedValue;

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
        let attrs = self.file_attributes_for(attrs, &value)?;
        self.put_file_attributes(attrs)
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
        let attrs = self.file_attributes_for(attributes.clone(), &attributes.value())?;
        self.put_file_attributes(attrs)
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

    /// Sets the file's attributes (checked); a GGUF writer pads its spool to the
    /// `general.alignment` they say from now on. A safetensors or GGUF writer that wrote
    /// its header already (its tensors declared) refuses them.
    fn put_file_attributes(&mut self, attrs: Attributes) -> Result<()> {
        self.check_header_open()?;
        if self.format == super::OutputFormat::Gguf {
            self.spool_align = foreign::gguf_alignment(&attrs);
        }
        self.file_attributes = Some(attrs);
        Ok(())
    }

    /// The index of the object `name` (begun, open or ended).
    fn object_index(&self, name: &str) -> Result<usize> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(i);
        }
        if self.set.as_ref().is_some_and(|set| set.holds(name)) {
            bail!(
                State,
                "object '{name}' is in a shard already finished: set its attributes before \
                 adding objects that start another shard"
            );
        }
        Err(err!(NotFound, "no object named '{name}' has been added"))
    }

    /// Sets the file's attributes (a CBOR map); a second call replaces them.
    pub fn set_file_attributes(&mut self, attributes: Value) -> Result<()> {
        self.check_usable()?;
        let attrs = self.file_attributes_for(Attributes::from_value(&attributes), &attributes)?;
        self.put_file_attributes(attrs)
    }

    /// The file's attributes (`attributes`, whose plain CBOR is `value`) as this writer
    /// keeps them: for a single file as its version stores them (`typed_attributes_for`);
    /// for a set, the index's `metadata`, JSON, which keeps values but not their widths.
    fn file_attributes_for(&self, attributes: Attributes, value: &Value) -> Result<Attributes> {
        if self.format.spools() {
            // safetensors' __metadata__ (each file of a set's) or GGUF's key/values (a
            // split set's first file's): typed, checked for what the format holds.
            let attrs = self.typed_attributes_for(
                attributes,
                value,
                manifest::FILE_ATTRIBUTES_DEPTH,
                "the file's",
            )?;
            foreign::check_attributes(self.format, &attrs)?;
            return Ok(attrs);
        }
        if self.set.is_some() {
            if !value.is_map() {
                bail!(InvalidArgument, "the set's attributes must be a map");
            }
            return Ok(Attributes::from_value(value));
        }
        self.typed_attributes_for(
            attributes,
            value,
            manifest::FILE_ATTRIBUTES_DEPTH,
            "the file's",
        )
    }

    /// Attributes as this writer's version stores them, checked: a map, nested no deeper
    /// than a reader accepts where it sits (`at`), and for v2 deterministic CBOR of the
    /// types v2 permits (no tags, no undefined or other simple values).
    pub(super) fn attributes_for(
        &self,
        attributes: &Value,
        at: usize,
        whose: &str,
    ) -> Result<Attributes> {
        match self.version {
            FileVersion::V1_2 => {
                let max = Limits::default().max_cbor_depth;
                let reader = format!("a reader with the default max_cbor_depth of {max}");
                check_attributes(attributes, at, whose, max, &reader)?;
                Ok(Attributes::from_value(attributes))
            }
            FileVersion::V2 => {
                let max = crate::formats::ztensor_v2::MAX_DEPTH;
                let reader = format!("a zTensor v2 reader (a nesting of {max} in all)");
                check_attributes(attributes, at, whose, max, &reader)?;
                vocabulary::deterministic_attributes(attributes)
            }
        }
    }

    /// Sets the attributes of an object already begun (open or ended); replaces.
    pub fn set_object_attributes(&mut self, name: &str, attributes: Value) -> Result<()> {
        self.check_usable()?;
        let attributes = self.attributes_for(
            &attributes,
            manifest::OBJECT_ATTRIBUTES_DEPTH,
            "an object's",
        )?;
        let i = self.object_index(name)?;
        self.replace_object_attributes(i, attributes)
    }

    /// Typed attributes (`attributes`, whose plain CBOR is `value`) as this writer's
    /// version stores them: v1.2 keeps their type record; v2, whose manifest has none,
    /// stores their values as deterministic CBOR. Checked as `attributes_for` checks.
    fn typed_attributes_for(
        &self,
        attributes: Attributes,
        value: &Value,
        at: usize,
        whose: &str,
    ) -> Result<Attributes> {
        let checked = self.attributes_for(value, at, whose)?;
        Ok(match self.version {
            FileVersion::V1_2 => attributes,
            FileVersion::V2 => checked,
        })
    }

    /// Replaces object `i`'s attributes; a v2 object already ended must still meet its
    /// layout's profile with them (else they are not replaced).
    fn replace_object_attributes(&mut self, i: usize, attributes: Attributes) -> Result<()> {
        if self.format.spools() {
            bail!(
                InvalidArgument,
                "{} has no per-tensor attributes (object '{}')",
                self.format.name(),
                self.objects[i].name()
            );
        }
        let old = self.objects[i].attributes.replace(attributes);
        let ended = !(self.open_object && i + 1 == self.objects.len());
        if self.version == FileVersion::V2
            && ended
            && let Err(e) = self.v2_check_object(i)
        {
            // An ended object's attributes must still say what its layout needs.
            self.objects[i].attributes = old;
            return Err(e);
        }
        Ok(())
    }
}

/// Attributes must be a map that `reader` accepts where it sits in the manifest (`at`: the
/// nesting of the map): arrays, maps and tags each count one level, and the manifest may
/// nest at most `max` deep.
fn check_attributes(v: &Value, at: usize, whose: &str, max: usize, reader: &str) -> Result<()> {
    if !v.is_map() {
        bail!(
            InvalidArgument,
            "attributes must be a map, not {}",
            v.type_name()
        );
    }
    let allowed = max - at;
    if nests_deeper(v, allowed) {
        bail!(
            InvalidArgument,
            "{whose} attributes nest deeper than {allowed} levels, the most {reader} accepts \
             there"
        );
    }
    Ok(())
}

/// Whether `v` nests more than `levels` containers deep (looks no deeper than that).
fn nests_deeper(v: &Value, levels: usize) -> bool {
    let inner: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(items) => Box::new(items.iter()),
        Value::Map(pairs) => Box::new(pairs.iter().flat_map(|(k, v)| [k, v])),
        Value::Tag(_, inner) => Box::new(std::iter::once(&**inner)),
        _ => return false,
    };
    levels == 0 || inner.into_iter().any(|item| nests_deeper(item, levels - 1))
}
