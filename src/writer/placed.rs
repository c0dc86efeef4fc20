//! Tensors declared before their data (`Writer::declare`): a safetensors or GGUF file
//! written in one pass.
//!
//! Both formats list every tensor's place in a header before the data, so a writer that
//! doesn't know the tensors yet spools them and assembles the file at `finish`
//! (`foreign`): every byte written twice. A writer told the tensors first (name, format,
//! shape, dtype; and for GGUF the key/values, set before the first tensor's data) writes
//! the header when the first tensor's data comes, and each tensor's bytes straight to
//! their place: byte for byte the file the spool would have made, in one pass.
//!
//! Tensors may then come in any order. One added where the file has it next (at the
//! cursor: in `declared_order`, or after tensors already written past it) goes through
//! the writer's output like any data: buffered, with the durable file's writeback as it
//! goes (`output`). One added elsewhere is written to its place with `pwrite`: bytes of
//! small ones gathered in a buffer of a few MiB and written with `pwritev` per run of
//! places that meet, large ones at once. Either way each byte is written once.
//!
//! A zTensor writer takes declarations too (its manifest comes last, so they change
//! nothing in its file): they are checked as a safetensors or GGUF writer checks them, so
//! one program can write any format the same way, and `declared_order` gives zTensor v2's
//! canonical order (by name), in which its blobs need no reordering at `finish`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{IoSlice, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use super::foreign::{self, Layout, OutputFormat, TensorInfo, ggml_block_type};
use super::{FileVersion, Writer, as_argument, check_shape};
use crate::dtype::{DType, check_logical_type, dense_byte_size, numel};
use crate::error::{Error, Result, bail, err};
use crate::limits::Limits;
use crate::model::check_name_text;

/// The tensors declared, and once the header is written, where each goes.
pub(super) struct Declared {
    tensors: Vec<Decl>,
    by_name: HashMap<String, usize>,
    /// How many have been written (their objects ended).
    written: usize,
    /// How many were declared with their bytes (`declare_data`).
    deferred: usize,
    /// safetensors and GGUF, from the first tensor's data on: the places and the cursor.
    plan: Option<Box<Plan>>,
    /// The declared tensor whose object is open.
    current: Option<Current>,
}

/// One declared tensor.
struct Decl {
    name: String,
    format: String,
    shape: Box<[u64]>,
    dtype: DType,
    logical: Option<String>,
    /// Its bytes.
    length: u64,
    written: bool,
    /// Its bytes given with the declaration, written at `finish` (`declare_data`).
    data: Option<Deferred>,
}

/// The caller's bytes of a tensor declared with them: read, never written, and only
/// until `finish` returns (the caller keeps them valid and unchanged until then:
/// `Writer::declare_data`'s contract). Whichever thread uses the writer reads them.
struct Deferred {
    ptr: *const u8,
    len: usize,
}

// SAFETY: a read-only view of the caller's bytes, which `declare_data`'s contract keeps
// valid until `finish`; the writer that holds it is used by one thread at a time.
unsafe impl Send for Deferred {}
// SAFETY: as for Send: shared access only reads the caller's bytes, which nothing
// changes until `finish`.
unsafe impl Sync for Deferred {}

impl Deferred {
    fn bytes(&self) -> &[u8] {
        match self.len {
            0 => &[],
            // SAFETY: `declare_data`'s contract: `len` readable bytes at `ptr`, valid and
            // unchanged until `finish` returns.
            n => unsafe { std::slice::from_raw_parts(self.ptr, n) },
        }
    }
}

impl Decl {
    fn info(&self) -> TensorInfo<'_> {
        TensorInfo {
            name: &self.name,
            format: &self.format,
            shape: &self.shape,
            dtype: self.dtype,
            logical: self.logical.as_deref(),
            length: self.length,
        }
    }
}

