//! The Vulkan partitioner's quantized operators (`et_vk.q8ta_*`,
//! `et_vk.linear_q8ta_q8csw`): the fused forms ExecuTorch's Vulkan
//! preprocessing gives to PT2E-quantized convolutions, linear layers,
//! additions, ReLUs and pixel shuffles (`backends/vulkan/patterns/`).
//!
//! Each is a composition of the quantize family's table entries around a
//! float operator, as ExecuTorch's reference implementations
//! (`custom_ops_lib.py`) compute them: the int8 input dequantized per tensor
//! (range `[-128, 127]`), the int8 weights dequantized per output channel
//! (zero point 0, range `[-127, 127]`), the float operator, an optional ReLU
//! (`activation`), and the result quantized per tensor into int8. The
//! weights arrive in the layouts the preprocessing packs them in, padded to
//! multiples of four along their last dimension (as are the weight scales
//! and the bias); the compositions read the unpadded part back into the
//! float operator's layout. A convolution's weight matrix holds each output
//! channel's kernel in (row, column, input channel) order, which is what the
//! packing writes and the device kernels read; the reference's own reshape
//! reads it as (input channel, row, column), which differs for kernels
//! larger than 1x1 with several input channels per group, and ptec follows
//! the packing (so that a program computes what its float model computes).

use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim, Scalar};

use super::{Translation, shape_argument, sizes_argument};
use crate::call::Argument;
use crate::error::ImportError;

/// The range the quantized activations take.
const ACTIVATIONS: (i64, i64) = (-128, 127);

/// The range of the symmetric per-channel weights.
const WEIGHTS: (i64, i64) = (-127, 127);

/// How a convolution's int8 weights are packed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Packing {
    /// `[OC, KH * KW * IC / groups]`, each row in (row, column, input
    /// channel) order (`q8ta_conv2d`, `q8ta_conv2d_pw`).
    Matrix,
    /// `[KH, KW, OC]`, one input channel per group (`q8ta_conv2d_dw`).
    Depthwise,
    /// The matrix form of a transposed convolution's weight: `[OC, KH * KW
    /// * IC / groups]`, each group's output channels by (row, column, input
    /// channel of the group) (`q8ta_conv2d_transposed`).
    Transposed,
}

