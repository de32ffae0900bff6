//! The operations of the IR, with typed attributes. An op's inputs and
//! outputs are values of the node that applies it; attributes are what the
//! op needs beyond them (axes, strides, scalars).

use std::fmt;

use crate::types::Scalar;

/// Elementwise functions of one tensor.
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
    Erf,
    /// GELU, exact (with erf) or with the tanh approximation.
    Gelu {
        tanh: bool,
    },
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

/// Elementwise functions of two operands (broadcast against each other).
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
    /// Whether the op compares its operands (the result is a bool).
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(
            self,
            Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor
        )
    }
}

/// How a reduction combines elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Mean,
    Prod,
    Max,
    Min,
    Any,
    All,
}

/// Bounds an op clamps its result to (either may be absent).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClampRange {
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl ClampRange {
    pub fn is_none(self) -> bool {
        self.min.is_none() && self.max.is_none()
    }
}

/// What a step of a fused elementwise kernel reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepInput {
    /// The node's input `k`.
    Input(usize),
    /// The result of an earlier step.
    Step(usize),
}

impl fmt::Display for StepInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepInput::Input(index) => write!(f, "in{index}"),
            StepInput::Step(index) => write!(f, "s{index}"),
        }
    }
}

/// One elementwise op inside [`Op::Fused`]; `op` is one for which
/// [`Op::is_fusable_elementwise`] holds.
#[derive(Clone, Debug, PartialEq)]
pub struct FusedStep {
    pub op: Op,
    pub inputs: Vec<StepInput>,
}

/// A jump target in a method's schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelId(pub u32);

impl fmt::Display for LabelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0)
    }
}

