//! Reductions (sum, mean, prod, max, min, any, all), arg-reductions
//! (argmax, argmin), the `k` largest or smallest elements, cumulative sums,
//! softmax and the normalizations (layer norm, inference batch norm).
//! Each walks the positions that are kept outside and folds the reduced
//! axes inside; contiguous f32 rows are folded four lanes at a time.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Type, Value, types};
use ptec_ir::ops::OpDef;
use ptec_ir::ops::elementwise::MathFn;
use ptec_ir::ops::norm::{BatchNorm, LayerNorm};
use ptec_ir::ops::reduce::{ArgReduce, CumSum, Extreme, Reduce, ReduceOp, Softmax, TopK};
use ptec_ir::{DType, ValueId};

use super::expr::{fconst, math};
use super::nest::{byte_strides, count_as_float, count_of, fold_axes, over_axes_in_parts};
use crate::emit::{Emitter, Size, flags, scalar_type};
use crate::error::CodegenError;
use crate::microkernel::Activation;

/// The vectors of four positions a channels-last fold folds side by side
/// (eight accumulators: enough additions in flight to hide their latency,
/// few enough to stay in registers).
const BLOCK_VECTORS: usize = 8;

/// Output byte strides along the input's axes: the output's own strides for
/// kept axes, 0 for reduced ones.
fn output_strides(
    e: &mut Emitter<'_, '_, '_>,
    input: ValueId,
    output: ValueId,
    reduced: &[usize],
    keepdim: bool,
) -> Vec<Size> {
    let input_rank = e.graph().value(input).ty.rank();
    let own = byte_strides(e, output);
    let mut next = 0;
    (0..input_rank)
        .map(|axis| {
            if reduced.contains(&axis) {
                if keepdim {
                    next += 1;
                }
                Size::Const(0)
            } else {
                next += 1;
                own[next - 1]
            }
        })
        .collect()
}

/// Whether `axes` are the trailing axes of a contiguous input, so that each
/// fold reads one contiguous row.
fn contiguous_row(e: &Emitter<'_, '_, '_>, input: ValueId, axes: &[usize]) -> bool {
    let ty = &e.graph().value(input).ty;
    let rank = ty.rank();
    ty.is_contiguous() && !axes.is_empty() && {
        let mut sorted = axes.to_vec();
        sorted.sort_unstable();
        sorted
            .iter()
            .enumerate()
            .all(|(index, &axis)| axis == rank - axes.len() + index)
    }
}

/// The elements a position of a loop nest reads, `count` times `lanes`,
/// for its cost: 0 (not worth a thread) where a size is known only at run
/// time.
fn elements(count: Size, lanes: Option<i64>) -> u64 {
    match (count, lanes) {
        (Size::Const(count), Some(lanes)) => (count * lanes) as u64,
        _ => 0,
    }
}

/// Combines two accumulators of a reduction.
fn combine(e: &mut Emitter<'_, '_, '_>, op: ReduceOp, dtype: DType, a: Value, b: Value) -> Value {
    let float = dtype.is_float();
    match op {
        ReduceOp::Sum | ReduceOp::Mean if float => e.b.ins().fadd(a, b),
        ReduceOp::Sum | ReduceOp::Mean => e.b.ins().iadd(a, b),
        ReduceOp::Prod if float => e.b.ins().fmul(a, b),
        ReduceOp::Prod => e.b.ins().imul(a, b),
        ReduceOp::Max if float => e.b.ins().fmax(a, b),
        ReduceOp::Max => e.b.ins().smax(a, b),
        ReduceOp::Min if float => e.b.ins().fmin(a, b),
        ReduceOp::Min => e.b.ins().smin(a, b),
        ReduceOp::Any => e.b.ins().bor(a, b),
        ReduceOp::All => e.b.ins().band(a, b),
    }
}

/// The starting accumulator of a reduction.
fn identity(
    e: &mut Emitter<'_, '_, '_>,
    op: ReduceOp,
    dtype: DType,
    ty: Type,
) -> Result<Value, CodegenError> {
    Ok(match (op, dtype.is_float()) {
        (ReduceOp::Sum | ReduceOp::Mean, true) => fconst(e, ty, 0.0),
        (ReduceOp::Prod, true) => fconst(e, ty, 1.0),
        (ReduceOp::Max, true) => fconst(e, ty, f64::NEG_INFINITY),
        (ReduceOp::Min, true) => fconst(e, ty, f64::INFINITY),
        (ReduceOp::Any, _) => e.b.ins().iconst(types::I8, 0),
        (ReduceOp::All, _) => e.b.ins().iconst(types::I8, 1),
        (ReduceOp::Sum | ReduceOp::Mean, false) => e.b.ins().iconst(ty, 0),
        (ReduceOp::Prod, false) => e.b.ins().iconst(ty, 1),
        (ReduceOp::Max, false) => {
            let min = i64::MIN >> (64 - ty.bits());
            e.b.ins().iconst(ty, min)
        }
        (ReduceOp::Min, false) => {
            let max = i64::MAX >> (64 - ty.bits());
            e.b.ins().iconst(ty, max)
        }
    })
}

