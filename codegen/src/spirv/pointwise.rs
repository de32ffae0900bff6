//! Each elementwise op's computation of one element, as a WGSL expression:
//! the shader counterpart of `kernels/pointwise.rs`, with the same types
//! and the same results for NaN, infinities and negative bases.

use ptec_ir::{BinaryOp, DType, Op, Scalar, UnaryOp};

use super::wgsl::{Ty, float, int, scalar, unsupported};
use crate::error::CodegenError;

/// The type an elementwise op computes in, given its operands' and
/// result's element types (as the CPU kernels choose it).
pub(super) fn compute_type(op: &Op, inputs: &[DType], out: DType) -> Result<Ty, CodegenError> {
    let operands = |dtypes: &[DType]| -> Result<Ty, CodegenError> {
        if dtypes.iter().any(|dtype| dtype.is_float()) {
            match dtypes
                .iter()
                .find(|dtype| dtype.is_float() && **dtype != DType::F32)
            {
                Some(other) => Err(unsupported(format!("{other} arithmetic"))),
                None => Ok(Ty::F32),
            }
        } else if dtypes.iter().all(|&dtype| dtype == DType::Bool) {
            Ok(Ty::Bool)
        } else {
            Ok(Ty::I32)
        }
    };
    match op {
        Op::Unary(UnaryOp::LogicalNot) => operands(&inputs[..1]),
        Op::Binary { op, .. } if op.is_comparison() => {
            // Integers of up to 32 bits compare exactly in i32, and bools
            // as 0 and 1.
            match operands(inputs)? {
                Ty::Bool
                    if !matches!(
                        op,
                        BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor
                    ) =>
                {
                    Ok(Ty::I32)
                }
                ty => Ok(ty),
            }
        }
        Op::BinaryScalar { op, scalar } if op.is_comparison() => {
            let ty = operands(&inputs[..1])?;
            match (ty, scalar) {
                (Ty::F32, _) => Ok(Ty::F32),
                (_, Scalar::Float(value)) if value.fract() != 0.0 => Err(unsupported(format!(
                    "comparing an integer tensor with {value}"
                ))),
                _ => Ok(Ty::I32),
            }
        }
        _ => Ty::of(out),
    }
}

/// `x` clamped below by `min`, keeping NaN.
pub(super) fn at_least(x: &str, min: &str) -> String {
    format!("select({x}, {min}, {x} < {min})")
}

/// `x` clamped above by `max`, keeping NaN.
pub(super) fn at_most(x: &str, max: &str) -> String {
    format!("select({x}, {max}, {x} > {max})")
}

fn hardsigmoid(x: &str) -> String {
    format!(
        "({} / 6.0f)",
        at_most(&at_least(&format!("({x} + 3.0f)"), "0.0f"), "6.0f")
    )
}

fn unary(op: UnaryOp, x: &str, ty: Ty) -> Result<String, CodegenError> {
    use UnaryOp::*;
    if op == LogicalNot {
        return Ok(match ty {
            Ty::F32 => format!("({x} == 0.0f)"),
            Ty::I32 => format!("({x} == 0i)"),
            Ty::Bool => format!("!{x}"),
        });
    }
    if ty != Ty::F32 {
        return match op {
            Neg => Ok(format!("(-{x})")),
            Abs => Ok(format!("abs({x})")),
            Relu => Ok(format!("max({x}, 0i)")),
            Sign => Ok(format!("sign({x})")),
            Floor | Ceil | Round | Trunc => Ok(x.to_string()),
            other => Err(unsupported(format!("{other:?} of integer tensors"))),
        };
    }
    let sigmoid = |x: &str| format!("(1.0f / (1.0f + exp(-{x})))");
    Ok(match op {
        Neg => format!("(-{x})"),
        Abs => format!("abs({x})"),
        Relu => at_least(x, "0.0f"),
        Sigmoid => sigmoid(x),
        Tanh => format!("tanh({x})"),
        Exp => format!("exp({x})"),
        Log => format!("log({x})"),
        Sqrt => format!("sqrt({x})"),
        Rsqrt => format!("(1.0f / sqrt({x}))"),
        Reciprocal => format!("(1.0f / {x})"),
        Sin => format!("sin({x})"),
        Cos => format!("cos({x})"),
        Erf => format!("erf_f32({x})"),
        Gelu { tanh: false } => {
            format!(
                "({x} * 0.5f * (1.0f + erf_f32({x} * {})))",
                float(std::f64::consts::FRAC_1_SQRT_2)
            )
        }
        Gelu { tanh: true } => format!(
            "({x} * 0.5f * (1.0f + tanh({} * ({x} + 0.044715f * {x} * {x} * {x}))))",
            float((2.0 / std::f64::consts::PI).sqrt())
        ),
        Hardswish => format!("({x} * {})", hardsigmoid(x)),
        Hardsigmoid => hardsigmoid(x),
        Silu => format!("({x} * {})", sigmoid(x)),
        Floor => format!("floor({x})"),
        Ceil => format!("ceil({x})"),
        // WGSL rounds halves to even, as torch.round.
        Round => format!("round({x})"),
        Trunc => format!("trunc({x})"),
        Sign => format!("select(sign({x}), {x}, is_nan({x}))"),
        Expm1 => format!("expm1_f32({x})"),
        Log1p => format!("log1p_f32({x})"),
        LogicalNot => unreachable!("handled above"),
    })
}

