//! Moves the elementwise chain that follows a convolution into the
//! convolution's epilogue ([`ptec_ir::ops::fused::Epilogue`]): an
//! elementwise op or fused kernel that reads the convolution's result, runs
//! right after it and computes a result of the same type then becomes steps
//! the convolution applies to each block of its output while the block is
//! still in the cache, instead of a pass of its own over memory (a
//! quantized program's requantization after every convolution, an
//! activation). The steps are the chain's, in its order, on the same
//! values, so the result is the same bits.
//!
//! It runs once layouts are chosen, and applies where the code generator
//! applies an epilogue block by block: an f32 channels-last result, the
//! chain's other operands the result's type or constant along the batch and
//! spatial dimensions (one value per channel, or one value).

use ptec_ir::ops::fused::{Epilogue, FusedStep, StepInput};
use ptec_ir::{CHANNELS_LAST, DType, Dim, Graph, NodeId, Op, TensorType, ValueId};

use crate::epilogue::absorb;
use crate::fuse_elementwise::as_fused;
use crate::schedule::{follows, rewrite_each};

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    rewrite_each(graph, fuse)
}

/// Whether a tensor of type `ty`, broadcast to the 4-D `output`, takes one
/// value per channel (or one in all): every other dimension it has is 1.
fn per_channel(ty: &TensorType, output: &TensorType) -> bool {
    let lead = output.rank().checked_sub(ty.rank());
    lead.is_some_and(|lead| {
        ty.shape
            .iter()
            .enumerate()
            .all(|(axis, &dim)| axis + lead == 1 || dim == Dim::Fixed(1))
    })
}

fn fuse(graph: &mut Graph<'_>, id: NodeId) -> Option<()> {
    let chain = as_fused(graph.op(id))?;
    let result = *graph.node(id).outputs().first()?;
    let output = graph.value(result).ty.clone();
    let channels_last = output.dtype == DType::F32
        && output.rank() == 4
        && output.dim_order == CHANNELS_LAST
        && output.fixed_shape().is_some();
    if !channels_last {
        return None;
    }
    let (producer, produced) = chain.inputs.iter().find_map(|&value| {
        let producer = follows(graph, id, value)?;
        let Op::Convolution(conv) = graph.op(producer) else {
            return None;
        };
        let fits =
            conv.epilogue.is_none() && conv.transposed.is_none() && graph.value(value).ty == output;
        fits.then_some((producer, value))
    })?;
    // `in0` is the convolution's result, `in{k + 1}` operand `k`.
    let mut operands: Vec<ValueId> = Vec::new();
    let mut slots: Vec<StepInput> = Vec::with_capacity(chain.inputs.len());
    for &value in &chain.inputs {
        if value == produced {
            slots.push(StepInput::Input(0));
            continue;
        }
        let ty = &graph.value(value).ty;
        if ty.dtype != DType::F32 || (*ty != output && !per_channel(ty, &output)) {
            return None;
        }
        let index = match operands.iter().position(|&known| known == value) {
            Some(index) => index,
            None => {
                operands.push(value);
                operands.len() - 1
            }
        };
        slots.push(StepInput::Input(1 + index));
    }
    let steps = chain
        .steps
        .iter()
        .map(|step| FusedStep {
            func: step.func.clone(),
            inputs: step
                .inputs
                .iter()
                .map(|&input| match input {
                    StepInput::Input(k) => slots[k],
                    step => step,
                })
                .collect(),
        })
        .collect();
    let mut op = graph.op(producer).clone();
    let Op::Convolution(conv) = &mut op else {
        return None;
    };
    conv.epilogue = Some(Epilogue { steps, operands });
    absorb(graph, producer, id, op)
}
