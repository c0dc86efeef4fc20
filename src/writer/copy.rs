//! Copying objects from a reader (any format it reads) into a writer: what `zt convert`
//! and `zt merge` are made of, and `zt_writer_copy_object` in C.

use std::io::Write;

use crate::codec::digest::Hasher;
use crate::codec::{DigestAlgorithm, ZSTD_FRAME_SIZE};
use crate::dtype::DType;
use crate::error::{Result, bail};
use crate::model::{Blob, CText, Component, Encoding};
use crate::reader::Reader;
use crate::writer::{FileVersion, WriteOptions, Writer};

/// How `Writer::copy_object` stores each component. The default keeps what the input
/// has: raw stays raw and zstd stays zstd, copied as stored without re-encoding (or, when
/// the bytes need decoding, such as legacy big-endian or single-blob sparse data,
/// decoded and written in the same encoding); another format's pipeline (Tensogram's
/// packing and compression) becomes zstd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyOptions {
    /// Re-encode every component this way (decoding it first); None keeps each one's.
    pub encoding: Option<Encoding>,
    /// zstd level when encoding (0 = the library default).
    pub level: i32,
    /// The digest to record; None keeps each component's algorithm when it is one the
    /// writer records (sha256, crc32c) and records none otherwise.
    pub digest: Option<DigestAlgorithm>,
}

impl CopyOptions {
    /// The digest to record for a copy of `c` into a file of `version`: what the options
    /// say, else the component's algorithm when that version records it (a v2 writer
    /// records xxh3 for "none").
    fn digest_for(&self, c: &Component, version: FileVersion) -> DigestAlgorithm {
        self.digest.unwrap_or_else(|| match (c.digest(), version) {
            (Some(d), _) if d.starts_with("sha256:") => DigestAlgorithm::Sha256,
            (Some(d), FileVersion::V1_2) if d.starts_with("crc32c:") => DigestAlgorithm::Crc32c,
            _ => DigestAlgorithm::None,
        })
    }

    /// How a decoded copy of `c` is written into a file of `version`.
    fn write_options(&self, c: &Component, version: FileVersion, raw: bool) -> WriteOptions {
        let encoding = self.encoding.unwrap_or(match c.encoding() {
            _ if raw => Encoding::Raw,
            Encoding::Pipeline => Encoding::Zstd,
            other => other,
        });
        WriteOptions {
            encoding,
            level: if encoding == Encoding::Zstd {
                self.level
            } else {
                0
            },
            digest: match raw {
                true => self.digest.unwrap_or(DigestAlgorithm::None),
                false => self.digest_for(c, version),
            },
        }
    }
}

impl<W: Write> Writer<W> {
    /// Copies object `object` of `reader` under its own name. See `copy_object_as`.
    pub fn copy_object(
        &mut self,
        reader: &Reader<'_>,
        object: usize,
        options: &CopyOptions,
    ) -> Result<()> {
        let name = reader.object(object)?.name().to_owned();
        self.copy_object_as(reader, object, &name, options)
    }

    /// Copies object `object` of `reader` (any format the reader reads) into this file as
    /// `name`: its format, shape, attributes and every component. With the default
    /// options, raw and zstd components are copied as stored, in pieces, without
    /// re-encoding (a zstd stream is decoded once to check it), and a digest the copy
    /// keeps is checked against the bytes copied
    /// (`Checksum` on a mismatch); other components are decoded piece by piece and
    /// written as `options` say. u32 index components of sparse objects are widened to
    /// u64, as the spec requires. Memory: one 4 MiB piece, or one component when its
    /// range reads are not cheap. On failure the object is dropped from the file.
    pub fn copy_object_as(
        &mut self,
        reader: &Reader<'_>,
        object: usize,
        name: &str,
        options: &CopyOptions,
    ) -> Result<()> {
        self.copy_object_reporting(reader, object, name, options, &mut |_| {})
    }

    /// `copy_object_as`, calling `progress` with the count of decoded bytes done after
    /// each piece (stored pieces count in proportion to their component's decoded size),
    /// for a progress bar.
    pub fn copy_object_reporting(
        &mut self,
        reader: &Reader<'_>,
        object: usize,
        name: &str,
        options: &CopyOptions,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let obj = reader.object(object)?;
        if let Some(level) = options.encoding.filter(|e| *e == Encoding::Pipeline) {
            bail!(
                InvalidArgument,
                "the writer stores raw or zstd components, not {} ones",
                level.name()
            );
        }
        // In a set, the object's size counts as its decoded bytes.
        let size =
            (obj.components().iter()).fold(0u64, |n, c| n.saturating_add(c.decoded_length()));
        self.begin_object_sized(name, obj.format(), obj.shape(), size)?;
        let result = (|| {
            // safetensors and GGUF have no per-tensor attributes: a ggml object's are
            // its type's, which the GGUF tensor info says; others are not copied
            // (`zt convert` says which).
            if let Some(attributes) = obj.raw_attributes()
                && !self.format.spools()
            {
                self.set_object_attributes_from(name, attributes)?;
            }
            let kind = crate::model::schema::ObjectKind::of(obj.format());
            let version = self.version;
            // A v2 file's blobs are in part-name order (canonical form).
            let mut order: Vec<usize> = (0..obj.components().len()).collect();
            if version == FileVersion::V2 {
                order.sort_by(|&a, &b| {
                    let role = |i: usize| obj.components()[i].role().as_bytes();
                    role(a).cmp(role(b))
                });
            }
            for ci in order {
                let c = &obj.components()[ci];
                let widen = kind.is_index(c.role()) && c.dtype() == DType::U32;
                // A v2 digest covers decoded bytes and v2 zstd has its own profile: only raw
                // bytes are copied as stored into v2.
                let stored_ok = match version {
                    _ if self.format.spools() => c.encoding() == Encoding::Raw,
                    FileVersion::V1_2 => matches!(c.encoding(), Encoding::Raw | Encoding::Zstd),
                    FileVersion::V2 => c.encoding() == Encoding::Raw,
                };
                let as_stored =
                    options.encoding.is_none() && c.steps.is_empty() && stored_ok && !widen;
                if as_stored {
                    let digest = match self.format.spools() {
                        true => options.digest.unwrap_or(DigestAlgorithm::None),
                        false => options.digest_for(c, version),
                    };
                    self.copy_stored(reader, object, ci, c, digest, progress)?;
                } else {
                    self.copy_decoded(reader, object, ci, c, widen, options, progress)?;
                }
            }
            self.end_object()
        })();
        if result.is_err() {
            self.abandon_object();
        }
        result
    }

