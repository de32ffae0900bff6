//! Elementwise ops: a function applied to operands broadcast to the
//! output's shape ([`Elementwise`]). Each function ([`Func`]) is defined
//! here once: its name, the types it computes in, and what it computes as a
//! scalar expression ([`Expr`]) that both back ends lower. To add a unary
//! function, add a [`UnaryOp`] variant and its arms below (name and
//! expression; ATen's `aten::NAME.out` imports it when its ATen name is its
//! own, and Vulkan's `aten.NAME.default` likewise). A function computes in
//! the type PyTorch promotes its operands to ([`Func::types`]), and its
//! result is cast to the output's type where PyTorch allows the cast.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::expr::{Binary, Comparison, Expr, Unary, integer, real, zero};
use super::promotion::{Operand, can_cast, result_type};
use super::{Expected, LayoutRule, OpDef, OpError, ShapeContext, Slot, broadcast};
use crate::bounds::{Bounds, is_integer, monotone};
use crate::graph::ValueId;
use crate::op::Op;
use crate::types::{DType, Real, Scalar, TensorType};

/// GELU's tanh form, `x/2 * (1 + tanh(SQRT_2_OVER_PI * (x + GELU_CUBIC x^3)))`:
/// its constants, which code generators that compute it themselves share.
pub const GELU_CUBIC: f64 = 0.044715;
pub const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

/// Functions of the C math library that elementwise functions call, on f32
/// or f64, and their counterparts in shaders. Their accuracy is the C
/// library's (glibc documents at most 1-2 ulp for the single-precision ones
/// on x86_64 and aarch64; `fmod` is exact), but for f32 `exp`, which the CPU
/// back end computes itself (within 1 ulp).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Exp,
    Log,
    Log2,
    Log10,
    Tanh,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Erf,
    Expm1,
    Log1p,
    Pow,
    /// `atan2(y, x)`.
    Atan2,
    /// C's `fmod`: the remainder of truncating division, exact, with the
    /// dividend's sign.
    Fmod,
}

/// How a shader computes a [`MathFn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShaderMath {
    /// A WGSL built-in function of this name.
    Builtin(&'static str),
    /// A helper function of the shader prelude (the shader back end defines
    /// it), for functions WGSL lacks or whose built-in differs from torch.
    Helper(&'static str),
}

impl MathFn {
    /// Whether the CPU back end computes the function itself in f32, four
    /// lanes at a time as well as one, rather than calling the C library.
    pub fn has_vector_form(self) -> bool {
        matches!(self, MathFn::Exp | MathFn::Erf | MathFn::Tanh)
    }

    /// The C symbol for f32 (`wide` false) or f64 arguments.
    pub fn c_symbol(self, wide: bool) -> &'static str {
        let (single, double) = match self {
            MathFn::Exp => ("expf", "exp"),
            MathFn::Log => ("logf", "log"),
            MathFn::Log2 => ("log2f", "log2"),
            MathFn::Log10 => ("log10f", "log10"),
            MathFn::Tanh => ("tanhf", "tanh"),
            MathFn::Sin => ("sinf", "sin"),
            MathFn::Cos => ("cosf", "cos"),
            MathFn::Tan => ("tanf", "tan"),
            MathFn::Asin => ("asinf", "asin"),
            MathFn::Acos => ("acosf", "acos"),
            MathFn::Atan => ("atanf", "atan"),
            MathFn::Sinh => ("sinhf", "sinh"),
            MathFn::Cosh => ("coshf", "cosh"),
            MathFn::Asinh => ("asinhf", "asinh"),
            MathFn::Acosh => ("acoshf", "acosh"),
            MathFn::Atanh => ("atanhf", "atanh"),
            MathFn::Erf => ("erff", "erf"),
            MathFn::Expm1 => ("expm1f", "expm1"),
            MathFn::Log1p => ("log1pf", "log1p"),
            MathFn::Pow => ("powf", "pow"),
            MathFn::Atan2 => ("atan2f", "atan2"),
            MathFn::Fmod => ("fmodf", "fmod"),
        };
        if wide { double } else { single }
    }

    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow | MathFn::Atan2 | MathFn::Fmod => 2,
            _ => 1,
        }
    }

    pub fn shader(self) -> ShaderMath {
        match self {
            MathFn::Exp => ShaderMath::Builtin("exp"),
            MathFn::Log => ShaderMath::Builtin("log"),
            MathFn::Log2 => ShaderMath::Builtin("log2"),
            MathFn::Log10 => ShaderMath::Helper("log10_f32"),
            MathFn::Tanh => ShaderMath::Builtin("tanh"),
            MathFn::Sin => ShaderMath::Builtin("sin"),
            MathFn::Cos => ShaderMath::Builtin("cos"),
            MathFn::Tan => ShaderMath::Builtin("tan"),
            MathFn::Asin => ShaderMath::Builtin("asin"),
            MathFn::Acos => ShaderMath::Builtin("acos"),
            MathFn::Atan => ShaderMath::Helper("atan_f32"),
            // The helpers compute as C does where the built-ins lose NaN,
            // cancel near zero or overflow early.
            MathFn::Sinh => ShaderMath::Helper("sinh_f32"),
            MathFn::Cosh => ShaderMath::Helper("cosh_f32"),
            MathFn::Asinh => ShaderMath::Helper("asinh_f32"),
            MathFn::Acosh => ShaderMath::Helper("acosh_f32"),
            MathFn::Atanh => ShaderMath::Helper("atanh_f32"),
            MathFn::Erf => ShaderMath::Helper("erf_f32"),
            MathFn::Expm1 => ShaderMath::Helper("expm1_f32"),
            MathFn::Log1p => ShaderMath::Helper("log1p_f32"),
            // torch's results for negative bases and integral exponents.
            MathFn::Pow => ShaderMath::Helper("pow_f32"),
            MathFn::Atan2 => ShaderMath::Helper("atan2_f32"),
            // WGSL's `%` of floats divides, so it is not exact.
            MathFn::Fmod => ShaderMath::Helper("fmod_f32"),
        }
    }
}

