//! Our object kinds and logical types in the vocabulary of the version being written:
//! v1.2's names (`sparse_csr`, `ggml_q4_k`, `f8_e8m0fnu` ...) become v2's
//! (`zt.sparse_csr/1`, `gguf.q4_k/1`, `f8_e8m0`) when writing v2, and the other way when
//! writing v1.2, so that `zt convert` goes both ways and a copy keeps what an object is.

use crate::error::{Result, bail, err};
use crate::formats::ztensor_v2::profiles;
use crate::model::{Attributes, CText, Object};
use crate::value::cbor::{Value, deterministic};

/// The v2 layout id of an object being written: our kinds under their v2 ids
/// (`quantized_group` only when it states what `zt.quant_group/1` requires); anything
/// else must already be a namespaced, versioned id (§5.2).
pub(super) fn v2_layout(obj: &mut Object) -> Result<String> {
    let format = obj.format().to_owned();
    if format == "quantized_group" {
        // v1.2's convention names the packed part `packed_weight`.
        for c in obj.components.iter_mut() {
            if c.role() == "packed_weight" {
                c.role = CText::new("data")?;
            }
        }
        return Ok("zt.quant_group/1".into());
    }
    let layout = profiles::layout_of(&format).into_owned();
    let registered = matches!(
        layout.as_str(),
        "dense" | "zt.sparse_csr/1" | "zt.sparse_coo/1" | "zt.quant_group/1" | "zt.mx/1"
    ) || profiles::gguf_type(&layout).is_some();
    if !registered && !is_namespaced(&layout) {
        bail!(
            InvalidArgument,
            "object '{}': '{layout}' is not a zTensor v2 layout; an unregistered layout id is \
             namespaced and versioned (e.g. 'acme.paged_kv/1')",
            obj.name()
        );
    }
    Ok(layout)
}

/// `<namespace>.<name>/<version>`, outside the reserved `zt.` namespace.
fn is_namespaced(id: &str) -> bool {
    let Some((name, version)) = id.rsplit_once('/') else {
        return false;
    };
    !version.is_empty()
        && version.bytes().all(|b| b.is_ascii_digit())
        && name
            .split_once('.')
            .is_some_and(|(ns, rest)| !ns.is_empty() && !rest.is_empty())
        && !id.starts_with("zt.")
}

/// The attributes of a `ggml_<type>` object (from a GGUF file) as `gguf.<type>/1`:
/// `elems_per_block` and `block_bytes`, in place of the keys our GGUF reader derives from
/// the type (any other key is kept). None for other objects.
pub(super) fn gguf_attributes(obj: &Object) -> Result<Option<Attributes>> {
    let Some(required) = profiles::gguf_attributes(obj.format()) else {
        return Ok(None);
    };
    let Value::Map(mut pairs) = required else {
        unreachable!("a map")
    };
    if let Some(Value::Map(old)) = obj.attributes() {
        const DERIVED: [&str; 6] = [
            "ggml_type",
            "ggml_type_id",
            "block_size",
            "type_size",
            "elems_per_block",
            "block_bytes",
        ];
        pairs.extend(
            old.into_iter()
                .filter(|(k, _)| k.as_text().is_none_or(|k| !DERIVED.contains(&k))),
        );
    }
    Ok(Some(deterministic_attributes(&Value::Map(pairs))?))
}

/// Attributes as v2 stores them: deterministic CBOR of a map (no tags, no undefined or
/// other simple values, no repeated key).
pub(super) fn deterministic_attributes(value: &Value) -> Result<Attributes> {
    // §3.1: the keys of an attributes map are text that obeys the name rules (§3.5).
    if let Value::Map(pairs) = value {
        for (key, _) in pairs {
            let Some(key) = key.as_text() else {
                bail!(
                    InvalidArgument,
                    "zTensor v2 attribute keys are text, not {}",
                    key.type_name()
                );
            };
            crate::formats::ztensor_v2::check_name("an attribute", key)
                .map_err(|e| err!(InvalidArgument, "{}", e.message()))?;
        }
    }
    let bytes = deterministic::encode(value)
        .map_err(|e| err!(InvalidArgument, "attributes as zTensor v2 stores them: {e}"))?;
    Ok(Attributes::from_vec(bytes))
}

/// An object whose format or types are v2's, in v1.2's vocabulary (an object already in
/// it is unchanged): `zt.sparse_csr/1` and `zt.sparse_coo/1` are `sparse_csr` and
/// `sparse_coo`; `gguf.<type>/1` of a ggml type this build knows is `ggml_<type>` with the
/// attributes our GGUF reader gives such objects; `f8_e8m0` is `f8_e8m0fnu` and `f4_e2m1`
/// (an even count of values) `f4_e2m1fn_x2`.
pub(super) fn v1_vocabulary(obj: &mut Object) -> Result<()> {
    let format = obj.format().to_owned();
    let v1 = match format.as_str() {
        "zt.sparse_csr/1" => Some("sparse_csr".to_owned()),
        "zt.sparse_coo/1" => Some("sparse_coo".to_owned()),
        f => match profiles::gguf_type(f).and_then(block_type) {
            Some(bt) => {
                let t = |s: &str| Value::Text(s.into());
                let mut pairs = vec![
                    (t("ggml_type"), t(bt.name())),
                    (t("ggml_type_id"), Value::Unsigned(u64::from(bt.id()))),
                    (t("block_size"), Value::Unsigned(bt.block_size())),
                    (t("type_size"), Value::Unsigned(bt.type_size())),
                ];
                if let Some(Value::Map(old)) = obj.attributes() {
                    pairs.extend(old.into_iter().filter(|(k, _)| {
                        k.as_text().is_none_or(|k| {
                            !matches!(k, "elems_per_block" | "block_bytes") && !pairs_has(k)
                        })
                    }));
                }
                obj.attributes = Some(Attributes::from_value(&Value::Map(pairs)));
                Some(bt.logical_type().to_owned())
            }
            None => None,
        },
    };
    if let Some(v1) = v1 {
        obj.format = CText::new(&v1)?;
    }
    let numel = crate::dtype::numel(obj.shape());
    let dense = obj.format() == "dense";
    for c in obj.components.iter_mut() {
        let renamed = match c.logical_type() {
            Some("f8_e8m0") => Some("f8_e8m0fnu"),
            // An even count is the same bytes in v1.2's spelling (which can't say odd).
            Some("f4_e2m1") if dense && numel.is_some_and(|n| n % 2 == 0) => Some("f4_e2m1fn_x2"),
            _ => None,
        };
        if let Some(t) = renamed {
            c.logical_type = Some(CText::new(t)?);
        }
    }
    Ok(())
}

/// The keys `v1_vocabulary` sets on a ggml object.
fn pairs_has(k: &str) -> bool {
    matches!(k, "ggml_type" | "ggml_type_id" | "block_size" | "type_size")
}

/// The ggml block type of a `gguf.<type>/1` type name, when this build knows it.
fn block_type(t: &str) -> Option<&'static crate::quant::BlockType> {
    crate::quant::BLOCK_TYPES
        .iter()
        .find(|b| b.logical_type().strip_prefix("ggml_") == Some(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_ids_are_namespaced_and_versioned() {
        assert!(is_namespaced("acme.paged_kv/1"));
        assert!(!is_namespaced("paged_kv/1"));
        assert!(!is_namespaced("acme.paged_kv"));
        assert!(!is_namespaced("acme.paged_kv/x"));
        assert!(!is_namespaced("zt.new/1"));
    }
}
