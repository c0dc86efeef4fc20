//! Writing zTensor v2 (`CreateOptions::version`): the container (its magic, blobs at
//! 4 KiB boundaries, or 64 KiB for `Placement::Canonical`, the manifest, the 40-byte footer), every part with an xxh3 digest
//! of its decoded bytes (sha256 when asked), zstd as `zt.zstd-seekable/1` (checksummed
//! frames of 4 MiB and a seek table), our object kinds under their v2 layout ids, and
//! canonical form (§6.3) wherever the output allows it:
//!
//! - A raw part whose bytes equal an earlier part's shares its blob. Found by xxh3-128
//!   and length, confirmed byte for byte by reading the earlier blob back; a duplicate
//!   already written is taken back (the file is cut back to where it began).
//! - With `Placement::Canonical`, blobs are placed in the order of (object name, part
//!   name), bytewise. Objects added in that order are written in place; otherwise
//!   `finish` copies the blobs into a new temporary file in canonical order (one more
//!   read and write of the data, memory bounded by one 4 MiB piece) before it is renamed
//!   into place, unless the caller asked to keep the written order
//!   (`CreateOptions::keep_order`). A compact file (the default placement, never
//!   canonical) keeps the written order: one pass.
//!
//! Same tensors and attributes in, the same bytes out as `ztensor` 2.1.2's canonical
//! writer. Padding between blobs is zeros; in a file it is left as a hole (no disk
//! blocks) where it spans a page or more. Reading back, taking back and reordering need
//! the output to be a file (`Writer::create*`); into any other `Write` the blobs stay in
//! the order written, and a streamed duplicate stays as unreferenced bytes.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;

use crate::error::{Error, Result, err};
use crate::formats::ztensor_v2::profiles::{self, Part};
use crate::formats::ztensor_v2::{Footer, MAGIC_V2, encode};
use crate::model::{Attributes, CText, Component, Encoding};

use super::output::Writeback;
use super::vocabulary::{gguf_attributes, v2_layout};
use super::{BUFFER, Writer, temp_name};

/// What a v2 writer keeps besides the objects.
pub(crate) struct State {
    /// Don't reorder at `finish`.
    pub(crate) keep_order: bool,
    /// Where blobs start: multiples of 64 KiB (canonical) or 4 KiB (compact).
    pub(crate) align: u64,
    /// A second handle on the temporary file (path writers only): reads written blobs
    /// back, leaves padding as holes, takes a duplicate back. Shares the file offset
    /// with the writer's own handle.
    pub(crate) file: Option<File>,
    /// Raw blobs written: (xxh3-128, length) -> offset of the first.
    by_content: HashMap<(u128, u64), u64>,
    /// The xxh3-128 of each raw blob written, by (offset, length).
    hashes: HashMap<(u64, u64), u128>,
}

impl State {
    pub(crate) fn new(keep_order: bool, align: u64, file: Option<File>) -> State {
        State {
            keep_order,
            align,
            file,
            by_content: HashMap::new(),
            hashes: HashMap::new(),
        }
    }
}

/// Rounds up to the next multiple of `align` (a power of two: 64 KiB or 4 KiB).
pub(crate) fn align_up(n: u64, align: u64) -> Result<u64> {
    n.checked_add(align - 1)
        .map(|v| v & !(align - 1))
        .ok_or_else(|| {
            err!(
                InvalidArgument,
                "the file would be larger than u64 can address"
            )
        })
}

/// Padding at least this long is left as a hole in a file.
const HOLE: u64 = 4096;

impl<W: Write> Writer<W> {
    fn state(&mut self) -> &mut State {
        self.v2.as_mut().expect("a v2 writer")
    }

    /// Flushes the writer's buffer, so the file handle sees every byte written.
    fn flush_out(&mut self) -> Result<()> {
        let label = &self.output.label;
        let r = self
            .output
            .out
            .flush()
            .map_err(|e| Error::io(format_args!("{label}: flushing"), e));
        self.after_io(r)
    }

