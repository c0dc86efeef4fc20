//! Unit tests of `sets` (kept beside it so the module itself stays readable).

use std::path::Path;

use super::split::{split_name, split_path};
use crate::formats::check_relative;

#[test]
fn split_names_are_llama_cpps() {
    let p = Path::new("/m/llama-7b-00002-of-00003.gguf");
    assert_eq!(split_name(p), Some(("llama-7b", 2, 3)));
    assert_eq!(
        split_path(p, "llama-7b", 0, 3),
        Path::new("/m/llama-7b-00001-of-00003.gguf")
    );
    for bad in [
        "x-2-of-3.gguf",
        "x-00002-of-00003.safetensors",
        "-00002-of-00003.gguf",
        "x-0000a-of-00003.gguf",
    ] {
        assert_eq!(split_name(Path::new(bad)), None, "{bad}");
    }
}

#[test]
fn index_paths_stay_inside_the_directory() {
    assert_eq!(check_relative("model-00001-of-00002.safetensors"), Ok(()));
    assert_eq!(check_relative("./sub/a.zt"), Ok(()));
    for bad in ["", "../x", "a/../../x", "/etc/passwd", "a\0b"] {
        assert!(check_relative(bad).is_err(), "{bad:?}");
    }
}

/// Both ways of opening beneath a directory (`openat2` where the kernel has it, and the
/// walk used where it doesn't) follow links that stay inside and refuse those that leave.
#[test]
fn names_resolve_beneath_the_directory_with_and_without_openat2() {
    use std::io::Read;
    use std::os::fd::AsFd;
    use std::os::unix::fs::symlink;

    use super::dir::{Refused, open_beneath, walk_beneath};

    let base = std::env::temp_dir().join(format!("zt-beneath-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(base.join("outside.bin"), b"OUT").unwrap();
    std::fs::write(root.join("a.bin"), b"A").unwrap();
    std::fs::write(root.join("sub/b.bin"), b"B").unwrap();
    let links: &[(&str, &str)] = &[
        ("link_in", "a.bin"),
        ("link_sub", "sub/b.bin"),
        ("sub/up", "../a.bin"),
        ("sub/deeper/up2", "../../sub/b.bin"),
        ("dirlink", "sub"),
        ("chain", "link_sub"),
        ("dot", "."),
        ("out", "../outside.bin"),
        ("sub/deep_out", "../../outside.bin"),
        ("dirout", ".."),
        ("back_in", "../root/a.bin"),
        ("loop1", "loop2"),
        ("loop2", "loop1"),
    ];
    for (name, target) in links {
        symlink(target, root.join(name)).unwrap();
    }
    symlink(root.join("a.bin"), root.join("absolute")).unwrap();
    let dir = std::fs::File::open(&root).unwrap();
    let read = |fd: std::os::fd::OwnedFd| {
        let mut s = String::new();
        std::fs::File::from(fd).read_to_string(&mut s).unwrap();
        s
    };
    for (how, open) in [
        ("openat2", open_beneath as fn(_, &str) -> _),
        ("walk", walk_beneath as fn(_, &str) -> _),
    ] {
        for (name, want) in [
            ("a.bin", "A"),
            ("./a.bin", "A"),
            ("sub/b.bin", "B"),
            ("sub//b.bin", "B"),
            ("link_in", "A"),
            ("link_sub", "B"),
            ("chain", "B"),
            ("sub/up", "A"),
            ("sub/deeper/up2", "B"),
            ("dirlink/b.bin", "B"),
            ("dirlink/up", "A"),
            ("sub/../a.bin", "A"),
            ("dot/a.bin", "A"),
        ] {
            match open(dir.as_fd(), name) {
                Ok(fd) => assert_eq!(read(fd), want, "{how}: {name}"),
                Err(e) => panic!("{how}: {name}: {e:?}"),
            }
        }
        for name in [
            "../outside.bin",
            "sub/../../outside.bin",
            "out",
            "sub/deep_out",
            "dirout/outside.bin",
            "back_in",
            "absolute",
            "/etc/hostname",
        ] {
            assert!(
                matches!(open(dir.as_fd(), name), Err(Refused::Outside)),
                "{how}: {name} is not refused as outside"
            );
        }
        for (name, errno) in [
            ("missing", libc::ENOENT),
            ("sub/missing", libc::ENOENT),
            ("a.bin/x", libc::ENOTDIR),
            ("loop1", libc::ELOOP),
        ] {
            match open(dir.as_fd(), name) {
                Err(Refused::Io(e)) => assert_eq!(e.raw_os_error(), Some(errno), "{how}: {name}"),
                other => panic!("{how}: {name}: {other:?}"),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}
