//! Scalar expressions: what an elementwise function computes for one
//! element, written once in a small vocabulary of primitives that every
//! back end lowers (Cranelift instructions, WGSL expressions). An elementwise
//! function's definition composes these; a back end knows the primitives,
//! not the functions, so a new function built from them needs no back-end
//! code.
//!
//! An expression's operands arrive converted to the function's compute type
//! ("numbers"); comparisons give booleans. Primitives keep PyTorch's rules:
//! [`Binary::Maximum`] and [`Binary::Minimum`] propagate NaN, while the
//! clamps [`Binary::AtLeast`] and [`Binary::AtMost`] keep NaN inputs as
//! they are; integer arithmetic wraps; integer division by zero is an error
//! the back end reports (or refuses to compile). Bit operations work on
//! integers and on booleans held as numbers (0 or 1, where they are the
//! logical operations); shifts are defined for amounts from 0 to one less
//! than the compute type's width, and the functions that shift select
//! PyTorch's results for the other amounts around them.

use std::ops;

use super::elementwise::MathFn;
use crate::types::{DType, Scalar};

/// One element's computation.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// Operand `k` of the function, converted to the compute type.
    Operand(usize),
    /// A constant converted to the compute type as PyTorch converts a
    /// scalar: to nearest for floats; for integers truncated toward zero,
    /// then wrapped; for booleans, "not zero".
    Constant(Scalar),
    Unary(Unary, Box<Expr>),
    Binary(Binary, Box<Expr>, Box<Expr>),
    /// `condition ? a : b` (the condition a boolean).
    Select(Box<[Expr; 3]>),
    /// A function of the C math library on floats (and its counterpart in
    /// shaders).
    Math(MathFn, Vec<Expr>),
    /// `[value, body]`: `body`, in which [`Expr::Local`] is `value` (a
    /// number), computed once (a math call's result that the body reads
    /// several times). A `Local` is the innermost enclosing `Let`'s value,
    /// so functions bind only around parts that read no `Local` themselves
    /// (their operands and constants).
    Let(Box<[Expr; 2]>),
    /// The value of the innermost enclosing [`Expr::Let`].
    Local,
}

/// Primitives of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unary {
    Neg,
    Abs,
    /// Floats only.
    Sqrt,
    Floor,
    Ceil,
    /// To nearest, halves to even.
    Round,
    Trunc,
    /// Floats only; gives a boolean.
    IsNan,
    /// `x != 0` (NaN is not zero); gives a boolean.
    NonZero,
    /// Of a boolean.
    Not,
    /// A boolean as the number 0 or 1.
    FromBool,
    /// Integers: every bit flipped; booleans held as numbers: logical not.
    BitNot,
}

/// Primitives of two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    /// Floats only.
    Div,
    /// The larger operand, NaN when either is NaN (`torch.maximum`).
    Maximum,
    /// The smaller operand, NaN when either is NaN.
    Minimum,
    /// `x < bound ? bound : x`: a lower clamp that keeps NaN (floats).
    AtLeast,
    /// `x > bound ? bound : x`: an upper clamp that keeps NaN (floats).
    AtMost,
    /// A comparison in the compute type; gives a boolean (`Ne` is true
    /// when either operand is NaN, the others false).
    Compare(Comparison),
    /// Of booleans.
    And,
    Or,
    Xor,
    /// Integers only: division rounding toward negative infinity. A zero
    /// divisor is an error; `MIN / -1` wraps.
    FloorDiv,
    /// Integers only: division rounding toward zero, likewise.
    TruncDiv,
    /// Integers only: Python's remainder (the sign of the divisor), likewise.
    Remainder,
    /// Integers only: the remainder of truncating division (C's `%`, the
    /// sign of the dividend), likewise.
    TruncRemainder,
    /// Integers and booleans held as numbers: bitwise and, or, exclusive or.
    BitAnd,
    BitOr,
    BitXor,
    /// Integers only: `a << b`, wrapping, for `0 <= b < width`; other
    /// amounts give an unspecified value (never a trap).
    ShiftLeft,
    /// Integers only: `a >> b` (arithmetic for signed types) for
    /// `0 <= b < width`; other amounts likewise.
    ShiftRight,
    /// Integers only: `a ** b` by repeated squaring, wrapping, for `b >= 0`;
    /// negative exponents give an unspecified value (never a trap).
    Power,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// What an expression gives: a number of the compute type, or a boolean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExprType {
    Number,
    Bool,
}

