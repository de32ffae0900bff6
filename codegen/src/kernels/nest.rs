//! Loop nests over chosen axes of a tensor, carrying one pointer per
//! operand (and, for folds, accumulators): the skeleton of reductions,
//! normalizations and scans, which walk "every position but the reduced
//! axes" outside and "the reduced axes" inside.

use cranelift_codegen::ir::{InstBuilder, Value, types};
use ptec_ir::ValueId;

use super::map::layout_strides;
use crate::emit::{Emitter, Size};
use crate::error::CodegenError;

/// Code emitted at each position of a loop nest, given the operands'
/// pointers there.
pub(crate) type PositionBody<'b> =
    dyn FnMut(&mut Emitter<'_, '_, '_>, &[Value]) -> Result<(), CodegenError> + 'b;

/// One step of a fold: gets the element's address, its flat index in the
/// fold and the accumulators; returns the new accumulators.
pub(crate) type FoldStep<'b> = dyn FnMut(&mut Emitter<'_, '_, '_>, Value, Value, &[Value]) -> Result<Vec<Value>, CodegenError>
    + 'b;

/// Byte strides of a value along each of its axes.
pub(crate) fn byte_strides(e: &mut Emitter<'_, '_, '_>, value: ValueId) -> Vec<Size> {
    let ty = e.graph().value(value).ty.clone();
    let size = Size::Const(ty.dtype.size() as i64);
    layout_strides(e, &ty.shape, &ty.dim_order)
        .into_iter()
        .map(|stride| e.mul(stride, size))
        .collect()
}

/// Loops over `axes` (of an index space of `sizes`), outermost first,
/// calling `body` with each operand's pointer at that position. `strides[k]`
/// holds operand k's byte stride along every axis.
pub(crate) fn over_axes(
    e: &mut Emitter<'_, '_, '_>,
    sizes: &[Size],
    strides: &[Vec<Size>],
    axes: &[usize],
    bases: &[Value],
    body: &mut PositionBody<'_>,
) -> Result<(), CodegenError> {
    let Some((&axis, rest)) = axes.split_first() else {
        return body(e, bases);
    };
    if sizes[axis] == Size::Const(1) {
        return over_axes(e, sizes, strides, rest, bases, body);
    }
    let steps: Vec<Size> = strides.iter().map(|operand| operand[axis]).collect();
    e.counted_loop(sizes[axis], bases, |e, _, pointers| {
        over_axes(e, sizes, strides, rest, pointers, body)?;
        Ok(pointers
            .iter()
            .zip(&steps)
            .map(|(&pointer, &step)| e.add_size(pointer, step))
            .collect())
    })?;
    Ok(())
}

/// [`over_axes`] for a kernel whose positions are all it writes, each
/// computed on its own: threads may each run a part of the outermost of
/// `axes` that has more than one step, where every size is a constant;
/// each position costs about `position_cost` operations.
pub(crate) fn over_axes_in_parts(
    e: &mut Emitter<'_, '_, '_>,
    sizes: &[Size],
    strides: &[Vec<Size>],
    axes: &[usize],
    bases: &[Value],
    position_cost: u64,
    body: &mut PositionBody<'_>,
) -> Result<(), CodegenError> {
    e.allow_parallel();
    let mut sizes = sizes.to_vec();
    let mut bases = bases.to_vec();
    let outer = axes
        .iter()
        .copied()
        .find(|&axis| sizes[axis] != Size::Const(1));
    let positions: Option<i64> = axes.iter().map(|&axis| sizes[axis].constant()).product();
    if let (Some(axis), Some(positions)) = (outer, positions)
        && let Some(count) = sizes[axis].constant().filter(|&count| count > 0)
        && let Some((lo, hi)) = e.parallel_range(
            count,
            ((positions / count) as u64).saturating_mul(position_cost),
        )
    {
        sizes[axis] = Size::Dyn(e.b.ins().isub(hi, lo));
        for (base, operand) in bases.iter_mut().zip(strides) {
            let offset = e.mul(Size::Dyn(lo), operand[axis]);
            *base = e.add_size(*base, offset);
        }
    }
    over_axes(e, &sizes, strides, axes, &bases, body)
}

