//! RFC 8949 §4.2.1 core deterministic encoding: the strict check a zTensor v2 reader runs
//! over manifest bytes before parsing them, the encoder a v2 writer uses for attribute
//! values and the content digest, and for Tensogram metadata the test of whether bytes are
//! already what `cbor::encode` writes (and, when not, writing them again so).
//!
//! The v2 check refuses everything the v2 specification (§3.1) refuses: heads longer than
//! their argument needs, indefinite lengths, map keys not in ascending bytewise order of
//! their encodings (an equal key is a duplicate), floats wider than their value needs or
//! NaN other than `f9 7e00`, tags, simple values other than false, true and null, nesting
//! past the depth limit, invalid UTF-8, and bytes after the item. It walks the bytes once
//! with the one head reader (`pull`), allocates nothing but its stack of open containers,
//! and is iterative (a hostile depth costs no stack).

use ciborium_ll::Header;

use super::pull::{Len, Pull, argument};
use super::{DecodeError, Value, Writer};

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

/// The input ends inside the item at `at`.
fn short(at: usize, what: &str) -> DetError {
    DetError {
        rule: DetRule::Syntax,
        offset: at,
        message: format!("the input ends inside {what}"),
    }
}

/// Why the head reader refused the head at `at`.
#[cold]
fn bad_head(input: &[u8], at: usize) -> DetError {
    let Some(&first) = input.get(at) else {
        return DetError {
            rule: DetRule::Syntax,
            offset: at,
            message: "unexpected end of input".into(),
        };
    };
    let (major, info) = (first >> 5, first & 0x1f);
    let message = match info {
        28..=30 => format!("reserved head 0x{first:02x}"),
        31 => "indefinite lengths are not permitted".into(),
        // A simple value below 32 in the two-byte form.
        24 if major == 7 => "simple values are not permitted".into(),
        25..=27 if major == 7 => return short(at, "a float"),
        _ => return short(at, "an item head"),
    };
    DetError {
        rule: DetRule::Syntax,
        offset: at,
        message,
    }
}

/// What a walk admits besides heads in their shortest form and definite lengths.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Profile {
    /// zTensor v2 (§3.1): no tags, no simple values but false, true and null, map keys
    /// in ascending order of their encodings, nesting up to a limit.
    V2,
    /// Every item `cbor::encode` writes: tags, any simple value, keys in stored order.
    Encoding,
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
    walk(input, max_depth, Profile::V2)
}

/// Whether the valid item `bytes` is already in the deterministic encoding `cbor::encode`
/// writes: every head as `Writer` writes it (shortest argument, shortest exact float, NaN
/// as f97e00), every length definite; tags, simple values and keys in any order allowed.
pub(crate) fn is_canonical(bytes: &[u8]) -> bool {
    walk(bytes, usize::MAX, Profile::Encoding).is_ok()
}

/// The bytes a head of argument `arg` takes in its shortest form.
#[inline(always)]
fn shortest_len(arg: u64) -> usize {
    match arg {
        0..24 => 1,
        24..0x100 => 2,
        0x100..0x1_0000 => 3,
        0x1_0000..0x1_0000_0000 => 5,
        _ => 9,
    }
}

/// Refuses the head `header` read from `input[start..end]` unless it is the one `Writer`
/// writes for it.
#[inline(always)]
fn shortest(input: &[u8], start: usize, end: usize, header: Header) -> Result<(), DetError> {
    let arg = match header {
        Header::Positive(n) | Header::Negative(n) | Header::Tag(n) => n,
        Header::Bytes(Some(n))
        | Header::Text(Some(n))
        | Header::Array(Some(n))
        | Header::Map(Some(n)) => n as u64,
        Header::Float(x) => return shortest_float(&input[start..end], x, start),
        // Simple values have one form each (the head reader refused two-byte forms below
        // 32); breaks and indefinite lengths are refused by the walk.
        _ => return Ok(()),
    };
    if end - start != shortest_len(arg) {
        return fail(DetRule::Determinism, start, "a head longer than its value");
    }
    Ok(())
}

/// A float's head against the one `Writer` writes for its value.
#[cold]
fn shortest_float(head: &[u8], x: f64, start: usize) -> Result<(), DetError> {
    let mut again = Writer::with_capacity(9);
    again.float(x);
    if again.as_slice() == head {
        return Ok(());
    }
    let message = if x.is_nan() {
        "a NaN other than f9 7e00".to_string()
    } else if head.len() == 5 {
        format!("float {} in 4 bytes fits in 2", x as f32)
    } else {
        format!("float {x} in 8 bytes fits in 4 or fewer")
    };
    fail(DetRule::Determinism, start, message)
}

