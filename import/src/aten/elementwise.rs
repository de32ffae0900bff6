//! Elementwise operators with rules of their own: activations with
//! parameters, clamps, binary functions of two tensors, of a tensor and a
//! scalar or of a scalar and a tensor, `where` and `masked_fill`, the gated
//! linear unit (over two halves sliced off its input) and the conjugate of
//! real tensors (a copy). (Unary functions come from [`UnaryOp`]'s names.)

use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::ops::layout::Slice;
use ptec_ir::{Dim, Op, OpKind, Real, Scalar, TensorType, ValueId};

use super::{ELEMENTWISE, Operator};
use crate::call::{Call, TensorRef};
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::leaky_relu.out(Tensor self, Scalar negative_slope=0.01, *, Tensor(a!) out) -> Tensor(a!)",
        leaky_relu,
        ELEMENTWISE,
    ),
    (
        "aten::elu.out(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *, Tensor(a!) out) -> Tensor(a!)",
        elu,
        ELEMENTWISE,
    ),
    (
        "aten::gelu.out(Tensor self, *, str approximate=\"none\", Tensor(a!) out) -> Tensor(a!)",
        gelu,
        ELEMENTWISE,
    ),
    (
        "aten::hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out) -> Tensor(a!)",
        hardtanh,
        ELEMENTWISE,
    ),
    (
        "aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)",
        clamp,
        ELEMENTWISE,
    ),
    (
        "aten::clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> Tensor(a!)",
        clamp_tensor,
        ELEMENTWISE,
    ),
    (
        "aten::logit.out(Tensor self, float? eps=None, *, Tensor(a!) out) -> Tensor(a!)",
        logit,
        ELEMENTWISE,
    ),
    (
        "aten::glu.out(Tensor self, int dim=-1, *, Tensor(a!) out) -> Tensor(a!)",
        glu,
        &[OpKind::Slice, OpKind::Elementwise],
    ),
    (
        "aten::_conj_physical.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        super::layout::clone,
        &[OpKind::Copy],
    ),
    // Elementwise, two operands.
    (
        "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        |c| binary_alpha(c, BinaryOp::Add),
        ELEMENTWISE,
    ),
    (
        "aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        |c| binary_alpha(c, BinaryOp::Sub),
        ELEMENTWISE,
    ),
    (
        "aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)",
        |c| scalar_alpha(c, BinaryOp::Add),
        ELEMENTWISE,
    ),
    (
        "aten::sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)",
        |c| scalar_alpha(c, BinaryOp::Sub),
        ELEMENTWISE,
    ),
    (
        "aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Mul),
        ELEMENTWISE,
    ),
    (
        "aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Div),
        ELEMENTWISE,
    ),
    (
        "aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let op = rounding(c)?;
            binary(c, op)
        },
        ELEMENTWISE,
    ),
    (
        "aten::div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let op = rounding(c)?;
            with_scalar(c, op, "other")
        },
        ELEMENTWISE,
    ),
    (
        "aten::floor_divide.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::FloorDiv),
        ELEMENTWISE,
    ),
    (
        "aten::remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Remainder),
        ELEMENTWISE,
    ),
    (
        "aten::fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Fmod),
        ELEMENTWISE,
    ),
    (
        "aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary_named(c, BinaryOp::Pow, "exponent"),
        ELEMENTWISE,
    ),
    (
        "aten::atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Atan2),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_and.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::BitwiseAnd),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_or.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::BitwiseOr),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_xor.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::BitwiseXor),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_left_shift.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::LeftShift),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_right_shift.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::RightShift),
        ELEMENTWISE,
    ),
    (
        "aten::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Maximum),
        ELEMENTWISE,
    ),
    (
        "aten::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Minimum),
        ELEMENTWISE,
    ),
    (
        "aten::eq.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Eq),
        ELEMENTWISE,
    ),
    (
        "aten::ne.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Ne),
        ELEMENTWISE,
    ),
    (
        "aten::lt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Lt),
        ELEMENTWISE,
    ),
    (
        "aten::le.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Le),
        ELEMENTWISE,
    ),
    (
        "aten::gt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Gt),
        ELEMENTWISE,
    ),
    (
        "aten::ge.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::Ge),
        ELEMENTWISE,
    ),
    (
        "aten::logical_and.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::LogicalAnd),
        ELEMENTWISE,
    ),
    (
        "aten::logical_or.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::LogicalOr),
        ELEMENTWISE,
    ),
    (
        "aten::logical_xor.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary(c, BinaryOp::LogicalXor),
        ELEMENTWISE,
    ),
    (
        "aten::mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Mul, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Div, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::remainder.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Remainder, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Fmod, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Pow, "exponent"),
        ELEMENTWISE,
    ),
    (
        "aten::pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)",
        |c| scalar_first(c, BinaryOp::Pow, "self", "exponent", None),
        ELEMENTWISE,
    ),
    (
        "aten::rsub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let alpha = Some(c.scalar("alpha")?);
            scalar_first(c, BinaryOp::Sub, "other", "self", alpha)
        },
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_and.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::BitwiseAnd, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_or.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::BitwiseOr, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_xor.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::BitwiseXor, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_left_shift.Tensor_Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::LeftShift, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::bitwise_right_shift.Tensor_Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::RightShift, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Eq, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::ne.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Ne, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::lt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Lt, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::le.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Le, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::gt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Gt, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::ge.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Ge, "other"),
        ELEMENTWISE,
    ),
    (
        "aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        where_,
        ELEMENTWISE,
    ),
    (
        "aten::masked_fill.Scalar_out(Tensor self, Tensor mask, Scalar value, *, Tensor(a!) out) -> Tensor(a!)",
        masked_fill,
        ELEMENTWISE,
    ),
];

