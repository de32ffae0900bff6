//! Vulkan delegates: the operator calls of a delegate's VkGraph become IR
//! nodes of the method, between the kernel calls around the DelegateCall, so
//! that they go through the same passes and code generators.
//!
//! A Vulkan operator call names a torch operator (`aten.add.Tensor`) and
//! lists every argument of its schema in order, then its output (a
//! ValueList when it returns several tensors). That is the ATen operator
//! table's convention less the `out` keyword, so most calls become typed
//! ATen calls ([`Argument`]s) of the out variant's table entry, with the
//! arguments the out variant lacks (`dtype`, `layout`, `device`, ...) left
//! out. The graph's tensors are IR values: its inputs and outputs are the
//! DelegateCall's arguments, constants borrow the payload's bytes, the
//! others are made when a call writes them (their GPU storage type and
//! memory layout do not change the logical values). A few operators are
//! compositions of table entries over temporaries of their own.
//!
//! A graph with dynamic shapes declares each tensor with its largest sizes
//! and computes the sizes it reads as `SymInt`s (`sym_size.int`, Python's
//! `add`, `floordiv`, ... on them), or takes them as inputs: those calls
//! become the program importer's scalar terms, through the same table
//! entries as the program's `executorch_prim` calls, and each tensor a call
//! writes takes the shape the op's rule infers, bounded by its declared
//! sizes.
//!
//! Operators ptec does not translate give
//! [`ImportError::UnsupportedVulkan`] with the operator's name and position
//! in the chain; graphs that contradict themselves give
//! [`ImportError::Invalid`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use ptec_frontend::delegate::vulkan::{
    VkCall, VkDataType, VkTensor, VkValue, VkValueId, VulkanGraph,
};
use ptec_frontend::{ShapeDynamism, ValueIndex};
use ptec_ir::ops::elementwise::UnaryOp;
use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim, OpKind, TensorType, ValueData, ValueKind};

use crate::call::{self, Argument, TensorRef};
use crate::error::{ImportError, Location};
use crate::program::Importer;
use crate::{Operator, OperatorSource, aten};

mod affine;
mod int4;
mod quantized;

use quantized::Packing;

