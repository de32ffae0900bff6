//! Fuses a clamp (relu, hardtanh, clamp) into the op that feeds it when that
//! op has a clamp in its epilogue ([`ptec_ir::ops::OpDef::clamp_epilogue`]:
//! convolutions and matrix products), so the bounds apply there instead of
//! in a pass over memory. Applies to f32 results when the producer's result
//! feeds only the clamp, which runs right after it (or after a reshape of
//! it alone, which then takes the clamp's place: a linear layer on a batch
//! of sequences), and the producer is not clamped yet.

use ptec_ir::ops::elementwise::{Elementwise, Func, UnaryOp};
use ptec_ir::ops::layout::Reshape;
use ptec_ir::ops::linalg::ClampRange;
use ptec_ir::{DType, Graph, NodeId, Op, Real, ValueId};

use crate::epilogue::absorb;
use crate::schedule::{follows, rewrite_each};

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    rewrite_each(graph, fuse)
}

/// The bounds of a clamp, and the value it clamps.
fn bounds(op: &Op) -> Option<(ClampRange, ValueId)> {
    let Op::Elementwise(Elementwise { func, inputs }) = op else {
        return None;
    };
    let range = match func {
        Func::Unary(UnaryOp::Relu) => ClampRange {
            min: Some(Real(0.0)),
            max: None,
        },
        Func::Clamp { min, max } => ClampRange {
            min: min.map(|min| Real(min.as_f64())),
            max: max.map(|max| Real(max.as_f64())),
        },
        _ => return None,
    };
    Some((range, *inputs.first()?))
}

fn fuse(graph: &mut Graph<'_>, id: NodeId) -> Option<()> {
    let (range, input) = bounds(graph.op(id))?;
    let result = *graph.node(id).outputs().first()?;
    if graph.value(result).ty.dtype != DType::F32 {
        return None;
    }
    let previous = follows(graph, id, input)?;
    if let Op::Reshape(reshape) = graph.op(previous) {
        return through_reshape(graph, id, previous, reshape.clone(), range);
    }
    let op = clamped(graph, previous, range)?;
    absorb(graph, previous, id, op)
}

/// The op of `producer` with the clamp `range` in its epilogue, if it has
/// one and it is free.
fn clamped(graph: &Graph<'_>, producer: NodeId, range: ClampRange) -> Option<Op> {
    let mut op = graph.op(producer).clone();
    let clamp = op.def_mut().clamp_epilogue()?;
    if !clamp.is_none() {
        return None;
    }
    *clamp = range;
    Some(op)
}

/// `clamp(reshape(producer(...)))`, as a linear layer on a batch of
/// sequences is exported (a matrix product between two reshapes): the
/// producer clamps, and the clamp's node becomes the reshape, writing the
/// clamp's result.
fn through_reshape(
    graph: &mut Graph<'_>,
    id: NodeId,
    reshape_node: NodeId,
    reshape: Reshape,
    range: ClampRange,
) -> Option<()> {
    let producer = follows(graph, reshape_node, reshape.input)?;
    let op = clamped(graph, producer, range)?;
    graph.set_op(producer, op);
    graph.remove_node(reshape_node);
    graph.set_op(id, Op::Reshape(reshape));
    Some(())
}
