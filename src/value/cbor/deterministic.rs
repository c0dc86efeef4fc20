//! RFC 8949 §4.2.1 core deterministic encoding, as zTensor v2 manifests require it: the
//! strict check a v2 reader runs over manifest bytes before parsing them, and the encoder
//! a v2 writer uses for attribute values and the content digest.
//!
//! The check refuses everything the v2 specification (§3.1) refuses: heads longer than
//! their argument needs, indefinite lengths, map keys not in ascending bytewise order of
//! their encodings (an equal key is a duplicate), floats wider than their value needs or
//! NaN other than `f9 7e00`, tags, simple values other than false, true and null, nesting
//! past the depth limit, invalid UTF-8, and bytes after the item. It walks the bytes once,
//! allocates nothing, and is iterative (a hostile depth costs no stack).
//!
//! Kept to these few functions so that it moves as one piece when CBOR moves.

use ciborium_ll::Header;

use super::Value;
use super::pull::{argument, short_head};

/// Which of the rules of deterministic CBOR an input breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DetRule {
    /// Not well-formed CBOR, or an item v2 forbids (tags, other simple values, trailing
    /// bytes, indefinite lengths).
    Syntax,
    /// Well-formed, but not in deterministic form (a non-shortest head or float, keys out
    /// of order, a NaN other than `f9 7e00`).
    Determinism,
    /// A map holds the same key twice.
    DuplicateKey,
    /// Nesting past the limit.
    Depth,
}

/// Why an input is not deterministic CBOR, and where (an offset into the input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DetError {
    pub(crate) rule: DetRule,
    pub(crate) offset: usize,
    pub(crate) message: String,
}

fn fail<T>(rule: DetRule, offset: usize, message: impl Into<String>) -> Result<T, DetError> {
    Err(DetError {
        rule,
        offset,
        message: message.into(),
    })
}

/// One open container of the walk: items left to read, whether it is a map, and for a
/// map the encoded bytes of the last key read (its start and end in the input).
struct Open {
    left: u64,
    map: bool,
    /// For a map: true when the next item is a key.
    at_key: bool,
    last_key: Option<(usize, usize)>,
    key_start: usize,
}

/// Checks that `input` is exactly one item in deterministic encoding, with no container
/// nested deeper than `max_depth` (an item inside `max_depth` containers is allowed, one
/// inside `max_depth + 1` is not: the v2 limit of 32 measured from the manifest root).
pub(crate) fn check(input: &[u8], max_depth: usize) -> Result<(), DetError> {
    let mut pos = 0usize;
    let mut stack: Vec<Open> = Vec::new();
    loop {
        // Map bookkeeping: remember where a key starts.
        if let Some(top) = stack.last_mut()
            && top.map
            && top.at_key
        {
            top.key_start = pos;
        }
        let start = pos;
        let Some(&first) = input.get(pos) else {
            return fail(DetRule::Syntax, pos, "unexpected end of input");
        };
        pos += 1;
        let (major, info) = (first >> 5, first & 0x1f);
        let mut container: Option<(u64, bool)> = None;
        if major == 7 {
            match info {
                20..=22 => {}
                23 => return fail(DetRule::Syntax, start, "undefined is not permitted"),
                24 => return fail(DetRule::Syntax, start, "simple values are not permitted"),
                25 => {
                    let h = u16::from_be_bytes(take::<2>(input, &mut pos)?);
                    let f = half::f16::from_bits(h);
                    if f.is_nan() && h != 0x7e00 {
                        return fail(DetRule::Determinism, start, "a NaN other than f9 7e00");
                    }
                }
                26 | 27 => {
                    let Some((Header::Float(x), used)) = short_head(input, start) else {
                        return Err(short(start, "a float"));
                    };
                    pos = start + used;
                    if x.is_nan() {
                        return fail(DetRule::Determinism, start, "a NaN other than f9 7e00");
                    }
                    if info == 26 && f64::from(half::f16::from_f64(x)) == x {
                        return fail(
                            DetRule::Determinism,
                            start,
                            format!("float {} in 4 bytes fits in 2", x as f32),
                        );
                    }
                    if info == 27 && f64::from(x as f32) == x {
                        return fail(
                            DetRule::Determinism,
                            start,
                            format!("float {x} in 8 bytes fits in 4 or fewer"),
                        );
                    }
                }
                31 => return fail(DetRule::Syntax, start, "unexpected break"),
                0..=19 => return fail(DetRule::Syntax, start, "simple values are not permitted"),
                _ => {
                    return fail(
                        DetRule::Syntax,
                        start,
                        format!("reserved head 0x{first:02x}"),
                    );
                }
            }
        } else {
            let arg = match info {
                0..=27 => {
                    let Some((_, arg, used)) = argument(input, start) else {
                        return Err(short(start, "an item head"));
                    };
                    pos = start + used;
                    // RFC 8949 4.2.1: the shortest head that holds the argument.
                    let least = match used {
                        1 => 0,
                        2 => 24,
                        3 => 0x100,
                        5 => 0x1_0000,
                        _ => 0x1_0000_0000,
                    };
                    if arg < least {
                        return fail(DetRule::Determinism, start, "a head longer than its value");
                    }
                    arg
                }
                31 => {
                    return fail(
                        DetRule::Syntax,
                        start,
                        "indefinite lengths are not permitted",
                    );
                }
                _ => {
                    return fail(
                        DetRule::Syntax,
                        start,
                        format!("reserved head 0x{first:02x}"),
                    );
                }
            };
            let left = (input.len() - pos) as u64;
            match major {
                0 | 1 => {}
                2 | 3 => {
                    if arg > left {
                        return Err(short(start, "a string"));
                    }
                    let body = &input[pos..pos + arg as usize];
                    if major == 3 && !body.is_ascii() && std::str::from_utf8(body).is_err() {
                        return fail(DetRule::Syntax, start, "invalid UTF-8 in text");
                    }
                    pos += arg as usize;
                }
                4 | 5 => {
                    let per = if major == 5 { 2 } else { 1 };
                    if arg.saturating_mul(per) > left {
                        return Err(short(start, "a container's items"));
                    }
                    container = Some((arg * per, major == 5));
                }
                _ => return fail(DetRule::Syntax, start, "tags are not permitted"),
            }
        }
        // An item (its head, at least) has been read: a key's end is known now.
        if let Some(top) = stack.last_mut()
            && top.map
            && top.at_key
            && container.is_none_or(|(items, _)| items == 0)
        {
            key_done(input, top, pos)?;
        }
        if let Some((items, map)) = container {
            if stack.len() >= max_depth && items > 0 {
                return fail(
                    DetRule::Depth,
                    start,
                    format!("nesting deeper than {max_depth} levels"),
                );
            }
            if items > 0 {
                stack.push(Open {
                    left: items,
                    map,
                    at_key: map,
                    last_key: None,
                    key_start: 0,
                });
                continue;
            }
        }
        // Close every container this item completed.
        loop {
            let Some(top) = stack.last_mut() else {
                if pos != input.len() {
                    return fail(DetRule::Syntax, pos, "bytes after the item");
                }
                return Ok(());
            };
            top.left -= 1;
            if top.map {
                top.at_key = !top.at_key;
            }
            if top.left > 0 {
                break;
            }
            stack.pop();
            // The container just closed may itself have been a key of its parent.
            if let Some(parent) = stack.last_mut()
                && parent.map
                && parent.at_key
            {
                key_done(input, parent, pos)?;
            }
        }
    }
}

