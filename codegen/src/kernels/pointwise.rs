//! Elementwise arithmetic: each op's computation of one element (or four
//! f32 lanes), and the kernels built from it: one op per kernel, or a fused
//! chain of them ([`ptec_ir::Op::Fused`]) evaluated in registers in one
//! loop.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Type, Value};
use ptec_ir::{BinaryOp, DType, FusedStep, Node, Op, Scalar, StepInput, UnaryOp};

use super::elementwise::{dtype, map_over};
use super::scalar_ops::{self, binary_vectorizes, promote, unary_vectorizes};
use crate::emit::{Emitter, arithmetic};
use crate::error::CodegenError;

/// The type an elementwise node computes in and the type of its result.
fn compute_types(e: &Emitter<'_, '_, '_>, node: &Node) -> Result<(DType, DType), CodegenError> {
    let out = dtype(e, node.outputs[0]);
    let input = || dtype(e, node.inputs[0]);
    let (compute, result) = match &node.op {
        Op::Unary(UnaryOp::LogicalNot) => (input(), DType::Bool),
        Op::Binary { op, .. } if op.is_comparison() => {
            (promote(input(), dtype(e, node.inputs[1])), DType::Bool)
        }
        Op::BinaryScalar { op, scalar } if op.is_comparison() => {
            let compute = match (input().is_float(), scalar) {
                (false, Scalar::Float(_)) => DType::F64,
                _ => input(),
            };
            (compute, DType::Bool)
        }
        Op::LeakyRelu { .. } | Op::Elu { .. } if !out.is_float() => {
            return Err(CodegenError::Unsupported(format!(
                "{} into a {out} tensor",
                node.op.name()
            )));
        }
        _ => (out, out),
    };
    Ok((arithmetic(compute), arithmetic(result)))
}

/// Whether the op's element computation also works on f32x4 vectors.
fn vectorizes(op: &Op) -> bool {
    match op {
        Op::Unary(op) => unary_vectorizes(*op),
        Op::Binary { op, .. } => binary_vectorizes(*op),
        Op::BinaryScalar { op, .. } => *op != BinaryOp::Pow && binary_vectorizes(*op),
        Op::Clamp { .. } | Op::LeakyRelu { .. } => true,
        _ => false,
    }
}

/// A scalar attribute as a value of the compute type.
fn constant(
    e: &mut Emitter<'_, '_, '_>,
    value: Scalar,
    ty: Type,
    compute: DType,
) -> Result<Value, CodegenError> {
    if compute.is_float() {
        Ok(scalar_ops::fconst(e, ty, value.as_f64()))
    } else {
        e.constant(compute, value)
    }
}

/// Computes one element (of type `ty`: the compute type, or f32x4) of an
/// elementwise op from its operands, already converted to `compute`.
fn element(
    e: &mut Emitter<'_, '_, '_>,
    op: &Op,
    x: &[Value],
    ty: Type,
    compute: DType,
) -> Result<Value, CodegenError> {
    match *op {
        Op::Unary(op) => scalar_ops::unary(e, op, x[0], compute),
        Op::Binary { op, alpha } => {
            let other = match alpha {
                Some(alpha) => {
                    let factor = constant(e, alpha, ty, compute)?;
                    if compute.is_float() {
                        e.b.ins().fmul(x[1], factor)
                    } else {
                        e.b.ins().imul(x[1], factor)
                    }
                }
                None => x[1],
            };
            scalar_ops::binary(e, op, x[0], other, compute)
        }
        Op::BinaryScalar {
            op: BinaryOp::Pow,
            scalar,
        } => scalar_ops::pow_scalar(e, x[0], scalar, compute),
        Op::BinaryScalar { op, scalar } => {
            let scalar = constant(e, scalar, ty, compute)?;
            scalar_ops::binary(e, op, x[0], scalar, compute)
        }
        Op::Clamp { min, max } => {
            let mut value = x[0];
            if let Some(min) = min {
                let min = constant(e, min, ty, compute)?;
                value = if compute.is_float() {
                    scalar_ops::at_least(e, value, min)
                } else {
                    e.b.ins().smax(value, min)
                };
            }
            if let Some(max) = max {
                let max = constant(e, max, ty, compute)?;
                value = if compute.is_float() {
                    scalar_ops::at_most(e, value, max)
                } else {
                    e.b.ins().smin(value, max)
                };
            }
            Ok(value)
        }
        // max(x, 0) + slope * min(x, 0): leaky ReLU without a branch.
        Op::LeakyRelu { slope } => {
            let zero = scalar_ops::fconst(e, ty, 0.0);
            let factor = scalar_ops::fconst(e, ty, slope);
            let positive = scalar_ops::at_least(e, x[0], zero);
            let negative = scalar_ops::at_most(e, x[0], zero);
            let scaled = e.b.ins().fmul(negative, factor);
            Ok(e.b.ins().fadd(positive, scaled))
        }
        Op::Elu {
            alpha,
            scale,
            input_scale,
        } => {
            let zero = scalar_ops::fconst(e, ty, 0.0);
            let input_factor = scalar_ops::fconst(e, ty, input_scale);
            let scaled_input = e.b.ins().fmul(x[0], input_factor);
            let function = crate::math::MathFn::Expm1.for_type(ty);
            let exp = e.call_math(function, &[scaled_input])?;
            let alpha_value = scalar_ops::fconst(e, ty, alpha);
            let negative = e.b.ins().fmul(exp, alpha_value);
            let positive = e.b.ins().fcmp(FloatCC::GreaterThan, x[0], zero);
            let chosen = e.b.ins().select(positive, x[0], negative);
            let scale_value = scalar_ops::fconst(e, ty, scale);
            Ok(e.b.ins().fmul(chosen, scale_value))
        }
        _ => Err(CodegenError::Unsupported(format!(
            "{} as an elementwise op",
            op.name()
        ))),
    }
}

/// One elementwise op as a map over its output.
pub(super) fn elementwise(e: &mut Emitter<'_, '_, '_>, node: &Node) -> Result<(), CodegenError> {
    let (compute, result) = compute_types(e, node)?;
    map_over(
        e,
        node.outputs[0],
        &node.inputs,
        compute,
        result,
        vectorizes(&node.op),
        &|e, x, ty| element(e, &node.op, x, ty, compute),
    )
}

/// A fused chain: one map whose body evaluates every step in registers.
/// Each step's result is rounded to the element type as if it were stored
/// (which changes only half-precision values: they are computed in f32).
pub(super) fn fused(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    steps: &[FusedStep],
) -> Result<(), CodegenError> {
    let stored = dtype(e, node.outputs[0]);
    let compute = arithmetic(stored);
    map_over(
        e,
        node.outputs[0],
        &node.inputs,
        compute,
        compute,
        steps.iter().all(|step| vectorizes(&step.op)),
        &|e, x, ty| {
            let mut results: Vec<Value> = Vec::with_capacity(steps.len());
            for step in steps {
                let operands: Vec<Value> = step
                    .inputs
                    .iter()
                    .map(|input| match *input {
                        StepInput::Input(index) => x[index],
                        StepInput::Step(index) => results[index],
                    })
                    .collect();
                let value = element(e, &step.op, &operands, ty, compute)?;
                let rounded = e.convert(value, compute, stored)?;
                results.push(e.convert(rounded, stored, compute)?);
            }
            Ok(*results.last().expect("a fused kernel has steps"))
        },
    )
}
