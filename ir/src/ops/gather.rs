//! Gathers and scatters: ops that read or write elements at positions
//! another tensor holds (advanced indexing, `index_select` and embeddings
//! as one op, `gather`, `scatter`, `index_put`, `masked_scatter`). An index
//! comes from a tensor at run time, so the generated code checks it: one
//! outside its dimension is an error, never an access out of bounds.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::{
    Expected, OpDef, OpError, ShapeContext, Slot, axis, broadcast, keeps_input_type, one, shapes_of,
};
use crate::graph::ValueId;
use crate::op::Op;
use crate::types::{DType, Dim, Shape, TensorType};

/// Advanced indexing: `indices[k]` indexes dimension `dims[k]` of `input`
/// (`dims` increasing), the other dimensions are taken whole. The index
/// tensors broadcast together to a shape `B`; the result has `B` in place of
/// the indexed dimensions when they are adjacent, else `B` first and then
/// the other dimensions (PyTorch's rule). With `wrap`, a negative index
/// counts from the end once (`x[idx]`); without, it is out of range
/// (`index_select`, `embedding`). An index out of range is an error.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Index {
    pub input: ValueId,
    pub indices: Vec<ValueId>,
    pub dims: Vec<usize>,
    pub wrap: bool,
}

/// `torch.gather(input, dim, index)`: output element `c` is the input's at
/// `c` with `c[dim] = index[c]`. The index has the input's rank and no
/// dimension but `dim` larger than the input's; the output has its shape.
/// Negative indices are out of range, as in PyTorch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Gather {
    pub input: ValueId,
    pub index: ValueId,
    pub dim: usize,
}

/// `input.scatter(dim, index, src)`: the input, with `src[c]` written at `c`
/// with `c[dim] = index[c]` for each position `c` of the index, in row-major
/// order (a later write to the same element wins), or added to it when
/// `accumulate` (`scatter_add`, summed in that order; half-precision floats
/// are summed in f32 and each element rounded once, as PyTorch does, where
/// `index_put` rounds every addition). `src` has the index's
/// rank and no dimension smaller, or is 0-D (one value everywhere:
/// `scatter.value`). Negative indices are out of range.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scatter {
    pub input: ValueId,
    pub index: ValueId,
    pub src: ValueId,
    pub dim: usize,
    pub accumulate: bool,
}

/// `input.index_put(indices, values, accumulate)`: the input with the
/// elements [`Index`] would read (same `dims`, negative indices wrapping)
/// replaced by `values` broadcast to that result's shape, in row-major
/// order, or added to them when `accumulate`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexPut {
    pub input: ValueId,
    pub values: ValueId,
    pub indices: Vec<ValueId>,
    pub dims: Vec<usize>,
    pub accumulate: bool,
}

/// `input.masked_scatter(mask, source)`: the input and the mask broadcast
/// together; where the mask holds, the next element of `source` (row-major)
/// replaces the input's. A source with fewer elements than the mask has true
/// ones is an error at run time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MaskedScatter {
    pub input: ValueId,
    pub mask: ValueId,
    pub source: ValueId,
}

/// Fails unless `ty` holds integers a gather can index with.
fn check_indices(ty: &TensorType, what: &'static str) -> Result<(), OpError> {
    match ty.dtype {
        DType::I64 | DType::I32 => Ok(()),
        found => Err(OpError::ElementType {
            what,
            expected: "i64 or i32",
            found,
        }),
    }
}

/// The shape advanced indexing gives `x` indexed at `dims` by tensors of
/// `index_shapes`.
pub fn indexed_shape(
    x: &[Dim],
    dims: &[usize],
    index_shapes: &[&[Dim]],
    eq: &mut dyn ShapeContext,
) -> Result<Shape, OpError> {
    let increasing = dims.windows(2).all(|pair| pair[0] < pair[1]);
    if dims.is_empty() || dims.len() != index_shapes.len() || !increasing {
        return Err(OpError::Attribute {
            name: "dims",
            value: format!("{dims:?}"),
            problem: format!(
                "not increasing dimensions, one for each of the {} index tensors",
                index_shapes.len()
            ),
        });
    }
    for &dim in dims {
        axis(x.len(), dim)?;
    }
    let broadcast_shape = broadcast(index_shapes, eq)?;
    let rest = || (0..x.len()).filter(|d| !dims.contains(d)).map(|d| x[d]);
    Ok(if Index::in_place(dims) {
        let mut shape: Shape = x[..dims[0]].to_vec();
        shape.extend(broadcast_shape);
        shape.extend_from_slice(&x[dims[dims.len() - 1] + 1..]);
        shape
    } else {
        broadcast_shape.into_iter().chain(rest()).collect()
    })
}

