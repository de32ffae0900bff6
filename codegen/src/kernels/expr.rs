//! The CPU's lowering of the IR's scalar expressions
//! ([`ptec_ir::ops::expr`]): each primitive as Cranelift instructions on one
//! element of a compute type, or on four f32 lanes at once. Elementwise
//! semantics live in the IR; this file only knows the primitives.
//!
//! Numbers are values of the compute type (booleans as bytes 0 or 1), or
//! f32x4 vectors; the booleans comparisons give are bytes 0 or 1, or lane
//! masks (all ones or all zeros) for vectors. Math functions call the C
//! library but for f32 `exp`, `erf` and `tanh`, which ptec computes itself
//! in vectors too (`exp.rs`, `erf_tanh.rs`); integer division checks its divisor, and integer powers
//! loop; none of those has a vector form ([`Expr::is_scalar_only`]). A let's value is
//! computed once and read wherever its body reads the local.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{BlockArg, Endianness, InstBuilder, MemFlagsData, Type, Value, types};
use ptec_ir::ops::elementwise::MathFn;
use ptec_ir::ops::expr::{Binary, Comparison, Expr, Unary};
use ptec_ir::{DType, Scalar};

use super::erf_tanh::{erf_f32, tanh_f32};
use super::exp::exp_f32;
use crate::emit::Emitter;
use crate::error::CodegenError;

/// What an expression is lowered to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lowering {
    /// The element type numbers are computed in (half precision already
    /// widened: [`DType::arithmetic`]).
    pub compute: DType,
    /// The Cranelift type of a number: the compute type's, or f32x4.
    pub ty: Type,
}

/// `expr` of `operands` (numbers of `at.ty`).
pub(crate) fn lower(
    e: &mut Emitter<'_, '_, '_>,
    expr: &Expr,
    operands: &[Value],
    at: Lowering,
) -> Result<Value, CodegenError> {
    let mut scope = Scope {
        operands,
        locals: Vec::new(),
        at,
    };
    scope.lower(e, expr)
}

/// What the parts of an expression are lowered with: its operands, the
/// values of the enclosing lets (innermost last) and the types.
struct Scope<'o> {
    operands: &'o [Value],
    locals: Vec<Value>,
    at: Lowering,
}

impl Scope<'_> {
    fn lower(&mut self, e: &mut Emitter<'_, '_, '_>, expr: &Expr) -> Result<Value, CodegenError> {
        let at = self.at;
        match expr {
            Expr::Operand(index) => self.operands.get(*index).copied().ok_or_else(|| {
                e.unsupported(format!(
                    "an expression reading operand {index} of {}",
                    self.operands.len()
                ))
            }),
            Expr::Constant(value) => constant(e, *value, at),
            Expr::Unary(op, x) => {
                let x = self.lower(e, x)?;
                unary(e, *op, x, at)
            }
            Expr::Binary(op, a, b) => {
                let a = self.lower(e, a)?;
                let b = self.lower(e, b)?;
                binary(e, *op, a, b, at)
            }
            Expr::Select(parts) => {
                let [condition, a, b] = parts.as_ref();
                let condition = self.lower(e, condition)?;
                let a = self.lower(e, a)?;
                let b = self.lower(e, b)?;
                Ok(select_lanes(e, condition, a, b))
            }
            Expr::Math(function, args) => {
                let vector_form = function.has_vector_form() && at.compute == DType::F32;
                if !at.compute.is_float() || (at.ty.is_vector() && !vector_form) {
                    let symbol = function.c_symbol(false);
                    return Err(e.unsupported(format!("{symbol} of {} elements", at.ty)));
                }
                let args = args
                    .iter()
                    .map(|arg| self.lower(e, arg))
                    .collect::<Result<Vec<_>, _>>()?;
                math(e, *function, &args)
            }
            Expr::Let(parts) => {
                let [value, body] = parts.as_ref();
                let value = self.lower(e, value)?;
                self.locals.push(value);
                let result = self.lower(e, body);
                self.locals.pop();
                result
            }
            Expr::Local => self
                .locals
                .last()
                .copied()
                .ok_or_else(|| e.unsupported("an expression reading a local outside any let")),
        }
    }
}

