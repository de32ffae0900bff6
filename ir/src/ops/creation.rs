//! Ops that create tensors from attributes alone: fills and ranges. Their
//! output's shape is the one the program declares.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::no_operands;
use super::{DimEquality, Expected, OpDef, OpError};
use crate::op::Op;
use crate::types::{Scalar, TensorType};

/// Fills the output with `value`, converted to its element type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Full {
    pub value: Scalar,
}

/// `out[i] = start + i * step` along the output's one dimension.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Arange {
    pub start: Scalar,
    pub step: Scalar,
}

fn given() -> Result<Vec<Expected>, OpError> {
    Ok(vec![Expected::Given])
}

impl OpDef for Full {
    fn name(&self) -> &'static str {
        "full"
    }

    no_operands!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn DimEquality,
    ) -> Result<Vec<Expected>, OpError> {
        given()
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.scalar("value", self.value);
    }
}

impl OpDef for Arange {
    fn name(&self) -> &'static str {
        "arange"
    }

    no_operands!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn DimEquality,
    ) -> Result<Vec<Expected>, OpError> {
        given()
    }

    fn check(&self, _inputs: &[&TensorType], outputs: &[&TensorType]) -> Result<(), OpError> {
        if outputs[0].rank() == 1 {
            Ok(())
        } else {
            Err(OpError::Shapes {
                what: "arange into a tensor that is not 1-D",
                shapes: vec![outputs[0].shape.clone()],
            })
        }
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.scalar("start", self.start);
        out.scalar("step", self.step);
    }
}

pub(crate) fn parse(
    name: &str,
    _operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let parsed = (|| {
        Ok(Some(match name {
            "full" => Op::Full(Full {
                value: attributes.scalar("value")?,
            }),
            "arange" => Op::Arange(Arange {
                start: attributes.scalar("start")?,
                step: attributes.scalar("step")?,
            }),
            _ => return Ok(None),
        }))
    })();
    parsed.transpose()
}
