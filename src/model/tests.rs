//! Unit tests of `model` (kept beside it so the module itself stays readable).

use super::attributes::AttrRef;
use super::*;

#[test]
fn digest_regions_found_by_object_and_component() {
    let mut r = DigestRegions::default();
    r.push(0, 1, (10, 5));
    r.push(3, 0, (100, 50));
    r.push(3, 2, (200, 7));
    r.push(70_000, 0, (1 << 40, 1 << 33));
    assert_eq!(r.get(0, 1), Some((10, 5)));
    assert_eq!(r.get(3, 0), Some((100, 50)));
    assert_eq!(r.get(3, 2), Some((200, 7)));
    assert_eq!(r.get(70_000, 0), Some((1 << 40, 1 << 33)));
    assert_eq!(r.get(0, 0), None);
    assert_eq!(r.get(3, 1), None);
    assert_eq!(r.get(usize::MAX, 0), None);
    let all: Vec<_> = r.iter().collect();
    assert_eq!(all[1], ((3, 0), (100, 50)));
    assert_eq!(all.len(), 4);
}

#[test]
fn attributes_shared_or_own_read_and_compare_alike() {
    let cbor = crate::value::cbor::to_vec(&Value::Map(vec![(
        Value::Text("k".into()),
        Value::Bytes(vec![0, 1, 0]),
    )]));
    let mut arena = TextArena::default();
    let shared = Attributes::in_arena(&mut arena, &cbor);
    let own = Attributes::from_cbor(&cbor);
    assert!(matches!(shared.form(), AttrRef::Shared(_)));
    assert_eq!(shared.as_cbor(), &cbor[..]);
    assert!(shared == own);
    assert_eq!(shared.to_json().unwrap(), own.to_json().unwrap());
    assert_eq!(shared.widths(), None);
    // Too long to share a block: its own allocation.
    let long = crate::value::cbor::to_vec(&Value::Bytes(vec![7; 20_000]));
    let a = Attributes::in_arena(&mut arena, &long);
    assert!(matches!(a.form(), AttrRef::Own(_)));
    assert_eq!(std::mem::size_of::<Option<Attributes>>(), 8);
    let (a2, s2) = (a.clone(), shared.clone());
    assert_eq!(a.as_cbor(), &long[..]);
    drop((a, shared, arena));
    assert_eq!(a2.as_cbor(), &long[..]);
    assert_eq!(s2.as_cbor(), &cbor[..]);
    let with_widths = Attributes::from_vec_with_widths(cbor.clone(), vec![1]);
    assert!(with_widths != own);
}
