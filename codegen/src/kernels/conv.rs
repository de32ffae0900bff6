//! 2-D convolutions with an NCHW result, and pooling over contiguous NCHW
//! f32 tensors. (Convolutions with a channels-last result are in
//! `conv_nhwc.rs`; those over sizes known only at run time in
//! `conv_dynamic.rs`.)
//!
//! Pointwise convolutions (1x1, stride 1, no padding, one group) of an NCHW
//! input are GEMMs: weight [Co, Ci] times each image [Ci, H*W]. Others first
//! copy each image (a channels-last one too) into zero-padded NCHW planes in
//! scratch memory; one group goes through im2col and the GEMM's
//! microkernels, several are built from row updates: for each output row
//! and each (input channel, kernel row, kernel column), `weight * input` is
//! added to tiles of output columns in registers. Pooling windows are
//! walked with bounds checks, NaN winning max pooling as in PyTorch.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    BlockArg, ConstantData, Endianness, InstBuilder, MemFlagsData, Type, Value, types,
};
use ptec_ir::ops::OpDef;
use ptec_ir::ops::conv::{AvgPool2d, Convolution, MaxPool2d, Pair};
use ptec_ir::{CHANNELS_LAST, DType, FILTER_HWIO, ValueId, strides_in_order};

use super::conv_dynamic;
use super::conv_epilogue::{BlockEpilogue, apply_whole};
use super::conv_nhwc::{self, ChannelsLast};
use super::linalg::{Epilogue, Float, Gemm, Matrix, emit_gemm};
use super::map::{Operand, emit_copy};
use super::quantized::IntegerGemm;
use crate::emit::{Emitter, Size, flags};
use crate::error::CodegenError;

/// The fixed sizes of a 4-D f32 value laid out in `order`; a contiguous
/// 3-D value `[N, C, L]` is seen as `[N, C, 1, L]` (a 1-D convolution is a
/// 2-D one of height 1).
fn fixed_4d(
    e: &Emitter<'_, '_, '_>,
    value: ValueId,
    order: [u8; 4],
    what: &str,
) -> Result<[i64; 4], CodegenError> {
    let ty = &e.graph().value(value).ty;
    let shape = ty.fixed_shape().and_then(|shape| match shape.as_slice() {
        [n, c, h, w] if ty.dim_order == order => Some([*n, *c, *h, *w]),
        [n, c, l] if ty.is_contiguous() && order == [0, 1, 2, 3] => Some([*n, *c, 1, *l]),
        _ => None,
    });
    let shape = shape.filter(|_| ty.dtype == DType::F32).ok_or_else(|| {
        e.unsupported(format!(
            "{what} other than a fixed-size f32 tensor of dim order {order:?} ({ty})"
        ))
    })?;
    Ok(shape.map(|size| size as i64))
}

/// The fixed sizes of a contiguous 4-D f32 value.
fn nchw(e: &Emitter<'_, '_, '_>, value: ValueId, what: &str) -> Result<[i64; 4], CodegenError> {
    fixed_4d(e, value, [0, 1, 2, 3], what)
}

/// A fixed-size 4-D f32 activation, NCHW or channels-last.
#[derive(Clone, Copy, Debug)]
pub(super) struct Activation {
    /// Sizes along N, C, H, W.
    pub sizes: [i64; 4],
    /// Element strides along N, C, H, W.
    pub strides: [i64; 4],
    pub channels_last: bool,
}

fn activation(
    e: &Emitter<'_, '_, '_>,
    value: ValueId,
    what: &str,
) -> Result<Activation, CodegenError> {
    let channels_last = e.graph().value(value).ty.dim_order == CHANNELS_LAST;
    let order = if channels_last {
        CHANNELS_LAST
    } else {
        [0, 1, 2, 3]
    };
    let sizes = fixed_4d(e, value, order, what)?;
    let strides = strides_in_order(&sizes, &order, 1, |stride, size| stride * size);
    let strides = [strides[0], strides[1], strides[2], strides[3]];
    Ok(Activation {
        sizes,
        strides,
        channels_last,
    })
}

/// The geometry of a direct convolution over a zero-padded group plane.
#[derive(Clone, Copy)]
struct Geometry {
    /// Input channels per group.
    group_channels: i64,
    /// Padded plane size, in elements.
    padded: [i64; 2],
    kernel: [i64; 2],
    stride: [i64; 2],
    dilation: [i64; 2],
    out: [i64; 2],
}

/// The stride, padding and dilation of a convolution the fast kernels
/// compute: an ordinary 2-D or 1-D one (seen as 2-D of height 1) of
/// fixed-size f32 tensors, whose residual is laid out as its result.
fn planar(e: &Emitter<'_, '_, '_>, op: &Convolution, output: ValueId) -> Option<[Pair; 3]> {
    let geometry = match (
        op.as_2d(),
        &op.transposed,
        op.stride.as_slice(),
        op.padding.as_slice(),
        op.dilation.as_slice(),
    ) {
        (Some(geometry), ..) => geometry,
        (None, None, &[stride], &[padding], &[dilation]) => {
            [[1, stride], [0, padding], [1, dilation]]
        }
        _ => return None,
    };
    let graph = e.graph();
    let output_ty = &graph.value(output).ty;
    let operands = op.operands().into_iter().map(|(_, value)| value);
    let fits = operands.chain([output]).all(|value| {
        let ty = &graph.value(value).ty;
        ty.dtype == DType::F32 && ty.fixed_shape().is_some()
    }) && op
        .residual
        .is_none_or(|residual| graph.value(residual).ty == *output_ty);
    fits.then_some(geometry)
}

/// A convolution into `output`: its clamp, then its residual, are the
/// epilogue of whichever kernel computes it, and its epilogue steps are
/// applied to each block of a channels-last result as it is computed, or
/// else to the whole result afterwards (by the kernel alone, as a pass
/// over its output cannot be split with its threads).
pub(super) fn convolution(
    e: &mut Emitter<'_, '_, '_>,
    op: &Convolution,
    output: ValueId,
) -> Result<(), CodegenError> {
    // Sizes known only at run time take the plain 2-D loop nest.
    let dynamic = conv_dynamic::is_dynamic(e, &[op.input, output]);
    let geometry = planar(e, op, output);
    let blocks = match (&op.epilogue, geometry) {
        (Some(epilogue), Some(_)) if !dynamic => BlockEpilogue::new(e, epilogue, output)?,
        _ => None,
    };
    match &op.epilogue {
        Some(epilogue) if blocks.is_none() => {
            e.whole(|e| compute(e, op, output, geometry, dynamic, None))?;
            apply_whole(e, epilogue, output)
        }
        _ => compute(e, op, output, geometry, dynamic, blocks.as_ref()),
    }
}