impl Expr {
    pub fn ty(&self) -> ExprType {
        match self {
            Expr::Operand(_) | Expr::Constant(_) | Expr::Math(..) | Expr::Local => ExprType::Number,
            Expr::Unary(op, x) => match op {
                Unary::IsNan | Unary::NonZero | Unary::Not => ExprType::Bool,
                Unary::FromBool => ExprType::Number,
                _ => x.ty(),
            },
            Expr::Binary(op, a, _) => match op {
                Binary::Compare(_) | Binary::And | Binary::Or | Binary::Xor => ExprType::Bool,
                _ => a.ty(),
            },
            Expr::Select(parts) => parts[1].ty(),
            Expr::Let(parts) => parts[1].ty(),
        }
    }

    /// Whether the expression calls the math library, divides integers or
    /// raises them to a power, which have no vector form. `exp`, `erf` and
    /// `tanh` have one ([`MathFn::has_vector_form`]).
    pub fn is_scalar_only(&self) -> bool {
        match self {
            Expr::Operand(_) | Expr::Constant(_) | Expr::Local => false,
            Expr::Math(function, args) if function.has_vector_form() => {
                args.iter().any(Expr::is_scalar_only)
            }
            Expr::Math(..) => true,
            Expr::Unary(_, x) => x.is_scalar_only(),
            Expr::Binary(op, a, b) => {
                matches!(
                    op,
                    Binary::FloorDiv
                        | Binary::TruncDiv
                        | Binary::Remainder
                        | Binary::TruncRemainder
                        | Binary::Power
                ) || a.is_scalar_only()
                    || b.is_scalar_only()
            }
            Expr::Select(parts) => parts.iter().any(Expr::is_scalar_only),
            Expr::Let(parts) => parts.iter().any(Expr::is_scalar_only),
        }
    }

    /// The expression's value over f32 `operands`, computed as the IR
    /// defines each node in f32 (IEEE arithmetic rounded to nearest, `round`
    /// halves to even, the NaN-keeping bounds as the selects they are), or
    /// `None` when it holds a node outside that set (math calls, selects,
    /// comparisons, integer and boolean primitives, `torch.maximum`'s
    /// signed zeros) or reads an operand it is not given. Passes use it to
    /// prove two chains equal on every value an operand can take.
    pub fn eval_f32(&self, operands: &[f32]) -> Option<f32> {
        Some(match self {
            Expr::Operand(index) => *operands.get(*index)?,
            Expr::Constant(value) => value.as_f64() as f32,
            Expr::Unary(op, x) => {
                let x = x.eval_f32(operands)?;
                match op {
                    Unary::Neg => -x,
                    Unary::Abs => x.abs(),
                    Unary::Sqrt => x.sqrt(),
                    Unary::Floor => x.floor(),
                    Unary::Ceil => x.ceil(),
                    Unary::Round => x.round_ties_even(),
                    Unary::Trunc => x.trunc(),
                    _ => return None,
                }
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (a.eval_f32(operands)?, b.eval_f32(operands)?);
                match op {
                    Binary::Add => a + b,
                    Binary::Sub => a - b,
                    Binary::Mul => a * b,
                    Binary::Div => a / b,
                    Binary::AtLeast => match a < b {
                        true => b,
                        false => a,
                    },
                    Binary::AtMost => match a > b {
                        true => b,
                        false => a,
                    },
                    _ => return None,
                }
            }
            Expr::Select(_) | Expr::Math(..) | Expr::Let(_) | Expr::Local => return None,
        })
    }