/// Two spatial extents: (height, width).
pub type Pair = [u64; 2];

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `out = f(x)`.
    Unary(UnaryOp),
    /// `out = a op (alpha * b)`, broadcasting; `alpha` only for add and sub.
    Binary {
        op: BinaryOp,
        alpha: Option<Scalar>,
    },
    /// `out = a op scalar`.
    BinaryScalar {
        op: BinaryOp,
        scalar: Scalar,
    },
    /// `out = min(max(x, min), max)`, either bound optional.
    Clamp {
        min: Option<Scalar>,
        max: Option<Scalar>,
    },
    /// `out = x > 0 ? x : slope * x`.
    LeakyRelu {
        slope: f64,
    },
    /// `out = x > 0 ? scale * x : scale * alpha * (exp(input_scale * x) - 1)`.
    Elu {
        alpha: f64,
        scale: f64,
        input_scale: f64,
    },
    /// `out = condition ? a : b`, broadcasting all three.
    Where,
    /// Copies (broadcasting) into the output, converting element type and
    /// layout to the output's: clone, dim-order changes, `copy_` into a
    /// buffer, and moves between values.
    Copy,
    /// Reinterprets the input's bytes with the output's shape (a view).
    Reshape,
    /// `out = x.permute(dims)`.
    Permute {
        dims: Vec<usize>,
    },
    /// `out = x.select(dim, index)`, index already non-negative.
    Select {
        dim: usize,
        index: u64,
    },
    /// `out = x[start:start+step*len:step]` along `dim`.
    Slice {
        dim: usize,
        start: u64,
        step: u64,
    },
    /// Concatenation of the inputs along `dim`.
    Cat {
        dim: usize,
    },
    /// Pads each dimension with `before[d]` and `after[d]` elements of
    /// `value`.
    Pad {
        before: Vec<u64>,
        after: Vec<u64>,
        value: Scalar,
    },
    /// Tiles the input `repeats[d]` times along each dimension (leading
    /// repeats add dimensions).
    Repeat {
        repeats: Vec<u64>,
    },
    /// `out = x.index_select(dim, index)`. Inputs: x, index.
    IndexSelect {
        dim: usize,
    },
    /// Reduction over `dims`; `keepdim` keeps them as size 1.
    Reduce {
        op: ReduceOp,
        dims: Vec<usize>,
        keepdim: bool,
    },
    /// Index of the largest element along `dim` (of the flattened input
    /// when `None`).
    ArgMax {
        dim: Option<usize>,
        keepdim: bool,
    },
    /// Index of the smallest element, likewise.
    ArgMin {
        dim: Option<usize>,
        keepdim: bool,
    },
    CumSum {
        dim: usize,
    },
    /// Softmax (or log-softmax) along `dim`.
    Softmax {
        dim: usize,
        log: bool,
    },
    /// Normalizes over the trailing `normalized_dims` dimensions. Inputs:
    /// x, then weight and bias when present; outputs: out, mean, rstd.
    LayerNorm {
        normalized_dims: usize,
        eps: f64,
        weight: bool,
        bias: bool,
    },
    /// Inference batch norm over dim 1. Inputs: x, weight and bias when
    /// present, running mean, running variance; output: out.
    BatchNorm {
        eps: f64,
        weight: bool,
        bias: bool,
    },
    /// Matrix product of the last two dims, batched over the others.
    /// The result is bounded by `clamp` (a fused ReLU or clamp).
    MatMul {
        clamp: ClampRange,
    },
    /// `out = beta * bias + alpha * (mat1 @ mat2)`, bounded by `clamp`.
    /// Inputs: bias, mat1, mat2.
    Addmm {
        beta: Scalar,
        alpha: Scalar,
        clamp: ClampRange,
    },
    /// 2-D convolution, NCHW. Inputs: x, weight, the bias when present, and
    /// a residual when `residual`. The result is bounded by `clamp` (a fused
    /// ReLU or ReLU6), then the residual (a tensor of the output's type) is
    /// added.
    Convolution {
        stride: Pair,
        padding: Pair,
        dilation: Pair,
        groups: u64,
        bias: bool,
        clamp: ClampRange,
        residual: bool,
    },
    /// 2-D max pooling. Outputs: values, and flat indices into each plane.
    MaxPool2d {
        kernel: Pair,
        stride: Pair,
        padding: Pair,
        dilation: Pair,
        ceil_mode: bool,
    },
    /// 2-D average pooling.
    AvgPool2d {
        kernel: Pair,
        stride: Pair,
        padding: Pair,
        ceil_mode: bool,
        count_include_pad: bool,
    },
    /// `out = weight[indices]`. Inputs: weight, indices.
    Embedding,
    /// Fills the output with a value.
    Full {
        value: Scalar,
    },
    /// `out[i] = start + i * step`.
    Arange {
        start: Scalar,
        step: Scalar,
    },
    /// A jump target.
    Label(LabelId),
    /// Jumps to the label when the input (a bool scalar) is false.
    JumpIfFalse(LabelId),
    Jump(LabelId),
    /// Elementwise ops fused into one loop: the steps run in order on each
    /// element, reading the node's inputs (broadcast to the output's shape)
    /// and earlier steps' results; the last step's result is the output.
    Fused {
        steps: Vec<FusedStep>,
    },
}

impl Op {
    /// The name in the IR text form.
    pub fn name(&self) -> String {
        let snake = |debug: String| {
            let mut name = String::new();
            for (index, c) in debug
                .chars()
                .take_while(|c| c.is_alphanumeric())
                .enumerate()
            {
                if c.is_uppercase() && index > 0 {
                    name.push('_');
                }
                name.push(c.to_ascii_lowercase());
            }
            name
        };
        match self {
            Op::Unary(op) => snake(format!("{op:?}")),
            Op::Binary { op, .. } => snake(format!("{op:?}")),
            Op::BinaryScalar { op, .. } => format!("{}_scalar", snake(format!("{op:?}"))),
            Op::Reduce { op, .. } => format!("reduce_{}", snake(format!("{op:?}"))),
            other => snake(format!("{other:?}")),
        }
    }

    /// Whether the op computes each float element from the elements at the
    /// same position of its inputs, in the output's own type, so that it
    /// can be a step of [`Op::Fused`] (comparisons and casts cannot).
    pub fn is_fusable_elementwise(&self) -> bool {
        match self {
            Op::Unary(op) => *op != UnaryOp::LogicalNot,
            Op::Binary { op, .. } | Op::BinaryScalar { op, .. } => !op.is_comparison(),
            Op::Clamp { .. } | Op::LeakyRelu { .. } | Op::Elu { .. } => true,
            _ => false,
        }
    }

    /// Whether the op moves control instead of computing values.
    pub fn is_control(&self) -> bool {
        matches!(self, Op::Label(_) | Op::JumpIfFalse(_) | Op::Jump(_))
    }
}