/// The convolution by the kernel its geometry selects, `blocks` its
/// epilogue steps when they go block by block.
fn compute(
    e: &mut Emitter<'_, '_, '_>,
    op: &Convolution,
    output: ValueId,
    geometry: Option<[Pair; 3]>,
    dynamic: bool,
    blocks: Option<&BlockEpilogue>,
) -> Result<(), CodegenError> {
    if geometry.is_none() && !dynamic {
        return super::conv_direct::convolution(e, op, output);
    }
    // The residual is read at a fixed distance from each output, so it
    // is laid out as the output is.
    let residual = op.residual.map(|residual| {
        let output = e.address(output);
        let residual = e.address(residual);
        e.b.ins().isub(residual, output)
    });
    let epilogue = Epilogue {
        residual,
        ..Epilogue::clamped(op.clamp)
    };
    match geometry {
        Some(geometry) => convolve(e, op, geometry, output, epilogue, blocks),
        None => conv_dynamic::convolution(e, op, output, epilogue),
    }
}

fn convolve(
    e: &mut Emitter<'_, '_, '_>,
    op: &Convolution,
    [stride, padding, dilation]: [Pair; 3],
    output_value: ValueId,
    epilogue: Epilogue,
    blocks: Option<&BlockEpilogue>,
) -> Result<(), CodegenError> {
    let &Convolution {
        input: input_value,
        weight: weight_value,
        bias,
        groups,
        ..
    } = op;
    let source = activation(e, input_value, "convolution input")?;
    let result = activation(e, output_value, "convolution output")?;
    if result.channels_last {
        let filter = fixed_4d(
            e,
            weight_value,
            FILTER_HWIO,
            "convolution weight of a channels-last result",
        )?;
        let conv = ChannelsLast {
            input: source,
            filter,
            output: result,
            stride: stride.map(|s| s as i64),
            padding: padding.map(|p| p as i64),
            dilation: dilation.map(|d| d as i64),
            groups: groups as i64,
        };
        let integer = IntegerGemm::for_convolution(e, op, &conv, output_value);
        let bias = bias.map(|bias| e.address(bias));
        let values = [input_value, weight_value, output_value];
        let epilogues = (epilogue, blocks);
        return conv_nhwc::convolution(e, &conv, values, bias, epilogues, integer.as_ref());
    }
    let [batch, channels, height, width] = source.sizes;
    let [out_channels, group_channels, kernel_h, kernel_w] =
        nchw(e, weight_value, "convolution weight")?;
    let [_, _, out_h, out_w] = result.sizes;
    let source_strides = [source.strides[1], source.strides[2], source.strides[3]];
    let input = e.address(input_value);
    let weight = e.address(weight_value);
    let output = e.address(output_value);
    let bias_base = bias.map(|bias| e.address(bias));
    // A channels-last input goes through a padded copy like the others.
    let pointwise = kernel_h == 1
        && kernel_w == 1
        && stride == [1, 1]
        && padding == [0, 0]
        && groups == 1
        && !source.channels_last;
    if pointwise {
        // The output is written through the GEMMs alone.
        e.allow_parallel();
        let plane = height * width;
        return e
            .counted_loop(Size::Const(batch), &[input, output], |e, _, p| {
                weights_times_columns(
                    e,
                    weight,
                    [p[0], p[1]],
                    [out_channels, channels, plane],
                    bias_base,
                    epilogue,
                )?;
                Ok(vec![
                    e.b.ins().iadd_imm_s(p[0], channels * plane * 4),
                    e.b.ins().iadd_imm_s(p[1], out_channels * plane * 4),
                ])
            })
            .map(|_| ());
    }
    if groups == 1 && !e.cx.microkernels.gemm.is_empty() {
        // The output is written through the GEMMs alone (the padded image
        // and its columns are in scratch).
        e.allow_parallel();
        let geometry = Geometry {
            group_channels,
            padded: [
                height + 2 * padding[0] as i64,
                width + 2 * padding[1] as i64,
            ],
            kernel: [kernel_h, kernel_w],
            stride: [stride[0] as i64, stride[1] as i64],
            dilation: [dilation[0] as i64, dilation[1] as i64],
            out: [out_h, out_w],
        };
        return im2col_gemm(
            e,
            &geometry,
            [input, output],
            source_strides,
            weight,
            bias_base,
            [batch, out_channels],
            padding,
            epilogue,
        );
    }
    let groups = groups as i64;
    let outputs_per_group = out_channels / groups;
    let padded = [
        height + 2 * padding[0] as i64,
        width + 2 * padding[1] as i64,
    ];
    let geometry = Geometry {
        group_channels,
        padded,
        kernel: [kernel_h, kernel_w],
        stride: [stride[0] as i64, stride[1] as i64],
        dilation: [dilation[0] as i64, dilation[1] as i64],
        out: [out_h, out_w],
    };
    let plane_bytes = padded[0] * padded[1] * 4;
    let scratch = e.scratch((group_channels * plane_bytes) as u64);
    // Output channels are computed four at a time when a group has a
    // multiple of four.
    let block = if outputs_per_group % 4 == 0 { 4 } else { 1 };
    let weight_block = group_channels * kernel_h * kernel_w * 4;
    // The bias pointer rides along even without a bias (pointing at
    // scratch, never read) so that every loop carries the same values.
    let bias_start = bias_base.unwrap_or(scratch);
    e.counted_loop(Size::Const(batch), &[input, output], |e, _, image| {
        e.counted_loop(
            Size::Const(groups),
            &[image[0], image[1], weight, bias_start],
            |e, _, g| {
                pad_copy(
                    e,
                    g[0],
                    source_strides,
                    scratch,
                    group_channels,
                    [height, width],
                    [padding[0] as i64, padding[1] as i64],
                    padded,
                )?;
                let after = e.counted_loop(
                    Size::Const(outputs_per_group / block),
                    &[g[1], g[2], g[3]],
                    |e, _, c| {
                        let bias = bias_base.map(|_| c[2]);
                        e.counted_loop(Size::Const(out_h), &[c[0], scratch], |e, _, row| {
                            output_row(e, &geometry, block, row[1], c[1], bias, row[0], epilogue)?;
                            Ok(vec![
                                e.b.ins().iadd_imm_s(row[0], out_w * 4),
                                e.b.ins()
                                    .iadd_imm_s(row[1], geometry.stride[0] * padded[1] * 4),
                            ])
                        })?;
                        Ok(vec![
                            e.b.ins().iadd_imm_s(c[0], block * out_h * out_w * 4),
                            e.b.ins().iadd_imm_s(c[1], block * weight_block),
                            e.b.ins().iadd_imm_s(c[2], block * 4),
                        ])
                    },
                )?;
                Ok(vec![
                    e.b.ins()
                        .iadd_imm_s(g[0], group_channels * source_strides[0] * 4),
                    after[0],
                    after[1],
                    after[2],
                ])
            },
        )?;
        Ok(vec![
            e.b.ins()
                .iadd_imm_s(image[0], channels * height * width * 4),
            e.b.ins()
                .iadd_imm_s(image[1], out_channels * out_h * out_w * 4),
        ])
    })?;
    Ok(())
}

