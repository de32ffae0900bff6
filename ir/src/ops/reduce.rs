//! Reductions along dimensions, arg-reductions, the `k` largest or
//! smallest elements, cumulative sums and softmax.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::one_input;
use super::{
    Expected, LayoutRule, OpDef, OpError, Outputs, ShapeContext, axis, keeps_input_type, numbers,
    one, reduced,
};
use crate::graph::ValueId;
use crate::op::Op;
use crate::types::{DType, Dim, TensorType};

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

impl ReduceOp {
    pub const ALL: [ReduceOp; 7] = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Any,
        ReduceOp::All,
    ];

    /// What the reduction does into an output of type `output`: a sum or
    /// product computes in its output's type, and PyTorch adds bools as
    /// `or` and multiplies them as `and`.
    pub fn into_type(self, output: DType) -> ReduceOp {
        match (self, output) {
            (ReduceOp::Sum, DType::Bool) => ReduceOp::Any,
            (ReduceOp::Prod, DType::Bool) => ReduceOp::All,
            (op, _) => op,
        }
    }

    /// The op's name in the text form.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "reduce_sum",
            ReduceOp::Mean => "reduce_mean",
            ReduceOp::Prod => "reduce_prod",
            ReduceOp::Max => "reduce_max",
            ReduceOp::Min => "reduce_min",
            ReduceOp::Any => "reduce_any",
            ReduceOp::All => "reduce_all",
        }
    }
}

/// A reduction of `input` over `dims`; `keepdim` keeps them as size 1.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reduce {
    pub input: ValueId,
    pub op: ReduceOp,
    pub dims: Vec<usize>,
    pub keepdim: bool,
}

/// Which extreme an arg-reduction finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extreme {
    Max,
    Min,
}

/// The index of the largest (or smallest) element along `dim`, or of the
/// flattened input when `dim` is `None`; the first one on ties, NaN
/// winning as in PyTorch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgReduce {
    pub input: ValueId,
    pub extreme: Extreme,
    pub dim: Option<usize>,
    pub keepdim: bool,
}

/// The `k` largest (or smallest) elements along `dim`, sorted from the
/// most extreme, and their positions (i64) as the second output. NaN is
/// larger than every number, as in PyTorch; equal elements come in the
/// order of their positions (PyTorch leaves the order of ties to its
/// selection algorithm).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopK {
    pub input: ValueId,
    pub k: u64,
    pub dim: usize,
    pub extreme: Extreme,
}

/// Running sums along `dim`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CumSum {
    pub input: ValueId,
    pub dim: usize,
}

/// Softmax (or log-softmax) along `dim`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Softmax {
    pub input: ValueId,
    pub dim: usize,
    pub log: bool,
    /// PyTorch's `_safe_softmax`: a row whose every element is -inf gives
    /// zeros, where a softmax gives NaN (exported as a softmax, a test of
    /// every element against -inf and a `where`, which `fuse-safe-softmax`
    /// folds into this). Not for a log-softmax.
    pub safe: bool,
}

/// A maximum or minimum (or its index) over a dimension of fixed size 0 has
/// no value: PyTorch raises, and so does ptec, naming the attribute.
fn no_empty_extreme(
    name: &'static str,
    value: String,
    x: &[Dim],
    reduces: impl Fn(usize) -> bool,
) -> Result<(), OpError> {
    match (0..x.len()).find(|&d| reduces(d) && x[d] == Dim::Fixed(0)) {
        Some(d) => Err(OpError::Attribute {
            name,
            value,
            problem: format!("dimension {d} is empty, and an extreme of nothing has no value"),
        }),
        None => Ok(()),
    }
}

impl OpDef for Reduce {
    fn name(&self) -> &'static str {
        self.op.name()
    }

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        for &dim in &self.dims {
            axis(x.len(), dim)?;
        }
        if matches!(self.op, ReduceOp::Max | ReduceOp::Min) {
            no_empty_extreme("dims", format!("{:?}", self.dims), x, |d| {
                self.dims.contains(&d)
            })?;
        }
        one(reduced(x, |d| self.dims.contains(&d), self.keepdim))
    }

    /// PyTorch's types: a sum or product computes in its output's type
    /// (any), a mean in a float one, an extreme keeps its input's, and
    /// `any`/`all` give a bool (or a byte).
    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        let (input, output) = (inputs[0].dtype, outputs[0].dtype);
        let (fits, expected) = match self.op {
            ReduceOp::Sum | ReduceOp::Prod => (true, ""),
            ReduceOp::Mean => (output.is_float(), "a float"),
            ReduceOp::Max | ReduceOp::Min => (output == input, "of the input's element type"),
            ReduceOp::Any | ReduceOp::All => {
                (matches!(output, DType::Bool | DType::U8), "bool or u8")
            }
        };
        match fits {
            true => Ok(()),
            false => Err(OpError::ElementType {
                what: "the reduction's result",
                expected,
                found: output,
            }),
        }
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("dims", &as_u64(&self.dims));
        out.bool("keepdim", self.keepdim);
    }

    fn layout(&self) -> LayoutRule {
        LayoutRule::ReadsAny
    }
}

