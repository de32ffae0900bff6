//! Elementwise kernels: one function of the IR ([`Elementwise`]), or a
//! fused chain of them ([`Fused`]) evaluated in registers, as one strided
//! map whose body is each function's scalar expression (`Func::expr`,
//! lowered by `expr.rs`) in the types `Func::types` gives. The map runs four
//! f32 lanes at a time when the expression has a vector form and every type
//! is f32.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Type, Value, types};
use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp, Undefined};
use ptec_ir::ops::expr::Expr;
use ptec_ir::ops::fused::{Fused, FusedStep, StepInput};
use ptec_ir::ops::promotion::Operand;
use ptec_ir::{DType, ValueId, ValueKind};

use super::elementwise::{dtype, map_over};
use super::expr::{self, Lowering};
use super::map::{Body, Map, Vectors, emit_map};
use crate::emit::{Emitter, Size, flags};
use crate::error::CodegenError;
use crate::microkernel::Activation;

/// The expression of `func` for operands of `inputs`, with the type it
/// computes in and the type of its result.
fn semantics(
    e: &Emitter<'_, '_, '_>,
    func: &Func,
    inputs: &[Operand],
) -> Result<(Expr, DType, DType), CodegenError> {
    let undefined = |error: Undefined| e.unsupported(error.to_string());
    let (compute, result) = func.types(inputs).map_err(undefined)?;
    let expr = func.expr(compute).map_err(undefined)?;
    Ok((expr, compute, result))
}

/// One elementwise op as a map over its output.
pub(super) fn elementwise(
    e: &mut Emitter<'_, '_, '_>,
    op: &Elementwise,
    output: ValueId,
) -> Result<(), CodegenError> {
    let inputs: Vec<Operand> = op
        .inputs
        .iter()
        .map(|&input| Operand::of(&e.graph().value(input).ty))
        .collect();
    let step = FusedStep {
        func: op.func.clone(),
        inputs: vec![StepInput::Input(0)],
    };
    if let Some(split) = split_at_activation(std::slice::from_ref(&step))
        && activation_call(e, &split, &op.inputs, output)?
    {
        return Ok(());
    }
    let (expr, compute, result) = semantics(e, &op.func, &inputs)?;
    let compute = compute.arithmetic();
    let body: Body<'_> = &|e, x, ty| expr::lower(e, &expr, x, Lowering { compute, ty });
    let map = map_over(
        e,
        output,
        &op.inputs,
        compute,
        result.arithmetic(),
        Vectors::f32_when(!expr.is_scalar_only()),
        body,
    );
    emit_map(
        e,
        Map {
            whole_kernel: true,
            ..map
        },
    )
}

/// A fused chain: one map whose body evaluates every step in registers.
pub(super) fn fused(
    e: &mut Emitter<'_, '_, '_>,
    op: &Fused,
    output: ValueId,
) -> Result<(), CodegenError> {
    if let Some(split) = split_at_activation(&op.steps)
        && activation_call(e, &split, &op.inputs, output)?
    {
        return Ok(());
    }
    // Every operand and step is of the output's type (the verifier checks).
    let chain = Chain::new(e, &op.steps, dtype(e, output))?;
    let body: Body<'_> = &|e, x, ty| chain.eval(e, x, ty);
    let map = map_over(
        e,
        output,
        &op.inputs,
        chain.compute,
        chain.compute,
        Vectors::f32_when(chain.vectorizable()),
        body,
    );
    emit_map(
        e,
        Map {
            whole_kernel: true,
            ..map
        },
    )
}

/// The steps of a fused chain, ready to evaluate on operands of the type
/// `stored` (a float), one element or four f32 lanes at a time. Each
/// step's result is rounded to `stored` as if it were stored (which changes
/// only half-precision values: they are computed in f32).
pub(super) struct Chain {
    steps: Vec<FusedStep>,
    semantics: Vec<(Expr, DType, DType)>,
    stored: DType,
    /// The type operands are converted to, and the chain's result is in.
    pub compute: DType,
}

