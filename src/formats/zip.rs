//! The zip archives PyTorch checkpoints and NumPy `.npz` files are: a small bounded reader
//! of what those writers produce. The central directory (found through the end record,
//! zip64 included: a checkpoint over 4 GiB has one) lists the entries; each entry's data
//! starts after its local header. Stored entries are read in place (zero-copy); deflated
//! ones (`savez_compressed`) are inflated by the `Inflate` step, with their CRC-32
//! checked. Encrypted entries, other compression methods, multi-disk archives, entries
//! whose data reaches into the central directory and archives that name an entry twice
//! are refused.
//!
//! This module knows archives, not what is in them: the PyTorch and NumPy readers
//! (`pytorch`, `npy`) are above it and use it; `formats::parse_zip` tells them apart.
//! What an entry may inflate to is bounded by its caller (`contents` takes the most bytes
//! the format can need); `Inflate` makes exactly the size the archive declares (a stream
//! that makes more is refused after one byte too many) and, for a range of an entry,
//! holds only that range.
//!
//! Written here instead of taking the `zip` crate: the part needed is ~300 lines, the
//! crate brings several compression back ends and their build time, and a reader of
//! hostile files wants every count bounded before it allocates, which is simplest when
//! the loop is ours. Deflate itself is `miniz_oxide` (pure Rust, no build script).

use std::sync::Arc;

use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};
use miniz_oxide::inflate::stream::{InflateState, inflate};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

use crate::error::{Result, bail, err};
use crate::formats::ReadAt;
use crate::limits::Limits;
use crate::model::{Blob, Encoding, FormatStep, Step};

const LOCAL: &[u8; 4] = b"PK\x03\x04";
const CENTRAL: &[u8; 4] = b"PK\x01\x02";
const END: &[u8; 4] = b"PK\x05\x06";
const END64: &[u8; 4] = b"PK\x06\x06";
const LOCATOR64: &[u8; 4] = b"PK\x06\x07";

/// Bytes of inflated output handled at a time where a whole entry is not wanted (the part
/// of an entry before and after a range, an entry's first bytes).
const PIECE: usize = 64 << 10;

/// True for the first bytes of a zip archive: a local file header, or the end record of
/// an empty archive.
pub(crate) fn detect(head: &[u8]) -> bool {
    head.starts_with(LOCAL) || head.starts_with(END)
}

/// How an entry's bytes are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Stored,
    Deflated,
}

/// One entry of the central directory.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) method: Method,
    pub(crate) crc: u32,
    /// Stored bytes.
    pub(crate) compressed: u64,
    /// Bytes once inflated.
    pub(crate) size: u64,
    /// The offset of its local header.
    header: u64,
}

