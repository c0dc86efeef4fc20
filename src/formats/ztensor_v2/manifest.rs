//! The v2 manifest (§3), parsed from bytes that passed the deterministic-encoding check,
//! straight into the model: no tree of the document is built, names go into an arena,
//! and each object's parts are checked against the container (§3.6: names, shapes, blob
//! alignment, bounds, shard references, identical-or-disjoint blobs) and against their
//! layout profile (`profiles`) before they become components.

use std::borrow::Cow;

use crate::dtype::DType;
use crate::error::{Error, Result, bail};
use crate::limits::Limits;
use crate::model::{
    Attributes, Component, Components, Container, Model, Object, Shape, ShardEntry,
};
use crate::value::cbor::schema::{Report, Schema};
use crate::value::cbor::{DecodeError, Len};

use super::profiles::{self, Part};
use super::{
    ALIGN_FLOOR, FOOTER_LEN, Footer, MAX_NAME, MAX_RANK, MAX_SHARD_NAME, Rule, TRAITS,
    VERSION_TEXT, refuse, reject,
};
use crate::formats::ztensor::manifest::Interner;

/// How the v2 manifest (at file offset `base`) reports its errors: the rule each breaks.
struct V2Errors {
    base: u64,
}

impl Report for V2Errors {
    /// The manifest passed `deterministic::check`: every length is definite and every
    /// item well-formed, so only types can disappoint.
    const CHECKED: bool = true;
    fn malformed(&self, e: DecodeError) -> Error {
        reject(
            Rule::CborSyntax,
            format_args!(
                "{} (file offset {})",
                e.message,
                self.base + e.offset as u64
            ),
        )
    }
    fn mismatch(&self, what: &str, expected: &str, found: &str, at: usize) -> Error {
        reject(
            Rule::Schema,
            format_args!(
                "{what} must be {expected}, not {found} (file offset {})",
                self.base + at as u64
            ),
        )
    }
}

/// The schema reader of a v2 manifest.
type P<'a> = Schema<'a, V2Errors>;

/// A map's entry count (definite: the deterministic check refused indefinite lengths).
fn map(p: &mut P<'_>, depth: usize, what: &str) -> Result<u64> {
    p.map(depth, what).map(count)
}

fn array(p: &mut P<'_>, depth: usize, what: &str) -> Result<u64> {
    p.array(depth, what).map(count)
}

fn count(len: Len) -> u64 {
    match len {
        Len::Definite(n) => n,
        // The deterministic check refused indefinite lengths.
        Len::Indefinite => 0,
    }
}

/// Names (§3.5): non-empty, at most 1024 bytes, no NUL (UTF-8 was checked).
pub(crate) fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        refuse!(Name, "{what} name is empty");
    }
    if name.len() > MAX_NAME {
        refuse!(
            Name,
            "{what} name of {} bytes is longer than {MAX_NAME}",
            name.len()
        );
    }
    if let Some(i) = name.bytes().position(|b| b == 0) {
        refuse!(
            Name,
            "{what} name '{}' holds a NUL at byte {i}",
            name.escape_debug()
        );
    }
    Ok(())
}

/// Shard names (§7.1): 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with `.`, so that a
/// name is never a path.
pub(crate) fn check_shard_name(name: &str) -> Result<()> {
    let why = if name.is_empty() {
        Some("is empty".to_string())
    } else if name.len() > MAX_SHARD_NAME {
        Some(format!("is longer than {MAX_SHARD_NAME} bytes"))
    } else if name.starts_with('.') {
        Some("starts with '.'".to_string())
    } else {
        name.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
            .map(|c| format!("holds {c:?}; only A-Z a-z 0-9 . _ - are allowed"))
    };
    match why {
        Some(why) => refuse!(ShardName, "shard name '{}' {why}", name.escape_debug()),
        None => Ok(()),
    }
}

