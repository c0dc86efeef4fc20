//! Data-object frames and their metadata into model objects: one `dense` object with one
//! `data` component per frame (a raw blob, or a pipeline blob decoded by a
//! `TgmPipeline`), its unique name, its attributes and the region its digest covers; and
//! the file attributes.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use crate::error::{Error, Result, err};
use crate::formats::ReadAt;
use crate::limits::{Limits, MAX_CBOR_DEPTH};
use crate::model::{
    Attributes, Blob, CText, Component, Container, DigestRegions, Encoding, Model, NameIndex,
    Object, Step, TextArena, check_name_text,
};
use crate::value::cbor::{self, Value, Writer};

use super::decode::{Stages, TgmPipeline};
use super::descriptors::Layout;
use super::frames::{DataFrame, Message};
use super::masks::mask_entries;
use super::metadata::{self as meta, Entries};

/// The objects of a file as its messages are added, with their decoders and the regions
/// their digests cover.
pub(super) struct Objects<'l> {
    /// Whether the file holds several messages (names are then prefixed `message_<m>/`).
    several: bool,
    limits: &'l Limits,
    /// Names and digests side by side.
    arena: TextArena,
    /// "data", "dense" and the logical types, shared by every object.
    data: CText,
    dense: CText,
    logical: Vec<(&'static str, CText)>,
    objects: Vec<Object>,
    /// The (offset, length) of the region each data digest covers.
    regions: DigestRegions,
    /// The attributes being written.
    scratch: Writer,
}

impl<'l> Objects<'l> {
    /// No objects yet; `several` when the file holds more than one message.
    pub(super) fn new(several: bool, limits: &'l Limits) -> Result<Self> {
        Ok(Objects {
            several,
            limits,
            arena: TextArena::default(),
            data: CText::new("data")?,
            dense: CText::new("dense")?,
            logical: Vec::new(),
            objects: Vec::new(),
            regions: DigestRegions::default(),
            scratch: Writer::new(),
        })
    }

    /// The shared text of a logical type.
    fn logical(&mut self, name: &'static str) -> Result<CText> {
        if let Some((_, t)) = self.logical.iter().find(|(n, _)| *n == name) {
            return Ok(t.clone());
        }
        let t = CText::new(name)?;
        self.logical.push((name, t.clone()));
        Ok(t)
    }

    /// The model of the objects added, with the file `attributes`.
    pub(super) fn into_model(self, attributes: Option<Attributes>) -> Result<Model> {
        let Objects {
            mut objects,
            regions,
            mut arena,
            limits,
            ..
        } = self;
        // Names are rarely taken twice: they are made unique only when the index finds
        // that one is, instead of every name going through a set of them as it is made.
        let by_name = match NameIndex::try_build(&objects)? {
            Ok(index) => index,
            Err(_) => {
                make_unique(&mut objects, &mut arena, limits)?;
                NameIndex::build(&objects)?
            }
        };
        let mut model = Model::with_index(
            Container::Tensogram,
            super::TRAITS,
            "3",
            attributes,
            objects,
            by_name,
        )?;
        model.digest_regions = regions;
        Ok(model)
    }

    /// Adds an object for every data-object frame of `msg` (taking the frames out of
    /// it, each descriptor read again with `read`, validated within `depth`).
    pub(super) fn add_message(
        &mut self,
        msg: &mut Message<'_>,
        read: &ReadAt<'_>,
        depth: usize,
    ) -> Result<()> {
        let ctx = |e: Error| e.context(format!("Tensogram message {}", msg.index));
        msg.check_base().map_err(ctx)?; // While the frames are still counted.
        let frames = std::mem::take(&mut msg.objects);
        let preceders = std::mem::take(&mut msg.preceders);
        let mut preceders = preceders.iter().peekable();
        let msg = &*msg;
        let mut base = msg.entries();
        self.objects.reserve_exact(frames.len());
        for (k, frame) in frames.into_iter().enumerate() {
            let octx = |e: Error| {
                e.context(format!(
                    "Tensogram message {} object {k} (frame at offset {})",
                    msg.index, frame.offset
                ))
            };
            let preceder = preceders.next_if(|(i, _)| *i == k).map(|(_, p)| &**p);
            let meta = merged_metadata(base.next(), preceder).map_err(octx)?;
            let desc = frame.descriptor(read, depth).map_err(octx)?;
            self.add_object(msg, k, &frame, &desc, &meta)
                .map_err(octx)?;
        }
        Ok(())
    }

