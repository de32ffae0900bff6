//! Gathers: rows of a table picked by an index tensor (embedding,
//! index_select). An index outside the table is an error, as in PyTorch,
//! never a read out of bounds.

use cranelift_codegen::ir::InstBuilder;
use cranelift_codegen::ir::condcodes::IntCC;
use ptec_ir::ops::gather::{Embedding, IndexSelect};
use ptec_ir::{DType, ValueId};

use super::map::{Operand, emit_copy, layout_strides};
use crate::emit::{Emitter, Size};
use crate::error::CodegenError;

/// `out[i, :] = weight[indices[i], :]`; an index outside the table is an
/// error, as in PyTorch.
pub(super) fn embedding(
    e: &mut Emitter<'_, '_, '_>,
    &Embedding { weight, indices }: &Embedding,
    output: ValueId,
) -> Result<(), CodegenError> {
    let weight_ty = e.graph().value(weight).ty.clone();
    let index_ty = e.graph().value(indices).ty.clone();
    let out_ty = e.graph().value(output).ty.clone();
    if !weight_ty.is_contiguous()
        || !index_ty.is_contiguous()
        || !out_ty.is_contiguous()
        || weight_ty.dtype != out_ty.dtype
    {
        return Err(
            e.unsupported("embedding of non-contiguous tensors, or into another element type")
        );
    }
    let rows = e.dim(weight_ty.shape[0]);
    let rows = e.value_of(rows);
    let row_elements = e.dim(weight_ty.shape[1]);
    let row_bytes = e.mul(row_elements, Size::Const(weight_ty.dtype.size() as i64));
    let index_sizes = e.shape(&index_ty.shape);
    let count = e.product(&index_sizes);
    let bases = [e.address(weight), e.address(indices), e.address(output)];
    let index_size = index_ty.dtype.size() as i64;
    e.counted_loop(count, &[bases[1], bases[2]], |e, _, p| {
        let index = e.load(index_ty.dtype, p[0]);
        let index = e.convert(index, index_ty.dtype, DType::I64)?;
        let outside =
            e.b.ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, index, rows);
        e.fail_if(outside, "embedding index out of range".to_string());
        let row_bytes_value = e.value_of(row_bytes);
        let offset = e.b.ins().imul(index, row_bytes_value);
        let source = e.b.ins().iadd(bases[0], offset);
        let row = |base| Operand {
            base,
            dtype: out_ty.dtype,
            strides: vec![Size::Const(1)],
        };
        emit_copy(e, vec![row_elements], row(p[1]), row(source))?;
        Ok(vec![
            e.b.ins().iadd_imm_s(p[0], index_size),
            e.add_size(p[1], row_bytes),
        ])
    })?;
    Ok(())
}

/// `out = x.index_select(dim, index)`: for each index, the slice of `x` at
/// that position of `dim` is copied to the slice of `out` at the index's
/// position.
pub(super) fn index_select(
    e: &mut Emitter<'_, '_, '_>,
    &IndexSelect {
        input,
        index: indices,
        dim,
    }: &IndexSelect,
    output: ValueId,
) -> Result<(), CodegenError> {
    let in_ty = e.graph().value(input).ty.clone();
    let index_ty = e.graph().value(indices).ty.clone();
    let out_ty = e.graph().value(output).ty.clone();
    if in_ty.rank() == 0 || !matches!(index_ty.dtype, DType::I64 | DType::I32) {
        return Err(
            e.unsupported("index_select of a 0-dim tensor, or with indices other than i32 or i64")
        );
    }
    let mut in_strides = layout_strides(e, &in_ty.shape, &in_ty.dim_order);
    let mut out_strides = layout_strides(e, &out_ty.shape, &out_ty.dim_order);
    let in_step = e.mul(in_strides[dim], Size::Const(in_ty.dtype.size() as i64));
    let out_step = e.mul(out_strides[dim], Size::Const(out_ty.dtype.size() as i64));
    let rows = e.dim(in_ty.shape[dim]);
    let rows = e.value_of(rows);
    let count = e.dim(out_ty.shape[dim]);
    let mut slice_shape = out_ty.shape.clone();
    slice_shape.remove(dim);
    in_strides.remove(dim);
    out_strides.remove(dim);
    let sizes = e.shape(&slice_shape);
    let in_base = e.address(input);
    let bases = [e.address(indices), e.address(output)];
    let index_size = index_ty.dtype.size() as i64;
    e.counted_loop(count, &bases, |e, _, p| {
        let index = e.load(index_ty.dtype, p[0]);
        let index = e.convert(index, index_ty.dtype, DType::I64)?;
        let outside =
            e.b.ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, index, rows);
        e.fail_if(outside, "index_select index out of range".to_string());
        let step = e.value_of(in_step);
        let offset = e.b.ins().imul(index, step);
        let source = e.b.ins().iadd(in_base, offset);
        emit_copy(
            e,
            sizes.clone(),
            Operand {
                base: p[1],
                dtype: out_ty.dtype,
                strides: out_strides.clone(),
            },
            Operand {
                base: source,
                dtype: in_ty.dtype,
                strides: in_strides.clone(),
            },
        )?;
        Ok(vec![
            e.b.ins().iadd_imm_s(p[0], index_size),
            e.add_size(p[1], out_step),
        ])
    })?;
    Ok(())
}
