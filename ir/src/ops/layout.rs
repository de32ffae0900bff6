//! Ops that move elements without computing on them: copies (which also
//! convert element types and dim orders), views, permutations, selections,
//! slices, concatenations, padding and tiling.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::one_input;
use super::{
    Expected, LayoutRule, OpDef, OpError, ShapeContext, Slot, axis, broadcasts_to, dim_poly, numel,
    one, poly_dim, shapes_of, show,
};
use crate::graph::ValueId;
use crate::op::Op;
use crate::symbolic::{Poly, Term};
use crate::tensor_data::{cast, relayout};
use crate::types::{Dim, Scalar, TensorType};

/// Copies the input into the output, broadcasting and converting element
/// type and dim order to the output's: clone, dim-order changes, `copy_`
/// into a buffer, moves between values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Copy {
    pub input: ValueId,
}

/// Reinterprets the input's bytes with the output's shape (a view): both
/// are row-major, of one element type and element count.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reshape {
    pub input: ValueId,
}

/// `input.permute(dims)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Permute {
    pub input: ValueId,
    pub dims: Vec<usize>,
}

/// `input.select(dim, index)`, the index already non-negative; one known
/// only at run time is checked against the dimension then.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Select {
    pub input: ValueId,
    pub dim: usize,
    pub index: Dim,
}

/// `input[start:start+step*len:step]` along `dim`; the length is the
/// output's. A start or length known only at run time is checked against
/// the dimension then.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Slice {
    pub input: ValueId,
    pub dim: usize,
    pub start: Dim,
    pub step: u64,
}

/// Concatenation of the inputs along `dim`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cat {
    pub inputs: Vec<ValueId>,
    pub dim: usize,
}

/// Pads each dimension with `before[d]` and `after[d]` elements of
/// `value`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pad {
    pub input: ValueId,
    pub before: Vec<u64>,
    pub after: Vec<u64>,
    pub value: Scalar,
}

/// Tiles the input `repeats[d]` times along each dimension (leading
/// repeats add dimensions).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Repeat {
    pub input: ValueId,
    pub repeats: Vec<u64>,
}

impl OpDef for Copy {
    fn name(&self) -> &'static str {
        "copy"
    }

    one_input!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        Ok(vec![Expected::Given])
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        let (from, to) = (inputs[0], outputs[0]);
        if broadcasts_to(&from.shape, &to.shape) {
            Ok(())
        } else {
            Err(OpError::Output {
                what: "copy",
                from: Box::new(from.clone()),
                to: Box::new(to.clone()),
            })
        }
    }

    /// A cast (element by element, so both layouts must be the same) or a
    /// change of dim order.
    fn fold(&self, inputs: &[(&TensorType, &[u8])], output: &TensorType) -> Option<Vec<u8>> {
        let (from, bytes) = inputs[0];
        if from.shape != output.shape {
            return None;
        }
        if from.dtype != output.dtype {
            let same_layout = from.dim_order == output.dim_order && from.fixed_shape().is_some();
            return same_layout.then(|| cast(bytes, from.dtype, output.dtype))?;
        }
        relayout(bytes, from, output, &(0..from.rank()).collect::<Vec<_>>())
    }

    fn layout(&self) -> LayoutRule {
        LayoutRule::ReadsAny
    }
}

impl OpDef for Reshape {
    fn name(&self) -> &'static str {
        "reshape"
    }

    one_input!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        Ok(vec![Expected::Given])
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
        cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        let (from, to) = (inputs[0], outputs[0]);
        let same_count = numel(cx, &from.shape)? == numel(cx, &to.shape)?;
        if same_count && from.dtype == to.dtype && from.is_contiguous() && to.is_contiguous() {
            Ok(())
        } else {
            Err(OpError::Output {
                what: "view",
                from: Box::new(from.clone()),
                to: Box::new(to.clone()),
            })
        }
    }

    fn fold(&self, inputs: &[(&TensorType, &[u8])], output: &TensorType) -> Option<Vec<u8>> {
        let (from, bytes) = inputs[0];
        let row_major = from.is_contiguous() && output.is_contiguous();
        (row_major && from.dtype == output.dtype && output.fixed_shape().is_some())
            .then(|| bytes.to_vec())
    }
}