/// `count` as whole quads and the elements left after them.
fn quads(e: &mut Emitter<'_, '_, '_>, count: Size) -> (Size, Size) {
    match count {
        Size::Const(n) => (Size::Const(n / 4), Size::Const(n % 4)),
        Size::Dyn(n) => (
            Size::Dyn(e.b.ins().ushr_imm_u(n, 2)),
            Size::Dyn(e.b.ins().band_imm_u(n, 3)),
        ),
    }
}

/// Folds a contiguous f32 row of `count` elements with four-lane
/// accumulators; `op` is Sum, Max or Min.
pub(crate) fn fold_row_f32(
    e: &mut Emitter<'_, '_, '_>,
    op: ReduceOp,
    row: Value,
    count: Size,
) -> Result<Value, CodegenError> {
    fold_row_f32_of(e, op, row, count, &|_, value| value)
}

/// Folds `map` of each element of a contiguous f32 row as
/// [`fold_row_f32`] folds the elements: element k into lane k % 4, the
/// lanes in order, then the last `count % 4` elements. `map` gets four
/// elements (an f32x4) or one (an f32) and returns a value of that type.
fn fold_row_f32_of(
    e: &mut Emitter<'_, '_, '_>,
    op: ReduceOp,
    row: Value,
    count: Size,
    map: &dyn Fn(&mut Emitter<'_, '_, '_>, Value) -> Value,
) -> Result<Value, CodegenError> {
    let lanes = identity(e, op, DType::F32, types::F32X4)?;
    let (vectors, tail) = quads(e, count);
    let folded = e.counted_loop(vectors, &[row, lanes], |e, _, carried| {
        let value = e.b.ins().load(types::F32X4, flags(), carried[0], 0);
        let value = map(e, value);
        let accumulator = combine(e, op, DType::F32, carried[1], value);
        Ok(vec![e.b.ins().iadd_imm_s(carried[0], 16), accumulator])
    })?;
    let mut total = e.b.ins().extractlane(folded[1], 0);
    for lane in 1..4 {
        let value = e.b.ins().extractlane(folded[1], lane);
        total = combine(e, op, DType::F32, total, value);
    }
    let rest = e.counted_loop(tail, &[folded[0], total], |e, _, carried| {
        let value = e.b.ins().load(types::F32, flags(), carried[0], 0);
        let value = map(e, value);
        let accumulator = combine(e, op, DType::F32, carried[1], value);
        Ok(vec![e.b.ins().iadd_imm_s(carried[0], 4), accumulator])
    })?;
    Ok(rest[1])
}

pub(crate) fn reduce(
    e: &mut Emitter<'_, '_, '_>,
    &Reduce {
        input,
        op,
        ref dims,
        keepdim,
    }: &Reduce,
    output: ValueId,
) -> Result<(), CodegenError> {
    let axes = dims.as_slice();
    let in_ty = e.graph().value(input).ty.clone();
    let out_dtype = e.graph().value(output).ty.dtype;
    let op = op.into_type(out_dtype);
    let sizes = e.shape(&in_ty.shape);
    let in_strides = byte_strides(e, input);
    let out_strides = output_strides(e, input, output, axes, keepdim);
    // Floats accumulate in the output's type, integers in i64, truth in i8.
    let compute = match op {
        ReduceOp::Any | ReduceOp::All => DType::Bool,
        _ if out_dtype.is_float() => out_dtype,
        _ => DType::I64,
    };
    let fold = Fold {
        op,
        input: in_ty.dtype,
        compute,
        output: out_dtype,
        count: count_of(e, &sizes, axes),
    };
    let floats = compute == DType::F32 && in_ty.dtype == DType::F32;
    let vector_row = floats
        && matches!(
            op,
            ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min
        )
        && contiguous_row(e, input, axes);
    // A kept axis along which input and output are both contiguous (the
    // channels of a channels-last image pooled to one pixel) is folded
    // four positions a vector, one a lane, [`BLOCK_VECTORS`] vectors at a
    // time (then the vectors and positions left): each lane folds its position's
    // elements in the order a lone position does, so the bits are the same
    // (but for a NaN's sign: Cranelift's vector max and min give x86's
    // default NaN, as the contiguous rows' do, its scalar ones the input's).
    let unit = Size::Const(4);
    let lane_axis = (floats && !vector_row)
        .then(|| {
            (0..in_ty.rank())
                .filter(|axis| !axes.contains(axis))
                .find(|&axis| {
                    in_strides[axis] == unit
                        && out_strides[axis] == unit
                        && sizes[axis].constant().is_some_and(|size| size >= 4)
                })
        })
        .flatten();
    let kept: Vec<usize> = (0..in_ty.rank())
        .filter(|axis| !axes.contains(axis) && Some(*axis) != lane_axis)
        .collect();
    let bases = [e.address(input), e.address(output)];
    let lanes = lane_axis.map_or(Some(1), |axis| sizes[axis].constant());
    let position_cost = elements(fold.count, lanes);
    over_axes_in_parts(
        e,
        &sizes,
        &[in_strides.clone(), out_strides],
        &kept,
        &bases,
        position_cost,
        &mut |e, pointers| {
            let [from, to] = [pointers[0], pointers[1]];
            if vector_row {
                let folding = match op {
                    ReduceOp::Mean => ReduceOp::Sum,
                    op => op,
                };
                let total = fold_row_f32(e, folding, from, fold.count)?;
                return fold.finish(e, total, to);
            }
            let Some(size) = lane_axis.and_then(|axis| sizes[axis].constant()) else {
                return fold.position(e, &sizes, &in_strides, axes, types::F32, 1, [from, to]);
            };
            // Folds `vectors` vectors of `lane` at the pointers and returns
            // the pointers past them.
            let run = |e: &mut Emitter<'_, '_, '_>, p: &[Value], lane: Type, vectors: usize| {
                let pointers = [p[0], p[1]];
                fold.position(e, &sizes, &in_strides, axes, lane, vectors, pointers)?;
                let bytes = i64::from(lane.bytes()) * vectors as i64;
                Ok(p.iter().map(|&p| e.b.ins().iadd_imm_s(p, bytes)).collect())
            };
            let block = BLOCK_VECTORS as i64 * 4;
            let blocks = e.counted_loop(Size::Const(size / block), &[from, to], |e, _, p| {
                run(e, p, types::F32X4, BLOCK_VECTORS)
            })?;
            let lanes = match (size % block / 4) as usize {
                0 => blocks,
                vectors => run(e, &blocks, types::F32X4, vectors)?,
            };
            e.counted_loop(Size::Const(size % 4), &lanes, |e, _, p| {
                run(e, p, types::F32, 1)
            })?;
            Ok(())
        },
    )
}

