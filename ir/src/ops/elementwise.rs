//! Elementwise ops: a function applied to operands broadcast to the
//! output's shape ([`Elementwise`]). Each function ([`Func`]) is defined
//! here once: its name, the types it computes in, and what it computes as a
//! scalar expression ([`Expr`]) that both back ends lower. To add a unary
//! function, add a [`UnaryOp`] variant and its arms below (name and
//! expression; ATen's `aten::NAME.out` imports it when its ATen name is its
//! own, and Vulkan's `aten.NAME.default` likewise).

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::expr::{Binary, Comparison, Expr, Unary, integer, real, zero};
use super::{Expected, LayoutRule, OpDef, OpError, ShapeContext, Slot, broadcast};
use crate::graph::ValueId;
use crate::op::Op;
use crate::types::{DType, Real, Scalar, TensorType};

/// Functions of the C math library that elementwise functions call, on f32
/// or f64, and their counterparts in shaders. Their accuracy is the C
/// library's (glibc documents at most 1-2 ulp for the single-precision ones
/// on x86_64 and aarch64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Exp,
    Log,
    Tanh,
    Sin,
    Cos,
    Tan,
    Erf,
    Expm1,
    Log1p,
    Pow,
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
    /// The C symbol for f32 (`wide` false) or f64 arguments.
    pub fn c_symbol(self, wide: bool) -> &'static str {
        let (single, double) = match self {
            MathFn::Exp => ("expf", "exp"),
            MathFn::Log => ("logf", "log"),
            MathFn::Tanh => ("tanhf", "tanh"),
            MathFn::Sin => ("sinf", "sin"),
            MathFn::Cos => ("cosf", "cos"),
            MathFn::Tan => ("tanf", "tan"),
            MathFn::Erf => ("erff", "erf"),
            MathFn::Expm1 => ("expm1f", "expm1"),
            MathFn::Log1p => ("log1pf", "log1p"),
            MathFn::Pow => ("powf", "pow"),
        };
        if wide { double } else { single }
    }

    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow => 2,
            _ => 1,
        }
    }

    pub fn shader(self) -> ShaderMath {
        match self {
            MathFn::Exp => ShaderMath::Builtin("exp"),
            MathFn::Log => ShaderMath::Builtin("log"),
            MathFn::Tanh => ShaderMath::Builtin("tanh"),
            MathFn::Sin => ShaderMath::Builtin("sin"),
            MathFn::Cos => ShaderMath::Builtin("cos"),
            MathFn::Tan => ShaderMath::Builtin("tan"),
            MathFn::Erf => ShaderMath::Helper("erf_f32"),
            MathFn::Expm1 => ShaderMath::Helper("expm1_f32"),
            MathFn::Log1p => ShaderMath::Helper("log1p_f32"),
            // torch's results for negative bases and integral exponents.
            MathFn::Pow => ShaderMath::Helper("pow_f32"),
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
    Sqrt,
    Rsqrt,
    Reciprocal,
    Sin,
    Cos,
    Tan,
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
}

impl UnaryOp {
    pub const ALL: [UnaryOp; 27] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Relu,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Reciprocal,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
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
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Reciprocal => "reciprocal",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
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

    /// What the function computes of `x` in `compute`.
    fn expr(self, x: Expr, compute: DType) -> Result<Expr, Undefined> {
        use UnaryOp::*;
        let undefined = || Undefined {
            function: self.name(),
            compute,
        };
        if self == LogicalNot {
            return Ok(Expr::compare(Comparison::Eq, x, zero(compute)));
        }
        if !compute.is_float() {
            return match self {
                Neg => Ok(-x),
                Abs if compute.is_unsigned() => Ok(x),
                Abs => Ok(Expr::unary(Unary::Abs, x)),
                Relu => Ok(x.maximum(integer(0))),
                Sign => {
                    let positive = Expr::compare(Comparison::Gt, x.clone(), integer(0));
                    let negative = Expr::compare(Comparison::Lt, x, integer(0));
                    Ok(Expr::unary(Unary::FromBool, positive)
                        - Expr::unary(Unary::FromBool, negative))
                }
                Floor | Ceil | Round | Trunc => Ok(x),
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
            Sqrt => Expr::unary(Unary::Sqrt, x),
            Rsqrt => real(1.0) / Expr::unary(Unary::Sqrt, x),
            Reciprocal => real(1.0) / x,
            Sin => math(MathFn::Sin, x),
            Cos => math(MathFn::Cos, x),
            Tan => math(MathFn::Tan, x),
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
                let inner = x.clone() + cube * real(0.044715);
                let tanh = math(
                    MathFn::Tanh,
                    inner * real((2.0 / std::f64::consts::PI).sqrt()),
                );
                (x * real(0.5)) * (real(1.0) + tanh)
            }
            Hardswish => x.clone() * hardsigmoid(x),
            Hardsigmoid => hardsigmoid(x),
            Silu => x.clone() * sigmoid(x),
            Floor => Expr::unary(Unary::Floor, x),
            Ceil => Expr::unary(Unary::Ceil, x),
            Round => Expr::unary(Unary::Round, x),
            Trunc => Expr::unary(Unary::Trunc, x),
            // (x > 0) - (x < 0), keeping NaN.
            Sign => {
                let positive = Expr::compare(Comparison::Gt, x.clone(), real(0.0));
                let negative = Expr::compare(Comparison::Lt, x.clone(), real(0.0));
                let sign = Expr::select(negative, real(-1.0), real(0.0));
                let sign = Expr::select(positive, real(1.0), sign);
                Expr::select(Expr::unary(Unary::IsNan, x.clone()), x, sign)
            }
            Expm1 => math(MathFn::Expm1, x),
            Log1p => math(MathFn::Log1p, x),
            LogicalNot => unreachable!("returned above"),
        })
    }
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
    Pow,
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
}