/// The tensor being written.
struct Current {
    decl: usize,
    /// Its bytes go through the output at the cursor (else to its place with `pwrite`).
    at_cursor: bool,
    /// Its bytes so far.
    done: u64,
}

/// Where a safetensors or GGUF file's declared tensors go, and how far the cursor (the
/// output's position) has come.
struct Plan {
    /// The file offset of each declared tensor's bytes.
    places: Vec<u64>,
    /// The declared tensors in the file's order, and each one's index in it.
    order: Vec<usize>,
    rank: Vec<usize>,
    /// Where the header ends (the first tensor's place when it is first).
    header_end: u64,
    /// GGUF's alignment (1 for safetensors).
    alignment: u64,
    /// The file's size.
    end: u64,
    /// The first tensor in file order not wholly below the cursor.
    next: usize,
    /// The first tensor in file order, from `next` on, not yet written: the one that can
    /// go at the cursor (the cursor skipping those written elsewhere before it).
    free: usize,
    /// A second handle to the file: `pwrite`, the cursor's seek, the final size.
    file: File,
    scatter: Scatter,
}

impl Plan {
    /// Where the bytes of the tensor at file-order index `k` end.
    fn end_of(&self, k: usize, tensors: &[Decl]) -> u64 {
        let d = self.order[k];
        self.places[d] + tensors[d].length
    }

    /// `free` moved past the tensors written elsewhere.
    fn advance(&mut self, tensors: &[Decl]) {
        self.free = self.free.max(self.next);
        while self.free < self.order.len() && tensors[self.order[self.free]].written {
            self.free += 1;
        }
    }
}

/// Bytes bound for places away from the cursor: small pieces gathered, then written with
/// one `pwritev` per run of places that meet; pieces of `DIRECT` bytes or more written at
/// once. Places never overlap (a tensor added again after it was abandoned finds the
/// buffer flushed), so the order they reach the file in doesn't matter.
#[derive(Default)]
struct Scatter {
    buf: Vec<u8>,
    /// (file offset, start in `buf`, length) of each piece.
    pieces: Vec<(u64, usize, usize)>,
}

impl Scatter {
    /// What the buffer holds at most.
    const BYTES: usize = 4 << 20;
    /// Pieces at most (each is at least a byte; this bounds their list).
    const PIECES: usize = 1 << 16;
    /// Pieces this large skip the buffer.
    const DIRECT: usize = 1 << 20;

