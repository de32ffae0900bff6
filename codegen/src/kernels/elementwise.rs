//! Kernels that are strided maps besides the elementwise functions
//! (`pointwise.rs`): casts and copies, the layout ops (reshape, permute,
//! select, slice, cat, padding and rolling by pieces, repeat, strided reads,
//! slice scatters, triangles), fills and ranges.

use cranelift_codegen::ir::InstBuilder;
use ptec_ir::ops::creation::Arange;
use ptec_ir::ops::layout::{
    Cat, Pad, PadMode, Permute, Piece, Repeat, Reshape, Roll, Select, Slice, SliceScatter, Source,
    Strided, Tril,
};
use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim, Scalar, ValueId, ValueKind, strides_in_order};

use super::expr::{self, Lowering};
use super::map::{Body, Map, Operand, Vectors, emit_copy, emit_map, layout_strides, operand};
use crate::emit::{Emitter, Size};
use crate::error::CodegenError;

pub(super) fn dtype(e: &Emitter<'_, '_, '_>, value: ValueId) -> DType {
    e.graph().value(value).ty.dtype
}

/// A map over `output` whose inputs are read broadcast to its shape, not
/// split across threads (callers that compute nothing else say so).
pub(super) fn map_over<'b>(
    e: &mut Emitter<'_, '_, '_>,
    output: ValueId,
    inputs: &[ValueId],
    compute: DType,
    result: DType,
    vectors: Vectors,
    body: Body<'b>,
) -> Map<'b> {
    let shape = e.graph().value(output).ty.shape.clone();
    let sizes = e.shape(&shape);
    let output_operand = operand(e, output, &shape);
    let input_operands = inputs
        .iter()
        .map(|&input| operand(e, input, &shape))
        .collect();
    Map {
        shape: sizes,
        output: output_operand,
        inputs: input_operands,
        compute,
        result,
        vectors,
        body,
        whole_kernel: false,
    }
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
    let body: Body<'_> = &|_, x, _| Ok(x[0]);
    let map = map_over(e, output, &[input], compute, compute, Vectors::F32, body);
    emit_map(e, map)
}

/// Whether two values share their memory (an op updating a value in
/// place), so that copying one into the other is nothing to do.
fn same_memory(e: &Emitter<'_, '_, '_>, a: ValueId, b: ValueId) -> bool {
    let (x, y) = (e.graph().value(a), e.graph().value(b));
    let arena = |kind: &ValueKind<'_>| !matches!(kind, ValueKind::Constant(_));
    a == b || (arena(&x.kind) && arena(&y.kind) && x.offset.is_some() && x.offset == y.offset)
}

/// `output` starts as a copy of `input` (nothing to do in place), for ops
/// that then write some of its elements.
pub(super) fn start_from(
    e: &mut Emitter<'_, '_, '_>,
    input: ValueId,
    output: ValueId,
) -> Result<(), CodegenError> {
    if same_memory(e, input, output) {
        Ok(())
    } else {
        copy(e, input, output)
    }
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
    let body: Body<'_> = &|e, _, ty| match (value, symbolic) {
        (_, Some(read)) if ty.is_vector() => Ok(e.b.ins().splat(ty, read)),
        (_, Some(read)) => Ok(read),
        (Term::Const(value), None) => expr::constant(e, value, Lowering { compute, ty }),
        (Term::Symbol(symbol), None) => Err(e.unsupported(format!("{symbol}, unread"))),
    };
    let map = map_over(e, output, &[], compute, compute, Vectors::F32, body);
    emit_map(e, map)
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

/// Padding (constant, reflected or replicated; negative amounts crop), by
/// its pieces.
pub(crate) fn pad(
    e: &mut Emitter<'_, '_, '_>,
    op: &Pad,
    output: ValueId,
) -> Result<(), CodegenError> {
    if let PadMode::Constant(value) = op.mode
        && e.graph().value(op.input).ty.fixed_shape().is_none()
    {
        return pad_symbolic(e, op, value, output);
    }
    let sizes = fixed_sizes(e, op.input)?;
    let fill = match op.mode {
        PadMode::Constant(value) => Some(value),
        PadMode::Reflect | PadMode::Replicate => None,
    };
    by_pieces(e, op.input, output, &op.pieces(&sizes), fill)
}

