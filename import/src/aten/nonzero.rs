//! Results whose size depends on the data: `nonzero`, `masked_select`, and
//! the integer indices a boolean mask stands for in advanced indexing. The
//! number of non-zero elements is counted at run time into a value, and a
//! symbol reads it (the count is known once that value is written, as
//! `.item()`'s element is); the result's dimension is that symbol, bounded
//! by the mask's number of elements, for which memory is planned.
//!
//! The row-major positions of the non-zero elements are
//! `repeat_interleave` of the mask as boolean counts (position `i` repeated once
//! where the element is non-zero, not at all where it is zero), whose length
//! is the count by construction; coordinates are those positions divided
//! and reduced by the mask's sizes. NaN is non-zero, as in PyTorch.

use ptec_ir::ops::creation::{Full, RepeatInterleave};
use ptec_ir::ops::elementwise::BinaryOp;
use ptec_ir::ops::gather::Index;
use ptec_ir::ops::layout::{Cat, Copy};
use ptec_ir::ops::reduce::{Reduce, ReduceOp};
use ptec_ir::ops::{broadcast, show};
use ptec_ir::symbolic::{Poly, Range, ScalarKind, Term};
use ptec_ir::{DType, Dim, Op, OpKind, Scalar, TensorType, ValueId};

use super::Operator;
use super::creation::emit_given;
use super::layout::view;
use crate::call::Call;
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        nonzero,
        &[
            OpKind::Copy,
            OpKind::Reshape,
            OpKind::Elementwise,
            OpKind::Reduce,
            OpKind::RepeatInterleave,
            OpKind::Cat,
            OpKind::Full,
        ],
    ),
    (
        "aten::masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out) -> Tensor(a!)",
        masked_select,
        &[
            OpKind::Copy,
            OpKind::Reshape,
            OpKind::Elementwise,
            OpKind::Reduce,
            OpKind::RepeatInterleave,
            OpKind::Index,
        ],
    ),
];

/// The product of `dims` as a term (a constant, or a symbol computed from
/// theirs).
fn product(c: &mut Call<'_, '_, '_>, dims: &[Dim]) -> Result<Term, ImportError> {
    let poly = dims.iter().try_fold(Poly::constant(1), |product, &dim| {
        Ok::<_, ImportError>(product.mul(&c.poly(Term::from(dim))?))
    })?;
    c.poly_term(poly)
}

/// `value`, the argument `name`, viewed as 1-D (row-major).
pub(super) fn flatten(
    c: &mut Call<'_, '_, '_>,
    name: &str,
    value: ValueId,
) -> Result<ValueId, ImportError> {
    let shape = c.shape(value);
    let count = product(c, &shape)?;
    let numel = c.size(name, count)?;
    view(c, value, vec![numel])
}

/// The row-major positions of the non-zero elements of `mask`, the tensor
/// argument `name`: a 1-D integer value (`i32` when the mask has fewer than
/// 2^31 elements) whose length is a symbol counting them, computed at run
/// time, at most the mask's (largest) number of elements.
pub(super) fn flat_positions(
    c: &mut Call<'_, '_, '_>,
    name: &str,
    mask: ValueId,
) -> Result<ValueId, ImportError> {
    let shape = c.shape(mask);
    let most = shape.iter().try_fold(1u64, |n, &dim| {
        n.checked_mul(c.importer.symbols.max_size(dim))
    });
    let Some(most) = most.filter(|&n| i64::try_from(n).is_ok()) else {
        return Err(c.bad(name, "has more elements than an index can count"));
    };
    let flat = flatten(c, name, mask)?;
    // Each element's count of repeats, 1 where it is non-zero and 0 where
    // it is zero, as a boolean (a byte each).
    let counts = if c.ty(flat).dtype == DType::Bool {
        flat
    } else {
        c.with_scalar(flat, BinaryOp::Ne, Scalar::Int(0), DType::Bool)?
    };
    let count = c.temporary(
        Op::Reduce(Reduce {
            input: counts,
            op: ReduceOp::Sum,
            dims: vec![0],
            keepdim: false,
        }),
        DType::I64,
    )?;
    let origin = format!(
        "{}: the number of non-zero elements of `{name}`",
        c.importer.symbols.origin
    );
    let range = Range {
        lo: 0,
        hi: most as i64,
    };
    let symbol = c
        .importer
        .symbols
        .table
        .add_element(count, ScalarKind::Int, range, most, origin);
    // Positions below 2^31 are held in 32 bits, half the memory.
    let dtype = if i32::try_from(most).is_ok() {
        DType::I32
    } else {
        DType::I64
    };
    let ty = TensorType::contiguous(dtype, vec![Dim::Symbol(symbol)]);
    Ok(c.temporary_of(Op::RepeatInterleave(RepeatInterleave { input: counts }), ty))
}