    fn put(&mut self, file: &File, at: u64, data: &[u8]) -> std::io::Result<()> {
        if data.len() >= Self::DIRECT {
            return file.write_all_at(data, at);
        }
        if self.buf.len() + data.len() > Self::BYTES || self.pieces.len() >= Self::PIECES {
            self.flush(file)?;
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(Self::BYTES);
        }
        match self.pieces.last_mut() {
            // The next bytes of the same place (a tensor streamed in chunks).
            Some(p) if p.0 + p.2 as u64 == at => p.2 += data.len(),
            _ => self.pieces.push((at, self.buf.len(), data.len())),
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self, file: &File) -> std::io::Result<()> {
        self.pieces.sort_unstable_by_key(|p| p.0);
        let mut i = 0;
        while i < self.pieces.len() {
            let at = self.pieces[i].0;
            let mut end = at;
            let mut j = i;
            // IOV_MAX is 1024 on Linux.
            while j < self.pieces.len() && self.pieces[j].0 == end && j - i < 1024 {
                end += self.pieces[j].2 as u64;
                j += 1;
            }
            let slices: Vec<IoSlice<'_>> = (self.pieces[i..j].iter())
                .map(|&(_, start, len)| IoSlice::new(&self.buf[start..start + len]))
                .collect();
            write_all_vectored_at(file, &slices, at)?;
            i = j;
        }
        self.buf.clear();
        self.pieces.clear();
        Ok(())
    }
}

/// `pwritev` of every slice at `at`, continued after a short write.
fn write_all_vectored_at(file: &File, slices: &[IoSlice<'_>], at: u64) -> std::io::Result<()> {
    let total: usize = slices.iter().map(|s| s.len()).sum();
    // SAFETY: IoSlice is ABI-compatible with iovec; the slices outlive the call.
    let n = unsafe {
        libc::pwritev(
            file.as_raw_fd(),
            slices.as_ptr().cast(),
            slices.len() as libc::c_int,
            at as libc::off_t,
        )
    };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let mut done = n.max(0) as usize;
    if done == total {
        return Ok(());
    }
    // The rest, slice by slice.
    let mut offset = 0usize;
    for s in slices {
        let (start, end) = (offset, offset + s.len());
        offset = end;
        if end <= done {
            continue;
        }
        let skip = done.saturating_sub(start);
        file.write_all_at(&s[skip..], at + (start + skip) as u64)?;
        done = end;
    }
    Ok(())
}

impl<W: Write> Writer<W> {
    /// Declares a dense tensor before any data (see `declare_object`).
    pub fn declare(
        &mut self,
        name: &str,
        dtype: DType,
        logical_type: Option<&str>,
        shape: &[u64],
    ) -> Result<()> {
        self.declare_object(name, "dense", shape, dtype, logical_type)
    }

    /// Declares a tensor before any data: an object of `format` ("dense", or a ggml block
    /// format such as "ggml_q4_k" or "gguf.q4_k/1", whose data is u8 of logical type
    /// `ggml_q4_k`; None for `logical_type` says so) and `shape`, with one "data"
    /// component of `dtype` and `logical_type`. A writer told every tensor before the
    /// first one's data writes safetensors and GGUF in one pass (see `placed`): the
    /// header when the first tensor's data comes, then each tensor's bytes straight to
    /// their place, in whatever order they are added (`declared_order` is the order that
    /// writes the file front to back). The tensors added must then be exactly those
    /// declared, each with its declared format, shape, dtype and size; `finish` refuses
    /// a file with one missing. GGUF key/values and safetensors' `__metadata__` must be
    /// set before the first tensor's data (the header holds them). A zTensor writer takes
    /// declarations too, and checks them the same way. Not for sets (their shards are
    /// planned as tensors come) and not after the first object has begun.
    pub fn declare_object(
        &mut self,
        name: &str,
        format: &str,
        shape: &[u64],
        dtype: DType,
        logical_type: Option<&str>,
    ) -> Result<()> {
        let decl = self.declaration(name, format, shape, dtype, logical_type)?;
        self.push_declaration(decl);
        Ok(())
    }

    /// `declare_object` with the tensor's bytes, which are not copied: they are written
    /// at `finish` (in the file's order, after the tensors added), so the whole file is
    /// written by `finish` in one pass. The tensor is then not added otherwise. What a
    /// `save_file` of tensors already in memory needs: one call per tensor, then `finish`.
    /// `data.len()` must be the declared size; bool bytes must be 0 or 1.
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until `finish` returns or the writer is
    /// dropped: the writer keeps its address, not a copy.
    pub unsafe fn declare_data(
        &mut self,
        name: &str,
        format: &str,
        shape: &[u64],
        dtype: DType,
        logical_type: Option<&str>,
        data: &[u8],
    ) -> Result<()> {
        let mut decl = self.declaration(name, format, shape, dtype, logical_type)?;
        if data.len() as u64 != decl.length {
            bail!(
                InvalidArgument,
                "tensor '{name}': {} bytes given, but shape {shape:?} of {dtype}{} needs {}",
                data.len(),
                decl.logical
                    .as_deref()
                    .map(|t| format!(" ({t})"))
                    .unwrap_or_default(),
                decl.length
            );
        }
        if dtype == DType::Bool
            && let Some(i) = data.iter().position(|&b| b > 1)
        {
            bail!(
                InvalidArgument,
                "tensor '{name}': bool byte {} at index {i} is neither 0 nor 1",
                data[i]
            );
        }
        if decl.logical.as_deref() == Some("f4_e2m1")
            && numel(shape).is_some_and(|n| n % 2 == 1)
            && data.last().is_some_and(|b| b & 0xf0 != 0)
        {
            bail!(
                InvalidArgument,
                "tensor '{name}': the unused high nibble of the last byte of an odd number of \
                 f4_e2m1 values must be 0"
            );
        }
        decl.data = Some(Deferred {
            ptr: data.as_ptr(),
            len: data.len(),
        });
        self.push_declaration(decl);
        Ok(())
    }

    fn push_declaration(&mut self, decl: Decl) {
        let d = self.declared.get_or_insert_with(|| {
            Box::new(Declared {
                tensors: Vec::new(),
                by_name: HashMap::new(),
                written: 0,
                deferred: 0,
                plan: None,
                current: None,
            })
        });
        if d.tensors.len() == d.tensors.capacity() {
            // Grown in steps that keep the rehashing of many declarations rare.
            let more = d.tensors.len().max(64);
            d.tensors.reserve(more);
            d.by_name.reserve(more);
        }
        d.deferred += usize::from(decl.data.is_some());
        d.by_name.insert(decl.name.clone(), d.tensors.len());
        d.tensors.push(decl);
    }

    /// A declaration checked (see `declare_object`).
    fn declaration(
        &mut self,
        name: &str,
        format: &str,
        shape: &[u64],
        dtype: DType,
        logical_type: Option<&str>,
    ) -> Result<Decl> {
        self.check_usable()?;
        if self.set.is_some() {
            bail!(
                State,
                "a set's shards are planned as its tensors come: declarations are for single \
                 files"
            );
        }
        if !self.objects.is_empty()
            || self.open_object
            || self.declared.as_ref().is_some_and(|d| d.plan.is_some())
        {
            bail!(
                State,
                "tensors are declared before the first one's data: '{name}' comes too late"
            );
        }
        check_name_text("object", name, Limits::default().max_name_length).map_err(as_argument)?;
        if name.as_bytes().contains(&0) {
            bail!(InvalidArgument, "object name {name:?} contains a NUL byte");
        }
        if self
            .declared
            .as_ref()
            .is_some_and(|d| d.by_name.contains_key(name))
        {
            bail!(
                InvalidArgument,
                "a tensor named '{name}' was already declared"
            );
        }
        // What the format can't hold, in its own words first.
        foreign::check_object(self.format, name, format, shape)?;
        let block = ggml_block_type(format);
        if format != "dense" && block.is_none() {
            bail!(
                InvalidArgument,
                "tensor '{name}': a declaration is of a dense tensor or a ggml block object \
                 (one 'data' component), not {format}"
            );
        }
        // A block object's data type is its own: None says it.
        let logical_type = match (block, logical_type) {
            (Some(bt), None) => Some(bt.logical_type()),
            (_, t) => t,
        };
        check_shape(shape)?;
        check_logical_type(dtype, logical_type).map_err(as_argument)?;
        if self.format.spools() {
            foreign::check_types(self.format, name, format, dtype, logical_type)?;
            foreign::check_whole_bytes(self.format, name, logical_type, shape)?;
        } else if let Some(bt) = block
            && (dtype != DType::U8 || logical_type != Some(bt.logical_type()))
        {
            bail!(
                InvalidArgument,
                "tensor '{name}': a {format} object's data is u8 of logical type '{}'",
                bt.logical_type()
            );
        }
        let length = match block {
            Some(bt) => numel(shape).and_then(|n| bt.byte_size(n)),
            None => dense_byte_size(shape, dtype, logical_type),
        };
        let Some(length) = length else {
            bail!(
                InvalidArgument,
                "tensor '{name}': the size of shape {shape:?} of {dtype}{} is not known (it \
                 overflows, or is not whole {})",
                logical_type.map(|t| format!(" ({t})")).unwrap_or_default(),
                match block {
                    Some(bt) => format!("blocks of {} values", bt.block_size()),
                    None => "elements".into(),
                }
            );
        };
        Ok(Decl {
            name: name.to_owned(),
            format: format.to_owned(),
            shape: shape.into(),
            dtype,
            logical: logical_type.map(str::to_owned),
            length,
            written: false,
            data: None,
        })
    }

    /// The declared tensors in the order the file holds them, as indices into the
    /// declarations (0 for the first declared): safetensors' order (its dtypes', largest
    /// first, then name), GGUF's (as declared), zTensor v2's canonical order (by name),
    /// v1.2's (as declared). Adding them in this order writes the file front to back.
    pub fn declared_order(&self) -> Vec<usize> {
        let Some(d) = &self.declared else {
            return Vec::new();
        };
        if let Some(plan) = &d.plan {
            return plan.order.clone();
        }
        match (self.format, self.version) {
            (OutputFormat::Ztensor, FileVersion::V2) => {
                let mut order: Vec<usize> = (0..d.tensors.len()).collect();
                order.sort_by(|&a, &b| {
                    d.tensors[a]
                        .name
                        .as_bytes()
                        .cmp(d.tensors[b].name.as_bytes())
                });
                order
            }
            (f, _) if f.spools() => {
                let infos: Vec<TensorInfo<'_>> = d.tensors.iter().map(Decl::info).collect();
                // Every declaration was checked for the format: the order exists.
                foreign::file_order(f, &infos).unwrap_or_default()
            }
            _ => (0..d.tensors.len()).collect(),
        }
    }

    /// Ok while the file's attributes can change: always, unless a safetensors or GGUF
    /// header holding them was written (at the first declared tensor's data).
    pub(super) fn check_header_open(&self) -> Result<()> {
        if self.declared.as_ref().is_some_and(|d| d.plan.is_some()) {
            bail!(
                State,
                "the {} header, which holds the file's attributes, was written at the first \
                 tensor's data: set them before the first tensor's data",
                self.format.name()
            );
        }
        Ok(())
    }

    /// How many tensors were declared.
    pub fn declared_count(&self) -> usize {
        self.declared.as_ref().map_or(0, |d| d.tensors.len())
    }

    /// Whether this writer writes declared tensors to their places (a safetensors or GGUF
    /// writer told its tensors).
    pub(super) fn placed(&self) -> bool {
        self.format.spools() && self.declared.is_some()
    }

    /// When object `name` begins on a writer with declarations: it must be one of them,
    /// not yet written, of the declared format and shape. A safetensors or GGUF writer
    /// writes its header now if this is the first.
    pub(super) fn declared_begin(&mut self, name: &str, format: &str, shape: &[u64]) -> Result<()> {
        let Some(d) = &mut self.declared else {
            return Ok(());
        };
        let Some(&i) = d.by_name.get(name) else {
            bail!(
                InvalidArgument,
                "'{name}' was not declared: a writer told its tensors takes only those"
            );
        };
        let t = &d.tensors[i];
        if t.data.is_some() {
            bail!(
                InvalidArgument,
                "'{name}' was declared with its data, which `finish` writes: it is not added \
                 again"
            );
        }
        if t.format != format || *t.shape != *shape {
            bail!(
                InvalidArgument,
                "'{name}' was declared {} of shape {:?}, not {format} of shape {shape:?}",
                t.format,
                t.shape
            );
        }
        if self.format.spools() && d.plan.is_none() {
            self.write_declared_header()?;
        }
        let d = self.declared.as_mut().expect("declarations");
        d.current = Some(Current {
            decl: i,
            at_cursor: false,
            done: 0,
        });
        Ok(())
    }

    /// The header of a safetensors or GGUF file of the declared tensors, written at the
    /// start; the places of their bytes are known from now on.
    fn write_declared_header(&mut self) -> Result<()> {
        let d = self.declared.as_ref().expect("declarations");
        let infos: Vec<TensorInfo<'_>> = d.tensors.iter().map(Decl::info).collect();
        let Layout {
            header,
            places,
            order,
            alignment,
            end,
        } = foreign::layout(self.format, &infos, self.file_attributes.as_ref(), None)?;
        let file = self
            .spool
            .take()
            .ok_or_else(|| err!(Internal, "no second handle to the file"))?;
        let mut rank = vec![0; order.len()];
        for (k, &i) in order.iter().enumerate() {
            rank[i] = k;
        }
        if self.output.pos != 0 {
            bail!(
                Internal,
                "the header goes at the start, not at {}",
                self.output.pos
            );
        }
        self.emit(&header)?;
        let plan = Plan {
            places,
            order,
            rank,
            header_end: header.len() as u64,
            alignment,
            end,
            next: 0,
            free: 0,
            file,
            scatter: Scatter::default(),
        };
        self.declared.as_mut().expect("declarations").plan = Some(Box::new(plan));
        Ok(())
    }

    /// When the data component of a declared object begins: its dtype and logical type
    /// must be the declared ones. Returns where its bytes go in a safetensors or GGUF
    /// file (the cursor moved there when it goes at the cursor), None for zTensor.
    pub(super) fn declared_component(
        &mut self,
        role: &str,
        dtype: DType,
        logical: Option<&str>,
    ) -> Result<Option<u64>> {
        let Some(d) = &mut self.declared else {
            return Ok(None);
        };
        let current = d.current.as_ref().expect("a declared object is open");
        let t = &d.tensors[current.decl];
        let obj = self.objects.last().expect("an open object");
        if role != "data" || !obj.components().is_empty() {
            bail!(
                InvalidArgument,
                "'{}': a declared tensor is one 'data' component, not '{role}'",
                t.name
            );
        }
        if t.dtype != dtype || t.logical.as_deref() != logical {
            bail!(
                InvalidArgument,
                "'{}' was declared {}{}, not {dtype}{}",
                t.name,
                t.dtype,
                t.logical
                    .as_deref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default(),
                logical.map(|l| format!(" ({l})")).unwrap_or_default()
            );
        }
        let i = current.decl;
        if d.plan.is_none() {
            return Ok(None);
        }
        self.place_declared(i).map(Some)
    }

    /// Where declared tensor `i`'s bytes go, which becomes the tensor being written: at
    /// the cursor when it is the next there (the cursor moved to it: over padding, or
    /// past tensors written elsewhere), else elsewhere.
    fn place_declared(&mut self, i: usize) -> Result<u64> {
        let d = self.declared.as_mut().expect("declarations");
        let plan = d.plan.as_mut().expect("a plan");
        d.current = Some(Current {
            decl: i,
            at_cursor: false,
            done: 0,
        });
        plan.advance(&d.tensors);
        let k = plan.rank[i];
        let place = plan.places[i];
        if k != plan.free {
            // Elsewhere: written to its place.
            return Ok(place);
        }
        let pos = self.output.pos;
        let previous_end = match plan.next {
            0 => plan.header_end,
            n => plan.end_of(n - 1, &d.tensors),
        };
        let pad = place - pos;
        // Only padding lies between (the previous tensor's end and this one's place):
        // zeros, as gguf-py writes them. Else tensors written elsewhere lie between: the
        // cursor skips them.
        let zeros = k == plan.next && pos == previous_end && pad < plan.alignment;
        d.current.as_mut().expect("open").at_cursor = true;
        if pad == 0 {
            return Ok(place);
        }
        if zeros {
            const ZEROS: [u8; 4096] = [0; 4096];
            let mut left = pad;
            while left > 0 {
                let n = left.min(ZEROS.len() as u64) as usize;
                self.emit(&ZEROS[..n])?;
                left -= n as u64;
            }
        } else {
            self.seek_cursor(place)?;
        }
        Ok(place)
    }

    /// At `finish`: the tensors declared with their bytes are written, in the file's
    /// order (a zTensor writer adds them as objects).
    pub(super) fn write_deferred(&mut self) -> Result<()> {
        let Some(d) = &self.declared else {
            return Ok(());
        };
        if !(d.tensors.iter()).any(|t| t.data.is_some() && !t.written) {
            return Ok(());
        }
        if !self.placed() {
            for i in self.declared_order() {
                let d = self.declared.as_mut().expect("declarations");
                let t = &mut d.tensors[i];
                let Some(data) = t.data.take() else { continue };
                let (name, dtype, shape, logical) =
                    (t.name.clone(), t.dtype, t.shape.clone(), t.logical.clone());
                let r = self.add_typed(
                    &name,
                    dtype,
                    logical.as_deref(),
                    &shape,
                    data.bytes(),
                    &super::WriteOptions::default(),
                );
                let d = self.declared.as_mut().expect("declarations");
                d.tensors[i].data = Some(data);
                r?;
            }
            return Ok(());
        }
        if self.declared.as_ref().is_some_and(|d| d.plan.is_none()) {
            self.write_declared_header()?;
        }
        let order = self.declared_order();
        for i in order {
            let d = self.declared.as_mut().expect("declarations");
            let t = &mut d.tensors[i];
            if t.written {
                continue;
            }
            let Some(data) = t.data.take() else { continue };
            self.place_declared(i)?;
            let r = self.emit_data(data.bytes());
            let d = self.declared.as_mut().expect("declarations");
            d.tensors[i].data = Some(data);
            r?;
            self.declared_ended();
        }
        Ok(())
    }

    /// Moves the cursor forward to `to`: the output flushed, then the file's offset (which
    /// the output's handle shares) moved.
    fn seek_cursor(&mut self, to: u64) -> Result<()> {
        let label = &self.output.label;
        let r = self
            .output
            .out
            .flush()
            .map_err(|e| Error::io(format_args!("{label}: flushing"), e));
        let r = r.and_then(|()| {
            let plan = self
                .declared
                .as_mut()
                .and_then(|d| d.plan.as_mut())
                .expect("a plan");
            // SAFETY: our descriptor; lseek moves its offset only.
            let at =
                unsafe { libc::lseek(plan.file.as_raw_fd(), to as libc::off_t, libc::SEEK_SET) };
            if at < 0 {
                return Err(Error::io(
                    format_args!("{label}: seeking to {to}"),
                    std::io::Error::last_os_error(),
                ));
            }
            Ok(())
        });
        if let Err(e) = &r {
            self.output.failed = Some(e.message().to_owned());
        }
        let r = self.after_io(r);
        if r.is_ok() {
            self.output.pos = to;
        }
        r
    }

    /// Before `len` more bytes of the declared tensor being written: they must fit in
    /// its declared size (else they would run into the next tensor's place).
    pub(super) fn declared_room(&self, done: u64, len: u64) -> Result<()> {
        let Some(d) = &self.declared else {
            return Ok(());
        };
        let c = d.current.as_ref().expect("a declared object is open");
        let t = &d.tensors[c.decl];
        if done.saturating_add(len) > t.length {
            bail!(
                InvalidArgument,
                "'{}' was declared {} bytes: {len} more after {done} are too many",
                t.name,
                t.length,
            );
        }
        Ok(())
    }

    /// Writes bytes of a component's data: at the cursor, or to the declared tensor's
    /// place elsewhere.
    pub(super) fn emit_data(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(d) = &mut self.declared else {
            return self.emit(bytes);
        };
        let c = d.current.as_mut().expect("a declared object is open");
        let done = c.done;
        c.done += bytes.len() as u64;
        let at_cursor = c.at_cursor;
        let decl = c.decl;
        let Some(plan) = &mut d.plan else {
            return self.emit(bytes);
        };
        if at_cursor {
            return self.emit(bytes);
        }
        let at = plan.places[decl] + done;
        let r = plan.scatter.put(&plan.file, at, bytes).map_err(|e| {
            Error::io(
                format_args!(
                    "{}: writing {} bytes at offset {at}",
                    self.output.label,
                    bytes.len()
                ),
                e,
            )
        });
        if let Err(e) = &r {
            self.output.failed = Some(e.message().to_owned());
        }
        self.after_io(r)
    }

    /// The declared size of the tensor being written, which its data must fill.
    pub(super) fn declared_end(&self, decoded: u64) -> Result<()> {
        let Some(d) = &self.declared else {
            return Ok(());
        };
        let c = d.current.as_ref().expect("a declared object is open");
        let t = &d.tensors[c.decl];
        if decoded != t.length {
            bail!(
                InvalidArgument,
                "'{}' was declared {} bytes, but {decoded} were written",
                t.name,
                t.length
            );
        }
        Ok(())
    }

    /// The open declared object was accepted: it is written.
    pub(super) fn declared_ended(&mut self) {
        let Some(d) = &mut self.declared else {
            return;
        };
        let Some(c) = d.current.take() else {
            return;
        };
        d.tensors[c.decl].written = true;
        d.written += 1;
        if let Some(plan) = &mut d.plan
            && c.at_cursor
        {
            plan.next = plan.rank[c.decl] + 1;
        }
    }

    /// The open declared object was dropped: it can be added again. Its bytes written so
    /// far are flushed (so that a second try's reach the file after them), and the
    /// cursor, when it was written there, goes on after its place.
    pub(super) fn declared_abandoned(&mut self) {
        let Some(d) = &mut self.declared else {
            return;
        };
        let Some(c) = d.current.take() else {
            return;
        };
        let Some(plan) = &mut d.plan else {
            return;
        };
        let scattered = plan.scatter.flush(&plan.file);
        if c.at_cursor {
            plan.next = plan.rank[c.decl] + 1;
        }
        let flushed = self.output.out.flush();
        if let Err(e) = scattered.and(flushed) {
            let e = Error::io(format_args!("{}: flushing", self.output.label), e);
            self.output.failed = Some(e.message().to_owned());
            let _ = self.after_io::<()>(Err(e));
        }
    }

    /// Before `finish`: every declared tensor must have been written (the header lists
    /// it).
    pub(super) fn check_declared_written(&self) -> Result<()> {
        let Some(d) = &self.declared else {
            return Ok(());
        };
        // Those declared with their data are written by `finish`.
        if let Some(missing) = (d.tensors.iter()).find(|t| !t.written && t.data.is_none()) {
            bail!(
                State,
                "'{}' was declared but not written ({} of {} declared tensors were)",
                missing.name,
                d.written + d.deferred,
                d.tensors.len()
            );
        }
        Ok(())
    }

    /// `finish` of a safetensors or GGUF file written to its places: the header is
    /// written now if no tensor was, the gathered bytes go out and the file gets its size
    /// (GGUF's padding after the last tensor).
    pub(super) fn placed_finish(&mut self) -> Result<()> {
        let d = self.declared.as_ref().expect("declarations");
        if d.plan.is_none() {
            self.write_declared_header()?;
        }
        let label = &self.output.label;
        let plan = self
            .declared
            .as_mut()
            .and_then(|d| d.plan.as_mut())
            .expect("a plan");
        let end = plan.end;
        let out = &mut self.output.out;
        let r = (|| {
            plan.scatter.flush(&plan.file)?;
            out.flush()?;
            plan.file.set_len(end)
        })()
        .map_err(|e| Error::io(format_args!("{label}: finishing"), e));
        if let Err(e) = &r {
            self.output.failed = Some(e.message().to_owned());
        }
        self.after_io(r)?;
        self.output.pos = end;
        Ok(())
    }
}
