//! Elementwise operators with rules of their own: activations with
//! parameters, clamps, binary functions of two tensors or of a tensor and a
//! scalar, `where`. (Unary functions come from [`UnaryOp`]'s names.)

use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::{Real, Scalar};

use super::{ELEMENTWISE, Operator};
use crate::call::Call;
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
        div_mode,
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
        "aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)",
        |c| binary_named(c, BinaryOp::Pow, "exponent"),
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
        "aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)",
        |c| with_scalar(c, BinaryOp::Pow, "exponent"),
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

fn div_mode(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = match c.optional_string("rounding_mode")?.as_deref() {
        None => BinaryOp::Div,
        Some("floor") => BinaryOp::FloorDiv,
        Some("trunc") => BinaryOp::TruncDiv,
        Some(other) => {
            return Err(c.bad(
                "rounding_mode",
                format!("{other:?} is not one of floor, trunc"),
            ));
        }
    };
    elementwise(c, Func::Binary { op, alpha: None }, &["self", "other"])
}

/// A binary function of `self` and the scalar argument `scalar`.
fn with_scalar(c: &mut Call<'_, '_, '_>, op: BinaryOp, scalar: &str) -> Result<(), ImportError> {
    let scalar = c.scalar(scalar)?;
    elementwise(c, Func::BinaryScalar { op, scalar }, &["self"])
}

/// `x op (alpha * scalar)`, folded into one scalar.
fn scalar_alpha(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    let (other, alpha) = (c.scalar("other")?, c.scalar("alpha")?);
    let scalar = match (other, alpha) {
        (Scalar::Int(a), Scalar::Int(b)) => Scalar::Int(a.wrapping_mul(b)),
        _ => Scalar::Float(other.as_f64() * alpha.as_f64()),
    };
    elementwise(c, Func::BinaryScalar { op, scalar }, &["self"])
}

fn where_(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    elementwise(c, Func::Where, &["condition", "self", "other"])
}