impl Translation<'_, '_, '_> {
    /// The call's argument `at`, named `name` in the operator's schema, as
    /// a float (the serializer writes a whole one as an int).
    pub(super) fn float_arg(
        &self,
        args: &[Argument],
        at: usize,
        name: &str,
    ) -> Result<f64, ImportError> {
        match self.arg(args, at)? {
            &Argument::Double(value) => Ok(value),
            &Argument::Int(value) => Ok(value as f64),
            other => Err(self.invalid(format!("{name} is a {}, not a float", other.kind()))),
        }
    }

    pub(super) fn int_arg(
        &self,
        args: &[Argument],
        at: usize,
        name: &str,
    ) -> Result<i64, ImportError> {
        match self.arg(args, at)? {
            &Argument::Int(value) => Ok(value),
            other => Err(self.invalid(format!("{name} is a {}, not an int", other.kind()))),
        }
    }

    /// The call's int list `at`, which must be constants.
    pub(super) fn ints_arg(
        &self,
        args: &[Argument],
        at: usize,
        name: &str,
    ) -> Result<Vec<i64>, ImportError> {
        let Argument::IntList(items) = self.arg(args, at)? else {
            return Err(self.invalid(format!("{name} is not a list of ints")));
        };
        items
            .iter()
            .map(|item| {
                match item.constant() {
                    Some(Scalar::Int(value)) => Some(value),
                    _ => None,
                }
                .ok_or_else(|| self.invalid(format!("{name} is computed at run time")))
            })
            .collect()
    }

    /// The declared sizes of tensor argument `x` (named `name`), which must
    /// hold `dtype`.
    pub(super) fn typed(
        &self,
        x: &Argument,
        name: &str,
        dtype: DType,
    ) -> Result<Vec<u64>, ImportError> {
        let (have, sizes) = self.declared(x)?;
        if have != dtype {
            return Err(self.invalid(format!("{name} is {have}, not {dtype}")));
        }
        Ok(sizes)
    }

    /// `x` viewed as `sizes`.
    pub(super) fn viewed(&mut self, x: Argument, sizes: &[u64]) -> Result<Argument, ImportError> {
        let shape: Vec<Dim> = sizes.iter().map(|&size| Dim::Fixed(size)).collect();
        self.viewed_as(x, &shape)
    }

    /// `x` viewed as `shape`, whose symbolic sizes a run computes.
    pub(super) fn viewed_as(
        &mut self,
        x: Argument,
        shape: &[Dim],
    ) -> Result<Argument, ImportError> {
        let (dtype, _) = self.bounds(&x)?;
        let out = self.temporary(dtype, &self.max_sizes(shape));
        self.table(
            "aten::view_copy.out",
            &[x, shape_argument(shape), out.clone()],
        )?;
        Ok(out)
    }

    /// `x` with its dimensions in the order `dims`.
    pub(super) fn permuted(
        &mut self,
        x: Argument,
        dims: &[usize],
    ) -> Result<Argument, ImportError> {
        let (dtype, sizes) = self.declared(&x)?;
        let permuted: Vec<u64> = dims.iter().map(|&dim| sizes[dim]).collect();
        let out = self.temporary(dtype, &permuted);
        let order = dims.iter().map(|&dim| Term::int(dim as i64)).collect();
        self.table(
            "aten::permute_copy.out",
            &[x, Argument::IntList(order), out.clone()],
        )?;
        Ok(out)
    }

    /// The first `count` elements of `x`'s last dimension (named `name`),
    /// which the packing may have padded.
    pub(super) fn unpadded(
        &mut self,
        x: Argument,
        count: u64,
        name: &str,
    ) -> Result<Argument, ImportError> {
        let (dtype, sizes) = self.declared(&x)?;
        let Some((&last, leading)) = sizes.split_last() else {
            return Err(self.invalid(format!("{name} has no dimension")));
        };
        if last < count {
            return Err(self.invalid(format!(
                "{name} has sizes {sizes:?}; its last dimension needs at least {count} elements"
            )));
        }
        if last == count {
            return Ok(x);
        }
        let mut kept = leading.to_vec();
        kept.push(count);
        let out = self.temporary(dtype, &kept);
        self.table(
            "aten::slice_copy.Tensor_out",
            &[
                x,
                Argument::Int(-1),
                Argument::Int(0),
                Argument::Int(count as i64),
                Argument::Int(1),
                out.clone(),
            ],
        )?;
        Ok(out)
    }

    /// The int8 tensor argument at `x` (named `name`) dequantized per
    /// tensor by the call's scale and zero point at `scale` and `scale + 1`.
    fn dequantized(
        &mut self,
        args: &[Argument],
        x: usize,
        scale: usize,
        name: &str,
    ) -> Result<Argument, ImportError> {
        let input = self.arg(args, x)?.clone();
        let sizes = self.typed(&input, name, DType::I8)?;
        let zero_point = self.int_arg(args, scale + 1, &format!("{name}'s zero point"))?;
        let scale = self.float_arg(args, scale, &format!("{name}'s scale"))?;
        let (scale, zero_point) = (Argument::Double(scale), Argument::Int(zero_point));
        let dtype = self.scalar_type_of(Some(&input))?;
        let out = self.temporary(DType::F32, &sizes);
        let (low, high) = ACTIVATIONS;
        self.table(
            "quantized_decomposed::dequantize_per_tensor.out",
            &[
                input,
                scale,
                zero_point,
                Argument::Int(low),
                Argument::Int(high),
                dtype,
                Argument::Null,
                out.clone(),
            ],
        )?;
        Ok(out)
    }

    /// The float `y` quantized per tensor into the call's int8 output `out`
    /// with `scale` and `zero_point`.
    fn requantized(
        &mut self,
        y: Argument,
        scale: f64,
        zero_point: i64,
        out: Argument,
    ) -> Result<(), ImportError> {
        self.typed(&out, "the output", DType::I8)?;
        let dtype = self.scalar_type_of(Some(&out))?;
        let (low, high) = ACTIVATIONS;
        self.table(
            "quantized_decomposed::quantize_per_tensor.out",
            &[
                y,
                Argument::Double(scale),
                Argument::Int(zero_point),
                Argument::Int(low),
                Argument::Int(high),
                dtype,
                out,
            ],
        )
    }

    /// `y` after the call's `activation` (`"none"` or `"relu"`).
    fn activated(&mut self, y: Argument, activation: &Argument) -> Result<Argument, ImportError> {
        match activation {
            Argument::String(name) if name == "none" => Ok(y),
            Argument::String(name) if name == "relu" => {
                let (dtype, sizes) = self.declared(&y)?;
                let out = self.temporary(dtype, &sizes);
                self.table("aten::relu.out", &[y, out.clone()])?;
                Ok(out)
            }
            Argument::String(name) => Err(self.invalid(format!(
                "activation is {name:?}; the quantized operators take \"none\" and \"relu\""
            ))),
            other => Err(self.invalid(format!("activation is a {}, not a str", other.kind()))),
        }
    }

    /// The int8 weights `weights` dequantized per channel along `axis` by
    /// the first `channels` of the f32 `scales` (the rest is padding).
    fn dequantized_weights(
        &mut self,
        weights: Argument,
        scales: Argument,
        channels: u64,
        axis: usize,
    ) -> Result<Argument, ImportError> {
        let (_, sizes) = self.declared(&weights)?;
        self.typed(&scales, "weight_scales", DType::F32)?;
        let scales = self.unpadded(scales, channels, "weight_scales")?;
        let dtype = self.scalar_type_of(Some(&weights))?;
        let out = self.temporary(DType::F32, &sizes);
        let (low, high) = WEIGHTS;
        self.table(
            "quantized_decomposed::dequantize_per_channel.out",
            &[
                weights,
                scales,
                Argument::Null,
                Argument::Int(axis as i64),
                Argument::Int(low),
                Argument::Int(high),
                dtype,
                Argument::Null,
                out.clone(),
            ],
        )?;
        Ok(out)
    }

    /// The optional f32 bias, its first `channels` elements.
    pub(super) fn bias(&mut self, bias: Argument, channels: u64) -> Result<Argument, ImportError> {
        if bias == Argument::Null {
            return Ok(bias);
        }
        let bias = self.widened(bias, "bias")?;
        self.unpadded(bias, channels, "bias")
    }

    /// A tensor argument (named `name`) of f32, or of f16 (a `force_fp16`
    /// graph's), as f32.
    pub(super) fn widened(&mut self, x: Argument, name: &str) -> Result<Argument, ImportError> {
        let (dtype, _) = self.bounds(&x)?;
        if !matches!(dtype, DType::F32 | DType::F16) {
            return Err(self.invalid(format!("{name} is {dtype}, not f32 or f16")));
        }
        self.converted(x, DType::F32)
    }
}