/// `function` of `args`: ptec's own exponential, erf and tanh for f32 numbers (one or a
/// vector of them), the C library's function otherwise.
pub(crate) fn math(
    e: &mut Emitter<'_, '_, '_>,
    function: MathFn,
    args: &[Value],
) -> Result<Value, CodegenError> {
    let own = |x: &Value| e.b.func.dfg.value_type(*x).lane_type() == types::F32;
    match (function, args) {
        (MathFn::Exp, [x]) if own(x) => Ok(exp_f32(e, *x)),
        (MathFn::Erf, [x]) if own(x) => Ok(erf_f32(e, *x)),
        (MathFn::Tanh, [x]) if own(x) => Ok(tanh_f32(e, *x)),
        _ => e.call_math(function, args),
    }
}

/// A scalar as a number of the compute type, converted as PyTorch converts
/// a scalar ([`Emitter::constant`]); splat across lanes for vectors.
pub(crate) fn constant(
    e: &mut Emitter<'_, '_, '_>,
    value: Scalar,
    at: Lowering,
) -> Result<Value, CodegenError> {
    if at.compute.is_float() {
        Ok(fconst(e, at.ty, value.as_f64()))
    } else {
        e.constant(at.compute, value)
    }
}

fn unary(
    e: &mut Emitter<'_, '_, '_>,
    op: Unary,
    x: Value,
    at: Lowering,
) -> Result<Value, CodegenError> {
    let float = at.compute.is_float();
    Ok(match op {
        Unary::Neg if float => e.b.ins().fneg(x),
        Unary::Neg => e.b.ins().ineg(x),
        Unary::Abs if float => e.b.ins().fabs(x),
        Unary::Abs => e.b.ins().iabs(x),
        Unary::Sqrt if float => e.b.ins().sqrt(x),
        Unary::Sqrt => return Err(e.unsupported(format!("the square root of {}", at.compute))),
        Unary::Floor if float => e.b.ins().floor(x),
        Unary::Ceil if float => e.b.ins().ceil(x),
        Unary::Round if float => e.b.ins().nearest(x),
        Unary::Trunc if float => e.b.ins().trunc(x),
        // Integers are their own roundings.
        Unary::Floor | Unary::Ceil | Unary::Round | Unary::Trunc => x,
        Unary::IsNan if float => e.b.ins().fcmp(FloatCC::Unordered, x, x),
        Unary::IsNan => e.b.ins().iconst(types::I8, 0),
        Unary::NonZero if float => {
            let zero = fconst(e, at.ty, 0.0);
            e.b.ins().fcmp(FloatCC::NotEqual, x, zero)
        }
        // A boolean number already is its truth.
        Unary::NonZero if at.compute == DType::Bool => x,
        Unary::NonZero => e.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
        Unary::Not if at.ty.is_vector() => e.b.ins().bnot(x),
        Unary::Not => e.b.ins().bxor_imm_u(x, 1),
        Unary::FromBool if float => {
            let (one, zero) = (fconst(e, at.ty, 1.0), fconst(e, at.ty, 0.0));
            select_lanes(e, x, one, zero)
        }
        Unary::FromBool if at.ty == types::I8 => x,
        Unary::FromBool => e.b.ins().uextend(at.ty, x),
        Unary::BitNot if float => {
            return Err(e.unsupported(format!("bitwise not of {}", at.compute)));
        }
        // A bool number is 0 or 1.
        Unary::BitNot if at.compute == DType::Bool => e.b.ins().bxor_imm_u(x, 1),
        Unary::BitNot => e.b.ins().bnot(x),
    })
}

