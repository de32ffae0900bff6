//! Constant folding: a node whose operands are all constants becomes a
//! constant itself (computed once here instead of at every call) when its
//! op's folding rule ([`ptec_ir::ops::OpDef::fold`]) computes it: layout
//! ops (permute, reshape, copy) and casts. The node must be the only writer
//! of its one result, which must not leave the method. Repeats until
//! nothing changes, so chains fold too.

use std::borrow::Cow;

use ptec_ir::{Graph, NodeId, TensorType, ValueId, ValueKind};

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    let mut changed = false;
    while let Some((node, output, bytes)) = graph
        .schedule()
        .iter()
        .find_map(|&id| fold(graph, id).map(|(output, bytes)| (id, output, bytes)))
    {
        graph.remove_node(node);
        let value = graph.value_mut(output);
        value.kind = ValueKind::Constant(Cow::Owned(bytes));
        value.offset = None;
        changed = true;
    }
    changed
}

/// The node's one result and its bytes, when its op folds its operands,
/// all constants, and it is the only writer of a value that does not leave
/// the method.
fn fold(graph: &Graph<'_>, id: NodeId) -> Option<(ValueId, Vec<u8>)> {
    let node = graph.node(id);
    let &[output] = node.outputs() else {
        return None;
    };
    let inputs: Vec<(&TensorType, &[u8])> = node
        .inputs()
        .into_iter()
        .map(|input| {
            let value = graph.value(input);
            value.constant_bytes().map(|bytes| (&value.ty, bytes))
        })
        .collect::<Option<_>>()?;
    if graph.is_live_out(output) || graph.writers(output).len() != 1 {
        return None;
    }
    let bytes = node.op().def().fold(&inputs, &graph.value(output).ty)?;
    Some((output, bytes))
}
