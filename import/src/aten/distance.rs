//! Pairwise distances: `_cdist_forward` (between the rows of two batches of
//! matrices) and `_pdist_forward` (between the rows of one matrix), as
//! compositions: the differences of every pair of rows (broadcasting), their
//! absolute values and a reduction over the last dimension, which is
//! PyTorch's direct CPU kernel for each `p`: 0 counts the differences that
//! are not zero, 1 sums them, 2 is the square root of the sum of squares,
//! infinity the largest, any other `p` the `1/p`-th power of the sum of
//! `p`-th powers. PyTorch's matrix-product form of the Euclidean distance
//! (`compute_mode` 1, or rows of more than 25 vectors) differs from the
//! direct one only by rounding, so ptec always computes the direct one.

use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::ops::gather::Index;
use ptec_ir::ops::layout::{Copy, Reshape};
use ptec_ir::ops::reduce::{Reduce, ReduceOp};
use ptec_ir::{DType, Dim, Op, OpKind, Scalar, TensorType, ValueId};

use super::Operator;
use crate::call::Call;
use crate::error::ImportError;

const EMITS: &[OpKind] = &[
    OpKind::Reshape,
    OpKind::Elementwise,
    OpKind::Copy,
    OpKind::Reduce,
];

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::_cdist_forward.out(Tensor x1, Tensor x2, float p, int? compute_mode, *, Tensor(a!) out) -> Tensor(a!)",
        cdist,
        EMITS,
    ),
    (
        "aten::_pdist_forward.out(Tensor self, float p=2., *, Tensor(a!) out) -> Tensor(a!)",
        pdist,
        &[
            OpKind::Reshape,
            OpKind::Elementwise,
            OpKind::Copy,
            OpKind::Reduce,
            OpKind::Index,
        ],
    ),
];

/// The element type of the tensor argument `name`, which must be f32 or
/// f64 (PyTorch's CPU distance kernels are defined for those).
fn float_type(c: &Call<'_, '_, '_>, name: &str, id: ValueId) -> Result<DType, ImportError> {
    match c.ty(id).dtype {
        dtype @ (DType::F32 | DType::F64) => Ok(dtype),
        other => Err(c.bad(
            name,
            format!("{other:?} vectors: PyTorch computes distances of float and double only"),
        )),
    }
}

/// The argument `p`, which must be a non-negative number (infinity too).
fn norm(c: &Call<'_, '_, '_>) -> Result<f64, ImportError> {
    let p = c.double("p")?;
    if p.is_nan() || p < 0.0 {
        return Err(c.bad("p", format!("{p}: distances take only p >= 0")));
    }
    Ok(p)
}

/// `value` with a dimension of size 1 inserted at `at`.
fn unsqueezed(c: &mut Call<'_, '_, '_>, value: ValueId, at: usize) -> ValueId {
    let ty = c.ty(value).clone();
    let mut shape = ty.shape.clone();
    shape.insert(at, Dim::Fixed(1));
    c.temporary_of(
        Op::Reshape(Reshape { input: value }),
        TensorType::contiguous(ty.dtype, shape),
    )
}

