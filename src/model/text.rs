//! Names and other text of the model (`CText`): NUL-terminated for the C API, shared by
//! reference counting, and small: a `CText` is one pointer, and the names of a manifest
//! are stored side by side in a few blocks (`TextArena`) instead of one allocation each,
//! which is most of what a many-object file's model would otherwise cost.
//!
//! A block is a header (reference count, size) followed by entries; an entry is the text's
//! length (u16, `LEN_UNKNOWN` for a text of 65535 bytes or more), the distance from its
//! block's start to its text (u16), the text and a NUL, so a 13-byte name takes 18 bytes.
//! A `CText` points at an entry's text and holds one reference to its block; its length
//! is read in O(1) (lookups compare names by length first, and never scan for the NUL),
//! or found by the NUL for the rare long text (texts hold none).

use std::alloc::{Layout, alloc, dealloc};
use std::ffi::c_char;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering, fence};

use crate::error::{Result, bail, err};

/// A block's header.
#[repr(C)]
struct Header {
    /// References held by `CText`s (and by the arena filling the block).
    refs: AtomicU32,
    /// The block's size in bytes, header included, for deallocation.
    size: u32,
}

const HEADER: usize = std::mem::size_of::<Header>();
/// Bytes an entry adds to its text: length, back distance, NUL.
const ENTRY_OVERHEAD: usize = 2 + 2 + 1;
/// The length field of a text too long for it (found by its NUL instead).
const LEN_UNKNOWN: u16 = u16::MAX;
/// The size of an arena's blocks: every back distance fits in a u16.
const BLOCK: usize = 64 << 10;
/// Texts longer than this get a block of their own.
const LONG: usize = BLOCK / 8;

/// A block being filled: where it is, and how much of it is used.
struct Block {
    start: NonNull<u8>,
    used: usize,
    size: usize,
}

impl Block {
    /// A new block of `size` bytes with one reference, the caller's; `Limit` when the
    /// size is over `u32::MAX` or the allocation fails (never an abort).
    fn new(size: usize) -> Result<Block> {
        let no_memory = || err!(Limit, "out of memory for a block of {size} bytes of names");
        let layout = Layout::from_size_align(size, 8).map_err(|_| no_memory())?;
        if u32::try_from(size).is_err() || tests::fail_allocation() {
            return Err(no_memory());
        }
        // SAFETY: the layout has a non-zero size.
        let start = NonNull::new(unsafe { alloc(layout) }).ok_or_else(no_memory)?;
        // SAFETY: the block is at least HEADER bytes and 8-aligned.
        unsafe {
            start.cast::<Header>().write(Header {
                refs: AtomicU32::new(1),
                size: size as u32,
            });
        }
        Ok(Block {
            start,
            used: HEADER,
            size,
        })
    }

    fn room(&self) -> usize {
        self.size - self.used
    }

    /// Appends an entry for `s` (which must fit) and returns its `CText`.
    fn push(&mut self, s: &str) -> CText {
        CText(self.push_entry(s.as_bytes()))
    }

    /// Appends an entry holding `b` and a NUL (which must fit) and returns it, holding a
    /// reference to the block.
    fn push_entry(&mut self, b: &[u8]) -> Entry {
        let at = self.used;
        // SAFETY: the entry fits in the block (checked by the callers), `at` is 2-aligned
        // inside it and at most BLOCK from its start (a block of its own has one entry,
        // right after the header), and no `Entry` refers to bytes past `used`.
        unsafe {
            let entry = self.start.as_ptr().add(at);
            let len = u16::try_from(b.len()).unwrap_or(LEN_UNKNOWN);
            entry.cast::<u16>().write(len);
            entry.add(2).cast::<u16>().write((at + 4) as u16);
            let bytes = entry.add(4);
            std::ptr::copy_nonoverlapping(b.as_ptr(), bytes, b.len());
            bytes.add(b.len()).write(0);
            self.used = (at + ENTRY_OVERHEAD + b.len()).next_multiple_of(2);
            let bytes = NonNull::new_unchecked(bytes);
            Entry::header_of(bytes).acquire();
            Entry(bytes)
        }
    }

    /// Gives up the reference the filler held.
    fn release(self) {
        // SAFETY: the block is live; this is the filler's own reference.
        unsafe { release(self.start) }
    }
}

