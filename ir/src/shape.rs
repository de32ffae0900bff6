//! Shape rules: the output shapes each op implies for its input shapes.
//!
//! The rules compare dimensions through a [`DimEquality`]: the verifier asks
//! for plain equality, while import lets a symbolic dimension that must
//! equal a fixed one become that size.

use crate::op::Op;
use crate::types::{Dim, Shape};

/// Decides whether two dimensions must be, and can be, the same size.
pub trait DimEquality {
    /// The common dimension, or `None` when `a` and `b` cannot be equal.
    fn equate(&mut self, a: Dim, b: Dim) -> Option<Dim>;
}

/// Dimensions are equal only when identical.
#[derive(Debug)]
pub struct Identical;

impl DimEquality for Identical {
    fn equate(&mut self, a: Dim, b: Dim) -> Option<Dim> {
        (a == b).then_some(a)
    }
}

/// What an op's rule says about one output's shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// The output must have exactly this shape.
    Shape(Shape),
    /// The op takes the output's shape as given (views, fills, ranges);
    /// `check_given` still validates it against the inputs.
    Given,
}

fn broadcast_pair(a: &[Dim], b: &[Dim], eq: &mut dyn DimEquality) -> Result<Shape, String> {
    let rank = a.len().max(b.len());
    let mut out = Vec::with_capacity(rank);
    for position in 0..rank {
        let pick = |shape: &[Dim]| {
            (position + shape.len())
                .checked_sub(rank)
                .map_or(Dim::Fixed(1), |index| shape[index])
        };
        let (x, y) = (pick(a), pick(b));
        let dim = if x == Dim::Fixed(1) {
            y
        } else if y == Dim::Fixed(1) {
            x
        } else {
            eq.equate(x, y)
                .ok_or_else(|| format!("shapes {} and {} do not broadcast", show(a), show(b)))?
        };
        out.push(dim);
    }
    Ok(out)
}

/// The shape the given shapes broadcast to.
pub fn broadcast(shapes: &[&[Dim]], eq: &mut dyn DimEquality) -> Result<Shape, String> {
    let mut out: Shape = Vec::new();
    for shape in shapes {
        out = broadcast_pair(&out, shape, eq)?;
    }
    Ok(out)
}

/// Whether `from` broadcasts to exactly `to`.
pub fn broadcasts_to(from: &[Dim], to: &[Dim]) -> bool {
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&a, &b)| a == b || a == Dim::Fixed(1))
}

pub fn show(shape: &[Dim]) -> String {
    let dims: Vec<String> = shape.iter().map(Dim::to_string).collect();
    format!("[{}]", dims.join(","))
}

fn fixed(dim: Dim, what: &str) -> Result<u64, String> {
    dim.fixed()
        .ok_or_else(|| format!("{what} must have a fixed size, not {dim}"))
}

fn axis(rank: usize, dim: usize) -> Result<usize, String> {
    if dim < rank {
        Ok(dim)
    } else {
        Err(format!("dimension {dim} is out of range for rank {rank}"))
    }
}

/// Output size of a window op along one dimension.
pub fn pooled_size(
    input: u64,
    kernel: u64,
    stride: u64,
    padding: u64,
    dilation: u64,
    ceil_mode: bool,
) -> Result<u64, String> {
    let span = dilation * (kernel.max(1) - 1) + 1;
    let padded = input + 2 * padding;
    if padded < span || stride == 0 {
        return Err(format!(
            "a window of {kernel} (dilation {dilation}, stride {stride}) does not fit an input of {input} padded by {padding}"
        ));
    }
    let mut out = if ceil_mode {
        (padded - span).div_ceil(stride) + 1
    } else {
        (padded - span) / stride + 1
    };
    // A last window that starts in the right padding is dropped.
    if ceil_mode && (out - 1) * stride >= input + padding {
        out -= 1;
    }
    Ok(out)
}

