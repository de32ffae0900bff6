//! Elementwise kernels: one function of the IR ([`Elementwise`]), or a
//! fused chain of them ([`Fused`]) evaluated in registers, as one strided
//! map whose body is each function's scalar expression (`Func::expr`,
//! lowered by `expr.rs`) in the types `Func::types` gives. The map runs four
//! f32 lanes at a time when the expression has a vector form and every type
//! is f32.

use cranelift_codegen::ir::Value;
use ptec_ir::ops::elementwise::{Elementwise, Func, Undefined};
use ptec_ir::ops::expr::Expr;
use ptec_ir::ops::fused::{Fused, StepInput};
use ptec_ir::ops::promotion::Operand;
use ptec_ir::{DType, ValueId};

use super::elementwise::{dtype, map_over};
use super::expr::{self, Lowering};
use crate::emit::Emitter;
use crate::error::CodegenError;

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
    let (expr, compute, result) = semantics(e, &op.func, &inputs)?;
    let compute = compute.arithmetic();
    map_over(
        e,
        output,
        &op.inputs,
        compute,
        result.arithmetic(),
        !expr.is_scalar_only(),
        &|e, x, ty| expr::lower(e, &expr, x, Lowering { compute, ty }),
    )
}

/// A fused chain: one map whose body evaluates every step in registers.
/// Each step's result is rounded to the element type as if it were stored
/// (which changes only half-precision values: they are computed in f32).
pub(super) fn fused(
    e: &mut Emitter<'_, '_, '_>,
    op: &Fused,
    output: ValueId,
) -> Result<(), CodegenError> {
    // Every operand and step is of the output's type (the verifier checks).
    let stored = dtype(e, output);
    let steps = op
        .steps
        .iter()
        .map(|step| {
            let operands = vec![Operand::tensor(stored); step.inputs.len()];
            semantics(e, &step.func, &operands)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let compute = stored.arithmetic();
    map_over(
        e,
        output,
        &op.inputs,
        compute,
        compute,
        steps.iter().all(|(expr, ..)| !expr.is_scalar_only()),
        &|e, x, ty| {
            let mut results: Vec<Value> = Vec::with_capacity(steps.len());
            for (step, (expr, step_compute, step_result)) in op.steps.iter().zip(&steps) {
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
            Ok(*results.last().expect("a fused kernel has steps"))
        },
    )
}