/// Digest syntax (§3.4): `<algorithm>:<lowercase hex>`, both non-empty, the algorithm of
/// lowercase letters and digits.
pub(crate) fn check_digest_syntax(digest: &str) -> Result<()> {
    let ok = digest.split_once(':').is_some_and(|(algo, hex)| {
        !algo.is_empty()
            && !hex.is_empty()
            && algo
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    });
    if !ok {
        refuse!(
            Schema,
            "digest '{}' is not '<algorithm>:<lowercase hex>'",
            digest.escape_debug()
        );
    }
    Ok(())
}

/// What the parse of the objects needs besides the cursor.
struct Ctx<'s, 'm> {
    shards: &'s [ShardEntry],
    data_end: u64,
    interner: Interner,
    /// Every non-empty blob: (file, offset, length), for the identical-or-disjoint check.
    blobs: Vec<(u32, u64, u64)>,
    /// The parts of the object being read (reused: no allocation per object).
    parts: Vec<Part<'m>>,
    /// The caller's rank limit (`Limits::max_rank`), checked beside the format's 64.
    max_rank: usize,
}

/// Parses a manifest whose bytes passed the deterministic check into a model, checking
/// every rule of §3.6 on the way. `data_end` is where the footer starts.
pub(crate) fn parse(
    bytes: &[u8],
    footer: &Footer,
    data_end: u64,
    limits: &Limits,
) -> Result<Model> {
    let depth_limit = limits.max_cbor_depth.min(crate::limits::MAX_CBOR_DEPTH);
    let mut p = Schema::new(
        bytes,
        depth_limit,
        V2Errors {
            base: footer.manifest_offset,
        },
    );
    let mut n = map(&mut p, 0, "the manifest")?;
    let (mut shards, mut objects, mut attributes) = (Vec::new(), None, None);
    let mut ctx_arena = None;
    while n > 0 {
        n -= 1;
        let Some(key) = p.key(1)? else { continue };
        match &*key {
            "shards" => shards = parse_shards(&mut p)?,
            "objects" => {
                let mut ctx = Ctx {
                    shards: &shards,
                    data_end,
                    interner: Interner::default(),
                    blobs: vec![(0, footer.manifest_offset, footer.manifest_length)],
                    parts: Vec::new(),
                    max_rank: limits.max_rank,
                };
                objects = Some(parse_objects(&mut p, &mut ctx)?);
                ctx_arena = Some((ctx.interner, ctx.blobs));
            }
            "attributes" => attributes = Some(attributes_at(&mut p, 1, "the file's")?),
            _ => p.skip(1)?,
        }
    }
    let Some(objects) = objects else {
        refuse!(Schema, "the manifest has no 'objects'");
    };
    let (mut interner, mut blobs) = ctx_arena.expect("set with objects");
    check_overlap(&mut blobs, &shards)?;
    let attributes = attributes.map(|a| Attributes::in_arena(&mut interner.arena, a));
    let mut model = Model::new(
        Container::ZTensor,
        TRAITS,
        VERSION_TEXT,
        attributes,
        objects,
    )?;
    model.v2_shards = shards.into_boxed_slice();
    Ok(model)
}

/// An attributes map (§3.1): a map whose keys are text obeying the name rules; returns
/// its bytes. `depth`: its nesting in the manifest.
fn attributes_at<'a>(p: &mut P<'a>, depth: usize, whose: &str) -> Result<&'a [u8]> {
    let start = p.c.position();
    let bytes = p.capture(depth)?;
    let mut q = Schema::new(
        bytes,
        usize::MAX,
        V2Errors {
            base: p.report.base + start as u64,
        },
    );
    let what = format!("{whose} attributes");
    let mut n = map(&mut q, 0, &what)?;
    while n > 0 {
        n -= 1;
        if q.c.peek_type() != "text" {
            refuse!(
                Schema,
                "{what} have a key that is {}, not text",
                q.c.peek_type()
            );
        }
        let key = q.text("an attribute key")?;
        check_name("an attribute", &key)?;
        q.skip(1)?;
    }
    Ok(bytes)
}