/// Records the key that just ended at `end`, refusing it unless it sorts after the last.
fn key_done(input: &[u8], top: &mut Open, end: usize) -> Result<(), DetError> {
    let key = (top.key_start, end);
    if let Some((ps, pe)) = top.last_key {
        match input[ps..pe].cmp(&input[key.0..key.1]) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => {
                return fail(
                    DetRule::DuplicateKey,
                    key.0,
                    "a map key repeats the one before it",
                );
            }
            std::cmp::Ordering::Greater => {
                return fail(
                    DetRule::Determinism,
                    key.0,
                    "map keys are not in ascending order of their encodings",
                );
            }
        }
    }
    top.last_key = Some(key);
    Ok(())
}

fn take<const N: usize>(input: &[u8], pos: &mut usize) -> Result<[u8; N], DetError> {
    let bytes = input
        .get(*pos..*pos + N)
        .ok_or_else(|| short(*pos - 1, "a float"))?;
    *pos += N;
    Ok(bytes.try_into().expect("N bytes"))
}

fn short(at: usize, what: &str) -> DetError {
    DetError {
        rule: DetRule::Syntax,
        offset: at,
        message: format!("the input ends inside {what}"),
    }
}

/// Encodes `value` deterministically: shortest heads and floats (every NaN as `f9 7e00`),
/// definite lengths, map entries sorted by their keys' encodings. Refuses what v2
/// forbids (tags, undefined and other simple values) and maps with a repeated key.
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    encode_into(value, &mut out)?;
    Ok(out)
}

fn encode_into(value: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    match value {
        Value::Array(items) => {
            super::encode_head(out, 4, items.len() as u64);
            for item in items {
                encode_into(item, out)?;
            }
        }
        Value::Map(pairs) => {
            let mut entries = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                let (mut key, mut val) = (Vec::new(), Vec::new());
                encode_into(k, &mut key)?;
                encode_into(v, &mut val)?;
                entries.push((key, val));
            }
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
                let key = super::decode(&w[0].0, 1).map_or_else(|_| "?".into(), |k| describe(&k));
                return Err(format!("a map has the key {key} twice"));
            }
            super::encode_head(out, 5, entries.len() as u64);
            for (k, v) in entries {
                out.extend_from_slice(&k);
                out.extend_from_slice(&v);
            }
        }
        Value::Tag(..) => return Err("tags are not permitted".into()),
        Value::Undefined | Value::Simple(_) => {
            return Err(format!("{} is not permitted", value.type_name()));
        }
        scalar => super::encode(scalar, out),
    }
    Ok(())
}

