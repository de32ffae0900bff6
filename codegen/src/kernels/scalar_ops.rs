//! What each elementwise op computes for one element (or one f32x4 vector of
//! them), with PyTorch's semantics: NaN propagates through min and max,
//! integer arithmetic wraps, integer division by zero is an error, and
//! comparisons give bools.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{Endianness, InstBuilder, MemFlagsData, Type, Value, types};
use ptec_ir::{BinaryOp, DType, Scalar, UnaryOp};

use crate::emit::Emitter;
use crate::error::CodegenError;
use crate::math::MathFn;

/// Whether `op` has a vector form (no C library call, no integer traps).
pub(crate) fn unary_vectorizes(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(
        op,
        Neg | Abs
            | Relu
            | Sqrt
            | Rsqrt
            | Reciprocal
            | Hardswish
            | Hardsigmoid
            | Floor
            | Ceil
            | Round
    )
}

pub(crate) fn binary_vectorizes(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(op, Add | Sub | Mul | Div | Maximum | Minimum)
}

/// A float constant of `ty` (a float type, or an f32x4 vector splat).
pub(crate) fn fconst(e: &mut Emitter<'_, '_, '_>, ty: Type, value: f64) -> Value {
    match ty {
        types::F64 => e.b.ins().f64const(value),
        types::F32 => e.b.ins().f32const(value as f32),
        _ => {
            let lane = e.b.ins().f32const(value as f32);
            e.b.ins().splat(ty, lane)
        }
    }
}

fn ty_of(e: &Emitter<'_, '_, '_>, value: Value) -> Type {
    e.b.func.dfg.value_type(value)
}

fn math(
    e: &mut Emitter<'_, '_, '_>,
    function: MathFn,
    args: &[Value],
) -> Result<Value, CodegenError> {
    let ty = ty_of(e, args[0]);
    e.call_math(function.for_type(ty), args)
}

/// `1 / (1 + exp(-x))`.
fn sigmoid(e: &mut Emitter<'_, '_, '_>, x: Value) -> Result<Value, CodegenError> {
    let ty = ty_of(e, x);
    let negated = e.b.ins().fneg(x);
    let exp = math(e, MathFn::Exp, &[negated])?;
    let one = fconst(e, ty, 1.0);
    let denominator = e.b.ins().fadd(one, exp);
    Ok(e.b.ins().fdiv(one, denominator))
}

/// `x`, raised to `bound` where it is below: `max(x, bound)` that keeps
/// NaN. A compare and a select, where `fmax`'s IEEE rules for NaN and signed
/// zeros cost x86 several more instructions.
pub(crate) fn at_least(e: &mut Emitter<'_, '_, '_>, x: Value, bound: Value) -> Value {
    let below = e.b.ins().fcmp(FloatCC::LessThan, x, bound);
    select_lanes(e, below, bound, x)
}

/// `x`, lowered to `bound` where it is above: `min(x, bound)` that keeps
/// NaN.
pub(crate) fn at_most(e: &mut Emitter<'_, '_, '_>, x: Value, bound: Value) -> Value {
    let above = e.b.ins().fcmp(FloatCC::GreaterThan, x, bound);
    select_lanes(e, above, bound, x)
}

/// `condition ? a : b`, lane by lane for vectors.
pub(crate) fn select_lanes(
    e: &mut Emitter<'_, '_, '_>,
    condition: Value,
    a: Value,
    b: Value,
) -> Value {
    let ty = ty_of(e, a);
    if ty.is_vector() {
        // The comparison's lanes are all ones or all zeros.
        let little = MemFlagsData::new().with_endianness(Endianness::Little);
        let mask = e.b.ins().bitcast(ty, little, condition);
        e.b.ins().bitselect(mask, a, b)
    } else {
        e.b.ins().select(condition, a, b)
    }
}

/// `min(max(x + 3, 0), 6) / 6`.
fn hardsigmoid(e: &mut Emitter<'_, '_, '_>, x: Value) -> Value {
    let ty = ty_of(e, x);
    let (three, zero, six) = (fconst(e, ty, 3.0), fconst(e, ty, 0.0), fconst(e, ty, 6.0));
    let shifted = e.b.ins().fadd(x, three);
    let low = at_least(e, shifted, zero);
    let clamped = at_most(e, low, six);
    e.b.ins().fdiv(clamped, six)
}

