//! Unit tests of the decoder, the cursor and the encoder.

use super::cursor::short_eq;
use super::*;

/// Bytes from hex text (shared with `deterministic`'s tests).
pub(crate) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn dec(s: &str) -> Result<Value, DecodeError> {
    decode(&hex(s), DEFAULT_MAX_DEPTH)
}

fn err_at(s: &str) -> usize {
    dec(s).expect_err(s).offset
}

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

/// Runs `f` on a thread with a 2 MiB stack, like a default spawned thread.
fn on_small_stack<F: FnOnce() + Send + 'static>(f: F) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn rfc_8949_encodings() {
    use Value::*;
    let cases = [
        (Unsigned(0), "00"),
        (Unsigned(23), "17"),
        (Unsigned(24), "1818"),
        (Unsigned(1000), "1903e8"),
        (Unsigned(1000000), "1a000f4240"),
        (Unsigned(1000000000000), "1b000000e8d4a51000"),
        (Unsigned(u64::MAX), "1bffffffffffffffff"),
        (Negative(u64::MAX), "3bffffffffffffffff"),
        (Negative(0), "20"),
        (Negative(999), "3903e7"),
        (Float(0.0), "f90000"),
        (Float(-0.0), "f98000"),
        (Float(0.5), "f93800"),
        (Float(1.5), "f93e00"),
        (Float(65504.0), "f97bff"),
        (Float(100000.0), "fa47c35000"),
        (Float(3.4028234663852886e38), "fa7f7fffff"),
        (Float(1.1), "fb3ff199999999999a"),
        (Float(1.0e300), "fb7e37e43c8800759c"),
        (Float(5.960464477539063e-8), "f90001"),
        (Float(0.00006103515625), "f90400"),
        (Float(-4.0), "f9c400"),
        (Float(f64::INFINITY), "f97c00"),
        (Float(f64::NEG_INFINITY), "f9fc00"),
        (Float(f64::NAN), "f97e00"),
        (text(""), "60"),
        (text("a"), "6161"),
        (text("\u{00fc}"), "62c3bc"),
        (Bytes(vec![]), "40"),
        (Bytes(vec![1, 2]), "420102"),
        (Array(vec![]), "80"),
        (
            Array(vec![Unsigned(1), Array(vec![Unsigned(2), Unsigned(3)])]),
            "8201820203",
        ),
        (
            Array((1..=25).map(Unsigned).collect()),
            "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
        ),
        (Map(vec![]), "a0"),
        (Map(vec![(text("a"), Unsigned(1))]), "a1616101"),
        (
            Map(vec![(Unsigned(1), Unsigned(2)), (Unsigned(3), Unsigned(4))]),
            "a201020304",
        ),
        (Tag(1, Box::new(Unsigned(1363896240))), "c11a514b67b0"),
        (Tag(0, Box::new(text("a"))), "c06161"),
        (Bool(false), "f4"),
        (Bool(true), "f5"),
        (Null, "f6"),
        (Undefined, "f7"),
        (Simple(16), "f0"),
        (Simple(255), "f8ff"),
    ];
    for (value, expected) in cases {
        assert_eq!(to_vec(&value), hex(expected), "{value:?}");
        let back = dec(expected).unwrap();
        match value {
            Float(f) if f.is_nan() => assert!(matches!(back, Float(g) if g.is_nan())),
            _ => assert_eq!(back, value, "{expected}"),
        }
    }
}

#[test]
fn heads_with_non_shortest_arguments() {
    assert_eq!(dec("17").unwrap(), Value::Unsigned(23));
    assert_eq!(dec("1800").unwrap(), Value::Unsigned(0));
    assert_eq!(dec("190001").unwrap(), Value::Unsigned(1));
    assert_eq!(dec("1a00000001").unwrap(), Value::Unsigned(1));
    assert_eq!(dec("1b0000000000000001").unwrap(), Value::Unsigned(1));
    assert_eq!(dec("3800").unwrap(), Value::Negative(0));
    assert_eq!(dec("5800").unwrap(), Value::Bytes(vec![]));
    assert_eq!(err_at("790001"), 3); // one byte declared, none left
    assert_eq!(dec("79000161").unwrap(), text("a"));
    assert_eq!(
        dec("9a0000000101").unwrap(),
        Value::Array(vec![Value::Unsigned(1)])
    );
    assert_eq!(
        dec("bb00000000000000010102").unwrap(),
        Value::Map(vec![(Value::Unsigned(1), Value::Unsigned(2))])
    );
    assert_eq!(
        dec("d81801").unwrap(),
        Value::Tag(24, Box::new(Value::Unsigned(1)))
    );
    assert_eq!(
        dec("db000000000000000101").unwrap(),
        Value::Tag(1, Box::new(Value::Unsigned(1)))
    );
}

