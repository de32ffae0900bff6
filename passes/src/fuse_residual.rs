//! Fuses a residual add into the convolution that feeds it: `conv(x) + r`
//! becomes one convolution whose epilogue adds `r` (after its clamp, as the
//! add came after the clamp). Applies when the add (no alpha) runs right
//! after the convolution, which feeds only it, and `r` is an f32 tensor of
//! the output's shape and layout (unless memory is planned afresh
//! afterwards, the sum must also not share memory with the convolution's
//! inputs).

use ptec_ir::{BinaryOp, DType, Graph, NodeId, Op};

use crate::Context;
use crate::schedule::{follows, overlaps_inputs};

pub(crate) fn run(graph: &mut Graph<'_>, context: &Context) -> bool {
    let mut changed = false;
    let nodes: Vec<NodeId> = graph.schedule().to_vec();
    for id in nodes {
        changed |= fuse(graph, id, context).is_some();
    }
    changed
}

fn fuse(graph: &mut Graph<'_>, id: NodeId, context: &Context) -> Option<()> {
    let Op::Binary {
        op: BinaryOp::Add,
        alpha: None,
    } = graph.node(id).op
    else {
        return None;
    };
    let node = graph.node(id).clone();
    let (conv, residual) = [(0, 1), (1, 0)].into_iter().find_map(|(produced, other)| {
        follows(graph, id, node.inputs[produced]).map(|conv| (conv, node.inputs[other]))
    })?;
    let Op::Convolution {
        residual: already, ..
    } = graph.node(conv).op
    else {
        return None;
    };
    let result = node.outputs[0];
    let (sum, addend) = (&graph.value(result).ty, &graph.value(residual).ty);
    let same_layout = sum == addend && sum.dtype == DType::F32 && sum.is_contiguous();
    // `y + y` has no other addend.
    if already || !same_layout || node.inputs[0] == node.inputs[1] {
        return None;
    }
    if !context.replan && overlaps_inputs(graph, conv, result) {
        return None;
    }
    let conv_node = graph.node_mut(conv);
    conv_node.inputs.push(residual);
    conv_node.outputs = vec![result];
    if let Op::Convolution { residual, .. } = &mut conv_node.op {
        *residual = true;
    }
    graph.remove_node(id);
    Some(())
}
