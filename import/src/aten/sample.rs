//! Resampling operators: nearest and bilinear upsampling of NCHW images, and
//! the copies between host and device memory ExecuTorch inserts (plain
//! copies on a CPU program).
//!
//! Upsampling has no op of its own: the source positions depend only on the
//! sizes and the given scales, so import computes them once, exactly as
//! PyTorch's CPU kernels do (in their arithmetic type, f32 for every float
//! type but f64), and the result is advanced indexing by constant index
//! tensors, and for bilinear a weighted sum of four such reads.

use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::ops::gather::Index;
use ptec_ir::ops::layout::{Cat, Copy, Permute, Reshape, Slice};
use ptec_ir::ops::reduce::{Reduce, ReduceOp};
use ptec_ir::{DType, Dim, Op, OpKind, Scalar, TensorType, ValueId};

use super::Operator;
use crate::call::Call;
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size, float[]? scale_factors, *, Tensor(a!) out) -> Tensor(a!)",
        upsample_nearest2d,
        &[OpKind::Index],
    ),
    (
        "aten::upsample_bilinear2d.vec_out(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors, *, Tensor(a!) out) -> Tensor(a!)",
        upsample_bilinear2d,
        &[OpKind::Index, OpKind::Elementwise, OpKind::Copy],
    ),
    (
        "aten::_upsample_bilinear2d_aa.out(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None, *, Tensor(a!) out) -> Tensor(a!)",
        upsample_bilinear2d_aa,
        &[OpKind::Index, OpKind::Elementwise, OpKind::Copy],
    ),
    (
        "aten::grid_sampler_2d.out(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners, *, Tensor(a!) out) -> Tensor(a!)",
        grid_sampler_2d,
        &[
            OpKind::Slice,
            OpKind::Elementwise,
            OpKind::Copy,
            OpKind::Index,
            OpKind::Reshape,
            OpKind::Permute,
        ],
    ),
    (
        "et_copy::_h2d_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        plain_copy,
        &[OpKind::Copy],
    ),
    (
        "et_copy::_d2h_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        plain_copy,
        &[OpKind::Copy],
    ),
];

/// `_h2d_copy`/`_d2h_copy`: on a CPU program host and device memory are one,
/// so the copy moves elements unchanged; its output must have the input's
/// element type and shape, as ExecuTorch's kernel requires.
fn plain_copy(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let from = c.declared_type_of("self")?;
    let to = c.declared_type_of("out")?;
    if from.dtype != to.dtype || from.shape != to.shape {
        return Err(c.bad(
            "out",
            format!("{to} is not a tensor of the input's type {from}: the copy converts nothing"),
        ));
    }
    let input = c.tensor("self")?;
    c.emit_copy(input, "out")
}

/// One spatial dimension of an upsampling: its input and output sizes and
/// the scale the caller gave (`scale_factors`), which PyTorch's kernels use
/// in place of the ratio of the sizes.
#[derive(Clone, Copy)]
struct Axis {
    input: u64,
    output: u64,
    scale: Option<f64>,
}