/// A reduction's element types and the count of elements it folds into
/// each result.
struct Fold {
    op: ReduceOp,
    input: DType,
    compute: DType,
    output: DType,
    count: Size,
}

impl Fold {
    /// Folds the `axes` of the position (or, with `lane` a vector, of the
    /// `vectors` adjacent vectors of positions, one position a lane) at
    /// `from` and stores the results at `to`. Each vector has its own
    /// accumulator, so the folds of a block run side by side instead of
    /// waiting on one another's additions.
    #[allow(clippy::too_many_arguments)] // The fold's operands.
    fn position(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        sizes: &[Size],
        strides: &[Size],
        axes: &[usize],
        lane: Type,
        vectors: usize,
        [from, to]: [Value; 2],
    ) -> Result<(), CodegenError> {
        let lane = match lane.is_vector() {
            true => lane,
            false => scalar_type(self.compute),
        };
        let vector_bytes = i64::from(lane.bytes());
        let init = identity(e, self.op, self.compute, lane)?;
        let totals = fold_axes(
            e,
            sizes,
            strides,
            axes,
            from,
            &vec![init; vectors],
            &mut |e, address, _, accumulators| {
                let mut next = Vec::with_capacity(accumulators.len());
                for (index, &accumulator) in accumulators.iter().enumerate() {
                    let value = match lane.is_vector() {
                        true => {
                            let offset = (vector_bytes * index as i64) as i32;
                            e.b.ins().load(lane, flags(), address, offset)
                        }
                        false => {
                            let value = e.load(self.input, address);
                            e.convert(value, self.input, self.compute)?
                        }
                    };
                    next.push(combine(e, self.op, self.compute, accumulator, value));
                }
                Ok(next)
            },
        )?;
        for (index, total) in totals.into_iter().enumerate() {
            let to = e.b.ins().iadd_imm_s(to, vector_bytes * index as i64);
            self.finish(e, total, to)?;
        }
        Ok(())
    }

    /// Divides a mean's sum by the count, converts and stores at `to`.
    fn finish(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        total: Value,
        to: Value,
    ) -> Result<(), CodegenError> {
        let mut total = total;
        let lane = e.b.func.dfg.value_type(total);
        if self.op == ReduceOp::Mean {
            if !self.compute.is_float() {
                return Err(e.unsupported("the mean of an integer tensor"));
            }
            let mut divisor = count_as_float(e, self.count, scalar_type(self.compute));
            if lane.is_vector() {
                divisor = e.b.ins().splat(lane, divisor);
            }
            total = e.b.ins().fdiv(total, divisor);
        }
        if lane.is_vector() {
            e.b.ins().store(flags(), total, to, 0);
            return Ok(());
        }
        let total = e.convert(total, self.compute, self.output)?;
        e.store(total, to);
        Ok(())
    }
}