/// Functions of one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Abs,
    Relu,
    Sigmoid,
    Tanh,
    Exp,
    Log,
    Log2,
    Log10,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Erf,
    /// GELU with erf.
    Gelu,
    /// GELU with the tanh approximation.
    GeluTanh,
    Hardswish,
    Hardsigmoid,
    Silu,
    Floor,
    Ceil,
    Round,
    Trunc,
    Sign,
    Expm1,
    Log1p,
    LogicalNot,
    IsNan,
    IsInf,
    BitwiseNot,
}

impl UnaryOp {
    pub const ALL: [UnaryOp; 40] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Relu,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Log2,
        UnaryOp::Log10,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Reciprocal,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Erf,
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
        UnaryOp::Hardswish,
        UnaryOp::Hardsigmoid,
        UnaryOp::Silu,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Trunc,
        UnaryOp::Sign,
        UnaryOp::Expm1,
        UnaryOp::Log1p,
        UnaryOp::LogicalNot,
        UnaryOp::IsNan,
        UnaryOp::IsInf,
        UnaryOp::BitwiseNot,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Relu => "relu",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log10 => "log10",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Reciprocal => "reciprocal",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
            UnaryOp::Asin => "asin",
            UnaryOp::Acos => "acos",
            UnaryOp::Atan => "atan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Asinh => "asinh",
            UnaryOp::Acosh => "acosh",
            UnaryOp::Atanh => "atanh",
            UnaryOp::Erf => "erf",
            UnaryOp::Gelu => "gelu",
            UnaryOp::GeluTanh => "gelu_tanh",
            UnaryOp::Hardswish => "hardswish",
            UnaryOp::Hardsigmoid => "hardsigmoid",
            UnaryOp::Silu => "silu",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Sign => "sign",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Log1p => "log1p",
            UnaryOp::LogicalNot => "logical_not",
            UnaryOp::IsNan => "isnan",
            UnaryOp::IsInf => "isinf",
            UnaryOp::BitwiseNot => "bitwise_not",
        }
    }

    /// The name of the ATen operator that is exactly this function, taking
    /// `(self, *, out)`: `aten::NAME.out` in programs, `aten.NAME.default`
    /// in Vulkan graphs. `None` for functions ATen spells otherwise (GELU's
    /// approximation is an argument).
    pub fn aten_name(self) -> Option<&'static str> {
        match self {
            UnaryOp::Gelu | UnaryOp::GeluTanh => None,
            other => Some(other.name()),
        }
    }

    /// Whether the function gives a bool whatever its operand is.
    fn is_predicate(self) -> bool {
        matches!(self, UnaryOp::LogicalNot | UnaryOp::IsNan | UnaryOp::IsInf)
    }

    /// Whether integer and bool operands compute in the default float type
    /// (PyTorch's "floating" functions); the others compute in their
    /// operand's type.
    fn promotes_to_float(self) -> bool {
        use UnaryOp::*;
        matches!(
            self,
            Sigmoid
                | Tanh
                | Exp
                | Log
                | Log2
                | Log10
                | Sqrt
                | Rsqrt
                | Reciprocal
                | Sin
                | Cos
                | Tan
                | Asin
                | Acos
                | Atan
                | Sinh
                | Cosh
                | Asinh
                | Acosh
                | Atanh
                | Erf
                | Expm1
                | Log1p
        )
    }

    /// What the function computes of `x` in `compute`.
    fn expr(self, x: Expr, compute: DType) -> Result<Expr, Undefined> {
        use UnaryOp::*;
        let undefined = || Undefined {
            function: self.name(),
            compute,
        };
        match self {
            LogicalNot => return Ok(Expr::compare(Comparison::Eq, x, zero(compute))),
            // Integers are neither NaN nor infinite (IsNan of them is false).
            IsNan => return Ok(Expr::unary(Unary::IsNan, x)),
            IsInf if !compute.is_float() => return Ok(Expr::unary(Unary::IsNan, x)),
            IsInf => {
                let magnitude = Expr::unary(Unary::Abs, x);
                return Ok(Expr::compare(
                    Comparison::Eq,
                    magnitude,
                    real(f64::INFINITY),
                ));
            }
            _ => {}
        }
        if compute == DType::Bool {
            // PyTorch has no arithmetic on bools: the sign of a bool is
            // itself, and bitwise not is logical not.
            return match self {
                Sign => Ok(x),
                BitwiseNot => Ok(Expr::unary(Unary::BitNot, x)),
                _ => Err(undefined()),
            };
        }
        if !compute.is_float() {
            return match self {
                Neg => Ok(-x),
                Abs if compute.is_unsigned() => Ok(x),
                Abs => Ok(Expr::unary(Unary::Abs, x)),
                Relu => Ok(x.maximum(integer(0))),
                Sign => Ok(sign(x, compute)),
                Floor | Ceil | Round | Trunc => Ok(x),
                BitwiseNot => Ok(Expr::unary(Unary::BitNot, x)),
                _ => Err(undefined()),
            };
        }
        let math = |function, x| Expr::math(function, vec![x]);
        Ok(match self {
            Neg => -x,
            Abs => Expr::unary(Unary::Abs, x),
            Relu => x.at_least(real(0.0)),
            Sigmoid => sigmoid(x),
            Tanh => math(MathFn::Tanh, x),
            Exp => math(MathFn::Exp, x),
            Log => math(MathFn::Log, x),
            Log2 => math(MathFn::Log2, x),
            Log10 => math(MathFn::Log10, x),
            Sqrt => Expr::unary(Unary::Sqrt, x),
            Rsqrt => real(1.0) / Expr::unary(Unary::Sqrt, x),
            Reciprocal => real(1.0) / x,
            Sin => math(MathFn::Sin, x),
            Cos => math(MathFn::Cos, x),
            Tan => math(MathFn::Tan, x),
            Asin => math(MathFn::Asin, x),
            Acos => math(MathFn::Acos, x),
            Atan => math(MathFn::Atan, x),
            Sinh => math(MathFn::Sinh, x),
            Cosh => math(MathFn::Cosh, x),
            Asinh => math(MathFn::Asinh, x),
            Acosh => math(MathFn::Acosh, x),
            Atanh => math(MathFn::Atanh, x),
            Erf => math(MathFn::Erf, x),
            // x/2 * (1 + erf(x / sqrt(2)))
            Gelu => {
                let erf = math(
                    MathFn::Erf,
                    x.clone() * real(std::f64::consts::FRAC_1_SQRT_2),
                );
                (x * real(0.5)) * (real(1.0) + erf)
            }
            // x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
            GeluTanh => {
                let cube = (x.clone() * x.clone()) * x.clone();
                let inner = x.clone() + cube * real(GELU_CUBIC);
                let tanh = math(MathFn::Tanh, inner * real(SQRT_2_OVER_PI));
                (x * real(0.5)) * (real(1.0) + tanh)
            }
            Hardswish => x.clone() * hardsigmoid(x),
            Hardsigmoid => hardsigmoid(x),
            Silu => x.clone() * sigmoid(x),
            Floor => Expr::unary(Unary::Floor, x),
            Ceil => Expr::unary(Unary::Ceil, x),
            Round => Expr::unary(Unary::Round, x),
            Trunc => Expr::unary(Unary::Trunc, x),
            Sign => sign(x, compute),
            Expm1 => math(MathFn::Expm1, x),
            Log1p => math(MathFn::Log1p, x),
            BitwiseNot => return Err(undefined()),
            LogicalNot | IsNan | IsInf => unreachable!("returned above"),
        })
    }
}

