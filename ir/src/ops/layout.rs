//! Ops that move elements without computing on them: copies (which also
//! convert element types and dim orders), views, permutations, selections,
//! slices, concatenations, padding, rolling, tiling, strided reads of memory
//! (flips, diagonals, `as_strided`, `unfold`), slice scatters and triangles.
//!
//! Padding and rolling map each output dimension on its own, in intervals
//! whose elements come from an affine run of the input's ([`Piece`]): both
//! code generators copy or compute from those pieces, so the rule is
//! written once.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::one_input;
use super::promotion::{Operand, can_cast, result_type};
use super::{
    Expected, LayoutRule, OpDef, OpError, ShapeContext, Slot, axis, broadcasts_to, dim_poly, fixed,
    keeps_input_type, numel, one, poly_dim, shapes_of, show,
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

/// Pads each dimension with `before[d]` and `after[d]` elements (negative
/// amounts crop), filled as `mode` says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pad {
    pub input: ValueId,
    pub before: Vec<i64>,
    pub after: Vec<i64>,
    pub mode: PadMode,
}

/// What padding is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PadMode {
    /// A constant (`constant_pad_nd`).
    Constant(Scalar),
    /// The input mirrored at its edges, the edge itself not repeated
    /// (`reflection_pad`): each padding must be shorter than the dimension.
    Reflect,
    /// The edge element repeated (`replication_pad`).
    Replicate,
}

/// `input.roll(shifts)`: output element `c` is the input's at `c[d] -
/// shifts[d]` modulo the size along each dimension (shifts already in
/// `0..size`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Roll {
    pub input: ValueId,
    pub shifts: Vec<u64>,
}

/// A strided read of the input's memory: output element `c` is the input's
/// element at memory position `offset + sum(c[d] * strides[d])`, positions
/// counting the input's elements in the order its dim order lays them out
/// (`as_strided`'s storage). Flips (negative strides), diagonals and
/// `unfold` are strided reads; every position read must lie in the input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Strided {
    pub input: ValueId,
    pub offset: u64,
    pub strides: Vec<i64>,
}

/// `input` with its slice `start::step` along `dim` replaced by `src`
/// (`slice_scatter`; `select_scatter` with `src` given the selected
/// dimension back as size 1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SliceScatter {
    pub input: ValueId,
    pub src: ValueId,
    pub dim: usize,
    pub start: u64,
    pub step: u64,
}

/// `input.tril(diagonal)`: each matrix (the last two dimensions) keeps its
/// elements on and below diagonal `diagonal` (0 the main one, positive
/// above it, negative below) and the others become zero.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tril {
    pub input: ValueId,
    pub diagonal: i64,
}

/// Where the elements of one interval of an output dimension come from, in
/// ops that map each dimension on its own ([`Pad`], [`Roll`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The padding's fill value.
    Fill,
    /// The input's elements `start + step * k` along the dimension, for the
    /// interval's elements `k = 0, 1, ...` (`step` is 1, 0 or -1).
    Run { start: u64, step: i64 },
}

/// An interval `[start, start + len)` of an output dimension and where its
/// elements come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub start: u64,
    pub len: u64,
    pub source: Source,
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

    fn element_types(
        &self,
        _inputs: &[&TensorType],
        _outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        // A copy converts to its output's type, any one.
        Ok(())
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

    keeps_input_type!();

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
        if same_count && from.is_contiguous() && to.is_contiguous() {
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

    keeps_input_type!();

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

    keeps_input_type!();

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

    keeps_input_type!();

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

    /// The inputs are promoted to one type (PyTorch's `result_type`), which
    /// must cast to the output's.
    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        let operands: Vec<Operand> = inputs.iter().map(|ty| Operand::of(ty)).collect();
        match (result_type(&operands, &[]), outputs.first()) {
            (Some(from), Some(output)) if !can_cast(from, output.dtype) => Err(OpError::Cast {
                from,
                to: output.dtype,
            }),
            _ => Ok(()),
        }
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
    }

    fn layout(&self) -> LayoutRule {
        LayoutRule::Copy
    }
}

impl Pad {
    /// The pieces of each output dimension, for an input of `sizes` (which
    /// [`OpDef::infer`] has accepted).
    pub fn pieces(&self, sizes: &[u64]) -> Vec<Vec<Piece>> {
        sizes
            .iter()
            .zip(self.before.iter().zip(&self.after))
            .map(|(&size, (&before, &after))| self.dim_pieces(size as i64, before, after))
            .collect()
    }