/// The input's fixed NCHW sizes and the two spatial axes of an upsampling,
/// from `output_size` or `scale_factors` (exactly one of them, as in
/// PyTorch's `compute_output_size`: a scale's size is the floor of the
/// input's size times it), both checked.
fn axes(c: &mut Call<'_, '_, '_>, input: ValueId) -> Result<[Axis; 2], ImportError> {
    let sizes = c.fixed_sizes("input", input)?;
    if sizes.len() != 4 {
        return Err(c.bad("input", format!("{sizes:?} is not an NCHW image (4-D)")));
    }
    let spatial = [sizes[2], sizes[3]];
    let output_size = c.optional_int_list("output_size")?;
    let scale_factors = c.optional_double_list("scale_factors")?;
    let (outputs, scales) = match (output_size, scale_factors) {
        (Some(size), None) => {
            let outputs: Vec<u64> = size.iter().filter_map(|&s| u64::try_from(s).ok()).collect();
            if size.len() != 2 || outputs.len() != 2 {
                return Err(c.bad("output_size", format!("{size:?} is not two sizes")));
            }
            ([outputs[0], outputs[1]], [None, None])
        }
        (None, Some(scales)) => {
            let valid = scales.len() == 2 && scales.iter().all(|s| s.is_finite() && *s > 0.0);
            if !valid {
                return Err(c.bad(
                    "scale_factors",
                    format!("{scales:?} is not two positive finite scales"),
                ));
            }
            let size = |d: usize| (spatial[d] as f64 * scales[d]).floor() as u64;
            ([size(0), size(1)], [Some(scales[0]), Some(scales[1])])
        }
        (Some(_), Some(_)) | (None, None) => {
            return Err(c.bad(
                "scale_factors",
                "exactly one of output_size and scale_factors must be given",
            ));
        }
    };
    if outputs.contains(&0) || spatial.contains(&0) {
        return Err(c.bad(
            "input",
            format!("sizes {spatial:?} to {outputs:?}: input and output sizes must be positive"),
        ));
    }
    Ok([0, 1].map(|d| Axis {
        input: spatial[d],
        output: outputs[d],
        scale: scales[d],
    }))
}

/// Arithmetic in one float type, emulated in f64: each result of f32 math
/// is rounded to f32 (an f64 operation of f32 operands, rounded, is the f32
/// operation's correctly rounded result).
#[derive(Clone, Copy)]
struct Arith {
    single: bool,
}

impl Arith {
    fn round(self, x: f64) -> f64 {
        if self.single { f64::from(x as f32) } else { x }
    }

    /// PyTorch's `compute_scales_value`: `1 / scale` when a positive scale
    /// was given, else the ratio of the sizes.
    fn scale(self, axis: Axis) -> f64 {
        match axis.scale {
            Some(scale) => self.round(1.0 / scale),
            None => self.round(self.round(axis.input as f64) / self.round(axis.output as f64)),
        }
    }
}

/// PyTorch's `nearest_idx`: the input row or column each output one reads.
fn nearest_sources(axis: Axis) -> Vec<i64> {
    let arith = Arith { single: true };
    let last = axis.input as i64 - 1;
    (0..axis.output as i64)
        .map(|i| {
            if axis.output == axis.input {
                i
            } else if axis.output == 2 * axis.input {
                i >> 1
            } else {
                let at = arith.round(i as f64 * arith.scale(axis)).floor();
                (at as i64).min(last)
            }
        })
        .collect()
}

/// The input rows (or columns) each output one interpolates, and their
/// weights: PyTorch's `compute_indices_weights_linear` in `arith`.
struct Linear {
    low: Vec<i64>,
    high: Vec<i64>,
    low_weight: Vec<f64>,
    high_weight: Vec<f64>,
}

fn linear_sources(axis: Axis, align_corners: bool, arith: Arith) -> Linear {
    let scale = if align_corners {
        if axis.output > 1 {
            arith.round((axis.input - 1) as f64 / (axis.output - 1) as f64)
        } else {
            0.0
        }
    } else {
        arith.scale(axis)
    };
    let last = axis.input as i64 - 1;
    let mut linear = Linear {
        low: Vec::new(),
        high: Vec::new(),
        low_weight: Vec::new(),
        high_weight: Vec::new(),
    };
    for i in 0..axis.output {
        let real = if align_corners {
            arith.round(scale * i as f64)
        } else {
            let centre = arith.round(arith.round(scale * (i as f64 + 0.5)) - 0.5);
            centre.max(0.0)
        };
        let index = (real.floor() as i64).min(last);
        let lambda = arith.round(real - index as f64).clamp(0.0, 1.0);
        linear.low.push(index);
        linear.high.push(index + i64::from(index < last));
        linear.low_weight.push(arith.round(1.0 - lambda));
        linear.high_weight.push(lambda);
    }
    linear
}

