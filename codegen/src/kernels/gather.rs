//! Gathers and scatters: advanced indexing (which `index_select` and
//! embeddings are), `gather`, `scatter` and `scatter_add`, `index_put`,
//! `masked_scatter`, and the indices of `repeat_interleave`. Every index read
//! from a tensor is checked before it addresses memory: one outside its
//! dimension (after counting a negative one from the end, where PyTorch
//! does) makes the kernel return an error, as PyTorch raises one.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use ptec_ir::ops::gather::{Gather, Index, IndexPut, MaskedScatter, Scatter, indexed_shape};
use ptec_ir::ops::{Identical, creation::RepeatInterleave};
use ptec_ir::{DType, Dim, ValueId};

use super::elementwise::start_from;
use super::map::{Map, Operand, Vectors, broadcast_strides, emit_copy, emit_map, layout_strides};
use super::nest::{byte_strides, fold_axes, over_axes};
use crate::emit::{Emitter, Size};
use crate::error::CodegenError;

/// How a checked index treats negative values.
#[derive(Clone, Copy)]
enum Negative {
    /// Counted from the end once (advanced indexing, `index_put`).
    Wrap,
    /// Out of range (`index_select`, `embedding`, `gather`, `scatter`).
    OutOfRange,
}

/// Loads the index at `address` (an integer of `dtype`) as a position along
/// dimension `dim` of `size` elements, returning the kernel's error when it
/// lies outside.
fn checked_index(
    e: &mut Emitter<'_, '_, '_>,
    dtype: DType,
    address: Value,
    (dim, size): (usize, Size),
    negative: Negative,
) -> Result<Value, CodegenError> {
    let index = e.load(dtype, address);
    let index = e.convert(index, dtype, DType::I64)?;
    let limit = e.value_of(size);
    let (index, range) = match negative {
        Negative::Wrap => {
            let below = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, index, 0);
            let wrapped = e.b.ins().iadd(index, limit);
            (e.b.ins().select(below, wrapped, index), "-size..size")
        }
        Negative::OutOfRange => (index, "0..size"),
    };
    let outside =
        e.b.ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, index, limit);
    let size = match size {
        Size::Const(size) => size.to_string(),
        Size::Dyn(_) => "its size".to_string(),
    };
    let message = format!(
        "{}: index out of range: an index of dimension {dim} (size {size}) is outside {range}",
        e.op_name()
    );
    e.fail_if(outside, message);
    Ok(index)
}

/// Byte strides with which a value is read broadcast to `target`.
fn broadcast_bytes(e: &mut Emitter<'_, '_, '_>, value: ValueId, target: &[Dim]) -> Vec<Size> {
    let ty = e.graph().value(value).ty.clone();
    let strides = broadcast_strides(e, &ty, target);
    let size = Size::Const(ty.dtype.size() as i64);
    strides
        .into_iter()
        .map(|stride| e.mul(stride, size))
        .collect()
}

/// Stores `source` (an element of `dtype` at `from`) at `to`, converted to
/// `target`, or added to the element there when `accumulate` (in the
/// target's arithmetic type; booleans add as "or"); `shape` elements at
/// once with the operands' strides.
fn put(
    e: &mut Emitter<'_, '_, '_>,
    shape: Vec<Size>,
    to: Operand,
    from: Operand,
    accumulate: bool,
) -> Result<(), CodegenError> {
    if !accumulate {
        return emit_copy(e, shape, to, from);
    }
    let dtype = to.dtype;
    let compute = dtype.arithmetic();
    emit_map(
        e,
        Map {
            shape,
            output: to.clone(),
            inputs: vec![to, from],
            compute,
            result: compute,
            vectors: Vectors::F32,
            body: &|e, x, _| {
                Ok(if compute.is_float() {
                    e.b.ins().fadd(x[0], x[1])
                } else if compute == DType::Bool {
                    e.b.ins().bor(x[0], x[1])
                } else {
                    e.b.ins().iadd(x[0], x[1])
                })
            },
            whole_kernel: false,
        },
    )
}

/// The layout of an advanced indexing of `x` (of rank `rank`) at `dims`
/// with a result of rank `result_rank`: the result's axes that hold the
/// broadcast index shape, and `x`'s dimensions taken whole with the
/// result's axes they become.
struct Indexing {
    broadcast_axes: std::ops::Range<usize>,
    whole: Vec<(usize, usize)>,
}