impl Index {
    /// Whether the result has the broadcast index shape in place of the
    /// indexed dimensions (they are adjacent) rather than first.
    pub fn in_place(dims: &[usize]) -> bool {
        dims.last()
            .zip(dims.first())
            .is_some_and(|(last, first)| last - first + 1 == dims.len())
    }
}

impl OpDef for Index {
    fn name(&self) -> &'static str {
        "index"
    }

    keeps_input_type!();

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        std::iter::once(self.input)
            .chain(self.indices.iter().copied())
            .map(|value| (Slot::Positional, value))
            .collect()
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        std::iter::once(&mut self.input)
            .chain(self.indices.iter_mut())
            .collect()
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let index_shapes: Vec<&[Dim]> = inputs[1..].iter().map(|ty| &ty.shape[..]).collect();
        one(indexed_shape(
            &inputs[0].shape,
            &self.dims,
            &index_shapes,
            eq,
        )?)
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        _outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        inputs[1..]
            .iter()
            .try_for_each(|ty| check_indices(ty, "an index tensor"))
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("dims", &as_u64(&self.dims));
        out.bool("wrap", self.wrap);
    }
}

/// Fails unless `index` has `x`'s rank and fits it along every dimension
/// but `dim` (`gather` and `scatter`).
fn check_along(x: &[Dim], index: &[Dim], dim: usize, what: &'static str) -> Result<(), OpError> {
    let fits = index.len() == x.len()
        && index
            .iter()
            .zip(x)
            .enumerate()
            .all(|(axis_index, (&i, &d))| {
                axis_index == dim
                    || i == d
                    || matches!((i.fixed(), d.fixed()), (Some(a), Some(b)) if a <= b)
            });
    if fits {
        Ok(())
    } else {
        Err(OpError::Shapes {
            what,
            shapes: vec![x.to_vec(), index.to_vec()],
        })
    }
}

impl OpDef for Gather {
    fn name(&self) -> &'static str {
        "gather"
    }

    keeps_input_type!();

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![
            (Slot::Positional, self.input),
            (Slot::Positional, self.index),
        ]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.input, &mut self.index]
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (x, index) = (&inputs[0].shape, &inputs[1].shape);
        let dim = axis(x.len(), self.dim)?;
        check_along(
            x,
            index,
            dim,
            "a gather from a tensor by an index that does not fit it",
        )?;
        one(index.clone())
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        _outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        check_indices(inputs[1], "gather's index")
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
    }
}

impl OpDef for Scatter {
    fn name(&self) -> &'static str {
        "scatter"
    }

    keeps_input_type!();

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![
            (Slot::Positional, self.input),
            (Slot::Positional, self.index),
            (Slot::Positional, self.src),
        ]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.input, &mut self.index, &mut self.src]
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (x, index, src) = (&inputs[0].shape, &inputs[1].shape, &inputs[2].shape);
        let dim = axis(x.len(), self.dim)?;
        check_along(
            x,
            index,
            dim,
            "a scatter into a tensor by an index that does not fit it",
        )?;
        if !src.is_empty() {
            // The index reads src where it reads itself.
            check_along(
                src,
                index,
                usize::MAX,
                "a scatter of a source smaller than its index",
            )?;
        }
        one(x.clone())
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        _outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        check_indices(inputs[1], "scatter's index")
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
        out.bool("accumulate", self.accumulate);
    }
}