/// A constant tensor of `shape` holding `values` as i64.
fn index_constant(c: &mut Call<'_, '_, '_>, values: &[i64], shape: &[u64]) -> ValueId {
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    c.constant(
        TensorType::contiguous(DType::I64, shape.iter().copied().map(Dim::Fixed).collect()),
        bytes,
    )
}

/// A constant tensor of `shape` holding `values` in `dtype` (f32 or f64).
pub(super) fn weight_constant(
    c: &mut Call<'_, '_, '_>,
    values: &[f64],
    dtype: DType,
    shape: &[u64],
) -> ValueId {
    let bytes = match dtype {
        DType::F64 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        _ => values
            .iter()
            .flat_map(|&v| (v as f32).to_le_bytes())
            .collect(),
    };
    c.constant(
        TensorType::contiguous(dtype, shape.iter().copied().map(Dim::Fixed).collect()),
        bytes,
    )
}

/// `input` read at rows `rows` (`[OH, 1]`) and columns `columns` (`[1, OW]`).
fn read_at(rows: ValueId, columns: ValueId, input: ValueId) -> Op {
    Op::Index(Index {
        input,
        indices: vec![rows, columns],
        dims: vec![2, 3],
        wrap: false,
    })
}

fn upsample_nearest2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("input")?;
    match c.ty(input).dtype {
        DType::U8 | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {}
        other => {
            return Err(c.bad(
                "input",
                format!("{other:?} images: PyTorch upsamples only uint8 and float types"),
            ));
        }
    }
    let [height, width] = axes(c, input)?;
    let rows = index_constant(c, &nearest_sources(height), &[height.output, 1]);
    let columns = index_constant(c, &nearest_sources(width), &[1, width.output]);
    c.emit(read_at(rows, columns, input), &["out"])
}

/// `input` in the element type `compute` (a cast when it has another).
pub(super) fn widened(c: &mut Call<'_, '_, '_>, input: ValueId, compute: DType) -> ValueId {
    if c.ty(input).dtype == compute {
        return input;
    }
    let shape = c.ty(input).shape.clone();
    c.temporary_of(
        Op::Copy(Copy { input }),
        TensorType::contiguous(compute, shape),
    )
}

/// The type PyTorch's CPU kernels compute a float image of `dtype` in (f64
/// for f64, f32 for the others), or an error naming `name`.
pub(super) fn compute_type(
    c: &Call<'_, '_, '_>,
    name: &str,
    dtype: DType,
) -> Result<DType, ImportError> {
    match dtype {
        DType::F64 => Ok(DType::F64),
        DType::F16 | DType::BF16 | DType::F32 => Ok(DType::F32),
        other => Err(c.bad(
            name,
            format!("{other:?} images: ptec resamples float images only"),
        )),
    }
}

/// Bilinear upsampling as PyTorch's CPU kernel computes it:
/// `(x00 * w0 + x01 * w1) * h0 + (x10 * w0 + x11 * w1) * h1`, in f64 for
/// f64 images and in f32 for the others (halves are widened first and the
/// result rounded once).
fn upsample_bilinear2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("input")?;
    let compute = compute_type(c, "input", c.ty(input).dtype)?;
    let align_corners = c.bool("align_corners")?;
    let [height, width] = axes(c, input)?;
    let arith = Arith {
        single: compute == DType::F32,
    };
    let widened = widened(c, input, compute);
    let rows = linear_sources(height, align_corners, arith);
    let columns = linear_sources(width, align_corners, arith);
    let row_shape = [height.output, 1];
    let column_shape = [1, width.output];
    let row_indices = [&rows.low, &rows.high].map(|r| index_constant(c, r, &row_shape));
    let column_indices = [&columns.low, &columns.high].map(|r| index_constant(c, r, &column_shape));
    let row_weights =
        [&rows.low_weight, &rows.high_weight].map(|w| weight_constant(c, w, compute, &row_shape));
    let column_weights = [&columns.low_weight, &columns.high_weight]
        .map(|w| weight_constant(c, w, compute, &column_shape));
    let mut terms = Vec::new();
    for (row, row_weight) in row_indices.into_iter().zip(row_weights) {
        let mut line = None;
        for (&column, &column_weight) in column_indices.iter().zip(&column_weights) {
            let read = c.temporary(read_at(row, column, widened), compute)?;
            let weighted = c.binary(BinaryOp::Mul, read, column_weight, compute)?;
            line = Some(match line {
                None => weighted,
                Some(sum) => c.binary(BinaryOp::Add, sum, weighted, compute)?,
            });
        }
        if let Some(line) = line {
            terms.push(c.binary(BinaryOp::Mul, line, row_weight, compute)?);
        }
    }
    let func = Func::Binary {
        op: BinaryOp::Add,
        alpha: None,
    };
    c.emit(Elementwise::op(func, terms), &["out"])
}