/// `column op term` for a 1-D integer column, into `i64`: with a constant, a scalar
/// operand; with a symbol, a 0-dim tensor filled with it.
fn with_term(
    c: &mut Call<'_, '_, '_>,
    column: ValueId,
    op: BinaryOp,
    term: Term,
) -> Result<ValueId, ImportError> {
    match term {
        Term::Const(scalar) => c.with_scalar(column, op, scalar, DType::I64),
        Term::Symbol(_) => {
            let ty = TensorType::contiguous(DType::I64, Vec::new());
            let operand = c.temporary_of(Op::Full(Full { value: term }), ty);
            c.binary(op, column, operand, DType::I64)
        }
    }
}

/// The row-major strides of `shape`, as terms. A stride of 0 (a later
/// dimension of size 0) comes with no elements to divide; 1 keeps the
/// division defined.
fn strides(c: &mut Call<'_, '_, '_>, shape: &[Dim]) -> Result<Vec<Term>, ImportError> {
    (0..shape.len())
        .map(|axis| {
            Ok(match product(c, &shape[axis + 1..])? {
                Term::Const(Scalar::Int(0)) => Term::Const(Scalar::Int(1)),
                stride => stride,
            })
        })
        .collect()
}

/// The coordinates, one 1-D integer value per dimension, of the non-zero
/// elements of `mask` (the tensor argument `name`), in row-major order:
/// PyTorch's `mask.nonzero().unbind(1)`.
pub(super) fn coordinates(
    c: &mut Call<'_, '_, '_>,
    name: &str,
    mask: ValueId,
) -> Result<Vec<ValueId>, ImportError> {
    let shape = c.shape(mask);
    let flat = flat_positions(c, name, mask)?;
    let strides = strides(c, &shape)?;
    let mut columns = Vec::with_capacity(shape.len());
    for (axis, stride) in strides.into_iter().enumerate() {
        let mut column = flat;
        if stride != Term::Const(Scalar::Int(1)) {
            column = with_term(c, column, BinaryOp::FloorDiv, stride)?;
        }
        if axis != 0 {
            column = with_term(c, column, BinaryOp::Remainder, Term::from(shape[axis]))?;
        }
        columns.push(column);
    }
    Ok(columns)
}

/// `nonzero(self)`: the coordinates of the non-zero elements, one row each,
/// in row-major order; `[count, rank]`, so `[count, 0]` for a 0-dim `self`
/// (`count` 1 or 0).
fn nonzero(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    if c.ty(input).rank() == 0 {
        let flat = flat_positions(c, "self", input)?;
        let count = c.shape(flat)[0];
        let op = Op::Full(Full {
            value: Term::Const(Scalar::Int(0)),
        });
        let out = c.output("out")?;
        return emit_given(c, op, out, vec![count, Dim::Fixed(0)]);
    }
    let columns = coordinates(c, "self", input)?;
    let count = c.shape(columns[0])[0];
    let shape = vec![count, Dim::Fixed(1)];
    let mut rows = Vec::with_capacity(columns.len());
    for column in columns {
        let row = view(c, column, shape.clone())?;
        // A 1-D self's positions are its coordinates, perhaps in 32 bits.
        rows.push(if c.ty(row).dtype == DType::I64 {
            row
        } else {
            let ty = TensorType::contiguous(DType::I64, shape.clone());
            c.temporary_of(Op::Copy(Copy { input: row }), ty)
        });
    }
    c.emit(
        Op::Cat(Cat {
            inputs: rows,
            dim: 1,
        }),
        &["out"],
    )
}

/// `masked_select(self, mask)`: the elements of `self` where `mask` is
/// true, both broadcast to their common shape, in row-major order.
fn masked_select(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let mask = c.tensor("mask")?;
    if c.ty(mask).dtype != DType::Bool {
        return Err(c.bad("mask", format!("{} is not a boolean tensor", c.ty(mask))));
    }
    let (own, masks) = (c.shape(input), c.shape(mask));
    let shape = broadcast(&[&own, &masks], &mut c.importer.symbols).map_err(|_| {
        c.bad(
            "mask",
            format!(
                "{} does not broadcast with self's shape {}",
                show(&masks),
                show(&own)
            ),
        )
    })?;
    let input = expand(c, input, &shape);
    let mask = expand(c, mask, &shape);
    let flat = flat_positions(c, "mask", mask)?;
    let input = flatten(c, "self", input)?;
    let op = Index {
        input,
        indices: vec![flat],
        dims: vec![0],
        wrap: false,
    };
    c.emit(Op::Index(op), &["out"])
}

/// `value` broadcast to `shape`: itself when it has that shape.
fn expand(c: &mut Call<'_, '_, '_>, value: ValueId, shape: &[Dim]) -> ValueId {
    if c.shape(value) == shape {
        return value;
    }
    let ty = TensorType::contiguous(c.ty(value).dtype, shape.to_vec());
    c.temporary_of(Op::Copy(Copy { input: value }), ty)
}
