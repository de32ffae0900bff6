//! Folds an inference batch norm into the convolution that feeds it:
//! `bn(conv(x, w) + b)` is `conv(x, w * s) + (b - mean) * s + beta` with
//! `s = gamma / sqrt(var + eps)` per output channel. Applies when every
//! parameter is an f32 constant, the convolution's epilogue is still empty
//! (the batch norm must come before a clamp or a residual), and the
//! convolution's result feeds only the batch norm, which runs right after
//! it.

use ptec_ir::ops::conv::Convolution;
use ptec_ir::ops::norm::BatchNorm;
use ptec_ir::tensor_data::{f32_bytes, f32_elements};
use ptec_ir::{DType, Graph, NodeId, Op, ValueData, ValueId};

use crate::epilogue::absorb;
use crate::schedule::follows;

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    let mut changed = false;
    let norms: Vec<NodeId> = graph
        .schedule()
        .iter()
        .copied()
        .filter(|&id| matches!(graph.op(id), Op::BatchNorm(_)))
        .collect();
    for norm in norms {
        changed |= fold(graph, norm).is_some();
    }
    changed
}

/// The elements of an f32 constant.
fn constant_f32(graph: &Graph<'_>, value: ValueId) -> Option<Vec<f32>> {
    let data = graph.value(value);
    (data.ty.dtype == DType::F32)
        .then(|| data.constant_bytes().map(f32_elements))
        .flatten()
}

/// Whether an op applies nothing after computing its result: no clamp and
/// no residual in its epilogue.
fn epilogue_is_empty(op: &mut Op) -> bool {
    let def = op.def_mut();
    def.clamp_epilogue().is_none_or(|clamp| clamp.is_none())
        && def
            .residual_epilogue()
            .is_none_or(|residual| residual.is_none())
}

fn fold(graph: &mut Graph<'_>, norm: NodeId) -> Option<()> {
    let Op::BatchNorm(batch_norm) = graph.op(norm) else {
        return None;
    };
    let BatchNorm {
        input,
        weight,
        bias,
        mean,
        variance,
        eps,
    } = batch_norm.clone();
    let conv = follows(graph, norm, input)?;
    let mut op = graph.op(conv).clone();
    if !epilogue_is_empty(&mut op) {
        return None;
    }
    // A transposed convolution's filter holds its output channels in its
    // second dimension, which the rescaling below does not handle; epilogue
    // steps come after the bias, so the norm cannot move before them.
    let Op::Convolution(Convolution {
        weight: filter,
        bias: conv_bias,
        transposed: None,
        epilogue: None,
        ..
    }) = &mut op
    else {
        return None;
    };
    let extra_outputs_unused = graph
        .node(norm)
        .outputs()
        .iter()
        .skip(1)
        .all(|&output| !graph.is_live_out(output) && graph.readers(output).is_empty());
    if !extra_outputs_unused {
        return None;
    }
    let weights = constant_f32(graph, *filter)?;
    let channels = graph.value(*filter).ty.shape.first()?.fixed()? as usize;
    let per_channel = weights.len() / channels.max(1);
    let old_bias = match *conv_bias {
        Some(bias) => constant_f32(graph, bias)?,
        None => vec![0.0; channels],
    };
    let parameter = |value: Option<ValueId>, default: f32| match value {
        Some(value) => constant_f32(graph, value),
        None => Some(vec![default; channels]),
    };
    let gamma = parameter(weight, 1.0)?;
    let beta = parameter(bias, 0.0)?;
    let mean_values = constant_f32(graph, mean)?;
    let variance_values = constant_f32(graph, variance)?;
    let lengths = [
        old_bias.len(),
        gamma.len(),
        beta.len(),
        mean_values.len(),
        variance_values.len(),
    ];
    if lengths.iter().any(|&len| len != channels) {
        return None;
    }
    let scale: Vec<f64> = (0..channels)
        .map(|c| f64::from(gamma[c]) / (f64::from(variance_values[c]) + eps.0).sqrt())
        .collect();
    let new_weights: Vec<f32> = weights
        .iter()
        .enumerate()
        .map(|(index, &w)| (f64::from(w) * scale[index / per_channel]) as f32)
        .collect();
    let new_bias: Vec<f32> = (0..channels)
        .map(|c| {
            let shifted = f64::from(old_bias[c]) - f64::from(mean_values[c]);
            (shifted * scale[c] + f64::from(beta[c])) as f32
        })
        .collect();
    let filter_ty = graph.value(*filter).ty.clone();
    let bias_ty = graph.value(mean).ty.clone();
    *filter = graph.add_value(ValueData::constant(filter_ty, f32_bytes(&new_weights)));
    *conv_bias = Some(graph.add_value(ValueData::constant(bias_ty, f32_bytes(&new_bias))));
    absorb(graph, conv, norm, op)
}
