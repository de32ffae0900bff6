//! Facts about a graph's schedule that fusing and forwarding passes share:
//! which node writes a value right before its reader, and whether values
//! keep their contents between two nodes; and the walk over the schedule
//! those passes make.

use ptec_ir::{Graph, NodeId, ValueId};

/// The node that writes `value` right before `reader` in the schedule, when
/// it is the value's only writer and `reader` its only reader, and nothing
/// outside the nodes needs it.
pub(crate) fn follows(graph: &Graph<'_>, reader: NodeId, value: ValueId) -> Option<NodeId> {
    let previous = *graph
        .schedule()
        .get(graph.position(reader).checked_sub(1)?)?;
    let single = graph.writers(value) == [previous] && graph.readers(value) == [reader];
    (single && !graph.is_live_out(value)).then_some(previous)
}

/// Whether every one of `values` keeps its contents from `from` through `to`
/// (a later node): nothing in between writes one of them or moves control.
pub(crate) fn unchanged_between(
    graph: &Graph<'_>,
    values: &[ValueId],
    from: NodeId,
    to: NodeId,
) -> bool {
    let (first, last) = (graph.position(from), graph.position(to));
    first < last
        && graph.schedule()[first + 1..last].iter().all(|&id| {
            let node = graph.node(id);
            !node.op().is_control() && !node.outputs().iter().any(|output| values.contains(output))
        })
}

/// Tries `rewrite` at each node of the schedule, in order, and says whether
/// it applied anywhere. A rewrite may remove the node it is given, and no
/// other.
pub(crate) fn rewrite_each(
    graph: &mut Graph<'_>,
    rewrite: fn(&mut Graph<'_>, NodeId) -> Option<()>,
) -> bool {
    let mut changed = false;
    let nodes: Vec<NodeId> = graph.schedule().to_vec();
    for id in nodes {
        changed |= rewrite(graph, id).is_some();
    }
    changed
}