    /// Pads with zeros to the next blob boundary (4 KiB or 64 KiB, the placement's): a
    /// hole when the output is a file and the gap spans a page.
    pub(super) fn v2_pad(&mut self) -> Result<()> {
        self.settle()?;
        let align = self.state().align;
        let target = align_up(self.output.pos, align)?;
        let gap = target - self.output.pos;
        if gap >= HOLE && self.state().file.is_some() {
            self.flush_out()?;
            let label = self.output.label.clone();
            let file = self.state().file.as_mut().expect("checked");
            let r = file
                .seek(SeekFrom::Start(target))
                .map(drop)
                .map_err(|e| Error::io(format_args!("{label}: seeking to {target}"), e));
            self.after_io(r)?;
            self.output.pos = target;
            return Ok(());
        }
        const ZEROS: [u8; HOLE as usize] = [0; HOLE as usize];
        let mut left = gap;
        while left > 0 {
            let n = left.min(HOLE) as usize;
            self.emit(&ZEROS[..n])?;
            left -= n as u64;
        }
        Ok(())
    }

    /// After a raw component of `hash` was written: share an earlier identical blob
    /// (confirmed by its bytes) and take this copy back when the output allows.
    pub(super) fn v2_share(&mut self, c: &mut Component, hash: u128) -> Result<()> {
        let (offset, length) = (c.blob.offset, c.blob.length);
        let key = (hash, length);
        let Some(&first) = self.state().by_content.get(&key) else {
            self.state().by_content.insert(key, offset);
            self.state().hashes.insert((offset, length), hash);
            return Ok(());
        };
        if self.state().file.is_none() || !self.same_bytes(first, offset, length)? {
            // Nothing to read back with (or a collision): a blob of its own.
            self.state().hashes.insert((offset, length), hash);
            return Ok(());
        }
        // Take the copy back: the file ends where it began (a blob boundary, so the
        // next blob goes exactly where it would have without it). What is buffered goes
        // out first: written after the cut, it would land at the cut's offset (the
        // comparison reads nothing back for an empty blob, so it may not have flushed).
        self.flush_out()?;
        let label = self.output.label.clone();
        let file = self.state().file.as_mut().expect("checked");
        let r = file
            .set_len(offset)
            .and_then(|()| file.seek(SeekFrom::Start(offset)).map(drop))
            .map_err(|e| {
                Error::io(
                    format_args!("{label}: cutting the file back to {offset}"),
                    e,
                )
            });
        self.after_io(r)?;
        self.output.pos = offset;
        c.blob.offset = first;
        Ok(())
    }

    /// Whether the blobs at `a` and `b` of `length` bytes in the file are equal.
    fn same_bytes(&mut self, a: u64, b: u64, length: u64) -> Result<bool> {
        if a == b || length == 0 {
            return Ok(true);
        }
        self.flush_out()?;
        let label = self.output.label.clone();
        let file = self.state().file.as_ref().expect("a file");
        let piece = length.min(1 << 20) as usize;
        let (mut x, mut y) = (vec![0u8; piece], vec![0u8; piece]);
        let mut done = 0u64;
        while done < length {
            let n = piece.min((length - done) as usize);
            let read = |at: u64, buf: &mut [u8]| {
                file.read_exact_at(buf, at)
                    .map_err(|e| Error::io(format_args!("{label}: reading back {at}"), e))
            };
            read(a + done, &mut x[..n])?;
            read(b + done, &mut y[..n])?;
            if x[..n] != y[..n] {
                return Ok(false);
            }
            done += n as u64;
        }
        Ok(true)
    }

    /// Writes the manifest and footer of a v2 file: in place when the blobs are where
    /// canonical placement puts them (or must stay where they are), else through a copy
    /// in canonical order (see the module's notes).
    pub(super) fn v2_finish_bytes(&mut self) -> Result<()> {
        let attributes = self.file_attributes.clone();
        let reorder = !self.state().keep_order && self.state().file.is_some();
        if reorder {
            let plan = self.placement()?;
            if !plan.in_place {
                return self.rewrite(plan, attributes.as_ref());
            }
        }
        self.v2_pad()?;
        let manifest = encode::manifest(attributes.as_ref(), &self.objects, &[]);
        let footer = Footer::of(self.output.pos, &manifest);
        self.emit(&manifest)?;
        self.emit(&footer.to_bytes())
    }

