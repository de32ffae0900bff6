//! Tensors made from scalars: fills and ranges, and the indices
//! `repeat_interleave` repeats. Their sizes, fill values and range ends may
//! be computed at run time (`SymInt`s): the output's shape is then computed
//! from them as the program runs. A creation op's size arguments decide its
//! result, so each known one is checked against the shape the program
//! declares for `out` rather than trusted. `empty` tensors are zeroed:
//! their contents are unspecified, and zeros make a program that reads them
//! anyway deterministic.

use ptec_ir::ops::creation::{Arange, Full, RepeatInterleave};
use ptec_ir::ops::layout::Copy;
use ptec_ir::symbolic::{ScalarKind, SymOp, Term};
use ptec_ir::{DType, Dim, Op, OpKind, Scalar};

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
        "aten::zeros.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        |c| fill_sized(c, Term::int(0)),
        &[OpKind::Full],
    ),
    (
        "aten::ones.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        |c| fill_sized(c, Term::int(1)),
        &[OpKind::Full],
    ),
    (
        "aten::empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        empty,
        &[OpKind::Full],
    ),
    (
        "dim_order_ops::_empty_dim_order.out(int[] size, *, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
        empty_dim_order,
        &[OpKind::Full],
    ),
    (
        "aten::fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out) -> Tensor(a!)",
        fill_scalar,
        &[OpKind::Full],
    ),
    (
        "aten::fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out) -> Tensor(a!)",
        fill_tensor,
        &[OpKind::Copy],
    ),
    (
        "aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        full_like,
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
    (
        "aten::repeat_interleave.Tensor_out(Tensor repeats, *, SymInt? output_size=None, Tensor(a!) out) -> Tensor(a!)",
        repeat_interleave,
        &[OpKind::RepeatInterleave],
    ),
];

/// Emits `op` writing `out`, whose shape is `shape`, computed from the
/// call's arguments: the shape the file declares for `out` must agree (a
/// file that declares another shape is refused, not trusted).
pub(super) fn emit_given(
    c: &mut Call<'_, '_, '_>,
    op: Op,
    out: TensorRef,
    shape: Vec<Dim>,
) -> Result<(), ImportError> {
    c.emit_shaped(op, &[out], Some(shape))
}

/// full: `out`, of the size `size`, filled with `fill_value`.
fn full(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let value = c.term("fill_value")?;
    fill_sized(c, value)
}

/// full_like: `out`, of `self`'s shape, filled with `fill_value`.
fn full_like(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let value = c.term("fill_value")?;
    fill_like(c, value)
}

/// zeros_like, ones_like, full_like, fill.Scalar: `out`, of `self`'s
/// shape, filled with `value`.
fn fill_like(c: &mut Call<'_, '_, '_>, value: Term) -> Result<(), ImportError> {
    check_like(c, "self")?;
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let out = c.output("out")?;
    emit_given(c, Op::Full(Full { value }), out, shape)
}

/// full, zeros, ones: `out`, of the size `size` (sizes computed at run
/// time included), filled with `value`.
fn fill_sized(c: &mut Call<'_, '_, '_>, value: Term) -> Result<(), ImportError> {
    c.check_size("size", "out")?;
    let shape = c
        .terms("size")?
        .into_iter()
        .map(|size| c.size("size", size))
        .collect::<Result<Vec<_>, _>>()?;
    let out = c.output("out")?;
    emit_given(c, Op::Full(Full { value }), out, shape)
}

/// empty: `out`, of the size `size`, zeroed; any memory format is a
/// layout of the same elements, which the program's `out` settles.
fn empty(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    fill_sized(c, Term::int(0))
}

/// `_empty_dim_order`: empty, whose `dim_order` (when given) must be the
/// dim order `out` declares.
fn empty_dim_order(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    if let Some(order) = c.optional_int_list("dim_order")? {
        let declared = c.declared_type_of("out")?.dim_order;
        if !order
            .iter()
            .copied()
            .eq(declared.iter().map(|&d| i64::from(d)))
        {
            return Err(c.bad(
                "dim_order",
                format!("{order:?} is not the dim order {declared:?} that out declares"),
            ));
        }
    }
    fill_sized(c, Term::int(0))
}