fn binary(
    e: &mut Emitter<'_, '_, '_>,
    op: Binary,
    a: Value,
    b: Value,
    at: Lowering,
) -> Result<Value, CodegenError> {
    let float = at.compute.is_float();
    let unsigned = at.compute.is_unsigned();
    Ok(match op {
        Binary::Add if float => e.b.ins().fadd(a, b),
        Binary::Add => e.b.ins().iadd(a, b),
        Binary::Sub if float => e.b.ins().fsub(a, b),
        Binary::Sub => e.b.ins().isub(a, b),
        Binary::Mul if float => e.b.ins().fmul(a, b),
        Binary::Mul => e.b.ins().imul(a, b),
        Binary::Div if float => e.b.ins().fdiv(a, b),
        Binary::Div => {
            return Err(e.unsupported(format!("true division of {}", at.compute)));
        }
        // Cranelift's fmax and fmin give NaN when either operand is NaN.
        Binary::Maximum if float => e.b.ins().fmax(a, b),
        Binary::Minimum if float => e.b.ins().fmin(a, b),
        // The clamps of integers are their maximum and minimum (no NaN to
        // keep).
        Binary::Maximum | Binary::AtLeast if unsigned => e.b.ins().umax(a, b),
        Binary::Minimum | Binary::AtMost if unsigned => e.b.ins().umin(a, b),
        Binary::AtLeast if float => at_least(e, a, b),
        Binary::AtMost if float => at_most(e, a, b),
        Binary::Maximum | Binary::AtLeast => e.b.ins().smax(a, b),
        Binary::Minimum | Binary::AtMost => e.b.ins().smin(a, b),
        Binary::Compare(comparison) if float => e.b.ins().fcmp(float_condition(comparison), a, b),
        Binary::Compare(comparison) => {
            e.b.ins()
                .icmp(integer_condition(comparison, unsigned), a, b)
        }
        Binary::And => e.b.ins().band(a, b),
        Binary::Or => e.b.ins().bor(a, b),
        Binary::Xor => e.b.ins().bxor(a, b),
        Binary::FloorDiv
        | Binary::TruncDiv
        | Binary::Remainder
        | Binary::TruncRemainder
        | Binary::BitAnd
        | Binary::BitOr
        | Binary::BitXor
        | Binary::ShiftLeft
        | Binary::ShiftRight
        | Binary::Power
            if float =>
        {
            return Err(e.unsupported(format!("{op:?} of {} elements", at.compute)));
        }
        Binary::FloorDiv | Binary::TruncDiv | Binary::Remainder | Binary::TruncRemainder => {
            integer_division(e, op, a, b, unsigned)
        }
        Binary::BitAnd => e.b.ins().band(a, b),
        Binary::BitOr => e.b.ins().bor(a, b),
        Binary::BitXor => e.b.ins().bxor(a, b),
        // Cranelift takes shift amounts modulo the width.
        Binary::ShiftLeft => e.b.ins().ishl(a, b),
        Binary::ShiftRight if unsigned => e.b.ins().ushr(a, b),
        Binary::ShiftRight => e.b.ins().sshr(a, b),
        Binary::Power => integer_power(e, a, b),
    })
}

fn float_condition(comparison: Comparison) -> FloatCC {
    match comparison {
        Comparison::Eq => FloatCC::Equal,
        // True when either operand is NaN.
        Comparison::Ne => FloatCC::NotEqual,
        Comparison::Lt => FloatCC::LessThan,
        Comparison::Le => FloatCC::LessThanOrEqual,
        Comparison::Gt => FloatCC::GreaterThan,
        Comparison::Ge => FloatCC::GreaterThanOrEqual,
    }
}

fn integer_condition(comparison: Comparison, unsigned: bool) -> IntCC {
    match (comparison, unsigned) {
        (Comparison::Eq, _) => IntCC::Equal,
        (Comparison::Ne, _) => IntCC::NotEqual,
        (Comparison::Lt, true) => IntCC::UnsignedLessThan,
        (Comparison::Le, true) => IntCC::UnsignedLessThanOrEqual,
        (Comparison::Gt, true) => IntCC::UnsignedGreaterThan,
        (Comparison::Ge, true) => IntCC::UnsignedGreaterThanOrEqual,
        (Comparison::Lt, false) => IntCC::SignedLessThan,
        (Comparison::Le, false) => IntCC::SignedLessThanOrEqual,
        (Comparison::Gt, false) => IntCC::SignedGreaterThan,
        (Comparison::Ge, false) => IntCC::SignedGreaterThanOrEqual,
    }
}

