//! Compact JSON rendering and strict, bounded JSON parsing of CBOR values (attributes over the C ABI).

use crate::cbor::Value;
use std::collections::HashSet;
use std::fmt::{self, Write};

/// Renders a value as compact JSON (see [`write_json`] for the mapping).
pub fn to_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

/// Appends compact JSON: bytes as `{"$bytes":hex}`, tags as `{"$tag":n,"value":v}`, simple values as
/// `{"$simple":n}`, undefined and non-finite floats as null, non-text map keys as their JSON text.
pub fn write_json(value: &Value, out: &mut String) {
    // Writing into a String cannot fail, so the fmt::Results below are ignored.
    match value {
        Value::Unsigned(n) => _ = write!(out, "{n}"),
        Value::Negative(n) => _ = write!(out, "-{}", u128::from(*n) + 1),
        // Debug prints the shortest round-tripping form and keeps ".0" or an exponent on integral values.
        Value::Float(f) if f.is_finite() => _ = write!(out, "{f:?}"),
        Value::Float(_) | Value::Null | Value::Undefined => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Text(s) => write_string(s, out),
        Value::Bytes(bytes) => {
            out.push_str("{\"$bytes\":\"");
            bytes.iter().for_each(|b| _ = write!(out, "{b:02x}"));
            out.push_str("\"}");
        }
        Value::Simple(n) => _ = write!(out, "{{\"$simple\":{n}}}"),
        Value::Tag(tag, inner) => {
            _ = write!(out, "{{\"$tag\":{tag},\"value\":");
            write_json(inner, out);
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Map(pairs) => {
            out.push('{');
            for (i, (key, val)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match key {
                    Value::Text(s) => write_string(s, out),
                    other => write_string(&to_json(other), out),
                }
                out.push(':');
                write_json(val, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c < ' ' => _ = write!(out, "\\u{:04x}", u32::from(c)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A parse failure and the byte offset in the JSON text where it was detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset in the text where parsing went wrong.
    pub offset: usize,
    /// Description of the problem.
    pub message: String,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON error at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for JsonError {}

/// Parses exactly one JSON value (RFC 8259) into a Value, with nesting limited to `max_depth`.
///
/// Integers map to `Unsigned`/`Negative` when in range, other numbers to `Float`; an object that is exactly
/// `{"$bytes":"<even-length hex>"}` becomes `Bytes`; duplicate keys and lone surrogates are errors.
pub fn from_json(text: &str, max_depth: usize) -> Result<Value, JsonError> {
    let mut parser = Parser {
        text,
        pos: 0,
        max_depth,
    };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != text.len() {
        return parser.fail("trailing characters after the value");
    }
    Ok(value)
}

fn fail<T>(offset: usize, message: impl Into<String>) -> Result<T, JsonError> {
    Err(JsonError {
        offset,
        message: message.into(),
    })
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    max_depth: usize,
}

impl Parser<'_> {
    fn fail<T>(&self, message: impl Into<String>) -> Result<T, JsonError> {
        fail(self.pos, message)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.pos += usize::from(found);
        found
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::Text),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(_) => {
                let c = self
                    .text
                    .get(self.pos..)
                    .and_then(|s| s.chars().next())
                    .unwrap_or('?');
                self.fail(format!("unexpected character {c:?}"))
            }
            None => self.fail("unexpected end of input"),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, JsonError> {
        if !self.text.as_bytes()[self.pos..].starts_with(word.as_bytes()) {
            return self.fail(format!("invalid literal, expected {word}"));
        }
        self.pos += word.len();
        Ok(value)
    }

    fn enter(&self, depth: usize) -> Result<usize, JsonError> {
        if depth >= self.max_depth {
            return self.fail(format!("nesting deeper than {} levels", self.max_depth));
        }
        Ok(depth + 1)
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        let depth = self.enter(depth)?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            if !self.eat(b',') {
                return self.fail("expected ',' or ']'");
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        let depth = self.enter(depth)?;
        self.pos += 1;
        let mut pairs = Vec::new();
        let mut seen = HashSet::new();
        self.skip_ws();
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                let key_at = self.pos;
                if self.peek() != Some(b'"') {
                    return self.fail("expected a string key");
                }
                let key = self.string()?;
                if !seen.insert(key.clone()) {
                    return fail(key_at, format!("duplicate key {key:?}"));
                }
                self.skip_ws();
                if !self.eat(b':') {
                    return self.fail("expected ':'");
                }
                self.skip_ws();
                let value = self.value(depth)?;
                pairs.push((Value::Text(key), value));
                self.skip_ws();
                if self.eat(b'}') {
                    break;
                }
                if !self.eat(b',') {
                    return self.fail("expected ',' or '}'");
                }
            }
        }
        let bytes = match pairs.as_slice() {
            [(Value::Text(key), Value::Text(hex))] if key == "$bytes" => decode_hex(hex),
            _ => None,
        };
        Ok(bytes.map_or(Value::Map(pairs), Value::Bytes))
    }

    /// Parses a string starting at its opening quote.
    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run = self.pos;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.pos += 1;
            }
            // Both ends sit next to ASCII bytes, so they are char boundaries.
            out.push_str(&self.text[run..self.pos]);
            match self.peek() {
                None => return self.fail("unterminated string"),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                Some(_) => return self.fail("unescaped control character in string"),
            }
        }
    }

    /// Parses the escape after a backslash.
    fn escape(&mut self) -> Result<char, JsonError> {
        let at = self.pos - 1;
        let Some(byte) = self.peek() else {
            return self.fail("unterminated string");
        };
        self.pos += 1;
        Ok(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let code = match self.hex4()? {
                    high @ 0xd800..=0xdbff => {
                        let low = if self.text.as_bytes()[self.pos..].starts_with(b"\\u") {
                            self.pos += 2;
                            self.hex4()?
                        } else {
                            0
                        };
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return fail(at, "lone surrogate in \\u escape");
                        }
                        0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00)
                    }
                    0xdc00..=0xdfff => return fail(at, "lone surrogate in \\u escape"),
                    code => code,
                };
                char::from_u32(code).map_or_else(|| fail(at, "invalid \\u escape"), Ok)?
            }
            _ => return fail(at, "invalid escape"),
        })
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut code = 0;
        for _ in 0..4 {
            let Some(digit) = self.peek().and_then(|b| char::from(b).to_digit(16)) else {
                return self.fail("expected four hex digits in \\u escape");
            };
            code = code * 16 + digit;
            self.pos += 1;
        }
        Ok(code)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn require_digits(&mut self) -> Result<(), JsonError> {
        if self.digits() == 0 {
            return self.fail("expected a digit");
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return self.fail("leading zeros are not allowed");
                }
            }
            Some(b'1'..=b'9') => _ = self.digits(),
            _ => return self.fail("expected a digit"),
        }
        let int_end = self.pos;
        let fraction = self.eat(b'.');
        if fraction {
            self.require_digits()?;
        }
        let exponent = matches!(self.peek(), Some(b'e' | b'E'));
        if exponent {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.require_digits()?;
        }
        if !fraction && !exponent {
            let integer = match (negative, self.text[int_start..int_end].parse::<u128>()) {
                (false, Ok(n)) => u64::try_from(n).ok().map(Value::Unsigned),
                (true, Ok(0)) => Some(Value::Unsigned(0)),
                (true, Ok(n)) => u64::try_from(n - 1).ok().map(Value::Negative),
                (_, Err(_)) => None,
            };
            if let Some(value) = integer {
                return Ok(value);
            }
        }
        match self.text[start..self.pos].parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::Float(f)),
            Ok(_) => fail(start, "number out of the range of a 64-bit float"),
            Err(_) => fail(start, "invalid number"),
        }
    }
}

/// Decodes even-length hex of either case; None if malformed.
fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |b: u8| char::from(b).to_digit(16);
    hex.as_bytes()
        .chunks(2)
        .map(|pair| Some((nibble(pair[0])? * 16 + nibble(pair[1])?) as u8))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbor::DEFAULT_MAX_DEPTH;

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
        assert!(
            parse("1e400")
                .unwrap_err()
                .message
                .contains("out of the range")
        );
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
        assert_eq!(err_at(r#""x\ud83d""#), 2);
        assert_eq!(err_at(r#""\ud83dx""#), 1);
        assert_eq!(err_at(r#""\ud83d\u0041""#), 1);
        assert_eq!(err_at(r#""\ude00""#), 1);
        assert_eq!(err_at(r#""\u12""#), 5);
        assert_eq!(err_at(r#""\u12g4""#), 5);
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
            (r#""\x""#, 1),
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
            ("tru", 0),
            ("nul", 0),
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
            "JSON error at byte 3: unexpected character ']'"
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
}
