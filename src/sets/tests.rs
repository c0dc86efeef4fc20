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
