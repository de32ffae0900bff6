//! Kernels that are strided maps besides the elementwise functions
//! (`pointwise.rs`): casts and copies, the layout ops (reshape, permute,
//! select, slice, cat, pad, repeat), fills and ranges.

use cranelift_codegen::ir::InstBuilder;
use ptec_ir::ops::creation::Arange;
use ptec_ir::ops::layout::{Cat, Pad, Permute, Repeat, Reshape, Select, Slice};
use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim, ValueId, strides_in_order};

use super::expr::{self, Lowering};
use super::map::{Map, Operand, emit_copy, emit_map, layout_strides, operand};
use crate::emit::{Emitter, Size};
use crate::error::CodegenError;

pub(super) fn dtype(e: &Emitter<'_, '_, '_>, value: ValueId) -> DType {
    e.graph().value(value).ty.dtype
}

/// A map over `output` whose inputs are read broadcast to its shape.
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

/// Copies (broadcasting and converting) the input into the output. Elements
/// of the output's type are moved as they are (half-precision ones as bit
/// patterns).
pub(crate) fn copy(
    e: &mut Emitter<'_, '_, '_>,
    input: ValueId,
    output: ValueId,
) -> Result<(), CodegenError> {
    let compute = dtype(e, output);
    map_over(e, output, &[input], compute, compute, true, &|_, x, _| {
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
pub(crate) fn reshape(
    e: &mut Emitter<'_, '_, '_>,
    op: &Reshape,
    output: ValueId,
) -> Result<(), CodegenError> {
    // Views in place never get here (`Graph::is_view_in_place`).
    let input = op.input;
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
    op: &Permute,
    output: ValueId,
) -> Result<(), CodegenError> {
    let input_ty = e.graph().value(op.input).ty.clone();
    let own = layout_strides(e, &input_ty.shape, &input_ty.dim_order);
    let base = e.address(op.input);
    let operand = Operand {
        base,
        dtype: input_ty.dtype,
        strides: op.dims.iter().map(|&dim| own[dim]).collect(),
    };
    strided_copy(e, output, operand)
}

/// The input's address at position `start` along `dim`, and its strides.
fn offset_along(e: &mut Emitter<'_, '_, '_>, value: ValueId, dim: usize, start: Dim) -> Operand {
    let ty = e.graph().value(value).ty.clone();
    let strides = layout_strides(e, &ty.shape, &ty.dim_order);
    let start = e.dim(start);
    let start_bytes = e.mul(start, Size::Const(ty.dtype.size() as i64));
    let skip = e.mul(strides[dim], start_bytes);
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
    op: &Select,
    output: ValueId,
) -> Result<(), CodegenError> {
    let mut input = offset_along(e, op.input, op.dim, op.index);
    input.strides.remove(op.dim);
    strided_copy(e, output, input)
}

pub(crate) fn slice(
    e: &mut Emitter<'_, '_, '_>,
    op: &Slice,
    output: ValueId,
) -> Result<(), CodegenError> {
    let mut input = offset_along(e, op.input, op.dim, op.start);
    input.strides[op.dim] = e.mul(input.strides[op.dim], Size::Const(op.step as i64));
    strided_copy(e, output, input)
}

/// Each input is copied into its place along `dim` of the output.
pub(crate) fn cat(
    e: &mut Emitter<'_, '_, '_>,
    op: &Cat,
    output: ValueId,
) -> Result<(), CodegenError> {
    let dim = op.dim;
    let out_ty = e.graph().value(output).ty.clone();
    let out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let out_base = e.address(output);
    let element = Size::Const(out_ty.dtype.size() as i64);
    let mut position = Size::Const(0);
    for &input in &op.inputs {
        let ty = e.graph().value(input).ty.clone();
        let sizes = e.shape(&ty.shape);
        let start = e.mul(position, element);
        let skip = e.mul(out_strides[dim], start);
        let base = e.add_size(out_base, skip);
        let input_operand = operand(e, input, &ty.shape);
        emit_copy(
            e,
            sizes.clone(),
            Operand {
                base,
                dtype: out_ty.dtype,
                strides: out_strides.clone(),
            },
            input_operand,
        )?;
        position = e.add(position, sizes[dim]);
    }
    Ok(())
}

/// Fills the output with `value`, converted to its element type.
pub(crate) fn full(
    e: &mut Emitter<'_, '_, '_>,
    value: Term,
    output: ValueId,
) -> Result<(), CodegenError> {
    let compute = dtype(e, output).arithmetic();
    // A value known only at run time is read once, before the loop.
    let symbolic = match value {
        Term::Const(_) => None,
        Term::Symbol(_) => Some(e.term(value, compute)?),
    };
    map_over(
        e,
        output,
        &[],
        compute,
        compute,
        true,
        &|e, _, ty| match (value, symbolic) {
            (_, Some(read)) if ty.is_vector() => Ok(e.b.ins().splat(ty, read)),
            (_, Some(read)) => Ok(read),
            (Term::Const(value), None) => expr::constant(e, value, Lowering { compute, ty }),
            (Term::Symbol(symbol), None) => Err(e.unsupported(format!("{symbol}, unread"))),
        },
    )
}

/// `out[i] = start + i * step`, computed in f64 for float outputs and i64
/// for integer ones.
pub(crate) fn arange(
    e: &mut Emitter<'_, '_, '_>,
    &Arange { start, step }: &Arange,
    out: ValueId,
) -> Result<(), CodegenError> {
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
            let start = e.term(start, wide)?;
            let offset = e.b.ins().fmul(index, step);
            e.b.ins().fadd(start, offset)
        } else {
            let offset = e.b.ins().imul_imm_s(index, step.as_i64());
            match start {
                Term::Const(start) => e.b.ins().iadd_imm_s(offset, start.as_i64()),
                Term::Symbol(_) => {
                    let start = e.term(start, wide)?;
                    e.b.ins().iadd(offset, start)
                }
            }
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
    op: &Pad,
    output: ValueId,
) -> Result<(), CodegenError> {
    full(e, Term::Const(op.value), output)?;
    let out_ty = e.graph().value(output).ty.clone();
    let in_ty = e.graph().value(op.input).ty.clone();
    let out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let mut base = e.address(output);
    for (axis, &skip) in op.before.iter().enumerate() {
        let bytes = e.mul(
            out_strides[axis],
            Size::Const(skip as i64 * out_ty.dtype.size() as i64),
        );
        base = e.add_size(base, bytes);
    }
    let sizes = e.shape(&in_ty.shape);
    let input = operand(e, op.input, &in_ty.shape);
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
    op: &Repeat,
    output: ValueId,
) -> Result<(), CodegenError> {
    let repeats = &op.repeats;
    let out_ty = e.graph().value(output).ty.clone();
    let in_ty = e.graph().value(op.input).ty.clone();
    if !out_ty.is_contiguous() {
        return Err(e.unsupported("repeat into a permuted tensor"));
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
    let row_major: Vec<u8> = (0..shape.len() as u8).collect();
    let out_steps = strides_in_order(&shape, &row_major, 1, |stride, size| stride * size);
    let base = e.address(output);
    let input = Operand {
        base: e.address(op.input),
        dtype: in_ty.dtype,
        strides: in_steps,
    };
    emit_copy(
        e,
        shape.into_iter().map(Size::Const).collect(),
        Operand {
            base,
            dtype: out_ty.dtype,
            strides: out_steps.into_iter().map(Size::Const).collect(),
        },
        input,
    )
}