fn parse_shards(p: &mut P<'_>) -> Result<Vec<ShardEntry>> {
    let mut n = map(p, 1, "shards")?;
    let mut shards = Vec::new();
    while n > 0 {
        n -= 1;
        if p.c.peek_type() != "text" {
            refuse!(Schema, "a shard table key is {}, not text", p.c.peek_type());
        }
        let name = p.text("a shard name")?;
        check_shard_name(&name)?;
        let mut fields = map(p, 2, "a shard table entry")?;
        let (mut size, mut digest) = (None, None);
        while fields > 0 {
            fields -= 1;
            let Some(key) = p.key(3)? else { continue };
            match &*key {
                "size" => size = Some(p.uint("a shard's size")?),
                "digest" => digest = Some(p.text("a shard's digest")?),
                _ => p.skip(3)?,
            }
        }
        let (Some(size), Some(digest)) = (size, digest) else {
            refuse!(Schema, "shard '{name}' lacks its 'size' or 'digest'");
        };
        check_digest_syntax(&digest)?;
        if size < 8 + FOOTER_LEN {
            refuse!(
                Schema,
                "shard '{name}' is {size} bytes, less than a header and a footer"
            );
        }
        shards.push(ShardEntry {
            name: name.into(),
            size,
            digest: digest.into(),
        });
    }
    // Lexicographic: a part's shard is found by binary search, file index = position + 1.
    shards.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(shards)
}

/// The fewest manifest bytes an object entry takes ("n" {"parts" {..} "shape" [] "layout"
/// "x"}), so that a declared count reserves no more than the bytes can hold.
const MIN_OBJECT_BYTES: usize = 2 + 1 + 6 + 1 + 6 + 1 + 7 + 2;

/// Objects reserved before any is read, at most.
const FIRST_OBJECTS: usize = 1 << 16;

/// Room for more objects when `list` is full: a declared count is a claim, so the first
/// reservation is bounded, and later ones follow what was actually read (bytes per object
/// so far against the bytes left). Allocation failure is a status, not an abort.
fn reserve(list: &mut Vec<Object>, declared: u64, read: usize, left: usize) -> Result<()> {
    let fit = match list.len() {
        0 => (left / MIN_OBJECT_BYTES).min(FIRST_OBJECTS),
        n => (left / (read / n).max(1)).max(n / 4),
    };
    let want = fit
        .min((declared as usize).saturating_sub(list.len()))
        .max(1);
    list.try_reserve_exact(want).map_err(|_| {
        crate::error::err!(
            Limit,
            "no memory for {want} more objects after {}",
            list.len()
        )
    })
}

fn parse_objects<'m>(p: &mut P<'m>, ctx: &mut Ctx<'_, 'm>) -> Result<Vec<Object>> {
    let n = map(p, 1, "objects")?;
    let start = p.c.position();
    let mut list = Vec::new();
    for _ in 0..n {
        if list.len() == list.capacity() {
            reserve(&mut list, n, p.c.position() - start, p.c.remaining())?;
        }
        if p.c.peek_type() != "text" {
            refuse!(Schema, "an object name is {}, not text", p.c.peek_type());
        }
        let name = p.text("an object name")?;
        check_name("an object", &name)?;
        let object =
            parse_object(p, ctx, &name).map_err(|e| e.context(format_args!("object '{name}'")))?;
        list.push(object);
    }
    // Listed in name order, which is canonical blob order: a walk over the objects reads
    // a canonical file front to back. The map's own order (deterministic CBOR: shorter
    // names first) is one sorted run per name length, which the stable sort merges.
    list.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(list)
}