#[test]
fn reserved_additional_info_is_rejected() {
    for major in 0u8..8 {
        for info in 28u8..=30 {
            let byte = (major << 5) | info;
            assert_eq!(
                decode(&[byte, 0, 0, 0, 0, 0, 0, 0, 0], 8)
                    .unwrap_err()
                    .offset,
                0,
                "{byte:#x}"
            );
        }
    }
    assert_eq!(err_at("811c"), 1);
}

#[test]
fn indefinite_lengths() {
    assert_eq!(
        dec("5f42010243030405ff").unwrap(),
        Value::Bytes(vec![1, 2, 3, 4, 5])
    );
    assert_eq!(dec("5fff").unwrap(), Value::Bytes(vec![]));
    assert_eq!(
        dec("7f657374726561646d696e67ff").unwrap(),
        text("streaming")
    );
    assert_eq!(dec("9fff").unwrap(), Value::Array(vec![]));
    let nested = dec("9f018202039f0405ffff").unwrap();
    assert_eq!(to_vec(&nested), hex("8301820203820405"));
    let map = dec("bf61610161629f0203ffff").unwrap();
    assert_eq!(to_vec(&map), hex("a26161016162820203"));
    assert_eq!(
        dec("a26161bf61620361630461647f616561ffffff")
            .unwrap_err()
            .offset,
        16
    ); // 0xff is not UTF-8
    // Chunks must be definite strings of the same major type.
    assert_eq!(err_at("5f6161ff"), 1);
    assert_eq!(err_at("7f4161ff"), 1);
    assert_eq!(err_at("5f5f4101ffff"), 1);
    assert_eq!(err_at("7f617801ff"), 3);
    // Break missing, or an odd number of items in a map.
    assert_eq!(err_at("5f4101"), 3);
    assert_eq!(err_at("9f0102"), 3);
    assert_eq!(err_at("bf01ff"), 2);
    // Indefinite length on integers and tags.
    assert_eq!(err_at("1f"), 0);
    assert_eq!(err_at("3f"), 0);
    assert_eq!(err_at("df01"), 0);
}

#[test]
fn stray_break_is_rejected() {
    assert_eq!(err_at("ff"), 0);
    assert_eq!(err_at("81ff"), 1);
    assert_eq!(err_at("a1ff01"), 1);
    assert_eq!(err_at("a101ff"), 2);
    assert_eq!(err_at("c1ff"), 1);
    assert_eq!(err_at("9f01c1ffff"), 3);
}

#[test]
fn floats_decode_exactly() {
    let cases: [(&str, f64); 12] = [
        ("f90000", 0.0),
        ("f93c00", 1.0),
        ("f9c000", -2.0),
        ("f97bff", 65504.0),
        ("f90001", 5.960464477539063e-8),
        ("f903ff", 0.00006097555160522461),
        ("f90400", 0.00006103515625),
        ("f97c00", f64::INFINITY),
        ("f9fc00", f64::NEG_INFINITY),
        ("fa47c35000", 100000.0),
        ("fb3ff199999999999a", 1.1),
        ("fa00000001", f64::from(f32::from_bits(1))),
    ];
    for (h, expected) in cases {
        assert_eq!(dec(h).unwrap(), Value::Float(expected), "{h}");
    }
    assert!(matches!(dec("f98000").unwrap(), Value::Float(f) if f == 0.0 && f.is_sign_negative()));
    for h in [
        "f97e00",
        "f97c01",
        "f9fe00",
        "fa7fc00000",
        "fb7ff8000000000000",
    ] {
        assert!(
            matches!(dec(h).unwrap(), Value::Float(f) if f.is_nan()),
            "{h}"
        );
    }
}

#[test]
fn every_half_float_round_trips_through_f64() {
    for bits in 0..=u16::MAX {
        let wire = [0xf9, (bits >> 8) as u8, bits as u8];
        let Value::Float(f) = decode(&wire, 0).unwrap() else {
            panic!("not a float")
        };
        if f.is_nan() {
            assert_eq!((bits >> 10) & 0x1f, 0x1f);
            continue;
        }
        assert_eq!(to_vec(&Value::Float(f)), wire, "{bits:#06x}");
    }
}

