//! A file that claims a size it doesn't hold must not make the reader commit that memory
//! (issue 14, item 2): a 33 KB file claiming a 2 GiB zstd component whose frames hold 10
//! bytes each. The view fails with `Format`, and the process's peak RSS stays far below
//! the claim, mapped or not. One test in this binary, so the peak is its own.

use ztensor::{ErrorKind, OpenOptions, Reader};

mod common;
use common::{cbor_head as head, cbor_text as text};

/// A zstd frame of one raw block holding `content`, its size recorded.
fn frame(content: &[u8]) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x20, content.len() as u8];
    let block = 1 | ((content.len() as u32) << 3);
    f.extend(&block.to_le_bytes()[..3]);
    f.extend(content);
    f
}

/// Peak resident set size of this process so far, in MiB.
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        >> 10
}

#[test]
fn a_claimed_size_is_not_committed() {
    const CLAIM: u64 = 2 << 30;
    let mut stream = Vec::new();
    for i in 0..1760u32 {
        stream.extend(frame(&[i as u8; 10]));
    }
    let mut file = b"ZTEN1000".to_vec();
    file.resize(64, 0);
    file.extend(&stream);
    let mut manifest = Vec::new();
    head(&mut manifest, 5, 2);
    text(&mut manifest, "version");
    text(&mut manifest, "1.2.0");
    text(&mut manifest, "objects");
    head(&mut manifest, 5, 1);
    text(&mut manifest, "big");
    head(&mut manifest, 5, 3);
    text(&mut manifest, "shape");
    head(&mut manifest, 4, 1);
    head(&mut manifest, 0, CLAIM);
    text(&mut manifest, "format");
    text(&mut manifest, "dense");
    text(&mut manifest, "components");
    head(&mut manifest, 5, 1);
    text(&mut manifest, "data");
    head(&mut manifest, 5, 5);
    for (key, value) in [("offset", 64), ("length", stream.len() as u64)] {
        text(&mut manifest, key);
        head(&mut manifest, 0, value);
    }
    text(&mut manifest, "dtype");
    text(&mut manifest, "u8");
    text(&mut manifest, "uncompressed_length");
    head(&mut manifest, 0, CLAIM);
    text(&mut manifest, "encoding");
    text(&mut manifest, "zstd");
    file.extend(&manifest);
    file.extend((manifest.len() as u64).to_le_bytes());
    file.extend(b"ZTEN1000");
    assert!(file.len() < 34_000);

    let dir = std::env::temp_dir().join(format!("zt-commit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("claims.zt");
    std::fs::write(&path, &file).unwrap();
    let before = peak_rss_mib();
    for use_mmap in [true, false] {
        let options = OpenOptions {
            use_mmap,
            ..Default::default()
        };
        let r = Reader::open_with(&path, &options).unwrap();
        let e = r.view(0, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{e}");
        let mut piece = [0u8; 16];
        assert_eq!(
            r.read_range(0, 0, CLAIM / 2, &mut piece)
                .unwrap_err()
                .kind(),
            ErrorKind::Format
        );
        assert_eq!(r.read_to_vec(0, 0).unwrap_err().kind(), ErrorKind::Format);
    }
    let grown = peak_rss_mib().saturating_sub(before);
    // Before: the view zero-filled 2 GiB first (peak 2050 MiB).
    assert!(grown < 64, "peak RSS grew by {grown} MiB for a 2 GiB claim");
    std::fs::remove_dir_all(&dir).unwrap();
}
