//! A zero-initialised, 64-byte aligned heap buffer for decoded data, so that every pointer
//! the library hands out is aligned for SIMD whether or not it is zero-copy.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use crate::error::{Result, err};

const ALIGN: usize = 64;

/// An owned, 64-byte aligned byte buffer.
pub(crate) struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only reads.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zero bytes; a `Limit` error when the allocator refuses.
    pub(crate) fn zeroed(len: u64) -> Result<AlignedBuf> {
        let len =
            usize::try_from(len).map_err(|_| err!(Limit, "{len} bytes do not fit in memory"))?;
        if len == 0 {
            // A dangling but aligned pointer: never dereferenced for zero bytes.
            let ptr = NonNull::new(ALIGN as *mut u8).expect("non-null");
            return Ok(AlignedBuf { ptr, len });
        }
        let layout = Layout::from_size_align(len, ALIGN)
            .map_err(|_| err!(Limit, "{len} bytes cannot be allocated"))?;
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or_else(|| err!(Limit, "could not allocate {len} bytes"))?;
        Ok(AlignedBuf { ptr, len })
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
        if self.len > 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