/// How a Vulkan operator becomes IR.
#[derive(Clone, Copy)]
enum Translate {
    /// Through the operator table entry `key`, whose arguments are the
    /// call's at `args`, then the call's outputs.
    Table {
        key: &'static str,
        args: &'static [usize],
        /// `(dtype, like)` pairs: the serializer writes every ScalarType as
        /// a Null, which a required one of the entry (at its argument
        /// position `dtype`) is replaced with: the element type of the
        /// entry's argument at `like`.
        dtypes: &'static [(usize, usize)],
    },
    /// By a composition of its own over the call's arguments (outputs
    /// included), which emits ops of these kinds.
    Own(Composition, &'static [OpKind]),
    /// Through the operator table entry `key`, which returns a scalar
    /// (`sym_size`, `SymInt` arithmetic): the call's arguments are the
    /// entry's, and its output is the `SymInt` that scalar is.
    Scalar(&'static str),
    /// By a composition of its own over the call's operands that returns a
    /// scalar, which the call's output `SymInt` is; it emits ops of these
    /// kinds.
    OwnScalar(ScalarComposition, &'static [OpKind]),
}

type Composition = fn(&mut Translation<'_, '_, '_>, &[Argument]) -> Result<(), ImportError>;

type ScalarComposition = fn(&mut Translation<'_, '_, '_>, &[Argument]) -> Result<Term, ImportError>;

const fn table(key: &'static str, args: &'static [usize]) -> Translate {
    Translate::Table {
        key,
        args,
        dtypes: &[],
    }
}

/// Like [`table`], each required ScalarType `(at, like)` the element type
/// of the argument at `like` (the quantize family's `dtype`).
const fn typed(
    key: &'static str,
    args: &'static [usize],
    dtypes: &'static [(usize, usize)],
) -> Translate {
    Translate::Table { key, args, dtypes }
}

/// What a rotary embedding emits ([`rotate_pairs`]).
const ROTATION: &[OpKind] = &[
    OpKind::Reshape,
    OpKind::Select,
    OpKind::Elementwise,
    OpKind::Cat,
];

/// The operator that uploads a constant to the GPU once.
const PREPACK: &str = "et_vk.prepack.default";

/// Every Vulkan operator with a translation of its own; unary functions
/// (`aten.NAME.default`) are added from [`UnaryOp`]'s ATen names.
const OPERATORS: &[(&str, Translate)] = &[
    ("aten.gelu.default", table("aten::gelu.out", &[0, 1])),
    (
        "aten.hardtanh.default",
        table("aten::hardtanh.out", &[0, 1, 2]),
    ),
    ("aten.clamp.default", table("aten::clamp.out", &[0, 1, 2])),
    ("aten.add.Tensor", table("aten::add.out", &[0, 1, 2])),
    ("aten.sub.Tensor", table("aten::sub.out", &[0, 1, 2])),
    ("aten.mul.Tensor", table("aten::mul.out", &[0, 1])),
    ("aten.div.Tensor", table("aten::div.out", &[0, 1])),
    ("aten.eq.Scalar", table("aten::eq.Scalar_out", &[0, 1])),
    ("aten.le.Scalar", table("aten::le.Scalar_out", &[0, 1])),
    (
        "aten.logical_and.default",
        table("aten::logical_and.out", &[0, 1]),
    ),
    ("aten.where.self", table("aten::where.self_out", &[0, 1, 2])),
    (
        "aten._softmax.default",
        table("aten::_softmax.out", &[0, 1, 2]),
    ),
    (
        "aten._log_softmax.default",
        table("aten::_log_softmax.out", &[0, 1, 2]),
    ),
    (
        "aten.native_layer_norm.default",
        table("aten::native_layer_norm.out", &[0, 1, 2, 3, 4]),
    ),
    (
        "aten._native_batch_norm_legit_no_training.default",
        table(
            "aten::_native_batch_norm_legit_no_training.out",
            &[0, 1, 2, 3, 4, 5, 6],
        ),
    ),
    ("aten.mean.dim", table("aten::mean.out", &[0, 1, 2, 3])),
    ("aten.bmm.default", table("aten::bmm.out", &[0, 1])),
    (
        "aten.convolution.default",
        table("aten::convolution.out", &[0, 1, 2, 3, 4, 5, 6, 7, 8]),
    ),
    (
        "aten.max_pool2d_with_indices.default",
        table("aten::max_pool2d_with_indices.out", &[0, 1, 2, 3, 4, 5]),
    ),
    ("aten.clone.default", table("aten::clone.out", &[0, 1])),
    (
        "aten.view_copy.default",
        table("aten::view_copy.out", &[0, 1]),
    ),
    (
        "aten.permute_copy.default",
        table("aten::permute_copy.out", &[0, 1]),
    ),
    (
        "aten.select_copy.int",
        table("aten::select_copy.int_out", &[0, 1, 2]),
    ),
    (
        "aten.slice_copy.Tensor",
        table("aten::slice_copy.Tensor_out", &[0, 1, 2, 3, 4]),
    ),
    (
        "aten.squeeze_copy.dims",
        table("aten::squeeze_copy.dims_out", &[0, 1]),
    ),
    (
        "aten.unsqueeze_copy.default",
        table("aten::unsqueeze_copy.out", &[0, 1]),
    ),
    (
        "aten.expand_copy.default",
        table("aten::expand_copy.out", &[0, 1, 2]),
    ),
    // `full(size, fill_value, *, dtype, layout, device, pin_memory)`.
    ("aten.full.default", table("aten::full.out", &[0, 1])),
    // `full_like(self, fill_value, *, dtype, layout, device, pin_memory,
    // memory_format)`.
    (
        "aten.full_like.default",
        table("aten::full_like.out", &[0, 1, 6]),
    ),
    // `arange.start_step(start, end, step, *, dtype, layout, device,
    // pin_memory)`.
    (
        "aten.arange.start_step",
        table("aten::arange.start_out", &[0, 1, 2]),
    ),
    // `_to_dim_order_copy(self, *, dtype, layout, device, pin_memory,
    // non_blocking, dim_order)`.
    (
        "dim_order_ops._to_dim_order_copy.default",
        table("dim_order_ops::_to_dim_order_copy.out", &[0, 5, 6]),
    ),
    ("aten.minimum.default", table("aten::minimum.out", &[0, 1])),
    (
        "aten.pow.Tensor_Scalar",
        table("aten::pow.Tensor_Scalar_out", &[0, 1]),
    ),
    (
        "aten.pow.Tensor_Tensor",
        table("aten::pow.Tensor_Tensor_out", &[0, 1]),
    ),
    // `div.Tensor_mode(self, other, *, rounding_mode)`.
    (
        "aten.div.Tensor_mode",
        table("aten::div.out_mode", &[0, 1, 2]),
    ),
    ("aten.eq.Tensor", table("aten::eq.Tensor_out", &[0, 1])),
    ("aten.ne.Scalar", table("aten::ne.Scalar_out", &[0, 1])),
    ("aten.lt.Scalar", table("aten::lt.Scalar_out", &[0, 1])),
    ("aten.lt.Tensor", table("aten::lt.Tensor_out", &[0, 1])),
    ("aten.le.Tensor", table("aten::le.Tensor_out", &[0, 1])),
    ("aten.gt.Scalar", table("aten::gt.Scalar_out", &[0, 1])),
    ("aten.gt.Tensor", table("aten::gt.Tensor_out", &[0, 1])),
    ("aten.ge.Scalar", table("aten::ge.Scalar_out", &[0, 1])),
    ("aten.ge.Tensor", table("aten::ge.Tensor_out", &[0, 1])),
    (
        "aten.logical_or.default",
        table("aten::logical_or.out", &[0, 1]),
    ),
    (
        "aten.bitwise_and.Tensor",
        table("aten::bitwise_and.Tensor_out", &[0, 1]),
    ),
    (
        "aten.bitwise_or.Tensor",
        table("aten::bitwise_or.Tensor_out", &[0, 1]),
    ),
    (
        "aten.leaky_relu.default",
        table("aten::leaky_relu.out", &[0, 1]),
    ),
    ("aten.amax.default", table("aten::amax.out", &[0, 1, 2])),
    ("aten.amin.default", table("aten::amin.out", &[0, 1, 2])),
    (
        "aten.argmax.default",
        Translate::Own(argmax, &[OpKind::ArgReduce, OpKind::Copy]),
    ),
    (
        "aten.argmin.default",
        Translate::Own(argmin, &[OpKind::ArgReduce, OpKind::Copy]),
    ),
    // `sum.dim_IntList(self, dim, keepdim, *, dtype)`.
    (
        "aten.sum.dim_IntList",
        table("aten::sum.IntList_out", &[0, 1, 2, 3]),
    ),
    ("aten.mm.default", table("aten::mm.out", &[0, 1])),
    // `addmm(self, mat1, mat2, *, beta, alpha)`.
    (
        "aten.addmm.default",
        table("aten::addmm.out", &[0, 1, 2, 3, 4]),
    ),
    (
        "aten.native_group_norm.default",
        table("aten::native_group_norm.out", &[0, 1, 2, 3, 4, 5, 6, 7]),
    ),
    (
        "aten.avg_pool2d.default",
        table("aten::avg_pool2d.out", &[0, 1, 2, 3, 4, 5, 6]),
    ),
    (
        "aten.upsample_nearest2d.vec",
        table("aten::upsample_nearest2d.vec_out", &[0, 1, 2]),
    ),
    (
        "aten.upsample_bilinear2d.vec",
        table("aten::upsample_bilinear2d.vec_out", &[0, 1, 2, 3]),
    ),
    (
        "aten.grid_sampler_2d.default",
        table("aten::grid_sampler_2d.out", &[0, 1, 2, 3, 4]),
    ),
    ("aten.cat.default", table("aten::cat.out", &[0, 1])),
    (
        "aten.split_with_sizes_copy.default",
        table("aten::split_with_sizes_copy.out", &[0, 1, 2]),
    ),
    (
        "aten.constant_pad_nd.default",
        table("aten::constant_pad_nd.out", &[0, 1, 2]),
    ),
    (
        "aten.permute.default",
        table("aten::permute_copy.out", &[0, 1]),
    ),
    ("aten.t_copy.default", table("aten::t_copy.out", &[0])),
    (
        "aten.alias_copy.default",
        table("aten::alias_copy.out", &[0]),
    ),
    ("aten.flip.default", table("aten::flip.out", &[0, 1])),
    ("aten.repeat.default", table("aten::repeat.out", &[0, 1])),
    (
        "aten.unfold_copy.default",
        table("aten::unfold_copy.out", &[0, 1, 2, 3]),
    ),
    (
        "aten.pixel_shuffle.default",
        table("aten::pixel_shuffle.out", &[0, 1]),
    ),
    // `copy(self, src, non_blocking)`.
    ("aten.copy.default", table("aten::copy.out", &[0, 1, 2])),
    // `_to_copy(self, *, dtype, layout, device, pin_memory, non_blocking,
    // memory_format)`.
    (
        "aten._to_copy.default",
        table("aten::_to_copy.out", &[0, 5, 6]),
    ),
    // `_clone_dim_order(self, *, non_blocking, dim_order)`.
    (
        "dim_order_ops._clone_dim_order.default",
        table("dim_order_ops::_clone_dim_order.out", &[0, 1, 2]),
    ),
    (
        "aten.index_select.default",
        table("aten::index_select.out", &[0, 1, 2]),
    ),
    (
        "aten.index.Tensor",
        table("aten::index.Tensor_out", &[0, 1]),
    ),
    // `gather(self, dim, index, *, sparse_grad)`.
    (
        "aten.gather.default",
        table("aten::gather.out", &[0, 1, 2, 3]),
    ),
    (
        "aten.embedding.default",
        table("aten::embedding.out", &[0, 1, 2, 3, 4]),
    ),
    // `embedding_4bit.dtype(weight, weight_scales, weight_zero_points,
    // weight_quant_min, weight_quant_max, indices, *, dtype)`.
    (
        "quantized_decomposed.embedding_4bit.dtype",
        table(
            "quantized_decomposed::embedding_4bit.dtype_out",
            &[0, 1, 2, 3, 4, 5, 6],
        ),
    ),
    // The quantize family: every argument of the schema, in order; the
    // required `dtype` is the quantized tensor's element type (for
    // choose_qparams, which does not read it, the input's).
    (
        "quantized_decomposed.quantize_per_tensor.default",
        typed(
            "quantized_decomposed::quantize_per_tensor.out",
            &[0, 1, 2, 3, 4, 5],
            &[(5, 6)],
        ),
    ),
    (
        "quantized_decomposed.quantize_per_tensor.tensor",
        typed(
            "quantized_decomposed::quantize_per_tensor.Tensor_out",
            &[0, 1, 2, 3, 4, 5],
            &[(5, 6)],
        ),
    ),
    (
        "quantized_decomposed.dequantize_per_tensor.default",
        typed(
            "quantized_decomposed::dequantize_per_tensor.out",
            &[0, 1, 2, 3, 4, 5, 6],
            &[(5, 0)],
        ),
    ),
    (
        "quantized_decomposed.dequantize_per_tensor.tensor",
        typed(
            "quantized_decomposed::dequantize_per_tensor.Tensor_out",
            &[0, 1, 2, 3, 4, 5, 6],
            &[(5, 0)],
        ),
    ),
    (
        "quantized_decomposed.quantize_per_channel.default",
        typed(
            "quantized_decomposed::quantize_per_channel.out",
            &[0, 1, 2, 3, 4, 5, 6],
            &[(6, 7)],
        ),
    ),
    (
        "quantized_decomposed.dequantize_per_channel.default",
        typed(
            "quantized_decomposed::dequantize_per_channel.out",
            &[0, 1, 2, 3, 4, 5, 6, 7],
            &[(6, 0)],
        ),
    ),
    (
        "quantized_decomposed.quantize_per_token.default",
        typed(
            "quantized_decomposed::quantize_per_token.out",
            &[0, 1, 2, 3, 4, 5],
            &[(5, 6)],
        ),
    ),
    (
        "quantized_decomposed.dequantize_per_token.default",
        typed(
            "quantized_decomposed::dequantize_per_token.out",
            &[0, 1, 2, 3, 4, 5, 6],
            &[(5, 0), (6, 7)],
        ),
    ),
    (
        "quantized_decomposed.choose_qparams.tensor",
        typed(
            "quantized_decomposed::choose_qparams.Tensor_out",
            &[0, 1, 2, 3, 4],
            &[(4, 0)],
        ),
    ),
    (
        "quantized_decomposed.choose_qparams_per_token_asymmetric.default",
        typed(
            "quantized_decomposed::choose_qparams_per_token_asymmetric.out",
            &[0, 1],
            &[(1, 0)],
        ),
    ),
    // `zeros(size, *, dtype, layout, device, pin_memory)`, `ones` alike.
    ("aten.zeros.default", table("aten::zeros.out", &[0])),
    ("aten.ones.default", table("aten::ones.out", &[0])),
    // `zeros_like(self, *, dtype, layout, device, pin_memory,
    // memory_format)`, `ones_like` alike.
    (
        "aten.zeros_like.default",
        table("aten::zeros_like.out", &[0, 5]),
    ),
    (
        "aten.ones_like.default",
        table("aten::ones_like.out", &[0, 5]),
    ),
    // `scalar_tensor(s, *, dtype, layout, device, pin_memory)`.
    (
        "aten.scalar_tensor.default",
        table("aten::scalar_tensor.out", &[0]),
    ),
    // The scalar operators of a graph with dynamic shapes: the sizes it
    // reads and Python's operators on them (`operator.add`, named `add`,
    // called with its two operands).
    ("sym_size.int", Translate::Scalar("aten::sym_size.int")),
    (
        "et_vk.select_as_symint.default",
        Translate::OwnScalar(select_as_symint, &[OpKind::Select, OpKind::Reshape]),
    ),
    ("add", Translate::Scalar("executorch_prim::add.Scalar")),
    ("sub", Translate::Scalar("executorch_prim::sub.Scalar")),
    ("mul", Translate::Scalar("executorch_prim::mul.Scalar")),
    (
        "floordiv",
        Translate::Scalar("executorch_prim::floordiv.Scalar"),
    ),
    ("eq", Translate::Scalar("executorch_prim::eq.Scalar")),
    ("lt", Translate::Scalar("executorch_prim::lt.Scalar")),
    ("le", Translate::Scalar("executorch_prim::le.Scalar")),
    ("gt", Translate::Scalar("executorch_prim::gt.Scalar")),
    ("ge", Translate::Scalar("executorch_prim::ge.Scalar")),
    (
        "aten.linear.default",
        Translate::Own(
            linear,
            &[
                OpKind::Permute,
                OpKind::Reshape,
                OpKind::MatMul,
                OpKind::Addmm,
            ],
        ),
    ),
    (PREPACK, Translate::Own(prepack, &[OpKind::Copy])),
    (
        "et_vk.conv_with_clamp.default",
        Translate::Own(conv_with_clamp, &[OpKind::Convolution, OpKind::Elementwise]),
    ),
    (
        "et_vk.rms_norm.default",
        Translate::Own(rms_norm, &[OpKind::Elementwise, OpKind::Reduce]),
    ),
    (
        "aten.max_pool2d.default",
        Translate::Own(max_pool2d, &[OpKind::MaxPool2d]),
    ),
    // The LLM operators (ExecuTorch's `llama` library, which stay torch
    // operators in the edge program: their calls are named without the
    // namespace). Their caches are the graph's constants, which the calls
    // update in place from one call of the program to the next. The
    // partitioner fuses `custom_sdpa` with the `update_cache` calls before
    // it into `sdpa_with_kv_cache`, and fails on one it cannot fuse.
    (
        "update_cache.default",
        table("llama::update_cache.out", &[0, 1, 2]),
    ),
    (
        "sdpa_with_kv_cache.default",
        table(
            "llama::sdpa_with_kv_cache.out",
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        ),
    ),
    (
        "et_vk.sdpa.default",
        Translate::Own(
            sdpa,
            &[
                OpKind::Reshape,
                OpKind::Permute,
                OpKind::MatMul,
                OpKind::Elementwise,
                OpKind::Softmax,
            ],
        ),
    ),
    (
        "et_vk.apply_rotary_emb.default",
        Translate::Own(apply_rotary_emb, ROTATION),
    ),
    (
        "et_vk.apply_rotary_emb_hf.default",
        Translate::Own(
            apply_rotary_emb_hf,
            &[
                OpKind::Slice,
                OpKind::Reshape,
                OpKind::Elementwise,
                OpKind::Cat,
            ],
        ),
    ),
    (
        "et_vk.apply_rotary_emb_interleaved.default",
        Translate::Own(apply_rotary_emb_interleaved, ROTATION),
    ),
    (
        "et_vk.grid_priors.default",
        Translate::Own(grid_priors, &[OpKind::Copy]),
    ),
    // The quantized operators of PT2E-quantized programs
    // ([`quantized`]).
    (
        "et_vk.q8ta_conv2d.default",
        Translate::Own(
            |t, args| quantized::convolution(t, args, Packing::Matrix),
            Q8TA_CONV,
        ),
    ),
    (
        "et_vk.q8ta_conv2d_pw.default",
        Translate::Own(
            |t, args| quantized::convolution(t, args, Packing::Matrix),
            Q8TA_CONV,
        ),
    ),
    (
        "et_vk.q8ta_conv2d_dw.default",
        Translate::Own(
            |t, args| quantized::convolution(t, args, Packing::Depthwise),
            Q8TA_CONV,
        ),
    ),
    (
        "et_vk.q8ta_conv2d_transposed.default",
        Translate::Own(
            |t, args| quantized::convolution(t, args, Packing::Transposed),
            Q8TA_CONV,
        ),
    ),
    (
        "et_vk.q8ta_linear.default",
        Translate::Own(quantized::linear, Q8TA_LINEAR),
    ),
    (
        "et_vk.q8ta_linear_gemv.default",
        Translate::Own(quantized::linear, Q8TA_LINEAR),
    ),
    (
        "et_vk.linear_q8ta_q8csw.default",
        Translate::Own(quantized::linear_q8csw, Q8TA_LINEAR),
    ),
    (
        "et_vk.q8ta_add.default",
        Translate::Own(quantized::add, Q8TA_ELEMENTWISE),
    ),
    (
        "et_vk.q8ta_relu.default",
        Translate::Own(quantized::relu, Q8TA_ELEMENTWISE),
    ),
    (
        "aten._weight_int8pack_mm.default",
        Translate::Own(
            quantized::weight_int8pack_mm,
            &[
                OpKind::Copy,
                OpKind::Permute,
                OpKind::MatMul,
                OpKind::Elementwise,
            ],
        ),
    ),
    (
        "et_vk.q8ta_pixel_shuffle.default",
        Translate::Own(quantized::pixel_shuffle, Q8TA_SHUFFLE),
    ),
    // The 4-bit weight operators ([`int4`]) and torchao's affine
    // quantization primitives ([`affine`]).
    (
        "et_vk.linear_q4gsw.default",
        Translate::Own(int4::linear_q4gsw, INT4_LINEAR),
    ),
    (
        "et_vk.linear_dq8ca_q4gsw.default",
        Translate::Own(int4::linear_dq8ca_q4gsw, INT4_LINEAR),
    ),
    (
        "et_vk.linear_qcs4w.default",
        Translate::Own(int4::linear_qcs4w, INT4_LINEAR),
    ),
    (
        "et_vk.embedding_q4gsw.default",
        Translate::Own(
            int4::embedding_q4gsw,
            &[
                OpKind::Index,
                OpKind::Elementwise,
                OpKind::Copy,
                OpKind::Reshape,
                OpKind::Cat,
            ],
        ),
    ),
    (
        "et_vk.q4gsw_requant.default",
        Translate::Own(
            int4::q4gsw_requant,
            &[
                OpKind::Elementwise,
                OpKind::Copy,
                OpKind::Reshape,
                OpKind::Permute,
                OpKind::Pad,
                OpKind::Select,
            ],
        ),
    ),
    (
        "et_vk.linear_q4gsw_backward.default",
        Translate::Own(int4::linear_q4gsw_backward, INT4_LINEAR),
    ),
    (
        "et_vk.linear_dW.default",
        Translate::Own(
            linear_dw,
            &[OpKind::Reshape, OpKind::Permute, OpKind::MatMul],
        ),
    ),
    (
        "et_vk.fused_ce.default",
        Translate::Own(
            fused_ce,
            &[
                OpKind::Elementwise,
                OpKind::Copy,
                OpKind::Reshape,
                OpKind::Softmax,
                OpKind::Gather,
                OpKind::Reduce,
                OpKind::Arange,
            ],
        ),
    ),
    (
        "torchao.quantize_affine.default",
        Translate::Own(affine::quantize_affine, Q8TA_ELEMENTWISE),
    ),
    (
        "torchao.dequantize_affine.default",
        Translate::Own(affine::dequantize_affine, Q8TA_ELEMENTWISE),
    ),
    (
        "torchao.choose_qparams_affine.default",
        Translate::Own(
            affine::choose_qparams_affine,
            &[
                OpKind::Elementwise,
                OpKind::Copy,
                OpKind::Reshape,
                OpKind::Reduce,
                OpKind::Full,
            ],
        ),
    ),
    (
        "aten.hardshrink.default",
        Translate::Own(hardshrink, &[OpKind::Elementwise]),
    ),
];

/// What the quantized convolutions emit: the quantize family's elementwise
/// ops, the weights' unpacking and the convolution.
const Q8TA_CONV: &[OpKind] = &[
    OpKind::Elementwise,
    OpKind::Copy,
    OpKind::Reshape,
    OpKind::Slice,
    OpKind::Permute,
    OpKind::Convolution,
];

/// What the quantized linear layers emit.
const Q8TA_LINEAR: &[OpKind] = &[
    OpKind::Elementwise,
    OpKind::Copy,
    OpKind::Reshape,
    OpKind::Slice,
    OpKind::Permute,
    OpKind::MatMul,
    OpKind::Addmm,
];

/// What the 4-bit linear layers emit: the weights' unpacking and
/// scaling, the linear layer.
const INT4_LINEAR: &[OpKind] = &[
    OpKind::Elementwise,
    OpKind::Copy,
    OpKind::Reshape,
    OpKind::Cat,
    OpKind::Slice,
    OpKind::Permute,
    OpKind::MatMul,
    OpKind::Addmm,
];

/// What the quantized additions and ReLUs emit.
const Q8TA_ELEMENTWISE: &[OpKind] = &[OpKind::Elementwise, OpKind::Copy, OpKind::Reshape];

/// What the quantized pixel shuffle emits.
const Q8TA_SHUFFLE: &[OpKind] = &[
    OpKind::Elementwise,
    OpKind::Copy,
    OpKind::Reshape,
    OpKind::Permute,
];

/// Every Vulkan operator ptec translates, by name.
fn translations() -> &'static HashMap<String, Translate> {
    static TABLE: OnceLock<HashMap<String, Translate>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let unary = UnaryOp::ALL.into_iter().filter_map(|op| {
            let name = op.aten_name()?;
            let key: &'static str = aten::unary_key(name)?;
            Some((format!("aten.{name}.default"), table(key, &[0])))
        });
        let own = OPERATORS
            .iter()
            .map(|&(name, translate)| (name.to_string(), translate));
        unary.chain(own).collect()
    })
}

/// Every Vulkan operator ptec translates, with the kinds of op it becomes.
pub(crate) fn operators() -> Vec<Operator> {
    translations()
        .iter()
        .map(|(name, translate)| Operator {
            key: name.clone(),
            source: OperatorSource::Vulkan,
            emits: Ok(match translate {
                Translate::Table { key, .. } => aten::emits(key).unwrap_or_default().to_vec(),
                Translate::Own(_, emits) | Translate::OwnScalar(_, emits) => emits.to_vec(),
                Translate::Scalar(_) => Vec::new(),
            }),
        })
        .collect()
}

/// Translates one DelegateCall of a Vulkan delegate into IR nodes.
pub(crate) fn import<'m, 'a>(
    importer: &mut Importer<'m, 'a>,
    graph: &'m VulkanGraph<'a>,
    args: &[ValueIndex],
) -> Result<(), ImportError> {
    let (inputs, outputs) = (&graph.input_ids, &graph.output_ids);
    if inputs.len() + outputs.len() != args.len() {
        return Err(importer.contradiction(format!(
            "the Vulkan graph has {} inputs and {} outputs but the call passes {} arguments",
            inputs.len(),
            outputs.len(),
            args.len()
        )));
    }
    let instruction = importer.current_instruction();
    let mut translation = Translation {
        importer,
        graph,
        tensors: HashMap::new(),
        scalars: HashMap::new(),
        updated: updated_in_place(graph),
        dynamic: false,
        node: 0,
        name: String::new(),
    };
    // Outputs the graph does not write where the call expects them: one of
    // the graph's constants (a `scalar_tensor` the exporter lifted, returned
    // as it is), or a tensor the graph computes in another element type
    // than the call's. Each is copied into the call's argument (converted)
    // once the calls have run.
    let mut copied_outputs = Vec::new();
    for (position, (&id, &arg)) in inputs.iter().chain(outputs).zip(args).enumerate() {
        if let VkValue::SymInt(_) = graph.value(id) {
            // A size the program computed before the call (`.item()`), or
            // one the graph computes for the program.
            translation.dynamic = true;
            if position < inputs.len() {
                let term = translation.importer.scalar_value(arg)?.ok_or_else(|| {
                    translation.invalid(format!(
                        "the graph's input value {id} is a SymInt, but the call passes the \
                         tensor {arg}"
                    ))
                })?;
                translation.scalars.insert(id, term);
            }
            continue;
        }
        let (tensor, staged) = translation.check_external(id, arg)?;
        translation.dynamic |=
            translation.importer.tensor(arg)?.dynamism == ShapeDynamism::DynamicBound;
        let constant = tensor.constant.is_some() && !translation.updated.contains_key(&id);
        let call_tensor = Argument::Tensor(TensorRef::Method(arg));
        match (position < inputs.len(), staged) {
            (false, _) if staged || constant => {
                if staged {
                    translation.tensor(id, tensor, Role::Write)?;
                }
                copied_outputs.push((id, tensor, call_tensor));
                continue;
            }
            (true, true) => {
                let converted = translation.tensor(id, tensor, Role::Write)?;
                let args = [call_tensor, Argument::Tensor(converted)];
                translation.convert(args)?;
                continue;
            }
            _ => {}
        }
        if translation
            .tensors
            .insert(id, TensorRef::Method(arg))
            .is_some()
        {
            return Err(translation.importer.contradiction(format!(
                "value {id} is more than one of the graph's inputs and outputs"
            )));
        }
    }
    for (node, call) in graph.chain.iter().enumerate() {
        translation.enter(instruction, node, call);
        if !translations().contains_key(&call.name) {
            return Err(translation.unsupported(instruction, "the operator"));
        }
    }
    for (node, call) in graph.chain.iter().enumerate() {
        translation.enter(instruction, node, call);
        translation.call(instruction, call)?;
    }
    translation.importer.at = Location::VulkanOutputs(instruction);
    for (id, tensor, call_tensor) in copied_outputs {
        let computed = translation.tensor(id, tensor, Role::Read)?;
        translation.convert([Argument::Tensor(computed), call_tensor])?;
    }
    for (&id, &arg) in outputs.iter().zip(&args[inputs.len()..]) {
        if let VkValue::SymInt(_) = graph.value(id) {
            let term = translation.sym_int(id)?;
            translation.importer.define_scalar(arg, term);
            continue;
        }
        if !translation.importer.is_written(arg) {
            return Err(translation
                .importer
                .contradiction(format!("output value {id} is never written by the graph")));
        }
    }
    translation.importer.at = Location::Instruction(instruction);
    Ok(())
}

/// The tensors the graph's calls update in place (the arguments of a table
/// entry's parameters that it writes, `Tensor(a!) cache`, before its `out`
/// ones), with the constant each starts as: its own, or the one
/// `et_vk.prepack` uploads into it.
fn updated_in_place<'a>(graph: &VulkanGraph<'a>) -> HashMap<VkValueId, Option<&'a [u8]>> {
    let constant = |id: VkValueId| match graph.value(id) {
        VkValue::Tensor(tensor) => tensor.constant,
        _ => None,
    };
    let prepacked: HashMap<VkValueId, VkValueId> = graph
        .chain
        .iter()
        .filter(|call| call.name == PREPACK)
        .filter_map(|call| match call.args[..] {
            [input, output] => Some((output, input)),
            _ => None,
        })
        .collect();
    let mut updated = HashMap::new();
    for call in &graph.chain {
        let Some(&Translate::Table {
            key, args: take, ..
        }) = translations().get(&call.name)
        else {
            continue;
        };
        let Some(entry) = aten::entry(key) else {
            continue;
        };
        let written = entry
            .schema
            .params
            .iter()
            .zip(take)
            .filter(|(param, _)| param.ty.written);
        for id in written.filter_map(|(_, &position)| call.args.get(position).copied()) {
            let initial =
                constant(id).or_else(|| prepacked.get(&id).and_then(|&from| constant(from)));
            updated.insert(id, initial);
        }
    }
    updated
}