impl OpDef for Permute {
    fn name(&self) -> &'static str {
        "permute"
    }

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        if !is_permutation(&self.dims, x.len()) {
            return Err(OpError::Attribute {
                name: "dims",
                value: format!("{:?}", self.dims),
                problem: format!("not a permutation of {} dimensions", x.len()),
            });
        }
        one(self.dims.iter().map(|&d| x[d]).collect())
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("dims", &as_u64(&self.dims));
    }

    fn fold(&self, inputs: &[(&TensorType, &[u8])], output: &TensorType) -> Option<Vec<u8>> {
        let (from, bytes) = inputs[0];
        relayout(bytes, from, output, &self.dims)
    }
}

/// Whether `dims` orders `0..rank`.
pub fn is_permutation(dims: &[usize], rank: usize) -> bool {
    let mut seen = vec![false; rank];
    dims.len() == rank
        && dims
            .iter()
            .all(|&d| d < rank && !std::mem::replace(&mut seen[d], true))
}

impl OpDef for Select {
    fn name(&self) -> &'static str {
        "select"
    }

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        let dim = axis(x.len(), self.dim)?;
        // An index or a size known only at run time is checked then.
        if let (Dim::Fixed(index), Dim::Fixed(size)) = (self.index, x[dim])
            && index >= size
        {
            return Err(OpError::Attribute {
                name: "index",
                value: self.index.to_string(),
                problem: format!("out of range for dimension {dim} of {}", show(x)),
            });
        }
        let mut shape = x.clone();
        shape.remove(dim);
        one(shape)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
        out.dim("index", self.index);
    }

    fn terms(&self) -> Vec<Term> {
        vec![Term::from(self.index)]
    }

    fn map_terms(&mut self, map: &mut dyn FnMut(Term) -> Term) {
        map_dim(&mut self.index, map);
    }
}

impl OpDef for Slice {
    fn name(&self) -> &'static str {
        "slice"
    }

    one_input!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        // The slice's length is the output's; `check` bounds it.
        Ok(vec![Expected::Given])
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
        cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        let (from, to) = (&inputs[0].shape, &outputs[0].shape);
        let (dim, start, step) = (self.dim, self.start, self.step);
        // A start, length or size known only at run time is checked then.
        let valid = from.len() == to.len()
            && dim < from.len()
            && step > 0
            && from
                .iter()
                .zip(to)
                .enumerate()
                .all(|(axis, (&a, &b))| axis == dim || cx.equate(a, b).is_some())
            && match (from[dim].fixed(), to[dim].fixed(), start.fixed()) {
                (Some(size), Some(0), Some(start)) => start <= size,
                (Some(size), Some(len), Some(start)) => start
                    .checked_add(step.saturating_mul(len - 1))
                    .is_some_and(|last| last < size),
                _ => true,
            };
        if valid {
            Ok(())
        } else {
            Err(OpError::Attribute {
                name: "start",
                value: start.to_string(),
                problem: format!(
                    "a slice with step {step} of dimension {dim} of {} cannot give {}",
                    show(from),
                    show(to)
                ),
            })
        }
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
        out.dim("start", self.start);
        out.int("step", self.step);
    }

    fn terms(&self) -> Vec<Term> {
        vec![Term::from(self.start)]
    }

    fn map_terms(&mut self, map: &mut dyn FnMut(Term) -> Term) {
        map_dim(&mut self.start, map);
    }
}

/// A dimension attribute replaced by what `map` makes of it (a symbol
/// renumbered or settled to a size).
fn map_dim(dim: &mut Dim, map: &mut dyn FnMut(Term) -> Term) {
    if let Some(mapped) = map(Term::from(*dim)).as_dim() {
        *dim = mapped;
    }
}