#[test]
fn floats_use_the_shortest_exact_width() {
    let width = |f: f64| to_vec(&Value::Float(f)).len();
    assert_eq!(width(65504.0), 3);
    assert_eq!(width(65505.0), 5);
    assert_eq!(width(2f64.powi(-24)), 3);
    assert_eq!(width(2f64.powi(-25)), 5);
    assert_eq!(width(3.0 * 2f64.powi(-24)), 3);
    assert_eq!(width(1.0 + 2f64.powi(-10)), 3);
    assert_eq!(width(1.0 + 2f64.powi(-11)), 5);
    assert_eq!(width(f64::from(f32::MAX)), 5);
    assert_eq!(width(f64::from(f32::from_bits(1))), 5);
    assert_eq!(width(f64::MAX), 9);
    assert_eq!(width(f64::MIN_POSITIVE), 9);
    assert_eq!(width(0.1), 9);
}

#[test]
fn simple_values() {
    assert_eq!(dec("f4").unwrap(), Value::Bool(false));
    assert_eq!(dec("f5").unwrap(), Value::Bool(true));
    assert_eq!(dec("f6").unwrap(), Value::Null);
    assert_eq!(dec("f7").unwrap(), Value::Undefined);
    assert_eq!(dec("e0").unwrap(), Value::Simple(0));
    assert_eq!(dec("f3").unwrap(), Value::Simple(19));
    assert_eq!(dec("f820").unwrap(), Value::Simple(32));
    assert_eq!(dec("f8ff").unwrap(), Value::Simple(255));
    for h in ["f800", "f814", "f818", "f81f"] {
        assert_eq!(err_at(h), 0, "{h}");
    }
    assert_eq!(err_at("f8"), 1);
}

#[test]
fn text_must_be_utf8() {
    assert_eq!(dec("62c3bc").unwrap(), text("ü"));
    assert_eq!(err_at("62c328"), 1);
    assert_eq!(err_at("6361ed"), 1); // truncated before the check
    assert_eq!(err_at("63616180"), 3);
    assert_eq!(err_at("63eda080"), 1); // encoded surrogate
    // A code point split across chunks is invalid.
    assert_eq!(err_at("7f61c361bcff"), 2);
    // Byte strings carry any bytes.
    assert_eq!(dec("42c328").unwrap(), Value::Bytes(vec![0xc3, 0x28]));
}

#[test]
fn depth_is_bounded() {
    let nest = |prefix: u8, n: usize| {
        let mut v = vec![prefix; n];
        v.push(0x00);
        v
    };
    on_small_stack(move || {
        let bomb = vec![0x81u8; 10_000];
        assert_eq!(decode(&bomb, DEFAULT_MAX_DEPTH).unwrap_err().offset, 128);
        for byte in [0x81, 0x9f, 0xc1] {
            let ok = if byte == 0x9f {
                let mut v = vec![0x9f; 128];
                v.push(0);
                v.extend([0xff; 128]);
                v
            } else {
                nest(byte, 128)
            };
            let value = decode(&ok, DEFAULT_MAX_DEPTH).unwrap();
            assert_eq!(
                to_vec(&value).len(),
                if byte == 0x9f { 129 } else { ok.len() }
            );
            assert!(decode(&ok, 127).is_err());
        }
        let mut maps = Vec::new();
        for _ in 0..129 {
            maps.extend([0xa1, 0x00]);
        }
        maps.push(0x00);
        assert_eq!(decode(&maps, DEFAULT_MAX_DEPTH).unwrap_err().offset, 256);
        assert!(decode(&maps[2..], DEFAULT_MAX_DEPTH).is_ok());
    });
    assert_eq!(decode(&[0x00], 0).unwrap(), Value::Unsigned(0));
    assert_eq!(decode(&[0x80], 0).unwrap_err().offset, 0);
    assert_eq!(decode(&[0x80], 1).unwrap(), Value::Array(vec![]));
}