/// Whether a tensor argument is read or written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Read,
    Write,
}

struct Translation<'i, 'm, 'a> {
    importer: &'i mut Importer<'m, 'a>,
    graph: &'m VulkanGraph<'a>,
    /// Where each of the graph's tensors is, once it is anywhere: the
    /// call's arguments, constants, and the tensors calls have written.
    tensors: HashMap<VkValueId, TensorRef>,
    /// The scalars calls have written into the graph's `SymInt`s.
    scalars: HashMap<VkValueId, Term>,
    /// The graph's tensors that calls update in place (a KV cache), with
    /// the constant they start as (theirs, or the one `et_vk.prepack`
    /// uploads into them once): state that keeps its contents from one
    /// call of the program to the next.
    updated: HashMap<VkValueId, Option<&'a [u8]>>,
    /// Whether the call's arguments have dynamic shapes: the graph's
    /// tensors then have the sizes its calls compute, which their declared
    /// dims bound.
    dynamic: bool,
    /// The operator call being translated: its position in the chain and
    /// its name.
    node: usize,
    name: String,
}

impl<'m, 'a> Translation<'_, 'm, 'a> {
    fn unsupported(&self, at: crate::InstructionId, what: impl Into<String>) -> ImportError {
        ImportError::UnsupportedVulkan {
            method: self.importer.method.name.clone(),
            at,
            node: self.node,
            name: self.name.clone(),
            what: what.into(),
        }
    }

    fn invalid(&self, problem: impl Into<String>) -> ImportError {
        self.importer.contradiction(problem)
    }

    /// The graph's input or output tensor `id`, after checking that the
    /// graph declares it with the sizes of the call's argument `arg` (its
    /// bound, for a dynamic one), and whether it holds int32
    /// where the argument is int64: the partitioner computes int64 tensors
    /// in 32 bits, and ExecuTorch's Vulkan runtime converts them as it
    /// stages them. It computes float64 and float16 ones in float32 too;
    /// ptec computes those in the call's type (the eager model's, and no
    /// less exact), as the graph's calls take either. A tensor whose
    /// staging buffer has another type than the graph's (`force_fp16`: f32
    /// staged, f16 on the device) is converted between them, as the
    /// runtime converts it.
    fn check_external(
        &self,
        id: VkValueId,
        arg: ValueIndex,
    ) -> Result<(&'m VkTensor<'a>, bool), ImportError> {
        let VkValue::Tensor(tensor) = self.graph.value(id) else {
            return Err(self.invalid(format!(
                "the graph's input or output value {id} is a {}, not a tensor",
                self.graph.value(id).kind()
            )));
        };
        let declared = self.tensor_type(id, tensor)?;
        let argument = self.importer.tensor(arg)?;
        let sizes: Vec<u64> = argument.sizes.iter().map(|&size| size as u64).collect();
        if declared.fixed_shape().as_deref() != Some(&sizes[..]) {
            return Err(self.invalid(format!(
                "the Vulkan graph declares its input or output value {id} with dims {:?}, but the \
                 call's argument {arg} has sizes {sizes:?}",
                tensor.dims
            )));
        }
        let called = self.importer.declared_type(TensorRef::Method(arg))?.dtype;
        let staged = match tensor.staging_datatype {
            VkDataType::Unset => declared.dtype,
            datatype => element_type(datatype).ok_or_else(|| {
                self.invalid(format!(
                    "value {id} is staged as {}, which ptec does not compute with",
                    datatype.name()
                ))
            })?,
        };
        let computed = declared.dtype;
        let converted_on_device = staged != computed;
        if converted_on_device && !(staged.is_float() && computed.is_float()) {
            return Err(self.invalid(format!(
                "the Vulkan graph's input or output value {id} holds {computed}, and its staging \
                 buffer is {staged}: ExecuTorch's Vulkan runtime converts between float types \
                 only as it stages a tensor"
            )));
        }
        match (called, staged) {
            (called, staged) if called == staged => Ok((tensor, converted_on_device)),
            (DType::F64 | DType::F16, DType::F32) => Ok((tensor, converted_on_device)),
            (DType::I64, DType::I32) => Ok((tensor, true)),
            (called, staged) => Err(self.invalid(format!(
                "the Vulkan graph's input or output value {id} holds {computed} (staged as \
                 {staged}), but the call's argument {arg} is {called}: ExecuTorch's Vulkan \
                 runtime converts only int64 to int32 and float64 and float16 to float32"
            ))),
        }
    }

    /// Copies the tensor `from` into `to`, converting its elements to
    /// `to`'s type.
    fn convert(&mut self, [from, to]: [Argument; 2]) -> Result<(), ImportError> {
        let args = [from, Argument::Bool(false), Argument::Null, to];
        self.table("aten::_to_copy.out", &args)
    }

    fn enter(&mut self, instruction: crate::InstructionId, node: usize, call: &VkCall) {
        self.node = node;
        self.name = call.name.clone();
        self.importer.at = Location::VulkanCall {
            instruction,
            node,
            name: self.name.clone(),
        };
    }

    fn call(
        &mut self,
        instruction: crate::InstructionId,
        call: &VkCall,
    ) -> Result<(), ImportError> {
        let Some((&output, operands)) = call.args.split_last() else {
            return Err(self.invalid("the operator call has no output"));
        };
        let translate = *translations()
            .get(&call.name)
            .ok_or_else(|| self.unsupported(instruction, "the operator"))?;
        match translate {
            Translate::Scalar(key) => {
                let args = self.read_all(operands)?;
                let term = call::import_scalar(self.importer, key, &args)?;
                self.define_scalar(output, term)
            }
            Translate::OwnScalar(composition, _) => {
                let args = self.read_all(operands)?;
                let term = composition(self, &args)?;
                self.define_scalar(output, term)
            }
            Translate::Table {
                key,
                args: take,
                dtypes,
            } => {
                let output = self.argument(output, Role::Write)?;
                let mut args = take
                    .iter()
                    .map(|&position| {
                        let id = operands.get(position).copied().ok_or_else(|| {
                            self.invalid(format!(
                                "argument {position} is missing ({} given)",
                                operands.len()
                            ))
                        })?;
                        self.argument(id, Role::Read)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                // An out variant that writes a list (`Tensor(a!)[] out`:
                // `split_with_sizes_copy`) takes the ValueList whole.
                let writes_list = aten::entry(key)
                    .and_then(|entry| entry.schema.params.last())
                    .is_some_and(|param| param.ty.list);
                if writes_list {
                    args.push(output);
                } else {
                    args.extend(outputs(output));
                }
                for &(at, like) in dtypes {
                    if args.get(at) == Some(&Argument::Null) {
                        args[at] = self.scalar_type_of(args.get(like))?;
                    }
                }
                self.table(key, &args)
            }
            Translate::Own(composition, _) => {
                let output = self.argument(output, Role::Write)?;
                let mut args = self.read_all(operands)?;
                args.extend(outputs(output));
                composition(self, &args)
            }
        }
    }

    /// Graph values `ids` as arguments a call reads.
    fn read_all(&mut self, ids: &[VkValueId]) -> Result<Vec<Argument>, ImportError> {
        ids.iter()
            .map(|&id| self.argument(id, Role::Read))
            .collect()
    }

    /// The ScalarType argument naming the element type of the tensor
    /// argument `like`.
    fn scalar_type_of(&self, like: Option<&Argument>) -> Result<Argument, ImportError> {
        let Some(Argument::Tensor(tensor)) = like else {
            return Err(self.invalid("a ScalarType is left out where no tensor gives it"));
        };
        let dtype = self.importer.declared_type(*tensor)?.dtype;
        (0..=i8::MAX)
            .find(|&code| {
                ptec_frontend::ScalarType::from_code(code).and_then(crate::program::dtype_of)
                    == Some(dtype)
            })
            .map(|code| Argument::Int(code.into()))
            .ok_or_else(|| self.invalid(format!("{dtype} has no ScalarType")))
    }

    /// A call's scalar result `term`, which the `SymInt` `output` is from
    /// now on, for later calls to read.
    fn define_scalar(&mut self, output: VkValueId, term: Term) -> Result<(), ImportError> {
        if !matches!(self.graph.value(output), VkValue::SymInt(_)) {
            return Err(self.invalid(format!(
                "the call's result, value {output}, is a {} where a SymInt belongs",
                self.graph.value(output).kind()
            )));
        }
        if self.scalars.contains_key(&output) {
            return Err(self.invalid(format!("value {output} is written by more than one call")));
        }
        self.scalars.insert(output, term);
        Ok(())
    }

    /// Runs the operator table's entry `key` over `args`.
    fn table(&mut self, key: &str, args: &[Argument]) -> Result<(), ImportError> {
        call::import(self.importer, key, args)
    }

    /// Graph value `id` as an argument.
    fn argument(&mut self, id: VkValueId, role: Role) -> Result<Argument, ImportError> {
        Ok(match self.graph.value(id) {
            VkValue::Null => Argument::Null,
            &VkValue::Int(value) => Argument::Int(value),
            &VkValue::Double(value) => Argument::Double(value),
            &VkValue::Bool(value) => Argument::Bool(value),
            VkValue::String(value) => Argument::String(value.clone()),
            VkValue::IntList(items) => {
                Argument::IntList(items.iter().copied().map(Term::int).collect())
            }
            VkValue::DoubleList(items) => Argument::DoubleList(items.clone()),
            VkValue::BoolList(items) => Argument::BoolList(items.clone()),
            VkValue::ValueList(items) => self.value_list(id, items, role)?,
            VkValue::Tensor(tensor) => Argument::Tensor(self.tensor(id, tensor, role)?),
            VkValue::SymInt(_) => {
                let term = self.sym_int(id)?;
                self.importer.scalar_argument(term, id)?
            }
            VkValue::Unknown(kind) => {
                return Err(self.invalid(format!("value {id} has unknown kind {kind}")));
            }
        })
    }

    /// A ValueList: tensors (a tuple of outputs, or a list argument) or
    /// integers (a size list). Its items are no lists themselves, which
    /// also keeps a list from containing itself.
    fn value_list(
        &mut self,
        id: VkValueId,
        items: &[VkValueId],
        role: Role,
    ) -> Result<Argument, ImportError> {
        let values: Vec<&VkValue<'a>> = items.iter().map(|&item| self.graph.value(item)).collect();
        if values
            .iter()
            .all(|value| matches!(value, VkValue::Int(_) | VkValue::SymInt(_)))
        {
            // Sizes, some of them computed at run time (a view's).
            let ints = items
                .iter()
                .zip(values)
                .map(|(&item, value)| match value {
                    VkValue::Int(value) => Ok(Term::int(*value)),
                    _ => self.sym_int(item),
                })
                .collect::<Result<_, _>>()?;
            return Ok(Argument::IntList(ints));
        }
        if values
            .iter()
            .all(|value| matches!(value, VkValue::Tensor(_)))
        {
            let tensors = items
                .iter()
                .zip(values)
                .map(|(&item, value)| match value {
                    VkValue::Tensor(tensor) => self.tensor(item, tensor, role),
                    _ => Err(self.invalid(format!("value {item} is not a tensor"))),
                })
                .collect::<Result<_, _>>()?;
            return Ok(Argument::TensorList(tensors));
        }
        if values
            .iter()
            .all(|value| matches!(value, VkValue::Tensor(_) | VkValue::Null))
        {
            // A `Tensor?[]` (`index`'s indices), some of them absent.
            let tensors = items
                .iter()
                .zip(values)
                .map(|(&item, value)| match value {
                    VkValue::Tensor(tensor) => self.tensor(item, tensor, role).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<_, _>>()?;
            return Ok(Argument::OptionalTensorList(tensors));
        }
        Err(self.invalid(format!(
            "value {id} lists values of mixed kinds {:?}",
            values.iter().map(|value| value.kind()).collect::<Vec<_>>()
        )))
    }

    /// The scalar a call of the graph wrote into the `SymInt` `id`.
    fn sym_int(&self, id: VkValueId) -> Result<Term, ImportError> {
        let term = self.scalars.get(&id).copied().ok_or_else(|| {
            self.invalid(format!(
                "value {id}, a SymInt, is read before a call of the graph writes it"
            ))
        })?;
        Ok(self.importer.symbols.resolve_term(term))
    }

    /// Where a tensor of the graph is: the call's argument, a constant (made
    /// on first use), or what a call wrote (made when it is written).
    fn tensor(
        &mut self,
        id: VkValueId,
        tensor: &VkTensor<'a>,
        role: Role,
    ) -> Result<TensorRef, ImportError> {
        if let Some(&known) = self.tensors.get(&id) {
            return Ok(known);
        }
        let ty = self.tensor_type(id, tensor)?;
        let constant = tensor
            .constant
            .or_else(|| self.updated.get(&id).copied().flatten());
        if let Some(bytes) = constant
            && ty.max_bytes(|_| 0) != bytes.len() as u64
        {
            return Err(self.invalid(format!(
                "value {id} of type {ty} has {} bytes of constant data",
                bytes.len()
            )));
        }
        let value = match (constant, role) {
            (Some(bytes), _) if self.updated.contains_key(&id) => ValueData {
                ty,
                kind: ValueKind::State {
                    initial: Some(Cow::Borrowed(bytes)),
                },
                offset: None,
            },
            (Some(bytes), _) => ValueData::constant(ty, Cow::Borrowed(bytes)),
            (None, Role::Write) => ValueData::computed(ty),
            (None, Role::Read) => {
                return Err(self.invalid(format!("value {id} is read before the graph writes it")));
            }
        };
        let computed = matches!(value.kind, ValueKind::Computed);
        let value = self.importer.graph.add_value(value);
        if self.dynamic && computed {
            self.importer.bounded.insert(value);
        }
        let known = TensorRef::Ir(value);
        self.tensors.insert(id, known);
        Ok(known)
    }

    /// The type of a tensor of the graph (row-major; its GPU layout does
    /// not change its values).
    fn tensor_type(&self, id: VkValueId, tensor: &VkTensor<'_>) -> Result<TensorType, ImportError> {
        let dtype = element_type(tensor.datatype).ok_or_else(|| {
            self.invalid(format!(
                "value {id} has element type {}, which ptec does not compute with",
                tensor.datatype.name()
            ))
        })?;
        let rank = u8::try_from(tensor.dims.len())
            .map_err(|_| self.invalid(format!("value {id} has {} dims", tensor.dims.len())))?;
        let shape: Vec<Dim> = tensor
            .dims
            .iter()
            .map(|&size| Dim::Fixed(u64::from(size)))
            .collect();
        if shape
            .iter()
            .try_fold(dtype.size() as u64, |bytes, dim| {
                bytes.checked_mul(dim.fixed().unwrap_or(0))
            })
            .is_none()
        {
            return Err(self.invalid(format!(
                "Vulkan value {id} has dims {:?}, too large: its bytes do not fit 64 bits",
                tensor.dims
            )));
        }
        Ok(TensorType {
            dtype,
            shape,
            dim_order: (0..rank).collect(),
        })
    }

    /// A new tensor of the translation's own, for a value between the
    /// operator table entries one call becomes. In a graph with dynamic
    /// shapes `sizes` bound those the op that writes it computes, as the
    /// graph's own tensors' declared sizes do: a composition written with
    /// the sizes it declares computes over the sizes a run has.
    fn temporary(&mut self, dtype: DType, sizes: &[u64]) -> Argument {
        let ty = TensorType {
            dtype,
            shape: sizes.iter().map(|&size| Dim::Fixed(size)).collect(),
            dim_order: (0..sizes.len() as u8).collect(),
        };
        let value = self.importer.graph.add_value(ValueData::computed(ty));
        if self.dynamic {
            self.importer.bounded.insert(value);
        }
        Argument::Tensor(TensorRef::Ir(value))
    }

    /// A new tensor of the translation's own with the declared sizes of
    /// the tensor argument `like` and element type `dtype` ([`Self::temporary`]).
    fn temporary_as(&mut self, like: &Argument, dtype: DType) -> Result<Argument, ImportError> {
        let Argument::Tensor(tensor) = like else {
            return Err(self.invalid(format!("a {} where a tensor belongs", like.kind())));
        };
        let sizes: Vec<u64> = (self.importer.declared_sizes(*tensor)?.iter())
            .map(|&size| size as u64)
            .collect();
        Ok(self.temporary(dtype, &sizes))
    }

    /// The element type of a tensor argument and its sizes, the bound of
    /// each dynamic one: the sizes of temporaries ([`Self::temporary`]),
    /// which take the ones a run computes.
    fn bounds(&self, argument: &Argument) -> Result<(DType, Vec<u64>), ImportError> {
        let Argument::Tensor(tensor) = argument else {
            return Err(self.invalid(format!("a {} where a tensor belongs", argument.kind())));
        };
        let dtype = self.importer.declared_type(*tensor)?.dtype;
        let sizes = self.importer.declared_sizes(*tensor)?;
        Ok((dtype, sizes.iter().map(|&size| size as u64).collect()))
    }

    /// The element type and shape of a tensor argument, the sizes a run
    /// computes included.
    fn shape(&self, argument: &Argument) -> Result<(DType, Vec<Dim>), ImportError> {
        let Argument::Tensor(tensor) = argument else {
            return Err(self.invalid(format!("a {} where a tensor belongs", argument.kind())));
        };
        let ty = self.importer.current_type(*tensor)?;
        Ok((ty.dtype, self.importer.symbols.resolve_shape(&ty.shape)))
    }

    /// `dim` of a tensor whose every dimension the program may declare
    /// dynamic (a `DynamicBound` tensor says no more), where the graph's
    /// call needs it fixed (a block, a layer's features): it takes its
    /// bound, which a run then checks.
    fn fixed_dim(&mut self, dim: Dim) -> Result<u64, ImportError> {
        if let Some(size) = dim.fixed() {
            return Ok(size);
        }
        let bound = self.importer.symbols.max_size(dim);
        if !self
            .importer
            .symbols
            .equate_shapes(&[dim], &[Dim::Fixed(bound)])
        {
            return Err(self.invalid(format!(
                "a size the call needs fixed is known only at run time and cannot be {bound}"
            )));
        }
        Ok(bound)
    }

    /// The largest sizes a shape takes: a temporary's ([`Self::temporary`]).
    fn max_sizes(&self, shape: &[Dim]) -> Vec<u64> {
        let symbols = &self.importer.symbols;
        shape.iter().map(|&dim| symbols.max_size(dim)).collect()
    }

    /// The sizes of a tensor argument as a view's size list: the ones a
    /// run computes where they are dynamic.
    fn sizes(&self, argument: &Argument) -> Result<Vec<Term>, ImportError> {
        let (_, shape) = self.shape(argument)?;
        Ok(shape.iter().map(|&dim| Term::from(dim)).collect())
    }

    /// The declared element type and sizes of a tensor argument.
    fn declared(&self, argument: &Argument) -> Result<(DType, Vec<u64>), ImportError> {
        let Argument::Tensor(tensor) = argument else {
            return Err(self.invalid(format!("a {} where a tensor belongs", argument.kind())));
        };
        let ty = self.importer.declared_type(*tensor)?;
        let sizes = ty
            .shape
            .iter()
            .map(|dim| {
                dim.fixed()
                    .ok_or_else(|| self.invalid("a tensor of dynamic shape"))
            })
            .collect::<Result<_, _>>()?;
        Ok((ty.dtype, sizes))
    }

    fn arg<'x>(&self, args: &'x [Argument], position: usize) -> Result<&'x Argument, ImportError> {
        args.get(position).ok_or_else(|| {
            self.invalid(format!(
                "argument {position} is missing ({} given)",
                args.len()
            ))
        })
    }
}

/// The element type ptec computes a Vulkan tensor's elements in.
fn element_type(datatype: VkDataType) -> Option<DType> {
    Some(match datatype {
        VkDataType::Bool => DType::Bool,
        VkDataType::Uint8 => DType::U8,
        VkDataType::Int8 => DType::I8,
        VkDataType::Int32 => DType::I32,
        VkDataType::Float16 => DType::F16,
        VkDataType::Float32 => DType::F32,
        VkDataType::Float64 => DType::F64,
        VkDataType::Int64 => DType::I64,
        VkDataType::Unset | VkDataType::Unknown(_) => return None,
    })
}

/// The outputs of a call: its output tensor, or the tensors of a ValueList
/// when it returns several.
fn outputs(output: Argument) -> Vec<Argument> {
    match output {
        Argument::TensorList(items) => items.into_iter().map(Argument::Tensor).collect(),
        other => vec![other],
    }
}

/// A shape as a view's size list: the sizes a run computes as their
/// symbols.
fn shape_argument(shape: &[Dim]) -> Argument {
    Argument::IntList(shape.iter().map(|&dim| Term::from(dim)).collect())
}

/// Fixed sizes as a view's size list.
fn sizes_argument(sizes: &[u64]) -> Argument {
    Argument::IntList(sizes.iter().map(|&size| Term::int(size as i64)).collect())
}

/// `et_vk.prepack(x)`: uploads a constant to the GPU; the value is `x`.
/// Into a tensor that calls update in place, the upload happens once: the
/// tensor is state that starts with `x`'s bytes.
fn prepack(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let (x, out) = (t.arg(args, 0)?.clone(), t.arg(args, 1)?.clone());
    if let Argument::Tensor(TensorRef::Ir(value)) = out
        && matches!(t.importer.graph.value(value).kind, ValueKind::State { .. })
    {
        return Ok(());
    }
    t.table("aten::clone.out", &[x, Argument::Null, out])
}

/// `et_vk.conv_with_clamp(input, weight, bias, stride, padding, dilation,
/// transposed, output_padding, groups, output_min, output_max)`: a
/// convolution whose result is clamped (the `fuse-clamp` pass joins them
/// again). In a graph of dynamic shapes the result's declared sizes bound
/// those the convolution computes.
fn conv_with_clamp(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let out = t.arg(args, 11)?.clone();
    let (dtype, sizes) = t.declared(&out)?;
    let convolved = t.temporary(dtype, &sizes);
    let mut convolution = args
        .get(..9)
        .ok_or_else(|| t.invalid(format!("{} arguments given, 12 needed", args.len())))?
        .to_vec();
    convolution.push(convolved.clone());
    t.table("aten::convolution.out", &convolution)?;
    let (min, max) = (t.arg(args, 9)?.clone(), t.arg(args, 10)?.clone());
    t.table("aten::clamp.out", &[convolved, min, max, out])
}

/// `aten.linear(input, weight, bias)`: `input @ weight^T + bias` over the
/// last dimension, as a matrix product of the input's rows. In a graph of
/// dynamic shapes the rows are as many as the input has (a view to `[-1,
/// features]`), and the result takes the input's leading sizes.
fn linear(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let (x, weight, bias, out) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 2)?.clone(),
        t.arg(args, 3)?.clone(),
    );
    let (_, shape) = t.shape(&x)?;
    let (dtype, bounds) = t.bounds(&x)?;
    let (_, weight_sizes) = t.declared(&weight)?;
    let (_, out_sizes) = t.declared(&out)?;
    let (&[outer, inner], Some((&features, leading))) =
        (weight_sizes.as_slice(), shape.split_last())
    else {
        return Err(t.invalid(format!(
            "linear of an input of sizes {bounds:?} by a weight of sizes {weight_sizes:?}"
        )));
    };
    let features = t.fixed_dim(features)?;
    let rows = bounds.iter().rev().skip(1).product::<u64>();
    // The rows as a view's size: their count, or -1 (all there are) where
    // it is known only at run time.
    let fixed_rows = leading
        .iter()
        .map(|dim| dim.fixed())
        .product::<Option<u64>>();
    let transposed = t.temporary(dtype, &[inner, outer]);
    t.table("aten::t_copy.out", &[weight, transposed.clone()])?;
    let matrix = if shape.len() == 2 {
        x
    } else {
        let matrix = t.temporary(dtype, &[rows, features]);
        let shape = Argument::IntList(vec![
            fixed_rows.map_or(Term::int(-1), |rows| Term::int(rows as i64)),
            Term::int(features as i64),
        ]);
        t.table("aten::view_copy.out", &[x, shape, matrix.clone()])?;
        matrix
    };
    let product = if out_sizes.len() == 2 {
        out.clone()
    } else {
        t.temporary(dtype, &[rows, outer])
    };
    if bias == Argument::Null {
        t.table("aten::mm.out", &[matrix, transposed, product.clone()])?;
    } else {
        let one = Argument::Int(1);
        t.table(
            "aten::addmm.out",
            &[bias, matrix, transposed, one.clone(), one, product.clone()],
        )?;
    }
    if product != out {
        let mut shape: Vec<Term> = leading.iter().map(|&dim| Term::from(dim)).collect();
        shape.push(Term::int(outer as i64));
        t.table(
            "aten::view_copy.out",
            &[product, Argument::IntList(shape), out],
        )?;
    }
    Ok(())
}