/// `(x > 0) - (x < 0)`: 0 for NaN and both zeros, as PyTorch's (ExecuTorch's
/// portable kernel keeps NaN).
fn sign(x: Expr, compute: DType) -> Expr {
    let positive = Expr::compare(Comparison::Gt, x.clone(), zero(compute));
    let negative = Expr::compare(Comparison::Lt, x, zero(compute));
    Expr::unary(Unary::FromBool, positive) - Expr::unary(Unary::FromBool, negative)
}

/// `1 / (1 + exp(-x))`.
fn sigmoid(x: Expr) -> Expr {
    real(1.0) / (real(1.0) + Expr::math(MathFn::Exp, vec![-x]))
}

/// `min(max(x + 3, 0), 6) / 6`.
fn hardsigmoid(x: Expr) -> Expr {
    (x + real(3.0)).at_least(real(0.0)).at_most(real(6.0)) / real(6.0)
}

/// Functions of two operands (broadcast against each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `torch.div(rounding_mode="floor")`.
    FloorDiv,
    /// `torch.div(rounding_mode="trunc")`.
    TruncDiv,
    /// Python-style remainder: the sign of the divisor.
    Remainder,
    /// C-style remainder: the sign of the dividend.
    Fmod,
    Pow,
    Atan2,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    /// `a << b`: 0 for amounts below 0 or not below the width.
    LeftShift,
    /// `a >> b`, arithmetic for signed types: amounts below 0 or not below
    /// the width shift every bit out (the sign fills signed types).
    RightShift,
}