/// `output [m, n] = weight [m, k] @ columns [k, n]`, all contiguous, plus
/// one bias per output row, through the epilogue.
fn weights_times_columns(
    e: &mut Emitter<'_, '_, '_>,
    weight: Value,
    [columns, output]: [Value; 2],
    [m, k, n]: [i64; 3],
    bias: Option<Value>,
    epilogue: Epilogue,
) -> Result<(), CodegenError> {
    let contiguous = |base, row: i64| Matrix {
        base,
        row: Size::Const(row * 4),
        col: Size::Const(4),
    };
    let gemm = Gemm {
        float: Float::F32,
        m: Size::Const(m),
        n: Size::Const(n),
        k: Size::Const(k),
        a: contiguous(weight, k),
        b: contiguous(columns, n),
        c: contiguous(output, n),
        bias: bias.map(|base| Matrix {
            base,
            row: Size::Const(4),
            col: Size::Const(0),
        }),
        alpha: 1.0,
        beta: 1.0,
        epilogue,
        b_panels: None,
    };
    emit_gemm(e, &gemm)
}

/// A convolution of one group as a GEMM: each image is padded into scratch,
/// unfolded into columns (one row per input channel and kernel tap, one
/// column per output position), and multiplied by the weights
/// `[out channels, channels * taps]`, so the GEMM's microkernel does the
/// arithmetic.
#[allow(clippy::too_many_arguments)] // The operands of one convolution.
fn im2col_gemm(
    e: &mut Emitter<'_, '_, '_>,
    geometry: &Geometry,
    [input, output]: [Value; 2],
    input_strides: [i64; 3],
    weight: Value,
    bias: Option<Value>,
    [batch, out_channels]: [i64; 2],
    padding: Pair,
    epilogue: Epilogue,
) -> Result<(), CodegenError> {
    let channels = geometry.group_channels;
    let [kernel_h, kernel_w] = geometry.kernel;
    let [out_h, out_w] = geometry.out;
    let [padded_h, padded_w] = geometry.padded;
    let (height, width) = (
        padded_h - 2 * padding[0] as i64,
        padded_w - 2 * padding[1] as i64,
    );
    let taps = channels * kernel_h * kernel_w;
    let positions = out_h * out_w;
    let padded_bytes = ((channels * padded_h * padded_w * 4) as u64).next_multiple_of(64) as i64;
    let scratch = e.scratch((padded_bytes + taps * positions * 4) as u64);
    let columns = e.b.ins().iadd_imm_s(scratch, padded_bytes);
    e.counted_loop(Size::Const(batch), &[input, output], |e, _, image| {
        pad_copy(
            e,
            image[0],
            input_strides,
            scratch,
            channels,
            [height, width],
            [padding[0] as i64, padding[1] as i64],
            geometry.padded,
        )?;
        // Row (c, ky, kx) of the columns holds padded[c, oy*s + ky*d, ox*s + kx*d].
        e.counted_loop(Size::Const(channels), &[scratch, columns], |e, _, p| {
            for ky in 0..kernel_h {
                for kx in 0..kernel_w {
                    let tap = ky * kernel_w + kx;
                    let start =
                        (ky * geometry.dilation[0] * padded_w + kx * geometry.dilation[1]) * 4;
                    let from = e.b.ins().iadd_imm_s(p[0], start);
                    let to = e.b.ins().iadd_imm_s(p[1], tap * positions * 4);
                    emit_copy(
                        e,
                        vec![Size::Const(out_h), Size::Const(out_w)],
                        Operand {
                            base: to,
                            dtype: DType::F32,
                            strides: vec![Size::Const(out_w), Size::Const(1)],
                        },
                        Operand {
                            base: from,
                            dtype: DType::F32,
                            strides: vec![
                                Size::Const(geometry.stride[0] * padded_w),
                                Size::Const(geometry.stride[1]),
                            ],
                        },
                    )?;
                }
            }
            Ok(vec![
                e.b.ins().iadd_imm_s(p[0], padded_h * padded_w * 4),
                e.b.ins()
                    .iadd_imm_s(p[1], kernel_h * kernel_w * positions * 4),
            ])
        })?;
        weights_times_columns(
            e,
            weight,
            [columns, image[1]],
            [out_channels, taps, positions],
            bias,
            epilogue,
        )?;
        Ok(vec![
            e.b.ins()
                .iadd_imm_s(image[0], channels * height * width * 4),
            e.b.ins().iadd_imm_s(image[1], out_channels * positions * 4),
        ])
    })?;
    Ok(())
}

/// Copies `channels` planes of `size` from `source` (element strides along
/// channels, rows and columns) into `target`, each surrounded by `padding`
/// zeros (planes of `padded` size).
#[allow(clippy::too_many_arguments)] // Both sides of the copy.
fn pad_copy(
    e: &mut Emitter<'_, '_, '_>,
    source: Value,
    strides: [i64; 3],
    target: Value,
    channels: i64,
    size: [i64; 2],
    padding: [i64; 2],
    padded: [i64; 2],
) -> Result<(), CodegenError> {
    if padding != [0, 0] {
        fill_zeros(e, target, channels * padded[0] * padded[1])?;
    }
    let first =
        e.b.ins()
            .iadd_imm_s(target, (padding[0] * padded[1] + padding[1]) * 4);
    emit_copy(
        e,
        [channels, size[0], size[1]].map(Size::Const).to_vec(),
        f32_operand(first, [padded[0] * padded[1], padded[1], 1]),
        f32_operand(source, strides),
    )
}

/// An f32 operand of a three-dimensional copy, with element strides.
pub(super) fn f32_operand(base: Value, strides: [i64; 3]) -> Operand {
    Operand {
        base,
        dtype: DType::F32,
        strides: strides.map(Size::Const).to_vec(),
    }
}

/// Stores `count` f32 zeros from `target` on.
pub(super) fn fill_zeros(
    e: &mut Emitter<'_, '_, '_>,
    target: Value,
    count: i64,
) -> Result<(), CodegenError> {
    let zero = e.b.ins().f32const(0.0);
    fill(e, target, count, zero)
}

