//! Host tensors from a bundled program's test values, and the elements of
//! host tensors as numbers, for comparing outputs.

use ptec_frontend::{TestTensor, TestValue};
use ptec_runtime::{ElementType, HostTensor};

use crate::error::Error;
use crate::load::element_type_of;

/// A bundled test tensor as a host tensor (row-major). The exporter stores
/// a tensor's storage as it is, so a tensor in another dim order (a
/// transpose, `nonzero`'s column-major result) is reordered; the reader
/// checked that the dim order is a permutation and the data the tensor's
/// bytes.
pub fn host_tensor(tensor: &TestTensor<'_>) -> Result<HostTensor, Error> {
    let element = element_type_of(tensor.dtype).ok_or(Error::ElementType(tensor.dtype))?;
    let sizes: Vec<u64> = tensor.sizes.iter().map(|&size| size as u64).collect();
    let data = ptec_runtime::load_in_order(tensor.data, &sizes, element.size(), &tensor.dim_order);
    Ok(HostTensor {
        element,
        sizes,
        data,
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

/// The elements of a tensor as f64 (exact for all but the largest 64-bit
/// integers, which comparisons also check as bytes).
pub fn values(tensor: &HostTensor) -> Vec<f64> {
    let size = tensor.element.size();
    tensor
        .data
        .chunks_exact(size)
        .map(|bytes| element_value(tensor.element, bytes))
        .collect()
}

/// One little-endian element of `element`'s type, from its `size()` bytes.
fn element_value(element: ElementType, bytes: &[u8]) -> f64 {
    let array = |bytes: &[u8]| -> [u8; 8] {
        let mut array = [0; 8];
        array[..bytes.len()].copy_from_slice(bytes);
        array
    };
    let [b0, b1, b2, b3, b4, b5, b6, b7] = array(bytes);
    match element {
        ElementType::Bool => f64::from(u8::from(b0 != 0)),
        ElementType::U8 => f64::from(b0),
        ElementType::I8 => f64::from(b0 as i8),
        ElementType::I16 => f64::from(i16::from_le_bytes([b0, b1])),
        ElementType::I32 => f64::from(i32::from_le_bytes([b0, b1, b2, b3])),
        ElementType::I64 => i64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]) as f64,
        ElementType::F16 => f64::from(half::f16::from_le_bytes([b0, b1])),
        ElementType::BF16 => f64::from(half::bf16::from_le_bytes([b0, b1])),
        ElementType::F32 => f64::from(f32::from_le_bytes([b0, b1, b2, b3])),
        ElementType::F64 => f64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]),
    }
}