impl BinaryOp {
    pub const ALL: [BinaryOp; 26] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::FloorDiv,
        BinaryOp::TruncDiv,
        BinaryOp::Remainder,
        BinaryOp::Fmod,
        BinaryOp::Pow,
        BinaryOp::Atan2,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::LogicalAnd,
        BinaryOp::LogicalOr,
        BinaryOp::LogicalXor,
        BinaryOp::BitwiseAnd,
        BinaryOp::BitwiseOr,
        BinaryOp::BitwiseXor,
        BinaryOp::LeftShift,
        BinaryOp::RightShift,
    ];

    /// The name of the tensor-tensor form; the tensor-scalar form is
    /// [`BinaryOp::scalar_name`], the scalar-tensor one
    /// [`BinaryOp::reversed_name`].
    pub fn name(self) -> &'static str {
        self.names().0
    }

    pub fn scalar_name(self) -> &'static str {
        self.names().1
    }

    pub fn reversed_name(self) -> &'static str {
        self.names().2
    }

    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            BinaryOp::Add => ("add", "add_scalar", "radd"),
            BinaryOp::Sub => ("sub", "sub_scalar", "rsub"),
            BinaryOp::Mul => ("mul", "mul_scalar", "rmul"),
            BinaryOp::Div => ("div", "div_scalar", "rdiv"),
            BinaryOp::FloorDiv => ("floor_div", "floor_div_scalar", "rfloor_div"),
            BinaryOp::TruncDiv => ("trunc_div", "trunc_div_scalar", "rtrunc_div"),
            BinaryOp::Remainder => ("remainder", "remainder_scalar", "rremainder"),
            BinaryOp::Fmod => ("fmod", "fmod_scalar", "rfmod"),
            BinaryOp::Pow => ("pow", "pow_scalar", "rpow"),
            BinaryOp::Atan2 => ("atan2", "atan2_scalar", "ratan2"),
            BinaryOp::Maximum => ("maximum", "maximum_scalar", "rmaximum"),
            BinaryOp::Minimum => ("minimum", "minimum_scalar", "rminimum"),
            BinaryOp::Eq => ("eq", "eq_scalar", "req"),
            BinaryOp::Ne => ("ne", "ne_scalar", "rne"),
            BinaryOp::Lt => ("lt", "lt_scalar", "rlt"),
            BinaryOp::Le => ("le", "le_scalar", "rle"),
            BinaryOp::Gt => ("gt", "gt_scalar", "rgt"),
            BinaryOp::Ge => ("ge", "ge_scalar", "rge"),
            BinaryOp::LogicalAnd => ("logical_and", "logical_and_scalar", "rlogical_and"),
            BinaryOp::LogicalOr => ("logical_or", "logical_or_scalar", "rlogical_or"),
            BinaryOp::LogicalXor => ("logical_xor", "logical_xor_scalar", "rlogical_xor"),
            BinaryOp::BitwiseAnd => ("bitwise_and", "bitwise_and_scalar", "rbitwise_and"),
            BinaryOp::BitwiseOr => ("bitwise_or", "bitwise_or_scalar", "rbitwise_or"),
            BinaryOp::BitwiseXor => ("bitwise_xor", "bitwise_xor_scalar", "rbitwise_xor"),
            BinaryOp::LeftShift => ("left_shift", "left_shift_scalar", "rleft_shift"),
            BinaryOp::RightShift => ("right_shift", "right_shift_scalar", "rright_shift"),
        }
    }

    /// Whether the result is a bool: comparisons and logical functions.
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(
            self,
            Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor
        )
    }

    /// Whether integer and bool operands compute in the default float type.
    fn promotes_to_float(self) -> bool {
        matches!(self, BinaryOp::Div | BinaryOp::Atan2)
    }

    /// `a op b` in `compute`.
    fn expr(self, a: Expr, b: Expr, compute: DType) -> Result<Expr, Undefined> {
        use BinaryOp::*;
        let float = compute.is_float();
        let boolean = compute == DType::Bool;
        let undefined = Err(Undefined {
            function: self.name(),
            compute,
        });
        let compare = |comparison| Expr::compare(comparison, a.clone(), b.clone());
        let logical = |op| {
            Expr::binary(
                op,
                Expr::unary(Unary::NonZero, a.clone()),
                Expr::unary(Unary::NonZero, b.clone()),
            )
        };
        Ok(match self {
            // Bools add as "or" and multiply as "and" (their maximum and
            // minimum likewise); PyTorch subtracts or divides no bools.
            Add | Maximum if boolean => Expr::binary(Binary::BitOr, a, b),
            Mul | Minimum if boolean => Expr::binary(Binary::BitAnd, a, b),
            Sub | FloorDiv | TruncDiv | Remainder | Fmod | Pow | LeftShift | RightShift
                if boolean =>
            {
                return undefined;
            }
            Add => a + b,
            Sub => a - b,
            Mul => a * b,
            Div if float => a / b,
            FloorDiv if float => floor_divide(a, b),
            TruncDiv if float => Expr::unary(Unary::Trunc, a / b),
            // fmod(a, b), moved by b when its sign differs from b's:
            // PyTorch's remainder, exact as fmod is.
            Remainder if float => Expr::bind(fmod(a, b.clone()), |fmod| {
                let moved = sign_differs(fmod.clone(), b.clone());
                Expr::select(moved, fmod.clone() + b, fmod)
            }),
            Fmod if float => fmod(a, b),
            Pow if float => Expr::math(MathFn::Pow, vec![a, b]),
            Atan2 if float => Expr::math(MathFn::Atan2, vec![a, b]),
            FloorDiv => Expr::binary(Binary::FloorDiv, a, b),
            TruncDiv => Expr::binary(Binary::TruncDiv, a, b),
            Remainder => Expr::binary(Binary::Remainder, a, b),
            Fmod => Expr::binary(Binary::TruncRemainder, a, b),
            Pow => integer_power(a, b, compute),
            Div | Atan2 => return undefined,
            Maximum => a.maximum(b),
            Minimum => a.minimum(b),
            Eq => compare(Comparison::Eq),
            Ne => compare(Comparison::Ne),
            Lt => compare(Comparison::Lt),
            Le => compare(Comparison::Le),
            Gt => compare(Comparison::Gt),
            Ge => compare(Comparison::Ge),
            LogicalAnd => logical(Binary::And),
            LogicalOr => logical(Binary::Or),
            LogicalXor => logical(Binary::Xor),
            BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift if float => {
                return undefined;
            }
            BitwiseAnd => Expr::binary(Binary::BitAnd, a, b),
            BitwiseOr => Expr::binary(Binary::BitOr, a, b),
            BitwiseXor => Expr::binary(Binary::BitXor, a, b),
            LeftShift => shift_left(a, b, compute),
            RightShift => shift_right(a, b, compute),
        })
    }
}

/// C's `fmod(a, b)`.
fn fmod(a: Expr, b: Expr) -> Expr {
    Expr::math(MathFn::Fmod, vec![a, b])
}

/// Whether a remainder `fmod` is not zero and its sign differs from the
/// divisor `b`'s: where a floored division differs from a truncated one.
fn sign_differs(fmod: Expr, b: Expr) -> Expr {
    let nonzero = Expr::compare(Comparison::Ne, fmod.clone(), real(0.0));
    let divisor_negative = Expr::compare(Comparison::Lt, b, real(0.0));
    let fmod_negative = Expr::compare(Comparison::Lt, fmod, real(0.0));
    let differ = Expr::binary(Binary::Xor, divisor_negative, fmod_negative);
    Expr::binary(Binary::And, nonzero, differ)
}

