//! Reductions along dimensions (sums, means, extremes, logical ones),
//! arg-reductions, the `k` largest or smallest elements, cumulative sums and
//! softmax.

use ptec_ir::ops::reduce::{ArgReduce, CumSum, Extreme, Reduce, ReduceOp, Softmax, TopK};
use ptec_ir::{Op, OpKind};

use super::Operator;
use crate::call::Call;
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
        topk,
        &[OpKind::TopK],
    ),
    (
        "aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce(c, ReduceOp::Sum),
        &[OpKind::Reduce],
    ),
    (
        "aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce(c, ReduceOp::Mean),
        &[OpKind::Reduce],
    ),
    (
        "aten::amax.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce(c, ReduceOp::Max),
        &[OpKind::Reduce],
    ),
    (
        "aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce(c, ReduceOp::Min),
        &[OpKind::Reduce],
    ),
    (
        "aten::any.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce_along(c, ReduceOp::Any),
        &[OpKind::Reduce],
    ),
    (
        "aten::any.all_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce_all(c, ReduceOp::Any),
        &[OpKind::Reduce],
    ),
    (
        "aten::all.all_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce_all(c, ReduceOp::All),
        &[OpKind::Reduce],
    ),
    (
        "aten::argmax.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
        |c| arg_reduce(c, Extreme::Max),
        &[OpKind::ArgReduce],
    ),
    (
        "aten::argmin.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
        |c| arg_reduce(c, Extreme::Min),
        &[OpKind::ArgReduce],
    ),
    // Values and indices: a reduction and an arg-reduction of one input.
    (
        "aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
        |c| extreme_along(c, Extreme::Max, ["max", "max_values"]),
        &[OpKind::Reduce, OpKind::ArgReduce],
    ),
    (
        "aten::min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) min, Tensor(b!) min_indices) -> (Tensor(a!) values, Tensor(b!) indices)",
        |c| extreme_along(c, Extreme::Min, ["min", "min_indices"]),
        &[OpKind::Reduce, OpKind::ArgReduce],
    ),
    (
        "aten::max.unary_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce_all(c, ReduceOp::Max),
        &[OpKind::Reduce],
    ),
    (
        "aten::min.unary_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce_all(c, ReduceOp::Min),
        &[OpKind::Reduce],
    ),
    (
        "aten::prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce_along(c, ReduceOp::Prod),
        &[OpKind::Reduce],
    ),
    (
        "aten::cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        cumsum,
        &[OpKind::CumSum],
    ),
    (
        "aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)",
        |c| softmax(c, false),
        &[OpKind::Softmax],
    ),
    (
        "aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)",
        |c| softmax(c, true),
        &[OpKind::Softmax],
    ),
];

fn reduction(
    c: &mut Call<'_, '_, '_>,
    op: ReduceOp,
    dims: Vec<usize>,
    out: &str,
) -> Result<(), ImportError> {
    let keepdim = c.bool("keepdim")?;
    let input = c.tensor("self")?;
    c.emit(
        Op::Reduce(Reduce {
            input,
            op,
            dims,
            keepdim,
        }),
        &[out],
    )
}

/// sum, mean, amax, amin: over the dimensions of `dim`, every one when it
/// is None or empty.
fn reduce(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let dims = match c.optional_int_list("dim")? {
        Some(dims) if !dims.is_empty() => c.dims("dim", rank)?,
        _ => (0..rank).collect(),
    };
    reduction(c, op, dims, "out")
}

/// any, prod: along the one dimension `dim`.
fn reduce_along(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?)?;
    reduction(c, op, vec![dim], "out")
}

/// A reduction of every element: `(self, *, out)`.
fn reduce_all(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let dims = (0..c.rank_of("self")?).collect();
    let input = c.tensor("self")?;
    c.emit(
        Op::Reduce(Reduce {
            input,
            op,
            dims,
            keepdim: false,
        }),
        &["out"],
    )
}

fn arg_reduce(c: &mut Call<'_, '_, '_>, extreme: Extreme) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let dim = match c.optional_int("dim")? {
        Some(_) => Some(c.dim("dim", rank)?),
        None => None,
    };
    let keepdim = c.bool("keepdim")?;
    let input = c.tensor("self")?;
    c.emit(
        Op::ArgReduce(ArgReduce {
            input,
            extreme,
            dim,
            keepdim,
        }),
        &["out"],
    )
}

/// max/min along a dim: the values (a reduction, into the first of
/// `outputs`) and their indices (an arg-reduction, into the second).
fn extreme_along(
    c: &mut Call<'_, '_, '_>,
    extreme: Extreme,
    [values, indices]: [&str; 2],
) -> Result<(), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let op = match extreme {
        Extreme::Max => ReduceOp::Max,
        Extreme::Min => ReduceOp::Min,
    };
    reduction(c, op, vec![dim], values)?;
    let keepdim = c.bool("keepdim")?;
    let input = c.tensor("self")?;
    c.emit(
        Op::ArgReduce(ArgReduce {
            input,
            extreme,
            dim: Some(dim),
            keepdim,
        }),
        &[indices],
    )
}

fn cumsum(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let input = c.tensor("self")?;
    c.emit(Op::CumSum(CumSum { input, dim }), &["out"])
}

fn softmax(c: &mut Call<'_, '_, '_>, log: bool) -> Result<(), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let input = c.tensor("self")?;
    c.emit(Op::Softmax(Softmax { input, dim, log }), &["out"])
}

/// `topk(self, k, dim, largest, sorted)`: the result is always sorted,
/// which `sorted=False` allows.
fn topk(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let k = c.count("k")?;
    let extreme = match c.bool("largest")? {
        true => Extreme::Max,
        false => Extreme::Min,
    };
    let input = c.tensor("self")?;
    let op = Op::TopK(TopK {
        input,
        k,
        dim,
        extreme,
    });
    c.emit(op, &["values", "indices"])
}