impl Chain {
    pub(super) fn new(
        e: &Emitter<'_, '_, '_>,
        steps: &[FusedStep],
        stored: DType,
    ) -> Result<Chain, CodegenError> {
        let semantics = steps
            .iter()
            .map(|step| {
                let operands = vec![Operand::tensor(stored); step.inputs.len()];
                semantics(e, &step.func, &operands)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Chain {
            steps: steps.to_vec(),
            semantics,
            stored,
            compute: stored.arithmetic(),
        })
    }

    /// Whether every step has a form on f32x4 vectors.
    pub(super) fn vectorizable(&self) -> bool {
        self.semantics
            .iter()
            .all(|(expr, ..)| !expr.is_scalar_only())
    }

    /// The chain's result on the operands `x` (in the compute type, or
    /// f32x4 vectors: `ty`).
    pub(super) fn eval(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        x: &[Value],
        ty: Type,
    ) -> Result<Value, CodegenError> {
        let (stored, compute) = (self.stored, self.compute);
        let mut results: Vec<Value> = Vec::with_capacity(self.steps.len());
        for (step, (expr, step_compute, step_result)) in self.steps.iter().zip(&self.semantics) {
            let operands: Vec<Value> = step
                .inputs
                .iter()
                .map(|input| match *input {
                    StepInput::Input(index) => x[index],
                    StepInput::Step(index) => results[index],
                })
                .collect();
            let at = Lowering {
                compute: step_compute.arithmetic(),
                ty,
            };
            let value = expr::lower(e, expr, &operands, at)?;
            let rounded = e.convert(value, step_result.arithmetic(), stored)?;
            results.push(e.convert(rounded, stored, compute)?);
        }
        results
            .last()
            .copied()
            .ok_or_else(|| e.unsupported("a fused chain of no steps".to_string()))
    }
}

/// A chain cut around an activation the microkernel has, so that each part
/// may run in place on its operand `in0` after the one before: `before`'s
/// steps (unchanged; the last one's result is what the activation takes),
/// the activation, and `after`'s steps, rewritten to read the activation's
/// result as `in0`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ActivationSplit {
    pub before: Vec<FusedStep>,
    pub activation: Activation,
    pub after: Vec<FusedStep>,
}

/// The chain cut around its first activation of the result so far (a
/// sigmoid, SiLU, either GELU, or a sigmoid and the product of its operand
/// and result, of `in0` or of the step before it); None when it has none, or a step
/// after it reads what running the parts in place overwrites (`in0`, or a
/// step before the activation's result).
pub(super) fn split_at_activation(steps: &[FusedStep]) -> Option<ActivationSplit> {
    use StepInput::{Input, Step};
    let product = Func::Binary {
        op: BinaryOp::Mul,
        alpha: None,
    };
    let (start, activation, taken) = (0..steps.len()).find_map(|index| {
        // What the chain holds in place when step `index` starts.
        let current = match index {
            0 => Input(0),
            _ => Step(index - 1),
        };
        let takes_current = |step: &FusedStep| step.inputs == [current];
        let step = &steps[index];
        match steps.get(index + 1) {
            // Not sigmoid(x) * x: a NaN then keeps the sigmoid's sign.
            Some(next)
                if step.func == Func::Unary(UnaryOp::Sigmoid)
                    && takes_current(step)
                    && next.func == product
                    && next.inputs == [current, Step(index)] =>
            {
                Some((index, Activation::Silu, 2))
            }
            _ => one_step_activation(&step.func)
                .filter(|_| takes_current(step))
                .map(|activation| (index, activation, 1)),
        }
    })?;
    let result = start + taken - 1;
    let after = steps[start + taken..]
        .iter()
        .map(|step| {
            let inputs = step.inputs.iter().map(|&input| match input {
                Input(0) => None,
                Input(index) => Some(Input(index)),
                Step(index) if index == result => Some(Input(0)),
                Step(index) => index.checked_sub(result + 1).map(Step),
            });
            Some(FusedStep {
                func: step.func.clone(),
                inputs: inputs.collect::<Option<Vec<StepInput>>>()?,
            })
        })
        .collect::<Option<Vec<FusedStep>>>()?;
    Some(ActivationSplit {
        before: steps[..start].to_vec(),
        activation,
        after,
    })
}

/// The activation the microkernel computes for a step of this function
/// alone.
fn one_step_activation(func: &Func) -> Option<Activation> {
    match func {
        Func::Unary(UnaryOp::Sigmoid) => Some(Activation::Sigmoid),
        Func::Unary(UnaryOp::Silu) => Some(Activation::Silu),
        Func::Unary(UnaryOp::Gelu) => Some(Activation::Gelu),
        Func::Unary(UnaryOp::GeluTanh) => Some(Activation::GeluTanh),
        _ => None,
    }
}

/// Elements of f32 activations per call of the microkernel: a unit of
/// work for threads.
const ACTIVATION_BLOCK: i64 = 4096;

/// About how many operations an activation costs an element.
const ACTIVATION_COST: u64 = 40;