/// The entries of an archive, in central directory order.
pub(crate) struct Archive {
    pub(crate) entries: Vec<Entry>,
    /// Where the central directory starts: no entry's data reaches past it.
    pub(crate) data_end: u64,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The end record's offset: searched backwards through the last 64 KiB + 22 bytes (its
/// comment is at most 65535 bytes).
fn find_end(read: &ReadAt<'_>, size: u64) -> Result<u64> {
    if size < 22 {
        bail!(Format, "a zip archive of {size} bytes has no end record");
    }
    let tail_len = size.min(22 + 65535);
    let tail = read(size - tail_len, tail_len)?;
    let at = (0..=tail.len() - 22)
        .rev()
        .find(|&i| &tail[i..i + 4] == END && i + 22 + u16_at(&tail, i + 20) as usize == tail.len())
        .or_else(|| {
            (0..=tail.len() - 22)
                .rev()
                .find(|&i| &tail[i..i + 4] == END)
        })
        .ok_or_else(|| {
            err!(
                Format,
                "zip archive without an end of central directory record"
            )
        })?;
    Ok(size - tail_len + at as u64)
}

/// Reads the central directory: every entry, bounded by the manifest limit.
pub(crate) fn read_archive(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<Archive> {
    let end = find_end(read, size)?;
    let rec = read(end, 22)?;
    let (disk, cd_disk) = (u16_at(&rec, 4), u16_at(&rec, 6));
    let mut count = u64::from(u16_at(&rec, 10));
    let mut cd_size = u64::from(u32_at(&rec, 12));
    let mut cd_start = u64::from(u32_at(&rec, 16));
    if disk != 0 || cd_disk != 0 {
        bail!(Unsupported, "multi-disk zip archives are not read");
    }
    if count == 0xffff || cd_size == 0xffff_ffff || cd_start == 0xffff_ffff {
        // Zip64: the locator sits just before the end record and points at the zip64 end.
        if end < 20 {
            bail!(Format, "zip64 archive without its locator");
        }
        let loc = read(end - 20, 20)?;
        if &loc[..4] != LOCATOR64 {
            bail!(
                Format,
                "zip64 archive without its locator before the end record"
            );
        }
        let at = u64_at(&loc, 8);
        if at.checked_add(56).is_none_or(|e| e > end - 20) {
            bail!(
                Format,
                "the zip64 end record at {at} lies outside the archive"
            );
        }
        let rec64 = read(at, 56)?;
        if &rec64[..4] != END64 {
            bail!(Format, "no zip64 end record at offset {at}");
        }
        count = u64_at(&rec64, 32);
        cd_size = u64_at(&rec64, 40);
        cd_start = u64_at(&rec64, 48);
    }
    let cd_end = cd_start
        .checked_add(cd_size)
        .filter(|&e| e <= end)
        .ok_or_else(|| {
            err!(
                Format,
                "the central directory [{cd_start}, {cd_start} + {cd_size}) reaches past its end record at {end}"
            )
        })?;
    if cd_size > limits.max_manifest_size {
        bail!(
            Limit,
            "zip central directory of {cd_size} bytes is over the manifest limit of {}",
            limits.max_manifest_size
        );
    }
    if count > cd_size / 46 {
        bail!(
            Format,
            "the zip end record counts {count} entries, more than its {cd_size}-byte central directory holds"
        );
    }
    let cd = read(cd_start, cd_size)?;
    let mut entries = Vec::new();
    entries
        .try_reserve_exact(count as usize)
        .map_err(|_| err!(Limit, "no memory for {count} zip entries"))?;
    let mut at = 0usize;
    for i in 0..count {
        let e = central_entry(&cd, &mut at, limits)
            .map_err(|e| e.context(format_args!("zip entry {i}")))?;
        if e.header >= cd_start {
            bail!(
                Format,
                "zip entry '{}' has its header at {}, inside the central directory",
                e.name,
                e.header
            );
        }
        entries.push(e);
    }
    let _ = cd_end;
    refuse_duplicates(&entries)?;
    Ok(Archive {
        entries,
        data_end: cd_start,
    })
}

/// Refuses an archive that names an entry twice. Readers disagree on which one counts
/// (this one took the first `data.pkl` and the last storage of a name, Python's
/// `zipfile` takes the last of each), so a scanner and a loader could see different
/// files in the same archive. Sorting the names finds a repeat in O(n log n).
fn refuse_duplicates(entries: &[Entry]) -> Result<()> {
    let mut names: Vec<&str> = Vec::new();
    names
        .try_reserve_exact(entries.len())
        .map_err(|_| err!(Limit, "no memory for {} zip entry names", entries.len()))?;
    names.extend(entries.iter().map(|e| e.name.as_str()));
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|p| p[0] == p[1]) {
        bail!(
            Format,
            "the zip archive names the entry '{}' more than once (readers disagree on which \
             one counts, so such archives are refused)",
            pair[0]
        );
    }
    Ok(())
}

/// One central directory record at `*at`, moving `*at` past it.
fn central_entry(cd: &[u8], at: &mut usize, limits: &Limits) -> Result<Entry> {
    let rec = cd
        .get(*at..*at + 46)
        .filter(|r| &r[..4] == CENTRAL)
        .ok_or_else(|| err!(Format, "no central directory record at {}", *at))?;
    let flags = u16_at(rec, 8);
    let method = match u16_at(rec, 10) {
        0 => Method::Stored,
        8 => Method::Deflated,
        m => bail!(
            Unsupported,
            "compression method {m} (only stored and deflated entries are read)"
        ),
    };
    if flags & 1 != 0 {
        bail!(Unsupported, "encrypted zip entries are not read");
    }
    let crc = u32_at(rec, 16);
    let mut compressed = u64::from(u32_at(rec, 20));
    let mut size = u64::from(u32_at(rec, 24));
    let (n, x, c) = (
        u16_at(rec, 28) as usize,
        u16_at(rec, 30) as usize,
        u16_at(rec, 32) as usize,
    );
    let mut header = u64::from(u32_at(rec, 42));
    let body = cd
        .get(*at + 46..*at + 46 + n + x + c)
        .ok_or_else(|| err!(Format, "central directory record cut short"))?;
    let name = &body[..n];
    if n > limits.max_name_length {
        bail!(Limit, "entry name of {n} bytes is over the name limit");
    }
    let name = std::str::from_utf8(name)
        .map_err(|_| err!(Format, "entry name {} is not UTF-8", super::printable(name)))?
        .to_owned();
    // The zip64 extra field holds, in this order, the values the record marks 0xffffffff.
    let mut extra = &body[n..n + x];
    while extra.len() >= 4 {
        let (id, len) = (u16_at(extra, 0), u16_at(extra, 2) as usize);
        let Some(data) = extra.get(4..4 + len) else {
            bail!(Format, "entry '{name}': extra field cut short");
        };
        if id == 1 {
            let mut fields = data.chunks_exact(8).map(|b| u64_at(b, 0));
            let mut take = |v: &mut u64| -> Result<()> {
                if *v == 0xffff_ffff {
                    *v = fields
                        .next()
                        .ok_or_else(|| err!(Format, "entry '{name}': zip64 field missing"))?;
                }
                Ok(())
            };
            take(&mut size)?;
            take(&mut compressed)?;
            take(&mut header)?;
        }
        extra = &extra[4 + len..];
    }
    if method == Method::Stored && compressed != size {
        bail!(
            Format,
            "stored entry '{name}' is {compressed} bytes but says it holds {size}"
        );
    }
    *at += 46 + n + x + c;
    Ok(Entry {
        name,
        method,
        crc,
        compressed,
        size,
        header,
    })
}

impl Archive {
    /// The entry called `name` (names are unique: `read_archive` refuses repeats).
    pub(crate) fn find(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Where an entry's stored bytes begin (after its local header), checked to end
    /// before the central directory.
    pub(crate) fn data_offset(&self, read: &ReadAt<'_>, e: &Entry) -> Result<u64> {
        let ctx = |m: String| err!(Format, "zip entry '{}': {m}", e.name);
        if e.header
            .checked_add(30)
            .is_none_or(|end| end > self.data_end)
        {
            return Err(ctx(format!("local header at {} is out of range", e.header)));
        }
        let h = read(e.header, 30)?;
        if &h[..4] != LOCAL {
            return Err(ctx(format!("no local header at offset {}", e.header)));
        }
        let start = e.header + 30 + u64::from(u16_at(&h, 26)) + u64::from(u16_at(&h, 28));
        if start
            .checked_add(e.compressed)
            .is_none_or(|end| end > self.data_end)
        {
            return Err(ctx(format!(
                "its {} bytes at offset {start} reach past the central directory at {}",
                e.compressed, self.data_end
            )));
        }
        Ok(start)
    }

    /// The blob and first step of the entry's content bytes `[start, start + len)`: a raw
    /// blob of that range for a stored entry; for a deflated one, a pipeline blob of the
    /// whole stream and an `Inflate` step that makes only that range (the whole stream is
    /// still inflated, to check its size and CRC-32, through a window of `PIECE` bytes).
    /// The range must lie within the entry (`Format` otherwise).
    pub(crate) fn blob_range(
        &self,
        read: &ReadAt<'_>,
        e: &Entry,
        start: u64,
        len: u64,
    ) -> Result<(Blob, Vec<Step>)> {
        if start.checked_add(len).is_none_or(|end| end > e.size) {
            bail!(
                Format,
                "bytes [{start}, {start} + {len}) lie outside zip entry '{}' of {} bytes",
                e.name,
                e.size
            );
        }
        let offset = self.data_offset(read, e)?;
        Ok(match e.method {
            Method::Stored => (
                Blob {
                    file: 0,
                    offset: offset + start,
                    length: len,
                    encoding: Encoding::Raw,
                    decoded_length: len,
                },
                Vec::new(),
            ),
            Method::Deflated => {
                check_ratio(e)?;
                (
                    Blob {
                        file: 0,
                        offset,
                        length: e.compressed,
                        encoding: Encoding::Pipeline,
                        decoded_length: e.compressed,
                    },
                    vec![Step::Format(Arc::new(Inflate {
                        size: e.size,
                        crc: e.crc,
                        start,
                        len,
                    }))],
                )
            }
        })
    }

    /// The first `max` bytes of an entry's content (inflated when deflated, as far as
    /// they need): what the `.npy` header of an npz member is read from.
    pub(crate) fn prefix(&self, read: &ReadAt<'_>, e: &Entry, max: u64) -> Result<Vec<u8>> {
        let offset = self.data_offset(read, e)?;
        let want = max.min(e.size);
        match e.method {
            Method::Stored => match read(offset, want)? {
                std::borrow::Cow::Owned(v) => Ok(v),
                std::borrow::Cow::Borrowed(b) => {
                    let mut v = Vec::new();
                    v.try_reserve_exact(b.len())
                        .map_err(|_| err!(Limit, "{}", no_memory(&format!("{want} bytes"))))?;
                    v.extend_from_slice(b);
                    Ok(v)
                }
            },
            Method::Deflated => {
                check_ratio(e)?;
                inflate_prefix(read, offset, e.compressed, want)
                    .map_err(|m| err!(Format, "zip entry '{}': {m}", e.name))
            }
        }
    }

    /// An entry's whole content, which the format needs in memory (a checkpoint's
    /// `data.pkl`), when it declares at most `max` bytes (`Limit` otherwise, naming
    /// `what`): memory grows with the bytes inflated, never by the declared size at once,
    /// and every allocation is fallible. A deflated entry's size and CRC-32 are checked
    /// (as `Inflate` checks them; stored entries are read as they are, CRC unchecked).
    pub(crate) fn contents(
        &self,
        read: &ReadAt<'_>,
        e: &Entry,
        max: u64,
        what: &str,
    ) -> Result<Vec<u8>> {
        if e.size > max {
            bail!(
                Limit,
                "zip entry '{}' of {} bytes is over the {max} bytes {what} may take",
                e.name,
                e.size
            );
        }
        // One byte past the declared size tells a stream that makes more.
        let bytes = match e.method {
            Method::Stored => self.prefix(read, e, e.size)?,
            Method::Deflated => {
                check_ratio(e)?;
                let offset = self.data_offset(read, e)?;
                inflate_prefix(read, offset, e.compressed, e.size.saturating_add(1))
                    .map_err(|m| err!(Format, "zip entry '{}': {m}", e.name))?
            }
        };
        if bytes.len() as u64 > e.size {
            bail!(
                Format,
                "zip entry '{}' inflates to more than the {} bytes the archive declares",
                e.name,
                e.size
            );
        }
        if (bytes.len() as u64) < e.size {
            bail!(
                Format,
                "zip entry '{}' inflates to {} bytes, not the {} the archive declares",
                e.name,
                bytes.len(),
                e.size
            );
        }
        if e.method == Method::Deflated {
            let crc = crc32(&bytes);
            if crc != e.crc {
                bail!(
                    Checksum,
                    "zip entry '{}' has CRC-32 {crc:#010x}, the archive says {:#010x}",
                    e.name,
                    e.crc
                );
            }
        }
        Ok(bytes)
    }
}

/// Deflate expands at most about 1032 to 1: a larger declared size is a lie.
fn check_ratio(e: &Entry) -> Result<()> {
    if e.size > e.compressed.saturating_mul(1032).saturating_add(1024) {
        bail!(
            Format,
            "zip entry '{}' says {} bytes inflate to {}, more than deflate can make",
            e.name,
            e.compressed,
            e.size
        );
    }
    Ok(())
}

/// A `Limit` error for an allocation the system refused.
fn no_memory(what: &str) -> String {
    format!("no memory for {what}")
}

/// Inflates the first `want` bytes (or fewer, where the stream ends first) of the
/// deflate stream of `stored` bytes at `offset`, reading its input 64 KiB at a time. The
/// output grows by what was inflated (a piece at a time, each allocation fallible), never
/// by `want` at once: a stream that claims more than it holds costs what it holds.
fn inflate_prefix(
    read: &ReadAt<'_>,
    offset: u64,
    stored: u64,
    want: u64,
) -> std::result::Result<Vec<u8>, String> {
    let want = usize::try_from(want).map_err(|_| format!("{want} bytes do not fit in memory"))?;
    let mut out: Vec<u8> = Vec::new();
    let mut state = InflateState::new_boxed(DataFormat::Raw);
    let (mut taken, mut made) = (0u64, 0usize);
    let mut input: Vec<u8> = Vec::new();
    let mut used = 0usize;
    while made < want {
        if used == input.len() && taken < stored {
            let n = (stored - taken).min(64 << 10);
            input = read(offset + taken, n)
                .map_err(|e| e.message().to_owned())?
                .into_owned();
            taken += n;
            used = 0;
        }
        if made == out.len() {
            let more = (want - made).min(out.len().max(PIECE));
            out.try_reserve_exact(more)
                .map_err(|_| no_memory(&format!("{} inflated bytes", made + more)))?;
            out.resize(made + more, 0);
        }
        // Never `Finish`: the input comes in pieces, and the end of the stream is the
        // stream's own end block.
        let r = inflate(&mut state, &input[used..], &mut out[made..], MZFlush::None);
        used += r.bytes_consumed;
        made += r.bytes_written;
        match r.status {
            Ok(MZStatus::StreamEnd) => break,
            Ok(_) if r.bytes_consumed + r.bytes_written == 0 => {
                return Err("the deflate stream makes no progress".into());
            }
            Ok(_) => {}
            // No input left (all of it was given) and no end block: cut short.
            Err(MZError::Buf) => return Err("the deflate stream ends early".into()),
            Err(e) => return Err(format!("deflate stream is corrupt ({e:?})")),
        }
    }
    out.truncate(made);
    Ok(out)
}

/// A deflated zip entry, inflated: the bytes `[start, start + len)` of its content,
/// which is exactly `size` bytes whose CRC-32 is `crc`.
#[derive(Debug)]
pub(crate) struct Inflate {
    size: u64,
    crc: u32,
    start: u64,
    len: u64,
}

impl Inflate {
    /// The whole entry into `out` in one call: the fastest path, for the whole content.
    fn whole(&self, input: &[u8], out: &mut [u8]) -> Result<()> {
        let mut state = Box::<DecompressorOxide>::default();
        let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
        let (status, _, wrote) = decompress(&mut state, input, out, 0, flags);
        match status {
            TINFLStatus::Done if wrote == out.len() => {}
            TINFLStatus::Done
            | TINFLStatus::NeedsMoreInput
            | TINFLStatus::FailedCannotMakeProgress => {
                bail!(
                    Format,
                    "the deflate stream makes {wrote} bytes, not the {} the archive declares",
                    out.len()
                )
            }
            TINFLStatus::HasMoreOutput => bail!(
                Format,
                "the deflate stream makes more than the {} bytes the archive declares",
                out.len()
            ),
            s => bail!(Format, "the deflate stream is corrupt ({s:?})"),
        }
        self.check_crc(crc32(out))
    }

