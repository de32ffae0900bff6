//! Normalizations: layer norm over trailing dimensions and inference batch
//! norm over channels.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::{
    Expected, OpDef, OpError, Outputs, ShapeContext, Slot, equate_shapes, keeps, keeps_input_type,
    shapes_of,
};
use crate::graph::ValueId;
use crate::op::Op;
use crate::types::{Dim, Real, TensorType};

/// Normalizes `input` over its trailing `normalized_dims` dimensions, then
/// scales by `weight` and shifts by `bias` when present. Outputs: the
/// result, and the mean and reciprocal standard deviation of each
/// normalized group (size 1 along the normalized dimensions).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LayerNorm {
    pub input: ValueId,
    pub weight: Option<ValueId>,
    pub bias: Option<ValueId>,
    pub normalized_dims: usize,
    pub eps: Real,
}

/// Inference batch norm over dimension 1 with running statistics:
/// `(x - mean) / sqrt(variance + eps) * weight + bias`. Outputs: the
/// result, then whatever extra outputs the file declares (the saved
/// statistics of the training form, unused).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BatchNorm {
    pub input: ValueId,
    pub weight: Option<ValueId>,
    pub bias: Option<ValueId>,
    pub mean: ValueId,
    pub variance: ValueId,
    pub eps: Real,
}

impl LayerNorm {
    /// Output slots.
    pub const OUT: usize = 0;
    pub const MEAN: usize = 1;
    pub const RSTD: usize = 2;
}

impl OpDef for LayerNorm {
    fn name(&self) -> &'static str {
        "layer_norm"
    }

    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        keeps(inputs, outputs, &[0, 1, 2])
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        let mut operands = vec![(Slot::Positional, self.input)];
        operands.extend(self.weight.map(|weight| (Slot::Named("weight"), weight)));
        operands.extend(self.bias.map(|bias| (Slot::Named("bias"), bias)));
        operands
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        let mut operands = vec![&mut self.input];
        operands.extend(self.weight.as_mut());
        operands.extend(self.bias.as_mut());
        operands
    }

    fn outputs(&self) -> Outputs {
        Outputs::Exactly(3)
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        let Some(split) = x.len().checked_sub(self.normalized_dims) else {
            return Err(OpError::Attribute {
                name: "normalized_dims",
                value: self.normalized_dims.to_string(),
                problem: format!("more than the rank {} of the input", x.len()),
            });
        };
        let affine = &x[split..];
        if !inputs[1..]
            .iter()
            .all(|parameter| equate_shapes(eq, &parameter.shape, affine))
        {
            return Err(OpError::Shapes {
                what: "layer norm of an input with affine parameters of other shapes",
                shapes: shapes_of(inputs),
            });
        }
        let mut statistics = x[..split].to_vec();
        statistics.extend(std::iter::repeat_n(Dim::Fixed(1), self.normalized_dims));
        Ok(vec![
            Expected::Shape(x.clone()),
            Expected::Shape(statistics.clone()),
            Expected::Shape(statistics),
        ])
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("normalized_dims", self.normalized_dims as u64);
        out.real("eps", self.eps);
    }
}

impl OpDef for BatchNorm {
    fn name(&self) -> &'static str {
        "batch_norm"
    }

    keeps_input_type!();

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        let mut operands = vec![(Slot::Positional, self.input)];
        operands.extend(self.weight.map(|weight| (Slot::Named("weight"), weight)));
        operands.extend(self.bias.map(|bias| (Slot::Named("bias"), bias)));
        operands.push((Slot::Named("mean"), self.mean));
        operands.push((Slot::Named("variance"), self.variance));
        operands
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        let mut operands = vec![&mut self.input];
        operands.extend(self.weight.as_mut());
        operands.extend(self.bias.as_mut());
        operands.extend([&mut self.mean, &mut self.variance]);
        operands
    }

    fn outputs(&self) -> Outputs {
        Outputs::AtLeast(1)
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        if x.len() < 2
            || inputs[1..]
                .iter()
                .any(|parameter| parameter.shape != [x[1]])
        {
            return Err(OpError::Shapes {
                what: "batch norm of an input with parameters not one per channel",
                shapes: shapes_of(inputs),
            });
        }
        let mut expected = vec![Expected::Shape(x.clone())];
        expected.resize(outputs.max(1), Expected::Given);
        Ok(expected)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.real("eps", self.eps);
    }
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let parsed = (|| {
        Ok(Some(match name {
            "layer_norm" => Op::LayerNorm(LayerNorm {
                input: operands.positional("input")?,
                weight: operands.named("weight"),
                bias: operands.named("bias"),
                normalized_dims: attributes.int("normalized_dims")?,
                eps: attributes.real("eps")?,
            }),
            "batch_norm" => Op::BatchNorm(BatchNorm {
                input: operands.positional("input")?,
                weight: operands.named("weight"),
                bias: operands.named("bias"),
                mean: operands.required("mean")?,
                variance: operands.required("variance")?,
                eps: attributes.real("eps")?,
            }),
            _ => return Ok(None),
        }))
    })();
    parsed.transpose()
}
