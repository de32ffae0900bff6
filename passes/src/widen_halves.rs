//! The one rewrite the pipeline always makes, whatever its switches: a
//! node of an accumulating op (`Op::accumulates`: reductions, scans,
//! softmax, norms, matrix products, convolutions, pooling) that reads or
//! writes half-precision (f16, bf16) values becomes a conversion of each
//! such operand to f32, the op in f32, and a conversion of each such result
//! back, rounding once. That is what the IR means by such a node (PyTorch's
//! CPU kernels accumulate halves in f32), so it is a legalization, not an
//! optimization: the kernels of these ops then take f32 and never halves.
//! It runs before any pass, so the memory planner places the f32 values
//! like any other, and `fold-constants` converts constant operands (a norm's
//! weights) once at compile time.

use ptec_ir::ops::layout::Copy;
use ptec_ir::{DType, Graph, NodeId, Op, TensorType, ValueData, ValueId};

/// Whether elements of `dtype` are held narrower than they compute.
fn is_half(dtype: DType) -> bool {
    dtype.arithmetic() != dtype
}

/// Rewrites every accumulating node on halves; says whether there was one.
pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    let nodes: Vec<NodeId> = graph
        .schedule()
        .iter()
        .copied()
        .filter(|&node| reads_or_writes_halves(graph, node))
        .collect();
    for &node in &nodes {
        widen(graph, node);
    }
    !nodes.is_empty()
}

fn reads_or_writes_halves(graph: &Graph<'_>, node: NodeId) -> bool {
    let node = graph.node(node);
    node.op().accumulates()
        && node
            .inputs()
            .into_iter()
            .chain(node.outputs().iter().copied())
            .any(|value| is_half(graph.value(value).ty.dtype))
}

/// A new f32 value of `value`'s shape and dim order.
fn wide_value(graph: &mut Graph<'_>, value: ValueId) -> ValueId {
    let ty = &graph.value(value).ty;
    let wide = TensorType {
        dtype: DType::F32,
        ..ty.clone()
    };
    graph.add_value(ValueData::computed(wide))
}

/// Converts the node's half operands before it and its half results after
/// it.
fn widen(graph: &mut Graph<'_>, node: NodeId) {
    let mut op = graph.op(node).clone();
    let mut widened: Vec<(ValueId, ValueId)> = Vec::new();
    for operand in op.def_mut().operands_mut() {
        if !is_half(graph.value(*operand).ty.dtype) {
            continue;
        }
        let wide = match widened.iter().find(|(half, _)| half == operand) {
            Some(&(_, wide)) => wide,
            None => {
                let wide = wide_value(graph, *operand);
                let position = graph.position(node);
                graph.insert_node(position, Op::Copy(Copy { input: *operand }), vec![wide]);
                widened.push((*operand, wide));
                wide
            }
        };
        *operand = wide;
    }
    graph.set_op(node, op);
    let mut outputs = graph.node(node).outputs().to_vec();
    let mut narrowings = Vec::new();
    for output in &mut outputs {
        if is_half(graph.value(*output).ty.dtype) {
            let wide = wide_value(graph, *output);
            narrowings.push((wide, *output));
            *output = wide;
        }
    }
    graph.set_node_outputs(node, outputs);
    for (wide, half) in narrowings.into_iter().rev() {
        let after = graph.position(node) + 1;
        graph.insert_node(after, Op::Copy(Copy { input: wide }), vec![half]);
    }
}
