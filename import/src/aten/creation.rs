//! Tensors made from scalars: fills and ranges.

use ptec_ir::ops::creation::{Arange, Full};
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