/// `a // b` of floats as PyTorch computes it (`div_floor_floating`): the
/// exact quotient `(a - fmod(a, b)) / b`, one less where the remainder's
/// sign differs from the divisor's, floored to the nearest integer; a zero
/// result takes the sign of `a / b`, and a zero divisor gives `a / b`.
fn floor_divide(a: Expr, b: Expr) -> Expr {
    let quotient = a.clone() / b.clone();
    let exact = Expr::bind(fmod(a.clone(), b.clone()), |fmod| {
        let div = (a - fmod.clone()) / b.clone();
        let moved = sign_differs(fmod, b.clone());
        Expr::select(moved, div.clone() - real(1.0), div)
    });
    let floored = Expr::bind(exact, |div| {
        let floor = Expr::unary(Unary::Floor, div.clone());
        let above_half = Expr::compare(Comparison::Gt, div.clone() - floor.clone(), real(0.5));
        let rounded = Expr::select(above_half, floor.clone() + real(1.0), floor);
        let nonzero = Expr::compare(Comparison::Ne, div, real(0.0));
        Expr::select(nonzero, rounded, quotient.clone() * real(0.0))
    });
    let by_zero = Expr::compare(Comparison::Eq, b, real(0.0));
    Expr::select(by_zero, quotient, floored)
}

/// `a ** b` of integers as PyTorch computes it: by repeated squaring,
/// wrapping; a negative exponent gives 1 for the base 1, -1 or 1 for the
/// base -1 (by the exponent's parity), 0 for any other base.
fn integer_power(a: Expr, b: Expr, compute: DType) -> Expr {
    let power = Expr::binary(Binary::Power, a.clone(), b.clone());
    if compute.is_unsigned() {
        return power;
    }
    let odd = Expr::compare(
        Comparison::Ne,
        Expr::binary(Binary::BitAnd, b.clone(), integer(1)),
        integer(0),
    );
    let of_minus_one = Expr::select(odd, integer(-1), integer(1));
    let is = |value| Expr::compare(Comparison::Eq, a.clone(), integer(value));
    let negative_power = Expr::select(
        is(1),
        integer(1),
        Expr::select(is(-1), of_minus_one, integer(0)),
    );
    let negative = Expr::compare(Comparison::Lt, b, integer(0));
    Expr::select(negative, negative_power, power)
}

/// The width of an integer type in bits.
fn bits(compute: DType) -> i64 {
    compute.size() as i64 * 8
}

/// Whether the shift amount `b` is below 0 (for signed types) or not below
/// `limit`.
fn shift_out_of_range(b: Expr, limit: i64, compute: DType) -> Expr {
    let above = Expr::compare(Comparison::Ge, b.clone(), integer(limit));
    if compute.is_unsigned() {
        return above;
    }
    let below = Expr::compare(Comparison::Lt, b, integer(0));
    Expr::binary(Binary::Or, below, above)
}

/// `a << b`, 0 when `b` is negative or not below the width (PyTorch's).
fn shift_left(a: Expr, b: Expr, compute: DType) -> Expr {
    let out = shift_out_of_range(b.clone(), bits(compute), compute);
    Expr::select(out, integer(0), Expr::binary(Binary::ShiftLeft, a, b))
}

/// `a >> b`; when `b` is negative or shifts every bit but the sign out
/// (PyTorch's limit: the width, less one for signed types), the shift by
/// that limit (0, or the sign filling every bit).
fn shift_right(a: Expr, b: Expr, compute: DType) -> Expr {
    let shifted = Expr::binary(Binary::ShiftRight, a.clone(), b.clone());
    if compute.is_unsigned() {
        let out = shift_out_of_range(b, bits(compute), compute);
        return Expr::select(out, integer(0), shifted);
    }
    let limit = bits(compute) - 1;
    let out = shift_out_of_range(b, limit, compute);
    let filled = Expr::binary(Binary::ShiftRight, a, integer(limit));
    Expr::select(out, filled, shifted)
}

/// A function that has no meaning in a compute type (the square root of
/// integers, bitwise operations of floats, arithmetic of bools PyTorch
/// refuses).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{function} does not compute in {compute}")]
pub struct Undefined {
    pub function: &'static str,
    pub compute: DType,
}

/// An elementwise function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    /// `f(x)`.
    Unary(UnaryOp),
    /// `a op (alpha * b)`; `alpha` only for add and sub.
    Binary { op: BinaryOp, alpha: Option<Scalar> },
    /// `x op scalar`.
    BinaryScalar { op: BinaryOp, scalar: Scalar },
    /// `scalar op (alpha * x)` (`torch.rsub`, `torch.pow(scalar, x)`).
    ScalarFirst {
        op: BinaryOp,
        scalar: Scalar,
        alpha: Option<Scalar>,
    },
    /// `min(max(x, min), max)`, either bound optional.
    Clamp {
        min: Option<Scalar>,
        max: Option<Scalar>,
    },
    /// `minimum(maximum(x, min), max)` of the operands `x`, then `min` when
    /// present, then `max` when present: NaN anywhere gives NaN.
    ClampTensor { min: bool, max: bool },
    /// `x > 0 ? x : slope * x`.
    LeakyRelu { slope: Real },
    /// `x > 0 ? scale * x : scale * alpha * (exp(input_scale * x) - 1)`.
    Elu {
        alpha: Real,
        scale: Real,
        input_scale: Real,
    },
    /// `log(z / (1 - z))` of `z`, `x` clamped to `[eps, 1 - eps]` when
    /// there is an `eps`.
    Logit { eps: Option<Real> },
    /// `a * sigmoid(b)`: the gated linear unit of the halves `a` and `b`.
    Glu,
    /// `condition ? a : b`.
    Where,
    /// `mask ? value : x` of the operands `x` and `mask` (a bool).
    MaskedFill { value: Scalar },
}