    /// Output position `o` reads input position `o - before`: inside the
    /// input as it is, outside it as the mode says.
    fn dim_pieces(&self, size: i64, before: i64, after: i64) -> Vec<Piece> {
        let out = size + before + after;
        let (low, high) = match self.mode {
            PadMode::Constant(_) => (None, None),
            // Reflected: position -j reads j, position size-1+j reads
            // size-1-j.
            PadMode::Reflect => (Some((before, -1)), Some((size - 2, -1))),
            PadMode::Replicate => (Some((0, 0)), Some((size - 1, 0))),
        };
        // Each region: its output interval, and the input position at its
        // first output position `from` with the step (an affine run), or
        // none (fill).
        let regions: [(i64, i64, Option<Run>); 3] = [
            (0, before, low),
            (before, before + size, Some((0, 1))),
            (before + size, out, high),
        ];
        let mut pieces = Vec::new();
        for (from, to, run) in regions {
            let (lo, hi) = (from.max(0), to.min(out));
            if lo >= hi {
                continue;
            }
            let source = match run {
                None => Source::Fill,
                Some((first, step)) => Source::Run {
                    start: (first + step * (lo - from)) as u64,
                    step,
                },
            };
            pieces.push(Piece {
                start: lo as u64,
                len: (hi - lo) as u64,
                source,
            });
        }
        pieces
    }
}

/// An affine run of input positions: the first one and the step.
type Run = (i64, i64);

impl OpDef for Pad {
    fn name(&self) -> &'static str {
        "pad"
    }

    keeps_input_type!();

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        let bad = |problem: String| OpError::Attribute {
            name: "before",
            value: format!("{:?}", self.before),
            problem,
        };
        if self.before.len() != x.len() || self.after.len() != x.len() {
            return Err(bad(format!("padding for a rank-{} input", x.len())));
        }
        let mut shape = Vec::with_capacity(x.len());
        for (axis, (&dim, (&before, &after))) in x
            .iter()
            .zip(self.before.iter().zip(&self.after))
            .enumerate()
        {
            // A dimension known only at run time can only grow, by a
            // constant: reflecting, replicating or cropping it is refused.
            if let (Dim::Symbol(_), PadMode::Constant(_), true) =
                (dim, self.mode, before >= 0 && after >= 0)
            {
                let padded = dim_poly(eq, dim)?.add(&Poly::constant(before.saturating_add(after)));
                shape.push(poly_dim(eq, padded, "a padded dimension")?);
                continue;
            }
            let size = fixed(dim, "a padded dimension")?;
            let out = i64::try_from(size)
                .ok()
                .and_then(|size| size.checked_add(before)?.checked_add(after))
                .filter(|&out| out >= 0)
                .ok_or_else(|| {
                    bad(format!(
                        "padding {before} and {after} leave nothing of dimension {axis} of size {size}"
                    ))
                })?;
            let fits = match self.mode {
                PadMode::Constant(_) => true,
                PadMode::Reflect => {
                    (before < size as i64 && after < size as i64) && (size > 0 || out == 0)
                }
                PadMode::Replicate => size > 0 || out == 0,
            };
            if !fits {
                return Err(bad(format!(
                    "padding {before} and {after} of dimension {axis} of size {size} cannot {} it",
                    self.mode.verb()
                )));
            }
            shape.push(Dim::Fixed(out as u64));
        }
        one(shape)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("before", &self.before);
        out.ints("after", &self.after);
        match self.mode {
            PadMode::Constant(value) => out.scalar("value", value),
            PadMode::Reflect | PadMode::Replicate => out.raw("mode", self.mode.verb()),
        }
    }
}

impl PadMode {
    /// The mode's name in the text form and in messages.
    fn verb(self) -> &'static str {
        match self {
            PadMode::Constant(_) => "fill",
            PadMode::Reflect => "reflect",
            PadMode::Replicate => "replicate",
        }
    }

    fn parse(attributes: &mut AttributeReader) -> Result<PadMode, FormError> {
        if let Some(value) = attributes.optional_scalar_if_present("value")? {
            return Ok(PadMode::Constant(value));
        }
        let mode: String = attributes.int("mode")?;
        match mode.as_str() {
            "reflect" => Ok(PadMode::Reflect),
            "replicate" => Ok(PadMode::Replicate),
            other => Err(FormError::Invalid {
                key: "mode".to_string(),
                problem: format!("{other:?} is neither reflect nor replicate"),
            }),
        }
    }
}

impl Roll {
    /// The pieces of each output dimension, for an input of `sizes`: the
    /// last `shift` elements first, then the others.
    pub fn pieces(&self, sizes: &[u64]) -> Vec<Vec<Piece>> {
        sizes
            .iter()
            .zip(&self.shifts)
            .map(|(&size, &shift)| {
                [(0, shift, size - shift), (shift, size - shift, 0)]
                    .into_iter()
                    .filter(|&(_, len, _)| len > 0)
                    .map(|(start, len, from)| Piece {
                        start,
                        len,
                        source: Source::Run {
                            start: from,
                            step: 1,
                        },
                    })
                    .collect()
            })
            .collect()
    }
}

impl OpDef for Roll {
    fn name(&self) -> &'static str {
        "roll"
    }

    keeps_input_type!();

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        let fits = self.shifts.len() == x.len()
            && x.iter().zip(&self.shifts).all(|(&dim, &shift)| {
                dim.fixed()
                    .is_some_and(|size| shift < size || (size == 0 && shift == 0))
            });
        if !fits {
            return Err(OpError::Attribute {
                name: "shifts",
                value: format!("{:?}", self.shifts),
                problem: format!("not a shift within each dimension of {}", show(x)),
            });
        }
        one(x.clone())
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("shifts", &self.shifts);
    }
}