pub(crate) fn unary(
    e: &mut Emitter<'_, '_, '_>,
    op: UnaryOp,
    x: Value,
    dtype: DType,
) -> Result<Value, CodegenError> {
    use UnaryOp::*;
    let ty = ty_of(e, x);
    if op == LogicalNot {
        return Ok(if dtype.is_float() {
            let zero = fconst(e, ty, 0.0);
            e.b.ins().fcmp(FloatCC::Equal, x, zero)
        } else {
            e.b.ins().icmp_imm_s(IntCC::Equal, x, 0)
        });
    }
    if !dtype.is_float() {
        return integer_unary(e, op, x, dtype);
    }
    Ok(match op {
        Neg => e.b.ins().fneg(x),
        Abs => e.b.ins().fabs(x),
        Relu => {
            let zero = fconst(e, ty, 0.0);
            at_least(e, x, zero)
        }
        Sigmoid => sigmoid(e, x)?,
        Tanh => math(e, MathFn::Tanh, &[x])?,
        Exp => math(e, MathFn::Exp, &[x])?,
        Log => math(e, MathFn::Log, &[x])?,
        Sqrt => e.b.ins().sqrt(x),
        Rsqrt => {
            let root = e.b.ins().sqrt(x);
            let one = fconst(e, ty, 1.0);
            e.b.ins().fdiv(one, root)
        }
        Reciprocal => {
            let one = fconst(e, ty, 1.0);
            e.b.ins().fdiv(one, x)
        }
        Sin => math(e, MathFn::Sin, &[x])?,
        Cos => math(e, MathFn::Cos, &[x])?,
        Erf => math(e, MathFn::Erf, &[x])?,
        Gelu { tanh: false } => {
            // x/2 * (1 + erf(x / sqrt(2)))
            let inverse_root2 = fconst(e, ty, std::f64::consts::FRAC_1_SQRT_2);
            let scaled = e.b.ins().fmul(x, inverse_root2);
            let erf = math(e, MathFn::Erf, &[scaled])?;
            let (one, half) = (fconst(e, ty, 1.0), fconst(e, ty, 0.5));
            let sum = e.b.ins().fadd(one, erf);
            let half_x = e.b.ins().fmul(x, half);
            e.b.ins().fmul(half_x, sum)
        }
        Gelu { tanh: true } => {
            // x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
            let cube = {
                let square = e.b.ins().fmul(x, x);
                e.b.ins().fmul(square, x)
            };
            let coefficient = fconst(e, ty, 0.044715);
            let term = e.b.ins().fmul(cube, coefficient);
            let inner = e.b.ins().fadd(x, term);
            let root = fconst(e, ty, (2.0 / std::f64::consts::PI).sqrt());
            let argument = e.b.ins().fmul(inner, root);
            let tanh = math(e, MathFn::Tanh, &[argument])?;
            let (one, half) = (fconst(e, ty, 1.0), fconst(e, ty, 0.5));
            let sum = e.b.ins().fadd(one, tanh);
            let half_x = e.b.ins().fmul(x, half);
            e.b.ins().fmul(half_x, sum)
        }
        Hardswish => {
            let gate = hardsigmoid(e, x);
            e.b.ins().fmul(x, gate)
        }
        Hardsigmoid => hardsigmoid(e, x),
        Silu => {
            let gate = sigmoid(e, x)?;
            e.b.ins().fmul(x, gate)
        }
        Floor => e.b.ins().floor(x),
        Ceil => e.b.ins().ceil(x),
        Round => e.b.ins().nearest(x),
        Trunc => e.b.ins().trunc(x),
        Expm1 => math(e, MathFn::Expm1, &[x])?,
        Log1p => math(e, MathFn::Log1p, &[x])?,
        Sign => {
            // (x > 0) - (x < 0), keeping NaN.
            let zero = fconst(e, ty, 0.0);
            let one = fconst(e, ty, 1.0);
            let positive = e.b.ins().fcmp(FloatCC::GreaterThan, x, zero);
            let negative = e.b.ins().fcmp(FloatCC::LessThan, x, zero);
            let minus_one = fconst(e, ty, -1.0);
            let sign = e.b.ins().select(negative, minus_one, zero);
            let sign = e.b.ins().select(positive, one, sign);
            let nan = e.b.ins().fcmp(FloatCC::Unordered, x, x);
            e.b.ins().select(nan, x, sign)
        }
        LogicalNot => unreachable!("handled above"),
    })
}