/// `et_vk.rms_norm(x, weight, eps)`: `x * rsqrt(mean(x^2, -1) + eps) *
/// weight`, as ExecuTorch's reference implementation computes it.
fn rms_norm(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let (x, weight, eps, out) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 2)?.clone(),
        t.arg(args, 3)?.clone(),
    );
    let (dtype, sizes) = t.bounds(&x)?;
    let mut reduced = sizes.clone();
    if let Some(last) = reduced.last_mut() {
        *last = 1;
    }
    let squares = t.temporary(dtype, &sizes);
    t.table("aten::mul.out", &[x.clone(), x.clone(), squares.clone()])?;
    let variance = t.temporary(dtype, &reduced);
    t.table(
        "aten::mean.out",
        &[
            squares,
            Argument::IntList(vec![Term::int(-1)]),
            Argument::Bool(true),
            Argument::Null,
            variance.clone(),
        ],
    )?;
    let shifted = t.temporary(dtype, &reduced);
    t.table(
        "aten::add.Scalar_out",
        &[variance, eps, Argument::Int(1), shifted.clone()],
    )?;
    let scale = t.temporary(dtype, &reduced);
    t.table("aten::rsqrt.out", &[shifted, scale.clone()])?;
    let normalized = t.temporary(dtype, &sizes);
    t.table("aten::mul.out", &[x, scale, normalized.clone()])?;
    t.table("aten::mul.out", &[normalized, weight, out])
}

