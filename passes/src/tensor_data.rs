//! Reading and writing the bytes of constant tensors, for passes that
//! compute new constants.

use std::borrow::Cow;

use ptec_ir::{DType, Graph, TensorType, ValueId, ValueKind};

/// The bytes of a constant value.
pub(crate) fn constant_bytes<'g>(graph: &'g Graph<'_>, value: ValueId) -> Option<&'g [u8]> {
    match &graph.value(value).kind {
        ValueKind::Constant(bytes) => Some(bytes),
        _ => None,
    }
}

/// The elements of an f32 constant.
pub(crate) fn constant_f32(graph: &Graph<'_>, value: ValueId) -> Option<Vec<f32>> {
    if graph.value(value).ty.dtype != DType::F32 {
        return None;
    }
    let bytes = constant_bytes(graph, value)?;
    Some(
        bytes
            .chunks_exact(4)
            .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
            .collect(),
    )
}

pub(crate) fn f32_bytes(values: &[f32]) -> Cow<'static, [u8]> {
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

/// Writes `element` converted to `dtype` with PyTorch's rules: integers to
/// floats round to nearest, floats to integers truncate toward zero,
/// integers wrap to narrower ones, and anything non-zero (NaN too) is true.
fn write_element(dtype: DType, element: Element, out: &mut Vec<u8>) -> Option<()> {
    let integer = match element {
        Element::Int(value) => value,
        Element::Float(value) => value.trunc() as i64,
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
pub(crate) fn cast(bytes: &[u8], from: DType, to: DType) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() / from.size() * to.size());
    for chunk in bytes.chunks_exact(from.size()) {
        write_element(to, read_element(from, chunk)?, &mut out)?;
    }
    Some(out)
}

/// Element strides of a tensor in its dim order (folded values have fixed
/// shapes).
fn strides(ty: &TensorType) -> Vec<usize> {
    ty.fixed_strides()
        .expect("only fixed shapes are folded")
        .into_iter()
        .map(|stride| stride as usize)
        .collect()
}

/// The bytes of `to`, whose axis `k` reads axis `axes[k]` of `from`.
pub(crate) fn relayout(
    bytes: &[u8],
    from: &TensorType,
    to: &TensorType,
    axes: &[usize],
) -> Vec<u8> {
    let element = to.dtype.size();
    let shape: Vec<usize> = to
        .shape
        .iter()
        .filter_map(|dim| dim.fixed())
        .map(|size| size as usize)
        .collect();
    let (from_strides, to_strides) = (strides(from), strides(to));
    let read: Vec<usize> = axes.iter().map(|&axis| from_strides[axis]).collect();
    let count: usize = shape.iter().product();
    let mut out = vec![0; count * element];
    let mut index = vec![0; shape.len()];
    for _ in 0..count {
        let source: usize = index.iter().zip(&read).map(|(i, s)| i * s).sum();
        let target: usize = index.iter().zip(&to_strides).map(|(i, s)| i * s).sum();
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
    out
}