/// Folds over `axes` from `base` (one operand, byte strides `strides`),
/// carrying `init`; `step` gets the element's address, its flat index within
/// the fold and the accumulators, and returns the new accumulators.
pub(crate) fn fold_axes(
    e: &mut Emitter<'_, '_, '_>,
    sizes: &[Size],
    strides: &[Size],
    axes: &[usize],
    base: Value,
    init: &[Value],
    step: &mut FoldStep<'_>,
) -> Result<Vec<Value>, CodegenError> {
    let zero = e.iconst(0);
    let mut carried = vec![base, zero];
    carried.extend_from_slice(init);
    let result = fold_rec(e, sizes, strides, axes, &carried, step)?;
    Ok(result[2..].to_vec())
}

/// `carried` is [pointer, flat index, accumulators...].
fn fold_rec(
    e: &mut Emitter<'_, '_, '_>,
    sizes: &[Size],
    strides: &[Size],
    axes: &[usize],
    carried: &[Value],
    step: &mut FoldStep<'_>,
) -> Result<Vec<Value>, CodegenError> {
    let Some((&axis, rest)) = axes.split_first() else {
        let accumulators = step(e, carried[0], carried[1], &carried[2..])?;
        let index = e.b.ins().iadd_imm_s(carried[1], 1);
        let mut next = vec![carried[0], index];
        next.extend(accumulators);
        return Ok(next);
    };
    let stride = strides[axis];
    let base = carried[0];
    let inner: Vec<Value> = carried[1..].to_vec();
    let mut loop_carried = vec![base];
    loop_carried.extend(inner);
    let out = e.counted_loop(sizes[axis], &loop_carried, |e, _, values| {
        let mut result = fold_rec(e, sizes, strides, rest, values, step)?;
        result[0] = e.add_size(values[0], stride);
        Ok(result)
    })?;
    Ok(out)
}

/// The number of elements of the given axes.
pub(crate) fn count_of(e: &mut Emitter<'_, '_, '_>, sizes: &[Size], axes: &[usize]) -> Size {
    axes.iter()
        .fold(Size::Const(1), |count, &axis| e.mul(count, sizes[axis]))
}

/// A count as a float of the given type.
pub(crate) fn count_as_float(
    e: &mut Emitter<'_, '_, '_>,
    count: Size,
    ty: cranelift_codegen::ir::Type,
) -> Value {
    match count {
        Size::Const(value) => {
            if ty == types::F64 {
                e.b.ins().f64const(value as f64)
            } else {
                e.b.ins().f32const(value as f32)
            }
        }
        Size::Dyn(value) => e.b.ins().fcvt_from_sint(ty, value),
    }
}

/// Code run at each index of a loop nest: gets the indices (outermost
/// first) and the carried values, returns their next values.
pub(crate) type IndexBody<'b> = dyn FnMut(&mut Emitter<'_, '_, '_>, &[Value], &[Value]) -> Result<Vec<Value>, CodegenError>
    + 'b;

/// Nested counted loops over an index space of `sizes`, outermost first,
/// carrying `carried`; returns their values after the last iteration.
pub(crate) fn over_indices(
    e: &mut Emitter<'_, '_, '_>,
    sizes: &[Size],
    carried: &[Value],
    body: &mut IndexBody<'_>,
) -> Result<Vec<Value>, CodegenError> {
    let mut indices = Vec::with_capacity(sizes.len());
    indices_rec(e, sizes, &mut indices, carried, body)
}

fn indices_rec(
    e: &mut Emitter<'_, '_, '_>,
    sizes: &[Size],
    indices: &mut Vec<Value>,
    carried: &[Value],
    body: &mut IndexBody<'_>,
) -> Result<Vec<Value>, CodegenError> {
    let Some((&size, rest)) = sizes.split_first() else {
        return body(e, indices, carried);
    };
    e.counted_loop(size, carried, |e, index, values| {
        indices.push(index);
        let next = indices_rec(e, rest, indices, values, body);
        indices.pop();
        next
    })
}