/// `aten.argmax(self, dim, keepdim)` ([`arg_reduction`]).
fn argmax(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    arg_reduction(t, "aten::argmax.out", args)
}

/// `aten.argmin(self, dim, keepdim)` ([`arg_reduction`]).
fn argmin(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    arg_reduction(t, "aten::argmin.out", args)
}

/// The arg-reduction `key` of `self, dim, keepdim` into `out`: PyTorch's
/// int64 indices, converted where the graph declares `out` int32 (the
/// partitioner computes int64 tensors in 32 bits).
fn arg_reduction(
    t: &mut Translation<'_, '_, '_>,
    key: &str,
    args: &[Argument],
) -> Result<(), ImportError> {
    let reduction = args
        .get(..3)
        .ok_or_else(|| t.invalid(format!("{} arguments given, 4 needed", args.len())))?;
    let out = t.arg(args, 3)?.clone();
    let Argument::Tensor(result) = out else {
        return Err(t.invalid(format!("the result is a {}, not a tensor", out.kind())));
    };
    let mut call = reduction.to_vec();
    // The element type alone: `declared` asks for fixed sizes, which a
    // graph of dynamic shapes does not have.
    match t.importer.declared_type(result)?.dtype {
        DType::I32 => {
            let indices = t.temporary_as(&out, DType::I64)?;
            call.push(indices.clone());
            t.table(key, &call)?;
            t.convert([indices, out])
        }
        _ => {
            call.push(out);
            t.table(key, &call)
        }
    }
}