impl BinaryOp {
    pub const ALL: [BinaryOp; 19] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::FloorDiv,
        BinaryOp::TruncDiv,
        BinaryOp::Remainder,
        BinaryOp::Pow,
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
    ];

    /// The name of the tensor-tensor form; the tensor-scalar form is
    /// [`BinaryOp::scalar_name`].
    pub fn name(self) -> &'static str {
        self.names().0
    }

    pub fn scalar_name(self) -> &'static str {
        self.names().1
    }

    fn names(self) -> (&'static str, &'static str) {
        match self {
            BinaryOp::Add => ("add", "add_scalar"),
            BinaryOp::Sub => ("sub", "sub_scalar"),
            BinaryOp::Mul => ("mul", "mul_scalar"),
            BinaryOp::Div => ("div", "div_scalar"),
            BinaryOp::FloorDiv => ("floor_div", "floor_div_scalar"),
            BinaryOp::TruncDiv => ("trunc_div", "trunc_div_scalar"),
            BinaryOp::Remainder => ("remainder", "remainder_scalar"),
            BinaryOp::Pow => ("pow", "pow_scalar"),
            BinaryOp::Maximum => ("maximum", "maximum_scalar"),
            BinaryOp::Minimum => ("minimum", "minimum_scalar"),
            BinaryOp::Eq => ("eq", "eq_scalar"),
            BinaryOp::Ne => ("ne", "ne_scalar"),
            BinaryOp::Lt => ("lt", "lt_scalar"),
            BinaryOp::Le => ("le", "le_scalar"),
            BinaryOp::Gt => ("gt", "gt_scalar"),
            BinaryOp::Ge => ("ge", "ge_scalar"),
            BinaryOp::LogicalAnd => ("logical_and", "logical_and_scalar"),
            BinaryOp::LogicalOr => ("logical_or", "logical_or_scalar"),
            BinaryOp::LogicalXor => ("logical_xor", "logical_xor_scalar"),
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

    /// `a op b` in `compute`.
    fn expr(self, a: Expr, b: Expr, compute: DType) -> Result<Expr, Undefined> {
        use BinaryOp::*;
        let float = compute.is_float();
        let compare = |comparison| Expr::compare(comparison, a.clone(), b.clone());
        let logical = |op| {
            Expr::binary(
                op,
                Expr::unary(Unary::NonZero, a.clone()),
                Expr::unary(Unary::NonZero, b.clone()),
            )
        };
        Ok(match self {
            Add => a + b,
            Sub => a - b,
            Mul => a * b,
            Div if float => a / b,
            FloorDiv if float => Expr::unary(Unary::Floor, a / b),
            TruncDiv if float => Expr::unary(Unary::Trunc, a / b),
            // a - floor(a / b) * b: the sign of the divisor, as Python.
            Remainder if float => a.clone() - Expr::unary(Unary::Floor, a / b.clone()) * b,
            Pow if float => Expr::math(MathFn::Pow, vec![a, b]),
            FloorDiv => Expr::binary(Binary::FloorDiv, a, b),
            TruncDiv => Expr::binary(Binary::TruncDiv, a, b),
            Remainder => Expr::binary(Binary::Remainder, a, b),
            Div | Pow => {
                return Err(Undefined {
                    function: self.name(),
                    compute,
                });
            }
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
        })
    }
}

/// A function that has no meaning in a compute type (the square root of
/// integers, true division into an integer tensor).
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
    /// `min(max(x, min), max)`, either bound optional.
    Clamp {
        min: Option<Scalar>,
        max: Option<Scalar>,
    },
    /// `x > 0 ? x : slope * x`.
    LeakyRelu { slope: Real },
    /// `x > 0 ? scale * x : scale * alpha * (exp(input_scale * x) - 1)`.
    Elu {
        alpha: Real,
        scale: Real,
        input_scale: Real,
    },
    /// `condition ? a : b`.
    Where,
}

