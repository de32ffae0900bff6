//! The closed list of ops. Each variant holds an op defined in its family's
//! module under `ops/` (typed operands and attributes, and its [`OpDef`]
//! rules); this file only lists them and forwards to their definitions.
//! Code generators match [`Op`] exhaustively; [`OpKind`] names the variants
//! for tables that must cover each of them (what a back end supports).

use crate::graph::ValueId;
use crate::ops::attributes::{AttributeReader, FormError, OperandReader};
use crate::ops::control::{Jump, JumpIfFalse, Label, LabelId};
use crate::ops::conv::{AvgPool2d, Convolution, MaxPool2d};
use crate::ops::creation::{Arange, Full, RepeatInterleave};
use crate::ops::elementwise::Elementwise;
use crate::ops::fused::Fused;
use crate::ops::gather::{Gather, Index, IndexPut, MaskedScatter, Scatter};
use crate::ops::layout::{
    Cat, Copy, Pad, Permute, Repeat, Reshape, Roll, Select, Slice, SliceScatter, Strided, Tril,
};
use crate::ops::linalg::{Addmm, MatMul};
use crate::ops::norm::{BatchNorm, LayerNorm};
use crate::ops::reduce::{ArgReduce, CumSum, Reduce, Softmax, TopK};
use crate::ops::{self, OpDef};