fn parse_object<'m>(p: &mut P<'m>, ctx: &mut Ctx<'_, 'm>, name: &str) -> Result<Object> {
    let mut n = map(p, 2, "an object")?;
    let (mut shape, mut layout, mut attributes, mut have_parts) = (None, None, None, false);
    ctx.parts.clear();
    while n > 0 {
        n -= 1;
        let Some(key) = p.key(3)? else { continue };
        match &*key {
            "shape" => shape = Some(parse_shape(p, ctx.max_rank)?),
            "layout" => layout = Some(p.text("layout")?),
            "attributes" => attributes = Some(attributes_at(p, 3, "the object's")?),
            "parts" => {
                parse_parts(p, ctx)?;
                have_parts = true;
            }
            _ => p.skip(3)?,
        }
    }
    let (Some(shape), Some(layout), true) = (shape, layout, have_parts) else {
        refuse!(Schema, "an object needs 'shape', 'layout' and 'parts'");
    };
    if ctx.parts.is_empty() {
        refuse!(Schema, "'parts' is empty");
    }
    // Part names sorted bytewise: component order is canonical blob order too.
    ctx.parts.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    for part in ctx.parts.iter_mut() {
        check_blob(part, ctx.shards, ctx.data_end)
            .map_err(|e| e.context(format_args!("part '{}'", part.name)))?;
        if part.length > 0 {
            ctx.blobs.push((part.file, part.offset, part.length));
        }
    }
    profiles::check_layout(&layout, &shape, attributes, &ctx.parts)?;
    let format = ctx.interner.get(&layout)?;
    let mut components = Components::None;
    for part in &ctx.parts {
        components.push(component(part, &layout, &mut ctx.interner, name)?);
    }
    Ok(Object {
        name: ctx.interner.arena.text(name)?,
        format,
        shape,
        attributes: attributes.map(|a| Attributes::in_arena(&mut ctx.interner.arena, a)),
        components,
    })
}

/// A shape (§3.3): unsigned dimensions, rank at most 64 (and at most the caller's
/// `max_rank`: `Limit` past it, as in v1), a product that doesn't overflow as it is
/// accumulated (as the reference reader computes it).
fn parse_shape(p: &mut P<'_>, max_rank: usize) -> Result<Shape> {
    let n = array(p, 3, "shape")?;
    if n as usize > MAX_RANK {
        refuse!(Shape, "rank {n} is over {MAX_RANK}");
    }
    if n as usize > max_rank {
        bail!(
            Limit,
            "shape has {n} dimensions, over the limit of {max_rank}"
        );
    }
    let mut dims = [0u64; MAX_RANK];
    for d in dims.iter_mut().take(n as usize) {
        *d = p.uint("a shape dimension")?;
    }
    let dims = &dims[..n as usize];
    profiles::check_shape_product(dims)?;
    Ok(Shape::from(dims))
}

fn parse_parts<'m>(p: &mut P<'m>, ctx: &mut Ctx<'_, 'm>) -> Result<()> {
    let n = map(p, 3, "parts")?;
    for _ in 0..n {
        if p.c.peek_type() != "text" {
            refuse!(Schema, "a part name is {}, not text", p.c.peek_type());
        }
        let name = p.text("a part name")?;
        check_name("a part", &name)?;
        let part =
            parse_part(p, name.clone()).map_err(|e| e.context(format_args!("part '{name}'")))?;
        ctx.parts.push(part);
    }
    Ok(())
}

fn parse_part<'m>(p: &mut P<'m>, name: Cow<'m, str>) -> Result<Part<'m>> {
    let mut n = map(p, 4, "a part")?;
    let mut part = Part {
        name,
        dtype: DType::U8,
        logical: None,
        file: 0,
        shard: None,
        offset: 0,
        length: 0,
        encoding: None,
        decoded_length: None,
        digest: None,
    };
    let (mut dtype, mut blob) = (false, false);
    while n > 0 {
        n -= 1;
        let Some(key) = p.key(5)? else { continue };
        match &*key {
            "blob" => {
                let len = array(p, 5, "blob")?;
                if len != 2 {
                    refuse!(Schema, "'blob' has {len} elements, not [offset, length]");
                }
                part.offset = p.uint("a blob offset")?;
                part.length = p.uint("a blob length")?;
                blob = true;
            }
            "type" => part.logical = Some(p.text("type")?),
            "dtype" => {
                let t = p.text("dtype")?;
                part.dtype = profiles::storage_dtype(&t).ok_or_else(|| {
                    reject(
                        Rule::Schema,
                        format_args!(
                            "dtype '{}' is not one of the 12 storage types",
                            t.escape_debug()
                        ),
                    )
                })?;
                dtype = true;
            }
            "shard" => {
                let s = p.text("shard")?;
                check_shard_name(&s)?;
                part.shard = Some(s);
            }
            "digest" => {
                let d = p.text("digest")?;
                check_digest_syntax(&d)?;
                part.digest = Some(d);
            }
            "encoding" => part.encoding = Some(p.text("encoding")?),
            "decoded_length" => part.decoded_length = Some(p.uint("decoded_length")?),
            _ => p.skip(5)?,
        }
    }
    if !dtype || !blob {
        refuse!(Schema, "a part needs 'dtype' and 'blob'");
    }
    if part.encoding.is_some() != part.decoded_length.is_some() {
        refuse!(
            Schema,
            "'decoded_length' must be present exactly when 'encoding' is"
        );
    }
    if let Some(t) = &part.logical
        && let Some(pinned) = profiles::pinned_dtype(t)
        && pinned != part.dtype
    {
        refuse!(
            Schema,
            "logical type '{t}' is stored as {}, not {}",
            pinned.name(),
            part.dtype.name()
        );
    }
    Ok(part)
}

