//! A zero-initialised, 64-byte aligned heap buffer for decoded data, so that every pointer
//! the library hands out is aligned for SIMD whether or not it is zero-copy.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use crate::error::{Result, err};

const ALIGN: usize = 64;

/// Buffers of at least this size come straight from the kernel (`mmap`): zero pages that
/// cost memory only once written, so a decode that fails early (or a file that claims a
/// size it doesn't hold) commits only the bytes it really produced.
const MAP_FROM: usize = 1 << 20;

/// An owned, 64-byte aligned, zero-initialised byte buffer.
pub(crate) struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    /// Allocated with `mmap` (else the global allocator).
    mapped: bool,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only reads.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zero bytes; a `Limit` error when the system refuses. Large buffers
    /// are anonymous mappings: their pages are committed as they are written.
    pub(crate) fn zeroed(len: u64) -> Result<AlignedBuf> {
        let len =
            usize::try_from(len).map_err(|_| err!(Limit, "{len} bytes do not fit in memory"))?;
        if len == 0 {
            // A dangling but aligned pointer: never dereferenced for zero bytes.
            let ptr = NonNull::new(ALIGN as *mut u8).expect("non-null");
            return Ok(AlignedBuf {
                ptr,
                len,
                mapped: false,
            });
        }
        if len >= MAP_FROM {
            // SAFETY: a fresh private anonymous mapping; no address hint.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(err!(Limit, "could not allocate {len} bytes"));
            }
            let ptr = NonNull::new(p.cast::<u8>()).expect("mmap never returns NULL on success");
            return Ok(AlignedBuf {
                ptr,
                len,
                mapped: true,
            });
        }
        let layout = Layout::from_size_align(len, ALIGN)
            .map_err(|_| err!(Limit, "{len} bytes cannot be allocated"))?;
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or_else(|| err!(Limit, "could not allocate {len} bytes"))?;
        Ok(AlignedBuf {
            ptr,
            len,
            mapped: false,
        })
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes (or dangling and aligned for len 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we hold the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: mapped in `zeroed` with exactly this length.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        } else if self.len > 0 {
            // SAFETY: allocated in `zeroed` with exactly this layout.
            unsafe {
                dealloc(
                    self.ptr.as_ptr(),
                    Layout::from_size_align_unchecked(self.len, ALIGN),
                )
            }
        }
    }
}

/// A zero-filled `Vec<u8>` of `len` bytes, or a `Limit` error when it can't be allocated
/// (instead of aborting the process, as `vec![0; len]` does). Zero pages come lazily from
/// the allocator, as with `vec!`.
pub(crate) fn zeroed_vec(len: u64) -> Result<Vec<u8>> {
    let n = usize::try_from(len).map_err(|_| err!(Limit, "{len} bytes do not fit in memory"))?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout =
        Layout::array::<u8>(n).map_err(|_| err!(Limit, "{n} bytes cannot be allocated"))?;
    // SAFETY: non-zero size.
    let ptr = unsafe { alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(err!(Limit, "could not allocate {n} bytes"));
    }
    // SAFETY: allocated by the global allocator with the layout of a [u8; n], all zero.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_vec_fails_gracefully() {
        assert_eq!(zeroed_vec(5).unwrap(), [0; 5]);
        assert!(zeroed_vec(0).unwrap().is_empty());
        assert_eq!(
            zeroed_vec(u64::MAX).unwrap_err().kind(),
            crate::error::ErrorKind::Limit
        );
        assert_eq!(
            zeroed_vec(isize::MAX as u64 + 1).unwrap_err().kind(),
            crate::error::ErrorKind::Limit
        );
    }

    #[test]
    fn aligned_and_zeroed() {
        for len in [0u64, 1, 63, 64, 100_000] {
            let mut b = AlignedBuf::zeroed(len).unwrap();
            assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
            assert_eq!(b.as_slice().len() as u64, len);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice().fill(7);
        }
    }

    /// Resident set size of this process, in KiB.
    fn rss_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[test]
    fn large_buffers_commit_only_what_is_written() {
        let before = rss_kib();
        let mut b = AlignedBuf::zeroed(1 << 30).unwrap();
        assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
        b.as_mut_slice()[..4 << 20].fill(1);
        let grown = rss_kib().saturating_sub(before);
        // 4 MiB written of 1 GiB: the rest is not resident (other tests may run alongside,
        // hence the slack).
        assert!(grown < 64 << 10, "RSS grew by {grown} KiB");
        assert_eq!(b.as_slice()[(1 << 30) - 1], 0);
    }
}
