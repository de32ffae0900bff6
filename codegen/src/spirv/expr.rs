//! The shaders' lowering of the IR's scalar expressions
//! ([`ptec_ir::ops::expr`]): each primitive as a WGSL expression of one
//! element, with the CPU's results for NaN and signed zeros (`nan_max`,
//! clamps that keep NaN, `is_nan` on the bits) and the prelude's math
//! helpers where WGSL's built-ins differ from torch. The counterpart of
//! `kernels/expr.rs`; elementwise semantics live in the IR.

use ptec_ir::ops::elementwise::ShaderMath;
use ptec_ir::ops::expr::{Binary, Comparison, Expr, Unary};

use super::wgsl::{Refusal, Ty, convert, helper, refuse, scalar};

/// `expr` of `operands` (expressions of type `ty`, the compute type), as a
/// WGSL expression of type `ty`, or `bool` for booleans.
pub(super) fn lower(expr: &Expr, operands: &[String], ty: Ty) -> Result<String, Refusal> {
    lower_in(expr, operands, &mut Vec::new(), ty)
}

/// `expr` within lets whose values are `locals` (innermost last). A WGSL
/// expression cannot bind a name, so a local is its value's text again
/// (drivers compute repeated pure expressions once).
fn lower_in(
    expr: &Expr,
    operands: &[String],
    locals: &mut Vec<String>,
    ty: Ty,
) -> Result<String, Refusal> {
    let mut part = |expr: &Expr| lower_in(expr, operands, locals, ty);
    match expr {
        Expr::Operand(index) => operands.get(*index).cloned().ok_or_else(|| {
            refuse(format!(
                "an expression reading operand {index} of {}",
                operands.len()
            ))
        }),
        Expr::Constant(value) => scalar(*value, ty),
        Expr::Unary(op, x) => unary(*op, &part(x)?, ty),
        Expr::Binary(op, a, b) => {
            let (a, b) = (part(a)?, part(b)?);
            binary(*op, &a, &b, ty)
        }
        Expr::Select(parts) => {
            let [condition, a, b] = parts.as_ref();
            let (condition, a, b) = (part(condition)?, part(a)?, part(b)?);
            Ok(format!("select({b}, {a}, {condition})"))
        }
        Expr::Math(function, args) => {
            if ty != Ty::F32 {
                return Err(refuse(format!("{function:?} of {} elements", ty.name())));
            }
            let name = match function.shader() {
                ShaderMath::Builtin(name) => name,
                ShaderMath::Helper(name) => helper(name)?,
            };
            let args = args.iter().map(part).collect::<Result<Vec<_>, _>>()?;
            Ok(format!("{name}({})", args.join(", ")))
        }
        Expr::Let(parts) => {
            let [value, body] = parts.as_ref();
            let value = part(value)?;
            locals.push(value);
            let body = lower_in(body, operands, locals, ty);
            locals.pop();
            body
        }
        Expr::Local => locals
            .last()
            .cloned()
            .ok_or_else(|| refuse("an expression reading a local outside any let")),
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

fn unary(op: Unary, x: &str, ty: Ty) -> Result<String, Refusal> {
    let float = ty == Ty::F32;
    Ok(match op {
        // Booleans are WGSL's `bool`, which has no arithmetic.
        Unary::Neg | Unary::Abs if ty == Ty::Bool => {
            return Err(refuse("arithmetic on bool elements"));
        }
        Unary::Neg => format!("(-{x})"),
        Unary::Abs => format!("abs({x})"),
        Unary::Sqrt if float => format!("sqrt({x})"),
        Unary::Sqrt => return Err(refuse(format!("square roots of {} elements", ty.name()))),
        Unary::Floor if float => format!("floor({x})"),
        Unary::Ceil if float => format!("ceil({x})"),
        // WGSL rounds halves to even, as torch.round.
        Unary::Round if float => format!("round({x})"),
        Unary::Trunc if float => format!("trunc({x})"),
        // Integers are their own roundings.
        Unary::Floor | Unary::Ceil | Unary::Round | Unary::Trunc => x.to_string(),
        Unary::IsNan if float => format!("is_nan({x})"),
        Unary::IsNan => "false".to_string(),
        Unary::NonZero => convert(x, ty, Ty::Bool),
        Unary::Not => format!("(!{x})"),
        Unary::FromBool => convert(x, Ty::Bool, ty),
        Unary::BitNot => match ty {
            Ty::F32 => return Err(refuse("bitwise not of f32 elements")),
            Ty::I32 => format!("(~{x})"),
            Ty::Bool => format!("(!{x})"),
        },
    })
}

/// Whether `operand` is the literal `0.0f` or `-0.0f`.
fn is_zero_literal(operand: &str) -> bool {
    matches!(operand.trim_matches(['(', ')']), "0.0f" | "-0.0f")
}

fn binary(op: Binary, a: &str, b: &str, ty: Ty) -> Result<String, Refusal> {
    let float = ty == Ty::F32;
    let infix = |symbol: &str| format!("({a} {symbol} {b})");
    Ok(match op {
        // Booleans are WGSL's `bool`, which has no arithmetic.
        Binary::Add
        | Binary::Sub
        | Binary::Mul
        | Binary::Maximum
        | Binary::Minimum
        | Binary::AtLeast
        | Binary::AtMost
            if ty == Ty::Bool =>
        {
            return Err(refuse("arithmetic on bool elements"));
        }
        Binary::Add => infix("+"),
        Binary::Sub => infix("-"),
        Binary::Mul if float && is_zero_literal(b) => {
            format!("{}({a}, {b})", helper("times_zero")?)
        }
        Binary::Mul if float && is_zero_literal(a) => {
            format!("{}({b}, {a})", helper("times_zero")?)
        }
        Binary::Mul => infix("*"),
        Binary::Div if float => infix("/"),
        Binary::Div => return Err(refuse(format!("true division of {} elements", ty.name()))),
        Binary::Maximum if float => format!("nan_max({a}, {b})"),
        Binary::Minimum if float => format!("nan_min({a}, {b})"),
        Binary::AtLeast if float => at_least(a, b),
        Binary::AtMost if float => at_most(a, b),
        // The clamps of integers are their maximum and minimum.
        Binary::Maximum | Binary::AtLeast => format!("max({a}, {b})"),
        Binary::Minimum | Binary::AtMost => format!("min({a}, {b})"),
        Binary::Compare(comparison) => {
            let symbol = match comparison {
                Comparison::Eq => "==",
                Comparison::Ne => "!=",
                Comparison::Lt => "<",
                Comparison::Le => "<=",
                Comparison::Gt => ">",
                Comparison::Ge => ">=",
            };
            // WGSL orders no bools: compare them as 0 and 1.
            let ordered = !matches!(comparison, Comparison::Eq | Comparison::Ne);
            if float && a == b && matches!(comparison, Comparison::Eq | Comparison::Ne) {
                // On the bits: a driver that assumes no NaN folds `x == x`.
                let nan = format!("is_nan({a})");
                match comparison {
                    Comparison::Eq => format!("(!{nan})"),
                    _ => nan,
                }
            } else if float && comparison == Comparison::Ne {
                // True when either is NaN, which devices' `!=` may not be.
                format!("(!({a} == {b}))")
            } else if ty == Ty::Bool && ordered {
                let (a, b) = (convert(a, ty, Ty::I32), convert(b, ty, Ty::I32));
                format!("({a} {symbol} {b})")
            } else {
                infix(symbol)
            }
        }
        Binary::And => infix("&&"),
        Binary::Or => infix("||"),
        Binary::Xor => infix("!="),
        // The CPU reports a zero divisor as an error; a shader cannot
        // report one.
        Binary::FloorDiv | Binary::TruncDiv | Binary::Remainder | Binary::TruncRemainder => {
            return Err(refuse(
                "integer division, whose division by zero the CPU reports as an error and a shader cannot",
            ));
        }
        Binary::BitAnd
        | Binary::BitOr
        | Binary::BitXor
        | Binary::ShiftLeft
        | Binary::ShiftRight
        | Binary::Power
            if float =>
        {
            return Err(refuse(format!("{op:?} of f32 elements")));
        }
        Binary::ShiftLeft | Binary::ShiftRight | Binary::Power if ty == Ty::Bool => {
            return Err(refuse(format!("{op:?} of bool elements")));
        }
        Binary::BitAnd => infix("&"),
        Binary::BitOr => infix("|"),
        // WGSL has no `^` of bools.
        Binary::BitXor if ty == Ty::Bool => infix("!="),
        Binary::BitXor => infix("^"),
        // i32 shifts right arithmetically; unsigned elements (u8) held in
        // an i32 are not negative. Amounts are taken modulo 32.
        Binary::ShiftLeft => format!("({a} << bitcast<u32>({b}))"),
        Binary::ShiftRight => format!("({a} >> bitcast<u32>({b}))"),
        Binary::Power => format!("{}({a}, {b})", helper("pow_i32")?),
    })
}