fn integer_unary(
    e: &mut Emitter<'_, '_, '_>,
    op: UnaryOp,
    x: Value,
    dtype: DType,
) -> Result<Value, CodegenError> {
    use UnaryOp::*;
    Ok(match op {
        Neg => e.b.ins().ineg(x),
        Abs => e.b.ins().iabs(x),
        Relu => {
            let ty = ty_of(e, x);
            let zero = e.b.ins().iconst(ty, 0);
            e.b.ins().smax(x, zero)
        }
        Sign => {
            let ty = ty_of(e, x);
            let positive = e.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, x, 0);
            let negative = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, x, 0);
            let positive = e.b.ins().uextend(ty, positive);
            let negative = e.b.ins().uextend(ty, negative);
            e.b.ins().isub(positive, negative)
        }
        Floor | Ceil | Round | Trunc => x,
        other => {
            return Err(CodegenError::Unsupported(format!(
                "{other:?} of {dtype} tensors"
            )));
        }
    })
}

/// `a op b` in `dtype`; comparisons give bools (i8 0 or 1).
pub(crate) fn binary(
    e: &mut Emitter<'_, '_, '_>,
    op: BinaryOp,
    a: Value,
    b: Value,
    dtype: DType,
) -> Result<Value, CodegenError> {
    use BinaryOp::*;
    if let LogicalAnd | LogicalOr | LogicalXor = op {
        let truth = |e: &mut Emitter<'_, '_, '_>, v: Value| -> Result<Value, CodegenError> {
            e.convert(v, dtype, DType::Bool)
        };
        let (a, b) = (truth(e, a)?, truth(e, b)?);
        return Ok(match op {
            LogicalAnd => e.b.ins().band(a, b),
            LogicalOr => e.b.ins().bor(a, b),
            _ => e.b.ins().bxor(a, b),
        });
    }
    if dtype.is_float() {
        let ty = ty_of(e, a);
        return Ok(match op {
            Add => e.b.ins().fadd(a, b),
            Sub => e.b.ins().fsub(a, b),
            Mul => e.b.ins().fmul(a, b),
            Div => e.b.ins().fdiv(a, b),
            FloorDiv => {
                let quotient = e.b.ins().fdiv(a, b);
                e.b.ins().floor(quotient)
            }
            TruncDiv => {
                let quotient = e.b.ins().fdiv(a, b);
                e.b.ins().trunc(quotient)
            }
            Remainder => {
                // a - floor(a / b) * b: the sign of the divisor, as Python.
                let quotient = e.b.ins().fdiv(a, b);
                let floored = e.b.ins().floor(quotient);
                let product = e.b.ins().fmul(floored, b);
                e.b.ins().fsub(a, product)
            }
            Pow => math(e, MathFn::Pow, &[a, b])?,
            Maximum => e.b.ins().fmax(a, b),
            Minimum => e.b.ins().fmin(a, b),
            Eq => e.b.ins().fcmp(FloatCC::Equal, a, b),
            Ne => e.b.ins().fcmp(FloatCC::NotEqual, a, b),
            Lt => e.b.ins().fcmp(FloatCC::LessThan, a, b),
            Le => e.b.ins().fcmp(FloatCC::LessThanOrEqual, a, b),
            Gt => e.b.ins().fcmp(FloatCC::GreaterThan, a, b),
            Ge => e.b.ins().fcmp(FloatCC::GreaterThanOrEqual, a, b),
            LogicalAnd | LogicalOr | LogicalXor => unreachable!("handled above: {ty}"),
        });
    }
    let unsigned = matches!(dtype, DType::U8 | DType::Bool);
    Ok(match op {
        Add => e.b.ins().iadd(a, b),
        Sub => e.b.ins().isub(a, b),
        Mul => e.b.ins().imul(a, b),
        Div => {
            return Err(CodegenError::Unsupported(
                "true division into an integer tensor".into(),
            ));
        }
        FloorDiv | TruncDiv | Remainder => integer_division(e, op, a, b, unsigned),
        Pow => {
            return Err(CodegenError::Unsupported(
                "integer pow of two tensors".into(),
            ));
        }
        Maximum if unsigned => e.b.ins().umax(a, b),
        Minimum if unsigned => e.b.ins().umin(a, b),
        Maximum => e.b.ins().smax(a, b),
        Minimum => e.b.ins().smin(a, b),
        Eq => e.b.ins().icmp(IntCC::Equal, a, b),
        Ne => e.b.ins().icmp(IntCC::NotEqual, a, b),
        Lt if unsigned => e.b.ins().icmp(IntCC::UnsignedLessThan, a, b),
        Le if unsigned => e.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, a, b),
        Gt if unsigned => e.b.ins().icmp(IntCC::UnsignedGreaterThan, a, b),
        Ge if unsigned => e.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, a, b),
        Lt => e.b.ins().icmp(IntCC::SignedLessThan, a, b),
        Le => e.b.ins().icmp(IntCC::SignedLessThanOrEqual, a, b),
        Gt => e.b.ins().icmp(IntCC::SignedGreaterThan, a, b),
        Ge => e.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, a, b),
        LogicalAnd | LogicalOr | LogicalXor => unreachable!("handled above"),
    })
}