#[test]
fn declared_lengths_are_checked_before_allocating() {
    // Byte and text strings of length 2^60 in a 10-byte input.
    assert_eq!(err_at("5b1000000000000000"), 9);
    assert_eq!(err_at("7b100000000000000000"), 9);
    assert_eq!(err_at("5bffffffffffffffff00"), 9);
    // Arrays need one byte per item, maps two.
    assert_eq!(err_at("9bffffffffffffffff00"), 9);
    assert_eq!(err_at("9a7fffffff00"), 5);
    assert_eq!(err_at("bb800000000000000000"), 9);
    assert!(dec("83010203").is_ok());
    assert_eq!(err_at("830102"), 1);
    assert_eq!(err_at("a2010201"), 1);
    assert_eq!(dec("a201020304").unwrap().as_map().unwrap().len(), 2);
    // Inside an indefinite string chunk.
    assert_eq!(err_at("5f5bffffffffffffffff00ff"), 10);
}

fn sample() -> Value {
    use Value::*;
    Map(vec![
        (text("name"), text("weight \u{1F600} ü")),
        (
            text("shape"),
            Array(vec![
                Unsigned(3),
                Unsigned(300),
                Unsigned(70000),
                Unsigned(5_000_000_000),
            ]),
        ),
        (
            text("neg"),
            Array(vec![
                Negative(0),
                Negative(23),
                Negative(24),
                Negative(u64::MAX),
            ]),
        ),
        (
            text("floats"),
            Array(vec![
                Float(0.5),
                Float(-1.0e-300),
                Float(3.25e10),
                Float(f64::INFINITY),
                Float(0.1),
            ]),
        ),
        (Unsigned(7), Bytes((0..=255).collect())),
        (
            Negative(3),
            Map(vec![
                (Bool(true), Null),
                (Undefined, Simple(5)),
                (Simple(200), Bool(false)),
            ]),
        ),
        (
            Array(vec![]),
            Tag(42, Box::new(Tag(u64::MAX, Box::new(Map(vec![]))))),
        ),
        (Bytes(vec![]), Array(vec![text(""), text(&"x".repeat(300))])),
    ])
}

#[test]
fn fast_paths_take_their_item_or_nothing() {
    let unsigned = |b: &[u8]| {
        let mut c = Cursor::new(b, 4);
        (c.take_unsigned(), c.position())
    };
    assert_eq!(unsigned(&[0x17]), (Some(23), 1));
    assert_eq!(unsigned(&[0x18, 0x05]), (Some(5), 2));
    assert_eq!(unsigned(&[0x19, 1, 2]), (Some(0x102), 3));
    assert_eq!(
        unsigned(&[0x1b, 1, 2, 3, 4, 5, 6, 7, 8]),
        (Some(0x0102_0304_0506_0708), 9)
    );
    for nothing in [
        &[0x18][..],
        &[0x1a, 1, 2, 3],
        &[0x1c],
        &[0x20],
        &[0x60],
        &[],
    ] {
        assert_eq!(unsigned(nothing), (None, 0), "{nothing:?}");
    }
    let text = |b: &[u8]| {
        let mut c = Cursor::new(b, 4);
        (c.take_short_text().map(str::to_owned), c.position())
    };
    assert_eq!(text(b"\x63abc"), (Some("abc".into()), 4));
    assert_eq!(text(b"\x60"), (Some(String::new()), 1));
    assert_eq!(text(b"\x78\x03xyz!"), (Some("xyz".into()), 5));
    assert_eq!(text(&[0x62, 0xc3, 0xa9]), (Some("\u{e9}".into()), 3));
    for nothing in [
        &[0x62, 0xff, 0xfe][..],
        &[0x64, b'a'],
        &[0x79, 0, 1, b'a'],
        &[0x7f],
        &[0x40],
    ] {
        assert_eq!(text(nothing), (None, 0), "{nothing:?}");
    }
    let container = |b: &[u8], major: u8, depth: usize| {
        let mut c = Cursor::new(b, 4);
        let len = c.take_short_container(major, depth).map(|l| match l {
            Len::Definite(n) => n,
            Len::Indefinite => u64::MAX,
        });
        (len, c.position())
    };
    assert_eq!(container(&[0xa1, 0x01, 0x02], 5, 0), (Some(1), 1));
    assert_eq!(container(&[0x82, 0x01, 0x02], 4, 0), (Some(2), 1));
    assert_eq!(container(&[0x80], 4, 3), (Some(0), 1));
    // Wrong major, long or indefinite lengths, more items than bytes, too deep.
    assert_eq!(container(&[0x82, 0x01, 0x02], 5, 0), (None, 0));
    assert_eq!(container(&[0x98, 0x01, 0x00], 4, 0), (None, 0));
    assert_eq!(container(&[0x9f, 0xff], 4, 0), (None, 0));
    assert_eq!(container(&[0xa5, 0x00], 5, 0), (None, 0));
    assert_eq!(container(&[0x80], 4, 4), (None, 0));
}

