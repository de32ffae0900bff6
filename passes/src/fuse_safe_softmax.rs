//! Folds PyTorch's safe softmax into one softmax. `torch.export` writes
//! `_safe_softmax(x, dim)` (which every `scaled_dot_product_attention` and
//! `nn.MultiheadAttention` uses) as
//!
//! ```text
//! s    = softmax(x, dim)
//! rows = all(x == -inf, dim, keepdim)     // or not(any(not(x == -inf)))
//! out  = where(rows, zeros, s)
//! ```
//!
//! five or six kernels over the whole score tensor where one suffices: a
//! softmax whose `safe` flag gives a row of -inf zeros, as `where` did
//! (`ptec_ir::ops::reduce::Softmax`). Applies when the softmax's result
//! feeds only the `where`, the zeros are a `full` of +0, and no jump lies
//! between the nodes; a softmax of halves, computed in f32 between copies,
//! folds the same way. The test's nodes are left for `dead-code` to remove
//! when nothing else reads them.

use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::ops::reduce::{Reduce, ReduceOp, Softmax};
use ptec_ir::{Graph, NodeId, Op, ValueId};

use crate::epilogue::absorb;
use crate::schedule::{rewrite_each, unchanged_between};

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    rewrite_each(graph, fuse)
}

/// The op of the one node that writes `value`, and that node.
fn writer<'g>(graph: &'g Graph<'_>, value: ValueId) -> Option<(NodeId, &'g Op)> {
    match graph.writers(value).as_slice() {
        &[node] => Some((node, graph.op(node))),
        _ => None,
    }
}

/// The operand of a `logical_not`.
fn negated(graph: &Graph<'_>, value: ValueId) -> Option<(NodeId, ValueId)> {
    let (node, op) = writer(graph, value)?;
    match op {
        Op::Elementwise(Elementwise {
            func: Func::Unary(UnaryOp::LogicalNot),
            inputs,
        }) => Some((node, *inputs.first()?)),
        _ => None,
    }
}

/// The nodes computing whether every element along `dim` of `x` is -inf,
/// keeping `dim`: `all(x == -inf)` or `not(any(not(x == -inf)))`.
fn rows_of_negative_infinity(
    graph: &Graph<'_>,
    rows: ValueId,
    x: ValueId,
    dim: usize,
) -> Option<Vec<NodeId>> {
    let along_dim = |reduce: &Reduce, op: ReduceOp| {
        (reduce.op == op && reduce.dims == [dim] && reduce.keepdim).then_some(reduce.input)
    };
    let mut nodes = Vec::new();
    let tested = match writer(graph, rows)? {
        (node, Op::Reduce(reduce)) => {
            nodes.push(node);
            along_dim(reduce, ReduceOp::All)?
        }
        _ => {
            let (outer, any) = negated(graph, rows)?;
            let (reduce, Op::Reduce(op)) = writer(graph, any)? else {
                return None;
            };
            let (inner, tested) = negated(graph, along_dim(op, ReduceOp::Any)?)?;
            nodes.extend([outer, reduce, inner]);
            tested
        }
    };
    let (test, op) = writer(graph, tested)?;
    let Op::Elementwise(Elementwise {
        func: Func::BinaryScalar {
            op: BinaryOp::Eq,
            scalar,
        },
        inputs,
    }) = op
    else {
        return None;
    };
    (inputs.as_slice() == [x] && scalar.as_f64() == f64::NEG_INFINITY).then_some(())?;
    nodes.push(test);
    Some(nodes)
}

/// A softmax that computes `probabilities`: its node and op, the value it
/// reads as PyTorch's softmax did, and the first and last nodes of the
/// computation (the softmax alone, or with the copies to f32 and back
/// around a softmax of halves, which `widen_halves.rs` computes in f32).
struct Found {
    softmax: NodeId,
    op: Softmax,
    input: ValueId,
    first: NodeId,
    last: NodeId,
}

fn softmax_of(graph: &Graph<'_>, probabilities: ValueId) -> Option<Found> {
    let read_once = |value: ValueId, reader: NodeId| {
        graph.readers(value) == [reader] && !graph.is_live_out(value)
    };
    match writer(graph, probabilities)? {
        (softmax, Op::Softmax(op)) => Some(Found {
            softmax,
            op: op.clone(),
            input: op.input,
            first: softmax,
            last: softmax,
        }),
        (narrowing, Op::Copy(narrow)) => {
            let (softmax, Op::Softmax(op)) = writer(graph, narrow.input)? else {
                return None;
            };
            let (widening, Op::Copy(widen)) = writer(graph, op.input)? else {
                return None;
            };
            // The copy to f32 must be exact (a half's widening), so that
            // its row is all -inf exactly where the test's is.
            let exact =
                graph.value(widen.input).ty.dtype.arithmetic() == graph.value(op.input).ty.dtype;
            let once = read_once(narrow.input, narrowing) && read_once(op.input, softmax);
            (exact && once).then(|| Found {
                softmax,
                op: op.clone(),
                input: widen.input,
                first: widening,
                last: narrowing,
            })
        }
        _ => None,
    }
}

fn fuse(graph: &mut Graph<'_>, id: NodeId) -> Option<()> {
    let Op::Elementwise(Elementwise {
        func: Func::Where,
        inputs,
    }) = graph.op(id)
    else {
        return None;
    };
    let &[rows, zeros, probabilities] = inputs.as_slice() else {
        return None;
    };
    let found = softmax_of(graph, probabilities)?;
    let op = &found.op;
    if op.log || op.safe || graph.readers(probabilities) != [id] {
        return None;
    }
    let result = *graph.node(id).outputs().first()?;
    if graph.value(result).ty != graph.value(probabilities).ty
        || graph.is_live_out(probabilities)
        || graph.writers(result) != [id]
    {
        return None;
    }
    let (_, Op::Full(full)) = writer(graph, zeros)? else {
        return None;
    };
    let zero = full.value.constant()?.as_f64();
    if zero != 0.0 || zero.is_sign_negative() {
        return None;
    }
    let test = rows_of_negative_infinity(graph, rows, found.input, op.dim)?;
    // The input keeps its contents, and no jump passes over part of the
    // pattern, from the first node reading it to the `where` (the zeros,
    // read only there, may come from anywhere before).
    let first = *test
        .iter()
        .chain([&found.first])
        .min_by_key(|&&node| graph.position(node))?;
    if !unchanged_between(graph, &[found.input], first, id) {
        return None;
    }
    let safe = Op::Softmax(Softmax {
        safe: true,
        ..found.op
    });
    if found.last == found.softmax {
        return absorb(graph, found.softmax, id, safe);
    }
    // The copy back to halves writes the `where`'s result: a row of zeros
    // in f32 is one in halves.
    let narrowing = graph.op(found.last).clone();
    absorb(graph, found.last, id, narrowing)?;
    graph.set_op(found.softmax, safe);
    Some(())
}