/// Stores `count` copies of `value` (a scalar: f32, or an integer of one,
/// two or four bytes) from `target` on.
pub(super) fn fill(
    e: &mut Emitter<'_, '_, '_>,
    target: Value,
    count: i64,
    value: Value,
) -> Result<(), CodegenError> {
    let ty = e.b.func.dfg.value_type(value);
    let lanes = 16 / i64::from(ty.bytes());
    let vector = ty.by(lanes as u32).expect("a scalar of at most four bytes");
    let values = e.b.ins().splat(vector, value);
    let after = e.counted_loop(Size::Const(count / lanes), &[target], |e, _, p| {
        e.b.ins().store(flags(), values, p[0], 0);
        Ok(vec![e.b.ins().iadd_imm_s(p[0], 16)])
    })?;
    e.counted_loop(Size::Const(count % lanes), &after, |e, _, p| {
        e.b.ins().store(flags(), value, p[0], 0);
        Ok(vec![e.b.ins().iadd_imm_s(p[0], i64::from(ty.bytes()))])
    })?;
    Ok(())
}

/// One output row of `block` output channels: tiles of 8 columns, then 4,
/// then single columns.
#[allow(clippy::too_many_arguments)] // The operands of one row.
fn output_row(
    e: &mut Emitter<'_, '_, '_>,
    geometry: &Geometry,
    block: i64,
    input_row: Value,
    weight: Value,
    bias: Option<Value>,
    output_row: Value,
    epilogue: Epilogue,
) -> Result<(), CodegenError> {
    let width = geometry.out[1];
    let mut carried = vec![input_row, output_row];
    let mut left = width;
    // One output channel at a time (depthwise) gets 16 columns, four
    // independent chains of FMAs, to hide their latency.
    let widths: &[i64] = if block == 1 {
        &[16, 8, 4, 1]
    } else {
        &[8, 4, 1]
    };
    for &lanes in widths {
        let count = left / lanes;
        left %= lanes;
        carried = e.counted_loop(Size::Const(count), &carried, |e, _, p| {
            conv_tile(
                e, geometry, block, lanes, p[0], weight, bias, p[1], epilogue,
            )?;
            Ok(vec![
                e.b.ins().iadd_imm_s(p[0], lanes * geometry.stride[1] * 4),
                e.b.ins().iadd_imm_s(p[1], lanes * 4),
            ])
        })?;
    }
    Ok(())
}

/// `lanes` consecutive outputs of `block` channels: accumulates every input
/// channel and kernel tap in registers, then adds the bias, clamps and
/// stores.
#[allow(clippy::too_many_arguments)] // The operands of one tile.
fn conv_tile(
    e: &mut Emitter<'_, '_, '_>,
    geometry: &Geometry,
    block: i64,
    lanes: i64,
    input: Value,
    weight: Value,
    bias: Option<Value>,
    output: Value,
    epilogue: Epilogue,
) -> Result<(), CodegenError> {
    let vectors = if lanes == 1 { 1 } else { (lanes / 4) as usize };
    let lane = if lanes == 1 { types::F32 } else { types::F32X4 };
    let zero = super::expr::fconst(e, lane, 0.0);
    let accumulators = block as usize * vectors;
    let mut carried = vec![input, weight];
    carried.extend(std::iter::repeat_n(zero, accumulators));
    let [kernel_h, kernel_w] = geometry.kernel;
    let plane_bytes = geometry.padded[0] * geometry.padded[1] * 4;
    let weight_block = geometry.group_channels * kernel_h * kernel_w * 4;
    let result = e.counted_loop(Size::Const(geometry.group_channels), &carried, |e, _, p| {
        let mut sums = p[2..].to_vec();
        for ky in 0..kernel_h {
            for kx in 0..kernel_w {
                let offset = (ky * geometry.dilation[0] * geometry.padded[1]
                    + kx * geometry.dilation[1])
                    * 4;
                let values: Vec<Value> = (0..vectors)
                    .map(|t| {
                        load_strided(
                            e,
                            flags(),
                            p[0],
                            offset as i32 + (t as i64 * 4 * geometry.stride[1] * 4) as i32,
                            geometry.stride[1],
                            lane,
                        )
                    })
                    .collect();
                for channel in 0..block as usize {
                    let tap = channel as i64 * weight_block + (ky * kernel_w + kx) * 4;
                    let w = e.b.ins().load(types::F32, tile_input(), p[1], tap as i32);
                    let w = if lane.is_vector() {
                        e.b.ins().splat(lane, w)
                    } else {
                        w
                    };
                    for (t, &value) in values.iter().enumerate() {
                        let slot = channel * vectors + t;
                        sums[slot] = e.multiply_add(w, value, sums[slot]);
                    }
                }
            }
        }
        let mut next = vec![
            e.b.ins().iadd_imm_s(p[0], plane_bytes),
            e.b.ins().iadd_imm_s(p[1], kernel_h * kernel_w * 4),
        ];
        next.extend(sums);
        Ok(next)
    })?;
    let out_plane = geometry.out[0] * geometry.out[1] * 4;
    for channel in 0..block as usize {
        let bias_value = match bias {
            Some(bias) => {
                let value =
                    e.b.ins()
                        .load(types::F32, flags(), bias, channel as i32 * 4);
                if lane.is_vector() {
                    e.b.ins().splat(lane, value)
                } else {
                    value
                }
            }
            None => zero,
        };
        for t in 0..vectors {
            let mut value =
                e.b.ins()
                    .fadd(result[2 + channel * vectors + t], bias_value);
            let offset = (channel as i64 * out_plane + t as i64 * 16) as i32;
            value = epilogue.apply(e, value, output, offset);
            e.b.ins().store(flags(), value, output, offset);
        }
    }
    Ok(())
}

/// How a convolution tile reads its weights, and a kernel its node's
/// inputs: memory that nothing writes while the kernel runs, so the loads
/// are pure for Cranelift's e-graph. That lets each load sit next to the
/// multiply-adds that use it; as ordinary loads they would all stay ahead of
/// the arithmetic, which Cranelift places at the end of the loop body, and
/// the registers would spill. Never for scratch memory the kernel rewrites
/// (the padded plane of each image and group): a pure load whose address
/// does not change across images or groups (a one-row output) would be
/// hoisted above the copy that fills it.
pub(super) fn tile_input() -> MemFlagsData {
    flags().with_readonly().with_can_move()
}

