//! Fuses a clamp (relu, hardtanh, clamp) into the convolution or matrix
//! product that feeds it, so the bounds apply in its epilogue instead of in a
//! pass over memory. Applies when the producer's result feeds only the
//! clamp, which runs right after it (and, unless memory is planned afresh
//! afterwards, the clamp's result does not share memory with the producer's
//! inputs).

use ptec_ir::{ClampRange, DType, Graph, NodeId, Op, UnaryOp};

use crate::Context;
use crate::schedule::{follows, overlaps_inputs};

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
    let producer = follows(graph, id, node.inputs[0])?;
    if !context.replan && overlaps_inputs(graph, producer, result) {
        return None;
    }
    let producer_node = graph.node_mut(producer);
    let slot = clamp_slot(&mut producer_node.op)?;
    *slot = range;
    producer_node.outputs = vec![result];
    graph.remove_node(id);
    Some(())
}

/// The clamp of an op that can take one now: a convolution (before any
/// residual is added, since the clamp comes first) or a matrix product,
/// not clamped yet.
fn clamp_slot(op: &mut Op) -> Option<&mut ClampRange> {
    let slot = match op {
        Op::Convolution {
            clamp,
            residual: false,
            ..
        }
        | Op::MatMul { clamp }
        | Op::Addmm { clamp, .. } => clamp,
        _ => return None,
    };
    slot.is_none().then_some(slot)
}