/// The one walk of `check` and `is_canonical`.
fn walk(input: &[u8], max_depth: usize, profile: Profile) -> Result<(), DetError> {
    let v2 = profile == Profile::V2;
    let mut pull = Pull::new(input, usize::MAX);
    let mut stack: Vec<Open> = Vec::new();
    loop {
        // Map bookkeeping: remember where a key starts.
        if let Some(top) = stack.last_mut()
            && top.map
            && top.at_key
        {
            top.key_start = pull.pos;
        }
        let start = pull.pos;
        let container = item(&mut pull, start, v2)?;
        let pos = pull.pos;
        // An item (its head, at least) has been read: a key's end is known now.
        if v2
            && let Some(top) = stack.last_mut()
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
        if close(input, &mut stack, pos, v2)? {
            return Ok(());
        }
    }
}

/// Reads the item at `start`: its head, in the shortest form, and a string's body. For a
/// container, the items it holds (a map's keys and values both) and whether it is a map.
#[inline(always)]
fn item(pull: &mut Pull<'_>, start: usize, v2: bool) -> Result<Option<(u64, bool)>, DetError> {
    let input = pull.input;
    // The head reader's fast path first: an integer, a definite string or container, a
    // tag, with its argument in the head (what nearly every item of a manifest is).
    if let Some((major, arg, used)) = argument(input, start) {
        if used != shortest_len(arg) {
            return fail(DetRule::Determinism, start, "a head longer than its value");
        }
        pull.pos = start + used;
        return match major {
            0 | 1 => Ok(None),
            2 | 3 => {
                if arg > pull.remaining() as u64 {
                    return Err(short(start, "a string"));
                }
                if pull.chunk(major == 3, arg as usize).is_err() {
                    return fail(DetRule::Syntax, start, "invalid UTF-8 in text");
                }
                Ok(None)
            }
            4 | 5 => {
                let per = u64::from(major - 3);
                if arg.saturating_mul(per) > pull.remaining() as u64 {
                    return Err(short(start, "a container's items"));
                }
                Ok(Some((arg * per, major == 5)))
            }
            _ if v2 => fail(DetRule::Syntax, start, "tags are not permitted"),
            _ => Ok(Some((1, false))),
        };
    }
    // Floats, simple values, breaks, indefinite lengths, reserved and truncated heads.
    let header = pull.head().map_err(|_| bad_head(input, start))?;
    shortest(input, start, pull.pos, header)?;
    match header {
        Header::Positive(_) | Header::Negative(_) | Header::Float(_) => {}
        Header::Simple(20..=22) => {}
        Header::Simple(23) if v2 => {
            return fail(DetRule::Syntax, start, "undefined is not permitted");
        }
        Header::Simple(_) if v2 => {
            return fail(DetRule::Syntax, start, "simple values are not permitted");
        }
        Header::Simple(_) => {}
        Header::Break => return fail(DetRule::Syntax, start, "unexpected break"),
        Header::Bytes(None) | Header::Text(None) | Header::Array(None) | Header::Map(None) => {
            return fail(
                DetRule::Syntax,
                start,
                "indefinite lengths are not permitted",
            );
        }
        Header::Bytes(Some(len)) | Header::Text(Some(len)) => {
            if len > pull.remaining() {
                return Err(short(start, "a string"));
            }
            if pull.chunk(matches!(header, Header::Text(_)), len).is_err() {
                return fail(DetRule::Syntax, start, "invalid UTF-8 in text");
            }
        }
        Header::Array(Some(n)) | Header::Map(Some(n)) => {
            let map = matches!(header, Header::Map(_));
            let per = if map { 2 } else { 1 };
            if pull.declared(Some(n), per).is_err() {
                return Err(short(start, "a container's items"));
            }
            return Ok(Some((n as u64 * per, map)));
        }
        Header::Tag(_) if v2 => return fail(DetRule::Syntax, start, "tags are not permitted"),
        Header::Tag(_) => return Ok(Some((1, false))),
    }
    Ok(None)
}

