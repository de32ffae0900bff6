//! Reading and writing the bytes of constant tensors, for passes that
//! compute new constants.

use std::borrow::Cow;

use ptec_ir::{DType, Graph, ValueId, ValueKind};

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