impl Header {
    fn acquire(&self) {
        // As Arc does: a count near overflow means leaked clones; stop rather than wrap.
        if self.refs.fetch_add(1, Ordering::Relaxed) > u32::MAX / 2 {
            std::process::abort();
        }
    }
}

/// Drops one reference to the block at `start`, freeing it with the last one.
///
/// # Safety
/// `start` is a live block and the caller owns one of its references.
unsafe fn release(start: NonNull<u8>) {
    // SAFETY: per the contract, the header is live.
    let header = unsafe { start.cast::<Header>().as_ref() };
    if header.refs.fetch_sub(1, Ordering::Release) == 1 {
        fence(Ordering::Acquire);
        let size = header.size as usize;
        // SAFETY: the last reference is gone; the layout is the one it was made with.
        unsafe { dealloc(start.as_ptr(), Layout::from_size_align_unchecked(size, 8)) };
    }
}

/// One entry of a block: a pointer to its bytes, holding one reference to the block.
/// Immutable once made; clones share it.
struct Entry(NonNull<u8>);

// SAFETY: the bytes are immutable once made and the block's count is atomic, as in Arc.
unsafe impl Send for Entry {}
// SAFETY: as above.
unsafe impl Sync for Entry {}

impl Entry {
    /// The header of the block holding the entry whose bytes are at `bytes`.
    ///
    /// # Safety
    /// `bytes` are the bytes of a live entry.
    unsafe fn header_of<'a>(bytes: NonNull<u8>) -> &'a Header {
        // SAFETY: an entry's back distance leads to its block's header.
        unsafe { Self::block_of(bytes).cast::<Header>().as_ref() }
    }

    /// # Safety
    /// `bytes` are the bytes of a live entry.
    unsafe fn block_of(bytes: NonNull<u8>) -> NonNull<u8> {
        // SAFETY: the back distance is the 2 bytes before the bytes (2-aligned).
        unsafe {
            let back = bytes.sub(2).cast::<u16>().read() as usize;
            bytes.sub(back)
        }
    }

    /// The bytes without the terminator; O(1) under 64 KiB, else found by the NUL.
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: `self` keeps the entry alive; its length field (the 2 bytes before the
        // back distance, 2-aligned) is the bytes' length, or LEN_UNKNOWN and a NUL ends
        // them (only texts, which hold no NUL, are that long).
        unsafe {
            match self.0.as_ptr().sub(4).cast::<u16>().read() {
                LEN_UNKNOWN => std::ffi::CStr::from_ptr(self.0.as_ptr().cast()).to_bytes(),
                len => std::slice::from_raw_parts(self.0.as_ptr(), usize::from(len)),
            }
        }
    }
}

impl Clone for Entry {
    fn clone(&self) -> Entry {
        // SAFETY: `self` keeps the entry alive.
        unsafe { Self::header_of(self.0) }.acquire();
        Entry(self.0)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: `self` owns one reference to its live block.
        unsafe { release(Self::block_of(self.0)) }
    }
}

/// A UTF-8 string stored with a trailing NUL so the C API can lend it out without copying.
/// It never contains an interior NUL. Clones share the text (one pointer each).
#[derive(Clone)]
pub struct CText(Entry);

impl CText {
    /// Copies `s`, refusing interior NUL bytes. One allocation.
    pub fn new(s: &str) -> Result<CText> {
        check_no_nul(s)?;
        let mut block = Block::new(HEADER + (ENTRY_OVERHEAD + s.len()).next_multiple_of(2))?;
        let text = block.push(s);
        block.release();
        Ok(text)
    }

    /// The text without the terminator.
    #[inline]
    pub fn as_str(&self) -> &str {
        // SAFETY: `self` keeps the entry alive: a text copied from a `str` without NULs.
        unsafe { std::str::from_utf8_unchecked(self.as_bytes()) }
    }

    /// The text's bytes without the terminator; O(1) for texts under 64 KiB.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// A NUL-terminated pointer, valid as long as `self`.
    pub fn as_ptr(&self) -> *const c_char {
        self.0.0.as_ptr().cast()
    }
}

impl PartialEq for CText {
    fn eq(&self, other: &CText) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for CText {}

impl std::hash::Hash for CText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As the text, so that lookups by &str agree.
        self.as_str().hash(state)
    }
}

