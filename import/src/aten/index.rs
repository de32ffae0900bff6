//! Indexing by tensors: advanced indexing (`index.Tensor`, lists of
//! optional index tensors), `index_put`, `gather`, the scatters and
//! `masked_scatter`. A boolean mask as an index stands for the coordinates
//! of its true elements (`nonzero.rs`), a number known only at run time,
//! except a mask written over with one value (`x[mask] = v`), which is a
//! `where`.

use ptec_ir::ops::ShapeContext;
use ptec_ir::ops::elementwise::{Elementwise, Func};
use ptec_ir::ops::gather::{Gather, Index, IndexPut, MaskedScatter, Scatter};
use ptec_ir::ops::layout::Reshape;
use ptec_ir::{DType, Dim, Op, OpKind, Scalar, TensorType, ValueId};

use super::Operator;
use super::layout::view;
use super::nonzero::{coordinates, flat_positions, flatten};
use crate::call::{Call, TensorRef};
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)",
        index,
        &[
            OpKind::Copy,
            OpKind::Index,
            OpKind::Reshape,
            OpKind::Elementwise,
            OpKind::Reduce,
            OpKind::RepeatInterleave,
        ],
    ),
    (
        "aten::index_put.out(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False, *, Tensor(a!) out) -> Tensor(a!)",
        |c| index_put(c, Written::Out),
        &[
            OpKind::Copy,
            OpKind::Reshape,
            OpKind::Elementwise,
            OpKind::IndexPut,
            OpKind::Reduce,
            OpKind::RepeatInterleave,
        ],
    ),
    (
        "aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
        |c| index_put(c, Written::InPlace),
        &[
            OpKind::Copy,
            OpKind::Reshape,
            OpKind::Elementwise,
            OpKind::IndexPut,
            OpKind::Reduce,
            OpKind::RepeatInterleave,
        ],
    ),
    (
        "aten::gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out) -> Tensor(a!)",
        gather,
        &[OpKind::Reshape, OpKind::Gather],
    ),
    (
        "aten::scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)",
        |c| scatter(c, Some("src"), false),
        &[OpKind::Reshape, OpKind::Scatter],
    ),
    (
        "aten::scatter.value_out(Tensor self, int dim, Tensor index, Scalar value, *, Tensor(a!) out) -> Tensor(a!)",
        |c| scatter(c, None, false),
        &[OpKind::Reshape, OpKind::Scatter],
    ),
    (
        "aten::scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)",
        |c| scatter(c, Some("src"), true),
        &[OpKind::Reshape, OpKind::Scatter],
    ),
    (
        "aten::masked_scatter.out(Tensor self, Tensor mask, Tensor source, *, Tensor(a!) out) -> Tensor(a!)",
        masked_scatter,
        &[OpKind::MaskedScatter],
    ),
];

/// Where an `index_put` writes.
#[derive(Clone, Copy)]
enum Written {
    /// Into its `out` argument.
    Out,
    /// Into `self` (`index_put_`).
    InPlace,
}

/// One entry of a list of optional index tensors.
enum Indexer {
    /// Integer indices of one dimension.
    Positions(ValueId),
    /// A boolean mask over as many dimensions as it has.
    Mask(ValueId),
}

/// The entries of the `indices` argument, each with the first dimension of
/// `self` (of rank `rank`) it indexes.
fn indexers(c: &mut Call<'_, '_, '_>, rank: usize) -> Result<Vec<(usize, Indexer)>, ImportError> {
    let list = c.optional_tensor_list("indices")?;
    let mut dim = 0;
    let mut indexers = Vec::new();
    for item in list {
        let Some(tensor) = item else {
            dim += 1;
            continue;
        };
        let ty = c.ty(tensor);
        let indexer = match ty.dtype {
            DType::I64 | DType::I32 => Indexer::Positions(tensor),
            DType::Bool | DType::U8 => Indexer::Mask(tensor),
            other => {
                return Err(c.bad(
                    "indices",
                    format!("holds a tensor of {other}; indices are integers or booleans"),
                ));
            }
        };
        let covers = match indexer {
            Indexer::Positions(_) => 1,
            Indexer::Mask(_) => ty.rank(),
        };
        indexers.push((dim, indexer));
        dim += covers;
    }
    if dim > rank {
        return Err(c.bad(
            "indices",
            format!("index {dim} dimensions of a {rank}-dimensional self"),
        ));
    }
    Ok(indexers)
}

