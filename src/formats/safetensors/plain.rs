//! The safetensors header as writers make it, read without a JSON tree (issue 19: building
//! the tree of a 50,000-tensor header cost more than everything else of an open, most of
//! it in allocations): tensor entries of exactly `dtype`, `shape` and `data_offsets`,
//! strings without escapes, integers without sign, fraction or exponent, and
//! `__metadata__` as `null` or an object of such strings. Names are kept side by side in
//! a `TextArena`.
//!
//! Anything else (another key, an escape, a float, a duplicate key, an error of any kind)
//! gives up: `parse` returns None and the general parse reads the header and reports what
//! is wrong, so the two paths accept the same files and say the same things.

use super::{Entry, Names, dtype_of, finish, tensor_of};
use crate::cbor::Value;
use crate::limits::Limits;
use crate::model::{Attributes, Model, Object, TextArena, check_name_text};

/// The model of a plain header, or None to leave it to the general parse.
pub(super) fn parse(text: &str, data_start: u64, size: u64, limits: &Limits) -> Option<Model> {
    let mut s = Scan { text, at: 0 };
    let mut names = Names::default();
    let mut arena = TextArena::default();
    let mut tensors: Vec<(u64, u64, Object)> = Vec::new();
    let mut attributes = None;
    let mut seen_metadata = false;
    // One buffer for every entry's dimensions (the object keeps them inline up to rank 2).
    let mut shape = Vec::new();
    s.eat(b'{')?;
    if s.peek()? == b'}' {
        s.at += 1;
    } else {
        loop {
            let name = s.string()?;
            s.eat(b':')?;
            if name == "__metadata__" {
                if seen_metadata {
                    return None;
                }
                seen_metadata = true;
                attributes = metadata(&mut s)?;
            } else {
                shape.clear();
                let (dtype, begin, end) = entry(&mut s, &mut shape, limits.max_rank)?;
                check_name_text("tensor", name, limits.max_name_length).ok()?;
                let name_c = arena.text(name).ok()?;
                let (storage, logical) = dtype_of(dtype).ok()?;
                let e = Entry {
                    dtype,
                    storage,
                    logical,
                    shape: &shape,
                    begin,
                    end,
                };
                tensors.push(tensor_of(name_c, &e, data_start, size, &mut names).ok()?);
            }
            match s.peek()? {
                b',' => s.at += 1,
                b'}' => {
                    s.at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    s.ws();
    if s.at != text.len() {
        return None;
    }
    // A duplicate tensor name fails the model's name index: the general parse names it.
    finish(tensors, attributes, data_start).ok()
}

/// `{"dtype": "..", "shape": [..], "data_offsets": [b, e]}` in any order, each once.
fn entry<'a>(
    s: &mut Scan<'a>,
    shape: &mut Vec<u64>,
    max_rank: usize,
) -> Option<(&'a str, u64, u64)> {
    let (mut dtype, mut offsets, mut has_shape) = (None, None, false);
    s.eat(b'{')?;
    loop {
        let key = s.string()?;
        s.eat(b':')?;
        match key {
            "dtype" if dtype.is_none() => dtype = Some(s.string()?),
            "shape" if !has_shape => {
                has_shape = true;
                s.eat(b'[')?;
                if s.peek()? == b']' {
                    s.at += 1;
                } else {
                    loop {
                        if shape.len() == max_rank {
                            return None;
                        }
                        shape.push(s.uint()?);
                        if !s.next_item(b']')? {
                            break;
                        }
                    }
                }
            }
            "data_offsets" if offsets.is_none() => {
                s.eat(b'[')?;
                let begin = s.uint()?;
                s.eat(b',')?;
                let end = s.uint()?;
                s.eat(b']')?;
                offsets = Some((begin, end));
            }
            _ => return None,
        }
        if !s.next_item(b'}')? {
            break;
        }
    }
    let (begin, end) = offsets?;
    has_shape.then_some((dtype?, begin, end))
}

/// `null`, or an object of strings (no key starting with '$', which the JSON mapping may
/// read as something else; no key twice), kept as the CBOR map of the general parse.
fn metadata(s: &mut Scan<'_>) -> Option<Option<Attributes>> {
    if s.peek()? == b'n' {
        s.literal("null")?;
        return Some(None);
    }
    s.eat(b'{')?;
    let mut pairs: Vec<(Value, Value)> = Vec::new();
    if s.peek()? == b'}' {
        s.at += 1;
    } else {
        loop {
            let key = s.string()?;
            s.eat(b':')?;
            let value = s.string()?;
            // Quadratic: give the rare large map to the general parse.
            if key.starts_with('$')
                || pairs.len() >= 64
                || pairs.iter().any(|(k, _)| k.as_text() == Some(key))
            {
                return None;
            }
            pairs.push((Value::Text(key.to_owned()), Value::Text(value.to_owned())));
            if !s.next_item(b'}')? {
                break;
            }
        }
    }
    Some(Some(Attributes::from_value(&Value::Map(pairs))))
}

/// A cursor over the header's text.
struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.at += 1)
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.ws();
        let rest = self.bytes().get(self.at..self.at + word.len())?;
        (rest == word.as_bytes()).then(|| self.at += word.len())
    }

    /// After an item of a container: true for ',' (another follows), false for `close`.
    fn next_item(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            c if c == close => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A string without escapes or control characters, borrowed from the header.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let rest = self.bytes().get(start..)?;
        let len = rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.at += len + 1;
        // The quotes are ASCII, so the slice between them is on character boundaries.
        self.text.get(start..self.at - 1)
    }

    /// A non-negative integer in JSON's syntax (no leading zero) that fits a u64, not
    /// followed by a fraction or an exponent.
    fn uint(&mut self) -> Option<u64> {
        self.ws();
        let bytes = self.bytes();
        let start = self.at;
        let mut n: u64 = 0;
        while let Some(&c) = bytes.get(self.at)
            && c.is_ascii_digit()
        {
            n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        let next = bytes.get(self.at).copied();
        let ok = digits > 0
            && (digits == 1 || bytes[start] != b'0')
            && !matches!(next, Some(b'.' | b'e' | b'E'));
        ok.then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str, size: u64) -> Option<Model> {
        parse(text, 8 + text.len() as u64, 8 + text.len() as u64 + size, &Limits::default())
    }

    #[test]
    fn plain_headers_are_read_here() {
        let text = r#"{"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}, "a" : {"shape":[], "data_offsets":[0,2],"dtype":"BF16"}}   "#;
        let m = header(text, 16).expect("plain");
        let names: Vec<&str> = m.objects.iter().map(|o| o.name()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(m.objects[1].shape(), [2]);
        assert_eq!(m.objects[1].components()[0].offset(), 8 + text.len() as u64 + 8);
        assert_eq!(m.objects[0].shape(), [] as [u64; 0]);
        let attrs = m.attributes.as_ref().unwrap().value();
        assert_eq!(
            attrs,
            Value::Map(vec![(Value::Text("format".into()), Value::Text("pt".into()))])
        );
        assert!(header("{}", 0).unwrap().objects.is_empty());
        assert!(header(r#"{"__metadata__":null}"#, 0).unwrap().attributes.is_none());
    }

    #[test]
    fn anything_else_is_left_to_the_general_parse() {
        let entry = |e: &str| format!(r#"{{"w":{e}}}"#);
        let good = r#"{"dtype":"F32","shape":[4],"data_offsets":[0,16]}"#;
        assert!(header(&entry(good), 16).is_some());
        for bad in [
            r#"{"dtype":"F32","shape":[4],"data_offsets":[0,16],"x":1}"#,
            r#"{"dtype":"F32","dtype":"F32","shape":[4],"data_offsets":[0,16]}"#,
            r#"{"dtype":"F\u0033\u0032","shape":[4],"data_offsets":[0,16]}"#,
            r#"{"dtype":"F32","shape":[4.0],"data_offsets":[0,16]}"#,
            r#"{"dtype":"F32","shape":[04],"data_offsets":[0,16]}"#,
            r#"{"dtype":"F32","shape":[4e0],"data_offsets":[0,16]}"#,
            r#"{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}"#,
            r#"{"dtype":"F32","shape":[4],"data_offsets":[0,18446744073709551616]}"#,
            r#"{"dtype":"F32","shape":[4],"data_offsets":[0,16,]}"#,
            r#"{"dtype":"F32","shape":[4],"data_offsets":[0]}"#,
            r#"{"dtype":"F32","shape":[4],"data_offsets":[16,0]}"#,
            r#"{"dtype":"F32","shape":[3],"data_offsets":[0,16]}"#,
            r#"{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}"#,
            r#"{"dtype":"F32","shape":[4],"data_offsets":[0,16]"#,
            r#"{"dtype":"F32","data_offsets":[0,16]}"#,
            "[1]",
        ] {
            assert!(header(&entry(bad), 16).is_none(), "{bad}");
        }
        for bad in [
            format!(r#"{{"w":{good},"w":{good}}}"#),
            format!(r#"{{"w":{good}}} x"#),
            format!(r#"{{"w":{good},}}"#),
            format!(r#"{{"":{good}}}"#),
            format!(r#"{{"__metadata__":{{"a":1}},"w":{good}}}"#),
            format!(r#"{{"__metadata__":{{"$bytes":"00"}},"w":{good}}}"#),
            format!(r#"{{"__metadata__":{{"a":"1","a":"2"}},"w":{good}}}"#),
            format!(r#"{{"__metadata__":null,"__metadata__":null,"w":{good}}}"#),
            format!("{{\"w\t\":{good}}}"),
        ] {
            assert!(header(&bad, 16).is_none(), "{bad}");
        }
        let rank65 = format!(
            r#"{{"w":{{"dtype":"F32","shape":[{}],"data_offsets":[0,4]}}}}"#,
            vec!["1"; 65].join(",")
        );
        assert!(header(&rank65, 4).is_none());
        // Past the data section.
        assert!(header(&entry(good), 15).is_none());
    }
}