/// Index of the largest (or smallest) element along an axis (or of all
/// elements); the first NaN wins either way, as in PyTorch.
pub(crate) fn arg_reduce(
    e: &mut Emitter<'_, '_, '_>,
    &ArgReduce {
        input,
        extreme,
        dim,
        keepdim,
    }: &ArgReduce,
    output: ValueId,
) -> Result<(), CodegenError> {
    let largest = extreme == Extreme::Max;
    let in_ty = e.graph().value(input).ty.clone();
    if !in_ty.is_contiguous() && dim.is_none() {
        return Err(e.unsupported("an arg-reduction over all dims of a permuted tensor"));
    }
    let axes: Vec<usize> = match dim {
        Some(dim) => vec![dim],
        None => (0..in_ty.rank()).collect(),
    };
    let sizes = e.shape(&in_ty.shape);
    let in_strides = byte_strides(e, input);
    let out_strides = if dim.is_none() && !keepdim {
        vec![Size::Const(0); in_ty.rank()]
    } else {
        output_strides(e, input, output, &axes, keepdim)
    };
    let kept: Vec<usize> = (0..in_ty.rank())
        .filter(|axis| !axes.contains(axis))
        .collect();
    let compute = if in_ty.dtype.is_float() {
        in_ty.dtype
    } else {
        DType::I64
    };
    let compute_ty = scalar_type(compute);
    let out_dtype = e.graph().value(output).ty.dtype;
    let bases = [e.address(input), e.address(output)];
    let position_cost = 3 * elements(count_of(e, &sizes, &axes), Some(1));
    over_axes_in_parts(
        e,
        &sizes,
        &[in_strides.clone(), out_strides],
        &kept,
        &bases,
        position_cost,
        &mut |e, pointers| {
            let best = if compute.is_float() {
                fconst(
                    e,
                    compute_ty,
                    if largest {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    },
                )
            } else {
                e.b.ins()
                    .iconst(compute_ty, if largest { i64::MIN } else { i64::MAX })
            };
            let first = e.iconst(0);
            let found_nan = e.b.ins().iconst(types::I8, 0);
            let result = fold_axes(
                e,
                &sizes,
                &in_strides,
                &axes,
                pointers[0],
                &[best, first, found_nan],
                &mut |e, address, index, carried| {
                    let value = e.load(in_ty.dtype, address);
                    let value = e.convert(value, in_ty.dtype, compute)?;
                    let (best, best_index, found_nan) = (carried[0], carried[1], carried[2]);
                    let better = if compute.is_float() {
                        let order = if largest {
                            FloatCC::GreaterThan
                        } else {
                            FloatCC::LessThan
                        };
                        let greater = e.b.ins().fcmp(order, value, best);
                        let is_nan = e.b.ins().fcmp(FloatCC::Unordered, value, value);
                        let no_nan_yet = e.b.ins().icmp_imm_s(IntCC::Equal, found_nan, 0);
                        let first_nan = e.b.ins().band(is_nan, no_nan_yet);
                        let greater = e.b.ins().band(greater, no_nan_yet);
                        let better = e.b.ins().bor(greater, first_nan);
                        let nan_seen = e.b.ins().bor(found_nan, is_nan);
                        (better, nan_seen)
                    } else {
                        (
                            e.b.ins().icmp(
                                if largest {
                                    IntCC::SignedGreaterThan
                                } else {
                                    IntCC::SignedLessThan
                                },
                                value,
                                best,
                            ),
                            found_nan,
                        )
                    };
                    // The first element always wins, so ties keep the first index.
                    let is_first = e.b.ins().icmp_imm_s(IntCC::Equal, index, 0);
                    let take = e.b.ins().bor(better.0, is_first);
                    let best = e.b.ins().select(take, value, best);
                    let best_index = e.b.ins().select(take, index, best_index);
                    Ok(vec![best, best_index, better.1])
                },
            )?;
            let index = e.convert(result[1], DType::I64, out_dtype)?;
            e.store(index, pointers[1]);
            Ok(())
        },
    )
}

/// Whether element `a` (at position `ia`) ranks before element `b` (at
/// `ib`) in a top-k selection: more extreme (NaN above every number), or
/// equal and earlier.
fn ranks_before(
    e: &mut Emitter<'_, '_, '_>,
    largest: bool,
    float: bool,
    (a, ia): (Value, Value),
    (b, ib): (Value, Value),
) -> Value {
    let (more, equal) = if float {
        let order = if largest {
            FloatCC::GreaterThan
        } else {
            FloatCC::LessThan
        };
        let beyond = e.b.ins().fcmp(order, a, b);
        let a_nan = e.b.ins().fcmp(FloatCC::Unordered, a, a);
        let b_nan = e.b.ins().fcmp(FloatCC::Unordered, b, b);
        // NaN ranks above numbers: first when largest, last when smallest.
        let nan_wins = if largest {
            e.b.ins().band_not(a_nan, b_nan)
        } else {
            e.b.ins().band_not(b_nan, a_nan)
        };
        let same = e.b.ins().fcmp(FloatCC::Equal, a, b);
        let both_nan = e.b.ins().band(a_nan, b_nan);
        (
            e.b.ins().bor(beyond, nan_wins),
            e.b.ins().bor(same, both_nan),
        )
    } else {
        let order = if largest {
            IntCC::SignedGreaterThan
        } else {
            IntCC::SignedLessThan
        };
        (
            e.b.ins().icmp(order, a, b),
            e.b.ins().icmp(IntCC::Equal, a, b),
        )
    };
    let earlier = e.b.ins().icmp(IntCC::SignedLessThan, ia, ib);
    let tie = e.b.ins().band(equal, earlier);
    e.b.ins().bor(more, tie)
}

