//! Components: whole (`add_component`) or streamed (`begin_component`, `write`,
//! `end_component`), raw bytes written as they come and zstd frames compressed on the
//! pool and placed in order as they come out (`place`).

use std::io::Write;

use super::output::Output;
use super::{FileVersion, WriteOptions, Writer, as_argument, foreign};
use crate::codec::compress::{FramePipeline, Out};
use crate::codec::digest::Hasher;
use crate::codec::{DigestAlgorithm, seek_table, zstd_level_range};
use crate::dtype::{DType, check_logical_type, logical_type_info};
use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::model::{Blob, CText, Component, Encoding, Object, check_name};

/// A component being streamed.
pub(super) struct Stream {
    pub(super) role: CText,
    pub(super) dtype: DType,
    pub(super) logical_type: Option<CText>,
    /// Where a raw component begins (a zstd one's start is known when its first frame is
    /// written: `Placing`).
    pub(super) offset: u64,
    pub(super) decoded: u64,
    /// A raw component's digest (a zstd one's travels with its frames: `Mark::Begin`).
    pub(super) hasher: Hasher,
    /// The zstd level of a zstd component (None: raw).
    pub(super) zstd: Option<i32>,
    /// zTensor v2: the digest covers the decoded bytes (`hasher` is fed those), and a raw
    /// component's xxh3-128 finds an identical blob to share.
    pub(super) decoded_digest: bool,
    /// A raw v2 component's xxh3-128: `Share::Own` when its digest is not xxh3 (sha256),
    /// else `Share::Digest`, read off the digest's own xxh3 state (one pass over the
    /// bytes for both).
    pub(super) share: Share,
    /// The last byte written (the unused nibble of an odd count of packed fp4 values).
    pub(super) last: Option<u8>,
}

impl Stream {
    /// Feeds raw bytes to the digest and the share hash.
    pub(super) fn hash(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        if let Share::Own(c) = &mut self.share {
            c.update(bytes);
        }
    }

    /// The xxh3-128 of the bytes hashed, for a component that may share a blob.
    pub(super) fn content_hash(&self) -> Option<u128> {
        match (&self.share, &self.hasher) {
            (Share::Own(c), _) => Some(c.digest128()),
            (Share::Digest, Hasher::Xxh3(h)) => Some(h.digest128()),
            _ => None,
        }
    }
}

/// How a component's xxh3-128 (to find an identical blob to share) is computed.
pub(super) enum Share {
    /// Not shared (v1.2, or zstd).
    No,
    /// From the xxh3 state of the component's digest.
    Digest,
    /// A state of its own (the digest is sha256).
    Own(Box<xxhash_rust::xxh3::Xxh3>),
}

/// What the compression pipeline carries between frames: where a zstd component begins
/// and ends, so that its frames are placed, hashed and recorded as they come out.
pub(super) enum Mark {
    /// A component begins: pad to the alignment, then its frames follow; its stored
    /// bytes are hashed with `hasher`. `seekable`: zTensor v2's `zt.zstd-seekable/1`,
    /// whose seek table follows even a single frame.
    Begin { hasher: Hasher, seekable: bool },
    /// Component `.1` of object `.0` ends: its seek table goes out, then its place and
    /// digest are recorded in the object.
    End(usize, usize),
}

/// The zstd component whose frames are being written out.
pub(super) struct Placing {
    offset: u64,
    hasher: Hasher,
    /// (compressed, decompressed) size of each frame, for the seek table.
    sizes: Vec<(u32, u32)>,
    /// The seek table follows even one frame (`Mark::Begin`).
    seekable: bool,
}