/// The expected shape of each output of `op` applied to inputs of `inputs`.
pub fn expected_shapes(
    op: &Op,
    inputs: &[&[Dim]],
    output_count: usize,
    eq: &mut dyn DimEquality,
) -> Result<Vec<Expected>, String> {
    let input = |index: usize| -> Result<&[Dim], String> {
        inputs
            .get(index)
            .copied()
            .ok_or_else(|| format!("input {index} is missing"))
    };
    let one = |shape: Shape| Ok(vec![Expected::Shape(shape)]);
    match op {
        Op::Unary(_)
        | Op::Clamp { .. }
        | Op::BinaryScalar { .. }
        | Op::LeakyRelu { .. }
        | Op::Elu { .. } => one(input(0)?.to_vec()),
        Op::Pad { before, after, .. } => {
            let x = input(0)?;
            if before.len() != x.len() || after.len() != x.len() {
                return Err(format!(
                    "padding of {} dims for a rank-{} input",
                    before.len(),
                    x.len()
                ));
            }
            let shape = x
                .iter()
                .zip(before.iter().zip(after))
                .map(|(&dim, (&b, &a))| {
                    fixed(dim, "a padded dimension").map(|size| Dim::Fixed(size + b + a))
                })
                .collect::<Result<_, _>>()?;
            one(shape)
        }
        Op::Repeat { repeats } => {
            let x = input(0)?;
            if repeats.len() < x.len() {
                return Err(format!(
                    "{} repeats for a rank-{} input",
                    repeats.len(),
                    x.len()
                ));
            }
            let lead = repeats.len() - x.len();
            let shape = repeats
                .iter()
                .enumerate()
                .map(|(axis, &times)| match axis.checked_sub(lead) {
                    Some(index) => {
                        fixed(x[index], "a repeated dimension").map(|size| Dim::Fixed(size * times))
                    }
                    None => Ok(Dim::Fixed(times)),
                })
                .collect::<Result<_, _>>()?;
            one(shape)
        }
        Op::IndexSelect { dim } => {
            let (x, index) = (input(0)?, input(1)?);
            let dim = axis(x.len(), *dim)?;
            if index.len() > 1 {
                return Err(format!(
                    "index_select with an index of shape {}",
                    show(index)
                ));
            }
            let mut shape = x.to_vec();
            shape[dim] = index.first().copied().unwrap_or(Dim::Fixed(1));
            one(shape)
        }
        Op::Binary { .. } | Op::Where | Op::Fused { .. } => one(broadcast(inputs, eq)?),
        Op::Copy | Op::Reshape | Op::Full { .. } | Op::Arange { .. } => Ok(vec![Expected::Given]),
        Op::Permute { dims } => {
            let x = input(0)?;
            let mut seen = vec![false; x.len()];
            if dims.len() != x.len()
                || !dims
                    .iter()
                    .all(|&d| d < x.len() && !std::mem::replace(&mut seen[d], true))
            {
                return Err(format!(
                    "{dims:?} is not a permutation of {} dimensions",
                    x.len()
                ));
            }
            one(dims.iter().map(|&d| x[d]).collect())
        }
        Op::Select { dim, index } => {
            let x = input(0)?;
            let dim = axis(x.len(), *dim)?;
            if *index >= fixed(x[dim], "a selected dimension")? {
                return Err(format!(
                    "index {index} is out of range for dimension {dim} of {}",
                    show(x)
                ));
            }
            let mut shape = x.to_vec();
            shape.remove(dim);
            one(shape)
        }
        // The slice's length is the output's; check_given bounds it.
        Op::Slice { .. } => Ok(vec![Expected::Given]),
        Op::Cat { dim } => {
            let first = input(0)?;
            let dim = axis(first.len(), *dim)?;
            let mut shape = first.to_vec();
            let mut total = 0;
            for part in inputs {
                if part.len() != first.len() {
                    return Err(format!("cat of ranks {} and {}", first.len(), part.len()));
                }
                for (axis_index, (&a, b)) in part.iter().zip(shape.iter_mut()).enumerate() {
                    if axis_index != dim {
                        *b = eq
                            .equate(a, *b)
                            .ok_or_else(|| format!("cat of {} and {}", show(first), show(part)))?;
                    }
                }
                total += fixed(part[dim], "a concatenated dimension")?;
            }
            shape[dim] = Dim::Fixed(total);
            one(shape)
        }
        Op::Reduce { dims, keepdim, .. } => {
            let x = input(0)?;
            for &dim in dims {
                axis(x.len(), dim)?;
            }
            one(reduced(x, |d| dims.contains(&d), *keepdim))
        }
        Op::ArgMax { dim, keepdim } | Op::ArgMin { dim, keepdim } => {
            let x = input(0)?;
            match dim {
                Some(dim) => {
                    let dim = axis(x.len(), *dim)?;
                    one(reduced(x, |d| d == dim, *keepdim))
                }
                None if *keepdim => one(vec![Dim::Fixed(1); x.len()]),
                None => one(Vec::new()),
            }
        }
        Op::CumSum { dim } | Op::Softmax { dim, .. } => {
            let x = input(0)?;
            axis(x.len().max(1), *dim)?;
            one(x.to_vec())
        }
        Op::LayerNorm {
            normalized_dims,
            weight,
            bias,
            ..
        } => {
            let x = input(0)?;
            if *normalized_dims > x.len() {
                return Err(format!(
                    "normalizing {normalized_dims} dims of a rank-{} input",
                    x.len()
                ));
            }
            let split = x.len() - normalized_dims;
            let affine = &x[split..];
            for index in 1..1 + usize::from(*weight) + usize::from(*bias) {
                if input(index)? != affine {
                    return Err(format!(
                        "affine parameter of shape {} for normalized shape {}",
                        show(input(index)?),
                        show(affine)
                    ));
                }
            }
            let mut stats = x[..split].to_vec();
            stats.extend(std::iter::repeat_n(Dim::Fixed(1), *normalized_dims));
            Ok(vec![
                Expected::Shape(x.to_vec()),
                Expected::Shape(stats.clone()),
                Expected::Shape(stats),
            ])
        }
        Op::BatchNorm { .. } => {
            let x = input(0)?;
            if x.len() < 2 {
                return Err(format!("batch norm of a rank-{} input", x.len()));
            }
            for (index, parameter) in inputs.iter().enumerate().skip(1) {
                if *parameter != [x[1]] {
                    return Err(format!(
                        "batch norm parameter {index} has shape {} for {} channels",
                        show(parameter),
                        x[1]
                    ));
                }
            }
            let mut expected = vec![Expected::Shape(x.to_vec())];
            expected.resize(output_count.max(1), Expected::Given);
            Ok(expected)
        }
        Op::MatMul { .. } => {
            let (a, b) = (input(0)?, input(1)?);
            if a.len() < 2 || a.len() != b.len() {
                return Err(format!("matmul of shapes {} and {}", show(a), show(b)));
            }
            let rank = a.len();
            let mut shape = Vec::with_capacity(rank);
            for index in 0..rank - 2 {
                shape.push(
                    eq.equate(a[index], b[index]).ok_or_else(|| {
                        format!("matmul batch dims of {} and {}", show(a), show(b))
                    })?,
                );
            }
            eq.equate(a[rank - 1], b[rank - 2]).ok_or_else(|| {
                format!(
                    "matmul of shapes {} and {}: inner sizes differ",
                    show(a),
                    show(b)
                )
            })?;
            shape.push(a[rank - 2]);
            shape.push(b[rank - 1]);
            one(shape)
        }
        Op::Addmm { .. } => {
            let (bias, a, b) = (input(0)?, input(1)?, input(2)?);
            if a.len() != 2 || b.len() != 2 {
                return Err(format!("addmm of shapes {} and {}", show(a), show(b)));
            }
            eq.equate(a[1], b[0]).ok_or_else(|| {
                format!(
                    "addmm of shapes {} and {}: inner sizes differ",
                    show(a),
                    show(b)
                )
            })?;
            let out = vec![a[0], b[1]];
            broadcast(&[bias, &out], eq)?;
            one(out)
        }
        Op::Convolution {
            stride,
            padding,
            dilation,
            groups,
            bias,
            residual,
            ..
        } => {
            let (x, w) = (input(0)?, input(1)?);
            if x.len() != 4 || w.len() != 4 {
                return Err(format!(
                    "convolution of input {} with weight {} (ptec handles 2-D)",
                    show(x),
                    show(w)
                ));
            }
            let channels = fixed(x[1], "input channels")?;
            let out_channels = fixed(w[0], "output channels")?;
            let groups = *groups;
            if groups == 0
                || channels % groups != 0
                || out_channels % groups != 0
                || fixed(w[1], "weight channels")? != channels / groups
            {
                return Err(format!(
                    "convolution of input {} with weight {} in {groups} groups",
                    show(x),
                    show(w)
                ));
            }
            if *bias && input(2)? != [w[0]] {
                return Err(format!(
                    "convolution bias {} for {out_channels} channels",
                    show(input(2)?)
                ));
            }
            let mut shape = vec![x[0], w[0]];
            for axis in 0..2 {
                shape.push(Dim::Fixed(pooled_size(
                    fixed(x[2 + axis], "a spatial dimension")?,
                    fixed(w[2 + axis], "a kernel dimension")?,
                    stride[axis],
                    padding[axis],
                    dilation[axis],
                    false,
                )?));
            }
            if *residual && input(2 + usize::from(*bias))? != shape.as_slice() {
                return Err(format!(
                    "a residual of shape {} for a convolution output of shape {}",
                    show(input(2 + usize::from(*bias))?),
                    show(&shape)
                ));
            }
            one(shape)
        }
        Op::MaxPool2d {
            kernel,
            stride,
            padding,
            dilation,
            ceil_mode,
        } => {
            let x = input(0)?;
            let shape = pooled_shape(x, kernel, stride, padding, dilation, *ceil_mode)?;
            Ok(vec![Expected::Shape(shape.clone()), Expected::Shape(shape)])
        }
        Op::AvgPool2d {
            kernel,
            stride,
            padding,
            ceil_mode,
            ..
        } => one(pooled_shape(
            input(0)?,
            kernel,
            stride,
            padding,
            &[1, 1],
            *ceil_mode,
        )?),
        Op::Embedding => {
            let (weight, indices) = (input(0)?, input(1)?);
            if weight.len() != 2 {
                return Err(format!("embedding table of shape {}", show(weight)));
            }
            let mut shape = indices.to_vec();
            shape.push(weight[1]);
            one(shape)
        }
        Op::Label(_) | Op::JumpIfFalse(_) | Op::Jump(_) => Ok(vec![Expected::Given; output_count]),
    }
}

fn reduced(x: &[Dim], reduce: impl Fn(usize) -> bool, keepdim: bool) -> Shape {
    x.iter()
        .enumerate()
        .filter_map(|(index, &dim)| match (reduce(index), keepdim) {
            (false, _) => Some(dim),
            (true, true) => Some(Dim::Fixed(1)),
            (true, false) => None,
        })
        .collect()
}

fn pooled_shape(
    x: &[Dim],
    kernel: &[u64; 2],
    stride: &[u64; 2],
    padding: &[u64; 2],
    dilation: &[u64; 2],
    ceil_mode: bool,
) -> Result<Shape, String> {
    if x.len() != 4 {
        return Err(format!("2-D pooling of a rank-{} input", x.len()));
    }
    let mut shape = x[..2].to_vec();
    for axis in 0..2 {
        if padding[axis] * 2 > kernel[axis] {
            return Err(format!(
                "padding {} is more than half the kernel {}",
                padding[axis], kernel[axis]
            ));
        }
        shape.push(Dim::Fixed(pooled_size(
            fixed(x[2 + axis], "a spatial dimension")?,
            kernel[axis],
            stride[axis],
            padding[axis],
            dilation[axis],
            ceil_mode,
        )?));
    }
    Ok(shape)
}
