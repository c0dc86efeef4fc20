//! `zt cat FILE NAME [--count N] [--component ROLE] [--json]`: the first values of a tensor.

use std::fmt::Write as _;

use half::{bf16, f16};
use ztensor::convert::{f8_e4m3fn_to_f32, f8_e4m3fnuz_to_f32, f8_e5m2_to_f32, f8_e5m2fnuz_to_f32};
use ztensor::{Component, DType, Object};

use crate::args::CatArgs;
use crate::text::{self, describe, display};
use crate::{CliResult, Failure, emit};

/// How one value is read from its bytes.
#[derive(Clone, Copy)]
enum Kind {
    /// A storage element.
    Plain(DType),
    /// An fp8 byte and its decoder.
    Fp8(fn(u8) -> f32),
    /// Two floats of this dtype (f32 or f64).
    Complex(DType),
}

impl Kind {
    fn of(c: &Component) -> Kind {
        match (c.logical_type(), c.dtype()) {
            (Some("f8_e4m3fn"), DType::U8) => Kind::Fp8(f8_e4m3fn_to_f32),
            (Some("f8_e5m2"), DType::U8) => Kind::Fp8(f8_e5m2_to_f32),
            (Some("f8_e4m3fnuz"), DType::U8) => Kind::Fp8(f8_e4m3fnuz_to_f32),
            (Some("f8_e5m2fnuz"), DType::U8) => Kind::Fp8(f8_e5m2fnuz_to_f32),
            (Some("complex64"), DType::F32) => Kind::Complex(DType::F32),
            (Some("complex128"), DType::F64) => Kind::Complex(DType::F64),
            // Unknown logical types: their storage elements.
            (_, dtype) => Kind::Plain(dtype),
        }
    }

    /// Bytes per value.
    fn size(self) -> usize {
        match self {
            Kind::Plain(d) => d.size(),
            Kind::Fp8(_) => 1,
            Kind::Complex(d) => 2 * d.size(),
        }
    }
}

/// A value as text and as JSON.
struct Shown {
    text: String,
    json: String,
}

impl Shown {
    fn same(s: String) -> Shown {
        Shown {
            json: s.clone(),
            text: s,
        }
    }
    /// A float: non-finite values are JSON strings ("NaN", "inf", "-inf").
    fn float(s: String) -> Shown {
        if s == "NaN" || s.ends_with("inf") {
            Shown {
                json: format!("\"{s}\""),
                text: s,
            }
        } else {
            Shown::same(s)
        }
    }
}

/// The shortest decimal that reads back as the same value at the type's own precision
/// (`same` says whether an f32 reading of the decimal rounds back to it), in Rust's
/// float notation ("0.1", "65504.0", "6e-8").
fn shortest(x: f32, same: impl Fn(f32) -> bool) -> String {
    if !x.is_finite() {
        return format!("{x:?}");
    }
    for digits in 0..9 {
        let candidate = format!("{x:.digits$e}");
        if candidate.parse::<f32>().is_ok_and(&same) {
            let exact: f64 = candidate.parse().expect("a float we printed");
            return format!("{exact:?}");
        }
    }
    format!("{x:?}")
}

fn le<const N: usize>(b: &[u8]) -> [u8; N] {
    b.try_into().expect("sliced to the element size")
}

fn float_of(dtype: DType, b: &[u8]) -> String {
    match dtype {
        DType::F64 => format!("{:?}", f64::from_le_bytes(le(b))),
        DType::F32 => format!("{:?}", f32::from_le_bytes(le(b))),
        DType::F16 => {
            let bits = u16::from_le_bytes(le(b));
            shortest(f16::from_bits(bits).to_f32(), |y| {
                f16::from_f32(y).to_bits() == bits
            })
        }
        DType::BF16 => {
            let bits = u16::from_le_bytes(le(b));
            shortest(bf16::from_bits(bits).to_f32(), |y| {
                bf16::from_f32(y).to_bits() == bits
            })
        }
        other => unreachable!("{other} is not a float"),
    }
}

fn value(kind: Kind, b: &[u8]) -> Shown {
    match kind {
        Kind::Plain(d) if d.is_float() => Shown::float(float_of(d, b)),
        Kind::Plain(DType::Bool) => match b[0] {
            0 => Shown::same("false".to_owned()),
            1 => Shown::same("true".to_owned()),
            // Not a valid bool (verify reports it): the byte.
            n => Shown::same(n.to_string()),
        },
        Kind::Plain(d) => Shown::same(match d {
            DType::I64 => i64::from_le_bytes(le(b)).to_string(),
            DType::I32 => i32::from_le_bytes(le(b)).to_string(),
            DType::I16 => i16::from_le_bytes(le(b)).to_string(),
            DType::I8 => (b[0] as i8).to_string(),
            DType::U64 => u64::from_le_bytes(le(b)).to_string(),
            DType::U32 => u32::from_le_bytes(le(b)).to_string(),
            DType::U16 => u16::from_le_bytes(le(b)).to_string(),
            _ => b[0].to_string(),
        }),
        Kind::Fp8(decode) => Shown::float(format!("{:?}", decode(b[0]))),
        Kind::Complex(d) => {
            let (re, im) = b.split_at(d.size());
            let (re, im) = (Shown::float(float_of(d, re)), Shown::float(float_of(d, im)));
            Shown {
                text: format!("({}, {})", re.text, im.text),
                json: format!("[{},{}]", re.json, im.json),
            }
        }
    }
}