/// Writes out one item of the compression pipeline (see `Mark`).
pub(super) fn place<W: Write>(
    output: &mut Output<W>,
    objects: &mut [Object],
    placing: &mut Option<Placing>,
    item: Out<'_, Mark>,
) -> Result<()> {
    match item {
        Out::Mark(Mark::Begin { hasher, seekable }) => {
            output.pad()?;
            *placing = Some(Placing {
                offset: output.pos,
                hasher,
                sizes: Vec::new(),
                seekable,
            });
        }
        Out::Frame { bytes, decoded } => {
            let p = placing.as_mut().expect("frames follow a begin");
            // A frame of at most ZSTD_FRAME_SIZE input is far below 4 GiB.
            let sizes = (u32::try_from(bytes.len()), u32::try_from(decoded));
            let (Ok(compressed), Ok(decoded)) = sizes else {
                bail!(Internal, "a zstd frame of {} bytes", bytes.len());
            };
            p.hasher.update(bytes);
            output.emit(bytes)?;
            p.sizes.push((compressed, decoded));
        }
        Out::Mark(Mark::End(object, component)) => {
            let mut p = placing.take().expect("an end follows a begin");
            if p.sizes.len() > 1 || p.seekable {
                match seek_table::encode(&p.sizes) {
                    Some(table) => {
                        p.hasher.update(&table);
                        output.emit(&table)?;
                    }
                    None if p.seekable => bail!(
                        Limit,
                        "{} zstd frames are more than a seek table can list",
                        p.sizes.len()
                    ),
                    None => {}
                }
            }
            let c = &mut objects[object].components[component];
            c.blob.offset = p.offset;
            c.blob.length = output.pos - p.offset;
            // A digest of the stored bytes; a v2 digest (of the decoded bytes) was
            // recorded by `end_component`.
            if let Some(d) = p.hasher.finish() {
                c.digest = Some(CText::new(&d)?);
            }
        }
    }
    Ok(())
}

impl<W: Write> Writer<W> {
    /// Adds a whole component to the open object.
    pub fn add_component(
        &mut self,
        role: &str,
        dtype: DType,
        logical_type: Option<&str>,
        data: &[u8],
        options: &WriteOptions,
    ) -> Result<()> {
        self.begin_component(role, dtype, logical_type, options)?;
        let r = self.write(data).and_then(|()| self.end_component());
        if r.is_err() && self.stream.take().is_some() {
            self.discard_frames();
        }
        r
    }

    /// Begins streaming a component of the open object; feed it with `write`, end it with
    /// `end_component`. Memory use is bounded whatever the component's size.
    pub fn begin_component(
        &mut self,
        role: &str,
        dtype: DType,
        logical_type: Option<&str>,
        options: &WriteOptions,
    ) -> Result<()> {
        self.check_usable()?;
        let obj = self.open_object_idle()?;
        let role_c = check_name("component", role, Limits::default().max_name_length)
            .map_err(as_argument)?;
        if obj.find_component(role).is_some() {
            bail!(
                InvalidArgument,
                "object '{}' already has a '{role}' component",
                obj.name()
            );
        }
        check_logical_type(dtype, logical_type).map_err(as_argument)?;
        if self.format.spools() {
            let digest = options.digest != DigestAlgorithm::None;
            foreign::check_component(
                self.format,
                obj,
                role,
                dtype,
                logical_type,
                options.encoding,
                digest,
            )?;
        }
        // A declared tensor's component: its types checked, and for safetensors and GGUF
        // its place (the cursor moved there when it goes at the cursor).
        let declared_place = self.declared_component(role, dtype, logical_type)?;
        let v2 = self.version == FileVersion::V2;
        let digest = component_digest(v2, options.digest)?;
        let zstd = component_zstd(options)?;
        let logical_type = logical_type
            .map(CText::new)
            .transpose()
            .map_err(as_argument)?;
        let mut hasher = Hasher::new(digest);
        self.begin_placement(zstd.is_some(), v2, &mut hasher)?;
        self.stream = Some(Stream {
            role: role_c,
            dtype,
            logical_type,
            offset: declared_place.unwrap_or(self.output.pos),
            decoded: 0,
            hasher,
            zstd,
            decoded_digest: v2,
            share: match (v2 && zstd.is_none(), digest) {
                (false, _) => Share::No,
                (true, DigestAlgorithm::Xxh3) => Share::Digest,
                (true, _) => Share::Own(Box::default()),
            },
            last: None,
        });
        Ok(())
    }

