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
    match expr {
        Expr::Operand(index) => operands.get(*index).cloned().ok_or_else(|| {
            refuse(format!(
                "an expression reading operand {index} of {}",
                operands.len()
            ))
        }),
        Expr::Constant(value) => scalar(*value, ty),
        Expr::Unary(op, x) => unary(*op, &lower(x, operands, ty)?, ty),
        Expr::Binary(op, a, b) => {
            binary(*op, &lower(a, operands, ty)?, &lower(b, operands, ty)?, ty)
        }
        Expr::Select(parts) => {
            let [condition, a, b] = parts.as_ref();
            let condition = lower(condition, operands, ty)?;
            let (a, b) = (lower(a, operands, ty)?, lower(b, operands, ty)?);
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
            let args = args
                .iter()
                .map(|arg| lower(arg, operands, ty))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(format!("{name}({})", args.join(", ")))
        }
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
    })
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
            if ty == Ty::Bool && ordered {
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
        Binary::FloorDiv | Binary::TruncDiv | Binary::Remainder => {
            return Err(refuse(
                "integer division, whose division by zero the CPU reports as an error and a shader cannot",
            ));
        }
    })
}
