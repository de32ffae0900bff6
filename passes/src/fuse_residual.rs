//! Fuses a residual add into the op that feeds it when that op can add a
//! residual in its epilogue ([`ptec_ir::ops::OpDef::residual_epilogue`]:
//! convolutions): `conv(x) + r` becomes one convolution whose epilogue adds
//! `r` (after its clamp, as the add came after the clamp). Applies when the
//! add (no alpha) runs right after the producer, which feeds only it, the
//! producer adds no residual yet, and `r` is another value, an f32 tensor of
//! the output's type, row-major.

use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func};
use ptec_ir::{DType, Graph, NodeId, Op};

use crate::epilogue::absorb;
use crate::schedule::{follows, rewrite_each};

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    rewrite_each(graph, fuse)
}

fn fuse(graph: &mut Graph<'_>, id: NodeId) -> Option<()> {
    let Op::Elementwise(Elementwise {
        func: Func::Binary {
            op: BinaryOp::Add,
            alpha: None,
        },
        inputs,
    }) = graph.op(id)
    else {
        return None;
    };
    let &[left, right] = inputs.as_slice() else {
        return None;
    };
    // `y + y` has no other addend.
    if left == right {
        return None;
    }
    let (producer, residual) = [(left, right), (right, left)]
        .into_iter()
        .find_map(|(produced, other)| follows(graph, id, produced).map(|node| (node, other)))?;
    let result = *graph.node(id).outputs().first()?;
    let (sum, addend) = (&graph.value(result).ty, &graph.value(residual).ty);
    if sum != addend || sum.dtype != DType::F32 || !sum.is_contiguous() {
        return None;
    }
    let mut op = graph.op(producer).clone();
    let slot = op.def_mut().residual_epilogue()?;
    if slot.is_some() {
        return None;
    }
    *slot = Some(residual);
    absorb(graph, producer, id, op)
}
