//! Neural-network operators: normalizations, matrix products, convolution,
//! pooling and embedding lookups.

use ptec_ir::ops::conv::{AvgPool2d, Convolution, MaxPool2d, Pair};
use ptec_ir::ops::gather::Embedding;
use ptec_ir::ops::linalg::{Addmm, ClampRange, MatMul};
use ptec_ir::ops::norm::{BatchNorm, LayerNorm};
use ptec_ir::{Op, OpKind, Real};

use super::Operator;
use crate::call::Call;
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::native_layer_norm.out(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        layer_norm,
        &[OpKind::LayerNorm],
    ),
    (
        "aten::_native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        batch_norm,
        &[OpKind::BatchNorm],
    ),
    (
        "aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)",
        matmul,
        &[OpKind::MatMul],
    ),
    (
        "aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)",
        matmul,
        &[OpKind::MatMul],
    ),
    (
        "aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        addmm,
        &[OpKind::Addmm],
    ),
    (
        "aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, *, Tensor(a!) out) -> Tensor(a!)",
        convolution,
        &[OpKind::Convolution],
    ),
    (
        "aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))",
        max_pool2d,
        &[OpKind::MaxPool2d],
    ),
    (
        "aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *, Tensor(a!) out) -> Tensor(a!)",
        avg_pool2d,
        &[OpKind::AvgPool2d],
    ),
    (
        "aten::_adaptive_avg_pool2d.out(Tensor self, SymInt[2] output_size, *, Tensor(a!) out) -> Tensor(a!)",
        adaptive_avg_pool2d,
        &[OpKind::AvgPool2d],
    ),
    (
        "aten::embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False, *, Tensor(a!) out) -> Tensor(a!)",
        embedding,
        &[OpKind::Embedding],
    ),
];

fn layer_norm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let normalized_dims = c.int_list("normalized_shape")?.len();
    let op = Op::LayerNorm(LayerNorm {
        input: c.tensor("input")?,
        weight: c.optional_tensor("weight")?,
        bias: c.optional_tensor("bias")?,
        normalized_dims,
        eps: Real(c.double("eps")?),
    });
    c.emit(op, &["out0", "out1", "out2"])
}

fn batch_norm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::BatchNorm(BatchNorm {
        input: c.tensor("input")?,
        weight: c.optional_tensor("weight")?,
        bias: c.optional_tensor("bias")?,
        mean: c.tensor("running_mean")?,
        variance: c.tensor("running_var")?,
        eps: Real(c.double("eps")?),
    });
    c.emit(op, &["out0", "out1", "out2"])
}

fn matmul(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::MatMul(MatMul {
        a: c.tensor("self")?,
        b: c.tensor("mat2")?,
        clamp: ClampRange::default(),
    });
    c.emit(op, &["out"])
}

fn addmm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::Addmm(Addmm {
        bias: c.tensor("self")?,
        a: c.tensor("mat1")?,
        b: c.tensor("mat2")?,
        beta: c.scalar("beta")?,
        alpha: c.scalar("alpha")?,
        clamp: ClampRange::default(),
    });
    c.emit(op, &["out"])
}

fn convolution(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    if c.bool("transposed")? {
        return Err(c.bad("transposed", "transposed convolution is not supported"));
    }
    let op = Op::Convolution(Convolution {
        input: c.tensor("input")?,
        weight: c.tensor("weight")?,
        bias: c.optional_tensor("bias")?,
        residual: None,
        stride: c.pair("stride", 1)?,
        padding: c.pair("padding", 0)?,
        dilation: c.pair("dilation", 1)?,
        groups: c.count("groups")?,
        clamp: ClampRange::default(),
    });
    c.emit(op, &["out"])
}

/// A pooling stride: the kernel's when the list is empty.
fn pooling_stride(c: &Call<'_, '_, '_>, kernel: Pair) -> Result<Pair, ImportError> {
    if c.int_list("stride")?.is_empty() {
        Ok(kernel)
    } else {
        c.pair("stride", 1)
    }
}

fn max_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let kernel = c.pair("kernel_size", 1)?;
    let op = Op::MaxPool2d(MaxPool2d {
        input: c.tensor("self")?,
        kernel,
        stride: pooling_stride(c, kernel)?,
        padding: c.pair("padding", 0)?,
        dilation: c.pair("dilation", 1)?,
        ceil_mode: c.bool("ceil_mode")?,
    });
    c.emit(op, &["out", "indices"])
}

fn avg_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    if c.optional_int("divisor_override")?.is_some() {
        return Err(c.bad("divisor_override", "a divisor override is not supported"));
    }
    let kernel = c.pair("kernel_size", 1)?;
    let op = Op::AvgPool2d(AvgPool2d {
        input: c.tensor("self")?,
        kernel,
        stride: pooling_stride(c, kernel)?,
        padding: c.pair("padding", 0)?,
        ceil_mode: c.bool("ceil_mode")?,
        count_include_pad: c.bool("count_include_pad")?,
    });
    c.emit(op, &["out"])
}

fn adaptive_avg_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of("self")?;
    let out = c.pair("output_size", 1)?;
    if sizes.len() != 4 {
        return Err(c.bad(
            "self",
            "adaptive average pooling of a tensor that is not NCHW",
        ));
    }
    let input = [sizes[2] as u64, sizes[3] as u64];
    if out.iter().zip(&input).any(|(&o, &i)| o == 0 || i % o != 0) {
        return Err(c.bad(
            "output_size",
            format!(
                "pooling from {input:?} to {out:?}: ptec handles only sizes that divide evenly"
            ),
        ));
    }
    let kernel = [input[0] / out[0], input[1] / out[1]];
    let op = Op::AvgPool2d(AvgPool2d {
        input: c.tensor("self")?,
        kernel,
        stride: kernel,
        padding: [0, 0],
        ceil_mode: false,
        count_include_pad: true,
    });
    c.emit(op, &["out"])
}

fn embedding(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::Embedding(Embedding {
        weight: c.tensor("weight")?,
        indices: c.tensor("indices")?,
    });
    c.emit(op, &["out"])
}