/// `aten.max_pool2d(self, kernel_size, stride, padding, dilation,
/// ceil_mode)`: `max_pool2d_with_indices` whose indices nothing reads.
fn max_pool2d(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let pooling = args
        .get(..6)
        .ok_or_else(|| t.invalid(format!("{} arguments given, 7 needed", args.len())))?;
    let out = t.arg(args, 6)?.clone();
    let indices = t.temporary_as(&out, DType::I64)?;
    let mut call = pooling.to_vec();
    call.extend([out, indices]);
    t.table("aten::max_pool2d_with_indices.out", &call)
}

/// `et_vk.grid_priors(self, stride, offset)`: the centres of the cells of
/// `self`'s last two dimensions (height `h`, width `w`) as `h * w` rows
/// `[(x + offset) * stride, (y + offset) * stride]`, row-major over `(y,
/// x)`, computed in f32 as ExecuTorch's reference does (a float32 `arange`
/// plus the offset, times the stride). They depend on `self`'s sizes only,
/// so import computes them.
fn grid_priors(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let (x, out) = (t.arg(args, 0)?.clone(), t.arg(args, 3)?.clone());
    // The serializer writes a whole offset (`0`) as an int.
    let offset = match t.arg(args, 2)? {
        &Argument::Double(offset) => offset,
        &Argument::Int(offset) => offset as f64,
        other => {
            return Err(t.invalid(format!("grid_priors' offset is a {}", other.kind())));
        }
    };
    let &Argument::Int(stride) = t.arg(args, 1)? else {
        return Err(t.invalid("grid_priors' stride is not an int"));
    };
    let (_, sizes) = t.declared(&x)?;
    let (dtype, out_sizes) = t.declared(&out)?;
    let &[.., height, width] = sizes.as_slice() else {
        return Err(t.invalid(format!(
            "grid_priors of a tensor of sizes {sizes:?}, which has no height and width"
        )));
    };
    let cells = height.checked_mul(width);
    if dtype != DType::F32 || cells.map(|cells| vec![cells, 2]) != Some(out_sizes.clone()) {
        return Err(t.invalid(format!(
            "grid_priors of sizes {sizes:?} writes {dtype} {out_sizes:?}, not f32 [h * w, 2]"
        )));
    }
    let (stride, offset) = (stride as f32, offset as f32);
    let mut bytes = Vec::new();
    for y in 0..height {
        for x in 0..width {
            for coordinate in [x, y] {
                let centre = (coordinate as f32 + offset) * stride;
                bytes.extend_from_slice(&centre.to_le_bytes());
            }
        }
    }
    let ty = TensorType {
        dtype,
        shape: out_sizes.iter().map(|&size| Dim::Fixed(size)).collect(),
        dim_order: vec![0, 1],
    };
    let priors = t
        .importer
        .graph
        .add_value(ValueData::constant(ty, Cow::Owned(bytes)));
    t.table(
        "aten::clone.out",
        &[Argument::Tensor(TensorRef::Ir(priors)), Argument::Null, out],
    )
}

