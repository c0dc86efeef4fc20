//! C ABI: the frame index of zstd components, for loaders that fetch and decode frames
//! with their own I/O.

use std::ffi::c_char;

use super::handles::{self, zt_reader};
use super::objects::find_component;
use super::{guard, need_out, put, zt_status};
use crate::error::err;

/// One frame of a zstd component (or, for a component of more than 65,536 frames, a run
/// of consecutive frames): where its stored bytes are in the file and which decoded bytes
/// of the component they hold. The stored bytes `[offset, offset + length)` decode on their
/// own, with any zstd decoder's one-shot call (`ZSTD_decompress`), to exactly
/// `decoded_length` bytes, which are the component's bytes
/// `[decoded_offset, decoded_offset + decoded_length)`, when the file is sound.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_frame_info {
    /// Absolute file offset of the frame's stored bytes.
    pub offset: u64,
    /// Stored (compressed) bytes of the frame.
    pub length: u64,
    /// Where the frame's decoded bytes start in the decoded component.
    pub decoded_offset: u64,
    /// Decoded bytes of the frame (0 for a skippable frame).
    pub decoded_length: u64,
}

/// The number of frames of a zstd component (see `zt_frame_info`). The frame index is
/// built on the first call that needs it (this or a range read) and kept until
/// `zt_close`: from the seek table this library writes at the end of every component of
/// several frames (zstd's seekable format), or, without one, by reading the frame and block
/// headers (a few bytes per block; nothing is decoded). A frame whose headers don't state
/// its decoded size (the reference implementation writes one such frame per component) is
/// the last entry, holding the rest of the component. The seek table itself is not a
/// frame. `ZT_ERR_FORMAT` for a seek table that disagrees with the component;
/// `ZT_ERR_INVALID_ARGUMENT` for a component that is not zstd frames of its bytes (raw,
/// another format's pipeline, legacy byte-swapped data). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_get_frame_count(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    out_count: *mut usize,
) -> zt_status {
    guard(|| {
        let r = handles::reader(reader)?;
        need_out(out_count, "out_count")?;
        let ci = find_component(r, object, role)?;
        put(out_count, r.inner().frame_index(object, ci)?.len());
        Ok(())
    })
}

/// Describes frame `frame` (`0 .. zt_component_get_frame_count - 1`) of a zstd component;
/// `ZT_ERR_NOT_FOUND` past the last. O(1) once the index is built. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_get_frame(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    frame: usize,
    out: *mut zt_frame_info,
) -> zt_status {
    guard(|| {
        let r = handles::reader(reader)?;
        need_out(out, "out")?;
        let ci = find_component(r, object, role)?;
        let index = r.inner().frame_index(object, ci)?;
        let f = index.get(frame).ok_or_else(|| {
            err!(
                NotFound,
                "no frame {frame}: the component has {} frames",
                index.len()
            )
        })?;
        let offset = r.inner().objects()[object].components()[ci].offset();
        put(
            out,
            zt_frame_info {
                offset: offset + f.stored.start,
                length: f.stored.end - f.stored.start,
                decoded_offset: f.decoded.start,
                decoded_length: f.decoded.end - f.decoded.start,
            },
        );
        Ok(())
    })
}