    /// Writes a component's decoded bytes, re-encoded (u32 indices widened to u64).
    #[allow(clippy::too_many_arguments)]
    fn copy_decoded(
        &mut self,
        reader: &Reader<'_>,
        object: usize,
        ci: usize,
        c: &Component,
        widen: bool,
        options: &CopyOptions,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let dtype = if widen { DType::U64 } else { c.dtype() };
        let opts = options.write_options(c, self.version, self.format.spools());
        self.begin_component(c.role(), dtype, c.logical_type(), &opts)?;
        let mut wide = Vec::new();
        reader.for_each_piece(object, ci, |piece| {
            progress(piece.len() as u64);
            if !widen {
                return self.write(piece);
            }
            wide.clear();
            wide.extend(piece.chunks_exact(4).flat_map(|b| {
                u64::from(u32::from_le_bytes(b.try_into().expect("4 bytes"))).to_le_bytes()
            }));
            self.write(&wide)
        })?;
        self.end_component()
    }

    /// Writes a raw or zstd component's stored bytes as they are, hashing them with
    /// `digest`; when the source recorded a digest of that algorithm, the copy's must
    /// equal it. A zstd stream is decoded once first (to nowhere), so a corrupt stream (or
    /// a seek table that disagrees with it) is refused rather than copied: that costs a
    /// decode, not the compression it saves.
    fn copy_stored(
        &mut self,
        reader: &Reader<'_>,
        object: usize,
        ci: usize,
        c: &Component,
        digest: DigestAlgorithm,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        // A zTensor v2 source's digests cover decoded bytes: a zstd part's is checked by
        // decoding it, and says nothing of the stored bytes copied here.
        let decoded_digest =
            c.encoding() == Encoding::Zstd && reader.model().traits.decoded_digests;
        if c.encoding() == Encoding::Zstd {
            // Also refuses a seek table that disagrees with the stream (its frame index).
            match decoded_digest && c.digest().is_some() {
                true => reader.verify_component(object, ci)?,
                false => reader.for_each_piece(object, ci, |_| Ok(()))?,
            }
        }
        // begin_component's checks (an open object, a new role, the types) and the
        // alignment (or a declared tensor's place); the bytes then go out as they are.
        self.begin_component(
            c.role(),
            c.dtype(),
            c.logical_type(),
            &WriteOptions {
                digest,
                ..WriteOptions::default()
            },
        )?;
        if let Err(e) = self.declared_end(c.decoded_length()) {
            self.stream = None;
            return Err(e);
        }
        let mut stream = self.stream.take().expect("a component just begun");
        let offset = stream.offset;
        let length = c.length();
        let mut buf = vec![0u8; length.min(ZSTD_FRAME_SIZE as u64) as usize];
        let mut done = 0u64;
        while done < length {
            let n = (length - done).min(buf.len() as u64) as usize;
            reader.read_stored(object, ci, done, &mut buf[..n])?;
            stream.hash(&buf[..n]);
            self.emit_data(&buf[..n])?;
            let reported = proportion(c.decoded_length(), done, length);
            done += n as u64;
            progress(proportion(c.decoded_length(), done, length) - reported);
        }
        let content = stream.content_hash();
        let written = std::mem::replace(&mut stream.hasher, Hasher::None).finish();
        if !decoded_digest
            && let (Some(new), Some(old)) = (&written, c.digest())
            && !new.eq_ignore_ascii_case(old)
            && new.split(':').next() == old.split(':').next()
        {
            bail!(
                Checksum,
                "object '{}' component '{}': the stored bytes do not match their digest {old}",
                self.objects.last().map_or("", |o| o.name()),
                c.role()
            );
        }
        let mut component = Component {
            role: stream.role,
            dtype: c.dtype(),
            logical_type: stream.logical_type,
            blob: Blob {
                file: 0,
                offset,
                length,
                encoding: c.encoding(),
                decoded_length: c.decoded_length(),
            },
            decoded_length: c.decoded_length(),
            digest: written.map(|d| CText::new(&d)).transpose()?,
            steps: Default::default(),
        };
        if let Some(content) = content {
            self.v2_share(&mut component, content)?;
        }
        self.objects
            .last_mut()
            .expect("open object")
            .components
            .push(component);
        Ok(())
    }
}

/// `total * part / whole`, without overflow.
fn proportion(total: u64, part: u64, whole: u64) -> u64 {
    (u128::from(total) * u128::from(part) / u128::from(whole.max(1))) as u64
}