/// `et_vk.sdpa(q, k, v, attn_mask, scale)`: `softmax(q @ k^T * scale +
/// attn_mask) @ v` over the last two dimensions, `scale` `1 / sqrt(E)` by
/// default (`E` the queries' last size), as ExecuTorch's reference
/// computes it: batched matrix products of the leading dimensions
/// flattened, the mask broadcast over the scores in their full shape.
fn sdpa(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let (q, k, v, mask, scale, out) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 2)?.clone(),
        t.arg(args, 3)?.clone(),
        t.arg(args, 4)?.clone(),
        t.arg(args, 5)?.clone(),
    );
    let (dtype, q_sizes) = t.declared(&q)?;
    let (_, k_sizes) = t.declared(&k)?;
    let (_, v_sizes) = t.declared(&v)?;
    let (_, out_sizes) = t.declared(&out)?;
    let (Some((&[queries, features], leading)), Some(&[keys, _]), Some(&[_, values])) = (
        q_sizes
            .split_last_chunk::<2>()
            .map(|(lead, last)| (last, lead)),
        k_sizes.last_chunk::<2>(),
        v_sizes.last_chunk::<2>(),
    ) else {
        return Err(t.invalid(format!(
            "sdpa of queries {q_sizes:?}, keys {k_sizes:?} and values {v_sizes:?}: each needs two \
             dimensions"
        )));
    };
    let batch = leading.iter().product::<u64>();
    let scale = match scale {
        Argument::Null => Argument::Double(1.0 / (features as f64).sqrt()),
        given => given,
    };
    let flat = |t: &mut Translation<'_, '_, '_>, x: Argument, rows: u64, columns: u64| {
        let flat = t.temporary(dtype, &[batch, rows, columns]);
        let shape = sizes_argument(&[batch, rows, columns]);
        t.table("aten::view_copy.out", &[x, shape, flat.clone()])?;
        Ok::<_, ImportError>(flat)
    };
    let q = flat(t, q, queries, features)?;
    let k = flat(t, k, keys, features)?;
    let v = flat(t, v, keys, values)?;
    let transposed = t.temporary(dtype, &[batch, features, keys]);
    let (one, two) = (Argument::Int(1), Argument::Int(2));
    t.table(
        "aten::transpose_copy.int_out",
        &[k, one, two, transposed.clone()],
    )?;
    let products = t.temporary(dtype, &[batch, queries, keys]);
    t.table("aten::bmm.out", &[q, transposed, products.clone()])?;
    let mut score_sizes = leading.to_vec();
    score_sizes.extend([queries, keys]);
    let scores = t.temporary(dtype, &score_sizes);
    let shape = sizes_argument(&score_sizes);
    let scaled = t.temporary(dtype, &[batch, queries, keys]);
    t.table("aten::mul.Scalar_out", &[products, scale, scaled.clone()])?;
    t.table("aten::view_copy.out", &[scaled, shape, scores.clone()])?;
    let scores = if mask == Argument::Null {
        scores
    } else {
        let masked = t.temporary(dtype, &score_sizes);
        t.table(
            "aten::add.out",
            &[scores, mask, Argument::Int(1), masked.clone()],
        )?;
        masked
    };
    let weights = t.temporary(dtype, &score_sizes);
    t.table(
        "aten::_softmax.out",
        &[
            scores,
            Argument::Int(-1),
            Argument::Bool(false),
            weights.clone(),
        ],
    )?;
    let weights = flat(t, weights, queries, keys)?;
    let attended = t.temporary(dtype, &[batch, queries, values]);
    t.table("aten::bmm.out", &[weights, v, attended.clone()])?;
    let shape = sizes_argument(&out_sizes);
    t.table("aten::view_copy.out", &[attended, shape, out])
}

/// The tensor argument `x`'s last dimension read as pairs `(r, i)`, each
/// rotated by the angle whose cosine and sine are `cos` and `sin`
/// (tensors that broadcast over the pairs): `(r cos - i sin, r sin + i
/// cos)`, written into `out` (of `x`'s sizes).
fn rotate_pairs(
    t: &mut Translation<'_, '_, '_>,
    x: Argument,
    cos: Argument,
    sin: Argument,
    out: Argument,
) -> Result<(), ImportError> {
    let (dtype, sizes) = t.bounds(&x)?;
    let shape = t.sizes(&x)?;
    let Some((&last, leading)) = sizes.split_last().filter(|(last, _)| *last % 2 == 0) else {
        return Err(t.invalid(format!(
            "a rotary embedding of sizes {sizes:?}: the last one must be even (pairs)"
        )));
    };
    let mut halves = leading.to_vec();
    halves.push(last / 2);
    let mut pairs_sizes = halves.clone();
    pairs_sizes.push(2);
    let pairs = t.temporary(dtype, &pairs_sizes);
    // The pairs' view keeps the leading sizes, symbols included.
    let mut pairs_shape = shape.clone();
    pairs_shape.pop();
    pairs_shape.extend([Term::int((last / 2) as i64), Term::int(2)]);
    t.table(
        "aten::view_copy.out",
        &[x, Argument::IntList(pairs_shape), pairs.clone()],
    )?;
    let [real, imaginary] = [0, 1].map(|_| t.temporary(dtype, &halves));
    for (index, part) in [&real, &imaginary].into_iter().enumerate() {
        t.table(
            "aten::select_copy.int_out",
            &[
                pairs.clone(),
                Argument::Int(-1),
                Argument::Int(index as i64),
                part.clone(),
            ],
        )?;
    }
    let product = |t: &mut Translation<'_, '_, '_>, a: &Argument, b: &Argument| {
        let product = t.temporary(dtype, &halves);
        t.table("aten::mul.out", &[a.clone(), b.clone(), product.clone()])?;
        Ok::<_, ImportError>(product)
    };
    let (r_cos, i_sin) = (product(t, &real, &cos)?, product(t, &imaginary, &sin)?);
    let (r_sin, i_cos) = (product(t, &real, &sin)?, product(t, &imaginary, &cos)?);
    let [rotated_real, rotated_imaginary] = [0, 1].map(|_| t.temporary(dtype, &halves));
    let one = Argument::Int(1);
    t.table(
        "aten::sub.out",
        &[r_cos, i_sin, one.clone(), rotated_real.clone()],
    )?;
    t.table(
        "aten::add.out",
        &[r_sin, i_cos, one, rotated_imaginary.clone()],
    )?;
    let rotated = t.temporary(dtype, &pairs_sizes);
    let parts = tensor_list(t, [rotated_real, rotated_imaginary])?;
    t.table(
        "aten::stack.out",
        &[parts, Argument::Int(-1), rotated.clone()],
    )?;
    t.table(
        "aten::view_copy.out",
        &[rotated, Argument::IntList(shape), out],
    )
}

/// A frequency table `freqs` (`[S, D/2]`, the sequence's positions by the
/// pairs of a head) viewed to broadcast over `[B, S, H, D/2]`.
fn per_position(t: &mut Translation<'_, '_, '_>, freqs: Argument) -> Result<Argument, ImportError> {
    let (dtype, sizes) = t.bounds(&freqs)?;
    let shape = t.sizes(&freqs)?;
    let (&[positions, pairs], &[position_size, pair_size]) = (sizes.as_slice(), shape.as_slice())
    else {
        return Err(t.invalid(format!(
            "a rotary embedding's frequencies of sizes {sizes:?}, not [sequence, head_dim / 2]"
        )));
    };
    let viewed = t.temporary(dtype, &[1, positions, 1, pairs]);
    let one = Term::int(1);
    let shape = Argument::IntList(vec![one, position_size, one, pair_size]);
    t.table("aten::view_copy.out", &[freqs, shape, viewed.clone()])?;
    Ok(viewed)
}

/// `et_vk.select_as_symint(x, dim, index)`: element `index` along `dim` of
/// a tensor that holds one there, read as a `SymInt` (the LLM export's
/// start position, read from its `input_pos` tensor): `x.select(dim,
/// index).item()`.
fn select_as_symint(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<Term, ImportError> {
    let [x, dim, index] = args else {
        return Err(t.invalid(format!(
            "select_as_symint takes a tensor, a dim and an index, not {} arguments",
            args.len()
        )));
    };
    let (dtype, mut sizes) = t.declared(x)?;
    let &Argument::Int(at) = dim else {
        return Err(t.invalid(format!("select_as_symint's dim is a {}", dim.kind())));
    };
    let rank = sizes.len() as i64;
    let at = if at < 0 { at + rank } else { at };
    if !(0..rank).contains(&at) {
        return Err(t.invalid(format!(
            "select_as_symint's dim {at} is out of range for a tensor of sizes {sizes:?}"
        )));
    }
    sizes.remove(at as usize);
    let selected = t.temporary(dtype, &sizes);
    let select = [x.clone(), dim.clone(), index.clone(), selected.clone()];
    t.table("aten::select_copy.int_out", &select)?;
    call::import_scalar(t.importer, "aten::_local_scalar_dense", &[selected])
}

/// `et_vk.apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)`: the rotary
/// embedding of ExecuTorch's Llama, queries and keys `[B, S, H, D]` with
/// their last dimension as (real, imaginary) pairs rotated by the angles
/// of `[S, D/2]` frequency tables.
fn apply_rotary_emb(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let cos = per_position(t, t.arg(args, 2)?.clone())?;
    let sin = per_position(t, t.arg(args, 3)?.clone())?;
    for (x, out) in [(0, 4), (1, 5)] {
        let (x, out) = (t.arg(args, x)?.clone(), t.arg(args, out)?.clone());
        rotate_pairs(t, x, cos.clone(), sin.clone(), out)?;
    }
    Ok(())
}

/// `et_vk.apply_rotary_emb_interleaved(x, freqs_cis)`: `x` `[B, N, C]` as
/// (real, imaginary) pairs along `C`, rotated by `freqs_cis`, whatever its
/// rank, read as `[N, C/2, 2]` (cosine, sine) pairs.
fn apply_rotary_emb_interleaved(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (x, freqs, out) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 2)?.clone(),
    );
    let (_, sizes) = t.declared(&x)?;
    let (dtype, freq_sizes) = t.declared(&freqs)?;
    let &[_, positions, channels] = sizes.as_slice() else {
        return Err(t.invalid(format!(
            "an interleaved rotary embedding of sizes {sizes:?}, not [B, N, C]"
        )));
    };
    let table_sizes = [positions, channels / 2, 2];
    if freq_sizes.iter().product::<u64>() != table_sizes.iter().product::<u64>() {
        return Err(t.invalid(format!(
            "an interleaved rotary embedding of sizes {sizes:?} by frequencies of sizes \
             {freq_sizes:?}, not N * C elements"
        )));
    }
    let table = t.temporary(dtype, &table_sizes);
    t.table(
        "aten::view_copy.out",
        &[freqs, sizes_argument(&table_sizes), table.clone()],
    )?;
    let [cos, sin] = [0, 1].map(|_| t.temporary(dtype, &[positions, channels / 2]));
    for (index, part) in [&cos, &sin].into_iter().enumerate() {
        t.table(
            "aten::select_copy.int_out",
            &[
                table.clone(),
                Argument::Int(-1),
                Argument::Int(index as i64),
                part.clone(),
            ],
        )?;
    }
    rotate_pairs(t, x, cos, sin, out)
}