    pub fn unary(op: Unary, x: Expr) -> Expr {
        Expr::Unary(op, Box::new(x))
    }

    pub fn binary(op: Binary, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    pub fn select(condition: Expr, a: Expr, b: Expr) -> Expr {
        Expr::Select(Box::new([condition, a, b]))
    }

    pub fn math(function: MathFn, args: Vec<Expr>) -> Expr {
        Expr::Math(function, args)
    }

    /// `body(Local)` with [`Expr::Local`] bound to `value`.
    pub fn bind(value: Expr, body: impl FnOnce(Expr) -> Expr) -> Expr {
        Expr::Let(Box::new([value, body(Expr::Local)]))
    }

    pub fn compare(comparison: Comparison, a: Expr, b: Expr) -> Expr {
        Expr::binary(Binary::Compare(comparison), a, b)
    }

    pub fn at_least(self, bound: Expr) -> Expr {
        Expr::binary(Binary::AtLeast, self, bound)
    }

    pub fn at_most(self, bound: Expr) -> Expr {
        Expr::binary(Binary::AtMost, self, bound)
    }

    pub fn maximum(self, other: Expr) -> Expr {
        Expr::binary(Binary::Maximum, self, other)
    }

    pub fn minimum(self, other: Expr) -> Expr {
        Expr::binary(Binary::Minimum, self, other)
    }
}

/// A float constant.
pub fn real(value: f64) -> Expr {
    Expr::Constant(Scalar::Float(value))
}

/// An integer constant.
pub fn integer(value: i64) -> Expr {
    Expr::Constant(Scalar::Int(value))
}

/// Zero of the compute type.
pub fn zero(compute: DType) -> Expr {
    if compute.is_float() {
        real(0.0)
    } else {
        integer(0)
    }
}

macro_rules! arithmetic {
    ($trait:ident, $method:ident, $primitive:ident) => {
        impl ops::$trait for Expr {
            type Output = Expr;
            fn $method(self, other: Expr) -> Expr {
                Expr::binary(Binary::$primitive, self, other)
            }
        }
    };
}

arithmetic!(Add, add, Add);
arithmetic!(Sub, sub, Sub);
arithmetic!(Mul, mul, Mul);
arithmetic!(Div, div, Div);

impl ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::unary(Unary::Neg, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_f32_nodes_as_the_ir_defines_them() {
        let x = || Expr::Operand(0);
        let eval = |expr: &Expr, x: f32| expr.eval_f32(&[x]);
        let round = Expr::unary(Unary::Round, x());
        assert_eq!(eval(&round, 2.5), Some(2.0));
        assert_eq!(
            eval(&round, -0.3).map(f32::to_bits),
            Some((-0.0f32).to_bits())
        );
        // The bounds keep NaN and the operand's zero when it is not beyond.
        let bounded = x().at_least(real(0.0)).at_most(real(6.0));
        assert!(eval(&bounded, f32::NAN).is_some_and(f32::is_nan));
        assert_eq!(
            eval(&bounded, -0.0).map(f32::to_bits),
            Some((-0.0f32).to_bits())
        );
        assert_eq!(eval(&bounded, -7.0), Some(0.0));
        assert_eq!(eval(&bounded, 7.0), Some(6.0));
        // A constant goes through f64 to f32, as the code generators take it.
        let scaled = x() * real(0.1) + integer(1);
        assert_eq!(eval(&scaled, 3.0), Some(3.0 * (0.1f64 as f32) + 1.0));
        // Nodes outside the set, and operands not given, give nothing.
        assert_eq!(eval(&x().maximum(real(0.0)), 1.0), None);
        let exp = Expr::math(MathFn::Exp, vec![x()]);
        assert_eq!(eval(&exp, 1.0), None);
        assert_eq!(Expr::Operand(1).eval_f32(&[1.0]), None);
    }
}