impl std::borrow::Borrow<str> for CText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for CText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Bytes of any value (NULs included) shorter than 64 KiB, kept side by side in a
/// `TextArena`'s blocks like its texts: one pointer, no allocation of their own. For the
/// attributes of a file's many small objects.
#[derive(Clone)]
pub(crate) struct CBytes(Entry);

impl CBytes {
    /// The bytes.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
    /// The pointer to the bytes, 2-aligned, keeping the reference `self` held.
    pub(crate) fn into_raw(self) -> NonNull<u8> {
        std::mem::ManuallyDrop::new(self).0.0
    }
    /// Takes back the reference `into_raw` kept.
    ///
    /// # Safety
    /// `ptr` came from `into_raw`, and its reference is taken back once.
    pub(crate) unsafe fn from_raw(ptr: NonNull<u8>) -> CBytes {
        CBytes(Entry(ptr))
    }
}

fn check_no_nul(s: &str) -> Result<()> {
    if s.len() > u32::MAX as usize - 64 {
        bail!(
            Limit,
            "a text of {} bytes is longer than this library keeps",
            s.len()
        );
    }
    if has_nul(s.as_bytes()) {
        bail!(Format, "text {:?} contains a NUL byte", s);
    }
    Ok(())
}

/// Whether `b` holds a 0 byte, 8 bytes at a time (a manifest's many short names cost
/// `memchr` more in setting up than in scanning).
#[inline]
fn has_nul(b: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        // A byte of x is 0 exactly when its lane of the expression has the high bit set
        // first (the classic test: borrows only propagate from a lane that was 0).
        if x.wrapping_sub(LOW) & !x & HIGH != 0 {
            return true;
        }
    }
    // Not `contains`, which is `memchr` again, for at most 7 bytes.
    #[allow(clippy::manual_contains)]
    words.remainder().iter().any(|&c| c == 0)
}

/// Makes `CText`s side by side in shared blocks: for the many names of one manifest.
#[derive(Default)]
pub(crate) struct TextArena {
    block: Option<Block>,
}

impl TextArena {
    /// Copies `s` into the arena, refusing interior NUL bytes.
    pub(crate) fn text(&mut self, s: &str) -> Result<CText> {
        if s.len() > LONG {
            return CText::new(s);
        }
        check_no_nul(s)?;
        Ok(CText(self.entry(s.as_bytes())?))
    }

    /// Copies `b` into the arena, or None when it is too long for an entry (64 KiB or
    /// more, or more than a block's eighth) or no block could be had: the caller keeps
    /// such bytes otherwise.
    pub(crate) fn bytes(&mut self, b: &[u8]) -> Option<CBytes> {
        if b.len() > LONG {
            return None;
        }
        self.entry(b).ok().map(CBytes)
    }

    /// Appends an entry of at most `LONG` bytes, starting a block when this one is full.
    fn entry(&mut self, b: &[u8]) -> Result<Entry> {
        let need = ENTRY_OVERHEAD + b.len();
        if self.block.as_ref().is_none_or(|bl| bl.room() < need)
            && let Some(full) = self.block.replace(Block::new(BLOCK)?)
        {
            full.release();
        }
        Ok(self.block.as_mut().expect("made above").push_entry(b))
    }
}

impl Drop for TextArena {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            block.release();
        }
    }
}

/// A switch for the tests: make the next block allocation fail, as a full memory would.
#[cfg(not(test))]
mod tests {
    #[inline(always)]
    pub(super) fn fail_allocation() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static FAIL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// True once after `fail_next_allocation` (on this thread).
    pub(super) fn fail_allocation() -> bool {
        FAIL.with(|f| f.replace(false))
    }

    fn fail_next_allocation() {
        FAIL.with(|f| f.set(true));
    }

