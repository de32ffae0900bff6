//! Removes a quantize that gives back the integers its operand was
//! dequantized from. XNNPACK's int8 programs, imported as f32 ops, end a
//! convolution whose result two ops read (a residual block's input) with
//! the dequantize, `q * scale` of the clamped integers `q`; one reader,
//! the next convolution's input, quantizes that again (`round(x * 1 /
//! scale')`, a kernel of its own), and where the two scales are the
//! tensor's own that gives back `q`. Then the producer stores `q`, the
//! quantize's readers read it, and the producer's other readers, fused
//! chains and epilogues, multiply by the scale as their first step: one
//! kernel and one pass over the tensor less, the same bits everywhere.
//!
//! It applies when the producer's chain (a fused kernel or a convolution's
//! epilogue) ends in `mul_scalar` of a step proved integral in a range at
//! most [`MAX_INTEGERS`] wide (`ptec_ir::bounds`), the quantize is a fused
//! chain of that value alone whose result has its type, and the quantize of
//! `q * scale` is `q`'s bits (NaN for NaN) for each integer of the range,
//! -0 and NaN (`Expr::eval_f32`); every other reader reads the value as an
//! operand of its chain, and neither value leaves the method.

use ptec_ir::bounds::step_bounds;
use ptec_ir::ops::elementwise::{BinaryOp, Func};
use ptec_ir::ops::fused::{FusedStep, StepInput};
use ptec_ir::{Bounds, DType, Graph, NodeId, Op, Scalar, ValueId, value_bounds};

use crate::schedule::{rewrite_each, unchanged_between};
use crate::unary_chain::{MAX_INTEGERS, UnaryChain, in_line, same};

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    rewrite_each(graph, elide)
}

/// The chain of a node that ends in steps: a fused kernel's, or a
/// convolution's epilogue, whose `in0` is the convolution's result.
fn chain(op: &Op) -> Option<(&[FusedStep], Vec<ValueId>, bool)> {
    match op {
        Op::Fused(fused) => Some((&fused.steps, fused.inputs.clone(), false)),
        Op::Convolution(conv) => {
            let epilogue = conv.epilogue.as_ref()?;
            Some((&epilogue.steps, epilogue.operands.clone(), true))
        }
        _ => None,
    }
}

/// `op` with its chain's steps (those [`chain`] gives) replaced by `edit`
/// of them.
fn with_steps(op: &Op, edit: impl FnOnce(&[FusedStep]) -> Vec<FusedStep>) -> Op {
    let mut op = op.clone();
    let steps = match &mut op {
        Op::Fused(fused) => Some(&mut fused.steps),
        Op::Convolution(conv) => conv.epilogue.as_mut().map(|epilogue| &mut epilogue.steps),
        _ => None,
    };
    if let Some(steps) = steps {
        *steps = edit(steps);
    }
    op
}

fn elide(graph: &mut Graph<'_>, quantize: NodeId) -> Option<()> {
    let Op::Fused(fused) = graph.op(quantize) else {
        return None;
    };
    let [dequantized] = fused.inputs[..] else {
        return None;
    };
    let &[quantized] = graph.node(quantize).outputs() else {
        return None;
    };
    let same_type = graph.value(dequantized).ty == graph.value(quantized).ty
        && graph.value(quantized).ty.dtype == DType::F32;
    let kept = !graph.is_live_out(dequantized) && !graph.is_live_out(quantized);
    (same_type && kept).then_some(())?;
    let [producer] = graph.writers(dequantized)[..] else {
        return None;
    };
    let scale = dequantizing_scale(graph, producer)?;
    gives_back(&fused.steps, scale, integer_range(graph, producer)?).then_some(())?;
    let others: Vec<NodeId> = graph
        .readers(dequantized)
        .into_iter()
        .filter(|&reader| reader != quantize)
        .collect();
    let operand_of = |reader: NodeId| {
        let (_, operands, epilogue) = chain(graph.op(reader))?;
        let index = single_index(&operands, dequantized)?;
        let slots_besides = match graph.op(reader) {
            Op::Convolution(conv) => {
                conv.input == dequantized
                    || conv.weight == dequantized
                    || conv.bias == Some(dequantized)
                    || conv.residual == Some(dequantized)
            }
            _ => false,
        };
        (!slots_besides).then_some(index + usize::from(epilogue))
    };
    let operands: Vec<usize> = others
        .iter()
        .map(|&reader| operand_of(reader))
        .collect::<Option<_>>()?;
    let readers = graph.readers(quantized);
    let unchanged = readers
        .iter()
        .all(|&reader| unchanged_between(graph, &[dequantized], quantize, reader));
    unchanged.then_some(())?;
    let producer_op = with_steps(graph.op(producer), |steps| {
        steps[..steps.len() - 1].to_vec()
    });
    graph.set_op(producer, producer_op);
    for (reader, operand) in others.into_iter().zip(operands) {
        let op = with_steps(graph.op(reader), |steps| {
            through_multiply(steps, operand, scale)
        });
        graph.set_op(reader, op);
    }
    graph.replace_reads(quantized, dequantized);
    graph.remove_node(quantize);
    Some(())
}