/// Closes every container the item that ended at `pos` completed; true when that was
/// the whole input.
#[inline(always)]
fn close(input: &[u8], stack: &mut Vec<Open>, pos: usize, v2: bool) -> Result<bool, DetError> {
    loop {
        let Some(top) = stack.last_mut() else {
            if pos != input.len() {
                return fail(DetRule::Syntax, pos, "bytes after the item");
            }
            return Ok(true);
        };
        top.left -= 1;
        if top.map {
            top.at_key = !top.at_key;
        }
        if top.left > 0 {
            return Ok(false);
        }
        stack.pop();
        // The container just closed may itself have been a key of its parent.
        if v2
            && let Some(parent) = stack.last_mut()
            && parent.map
            && parent.at_key
        {
            key_done(input, parent, pos)?;
        }
    }
}

/// Records the key that just ended at `end`, refusing it unless it sorts after the last.
#[inline]
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

/// A container being written again: what is left of it, and for an indefinite one, where
/// its head goes once its items are counted.
struct Rewrite {
    len: Len,
    head_at: Option<usize>,
    map: bool,
    items: u64,
}

/// The valid item `bytes` in the deterministic encoding, written item by item as
/// `cbor::encode` writes the tree `cbor::decode` makes of it, without the tree: heads
/// shortest, indefinite strings joined, an indefinite container's head put in front of
/// its items once they are counted (moving the bytes written since: at most the input
/// times its nesting, for the rare input that is not deterministic already). Memory: the
/// output, about the input's size.
pub(crate) fn transcode(bytes: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut pull = Pull::new(bytes, usize::MAX);
    let mut out = Writer::new();
    out.try_reserve(bytes.len()).map_err(|_| DecodeError {
        offset: 0,
        message: format!("could not allocate {} bytes", bytes.len()),
        too_deep: true,
    })?;
    let definite = |n: u64| Rewrite {
        len: Len::Definite(n),
        head_at: None,
        map: false,
        items: 0,
    };
    let mut stack = vec![definite(1)];
    while let Some(top) = stack.last_mut() {
        if !pull.more(&mut top.len)? {
            let done = stack.pop().expect("a container");
            if let Some(at) = done.head_at {
                out.insert_head(
                    at,
                    if done.map {
                        Header::Map(Some((done.items / 2) as usize))
                    } else {
                        Header::Array(Some(done.items as usize))
                    },
                );
            }
            continue;
        }
        top.items += 1;
        let start = pull.pos;
        let header = pull.head()?;
        match header {
            Header::Bytes(len) | Header::Text(len) => {
                let text = matches!(header, Header::Text(_));
                out.string(text, &pull.string(text, len)?);
            }
            Header::Array(Some(n)) => {
                out.head(header);
                stack.push(definite(n as u64));
            }
            Header::Map(Some(n)) => {
                out.head(header);
                stack.push(definite(n as u64 * 2));
            }
            Header::Array(None) | Header::Map(None) => stack.push(Rewrite {
                len: Len::Indefinite,
                head_at: Some(out.len()),
                map: matches!(header, Header::Map(_)),
                items: 0,
            }),
            Header::Tag(_) => {
                out.head(header);
                stack.push(definite(1));
            }
            Header::Break => {
                return Err(DecodeError {
                    offset: start,
                    message: "unexpected break".into(),
                    too_deep: false,
                });
            }
            h => out.head(h),
        }
    }
    Ok(out.into_bytes())
}

/// Encodes `value` deterministically: shortest heads and floats (every NaN as `f9 7e00`),
/// definite lengths, map entries sorted by their keys' encodings. Refuses what v2
/// forbids (tags, undefined and other simple values) and maps with a repeated key.
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, String> {
    let mut out = Writer::new();
    encode_into(value, &mut out)?;
    Ok(out.into_bytes())
}

