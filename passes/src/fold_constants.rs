//! Constant folding of layout ops and casts: a permute, reshape or copy
//! (converting the element type or not) whose input is a constant becomes a
//! constant itself (computed once here instead of at every call). Repeats
//! until nothing changes, so chains fold too.

use std::borrow::Cow;

use crate::Context;
use ptec_ir::{Graph, NodeId, Op, ValueKind};

use crate::tensor_data::{cast, constant_bytes, relayout};

pub(crate) fn run(graph: &mut Graph<'_>, _context: &Context) -> bool {
    let mut changed = false;
    while let Some((node, bytes)) = graph
        .schedule()
        .iter()
        .find_map(|&id| fold(graph, id).map(|bytes| (id, bytes)))
    {
        let output = graph.node(node).outputs[0];
        let value = graph.value_mut(output);
        value.kind = ValueKind::Constant(Cow::Owned(bytes));
        value.offset = None;
        graph.remove_node(node);
        changed = true;
    }
    changed
}

/// The bytes of the node's result, when it is a foldable layout op of a
/// constant with a fixed shape, the only writer of a value that does not
/// leave the method.
fn fold(graph: &Graph<'_>, id: NodeId) -> Option<Vec<u8>> {
    let node = graph.node(id);
    if !matches!(node.op, Op::Permute { .. } | Op::Reshape | Op::Copy) {
        return None;
    }
    let (input, output) = (node.inputs[0], node.outputs[0]);
    let bytes = constant_bytes(graph, input)?;
    if graph.is_live_out(output) || graph.writers(output).len() != 1 {
        return None;
    }
    let (from, to) = (&graph.value(input).ty, &graph.value(output).ty);
    let (from_shape, to_shape) = (from.fixed_shape()?, to.fixed_shape()?);
    if from.dtype != to.dtype {
        // A cast: element by element, so both layouts must be the same.
        let same_layout = from_shape == to_shape && from.dim_order == to.dim_order;
        return match node.op {
            Op::Copy if same_layout => cast(bytes, from.dtype, to.dtype),
            _ => None,
        };
    }
    match &node.op {
        Op::Reshape if from.is_contiguous() && to.is_contiguous() => Some(bytes.to_vec()),
        Op::Copy if from_shape == to_shape => Some(relayout(
            bytes,
            from,
            to,
            &(0..from.rank()).collect::<Vec<_>>(),
        )),
        Op::Permute { dims } => Some(relayout(bytes, from, to, dims)),
        _ => None,
    }
}
