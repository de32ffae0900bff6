//! Tensors made from scalars: fills and ranges. Their sizes, fill values
//! and range ends may be computed at run time (`SymInt`s): the output's
//! shape is then computed from them as the program runs.

use ptec_ir::ops::creation::{Arange, Full};
use ptec_ir::symbolic::{ScalarKind, SymOp, Term};
use ptec_ir::{Dim, Op, OpKind, Scalar};

use super::Operator;
use crate::call::{Call, TensorRef};
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)",
        full,
        &[OpKind::Full],
    ),
    (
        "aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let value = c.term("fill_value")?;
            fill_like(c, value)
        },
        &[OpKind::Full],
    ),
    (
        "aten::scalar_tensor.out(Scalar s, *, Tensor(a!) out) -> Tensor(a!)",
        scalar_tensor,
        &[OpKind::Full],
    ),
    (
        "aten::zeros_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        |c| fill_like(c, Term::int(0)),
        &[OpKind::Full],
    ),
    (
        "aten::ones_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        |c| fill_like(c, Term::int(1)),
        &[OpKind::Full],
    ),
    (
        "aten::arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let (start, end) = (c.term("start")?, c.term("end")?);
            arange(c, start, end)
        },
        &[OpKind::Arange],
    ),
    (
        "aten::arange.out(Scalar end, *, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let end = c.term("end")?;
            arange(c, Term::int(0), end)
        },
        &[OpKind::Arange],
    ),
];

/// Whether a shape has a dimension known only at run time.
pub(super) fn is_dynamic(shape: &[Dim]) -> bool {
    shape.iter().any(|dim| matches!(dim, Dim::Symbol(_)))
}

/// Emits `op` writing `out`, whose shape is `shape` when that is known only
/// at run time (otherwise the file's shape, which a fixed `shape` equals).
pub(super) fn emit_given(
    c: &mut Call<'_, '_, '_>,
    op: Op,
    out: TensorRef,
    shape: Vec<Dim>,
) -> Result<(), ImportError> {
    let given = is_dynamic(&shape).then_some(shape);
    c.emit_shaped(op, &[out], given)
}

/// `full(size, fill_value)`.
fn full(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let value = c.term("fill_value")?;
    let shape = c
        .terms("size")?
        .into_iter()
        .map(|size| c.size("size", size))
        .collect::<Result<Vec<_>, _>>()?;
    let out = c.output("out")?;
    emit_given(c, Op::Full(Full { value }), out, shape)
}

/// `out`, of `self`'s shape, filled with `value`.
fn fill_like(c: &mut Call<'_, '_, '_>, value: Term) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let out = c.output("out")?;
    emit_given(c, Op::Full(Full { value }), out, shape)
}

fn scalar_tensor(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let value = c.term("s")?;
    c.emit(Op::Full(Full { value }), &["out"])
}

/// `arange(start, end, step)`: `ceil((end - start) / step)` elements, a
/// count known at run time when an end is.
fn arange(c: &mut Call<'_, '_, '_>, start: Term, end: Term) -> Result<(), ImportError> {
    let step = c.scalar("step")?;
    if step.as_f64() == 0.0 {
        return Err(c.bad("step", "must not be zero"));
    }
    let kinds = (c.kind(start)?, c.kind(end)?);
    let count = match (kinds, step) {
        ((ScalarKind::Int, ScalarKind::Int), Scalar::Int(step)) => {
            // ceil((end - start) / step) = -floor((start - end) / step).
            let span = c.poly(start)?.sub(&c.poly(end)?);
            let span = c.poly_term(span)?;
            let floor = c.sym_op(SymOp::FloorDiv, vec![span, Term::int(step)])?;
            let count = c.poly(floor)?.neg();
            c.poly_term(count)?
        }
        ((ScalarKind::Bool, _) | (_, ScalarKind::Bool), _) => {
            return Err(c.invalid("arange of bools"));
        }
        _ => {
            let float = |c: &mut Call<'_, '_, '_>, term: Term| match c.kind(term)? {
                ScalarKind::Float => Ok(term),
                _ => c.sym_op(SymOp::ToFloat, vec![term]),
            };
            let (start_f, end_f) = (float(c, start)?, float(c, end)?);
            let span = c.sym_op(SymOp::Sub, vec![end_f, start_f])?;
            let steps = c.sym_op(
                SymOp::TrueDiv,
                vec![span, Term::Const(Scalar::Float(step.as_f64()))],
            )?;
            c.sym_op(SymOp::Ceil, vec![steps])?
        }
    };
    // A count below zero is PyTorch's error (the range's end lies before
    // its start for the step's sign).
    let fits = c.sym_op(SymOp::Le, vec![Term::int(0), count])?;
    c.require(
        fits,
        "arange's end lies before its start for the sign of its step".into(),
    )?;
    let length = c.size("end", count)?;
    let out = c.output("out")?;
    emit_given(c, Op::Arange(Arange { start, step }), out, vec![length])
}