    /// Canonical placement of the blobs: for each component (in object order, component
    /// order) its new offset, and each distinct blob to copy (old offset, new offset,
    /// length) in file order.
    fn placement(&mut self) -> Result<Plan> {
        let align = self.state().align;
        let mut order: Vec<usize> = (0..self.objects.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            self.objects[a]
                .name()
                .as_bytes()
                .cmp(self.objects[b].name().as_bytes())
        });
        let mut cursor = MAGIC_V2.len() as u64;
        let mut placed: HashMap<(u64, u64), u64> = HashMap::new();
        let mut by_content: HashMap<(u128, u64), (u64, u64)> = HashMap::new();
        let mut new_offsets: Vec<Vec<u64>> = self
            .objects
            .iter()
            .map(|o| vec![0; o.components.len()])
            .collect();
        let mut copies = Vec::new();
        for &oi in &order {
            let comps = &self.objects[oi].components;
            let mut by_role: Vec<usize> = (0..comps.len()).collect();
            by_role.sort_unstable_by(|&a, &b| {
                comps[a].role().as_bytes().cmp(comps[b].role().as_bytes())
            });
            for ci in by_role {
                let c = &self.objects[oi].components[ci];
                let old = (c.blob.offset, c.blob.length);
                let raw = c.blob.encoding == Encoding::Raw;
                if let Some(&new) = placed.get(&old) {
                    new_offsets[oi][ci] = new;
                    continue;
                }
                let hash = self.v2.as_ref().expect("v2").hashes.get(&old).copied();
                if raw && let Some(hash) = hash {
                    let key = (hash, old.1);
                    if let Some(&(new, first_old)) = by_content.get(&key)
                        && self.same_bytes(first_old, old.0, old.1)?
                    {
                        placed.insert(old, new);
                        new_offsets[oi][ci] = new;
                        continue;
                    }
                    by_content
                        .entry(key)
                        .or_insert((align_up(cursor, align)?, old.0));
                }
                let new = align_up(cursor, align)?;
                cursor = new + old.1;
                placed.insert(old, new);
                new_offsets[oi][ci] = new;
                copies.push((old.0, new, old.1));
            }
        }
        let manifest_at = align_up(cursor, align)?;
        let in_place = manifest_at == align_up(self.output.pos, align)?
            && self.objects.iter().zip(&new_offsets).all(|(o, offs)| {
                o.components
                    .iter()
                    .zip(offs)
                    .all(|(c, &n)| c.blob.offset == n)
            });
        Ok(Plan {
            new_offsets,
            copies,
            in_place,
        })
    }

    /// Copies the blobs into a new temporary file in canonical order, writes the manifest
    /// and footer there, and makes it the file `finish` renames into place.
    fn rewrite(&mut self, plan: Plan, attributes: Option<&Attributes>) -> Result<()> {
        let align = self.state().align;
        self.flush_out()?;
        let target = self.target.as_mut().expect("a path writer");
        let dir = match target.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let temp = dir.join(temp_name(target.path.file_name().expect("a file name")));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| Error::io(format_args!("creating {}", temp.display()), e))?;
        let writeback = target
            .durable
            .then(|| file.try_clone().ok())
            .flatten()
            .map(Writeback::new);
        let mut new = Rewrite {
            out: BufWriter::with_capacity(BUFFER, file),
            pos: 0,
            label: temp.display().to_string(),
            writeback,
        };
        let result = (|| {
            new.write(&MAGIC_V2)?;
            let src = self.v2.as_ref().expect("v2").file.as_ref().expect("a file");
            let mut buf = vec![0u8; 4 << 20];
            for &(old, at, length) in &plan.copies {
                new.pad_to(at)?;
                let mut done = 0u64;
                while done < length {
                    let n = buf.len().min((length - done) as usize);
                    src.read_exact_at(&mut buf[..n], old + done).map_err(|e| {
                        Error::io(
                            format_args!("{}: reading back {}", self.output.label, old + done),
                            e,
                        )
                    })?;
                    new.write(&buf[..n])?;
                    done += n as u64;
                }
            }
            for (o, offs) in self.objects.iter_mut().zip(&plan.new_offsets) {
                for (c, &n) in o.components.iter_mut().zip(offs) {
                    c.blob.offset = n;
                }
            }
            new.pad_to(align_up(new.pos, align)?)?;
            let manifest = encode::manifest(attributes, &self.objects, &[]);
            let footer = Footer::of(new.pos, &manifest);
            new.write(&manifest)?;
            new.write(&footer.to_bytes())?;
            new.out
                .flush()
                .map_err(|e| Error::io(format_args!("{}: flushing", new.label), e))
        })();
        let target = self.target.as_mut().expect("a path writer");
        if let Err(e) = result {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        let _ = std::fs::remove_file(&target.temp);
        target.temp = temp;
        self.output.pos = new.pos;
        Ok(())
    }

    /// At `end_object`: the object in v2's vocabulary (layout id, the attributes its
    /// profile requires), checked against its profile as a reader will check it.
    pub(super) fn v2_end_object(&mut self) -> Result<()> {
        // An object added before one whose name sorts after it: `finish` will copy the
        // blobs into a new file in canonical order, so this one is thrown away: no point
        // getting it to disk (removed with its pages still dirty, it costs no writes).
        let n = self.objects.len();
        if n >= 2
            && !self.state().keep_order
            && self.state().file.is_some()
            && self.objects[n - 1].name().as_bytes() < self.objects[n - 2].name().as_bytes()
        {
            self.output.writeback = None;
        }
        let obj = self.objects.last_mut().expect("open object");
        let was = obj.format().to_owned();
        let layout = v2_layout(obj)?;
        if let Some(attrs) = gguf_attributes(obj)? {
            obj.attributes = Some(attrs);
        }
        obj.format = CText::new(&layout)?;
        self.v2_check_object(self.objects.len() - 1).map_err(|e| {
            if was == layout {
                return e;
            }
            // Say which of our formats became this layout.
            e.context(format_args!("'{was}' is written as {layout} in zTensor v2"))
        })
    }

    /// Object `i` against its layout profile, as a reader will check it (metadata rules).
    pub(super) fn v2_check_object(&self, i: usize) -> Result<()> {
        let obj = &self.objects[i];
        let layout = obj.format();
        let mut parts: Vec<Part<'_>> = obj
            .components
            .iter()
            .map(|c| {
                let (dtype, logical) = profiles::part_types(layout, c);
                let zstd = c.blob.encoding == Encoding::Zstd;
                Part {
                    name: c.role().into(),
                    dtype,
                    logical: logical.map(Into::into),
                    file: 0,
                    shard: None,
                    offset: c.blob.offset,
                    length: c.blob.length,
                    encoding: zstd.then(|| profiles::ZSTD_SEEKABLE.into()),
                    decoded_length: zstd.then_some(c.decoded_length),
                    digest: None,
                }
            })
            .collect();
        parts.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        let attrs = obj.attributes.as_ref().map(Attributes::as_cbor);
        profiles::check_layout(layout, obj.shape(), attrs, &parts)
            .map_err(|e| err!(InvalidArgument, "{}", e.message()))
    }
}

