//! Kernels that are strided maps: elementwise ops, casts and copies, and
//! the layout ops (permute, select, slice, cat, reshape), plus fills and
//! ranges.

use cranelift_codegen::ir::InstBuilder;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use ptec_ir::{DType, Node, Op, Scalar, ValueId};

use super::map::{Map, Operand, emit_copy, emit_map, layout_strides, operand};
use super::pointwise;
use super::scalar_ops;
use crate::emit::{Emitter, Size, arithmetic};
use crate::error::CodegenError;

pub(super) fn dtype(e: &Emitter<'_, '_, '_>, value: ValueId) -> DType {
    e.graph().value(value).ty.dtype
}

/// A map whose output is `node`'s first output and whose inputs are read
/// broadcast to the output's shape.
pub(super) fn map_over<'b>(
    e: &mut Emitter<'_, '_, '_>,
    output: ValueId,
    inputs: &[ValueId],
    compute: DType,
    result: DType,
    vectorizable: bool,
    body: super::map::Body<'b>,
) -> Result<(), CodegenError> {
    let shape = e.graph().value(output).ty.shape.clone();
    let sizes = e.shape(&shape);
    let output_operand = operand(e, output, &shape);
    let input_operands = inputs
        .iter()
        .map(|&input| operand(e, input, &shape))
        .collect();
    emit_map(
        e,
        Map {
            shape: sizes,
            output: output_operand,
            inputs: input_operands,
            compute,
            result,
            vectorizable,
            body,
        },
    )
}

pub(crate) fn where_(e: &mut Emitter<'_, '_, '_>, node: &Node) -> Result<(), CodegenError> {
    let out = node.outputs[0];
    let compute = arithmetic(dtype(e, out));
    // The condition arrives converted to the compute type (0 or 1).
    map_over(
        e,
        out,
        &node.inputs,
        compute,
        compute,
        false,
        &|e, x, ty| {
            let truth = if compute.is_float() {
                let zero = scalar_ops::fconst(e, ty, 0.0);
                e.b.ins().fcmp(FloatCC::NotEqual, x[0], zero)
            } else {
                e.b.ins().icmp_imm_s(IntCC::NotEqual, x[0], 0)
            };
            Ok(e.b.ins().select(truth, x[1], x[2]))
        },
    )
}

/// Copies (broadcasting and converting) the input into the output. Elements
/// of the output's type are moved as they are (half-precision ones as bit
/// patterns).
pub(crate) fn copy(e: &mut Emitter<'_, '_, '_>, node: &Node) -> Result<(), CodegenError> {
    let out = node.outputs[0];
    let compute = dtype(e, out);
    map_over(e, out, &node.inputs, compute, compute, true, &|_, x, _| {
        Ok(x[0])
    })
}

/// A map from one input, read through explicit strides, into the output.
fn strided_copy(
    e: &mut Emitter<'_, '_, '_>,
    output: ValueId,
    input: Operand,
) -> Result<(), CodegenError> {
    let ty = e.graph().value(output).ty.clone();
    let sizes = e.shape(&ty.shape);
    let output = operand(e, output, &ty.shape);
    emit_copy(e, sizes, output, input)
}

/// A reshape that moves bytes: both sides are contiguous, so the input is
/// read in the output's row-major order.
pub(crate) fn reshape(e: &mut Emitter<'_, '_, '_>, node: &Node) -> Result<(), CodegenError> {
    // Views in place never get here (`Graph::is_view_in_place`).
    let (input, output) = (node.inputs[0], node.outputs[0]);
    let ty = e.graph().value(output).ty.clone();
    let strides = layout_strides(e, &ty.shape, &ty.dim_order);
    let base = e.address(input);
    let operand = Operand {
        base,
        dtype: dtype(e, input),
        strides,
    };
    strided_copy(e, output, operand)
}

pub(crate) fn permute(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    dims: &[usize],
) -> Result<(), CodegenError> {
    let input_ty = e.graph().value(node.inputs[0]).ty.clone();
    let own = layout_strides(e, &input_ty.shape, &input_ty.dim_order);
    let base = e.address(node.inputs[0]);
    let operand = Operand {
        base,
        dtype: input_ty.dtype,
        strides: dims.iter().map(|&dim| own[dim]).collect(),
    };
    strided_copy(e, node.outputs[0], operand)
}