    /// Adds the object of data-object frame `k` of `msg`, whose descriptor is `desc` and
    /// metadata `meta`, and when the message has hashes, the region its digest covers.
    fn add_object(
        &mut self,
        msg: &Message<'_>,
        k: usize,
        frame: &DataFrame,
        desc: &Value,
        meta: &[u8],
    ) -> Result<()> {
        let layout = Layout::read(desc, self.limits)?;
        let (blob, steps) = self.data_blob(frame, desc, &layout)?;
        let hashed = msg.hashed();
        let digest = if hashed {
            Some(self.arena.text(&format!("xxh3:{:016x}", frame.hash))?)
        } else {
            None
        };
        let component = Component {
            role: self.data.clone(),
            dtype: layout.dtype,
            logical_type: layout.logical.map(|l| self.logical(l)).transpose()?,
            blob,
            decoded_length: layout.decoded_length,
            digest,
            steps: steps.into(),
        };
        let name = self.name(msg, k, meta)?;
        let attributes = self.object_attributes(meta, desc, msg.index)?;
        if hashed {
            let (start, end) = (frame.body_start(), frame.body_end());
            self.regions
                .push(self.objects.len(), 0, (start, end - start));
        }
        self.objects.push(Object {
            name,
            format: self.dense.clone(),
            shape: layout.shape.into(),
            attributes: Some(attributes),
            components: vec![component].into(),
        });
        Ok(())
    }

    /// An object's attributes: its metadata (a deterministic CBOR map), then
    /// `_tensogram_descriptor` (the descriptor as written) and `_tensogram_message` (the
    /// message index). Written as `cbor::encode` writes the tree of them, without one,
    /// into the arena beside the names (no allocation per object).
    fn object_attributes(
        &mut self,
        meta: &[u8],
        desc: &Value,
        message: usize,
    ) -> Result<Attributes> {
        let reserved = |key: &[u8]| {
            meta::text(key)
                .is_some_and(|t| t == "_tensogram_descriptor" || t == "_tensogram_message")
        };
        let kept = || {
            Entries::of(meta)
                .into_iter()
                .flatten()
                .filter(|(k, _)| !reserved(k))
        };
        let out = &mut self.scratch;
        out.clear();
        out.map(kept().count() + 2);
        for (key, value) in kept() {
            out.raw(key);
            out.raw(value);
        }
        out.text("_tensogram_descriptor");
        out.value(desc);
        out.text("_tensogram_message");
        out.uint(message as u64);
        check_attribute_depth(out.as_slice())?;
        Ok(Attributes::in_arena(&mut self.arena, out.as_slice()))
    }

    /// The blob of a frame's data and how it is decoded: the payload itself when no stage
    /// changes it (zero-copy, byte-swapped if big-endian), else the payload and its mask
    /// blobs, decoded by a `TgmPipeline` step.
    fn data_blob(
        &mut self,
        frame: &DataFrame,
        desc: &Value,
        layout: &Layout<'_>,
    ) -> Result<(Blob, Vec<Step>)> {
        let stages = Stages::read(desc, layout, self.limits)?;
        let region = frame.data_region();
        let (payload_start, data_end) = region;
        let masks = mask_entries(desc, layout, frame.body_start(), region)?;
        let payload_end = masks.iter().map(|m| m.start).min().unwrap_or(data_end);
        let stored_end = masks.iter().map(|m| m.end).max().unwrap_or(payload_end);
        let payload_len = payload_end - payload_start;
        stages.check_payload(payload_len)?;
        if stages.is_identity(layout) && masks.is_empty() {
            let blob = Blob {
                file: 0,
                offset: payload_start,
                length: payload_len,
                encoding: Encoding::Raw,
                decoded_length: payload_len,
            };
            let swap = stages.swap(layout);
            let steps = if swap > 1 {
                vec![Step::SwapBytes(swap)]
            } else {
                vec![]
            };
            return Ok((blob, steps));
        }
        let pipeline = TgmPipeline::new(stages, layout, payload_start, payload_len, masks)?;
        // The pipeline decodes the stored bytes as they are: the blob itself decodes to
        // them, and the one step makes the component.
        let stored = stored_end - payload_start;
        let blob = Blob {
            file: 0,
            offset: payload_start,
            length: stored,
            encoding: Encoding::Pipeline,
            decoded_length: stored,
        };
        Ok((blob, vec![Step::Format(Arc::new(pipeline))]))
    }