/// The input positions one output position of a windowed resampling reads:
/// `weights.len()` of them from `start`, each times its weight.
struct Window {
    start: u64,
    weights: Vec<f64>,
}

/// A constant bool tensor of `shape` holding `values`.
fn mask_constant(c: &mut Call<'_, '_, '_>, values: &[bool], shape: &[u64]) -> ValueId {
    let bytes = values.iter().map(|&flag| u8::from(flag)).collect();
    c.constant(
        TensorType::contiguous(DType::Bool, shape.iter().copied().map(Dim::Fixed).collect()),
        bytes,
    )
}

/// Sums over `windows` along the spatial dimension `dim` (2 or 3) of the
/// NCHW value `x` of type `compute`: output position `i` is
/// `x[start_i] * w_i0 + x[start_i + 1] * w_i1 + ...` in that order (plain
/// sums without `weighted`). Each step reads one position of every window
/// (advanced indexing by a constant); windows shorter than the longest read
/// their last position again and mask it to 0, so no element outside a
/// window reaches its sum (an infinity there stays out).
fn window_sums(
    c: &mut Call<'_, '_, '_>,
    x: ValueId,
    dim: usize,
    windows: &[Window],
    weighted: bool,
    compute: DType,
) -> Result<ValueId, ImportError> {
    let count = windows.len() as u64;
    let shape: Vec<u64> = if dim == 2 {
        vec![count, 1]
    } else {
        vec![count]
    };
    let longest = windows.iter().map(|w| w.weights.len()).max().unwrap_or(0);
    if longest == 0 || windows.iter().any(|w| w.weights.is_empty()) {
        return Err(c.invalid("a resampling window that reads no input"));
    }
    let mut sum = None;
    for k in 0..longest {
        let at: Vec<i64> = windows
            .iter()
            .map(|w| (w.start + k.min(w.weights.len() - 1) as u64) as i64)
            .collect();
        let index = index_constant(c, &at, &[count]);
        let read = c.temporary(
            Op::Index(Index {
                input: x,
                indices: vec![index],
                dims: vec![dim],
                wrap: false,
            }),
            compute,
        )?;
        let mut term = read;
        if weighted {
            let weights: Vec<f64> = windows
                .iter()
                .map(|w| w.weights.get(k).copied().unwrap_or(0.0))
                .collect();
            let weight = weight_constant(c, &weights, compute, &shape);
            term = c.binary(BinaryOp::Mul, read, weight, compute)?;
        }
        let outside: Vec<bool> = windows.iter().map(|w| k >= w.weights.len()).collect();
        if outside.contains(&true) {
            let mask = mask_constant(c, &outside, &shape);
            let fill = Func::MaskedFill {
                value: Scalar::Float(0.0),
            };
            term = c.temporary(Elementwise::op(fill, vec![term, mask]), compute)?;
        }
        sum = Some(match sum {
            None => term,
            Some(sum) => c.binary(BinaryOp::Add, sum, term, compute)?,
        });
    }
    sum.ok_or_else(|| c.invalid("a resampling window that reads no input"))
}