/// A float constant of `ty` (a float type, or a vector of one, splat).
pub(crate) fn fconst(e: &mut Emitter<'_, '_, '_>, ty: Type, value: f64) -> Value {
    match ty {
        types::F64 => e.b.ins().f64const(value),
        types::F32 => e.b.ins().f32const(value as f32),
        _ => {
            let lane = fconst(e, ty.lane_type(), value);
            e.b.ins().splat(ty, lane)
        }
    }
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
    let ty = e.b.func.dfg.value_type(a);
    if ty.is_vector() {
        // The comparison's lanes are all ones or all zeros.
        let little = MemFlagsData::new().with_endianness(Endianness::Little);
        let mask = e.b.ins().bitcast(ty, little, condition);
        e.b.ins().bitselect(mask, a, b)
    } else {
        e.b.ins().select(condition, a, b)
    }
}

/// `base ** exponent` of integers by repeated squaring, wrapping: a loop
/// over the exponent's bits (read unsigned, so it ends for negative
/// exponents too, whose result the expression selects away).
fn integer_power(e: &mut Emitter<'_, '_, '_>, base: Value, exponent: Value) -> Value {
    let ty = e.b.func.dfg.value_type(base);
    let header = e.b.create_block();
    let body = e.b.create_block();
    let exit = e.b.create_block();
    for _ in 0..3 {
        e.b.append_block_param(header, ty);
    }
    let result = e.b.append_block_param(exit, ty);
    let one = e.b.ins().iconst(ty, 1);
    e.b.ins().jump(
        header,
        &[
            BlockArg::from(one),
            BlockArg::from(base),
            BlockArg::from(exponent),
        ],
    );
    e.b.switch_to_block(header);
    let [power, square, bits] = e.b.block_params(header) else {
        unreachable!("the header has three parameters");
    };
    let (power, square, bits) = (*power, *square, *bits);
    e.b.ins()
        .brif(bits, body, &[], exit, &[BlockArg::from(power)]);
    e.b.switch_to_block(body);
    let low = e.b.ins().band_imm_u(bits, 1);
    let product = e.b.ins().imul(power, square);
    let power = e.b.ins().select(low, product, power);
    let square = e.b.ins().imul(square, square);
    let bits = e.b.ins().ushr_imm_u(bits, 1);
    e.b.ins().jump(
        header,
        &[
            BlockArg::from(power),
            BlockArg::from(square),
            BlockArg::from(bits),
        ],
    );
    e.b.switch_to_block(exit);
    result
}

/// Floor division, truncating division, Python's remainder and C's
/// remainder of integers.
/// Division by zero is an error, as in PyTorch; `MIN / -1` wraps instead of
/// trapping.
fn integer_division(
    e: &mut Emitter<'_, '_, '_>,
    op: Binary,
    a: Value,
    b: Value,
    unsigned: bool,
) -> Value {
    let zero = e.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
    e.fail_if(zero, "integer division by zero".to_string());
    if unsigned {
        return match op {
            Binary::FloorDiv | Binary::TruncDiv => e.b.ins().udiv(a, b),
            _ => e.b.ins().urem(a, b),
        };
    }
    let ty = e.b.func.dfg.value_type(a);
    let one = e.b.ins().iconst(ty, 1);
    // Dividing by -1 cannot trap this way: divide by 1 and negate.
    let minus_one = e.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
    let divisor = e.b.ins().select(minus_one, one, b);
    let quotient = e.b.ins().sdiv(a, divisor);
    let remainder = e.b.ins().srem(a, divisor);
    let negated = e.b.ins().ineg(quotient);
    let quotient = e.b.ins().select(minus_one, negated, quotient);
    match op {
        Binary::TruncDiv => return quotient,
        Binary::TruncRemainder => return remainder,
        _ => {}
    }
    // Round toward negative infinity: when the remainder is non-zero and its
    // sign differs from the divisor's, step the quotient down and the
    // remainder over.
    let nonzero = e.b.ins().icmp_imm_s(IntCC::NotEqual, remainder, 0);
    let signs = e.b.ins().bxor(remainder, b);
    let differ = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, signs, 0);
    let adjust = e.b.ins().band(nonzero, differ);
    match op {
        Binary::FloorDiv => {
            let stepped = e.b.ins().isub(quotient, one);
            e.b.ins().select(adjust, stepped, quotient)
        }
        _ => {
            let moved = e.b.ins().iadd(remainder, b);
            e.b.ins().select(adjust, moved, remainder)
        }
    }
}
