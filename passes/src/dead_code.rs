//! Removes nodes whose results nothing reads: no later node, no method
//! output, no state. Control flow always stays.

use ptec_ir::Graph;

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    let mut changed = false;
    loop {
        let dead: Vec<_> = graph
            .schedule()
            .iter()
            .copied()
            .filter(|&id| {
                let node = graph.node(id);
                !node.op().is_control()
                    && node.outputs().iter().all(|&output| {
                        !graph.is_live_out(output) && graph.readers(output).is_empty()
                    })
            })
            .collect();
        if dead.is_empty() {
            if changed {
                // Sizes only removed values had need no computing.
                graph.remove_unused_symbols();
            }
            return changed;
        }
        for id in dead {
            graph.remove_node(id);
        }
        changed = true;
    }
}