/// PyTorch's antialiased bilinear windows (`_compute_index_ranges_weights`
/// with the triangle filter): around each output position's centre in the
/// input, a support of one input step, widened by the scale when
/// downsampling; the weights are normalized to sum to 1.
fn antialias_windows(axis: Axis, align_corners: bool) -> Vec<Window> {
    let scale = if align_corners {
        if axis.output > 1 {
            (axis.input - 1) as f64 / (axis.output - 1) as f64
        } else {
            0.0
        }
    } else {
        match axis.scale {
            Some(scale) => 1.0 / scale,
            None => axis.input as f64 / axis.output as f64,
        }
    };
    let (support, invscale) = if scale >= 1.0 {
        (scale, 1.0 / scale)
    } else {
        (1.0, 1.0)
    };
    let triangle = |x: f64| (1.0 - x.abs()).max(0.0);
    (0..axis.output)
        .map(|i| {
            let centre = scale * (i as f64 + 0.5);
            let start = ((centre - support + 0.5) as i64).max(0);
            let end = ((centre + support + 0.5) as i64).min(axis.input as i64);
            let mut weights: Vec<f64> = (start..end.max(start))
                .map(|j| triangle((j as f64 - centre + 0.5) * invscale))
                .collect();
            let total: f64 = weights.iter().sum();
            if total != 0.0 {
                weights.iter_mut().for_each(|w| *w /= total);
            }
            Window {
                start: start as u64,
                weights,
            }
        })
        .collect()
}

/// `_upsample_bilinear2d_aa`: the rows, then the columns, resampled with
/// PyTorch's antialiased windows (the last dimension first, as its
/// separable kernel does; a dimension whose size does not change is left
/// as it is), in f32 (f64 for f64 images).
fn upsample_bilinear2d_aa(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let compute = compute_type(c, "self", c.ty(input).dtype)?;
    let sizes = c.fixed_sizes("self", input)?;
    if sizes.len() != 4 || sizes[2..].contains(&0) {
        return Err(c.bad("self", format!("{sizes:?} is not a non-empty NCHW image")));
    }
    let output = c.pair("output_size", 1)?;
    if output.contains(&0) {
        return Err(c.bad("output_size", format!("{output:?}: sizes must be positive")));
    }
    let align_corners = c.bool("align_corners")?;
    let scales = [
        c.optional_double("scales_h")?,
        c.optional_double("scales_w")?,
    ];
    let mut value = widened(c, input, compute);
    for dim in [3, 2] {
        let axis = Axis {
            input: sizes[dim],
            output: output[dim - 2],
            scale: scales[dim - 2].filter(|&scale| scale > 0.0),
        };
        if axis.input != axis.output {
            let windows = antialias_windows(axis, align_corners);
            value = window_sums(c, value, dim, &windows, true, compute)?;
        }
    }
    c.emit_copy(value, "out")
}

/// The windows of adaptive average pooling from `from` positions to `to`,
/// as `(start, length)`: output position `i` reads from
/// `floor(i * from / to)` up to `ceil((i + 1) * from / to)`.
pub(super) fn adaptive_windows(from: u64, to: u64) -> Vec<(u64, u64)> {
    (0..to)
        .map(|i| {
            let start = i * from / to;
            let end = ((i + 1) * from).div_ceil(to);
            (start, end - start)
        })
        .collect()
}