/// `out` has the shape of the tensor argument `like`.
fn check_like(c: &Call<'_, '_, '_>, like: &str) -> Result<(), ImportError> {
    let (shape, out) = (
        c.declared_type_of(like)?.shape,
        c.declared_type_of("out")?.shape,
    );
    // A symbolic dimension's size is known at run time only.
    let agree = |(a, b): (&Dim, &Dim)| match (a, b) {
        (Dim::Fixed(a), Dim::Fixed(b)) => a == b,
        _ => true,
    };
    if shape.len() == out.len() && shape.iter().zip(&out).all(agree) {
        Ok(())
    } else {
        Err(c.bad(
            "out",
            format!(
                "has shape {}, not {like}'s {}",
                ptec_ir::ops::show(&out),
                ptec_ir::ops::show(&shape)
            ),
        ))
    }
}

/// fill.Scalar: `out`, of `self`'s shape, filled with `value`.
fn fill_scalar(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    c.keeps_dtype("self", "out")?;
    let value = c.term("value")?;
    fill_like(c, value)
}

/// fill.Tensor: `out`, of `self`'s shape, filled with the one element of
/// the 0-dim tensor `value` (converted to `out`'s element type).
fn fill_tensor(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    c.keeps_dtype("self", "out")?;
    check_like(c, "self")?;
    let rank = c.rank_of("value")?;
    if rank != 0 {
        return Err(c.bad(
            "value",
            format!("is a {rank}-D tensor; fill takes a 0-dim one"),
        ));
    }
    let input = c.tensor("value")?;
    c.emit(Op::Copy(Copy { input }), &["out"])
}

/// scalar_tensor: the 0-dim `out` holding `s`.
fn scalar_tensor(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.declared_type_of("out")?.rank();
    if rank != 0 {
        return Err(c.bad("out", format!("is {rank}-D; a scalar tensor is 0-dim")));
    }
    let value = c.term("s")?;
    c.emit(Op::Full(Full { value }), &["out"])
}