/// `q8ta_conv2d`, `q8ta_conv2d_pw`, `q8ta_conv2d_dw` and
/// `q8ta_conv2d_transposed(x, input_scale, input_zero_point, weights,
/// weight_sums, weight_scales, output_scale, output_zero_point, bias,
/// kernel_size, stride, padding, [output_padding,] dilation, groups,
/// activation)`. `weight_sums` serves the device's integer accumulation and
/// is not read.
pub(super) fn convolution(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
    packing: Packing,
) -> Result<(), ImportError> {
    let transposed = packing == Packing::Transposed;
    // Transposed convolutions take `output_padding` before `dilation`.
    let shift = usize::from(transposed);
    let x = t.dequantized(args, 0, 1, "x")?;
    let (_, x_sizes) = t.declared(&x)?;
    let weights = t.arg(args, 3)?.clone();
    let w_sizes = t.typed(&weights, "weights", DType::I8)?;
    let &[_, channels, _, _] = x_sizes.as_slice() else {
        return Err(t.invalid(format!("x has sizes {x_sizes:?}, not [N, C, H, W]")));
    };
    let groups = t.int_arg(args, 13 + shift, "groups")?;
    let kernel = t.ints_arg(args, 9, "kernel_size")?;
    let (&[kh, kw], Ok(groups)) = (kernel.as_slice(), u64::try_from(groups)) else {
        return Err(t.invalid(format!(
            "kernel_size is {kernel:?} and groups {groups}: two sizes and a positive group count \
             are needed"
        )));
    };
    let (Ok(kh), Ok(kw)) = (u64::try_from(kh), u64::try_from(kw)) else {
        return Err(t.invalid(format!("kernel_size {kernel:?} is negative")));
    };
    if groups == 0 || channels % groups != 0 {
        return Err(t.invalid(format!(
            "groups is {groups}, which does not divide x's {channels} channels"
        )));
    }
    let per_group = channels / groups;
    let (weight, outputs, scale_count, axis) = match packing {
        Packing::Depthwise => {
            let &[rows, columns, outputs] = w_sizes.as_slice() else {
                return Err(t.invalid(format!(
                    "weights has sizes {w_sizes:?}, not [KH, KW, OC] (depthwise)"
                )));
            };
            if [rows, columns] != [kh, kw] {
                return Err(t.invalid(format!(
                    "kernel_size is [{kh}, {kw}] but the depthwise weights have sizes {w_sizes:?}"
                )));
            }
            if outputs != channels || groups != channels {
                return Err(t.invalid(format!(
                    "a depthwise convolution of {channels} channels by {outputs} weights in \
                     groups of {groups}: they must agree"
                )));
            }
            let weight = t.permuted(weights, &[2, 0, 1])?;
            let weight = t.viewed(weight, &[outputs, 1, kh, kw])?;
            (weight, outputs, outputs, 0)
        }
        Packing::Matrix | Packing::Transposed => {
            let &[outputs, _] = w_sizes.as_slice() else {
                return Err(t.invalid(format!(
                    "weights has sizes {w_sizes:?}, not [OC, KH * KW * IC / groups]"
                )));
            };
            if outputs % groups != 0 {
                return Err(t.invalid(format!(
                    "groups is {groups}, which does not divide the weights' {outputs} output \
                     channels"
                )));
            }
            let length = kh
                .checked_mul(kw)
                .and_then(|area| area.checked_mul(per_group))
                .ok_or_else(|| t.invalid(format!("kernel_size {kernel:?} is too large")))?;
            let weights = t.unpadded(weights, length, "weights")?;
            if transposed {
                // (groups, OC / groups, KH, KW, IC / groups) to PyTorch's
                // (IC, OC / groups, KH, KW).
                let per_out = outputs / groups;
                let weight = t.viewed(weights, &[groups, per_out, kh, kw, per_group])?;
                let weight = t.permuted(weight, &[0, 4, 1, 2, 3])?;
                let weight = t.viewed(weight, &[channels, per_out, kh, kw])?;
                // One scale per output channel of a group, on axis 1.
                (weight, outputs, per_out, 1)
            } else {
                let weight = t.viewed(weights, &[outputs, kh, kw, per_group])?;
                let weight = t.permuted(weight, &[0, 3, 1, 2])?;
                (weight, outputs, outputs, 0)
            }
        }
    };
    let scales = t.arg(args, 5)?.clone();
    let weight = t.dequantized_weights(weight, scales, scale_count, axis)?;
    let bias = t.bias(t.arg(args, 8)?.clone(), outputs)?;
    let out = t.arg(args, 15 + shift)?.clone();
    let convolved = t.temporary_as(&out, DType::F32)?;
    let output_padding = if transposed {
        t.arg(args, 12)?.clone()
    } else {
        sizes_argument(&[0, 0])
    };
    t.table(
        "aten::convolution.out",
        &[
            x,
            weight,
            bias,
            t.arg(args, 10)?.clone(),
            t.arg(args, 11)?.clone(),
            t.arg(args, 12 + shift)?.clone(),
            Argument::Bool(transposed),
            output_padding,
            Argument::Int(groups as i64),
            convolved.clone(),
        ],
    )?;
    let activated = t.activated(convolved, t.arg(args, 14 + shift)?)?;
    let scale = t.float_arg(args, 6, "output_scale")?;
    let zero_point = t.int_arg(args, 7, "output_zero_point")?;
    t.requantized(activated, scale, zero_point, out)
}