/// Loads four inputs `stride` elements apart (or one, for a scalar lane).
fn load_strided(
    e: &mut Emitter<'_, '_, '_>,
    memory: MemFlagsData,
    base: Value,
    offset: i32,
    stride: i64,
    lane: Type,
) -> Value {
    if !lane.is_vector() {
        return e.b.ins().load(types::F32, memory, base, offset);
    }
    match stride {
        1 => e.b.ins().load(types::F32X4, memory, base, offset),
        2 => {
            // Eight consecutive floats; keep the even ones.
            let low = e.b.ins().load(types::I8X16, memory, base, offset);
            let high = e.b.ins().load(types::I8X16, memory, base, offset + 16);
            let mask = e.b.func.dfg.immediates.push(ConstantData::from(
                [0u8, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27].as_slice(),
            ));
            let evens = e.b.ins().shuffle(low, high, mask);
            e.b.ins().bitcast(
                types::F32X4,
                MemFlagsData::new().with_endianness(Endianness::Little),
                evens,
            )
        }
        _ => {
            let first = e.b.ins().load(types::F32, memory, base, offset);
            let mut vector = e.b.ins().scalar_to_vector(types::F32X4, first);
            for lane_index in 1..4u8 {
                let element = e.b.ins().load(
                    types::F32,
                    memory,
                    base,
                    offset + (i64::from(lane_index) * stride * 4) as i32,
                );
                vector = e.b.ins().insertlane(vector, element, lane_index);
            }
            vector
        }
    }
}

/// Max pooling whose indices nothing reads, with windows that lie inside
/// the input once it is padded: four output columns at a time, every tap a
/// vector load (strided when the stride is 2), with no bounds checks. With
/// padding, the input is first copied into scratch inside a border of -inf,
/// which changes no maximum (a window takes its first tap inside, then a
/// larger value or a NaN; -inf is never larger, and a window of -inf alone
/// gives -inf either way). Returns false, emitting nothing, when that does
/// not apply.
fn max_pool_inside(
    e: &mut Emitter<'_, '_, '_>,
    &MaxPool2d {
        input: input_value,
        kernel,
        stride,
        padding,
        dilation,
        ..
    }: &MaxPool2d,
    outputs: &[ValueId],
) -> Result<bool, CodegenError> {
    let graph = e.graph();
    let indices_unused = !indices_read(e, outputs);
    let f32_only = graph.value(input_value).ty.dtype == DType::F32;
    let [batch, channels, height, width] = nchw(e, input_value, "pooling input")?;
    let [_, _, out_h, out_w] = nchw(e, outputs[0], "pooling output")?;
    let (kernel, stride, dilation) = (
        kernel.map(|k| k as i64),
        stride.map(|s| s as i64),
        dilation.map(|d| d as i64),
    );
    let padding = padding.map(|p| p as i64);
    let (unpadded_height, unpadded_width) = (height, width);
    let (height, width) = (height + 2 * padding[0], width + 2 * padding[1]);
    let inside = (out_h - 1) * stride[0] + (kernel[0] - 1) * dilation[0] < height
        && (out_w - 1) * stride[1] + (kernel[1] - 1) * dilation[1] < width;
    if !indices_unused || !f32_only || !inside || !matches!(stride[1], 1 | 2) || out_h == 0 {
        return Ok(false);
    }
    let input = match padding {
        [0, 0] => e.address(input_value),
        _ => {
            let source = e.address(input_value);
            let planes = Bordered {
                images: batch * channels,
                sizes: [unpadded_height, unpadded_width],
                padded: [height, width],
                top_left: padding,
                channels: 1,
            };
            planes.copy(e, source)?
        }
    };
    let output = e.address(outputs[0]);
    let rows = Size::Const(batch * channels * out_h);
    let window = PoolWindow {
        kernel,
        dilation,
        row_bytes: width * 4,
        column_bytes: 4,
        stride: stride[1],
    };
    // Output rows of every plane follow each other, as do their input rows
    // (`stride[0]` apart within a plane, a plane's leftover rows between).
    e.counted_loop(rows, &[input, output], |e, row, p| {
        let in_plane_row = e.b.ins().urem_imm_u(row, out_h);
        let plane = e.b.ins().udiv_imm_u(row, out_h);
        let plane_offset = e.b.ins().imul_imm_s(plane, height * width * 4);
        let row_offset = e.b.ins().imul_imm_s(in_plane_row, stride[0] * width * 4);
        let source = e.b.ins().iadd(p[0], plane_offset);
        let source = e.b.ins().iadd(source, row_offset);
        let vectors = out_w / 4;
        let carried = e.counted_loop(Size::Const(vectors), &[source, p[1]], |e, _, q| {
            let best = window.vector_max(e, q[0]);
            e.b.ins().store(flags(), best, q[1], 0);
            Ok(vec![
                e.b.ins().iadd_imm_s(q[0], 4 * stride[1] * 4),
                e.b.ins().iadd_imm_s(q[1], 4 * 4),
            ])
        })?;
        let leftover = out_w % 4;
        if leftover != 0 && vectors > 0 {
            // The last four columns once more, overlapping the loop's last
            // vector: same values, and no scalar tail.
            let back = 4 - leftover;
            let source = e.b.ins().iadd_imm_s(carried[0], -back * stride[1] * 4);
            let destination = e.b.ins().iadd_imm_s(carried[1], -back * 4);
            let best = window.vector_max(e, source);
            e.b.ins().store(flags(), best, destination, 0);
        } else if leftover != 0 {
            e.counted_loop(Size::Const(leftover), &carried, |e, _, q| {
                let best = window.scalar_max(e, q[0]);
                e.b.ins().store(flags(), best, q[1], 0);
                Ok(vec![
                    e.b.ins().iadd_imm_s(q[0], stride[1] * 4),
                    e.b.ins().iadd_imm_s(q[1], 4),
                ])
            })?;
        }
        Ok(vec![p[0], e.b.ins().iadd_imm_s(p[1], out_w * 4)])
    })?;
    Ok(true)
}

/// The taps of a max pooling window inside its (padded) input rows.
struct PoolWindow {
    kernel: [i64; 2],
    dilation: [i64; 2],
    /// Bytes from one input row to the next, and from one column to the
    /// next.
    row_bytes: i64,
    column_bytes: i64,
    /// Elements between the lanes of a vector: the windows' stride along
    /// a row (NCHW: four windows a vector), or 1 (channels-last: one window,
    /// four channels).
    stride: i64,
}

