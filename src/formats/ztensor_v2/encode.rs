//! What a v2 writer emits and what §6.4 computes from a manifest: the manifest itself in
//! deterministic CBOR (map keys in ascending order of their encodings, which for text keys
//! is shorter first, then bytewise), and the content digest.
//!
//! Both are written byte by byte from the model rather than through a tree of values: the
//! keys of the schema are constants whose order is known, names are sorted once, and
//! attribute maps are already deterministic bytes.

use std::cmp::Ordering;

use crate::codec::DigestAlgorithm;
use crate::codec::digest::Hasher;
use crate::error::{Result, bail};
use crate::model::{Attributes, Encoding, Model, Object, ShardEntry};
use crate::value::cbor::Writer;

use super::profiles::{ZSTD_SEEKABLE, part_types};

/// Text keys in deterministic order: shorter first, then bytewise.
pub(crate) fn key_order(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Indices of `items` sorted by `name` in deterministic key order.
fn sorted<T>(items: &[T], name: impl Fn(&T) -> &str) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_unstable_by(|&a, &b| key_order(name(&items[a]), name(&items[b])));
    order
}

/// The manifest of `objects` (whose formats are v2 layout ids and whose attributes are
/// deterministic CBOR), with the file's `attributes` and shard table. A component's
/// `blob.file` names shard `file - 1` of `shards`.
pub(crate) fn manifest(
    attributes: Option<&Attributes>,
    objects: &[Object],
    shards: &[ShardEntry],
) -> Vec<u8> {
    let mut out = Writer::with_capacity(64 + objects.len() * 160);
    out.map(1 + usize::from(!shards.is_empty()) + usize::from(attributes.is_some()));
    if !shards.is_empty() {
        out.text("shards");
        out.map(shards.len());
        for i in sorted(shards, |s| &s.name) {
            let s = &shards[i];
            out.text(&s.name);
            out.map(2);
            out.text("size");
            out.uint(s.size);
            out.text("digest");
            out.text(&s.digest);
        }
    }
    out.text("objects");
    out.map(objects.len());
    for i in sorted(objects, Object::name) {
        let o = &objects[i];
        out.text(o.name());
        object(&mut out, o, shards);
    }
    if let Some(a) = attributes {
        out.text("attributes");
        out.raw(a.as_cbor());
    }
    out.into_bytes()
}

fn object(out: &mut Writer, o: &Object, shards: &[ShardEntry]) {
    out.map(3 + usize::from(o.attributes.is_some()));
    out.text("parts");
    out.map(o.components.len());
    for i in sorted(&o.components, |c| c.role()) {
        let c = &o.components[i];
        out.text(c.role());
        let (dtype, logical) = part_types(o.format(), c);
        let zstd = c.blob.encoding == Encoding::Zstd;
        let shard = (c.blob.file > 0).then(|| &*shards[c.blob.file as usize - 1].name);
        out.map(
            2 + usize::from(logical.is_some())
                + usize::from(shard.is_some())
                + 2 * usize::from(zstd)
                + usize::from(c.digest.is_some()),
        );
        out.text("blob");
        out.array(2);
        out.uint(c.blob.offset);
        out.uint(c.blob.length);
        if let Some(t) = logical {
            out.text("type");
            out.text(t);
        }
        out.text("dtype");
        out.text(dtype.name());
        if let Some(s) = shard {
            out.text("shard");
            out.text(s);
        }
        if let Some(d) = c.digest() {
            out.text("digest");
            out.text(d);
        }
        if zstd {
            out.text("encoding");
            out.text(ZSTD_SEEKABLE);
            out.text("decoded_length");
            out.uint(c.decoded_length);
        }
    }
    object_tail(out, o);
}

/// What follows an object's parts in both encodings: its shape, layout and attributes.
fn object_tail(out: &mut Writer, o: &Object) {
    out.text("shape");
    out.array(o.shape.len());
    o.shape.iter().for_each(|&d| out.uint(d));
    out.text("layout");
    out.text(o.format());
    if let Some(a) = &o.attributes {
        out.text("attributes");
        out.raw(a.as_cbor());
    }
}

/// The content digest of a v2 model (§6.4): the digest, by `algorithm` (xxh3 or sha256), of
/// `["zt.content/1", {name: {shape, layout, attributes?, parts: {name: {dtype, type?,
/// digest}}}}]` in deterministic CBOR. `Unsupported` for a file that is not v2 and for a
/// model with a part without a digest (the content digest is then undefined).
pub(crate) fn content_digest(model: &Model, algorithm: DigestAlgorithm) -> Result<String> {
    if !matches!(algorithm, DigestAlgorithm::Xxh3 | DigestAlgorithm::Sha256) {
        bail!(
            InvalidArgument,
            "the content digest is computed with xxh3 or sha256, the algorithms zTensor v2 registers"
        );
    }
    if model.version.as_str() != super::VERSION_TEXT || !model.traits.decoded_digests {
        bail!(
            Unsupported,
            "the content digest is defined for zTensor v2 files (from their manifest); \
             convert this file with `zt convert --to v2` first"
        );
    }
    let mut out = Writer::with_capacity(64 + model.objects.len() * 96);
    out.array(2);
    out.text("zt.content/1");
    out.map(model.objects.len());
    for i in sorted(&model.objects, Object::name) {
        let o = &model.objects[i];
        out.text(o.name());
        out.map(3 + usize::from(o.attributes.is_some()));
        out.text("parts");
        out.map(o.components.len());
        for j in sorted(&o.components, |c| c.role()) {
            let c = &o.components[j];
            let Some(digest) = c.digest() else {
                bail!(
                    Unsupported,
                    "object '{}' part '{}' carries no digest, so the model has no content \
                     digest (§6.4)",
                    o.name(),
                    c.role()
                );
            };
            let (dtype, logical) = part_types(o.format(), c);
            out.text(c.role());
            out.map(2 + usize::from(logical.is_some()));
            if let Some(t) = logical {
                out.text("type");
                out.text(t);
            }
            out.text("dtype");
            out.text(dtype.name());
            out.text("digest");
            out.text(digest);
        }
        object_tail(&mut out, o);
    }
    let mut hasher = Hasher::new(algorithm);
    hasher.update(out.as_slice());
    Ok(hasher.finish().expect("xxh3 or sha256"))
}