impl Func {
    pub fn name(&self) -> &'static str {
        match self {
            Func::Unary(op) => op.name(),
            Func::Binary { op, .. } => op.name(),
            Func::BinaryScalar { op, .. } => op.scalar_name(),
            Func::Clamp { .. } => "clamp",
            Func::LeakyRelu { .. } => "leaky_relu",
            Func::Elu { .. } => "elu",
            Func::Where => "where",
        }
    }

    /// How many operands the function takes.
    pub fn arity(&self) -> usize {
        match self {
            Func::Binary { .. } => 2,
            Func::Where => 3,
            _ => 1,
        }
    }

    /// Whether the result is a bool whatever the operands are.
    fn is_predicate(&self) -> bool {
        match self {
            Func::Unary(op) => *op == UnaryOp::LogicalNot,
            Func::Binary { op, .. } | Func::BinaryScalar { op, .. } => op.is_comparison(),
            _ => false,
        }
    }

    /// Whether the function computes in the type of its output, which is
    /// what a step of a fused kernel does (predicates cannot: they compute
    /// in their operands' type; `where` selects rather than computes).
    pub fn is_fusable(&self) -> bool {
        !self.is_predicate() && *self != Func::Where
    }

    /// The type the function computes in (its operands are converted to
    /// it) and the type of its result (converted to the output's), for
    /// operands of `inputs` and an output of `output`: the output's own
    /// type, except that predicates compare in their operands' promoted
    /// type and give bools. Half-precision types stay as they are; back ends
    /// compute them in f32 ([`DType::arithmetic`]).
    pub fn types(&self, inputs: &[DType], output: DType) -> Result<(DType, DType), Undefined> {
        let compute = match self {
            Func::Unary(UnaryOp::LogicalNot) => inputs[0],
            Func::Binary { op, .. } if op.is_comparison() => promote(inputs[0], inputs[1]),
            Func::BinaryScalar { op, scalar } if op.is_comparison() => {
                scalar_comparison_type(inputs[0], *scalar)
            }
            Func::LeakyRelu { .. } | Func::Elu { .. } if !output.is_float() => {
                return Err(Undefined {
                    function: self.name(),
                    compute: output,
                });
            }
            _ => output,
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
        match self {
            Func::Unary(op) => op.expr(x, compute),
            Func::Binary { op, alpha } => {
                let b = match alpha {
                    Some(alpha) => Expr::Operand(1) * Expr::Constant(*alpha),
                    None => Expr::Operand(1),
                };
                op.expr(x, b, compute)
            }
            Func::BinaryScalar {
                op: BinaryOp::Pow,
                scalar,
            } => pow_scalar(x, *scalar, compute),
            Func::BinaryScalar { op, scalar } => op.expr(x, Expr::Constant(*scalar), compute),
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
            Func::Where => Ok(Expr::select(
                Expr::unary(Unary::NonZero, x),
                Expr::Operand(1),
                Expr::Operand(2),
            )),
        }
    }

    pub(crate) fn write_attributes(&self, out: &mut AttributeWriter) {
        match self {
            Func::Unary(_) | Func::Where => {}
            Func::Binary { alpha, .. } => {
                if let Some(alpha) = alpha {
                    out.scalar("alpha", *alpha);
                }
            }
            Func::BinaryScalar { scalar, .. } => out.scalar("scalar", *scalar),
            Func::Clamp { min, max } => {
                out.optional_scalar("min", *min);
                out.optional_scalar("max", *max);
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
        let parsed = match name {
            "clamp" => (|| {
                Ok(Func::Clamp {
                    min: attributes.optional_scalar("min")?,
                    max: attributes.optional_scalar("max")?,
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
            "where" => Ok(Func::Where),
            _ => return None,
        };
        Some(parsed)
    }
}

/// The type two operands of these types compare in: the wider float, the
/// float, the common integer type, or i64 for two different integer types.
pub fn promote(a: DType, b: DType) -> DType {
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

/// The type a tensor of `dtype` compares with `scalar` in: its own, unless
/// an integer tensor meets a float that is not an integer of its range
/// (then f64, which holds both exactly).
fn scalar_comparison_type(dtype: DType, scalar: Scalar) -> DType {
    match scalar {
        Scalar::Float(value) if !dtype.is_float() => {
            let (low, high) = integer_range(dtype);
            let exact = value.fract() == 0.0 && value >= low && value <= high;
            if exact { dtype } else { DType::F64 }
        }
        _ => dtype,
    }
}

/// The values of an integer type, as f64.
fn integer_range(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::Bool => (0.0, 1.0),
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::I16 => (-32768.0, 32767.0),
        DType::I32 => (-2147483648.0, 2147483647.0),
        _ => (i64::MIN as f64, 2f64.powi(63) - 1024.0),
    }
}

/// `x ** exponent` for a scalar exponent, with the exact forms PyTorch uses
/// for small integer exponents; integers by repeated multiplication.
fn pow_scalar(x: Expr, exponent: Scalar, compute: DType) -> Result<Expr, Undefined> {
    let value = exponent.as_f64();
    if compute.is_float() {
        return Ok(match value {
            2.0 => x.clone() * x,
            1.0 => x,
            0.5 => Expr::unary(Unary::Sqrt, x),
            3.0 => (x.clone() * x.clone()) * x,
            _ => Expr::math(MathFn::Pow, vec![x, real(value)]),
        });
    }
    let power = u32::try_from(exponent.as_i64())
        .ok()
        .filter(|&p| f64::from(p) == value && p <= 64)
        .ok_or(Undefined {
            function: "pow_scalar with a negative, fractional or large exponent",
            compute,
        })?;
    let mut result = integer(1);
    for _ in 0..power {
        result = result * x.clone();
    }
    Ok(result)
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
