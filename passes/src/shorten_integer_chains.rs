//! Shortens the end of a fused chain that works on a clamped integer to the
//! one clamp that computes the same. XNNPACK's int8 programs, imported as
//! f32 ops on integer-valued floats, requantize each result (`round`, then
//! `clamp` to the int8 range less the zero point) and then dequantize it,
//! apply the activation and quantize it again for the next op: a multiply,
//! a clamp, a multiply, a `round`. On the few integers the first clamp
//! lets through, that tail is most often a clamp to narrower integers (the
//! activation's bounds requantized, as XNNPACK's own kernels compute it):
//! mobilenet_v2's epilogues go from seven steps to three.
//!
//! The tail is replaced only when the clamp's bounds are integers at most
//! [`MAX_INTEGERS`] apart, its operand is integral (`ptec_ir::bounds`),
//! each later step reads the step before it alone, and the new clamp, of
//! bounds inside the old ones, gives the tail's bits (NaN for NaN) on every
//! value the clamp's operand can hold that the two might treat apart: each
//! integer of the clamp's range and the one beyond each end, -0, both
//! infinities and NaN (below the range both give their lower bound, above
//! it their upper one). Both are evaluated as the IR defines their steps
//! (`Expr::eval_f32`), so the program computes what it did, on every back
//! end, bit for bit.

use ptec_ir::bounds::{is_integer, step_bounds};
use ptec_ir::ops::elementwise::Func;
use ptec_ir::ops::fused::{FusedStep, StepInput};
use ptec_ir::{Bounds, DType, Graph, NodeId, Op, Scalar, value_bounds};

use crate::schedule::rewrite_each;
use crate::unary_chain::{MAX_INTEGERS, UnaryChain, in_line, same};

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    rewrite_each(graph, shorten)
}

fn shorten(graph: &mut Graph<'_>, id: NodeId) -> Option<()> {
    let Op::Fused(fused) = graph.op(id) else {
        return None;
    };
    // Steps compute in the output's type, which must be f32 for the
    // evaluation to be theirs.
    let output = *graph.node(id).outputs().first()?;
    (graph.value(output).ty.dtype == DType::F32).then_some(())?;
    let inputs: Vec<Bounds> = fused
        .inputs
        .iter()
        .map(|&input| value_bounds(graph, input))
        .collect();
    let steps = shortened(&fused.steps, &inputs)?;
    let mut fused = fused.clone();
    fused.steps = steps;
    graph.set_op(id, Op::Fused(fused));
    Some(())
}

/// The chain `steps` (over operands of bounds `inputs`) with its longest
/// tail that starts at a clamp of integers replaced by one clamp, when
/// there is one to replace.
fn shortened(steps: &[FusedStep], inputs: &[Bounds]) -> Option<Vec<FusedStep>> {
    let bounds = step_bounds(steps, inputs);
    let integral = |input: StepInput| match input {
        StepInput::Input(index) => inputs[index].integral,
        StepInput::Step(index) => bounds[index].integral,
    };
    (0..steps.len().saturating_sub(1)).find_map(|start| {
        let tail = &steps[start..];
        let [operand] = tail[0].inputs[..] else {
            return None;
        };
        (integral(operand) && in_line(tail, operand, start)).then_some(())?;
        let clamp = equivalent_clamp(tail)?;
        let mut shortened = steps[..start].to_vec();
        shortened.push(FusedStep {
            func: clamp,
            inputs: vec![operand],
        });
        Some(shortened)
    })
}

/// The clamp that gives what `tail` does on every integral value, when
/// `tail` starts with a clamp to integers at most [`MAX_INTEGERS`] apart
/// and one does.
fn equivalent_clamp(tail: &[FusedStep]) -> Option<Func> {
    let Func::Clamp {
        min: Some(min),
        max: Some(max),
    } = tail[0].func
    else {
        return None;
    };
    let [low, high] = [min, max].map(|bound| bound.as_f64() as f32);
    (is_integer(low) && is_integer(high) && low <= high).then_some(())?;
    let (low, high) = (low as i64, high as i64);
    (high - low <= MAX_INTEGERS).then_some(())?;
    let tail_of = UnaryChain::new(tail.iter().map(|step| &step.func))?;
    let [new_low, new_high] = [low, high].map(|end| tail_of.eval(end as f32));
    let (new_low, new_high) = (new_low?, new_high?);
    let inside = is_integer(new_low)
        && is_integer(new_high)
        && low as f32 <= new_low
        && new_low <= new_high
        && new_high <= high as f32;
    inside.then_some(())?;
    let clamp = Func::Clamp {
        min: Some(Scalar::Float(f64::from(new_low))),
        max: Some(Scalar::Float(f64::from(new_high))),
    };
    let clamp_of = UnaryChain::new([&clamp])?;
    let mut values = (low - 1..=high + 1).map(|value| value as f32).chain([
        -0.0,
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::NAN,
    ]);
    values
        .all(|x| same(tail_of.eval(x), clamp_of.eval(x)))
        .then_some(clamp)
}