/// Where canonical placement puts everything.
struct Plan {
    /// Per object, per component: the new offset.
    new_offsets: Vec<Vec<u64>>,
    /// Distinct blobs to copy: (old offset, new offset, length), in new file order.
    copies: Vec<(u64, u64, u64)>,
    /// Everything is where it would go already.
    in_place: bool,
}

/// The file a rewrite writes.
struct Rewrite {
    out: BufWriter<File>,
    pos: u64,
    label: String,
    /// A durable file's writeback as it goes (as the first pass had it).
    writeback: Option<Writeback>,
}

impl Rewrite {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(wb) = &mut self.writeback {
            wb.before(self.pos, bytes.len());
        }
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io(format_args!("{}: writing at {}", self.label, self.pos), e))?;
        self.pos += bytes.len() as u64;
        if let Some(wb) = &mut self.writeback {
            wb.advance(self.pos);
        }
        Ok(())
    }

    /// Zeros up to `at`: a hole.
    fn pad_to(&mut self, at: u64) -> Result<()> {
        if at == self.pos {
            return Ok(());
        }
        self.out
            .flush()
            .and_then(|()| self.out.get_mut().seek(SeekFrom::Start(at)).map(drop))
            .map_err(|e| Error::io(format_args!("{}: seeking to {at}", self.label), e))?;
        self.pos = at;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::ztensor_v2::ALIGN_CANONICAL;

    #[test]
    fn placement_rounds_up_to_64_kib() {
        assert_eq!(align_up(8, ALIGN_CANONICAL).unwrap(), 65536);
        assert_eq!(align_up(65536, ALIGN_CANONICAL).unwrap(), 65536);
        assert_eq!(align_up(4097, 4096).unwrap(), 8192);
        assert!(align_up(u64::MAX, ALIGN_CANONICAL).is_err());
    }
}