/// `x @ dequantized(weights)^T + bias` over `x`'s last dimension, the
/// weights `[N, K]` int8 quantized per row by the first `N` of
/// `weight_scales`, into `out` (f32, `x`'s sizes but the last `N`).
fn float_linear(
    t: &mut Translation<'_, '_, '_>,
    x: Argument,
    weights: Argument,
    scales: Argument,
    bias: Argument,
    out: Argument,
) -> Result<(), ImportError> {
    let (_, x_sizes) = t.declared(&x)?;
    let w_sizes = t.typed(&weights, "weights", DType::I8)?;
    let (&[outputs, inner], Some(&features)) = (w_sizes.as_slice(), x_sizes.last()) else {
        return Err(t.invalid(format!(
            "weights has sizes {w_sizes:?} and x {x_sizes:?}: [N, K] and [.., K] are needed"
        )));
    };
    if inner != features {
        return Err(t.invalid(format!(
            "weights has sizes {w_sizes:?}, but x's rows hold {features} features"
        )));
    }
    let weight = t.dequantized_weights(weights, scales, outputs, 0)?;
    let bias = t.bias(bias, outputs)?;
    super::linear(t, &[x, weight, bias, out])
}

/// `q8ta_linear` and `q8ta_linear_gemv(x, input_scale, input_zero_point,
/// weights, weight_sums, weight_scales, output_scale, output_zero_point,
/// bias, activation)`: a linear layer of int8 activations.
pub(super) fn linear(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let x = t.dequantized(args, 0, 1, "x")?;
    let out = t.arg(args, 10)?.clone();
    let product = t.temporary_as(&out, DType::F32)?;
    let (weights, scales, bias) = (
        t.arg(args, 3)?.clone(),
        t.arg(args, 5)?.clone(),
        t.arg(args, 8)?.clone(),
    );
    float_linear(t, x, weights, scales, bias, product.clone())?;
    let activated = t.activated(product, t.arg(args, 9)?)?;
    let scale = t.float_arg(args, 6, "output_scale")?;
    let zero_point = t.int_arg(args, 7, "output_zero_point")?;
    t.requantized(activated, scale, zero_point, out)
}