/// Sums of the NCHW value `x` of type `compute` over `windows` (`(start,
/// length)`) along `dim`: a slice and a sum per window, concatenated.
fn sliced_sums(
    c: &mut Call<'_, '_, '_>,
    x: ValueId,
    dim: usize,
    windows: &[(u64, u64)],
    compute: DType,
) -> Result<ValueId, ImportError> {
    let mut shape = c.ty(x).shape.clone();
    let mut sums = Vec::with_capacity(windows.len());
    for &(start, length) in windows {
        shape[dim] = Dim::Fixed(length);
        let slice = Op::Slice(Slice {
            input: x,
            dim,
            start: Dim::Fixed(start),
            step: 1,
        });
        let window = c.temporary_of(slice, TensorType::contiguous(compute, shape.clone()));
        let sum = Op::Reduce(Reduce {
            input: window,
            op: ReduceOp::Sum,
            dims: vec![dim],
            keepdim: true,
        });
        sums.push(c.temporary(sum, compute)?);
    }
    c.temporary(Op::Cat(Cat { inputs: sums, dim }), compute)
}

/// Averages of the NCHW `input` over windows of its rows and of its
/// columns: sums along the columns, then the rows, divided by the window's
/// height and then its width (PyTorch's `sum / kh / kw` of adaptive average
/// pooling), in f32 (f64 for f64 images), written into `out`.
pub(super) fn window_average(
    c: &mut Call<'_, '_, '_>,
    input: ValueId,
    [rows, columns]: [Vec<(u64, u64)>; 2],
) -> Result<(), ImportError> {
    let compute = compute_type(c, "self", c.ty(input).dtype)?;
    let widened = widened(c, input, compute);
    let across = sliced_sums(c, widened, 3, &columns, compute)?;
    let sums = sliced_sums(c, across, 2, &rows, compute)?;
    let length = |windows: &[(u64, u64)]| -> Vec<f64> {
        windows.iter().map(|&(_, length)| length as f64).collect()
    };
    let heights = weight_constant(c, &length(&rows), compute, &[rows.len() as u64, 1]);
    let widths = weight_constant(c, &length(&columns), compute, &[columns.len() as u64]);
    let per_row = c.binary(BinaryOp::Div, sums, heights, compute)?;
    let func = Func::Binary {
        op: BinaryOp::Div,
        alpha: None,
    };
    c.emit(Elementwise::op(func, vec![per_row, widths]), &["out"])
}

