//! Getting an object's bytes: zero-copy views, decoded views cached once, copies into
//! caller buffers, range reads, converted reads.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::buffer::{AlignedBuf, zeroed_vec};
use crate::codec::FrameIndex;
use crate::convert::Plan;
use crate::decode;
use crate::dtype::DType;
use crate::error::{Result, err};
use crate::model::{Component, Object};

use super::{INDEX_CACHE_BUDGET, Reader, View, check_dst};

impl<'a> Reader<'a> {
    /// The decoded bytes a view already cached, if any.
    fn cached(&self, object: usize, component: usize) -> Option<&AlignedBuf> {
        self.caches.get(object, component)?.cell.get()
    }

    /// A view of a component's decoded bytes. Raw components are zero-copy (a slice of the
    /// mapping or the caller's memory) when that has the alignment the file's format
    /// promises (64 bytes in zTensor files; the element size in formats that don't align
    /// their data to 64). Anything else is decoded (or copied) once into 64-byte aligned
    /// memory the reader owns and keeps until it is dropped; concurrent first calls
    /// decode once.
    #[inline]
    pub fn view(&self, object: usize, component: usize) -> Result<View<'_>> {
        // The zero-copy case inline (a lookup and a view by name cost less than safetensors'
        // `tensor()`); errors, caches and decoding out of line.
        if let Some(c) = self
            .model
            .objects
            .get(object)
            .and_then(|o| o.components.get(component))
            && let Some(v) = self.view_in_place(c)
        {
            return Ok(v);
        }
        self.view_decoded(object, component)
    }

    /// The zero-copy view of a plain component whose stored bytes are in memory and
    /// aligned as the format promises.
    #[inline]
    fn view_in_place(&self, c: &Component) -> Option<View<'_>> {
        let alignment = self.model.traits.view_alignment(c.dtype);
        // A shard not open yet (or that can't be opened): view_decoded opens it or says
        // why.
        let source = self.files.opened(c.blob.file)?;
        if c.is_plain()
            && let Some(data) = source.stored(c.blob.offset, c.blob.length)
            && ((data.as_ptr() as usize).is_multiple_of(alignment) || data.is_empty())
        {
            return Some(View {
                data,
                dtype: c.dtype,
                zero_copy: true,
            });
        }
        None
    }

    /// `view` of what isn't zero-copy yet: a set's shard not opened yet is opened first,
    /// so its plain components are zero-copy from their first view (one view per
    /// component, however the shard was opened); otherwise the cached or freshly decoded
    /// bytes, or the error.
    #[inline(never)]
    fn view_decoded(&self, object: usize, component: usize) -> Result<View<'_>> {
        let (obj, c) = self.component(object, component)?;
        self.source(obj, c)?;
        if let Some(v) = self.view_in_place(c) {
            return Ok(v);
        }
        if let Some(buf) = self.cached(object, component) {
            return Ok(View::cached(buf, c.dtype));
        }
        let cache = self.caches.cell(&self.model.objects, object, component);
        let _guard = cache.lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(buf) = cache.cell.get() {
            return Ok(View::cached(buf, c.dtype));
        }
        let ctx = self.ctx(obj, c);
        let len = c.decoded_length;
        let limit = self.limits.max_total_cached;
        let refuse = || {
            err!(
                Limit,
                "caching {len} decoded bytes would exceed the reader's cache limit of {limit}"
            )
        };
        // Cheap early refusal; the budget itself is taken only once the decode succeeded,
        // so a failing decode on another thread never makes a good view fail.
        if len.saturating_add(self.cached_total.load(Ordering::SeqCst)) > limit {
            return Err(ctx(refuse()));
        }
        let source = self.source(obj, c)?;
        let mut buf = AlignedBuf::zeroed(len).map_err(&ctx)?;
        decode::component_into(source, c, buf.as_mut_slice()).map_err(&ctx)?;
        self.cached_total
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |total| {
                total.checked_add(len).filter(|&t| t <= limit)
            })
            .map_err(|_| ctx(refuse()))?;
        Ok(View::cached(cache.cell.get_or_init(|| buf), c.dtype))
    }

    /// Copies or decodes a component into `dst`, which must be exactly `decoded_length`
    /// bytes. Decodes straight into `dst`, with no intermediate copy, unless a view already
    /// cached the decoded bytes (then it copies them).
    pub fn read_into(&self, object: usize, component: usize, dst: &mut [u8]) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        check_dst(c.decoded_length, dst.len()).map_err(self.ctx(obj, c))?;
        if let Some(buf) = self.cached(object, component) {
            dst.copy_from_slice(buf.as_slice());
            return Ok(());
        }
        decode::component_into(self.source(obj, c)?, c, dst).map_err(self.ctx(obj, c))
    }

    /// Reads a component into a new vector (allocates `decoded_length` bytes).
    pub fn read_to_vec(&self, object: usize, component: usize) -> Result<Vec<u8>> {
        let (obj, c) = self.component(object, component)?;
        let mut v = zeroed_vec(c.decoded_length).map_err(self.ctx(obj, c))?;
        self.read_into(object, component, &mut v)?;
        Ok(v)
    }

    /// Reads the decoded bytes `[offset, offset + dst.len())` of a component into `dst`.
    /// Raw components are read in place. zstd components are read through their frame
    /// index (`frame_index`, built on the first call): only the frames overlapping the
    /// range are read and decoded, and a frame the range covers in part is decoded from
    /// its start only as far as the range needs; a stream of one large frame (as the
    /// reference implementation writes) is decoded from its start up to the end of the
    /// range, streaming, without a buffer of the whole. Components of other formats'
    /// pipelines and legacy swapped data are decoded whole into a temporary buffer.
    /// Nothing but the frame index is cached.
    pub fn read_range(
        &self,
        object: usize,
        component: usize,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let ctx = self.ctx(obj, c);
        offset
            .checked_add(dst.len() as u64)
            .filter(|&e| e <= c.decoded_length)
            .ok_or_else(|| {
                err!(
                    InvalidArgument,
                    "range [{offset}, {offset} + {}) is outside the component's {} bytes",
                    dst.len(),
                    c.decoded_length
                )
            })
            .map_err(&ctx)?;
        if dst.is_empty() {
            return Ok(());
        }
        let range = offset as usize..offset as usize + dst.len();
        if let Some(buf) = self.cached(object, component) {
            dst.copy_from_slice(&buf.as_slice()[range]);
            return Ok(());
        }
        let index = match decode::has_frames(c) {
            true => Some(self.frame_index(object, component)?),
            false => None,
        };
        let source = self.source(obj, c)?;
        if decode::component_range(source, c, index.as_deref(), offset, dst).map_err(&ctx)? {
            return Ok(());
        }
        let all = self.read_to_vec(object, component)?;
        dst.copy_from_slice(&all[range]);
        Ok(())
    }

    /// Reads the stored (possibly compressed) bytes `[offset, offset + dst.len())` of a
    /// component's blob, exactly as the file holds them: no decoding, no steps. For
    /// copying a component without decoding it (`Writer::copy_object`) or for a loader
    /// that decodes itself.
    pub fn read_stored(
        &self,
        object: usize,
        component: usize,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        offset
            .checked_add(dst.len() as u64)
            .filter(|&e| e <= c.blob.length)
            .ok_or_else(|| {
                err!(
                    InvalidArgument,
                    "range [{offset}, {offset} + {}) is outside the component's {} stored bytes",
                    dst.len(),
                    c.blob.length
                )
            })
            .map_err(self.ctx(obj, c))?;
        self.source(obj, c)?
            .read_at(c.blob.offset + offset, dst)
            .map_err(self.ctx(obj, c))
    }

    /// Hands `sink` a component's decoded bytes in order, in pieces of `ZSTD_FRAME_SIZE`
    /// bytes (a multiple of every element size; the last piece shorter). Memory: one piece
    /// for raw components and zstd ones (read frame by frame through their index when
    /// range reads are cheap, else decoded as one stream from the start, plus the
    /// decoder's window); components of other formats' pipelines and legacy swapped data
    /// are decoded whole once and handed out from memory. A zstd component whose frame
    /// index can't be built (a seek table that lies) is refused with that error.
    pub fn for_each_piece(
        &self,
        object: usize,
        component: usize,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        const PIECE: usize = crate::codec::ZSTD_FRAME_SIZE;
        let (obj, c) = self.component(object, component)?;
        let length = c.decoded_length;
        if length == 0 {
            // Nothing to hand out, but an encoded empty component is still decoded (checked).
            return self.read_into(object, component, &mut []);
        }
        if decode::has_frames(c) && self.cached(object, component).is_none() {
            // The index first: a seek table that disagrees with the stream is a fault of
            // the component, reported here as it is by range reads.
            let index = self.frame_index(object, component)?;
            if !decode::range_reads_are_cheap(c, Some(&index)) {
                return decode::zstd_pieces(self.source(obj, c)?, &c.blob, PIECE, &mut sink)
                    .map_err(self.ctx(obj, c));
            }
        } else if !self.range_reads_are_cheap(object, component)? {
            let all = self.read_to_vec(object, component)?;
            return all.chunks(PIECE).try_for_each(sink);
        }
        let mut buf = zeroed_vec(length.min(PIECE as u64))?;
        let mut offset = 0u64;
        while offset < length {
            let n = (length - offset).min(buf.len() as u64) as usize;
            self.read_range(object, component, offset, &mut buf[..n])?;
            sink(&buf[..n])?;
            offset += n as u64;
        }
        Ok(())
    }

    /// True when `read_range` of a piece of this component costs about the piece, in every
    /// kind of source (mapped, pread, memory): raw components, components a view has
    /// cached, and zstd ones whose frame index has entries of at most `ZSTD_FRAME_SIZE`
    /// decoded bytes (this library's frames, with or without a seek table). Otherwise a
    /// range read decodes from the start of a large frame (or, for other formats'
    /// pipelines, the whole component), so a caller streaming a large component should use
    /// `for_each_piece`. Builds the frame index if needed (reads the seek table or frame
    /// headers); a component whose index can't be built is not cheap.
    pub fn range_reads_are_cheap(&self, object: usize, component: usize) -> Result<bool> {
        let (_, c) = self.component(object, component)?;
        if self.cached(object, component).is_some() {
            return Ok(true);
        }
        let index = match decode::has_frames(c) {
            true => self.frame_index(object, component).ok(),
            false => None,
        };
        Ok(decode::range_reads_are_cheap(c, index.as_deref()))
    }

    /// The frame index of a zstd component: where each frame's stored bytes and decoded
    /// bytes lie, for range reads and for loaders that fetch and decode frames themselves.
    /// Built on the first call from the seek table at the end of the stored bytes (which
    /// this library writes for every component of several frames), or, without one, by
    /// walking the frame and block headers (a few bytes per block, read with `pread` even
    /// from a mapped file; nothing is decoded); then cached, thread-safe. A seek table that
    /// disagrees with the component (sizes, counts, sums, reserved bits) is a `Format`
    /// error. Memory: at most 1 MiB per index (streams of more than 65,536 frames get
    /// entries of several frames each) and 64 MiB for all the indexes a reader caches;
    /// past that, each call builds an index of its own. `InvalidArgument` for a component
    /// that is not zstd frames of its bytes (raw, another format's pipeline, legacy
    /// swapped data).
    pub fn frame_index(&self, object: usize, component: usize) -> Result<Arc<FrameIndex>> {
        let (obj, c) = self.component(object, component)?;
        let cache = self.caches.cell(&self.model.objects, object, component);
        if let Some(index) = cache.index.get() {
            return Ok(index.clone());
        }
        let _guard = cache.lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(index) = cache.index.get() {
            return Ok(index.clone());
        }
        let source = self.source(obj, c)?;
        let index = Arc::new(decode::frame_index(source, c).map_err(self.ctx(obj, c))?);
        let size = index.heap_bytes();
        let reserved = self
            .index_total
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |total| {
                total.checked_add(size).filter(|&t| t <= INDEX_CACHE_BUDGET)
            });
        if reserved.is_ok() {
            let _ = cache.index.set(index.clone());
        }
        Ok(index)
    }

    /// Reads a component's values as `dtype` (see `convert::plan`): the stored bytes when
    /// `dtype` is the storage dtype, ggml blocks dequantized to f32, f16 or bf16, other
    /// elements converted (vectorized; both on several threads when large). `dst` must be
    /// exactly the value count x `dtype.size()` bytes (for blocks, the object's element
    /// count). Borrows the mapped or cached bytes when it can, else decodes into a
    /// temporary buffer. A refused call leaves `dst` untouched.
    pub fn read_as(
        &self,
        object: usize,
        component: usize,
        dtype: DType,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let ctx = self.ctx(obj, c);
        let (plan, total) = self.plan(obj, c, dtype).map_err(&ctx)?;
        let needed = total
            .checked_mul(dtype.size() as u64)
            .ok_or_else(|| ctx(err!(Limit, "the converted size overflows")))?;
        check_dst(needed, dst.len()).map_err(&ctx)?;
        if matches!(plan, Plan::Copy) {
            return self.read_into(object, component, dst);
        }
        self.convert_values(object, component, plan, dtype, 0, dst)
    }

    /// `read_as` of the values `[first, first + dst.len() / dtype.size())`: a slice of a
    /// tensor (e.g. the rows a tensor-parallel rank needs) read converted or dequantized.
    /// For ggml blocks the range must start and end on block boundaries (whole rows
    /// always do). Reads only the bytes the range needs (for zstd, only the frames that
    /// hold them). `InvalidArgument` for a range outside the values, not block-aligned,
    /// or a `dst` that is not whole values.
    pub fn read_as_range(
        &self,
        object: usize,
        component: usize,
        dtype: DType,
        first: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let ctx = self.ctx(obj, c);
        let (plan, total) = self.plan(obj, c, dtype).map_err(&ctx)?;
        let width = dtype.size();
        if !dst.len().is_multiple_of(width) {
            return Err(ctx(err!(
                InvalidArgument,
                "a buffer of {} bytes is not whole {dtype} values",
                dst.len()
            )));
        }
        let count = (dst.len() / width) as u64;
        if first.checked_add(count).is_none_or(|end| end > total) {
            return Err(ctx(err!(
                InvalidArgument,
                "values [{first}, {first} + {count}) are outside the component's {total}"
            )));
        }
        if let Plan::Dequantize(t) = plan
            && !(first.is_multiple_of(t.block_size()) && count.is_multiple_of(t.block_size()))
        {
            return Err(ctx(err!(
                InvalidArgument,
                "values [{first}, {first} + {count}) don't start and end on {} block \
                 boundaries (multiples of {} values)",
                t.name(),
                t.block_size()
            )));
        }
        if count == 0 {
            return Ok(());
        }
        self.convert_values(object, component, plan, dtype, first, dst)
    }

    /// The conversion plan of a component read as `dtype`, and how many values it holds
    /// (for blocks, the object's element count, checked against the bytes).
    fn plan(&self, obj: &Object, c: &Component, dtype: DType) -> Result<(Plan, u64)> {
        let plan = crate::convert::plan(c.dtype, c.logical_type(), dtype)?;
        let total = match plan {
            // Packed sub-byte floats are one stream of values: blocks may span rows.
            Plan::Dequantize(t) if crate::quant::packed_of(c.dtype, c.logical_type()).is_some() => {
                c.decoded_length / t.type_size() * t.block_size()
            }
            Plan::Dequantize(t) => {
                let (rows, row_size) = crate::quant::rows(t, obj.shape(), c.decoded_length)?;
                rows * (row_size / t.type_size() * t.block_size())
            }
            Plan::Copy | Plan::Elements => c.element_count(),
        };
        Ok((plan, total))
    }

    /// Values `[first, first + dst.len() / to.size())` of a component, converted by `plan`
    /// (checked, with the range, by the caller).
    fn convert_values(
        &self,
        object: usize,
        component: usize,
        plan: Plan,
        to: DType,
        first: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let count = (dst.len() / to.size()) as u64;
        // Source bytes per group of values, and values per group.
        let (unit, per) = match plan {
            Plan::Dequantize(t) => (t.type_size(), t.block_size()),
            Plan::Copy | Plan::Elements => (c.dtype.size() as u64, 1),
        };
        let range = first / per * unit..(first + count) / per * unit;
        let temp;
        let src: &[u8] = match self.borrowed(object, component, c) {
            Some(all) => &all[range.start as usize..range.end as usize],
            None => {
                temp = {
                    let mut v = zeroed_vec(range.end - range.start).map_err(self.ctx(obj, c))?;
                    self.read_range(object, component, range.start, &mut v)?;
                    v
                };
                &temp
            }
        };
        match plan {
            Plan::Copy => dst.copy_from_slice(src),
            Plan::Elements => crate::convert::convert_with(
                c.dtype,
                c.logical_type(),
                src,
                to,
                dst,
                crate::pool::threads,
            ),
            Plan::Dequantize(t) => {
                crate::convert::dequantize(t, src, to, dst, crate::pool::threads)
                    .map_err(self.ctx(obj, c))?
            }
        }
        Ok(())
    }

    /// The decoded bytes when they can be borrowed: mapped raw data, or a cached decode.
    pub(crate) fn borrowed(&self, object: usize, component: usize, c: &Component) -> Option<&[u8]> {
        if c.is_plain()
            && let Ok(source) = self.files.part(c.blob.file)
            && let Some(data) = source.stored(c.blob.offset, c.blob.length)
        {
            return Some(data);
        }
        self.cached(object, component).map(AlignedBuf::as_slice)
    }
}
