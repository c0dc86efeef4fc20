//! Unit tests of `typed` (kept beside it so the module itself stays readable).

use super::*;
use crate::error::ErrorKind;
use crate::value::cbor::{Value, to_vec};

fn doc(v: &Value, widths: Option<&[u8]>) -> (Vec<u8>, Doc) {
    let cbor = to_vec(v);
    let d = Doc::build(&cbor, widths, 128).unwrap();
    (cbor, d)
}

#[test]
fn scalars_strings_and_packed_arrays() {
    let v = Value::Map(vec![
        (Value::Text("n".into()), Value::Unsigned(300)),
        (Value::Text("neg".into()), Value::Negative(4)),
        (Value::Text("s".into()), Value::Text("héllo".into())),
        (
            Value::Text("a".into()),
            Value::Array(vec![Value::Unsigned(1), Value::Unsigned(2)]),
        ),
        (
            Value::Text("m".into()),
            Value::Array(vec![Value::Unsigned(1), Value::Text("x".into())]),
        ),
    ]);
    let (_cbor, d) = doc(&v, None);
    let root = d.root();
    assert_eq!(root.len().unwrap(), 5);
    let n = root.find("n").unwrap().unwrap();
    assert_eq!(n.value_type(), ValueType::U64);
    assert_eq!(n.get::<u32>().unwrap(), 300);
    assert_eq!(n.get::<u16>().unwrap(), 300);
    let e = n.get::<u8>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(e.message(), "attribute value is u64 (300), not u8");
    let neg = root.find("neg").unwrap().unwrap();
    assert_eq!(neg.get::<i8>().unwrap(), -5);
    assert!(neg.get::<u64>().is_err());
    assert_eq!(root.find("s").unwrap().unwrap().as_str().unwrap(), "héllo");
    let a = root.find("a").unwrap().unwrap();
    assert_eq!(a.as_slice::<u64>().unwrap(), &[1, 2]);
    assert_eq!(a.at(1).unwrap().get::<u8>().unwrap(), 2);
    let m = root.find("m").unwrap().unwrap();
    assert_eq!(m.elem_type().unwrap(), None);
    assert_eq!(m.string_at(1).unwrap(), b"x");
    assert!(root.find("absent").unwrap().is_none());
}

/// A 152,000-token vocabulary: the tree is smaller than twice its CBOR.
#[test]
fn a_vocabulary_costs_less_than_twice_its_encoding() {
    let tokens = (0..152_000)
        .map(|i| Value::Text(format!("tok{}", i % 100_000)))
        .collect();
    let scores = (0..152_000).map(|i| Value::Float(-f64::from(i))).collect();
    let v = Value::Map(vec![
        (Value::Text("tokens".into()), Value::Array(tokens)),
        (Value::Text("scores".into()), Value::Array(scores)),
    ]);
    let (cbor, d) = doc(&v, None);
    assert!(
        d.heap_size() < 2 * cbor.len(),
        "{} bytes of tree for {} of CBOR",
        d.heap_size(),
        cbor.len()
    );
    let tokens = d.root().find("tokens").unwrap().unwrap();
    assert_eq!(tokens.string_at(151_999).unwrap(), b"tok51999");
}

/// One-byte items: packed integers fit the budget (8 bytes for 1), alternating types
/// (a 16-byte node each) don't, and say so.
#[test]
fn the_tree_is_bounded_by_its_encoding() {
    let n = 1 << 21;
    let zeros = Value::Map(vec![(
        Value::Text("a".into()),
        Value::Array(vec![Value::Unsigned(0); n]),
    )]);
    let (_cbor, d) = doc(&zeros, None);
    let a = d.root().find("a").unwrap().unwrap();
    assert_eq!(a.as_slice::<u64>().unwrap().len(), n);

    let mixed = Value::Map(vec![(
        Value::Text("a".into()),
        Value::Array(
            (0..n)
                .map(|i| {
                    if i % 2 == 0 {
                        Value::Unsigned(0)
                    } else {
                        Value::Null
                    }
                })
                .collect(),
        ),
    )]);
    let cbor = to_vec(&mixed);
    let e = Doc::build(&cbor, None, 128).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert_eq!(
        e.message(),
        format!(
            "attributes: their typed values would take more than {} bytes (8 per byte of \
             their {}-byte encoding, plus 1048576)",
            cbor.len() * 8 + (1 << 20),
            cbor.len()
        )
    );
}

