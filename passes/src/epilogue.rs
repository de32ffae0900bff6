//! The rewrite that `fold-batch-norm`, `fuse-clamp` and `fuse-residual`
//! share: a node that runs right after its producer moves into the
//! producer, whose epilogue now computes it, and the producer writes the
//! node's result itself.

use ptec_ir::{Graph, NodeId, Op};

/// Makes `producer` apply `op` (its own op, with `reader`'s computation
/// added) and write `reader`'s result, then removes `reader`. Refuses when
/// `op` reads that result, which a state updated in place can be: the
/// producer would overwrite an operand while it still reads it (an
/// elementwise op may, element by element; a convolution or a matrix
/// product may not).
pub(crate) fn absorb(
    graph: &mut Graph<'_>,
    producer: NodeId,
    reader: NodeId,
    op: Op,
) -> Option<()> {
    let result = *graph.node(reader).outputs().first()?;
    if op.inputs().contains(&result) {
        return None;
    }
    graph.remove_node(reader);
    graph.set_op(producer, op);
    graph.set_node_outputs(producer, vec![result]);
    Some(())
}
