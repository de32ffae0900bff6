//! Kernel generators: each turns one IR node into the body of a Cranelift
//! function specialised to the node's shapes, strides and element types.

mod conv;
mod conv_nhwc;
mod elementwise;
mod gather;
mod linalg;
mod map;
mod nest;
mod pointwise;
mod reduce;
mod scalar_ops;

use ptec_ir::Node;

use crate::emit::{Emitter, arithmetic};
use crate::error::CodegenError;

/// Emits the kernel of `node` into `e`.
pub(crate) fn lower(e: &mut Emitter<'_, '_, '_>, node: &Node) -> Result<(), CodegenError> {
    for lower in [elementwise::lower, gather::lower] {
        if lower(e, node)? {
            return Ok(());
        }
    }
    // The other kernels compute on elements as they are loaded, so they
    // take no half-precision values (maps and gathers convert them).
    let graph = e.graph();
    if let Some(half) = node
        .inputs
        .iter()
        .chain(&node.outputs)
        .map(|&value| graph.value(value).ty.dtype)
        .find(|&dtype| arithmetic(dtype) != dtype)
    {
        return Err(CodegenError::Unsupported(format!(
            "the {} op on {half} tensors",
            node.op.name()
        )));
    }
    for lower in [reduce::lower, linalg::lower, conv::lower] {
        if lower(e, node)? {
            return Ok(());
        }
    }
    Err(CodegenError::Unsupported(format!(
        "the {} op",
        node.op.name()
    )))
}