impl PoolWindow {
    /// Byte offsets of the taps from the window's first, in PyTorch's order.
    fn offsets(&self) -> impl Iterator<Item = i32> + '_ {
        (0..self.kernel[0]).flat_map(move |ky| {
            (0..self.kernel[1]).map(move |kx| {
                (ky * self.dilation[0] * self.row_bytes + kx * self.dilation[1] * self.column_bytes)
                    as i32
            })
        })
    }

    /// The maxima of four lanes whose first taps start at `source`,
    /// `stride` elements apart. A window's first tap, then each larger one
    /// (`maxps`, which keeps the maximum so far on NaN); a window that met
    /// a NaN gives NaN, tracked by unordered compares two taps at a time.
    fn vector_max(&self, e: &mut Emitter<'_, '_, '_>, source: Value) -> Value {
        let taps: Vec<Value> = self
            .offsets()
            .map(|offset| load_strided(e, tile_input(), source, offset, self.stride, types::F32X4))
            .collect();
        let mut best = taps[0];
        for &tap in &taps[1..] {
            // `best < tap ? tap : best`, which Cranelift emits as `maxps`.
            let below = e.b.ins().fcmp(FloatCC::LessThan, best, tap);
            best = super::expr::select_lanes(e, below, tap, best);
        }
        let mut nan: Option<Value> = None;
        for pair in taps.chunks(2) {
            let unordered =
                e.b.ins()
                    .fcmp(FloatCC::Unordered, pair[0], pair[pair.len() - 1]);
            nan = Some(match nan {
                None => unordered,
                Some(nan) => e.b.ins().bor(nan, unordered),
            });
        }
        let nan = nan.expect("a pooling window has a tap");
        let quiet_nan = super::expr::fconst(e, types::F32X4, f64::NAN);
        super::expr::select_lanes(e, nan, quiet_nan, best)
    }

    /// The maximum of the one window whose first tap is at `source`, NaN if
    /// any tap is.
    fn scalar_max(&self, e: &mut Emitter<'_, '_, '_>, source: Value) -> Value {
        let mut best: Option<Value> = None;
        for offset in self.offsets() {
            let value = load_strided(e, tile_input(), source, offset, self.stride, types::F32);
            best = Some(match best {
                None => value,
                Some(best) => max_keeping_nan(e, best, value),
            });
        }
        best.expect("a pooling window has a tap")
    }
}

/// Whether anything reads a max pooling's indices (`outputs[1]`, if the
/// node has them): a later node, or the method's caller.
fn indices_read(e: &Emitter<'_, '_, '_>, outputs: &[ValueId]) -> bool {
    let graph = e.graph();
    outputs
        .get(1)
        .is_some_and(|&indices| !graph.readers(indices).is_empty() || graph.is_live_out(indices))
}

/// Images of `sizes` (rows, columns) with `channels` interleaved f32 a
/// column (1 for NCHW planes), to copy into scratch inside a border of
/// -inf: `padded` rows and columns, the image's first at `top_left`.
struct Bordered {
    images: i64,
    sizes: [i64; 2],
    padded: [i64; 2],
    top_left: [i64; 2],
    channels: i64,
}

impl Bordered {
    /// Fills the scratch with -inf, copies the images from `source` inside
    /// it and returns the scratch's address.
    fn copy(&self, e: &mut Emitter<'_, '_, '_>, source: Value) -> Result<Value, CodegenError> {
        let ([height, width], [padded_h, padded_w]) = (self.sizes, self.padded);
        let row = width * self.channels;
        let padded_row = padded_w * self.channels;
        let cells = self.images * padded_h * padded_row;
        let padded = e.scratch((cells * 4) as u64);
        let minus_infinity = e.b.ins().f32const(f32::NEG_INFINITY);
        fill(e, padded, cells, minus_infinity)?;
        let [top, left] = self.top_left;
        let first =
            e.b.ins()
                .iadd_imm_s(padded, (top * padded_row + left * self.channels) * 4);
        emit_copy(
            e,
            [self.images, height, row].map(Size::Const).to_vec(),
            f32_operand(first, [padded_h * padded_row, padded_row, 1]),
            f32_operand(source, [height * row, row, 1]),
        )?;
        Ok(padded)
    }
}

/// Max pooling of a channels-last input whose indices nothing reads (the
/// dim-order pass stores such a pooling's result channels-last when its
/// input is): for each output pixel, the window's taps a vector of four
/// channels at a time, the last four channels once more overlapping the
/// previous vector. The output is split at compile time into rectangles
/// whose windows meet the same taps inside the input (the interior, and
/// each border row and column, as for depthwise convolutions), and each
/// window reads only those taps: a tap in the padding (or past the input,
/// with `ceil_mode`) is -inf, which no maximum takes unless every tap is
/// one, and a window wholly outside the input is -inf. Threads share out
/// the output rows.
fn max_pool_channels_last(
    e: &mut Emitter<'_, '_, '_>,
    &MaxPool2d {
        input: input_value,
        kernel,
        stride,
        padding,
        dilation,
        ..
    }: &MaxPool2d,
    outputs: &[ValueId],
) -> Result<(), CodegenError> {
    let graph = e.graph();
    let indices_read = indices_read(e, outputs);
    let input = activation(e, input_value, "pooling input")?;
    let output = activation(e, outputs[0], "pooling output")?;
    if indices_read || !output.channels_last || graph.value(input_value).ty.dtype != DType::F32 {
        return Err(e.unsupported(
            "channels-last max pooling other than of f32 into channels-last, without indices",
        ));
    }
    let [batch, channels, height, width] = input.sizes;
    let [_, _, out_h, out_w] = output.sizes;
    let [kernel, stride, dilation, padding] =
        [kernel, stride, dilation, padding].map(|pair| pair.map(|v| v as i64));
    let [rows, columns] = [0, 1].map(|axis| {
        conv_nhwc::Axis {
            input: input.sizes[2 + axis],
            output: output.sizes[2 + axis],
            kernel: kernel[axis],
            stride: stride[axis],
            dilation: dilation[axis],
            padding: padding[axis],
        }
        .spans()
    });
    let (row_bytes, pixel_bytes) = (width * channels * 4, channels * 4);
    e.allow_parallel();
    let pixel_cost = (kernel[0] * kernel[1] * channels) as u64;
    let (lo, hi) = match e.parallel_range(out_h, pixel_cost * (batch * out_w) as u64) {
        Some(range) => range,
        None => (e.iconst(0), e.iconst(out_h)),
    };
    let images = [e.address(input_value), e.address(outputs[0])];
    e.counted_loop(Size::Const(batch), &images, |e, _, image| {
        for span in &rows {
            // The span's rows this call computes.
            let start = e.iconst(span.start);
            let start = e.b.ins().smax(start, lo);
            let end = e.iconst(span.start + span.count);
            let end = e.b.ins().smin(end, hi);
            let count = e.b.ins().isub(end, start);
            let zero = e.iconst(0);
            let count = e.b.ins().smax(count, zero);
            e.counted_loop(Size::Dyn(count), &[start], |e, _, row| {
                // The input row of the span's first tap inside.
                let first_tap = span.taps.start * dilation[0] - padding[0];
                let input_row = e.b.ins().imul_imm_s(row[0], stride[0] * row_bytes);
                let input_row = e.b.ins().iadd_imm_s(input_row, first_tap * row_bytes);
                let input_row = e.b.ins().iadd(image[0], input_row);
                let output_row = e.b.ins().imul_imm_s(row[0], out_w * pixel_bytes);
                let output_row = e.b.ins().iadd(image[1], output_row);
                for columns in &columns {
                    let first_tap = columns.taps.start * dilation[1] - padding[1];
                    let first_input = (columns.start * stride[1] + first_tap) * pixel_bytes;
                    let pixels = [
                        e.b.ins().iadd_imm_s(input_row, first_input),
                        e.b.ins()
                            .iadd_imm_s(output_row, columns.start * pixel_bytes),
                    ];
                    let window = PoolWindow {
                        kernel: [span.taps.clone(), columns.taps.clone()]
                            .map(|taps| taps.end - taps.start),
                        dilation,
                        row_bytes,
                        column_bytes: pixel_bytes,
                        stride: 1,
                    };
                    e.counted_loop(Size::Const(columns.count), &pixels, |e, _, pixel| {
                        channels_max(e, &window, channels, [pixel[0], pixel[1]])?;
                        Ok(vec![
                            e.b.ins().iadd_imm_s(pixel[0], stride[1] * pixel_bytes),
                            e.b.ins().iadd_imm_s(pixel[1], pixel_bytes),
                        ])
                    })?;
                }
                Ok(vec![e.b.ins().iadd_imm_s(row[0], 1)])
            })?;
        }
        Ok(vec![
            e.b.ins().iadd_imm_s(image[0], height * row_bytes),
            e.b.ins().iadd_imm_s(image[1], out_h * out_w * pixel_bytes),
        ])
    })?;
    Ok(())
}