/// That a boolean mask for dimensions `dim..` of `input` has their sizes.
fn check_mask(
    c: &mut Call<'_, '_, '_>,
    input: ValueId,
    dim: usize,
    mask: ValueId,
) -> Result<(), ImportError> {
    let shape = c.shape(mask);
    if shape.is_empty() {
        return Err(c.bad(
            "indices",
            format!(
                "holds a 0-dim boolean mask for dimension {dim}, which ptec does not support yet \
                 (it adds a dimension of size 0 or 1)"
            ),
        ));
    }
    let covered = c.ty(input).shape[dim..dim + shape.len()].to_vec();
    for (&own, &size) in covered.iter().zip(&shape) {
        if c.importer.symbols.equate(own, size).is_none() {
            return Err(c.bad(
                "indices",
                format!(
                    "holds a boolean mask of shape {} for dimension {dim}, and the dimensions it \
                     indexes are {} in self",
                    ptec_ir::ops::show(&shape),
                    ptec_ir::ops::show(&covered)
                ),
            ));
        }
    }
    Ok(())
}

/// The integer index tensors of `indexers` and the dimensions they index;
/// a mask over dimensions `d..d + k` becomes the `k` coordinates of its true
/// elements, indexing those dimensions.
fn positions(
    c: &mut Call<'_, '_, '_>,
    input: ValueId,
    indexers: Vec<(usize, Indexer)>,
) -> Result<(Vec<ValueId>, Vec<usize>), ImportError> {
    let mut indices = Vec::with_capacity(indexers.len());
    let mut dims = Vec::with_capacity(indexers.len());
    for (dim, indexer) in indexers {
        match indexer {
            Indexer::Positions(tensor) => {
                indices.push(tensor);
                dims.push(dim);
            }
            Indexer::Mask(mask) => {
                check_mask(c, input, dim, mask)?;
                let columns = coordinates(c, "indices", mask)?;
                dims.extend(dim..dim + columns.len());
                indices.extend(columns);
            }
        }
    }
    Ok((indices, dims))
}

/// `index.Tensor(self, indices)`: advanced indexing, negative indices
/// counting from the end.
fn index(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let indexers = indexers(c, c.ty(input).rank())?;
    if let [(0, Indexer::Mask(mask))] = indexers.as_slice()
        && c.ty(*mask).rank() == c.ty(input).rank()
    {
        // `x[mask]` over every dimension: the elements at the mask's flat
        // positions, without coordinates.
        let mask = *mask;
        check_mask(c, input, 0, mask)?;
        let positions = flat_positions(c, "indices", mask)?;
        let input = flatten(c, "self", input)?;
        let op = Index {
            input,
            indices: vec![positions],
            dims: vec![0],
            wrap: false,
        };
        return c.emit(Op::Index(op), &["out"]);
    }
    let (indices, dims) = positions(c, input, indexers)?;
    if indices.is_empty() {
        return c.emit_copy(input, "out");
    }
    let op = Index {
        input,
        indices,
        dims,
        wrap: true,
    };
    c.emit(Op::Index(op), &["out"])
}

/// `index_put(self, indices, values, accumulate)`: `values` written (or
/// added) where advanced indexing reads. One boolean mask written over with
/// a single value is `where(mask, value, self)`.
fn index_put(c: &mut Call<'_, '_, '_>, written: Written) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let rank = c.ty(input).rank();
    let values = c.tensor("values")?;
    let accumulate = c.bool("accumulate")?;
    let mut indexers = indexers(c, rank)?;
    let one_value = c
        .ty(values)
        .fixed_shape()
        .is_some_and(|shape| shape.iter().product::<u64>() == 1);
    let op = match indexers.as_slice() {
        [(dim, Indexer::Mask(mask))] if one_value && !accumulate => {
            let (dim, mask) = (*dim, *mask);
            // The mask covers dimensions dim.. of self; it broadcasts
            // against self given those before as size 1 and those after.
            let mut shape = vec![Dim::Fixed(1); dim];
            shape.extend(c.ty(mask).shape.clone());
            shape.resize(rank, Dim::Fixed(1));
            let mask = view(c, mask, shape)?;
            let value = view(c, values, Vec::new())?;
            Elementwise::op(Func::Where, vec![mask, value, input])
        }
        _ => {
            let (indices, dims) = positions(c, input, std::mem::take(&mut indexers))?;
            if indices.is_empty() {
                return Err(c.bad("indices", "holds no index tensor"));
            }
            Op::IndexPut(IndexPut {
                input,
                values,
                indices,
                dims,
                accumulate,
            })
        }
    };
    match written {
        Written::Out => c.emit(op, &["out"]),
        Written::InPlace => c.emit_into(op, "self"),
    }
}

