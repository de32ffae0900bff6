//! Tensors made from scalars: fills and ranges, and the indices
//! `repeat_interleave` repeats.

use ptec_ir::ops::creation::{Arange, Full, RepeatInterleave};
use ptec_ir::{Op, OpKind, Scalar};

use super::Operator;
use crate::call::Call;
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)",
        fill_with,
        &[OpKind::Full],
    ),
    (
        "aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        fill_with,
        &[OpKind::Full],
    ),
    (
        "aten::scalar_tensor.out(Scalar s, *, Tensor(a!) out) -> Tensor(a!)",
        scalar_tensor,
        &[OpKind::Full],
    ),
    (
        "aten::zeros_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        |c| fill(c, Scalar::Int(0)),
        &[OpKind::Full],
    ),
    (
        "aten::ones_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        |c| fill(c, Scalar::Int(1)),
        &[OpKind::Full],
    ),
    (
        "aten::arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)",
        arange_start,
        &[OpKind::Arange],
    ),
    (
        "aten::arange.out(Scalar end, *, Tensor(a!) out) -> Tensor(a!)",
        arange,
        &[OpKind::Arange],
    ),
    (
        "aten::repeat_interleave.Tensor_out(Tensor repeats, *, SymInt? output_size=None, Tensor(a!) out) -> Tensor(a!)",
        repeat_interleave,
        &[OpKind::RepeatInterleave],
    ),
];

fn fill(c: &mut Call<'_, '_, '_>, value: Scalar) -> Result<(), ImportError> {
    c.emit(Op::Full(Full { value }), &["out"])
}

/// full, full_like: `out` filled with `fill_value`.
fn fill_with(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let value = c.scalar("fill_value")?;
    fill(c, value)
}

fn scalar_tensor(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let value = c.scalar("s")?;
    fill(c, value)
}

fn arange_start(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (start, step) = (c.scalar("start")?, c.scalar("step")?);
    c.emit(Op::Arange(Arange { start, step }), &["out"])
}

fn arange(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::Arange(Arange {
        start: Scalar::Int(0),
        step: Scalar::Int(1),
    });
    c.emit(op, &["out"])
}

/// `repeat_interleave(repeats, output_size)`: the result's length is the
/// sum of `repeats`, known only at run time, so `output_size` must give it
/// (the generated code checks the sum against it).
fn repeat_interleave(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let Some(length) = c.optional_int("output_size")? else {
        return Err(c.bad(
            "output_size",
            "is not given: the result's length is the sum of repeats, known only at run time, and ptec does not compute data-dependent sizes yet",
        ));
    };
    let declared = c.sizes_of("out")?;
    if declared != [length] {
        return Err(c.bad(
            "output_size",
            format!("{length}, but out is declared {declared:?}"),
        ));
    }
    if c.rank_of("repeats")? > 1 {
        return Err(c.bad("repeats", "must be 0-D or 1-D"));
    }
    let input = c.tensor("repeats")?;
    c.emit(Op::RepeatInterleave(RepeatInterleave { input }), &["out"])
}