/// Floor division and Python remainder of integers. Division by zero is an
/// error, as in PyTorch; `MIN / -1` wraps instead of trapping.
fn integer_division(
    e: &mut Emitter<'_, '_, '_>,
    op: BinaryOp,
    a: Value,
    b: Value,
    unsigned: bool,
) -> Value {
    let zero = e.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
    e.fail_if(zero, "integer division by zero".to_string());
    if unsigned {
        return match op {
            BinaryOp::FloorDiv | BinaryOp::TruncDiv => e.b.ins().udiv(a, b),
            _ => e.b.ins().urem(a, b),
        };
    }
    let ty = ty_of(e, a);
    let one = e.b.ins().iconst(ty, 1);
    // Dividing by -1 cannot trap this way: divide by 1 and negate.
    let minus_one = e.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
    let divisor = e.b.ins().select(minus_one, one, b);
    let quotient = e.b.ins().sdiv(a, divisor);
    let remainder = e.b.ins().srem(a, divisor);
    let negated = e.b.ins().ineg(quotient);
    let quotient = e.b.ins().select(minus_one, negated, quotient);
    if op == BinaryOp::TruncDiv {
        return quotient;
    }
    // Round toward negative infinity: when the remainder is non-zero and its
    // sign differs from the divisor's, step the quotient down and the
    // remainder over.
    let nonzero = e.b.ins().icmp_imm_s(IntCC::NotEqual, remainder, 0);
    let signs = e.b.ins().bxor(remainder, b);
    let differ = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, signs, 0);
    let adjust = e.b.ins().band(nonzero, differ);
    match op {
        BinaryOp::FloorDiv => {
            let stepped = e.b.ins().isub(quotient, one);
            e.b.ins().select(adjust, stepped, quotient)
        }
        _ => {
            let moved = e.b.ins().iadd(remainder, b);
            e.b.ins().select(adjust, moved, remainder)
        }
    }
}

/// `x ** exponent` for a scalar exponent, with the exact forms PyTorch uses
/// for small integer exponents.
pub(crate) fn pow_scalar(
    e: &mut Emitter<'_, '_, '_>,
    x: Value,
    exponent: Scalar,
    dtype: DType,
) -> Result<Value, CodegenError> {
    let ty = ty_of(e, x);
    let value = exponent.as_f64();
    if dtype.is_float() {
        return Ok(match value {
            2.0 => e.b.ins().fmul(x, x),
            1.0 => x,
            0.5 => e.b.ins().sqrt(x),
            3.0 => {
                let square = e.b.ins().fmul(x, x);
                e.b.ins().fmul(square, x)
            }
            _ => {
                let exponent = fconst(e, ty, value);
                math(e, MathFn::Pow, &[x, exponent])?
            }
        });
    }
    let power = u32::try_from(exponent.as_i64())
        .ok()
        .filter(|&p| f64::from(p) == value && p <= 64)
        .ok_or_else(|| {
            CodegenError::Unsupported(format!("integer pow with exponent {exponent}"))
        })?;
    let mut result = e.b.ins().iconst(ty, 1);
    for _ in 0..power {
        result = e.b.ins().imul(result, x);
    }
    Ok(result)
}

/// Whether a binary op with these operands is computed in floats: the
/// compute type of a comparison is its operands' promoted type.
pub(crate) fn promote(a: DType, b: DType) -> DType {
    match (a.is_float(), b.is_float()) {
        (true, true) => {
            if a.size() >= b.size() {
                a
            } else {
                b
            }
        }
        (true, false) => a,
        (false, true) => b,
        (false, false) if a == b => a,
        (false, false) => DType::I64,
    }
}