/// `grid_sampler_2d` with bilinear interpolation and zero padding (modes
/// 0 and 0), as PyTorch's CPU kernel computes it: each grid point's
/// position `(x + 1) * s` (minus 1/2 without `align_corners`, `s` half the
/// size, or of the size less one with it), its four neighbours read where
/// they are inside the input (0 where not: a masked read, at a position
/// clamped into the input so the gather never goes out of range) and
/// weighted by the opposite rectangles' areas, summed north-west,
/// north-east, south-west, south-east. Other modes are refused, and so are
/// types other than f32 and f64.
fn grid_sampler_2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (interpolation, padding) = (c.int("interpolation_mode")?, c.int("padding_mode")?);
    if interpolation != 0 {
        return Err(c.bad(
            "interpolation_mode",
            format!("{interpolation}: ptec samples bilinearly (0) only"),
        ));
    }
    if padding != 0 {
        return Err(c.bad(
            "padding_mode",
            format!("{padding}: ptec pads with zeros (0) only"),
        ));
    }
    let align_corners = c.bool("align_corners")?;
    let input = c.tensor("input")?;
    let grid = c.tensor("grid")?;
    let dtype = c.ty(input).dtype;
    if !matches!(dtype, DType::F32 | DType::F64) || c.ty(grid).dtype != dtype {
        return Err(c.bad(
            "grid",
            format!(
                "{} and input {}: ptec samples f32 and f64 images by grids of their type",
                c.ty(grid),
                c.ty(input)
            ),
        ));
    }
    let sizes = c.fixed_sizes("input", input)?;
    let points = c.fixed_sizes("grid", grid)?;
    let (&[batch, channels, height, width], &[grid_batch, rows, columns, 2]) =
        (sizes.as_slice(), points.as_slice())
    else {
        return Err(c.bad(
            "grid",
            format!("{points:?} is not [N, H, W, 2] for an input {sizes:?} of NCHW"),
        ));
    };
    if grid_batch != batch || height == 0 || width == 0 {
        return Err(c.bad(
            "grid",
            format!("{points:?} does not sample the non-empty input {sizes:?}"),
        ));
    }
    let plane = vec![
        Dim::Fixed(batch),
        Dim::Fixed(rows),
        Dim::Fixed(columns),
        Dim::Fixed(1),
    ];
    // The position along one axis (the grid's `coordinate`, of `size`),
    // the floor of it, and its two neighbours' indices and masks.
    let mut axes = Vec::new();
    for (coordinate, size) in [(0, width), (1, height)] {
        let select = Op::Slice(Slice {
            input: grid,
            dim: 3,
            start: Dim::Fixed(coordinate),
            step: 1,
        });
        let along = c.temporary_of(select, TensorType::contiguous(dtype, plane.clone()));
        let scale = if align_corners {
            (size - 1) as f64 / 2.0
        } else {
            size as f64 / 2.0
        };
        let shifted = c.with_scalar(along, BinaryOp::Add, Scalar::Float(1.0), dtype)?;
        let mut position = c.with_scalar(shifted, BinaryOp::Mul, Scalar::Float(scale), dtype)?;
        if !align_corners {
            position = c.with_scalar(position, BinaryOp::Sub, Scalar::Float(0.5), dtype)?;
        }
        let low = c.elementwise(Func::Unary(UnaryOp::Floor), vec![position], dtype)?;
        let fraction = c.binary(BinaryOp::Sub, position, low, dtype)?;
        let rest = c.elementwise(
            Func::ScalarFirst {
                op: BinaryOp::Sub,
                scalar: Scalar::Float(1.0),
                alpha: None,
            },
            vec![fraction],
            dtype,
        )?;
        let mut neighbours: Vec<(ValueId, ValueId)> = Vec::new();
        for offset in [0.0, 1.0] {
            let at = c.with_scalar(low, BinaryOp::Add, Scalar::Float(offset), dtype)?;
            let above = c.with_scalar(at, BinaryOp::Gt, Scalar::Float(-1.0), DType::Bool)?;
            let below = c.with_scalar(at, BinaryOp::Lt, Scalar::Float(size as f64), DType::Bool)?;
            let inside = c.binary(BinaryOp::LogicalAnd, above, below, DType::Bool)?;
            let outside = c.with_scalar(inside, BinaryOp::Eq, Scalar::Bool(false), DType::Bool)?;
            let zero = Func::MaskedFill {
                value: Scalar::Float(0.0),
            };
            let clamped = c.elementwise(zero, vec![at, outside], dtype)?;
            let index = c.temporary_of(
                Op::Copy(Copy { input: clamped }),
                TensorType::contiguous(DType::I64, plane.clone()),
            );
            neighbours.push((index, inside));
        }
        axes.push((fraction, rest, neighbours));
    }
    let [
        (x_fraction, x_rest, x_neighbours),
        (y_fraction, y_rest, y_neighbours),
    ] = &axes[..]
    else {
        return Err(c.invalid("a grid of other than two coordinates"));
    };
    let images: Vec<i64> = (0..batch as i64).collect();
    let image = index_constant(c, &images, &[batch, 1, 1, 1]);
    let mut gathered = vec![Dim::Fixed(batch), Dim::Fixed(rows), Dim::Fixed(columns)];
    gathered.push(Dim::Fixed(channels));
    let mut sum = None;
    for (&(row, row_inside), row_weight) in y_neighbours.iter().zip([*y_rest, *y_fraction]) {
        for (&(column, column_inside), column_weight) in
            x_neighbours.iter().zip([*x_rest, *x_fraction])
        {
            let read = c.temporary(
                Op::Index(Index {
                    input,
                    indices: vec![image, row, column],
                    dims: vec![0, 2, 3],
                    wrap: false,
                }),
                dtype,
            )?;
            let read = c.temporary_of(
                Op::Reshape(Reshape { input: read }),
                TensorType::contiguous(dtype, gathered.clone()),
            );
            let inside = c.binary(BinaryOp::LogicalAnd, row_inside, column_inside, DType::Bool)?;
            let outside = c.with_scalar(inside, BinaryOp::Eq, Scalar::Bool(false), DType::Bool)?;
            let zero = Func::MaskedFill {
                value: Scalar::Float(0.0),
            };
            let value = c.elementwise(zero, vec![read, outside], dtype)?;
            let weight = c.binary(BinaryOp::Mul, row_weight, column_weight, dtype)?;
            let term = c.binary(BinaryOp::Mul, value, weight, dtype)?;
            sum = Some(match sum {
                None => term,
                Some(sum) => c.binary(BinaryOp::Add, sum, term, dtype)?,
            });
        }
    }
    let sum = sum.ok_or_else(|| c.invalid("a bilinear sample of no neighbours"))?;
    c.emit(
        Op::Permute(Permute {
            input: sum,
            dims: vec![0, 3, 1, 2],
        }),
        &["out"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(input: u64, output: u64, scale: Option<f64>) -> Axis {
        Axis {
            input,
            output,
            scale,
        }
    }

    #[test]
    fn nearest_sources_follow_pytorch() {
        // 3 to 5: positions i * 0.6, floored.
        assert_eq!(nearest_sources(axis(3, 5, None)), [0, 0, 1, 1, 2]);
        // A given scale of 1.7 reads i / 1.7, not i * 5 / 8.
        assert_eq!(
            nearest_sources(axis(5, 8, Some(1.7))),
            [0, 0, 1, 1, 2, 2, 3, 4]
        );
        // Twice the size: each input position twice.
        assert_eq!(nearest_sources(axis(2, 4, Some(3.0))), [0, 0, 1, 1]);
    }

    #[test]
    fn linear_sources_clamp_at_the_edges() {
        let single = Arith { single: true };
        // 2 to 4 without align_corners: centres -0.25 (clamped to 0), 0.25,
        // 0.75 and 1.25 (the last position reads itself twice).
        let linear = linear_sources(axis(2, 4, None), false, single);
        assert_eq!(linear.low, [0, 0, 0, 1]);
        assert_eq!(linear.high, [1, 1, 1, 1]);
        assert_eq!(linear.high_weight, [0.0, 0.25, 0.75, 0.25]);
        assert_eq!(linear.low_weight, [1.0, 0.75, 0.25, 0.75]);
        // With align_corners, the corners meet: 3 to 5 reads 0, 0.5, .., 2.
        let aligned = linear_sources(axis(3, 5, None), true, single);
        assert_eq!(aligned.low, [0, 0, 1, 1, 2]);
        assert_eq!(aligned.high_weight, [0.0, 0.5, 0.0, 0.5, 0.0]);
    }

    #[test]
    fn adaptive_windows_overlap_where_sizes_do_not_divide() {
        assert_eq!(adaptive_windows(5, 3), [(0, 2), (1, 3), (3, 2)]);
        assert_eq!(adaptive_windows(4, 2), [(0, 2), (2, 2)]);
    }

    #[test]
    fn antialias_weights_sum_to_one() {
        // Halving 4 positions: the first output's centre is 1, its window
        // positions 0, 1 and 2 (support 2, cut at the edge), at distances
        // 1/4, 1/4 and 3/4 of the widened filter: weights 3/4, 3/4 and 1/4,
        // normalized.
        let windows = antialias_windows(axis(4, 2, None), false);
        assert_eq!(windows.len(), 2);
        assert_eq!(windows[0].start, 0);
        let expected = [3.0 / 7.0, 3.0 / 7.0, 1.0 / 7.0];
        for (weight, expected) in windows[0].weights.iter().zip(expected) {
            assert!((weight - expected).abs() < 1e-12, "{weight} for {expected}");
        }
        for window in &windows {
            let total: f64 = window.weights.iter().sum();
            assert!((total - 1.0).abs() < 1e-12);
        }
    }
}