/// Stores at `output` the maxima of one channels-last pixel's window,
/// whose first tap is at `input`: four channels a vector, the last four
/// once more overlapping the vector before when the channels are no
/// multiple of four; -inf where the window has no tap.
fn channels_max(
    e: &mut Emitter<'_, '_, '_>,
    window: &PoolWindow,
    channels: i64,
    [input, output]: [Value; 2],
) -> Result<(), CodegenError> {
    if window.kernel.contains(&0) {
        let minus_infinity = e.b.ins().f32const(f32::NEG_INFINITY);
        return fill(e, output, channels, minus_infinity);
    }
    // Moves the input and output pointers on by `bytes`.
    let advance = |e: &mut Emitter<'_, '_, '_>, q: &[Value], bytes: i64| {
        q.iter()
            .map(|&pointer| e.b.ins().iadd_imm_s(pointer, bytes))
            .collect()
    };
    let vectors = channels / 4;
    let after = e.counted_loop(Size::Const(vectors), &[input, output], |e, _, q| {
        let best = window.vector_max(e, q[0]);
        e.b.ins().store(flags(), best, q[1], 0);
        Ok(advance(e, q, 16))
    })?;
    let leftover = channels % 4;
    if leftover != 0 && vectors > 0 {
        let back = -4 * (4 - leftover);
        let taps = e.b.ins().iadd_imm_s(after[0], back);
        let best = window.vector_max(e, taps);
        let at = e.b.ins().iadd_imm_s(after[1], back);
        e.b.ins().store(flags(), best, at, 0);
    } else if leftover != 0 {
        e.counted_loop(Size::Const(leftover), &after, |e, _, q| {
            let best = window.scalar_max(e, q[0]);
            e.b.ins().store(flags(), best, q[1], 0);
            Ok(advance(e, q, 4))
        })?;
    }
    Ok(())
}

/// `value` where it is larger than `best` or NaN, else `best` (which stays
/// NaN once it is): max pooling's NaN propagation.
pub(super) fn max_keeping_nan(e: &mut Emitter<'_, '_, '_>, best: Value, value: Value) -> Value {
    let greater = e.b.ins().fcmp(FloatCC::GreaterThan, value, best);
    let nan = e.b.ins().fcmp(FloatCC::Unordered, value, value);
    let take = e.b.ins().bor(greater, nan);
    super::expr::select_lanes(e, take, value, best)
}

/// Max pooling into `outputs` (the maxima, and their indices when the node
/// has them).
pub(super) fn max_pool(
    e: &mut Emitter<'_, '_, '_>,
    op: &MaxPool2d,
    outputs: &[ValueId],
) -> Result<(), CodegenError> {
    let window = Window {
        kernel: op.kernel,
        stride: op.stride,
        padding: op.padding,
        dilation: op.dilation,
    };
    if conv_dynamic::is_dynamic(e, &[op.input, outputs[0]]) {
        if indices_read(e, outputs) {
            return Err(e.unsupported("max pooling indices over sizes known only at run time"));
        }
        return conv_dynamic::pooling(e, op.input, outputs[0], window, None);
    }
    if e.graph().value(op.input).ty.dim_order == CHANNELS_LAST {
        return max_pool_channels_last(e, op, outputs);
    }
    if max_pool_inside(e, op, outputs)? {
        return Ok(());
    }
    pooling(e, op.input, outputs, window, None)
}

pub(super) fn avg_pool(
    e: &mut Emitter<'_, '_, '_>,
    op: &AvgPool2d,
    output: ValueId,
) -> Result<(), CodegenError> {
    let window = Window {
        kernel: op.kernel,
        stride: op.stride,
        padding: op.padding,
        dilation: [1, 1],
    };
    let average = Some(op.count_include_pad);
    if conv_dynamic::is_dynamic(e, &[op.input, output]) {
        return conv_dynamic::pooling(e, op.input, output, window, average);
    }
    pooling(e, op.input, &[output], window, average)
}

/// The windows of a pooling.
#[derive(Clone, Copy)]
pub(super) struct Window {
    pub kernel: Pair,
    pub stride: Pair,
    pub padding: Pair,
    pub dilation: Pair,
}

