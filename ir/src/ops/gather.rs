//! Gathers: ops that read elements at indices another tensor holds.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::{Expected, OpDef, OpError, ShapeContext, Slot, axis, one};
use crate::graph::ValueId;
use crate::op::Op;
use crate::types::{DType, Dim, TensorType};

/// `input.index_select(dim, index)`: the slices of `input` along `dim` at
/// the positions `index` (a 0-D or 1-D integer tensor) holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexSelect {
    pub input: ValueId,
    pub index: ValueId,
    pub dim: usize,
}

/// `weight[indices]`: a row of the table `weight` for each index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Embedding {
    pub weight: ValueId,
    pub indices: ValueId,
}

/// Fails unless `ty` holds integers a gather can index with.
fn check_indices(ty: &TensorType, what: &'static str) -> Result<(), OpError> {
    match ty.dtype {
        DType::I64 | DType::I32 => Ok(()),
        found => Err(OpError::ElementType {
            what,
            expected: "i64 or i32",
            found,
        }),
    }
}

impl OpDef for IndexSelect {
    fn name(&self) -> &'static str {
        "index_select"
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![
            (Slot::Positional, self.input),
            (Slot::Positional, self.index),
        ]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.input, &mut self.index]
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (x, index) = (&inputs[0].shape, &inputs[1].shape);
        let dim = axis(x.len(), self.dim)?;
        if index.len() > 1 {
            return Err(OpError::Shapes {
                what: "index_select with an index of more than one dimension",
                shapes: vec![index.clone()],
            });
        }
        let mut shape = x.clone();
        shape[dim] = index.first().copied().unwrap_or(Dim::Fixed(1));
        one(shape)
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        _outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        check_indices(inputs[1], "index_select's index")
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
    }
}

impl OpDef for Embedding {
    fn name(&self) -> &'static str {
        "embedding"
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![
            (Slot::Positional, self.weight),
            (Slot::Positional, self.indices),
        ]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.weight, &mut self.indices]
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (weight, indices) = (&inputs[0].shape, &inputs[1].shape);
        if weight.len() != 2 {
            return Err(OpError::Shapes {
                what: "embedding table of a rank other than 2",
                shapes: vec![weight.clone()],
            });
        }
        let mut shape = indices.clone();
        shape.push(weight[1]);
        one(shape)
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        _outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        check_indices(inputs[1], "embedding indices")
    }
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let parsed = (|| {
        Ok(Some(match name {
            "index_select" => Op::IndexSelect(IndexSelect {
                input: operands.positional("input")?,
                index: operands.positional("index")?,
                dim: attributes.int("dim")?,
            }),
            "embedding" => Op::Embedding(Embedding {
                weight: operands.positional("weight")?,
                indices: operands.positional("indices")?,
            }),
            _ => return Ok(None),
        }))
    })();
    parsed.transpose()
}
