//! The check of a Tensogram file against its .json expectation (written by
//! tests/interop/make_tensogram_vectors.py), shared by the vector and interop tests.

use std::path::Path;

use sha2::{Digest, Sha256};
use ztensor::json::from_json;
use ztensor::{Encoding, Reader, hex_lower};

/// Checks one .tgm file against its .json expectation; returns the number of objects.
pub fn check_vector(tgm: &Path, json: &Path) -> usize {
    let doc = from_json(&std::fs::read_to_string(json).unwrap(), 64).unwrap();
    let r = Reader::open(tgm).unwrap_or_else(|e| panic!("{}: {e}", tgm.display()));
    assert_eq!(r.container().name(), "tensogram");
    assert_eq!(r.version(), "3");
    let expected = doc.get("objects").unwrap().as_array().unwrap();
    assert_eq!(r.objects().len(), expected.len(), "{}", tgm.display());
    for (i, e) in expected.iter().enumerate() {
        let name = e.get("name").unwrap().as_text().unwrap();
        let ctx = format!("{} object {name}", tgm.display());
        let o = &r.objects()[i];
        assert_eq!(o.name(), name, "{ctx}");
        assert_eq!(o.format(), "dense", "{ctx}");
        let shape: Vec<u64> = e
            .get("shape")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(o.shape(), &shape[..], "{ctx}");
        let c = &o.components()[0];
        assert_eq!(c.role(), "data");
        assert_eq!(
            c.dtype().name(),
            e.get("dtype").unwrap().as_text().unwrap(),
            "{ctx}"
        );
        assert_eq!(
            c.logical_type(),
            e.get("logical_type").unwrap().as_text(),
            "{ctx}"
        );
        let enc = match e.get("encoding").unwrap().as_text().unwrap() {
            "raw" => Encoding::Raw,
            _ => Encoding::Pipeline,
        };
        assert_eq!(c.encoding(), enc, "{ctx}");
        if let Some(codec) = e.get("unsupported").and_then(|v| v.as_text()) {
            let err = r.read_to_vec(i, 0).unwrap_err();
            assert_eq!(err.kind(), ztensor::ErrorKind::Unsupported, "{ctx}");
            let needle = format!("compression '{codec}' is not supported by this build");
            assert!(err.message().contains(&needle), "{ctx}: {}", err.message());
            continue;
        }
        let data = r.read_to_vec(i, 0).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        if let Some(hex) = e.get("hex") {
            assert_eq!(hex_lower(&data), hex.as_text().unwrap(), "{ctx}");
        }
        assert_eq!(
            hex_lower(&Sha256::digest(&data)),
            e.get("sha256").unwrap().as_text().unwrap(),
            "{ctx}"
        );
        // Views agree with reads.
        assert_eq!(r.view(i, 0).unwrap().data, &data[..], "{ctx}");
    }
    r.verify().unwrap();
    expected.len()
}
