//! Copies, views and layout changes: clones and dtype or dim-order
//! conversions, reshapes, permutations, selections, slices, splits, padding,
//! repetition, concatenation and gathers along a dimension.

use ptec_ir::ops::gather::IndexSelect;
use ptec_ir::ops::layout::{Cat, Copy, Pad, Permute, Repeat, Reshape, Select, Slice};
use ptec_ir::{Op, OpKind};

use super::Operator;
use crate::call::Call;
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "aten::_to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "aten::expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "aten::copy.out(Tensor self, Tensor src, bool non_blocking=False, *, Tensor(a!) out) -> Tensor(a!)",
        copy_from,
        &[OpKind::Copy],
    ),
    (
        "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
        copy_into,
        &[OpKind::Copy],
    ),
    (
        "aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        reshape,
        &[OpKind::Reshape],
    ),
    (
        "aten::_unsafe_view.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        reshape,
        &[OpKind::Reshape],
    ),
    (
        "aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
        reshape,
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out) -> Tensor(a!)",
        reshape,
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
        reshape,
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        reshape,
        &[OpKind::Reshape],
    ),
    (
        "aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)",
        permute,
        &[OpKind::Permute],
    ),
    (
        "aten::t_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        transpose_matrix,
        &[OpKind::Permute],
    ),
    (
        "aten::transpose_copy.int_out(Tensor self, int dim0, int dim1, *, Tensor(a!) out) -> Tensor(a!)",
        transpose,
        &[OpKind::Permute],
    ),
    (
        "aten::select_copy.int_out(Tensor self, int dim, SymInt index, *, Tensor(a!) out) -> Tensor(a!)",
        select,
        &[OpKind::Select],
    ),
    (
        "aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)",
        slice,
        &[OpKind::Slice],
    ),
    (
        "aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()",
        split_with_sizes,
        &[OpKind::Slice],
    ),
    (
        "aten::constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *, Tensor(a!) out) -> Tensor(a!)",
        constant_pad,
        &[OpKind::Pad],
    ),
    (
        "aten::repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out) -> Tensor(a!)",
        repeat,
        &[OpKind::Repeat],
    ),
    (
        "aten::index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)",
        index_select,
        &[OpKind::IndexSelect],
    ),
    (
        "aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)",
        cat,
        &[OpKind::Cat],
    ),
];

/// `self` into `out` (a copy, a change of dim order or of dtype, an
/// expansion: the output's type says which).
fn copy(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    c.emit(Op::Copy(Copy { input }), &["out"])
}

/// `copy(self, src, non_blocking, *, out)`: the source into `out`.
fn copy_from(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("src")?;
    c.emit(Op::Copy(Copy { input }), &["out"])
}

/// `copy_(self, src)`: the source into `self`, in place.
fn copy_into(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("src")?;
    c.emit_into(Op::Copy(Copy { input }), "self")
}

/// `self` with the shape of `out`.
fn reshape(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    c.emit(Op::Reshape(Reshape { input }), &["out"])
}

fn permute(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let dims = c.dims("dims", rank)?;
    let input = c.tensor("self")?;
    c.emit(Op::Permute(Permute { input, dims }), &["out"])
}

/// `t_copy(self, *, out)`: a matrix transposed, anything smaller as it is.
fn transpose_matrix(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let input = c.tensor("self")?;
    let dims = if rank == 2 {
        vec![1, 0]
    } else {
        (0..rank).collect()
    };
    c.emit(Op::Permute(Permute { input, dims }), &["out"])
}

fn transpose(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let (a, b) = (c.dim("dim0", rank)?, c.dim("dim1", rank)?);
    let mut dims: Vec<usize> = (0..rank).collect();
    dims.swap(a, b);
    let input = c.tensor("self")?;
    c.emit(Op::Permute(Permute { input, dims }), &["out"])
}

fn select(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of("self")?;
    let dim = c.dim("dim", sizes.len())?;
    let given = c.int("index")?;
    let index = if given < 0 { given + sizes[dim] } else { given };
    let index = u64::try_from(index)
        .ok()
        .filter(|&index| index < sizes[dim].max(0) as u64)
        .ok_or_else(|| {
            c.bad(
                "index",
                format!(
                    "{given} is out of range for dimension {dim} of size {}",
                    sizes[dim]
                ),
            )
        })?;
    let input = c.tensor("self")?;
    c.emit(Op::Select(Select { input, dim, index }), &["out"])
}

fn slice(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of("self")?;
    let dim = c.dim("dim", sizes.len())?;
    let size = sizes[dim];
    let clamp = |value: i64| {
        if value < 0 {
            value.saturating_add(size).max(0)
        } else {
            value.min(size)
        }
    };
    let start = clamp(c.optional_int("start")?.unwrap_or(0)) as u64;
    let step = c.int("step")?;
    let step = u64::try_from(step)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| c.bad("step", format!("{step} must be positive")))?;
    let input = c.tensor("self")?;
    c.emit(
        Op::Slice(Slice {
            input,
            dim,
            start,
            step,
        }),
        &["out"],
    )
}

fn split_with_sizes(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of("self")?;
    let dim = c.dim("dim", sizes.len())?;
    let pieces = c.int_list("split_sizes")?;
    let outputs = c.tensor_list_refs("out")?;
    if pieces.len() != outputs.len()
        || pieces.iter().any(|&piece| piece < 0)
        || pieces
            .iter()
            .try_fold(0i64, |sum, &piece| sum.checked_add(piece))
            != Some(sizes[dim])
    {
        return Err(c.bad(
            "split_sizes",
            format!(
                "{pieces:?} do not split dimension {dim} of {sizes:?} into the {} outputs",
                outputs.len()
            ),
        ));
    }
    let input = c.tensor("self")?;
    let mut start = 0;
    for (piece, output) in pieces.into_iter().zip(outputs) {
        let op = Op::Slice(Slice {
            input,
            dim,
            start,
            step: 1,
        });
        c.emit_to(op, &[output])?;
        start += piece as u64;
    }
    Ok(())
}

fn constant_pad(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let pad = c.int_list("pad")?;
    if pad.len() % 2 != 0 || pad.len() / 2 > rank || pad.iter().any(|&p| p < 0) {
        return Err(c.bad(
            "pad",
            format!("{pad:?} (negative padding crops, which ptec does not support)"),
        ));
    }
    // Pairs run from the last dimension backwards.
    let (mut before, mut after) = (vec![0; rank], vec![0; rank]);
    for (pair, chunk) in pad.chunks(2).enumerate() {
        before[rank - 1 - pair] = chunk[0] as u64;
        after[rank - 1 - pair] = chunk[1] as u64;
    }
    let value = c.scalar("value")?;
    let input = c.tensor("self")?;
    c.emit(
        Op::Pad(Pad {
            input,
            before,
            after,
            value,
        }),
        &["out"],
    )
}

fn repeat(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let repeats = c.counts("repeats")?;
    let input = c.tensor("self")?;
    c.emit(Op::Repeat(Repeat { input, repeats }), &["out"])
}

fn index_select(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let (input, index) = (c.tensor("self")?, c.tensor("index")?);
    c.emit(Op::IndexSelect(IndexSelect { input, index, dim }), &["out"])
}

fn cat(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let inputs = c.tensor_list("tensors")?;
    let rank = inputs.first().map_or(0, |&first| c.ty(first).rank());
    let dim = c.dim("dim", rank)?;
    c.emit(Op::Cat(Cat { inputs, dim }), &["out"])
}