/// The `p`-distances of every row of `x1` (`[.., P, M]`) with every row of
/// `x2` (`[.., R, M]`): the op that writes them (`[.., P, R]`), on temporaries
/// it emits first.
fn distances(
    c: &mut Call<'_, '_, '_>,
    x1: ValueId,
    x2: ValueId,
    p: f64,
    dtype: DType,
) -> Result<Op, ImportError> {
    let rank = c.ty(x1).rank();
    let rows = unsqueezed(c, x1, rank - 1);
    let columns = unsqueezed(c, x2, rank - 2);
    let difference = c.binary(BinaryOp::Sub, rows, columns, dtype)?;
    let reduce = |input, op| {
        Op::Reduce(Reduce {
            input,
            op,
            dims: vec![rank],
            keepdim: false,
        })
    };
    let power = |scalar: f64| Func::BinaryScalar {
        op: BinaryOp::Pow,
        scalar: Scalar::Float(scalar),
    };
    Ok(if p == 0.0 {
        let nonzero = Func::BinaryScalar {
            op: BinaryOp::Ne,
            scalar: Scalar::Float(0.0),
        };
        let flags = c.elementwise(nonzero, vec![difference], DType::Bool)?;
        let shape = c.ty(flags).shape.clone();
        let counts = c.temporary_of(
            Op::Copy(Copy { input: flags }),
            TensorType::contiguous(dtype, shape),
        );
        reduce(counts, ReduceOp::Sum)
    } else if p == 2.0 {
        let squares = c.binary(BinaryOp::Mul, difference, difference, dtype)?;
        let sum = c.temporary(reduce(squares, ReduceOp::Sum), dtype)?;
        Elementwise::unary(UnaryOp::Sqrt, sum)
    } else {
        let magnitude = c.elementwise(Func::Unary(UnaryOp::Abs), vec![difference], dtype)?;
        if p == 1.0 {
            return Ok(reduce(magnitude, ReduceOp::Sum));
        }
        if p.is_infinite() {
            return Ok(reduce(magnitude, ReduceOp::Max));
        }
        let powers = c.elementwise(power(p), vec![magnitude], dtype)?;
        let sum = c.temporary(reduce(powers, ReduceOp::Sum), dtype)?;
        Elementwise::op(power(1.0 / p), vec![sum])
    })
}

/// Fails unless the tensor argument `name` has at least `rank` dimensions
/// and a last dimension of fixed, non-zero size.
fn vectors(c: &Call<'_, '_, '_>, name: &str, id: ValueId, rank: usize) -> Result<u64, ImportError> {
    let shape = &c.ty(id).shape;
    match shape.last().and_then(|dim| dim.fixed()) {
        Some(length) if shape.len() >= rank && length > 0 => Ok(length),
        _ => Err(c.bad(
            name,
            format!(
                "{}: ptec needs at least {rank} dimensions, the last of fixed non-zero size",
                c.ty(id)
            ),
        )),
    }
}

fn cdist(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let p = norm(c)?;
    let x1 = c.tensor("x1")?;
    let x2 = c.tensor("x2")?;
    let dtype = float_type(c, "x1", x1)?;
    c.keeps_dtype("x1", "out")?;
    if c.ty(x2).dtype != dtype {
        return Err(c.bad("x2", format!("{} is not of x1's type {dtype:?}", c.ty(x2))));
    }
    let length = vectors(c, "x1", x1, 2)?;
    if vectors(c, "x2", x2, 2)? != length || c.ty(x2).rank() != c.ty(x1).rank() {
        return Err(c.bad(
            "x2",
            format!(
                "{} and x1 {} are not batches of vectors of one length",
                c.ty(x2),
                c.ty(x1)
            ),
        ));
    }
    let op = distances(c, x1, x2, p, dtype)?;
    c.emit(op, &["out"])
}

/// `_pdist_forward`: the distances of the pairs `i < j` of rows of the
/// `[N, M]` matrix, in row-major order of the pairs: the upper triangle of
/// the distance matrix, read at constant positions.
fn pdist(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let p = norm(c)?;
    let x = c.tensor("self")?;
    let dtype = float_type(c, "self", x)?;
    c.keeps_dtype("self", "out")?;
    vectors(c, "self", x, 2)?;
    let sizes = c.fixed_sizes("self", x)?;
    let &[rows, _] = sizes.as_slice() else {
        return Err(c.bad("self", format!("{sizes:?} is not a matrix")));
    };
    let op = distances(c, x, x, p, dtype)?;
    let matrix = c.temporary(op, dtype)?;
    let flat = c.temporary_of(
        Op::Reshape(Reshape { input: matrix }),
        TensorType::contiguous(dtype, vec![Dim::Fixed(rows * rows)]),
    );
    let pairs: Vec<u8> = (0..rows)
        .flat_map(|i| (i + 1..rows).map(move |j| i * rows + j))
        .flat_map(|at| (at as i64).to_le_bytes())
        .collect();
    let count = (pairs.len() / 8) as u64;
    let positions = c.constant(
        TensorType::contiguous(DType::I64, vec![Dim::Fixed(count)]),
        pairs,
    );
    let op = Op::Index(Index {
        input: flat,
        indices: vec![positions],
        dims: vec![0],
        wrap: false,
    });
    c.emit(op, &["out"])
}