impl Strided {
    /// The lowest and highest memory positions the read reaches for an
    /// output of `sizes`, or `None` when it reads nothing.
    pub fn reach(&self, sizes: &[u64]) -> Option<(i128, i128)> {
        if sizes.contains(&0) {
            return None;
        }
        let (mut low, mut high) = (i128::from(self.offset), i128::from(self.offset));
        for (&size, &stride) in sizes.iter().zip(&self.strides) {
            let span = i128::from(stride) * (i128::from(size) - 1);
            if span < 0 {
                low += span;
            } else {
                high += span;
            }
        }
        Some((low, high))
    }
}

impl OpDef for Strided {
    fn name(&self) -> &'static str {
        "strided"
    }

    keeps_input_type!();

    one_input!();

    fn infer(
        &self,
        _inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        // The output's shape is its own; `check` bounds what it reads.
        Ok(vec![Expected::Given])
    }

    fn check(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        let (from, to) = (inputs[0], outputs[0]);
        let (Some(input), Some(output)) = (from.fixed_shape(), to.fixed_shape()) else {
            return Err(OpError::Shapes {
                what: "a strided read of symbolic shapes",
                shapes: vec![from.shape.clone(), to.shape.clone()],
            });
        };
        let elements = i128::from(input.iter().product::<u64>());
        let inside = output.len() == self.strides.len()
            && self
                .reach(&output)
                .is_none_or(|(low, high)| low >= 0 && high < elements);
        if inside {
            Ok(())
        } else {
            Err(OpError::Attribute {
                name: "strides",
                value: format!("{:?}", self.strides),
                problem: format!(
                    "from offset {}, a read of {} reaches outside the {elements} elements of {}",
                    self.offset,
                    show(&to.shape),
                    show(&from.shape)
                ),
            })
        }
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("offset", self.offset);
        out.ints("strides", &self.strides);
    }
}

impl OpDef for SliceScatter {
    fn name(&self) -> &'static str {
        "slice_scatter"
    }

    keeps_input_type!();

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![(Slot::Positional, self.input), (Slot::Positional, self.src)]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.input, &mut self.src]
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (x, src) = (&inputs[0].shape, &inputs[1].shape);
        let mismatch = || OpError::Shapes {
            what: "a slice scatter of",
            shapes: shapes_of(inputs),
        };
        let dim = axis(x.len(), self.dim)?;
        if src.len() != x.len() || self.step == 0 {
            return Err(mismatch());
        }
        let mut shape = x.clone();
        for (axis_index, (&a, b)) in src.iter().zip(shape.iter_mut()).enumerate() {
            if axis_index != dim {
                *b = eq.equate(a, *b).ok_or_else(mismatch)?;
            }
        }
        let size = fixed(x[dim], "a scattered dimension")?;
        let len = fixed(src[dim], "a scattered slice")?;
        let inside = match len.checked_sub(1) {
            None => self.start <= size,
            Some(last) => self
                .step
                .checked_mul(last)
                .and_then(|span| span.checked_add(self.start))
                .is_some_and(|end| end < size),
        };
        if !inside {
            return Err(OpError::Attribute {
                name: "start",
                value: self.start.to_string(),
                problem: format!(
                    "{len} elements with step {} do not fit dimension {dim} of {}",
                    self.step,
                    show(x)
                ),
            });
        }
        one(shape)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("dim", self.dim as u64);
        out.int("start", self.start);
        out.int("step", self.step);
    }
}

impl OpDef for Tril {
    fn name(&self) -> &'static str {
        "tril"
    }

    keeps_input_type!();

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        _eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let x = &inputs[0].shape;
        if x.len() < 2 {
            return Err(OpError::Shapes {
                what: "tril of a tensor of fewer than 2 dimensions",
                shapes: vec![x.clone()],
            });
        }
        one(x.clone())
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.int("diagonal", self.diagonal);
    }
}

impl OpDef for Repeat {
    fn name(&self) -> &'static str {
        "repeat"
    }

    keeps_input_type!();

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
                mode: PadMode::parse(attributes)?,
            }),
            "roll" => Op::Roll(Roll {
                input: operands.positional("input")?,
                shifts: attributes.ints("shifts")?,
            }),
            "strided" => Op::Strided(Strided {
                input: operands.positional("input")?,
                offset: attributes.int("offset")?,
                strides: attributes.ints("strides")?,
            }),
            "slice_scatter" => Op::SliceScatter(SliceScatter {
                input: operands.positional("input")?,
                src: operands.positional("src")?,
                dim: attributes.int("dim")?,
                start: attributes.int("start")?,
                step: attributes.int("step")?,
            }),
            "tril" => Op::Tril(Tril {
                input: operands.positional("input")?,
                diagonal: attributes.int("diagonal")?,
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
