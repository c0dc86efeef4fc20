//! Files written by the reference implementation (PyPI ztensor 1.2.3 and 0.1.4, see
//! tests/vectors/reference/README.md) read exactly as their .json descriptions say.

use std::path::{Path, PathBuf};

use ztensor::cbor::Value;
use ztensor::json::from_json;
use ztensor::{Reader, hex_lower};

mod common;
use common::same;

fn vectors() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/reference");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "zt"))
        .collect();
    files.sort();
    files
}

fn text(v: &Value) -> &str {
    v.as_text()
        .unwrap_or_else(|| panic!("expected text, got {v:?}"))
}

fn attrs_or_empty(v: Option<&Value>) -> Value {
    v.cloned().unwrap_or(Value::Map(vec![]))
}

fn check_file(path: &Path) {
    let json_path = path.with_extension("json");
    let expected = from_json(&std::fs::read_to_string(&json_path).unwrap(), 64)
        .unwrap_or_else(|e| panic!("{}: {e}", json_path.display()));
    let r = Reader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ctx = path.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(r.version(), text(expected.get("version").unwrap()), "{ctx}");
    let want_attrs = attrs_or_empty(expected.get("attributes"));
    assert!(
        same(&attrs_or_empty(r.attributes().as_ref()), &want_attrs),
        "{ctx}: file attributes {:?}",
        r.attributes()
    );

    let want_objects = expected.get("objects").unwrap().as_array().unwrap();
    let mut ours: Vec<usize> = (0..r.objects().len()).collect();
    ours.sort_by_key(|&i| r.objects()[i].name().to_owned());
    assert_eq!(ours.len(), want_objects.len(), "{ctx}: object count");
    for (&oi, want) in ours.iter().zip(want_objects) {
        let obj = &r.objects()[oi];
        let octx = format!("{ctx} object '{}'", obj.name());
        assert_eq!(obj.name(), text(want.get("name").unwrap()), "{octx}");
        assert_eq!(obj.format(), text(want.get("format").unwrap()), "{octx}");
        let shape: Vec<u64> = want
            .get("shape")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(obj.shape(), &shape[..], "{octx}");
        assert!(
            same(
                &attrs_or_empty(obj.attributes().as_ref()),
                &attrs_or_empty(want.get("attributes"))
            ),
            "{octx}: attributes {:?}",
            obj.attributes()
        );
        let want_comps = want.get("components").unwrap().as_array().unwrap();
        let mut comps: Vec<usize> = (0..obj.components().len()).collect();
        comps.sort_by_key(|&i| obj.components()[i].role().to_owned());
        assert_eq!(comps.len(), want_comps.len(), "{octx}: component count");
        for (&ci, wc) in comps.iter().zip(want_comps) {
            let c = &obj.components()[ci];
            let cctx = format!("{octx} component '{}'", c.role());
            assert_eq!(c.role(), text(wc.get("role").unwrap()), "{cctx}");
            assert_eq!(c.dtype().name(), text(wc.get("dtype").unwrap()), "{cctx}");
            assert_eq!(
                c.logical_type(),
                wc.get("type").and_then(Value::as_text),
                "{cctx}"
            );
            assert_eq!(
                c.encoding().name(),
                text(wc.get("encoding").unwrap()),
                "{cctx}"
            );
            assert_eq!(
                c.digest(),
                wc.get("digest").and_then(Value::as_text),
                "{cctx}"
            );
            let data = r
                .read_to_vec(oi, ci)
                .unwrap_or_else(|e| panic!("{cctx}: {e}"));
            assert_eq!(
                hex_lower(&data),
                text(wc.get("data_hex").unwrap()),
                "{cctx}: decoded bytes"
            );
            assert_eq!(r.view(oi, ci).unwrap().data, &data[..], "{cctx}: view");
            if c.digest().is_some() {
                r.verify_component(oi, ci)
                    .unwrap_or_else(|e| panic!("{cctx}: {e}"));
            }
        }
        r.validate_values(oi)
            .unwrap_or_else(|e| panic!("{octx}: {e}"));
    }
    r.verify().unwrap();
}

#[test]
fn reference_written_files_read_exactly() {
    let files = vectors();
    assert!(
        files
            .iter()
            .any(|f| f.file_name().unwrap().to_string_lossy().starts_with("v12_")),
        "no v1.2 vectors"
    );
    assert!(
        files
            .iter()
            .any(|f| f.file_name().unwrap().to_string_lossy().starts_with("v01_")),
        "no v0.1 vectors"
    );
    for f in &files {
        check_file(f);
    }
}