/// Computes a chain cut around an activation (`split`) of `inputs` into
/// `output` with the activation microkernel, in blocks that threads share
/// out: on each block the steps before it (if any) into the output, the
/// activation, then the steps after it in place, four lanes at a time, each
/// step as the map computes it. False, emitting nothing, when the target
/// has no such microkernel, a part has no vector form, the operands and
/// the output are not f32 tensors of one fixed shape and layout, or an
/// operand after the first shares memory with the output (the block's
/// activation would overwrite it before the steps after it read it).
fn activation_call(
    e: &mut Emitter<'_, '_, '_>,
    split: &ActivationSplit,
    inputs: &[ValueId],
    output: ValueId,
) -> Result<bool, CodegenError> {
    let Some(kernel) = e.cx.microkernels.activation(split.activation) else {
        return Ok(false);
    };
    let output_ty = &e.graph().value(output).ty;
    let same = inputs.iter().all(|&input| {
        let ty = &e.graph().value(input).ty;
        ty.dtype == DType::F32 && ty.shape == output_ty.shape && ty.dim_order == output_ty.dim_order
    });
    let Some(sizes) = output_ty
        .fixed_shape()
        .filter(|_| same && output_ty.dtype == DType::F32)
    else {
        return Ok(false);
    };
    let count = sizes.iter().product::<u64>();
    if !inputs[1..]
        .iter()
        .all(|&input| apart(e, input, output, 4 * count))
    {
        return Ok(false);
    }
    let part = |e: &Emitter<'_, '_, '_>, steps: &[FusedStep]| match steps.is_empty() {
        true => Ok(None),
        false => Chain::new(e, steps, DType::F32).map(Some),
    };
    let (before, after) = (part(e, &split.before)?, part(e, &split.after)?);
    if [&before, &after]
        .iter()
        .any(|chain| chain.as_ref().is_some_and(|chain| !chain.vectorizable()))
    {
        return Ok(false);
    }
    let blocks = count.div_ceil(ACTIVATION_BLOCK as u64) as i64;
    if blocks == 0 {
        return Ok(true);
    }
    let sources: Vec<Value> = inputs.iter().map(|&input| e.address(input)).collect();
    let destination = e.address(output);
    e.allow_parallel();
    let range = e.parallel_range(blocks, ACTIVATION_BLOCK as u64 * ACTIVATION_COST);
    let (start, end) = match range {
        Some(range) => range,
        None => (e.iconst(0), e.iconst(blocks)),
    };
    let function = e.import_function(kernel);
    let span = e.b.ins().isub(end, start);
    e.counted_loop(Size::Dyn(span), &[start], |e, _, carried| {
        let block = carried[0];
        let first = e.b.ins().imul_imm_s(block, ACTIVATION_BLOCK);
        let offset = e.b.ins().ishl_imm_u(first, 2);
        let mut operands: Vec<Value> = sources
            .iter()
            .map(|&source| e.b.ins().iadd(source, offset))
            .collect();
        let output = e.b.ins().iadd(destination, offset);
        let total = e.iconst(count as i64);
        let left = e.b.ins().isub(total, first);
        let limit = e.iconst(ACTIVATION_BLOCK);
        let below = e.b.ins().icmp(IntCC::SignedLessThan, left, limit);
        let elements = e.b.ins().select(below, left, limit);
        if let Some(chain) = &before {
            apply_to_block(e, chain, &operands, output, elements)?;
            operands[0] = output;
        }
        e.b.ins().call(function, &[operands[0], output, elements]);
        if let Some(chain) = &after {
            operands[0] = output;
            apply_to_block(e, chain, &operands, output, elements)?;
        }
        Ok(vec![e.b.ins().iadd_imm_s(block, 1)])
    })?;
    Ok(true)
}

/// Whether `value` lies apart from the `bytes` of `output` (a constant, or
/// arena memory that does not overlap it).
fn apart(e: &Emitter<'_, '_, '_>, value: ValueId, output: ValueId, bytes: u64) -> bool {
    let (x, y) = (e.graph().value(value), e.graph().value(output));
    match (&x.kind, x.offset, y.offset) {
        (ValueKind::Constant(_), ..) => true,
        (_, Some(at), Some(out)) => at + bytes <= out || out + bytes <= at,
        _ => false,
    }
}