/// Visits every pooling window position of every plane, giving the window's
/// input row base and top-left coordinates.
fn pooling(
    e: &mut Emitter<'_, '_, '_>,
    input_value: ValueId,
    outputs: &[ValueId],
    Window {
        kernel,
        stride,
        padding,
        dilation,
    }: Window,
    average: Option<bool>,
) -> Result<(), CodegenError> {
    let [batch, channels, height, width] = nchw(e, input_value, "pooling input")?;
    let [_, _, out_h, out_w] = nchw(e, outputs[0], "pooling output")?;
    let indices = outputs.get(1).copied();
    // Indices are flat positions in a plane, int64 as ATen writes them or int32
    // as a Vulkan graph declares them (when every position fits).
    let index_type = match indices.map(|indices| e.graph().value(indices).ty.dtype) {
        None | Some(DType::I64) => types::I64,
        Some(DType::I32) if height * width <= i64::from(i32::MAX) => types::I32,
        Some(_) => return Err(e.unsupported("max pooling indices other than int64 or int32")),
    };
    let index_bytes = i64::from(index_type.bytes());
    let planes = batch * channels;
    let input = e.address(input_value);
    let output = e.address(outputs[0]);
    let mut carried = vec![input, output];
    carried.extend(indices.map(|indices| e.address(indices)));
    e.counted_loop(Size::Const(planes), &carried, |e, _, plane| {
        let rows: Vec<Value> = plane[1..].to_vec();
        e.counted_loop(Size::Const(out_h), &rows, |e, oy, row| {
            e.counted_loop(Size::Const(out_w), row, |e, ox, column| {
                let iy0 = e.b.ins().imul_imm_s(oy, stride[0] as i64);
                let iy0 = e.b.ins().iadd_imm_s(iy0, -(padding[0] as i64));
                let ix0 = e.b.ins().imul_imm_s(ox, stride[1] as i64);
                let ix0 = e.b.ins().iadd_imm_s(ix0, -(padding[1] as i64));
                let (value, index) = window(
                    e,
                    plane[0],
                    [height, width],
                    kernel,
                    dilation,
                    padding,
                    iy0,
                    ix0,
                    average,
                )?;
                e.b.ins().store(flags(), value, column[0], 0);
                let mut next = vec![e.b.ins().iadd_imm_s(column[0], 4)];
                if let Some(&index_address) = column.get(1) {
                    let index = if index_type == types::I64 {
                        index
                    } else {
                        e.b.ins().ireduce(index_type, index)
                    };
                    e.b.ins().store(flags(), index, index_address, 0);
                    next.push(e.b.ins().iadd_imm_s(index_address, index_bytes));
                }
                Ok(next)
            })?;
            let mut next = vec![e.b.ins().iadd_imm_s(row[0], out_w * 4)];
            if let Some(&index_row) = row.get(1) {
                next.push(e.b.ins().iadd_imm_s(index_row, out_w * index_bytes));
            }
            Ok(next)
        })?;
        let mut next = vec![
            e.b.ins().iadd_imm_s(plane[0], height * width * 4),
            e.b.ins().iadd_imm_s(plane[1], out_h * out_w * 4),
        ];
        if let Some(&index_plane) = plane.get(2) {
            next.push(
                e.b.ins()
                    .iadd_imm_s(index_plane, out_h * out_w * index_bytes),
            );
        }
        Ok(next)
    })?;
    Ok(())
}

/// One window: the max (with its flat index in the plane) or the average.
#[allow(clippy::too_many_arguments)] // The geometry of one window.
fn window(
    e: &mut Emitter<'_, '_, '_>,
    plane: Value,
    [height, width]: [i64; 2],
    kernel: Pair,
    dilation: Pair,
    padding: Pair,
    iy0: Value,
    ix0: Value,
    average: Option<bool>,
) -> Result<(Value, Value), CodegenError> {
    let initial = match average {
        Some(_) => e.b.ins().f32const(0.0),
        None => e.b.ins().f32const(f32::NEG_INFINITY),
    };
    let no_index = e.iconst(-1);
    let zero = e.iconst(0);
    // Accumulator (sum or max), index of the max, elements seen.
    let mut carried = vec![initial, no_index, zero];
    for ky in 0..kernel[0] as i64 {
        for kx in 0..kernel[1] as i64 {
            let iy = e.b.ins().iadd_imm_s(iy0, ky * dilation[0] as i64);
            let ix = e.b.ins().iadd_imm_s(ix0, kx * dilation[1] as i64);
            let row_ok = e.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, iy, height);
            let column_ok = e.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, ix, width);
            let inside = e.b.ins().band(row_ok, column_ok);
            let load_block = e.b.create_block();
            let join = e.b.create_block();
            e.b.append_block_param(join, types::F32);
            e.b.append_block_param(join, types::I64);
            e.b.append_block_param(join, types::I64);
            let keep: Vec<BlockArg> = carried.iter().map(|&v| BlockArg::from(v)).collect();
            e.b.ins().brif(inside, load_block, &[], join, &keep);
            e.b.switch_to_block(load_block);
            let flat = e.b.ins().imul_imm_s(iy, width);
            let flat = e.b.ins().iadd(flat, ix);
            let offset = e.b.ins().imul_imm_s(flat, 4);
            let address = e.b.ins().iadd(plane, offset);
            let value = e.b.ins().load(types::F32, flags(), address, 0);
            let count = e.b.ins().iadd_imm_s(carried[2], 1);
            let updated = match average {
                Some(_) => vec![e.b.ins().fadd(carried[0], value), carried[1], count],
                None => {
                    // As PyTorch's CPU kernel: the first tap inside, then
                    // a larger value or any NaN (the last NaN's index wins;
                    // no number beats a NaN).
                    let greater = e.b.ins().fcmp(FloatCC::GreaterThan, value, carried[0]);
                    let is_nan = e.b.ins().fcmp(FloatCC::Unordered, value, value);
                    let first = e.b.ins().icmp_imm_s(IntCC::Equal, carried[1], -1);
                    let take = e.b.ins().bor(greater, is_nan);
                    let take = e.b.ins().bor(take, first);
                    vec![
                        e.b.ins().select(take, value, carried[0]),
                        e.b.ins().select(take, flat, carried[1]),
                        count,
                    ]
                }
            };
            let args: Vec<BlockArg> = updated.iter().map(|&v| BlockArg::from(v)).collect();
            e.b.ins().jump(join, &args);
            e.b.switch_to_block(join);
            carried = e.b.block_params(join).to_vec();
        }
    }
    let value = match average {
        Some(true) => {
            // Divide by the window clipped to the padded input.
            let pooled =
                |e: &mut Emitter<'_, '_, '_>, start: Value, size: i64, extent: i64, pad: i64| {
                    let end = e.b.ins().iadd_imm_s(start, size);
                    let limit = e.iconst(extent + pad);
                    let end = e.b.ins().smin(end, limit);
                    e.b.ins().isub(end, start)
                };
            let rows = pooled(e, iy0, kernel[0] as i64, height, padding[0] as i64);
            let columns = pooled(e, ix0, kernel[1] as i64, width, padding[1] as i64);
            let cells = e.b.ins().imul(rows, columns);
            let divisor = e.b.ins().fcvt_from_sint(types::F32, cells);
            e.b.ins().fdiv(carried[0], divisor)
        }
        Some(false) => {
            let divisor = e.b.ins().fcvt_from_sint(types::F32, carried[2]);
            e.b.ins().fdiv(carried[0], divisor)
        }
        None => carried[0],
    };
    Ok((value, carried[1]))
}
