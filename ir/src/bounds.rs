//! What the graph proves about the elements of an f32 value: bounds that
//! every element other than NaN lies within, and whether those elements
//! are integers. Each elementwise function states its own rule
//! ([`Func::bounds`](crate::ops::elementwise::Func::bounds)); this module follows a value back through the nodes
//! that write it. The code generator asks it whether a convolution's input
//! is an integer in a range narrow enough for its integer kernels (the
//! quantized programs of XNNPACK, imported as f32 ops on integer-valued
//! floats: `round`, then `clamp` to the quantized range).

use std::collections::HashMap;

use crate::graph::{Graph, ValueId, ValueKind};
use crate::ops::conv::Convolution;
use crate::ops::fused::{FusedStep, StepInput};
use crate::{DType, Op};

/// Every element of a value that is not NaN lies in `[low, high]` (either
/// may be infinite), and with `integral` each finite one is an integer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub low: f32,
    pub high: f32,
    pub integral: bool,
}

impl Bounds {
    /// Nothing known.
    pub const UNKNOWN: Bounds = Bounds {
        low: f32::NEG_INFINITY,
        high: f32::INFINITY,
        integral: false,
    };

    /// The bounds `[low, high]` (`UNKNOWN` when either is NaN).
    pub fn new(low: f32, high: f32, integral: bool) -> Bounds {
        match low.is_nan() || high.is_nan() {
            true => Bounds::UNKNOWN,
            false => Bounds {
                low,
                high,
                integral,
            },
        }
    }

    /// The integers `[low, high]`, when the bounds are finite and integral.
    pub fn integers(&self) -> Option<(i64, i64)> {
        (self.integral && self.low.is_finite() && self.high.is_finite())
            .then_some((self.low as i64, self.high as i64))
    }
}

/// How many writers back [`value_bounds`] looks before it gives up: a
/// clamp settles the bounds of a quantized program's values every few
/// nodes.
const DEPTH: usize = 16;

/// The bounds of the f32 value `value`, from the single node that writes
/// it (an elementwise function or a fused chain of them, over operands
/// whose bounds come the same way, or a copy, reshape, permute or max
/// pooling of such a value, or a convolution's epilogue steps);
/// [`Bounds::UNKNOWN`] for any other value.
pub fn value_bounds(graph: &Graph<'_>, value: ValueId) -> Bounds {
    bounds_at(graph, value, DEPTH, &mut HashMap::new())
}

fn bounds_at(
    graph: &Graph<'_>,
    value: ValueId,
    depth: usize,
    known: &mut HashMap<ValueId, Bounds>,
) -> Bounds {
    if let Some(&bounds) = known.get(&value) {
        return bounds;
    }
    let data = graph.value(value);
    let writers = graph.writers(value);
    let bounds = match (&writers[..], depth, data.ty.dtype, &data.kind) {
        ([writer], 1.., DType::F32, ValueKind::Computed) => {
            let node = graph.node(*writer);
            let mut operand = |input: ValueId| {
                // Only f32 operands compute in f32 as the rules assume.
                match graph.value(input).ty.dtype {
                    DType::F32 => bounds_at(graph, input, depth - 1, known),
                    _ => Bounds::UNKNOWN,
                }
            };
            match node.op() {
                Op::Elementwise(op) => {
                    let operands: Vec<Bounds> = op.inputs.iter().map(|&v| operand(v)).collect();
                    op.func.bounds(&operands)
                }
                Op::Fused(fused) => {
                    let inputs: Vec<Bounds> = fused.inputs.iter().map(|&v| operand(v)).collect();
                    chain_bounds(&fused.steps, &inputs)
                }
                // What the epilogue computes of the convolution's result,
                // of which nothing is known.
                Op::Convolution(Convolution {
                    epilogue: Some(epilogue),
                    ..
                }) => {
                    let inputs: Vec<Bounds> = std::iter::once(Bounds::UNKNOWN)
                        .chain(epilogue.operands.iter().map(|&v| operand(v)))
                        .collect();
                    chain_bounds(&epilogue.steps, &inputs)
                }
                // Each maximum is one of its window's elements, when every
                // window holds one: it does when the window is contiguous
                // (it then reaches the input from any padding the op
                // allows, at most half the kernel) or there is no padding.
                // A dilated window can fall wholly in the padding, and
                // then gives -inf.
                Op::MaxPool2d(op) => {
                    let input = operand(op.input);
                    match op.dilation == [1, 1] || op.padding == [0, 0] {
                        true => input,
                        false => Bounds::new(f32::NEG_INFINITY, input.high, input.integral),
                    }
                }
                // Layout ops move elements without changing them.
                Op::Copy(op) => operand(op.input),
                Op::Reshape(op) => operand(op.input),
                Op::Permute(op) => operand(op.input),
                _ => Bounds::UNKNOWN,
            }
        }
        _ => Bounds::UNKNOWN,
    };
    known.insert(value, bounds);
    bounds
}

/// The bounds of a fused chain's result from its operands' (`inputs`).
fn chain_bounds(chain: &[FusedStep], inputs: &[Bounds]) -> Bounds {
    step_bounds(chain, inputs)
        .last()
        .copied()
        .unwrap_or(Bounds::UNKNOWN)
}

/// The bounds of each step's result of a fused chain, from its operands'
/// (`inputs`, one per `in{k}`).
pub fn step_bounds(chain: &[FusedStep], inputs: &[Bounds]) -> Vec<Bounds> {
    let mut steps: Vec<Bounds> = Vec::with_capacity(chain.len());
    for step in chain {
        let operands: Vec<Bounds> = step
            .inputs
            .iter()
            .map(|input| match *input {
                StepInput::Input(index) => inputs[index],
                StepInput::Step(index) => steps[index],
            })
            .collect();
        steps.push(step.func.bounds(&operands));
    }
    steps
}

/// The bounds of `f(x)` for a function `f` that never decreases (f32
/// rounding keeps order), from the bounds of `x`.
pub(crate) fn monotone(bounds: Bounds, f: impl Fn(f32) -> f32, integral: bool) -> Bounds {
    Bounds::new(f(bounds.low), f(bounds.high), integral)
}

/// Whether `value` is an integer (infinities are not).
pub fn is_integer(value: f32) -> bool {
    value.is_finite() && value.fract() == 0.0
}
