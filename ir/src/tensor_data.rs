//! Computing on the bytes of constant tensors: casts and layout changes
//! with PyTorch's rules, for ops' constant-folding rules and for passes
//! that compute new constants.

use std::borrow::Cow;

use crate::ops::layout::is_permutation;
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
/// `None` unless both have fixed shapes, dim orders that order their axes
/// and the same element type, `axes` orders `from`'s axes, each of the size
/// of `to`'s, and `bytes` holds `from` (so that every offset is in range).
pub fn relayout(
    bytes: &[u8],
    from: &TensorType,
    to: &TensorType,
    axes: &[usize],
) -> Option<Vec<u8>> {
    let element = to.dtype.size();
    let (from_shape, shape) = (from.fixed_shape()?, to.fixed_shape()?);
    let orders = |ty: &TensorType| {
        let order: Vec<usize> = ty.dim_order.iter().map(|&d| usize::from(d)).collect();
        is_permutation(&order, ty.rank())
    };
    let fits = from.dtype == to.dtype
        && orders(from)
        && orders(to)
        && axes.len() == shape.len()
        && is_permutation(axes, from_shape.len())
        && axes
            .iter()
            .zip(&shape)
            .all(|(&axis, &size)| from_shape.get(axis) == Some(&size))
        && bytes.len() as u64 == from_shape.iter().product::<u64>() * element as u64;
    if !fits {
        return None;
    }
    let (from_strides, to_strides) = (from.fixed_strides()?, to.fixed_strides()?);
    let count: u64 = shape.iter().product();
    // The elements in the target's storage order (its axes by decreasing
    // stride), so that it is written front to back, the source's offset
    // kept as the index moves: a constant of millions of weights is
    // relaid in a pass, not an index computed per element.
    let mut order: Vec<usize> = (0..shape.len()).collect();
    order.sort_by_key(|&axis| std::cmp::Reverse(to_strides[axis]));
    let sizes: Vec<u64> = order.iter().map(|&axis| shape[axis]).collect();
    let steps: Vec<u64> = order.iter().map(|&axis| from_strides[axes[axis]]).collect();
    let mut out = vec![0; count as usize * element];
    let mut index = vec![0u64; shape.len()];
    let mut source = 0u64;
    for target in out.chunks_exact_mut(element) {
        let at = source as usize * element;
        target.copy_from_slice(&bytes[at..at + element]);
        for axis in (0..sizes.len()).rev() {
            index[axis] += 1;
            source += steps[axis];
            if index[axis] < sizes[axis] {
                break;
            }
            index[axis] = 0;
            source -= steps[axis] * sizes[axis];
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Dim;

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

    /// Axes that repeat one of `from`'s, or a dim order that repeats a
    /// dimension, would read past the source (a [3, 3] tensor's axis 0 read
    /// twice reaches element 12 of 9): refused.
    #[test]
    fn relayout_refuses_axes_or_orders_that_are_no_permutation() {
        let ty = |dim_order: Vec<u8>| TensorType {
            dtype: DType::U8,
            shape: vec![Dim::Fixed(3), Dim::Fixed(3)],
            dim_order,
        };
        let bytes = [0u8; 9];
        assert!(relayout(&bytes, &ty(vec![0, 1]), &ty(vec![0, 1]), &[1, 0]).is_some());
        assert!(relayout(&bytes, &ty(vec![0, 1]), &ty(vec![0, 1]), &[0, 0]).is_none());
        assert!(relayout(&bytes, &ty(vec![0, 0]), &ty(vec![0, 1]), &[0, 1]).is_none());
        assert!(relayout(&bytes, &ty(vec![0, 1]), &ty(vec![1, 2]), &[0, 1]).is_none());
    }

    /// Every permutation of `0..rank`, in lexicographic order.
    fn permutations(rank: usize) -> Vec<Vec<usize>> {
        match rank {
            0 => vec![Vec::new()],
            _ => permutations(rank - 1)
                .into_iter()
                .flat_map(|shorter| {
                    (0..rank).map(move |at| {
                        let mut longer: Vec<usize> = shorter
                            .iter()
                            .map(|&axis| axis + usize::from(axis >= at))
                            .collect();
                        longer.insert(0, at);
                        longer
                    })
                })
                .collect(),
        }
    }

    /// `relayout` against the definition, element by element: target
    /// element `i` (a multi-index) is source element `j` with
    /// `j[axes[a]] = i[a]`, each at its strides' offset; over every dim
    /// order of both sides and every permutation of axes, sizes of one
    /// included, and two-byte elements.
    #[test]
    fn relayout_moves_each_element_where_its_index_says() {
        let fixed = |sizes: &[u64]| sizes.iter().map(|&size| Dim::Fixed(size)).collect();
        for source_sizes in [vec![], vec![5], vec![3, 4], vec![2, 1, 3], vec![2, 3, 1, 4]] {
            let rank = source_sizes.len();
            let count: u64 = source_sizes.iter().product();
            let bytes: Vec<u8> = (0..count * 2).map(|byte| (byte * 7 + 3) as u8).collect();
            for axes in permutations(rank) {
                let sizes: Vec<u64> = axes.iter().map(|&axis| source_sizes[axis]).collect();
                for from_order in permutations(rank) {
                    for to_order in permutations(rank) {
                        let order = |order: &[usize]| order.iter().map(|&d| d as u8).collect();
                        let from = TensorType {
                            dtype: DType::I16,
                            shape: fixed(&source_sizes),
                            dim_order: order(&from_order),
                        };
                        let to = TensorType {
                            dtype: DType::I16,
                            shape: fixed(&sizes),
                            dim_order: order(&to_order),
                        };
                        let got = relayout(&bytes, &from, &to, &axes).expect("shapes agree");
                        let strides = |ty: &TensorType| ty.fixed_strides().expect("fixed sizes");
                        let (from_strides, to_strides) = (strides(&from), strides(&to));
                        for flat in 0..count {
                            let mut rest = flat;
                            let mut index = vec![0; rank];
                            for axis in (0..rank).rev() {
                                index[axis] = rest % sizes[axis];
                                rest /= sizes[axis];
                            }
                            let offset = |strides: &[u64], of: &dyn Fn(usize) -> u64| {
                                (0..rank).map(|axis| of(axis) * strides[axis]).sum::<u64>() as usize
                                    * 2
                            };
                            let target = offset(&to_strides, &|axis| index[axis]);
                            let source = offset(&from_strides, &|axis| {
                                index[axes.iter().position(|&a| a == axis).expect("a permutation")]
                            });
                            assert_eq!(
                                got[target..target + 2],
                                bytes[source..source + 2],
                                "{source_sizes:?} axes {axes:?} orders {from_order:?} -> {to_order:?}, element {index:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