impl Func {
    /// What the result's elements are known to be from what the operands'
    /// are (f32 operands and result): rounding gives integers, a clamp its
    /// bounds, a product, sum or difference with a scalar and a sum of two
    /// operands their bounds' (each computed in f32, whose rounding keeps
    /// order). Nothing for the other functions.
    pub fn bounds(&self, operands: &[Bounds]) -> Bounds {
        let scalar = |scalar: &Scalar| scalar.as_f64() as f32;
        let bound = |value: Option<&Scalar>, default: f32| value.map_or(default, scalar);
        match (self, operands) {
            (Func::Unary(UnaryOp::Round), &[x]) => monotone(x, f32::round_ties_even, true),
            (Func::Clamp { min, max }, &[x]) => {
                let (low, high) = (
                    bound(min.as_ref(), f32::NEG_INFINITY),
                    bound(max.as_ref(), f32::INFINITY),
                );
                let exact = |limit: Option<&Scalar>| limit.is_none_or(|l| is_integer(scalar(l)));
                let integral = x.integral && exact(min.as_ref()) && exact(max.as_ref());
                match low.is_nan() || high.is_nan() || low > high {
                    true => Bounds::UNKNOWN,
                    false => monotone(x, |v| v.max(low).min(high), integral),
                }
            }
            (Func::BinaryScalar { op, scalar: s }, &[x]) => {
                let c = scalar(s);
                let integral = x.integral && is_integer(c);
                match op {
                    BinaryOp::Mul if c >= 0.0 => monotone(x, |v| v * c, integral),
                    BinaryOp::Mul if c < 0.0 => Bounds::new(x.high * c, x.low * c, integral),
                    BinaryOp::Add => monotone(x, |v| v + c, integral),
                    BinaryOp::Sub => monotone(x, |v| v - c, integral),
                    _ => Bounds::UNKNOWN,
                }
            }
            (
                Func::Binary {
                    op: BinaryOp::Add,
                    alpha: None,
                },
                &[a, b],
            ) => Bounds::new(a.low + b.low, a.high + b.high, a.integral && b.integral),
            _ => Bounds::UNKNOWN,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Func::Unary(op) => op.name(),
            Func::Binary { op, .. } => op.name(),
            Func::BinaryScalar { op, .. } => op.scalar_name(),
            Func::ScalarFirst { op, .. } => op.reversed_name(),
            Func::Clamp { .. } => "clamp",
            Func::ClampTensor { .. } => "clamp_tensor",
            Func::LeakyRelu { .. } => "leaky_relu",
            Func::Elu { .. } => "elu",
            Func::Logit { .. } => "logit",
            Func::Glu => "glu",
            Func::Where => "where",
            Func::MaskedFill { .. } => "masked_fill",
        }
    }

    /// How many operands the function takes.
    pub fn arity(&self) -> usize {
        match self {
            Func::Binary { .. } | Func::Glu | Func::MaskedFill { .. } => 2,
            Func::Where => 3,
            Func::ClampTensor { min, max } => 1 + usize::from(*min) + usize::from(*max),
            _ => 1,
        }
    }

    /// Whether the result is a bool whatever the operands are.
    fn is_predicate(&self) -> bool {
        match self {
            Func::Unary(op) => op.is_predicate(),
            Func::Binary { op, .. }
            | Func::BinaryScalar { op, .. }
            | Func::ScalarFirst { op, .. } => op.is_comparison(),
            _ => false,
        }
    }

    /// Whether the function computes in the type of its output, which is
    /// what a step of a fused kernel does (predicates cannot: they compute
    /// in their operands' type; `where` and `masked_fill` select rather than
    /// compute).
    pub fn is_fusable(&self) -> bool {
        !self.is_predicate() && !matches!(self, Func::Where | Func::MaskedFill { .. })
    }