/// The `k` most extreme elements along `dim` of each row, the most extreme
/// first, and their positions. Selection `j` takes the best element that
/// ranks after selection `j - 1`, so that the kernel needs no scratch
/// memory; equal elements come in the order of their positions.
pub(crate) fn top_k(
    e: &mut Emitter<'_, '_, '_>,
    op: &TopK,
    outputs: &[ValueId],
) -> Result<(), CodegenError> {
    let (values, indices) = (outputs[0], outputs[1]);
    let in_ty = e.graph().value(op.input).ty.clone();
    let largest = op.extreme == Extreme::Max;
    // A 0-D tensor is one row of one element.
    let (sizes, strides) = if in_ty.rank() == 0 {
        (vec![Size::Const(1)], vec![vec![Size::Const(0)]; 3])
    } else {
        let sizes = e.shape(&in_ty.shape);
        let strides = vec![
            byte_strides(e, op.input),
            byte_strides(e, values),
            byte_strides(e, indices),
        ];
        (sizes, strides)
    };
    let dim = op.dim;
    let kept: Vec<usize> = (0..sizes.len()).filter(|&axis| axis != dim).collect();
    let float = in_ty.dtype.is_float();
    let compute = if float {
        in_ty.dtype.arithmetic()
    } else {
        DType::I64
    };
    let index_dtype = e.graph().value(indices).ty.dtype;
    let (count, along) = (sizes[dim], strides[0][dim]);
    let (value_step, index_step) = (strides[1][dim], strides[2][dim]);
    let bases = [e.address(op.input), e.address(values), e.address(indices)];
    let position_cost = 3 * elements(count, Some(op.k as i64));
    over_axes_in_parts(
        e,
        &sizes,
        &strides,
        &kept,
        &bases,
        position_cost,
        &mut |e, pointers| {
            let row = pointers[0];
            let nothing = e.constant(compute, ptec_ir::Scalar::Int(0))?;
            let none = e.iconst(-1);
            e.counted_loop(
                Size::Const(op.k as i64),
                &[nothing, none, pointers[1], pointers[2]],
                |e, _, carried| {
                    let previous = (carried[0], carried[1]);
                    let scan = e.counted_loop(count, &[nothing, none, row], |e, i, best| {
                        let value = e.load(in_ty.dtype, best[2]);
                        let value = e.convert(value, in_ty.dtype, compute)?;
                        let first = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, previous.1, 0);
                        let after = ranks_before(e, largest, float, previous, (value, i));
                        let eligible = e.b.ins().bor(first, after);
                        let unset = e.b.ins().icmp_imm_s(IntCC::SignedLessThan, best[1], 0);
                        let beats = ranks_before(e, largest, float, (value, i), (best[0], best[1]));
                        let better = e.b.ins().bor(unset, beats);
                        let take = e.b.ins().band(eligible, better);
                        Ok(vec![
                            e.b.ins().select(take, value, best[0]),
                            e.b.ins().select(take, i, best[1]),
                            e.add_size(best[2], along),
                        ])
                    })?;
                    // The element itself, not its value in the compute type.
                    let step = e.value_of(along);
                    let offset = e.b.ins().imul(scan[1], step);
                    let source = e.b.ins().iadd(row, offset);
                    let element = e.load(in_ty.dtype, source);
                    e.store(element, carried[2]);
                    let position = e.convert(scan[1], DType::I64, index_dtype)?;
                    e.store(position, carried[3]);
                    Ok(vec![
                        scan[0],
                        scan[1],
                        e.add_size(carried[2], value_step),
                        e.add_size(carried[3], index_step),
                    ])
                },
            )?;
            Ok(())
        },
    )
}

/// Running sums along an axis, in the output's type.
pub(crate) fn cumsum(
    e: &mut Emitter<'_, '_, '_>,
    &CumSum { input, dim }: &CumSum,
    output: ValueId,
) -> Result<(), CodegenError> {
    let in_ty = e.graph().value(input).ty.clone();
    let out_dtype = e.graph().value(output).ty.dtype;
    if in_ty.rank() == 0 {
        return super::elementwise::copy(e, input, output);
    }
    let sizes = e.shape(&in_ty.shape);
    let strides = [byte_strides(e, input), byte_strides(e, output)];
    let kept: Vec<usize> = (0..in_ty.rank()).filter(|&axis| axis != dim).collect();
    let compute_ty = scalar_type(out_dtype);
    let bases = [e.address(input), e.address(output)];
    let position_cost = 2 * elements(sizes[dim], Some(1));
    over_axes_in_parts(
        e,
        &sizes,
        &strides,
        &kept,
        &bases,
        position_cost,
        &mut |e, pointers| {
            let zero = if out_dtype.is_float() {
                fconst(e, compute_ty, 0.0)
            } else {
                e.b.ins().iconst(compute_ty, 0)
            };
            let (in_step, out_step) = (strides[0][dim], strides[1][dim]);
            e.counted_loop(
                sizes[dim],
                &[pointers[0], pointers[1], zero],
                |e, _, carried| {
                    let value = e.load(in_ty.dtype, carried[0]);
                    let value = e.convert(value, in_ty.dtype, out_dtype)?;
                    let total = if out_dtype.is_float() {
                        e.b.ins().fadd(carried[2], value)
                    } else {
                        e.b.ins().iadd(carried[2], value)
                    };
                    e.store(total, carried[1]);
                    Ok(vec![
                        e.add_size(carried[0], in_step),
                        e.add_size(carried[1], out_step),
                        total,
                    ])
                },
            )?;
            Ok(())
        },
    )
}