    /// A failed allocation is a `Limit` error, never an abort (`handle_alloc_error`); an
    /// arena that could not start a block keeps working once memory is back, and bytes
    /// that could not be put in it are left to the caller.
    #[test]
    fn a_failed_allocation_is_an_error_not_an_abort() {
        fail_next_allocation();
        let e = CText::new("a.weight").err().expect("refused");
        assert_eq!(e.kind(), crate::error::ErrorKind::Limit);
        assert_eq!(
            e.message(),
            "out of memory for a block of 22 bytes of names"
        );
        let mut arena = TextArena::default();
        fail_next_allocation();
        let e = arena.text("b.weight").err().expect("refused");
        assert_eq!(
            e.message(),
            format!("out of memory for a block of {BLOCK} bytes of names")
        );
        fail_next_allocation();
        assert!(arena.bytes(b"\xa1\x61\x62").is_none());
        assert_eq!(arena.text("b.weight").unwrap().as_str(), "b.weight");
        assert_eq!(arena.bytes(b"xyz").unwrap().as_bytes(), b"xyz");
        // A size a block can't describe (over u32::MAX) is refused before allocating.
        let e = Block::new(1 << 33).err().expect("refused");
        assert_eq!(e.kind(), crate::error::ErrorKind::Limit);
    }

    #[test]
    fn texts_share_blocks_and_outlive_the_arena() {
        let mut arena = TextArena::default();
        let names: Vec<CText> = (0..20_000)
            .map(|i| arena.text(&format!("layer.{i}.weight")).unwrap())
            .collect();
        let long = arena.text(&"x".repeat(LONG + 1)).unwrap();
        let empty = arena.text("").unwrap();
        drop(arena);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(name.as_str(), format!("layer.{i}.weight"));
            // SAFETY: as_ptr is NUL-terminated.
            let c = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
            assert_eq!(c.to_str().unwrap(), name.as_str());
        }
        assert_eq!(long.as_str().len(), LONG + 1);
        assert_eq!(empty.as_str(), "");
        // Past the length field: found by the NUL.
        let huge = "y".repeat(usize::from(LEN_UNKNOWN) + 3);
        assert_eq!(CText::new(&huge).unwrap().as_str(), huge);
        let edge = "z".repeat(usize::from(LEN_UNKNOWN) - 1);
        assert_eq!(CText::new(&edge).unwrap().as_bytes(), edge.as_bytes());
        let copy = names[7].clone();
        drop(names);
        assert_eq!(copy.as_str(), "layer.7.weight");
        assert_eq!(copy, CText::new("layer.7.weight").unwrap());
        assert!(TextArena::default().text("a\0b").is_err());
        assert!(CText::new("a\0b").is_err());
        assert_eq!(std::mem::size_of::<Option<CText>>(), 8);
    }

    #[test]
    fn bytes_keep_nuls_and_lengths_beside_texts() {
        let mut arena = TextArena::default();
        let mut kept = Vec::new();
        for i in 0..5_000usize {
            let b: Vec<u8> = (0..i % 300).map(|k| (k * 7 + i) as u8).collect();
            let name = arena.text(&format!("t{i}")).unwrap();
            kept.push((arena.bytes(&b).unwrap(), b, name));
        }
        let nuls = arena.bytes(&[0, 0, 1, 0]).unwrap();
        assert!(arena.bytes(&vec![9; LONG + 1]).is_none());
        let edge = arena.bytes(&vec![9; LONG]).unwrap();
        drop(arena);
        for (i, (bytes, b, name)) in kept.iter().enumerate() {
            assert_eq!(bytes.as_bytes(), &b[..], "{i}");
            assert_eq!(name.as_str(), format!("t{i}"));
        }
        assert_eq!(nuls.as_bytes(), [0, 0, 1, 0]);
        assert_eq!(edge.as_bytes().len(), LONG);
        let copy = kept[4_999].0.clone();
        drop(kept);
        assert_eq!(copy.as_bytes().len(), 4_999 % 300);
        assert_eq!(std::mem::size_of::<CBytes>(), 8);
    }

    #[test]
    fn nul_found_at_every_position() {
        for n in 0..40 {
            let mut b: Vec<u8> = (0..n).map(|i| 0x80 | (i as u8 % 0x7f + 1)).collect();
            assert!(!has_nul(&b), "{n}");
            for at in 0..n {
                b[at] = 0;
                assert!(has_nul(&b), "{n} {at}");
                b[at] = if at % 2 == 0 { 1 } else { 0xff };
            }
            assert!(!has_nul(&b), "{n}");
        }
    }

    #[test]
    fn clones_cross_threads() {
        let text = CText::new("shared ü").unwrap();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let t = text.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        assert_eq!(t.clone().as_str(), "shared ü");
                    }
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(text.as_str(), "shared ü");
    }
}