/// `linear_q8ta_q8csw(x, input_scale, input_zero_point, weights,
/// weight_sums, weight_scales, bias)`: a float linear layer by int8
/// per-channel weights; the reference does not read the input's scale and
/// zero point (the device quantizes `x` with them).
pub(super) fn linear_q8csw(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let x = t.arg(args, 0)?.clone();
    t.typed(&x, "x", DType::F32)?;
    let (weights, scales, bias, out) = (
        t.arg(args, 3)?.clone(),
        t.arg(args, 5)?.clone(),
        t.arg(args, 6)?.clone(),
        t.arg(args, 7)?.clone(),
    );
    float_linear(t, x, weights, scales, bias, out)
}

/// `q8ta_add(input_a, input_b, input_a_scale, input_a_zero_point,
/// input_b_scale, input_b_zero_point, output_scale, output_zero_point,
/// alpha)`: `a + alpha * b` of the dequantized inputs, requantized.
pub(super) fn add(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let a = t.dequantized(args, 0, 2, "input_a")?;
    let b = t.dequantized(args, 1, 4, "input_b")?;
    let out = t.arg(args, 9)?.clone();
    let sum = t.temporary_as(&out, DType::F32)?;
    let alpha = Argument::Double(t.float_arg(args, 8, "alpha")?);
    t.table("aten::add.out", &[a, b, alpha, sum.clone()])?;
    let scale = t.float_arg(args, 6, "output_scale")?;
    let zero_point = t.int_arg(args, 7, "output_zero_point")?;
    t.requantized(sum, scale, zero_point, out)
}