impl Indexing {
    fn new(rank: usize, dims: &[usize], result_rank: usize) -> Indexing {
        let broadcast_rank = result_rank + dims.len() - rank;
        let first = if Index::in_place(dims) { dims[0] } else { 0 };
        let broadcast_axes = first..first + broadcast_rank;
        let result_axes = (0..result_rank).filter(|axis| !broadcast_axes.contains(axis));
        let whole = (0..rank)
            .filter(|dim| !dims.contains(dim))
            .zip(result_axes)
            .collect();
        Indexing {
            broadcast_axes,
            whole,
        }
    }
}

/// Code emitted at each position of the broadcast index shape, given the
/// byte offset the indices address and the walked operands' pointers.
type PositionBody<'b> =
    dyn FnMut(&mut Emitter<'_, '_, '_>, Value, &[Value]) -> Result<(), CodegenError> + 'b;

/// Calls `body` at every position of the broadcast index shape of an
/// advanced indexing of `x`, with the byte offset in `x` the indices there
/// address (each checked) and the pointers of `walking` (values walked
/// along the result's axes by their byte strides there).
fn for_each_position(
    e: &mut Emitter<'_, '_, '_>,
    (x, dims, negative): (ValueId, &[usize], Negative),
    indices: &[ValueId],
    (result_shape, indexing): (&[Dim], &Indexing),
    walking: &[(Value, Vec<Size>)],
    body: &mut PositionBody<'_>,
) -> Result<(), CodegenError> {
    let target: Vec<Dim> = result_shape[indexing.broadcast_axes.clone()].to_vec();
    let sizes = e.shape(&target);
    let x_ty = e.graph().value(x).ty.clone();
    let x_strides = byte_strides(e, x);
    let dim_sizes: Vec<Size> = dims.iter().map(|&dim| e.dim(x_ty.shape[dim])).collect();
    let mut strides: Vec<Vec<Size>> = walking
        .iter()
        .map(|(_, strides)| strides[indexing.broadcast_axes.clone()].to_vec())
        .collect();
    let mut bases: Vec<Value> = walking.iter().map(|&(base, _)| base).collect();
    for &index in indices {
        strides.push(broadcast_bytes(e, index, &target));
        bases.push(e.address(index));
    }
    let index_types: Vec<DType> = indices
        .iter()
        .map(|&index| e.graph().value(index).ty.dtype)
        .collect();
    let axes: Vec<usize> = (0..target.len()).collect();
    let walked = walking.len();
    over_axes(e, &sizes, &strides, &axes, &bases, &mut |e, pointers| {
        let mut offset = e.iconst(0);
        for (k, &dim) in dims.iter().enumerate() {
            let position = (dim, dim_sizes[k]);
            let index = checked_index(e, index_types[k], pointers[walked + k], position, negative)?;
            let stride = e.value_of(x_strides[dim]);
            let bytes = e.b.ins().imul(index, stride);
            offset = e.b.ins().iadd(offset, bytes);
        }
        body(e, offset, &pointers[..walked])
    })
}

/// `out = x[indices]` (advanced indexing): for each position of the
/// broadcast index shape, the part of `x` taken whole is copied.
pub(super) fn index(
    e: &mut Emitter<'_, '_, '_>,
    op: &Index,
    output: ValueId,
) -> Result<(), CodegenError> {
    let x_ty = e.graph().value(op.input).ty.clone();
    let out_ty = e.graph().value(output).ty.clone();
    let indexing = Indexing::new(x_ty.rank(), &op.dims, out_ty.rank());
    let x_strides = layout_strides(e, &x_ty.shape, &x_ty.dim_order);
    let out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let out_bytes = byte_strides(e, output);
    let sizes = e.shape(&out_ty.shape);
    let whole_sizes: Vec<Size> = indexing
        .whole
        .iter()
        .map(|&(_, axis)| sizes[axis])
        .collect();
    let to_strides: Vec<Size> = indexing
        .whole
        .iter()
        .map(|&(_, axis)| out_strides[axis])
        .collect();
    let from_strides: Vec<Size> = indexing
        .whole
        .iter()
        .map(|&(dim, _)| x_strides[dim])
        .collect();
    let negative = if op.wrap {
        Negative::Wrap
    } else {
        Negative::OutOfRange
    };
    let x_base = e.address(op.input);
    let out_base = e.address(output);
    for_each_position(
        e,
        (op.input, &op.dims, negative),
        &op.indices,
        (&out_ty.shape, &indexing),
        &[(out_base, out_bytes)],
        &mut |e, offset, pointers| {
            let from = e.b.ins().iadd(x_base, offset);
            emit_copy(
                e,
                whole_sizes.clone(),
                Operand {
                    base: pointers[0],
                    dtype: out_ty.dtype,
                    strides: to_strides.clone(),
                },
                Operand {
                    base: from,
                    dtype: x_ty.dtype,
                    strides: from_strides.clone(),
                },
            )
        },
    )
}

/// `out = input; out[indices] = values` (or `+=`): for each position of the
/// broadcast index shape, the values there are written over (or added to)
/// the part of `out` taken whole.
pub(super) fn index_put(
    e: &mut Emitter<'_, '_, '_>,
    op: &IndexPut,
    output: ValueId,
) -> Result<(), CodegenError> {
    start_from(e, op.input, output)?;
    let out_ty = e.graph().value(output).ty.clone();
    let index_shapes: Vec<Vec<Dim>> = op
        .indices
        .iter()
        .map(|&index| e.graph().value(index).ty.shape.clone())
        .collect();
    let index_shapes: Vec<&[Dim]> = index_shapes.iter().map(Vec::as_slice).collect();
    let mut cx = Identical::new(e.graph().symbol_table());
    let target = indexed_shape(&out_ty.shape, &op.dims, &index_shapes, &mut cx)
        .map_err(|error| e.unsupported(error.to_string()))?;
    let indexing = Indexing::new(out_ty.rank(), &op.dims, target.len());
    let values_ty = e.graph().value(op.values).ty.clone();
    let values_strides = broadcast_strides(e, &values_ty, &target);
    let values_bytes = broadcast_bytes(e, op.values, &target);
    let out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let sizes = e.shape(&target);
    let whole_sizes: Vec<Size> = indexing
        .whole
        .iter()
        .map(|&(_, axis)| sizes[axis])
        .collect();
    let to_strides: Vec<Size> = indexing
        .whole
        .iter()
        .map(|&(dim, _)| out_strides[dim])
        .collect();
    let from_strides: Vec<Size> = indexing
        .whole
        .iter()
        .map(|&(_, axis)| values_strides[axis])
        .collect();
    let out_base = e.address(output);
    let values_base = e.address(op.values);
    for_each_position(
        e,
        (output, &op.dims, Negative::Wrap),
        &op.indices,
        (&target, &indexing),
        &[(values_base, values_bytes)],
        &mut |e, offset, pointers| {
            let to = e.b.ins().iadd(out_base, offset);
            put(
                e,
                whole_sizes.clone(),
                Operand {
                    base: to,
                    dtype: out_ty.dtype,
                    strides: to_strides.clone(),
                },
                Operand {
                    base: pointers[0],
                    dtype: values_ty.dtype,
                    strides: from_strides.clone(),
                },
                op.accumulate,
            )
        },
    )
}

/// `out[c] = x[c with c[dim] = index[c]]`, one element at a time.
pub(super) fn gather(
    e: &mut Emitter<'_, '_, '_>,
    &Gather { input, index, dim }: &Gather,
    output: ValueId,
) -> Result<(), CodegenError> {
    let index_ty = e.graph().value(index).ty.clone();
    let (x_ty, out_ty) = (
        e.graph().value(input).ty.clone(),
        e.graph().value(output).ty.clone(),
    );
    let sizes = e.shape(&index_ty.shape);
    let mut x_bytes = byte_strides(e, input);
    let step = x_bytes[dim];
    x_bytes[dim] = Size::Const(0);
    let strides = [byte_strides(e, output), byte_strides(e, index), x_bytes];
    let bases = [e.address(output), e.address(index), e.address(input)];
    let position = (dim, e.dim(x_ty.shape[dim]));
    let axes: Vec<usize> = (0..sizes.len()).collect();
    over_axes(e, &sizes, &strides, &axes, &bases, &mut |e, pointers| {
        let from = at_index(e, index_ty.dtype, pointers[1], position, step, pointers[2])?;
        emit_copy(
            e,
            Vec::new(),
            element(pointers[0], out_ty.dtype),
            element(from, x_ty.dtype),
        )
    })
}

/// The address of the element a `gather` reads or a `scatter` writes: the
/// index at `index` (checked against `position`'s size; negative ones out
/// of range) times the byte `step` of its dimension, from `base`.
fn at_index(
    e: &mut Emitter<'_, '_, '_>,
    index_dtype: DType,
    index: Value,
    position: (usize, Size),
    step: Size,
    base: Value,
) -> Result<Value, CodegenError> {
    let at = checked_index(e, index_dtype, index, position, Negative::OutOfRange)?;
    let step = e.value_of(step);
    let offset = e.b.ins().imul(at, step);
    Ok(e.b.ins().iadd(base, offset))
}

/// One element of `dtype` at `base`, as a copy's operand.
fn element(base: Value, dtype: DType) -> Operand {
    Operand {
        base,
        dtype,
        strides: Vec::new(),
    }
}

/// Where a scatter writes: the output itself, or for a sum of
/// half-precision floats an f32 copy of it in scratch memory, which PyTorch's
/// `scatter_add` sums into before rounding each element once (`index_put`'s
/// accumulation rounds every addition, as `put` does).
struct ScatterTarget {
    base: Value,
    dtype: DType,
    /// The element strides of the output's layout, shared by the copy.
    strides: Vec<Size>,
    sizes: Vec<Size>,
}

impl ScatterTarget {
    fn new(
        e: &mut Emitter<'_, '_, '_>,
        output: ValueId,
        accumulate: bool,
    ) -> Result<Self, CodegenError> {
        let ty = e.graph().value(output).ty.clone();
        let strides = layout_strides(e, &ty.shape, &ty.dim_order);
        let sizes = e.shape(&ty.shape);
        let own = e.address(output);
        if !(accumulate && matches!(ty.dtype, DType::F16 | DType::BF16)) {
            return Ok(ScatterTarget {
                base: own,
                dtype: ty.dtype,
                strides,
                sizes,
            });
        }
        let graph = e.graph();
        let bytes = ty.max_bytes(|symbol| graph.bound(symbol)) * 2;
        let base = e.scratch(bytes);
        let target = ScatterTarget {
            base,
            dtype: DType::F32,
            strides,
            sizes,
        };
        emit_copy(
            e,
            target.sizes.clone(),
            target.operand(),
            target.output(own, ty.dtype),
        )?;
        Ok(target)
    }

    fn operand(&self) -> Operand {
        Operand {
            base: self.base,
            dtype: self.dtype,
            strides: self.strides.clone(),
        }
    }

    /// The output, at `base`, as an operand of the same layout.
    fn output(&self, base: Value, dtype: DType) -> Operand {
        Operand {
            base,
            dtype,
            strides: self.strides.clone(),
        }
    }

    fn byte_strides(&self, e: &mut Emitter<'_, '_, '_>) -> Vec<Size> {
        let size = Size::Const(self.dtype.size() as i64);
        self.strides
            .clone()
            .into_iter()
            .map(|stride| e.mul(stride, size))
            .collect()
    }

    /// Rounds the f32 sums into the output, if they were summed apart.
    fn finish(self, e: &mut Emitter<'_, '_, '_>, output: ValueId) -> Result<(), CodegenError> {
        let dtype = e.graph().value(output).ty.dtype;
        if dtype == self.dtype {
            return Ok(());
        }
        let own = e.address(output);
        emit_copy(
            e,
            self.sizes.clone(),
            self.output(own, dtype),
            self.operand(),
        )
    }
}

/// `out = input`, then `out[c with c[dim] = index[c]] = src[c]` (or `+=`)
/// for each position `c` of the index, in row-major order.
pub(super) fn scatter(
    e: &mut Emitter<'_, '_, '_>,
    op: &Scatter,
    output: ValueId,
) -> Result<(), CodegenError> {
    start_from(e, op.input, output)?;
    let target = ScatterTarget::new(e, output, op.accumulate)?;
    let index_ty = e.graph().value(op.index).ty.clone();
    let (src_ty, out_ty) = (
        e.graph().value(op.src).ty.clone(),
        e.graph().value(output).ty.clone(),
    );
    let sizes = e.shape(&index_ty.shape);
    let mut out_bytes = target.byte_strides(e);
    let step = out_bytes[op.dim];
    out_bytes[op.dim] = Size::Const(0);
    // A 0-D source is one value for every position.
    let src_bytes = if src_ty.rank() == 0 {
        vec![Size::Const(0); sizes.len()]
    } else {
        byte_strides(e, op.src)
    };
    let strides = [byte_strides(e, op.index), src_bytes, out_bytes];
    let bases = [e.address(op.index), e.address(op.src), target.base];
    let position = (op.dim, e.dim(out_ty.shape[op.dim]));
    let axes: Vec<usize> = (0..sizes.len()).collect();
    over_axes(e, &sizes, &strides, &axes, &bases, &mut |e, pointers| {
        let to = at_index(e, index_ty.dtype, pointers[0], position, step, pointers[2])?;
        put(
            e,
            Vec::new(),
            element(to, target.dtype),
            element(pointers[1], src_ty.dtype),
            op.accumulate,
        )
    })?;
    target.finish(e, output)
}

/// `out = input` broadcast with the mask, then each element where the mask
/// holds, in row-major order, takes the next element of `source`; a source
/// too short is the kernel's error.
pub(super) fn masked_scatter(
    e: &mut Emitter<'_, '_, '_>,
    op: &MaskedScatter,
    output: ValueId,
) -> Result<(), CodegenError> {
    let out_ty = e.graph().value(output).ty.clone();
    let source_ty = e.graph().value(op.source).ty.clone();
    if !out_ty.is_contiguous() || !source_ty.is_contiguous() {
        return Err(e.unsupported("masked_scatter into or from a permuted tensor"));
    }
    start_from(e, op.input, output)?;
    let sizes = e.shape(&out_ty.shape);
    let mask_bytes = broadcast_bytes(e, op.mask, &out_ty.shape);
    let source_sizes = e.shape(&source_ty.shape);
    let available = e.product(&source_sizes);
    let (mask, source, out) = (e.address(op.mask), e.address(op.source), e.address(output));
    let element = out_ty.dtype.size() as i64;
    let message = format!(
        "{}: the source has fewer elements than the mask has true ones",
        e.op_name()
    );
    let axes: Vec<usize> = (0..sizes.len()).collect();
    let taken = e.iconst(0);
    fold_axes(
        e,
        &sizes,
        &mask_bytes,
        &axes,
        mask,
        &[taken],
        &mut |e, address, flat, carried| {
            let taken = carried[0];
            let holds = e.load(DType::Bool, address);
            let write = e.b.create_block();
            let next = e.b.create_block();
            e.b.append_block_param(next, crate::emit::PTR);
            e.b.ins().brif(holds, write, &[], next, &[taken.into()]);
            e.b.switch_to_block(write);
            let limit = e.value_of(available);
            let exhausted =
                e.b.ins()
                    .icmp(IntCC::SignedGreaterThanOrEqual, taken, limit);
            e.fail_if(exhausted, message.clone());
            let from = e.b.ins().imul_imm_s(taken, element);
            let from = e.b.ins().iadd(source, from);
            let to = e.b.ins().imul_imm_s(flat, element);
            let to = e.b.ins().iadd(out, to);
            let value = e.load(out_ty.dtype, from);
            e.store(value, to);
            let more = e.b.ins().iadd_imm_s(taken, 1);
            e.b.ins().jump(next, &[more.into()]);
            e.b.switch_to_block(next);
            Ok(vec![e.b.block_params(next)[0]])
        },
    )?;
    Ok(())
}

/// `repeat_interleave(repeats)`: index `i` written `repeats[i]` times; a
/// negative count, or counts that do not add up to the output's length,
/// are the kernel's error (checked before anything is written past it).
pub(super) fn repeat_interleave(
    e: &mut Emitter<'_, '_, '_>,
    &RepeatInterleave { input }: &RepeatInterleave,
    output: ValueId,
) -> Result<(), CodegenError> {
    let counts_ty = e.graph().value(input).ty.clone();
    let out_ty = e.graph().value(output).ty.clone();
    let count = e.shape(&counts_ty.shape);
    let count = e.product(&count);
    let length = e.dim(out_ty.shape[0]);
    let length = e.value_of(length);
    let counts = e.address(input);
    let out = e.address(output);
    let (in_size, out_size) = (counts_ty.dtype.size() as i64, out_ty.dtype.size() as i64);
    let name = e.op_name();
    let written = e.iconst(0);
    let after = e.counted_loop(count, &[written, counts, out], |e, i, carried| {
        let (written, at, to) = (carried[0], carried[1], carried[2]);
        let times = e.load(counts_ty.dtype, at);
        let times = e.convert(times, counts_ty.dtype, DType::I64)?;
        let negative = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, times, 0);
        e.fail_if(negative, format!("{name}: a count of repeats is negative"));
        let end = e.b.ins().iadd(written, times);
        let beyond = e.b.ins().icmp(IntCC::SignedGreaterThan, end, length);
        e.fail_if(
            beyond,
            format!("{name}: the counts add up to more than output_size"),
        );
        let value = e.convert(i, DType::I64, out_ty.dtype)?;
        let to = e.counted_loop(Size::Dyn(times), &[to], |e, _, p| {
            e.store(value, p[0]);
            Ok(vec![e.b.ins().iadd_imm_s(p[0], out_size)])
        })?;
        Ok(vec![end, e.b.ins().iadd_imm_s(at, in_size), to[0]])
    })?;
    let short = e.b.ins().icmp(IntCC::NotEqual, after[0], length);
    e.fail_if(
        short,
        format!("{name}: the counts add up to less than output_size"),
    );
    Ok(())
}
