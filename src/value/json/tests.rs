//! Unit tests of `json` (kept beside it so the module itself stays readable).

use super::*;
use crate::value::cbor::DEFAULT_MAX_DEPTH;

fn parse(s: &str) -> Result<Value, JsonError> {
    from_json(s, DEFAULT_MAX_DEPTH)
}

fn err_at(s: &str) -> usize {
    parse(s).expect_err(s).offset
}

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

#[test]
fn renders_exact_strings() {
    use Value::*;
    let value = Map(vec![
        (text("a"), Unsigned(1)),
        (text("b"), Array(vec![Float(0.5), Null, Bool(true)])),
        (text("c"), Bytes(vec![1, 255])),
    ]);
    assert_eq!(
        to_json(&value),
        r#"{"a":1,"b":[0.5,null,true],"c":{"$bytes":"01ff"}}"#
    );
    let cases = [
        (Negative(u64::MAX), "-18446744073709551616"),
        (Negative(0), "-1"),
        (Unsigned(u64::MAX), "18446744073709551615"),
        (Float(2.0), "2.0"),
        (Float(-0.0), "-0.0"),
        (Float(0.1), "0.1"),
        (Float(1e300), "1e300"),
        (Float(1.5e-300), "1.5e-300"),
        (Float(f64::NAN), "null"),
        (Float(f64::INFINITY), "null"),
        (Float(f64::NEG_INFINITY), "null"),
        (Undefined, "null"),
        (Simple(16), r#"{"$simple":16}"#),
        (Tag(1, Box::new(Unsigned(5))), r#"{"$tag":1,"value":5}"#),
        (Bytes(vec![]), r#"{"$bytes":""}"#),
        (Array(vec![]), "[]"),
        (Map(vec![]), "{}"),
        (Map(vec![(Unsigned(1), text("a"))]), r#"{"1":"a"}"#),
        (
            Map(vec![(text("k\"1"), Null), (Array(vec![text("x")]), Null)]),
            r#"{"k\"1":null,"[\"x\"]":null}"#,
        ),
        (
            text("q\"b\\s/\n\t\r\u{8}\u{c}\u{1}\u{1f}\u{7f}é😀"),
            "\"q\\\"b\\\\s/\\n\\t\\r\\b\\f\\u0001\\u001f\u{7f}é😀\"",
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(to_json(&value), expected, "{value:?}");
    }
    let mut out = String::from("x=");
    write_json(&Value::Bool(false), &mut out);
    assert_eq!(out, "x=false");
}

#[test]
fn keys_in_keys_render_as_hex_and_output_stays_linear() {
    use Value::*;
    let one = || Map(vec![(text("a"), Unsigned(1))]);
    // A key with text keys only: its JSON text, escaped once.
    let flat = Map(vec![(one(), text("v"))]);
    assert_eq!(to_json(&flat), r#"{"{\"a\":1}":"v"}"#);
    // A key holding a map key: the hex of its CBOR (a1 a1 61 61 01 01).
    let nested = Map(vec![(Map(vec![(one(), Unsigned(1))]), text("v"))]);
    assert_eq!(to_json(&nested), r#"{"$cbor:a1a161610101":"v"}"#);
    // Also when the map with the map key is deeper inside the key.
    let deeper = Map(vec![(Array(vec![Tag(7, Box::new(flat.clone()))]), Null)]);
    let hex = crate::value::cbor::to_vec(&Array(vec![Tag(7, Box::new(flat.clone()))]))
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    assert_eq!(to_json(&deeper), format!(r#"{{"$cbor:{hex}":null}}"#));
    for v in [&flat, &nested, &deeper] {
        assert_eq!(
            cbor_to_json(&crate::value::cbor::to_vec(v)).unwrap(),
            to_json(v)
        );
    }
    // Keys 40 deep in keys (the fuzzer's 838-byte file rendered to gigabytes).
    let mut key = one();
    for _ in 0..40 {
        key = Map(vec![(key, Unsigned(1))]);
    }
    let deep = Map(vec![(key, text("v"))]);
    let bytes = crate::value::cbor::to_vec(&deep);
    let json = cbor_to_json(&bytes).unwrap();
    assert_eq!(json, to_json(&deep));
    assert_eq!(json.len(), 2 * (bytes.len() - 3) + 14, "{json}");
}

#[test]
fn cbor_bytes_render_as_their_value_does() {
    use Value::*;
    let values = [
        Map(vec![
            (text("a"), Unsigned(1)),
            (
                text("b"),
                Array(vec![Float(0.5), Null, Bool(true), Undefined]),
            ),
            (text("c"), Bytes((0..=255).collect())),
            (Unsigned(7), Negative(u64::MAX)),
            (Array(vec![text("x")]), Tag(1, Box::new(Simple(16)))),
            (Bytes(vec![1]), Float(f64::INFINITY)),
            (text("q\"\u{1}é😀"), Map(vec![])),
        ]),
        Array(vec![Unsigned(0); 1000]),
        Tag(u64::MAX, Box::new(Array(vec![]))),
        Simple(255),
    ];
    for value in values {
        let bytes = crate::value::cbor::to_vec(&value);
        assert_eq!(cbor_to_json(&bytes).unwrap(), to_json(&value), "{value:?}");
    }
    // Indefinite lengths and chunked strings render as their definite forms do.
    let chunked = [
        0xbf, 0x7f, 0x61, b'k', 0x61, b'y', 0xff, 0x5f, 0x41, 1, 0x41, 2, 0xff, 0xff,
    ];
    assert_eq!(
        cbor_to_json(&chunked).unwrap(),
        r#"{"ky":{"$bytes":"0102"}}"#
    );
    // Malformed bytes are an error, not a panic or a partial string.
    for bad in [
        &[0x82, 0x01][..],
        &[0xff],
        &[0x01, 0x02],
        &[0x62, 0xc3, 0x28],
    ] {
        assert!(cbor_to_json(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn duplicate_keys_are_placed_at_the_key() {
    assert_eq!(err_at(r#"{"a":1, "a" :2}"#), 8);
    assert_eq!(err_at(r#"{"k\"":1,"k\"":2}"#), 9);
    assert_eq!(err_at("{\"x\":{\"a\":1,\n\"a\":2}}"), 13);
    assert_eq!(
        parse(r#"{"a":1,"a":2}"#).unwrap_err().message,
        "duplicate key \"a\""
    );
}

#[test]
fn floats_stay_floats_and_parse_back() {
    for f in [
        2.0,
        -3.0,
        0.5,
        1e300,
        -1e-300,
        1e16,
        1e17,
        123456789.125,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        0.1 + 0.2,
    ] {
        let json = to_json(&Value::Float(f));
        assert!(json.contains(['.', 'e']), "{json}");
        assert_eq!(parse(&json).unwrap(), Value::Float(f), "{json}");
    }
    let negative_zero = parse("-0.0").unwrap();
    assert!(matches!(negative_zero, Value::Float(f) if f == 0.0 && f.is_sign_negative()));
}

#[test]
fn parses_numbers() {
    use Value::*;
    let cases = [
        ("0", Unsigned(0)),
        ("-0", Unsigned(0)),
        ("7", Unsigned(7)),
        ("-1", Negative(0)),
        ("18446744073709551615", Unsigned(u64::MAX)),
        ("18446744073709551616", Float(18446744073709551616.0)),
        ("-18446744073709551616", Negative(u64::MAX)),
        ("-18446744073709551617", Float(-18446744073709551617.0)),
        ("1000000000000000000000000000000000000000000", Float(1e42)),
        ("1.5", Float(1.5)),
        ("-0.25", Float(-0.25)),
        ("1e2", Float(100.0)),
        ("1E+2", Float(100.0)),
        ("25e-1", Float(2.5)),
        ("0.0", Float(0.0)),
    ];
    for (json, expected) in cases {
        assert_eq!(parse(json).unwrap(), expected, "{json}");
    }
    // Beyond f64: refused rather than silently stored as infinity.
    assert!(parse("1e400").unwrap_err().message.contains("out of range"));
    assert!(parse("-1e400").is_err());
}

#[test]
fn parses_strings_and_escapes() {
    assert_eq!(
        parse(r#""a\"\\\/\b\f\n\r\t""#).unwrap(),
        text("a\"\\/\u{8}\u{c}\n\r\t")
    );
    assert_eq!(parse(r#""\u00e9\u00E9\u0000""#).unwrap(), text("éé\0"));
    assert_eq!(parse(r#""\ud83d\ude00!""#).unwrap(), text("😀!"));
    assert_eq!(parse("\"é😀 raw\"").unwrap(), text("é😀 raw"));
    // Offsets are where serde_json notices the problem: after the escape.
    assert_eq!(err_at(r#""x\ud83d""#), 8);
    assert_eq!(err_at(r#""\ud83dx""#), 7);
    assert_eq!(err_at(r#""\ud83d\u0041""#), 12);
    assert_eq!(err_at(r#""\ude00""#), 6);
    assert_eq!(err_at(r#""\u12""#), 6);
    assert_eq!(err_at(r#""\u12g4""#), 6);
    assert!(
        parse(r#""\ude00""#)
            .unwrap_err()
            .message
            .contains("surrogate")
    );
}

#[test]
fn bytes_objects() {
    assert_eq!(
        parse(r#"{"$bytes":"01fFaB"}"#).unwrap(),
        Value::Bytes(vec![1, 255, 0xab])
    );
    assert_eq!(
        parse(r#" { "$bytes" : "" } "#).unwrap(),
        Value::Bytes(vec![])
    );
    // Anything not exactly of that form stays a map.
    for json in [
        r#"{"$bytes":"0"}"#,
        r#"{"$bytes":"zz"}"#,
        r#"{"$bytes":1}"#,
        r#"{"$bytes":"00","x":1}"#,
    ] {
        assert!(parse(json).unwrap().is_map(), "{json}");
    }
}

#[test]
fn round_trips() {
    use Value::*;
    let value = Map(vec![
        (text("name"), text("w\u{1}\"\\é😀")),
        (
            text("shape"),
            Array(vec![
                Unsigned(0),
                Unsigned(u64::MAX),
                Negative(0),
                Negative(u64::MAX),
            ]),
        ),
        (
            text("floats"),
            Array(vec![
                Float(2.0),
                Float(-0.5),
                Float(1e300),
                Float(1.0 / 3.0),
                Float(-0.0),
            ]),
        ),
        (text("bytes"), Bytes((0..=255).collect())),
        (
            text("nested"),
            Map(vec![(
                text(""),
                Array(vec![Map(vec![]), Array(vec![]), Null, Bool(false)]),
            )]),
        ),
    ]);
    let json = to_json(&value);
    assert_eq!(parse(&json).unwrap(), value);
    let pretty = "\n{ \"a\" : [ 1 ,\t2 ] ,\r\n \"b\" : { } }\n";
    assert_eq!(to_json(&parse(pretty).unwrap()), r#"{"a":[1,2],"b":{}}"#);
}

#[test]
fn rejects_malformed_json() {
    let cases = [
        ("[1,2,]", 5),
        ("{\"a\":1,}", 7),
        ("\"abc", 4),
        ("[\"abc", 5),
        (r#""\x""#, 2),
        ("01", 1),
        ("-01", 2),
        ("[01]", 2),
        ("1.", 2),
        (".5", 0),
        ("1e", 2),
        ("1e+", 3),
        ("+1", 0),
        ("-", 1),
        ("1 2", 2),
        ("", 0),
        ("   ", 3),
        ("\"a\nb\"", 2),
        (r#"{"a":1,"a":2}"#, 7),
        (r#"{"a" 1}"#, 5),
        ("{1:2}", 1),
        ("[1 2]", 3),
        ("tru", 3),
        ("nul", 3),
        ("True", 0),
        ("NaN", 0),
        ("{\"a\":1}}", 7),
        ("\u{feff}1", 0),
    ];
    for (json, offset) in cases {
        assert_eq!(err_at(json), offset, "{json:?}");
    }
    assert_eq!(
        parse("[1,]").unwrap_err().to_string(),
        "JSON error at byte 3: trailing comma"
    );
}

#[test]
fn depth_is_bounded() {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let bomb = "[".repeat(100_000);
            assert_eq!(parse(&bomb).unwrap_err().offset, DEFAULT_MAX_DEPTH);
            let objects = "{\"a\":".repeat(100_000);
            assert_eq!(parse(&objects).unwrap_err().offset, DEFAULT_MAX_DEPTH * 5);
            let ok = format!(
                "{}{}",
                "[".repeat(DEFAULT_MAX_DEPTH),
                "]".repeat(DEFAULT_MAX_DEPTH)
            );
            assert_eq!(to_json(&parse(&ok).unwrap()), ok);
            let over = format!("[{ok}]");
            assert_eq!(parse(&over).unwrap_err().offset, DEFAULT_MAX_DEPTH);
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(from_json("1", 0).unwrap(), Value::Unsigned(1));
    assert!(from_json("[]", 0).is_err());
}