/// Declares [`Op`], [`OpKind`] and the forwarding between them and the
/// definitions, from one list of `Variant(Type)`.
macro_rules! ops {
    ($($(#[$doc:meta])* $variant:ident($ty:ty),)*) => {
        /// An operation of the IR: the values it reads (in typed slots) and
        /// its attributes. A node applies one and writes its outputs.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum Op {
            $($(#[$doc])* $variant($ty),)*
        }

        /// The variants of [`Op`], without their contents.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OpKind {
            $($variant,)*
        }

        impl OpKind {
            pub const ALL: &[OpKind] = &[$(OpKind::$variant,)*];

            /// The variant's name (`MaxPool2d`), for tables of what back
            /// ends support.
            pub fn name(self) -> &'static str {
                match self {
                    $(OpKind::$variant => stringify!($variant),)*
                }
            }
        }

        impl Op {
            /// The op's definition: its rules.
            pub fn def(&self) -> &dyn OpDef {
                match self {
                    $(Op::$variant(op) => op,)*
                }
            }

            pub fn def_mut(&mut self) -> &mut dyn OpDef {
                match self {
                    $(Op::$variant(op) => op,)*
                }
            }

            pub fn kind(&self) -> OpKind {
                match self {
                    $(Op::$variant(_) => OpKind::$variant,)*
                }
            }
        }
    };
}

ops! {
    /// Elementwise functions: unary, binary, with a scalar, clamps, where.
    Elementwise(Elementwise),
    /// Elementwise functions fused into one loop.
    Fused(Fused),
    Copy(Copy),
    Reshape(Reshape),
    Permute(Permute),
    Select(Select),
    Slice(Slice),
    Cat(Cat),
    Pad(Pad),
    Roll(Roll),
    Repeat(Repeat),
    Strided(Strided),
    SliceScatter(SliceScatter),
    Tril(Tril),
    Index(Index),
    Gather(Gather),
    Scatter(Scatter),
    IndexPut(IndexPut),
    MaskedScatter(MaskedScatter),
    Reduce(Reduce),
    ArgReduce(ArgReduce),
    TopK(TopK),
    CumSum(CumSum),
    Softmax(Softmax),
    LayerNorm(LayerNorm),
    BatchNorm(BatchNorm),
    MatMul(MatMul),
    Addmm(Addmm),
    Convolution(Convolution),
    MaxPool2d(MaxPool2d),
    AvgPool2d(AvgPool2d),
    Full(Full),
    Arange(Arange),
    RepeatInterleave(RepeatInterleave),
    Label(Label),
    Jump(Jump),
    JumpIfFalse(JumpIfFalse),
}

impl Op {
    /// The name in the text form.
    pub fn name(&self) -> &'static str {
        self.def().name()
    }

    /// Every value the op reads, in slot order (a value read twice is
    /// listed twice).
    pub fn inputs(&self) -> Vec<ValueId> {
        self.def()
            .operands()
            .into_iter()
            .map(|(_, value)| value)
            .collect()
    }

    /// Whether the op moves control instead of computing values.
    pub fn is_control(&self) -> bool {
        matches!(self, Op::Label(_) | Op::JumpIfFalse(_) | Op::Jump(_))
    }

    /// The label a jump goes to, or a label marks.
    pub fn label(&self) -> Option<LabelId> {
        match self {
            Op::Label(Label { label })
            | Op::Jump(Jump { label })
            | Op::JumpIfFalse(JumpIfFalse { label, .. }) => Some(*label),
            _ => None,
        }
    }

    /// Whether the op accumulates: it computes half-precision (f16, bf16)
    /// operands in f32 and rounds each result once, as PyTorch's CPU kernels
    /// do (their `acc_type` for halves is float). The IR defines such a node
    /// as conversions to f32, the op in f32 and conversions back, and the
    /// pipeline rewrites it so before any pass (`ptec_passes::run_pipeline`),
    /// so that no back end sees halves in these ops. The others compute
    /// halves element by element (maps round each result, which is
    /// PyTorch's rule for them) or only move and select elements.
    pub fn accumulates(&self) -> bool {
        match self {
            Op::Reduce(_)
            | Op::ArgReduce(_)
            | Op::CumSum(_)
            | Op::Softmax(_)
            | Op::LayerNorm(_)
            | Op::BatchNorm(_)
            | Op::MatMul(_)
            | Op::Addmm(_)
            | Op::Convolution(_)
            | Op::MaxPool2d(_)
            | Op::AvgPool2d(_) => true,
            Op::Elementwise(_)
            | Op::Fused(_)
            | Op::Copy(_)
            | Op::Reshape(_)
            | Op::Permute(_)
            | Op::Select(_)
            | Op::Slice(_)
            | Op::Cat(_)
            | Op::Pad(_)
            | Op::Roll(_)
            | Op::Repeat(_)
            | Op::Strided(_)
            | Op::SliceScatter(_)
            | Op::Tril(_)
            | Op::Index(_)
            | Op::Gather(_)
            | Op::Scatter(_)
            | Op::IndexPut(_)
            | Op::MaskedScatter(_)
            | Op::TopK(_)
            | Op::Full(_)
            | Op::Arange(_)
            | Op::RepeatInterleave(_)
            | Op::Label(_)
            | Op::Jump(_)
            | Op::JumpIfFalse(_) => false,
        }
    }

    /// Whether the op computes each float element from the elements at the
    /// same position of its operands, in the output's type, so that it can
    /// be a step of [`Op::Fused`].
    pub fn is_fusable_elementwise(&self) -> bool {
        match self {
            Op::Elementwise(op) => op.func.is_fusable(),
            Op::Fused(_) => true,
            _ => false,
        }
    }
}

/// The op written `name(operands) attributes`, from the family that knows
/// the name; labels and jumps have forms of their own in the text.
pub(crate) fn parse_op(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    type Parser =
        fn(&str, &mut OperandReader, &mut AttributeReader) -> Option<Result<Op, FormError>>;
    const FAMILIES: &[Parser] = &[
        ops::elementwise::parse,
        ops::fused::parse,
        ops::layout::parse,
        ops::gather::parse,
        ops::reduce::parse,
        ops::norm::parse,
        ops::linalg::parse,
        ops::conv::parse,
        ops::creation::parse,
    ];
    FAMILIES
        .iter()
        .find_map(|parse| parse(name, operands, attributes))
}
