//! Fuses a clamp (relu, hardtanh, clamp) into the op that feeds it when that
//! op has a clamp in its epilogue ([`ptec_ir::ops::OpDef::clamp_epilogue`]:
//! convolutions and matrix products), so the bounds apply there instead of
//! in a pass over memory. Applies to f32 results when the producer's result
//! feeds only the clamp, which runs right after it, and the producer is not
//! clamped yet.

use ptec_ir::ops::elementwise::{Elementwise, Func, UnaryOp};
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
    let producer = follows(graph, id, input)?;
    let mut op = graph.op(producer).clone();
    let clamp = op.def_mut().clamp_epilogue()?;
    if !clamp.is_none() {
        return None;
    }
    *clamp = range;
    absorb(graph, producer, id, op)
}
