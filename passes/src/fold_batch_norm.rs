//! Folds an inference batch norm into the convolution that feeds it:
//! `bn(conv(x, w) + b)` is `conv(x, w * s) + (b - mean) * s + beta` with
//! `s = gamma / sqrt(var + eps)` per output channel. Applies when every
//! parameter is an f32 constant and the convolution's result feeds only the
//! batch norm, which runs right after it. Unless memory is planned afresh
//! afterwards, the batch norm's result must also not share memory with the
//! convolution's input (the convolution now writes it).

use ptec_ir::{Graph, NodeId, Op, ValueData, ValueKind};

use crate::Context;
use crate::schedule::{follows, overlaps_inputs};
use crate::tensor_data::{constant_f32, f32_bytes};

pub(crate) fn run(graph: &mut Graph<'_>, context: &Context) -> bool {
    let mut changed = false;
    let norms: Vec<NodeId> = graph
        .schedule()
        .iter()
        .copied()
        .filter(|&id| matches!(graph.node(id).op, Op::BatchNorm { .. }))
        .collect();
    for norm in norms {
        changed |= fold(graph, norm, context).is_some();
    }
    changed
}

fn fold(graph: &mut Graph<'_>, norm: NodeId, context: &Context) -> Option<()> {
    let Op::BatchNorm { eps, weight, bias } = graph.node(norm).op else {
        return None;
    };
    let norm_node = graph.node(norm).clone();
    let conv = follows(graph, norm, norm_node.inputs[0])?;
    let Op::Convolution {
        bias: conv_bias,
        clamp,
        residual,
        ..
    } = graph.node(conv).op
    else {
        return None;
    };
    if !clamp.is_none() || residual {
        return None;
    }
    let conv_node = graph.node(conv).clone();
    let result = norm_node.outputs[0];
    let extra_outputs_unused = norm_node.outputs[1..]
        .iter()
        .all(|&output| !graph.is_live_out(output) && graph.readers(output).is_empty());
    if !extra_outputs_unused || (!context.replan && overlaps_inputs(graph, conv, result)) {
        return None;
    }
    let filter = constant_f32(graph, conv_node.inputs[1])?;
    let channels = graph.value(conv_node.inputs[1]).ty.shape[0].fixed()? as usize;
    let per_channel = filter.len() / channels.max(1);
    let old_bias = match conv_bias {
        true => constant_f32(graph, conv_node.inputs[2])?,
        false => vec![0.0; channels],
    };
    let mut parameter = 1;
    let mut next = |present: bool| {
        present.then(|| {
            parameter += 1;
            norm_node.inputs[parameter - 1]
        })
    };
    let gamma = next(weight).map(|value| constant_f32(graph, value));
    let beta = next(bias).map(|value| constant_f32(graph, value));
    let mean = constant_f32(graph, norm_node.inputs[parameter])?;
    let variance = constant_f32(graph, norm_node.inputs[parameter + 1])?;
    let gamma = gamma.unwrap_or(Some(vec![1.0; channels]))?;
    let beta = beta.unwrap_or(Some(vec![0.0; channels]))?;
    if [
        old_bias.len(),
        gamma.len(),
        beta.len(),
        mean.len(),
        variance.len(),
    ]
    .iter()
    .any(|&len| len != channels)
    {
        return None;
    }
    let scale: Vec<f64> = (0..channels)
        .map(|c| f64::from(gamma[c]) / (f64::from(variance[c]) + eps).sqrt())
        .collect();
    let new_filter: Vec<f32> = filter
        .iter()
        .enumerate()
        .map(|(index, &w)| (f64::from(w) * scale[index / per_channel]) as f32)
        .collect();
    let new_bias: Vec<f32> = (0..channels)
        .map(|c| {
            ((f64::from(old_bias[c]) - f64::from(mean[c])) * scale[c] + f64::from(beta[c])) as f32
        })
        .collect();
    let filter_ty = graph.value(conv_node.inputs[1]).ty.clone();
    let bias_ty = graph.value(norm_node.inputs[parameter]).ty.clone();
    let filter_value = graph.add_value(ValueData {
        ty: filter_ty,
        kind: ValueKind::Constant(f32_bytes(&new_filter)),
        offset: None,
    });
    let bias_value = graph.add_value(ValueData {
        ty: bias_ty,
        kind: ValueKind::Constant(f32_bytes(&new_bias)),
        offset: None,
    });
    let node = graph.node_mut(conv);
    node.inputs = vec![conv_node.inputs[0], filter_value, bias_value];
    node.outputs = vec![result];
    if let Op::Convolution { bias, .. } = &mut node.op {
        *bias = true;
    }
    graph.remove_node(norm);
    Some(())
}
