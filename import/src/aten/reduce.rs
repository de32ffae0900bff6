//! Reductions along dimensions (sums, means, extremes, logical ones),
//! arg-reductions, the `k` largest or smallest elements, cumulative sums and
//! softmax.

use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func};
use ptec_ir::ops::reduce::{ArgReduce, CumSum, Extreme, Reduce, ReduceOp, Softmax, TopK};
use ptec_ir::{DType, Op, OpKind, Scalar, ValueId};

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
        |c| with_dtype(c, ReduceOp::Sum, reduce),
        &[OpKind::Reduce],
    ),
    (
        "aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| with_dtype(c, ReduceOp::Mean, reduce),
        &[OpKind::Reduce],
    ),
    (
        "aten::mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| with_dtype(c, ReduceOp::Mean, reduce_all),
        &[OpKind::Reduce],
    ),
    (
        "aten::var.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, Tensor(a!) out) -> Tensor(a!)",
        |c| variance(c, correction(c)?, None),
        VARIANCE,
    ),
    (
        "aten::var.out(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
        |c| variance(c, f64::from(u8::from(c.bool("unbiased")?)), None),
        VARIANCE,
    ),
    (
        "aten::var_mean.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))",
        |c| variance(c, correction(c)?, Some("out1")),
        VARIANCE,
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
        "aten::any.dims_out(Tensor self, int[]? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
        |c| reduce(c, ReduceOp::Any),
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
        |c| with_dtype(c, ReduceOp::Prod, reduce_along),
        &[OpKind::Reduce],
    ),
    (
        "aten::prod.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| with_dtype(c, ReduceOp::Prod, reduce_all),
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

/// What a variance emits: a mean, deviations from it, their squares, the
/// sum of those and its division by the count.
const VARIANCE: &[OpKind] = &[OpKind::Reduce, OpKind::Elementwise];

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

/// sum, mean, amax, amin, any: over the dimensions of `dim`, every one
/// when it is None or empty.
fn reduce(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let dims = c.reduced_dims("dim", c.rank_of("self")?)?;
    reduction(c, op, dims, "out")
}

/// any, prod: along the one dimension `dim`.
fn reduce_along(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let dim = c.reduced_dim("dim", c.rank_of("self")?)?;
    reduction(c, op, dim.into_iter().collect(), "out")
}

/// A reduction with a `dtype` argument, imported by `rule`: PyTorch
/// computes in `dtype` and requires `out` to have it; a mean computes in
/// a float (`dtype`, else the input's type), never an integer.
fn with_dtype(
    c: &mut Call<'_, '_, '_>,
    op: ReduceOp,
    rule: fn(&mut Call<'_, '_, '_>, ReduceOp) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let requested = c.requested_dtype("dtype", "out")?;
    let compute = match requested {
        Some(dtype) => dtype,
        None => c.declared_type_of("self")?.dtype,
    };
    if op == ReduceOp::Mean && !compute.is_float() {
        return Err(c.bad(
            "dtype",
            format!(
                "is not given and self is {compute}: a mean is computed in a float type, so an integer input needs a float dtype, as in PyTorch"
            ),
        ));
    }
    rule(c, op)
}

/// The `correction` argument of a variance: Bessel's 1 when None.
fn correction(c: &Call<'_, '_, '_>) -> Result<f64, ImportError> {
    Ok(c.optional_scalar("correction")?
        .map_or(1.0, |scalar| scalar.as_f64()))
}

/// A tensor's deviations from its mean over some dimensions.
pub(super) struct Centered {
    /// The mean, its reduced dimensions kept as size 1.
    pub(super) mean: ValueId,
    /// The input minus the mean.
    pub(super) deviation: ValueId,
    /// The deviations squared.
    pub(super) square: ValueId,
}

/// `input`'s mean over `dims` and its deviations from it, computed in
/// `compute`: what a variance and a normalization start from.
pub(super) fn centered(
    c: &mut Call<'_, '_, '_>,
    input: ValueId,
    dims: &[usize],
    compute: DType,
) -> Result<Centered, ImportError> {
    let kept_mean = Op::Reduce(Reduce {
        input,
        op: ReduceOp::Mean,
        dims: dims.to_vec(),
        keepdim: true,
    });
    let mean = c.temporary(kept_mean, compute)?;
    let deviation = c.temporary(binary(BinaryOp::Sub, input, mean), compute)?;
    let square = c.temporary(binary(BinaryOp::Mul, deviation, deviation), compute)?;
    Ok(Centered {
        mean,
        deviation,
        square,
    })
}

/// `a op b`, broadcast.
pub(super) fn binary(op: BinaryOp, a: ValueId, b: ValueId) -> Op {
    Elementwise::op(Func::Binary { op, alpha: None }, vec![a, b])
}

/// var, var_mean: the variance of `self` over `dim` (every dimension when
/// None or empty) into `out` or `out0`, and its mean into `mean` when
/// given, composed as PyTorch defines it: the squared deviations from the
/// mean, summed and divided by `max(count - correction, 0)` (so a count not
/// above the correction gives inf, or NaN when every deviation is 0, and
/// an empty reduction NaN). Half types compute in f32, as PyTorch's
/// accumulation does.
fn variance(
    c: &mut Call<'_, '_, '_>,
    correction: f64,
    mean: Option<&str>,
) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let dims = c.reduced_dims("dim", rank)?;
    let keepdim = c.bool("keepdim")?;
    let input = c.tensor("self")?;
    let dtype = c.ty(input).dtype;
    let compute = match dtype {
        DType::F64 => DType::F64,
        DType::F32 | DType::F16 | DType::BF16 => DType::F32,
        _ => {
            return Err(c.bad(
                "self",
                format!("is {dtype}: the variance is defined for floats only, as in PyTorch"),
            ));
        }
    };
    let sizes = c.fixed_sizes("self", input)?;
    let count: u64 = dims.iter().map(|&dim| sizes[dim]).product();
    let reduce = |input, op, keepdim| {
        Op::Reduce(Reduce {
            input,
            op,
            dims: dims.clone(),
            keepdim,
        })
    };
    let Centered { square, .. } = centered(c, input, &dims, compute)?;
    let sum = c.temporary(reduce(square, ReduceOp::Sum, keepdim), compute)?;
    let divisor = (count as f64 - correction).max(0.0);
    // A sum of squares over no degrees of freedom is inf, or NaN when it is
    // 0: its product with inf says so on every back end, where a shader's
    // 0 / 0 need not be NaN.
    let (op, scalar) = if divisor == 0.0 {
        (BinaryOp::Mul, f64::INFINITY)
    } else {
        (BinaryOp::Div, divisor)
    };
    let divide = Elementwise::op(
        Func::BinaryScalar {
            op,
            scalar: Scalar::Float(scalar),
        },
        vec![sum],
    );
    match mean {
        Some(mean) => {
            c.emit(divide, &["out0"])?;
            c.emit(reduce(input, ReduceOp::Mean, keepdim), &[mean])
        }
        None => c.emit(divide, &["out"]),
    }
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
    let dim = c.reduced_dim("dim", c.rank_of("self")?)?;
    let op = match extreme {
        Extreme::Max => ReduceOp::Max,
        Extreme::Min => ReduceOp::Min,
    };
    reduction(c, op, dim.into_iter().collect(), values)?;
    let keepdim = c.bool("keepdim")?;
    let input = c.tensor("self")?;
    c.emit(
        Op::ArgReduce(ArgReduce {
            input,
            extreme,
            dim,
            keepdim,
        }),
        &[indices],
    )
}

fn cumsum(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    c.requested_dtype("dtype", "out")?;
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let input = c.tensor("self")?;
    c.emit(Op::CumSum(CumSum { input, dim }), &["out"])
}

fn softmax(c: &mut Call<'_, '_, '_>, log: bool) -> Result<(), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let input = c.tensor("self")?;
    let safe = false;
    c.emit(
        Op::Softmax(Softmax {
            input,
            dim,
            log,
            safe,
        }),
        &["out"],
    )
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