#[test]
fn short_eq_finds_a_difference_at_every_position() {
    let a: Vec<u8> = (1..=24).collect();
    for n in 0..=24 {
        assert!(short_eq(&a[..n], &a[..n]), "{n}");
        for at in 0..n {
            let mut b = a[..n].to_vec();
            b[at] ^= 0x40;
            assert!(!short_eq(&a[..n], &b), "{n} {at}");
        }
    }
}

#[test]
fn encode_decode_round_trip() {
    let value = sample();
    let bytes = to_vec(&value);
    assert_eq!(decode(&bytes, DEFAULT_MAX_DEPTH).unwrap(), value);
    let mut appended = vec![0xaa];
    encode(&value, &mut appended);
    assert_eq!(&appended[1..], &bytes[..]);
    let nan = decode(&to_vec(&Value::Float(f64::NAN)), 0).unwrap();
    assert!(matches!(nan, Value::Float(f) if f.is_nan()));
}

#[test]
fn truncated_input_errors_everywhere() {
    let bytes = to_vec(&sample());
    for len in 0..bytes.len() {
        let err = decode(&bytes[..len], DEFAULT_MAX_DEPTH).unwrap_err();
        assert!(err.offset <= len, "prefix {len}: {err}");
        assert!(err.message.contains("end of input"), "prefix {len}: {err}");
    }
    assert_eq!(err_at(""), 0);
    assert_eq!(err_at("19"), 1);
    assert_eq!(err_at("1b000000"), 1);
    assert_eq!(err_at("fb3ff1"), 1);
    assert_eq!(err_at("826161"), 3);
}

#[test]
fn trailing_bytes_and_prefix_decoding() {
    assert_eq!(err_at("0000"), 1);
    assert_eq!(
        decode_prefix(&hex("820102ff"), 4).unwrap(),
        (
            Value::Array(vec![Value::Unsigned(1), Value::Unsigned(2)]),
            3
        )
    );
    let err = dec("0000").unwrap_err();
    assert_eq!(
        err.to_string(),
        "CBOR error at byte 1: trailing bytes after the item"
    );
}

#[test]
fn integer_extremes() {
    assert_eq!(
        dec("3bffffffffffffffff").unwrap(),
        Value::Negative(u64::MAX)
    );
    assert_eq!(dec("1bffffffffffffffff").unwrap().as_u64(), Some(u64::MAX));
    assert_eq!(dec("3bffffffffffffffff").unwrap().as_u64(), None);
}

#[test]
fn accessors() {
    let value = sample();
    assert!(value.is_map());
    assert_eq!(
        value.get("name").and_then(Value::as_text),
        Some("weight \u{1F600} ü")
    );
    assert_eq!(
        value
            .get("shape")
            .and_then(Value::as_array)
            .map(<[Value]>::len),
        Some(4)
    );
    assert_eq!(
        value.get("shape").unwrap().as_array().unwrap()[1].as_u64(),
        Some(300)
    );
    assert_eq!(value.get("missing"), None);
    assert_eq!(Value::Null.get("name"), None);
    assert_eq!(
        Value::Map(vec![
            (text("k"), Value::Unsigned(1)),
            (text("k"), Value::Unsigned(2))
        ])
        .get("k"),
        Some(&Value::Unsigned(1))
    );
    assert_eq!(value.as_map().unwrap().len(), 8);
    assert!(value.as_array().is_none() && value.as_text().is_none() && value.as_u64().is_none());
    assert!(!Value::Array(vec![]).is_map());
    let names: Vec<_> = [
        Value::Unsigned(0),
        Value::Negative(0),
        Value::Float(0.0),
        text(""),
        Value::Bytes(vec![]),
        Value::Bool(true),
        Value::Null,
        Value::Undefined,
        Value::Simple(0),
        Value::Array(vec![]),
        Value::Map(vec![]),
        Value::Tag(0, Box::new(Value::Null)),
    ]
    .iter()
    .map(Value::type_name)
    .collect();
    assert_eq!(
        names,
        [
            "unsigned integer",
            "negative integer",
            "float",
            "text",
            "bytes",
            "bool",
            "null",
            "undefined",
            "simple value",
            "array",
            "map",
            "tag"
        ]
    );
}