fn elementwise(c: &mut Call<'_, '_, '_>, func: Func, inputs: &[&str]) -> Result<(), ImportError> {
    let inputs = inputs
        .iter()
        .map(|&name| c.tensor(name))
        .collect::<Result<Vec<_>, _>>()?;
    c.emit(Elementwise::op(func, inputs), &["out"])
}

fn leaky_relu(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let slope = Real(c.scalar("negative_slope")?.as_f64());
    elementwise(c, Func::LeakyRelu { slope }, &["self"])
}

fn elu(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let func = Func::Elu {
        alpha: Real(c.scalar("alpha")?.as_f64()),
        scale: Real(c.scalar("scale")?.as_f64()),
        input_scale: Real(c.scalar("input_scale")?.as_f64()),
    };
    elementwise(c, func, &["self"])
}

fn gelu(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = match c.string("approximate")?.as_str() {
        "none" => UnaryOp::Gelu,
        "tanh" => UnaryOp::GeluTanh,
        other => {
            return Err(c.bad("approximate", format!("{other:?} is not one of none, tanh")));
        }
    };
    elementwise(c, Func::Unary(op), &["self"])
}

fn hardtanh(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let func = Func::Clamp {
        min: Some(c.scalar("min_val")?),
        max: Some(c.scalar("max_val")?),
    };
    elementwise(c, func, &["self"])
}

fn clamp(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (min, max) = (c.optional_scalar("min")?, c.optional_scalar("max")?);
    elementwise(c, Func::Clamp { min, max }, &["self"])
}

fn binary(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    binary_named(c, op, "other")
}

/// A binary function of `self` and the tensor `other`.
fn binary_named(c: &mut Call<'_, '_, '_>, op: BinaryOp, other: &str) -> Result<(), ImportError> {
    elementwise(c, Func::Binary { op, alpha: None }, &["self", other])
}

fn binary_alpha(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    let alpha = Some(c.scalar("alpha")?).filter(|alpha| alpha.as_f64() != 1.0);
    elementwise(c, Func::Binary { op, alpha }, &["self", "other"])
}

/// The division `rounding_mode` asks for: true division, floored or
/// truncated.
fn rounding(c: &mut Call<'_, '_, '_>) -> Result<BinaryOp, ImportError> {
    match c.optional_string("rounding_mode")?.as_deref() {
        None => Ok(BinaryOp::Div),
        Some("floor") => Ok(BinaryOp::FloorDiv),
        Some("trunc") => Ok(BinaryOp::TruncDiv),
        Some(other) => Err(c.bad(
            "rounding_mode",
            format!("{other:?} is not one of floor, trunc"),
        )),
    }
}

/// A binary function of `self` and the scalar argument `scalar`.
fn with_scalar(c: &mut Call<'_, '_, '_>, op: BinaryOp, scalar: &str) -> Result<(), ImportError> {
    if let Some(computed) = c.computed_scalar(scalar)? {
        return with_computed(c, op, computed, None);
    }
    let scalar = c.scalar(scalar)?;
    elementwise(c, Func::BinaryScalar { op, scalar }, &["self"])
}