    /// The operands and scalars that take part in type promotion, and
    /// whether integer and bool results promote further to the default
    /// float type.
    fn promotion<'o>(&self, inputs: &'o [Operand]) -> (&'o [Operand], Vec<Scalar>, bool) {
        match self {
            Func::Unary(op) => (inputs, Vec::new(), op.promotes_to_float()),
            Func::Binary { op, .. } => (inputs, Vec::new(), op.promotes_to_float()),
            Func::BinaryScalar { op, scalar } | Func::ScalarFirst { op, scalar, .. } => {
                (inputs, vec![*scalar], op.promotes_to_float())
            }
            Func::Clamp { min, max } => (inputs, min.iter().chain(max).copied().collect(), false),
            Func::Logit { .. } => (inputs, Vec::new(), true),
            // The condition and the mask do not promote; the slope and the
            // fill value take the tensor's type.
            Func::Where => (inputs.get(1..).unwrap_or_default(), Vec::new(), false),
            Func::MaskedFill { .. } => (inputs.get(..1).unwrap_or_default(), Vec::new(), false),
            Func::ClampTensor { .. } | Func::LeakyRelu { .. } | Func::Elu { .. } | Func::Glu => {
                (inputs, Vec::new(), false)
            }
        }
    }

    /// The type the function computes in (its operands are converted to
    /// it) and the type of its result (converted to the output's), for
    /// operands of `inputs`: PyTorch's, the operands' result type
    /// ([`result_type`]: 0-dim tensors and scalars promote only across
    /// categories), the default float type for integers given to a
    /// floating function; predicates compare in that type and give bools.
    /// Half-precision types stay as they are; back ends compute them in f32
    /// ([`DType::arithmetic`]).
    pub fn types(&self, inputs: &[Operand]) -> Result<(DType, DType), Undefined> {
        let (operands, scalars, to_float) = self.promotion(inputs);
        let promoted = result_type(operands, &scalars).ok_or(Undefined {
            function: self.name(),
            compute: DType::Bool,
        })?;
        let compute = if to_float && !promoted.is_float() {
            DType::F32
        } else {
            promoted
        };
        let result = if self.is_predicate() {
            DType::Bool
        } else {
            compute
        };
        Ok((compute, result))
    }

    /// What the function computes, of operands already in `compute`.
    pub fn expr(&self, compute: DType) -> Result<Expr, Undefined> {
        let x = Expr::Operand(0);
        let float = compute.is_float();
        let undefined = || Undefined {
            function: self.name(),
            compute,
        };
        // `alpha * x`, a bool alpha multiplying bools as "and".
        let scaled = |x: Expr, alpha: &Option<Scalar>| match alpha {
            Some(alpha) if compute == DType::Bool => {
                Expr::binary(Binary::BitAnd, x, Expr::Constant(*alpha))
            }
            Some(alpha) => x * Expr::Constant(*alpha),
            None => x,
        };
        match self {
            Func::Unary(op) => op.expr(x, compute),
            Func::Binary { op, alpha } => op.expr(x, scaled(Expr::Operand(1), alpha), compute),
            Func::BinaryScalar {
                op: BinaryOp::Pow, ..
            } if compute == DType::Bool => Err(undefined()),
            Func::BinaryScalar {
                op: BinaryOp::Pow,
                scalar,
            } => pow_scalar(x, *scalar, compute),
            Func::BinaryScalar { op, scalar } => op.expr(x, Expr::Constant(*scalar), compute),
            Func::ScalarFirst { op, scalar, alpha } => {
                op.expr(Expr::Constant(*scalar), scaled(x, alpha), compute)
            }
            Func::Clamp { .. } | Func::ClampTensor { .. } if compute == DType::Bool => {
                Err(undefined())
            }
            Func::Clamp { min, max } => {
                let mut value = x;
                if let Some(min) = min {
                    let bound = Expr::Constant(*min);
                    value = if float {
                        value.at_least(bound)
                    } else {
                        value.maximum(bound)
                    };
                }
                if let Some(max) = max {
                    let bound = Expr::Constant(*max);
                    value = if float {
                        value.at_most(bound)
                    } else {
                        value.minimum(bound)
                    };
                }
                Ok(value)
            }
            Func::ClampTensor { min, max } => {
                let mut value = x;
                let mut next = 1;
                if *min {
                    value = value.maximum(Expr::Operand(next));
                    next += 1;
                }
                if *max {
                    value = value.minimum(Expr::Operand(next));
                }
                Ok(value)
            }
            Func::LeakyRelu { .. } | Func::Elu { .. } | Func::Glu if !float => Err(undefined()),
            // max(x, 0) + slope * min(x, 0): leaky ReLU without a branch.
            Func::LeakyRelu { slope } => {
                Ok(x.clone().at_least(real(0.0)) + x.at_most(real(0.0)) * real(slope.0))
            }
            Func::Elu {
                alpha,
                scale,
                input_scale,
            } => {
                let negative = Expr::math(MathFn::Expm1, vec![x.clone() * real(input_scale.0)])
                    * real(alpha.0);
                let positive = Expr::compare(Comparison::Gt, x.clone(), real(0.0));
                Ok(Expr::select(positive, x, negative) * real(scale.0))
            }
            Func::Logit { eps } => {
                // The bounds in the compute type, as PyTorch's: eps and
                // 1 - eps computed there.
                let z = match eps {
                    Some(eps) => x.at_least(real(eps.0)).at_most(real(1.0) - real(eps.0)),
                    None => x,
                };
                let odds = z.clone() / (real(1.0) - z);
                Ok(Expr::math(MathFn::Log, vec![odds]))
            }
            Func::Glu => Ok(x * sigmoid(Expr::Operand(1))),
            Func::Where => Ok(Expr::select(
                Expr::unary(Unary::NonZero, x),
                Expr::Operand(1),
                Expr::Operand(2),
            )),
            Func::MaskedFill { value } => Ok(Expr::select(
                Expr::unary(Unary::NonZero, Expr::Operand(1)),
                Expr::Constant(*value),
                x,
            )),
        }
    }

    pub(crate) fn write_attributes(&self, out: &mut AttributeWriter) {
        match self {
            Func::Unary(_) | Func::Where | Func::Glu => {}
            Func::Binary { alpha, .. } => {
                if let Some(alpha) = alpha {
                    out.scalar("alpha", *alpha);
                }
            }
            Func::BinaryScalar { scalar, .. } => out.scalar("scalar", *scalar),
            Func::ScalarFirst { scalar, alpha, .. } => {
                out.scalar("scalar", *scalar);
                if let Some(alpha) = alpha {
                    out.scalar("alpha", *alpha);
                }
            }
            Func::Clamp { min, max } => {
                out.optional_scalar("min", *min);
                out.optional_scalar("max", *max);
            }
            Func::ClampTensor { min, max } => {
                out.bool("min", *min);
                out.bool("max", *max);
            }
            Func::LeakyRelu { slope } => out.real("slope", *slope),
            Func::Elu {
                alpha,
                scale,
                input_scale,
            } => {
                out.real("alpha", *alpha);
                out.real("scale", *scale);
                out.real("input_scale", *input_scale);
            }
            Func::Logit { eps } => out.real_if_some("eps", *eps),
            Func::MaskedFill { value } => out.scalar("value", *value),
        }
    }

    /// The function named `name`, with its attributes; `None` when no
    /// elementwise function has that name.
    pub(crate) fn parse(
        name: &str,
        attributes: &mut AttributeReader,
    ) -> Option<Result<Func, FormError>> {
        if let Some(&op) = UnaryOp::ALL.iter().find(|op| op.name() == name) {
            return Some(Ok(Func::Unary(op)));
        }
        if let Some(&op) = BinaryOp::ALL.iter().find(|op| op.name() == name) {
            let alpha = attributes.optional_scalar_if_present("alpha");
            return Some(alpha.map(|alpha| Func::Binary { op, alpha }));
        }
        if let Some(&op) = BinaryOp::ALL.iter().find(|op| op.scalar_name() == name) {
            return Some(
                attributes
                    .scalar("scalar")
                    .map(|scalar| Func::BinaryScalar { op, scalar }),
            );
        }
        if let Some(&op) = BinaryOp::ALL.iter().find(|op| op.reversed_name() == name) {
            return Some((|| {
                Ok(Func::ScalarFirst {
                    op,
                    scalar: attributes.scalar("scalar")?,
                    alpha: attributes.optional_scalar_if_present("alpha")?,
                })
            })());
        }
        let parsed = match name {
            "clamp" => (|| {
                Ok(Func::Clamp {
                    min: attributes.optional_scalar("min")?,
                    max: attributes.optional_scalar("max")?,
                })
            })(),
            "clamp_tensor" => (|| {
                Ok(Func::ClampTensor {
                    min: attributes.bool("min")?,
                    max: attributes.bool("max")?,
                })
            })(),
            "leaky_relu" => attributes
                .real("slope")
                .map(|slope| Func::LeakyRelu { slope }),
            "elu" => (|| {
                Ok(Func::Elu {
                    alpha: attributes.real("alpha")?,
                    scale: attributes.real("scale")?,
                    input_scale: attributes.real("input_scale")?,
                })
            })(),
            "logit" => attributes
                .real_if_present("eps")
                .map(|eps| Func::Logit { eps }),
            "glu" => Ok(Func::Glu),
            "where" => Ok(Func::Where),
            "masked_fill" => attributes
                .scalar("value")
                .map(|value| Func::MaskedFill { value }),
            _ => return None,
        };
        Some(parsed)
    }
}