#[test]
fn widths_apply_to_top_level_values_and_nested_arrays() {
    use ValueType as T;
    let v = Value::Map(vec![
        (Value::Text("a".into()), Value::Unsigned(7)),
        (
            Value::Text("b".into()),
            Value::Array(vec![
                Value::Array(vec![Value::Negative(0)]),
                Value::Array(vec![Value::Float(0.5)]),
            ]),
        ),
        (Value::Text("c".into()), Value::Bytes(vec![0xff])),
    ]);
    let widths = [
        T::U8 as u8,
        T::Array as u8,
        T::Array as u8,
        T::Array as u8,
        T::I16 as u8,
        T::Array as u8,
        T::F32 as u8,
        T::String as u8,
    ];
    let (_cbor, d) = doc(&v, Some(&widths));
    let root = d.root();
    assert_eq!(root.find("a").unwrap().unwrap().value_type(), T::U8);
    let b = root.find("b").unwrap().unwrap();
    assert_eq!(b.elem_type().unwrap(), Some(T::Array));
    assert_eq!(b.at(0).unwrap().as_slice::<i16>().unwrap(), &[-1]);
    assert_eq!(b.at(1).unwrap().as_slice::<f32>().unwrap(), &[0.5]);
    let c = root.find("c").unwrap().unwrap();
    assert_eq!(c.value_type(), T::String);
    assert_eq!(c.string_bytes().unwrap(), &[0xff]);
}

/// Element values of an array of numbers are made on request, 1024 at a time, from
/// the tree's budget: past it `Limit` (never an abort), values made before staying
/// valid; a string asked of it makes nothing.
#[test]
fn element_values_are_made_a_chunk_at_a_time_within_the_budget() {
    let n = 1 << 21;
    let v = Value::Map(vec![(
        Value::Text("a".into()),
        Value::Array((0..n).map(|i| Value::Unsigned(i % 20)).collect()),
    )]);
    let (_cbor, d) = doc(&v, None);
    let spare = || d._spare.load(Ordering::Relaxed);
    let a = d.root().find("a").unwrap().unwrap();
    let before = spare();
    assert!(
        before < 2 << 20,
        "one-byte items packed as u64 use most of it: {before}"
    );
    let five = a.at(5).unwrap();
    assert_eq!(five.get::<u64>().unwrap(), 5);
    let table = (n as usize).div_ceil(ELEMENT_CHUNK) * size_of::<Chunk>();
    let chunk = ELEMENT_CHUNK * size_of::<Node>();
    assert_eq!(before - spare(), table + chunk);
    // The same chunk: nothing more; the last one: one chunk more.
    assert_eq!(a.at(1023).unwrap().get::<u64>().unwrap(), 1023 % 20);
    assert_eq!(before - spare(), table + chunk);
    assert_eq!(
        a.at(n as usize - 1).unwrap().get::<u64>().unwrap(),
        (n - 1) % 20
    );
    assert_eq!(before - spare(), table + 2 * chunk);
    // A string of an array of numbers: refused, nothing made.
    let e = a.string_at(3).unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (
            ErrorKind::InvalidArgument,
            "attribute value is an array of u64, not of strings"
        )
    );
    assert_eq!(before - spare(), table + 2 * chunk);
    // Every element as a value: 32 MiB of values for a budget of about 1 MiB left.
    let e = a.elements().find_map(Result::err).unwrap();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(
        e.message().starts_with(&format!(
            "attributes: the element values of an array of {n} u64 would take more"
        )),
        "{e}"
    );
    assert!(spare() < chunk);
    // Values handed out before stay.
    assert_eq!(five.get::<u64>().unwrap(), 5);
    assert_eq!(a.at(6).unwrap().get::<u64>().unwrap(), 6);
}

/// An array read as packed numbers until an element of another type comes: the
/// numbers read so far become values, in order.
#[test]
fn arrays_of_mixed_types_keep_every_element() {
    let v = Value::Map(vec![(
        Value::Text("a".into()),
        Value::Array(vec![
            Value::Unsigned(1),
            Value::Unsigned(300),
            Value::Text("x".into()),
            Value::Negative(1),
            Value::Float(0.5),
        ]),
    )]);
    let (_cbor, d) = doc(&v, None);
    let a = d.root().find("a").unwrap().unwrap();
    assert_eq!(a.elem_type().unwrap(), None);
    assert!(a.array_data().is_err());
    assert_eq!(a.at(0).unwrap().get::<u64>().unwrap(), 1);
    assert_eq!(a.at(1).unwrap().get::<u64>().unwrap(), 300);
    assert_eq!(a.at(2).unwrap().as_str().unwrap(), "x");
    assert_eq!(a.at(3).unwrap().get::<i64>().unwrap(), -2);
    assert_eq!(a.at(4).unwrap().get::<f64>().unwrap(), 0.5);
    // Floats with widths: an f32 array packs as f32.
    let f = Value::Map(vec![(
        Value::Text("f".into()),
        Value::Array(vec![Value::Float(0.25), Value::Float(-2.0)]),
    )]);
    let widths = [ValueType::Array as u8, ValueType::F32 as u8];
    let (_cbor, d) = doc(&f, Some(&widths));
    let f = d.root().find("f").unwrap().unwrap();
    assert_eq!(f.as_slice::<f32>().unwrap(), &[0.25, -2.0]);
    assert_eq!(f.at(1).unwrap().get::<f32>().unwrap(), -2.0);
}
