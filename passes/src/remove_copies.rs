//! Removes copies that change nothing: a copy (or a permute that keeps
//! every axis in place) whose result has its input's type, or differs from
//! it only in dim order and is read only by ops that read any, is replaced
//! by the input, and a permute of a permute becomes one permute. A batched
//! matmul by a matrix copied across the batch (how exported attention
//! projections look) becomes one matrix product that reads the matrix
//! itself. The reads move to the copies' inputs, which must therefore not
//! change before they are read.

use ptec_ir::ops::LayoutRule;
use ptec_ir::ops::layout::{Copy, Permute, Reshape};
use ptec_ir::ops::linalg::MatMul;
use ptec_ir::{Dim, Graph, NodeId, Op, TensorType, ValueData, ValueId, ValueKind};

use crate::schedule::unchanged_between;

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    let mut changed = false;
    let nodes: Vec<NodeId> = graph.schedule().to_vec();
    for id in nodes {
        changed |= compose_permutes(graph, id).is_some();
        // A forwarded copy is gone; the other rewrites keep the node.
        changed |= forward_copy(graph, id).is_some() || unbatch_matmul(graph, id).is_some();
    }
    changed
}

/// `permute(permute(x, first), second)` → `permute(x, composed)`, when the
/// inner result feeds only the outer permute.
fn compose_permutes(graph: &mut Graph<'_>, id: NodeId) -> Option<()> {
    let Op::Permute(Permute {
        input: middle,
        dims: second,
    }) = graph.op(id)
    else {
        return None;
    };
    let inner = only_writer(graph, *middle)?;
    let Op::Permute(Permute {
        input: source,
        dims: first,
    }) = graph.op(inner)
    else {
        return None;
    };
    let single_use = graph.readers(*middle) == [id] && !graph.is_live_out(*middle);
    if !single_use || !unchanged_between(graph, &[*source], inner, id) {
        return None;
    }
    let composed = Permute {
        input: *source,
        dims: second.iter().map(|&axis| first[axis]).collect(),
    };
    graph.set_op(id, Op::Permute(composed));
    graph.remove_node(inner);
    Some(())
}

/// Replaces the result of a copy that changes nothing by its input.
fn forward_copy(graph: &mut Graph<'_>, id: NodeId) -> Option<()> {
    let input = match graph.op(id) {
        Op::Copy(Copy { input }) => *input,
        Op::Permute(Permute { input, dims })
            if dims.iter().enumerate().all(|(index, &axis)| index == axis) =>
        {
            *input
        }
        _ => return None,
    };
    let output = *graph.node(id).outputs().first()?;
    let (from, to) = (&graph.value(input).ty, &graph.value(output).ty);
    // A copy into another dim order changes nothing for readers that read
    // any (as a program exported channels-last copies an image row-major
    // before each mean).
    let reads_any = |reader: &NodeId| {
        matches!(
            graph.op(*reader).def().layout(),
            LayoutRule::Elementwise | LayoutRule::ReadsAny | LayoutRule::Copy
        )
    };
    let relayout_only = from.dtype == to.dtype
        && from.shape == to.shape
        && graph.readers(output).iter().all(reads_any);
    let input_fixed = !matches!(graph.value(input).kind, ValueKind::State { .. });
    if !(from == to || relayout_only)
        || !input_fixed
        || graph.is_live_out(output)
        || graph.writers(output) != [id]
    {
        return None;
    }
    let last_read = *graph.readers(output).last()?;
    if !unchanged_between(graph, &[input], id, last_read) {
        return None;
    }
    graph.remove_node(id);
    graph.replace_reads(output, input);
    Some(())
}

/// `matmul(a[.., m, k], expand(w[k, n]))` → `reshape(matmul(reshape(a)[M,
/// k], w))`, for contiguous fixed shapes (M is the product of a's leading
/// sizes).
fn unbatch_matmul(graph: &mut Graph<'_>, id: NodeId) -> Option<()> {
    let Op::MatMul(MatMul { a, b, clamp }) = *graph.op(id) else {
        return None;
    };
    let c = *graph.node(id).outputs().first()?;
    let (a_ty, b_ty, c_ty) = (
        graph.value(a).ty.clone(),
        graph.value(b).ty.clone(),
        graph.value(c).ty.clone(),
    );
    let rank = a_ty.rank();
    let contiguous = a_ty.is_contiguous() && c_ty.is_contiguous();
    let (a_shape, c_shape) = (a_ty.fixed_shape()?, c_ty.fixed_shape()?);
    if rank < 3 || !contiguous {
        return None;
    }
    // Through a reshape that keeps the shape, to the broadcasting copy.
    let mut expanded = b;
    let mut writer = only_writer(graph, expanded)?;
    if let Op::Reshape(Reshape { input }) = *graph.op(writer)
        && graph.value(input).ty.shape == b_ty.shape
    {
        expanded = input;
        writer = only_writer(graph, expanded)?;
    }
    let Op::Copy(Copy { input: matrix }) = *graph.op(writer) else {
        return None;
    };
    let matrix_ty = &graph.value(matrix).ty;
    let broadcast = matrix_ty.rank() == 2
        && matrix_ty.shape[..] == b_ty.shape[rank - 2..]
        && matrix_ty.dtype == b_ty.dtype;
    let unchanged = matches!(graph.value(matrix).kind, ValueKind::Constant(_))
        || unchanged_between(graph, &[matrix], writer, id);
    if !broadcast || !unchanged {
        return None;
    }
    let rows: u64 = a_shape[..rank - 1].iter().product();
    let flat = |graph: &mut Graph<'_>, ty: &TensorType, columns: u64| {
        graph.add_value(ValueData::computed(TensorType {
            dtype: ty.dtype,
            shape: vec![Dim::Fixed(rows), Dim::Fixed(columns)],
            dim_order: vec![0, 1],
        }))
    };
    let (flat_a, flat_c) = (
        flat(graph, &a_ty, a_shape[rank - 1]),
        flat(graph, &c_ty, c_shape[rank - 1]),
    );
    let position = graph.position(id);
    graph.insert_node(
        position + 1,
        Op::Reshape(Reshape { input: flat_c }),
        vec![c],
    );
    graph.insert_node(position, Op::Reshape(Reshape { input: a }), vec![flat_a]);
    let product = MatMul {
        a: flat_a,
        b: matrix,
        clamp,
    };
    graph.set_op(id, Op::MatMul(product));
    graph.set_node_outputs(id, vec![flat_c]);
    Some(())
}

/// The node that writes `value`, when exactly one does.
fn only_writer(graph: &Graph<'_>, value: ValueId) -> Option<NodeId> {
    match graph.writers(value)[..] {
        [writer] => Some(writer),
        _ => None,
    }
}
