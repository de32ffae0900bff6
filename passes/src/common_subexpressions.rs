//! Common-subexpression elimination: a node that applies the same op to the
//! same inputs as an earlier one is removed, and its results' readers read
//! the earlier node's results. Only for computations (no copies into state,
//! no delegates, no control), with no label or jump between the two nodes
//! (so the first runs whenever the second would), inputs that nothing writes
//! twice, and results that each have one writer and do not leave the method.

use std::collections::HashMap;

use ptec_ir::{Graph, NodeId, Op, ValueId, ValueKind};

use crate::Context;

pub(crate) fn run(graph: &mut Graph<'_>, _context: &Context) -> bool {
    let mut changed = false;
    // (op text, inputs) -> the earlier node, within one straight-line region.
    let mut seen: HashMap<(String, Vec<ValueId>), NodeId> = HashMap::new();
    let schedule: Vec<NodeId> = graph.schedule().to_vec();
    for id in schedule {
        let node = graph.node(id).clone();
        if node.op.is_control() {
            seen.clear();
            continue;
        }
        if !eligible(graph, id) {
            continue;
        }
        let key = (format!("{:?}", node.op), node.inputs.clone());
        match seen.get(&key) {
            Some(&earlier) if same_result_types(graph, earlier, id) => {
                let replacements: Vec<(ValueId, ValueId)> = node
                    .outputs
                    .iter()
                    .copied()
                    .zip(graph.node(earlier).outputs.iter().copied())
                    .collect();
                for (old, new) in replacements {
                    graph.replace_reads(old, new);
                }
                graph.remove_node(id);
                changed = true;
            }
            _ => {
                seen.insert(key, id);
            }
        }
    }
    changed
}

fn eligible(graph: &Graph<'_>, id: NodeId) -> bool {
    let node = graph.node(id);
    let pure = node.op != Op::Copy;
    let stable_inputs = node
        .inputs
        .iter()
        .all(|&input| match graph.value(input).kind {
            ValueKind::Input(_) | ValueKind::Constant(_) => true,
            ValueKind::Computed => graph.writers(input).len() == 1,
            ValueKind::State { .. } => false,
        });
    let private_results = node.outputs.iter().all(|&output| {
        matches!(graph.value(output).kind, ValueKind::Computed)
            && graph.writers(output).len() == 1
            && !graph.is_live_out(output)
    });
    pure && stable_inputs && private_results
}

fn same_result_types(graph: &Graph<'_>, a: NodeId, b: NodeId) -> bool {
    let types = |id: NodeId| {
        graph
            .node(id)
            .outputs
            .iter()
            .map(|&v| graph.value(v).ty.clone())
            .collect::<Vec<_>>()
    };
    types(a) == types(b)
}