    fn check_crc(&self, crc: u32) -> Result<()> {
        if crc != self.crc {
            bail!(
                Checksum,
                "inflated bytes have CRC-32 {crc:#010x}, the archive says {:#010x}",
                self.crc
            );
        }
        Ok(())
    }

    /// A range of the entry into `out`: the bytes before and after it go through a
    /// window of `PIECE` bytes (counted into the CRC-32, then dropped), so memory is the
    /// range, the window and the inflater's state, never the whole entry.
    fn range(&self, input: &[u8], out: &mut [u8]) -> Result<()> {
        let mut state = InflateState::new_boxed(DataFormat::Raw);
        let mut window: Vec<u8> = Vec::new();
        window
            .try_reserve_exact(PIECE)
            .map_err(|_| err!(Limit, "no memory for an inflate window"))?;
        window.resize(PIECE, 0);
        let (start, end) = (self.start, self.start + self.len);
        let (mut rest, mut made, mut crc) = (input, 0u64, !0u32);
        loop {
            // Where this call's output goes: the range, or the window (never across the
            // range's start, and at most one byte past the declared size).
            let to_range = made >= start && made < end;
            let buf: &mut [u8] = if to_range {
                &mut out[(made - start) as usize..]
            } else {
                let room = if made < start {
                    start - made
                } else {
                    (self.size - made).saturating_add(1)
                };
                &mut window[..room.min(PIECE as u64) as usize]
            };
            let r = inflate(&mut state, rest, buf, MZFlush::None);
            rest = &rest[r.bytes_consumed..];
            crc = crc32_update(crc, &buf[..r.bytes_written]);
            made += r.bytes_written as u64;
            if made > self.size {
                bail!(
                    Format,
                    "the deflate stream makes more than the {} bytes the archive declares",
                    self.size
                );
            }
            match r.status {
                Ok(MZStatus::StreamEnd) => break,
                Ok(_) if r.bytes_consumed + r.bytes_written == 0 => {
                    bail!(Format, "the deflate stream makes no progress")
                }
                Ok(_) => {}
                // All the input was given and no end block came: cut short.
                Err(MZError::Buf) => bail!(
                    Format,
                    "the deflate stream makes {made} bytes, not the {} the archive declares",
                    self.size
                ),
                Err(e) => bail!(Format, "the deflate stream is corrupt ({e:?})"),
            }
        }
        if made != self.size {
            bail!(
                Format,
                "the deflate stream makes {made} bytes, not the {} the archive declares",
                self.size
            );
        }
        self.check_crc(!crc)
    }
}

impl FormatStep for Inflate {
    fn apply(&self, input: &[u8], out: &mut [u8]) -> Result<()> {
        if self.start == 0 && self.len == self.size {
            self.whole(input, out)
        } else {
            self.range(input, out)
        }
    }
    fn output_len(&self) -> u64 {
        self.len
    }
}

/// The zip CRC-32 (reflected, polynomial 0xEDB88320) of `bytes`.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    !crc32_update(!0, bytes)
}

/// The CRC-32 register `c` (inverted, as the algorithm keeps it) after `bytes`, eight
/// bytes a step: `crc32` of a whole is `!crc32_update(!0, ..)` over its pieces in order.
fn crc32_update(mut c: u32, bytes: &[u8]) -> u32 {
    static TABLES: std::sync::OnceLock<[[u32; 256]; 8]> = std::sync::OnceLock::new();
    let t = TABLES.get_or_init(|| {
        let mut t = [[0u32; 256]; 8];
        for i in 0..256u32 {
            let mut c = i;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            t[0][i as usize] = c;
        }
        for i in 0..256 {
            for k in 1..8 {
                let prev = t[k - 1][i];
                t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            }
        }
        t
    });
    let mut chunks = bytes.chunks_exact(8);
    for b in &mut chunks {
        let lo = c ^ u32_at(b, 0);
        let hi = u32_at(b, 4);
        c = t[7][(lo & 0xff) as usize]
            ^ t[6][(lo >> 8 & 0xff) as usize]
            ^ t[5][(lo >> 16 & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][(hi >> 8 & 0xff) as usize]
            ^ t[1][(hi >> 16 & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = t[0][((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// A range of an entry is its bytes in the whole, from anywhere (the start, across
    /// the 64 KiB window, the end, nothing); a wrong size, CRC or a cut stream is an
    /// error on the range path as on the whole one.
    #[test]
    fn inflate_ranges_are_the_bytes_of_the_whole() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
        let (crc, size) = (crc32(&data), data.len() as u64);
        for (start, len) in [
            (0, size),
            (0, 10),
            (1, 70_000),
            (65_535, 65_537),
            (size - 5, 5),
            (size, 0),
            (123_456, 0),
        ] {
            let step = Inflate {
                size,
                crc,
                start,
                len,
            };
            assert_eq!(step.output_len(), len);
            let mut out = vec![0; len as usize];
            step.apply(&z, &mut out).unwrap();
            assert_eq!(out, data[start as usize..(start + len) as usize]);
        }
        let half = &z[..z.len() / 2];
        for (size, crc, input, kind) in [
            (size - 1, crc, &z[..], ErrorKind::Format),
            (size + 1, crc, &z[..], ErrorKind::Format),
            (size, crc ^ 1, &z[..], ErrorKind::Checksum),
            (size, crc, half, ErrorKind::Format),
        ] {
            for (start, len) in [(10, 10), (0, size)] {
                let step = Inflate {
                    size,
                    crc,
                    start,
                    len,
                };
                let e = step.apply(input, &mut vec![0; len as usize]).unwrap_err();
                assert_eq!(e.kind(), kind, "{e}");
            }
        }
    }

    /// An entry's first bytes, or all of it, grow with what is inflated.
    #[test]
    fn prefixes_inflate_as_far_as_asked() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 13) as u8).collect();
        let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
        let read = |at: u64, len: u64| -> Result<std::borrow::Cow<'_, [u8]>> {
            Ok(std::borrow::Cow::Borrowed(
                &z[at as usize..(at + len) as usize],
            ))
        };
        let n = z.len() as u64;
        assert_eq!(inflate_prefix(&read, 0, n, 12).unwrap(), data[..12]);
        assert_eq!(
            inflate_prefix(&read, 0, n, 100_000).unwrap(),
            data[..100_000]
        );
        assert_eq!(inflate_prefix(&read, 0, n, 1 << 40).unwrap(), data);
        let e = inflate_prefix(&read, 0, n / 2, 1 << 40).unwrap_err();
        assert!(e.contains("ends early"), "{e}");
    }

    #[test]
    fn crc32_matches_the_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        let long: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let slow = long.iter().fold(!0u32, |mut c, &b| {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            c
        });
        assert_eq!(crc32(&long), !slow);
    }
}