impl OpDef for IndexPut {
    fn name(&self) -> &'static str {
        "index_put"
    }

    keeps_input_type!();

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        [self.input, self.values]
            .into_iter()
            .chain(self.indices.iter().copied())
            .map(|value| (Slot::Positional, value))
            .collect()
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        [&mut self.input, &mut self.values]
            .into_iter()
            .chain(self.indices.iter_mut())
            .collect()
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (x, values) = (&inputs[0].shape, &inputs[1].shape);
        let index_shapes: Vec<&[Dim]> = inputs[2..].iter().map(|ty| &ty.shape[..]).collect();
        let target = indexed_shape(x, &self.dims, &index_shapes, eq)?;
        if !super::broadcasts_to(values, &target) {
            return Err(OpError::Shapes {
                what: "index_put of values that do not broadcast to the indexed shape",
                shapes: vec![values.clone(), target],
            });
        }
        one(x.clone())
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        _outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        inputs[2..]
            .iter()
            .try_for_each(|ty| check_indices(ty, "an index tensor"))
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("dims", &as_u64(&self.dims));
        out.bool("accumulate", self.accumulate);
    }
}

impl OpDef for MaskedScatter {
    fn name(&self) -> &'static str {
        "masked_scatter"
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![
            (Slot::Positional, self.input),
            (Slot::Positional, self.mask),
            (Slot::Positional, self.source),
        ]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.input, &mut self.mask, &mut self.source]
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        one(broadcast(&[&inputs[0].shape, &inputs[1].shape], eq)?)
    }

    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        if inputs[1].dtype != DType::Bool {
            return Err(OpError::ElementType {
                what: "masked_scatter's mask",
                expected: "bool",
                found: inputs[1].dtype,
            });
        }
        if inputs[2].dtype != outputs[0].dtype || inputs[0].dtype != outputs[0].dtype {
            return Err(OpError::Shapes {
                what: "masked_scatter of another element type than its result",
                shapes: shapes_of(inputs),
            });
        }
        Ok(())
    }
}

fn as_u64(values: &[usize]) -> Vec<u64> {
    values.iter().map(|&value| value as u64).collect()
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let parsed = (|| {
        Ok(Some(match name {
            "index" => Op::Index(Index {
                input: operands.positional("input")?,
                indices: operands.rest(),
                dims: attributes.ints("dims")?,
                wrap: attributes.bool("wrap")?,
            }),
            "gather" => Op::Gather(Gather {
                input: operands.positional("input")?,
                index: operands.positional("index")?,
                dim: attributes.int("dim")?,
            }),
            "scatter" => Op::Scatter(Scatter {
                input: operands.positional("input")?,
                index: operands.positional("index")?,
                src: operands.positional("src")?,
                dim: attributes.int("dim")?,
                accumulate: attributes.bool("accumulate")?,
            }),
            "index_put" => Op::IndexPut(IndexPut {
                input: operands.positional("input")?,
                values: operands.positional("values")?,
                indices: operands.rest(),
                dims: attributes.ints("dims")?,
                accumulate: attributes.bool("accumulate")?,
            }),
            "masked_scatter" => Op::MaskedScatter(MaskedScatter {
                input: operands.positional("input")?,
                mask: operands.positional("mask")?,
                source: operands.positional("source")?,
            }),
            _ => return Ok(None),
        }))
    })();
    parsed.transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Identical, show};
    use crate::symbolic::SymbolTable;

    fn fixed(sizes: &[u64]) -> Shape {
        sizes.iter().map(|&size| Dim::Fixed(size)).collect()
    }

    #[test]
    fn adjacent_index_dims_stay_in_place_and_separated_ones_go_first() {
        let x = fixed(&[2, 3, 4, 5]);
        let (i, j) = (fixed(&[6]), fixed(&[7, 1]));
        let symbols = SymbolTable::default();
        let shape = |dims: &[usize]| {
            indexed_shape(&x, dims, &[&i, &j], &mut Identical::new(&symbols))
                .expect("a valid index")
        };
        assert_eq!(show(&shape(&[1, 2])), "[2,7,6,5]");
        assert_eq!(show(&shape(&[1, 3])), "[7,6,2,4]");
        assert!(indexed_shape(&x, &[2, 1], &[&i, &j], &mut Identical::new(&symbols)).is_err());
        assert!(indexed_shape(&x, &[1, 4], &[&i, &j], &mut Identical::new(&symbols)).is_err());
    }
}