    /// The name of object `k` of `msg`: its `name` metadata or `object_<k>`, prefixed
    /// `message_<m>/` in a file of several messages (made unique by `into_model`).
    fn name(&mut self, msg: &Message<'_>, k: usize, meta: &[u8]) -> Result<CText> {
        let given = meta::get(meta, "name")
            .and_then(meta::text)
            .filter(|s| !s.is_empty());
        let name = match (given, self.several) {
            (Some(given), false) => given,
            (Some(given), true) => Cow::Owned(format!("message_{}/{given}", msg.index)),
            (None, false) => Cow::Owned(format!("object_{k}")),
            (None, true) => Cow::Owned(format!("message_{}/object_{k}", msg.index)),
        };
        check_name_text("object", &name, self.limits.max_name_length)?;
        self.arena.text(&name).map_err(|e| e.context("object name"))
    }
}

/// Makes the objects' names unique, in order: a name already taken gets `_1`, `_2` ...
/// appended (as Tensogram's own Zarr layer does).
fn make_unique(objects: &mut [Object], arena: &mut TextArena, limits: &Limits) -> Result<()> {
    let mut taken: HashSet<CText> = HashSet::with_capacity(objects.len());
    for o in objects.iter_mut() {
        if taken.contains(o.name.as_str()) {
            let mut n = 0u64;
            let name = loop {
                n += 1;
                let name = format!("{}_{n}", o.name.as_str());
                if !taken.contains(name.as_str()) {
                    break name;
                }
            };
            check_name_text("object", &name, limits.max_name_length)?;
            o.name = arena.text(&name).map_err(|e| e.context("object name"))?;
        }
        taken.insert(o.name.clone());
    }
    Ok(())
}

/// The file attributes: the global metadata of a single message, else
/// `{"messages": [map, ...]}` (each a deterministic CBOR map).
pub(super) fn file_attributes(messages: Vec<Message<'_>>) -> Result<Option<Attributes>> {
    if messages.len() > 1 {
        let mut out = Writer::new();
        out.map(1);
        out.text("messages");
        out.array(messages.len());
        for m in messages {
            out.raw(m.metadata());
        }
        return attributes_of(out.into_bytes()).map(Some);
    }
    // Kept without a copy when it was read into memory of its own.
    messages
        .into_iter()
        .next()
        .map(|m| attributes_of(m.into_metadata().into_owned()))
        .transpose()
}

/// Keeps deterministic CBOR bytes as attributes, checking they decode back within the
/// attribute depth bound.
fn attributes_of(bytes: Vec<u8>) -> Result<Attributes> {
    check_attribute_depth(&bytes)?;
    Ok(Attributes::from_vec(bytes))
}

/// Checks that attribute bytes decode back within the attribute depth bound.
fn check_attribute_depth(bytes: &[u8]) -> Result<()> {
    cbor::validate_prefix(bytes, MAX_CBOR_DEPTH).map_err(|e| {
        err!(
            Limit,
            "metadata nests too deeply to keep as attributes: {e}"
        )
    })?;
    Ok(())
}

/// An object's metadata (a deterministic CBOR map): `base[i]` with a preceder's keys
/// overriding (shallow merge). Without a preceder it is `base[i]` as it is; with one, the
/// two small maps are merged as trees.
fn merged_metadata<'m>(
    base: Option<&'m [u8]>,
    preceder: Option<&'m [u8]>,
) -> Result<Cow<'m, [u8]>> {
    const EMPTY: &[u8] = &[0xa0];
    let Some(preceder) = preceder else {
        return Ok(Cow::Borrowed(base.unwrap_or(EMPTY)));
    };
    let tree = |bytes: &[u8]| {
        cbor::decode_within(
            bytes,
            MAX_CBOR_DEPTH,
            super::frames::tree_budget(bytes.len()),
        )
        .map(|(v, _)| v)
        .map_err(|e| err!(Limit, "metadata: {}", e.message))
    };
    let mut out = match base {
        Some(b) => tree(b)?,
        None => Value::Map(Vec::new()),
    };
    let Value::Map(out_entries) = &mut out else {
        unreachable!("base entries are maps")
    };
    if let Value::Map(entries) = tree(preceder)? {
        for (k, v) in entries {
            match out_entries.iter_mut().find(|(ok, _)| *ok == k) {
                Some(slot) => slot.1 = v,
                None => out_entries.push((k, v)),
            }
        }
    }
    Ok(Cow::Owned(cbor::to_vec(&out)))
}