/// `x ** exponent` for a scalar exponent, with the exact forms PyTorch uses
/// for small exponents of floats; integers by repeated squaring, to no
/// negative power (which PyTorch refuses, although it gives tensors of
/// exponents one).
fn pow_scalar(x: Expr, exponent: Scalar, compute: DType) -> Result<Expr, Undefined> {
    if !compute.is_float() {
        if exponent.as_i64() < 0 {
            return Err(Undefined {
                function: "pow_scalar with a negative exponent",
                compute,
            });
        }
        return Ok(integer_power(x, Expr::Constant(exponent), compute));
    }
    Ok(match exponent.as_f64() {
        2.0 => x.clone() * x,
        1.0 => x,
        0.5 => Expr::unary(Unary::Sqrt, x),
        3.0 => (x.clone() * x.clone()) * x,
        -0.5 => real(1.0) / Expr::unary(Unary::Sqrt, x),
        -1.0 => real(1.0) / x,
        -2.0 => real(1.0) / (x.clone() * x),
        value => Expr::math(MathFn::Pow, vec![x, real(value)]),
    })
}

/// An elementwise op: `func` of `inputs`, each broadcast to the output's
/// shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Elementwise {
    pub func: Func,
    pub inputs: Vec<ValueId>,
}

impl Elementwise {
    /// The op applying `func` to `inputs`.
    pub fn op(func: Func, inputs: Vec<ValueId>) -> Op {
        Op::Elementwise(Elementwise { func, inputs })
    }

    pub fn unary(op: UnaryOp, x: ValueId) -> Op {
        Elementwise::op(Func::Unary(op), vec![x])
    }
}

impl OpDef for Elementwise {
    fn name(&self) -> &'static str {
        self.func.name()
    }

    fn element_types(
        &self,
        _inputs: &[&TensorType],
        _outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        // `check` applies PyTorch's promotion and casts to the function.
        Ok(())
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        self.inputs
            .iter()
            .map(|&value| (Slot::Positional, value))
            .collect()
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        self.inputs.iter_mut().collect()
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        check_arity(self.func.arity(), inputs.len())?;
        let shapes: Vec<&[crate::Dim]> = inputs.iter().map(|ty| ty.shape.as_slice()).collect();
        Ok(vec![Expected::Shape(broadcast(&shapes, eq)?)])
    }

    /// The function computes in the operands' types (PyTorch's promotion),
    /// and its result casts to the output's type as PyTorch allows; a
    /// mask is a bool.
    fn check(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        let operands: Vec<Operand> = inputs.iter().map(|ty| Operand::of(ty)).collect();
        let (compute, result) = self.func.types(&operands).map_err(OpError::Undefined)?;
        self.func.expr(compute).map_err(OpError::Undefined)?;
        if let (Func::MaskedFill { .. }, Some(mask)) = (&self.func, inputs.get(1))
            && mask.dtype != DType::Bool
        {
            return Err(OpError::ElementType {
                what: "the mask",
                expected: "bool",
                found: mask.dtype,
            });
        }
        match outputs.first() {
            Some(output) if !can_cast(result, output.dtype) => Err(OpError::Cast {
                from: result,
                to: output.dtype,
            }),
            _ => Ok(()),
        }
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        self.func.write_attributes(out);
    }

    fn layout(&self) -> LayoutRule {
        LayoutRule::Elementwise
    }
}

/// Fails unless `found` operands are the `expected` number.
pub(crate) fn check_arity(expected: usize, found: usize) -> Result<(), OpError> {
    if expected == found {
        Ok(())
    } else {
        Err(OpError::Arity { expected, found })
    }
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let func = Func::parse(name, attributes)?;
    Some(func.map(|func| Elementwise::op(func, operands.rest())))
}