/// `self op (alpha * computed)` of a scalar a run computes, held in the
/// 0-dim tensor `computed` ([`Call::computed_scalar`]).
fn with_computed(
    c: &mut Call<'_, '_, '_>,
    op: BinaryOp,
    computed: ValueId,
    alpha: Option<Scalar>,
) -> Result<(), ImportError> {
    let x = c.tensor("self")?;
    let func = Func::Binary { op, alpha };
    c.emit(Elementwise::op(func, vec![x, computed]), &["out"])
}

/// `x op (alpha * scalar)`, folded into one scalar.
fn scalar_alpha(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    if let Some(computed) = c.computed_scalar("other")? {
        let alpha = Some(c.scalar("alpha")?).filter(|alpha| alpha.as_f64() != 1.0);
        return with_computed(c, op, computed, alpha);
    }
    let (other, alpha) = (c.scalar("other")?, c.scalar("alpha")?);
    let scalar = match (other, alpha) {
        (Scalar::Int(a), Scalar::Int(b)) => Scalar::Int(a.wrapping_mul(b)),
        _ => Scalar::Float(other.as_f64() * alpha.as_f64()),
    };
    elementwise(c, Func::BinaryScalar { op, scalar }, &["self"])
}

/// `scalar op (alpha * tensor)` of the scalar argument `scalar` and the
/// tensor argument `tensor`; an alpha of 1 is left out.
fn scalar_first(
    c: &mut Call<'_, '_, '_>,
    op: BinaryOp,
    scalar: &str,
    tensor: &str,
    alpha: Option<Scalar>,
) -> Result<(), ImportError> {
    let scalar = c.scalar(scalar)?;
    let alpha = alpha.filter(|alpha| alpha.as_f64() != 1.0);
    elementwise(c, Func::ScalarFirst { op, scalar, alpha }, &[tensor])
}

fn where_(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    elementwise(c, Func::Where, &["condition", "self", "other"])
}

fn masked_fill(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let value = c.scalar("value")?;
    elementwise(c, Func::MaskedFill { value }, &["self", "mask"])
}

/// `clamp(self, min, max)` with tensor bounds, at least one of them.
fn clamp_tensor(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let x = c.tensor("self")?;
    let (min, max) = (c.optional_tensor("min")?, c.optional_tensor("max")?);
    if min.is_none() && max.is_none() {
        return Err(c.bad(
            "min",
            "and max are both None; clamp needs at least one bound",
        ));
    }
    let func = Func::ClampTensor {
        min: min.is_some(),
        max: max.is_some(),
    };
    let inputs = [Some(x), min, max].into_iter().flatten().collect();
    c.emit(Elementwise::op(func, inputs), &["out"])
}

/// `logit(self, eps)`: a negative `eps` clamps nothing, as no `eps`.
fn logit(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let eps = c
        .optional_double("eps")?
        .filter(|&eps| eps >= 0.0)
        .map(Real);
    elementwise(c, Func::Logit { eps }, &["self"])
}

/// `glu(self, dim)`: the halves of `self` along `dim` sliced into
/// temporaries, then `a * sigmoid(b)` of them.
fn glu(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let dim = c.dim("dim", rank)?;
    let input = c.tensor("self")?;
    let ty = c.ty(input).clone();
    let Some(size) = ty.shape[dim].fixed() else {
        return Err(c.bad(
            "dim",
            format!("dimension {dim} of {ty} is symbolic; ptec halves only fixed sizes"),
        ));
    };
    if size % 2 != 0 {
        return Err(c.bad(
            "dim",
            format!("halving dimension {dim} of {ty} must be even, but it has size {size}"),
        ));
    }
    let mut shape = ty.shape.clone();
    shape[dim] = Dim::Fixed(size / 2);
    let half = TensorType {
        dtype: ty.dtype,
        shape,
        dim_order: (0..rank as u8).collect(),
    };
    let mut halves = Vec::with_capacity(2);
    for start in [0, size / 2] {
        let temporary = c.new_value(half.clone());
        let slice = Slice {
            input,
            dim,
            start: Dim::Fixed(start),
            step: 1,
        };
        c.emit_to(Op::Slice(slice), &[TensorRef::Ir(temporary)])?;
        halves.push(temporary);
    }
    c.emit(Elementwise::op(Func::Glu, halves), &["out"])
}
