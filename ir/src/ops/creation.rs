//! Ops that create tensors from attributes and counts: fills, ranges and
//! the indices `repeat_interleave` repeats. Their output's shape is the one
//! the program declares. The fill value and the range's start may be
//! scalars known only at run time (symbols).

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::{Expected, OpDef, OpError, ShapeContext, numbers};
use super::{no_operands, one_input};
use crate::graph::ValueId;
use crate::op::Op;
use crate::symbolic::Term;
use crate::types::{DType, Scalar, TensorType};

/// Fills the output with `value`, converted to its element type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Full {
    pub value: Term,
}

/// `out[i] = start + i * step` along the output's one dimension.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Arange {
    pub start: Term,
    pub step: Scalar,
}

/// That a symbolic attribute names a symbol of the graph.
fn check_term(term: Term, name: &'static str, cx: &dyn ShapeContext) -> Result<(), OpError> {
    cx.symbols()
        .kind(term)
        .map(|_| ())
        .map_err(|error| OpError::Attribute {
            name,
            value: term.to_string(),
            problem: error.to_string(),
        })
}

/// `repeat_interleave(repeats)`: each index `i` of the 1-D integer tensor
/// `repeats`, `repeats[i]` times in a row, in `repeats`' element type. The
/// output's length is the one declared (the `output_size` argument); a
/// negative count, or counts whose sum is not that length, are an error at
/// run time. Boolean counts (0 or 1: a mask, whose `i32` or `i64` result is
/// the positions of its true elements) are ptec's own case.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RepeatInterleave {
    pub input: ValueId,
}

fn given() -> Result<Vec<Expected>, OpError> {
    Ok(vec![Expected::Given])
}

impl OpDef for Full {
    fn name(&self) -> &'static str {
        "full"
    }

    fn element_types(
        &self,
        _inputs: &[&TensorType],
        _outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        // A fill converts its value to its output's type, any one.
        Ok(())
    }

    no_operands!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        given()
    }

    fn check(
        &self,
        _inputs: &[&TensorType],
        _outputs: &[&TensorType],
        cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        check_term(self.value, "value", cx)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.term("value", self.value);
    }

    fn terms(&self) -> Vec<Term> {
        vec![self.value]
    }

    fn map_terms(&mut self, map: &mut dyn FnMut(Term) -> Term) {
        self.value = map(self.value);
    }
}

impl OpDef for Arange {
    fn name(&self) -> &'static str {
        "arange"
    }

    fn element_types(
        &self,
        _inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        // PyTorch has no range of bools.
        numbers(outputs, "a range")
    }

    no_operands!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        given()
    }

    fn check(
        &self,
        _inputs: &[&TensorType],
        outputs: &[&TensorType],
        cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        check_term(self.start, "start", cx)?;
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
        out.term("start", self.start);
        out.scalar("step", self.step);
    }

    fn terms(&self) -> Vec<Term> {
        vec![self.start]
    }

    fn map_terms(&mut self, map: &mut dyn FnMut(Term) -> Term) {
        self.start = map(self.start);
    }
}

impl OpDef for RepeatInterleave {
    fn name(&self) -> &'static str {
        "repeat_interleave"
    }

    one_input!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        given()
    }

    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        let (counts, out) = (inputs[0], outputs[0]);
        if counts.rank() > 1 || out.rank() != 1 {
            return Err(OpError::Shapes {
                what: "repeat_interleave of counts that are not 1-D into a tensor that is",
                shapes: vec![counts.shape.clone(), out.shape.clone()],
            });
        }
        match counts.dtype {
            DType::I32 | DType::I64 if out.dtype == counts.dtype => Ok(()),
            DType::Bool if matches!(out.dtype, DType::I32 | DType::I64) => Ok(()),
            found => Err(OpError::ElementType {
                what: "repeat_interleave's counts and result",
                expected: "both i32, both i64, or bool counts and an i32 or i64 result",
                found,
            }),
        }
    }
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let parsed = (|| {
        Ok(Some(match name {
            "full" => Op::Full(Full {
                value: attributes.term("value")?,
            }),
            "repeat_interleave" => Op::RepeatInterleave(RepeatInterleave {
                input: operands.positional("input")?,
            }),
            "arange" => Op::Arange(Arange {
                start: attributes.term("start")?,
                step: attributes.scalar("step")?,
            }),
            _ => return Ok(None),
        }))
    })();
    parsed.transpose()
}