/// Softmax (or log-softmax) along `dim`: max, then exp(x - max) and its
/// sum, then scale. A safe softmax's row of -inf (its maximum -inf: the
/// maximum of a row with a NaN is NaN) shifts by 0 instead, so its
/// exponentials are 0 where they would be NaN, and scales by 0.
pub(crate) fn softmax(
    e: &mut Emitter<'_, '_, '_>,
    &Softmax {
        input,
        dim,
        log,
        safe,
    }: &Softmax,
    output: ValueId,
) -> Result<(), CodegenError> {
    let in_ty = e.graph().value(input).ty.clone();
    let dtype = e.graph().value(output).ty.dtype;
    if !dtype.is_float() || in_ty.dtype != dtype {
        return Err(e.unsupported(format!("softmax of {} into {dtype}", in_ty.dtype)));
    }
    if in_ty.rank() == 0 {
        return Err(e.unsupported("softmax of a 0-dim tensor"));
    }
    let ty = scalar_type(dtype);
    let sizes = e.shape(&in_ty.shape);
    let strides = [byte_strides(e, input), byte_strides(e, output)];
    let kept: Vec<usize> = (0..in_ty.rank()).filter(|&axis| axis != dim).collect();
    let (in_step, out_step) = (strides[0][dim], strides[1][dim]);
    let count = sizes[dim];
    // f32 softmax (not log) along a contiguous dimension of fixed size
    // computes its exponentials in vectors.
    let vector_exp = match count {
        Size::Const(count)
            if dtype == DType::F32
                && !log
                && in_step == Size::Const(4)
                && out_step == Size::Const(4) =>
        {
            Some(count)
        }
        _ => None,
    };
    let bases = [e.address(input), e.address(output)];
    // Three passes over the row and an exponential per element.
    let position_cost = 6 * elements(count, Some(1));
    over_axes_in_parts(
        e,
        &sizes,
        &strides,
        &kept,
        &bases,
        position_cost,
        &mut |e, pointers| {
            // A row's maximum is the same number in any order (four lanes
            // at a time along a contiguous row), but for a NaN's sign.
            let max = match vector_exp {
                Some(count) => fold_row_f32(e, ReduceOp::Max, pointers[0], Size::Const(count))?,
                None => {
                    let lowest = fconst(e, ty, f64::NEG_INFINITY);
                    e.counted_loop(count, &[pointers[0], lowest], |e, _, c| {
                        let value = e.b.ins().load(ty, flags(), c[0], 0);
                        Ok(vec![e.add_size(c[0], in_step), e.b.ins().fmax(c[1], value)])
                    })?[1]
                }
            };
            let zero = fconst(e, ty, 0.0);
            let masked = safe.then(|| {
                let lowest = fconst(e, ty, f64::NEG_INFINITY);
                e.b.ins().fcmp(FloatCC::Equal, max, lowest)
            });
            let max = match masked {
                Some(masked) => e.b.ins().select(masked, zero, max),
                None => max,
            };
            let sum = if let Some(count) = vector_exp {
                // The exponentials four at a time into the output, then their
                // sum in four lanes, as the loop over strided elements below
                // adds them (element k into sum k % 4, the sums in order,
                // then the last count % 4 elements), so that a softmax along
                // a row and along a column give the same bits.
                match e.cx.microkernels.activation(Activation::ShiftedExp) {
                    // The same steps 8 or 16 lanes at a time.
                    Some(kernel) => {
                        let function = e.import_function(kernel);
                        let elements = e.iconst(count);
                        let arguments = [pointers[0], pointers[1], elements, max];
                        e.b.ins().call(function, &arguments);
                    }
                    None => shifted_exponentials(e, pointers, count, max)?,
                }
                fold_row_f32(e, ReduceOp::Sum, pointers[1], Size::Const(count))?
            } else {
                // The exponential of one element, stored unless for a
                // log-softmax; returns it and the pointers after it.
                let exp_at = |e: &mut Emitter<'_, '_, '_>, from: Value, to: Value| {
                    let value = e.b.ins().load(ty, flags(), from, 0);
                    let shifted = e.b.ins().fsub(value, max);
                    let exp = math(e, MathFn::Exp, &[shifted])?;
                    if !log {
                        e.b.ins().store(flags(), exp, to, 0);
                    }
                    Ok::<_, CodegenError>([
                        exp,
                        e.add_size(from, in_step),
                        e.add_size(to, out_step),
                    ])
                };
                let (groups, tail) = quads(e, count);
                let start = [pointers[0], pointers[1], zero, zero, zero, zero];
                let sums = e.counted_loop(groups, &start, |e, _, c| {
                    let mut next = c.to_vec();
                    for sum in 2..6 {
                        let [exp, from, to] = exp_at(e, next[0], next[1])?;
                        next[sum] = e.b.ins().fadd(next[sum], exp);
                        (next[0], next[1]) = (from, to);
                    }
                    Ok(next)
                })?;
                let mut total = sums[2];
                for &sum in &sums[3..] {
                    total = e.b.ins().fadd(total, sum);
                }
                e.counted_loop(tail, &[sums[0], sums[1], total], |e, _, c| {
                    let [exp, from, to] = exp_at(e, c[0], c[1])?;
                    Ok(vec![from, to, e.b.ins().fadd(c[2], exp)])
                })?[2]
            };
            if log {
                let log_sum = e.call_math(MathFn::Log, &[sum])?;
                let shift = e.b.ins().fadd(max, log_sum);
                e.counted_loop(count, &[pointers[0], pointers[1]], |e, _, c| {
                    let value = e.b.ins().load(ty, flags(), c[0], 0);
                    let result = e.b.ins().fsub(value, shift);
                    e.b.ins().store(flags(), result, c[1], 0);
                    Ok(vec![e.add_size(c[0], in_step), e.add_size(c[1], out_step)])
                })?;
            } else {
                let one = fconst(e, ty, 1.0);
                let scale = e.b.ins().fdiv(one, sum);
                let scale = match masked {
                    Some(masked) => e.b.ins().select(masked, zero, scale),
                    None => scale,
                };
                let (after, rest) = match vector_exp {
                    Some(count) => {
                        let lanes = e.b.ins().splat(types::F32X4, scale);
                        let vectors = Size::Const(count / 4);
                        let after = e.counted_loop(vectors, &[pointers[1]], |e, _, c| {
                            let value = e.b.ins().load(types::F32X4, flags(), c[0], 0);
                            let result = e.b.ins().fmul(value, lanes);
                            e.b.ins().store(flags(), result, c[0], 0);
                            Ok(vec![e.b.ins().iadd_imm_s(c[0], 16)])
                        })?;
                        (after, Size::Const(count % 4))
                    }
                    None => (vec![pointers[1]], count),
                };
                e.counted_loop(rest, &after, |e, _, c| {
                    let value = e.b.ins().load(ty, flags(), c[0], 0);
                    let result = e.b.ins().fmul(value, scale);
                    e.b.ins().store(flags(), result, c[0], 0);
                    Ok(vec![e.add_size(c[0], out_step)])
                })?;
            }
            Ok(())
        },
    )
}