/// Constant padding of an input whose sizes are known only at run time:
/// the output is filled, then the input copied in at the paddings before.
/// The IR allows no cropping (negative padding) of such an input.
fn pad_symbolic(
    e: &mut Emitter<'_, '_, '_>,
    op: &Pad,
    value: Scalar,
    output: ValueId,
) -> Result<(), CodegenError> {
    if op.before.iter().chain(&op.after).any(|&amount| amount < 0) {
        return Err(e.unsupported("cropping a tensor of symbolic shape"));
    }
    full(e, Term::Const(value), output)?;
    let out_ty = e.graph().value(output).ty.clone();
    let in_ty = e.graph().value(op.input).ty.clone();
    let out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let mut base = e.address(output);
    for (axis, &skip) in op.before.iter().enumerate() {
        let bytes = e.mul(
            out_strides[axis],
            Size::Const(skip * out_ty.dtype.size() as i64),
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

pub(crate) fn roll(
    e: &mut Emitter<'_, '_, '_>,
    op: &Roll,
    output: ValueId,
) -> Result<(), CodegenError> {
    let sizes = fixed_sizes(e, op.input)?;
    by_pieces(e, op.input, output, &op.pieces(&sizes), None)
}

fn fixed_sizes(e: &Emitter<'_, '_, '_>, value: ValueId) -> Result<Vec<u64>, CodegenError> {
    e.graph()
        .value(value)
        .ty
        .fixed_shape()
        .ok_or_else(|| e.unsupported("a tensor of symbolic shape"))
}

/// A copy that maps each dimension on its own, by pieces: the output is
/// first filled with `fill` when some piece is filling, then every block of
/// pieces that reads the input (one of each dimension) is one strided copy.
fn by_pieces(
    e: &mut Emitter<'_, '_, '_>,
    input: ValueId,
    output: ValueId,
    pieces: &[Vec<Piece>],
    fill: Option<Scalar>,
) -> Result<(), CodegenError> {
    let filling = pieces
        .iter()
        .flatten()
        .any(|piece| piece.source == Source::Fill);
    if let Some(value) = fill.filter(|_| filling) {
        full(e, Term::Const(value), output)?;
    }
    let in_ty = e.graph().value(input).ty.clone();
    let out_ty = e.graph().value(output).ty.clone();
    let in_strides = layout_strides(e, &in_ty.shape, &in_ty.dim_order);
    let out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let (in_base, out_base) = (e.address(input), e.address(output));
    // Blocks of one piece per dimension, odometer-wise.
    let mut choice = vec![0; pieces.len()];
    if pieces.iter().any(Vec::is_empty) {
        return Ok(());
    }
    loop {
        let block: Vec<Piece> = choice.iter().zip(pieces).map(|(&k, dim)| dim[k]).collect();
        let runs: Option<Vec<(u64, i64)>> = block
            .iter()
            .map(|piece| match piece.source {
                Source::Run { start, step } => Some((start, step)),
                Source::Fill => None,
            })
            .collect();
        if let Some(runs) = runs {
            let (mut from, mut to) = (0i64, 0i64);
            let mut steps = Vec::with_capacity(block.len());
            for (dim, (piece, &(start, step))) in block.iter().zip(&runs).enumerate() {
                let (in_stride, out_stride) =
                    (constant(in_strides[dim]), constant(out_strides[dim]));
                from += start as i64 * in_stride;
                to += piece.start as i64 * out_stride;
                steps.push(Size::Const(in_stride * step));
            }
            let shape = block
                .iter()
                .map(|piece| Size::Const(piece.len as i64))
                .collect();
            let element = |dtype: DType| dtype.size() as i64;
            let from = e.b.ins().iadd_imm_s(in_base, from * element(in_ty.dtype));
            let to = e.b.ins().iadd_imm_s(out_base, to * element(out_ty.dtype));
            emit_copy(
                e,
                shape,
                Operand {
                    base: to,
                    dtype: out_ty.dtype,
                    strides: out_strides.clone(),
                },
                Operand {
                    base: from,
                    dtype: in_ty.dtype,
                    strides: steps,
                },
            )?;
        }
        let Some(dim) = (0..pieces.len())
            .rev()
            .find(|&dim| choice[dim] + 1 < pieces[dim].len())
        else {
            return Ok(());
        };
        choice[dim] += 1;
        choice[dim + 1..].iter_mut().for_each(|k| *k = 0);
    }
}

/// A stride of a fixed shape.
fn constant(size: Size) -> i64 {
    size.constant().unwrap_or(0)
}

/// `out[c] = x's element at memory position offset + sum(c[d] * strides[d])`.
pub(crate) fn strided(
    e: &mut Emitter<'_, '_, '_>,
    op: &Strided,
    output: ValueId,
) -> Result<(), CodegenError> {
    let dtype = dtype(e, op.input);
    let base = e.address(op.input);
    let base =
        e.b.ins()
            .iadd_imm_s(base, op.offset as i64 * dtype.size() as i64);
    let input = Operand {
        base,
        dtype,
        strides: op
            .strides
            .iter()
            .map(|&stride| Size::Const(stride))
            .collect(),
    };
    strided_copy(e, output, input)
}

/// `out = input` with the slice `start::step` along `dim` replaced by `src`.
pub(crate) fn slice_scatter(
    e: &mut Emitter<'_, '_, '_>,
    op: &SliceScatter,
    output: ValueId,
) -> Result<(), CodegenError> {
    start_from(e, op.input, output)?;
    let mut to = offset_along(e, output, op.dim, Dim::Fixed(op.start));
    to.strides[op.dim] = e.mul(to.strides[op.dim], Size::Const(op.step as i64));
    let src_ty = e.graph().value(op.src).ty.clone();
    let sizes = e.shape(&src_ty.shape);
    let from = operand(e, op.src, &src_ty.shape);
    emit_copy(e, sizes, to, from)
}

/// `out = x.tril(diagonal)`: row `i` of each matrix keeps its first
/// `clamp(i + diagonal + 1, 0, columns)` elements and the rest is zero.
pub(crate) fn tril(
    e: &mut Emitter<'_, '_, '_>,
    op: &Tril,
    output: ValueId,
) -> Result<(), CodegenError> {
    let ty = e.graph().value(output).ty.clone();
    let rank = ty.rank();
    let sizes = e.shape(&ty.shape);
    let in_bytes = super::nest::byte_strides(e, op.input);
    let out_bytes = super::nest::byte_strides(e, output);
    let in_ty = e.graph().value(op.input).ty.clone();
    let in_strides = layout_strides(e, &in_ty.shape, &in_ty.dim_order);
    let out_strides = layout_strides(e, &ty.shape, &ty.dim_order);
    let bases = [e.address(op.input), e.address(output)];
    let columns = e.value_of(sizes[rank - 1]);
    let batch: Vec<usize> = (0..rank - 2).collect();
    let (rows, diagonal) = (sizes[rank - 2], op.diagonal);
    let (in_row, out_row) = (in_bytes[rank - 2], out_bytes[rank - 2]);
    let (in_step, out_step) = (in_strides[rank - 1], out_strides[rank - 1]);
    super::nest::over_axes(
        e,
        &sizes,
        &[in_bytes.clone(), out_bytes.clone()],
        &batch,
        &bases,
        &mut |e, pointers| {
            e.counted_loop(rows, pointers, |e, row, p| {
                let kept = e.b.ins().iadd_imm_s(row, diagonal.saturating_add(1));
                let zero = e.iconst(0);
                let kept = e.b.ins().smax(kept, zero);
                let kept = e.b.ins().smin(kept, columns);
                let row_of = |base, dtype, step| Operand {
                    base,
                    dtype,
                    strides: vec![step],
                };
                emit_copy(
                    e,
                    vec![Size::Dyn(kept)],
                    row_of(p[1], ty.dtype, out_step),
                    row_of(p[0], in_ty.dtype, in_step),
                )?;
                let zeros = e.b.ins().isub(columns, kept);
                let skip = e.mul(out_step, Size::Const(ty.dtype.size() as i64));
                let skip = e.value_of(skip);
                let skip = e.b.ins().imul(kept, skip);
                let rest = e.b.ins().iadd(p[1], skip);
                let compute = ty.dtype.arithmetic();
                emit_map(
                    e,
                    Map {
                        shape: vec![Size::Dyn(zeros)],
                        output: row_of(rest, ty.dtype, out_step),
                        inputs: Vec::new(),
                        compute,
                        result: compute,
                        vectors: Vectors::F32,
                        body: &|e, _, ty| {
                            expr::constant(e, Scalar::Int(0), Lowering { compute, ty })
                        },
                        whole_kernel: false,
                    },
                )?;
                Ok(vec![e.add_size(p[0], in_row), e.add_size(p[1], out_row)])
            })?;
            Ok(())
        },
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
