//! Metadata, preceder, index and hash frames as their CBOR bytes, never as trees: opening
//! a file with a large metadata frame costs the frame's bytes and the attributes made from
//! them (issue 14: at most 3 times the frame), however small its items are.
//!
//! A frame's bytes are validated once (well-formed, within the depth limit, one map, no
//! trailing bytes). Metadata kept as attributes is in the deterministic encoding
//! (`cbor::encode`: definite lengths, shortest heads and floats), which Tensogram writers
//! produce already (the wire format asks for RFC 8949 deterministic encoding); a frame
//! that is not is written again, once (`cbor::deterministic::transcode`), so the
//! attributes are exactly the bytes a tree would have encoded to. The rest reads the bytes
//! with `cbor::item`: a map's value by key, an array's items, a map's entries.

use std::borrow::Cow;

use crate::error::{Result, bail};
use crate::value::cbor::{deterministic, item};

pub(super) use crate::value::cbor::item::{Entries, Items, get, text, type_name, unsigned};

/// Validates `bytes` as exactly one CBOR item nested at most `depth` deep (read from file
/// offset `at`; `what` names it in errors): the checks a decode makes, without a tree.
pub(super) fn validate(bytes: &[u8], at: u64, depth: usize, what: &str) -> Result<()> {
    item::validate(bytes, depth).map_err(|e| e.positioned(what, at))
}

/// A validated CBOR map of a metadata or preceder frame in the deterministic encoding:
/// `bytes` as they are when they already are, else written again.
pub(super) fn deterministic<'s>(bytes: Cow<'s, [u8]>, at: u64) -> Result<Cow<'s, [u8]>> {
    if deterministic::is_canonical(&bytes) {
        return Ok(bytes);
    }
    deterministic::transcode(&bytes)
        .map(Cow::Owned)
        .map_err(|e| e.positioned("frame", at))
}

/// Refuses a frame's CBOR that is not a map.
pub(super) fn expect_map(bytes: &[u8], what: &str) -> Result<()> {
    let found = type_name(bytes);
    if found != "map" {
        bail!(Format, "the {what}'s CBOR is {found}, expected a map");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::cbor::{self, Value};

    #[test]
    fn frames_are_kept_or_written_again() {
        let v = Value::Map(vec![(Value::Text("a".into()), Value::Float(0.1))]);
        let bytes = cbor::to_vec(&v);
        assert!(matches!(
            deterministic(Cow::Borrowed(&bytes), 0).unwrap(),
            Cow::Borrowed(_)
        ));
        let long = [0xa1, 0x61, b'a', 0x18, 0x05];
        let again = deterministic(Cow::Borrowed(&long), 0).unwrap();
        assert_eq!(&again[..], [0xa1, 0x61, b'a', 0x05]);
        assert!(expect_map(&bytes, "frame").is_ok());
        assert!(expect_map(&[0x80], "frame").is_err());
        assert!(validate(&bytes, 0, 4, "frame").is_ok());
        let e = validate(&[0xa0, 0x00], 100, 4, "frame").unwrap_err();
        assert!(e.message().contains("file offset 101"), "{e}");
    }
}
