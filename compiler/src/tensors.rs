//! Host tensors from a bundled program's test values, and the elements of
//! host tensors as numbers, for comparing outputs.

use ptec_frontend::{TestTensor, TestValue};
use ptec_runtime::{ElementType, HostTensor};

use crate::error::Error;
use crate::load::element_type_of;

/// A bundled test tensor as a host tensor (row-major, whatever dim order it
/// is stored in).
pub fn host_tensor(tensor: &TestTensor<'_>) -> Result<HostTensor, Error> {
    let element = element_type_of(tensor.dtype).ok_or(Error::ElementType(tensor.dtype))?;
    let sizes = tensor.sizes.iter().map(|&size| size as u64).collect();
    HostTensor::from_dim_order(element, sizes, tensor.data, &tensor.dim_order).ok_or_else(|| {
        Error::TestValue(format!(
            "a test tensor of sizes {:?} in dim order {:?} with {} bytes of data: the order is no permutation of its dimensions, or the data does not hold exactly its elements",
            tensor.sizes,
            tensor.dim_order,
            tensor.data.len()
        ))
    })
}

/// A bundled test value that is a method's input or output: ptec's methods
/// take and return tensors only.
pub fn test_tensor(value: &TestValue<'_>) -> Result<HostTensor, Error> {
    match value {
        TestValue::Tensor(tensor) => host_tensor(tensor),
        other => Err(Error::TestValue(format!(
            "non-tensor values ({other:?}) are not supported"
        ))),
    }
}

/// One element of a host tensor, in its kind of number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Element {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Element {
    /// The element as f64 (exact for all but the largest 64-bit integers).
    pub fn as_f64(self) -> f64 {
        match self {
            Element::Bool(value) => f64::from(u8::from(value)),
            Element::Int(value) => value as f64,
            Element::Float(value) => value,
        }
    }
}

impl std::fmt::Display for Element {
    /// Integers and booleans exactly, floats with six decimals.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Element::Bool(value) => write!(f, "{value}"),
            Element::Int(value) => write!(f, "{value}"),
            Element::Float(value) => write!(f, "{value:.6}"),
        }
    }
}

/// The elements of a tensor.
pub fn elements(tensor: &HostTensor) -> impl Iterator<Item = Element> + '_ {
    tensor
        .data
        .chunks_exact(tensor.element.size())
        .map(|bytes| element(tensor.element, bytes))
}

/// The elements of a tensor as f64 (exact for all but the largest 64-bit
/// integers, which comparisons also check as bytes).
pub fn values(tensor: &HostTensor) -> Vec<f64> {
    elements(tensor).map(Element::as_f64).collect()
}

/// One little-endian element of `element`'s type, from its `size()` bytes.
fn element(element: ElementType, bytes: &[u8]) -> Element {
    let array = |bytes: &[u8]| -> [u8; 8] {
        let mut array = [0; 8];
        array[..bytes.len()].copy_from_slice(bytes);
        array
    };
    let [b0, b1, b2, b3, b4, b5, b6, b7] = array(bytes);
    match element {
        ElementType::Bool => Element::Bool(b0 != 0),
        ElementType::U8 => Element::Int(b0.into()),
        ElementType::I8 => Element::Int((b0 as i8).into()),
        ElementType::I16 => Element::Int(i16::from_le_bytes([b0, b1]).into()),
        ElementType::I32 => Element::Int(i32::from_le_bytes([b0, b1, b2, b3]).into()),
        ElementType::I64 => Element::Int(i64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7])),
        ElementType::F16 => Element::Float(half::f16::from_le_bytes([b0, b1]).into()),
        ElementType::BF16 => Element::Float(half::bf16::from_le_bytes([b0, b1]).into()),
        ElementType::F32 => Element::Float(f32::from_le_bytes([b0, b1, b2, b3]).into()),
        ElementType::F64 => Element::Float(f64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7])),
    }
}