/// `exp(x - max)` of the `count` f32 at `pointers[0]` into those at
/// `pointers[1]`, four lanes at a time, then one at a time.
fn shifted_exponentials(
    e: &mut Emitter<'_, '_, '_>,
    pointers: &[Value],
    count: i64,
    max: Value,
) -> Result<(), CodegenError> {
    // `count` elements of type `ty` (holding as many copies of `max`
    // as lanes in `shift`) from `from`; returns the pointers after them.
    let pass = |e: &mut Emitter<'_, '_, '_>, count, ty: Type, shift, from: &[Value]| {
        e.counted_loop(Size::Const(count), from, |e, _, c| {
            let value = e.b.ins().load(ty, flags(), c[0], 0);
            let shifted = e.b.ins().fsub(value, shift);
            let exp = math(e, MathFn::Exp, &[shifted])?;
            e.b.ins().store(flags(), exp, c[1], 0);
            let bytes = i64::from(ty.bytes());
            Ok(vec![
                e.b.ins().iadd_imm_s(c[0], bytes),
                e.b.ins().iadd_imm_s(c[1], bytes),
            ])
        })
    };
    let lanes = e.b.ins().splat(types::F32X4, max);
    let after = pass(e, count / 4, types::F32X4, lanes, &pointers[..2])?;
    pass(e, count % 4, types::F32, max, &after)?;
    Ok(())
}

/// Layer norm over the trailing `normalized_dims` axes of a contiguous f32
/// input: out = (x - mean) * rstd * weight + bias; also writes mean and rstd.
pub(crate) fn layer_norm(
    e: &mut Emitter<'_, '_, '_>,
    &LayerNorm {
        input,
        weight,
        bias,
        normalized_dims,
        eps,
    }: &LayerNorm,
    outputs: &[ValueId],
) -> Result<(), CodegenError> {
    let in_ty = e.graph().value(input).ty.clone();
    let output_contiguous = outputs
        .iter()
        .all(|&output| e.graph().value(output).ty.is_contiguous());
    if in_ty.dtype != DType::F32 || !in_ty.is_contiguous() || !output_contiguous {
        return Err(e.unsupported("layer norm other than of contiguous f32 tensors"));
    }
    let rank = in_ty.rank();
    let sizes = e.shape(&in_ty.shape);
    let normalized: Vec<usize> = (rank - normalized_dims..rank).collect();
    let row = count_of(e, &sizes, &normalized);
    let outer: Vec<usize> = (0..rank - normalized_dims).collect();
    let weight_base = weight.map(|weight| e.address(weight));
    let bias_base = bias.map(|bias| e.address(bias));
    let pointers = [
        e.address(input),
        e.address(outputs[LayerNorm::OUT]),
        e.address(outputs[LayerNorm::MEAN]),
        e.address(outputs[LayerNorm::RSTD]),
    ];
    let strides: Vec<Vec<Size>> = [input, outputs[LayerNorm::OUT]]
        .into_iter()
        .chain([outputs[LayerNorm::MEAN], outputs[LayerNorm::RSTD]])
        .map(|value| byte_strides(e, value))
        .collect();
    // Three passes over the row.
    let position_cost = 4 * elements(row, Some(1));
    over_axes_in_parts(
        e,
        &sizes,
        &strides,
        &outer,
        &pointers,
        position_cost,
        &mut |e, p| {
            let sum = fold_row_f32(e, ReduceOp::Sum, p[0], row)?;
            let n = count_as_float(e, row, types::F32);
            let mean = e.b.ins().fdiv(sum, n);
            // Four elements (an f32x4) or one of `mean` and `rstd`.
            let like = |e: &mut Emitter<'_, '_, '_>, scalar: Value, value: Value| match e
                .b
                .func
                .dfg
                .value_type(value)
                .is_vector()
            {
                true => e.b.ins().splat(types::F32X4, scalar),
                false => scalar,
            };
            let squares = fold_row_f32_of(e, ReduceOp::Sum, p[0], row, &|e, value| {
                let mean = like(e, mean, value);
                let centered = e.b.ins().fsub(value, mean);
                e.b.ins().fmul(centered, centered)
            })?;
            let variance = e.b.ins().fdiv(squares, n);
            let epsilon = e.b.ins().f32const(eps.0 as f32);
            let shifted = e.b.ins().fadd(variance, epsilon);
            let root = e.b.ins().sqrt(shifted);
            let one = e.b.ins().f32const(1.0);
            let rstd = e.b.ins().fdiv(one, root);
            // Four elements or one of the output, from the same steps.
            let normalize = |e: &mut Emitter<'_, '_, '_>, ty: Type, c: &[Value]| {
                let bytes = i64::from(ty.bytes());
                let value = e.b.ins().load(ty, flags(), c[0], 0);
                let (mean, rstd) = (like(e, mean, value), like(e, rstd, value));
                let centered = e.b.ins().fsub(value, mean);
                let mut result = e.b.ins().fmul(centered, rstd);
                let mut next = vec![
                    e.b.ins().iadd_imm_s(c[0], bytes),
                    e.b.ins().iadd_imm_s(c[1], bytes),
                ];
                let mut slot = 2;
                if weight.is_some() {
                    let w = e.b.ins().load(ty, flags(), c[slot], 0);
                    result = e.b.ins().fmul(result, w);
                    next.push(e.b.ins().iadd_imm_s(c[slot], bytes));
                    slot += 1;
                }
                if bias.is_some() {
                    let b = e.b.ins().load(ty, flags(), c[slot], 0);
                    result = e.b.ins().fadd(result, b);
                    next.push(e.b.ins().iadd_imm_s(c[slot], bytes));
                }
                e.b.ins().store(flags(), result, c[1], 0);
                Ok(next)
            };
            let mut carried = vec![p[0], p[1]];
            carried.extend(weight_base);
            carried.extend(bias_base);
            let (vectors, tail) = quads(e, row);
            let after =
                e.counted_loop(vectors, &carried, |e, _, c| normalize(e, types::F32X4, c))?;
            e.counted_loop(tail, &after, |e, _, c| normalize(e, types::F32, c))?;
            e.b.ins().store(flags(), mean, p[2], 0);
            e.b.ins().store(flags(), rstd, p[3], 0);
            Ok(())
        },
    )
}

