//! Kernel generators: each turns one IR node into the body of a Cranelift
//! function specialised to the node's shapes, strides and element types.
//! [`lower`] is the one dispatch from an op to its kernel, a match over
//! every [`Op`], so that a new op does not compile until the CPU lowers it
//! or refuses it; [`support`] is the CPU's answer for each kind of op.

mod arith;
mod conv;
mod conv_direct;
mod conv_dynamic;
pub(crate) mod conv_epilogue;
mod conv_nhwc;
mod elementwise;
pub(crate) mod erf_tanh;
pub(crate) mod exp;
mod expr;
mod gather;
mod linalg;
mod map;
mod nest;
mod pointwise;
mod quantized;
mod reduce;

use ptec_ir::{Node, Op, OpKind};

use crate::emit::Emitter;
use crate::error::CodegenError;

/// Whether the CPU lowers ops of `kind`: it lowers every kind, refusing
/// only some element types, layouts or attributes of a node.
pub(crate) fn support(kind: OpKind) -> Result<(), &'static str> {
    match kind {
        OpKind::Elementwise
        | OpKind::Fused
        | OpKind::Copy
        | OpKind::Reshape
        | OpKind::Permute
        | OpKind::Select
        | OpKind::Slice
        | OpKind::Cat
        | OpKind::Pad
        | OpKind::Roll
        | OpKind::Repeat
        | OpKind::Strided
        | OpKind::SliceScatter
        | OpKind::Tril
        | OpKind::Index
        | OpKind::Gather
        | OpKind::Scatter
        | OpKind::IndexPut
        | OpKind::MaskedScatter
        | OpKind::Reduce
        | OpKind::ArgReduce
        | OpKind::TopK
        | OpKind::CumSum
        | OpKind::Softmax
        | OpKind::LayerNorm
        | OpKind::BatchNorm
        | OpKind::MatMul
        | OpKind::Addmm
        | OpKind::Convolution
        | OpKind::MaxPool2d
        | OpKind::AvgPool2d
        | OpKind::Full
        | OpKind::Arange
        | OpKind::RepeatInterleave
        | OpKind::Label
        | OpKind::Jump
        | OpKind::JumpIfFalse => Ok(()),
    }
}

/// Emits the kernel of `node` into `e`.
pub(crate) fn lower(e: &mut Emitter<'_, '_, '_>, node: &Node) -> Result<(), CodegenError> {
    let graph = e.graph();
    let op = node.op();
    // Accumulating ops take halves only as f32, which the pipeline
    // converts them to first (`Op::accumulates`); other kernels convert
    // each element as they load and store it.
    if op.accumulates()
        && let Some(half) = op
            .inputs()
            .into_iter()
            .chain(node.outputs().iter().copied())
            .map(|value| graph.value(value).ty.dtype)
            .find(|&dtype| dtype.arithmetic() != dtype)
    {
        return Err(e.unsupported(format!(
            "{half} tensors, which the pipeline computes in f32 for this op (a graph that bypassed it)"
        )));
    }
    let outputs = node.outputs();
    match op {
        Op::Elementwise(op) => pointwise::elementwise(e, op, outputs[0]),
        Op::Fused(op) => pointwise::fused(e, op, outputs[0]),
        Op::Copy(op) => elementwise::copy(e, op.input, outputs[0]),
        Op::Reshape(op) => elementwise::reshape(e, op, outputs[0]),
        Op::Permute(op) => elementwise::permute(e, op, outputs[0]),
        Op::Select(op) => elementwise::select(e, op, outputs[0]),
        Op::Slice(op) => elementwise::slice(e, op, outputs[0]),
        Op::Cat(op) => elementwise::cat(e, op, outputs[0]),
        Op::Pad(op) => elementwise::pad(e, op, outputs[0]),
        Op::Roll(op) => elementwise::roll(e, op, outputs[0]),
        Op::Repeat(op) => elementwise::repeat(e, op, outputs[0]),
        Op::Strided(op) => elementwise::strided(e, op, outputs[0]),
        Op::SliceScatter(op) => elementwise::slice_scatter(e, op, outputs[0]),
        Op::Tril(op) => elementwise::tril(e, op, outputs[0]),
        Op::Full(op) => elementwise::full(e, op.value, outputs[0]),
        Op::Arange(op) => elementwise::arange(e, op, outputs[0]),
        Op::RepeatInterleave(op) => gather::repeat_interleave(e, op, outputs[0]),
        Op::Index(op) => gather::index(e, op, outputs[0]),
        Op::Gather(op) => gather::gather(e, op, outputs[0]),
        Op::Scatter(op) => gather::scatter(e, op, outputs[0]),
        Op::IndexPut(op) => gather::index_put(e, op, outputs[0]),
        Op::MaskedScatter(op) => gather::masked_scatter(e, op, outputs[0]),
        Op::Reduce(op) => reduce::reduce(e, op, outputs[0]),
        Op::ArgReduce(op) => reduce::arg_reduce(e, op, outputs[0]),
        Op::TopK(op) => reduce::top_k(e, op, outputs),
        Op::CumSum(op) => reduce::cumsum(e, op, outputs[0]),
        Op::Softmax(op) => reduce::softmax(e, op, outputs[0]),
        Op::LayerNorm(op) => reduce::layer_norm(e, op, outputs),
        Op::BatchNorm(op) => reduce::batch_norm(e, op, outputs[0]),
        Op::MatMul(op) => linalg::matmul(e, op, outputs[0]),
        Op::Addmm(op) => linalg::addmm(e, op, outputs[0]),
        Op::Convolution(op) => conv::convolution(e, op, outputs[0]),
        Op::MaxPool2d(op) => conv::max_pool(e, op, outputs),
        Op::AvgPool2d(op) => conv::avg_pool(e, op, outputs[0]),
        // Control flow has no kernel: the entry point turns labels and
        // jumps into blocks and branches (`method.rs`), and asks for none.
        Op::Label(_) | Op::Jump(_) | Op::JumpIfFalse(_) => Ok(()),
    }
}