fn encode_into(value: &Value, out: &mut Writer) -> Result<(), String> {
    match value {
        Value::Array(items) => {
            out.array(items.len());
            for item in items {
                encode_into(item, out)?;
            }
        }
        Value::Map(pairs) => {
            let mut entries = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                let (mut key, mut val) = (Writer::new(), Writer::new());
                encode_into(k, &mut key)?;
                encode_into(v, &mut val)?;
                entries.push((key.into_bytes(), val.into_bytes()));
            }
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
                let key = super::decode(&w[0].0, 1).map_or_else(|_| "?".into(), |k| describe(&k));
                return Err(format!("a map has the key {key} twice"));
            }
            out.map(entries.len());
            for (k, v) in entries {
                out.raw(&k);
                out.raw(&v);
            }
        }
        Value::Tag(..) => return Err("tags are not permitted".into()),
        Value::Undefined | Value::Simple(_) => {
            return Err(format!("{} is not permitted", value.type_name()));
        }
        scalar => out.value(scalar),
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
    use crate::value::cbor::tests::hex;

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

    #[test]
    fn canonical_bytes_are_what_a_tree_encodes_to() {
        let t = |s: &str| Value::Text(s.into());
        let v = Value::Map(vec![
            (
                t("a"),
                Value::Array(vec![Value::Unsigned(1), Value::Float(1.5)]),
            ),
            (t("b"), Value::Tag(1, Box::new(Value::Negative(300)))),
            (t("c"), Value::Float(f64::NAN)),
            (t("d"), Value::Bytes(vec![1, 2])),
            (t("e"), Value::Null),
            (t("f"), Value::Float(0.1)),
        ]);
        let bytes = crate::value::cbor::to_vec(&v);
        assert!(is_canonical(&bytes));
        // Not shortest: an integer in two bytes, a float in eight, indefinite lengths.
        for other in [
            &[0x18, 0x05][..],
            &[0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0],
            &[0x9f, 0x01, 0xff],
            &[0x7f, 0x61, b'a', 0xff],
            &[0xfa, 0x7f, 0xc0, 0, 0], // NaN as f32
        ] {
            assert!(!is_canonical(other), "{other:x?}");
            let d = transcode(other).unwrap();
            let again = crate::value::cbor::to_vec(&crate::value::cbor::decode(other, 8).unwrap());
            assert_eq!(d, again);
            assert!(is_canonical(&d));
        }
        // Nested indefinite containers and strings, and the heads in front of them.
        let nested = [
            0xbf, 0x7f, 0x61, b'k', 0x60, 0xff, 0x9f, 0x9f, 0xff, 0xbf, 0x01, 0x5f, 0x41, 9, 0x42,
            8, 7, 0xff, 0xff, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
        ];
        let again = crate::value::cbor::to_vec(&crate::value::cbor::decode(&nested, 8).unwrap());
        assert_eq!(transcode(&nested).unwrap(), again);
        assert_eq!(
            again,
            [
                0xa1, 0x61, b'k', 0x83, 0x80, 0xa1, 0x01, 0x43, 9, 8, 7, 0xf9, 0x3e, 0
            ]
        );
        let many: Vec<u8> = [0x9f]
            .into_iter()
            .chain([0x18, 0x18].repeat(300))
            .chain([0xff])
            .collect();
        let again = crate::value::cbor::to_vec(&crate::value::cbor::decode(&many, 8).unwrap());
        assert_eq!(transcode(&many).unwrap(), again);
    }

    /// Random mutations of a few items: every input that decodes is written again as its
    /// tree encodes, and is deterministic exactly when it is those bytes.
    #[test]
    fn mutations_write_again_as_trees_do() {
        let seeds: [&[u8]; 3] = [
            &[
                0xbf, 0x7f, 0x61, b'k', 0x60, 0xff, 0x9f, 0x9f, 0xff, 0xbf, 0x01, 0x5f, 0x41, 9,
                0x42, 8, 7, 0xff, 0xff, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
            ],
            &[
                0xa3, 0x61, b'a', 0x82, 0x18, 0x20, 0xf9, 0x3e, 0, 0x61, b'b', 0xc1, 0x39, 1, 0x2b,
                0x61, b'c', 0x9f, 0xf6, 0xf7, 0xf4, 0xfa, 0x7f, 0xc0, 0, 0, 0xff,
            ],
            &[0xa1, 0x61, b'x', 0x5f, 0x42, 1, 2, 0x40, 0xff],
        ];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut decoded = 0;
        for round in 0..20_000 {
            let mut b = seeds[round % seeds.len()].to_vec();
            for _ in 0..1 + next() % 3 {
                let at = next() as usize % b.len();
                b[at] = next() as u8;
            }
            let Ok(v) = crate::value::cbor::decode(&b, 16) else {
                continue;
            };
            decoded += 1;
            let again = crate::value::cbor::to_vec(&v);
            assert_eq!(transcode(&b).unwrap(), again, "{b:x?}");
            assert_eq!(is_canonical(&b), b == again, "{b:x?}");
        }
        assert!(decoded > 1000, "{decoded}");
    }
}