/// The input's address at position `start` along `dim`, and its strides.
fn offset_along(e: &mut Emitter<'_, '_, '_>, value: ValueId, dim: usize, start: u64) -> Operand {
    let ty = e.graph().value(value).ty.clone();
    let strides = layout_strides(e, &ty.shape, &ty.dim_order);
    let skip = e.mul(
        strides[dim],
        Size::Const(start as i64 * ty.dtype.size() as i64),
    );
    let base = e.address(value);
    let base = e.add_size(base, skip);
    Operand {
        base,
        dtype: ty.dtype,
        strides,
    }
}

pub(crate) fn select(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    dim: usize,
    index: u64,
) -> Result<(), CodegenError> {
    let mut input = offset_along(e, node.inputs[0], dim, index);
    input.strides.remove(dim);
    strided_copy(e, node.outputs[0], input)
}

pub(crate) fn slice(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    dim: usize,
    start: u64,
    step: u64,
) -> Result<(), CodegenError> {
    let mut input = offset_along(e, node.inputs[0], dim, start);
    input.strides[dim] = e.mul(input.strides[dim], Size::Const(step as i64));
    strided_copy(e, node.outputs[0], input)
}

/// Each input is copied into its place along `dim` of the output.
pub(crate) fn cat(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    dim: usize,
) -> Result<(), CodegenError> {
    let out_ty = e.graph().value(node.outputs[0]).ty.clone();
    let out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let out_base = e.address(node.outputs[0]);
    let mut position = 0i64;
    for &input in &node.inputs {
        let ty = e.graph().value(input).ty.clone();
        let along = ty.shape[dim]
            .fixed()
            .ok_or_else(|| CodegenError::Unsupported("cat along a symbolic dimension".into()))?;
        let sizes = e.shape(&ty.shape);
        let skip = e.mul(
            out_strides[dim],
            Size::Const(position * out_ty.dtype.size() as i64),
        );
        let base = e.add_size(out_base, skip);
        let input_operand = operand(e, input, &ty.shape);
        emit_copy(
            e,
            sizes,
            Operand {
                base,
                dtype: out_ty.dtype,
                strides: out_strides.clone(),
            },
            input_operand,
        )?;
        position += along as i64;
    }
    Ok(())
}

pub(crate) fn full(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    value: Scalar,
) -> Result<(), CodegenError> {
    let out = node.outputs[0];
    let compute = arithmetic(dtype(e, out));
    map_over(e, out, &[], compute, compute, true, &|e, _, ty| {
        if compute.is_float() {
            Ok(scalar_ops::fconst(e, ty, value.as_f64()))
        } else {
            e.constant(compute, value)
        }
    })
}

/// `out[i] = start + i * step`, computed in f64 for float outputs and i64
/// for integer ones.
pub(crate) fn arange(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    start: Scalar,
    step: Scalar,
) -> Result<(), CodegenError> {
    let out = node.outputs[0];
    let ty = e.graph().value(out).ty.clone();
    let count = e.dim(ty.shape[0]);
    let base = e.address(out);
    let element = ty.dtype.size() as i64;
    let wide = if ty.dtype.is_float() {
        DType::F64
    } else {
        DType::I64
    };
    e.counted_loop(count, &[base], |e, index, pointers| {
        let value = if wide == DType::F64 {
            let index =
                e.b.ins()
                    .fcvt_from_sint(cranelift_codegen::ir::types::F64, index);
            let step = e.b.ins().f64const(step.as_f64());
            let start = e.b.ins().f64const(start.as_f64());
            let offset = e.b.ins().fmul(index, step);
            e.b.ins().fadd(start, offset)
        } else {
            let offset = e.b.ins().imul_imm_s(index, step.as_i64());
            e.b.ins().iadd_imm_s(offset, start.as_i64())
        };
        let value = e.convert(value, wide, ty.dtype)?;
        e.store(value, pointers[0]);
        Ok(vec![e.b.ins().iadd_imm_s(pointers[0], element)])
    })?;
    Ok(())
}