fn binary(op: BinaryOp, a: &str, b: &str, ty: Ty) -> Result<String, CodegenError> {
    use BinaryOp::*;
    let truth = |x: &str| super::wgsl::convert(x, ty, Ty::Bool);
    let compare = |symbol: &str| format!("({a} {symbol} {b})");
    Ok(match op {
        LogicalAnd => format!("({} && {})", truth(a), truth(b)),
        LogicalOr => format!("({} || {})", truth(a), truth(b)),
        LogicalXor => format!("({} != {})", truth(a), truth(b)),
        Eq => compare("=="),
        Ne => compare("!="),
        Lt => compare("<"),
        Le => compare("<="),
        Gt => compare(">"),
        Ge => compare(">="),
        Add => compare("+"),
        Sub => compare("-"),
        Mul => compare("*"),
        Div if ty == Ty::F32 => compare("/"),
        FloorDiv if ty == Ty::F32 => format!("floor({a} / {b})"),
        TruncDiv if ty == Ty::F32 => format!("trunc({a} / {b})"),
        Remainder if ty == Ty::F32 => format!("({a} - floor({a} / {b}) * {b})"),
        Pow if ty == Ty::F32 => format!("pow_f32({a}, {b})"),
        Maximum if ty == Ty::F32 => format!("nan_max({a}, {b})"),
        Minimum if ty == Ty::F32 => format!("nan_min({a}, {b})"),
        Maximum => format!("max({a}, {b})"),
        Minimum => format!("min({a}, {b})"),
        // Integer division by zero is an error on the CPU; a shader cannot
        // report one, so these stay there.
        Div | FloorDiv | TruncDiv | Remainder | Pow => {
            return Err(unsupported(format!("{op:?} of integer tensors")));
        }
    })
}

/// One element of an elementwise op from its operands (already of type
/// `ty`), as a value of `ty` (or bool, for comparisons).
pub(super) fn element(op: &Op, x: &[String], ty: Ty) -> Result<String, CodegenError> {
    match *op {
        Op::Unary(op) => unary(op, &x[0], ty),
        Op::Binary { op, alpha } => {
            let other = match alpha {
                Some(alpha) => format!("({} * {})", x[1], scalar(alpha, ty)?),
                None => x[1].clone(),
            };
            binary(op, &x[0], &other, ty)
        }
        Op::BinaryScalar { op, scalar: value } => {
            let value = match (ty, value) {
                (Ty::I32, Scalar::Float(value)) => int(value as i64)?,
                _ => scalar(value, ty)?,
            };
            binary(op, &x[0], &value, ty)
        }
        Op::Clamp { min, max } => {
            let mut value = x[0].clone();
            if let Some(min) = min {
                let min = scalar(min, ty)?;
                value = match ty {
                    Ty::F32 => at_least(&value, &min),
                    _ => format!("max({value}, {min})"),
                };
            }
            if let Some(max) = max {
                let max = scalar(max, ty)?;
                value = match ty {
                    Ty::F32 => at_most(&value, &max),
                    _ => format!("min({value}, {max})"),
                };
            }
            Ok(value)
        }
        Op::LeakyRelu { slope } if ty == Ty::F32 => Ok(format!(
            "select({x} * {}, {x}, {x} > 0.0f)",
            float(slope),
            x = x[0]
        )),
        Op::Elu {
            alpha,
            scale,
            input_scale,
        } if ty == Ty::F32 => Ok(format!(
            "({} * select({} * expm1_f32({x} * {}), {x}, {x} > 0.0f))",
            float(scale),
            float(alpha),
            float(input_scale),
            x = x[0]
        )),
        _ => Err(unsupported(format!(
            "{} into a {} tensor",
            op.name(),
            ty.name()
        ))),
    }
}