/// Where `value` is among `operands`, when it is there once.
fn single_index(operands: &[ValueId], value: ValueId) -> Option<usize> {
    let mut found = operands.iter().enumerate().filter(|(_, v)| **v == value);
    let (index, _) = found.next()?;
    found.next().is_none().then_some(index)
}

/// The scale of the `mul_scalar` that ends `producer`'s chain, reading the
/// step before it.
fn dequantizing_scale(graph: &Graph<'_>, producer: NodeId) -> Option<Scalar> {
    let (steps, _, _) = chain(graph.op(producer))?;
    let (last, before) = steps.split_last()?;
    let Func::BinaryScalar {
        op: BinaryOp::Mul,
        scalar,
    } = last.func
    else {
        return None;
    };
    (last.inputs == [StepInput::Step(before.len().checked_sub(1)?)]).then_some(scalar)
}

/// The integers the step before the last of `producer`'s chain is proved
/// to hold (NaN aside), at most [`MAX_INTEGERS`] apart.
fn integer_range(graph: &Graph<'_>, producer: NodeId) -> Option<(i64, i64)> {
    let (steps, operands, epilogue) = chain(graph.op(producer))?;
    let inputs: Vec<Bounds> = epilogue
        .then_some(Bounds::UNKNOWN)
        .into_iter()
        .chain(operands.iter().map(|&operand| value_bounds(graph, operand)))
        .collect();
    let bounds = step_bounds(steps, &inputs);
    let (low, high) = bounds.get(steps.len().checked_sub(2)?)?.integers()?;
    (high - low <= MAX_INTEGERS).then_some((low, high))
}

/// Whether `quantize` (steps of one operand, `in0`) of `q * scale` gives
/// `q`'s bits for every integer `q` of `[low, high]`, -0 and NaN.
fn gives_back(quantize: &[FusedStep], scale: Scalar, (low, high): (i64, i64)) -> bool {
    let dequantize = Func::BinaryScalar {
        op: BinaryOp::Mul,
        scalar: scale,
    };
    let funcs = std::iter::once(&dequantize).chain(quantize.iter().map(|step| &step.func));
    let Some(round_trip) = UnaryChain::new(funcs) else {
        return false;
    };
    in_line(quantize, StepInput::Input(0), 0)
        && (low..=high)
            .map(|q| q as f32)
            .chain([-0.0, f32::NAN])
            .all(|q| same(round_trip.eval(q), Some(q)))
}

/// `steps` with `in{operand}` read through a first step multiplying it by
/// `scale`.
fn through_multiply(steps: &[FusedStep], operand: usize, scale: Scalar) -> Vec<FusedStep> {
    let moved = |input: &StepInput| match *input {
        StepInput::Input(index) if index == operand => StepInput::Step(0),
        StepInput::Input(index) => StepInput::Input(index),
        StepInput::Step(index) => StepInput::Step(index + 1),
    };
    let first = FusedStep {
        func: Func::BinaryScalar {
            op: BinaryOp::Mul,
            scalar: scale,
        },
        inputs: vec![StepInput::Input(operand)],
    };
    std::iter::once(first)
        .chain(steps.iter().map(|step| FusedStep {
            func: step.func.clone(),
            inputs: step.inputs.iter().map(moved).collect(),
        }))
        .collect()
}
