//! Facts about a graph's schedule that fusing and forwarding passes share:
//! which node writes a value right before its reader, whether values keep
//! their contents between two nodes, and whether planned memory overlaps.

use ptec_ir::{Graph, NodeId, ValueId};

/// The node that writes `value` right before `reader` in the schedule, when
/// it is the value's only writer and `reader` its only reader, and nothing
/// outside the nodes needs it.
pub(crate) fn follows(graph: &Graph<'_>, reader: NodeId, value: ValueId) -> Option<NodeId> {
    let schedule = graph.schedule();
    let position = schedule.iter().position(|&id| id == reader)?;
    let previous = *schedule.get(position.checked_sub(1)?)?;
    let single = graph.writers(value) == [previous] && graph.readers(value) == [reader];
    (single && !graph.is_live_out(value)).then_some(previous)
}

/// Whether `value`'s memory overlaps that of an input of `node`.
pub(crate) fn overlaps_inputs(graph: &Graph<'_>, node: NodeId, value: ValueId) -> bool {
    let range = |value: ValueId| {
        let data = graph.value(value);
        data.offset.map(|start| {
            (
                start,
                start + data.ty.max_bytes(|symbol| graph.bound(symbol)),
            )
        })
    };
    let Some((start, end)) = range(value) else {
        return true;
    };
    graph
        .node(node)
        .inputs
        .iter()
        .any(|&input| match range(input) {
            Some((input_start, input_end)) => start < input_end && input_start < end,
            None => false,
        })
}

/// Whether every one of `values` keeps its contents from `from` through `to`
/// (a later node): nothing in between writes one of them or moves control.
pub(crate) fn unchanged_between(
    graph: &Graph<'_>,
    values: &[ValueId],
    from: NodeId,
    to: NodeId,
) -> bool {
    let schedule = graph.schedule();
    let position = |id| schedule.iter().position(|&node| node == id);
    let (Some(first), Some(last)) = (position(from), position(to)) else {
        return false;
    };
    first < last
        && schedule[first + 1..last].iter().all(|&id| {
            let node = graph.node(id);
            !node.op.is_control() && !node.outputs.iter().any(|output| values.contains(output))
        })
}