/// `chain` of the f32 elements at `operands` (`elements` of each, the
/// same for all) into those at `output`: four lanes at a time, then one.
fn apply_to_block(
    e: &mut Emitter<'_, '_, '_>,
    chain: &Chain,
    operands: &[Value],
    output: Value,
    elements: Value,
) -> Result<(), CodegenError> {
    let vectors = e.b.ins().ushr_imm_u(elements, 2);
    let rest = e.b.ins().band_imm_u(elements, 3);
    let mut start = operands.to_vec();
    start.push(output);
    let pass = |e: &mut Emitter<'_, '_, '_>, count, ty: Type, from: &[Value]| {
        e.counted_loop(Size::Dyn(count), from, |e, _, pointers| {
            let (sources, output) = pointers.split_at(pointers.len() - 1);
            let x: Vec<Value> = sources
                .iter()
                .map(|&pointer| e.b.ins().load(ty, flags(), pointer, 0))
                .collect();
            let result = chain.eval(e, &x, ty)?;
            e.b.ins().store(flags(), result, output[0], 0);
            let bytes = i64::from(ty.bytes());
            Ok(pointers
                .iter()
                .map(|&pointer| e.b.ins().iadd_imm_s(pointer, bytes))
                .collect())
        })
    };
    let after = pass(e, vectors, types::F32X4, &start)?;
    pass(e, rest, types::F32, &after)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepInput::{Input, Step};

    fn step(func: Func, inputs: &[StepInput]) -> FusedStep {
        FusedStep {
            func,
            inputs: inputs.to_vec(),
        }
    }

    fn binary(op: BinaryOp, inputs: &[StepInput]) -> FusedStep {
        step(Func::Binary { op, alpha: None }, inputs)
    }

    fn sigmoid(input: StepInput) -> FusedStep {
        step(Func::Unary(UnaryOp::Sigmoid), &[input])
    }

    #[test]
    fn the_steps_after_an_activation_read_its_result_as_the_operand() {
        let silu = [
            sigmoid(Input(0)),
            binary(BinaryOp::Mul, &[Input(0), Step(0)]),
        ];
        let then = [
            binary(BinaryOp::Add, &[Step(1), Input(1)]),
            binary(BinaryOp::Mul, &[Step(2), Step(1)]),
        ];
        let split = split_at_activation(&[&silu[..], &then].concat()).expect("SiLU leads");
        assert_eq!(
            split,
            ActivationSplit {
                before: Vec::new(),
                activation: Activation::Silu,
                after: vec![
                    binary(BinaryOp::Add, &[Input(0), Input(1)]),
                    binary(BinaryOp::Mul, &[Step(0), Input(0)]),
                ],
            }
        );
        let gate = [
            sigmoid(Input(0)),
            binary(BinaryOp::Mul, &[Step(0), Input(1)]),
        ];
        let split = split_at_activation(&gate).expect("a sigmoid leads");
        assert_eq!(split.activation, Activation::Sigmoid);
        assert_eq!(split.after, [binary(BinaryOp::Mul, &[Input(0), Input(1)])]);
    }

    /// An int8 program's requantization around a sigmoid: the steps before
    /// it stay as they are, those after it read its result as `in0`.
    #[test]
    fn a_chain_splits_around_an_activation_inside_it() {
        let chain = [
            binary(BinaryOp::Mul, &[Input(0), Input(1)]),
            step(Func::Unary(UnaryOp::Round), &[Step(0)]),
            sigmoid(Step(1)),
            binary(BinaryOp::Mul, &[Step(2), Input(2)]),
            step(Func::Unary(UnaryOp::Round), &[Step(3)]),
        ];
        let split = split_at_activation(&chain).expect("a sigmoid inside");
        assert_eq!(
            split,
            ActivationSplit {
                before: chain[..2].to_vec(),
                activation: Activation::Sigmoid,
                after: vec![
                    binary(BinaryOp::Mul, &[Input(0), Input(2)]),
                    step(Func::Unary(UnaryOp::Round), &[Step(0)]),
                ],
            }
        );
        // A sigmoid of something other than the result so far.
        let aside = [
            binary(BinaryOp::Mul, &[Input(0), Input(1)]),
            sigmoid(Input(1)),
        ];
        assert_eq!(split_at_activation(&aside), None);
    }

    #[test]
    fn no_split_when_later_steps_read_what_the_parts_overwrite() {
        let product = |inputs: &[StepInput]| binary(BinaryOp::Mul, inputs);
        // The operand itself, in the other order than SiLU's.
        assert_eq!(
            split_at_activation(&[sigmoid(Input(0)), product(&[Step(0), Input(0)])]),
            None
        );
        // The sigmoid inside a SiLU.
        let silu_then_sigmoid = [
            sigmoid(Input(0)),
            product(&[Input(0), Step(0)]),
            product(&[Step(1), Step(0)]),
        ];
        assert_eq!(split_at_activation(&silu_then_sigmoid), None);
        // A step before the activation.
        let earlier = [
            step(Func::Unary(UnaryOp::Round), &[Input(0)]),
            sigmoid(Step(0)),
            product(&[Step(1), Step(0)]),
        ];
        assert_eq!(split_at_activation(&earlier), None);
        // No activation.
        assert_eq!(split_at_activation(&[product(&[Input(0), Input(1)])]), None);
    }
}