/// Inference batch norm of a contiguous f32 tensor over dim 1: each channel
/// is scaled by weight / sqrt(var + eps) and shifted by bias - mean * scale.
pub(crate) fn batch_norm(
    e: &mut Emitter<'_, '_, '_>,
    op: &BatchNorm,
    output: ValueId,
) -> Result<(), CodegenError> {
    let BatchNorm {
        input,
        weight,
        bias,
        mean,
        variance,
        eps,
    } = *op;
    let in_ty = e.graph().value(input).ty.clone();
    let out_ty = e.graph().value(output).ty.clone();
    let parameters_f32 = op
        .operands()
        .into_iter()
        .all(|(_, value)| e.graph().value(value).ty.dtype == DType::F32);
    if !parameters_f32 || !in_ty.is_contiguous() || !out_ty.is_contiguous() {
        return Err(e.unsupported("batch norm other than of contiguous f32 tensors"));
    }
    let sizes = e.shape(&in_ty.shape);
    let spatial = e.product(&sizes[2..]);
    let spatial_bytes = e.mul(spatial, Size::Const(4));
    let mean = e.address(mean);
    let variance = e.address(variance);
    let weight_base = weight.map(|weight| e.address(weight));
    let bias_base = bias.map(|bias| e.address(bias));
    let pointers = [e.address(input), e.address(output)];
    let channels = sizes[1];
    e.counted_loop(sizes[0], &pointers, |e, _, p| {
        let mut carried = vec![p[0], p[1], mean, variance];
        carried.extend(weight_base);
        carried.extend(bias_base);
        let after = e.counted_loop(channels, &carried, |e, _, c| {
            let m = e.b.ins().load(types::F32, flags(), c[2], 0);
            let v = e.b.ins().load(types::F32, flags(), c[3], 0);
            let epsilon = e.b.ins().f32const(eps.0 as f32);
            let shifted = e.b.ins().fadd(v, epsilon);
            let root = e.b.ins().sqrt(shifted);
            let one = e.b.ins().f32const(1.0);
            let mut scale = e.b.ins().fdiv(one, root);
            let mut next = vec![
                c[0],
                c[1],
                e.b.ins().iadd_imm_s(c[2], 4),
                e.b.ins().iadd_imm_s(c[3], 4),
            ];
            let mut slot = 4;
            if weight.is_some() {
                let w = e.b.ins().load(types::F32, flags(), c[slot], 0);
                scale = e.b.ins().fmul(scale, w);
                next.push(e.b.ins().iadd_imm_s(c[slot], 4));
                slot += 1;
            }
            let mut shift = e.b.ins().fmul(m, scale);
            shift = e.b.ins().fneg(shift);
            if bias.is_some() {
                let b = e.b.ins().load(types::F32, flags(), c[slot], 0);
                shift = e.b.ins().fadd(shift, b);
                next.push(e.b.ins().iadd_imm_s(c[slot], 4));
            }
            super::linalg::scale_shift_row(e, c[0], c[1], spatial, scale, shift)?;
            next[0] = e.add_size(c[0], spatial_bytes);
            next[1] = e.add_size(c[1], spatial_bytes);
            Ok(next)
        })?;
        Ok(vec![after[0], after[1]])
    })?;
    Ok(())
}