/// `arange(start, end, step)`: `start + i * step` for each `i` below
/// PyTorch's length `ceil((end - start) / step)`. Known bounds take
/// `arange_length`, and the length must be the one `out` declares; a bound
/// computed at run time makes the length a symbol, checked then.
fn arange(c: &mut Call<'_, '_, '_>, start: Term, end: Term) -> Result<(), ImportError> {
    let step = c.scalar("step")?;
    if let (Term::Const(start), Term::Const(end)) = (start, end) {
        return emit_arange(c, start, end, step);
    }
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

fn emit_arange(
    c: &mut Call<'_, '_, '_>,
    start: Scalar,
    end: Scalar,
    step: Scalar,
) -> Result<(), ImportError> {
    let out = c.declared_type_of("out")?;
    let length = arange_length(out.dtype, start, end, step)
        .map_err(|why| c.bad(if why.contains("step") { "step" } else { "end" }, why))?;
    match out.shape.as_slice() {
        [Dim::Fixed(declared)] if *declared != length => {
            return Err(c.bad(
                "end",
                format!(
                    "gives {length} elements from {start} to {end} by {step}, but out declares {declared}"
                ),
            ));
        }
        _ => {}
    }
    let start = Term::Const(start);
    c.emit(Op::Arange(Arange { start, step }), &["out"])
}

/// The number of elements of `arange(start, end, step)` into an `out` of
/// `dtype`, as PyTorch counts them, or why there is none. The bounds are
/// checked in `out`'s accumulation type (i64 for integers, truncated); the
/// length is counted in i64 for an i64 `out`, else in f64.
fn arange_length(dtype: DType, start: Scalar, end: Scalar, step: Scalar) -> Result<u64, String> {
    if dtype.is_float() {
        let (start, end, step) = (start.as_f64(), end.as_f64(), step.as_f64());
        if !(start.is_finite() && end.is_finite()) {
            return Err(format!("the bounds {start} and {end} must be finite"));
        }
        check_range(start, end, step, 0.0)?;
    } else {
        check_range(start.as_i64(), end.as_i64(), step.as_i64(), 0)?;
    }
    let length = if dtype == DType::I64 {
        let (start, end, step) = (start.as_i64(), end.as_i64(), step.as_i64());
        let span =
            i128::from(end) - i128::from(start) + i128::from(step) - i128::from(step.signum());
        (span / i128::from(step)) as f64
    } else {
        ((end.as_f64() - start.as_f64()) / step.as_f64()).ceil()
    };
    if length >= 0.0 && length < u64::MAX as f64 {
        Ok(length as u64)
    } else {
        Err(format!("the range has {length} elements"))
    }
}

/// PyTorch's checks of a range's step and the sign of its extent.
fn check_range<T: PartialOrd + std::marker::Copy + std::fmt::Display>(
    start: T,
    end: T,
    step: T,
    zero: T,
) -> Result<(), String> {
    if step == zero {
        return Err("step must be nonzero".into());
    }
    if (step > zero && end < start) || (step < zero && end > start) {
        return Err(format!(
            "the bounds {start} to {end} are inconsistent with the step {step}'s sign"
        ));
    }
    Ok(())
}

/// `repeat_interleave(repeats, output_size)`: the result's length is the
/// sum of `repeats`, known only at run time, so `output_size` must give it
/// (the generated code checks the sum against it); a size computed at run
/// time is the result's length then.
fn repeat_interleave(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let Some(size) = c.optional_term("output_size")? else {
        return Err(c.bad(
            "output_size",
            "is not given: the result's length is the sum of repeats, known only at run time, and nothing bounds it for ptec to plan memory (torch.export cannot bound it either)",
        ));
    };
    let length = c.size("output_size", size)?;
    if let Dim::Fixed(length) = length {
        let declared = c.sizes_of("out")?;
        if i64::try_from(length).map_or(true, |length| declared != [length]) {
            return Err(c.bad(
                "output_size",
                format!("{length}, but out is declared {declared:?}"),
            ));
        }
    }
    if c.rank_of("repeats")? > 1 {
        return Err(c.bad("repeats", "must be 0-D or 1-D"));
    }
    let input = c.tensor("repeats")?;
    let out = c.output("out")?;
    emit_given(
        c,
        Op::RepeatInterleave(RepeatInterleave { input }),
        out,
        vec![length],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn length(dtype: DType, start: f64, end: f64, step: f64) -> Result<u64, String> {
        arange_length(
            dtype,
            Scalar::Float(start),
            Scalar::Float(end),
            Scalar::Float(step),
        )
    }

    #[test]
    fn arange_lengths_are_pytorchs() {
        assert_eq!(length(DType::F32, 0.5, 2.0, 0.25), Ok(6));
        assert_eq!(length(DType::F32, 5.0, 0.0, -1.5), Ok(4));
        assert_eq!(length(DType::F32, 1.0, 1.0, 1.0), Ok(0));
        // An i32 range counts the fractional end; an i64 one truncates it.
        assert_eq!(length(DType::I32, 0.0, 2.5, 1.0), Ok(3));
        assert_eq!(length(DType::I64, 0.0, 2.5, 1.0), Ok(2));
        assert_eq!(
            arange_length(
                DType::I64,
                Scalar::Int(10),
                Scalar::Int(-3),
                Scalar::Int(-4)
            ),
            Ok(4)
        );
        // MIN, -1 and MAX - 1, counted without overflow.
        assert_eq!(
            arange_length(
                DType::I64,
                Scalar::Int(i64::MIN),
                Scalar::Int(i64::MAX),
                Scalar::Int(i64::MAX)
            ),
            Ok(3)
        );
    }

    #[test]
    fn arange_refuses_what_pytorch_refuses() {
        let refused = |result: Result<u64, String>, why: &str| {
            let error = result.expect_err("the range is refused");
            assert!(error.contains(why), "{error:?} does not say {why:?}");
        };
        refused(length(DType::F32, 0.0, 1.0, 0.0), "step must be nonzero");
        // A step that truncates to 0 in an integer range.
        refused(length(DType::I32, 0.0, 1.0, 0.5), "step must be nonzero");
        refused(
            length(DType::F32, 0.0, 1.0, -1.0),
            "inconsistent with the step",
        );
        refused(
            length(DType::I64, 3.0, 1.0, 1.0),
            "inconsistent with the step",
        );
        refused(
            length(DType::F32, 0.0, f64::INFINITY, 1.0),
            "must be finite",
        );
        refused(length(DType::F64, f64::NAN, 1.0, 1.0), "must be finite");
        refused(length(DType::F32, 0.0, 1.0, f64::NAN), "elements");
    }
}
