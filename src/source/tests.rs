//! Unit tests of `source` (kept beside it so the module itself stays readable).

use super::*;
use crate::dtype::DType;
use crate::reader::Reader;
use crate::writer::{WriteOptions, Writer};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zt-source-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn pread(file: &File) -> impl Fn(u64, &mut [u8]) -> Result<()> + '_ {
    |at, buf| Ok(file.read_exact_at(buf, at).unwrap())
}

#[test]
fn windowed_decode_handles_our_frames_and_declines_foreign_streams() {
    let frame = crate::codec::ZSTD_FRAME_SIZE;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let data: Vec<u8> = (0..5 * frame + 999)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect();
    let dir = scratch("window");
    let path = dir.join("w.zt");
    let mut w = Writer::create(&path).unwrap();
    w.add(
        "z",
        DType::U8,
        &[data.len() as u64],
        &data,
        &WriteOptions::zstd(1),
    )
    .unwrap();
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    let c = &r.objects()[0].components()[0];
    let (offset, len) = (c.offset(), c.length());
    assert!(len > ZSTD_WINDOW as u64);
    let file = File::open(&path).unwrap();
    let mut dst = vec![0u8; data.len()];
    assert!(
        decode_windowed(&pread(&file), offset, len, &mut dst).unwrap(),
        "our frames decode through the window"
    );
    assert!(dst == data);
    // The same through the mapping, window by window.
    // SAFETY: a file of this test's own, which nothing changes while it is mapped.
    let map = Map::Shared(unsafe { Mmap::map(&file) }.unwrap());
    dst.fill(0);
    assert!(
        decode_mapped_windows(&map, offset, len, &mut dst).unwrap(),
        "our frames decode from the mapping"
    );
    assert!(dst == data);
    // And from a private (copy-on-write) mapping, whose pages are never dropped.
    // SAFETY: a file of this test's own, which nothing changes while it is mapped.
    let map = Map::Private(unsafe { MmapOptions::new().map_copy(&file) }.unwrap());
    dst.fill(0);
    assert!(decode_mapped_windows(&map, offset, len, &mut dst).unwrap());
    assert!(dst == data);
    // One big frame without a recorded size (as other writers make): declined.
    let single = {
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
        std::io::Write::write_all(&mut enc, &data).unwrap();
        enc.finish().unwrap()
    };
    std::fs::write(dir.join("raw.zst"), &single).unwrap();
    let file = File::open(dir.join("raw.zst")).unwrap();
    let n = single.len() as u64;
    assert!(!decode_windowed(&pread(&file), 0, n, &mut dst).unwrap());
    // SAFETY: a file of this test's own, which nothing changes while it is mapped.
    let map = Map::Shared(unsafe { Mmap::map(&file) }.unwrap());
    assert!(!decode_mapped_windows(&map, 0, n, &mut dst).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn urls_are_recognised_by_their_scheme_alone() {
    for url in [
        "s3://b/k.zt",
        "S3://b/k",
        "gs://b/k",
        "az://c/b",
        "abfs://c@a/b",
        "https://h/m",
        "http://h/m",
    ] {
        assert!(is_url(Path::new(url)), "{url}");
    }
    for path in [
        "./s3://b/k",
        "s3:/b/k",
        "s3://",
        "model.zt",
        "/data/https/m.zt",
        "file:///m.zt",
    ] {
        assert!(!is_url(Path::new(path)), "{path}");
    }
}

#[cfg(not(feature = "remote"))]
#[test]
fn without_the_feature_a_url_is_unsupported() {
    let e = Reader::open("s3://bucket/model.zt").unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
    assert!(
        e.message()
            .starts_with("s3:// URLs: this build of ztensor has no remote support"),
        "{e}"
    );
}

#[test]
fn only_regular_files_are_opened() {
    let dir = scratch("kinds");
    for mmap in [true, false] {
        let mapping = if mmap { Mapping::Lazy } else { Mapping::None };
        let e = Source::open(&dir, mapping).err().unwrap();
        assert_eq!(e.kind(), crate::error::ErrorKind::Io);
        assert_eq!(
            e.message(),
            format!("{} is a directory, not a tensor file", dir.display())
        );
    }
    // A FIFO with no writer: refused at once instead of blocking in open().
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = Source::open(&fifo, Mapping::None).err().unwrap();
    assert_eq!(e.kind(), crate::error::ErrorKind::Io);
    assert!(e.message().ends_with("is a FIFO, not a tensor file"), "{e}");
    let e = Source::open(Path::new("/dev/null"), Mapping::Lazy)
        .err()
        .unwrap();
    assert_eq!(
        e.message(),
        "/dev/null is a character device, not a tensor file"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