impl OpDef for ArgReduce {
    fn name(&self) -> &'static str {
        match self.extreme {
            Extreme::Max => "arg_max",
            Extreme::Min => "arg_min",
        }
    }

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        let value = format!("{:?}", self.dim);
        no_empty_extreme("dim", value, x, |d| self.dim.is_none_or(|dim| d == dim))?;
        match self.dim {
            Some(dim) => {
                let dim = axis(x.len(), dim)?;
                one(reduced(x, |d| d == dim, self.keepdim))
            }
            None if self.keepdim => one(vec![Dim::Fixed(1); x.len()]),
            None => one(Vec::new()),
        }
    }

    fn element_types(
        &self,
        _inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        match outputs[0].dtype {
            DType::I64 => Ok(()),
            found => Err(OpError::ElementType {
                what: "an arg-reduction's result",
                expected: "i64",
                found,
            }),
        }
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.optional_int("dim", self.dim.map(|dim| dim as u64));
        out.bool("keepdim", self.keepdim);
    }
}

impl OpDef for TopK {
    fn name(&self) -> &'static str {
        "top_k"
    }

    one_input!();

    fn outputs(&self) -> Outputs {
        Outputs::Exactly(2)
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        // A 0-D tensor has one dimension of one element to select from.
        let dim = axis(x.len().max(1), self.dim)?;
        let size = x.get(dim).map_or(Ok(1), |&size| {
            size.fixed().ok_or(OpError::NotFixed {
                what: "the dimension top_k selects from",
                dim: size,
            })
        })?;
        if self.k > size {
            return Err(OpError::Attribute {
                name: "k",
                value: self.k.to_string(),
                problem: format!("more than the {size} elements of dimension {dim}"),
            });
        }
        let mut shape = x.clone();
        if let Some(selected) = shape.get_mut(dim) {
            *selected = Dim::Fixed(self.k);
        } else if self.k == 0 {
            return Err(OpError::Attribute {
                name: "k",
                value: "0".to_string(),
                problem: "selects nothing of a 0-D tensor".to_string(),
            });
        }
        Ok(vec![Expected::Shape(shape.clone()), Expected::Shape(shape)])
    }

    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        if outputs[1].dtype != DType::I64 {
            return Err(OpError::ElementType {
                what: "top_k's indices",
                expected: "i64",
                found: outputs[1].dtype,
            });
        }
        if outputs[0].dtype != inputs[0].dtype {
            return Err(OpError::ElementType {
                what: "top_k's values",
                expected: "of the input's element type",
                found: outputs[0].dtype,
            });
        }
        Ok(())
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("k", self.k);
        out.int("dim", self.dim as u64);
        out.bool("largest", self.extreme == Extreme::Max);
    }
}

impl OpDef for CumSum {
    fn name(&self) -> &'static str {
        "cum_sum"
    }

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        // A 0-D tensor has one dimension to run along.
        axis(x.len().max(1), self.dim)?;
        one(x.clone())
    }

    /// A cumulative sum computes in its output's type, which PyTorch does
    /// not allow to be bool.
    fn element_types(
        &self,
        _inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        numbers(outputs, "a cumulative sum's result")
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
    }
}

impl OpDef for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }

    keeps_input_type!();

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        axis(x.len().max(1), self.dim)?;
        if self.safe && self.log {
            return Err(OpError::Attribute {
                name: "safe",
                value: "true".into(),
                problem: "a log-softmax has no safe form".into(),
            });
        }
        one(x.clone())
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
        out.bool("log", self.log);
        out.bool("safe", self.safe);
    }
}

fn as_u64(values: &[usize]) -> Vec<u64> {
    values.iter().map(|&value| value as u64).collect()
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let parsed = (|| {
        if let Some(&op) = ReduceOp::ALL.iter().find(|op| op.name() == name) {
            return Ok(Some(Op::Reduce(Reduce {
                input: operands.positional("input")?,
                op,
                dims: attributes.ints("dims")?,
                keepdim: attributes.bool("keepdim")?,
            })));
        }
        let extreme = match name {
            "arg_max" => Extreme::Max,
            "arg_min" => Extreme::Min,
            "cum_sum" => {
                return Ok(Some(Op::CumSum(CumSum {
                    input: operands.positional("input")?,
                    dim: attributes.int("dim")?,
                })));
            }
            "top_k" => {
                return Ok(Some(Op::TopK(TopK {
                    input: operands.positional("input")?,
                    k: attributes.int("k")?,
                    dim: attributes.int("dim")?,
                    extreme: match attributes.bool("largest")? {
                        true => Extreme::Max,
                        false => Extreme::Min,
                    },
                })));
            }
            "softmax" => {
                return Ok(Some(Op::Softmax(Softmax {
                    input: operands.positional("input")?,
                    dim: attributes.int("dim")?,
                    log: attributes.bool("log")?,
                    safe: attributes.bool("safe")?,
                })));
            }
            _ => return Ok(None),
        };
        Ok(Some(Op::ArgReduce(ArgReduce {
            input: operands.positional("input")?,
            extreme,
            dim: attributes.optional_int("dim")?,
            keepdim: attributes.bool("keepdim")?,
        })))
    })();
    parsed.transpose()
}