fn describe(key: &Value) -> String {
    match key {
        Value::Text(s) => format!("'{s}'"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbor::tests::hex;

    fn rule(s: &str) -> Option<DetRule> {
        check(&hex(s), 32).err().map(|e| e.rule)
    }

    #[test]
    fn accepts_deterministic_items() {
        for s in [
            "00",
            "17",
            "1818",
            "1901f4",
            "1a00010000",
            "1b0000000100000000",
            "20",
            "3818",
            "40",
            "60",
            "6161",
            "80",
            "a0",
            "f4",
            "f5",
            "f6",
            "f90000",
            "f98000",
            "f97e00",
            "f97c00",
            "f93e00",
            "fa47c35000",
            "fb3ff199999999999a",
            "a2616100616201",
            "a26162006261610a", // "b" before "aa": shorter encodings sort first
            "8201820203",
            "a1a0a0", // a map as a key
        ] {
            assert_eq!(rule(s), None, "{s}");
        }
    }

    #[test]
    fn refuses_each_rule_with_its_name() {
        use DetRule::*;
        let cases = [
            ("1805", Determinism), // 5 in two bytes
            ("190005", Determinism),
            ("1a000000ff", Determinism),
            ("1b00000000ffffffff", Determinism),
            ("5800", Determinism),           // empty bytes, long head
            ("9fff", Syntax),                // indefinite array
            ("5f40ff", Syntax),              // indefinite bytes
            ("c000", Syntax),                // tag
            ("f7", Syntax),                  // undefined
            ("f0", Syntax),                  // simple(16)
            ("f820", Syntax),                // simple(32)
            ("ff", Syntax),                  // break
            ("a000", Syntax),                // trailing bytes
            ("a2616200616100", Determinism), // {"b", "a"}
            ("a2616100616100", DuplicateKey),
            ("f97e01", Determinism),     // NaN payload
            ("f9fe00", Determinism),     // negative NaN
            ("fa7fc00000", Determinism), // NaN in f32
            ("fa3fc00000", Determinism), // 1.5 fits in f16
            ("fb3ff8000000000000", Determinism),
            ("fb7ff0000000000000", Determinism), // infinity in f64
            ("62c328", Syntax),                  // invalid UTF-8
            ("7a00010000", Syntax),              // string longer than the input
            ("9b0000000100000000", Syntax),
            ("1c", Syntax), // reserved
            ("19", Syntax), // truncated head
        ];
        for (s, want) in cases {
            assert_eq!(rule(s), Some(want), "{s}");
        }
        // 1 + 2^-52 needs all 8 bytes; 100000.0 needs 4.
        assert_eq!(rule("fb3ff0000000000001"), None);
        assert_eq!(rule("fa47c35000"), None);
    }

    #[test]
    fn depth_is_counted_from_the_root() {
        let nest = |n: usize| {
            let mut v = vec![0x81u8; n];
            v.push(0);
            v
        };
        assert_eq!(check(&nest(32), 32), Ok(()));
        assert_eq!(check(&nest(33), 32).unwrap_err().rule, DetRule::Depth);
        // An empty container at the limit holds nothing deeper.
        let mut v = vec![0x81u8; 32];
        v.push(0x80);
        assert_eq!(check(&v, 32), Ok(()));
        // A million levels cost no stack.
        let deep = vec![0x81u8; 1 << 20];
        assert_eq!(check(&deep, 32).unwrap_err().rule, DetRule::Depth);
    }

    #[test]
    fn keys_that_are_containers_are_ordered_too() {
        // {[1]: 0, [0]: 0}: out of order; {[0]: 0, [1]: 0} in order; [0] twice.
        assert_eq!(rule("a2810100810000"), Some(DetRule::Determinism));
        assert_eq!(rule("a2810000810100"), None);
        assert_eq!(rule("a2810000810000"), Some(DetRule::DuplicateKey));
        // Empty containers as keys: [] before {} (0x80 < 0xa0), twice is a duplicate.
        assert_eq!(rule("a28000a000"), None);
        assert_eq!(rule("a2a0008000"), Some(DetRule::Determinism));
        assert_eq!(rule("a280008000"), Some(DetRule::DuplicateKey));
    }

    #[test]
    fn encoder_sorts_keys_and_refuses_what_v2_forbids() {
        let t = |s: &str| Value::Text(s.into());
        let v = Value::Map(vec![
            (t("bb"), Value::Unsigned(1)),
            (t("a"), Value::Float(1.5)),
            (t("c"), Value::Float(1.1)),
            (t("n"), Value::Float(f64::NAN)),
        ]);
        let bytes = encode(&v).unwrap();
        assert_eq!(
            bytes,
            hex("a46161f93e006163fb3ff199999999999a616ef97e0062626201")
        );
        assert_eq!(check(&bytes, 32), Ok(()));
        assert!(
            encode(&Value::Map(vec![
                (t("a"), Value::Null),
                (t("a"), Value::Null)
            ]))
            .is_err()
        );
        assert!(encode(&Value::Tag(1, Box::new(Value::Null))).is_err());
        assert!(encode(&Value::Undefined).is_err());
    }
}
