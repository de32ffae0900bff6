//! Fuses a clamp (relu, hardtanh, clamp) into the convolution that feeds it,
//! so the bounds apply in the convolution's epilogue instead of in a pass
//! over memory. Applies when the convolution's result feeds only the clamp,
//! which runs right after it (and, unless memory is planned afresh
//! afterwards, the clamp's result does not share memory with the
//! convolution's input).

use ptec_ir::{ClampRange, DType, Graph, NodeId, Op, UnaryOp, ValueId};

use crate::Context;

pub(crate) fn run(graph: &mut Graph<'_>, context: &Context) -> bool {
    let mut changed = false;
    let clamps: Vec<NodeId> = graph.schedule().to_vec();
    for id in clamps {
        changed |= fuse(graph, id, context).is_some();
    }
    changed
}

fn bounds(op: &Op) -> Option<ClampRange> {
    match op {
        Op::Unary(UnaryOp::Relu) => Some(ClampRange {
            min: Some(0.0),
            max: None,
        }),
        Op::Clamp { min, max } => Some(ClampRange {
            min: min.map(|min| min.as_f64()),
            max: max.map(|max| max.as_f64()),
        }),
        _ => None,
    }
}

fn fuse(graph: &mut Graph<'_>, id: NodeId, context: &Context) -> Option<()> {
    let range = bounds(&graph.node(id).op)?;
    let node = graph.node(id).clone();
    let result = node.outputs[0];
    if graph.value(result).ty.dtype != DType::F32 {
        return None;
    }
    let conv = follows(graph, id, node.inputs[0])?;
    let Op::Convolution {
        clamp, residual, ..
    } = graph.node(conv).op
    else {
        return None;
    };
    // The clamp must come before a residual, so a convolution with one
    // takes no clamp after it.
    if !clamp.is_none() || residual || (!context.replan && overlaps_inputs(graph, conv, result)) {
        return None;
    }
    let conv_node = graph.node_mut(conv);
    conv_node.outputs = vec![result];
    if let Op::Convolution { clamp, .. } = &mut conv_node.op {
        *clamp = range;
    }
    graph.remove_node(id);
    Some(())
}

/// The node that writes `value` right before `reader` in the schedule, when
/// it is the value's only writer and `reader` its only reader, and nothing
/// outside the nodes needs it.
pub(crate) fn follows(graph: &Graph<'_>, reader: NodeId, value: ValueId) -> Option<NodeId> {
    let schedule = graph.schedule();
    let position = schedule.iter().position(|&id| id == reader)?;
    let previous = *schedule.get(position.checked_sub(1)?)?;
    let single = graph.writers(value) == [previous] && graph.readers(value) == [reader];
    (single && !graph.is_live_out(value)).then_some(previous)
}

/// Whether `value`'s memory overlaps that of an input of `node`.
pub(crate) fn overlaps_inputs(graph: &Graph<'_>, node: NodeId, value: ValueId) -> bool {
    let range = |value: ValueId| {
        let data = graph.value(value);
        data.offset.map(|start| {
            (
                start,
                start + data.ty.max_bytes(|symbol| graph.bound(symbol)),
            )
        })
    };
    let Some((start, end)) = range(value) else {
        return true;
    };
    graph
        .node(node)
        .inputs
        .iter()
        .any(|&input| match range(input) {
            Some((input_start, input_end)) => start < input_end && input_start < end,
            None => false,
        })
}
