//! Fused elementwise kernels: a chain of elementwise functions evaluated
//! together on each element, reading the node's operands (broadcast to the
//! output's shape) and earlier steps' results, so that intermediates stay in
//! registers. `fuse-elementwise` builds them; `fuse-epilogue` moves such
//! steps into the convolution whose result they read ([`Epilogue`]).

use std::fmt;

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::elementwise::{Func, check_arity};
use super::{Expected, LayoutRule, OpDef, OpError, ShapeContext, Slot, broadcast};
use crate::graph::ValueId;
use crate::op::Op;
use crate::types::{Dim, TensorType};

/// What a step of a fused kernel reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepInput {
    /// The node's operand `k`.
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

impl StepInput {
    fn parse(text: &str, key: &str) -> Result<StepInput, FormError> {
        let invalid = || FormError::Invalid {
            key: key.to_string(),
            problem: format!("{text:?} is not in<k> or s<k>"),
        };
        let (constructor, digits): (fn(usize) -> StepInput, &str) =
            match (text.strip_prefix("in"), text.strip_prefix('s')) {
                (Some(digits), _) => (StepInput::Input, digits),
                (None, Some(digits)) => (StepInput::Step, digits),
                (None, None) => return Err(invalid()),
            };
        digits.parse().map(constructor).map_err(|_| invalid())
    }
}

/// One function of a fused kernel; one for which [`Func::is_fusable`]
/// holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FusedStep {
    pub func: Func,
    pub inputs: Vec<StepInput>,
}

/// Elementwise functions fused into one loop: the steps run in order on
/// each element; the last step's result is the output. Every step computes
/// in the output's type, a float, as do the operands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fused {
    pub steps: Vec<FusedStep>,
    pub inputs: Vec<ValueId>,
}

impl OpDef for Fused {
    fn name(&self) -> &'static str {
        "fused"
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
        let shapes: Vec<&[Dim]> = inputs.iter().map(|ty| ty.shape.as_slice()).collect();
        Ok(vec![Expected::Shape(broadcast(&shapes, eq)?)])
    }

    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        let output = outputs[0].dtype;
        if !output.is_float() {
            return Err(OpError::ElementType {
                what: "a fused kernel's output",
                expected: "a float",
                found: output,
            });
        }
        if let Some(input) = inputs.iter().find(|input| input.dtype != output) {
            return Err(OpError::ElementType {
                what: "a fused kernel's operand",
                expected: "of the output's type",
                found: input.dtype,
            });
        }
        check_steps(&self.steps, self.inputs.len())
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        write_steps(out, "steps", &self.steps);
    }

    fn layout(&self) -> LayoutRule {
        LayoutRule::Elementwise
    }
}

/// Elementwise functions a convolution applies to each element of its
/// result, in its epilogue, before storing it (`fuse-epilogue` attaches
/// them): the steps of a [`Fused`] kernel whose operand `in0` is the
/// convolution's result (after its clamp and residual) and `in{k}` for
/// `k >= 1` is `operands[k - 1]`, each broadcast to the result's shape and
/// of its type. The last step's result is what the convolution stores.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Epilogue {
    pub steps: Vec<FusedStep>,
    pub operands: Vec<ValueId>,
}

impl Epilogue {
    /// The steps, as for a fused kernel of the result and the operands.
    pub fn check(&self) -> Result<(), OpError> {
        check_steps(&self.steps, self.operands.len() + 1)
    }
}

/// Writes `steps` as the attribute `key`: `[func(in0, s1) attrs; ...]`.
pub(crate) fn write_steps(out: &mut AttributeWriter, key: &str, steps: &[FusedStep]) {
    let steps: Vec<String> = steps
        .iter()
        .map(|step| {
            let inputs: Vec<String> = step.inputs.iter().map(ToString::to_string).collect();
            let mut attributes = AttributeWriter::default();
            step.func.write_attributes(&mut attributes);
            let attributes = attributes.finish();
            let space = if attributes.is_empty() { "" } else { " " };
            format!(
                "{}({}){space}{attributes}",
                step.func.name(),
                inputs.join(", ")
            )
        })
        .collect();
    out.raw(key, &format!("[{}]", steps.join("; ")));
}

/// The steps: at least one, each a fusable function with its number of
/// operands, reading only the `inputs` operands and earlier steps.
fn check_steps(steps: &[FusedStep], inputs: usize) -> Result<(), OpError> {
    if steps.is_empty() {
        return Err(OpError::FusedStep {
            index: 0,
            problem: "a fused kernel needs at least one step".into(),
        });
    }
    for (index, step) in steps.iter().enumerate() {
        let invalid = |problem: String| OpError::FusedStep { index, problem };
        if !step.func.is_fusable() {
            return Err(invalid(format!("{} cannot be fused", step.func.name())));
        }
        check_arity(step.func.arity(), step.inputs.len())
            .map_err(|error| invalid(format!("{}: {error}", step.func.name())))?;
        for input in &step.inputs {
            let valid = match *input {
                StepInput::Input(k) => k < inputs,
                StepInput::Step(k) => k < index,
            };
            if !valid {
                return Err(invalid(format!("reads {input}, which does not exist")));
            }
        }
    }
    Ok(())
}

/// Reads the steps written as the attribute `key` by [`write_steps`].
pub(crate) fn read_steps(
    attributes: &mut AttributeReader,
    key: &str,
) -> Result<Vec<FusedStep>, FormError> {
    let mut steps = Vec::new();
    for mut step in attributes.steps(key)? {
        let func =
            Func::parse(&step.name, &mut step.attributes).ok_or_else(|| FormError::Invalid {
                key: key.into(),
                problem: format!("{} is not an elementwise function", step.name),
            })??;
        step.attributes.finish()?;
        let inputs = step
            .operands
            .iter()
            .map(|operand| StepInput::parse(operand, key))
            .collect::<Result<_, _>>()?;
        steps.push(FusedStep { func, inputs });
    }
    Ok(steps)
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    if name != "fused" {
        return None;
    }
    let parsed = (|| {
        Ok(Op::Fused(Fused {
            steps: read_steps(attributes, "steps")?,
            inputs: operands.rest(),
        }))
    })();
    Some(parsed)
}