/// A 0-D tensor argument seen as 1-D (one element), others as they are.
fn at_least_1d(c: &mut Call<'_, '_, '_>, name: &str) -> Result<ValueId, ImportError> {
    let value = c.tensor(name)?;
    if c.ty(value).rank() == 0 {
        view(c, value, vec![Dim::Fixed(1)])
    } else {
        Ok(value)
    }
}

/// Emits `op` into `out`, through a 1-D temporary of type `ty` viewed as
/// `out` when `out` is 0-D (the operands were seen as 1-D).
fn emit_maybe_0d(c: &mut Call<'_, '_, '_>, op: Op, ty: TensorType) -> Result<(), ImportError> {
    if c.rank_of("out")? != 0 {
        return c.emit(op, &["out"]);
    }
    let result = c.new_value(ty);
    c.emit_to(op, &[TensorRef::Ir(result)])?;
    c.emit(Op::Reshape(Reshape { input: result }), &["out"])
}

/// The operands `self` and `index` of a gather or scatter (seen as 1-D when
/// 0-D), and the dimension `dim`.
fn along(c: &mut Call<'_, '_, '_>) -> Result<(ValueId, ValueId, usize), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let (input, index) = (at_least_1d(c, "self")?, at_least_1d(c, "index")?);
    if c.ty(index).rank() != c.ty(input).rank() {
        return Err(c.bad(
            "index",
            format!(
                "{} does not have the rank of self {}",
                c.ty(index),
                c.ty(input)
            ),
        ));
    }
    Ok((input, index, dim))
}

/// `gather(self, dim, index)`.
fn gather(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (input, index, dim) = along(c)?;
    let ty = TensorType {
        dtype: c.ty(input).dtype,
        ..c.ty(index).clone()
    };
    emit_maybe_0d(c, Op::Gather(Gather { input, index, dim }), ty)
}

/// `scatter(self, dim, index, src | value)` and `scatter_add`: the source
/// tensor `source`, or else the `value` argument as a 0-D constant.
fn scatter(
    c: &mut Call<'_, '_, '_>,
    source: Option<&str>,
    accumulate: bool,
) -> Result<(), ImportError> {
    let (input, index, dim) = along(c)?;
    let src = match source {
        Some(name) => at_least_1d(c, name)?,
        None => {
            let value = c.scalar("value")?;
            scalar_constant(c, value)
        }
    };
    let op = Op::Scatter(Scatter {
        input,
        index,
        src,
        dim,
        accumulate,
    });
    let ty = c.ty(input).clone();
    emit_maybe_0d(c, op, ty)
}

/// A 0-D constant holding `value` exactly (an i64, f64 or bool).
fn scalar_constant(c: &mut Call<'_, '_, '_>, value: Scalar) -> ValueId {
    let (dtype, bytes) = match value {
        Scalar::Bool(flag) => (DType::Bool, vec![u8::from(flag)]),
        Scalar::Int(integer) => (DType::I64, integer.to_le_bytes().to_vec()),
        Scalar::Float(real) => (DType::F64, real.to_le_bytes().to_vec()),
    };
    let ty = TensorType {
        dtype,
        shape: Vec::new(),
        dim_order: Vec::new(),
    };
    c.constant(ty, bytes)
}

/// `masked_scatter(self, mask, source)`.
fn masked_scatter(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let mask = c.tensor("mask")?;
    if c.ty(mask).dtype != DType::Bool {
        return Err(c.bad("mask", format!("{} is not a boolean tensor", c.ty(mask))));
    }
    let op = Op::MaskedScatter(MaskedScatter {
        input: c.tensor("self")?,
        mask,
        source: c.tensor("source")?,
    });
    c.emit(op, &["out"])
}