    /// Where a component's bytes begin: a raw one at the next aligned offset; a zstd
    /// one's first frame placed (padded, hashed) when it is written out, a v2 one on a
    /// blob boundary with every frame before it written out (its digest covers the
    /// decoded bytes: `hasher` stays in the stream; v1.2's moves to the frames).
    fn begin_placement(&mut self, zstd: bool, v2: bool, hasher: &mut Hasher) -> Result<()> {
        if zstd {
            // A v2 component starts on a blob boundary (every frame before it written
            // out), and its digest covers the decoded bytes: `hasher` stays in the stream.
            if v2 {
                self.pad_to_alignment()?;
            }
            // Placed (padded, hashed) when its first frame is written out.
            let stored = match v2 {
                true => Hasher::new(DigestAlgorithm::None),
                false => std::mem::replace(hasher, Hasher::new(DigestAlgorithm::None)),
            };
            let frames = self.frames.get_or_insert_with(|| FramePipeline::new(0, v2));
            let (output, objects, placing) =
                (&mut self.output, &mut self.objects, &mut self.placing);
            let begin = Mark::Begin {
                hasher: stored,
                seekable: v2,
            };
            let r = frames.mark(begin, &mut |item| place(output, objects, placing, item));
            self.after_io(r)?;
        } else {
            self.pad_to_alignment()?;
        }
        Ok(())
    }

    /// Appends a chunk of the component being streamed (any size, including 0).
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        self.check_usable()?;
        let Some(mut s) = self.stream.take() else {
            bail!(
                State,
                "no component is being written: call begin_component first"
            );
        };
        if let Err(e) = self.declared_room(s.decoded, data.len() as u64) {
            self.stream = Some(s);
            return Err(e);
        }
        if s.dtype == DType::Bool
            && let Some(i) = data.iter().position(|&b| b > 1)
        {
            let at = s.decoded + i as u64;
            self.stream = Some(s);
            return Err(err!(
                InvalidArgument,
                "bool byte {} at index {at} is neither 0 nor 1",
                data[i]
            )
            .context(self.stream_context()));
        }
        s.decoded += data.len() as u64;
        if let Some(&last) = data.last() {
            s.last = Some(last);
        }
        let result = match (s.zstd, &mut self.frames) {
            (Some(level), Some(frames)) => {
                if s.decoded_digest {
                    s.hasher.update(data);
                }
                let (output, objects, placing) =
                    (&mut self.output, &mut self.objects, &mut self.placing);
                frames.write(level, data, &mut |item| {
                    place(output, objects, placing, item)
                })
            }
            _ => {
                s.hash(data);
                self.emit_data(data)
            }
        };
        self.stream = Some(s);
        let result = self.after_io(result);
        result.map_err(|e| e.context(self.stream_context()))
    }

    /// The open object, when no component of it is being streamed.
    pub(super) fn open_object_idle(&self) -> Result<&Object> {
        if !self.open_object {
            bail!(State, "no object is open: begin one first");
        }
        if let Some(s) = &self.stream {
            bail!(
                State,
                "component '{}' is still being written: end it first",
                s.role.as_str()
            );
        }
        Ok(self.objects.last().expect("open object"))
    }

    /// "object 'o' component 'r'" for the component being streamed.
    pub(super) fn stream_context(&self) -> String {
        let object = self.objects.last().map_or("", |o| o.name());
        let role = self.stream.as_ref().map_or("", |s| s.role.as_str());
        format!("object '{object}' component '{role}'")
    }

    /// Ends the component being streamed and records it in the open object.
    pub fn end_component(&mut self) -> Result<()> {
        self.check_usable()?;
        let Some(s) = self.stream.take() else {
            bail!(State, "no component is being written");
        };
        let unit = s.dtype.size() as u64
            * s.logical_type
                .as_ref()
                .and_then(|t| logical_type_info(t.as_str()))
                .map_or(1, |i| i.ratio);
        if s.decoded % unit != 0 {
            self.discard_frames();
            bail!(
                InvalidArgument,
                "object '{}' component '{}': {} bytes is not a whole number of {}-byte elements",
                self.objects.last().map_or("", |o| o.name()),
                s.role.as_str(),
                s.decoded,
                unit
            );
        }
        if let Err(e) = self.declared_end(s.decoded) {
            self.discard_frames();
            return Err(e);
        }
        let encoding = if s.zstd.is_some() {
            Encoding::Zstd
        } else {
            Encoding::Raw
        };
        let obj = self.objects.last().expect("open object");
        if s.logical_type
            .as_ref()
            .is_some_and(|t| t.as_str() == "f4_e2m1")
            && obj.format() == "dense"
            && crate::dtype::numel(obj.shape()).is_some_and(|n| n % 2 == 1)
            && s.last.is_some_and(|b| b & 0xf0 != 0)
        {
            let e = err!(
                InvalidArgument,
                "object '{}' component '{}': the unused high nibble of the last byte of an odd \
                 number of f4_e2m1 values must be 0",
                obj.name(),
                s.role.as_str()
            );
            self.discard_frames();
            return Err(e);
        }
        let content = s.content_hash();
        let digest = s.hasher.finish().map(|d| CText::new(&d)).transpose()?;
        let mut component = Component {
            role: s.role,
            dtype: s.dtype,
            logical_type: s.logical_type,
            blob: Blob {
                file: 0,
                offset: s.offset,
                // Declared tensors' bytes may lie away from the cursor.
                length: match self.placed() {
                    true => s.decoded,
                    false => self.output.pos - s.offset,
                },
                encoding,
                decoded_length: s.decoded,
            },
            decoded_length: s.decoded,
            digest,
            steps: Default::default(),
        };
        if let Some(content) = content {
            self.v2_share(&mut component, content)?;
        }
        let object = self.objects.len() - 1;
        let components = &mut self.objects[object].components;
        components.push(component);
        let at = components.len() - 1;
        if let (Some(level), Some(frames)) = (s.zstd, &mut self.frames) {
            // Recorded (place, length, digest) when its last frame is written out.
            let (output, objects, placing) =
                (&mut self.output, &mut self.objects, &mut self.placing);
            let mut out = |item: Out<'_, Mark>| place(output, objects, placing, item);
            let r = frames
                .end_frames(level, &mut out)
                .and_then(|()| frames.mark(Mark::End(object, at), &mut out));
            self.after_io(r)?;
            // A v2 object is checked against its profile at `end_object`, with its
            // parts' places known.
            if self.version == FileVersion::V2 {
                self.settle()?;
            }
        }
        Ok(())
    }

    /// Forgets the zstd component being streamed: frames already handed to the pool are
    /// still written out (unreferenced), input not yet in a frame is dropped.
    pub(super) fn discard_frames(&mut self) {
        if let Some(frames) = &mut self.frames {
            frames.discard_input();
        }
    }
}

