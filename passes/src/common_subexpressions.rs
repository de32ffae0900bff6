//! Common-subexpression elimination: a node that applies the same op (with
//! the same operands and attributes) as an earlier one, writing results of
//! the same types, is removed, and its results' readers read the earlier
//! node's results. Only for computations (no copies into state, no control),
//! with no label or jump between the two nodes (so the first runs whenever
//! the second would), operands that nothing writes twice, and results that
//! each have one writer and do not leave the method.

use std::collections::HashMap;

use ptec_ir::{Graph, NodeId, Op, TensorType, ValueKind};

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    let mut changed = false;
    // The op (which holds its operands) and its results' types -> the
    // earlier node, within one straight-line region.
    let mut seen: HashMap<(Op, Vec<TensorType>), NodeId> = HashMap::new();
    let schedule: Vec<NodeId> = graph.schedule().to_vec();
    for id in schedule {
        let node = graph.node(id);
        if node.op().is_control() {
            seen.clear();
            continue;
        }
        if !eligible(graph, id) {
            continue;
        }
        let types = node
            .outputs()
            .iter()
            .map(|&output| graph.value(output).ty.clone())
            .collect();
        let key = (node.op().clone(), types);
        let Some(&earlier) = seen.get(&key) else {
            seen.insert(key, id);
            continue;
        };
        let replacements: Vec<_> = node
            .outputs()
            .iter()
            .copied()
            .zip(graph.node(earlier).outputs().iter().copied())
            .collect();
        graph.remove_node(id);
        for (old, new) in replacements {
            graph.replace_reads(old, new);
        }
        changed = true;
    }
    changed
}

fn eligible(graph: &Graph<'_>, id: NodeId) -> bool {
    let node = graph.node(id);
    let pure = !matches!(node.op(), Op::Copy(_));
    let stable_inputs = node
        .inputs()
        .iter()
        .all(|&input| match graph.value(input).kind {
            ValueKind::Input(_) | ValueKind::Constant(_) => true,
            ValueKind::Computed => graph.writers(input).len() == 1,
            ValueKind::State { .. } => false,
        });
    let private_results = node.outputs().iter().all(|&output| {
        matches!(graph.value(output).kind, ValueKind::Computed)
            && graph.writers(output).len() == 1
            && !graph.is_live_out(output)
    });
    pure && stable_inputs && private_results
}