/// `q8ta_relu(input, input_scale, input_zero_point, output_scale,
/// output_zero_point)`.
pub(super) fn relu(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let x = t.dequantized(args, 0, 1, "input")?;
    let activated = t.activated(x, &Argument::String("relu".into()))?;
    let scale = t.float_arg(args, 3, "output_scale")?;
    let zero_point = t.int_arg(args, 4, "output_zero_point")?;
    t.requantized(activated, scale, zero_point, t.arg(args, 5)?.clone())
}

/// `q8ta_pixel_shuffle(input, input_scale, input_zero_point,
/// output_inv_scale, output_zero_point, upscale_factor)`: the output's
/// scale is `1 / output_inv_scale`, computed in f64 as the reference does.
pub(super) fn pixel_shuffle(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let x = t.dequantized(args, 0, 1, "input")?;
    let out = t.arg(args, 6)?.clone();
    let shuffled = t.temporary_as(&out, DType::F32)?;
    let factor = Argument::Int(t.int_arg(args, 5, "upscale_factor")?);
    t.table("aten::pixel_shuffle.out", &[x, factor, shuffled.clone()])?;
    let inverse = t.float_arg(args, 3, "output_inv_scale")?;
    if inverse == 0.0 || !inverse.is_finite() {
        return Err(t.invalid(format!(
            "output_inv_scale is {inverse}, which has no finite reciprocal"
        )));
    }
    let zero_point = t.int_arg(args, 4, "output_zero_point")?;
    t.requantized(shuffled, 1.0 / inverse, zero_point, out)
}

/// `aten._weight_int8pack_mm(self, mat2, scales)`: `self @ mat2^T *
/// scales`, the int8 weights `[N, K]` converted to f32, their products
/// summed in f32 and each column scaled by its f32 scale, as ATen's CPU
/// kernel computes it.
pub(super) fn weight_int8pack_mm(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (x, weights, scales, out) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 2)?.clone(),
        t.arg(args, 3)?.clone(),
    );
    let x_sizes = t.typed(&x, "self", DType::F32)?;
    let w_sizes = t.typed(&weights, "mat2", DType::I8)?;
    let s_sizes = t.typed(&scales, "scales", DType::F32)?;
    let (&[rows, features], &[outputs, inner]) = (x_sizes.as_slice(), w_sizes.as_slice()) else {
        return Err(t.invalid(format!(
            "self has sizes {x_sizes:?} and mat2 {w_sizes:?}: [M, K] and [N, K] are needed"
        )));
    };
    if inner != features || s_sizes != [outputs] {
        return Err(t.invalid(format!(
            "self [M, K] = {x_sizes:?}, mat2 [N, K] = {w_sizes:?} and scales [N] = {s_sizes:?} \
             disagree"
        )));
    }
    let widened = t.temporary(DType::F32, &w_sizes);
    t.table(
        "aten::_to_copy.out",
        &[
            weights,
            Argument::Bool(false),
            Argument::Null,
            widened.clone(),
        ],
    )?;
    let transposed = t.temporary(DType::F32, &[inner, outputs]);
    t.table("aten::t_copy.out", &[widened, transposed.clone()])?;
    let product = t.temporary(DType::F32, &[rows, outputs]);
    t.table("aten::mm.out", &[x, transposed, product.clone()])?;
    t.table("aten::mul.out", &[product, scales, out])
}
