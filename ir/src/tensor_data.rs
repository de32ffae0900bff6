//! Computing on the bytes of constant tensors: casts and layout changes
//! with PyTorch's rules, for ops' constant-folding rules and for passes
//! that compute new constants.

use std::borrow::Cow;

use crate::types::{DType, TensorType};

/// The elements of f32 tensor bytes.
pub fn f32_elements(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect()
}

pub fn f32_bytes(values: &[f32]) -> Cow<'static, [u8]> {
    Cow::Owned(
        values
            .iter()
            .flat_map(|value| value.to_le_bytes())
            .collect(),
    )
}

/// An element on its way from one type to another.
#[derive(Clone, Copy)]
enum Element {
    Int(i64),
    Float(f64),
}

fn read_element(dtype: DType, bytes: &[u8]) -> Option<Element> {
    let array = |n: usize| bytes.get(..n);
    Some(match dtype {
        DType::Bool | DType::U8 => Element::Int(i64::from(bytes[0])),
        DType::I8 => Element::Int(i64::from(bytes[0] as i8)),
        DType::I16 => Element::Int(i64::from(i16::from_le_bytes(array(2)?.try_into().ok()?))),
        DType::I32 => Element::Int(i64::from(i32::from_le_bytes(array(4)?.try_into().ok()?))),
        DType::I64 => Element::Int(i64::from_le_bytes(array(8)?.try_into().ok()?)),
        DType::F32 => Element::Float(f64::from(f32::from_le_bytes(array(4)?.try_into().ok()?))),
        DType::F64 => Element::Float(f64::from_le_bytes(array(8)?.try_into().ok()?)),
        DType::F16 | DType::BF16 => return None,
    })
}

/// A float converted to the integer type `to` as PyTorch converts it on
/// x86-64 (a C++ cast, which the hardware's truncating conversion
/// computes): toward zero through a 64-bit integer for `int64` and a 32-bit
/// one for the others, then wrapped to `to`'s width; a value that integer
/// cannot hold (NaN, infinities, too large) becomes its minimum.
pub fn float_to_int(value: f64, to: DType) -> i64 {
    let bits = if to == DType::I64 { 64 } else { 32 };
    let bound = 2f64.powi(bits - 1);
    if (-bound..bound).contains(&value) {
        value.trunc() as i64
    } else if bits == 64 {
        i64::MIN
    } else {
        i64::from(i32::MIN)
    }
}

/// Writes `element` converted to `dtype` with PyTorch's rules: integers to
/// floats round to nearest, floats to integers as [`float_to_int`],
/// integers wrap to narrower ones, and anything non-zero (NaN too) is true.
fn write_element(dtype: DType, element: Element, out: &mut Vec<u8>) -> Option<()> {
    let integer = match element {
        Element::Int(value) => value,
        Element::Float(value) => float_to_int(value, dtype),
    };
    match dtype {
        DType::Bool => out.push(u8::from(match element {
            Element::Int(value) => value != 0,
            Element::Float(value) => value != 0.0,
        })),
        DType::U8 | DType::I8 => out.push(integer as u8),
        DType::I16 => out.extend((integer as i16).to_le_bytes()),
        DType::I32 => out.extend((integer as i32).to_le_bytes()),
        DType::I64 => out.extend(integer.to_le_bytes()),
        DType::F32 => out.extend(
            match element {
                Element::Int(value) => value as f32,
                Element::Float(value) => value as f32,
            }
            .to_le_bytes(),
        ),
        DType::F64 => out.extend(
            match element {
                Element::Int(value) => value as f64,
                Element::Float(value) => value,
            }
            .to_le_bytes(),
        ),
        DType::F16 | DType::BF16 => return None,
    }
    Some(())
}

/// Converts every element of `bytes` from `from` to `to`; `None` for the
/// half-precision types.
pub fn cast(bytes: &[u8], from: DType, to: DType) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() / from.size() * to.size());
    for chunk in bytes.chunks_exact(from.size()) {
        write_element(to, read_element(from, chunk)?, &mut out)?;
    }
    Some(out)
}

/// The bytes of `to`, whose axis `k` reads axis `axes[k]` of `from`;
/// `None` unless both have fixed shapes, the same element type, `axes`
/// names an axis of `from` for each of `to`'s, and `bytes` holds `from`.
pub fn relayout(
    bytes: &[u8],
    from: &TensorType,
    to: &TensorType,
    axes: &[usize],
) -> Option<Vec<u8>> {
    let element = to.dtype.size();
    let (from_shape, shape) = (from.fixed_shape()?, to.fixed_shape()?);
    let (from_strides, to_strides) = (from.fixed_strides()?, to.fixed_strides()?);
    let count: u64 = shape.iter().product();
    let fits = from.dtype == to.dtype
        && axes.len() == shape.len()
        && axes
            .iter()
            .zip(&shape)
            .all(|(&axis, &size)| from_shape.get(axis) == Some(&size))
        && bytes.len() as u64 == from_shape.iter().product::<u64>() * element as u64;
    if !fits {
        return None;
    }
    let read: Vec<u64> = axes.iter().map(|&axis| from_strides[axis]).collect();
    let mut out = vec![0; count as usize * element];
    let mut index = vec![0u64; shape.len()];
    for _ in 0..count {
        let source = index.iter().zip(&read).map(|(i, s)| i * s).sum::<u64>() as usize;
        let target = index
            .iter()
            .zip(&to_strides)
            .map(|(i, s)| i * s)
            .sum::<u64>() as usize;
        out[target * element..(target + 1) * element]
            .copy_from_slice(&bytes[source * element..(source + 1) * element]);
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_an_integer_cannot_hold_become_its_minimum_then_wrap() {
        assert_eq!(float_to_int(-2.7, DType::I32), -2);
        assert_eq!(float_to_int(f64::NAN, DType::I64), i64::MIN);
        assert_eq!(float_to_int(f64::INFINITY, DType::I32), i64::from(i32::MIN));
        assert_eq!(float_to_int(3e9, DType::I64), 3_000_000_000);
        assert_eq!(float_to_int(3e9, DType::I32), i64::from(i32::MIN));
        // Narrow types go through 32 bits and wrap: 300 is 44 as a byte, NaN 0.
        let bytes = cast(
            &[300f32, -1.0, f32::NAN].map(f32::to_le_bytes).concat(),
            DType::F32,
            DType::U8,
        );
        assert_eq!(bytes, Some(vec![44, 255, 0]));
    }
}