impl OpDef for Cat {
    fn name(&self) -> &'static str {
        "cat"
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        self.inputs
            .iter()
            .map(|&value| (Slot::Positional, value))
            .collect()
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        self.inputs.iter_mut().collect()
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let mismatch = || OpError::Shapes {
            what: "cat of",
            shapes: shapes_of(inputs),
        };
        let first = &inputs.first().ok_or_else(mismatch)?.shape;
        let dim = axis(first.len(), self.dim)?;
        let mut shape = first.clone();
        let mut total = Poly::constant(0);
        for part in inputs {
            if part.rank() != first.len() {
                return Err(mismatch());
            }
            for (axis_index, (&a, b)) in part.shape.iter().zip(shape.iter_mut()).enumerate() {
                if axis_index != dim {
                    *b = eq.equate(a, *b).ok_or_else(mismatch)?;
                }
            }
            total = total.add(&dim_poly(eq, part.shape[dim])?);
        }
        shape[dim] = poly_dim(eq, total, "a concatenated dimension")?;
        one(shape)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
    }
}

impl OpDef for Pad {
    fn name(&self) -> &'static str {
        "pad"
    }

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        if self.before.len() != x.len() || self.after.len() != x.len() {
            return Err(OpError::Attribute {
                name: "before",
                value: format!("{:?}", self.before),
                problem: format!("padding for a rank-{} input", x.len()),
            });
        }
        let shape = x
            .iter()
            .zip(self.before.iter().zip(&self.after))
            .map(|(&dim, (&b, &a))| {
                let padded = dim_poly(eq, dim)?.add(&Poly::constant((b + a) as i64));
                poly_dim(eq, padded, "a padded dimension")
            })
            .collect::<Result<_, _>>()?;
        one(shape)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("before", &self.before);
        out.ints("after", &self.after);
        out.scalar("value", self.value);
    }
}

impl OpDef for Repeat {
    fn name(&self) -> &'static str {
        "repeat"
    }

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        let Some(lead) = self.repeats.len().checked_sub(x.len()) else {
            return Err(OpError::Attribute {
                name: "repeats",
                value: format!("{:?}", self.repeats),
                problem: format!("fewer repeats than the rank {} of the input", x.len()),
            });
        };
        let shape = self
            .repeats
            .iter()
            .enumerate()
            .map(|(axis, &times)| match axis.checked_sub(lead) {
                Some(index) => {
                    let repeated = dim_poly(eq, x[index])?.scale(times as i64);
                    poly_dim(eq, repeated, "a repeated dimension")
                }
                None => Ok(Dim::Fixed(times)),
            })
            .collect::<Result<_, _>>()?;
        one(shape)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("repeats", &self.repeats);
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
            "copy" => Op::Copy(Copy {
                input: operands.positional("input")?,
            }),
            "reshape" => Op::Reshape(Reshape {
                input: operands.positional("input")?,
            }),
            "permute" => Op::Permute(Permute {
                input: operands.positional("input")?,
                dims: attributes.ints("dims")?,
            }),
            "select" => Op::Select(Select {
                input: operands.positional("input")?,
                dim: attributes.int("dim")?,
                index: attributes.dim("index")?,
            }),
            "slice" => Op::Slice(Slice {
                input: operands.positional("input")?,
                dim: attributes.int("dim")?,
                start: attributes.dim("start")?,
                step: attributes.int("step")?,
            }),
            "cat" => Op::Cat(Cat {
                inputs: operands.rest(),
                dim: attributes.int("dim")?,
            }),
            "pad" => Op::Pad(Pad {
                input: operands.positional("input")?,
                before: attributes.ints("before")?,
                after: attributes.ints("after")?,
                value: attributes.scalar("value")?,
            }),
            "repeat" => Op::Repeat(Repeat {
                input: operands.positional("input")?,
                repeats: attributes.ints("repeats")?,
            }),
            _ => return Ok(None),
        }))
    })();
    parsed.transpose()
}