/// Fills the output with the pad value, then copies the input into the
/// interior.
pub(crate) fn pad(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    before: &[u64],
    value: Scalar,
) -> Result<(), CodegenError> {
    full(e, node, value)?;
    let out_ty = e.graph().value(node.outputs[0]).ty.clone();
    let in_ty = e.graph().value(node.inputs[0]).ty.clone();
    let out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let mut base = e.address(node.outputs[0]);
    for (axis, &skip) in before.iter().enumerate() {
        let bytes = e.mul(
            out_strides[axis],
            Size::Const(skip as i64 * out_ty.dtype.size() as i64),
        );
        base = e.add_size(base, bytes);
    }
    let sizes = e.shape(&in_ty.shape);
    let input = operand(e, node.inputs[0], &in_ty.shape);
    emit_copy(
        e,
        sizes,
        Operand {
            base,
            dtype: out_ty.dtype,
            strides: out_strides,
        },
        input,
    )
}

/// Tiling as one map over `[r0, s0, r1, s1, ...]`: the output walks it
/// contiguously, the input ignores the repeat axes.
pub(crate) fn repeat(
    e: &mut Emitter<'_, '_, '_>,
    node: &Node,
    repeats: &[u64],
) -> Result<(), CodegenError> {
    let out_ty = e.graph().value(node.outputs[0]).ty.clone();
    let in_ty = e.graph().value(node.inputs[0]).ty.clone();
    if !out_ty.is_contiguous() {
        return Err(CodegenError::Unsupported(
            "repeat into a permuted tensor".into(),
        ));
    }
    let in_strides = layout_strides(e, &in_ty.shape, &in_ty.dim_order);
    let lead = repeats.len() - in_ty.rank();
    let (mut shape, mut in_steps, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
    for (axis, &times) in repeats.iter().enumerate() {
        let (size, stride) = match axis.checked_sub(lead) {
            Some(index) => (
                in_ty.shape[index].fixed().unwrap_or(1) as i64,
                in_strides[index],
            ),
            None => (1, Size::Const(0)),
        };
        shape.extend([times as i64, size]);
        in_steps.extend([Size::Const(0), stride]);
        sizes.push(size);
    }
    // Row-major strides of the [r0, s0, r1, s1, ...] view of the output.
    let mut out_steps = vec![Size::Const(0); shape.len()];
    let mut stride = 1i64;
    for axis in (0..shape.len()).rev() {
        out_steps[axis] = Size::Const(stride);
        stride *= shape[axis];
    }
    let base = e.address(node.outputs[0]);
    let input = Operand {
        base: e.address(node.inputs[0]),
        dtype: in_ty.dtype,
        strides: in_steps,
    };
    emit_copy(
        e,
        shape.into_iter().map(Size::Const).collect(),
        Operand {
            base,
            dtype: out_ty.dtype,
            strides: out_steps,
        },
        input,
    )
}

/// Dispatches the map-shaped ops.
pub(crate) fn lower(e: &mut Emitter<'_, '_, '_>, node: &Node) -> Result<bool, CodegenError> {
    match &node.op {
        Op::Unary(_)
        | Op::Binary { .. }
        | Op::BinaryScalar { .. }
        | Op::Clamp { .. }
        | Op::LeakyRelu { .. }
        | Op::Elu { .. } => pointwise::elementwise(e, node)?,
        Op::Fused { steps } => pointwise::fused(e, node, steps)?,
        Op::Where => where_(e, node)?,
        Op::Copy => copy(e, node)?,
        Op::Reshape => reshape(e, node)?,
        Op::Permute { dims } => permute(e, node, dims)?,
        Op::Select { dim, index } => select(e, node, *dim, *index)?,
        Op::Slice { dim, start, step } => slice(e, node, *dim, *start, *step)?,
        Op::Cat { dim } => cat(e, node, *dim)?,
        Op::Full { value } => full(e, node, *value)?,
        Op::Arange { start, step } => arange(e, node, *start, *step)?,
        Op::Pad { before, value, .. } => pad(e, node, before, *value)?,
        Op::Repeat { repeats } => repeat(e, node, repeats)?,
        _ => return Ok(false),
    }
    Ok(true)
}