/// `et_vk.apply_rotary_emb_hf(xq, xk, freqs_cos, freqs_sin, start_pos)`:
/// Hugging Face's rotary embedding of queries and keys `[B, S, H, D]`: the
/// tables' rows `start_pos..start_pos + S` (`[S, R]`, `R` the rotated
/// leading part of each head) broadcast over the heads, `x_rot * cos +
/// rotate_half(x_rot) * sin` (`rotate_half` the halves of `x_rot` swapped,
/// the second negated), then the rest of each head as it is.
fn apply_rotary_emb_hf(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (dtype, q_sizes) = t.declared(t.arg(args, 0)?)?;
    let (_, table_sizes) = t.declared(t.arg(args, 2)?)?;
    let (&[_, positions, _, head], &[_, rotated]) = (q_sizes.as_slice(), table_sizes.as_slice())
    else {
        return Err(t.invalid(format!(
            "an hf rotary embedding of queries {q_sizes:?} by tables {table_sizes:?}, not \
             [B, S, H, D] by [max_seq_len, R]"
        )));
    };
    if rotated > head || rotated % 2 != 0 {
        return Err(t.invalid(format!(
            "an hf rotary embedding of {rotated} dimensions of heads of {head}"
        )));
    }
    let start = t.arg(args, 4)?.clone();
    let end = call::import_scalar(
        t.importer,
        "executorch_prim::add.Scalar",
        &[start.clone(), Argument::Int(positions as i64)],
    )?;
    let end = t.importer.scalar_argument(end, "start_pos + seq_len")?;
    let mut rows = Vec::new();
    for table in [2, 3] {
        let table = t.arg(args, table)?.clone();
        let sliced = t.temporary(dtype, &[positions, rotated]);
        t.table(
            "aten::slice_copy.Tensor_out",
            &[
                table,
                Argument::Int(0),
                start.clone(),
                end.clone(),
                Argument::Int(1),
                sliced.clone(),
            ],
        )?;
        let per_head = t.temporary(dtype, &[positions, 1, rotated]);
        t.table(
            "aten::unsqueeze_copy.out",
            &[sliced, Argument::Int(1), per_head.clone()],
        )?;
        rows.push(per_head);
    }
    for ((x, out), (cos, sin)) in [(0, 5), (1, 6)].into_iter().zip([(&rows[0], &rows[1]); 2]) {
        let (x, out) = (t.arg(args, x)?.clone(), t.arg(args, out)?.clone());
        rotate_half(t, x, rotated, cos, sin, out)?;
    }
    Ok(())
}

/// `x`'s last dimension: its first `rotated` elements `r` become `r * cos
/// + rotate_half(r) * sin`, the rest stay; written into `out`.
fn rotate_half(
    t: &mut Translation<'_, '_, '_>,
    x: Argument,
    rotated: u64,
    cos: &Argument,
    sin: &Argument,
    out: Argument,
) -> Result<(), ImportError> {
    let (dtype, sizes) = t.declared(&x)?;
    let Some((&head, leading)) = sizes.split_last() else {
        return Err(t.invalid("an hf rotary embedding of a 0-dim tensor"));
    };
    // Elements `start..end` of the last dimension of `from`.
    let part = |t: &mut Translation<'_, '_, '_>, from: &Argument, start: u64, end: u64| {
        let mut part_sizes = leading.to_vec();
        part_sizes.push(end - start);
        let part = t.temporary(dtype, &part_sizes);
        t.table(
            "aten::slice_copy.Tensor_out",
            &[
                from.clone(),
                Argument::Int(-1),
                Argument::Int(start as i64),
                Argument::Int(end as i64),
                Argument::Int(1),
                part.clone(),
            ],
        )?;
        Ok::<_, ImportError>((part, part_sizes))
    };
    let (x_rot, rot_sizes) = part(t, &x, 0, rotated)?;
    let (first, half_sizes) = part(t, &x_rot, 0, rotated / 2)?;
    let (second, _) = part(t, &x_rot, rotated / 2, rotated)?;
    let negated = t.temporary(dtype, &half_sizes);
    t.table("aten::neg.out", &[second, negated.clone()])?;
    let swapped = t.temporary(dtype, &rot_sizes);
    let halves = tensor_list(t, [negated, first])?;
    t.table(
        "aten::cat.out",
        &[halves, Argument::Int(-1), swapped.clone()],
    )?;
    let [by_cos, by_sin] = [0, 1].map(|_| t.temporary(dtype, &rot_sizes));
    t.table("aten::mul.out", &[x_rot, cos.clone(), by_cos.clone()])?;
    t.table("aten::mul.out", &[swapped, sin.clone(), by_sin.clone()])?;
    let one = Argument::Int(1);
    if rotated == head {
        return t.table("aten::add.out", &[by_cos, by_sin, one, out]);
    }
    let embedded = t.temporary(dtype, &rot_sizes);
    t.table("aten::add.out", &[by_cos, by_sin, one, embedded.clone()])?;
    let (rest, _) = part(t, &x, rotated, head)?;
    let parts = tensor_list(t, [embedded, rest])?;
    t.table("aten::cat.out", &[parts, Argument::Int(-1), out])
}

/// Tensor arguments as one tensor-list argument.
fn tensor_list<const N: usize>(
    t: &Translation<'_, '_, '_>,
    items: [Argument; N],
) -> Result<Argument, ImportError> {
    let tensors = items
        .into_iter()
        .map(|item| match item {
            Argument::Tensor(tensor) => Ok(tensor),
            other => Err(t.invalid(format!("a {} where a tensor belongs", other.kind()))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Argument::TensorList(tensors))
}

/// `et_vk.linear_dW(d_out, x)`: the weight's gradient of a linear layer,
/// `d_out^T @ x` over the rows of both (`[.., N]` and `[.., K]`) into `[N,
/// K]`.
fn linear_dw(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let (d_out, x, out) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 2)?.clone(),
    );
    let (dtype, d_sizes) = t.declared(&d_out)?;
    let (_, x_sizes) = t.declared(&x)?;
    let (Some((&outputs, d_lead)), Some((&features, x_lead))) =
        (d_sizes.split_last(), x_sizes.split_last())
    else {
        return Err(t.invalid("linear_dW of 0-dim tensors"));
    };
    let rows = d_lead.iter().product::<u64>();
    if x_lead.iter().product::<u64>() != rows {
        return Err(t.invalid(format!(
            "d_out has sizes {d_sizes:?} and x {x_sizes:?}: their rows disagree"
        )));
    }
    let d_out = t.viewed(d_out, &[rows, outputs])?;
    let x = t.viewed(x, &[rows, features])?;
    let transposed = t.applied("aten::t_copy.out", vec![d_out], dtype, &[outputs, rows])?;
    t.table("aten::mm.out", &[transposed, x, out])
}

/// `et_vk.fused_ce(logits, labels, n_valid)`: the cross-entropy loss of
/// the rows of `logits` (`[R, C]`) against `labels` (`[R]`, a negative
/// label leaves its row out) summed over the rows and divided by
/// `n_valid`, and its gradient `(softmax(logits) - one_hot(label)) /
/// n_valid` (zero on the rows left out), as ExecuTorch's reference
/// computes them; each row's loss is the negated log-softmax at its label.
fn fused_ce(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let (logits, labels, loss, gradient) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 3)?.clone(),
        t.arg(args, 4)?.clone(),
    );
    let n_valid = t.float_arg(args, 2, "n_valid")?;
    let (dtype, sizes) = t.declared(&logits)?;
    let (label_type, label_sizes) = t.declared(&labels)?;
    let &[rows, classes] = sizes.as_slice() else {
        return Err(t.invalid(format!("logits has sizes {sizes:?}, not [rows, classes]")));
    };
    if label_sizes != [rows] || label_type.is_float() || label_type == DType::Bool {
        return Err(t.invalid(format!(
            "labels is {label_type} {label_sizes:?}, not one integer per row of logits {sizes:?}"
        )));
    }
    let left_out = t.applied(
        "aten::lt.Scalar_out",
        vec![labels.clone(), Argument::Int(0)],
        DType::Bool,
        &[rows],
    )?;
    let left_out = t.viewed(left_out, &[rows, 1])?;
    let safe = t.applied(
        "aten::clamp.out",
        vec![labels, Argument::Int(0), Argument::Null],
        label_type,
        &[rows],
    )?;
    let safe = t.converted(safe, DType::I64)?;
    let safe = t.viewed(safe, &[rows, 1])?;
    let log_probabilities = t.applied(
        "aten::_log_softmax.out",
        vec![logits.clone(), Argument::Int(-1), Argument::Bool(false)],
        dtype,
        &sizes,
    )?;
    let picked = t.applied(
        "aten::gather.out",
        vec![
            log_probabilities,
            Argument::Int(1),
            safe.clone(),
            Argument::Bool(false),
        ],
        dtype,
        &[rows, 1],
    )?;
    let per_row = t.applied(
        "aten::div.Scalar_out",
        vec![picked, Argument::Double(-n_valid)],
        dtype,
        &[rows, 1],
    )?;
    let per_row = t.applied(
        "aten::masked_fill.Scalar_out",
        vec![per_row, left_out.clone(), Argument::Int(0)],
        dtype,
        &[rows, 1],
    )?;
    let every = Argument::IntList(vec![Term::int(0), Term::int(1)]);
    t.table(
        "aten::sum.IntList_out",
        &[per_row, every, Argument::Bool(false), Argument::Null, loss],
    )?;
    let probabilities = t.applied(
        "aten::_softmax.out",
        vec![logits, Argument::Int(-1), Argument::Bool(false)],
        dtype,
        &sizes,
    )?;
    let columns = t.applied(
        "aten::arange.start_out",
        vec![
            Argument::Int(0),
            Argument::Int(classes as i64),
            Argument::Int(1),
        ],
        DType::I64,
        &[classes],
    )?;
    let columns = t.viewed(columns, &[1, classes])?;
    let hot = t.binary("aten::eq.Tensor_out", safe, columns, DType::Bool)?;
    let hot = t.converted(hot, dtype)?;
    let difference = t.applied(
        "aten::sub.out",
        vec![probabilities, hot, Argument::Int(1)],
        dtype,
        &sizes,
    )?;
    let scaled = t.applied(
        "aten::div.Scalar_out",
        vec![difference, Argument::Double(n_valid)],
        dtype,
        &sizes,
    )?;
    t.table(
        "aten::masked_fill.Scalar_out",
        &[scaled, left_out, Argument::Int(0), gradient],
    )
}

/// `aten.hardshrink(self, lambd)`: 0 where `-lambd <= self <= lambd`,
/// `self` elsewhere (NaN included), as ATen's kernel compares.
fn hardshrink(t: &mut Translation<'_, '_, '_>, args: &[Argument]) -> Result<(), ImportError> {
    let (x, out) = (t.arg(args, 0)?.clone(), t.arg(args, 2)?.clone());
    let lambd = t.float_arg(args, 1, "lambd")?;
    let (_, sizes) = t.declared(&x)?;
    let within = |t: &mut Translation<'_, '_, '_>, key: &str, bound: f64| {
        t.applied(
            key,
            vec![x.clone(), Argument::Double(bound)],
            DType::Bool,
            &sizes,
        )
    };
    let above = within(t, "aten::ge.Scalar_out", -lambd)?;
    let below = within(t, "aten::le.Scalar_out", lambd)?;
    let inside = t.binary("aten::logical_and.out", above, below, DType::Bool)?;
    t.table(
        "aten::masked_fill.Scalar_out",
        &[x, inside, Argument::Int(0), out],
    )
}
