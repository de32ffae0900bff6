//! Control flow: labels and jumps in the schedule. They move control
//! instead of computing values; the text form writes them as `L0:`,
//! `jump L0` and `jump_if_false %3 L0`.

use std::fmt;

use super::no_operands;
use super::{Expected, OpDef, OpError, Outputs, ShapeContext, Slot};
use crate::graph::ValueId;
use crate::types::{DType, TensorType};

/// A jump target in a method's schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelId(pub u32);

impl fmt::Display for LabelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0)
    }
}

/// Where a jump lands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    pub label: LabelId,
}

/// Continues at the label.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Jump {
    pub label: LabelId,
}

/// Continues at the label when `condition` (one bool) is false.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JumpIfFalse {
    pub condition: ValueId,
    pub label: LabelId,
}

fn no_outputs() -> Result<Vec<Expected>, OpError> {
    Ok(Vec::new())
}

impl OpDef for Label {
    fn name(&self) -> &'static str {
        "label"
    }

    fn element_types(
        &self,
        _inputs: &[&TensorType],
        _outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        // A label has no outputs.
        Ok(())
    }

    no_operands!();

    fn outputs(&self) -> Outputs {
        Outputs::Exactly(0)
    }

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        no_outputs()
    }
}

impl OpDef for Jump {
    fn name(&self) -> &'static str {
        "jump"
    }

    fn element_types(
        &self,
        _inputs: &[&TensorType],
        _outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        // A jump has no outputs.
        Ok(())
    }

    no_operands!();

    fn outputs(&self) -> Outputs {
        Outputs::Exactly(0)
    }

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        no_outputs()
    }
}

impl OpDef for JumpIfFalse {
    fn name(&self) -> &'static str {
        "jump_if_false"
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![(Slot::Positional, self.condition)]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.condition]
    }

    fn outputs(&self) -> Outputs {
        Outputs::Exactly(0)
    }

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        no_outputs()
    }

    fn element_types(
        &self,
        inputs: &[&TensorType],
        _outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        let condition = inputs[0];
        let one_element = condition
            .fixed_shape()
            .is_some_and(|shape| shape.iter().product::<u64>() == 1);
        if condition.dtype == DType::Bool && one_element {
            Ok(())
        } else {
            Err(OpError::Shapes {
                what: "a jump condition that is not one bool",
                shapes: vec![condition.shape.clone()],
            })
        }
    }
}