/// The component `cat` shows when none is named: "data", else "values", else the first.
fn default_component(obj: &Object) -> Option<usize> {
    obj.find_component("data")
        .or_else(|| obj.find_component("values"))
        .or_else(|| (!obj.components().is_empty()).then_some(0))
}

pub fn run(args: &CatArgs) -> CliResult {
    let (path, name, count) = (&args.file, args.name.as_str(), args.count);
    let reader = text::open(path)?;
    let oi = reader.find(name).ok_or_else(|| {
        Failure::Failed(format!("'{}' has no object named '{name}'", display(path)))
    })?;
    let obj = &reader.objects()[oi];
    let roles = || {
        let all: Vec<&str> = obj.components().iter().map(Component::role).collect();
        if all.is_empty() {
            "none".to_owned()
        } else {
            all.join(", ")
        }
    };
    let ci = match args.component.as_deref() {
        Some(role) => obj.find_component(role).ok_or_else(|| {
            Failure::Failed(format!(
                "object '{name}' has no component '{role}' (it has: {})",
                roles()
            ))
        })?,
        None => default_component(obj)
            .ok_or_else(|| Failure::Failed(format!("object '{name}' has no components")))?,
    };
    let c = &obj.components()[ci];
    let cannot_read = |e: ztensor::Error| {
        Failure::Failed(format!(
            "cannot read '{}': {}",
            display(path),
            describe(&e, &[display(path)])
        ))
    };
    // Blocks of a ggml type are shown dequantized to f32, never as their bytes.
    let quant = reader
        .quant_info(oi)
        .ok()
        .filter(|q| q.component == ci && q.block_type.can_dequantize());
    let (values, total, shown): (Vec<Shown>, u64, usize) = match &quant {
        Some(q) => {
            let total =
                q.rows * (q.row_size / q.block_type.type_size()) * q.block_type.block_size();
            let shown = (count as u64).min(total);
            // Whole blocks from the start, enough to cover the values shown.
            let take = shown.next_multiple_of(q.block_type.block_size()).min(total);
            let mut bytes = vec![0u8; take as usize * 4];
            reader
                .read_as_range(oi, ci, DType::F32, 0, &mut bytes)
                .map_err(cannot_read)?;
            let values = bytes
                .chunks_exact(4)
                .take(shown as usize)
                .map(|b| Shown::float(format!("{:?}", f32::from_le_bytes(le(b)))))
                .collect();
            (values, total, shown as usize)
        }
        None => {
            let kind = Kind::of(c);
            let total = c.decoded_length() / kind.size() as u64;
            let shown = (count as u64).min(total) as usize;
            let mut bytes = vec![0u8; shown * kind.size()];
            reader
                .read_range(oi, ci, 0, &mut bytes)
                .map_err(cannot_read)?;
            let values = bytes
                .chunks_exact(kind.size())
                .map(|b| value(kind, b))
                .collect();
            (values, total, shown)
        }
    };
    let truncated = (shown as u64) < total;

    let mut out = String::new();
    if args.json {
        out.push_str("{\"object\":");
        text::json_str(&mut out, obj.name());
        out.push_str(",\"component\":");
        text::json_str(&mut out, c.role());
        out.push_str(",\"format\":");
        text::json_str(&mut out, obj.format());
        out.push_str(",\"shape\":");
        text::json_u64s(&mut out, obj.shape());
        out.push_str(",\"dtype\":");
        text::json_str(&mut out, c.dtype().name());
        out.push_str(",\"type\":");
        text::json_opt_str(&mut out, c.logical_type());
        if quant.is_some() {
            out.push_str(",\"dequantized\":\"f32\"");
        }
        let _ = write!(out, ",\"total\":{total},\"values\":[");
        let json: Vec<&str> = values.iter().map(|v| v.json.as_str()).collect();
        out.push_str(&json.join(","));
        out.push_str("]}\n");
    } else {
        let _ = write!(
            out,
            "object '{}' component '{}': {} {}, {}, {}",
            obj.name(),
            c.role(),
            obj.format(),
            text::shape(obj.shape()),
            text::dtype(c),
            text::count(total as usize, "value")
        );
        if let Some(q) = &quant {
            let _ = write!(out, ", {} blocks dequantized to f32", q.block_type.name());
        }
        if truncated {
            let _ = write!(out, " (first {shown} shown)");
        }
        let mut items: Vec<&str> = values.iter().map(|v| v.text.as_str()).collect();
        if truncated {
            items.push("...");
        }
        let _ = writeln!(out, "\n[{}]", items.join(", "));
    }
    emit(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16_text(v: f32) -> String {
        float_of(DType::F16, &f16::from_f32(v).to_bits().to_le_bytes())
    }

    fn bf16_text(v: f32) -> String {
        float_of(DType::BF16, &bf16::from_f32(v).to_bits().to_le_bytes())
    }

    #[test]
    fn half_floats_print_their_shortest_form() {
        assert_eq!(f16_text(0.1), "0.1");
        assert_eq!(f16_text(1.0), "1.0");
        assert_eq!(f16_text(-0.0), "-0.0");
        assert_eq!(f16_text(65504.0), "65500.0");
        assert_eq!(f16_text(f16::from_bits(1).to_f32()), "6e-8");
        assert_eq!(f16_text(f32::NEG_INFINITY), "-inf");
        assert_eq!(f16_text(f32::NAN), "NaN");
        assert_eq!(bf16_text(0.1), "0.1");
        assert_eq!(bf16_text(3.0e38), "3e38");
    }
}