/// The digest a component gets: v2's xxh3 unless sha256 is asked for; v1.2's as asked.
fn component_digest(v2: bool, asked: DigestAlgorithm) -> Result<DigestAlgorithm> {
    Ok(match (v2, asked) {
        (true, DigestAlgorithm::None | DigestAlgorithm::Xxh3) => DigestAlgorithm::Xxh3,
        (true, DigestAlgorithm::Crc32c) => bail!(
            InvalidArgument,
            "zTensor v2 digests are xxh3 or sha256, not crc32c"
        ),
        (false, DigestAlgorithm::Xxh3) => bail!(
            InvalidArgument,
            "zTensor v1.2 digests are sha256 or crc32c; xxh3 is a v2 digest"
        ),
        (_, d) => d,
    })
}

/// The zstd level a component is compressed at (None: stored raw).
fn component_zstd(options: &WriteOptions) -> Result<Option<i32>> {
    Ok(match options.encoding {
        Encoding::Raw => None,
        Encoding::Pipeline => bail!(
            InvalidArgument,
            "the writer stores raw or zstd components, not format pipelines"
        ),
        Encoding::Zstd => {
            if options.level != 0 && !zstd_level_range().contains(&options.level) {
                bail!(
                    InvalidArgument,
                    "zstd level {} is outside {:?}",
                    options.level,
                    zstd_level_range()
                );
            }
            Some(if options.level == 0 { 3 } else { options.level })
        }
    })
}