/// A part's blob reference (§3.6 item 3): its shard is in the table, its offset on the
/// 4096 floor, its bytes inside the data region of the file it names. Sets `file`.
fn check_blob(part: &mut Part<'_>, shards: &[ShardEntry], data_end: u64) -> Result<()> {
    let (offset, length) = (part.offset, part.length);
    if !offset.is_multiple_of(ALIGN_FLOOR) || offset < ALIGN_FLOOR {
        refuse!(
            BlobAlignment,
            "offset {offset} is not a multiple of {ALIGN_FLOOR} from {ALIGN_FLOOR} on"
        );
    }
    let end = match &part.shard {
        None => data_end,
        Some(s) => {
            let Ok(i) = shards.binary_search_by(|e| (*e.name).cmp(s)) else {
                refuse!(ShardRef, "shard '{s}' is not in the manifest's shard table");
            };
            part.file = i as u32 + 1;
            shards[i].size - FOOTER_LEN
        }
    };
    if offset.checked_add(length).is_none_or(|e| e > end) {
        let file = part
            .shard
            .as_deref()
            .map_or("this file".to_string(), |s| format!("shard '{s}'"));
        refuse!(
            BlobBounds,
            "[{offset}, +{length}) reaches past the data region of {file}, which ends at {end}"
        );
    }
    Ok(())
}

/// Identical or disjoint (§2.4, §3.6 item 4), per file: sorted, exact repeats dropped,
/// any remaining overlap is partial.
fn check_overlap(blobs: &mut [(u32, u64, u64)], shards: &[ShardEntry]) -> Result<()> {
    blobs.sort_unstable();
    let mut last: Option<(u32, u64, u64)> = None;
    for &b in blobs.iter() {
        if let Some(a) = last
            && a != b
            && a.0 == b.0
            && a.1 + a.2 > b.1
        {
            let file = match a.0 {
                0 => "this file".to_string(),
                i => format!("shard '{}'", shards[i as usize - 1].name),
            };
            refuse!(
                BlobOverlap,
                "blobs [{}, +{}) and [{}, +{}) in {file} overlap without being the same blob",
                a.1,
                a.2,
                b.1,
                b.2
            );
        }
        last = Some(b);
    }
    Ok(())
}

/// The component a part becomes (see `profiles::component_types` for the types).
fn component(
    part: &Part<'_>,
    layout: &str,
    interner: &mut Interner,
    object: &str,
) -> Result<Component> {
    let (dtype, logical) = profiles::component_types(layout, part);
    let logical = logical.map(|t| interner.get(&t)).transpose()?;
    let mut c = Component::raw(
        interner.get(&part.name)?,
        dtype,
        logical,
        part.offset,
        part.length,
    );
    c.blob.file = part.file;
    if let Some(id) = &part.encoding {
        let decoded = part.decoded_length.unwrap_or(0);
        profiles::set_encoding(&mut c, id, decoded, object)?;
    }
    if let Some(d) = &part.digest {
        c.digest = Some(interner.arena.text(d)?);
    }
    Ok(c)
}
