//! 2-D convolutions whose result is channels-last (NHWC), reading an NCHW
//! or channels-last input and a filter stored as HWIO (`FILTER_HWIO`).
//!
//! In NHWC the channels of a pixel are contiguous, and so are a filter
//! tap's output channels in HWIO, so each kind of convolution is a loop
//! over pixels with the channels innermost:
//! - pointwise (1x1, stride 1, no padding, one group): one GEMM per image,
//!   `[H*W, Ci] @ [Ci, Co]`, the bias along the columns;
//! - depthwise (a group per channel): per pixel, vectors of channels times
//!   the filter's vectors for each tap. The output is split at compile time
//!   into rectangles whose windows meet the same taps inside the image (the
//!   interior, and each border row and column), so no pixel tests bounds
//!   and nothing is padded; with AVX-512 (or AVX2, for channels in
//!   eights), each output row of a span is one call of the direct
//!   convolution microkernel, given the span's taps as a table;
//! - of few taps a pixel (`DIRECT_TAPS`: a network's first, 3x3 over RGB):
//!   the same, from the input as it is stored, each tap's element of each
//!   input channel broadcast to a vector of output channels;
//! - others: per group and block of output rows, im2col into scratch (one
//!   row per output pixel, one column per tap and input channel, zeros
//!   where a window leaves the image) times the group's block of the
//!   filter; a block's columns stay in the L2 cache.
//!
//! Each writes its output only through the GEMMs' row blocks or the direct
//! output rows, which threads share out (everything else goes to
//! scratch memory, each thread's own).

use std::ops::Range;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Type, Value, types,
};
use ptec_ir::{DType, ValueId};

use super::conv::{Activation, f32_operand, fill, tile_input};
use super::conv_epilogue::BlockEpilogue;
use super::linalg::{
    Epilogue, Float, Gemm, Matrix, Panels, ROWS_PER_PART, emit_gemm, part_of_this_call,
};
use super::map::{Operand, emit_copy};
use crate::emit::{Emitter, Size, flags, scalar_type};
use crate::error::CodegenError;
use crate::microkernel::{Width, WindowReads};

use super::quantized::{IntegerGemm, Units};

/// The most taps (input channels times kernel positions) of a pixel of a
/// convolution of one group computed directly, each tap's element broadcast
/// to the output channels, rather than through im2col and a GEMM of as many
/// columns as taps: an image's first convolution, 3x3 over RGB (27 taps),
/// spent most of its time unfolding them. ResNet's 7x7 over RGB (147) is as
/// fast either way in f32, and 1.5x slower directly than the int8 GEMM.
const DIRECT_TAPS: i64 = 36;

/// The geometry of a convolution with a channels-last result.
#[derive(Clone, Copy, Debug)]
pub(super) struct ChannelsLast {
    pub input: Activation,
    /// The filter's sizes `[O, I, H, W]` (stored HWIO).
    pub filter: [i64; 4],
    pub output: Activation,
    pub stride: [i64; 2],
    pub padding: [i64; 2],
    pub dilation: [i64; 2],
    pub groups: i64,
}

impl ChannelsLast {
    fn out_channels(&self) -> i64 {
        self.filter[0]
    }

    fn group_channels(&self) -> i64 {
        self.filter[1]
    }

    fn kernel(&self) -> [i64; 2] {
        [self.filter[2], self.filter[3]]
    }

    /// Output pixels of one image.
    fn pixels(&self) -> i64 {
        self.output.sizes[2] * self.output.sizes[3]
    }
}

/// Emits the convolution of `[input, weight, output]`. With an `integer`
/// plan, pointwise convolutions of a channels-last input and the im2col
/// ones go through the integer GEMM; the f32 GEMMs of one group read a
/// constant filter prepacked into the microkernels' panels.
pub(super) fn convolution(
    e: &mut Emitter<'_, '_, '_>,
    conv: &ChannelsLast,
    [input, weight, output]: [ValueId; 3],
    bias: Option<Value>,
    (epilogue, blocks): (Epilogue, Option<&BlockEpilogue>),
    integer: Option<&IntegerGemm>,
) -> Result<(), CodegenError> {
    let channels = conv.input.sizes[1];
    let pointwise = conv.kernel() == [1, 1]
        && conv.stride == [1, 1]
        && conv.padding == [0, 0]
        && conv.groups == 1;
    let depthwise =
        conv.groups == channels && conv.group_channels() == 1 && conv.out_channels() == channels;
    let [kernel_h, kernel_w] = conv.kernel();
    let few_taps = conv.groups == 1
        && conv.group_channels() * kernel_h * kernel_w <= DIRECT_TAPS
        && !pointwise;
    // How a convolution computed directly reads its windows (with an
    // integer plan, only where f32 sums give its bits).
    let direct_reads = match () {
        _ if depthwise => Some(WindowReads::Channels),
        _ if few_taps && integer.is_none_or(IntegerGemm::f32_sums_exact) => {
            Some(WindowReads::Broadcast)
        }
        _ => None,
    };
    e.allow_parallel();
    let [input, output] = [input, output].map(|value| e.address(value));
    let stored = |e: &mut Emitter<'_, '_, '_>| e.address(weight);
    match (integer, direct_reads) {
        (Some(plan), _) if pointwise && conv.input.channels_last => {
            let pointers = [input, stored(e), output];
            pointwise_integer(e, conv, plan, pointers, bias, (epilogue, blocks))
        }
        (_, Some(reads)) => {
            let pointers = [input, stored(e), output];
            direct(e, conv, reads, pointers, bias, (epilogue, blocks))
        }
        (_, None) => {
            let packed = match (integer, conv.groups) {
                (None, 1) => {
                    let k = kernel_h * kernel_w * conv.group_channels();
                    let n = conv.out_channels();
                    Panels::pack(e, weight, [k, n], [n, 1])
                }
                _ => None,
            };
            let filter = match packed {
                Some(panels) => GemmFilter::Packed(panels),
                None => GemmFilter::Stored(stored(e)),
            };
            match pointwise {
                true => pointwise_gemm(e, conv, [input, output], filter, bias, (epilogue, blocks)),
                false => im2col_gemm(
                    e,
                    conv,
                    [input, output],
                    filter,
                    bias,
                    (epilogue, blocks),
                    integer,
                ),
            }
        }
    }
}

/// The filter as the f32 GEMMs read it: the stored HWIO filter, each
/// group's `[K, group outputs]` block of it, or (one group) prepacked.
#[derive(Clone, Copy)]
enum GemmFilter {
    Stored(Value),
    Packed(Panels),
}

impl GemmFilter {
    /// The stored filter's address, or (packed) any pointer: a pointer to
    /// carry through the loop over groups.
    fn pointer(self) -> Value {
        match self {
            GemmFilter::Stored(pointer) => pointer,
            GemmFilter::Packed(panels) => panels.base,
        }
    }
}

/// Loops over the images of the batch, carrying the input and output
/// pointers of each.
fn per_image(
    e: &mut Emitter<'_, '_, '_>,
    conv: &ChannelsLast,
    [input, output]: [Value; 2],
    body: &mut dyn FnMut(&mut Emitter<'_, '_, '_>, Value, Value) -> Result<(), CodegenError>,
) -> Result<(), CodegenError> {
    let (input_step, output_step) = (conv.input.strides[0] * 4, conv.output.strides[0] * 4);
    e.counted_loop(
        Size::Const(conv.input.sizes[0]),
        &[input, output],
        |e, _, p| {
            body(e, p[0], p[1])?;
            Ok(vec![
                e.b.ins().iadd_imm_s(p[0], input_step),
                e.b.ins().iadd_imm_s(p[1], output_step),
            ])
        },
    )?;
    Ok(())
}

/// Copies the rows `[top, bottom)` of one image of `conv`'s NCHW input,
/// at `image`, channels-last into `scratch` (each row where the whole
/// image's copy has it), and returns `scratch`.
fn image_channels_last(
    e: &mut Emitter<'_, '_, '_>,
    conv: &ChannelsLast,
    image: Value,
    scratch: Value,
    [top, bottom]: [Value; 2],
) -> Result<Value, CodegenError> {
    let [_, channels, _, width] = conv.input.sizes;
    let [_, c, h, w] = conv.input.strides;
    let rows = e.b.ins().isub(bottom, top);
    let to = e.b.ins().imul_imm_s(top, width * channels * 4);
    let to = e.b.ins().iadd(scratch, to);
    let from = e.b.ins().imul_imm_s(top, h * 4);
    let from = e.b.ins().iadd(image, from);
    emit_copy(
        e,
        vec![Size::Const(channels), Size::Dyn(rows), Size::Const(width)],
        f32_operand(to, [1, width * channels, channels]),
        f32_operand(from, [c, h, w]),
    )?;
    Ok(scratch)
}

/// A contiguous f32 matrix of rows `row` elements apart, or, with `row`
/// 0, a row broadcast to every row.
fn rows(base: Value, row: i64) -> Matrix {
    Matrix {
        base,
        row: Size::Const(row * 4),
        col: Size::Const(4),
    }
}

/// `output [pixels, n] = a [pixels, k] @ filter [k, n]` plus the bias along
/// the columns, through the epilogue; a stored filter's rows, and the
/// output's, are the output's channels apart. `filter` is the group's.
fn filter_gemm(
    conv: &ChannelsLast,
    a: Matrix,
    (m, [k, n]): (Size, [i64; 2]),
    filter: GemmFilter,
    output: Value,
    bias: Option<Value>,
    epilogue: Epilogue,
) -> Gemm {
    let out_channels = conv.out_channels();
    let (b, b_panels) = match filter {
        GemmFilter::Stored(pointer) => (rows(pointer, out_channels), None),
        GemmFilter::Packed(panels) => (panels.tail, Some(panels)),
    };
    Gemm {
        float: Float::F32,
        m,
        n: Size::Const(n),
        k: Size::Const(k),
        a,
        b,
        c: rows(output, out_channels),
        bias: bias.map(|base| rows(base, 0)),
        alpha: 1.0,
        beta: 1.0,
        epilogue,
        b_panels,
    }
}

/// A pointwise convolution: per image, the pixels (rows) by their input
/// channels times the filter. A channels-last input is read in place; an
/// NCHW one, whose rows are not contiguous (which the microkernels need),
/// is first copied into scratch as channels-last (a pass over the input,
/// against the GEMM's output channels' worth of work on each element).
/// With epilogue steps, the GEMM goes by chunks of rows, each given the
/// steps while it is in the cache.
fn pointwise_gemm(
    e: &mut Emitter<'_, '_, '_>,
    conv: &ChannelsLast,
    [input, output]: [Value; 2],
    filter: GemmFilter,
    bias: Option<Value>,
    (epilogue, blocks): (Epilogue, Option<&BlockEpilogue>),
) -> Result<(), CodegenError> {
    let [_, channel_stride, _, pixel_stride] = conv.input.strides;
    let [pixels, channels] = [conv.pixels(), conv.input.sizes[1]];
    let sizes = [channels, conv.out_channels()];
    let packed = (!conv.input.channels_last).then(|| e.scratch((pixels * channels * 4) as u64));
    per_image(e, conv, [input, output], &mut |e, image, out| {
        let a = match packed {
            Some(scratch) => {
                emit_copy(
                    e,
                    [1, pixels, channels].map(Size::Const).to_vec(),
                    f32_operand(scratch, [0, channels, 1]),
                    f32_operand(image, [0, pixel_stride, channel_stride]),
                )?;
                rows(scratch, channels)
            }
            // Pixels follow each other `strides[3]` apart.
            None => Matrix {
                base: image,
                row: Size::Const(pixel_stride * 4),
                col: Size::Const(channel_stride * 4),
            },
        };
        let m = Size::Const(pixels);
        let chunk = chunk_rows(conv.out_channels());
        let chunks = (pixels + chunk - 1) / chunk;
        let blocks = match blocks {
            Some(blocks) if chunks > 1 => blocks,
            // Threads share out the GEMM, each applying the steps to its part.
            steps => {
                let gemm = filter_gemm(conv, a, (m, sizes), filter, out, bias, epilogue);
                let first_channel = e.iconst(0);
                return gemm_then_steps(e, &gemm, steps, first_channel, true);
            }
        };
        let cost = (chunk * channels * conv.out_channels()) as u64;
        let (first, count) = match e.parallel_range(chunks, cost) {
            Some((lo, hi)) => (lo, Size::Dyn(e.b.ins().isub(hi, lo))),
            None => (e.iconst(0), Size::Const(chunks)),
        };
        e.counted_loop(count, &[], |e, index, _| {
            let start = e.b.ins().iadd(first, index);
            let start = e.b.ins().imul_imm_s(start, chunk);
            let total = e.iconst(pixels);
            let left = e.b.ins().isub(total, start);
            let whole = e.iconst(chunk);
            let short = e.b.ins().icmp(IntCC::SignedLessThan, left, whole);
            let m = Size::Dyn(e.b.ins().select(short, left, whole));
            let a_offset = e.mul(Size::Dyn(start), a.row);
            let a = Matrix {
                base: e.add_size(a.base, a_offset),
                ..a
            };
            let c_offset = e.b.ins().imul_imm_s(start, conv.out_channels() * 4);
            let c = e.b.ins().iadd(out, c_offset);
            let gemm = filter_gemm(conv, a, (m, sizes), filter, c, bias, epilogue);
            e.whole(|e| emit_gemm(e, &gemm))?;
            blocks.apply(e, c, None, m, Size::Const(conv.out_channels()))?;
            Ok(Vec::new())
        })?;
        Ok(())
    })
}

/// Emits `gemm`, then the epilogue `steps` (if any) over what it computed;
/// C's first column is output channel `first_channel`. With `split`,
/// threads share out the GEMM (by rows or columns), each applying the steps
/// to its own part.
fn gemm_then_steps(
    e: &mut Emitter<'_, '_, '_>,
    gemm: &Gemm,
    steps: Option<&BlockEpilogue>,
    first_channel: Value,
    split: bool,
) -> Result<(), CodegenError> {
    let (gemm, first_column) = match split {
        true => {
            let part = part_of_this_call(e, gemm);
            (part.gemm, part.first_column)
        }
        false => (*gemm, e.iconst(0)),
    };
    e.whole(|e| emit_gemm(e, &gemm))?;
    match steps {
        Some(steps) => {
            let channel = e.b.ins().iadd(first_channel, first_column);
            steps.apply(e, gemm.c.base, Some(channel), gemm.m, gemm.n)
        }
        None => Ok(()),
    }
}

/// Rows of a GEMM chunk whose epilogue steps follow it: about 64 KiB of
/// output (the L2 cache keeps it between the GEMM and the steps), in
/// multiples of the rows threads share out, so each row is computed by the
/// tile it has without chunks.
fn chunk_rows(columns: i64) -> i64 {
    const CHUNK_BYTES: i64 = 64 << 10;
    let rows = CHUNK_BYTES / (columns * 4);
    (rows / ROWS_PER_PART).max(1) * ROWS_PER_PART
}

/// A pointwise convolution of a channels-last input through the integer
/// GEMM, per image.
fn pointwise_integer(
    e: &mut Emitter<'_, '_, '_>,
    conv: &ChannelsLast,
    plan: &IntegerGemm,
    [input, filter, output]: [Value; 3],
    bias: Option<Value>,
    (epilogue, blocks): (Epilogue, Option<&BlockEpilogue>),
) -> Result<(), CodegenError> {
    let pixel_stride = conv.input.strides[3] * 4;
    let prepared = plan.prepare(e, epilogue);
    let b = rows(filter, conv.out_channels());
    per_image(e, conv, [input, output], &mut |e, image, out| {
        let shape = [pixel_stride, conv.pixels()];
        let epilogues = (epilogue, blocks);
        plan.rows_in_blocks(e, prepared, [image, out], shape, b, bias, epilogues)
    })
}

/// The geometry of a convolution along one axis: input and output sizes,
/// the kernel's size, stride, dilation and padding.
#[derive(Clone, Copy, Debug)]
pub(super) struct Axis {
    pub input: i64,
    pub output: i64,
    pub kernel: i64,
    pub stride: i64,
    pub dilation: i64,
    pub padding: i64,
}

impl Axis {
    fn of(conv: &ChannelsLast, axis: usize) -> Axis {
        Axis {
            input: conv.input.sizes[2 + axis],
            output: conv.output.sizes[2 + axis],
            kernel: conv.filter[2 + axis],
            stride: conv.stride[axis],
            dilation: conv.dilation[axis],
            padding: conv.padding[axis],
        }
    }

    /// The input position tap `tap` of output `index` reads.
    fn position(&self, index: i64, tap: i64) -> i64 {
        index * self.stride + tap * self.dilation - self.padding
    }

    fn inside(&self, index: i64, tap: i64) -> bool {
        (0..self.input).contains(&self.position(index, tap))
    }

    /// The outputs whose tap `tap` lies inside the input (a range, as
    /// positions grow with the output).
    fn outputs_meeting(&self, tap: i64) -> Range<i64> {
        let start = (0..self.output)
            .find(|&index| self.inside(index, tap))
            .unwrap_or(self.output);
        let end = (start..self.output)
            .find(|&index| !self.inside(index, tap))
            .unwrap_or(self.output);
        start..end
    }

    /// The taps of output `index` that lie inside the input.
    fn taps_inside(&self, index: i64) -> Range<i64> {
        let start = (0..self.kernel)
            .find(|&tap| self.inside(index, tap))
            .unwrap_or(self.kernel);
        let end = (start..self.kernel)
            .find(|&tap| !self.inside(index, tap))
            .unwrap_or(self.kernel);
        start..end
    }

    /// The outputs split into runs that read the same taps inside the
    /// input: the interior, and each output near a border.
    pub(super) fn spans(&self) -> Vec<Span> {
        let mut spans: Vec<Span> = Vec::new();
        for index in 0..self.output {
            let taps = self.taps_inside(index);
            match spans.last_mut() {
                Some(last) if last.taps == taps => last.count += 1,
                _ => spans.push(Span {
                    start: index,
                    count: 1,
                    taps,
                }),
            }
        }
        spans
    }
}

/// The outputs `[start, start + count)` along one axis, whose windows meet
/// the input at the same taps.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Span {
    pub start: i64,
    pub count: i64,
    pub taps: Range<i64>,
}

/// A convolution computed directly, pixel by pixel: a depthwise one from a
/// channels-last input (copied into scratch as one first when it is NCHW),
/// a vector of channels of each tap at a time; or one of few taps a pixel
/// (a network's first, over an image's three channels) from its input as
/// it is stored, each tap's element of each input channel broadcast to
/// every output channel.
fn direct(
    e: &mut Emitter<'_, '_, '_>,
    conv: &ChannelsLast,
    reads: WindowReads,
    [input, filter, output]: [Value; 3],
    bias: Option<Value>,
    (epilogue, blocks): (Epilogue, Option<&BlockEpilogue>),
) -> Result<(), CodegenError> {
    let [_, channels, _, width] = conv.input.sizes;
    let out_channels = conv.out_channels();
    let out_w = conv.output.sizes[3];
    let [kernel_h, kernel_w] = conv.kernel();
    let (row_spans, column_spans) = (Axis::of(conv, 0).spans(), Axis::of(conv, 1).spans());
    let packed = (reads == WindowReads::Channels && !conv.input.channels_last)
        .then(|| e.scratch((conv.input.strides[0] * 4) as u64));
    // The window's element strides: channel, row, column.
    let [_, channel_stride, row_stride, column_stride] = match packed {
        Some(_) => [0, 1, width * channels, channels],
        None => conv.input.strides,
    };
    // Threads share out the output rows.
    let out_h = conv.output.sizes[2];
    let row_cost = (out_w * out_channels * kernel_h * kernel_w * conv.group_channels()) as u64;
    let range = e.parallel_range(out_h, row_cost);
    let (input_row, output_row) = (conv.stride[0] * row_stride * 4, out_w * out_channels * 4);
    let (pixel_step, channel_bytes) = (conv.stride[1] * column_stride * 4, out_channels * 4);
    // AVX2's kernel takes whole registers of eight channels.
    let kernel = match (e.cx.microkernels.direct, epilogue.residual) {
        (Some((Width::Avx512, kernels)), None) => Some(kernels),
        (Some((Width::Avx2, kernels)), None) if out_channels % 8 == 0 => Some(kernels),
        (Some(_), _) | (None, _) => None,
    };
    let call = kernel.map(|[channels, broadcast]| {
        let kernel = match reads {
            WindowReads::Channels => channels,
            WindowReads::Broadcast => broadcast,
        };
        DirectCall::prepare(e, kernel, epilogue, [pixel_step, channel_bytes])
    });
    per_image(e, conv, [input, output], &mut |e, image, out| {
        let source = match packed {
            Some(scratch) => {
                let rows = [e.iconst(0), e.iconst(conv.input.sizes[2])];
                image_channels_last(e, conv, image, scratch, rows)?
            }
            None => image,
        };
        for rows in &row_spans {
            // The span's rows in this call's range: how many, and how far
            // past the span's first.
            let (count, skipped) = match range {
                Some((lo, hi)) => {
                    let start = e.iconst(rows.start);
                    let end = e.iconst(rows.start + rows.count);
                    let after = e.b.ins().icmp(IntCC::SignedGreaterThan, lo, start);
                    let from = e.b.ins().select(after, lo, start);
                    let before = e.b.ins().icmp(IntCC::SignedLessThan, hi, end);
                    let to = e.b.ins().select(before, hi, end);
                    let count = e.b.ins().isub(to, from);
                    (
                        Size::Dyn(count),
                        Some(e.b.ins().iadd_imm_s(from, -rows.start)),
                    )
                }
                None => (Size::Const(rows.count), None),
            };
            // The input row where the windows of the span's first output
            // row start (maybe above the image: only taps inside are read),
            // and that output row.
            let origin = (rows.start * conv.stride[0] - conv.padding[0]) * row_stride;
            let mut window = e.b.ins().iadd_imm_s(source, origin * 4);
            let mut first = e.b.ins().iadd_imm_s(out, rows.start * output_row);
            if let Some(skipped) = skipped {
                let input_rows = e.b.ins().imul_imm_s(skipped, input_row);
                window = e.b.ins().iadd(window, input_rows);
                let output_rows = e.b.ins().imul_imm_s(skipped, output_row);
                first = e.b.ins().iadd(first, output_rows);
            }
            let spans: Vec<(DirectTaps, Option<(Value, i64)>)> = column_spans
                .iter()
                .map(|columns| {
                    let taps = DirectTaps::new(
                        conv,
                        [rows.taps.clone(), columns.taps.clone()],
                        [channel_stride, row_stride, column_stride],
                        reads,
                        match packed {
                            Some(_) => flags(),
                            None => tile_input(),
                        },
                    );
                    let table = call.as_ref().map(|call| call.table(e, &taps));
                    (taps, table)
                })
                .collect();
            e.counted_loop(count, &[window, first], |e, _, row| {
                for (columns, (taps, table)) in column_spans.iter().zip(&spans) {
                    let column = columns.start * conv.stride[1] - conv.padding[1];
                    let window = e.b.ins().iadd_imm_s(row[0], column * column_stride * 4);
                    let first = e.b.ins().iadd_imm_s(row[1], columns.start * channel_bytes);
                    match (&call, table) {
                        (Some(call), Some(table)) => {
                            call.row(e, [window, filter, first], bias, *table, columns.count)
                        }
                        _ => {
                            let pixels = &[window, first];
                            e.counted_loop(Size::Const(columns.count), pixels, |e, _, pixel| {
                                direct_pixel(
                                    e,
                                    taps,
                                    [pixel[0], filter, pixel[1]],
                                    bias,
                                    epilogue,
                                )?;
                                Ok(vec![
                                    e.b.ins().iadd_imm_s(pixel[0], pixel_step),
                                    e.b.ins().iadd_imm_s(pixel[1], channel_bytes),
                                ])
                            })?;
                        }
                    }
                }
                // The row's steps, while it is in the cache.
                if let Some(blocks) = blocks {
                    blocks.apply(
                        e,
                        row[1],
                        None,
                        Size::Const(out_w),
                        Size::Const(out_channels),
                    )?;
                }
                Ok(vec![
                    e.b.ins().iadd_imm_s(row[0], input_row),
                    e.b.ins().iadd_imm_s(row[1], output_row),
                ])
            })?;
        }
        Ok(())
    })
}

/// The taps a span of direct outputs reads: each tap's element's byte
/// offset from the window's start and its filter row's from the filter's,
/// in the order the sums add them (kernel rows, columns, then input
/// channels: one for a depthwise convolution).
struct DirectTaps {
    offsets: Vec<[i64; 2]>,
    channels: i64,
    reads: WindowReads,
    /// How the window is read: as the node's input, or (a packed copy in
    /// scratch, rewritten for every image) with ordinary loads, which stay
    /// below the copy.
    window: MemFlagsData,
}

impl DirectTaps {
    /// The taps of kernel rows and columns `[rows, columns]` of `conv`,
    /// whose input's element strides are `[channel, row, column]`.
    fn new(
        conv: &ChannelsLast,
        [rows, columns]: [Range<i64>; 2],
        [channel, row, column]: [i64; 3],
        reads: WindowReads,
        window: MemFlagsData,
    ) -> DirectTaps {
        let [_, in_channels, _, kernel_w] = conv.filter;
        let channels = conv.out_channels();
        let mut offsets = Vec::new();
        for ky in rows {
            for kx in columns.clone() {
                let pixel = ky * conv.dilation[0] * row + kx * conv.dilation[1] * column;
                let tap = ky * kernel_w + kx;
                for c in 0..in_channels {
                    let filter_row = (tap * in_channels + c) * channels;
                    offsets.push([(pixel + c * channel) * 4, filter_row * 4]);
                }
            }
        }
        DirectTaps {
            offsets,
            channels,
            reads,
            window,
        }
    }
}

/// Calls of the direct convolution microkernel (see
/// `microkernel::direct`) for one convolution: the kernel, the clamp bounds,
/// and the steps between pixels in the window and in the output.
struct DirectCall {
    kernel: cranelift_module::FuncId,
    bounds: Value,
    pixel_step: i64,
    channel_bytes: i64,
}

impl DirectCall {
    fn prepare(
        e: &mut Emitter<'_, '_, '_>,
        kernel: cranelift_module::FuncId,
        epilogue: Epilogue,
        [pixel_step, channel_bytes]: [i64; 2],
    ) -> DirectCall {
        let slot =
            e.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 2));
        let low = epilogue.min.unwrap_or(f32::NEG_INFINITY);
        let high = epilogue.max.unwrap_or(f32::INFINITY);
        for (offset, bound) in [(0, low), (4, high)] {
            let value = e.b.ins().f32const(bound);
            e.b.ins().stack_store(crate::emit::PTR, value, slot, offset);
        }
        DirectCall {
            kernel,
            bounds: e.b.ins().stack_addr(crate::emit::PTR, slot, 0),
            pixel_step,
            channel_bytes,
        }
    }

    /// The table of `taps` on the stack, and how many.
    fn table(&self, e: &mut Emitter<'_, '_, '_>, taps: &DirectTaps) -> (Value, i64) {
        let bytes = (taps.offsets.len() * 16).max(8) as u32;
        let slot =
            e.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 3));
        for (index, &entry) in taps.offsets.iter().flatten().enumerate() {
            let value = e.iconst(entry);
            e.b.ins()
                .stack_store(crate::emit::PTR, value, slot, 8 * index as i32);
        }
        let address = e.b.ins().stack_addr(crate::emit::PTR, slot, 0);
        (address, taps.offsets.len() as i64)
    }

    /// `pixels` output pixels along a row, whose windows read the taps of
    /// `table`.
    fn row(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        [window, filter, output]: [Value; 3],
        bias: Option<Value>,
        (table, taps): (Value, i64),
        pixels: i64,
    ) {
        let bias = bias.unwrap_or_else(|| e.iconst(0));
        let arguments = [
            window,
            filter,
            output,
            bias,
            table,
            e.iconst(taps),
            e.iconst(pixels),
            e.iconst(self.pixel_step),
            e.iconst(self.channel_bytes),
            self.bounds,
        ];
        let function = e.import_function(self.kernel);
        e.b.ins().call(function, &arguments);
    }
}

/// Every output channel of one pixel: blocks of 16 channels (four
/// independent chains of multiply-adds), then 8, 4 and single channels.
fn direct_pixel(
    e: &mut Emitter<'_, '_, '_>,
    taps: &DirectTaps,
    [window, filter, output]: [Value; 3],
    bias: Option<Value>,
    epilogue: Epilogue,
) -> Result<(), CodegenError> {
    let mut carried = vec![window, filter, output];
    carried.extend(bias);
    let mut left = taps.channels;
    for lanes in [16, 8, 4, 1] {
        let count = left / lanes;
        left %= lanes;
        carried = e.counted_loop(Size::Const(count), &carried, |e, _, p| {
            direct_block(e, taps, lanes, p, epilogue)?;
            Ok(p.iter()
                .enumerate()
                .map(|(index, &pointer)| match (index, taps.reads) {
                    // A broadcast tap's element is every channel's.
                    (0, WindowReads::Broadcast) => pointer,
                    _ => e.b.ins().iadd_imm_s(pointer, lanes * 4),
                })
                .collect())
        })?;
    }
    Ok(())
}

/// `lanes` channels of one pixel: `p` holds the window's, the filter's, the
/// output's and (when there is one) the bias's pointers at the first.
fn direct_block(
    e: &mut Emitter<'_, '_, '_>,
    taps: &DirectTaps,
    lanes: i64,
    p: &[Value],
    epilogue: Epilogue,
) -> Result<(), CodegenError> {
    let (lane, vectors): (Type, i64) = match lanes {
        1 => (types::F32, 1),
        _ => (types::F32X4, lanes / 4),
    };
    let mut sums: Vec<Value> = (0..vectors)
        .map(|t| match p.get(3) {
            Some(&bias) => e.b.ins().load(lane, tile_input(), bias, (t * 16) as i32),
            None => super::expr::fconst(e, lane, 0.0),
        })
        .collect();
    for &[element, filter_row] in &taps.offsets {
        let window = e.b.ins().iadd_imm_s(p[0], element);
        let filter = e.b.ins().iadd_imm_s(p[1], filter_row);
        let broadcast = match taps.reads {
            WindowReads::Channels => None,
            WindowReads::Broadcast => {
                let x = e.b.ins().load(types::F32, taps.window, window, 0);
                Some(match lane {
                    types::F32 => x,
                    _ => e.b.ins().splat(lane, x),
                })
            }
        };
        for (t, sum) in sums.iter_mut().enumerate() {
            let offset = t as i32 * 16;
            let x = match broadcast {
                Some(x) => x,
                None => e.b.ins().load(lane, taps.window, window, offset),
            };
            let w = e.b.ins().load(lane, tile_input(), filter, offset);
            *sum = e.multiply_add(x, w, *sum);
        }
    }
    for (t, sum) in sums.into_iter().enumerate() {
        let offset = t as i32 * 16;
        let value = epilogue.apply(e, sum, p[2], offset);
        e.b.ins().store(flags(), value, p[2], offset);
    }
    Ok(())
}

/// Any other convolution: per image, group and block of output rows, the
/// windows unfolded into scratch (im2col), times the group's block of the
/// filter. A block's columns stay within the caches while the GEMM reads
/// them (the whole image's would be several megabytes for a network's
/// first convolution); threads share out the blocks.
///
/// With an integer plan (one group), the input rows a call's blocks read
/// are first converted once into A's elements (a byte or an i16 each,
/// `v - low`), and the windows unfolded from those straight into A's
/// rows: a quarter (or half) of the f32 columns' bytes, and no pass
/// converting them. A block whose input rows hold a NaN is unfolded in
/// f32 and computed by the f32 GEMM instead.
#[allow(clippy::too_many_arguments)] // The operands of one convolution.
fn im2col_gemm(
    e: &mut Emitter<'_, '_, '_>,
    conv: &ChannelsLast,
    [input, output]: [Value; 2],
    filter: GemmFilter,
    bias: Option<Value>,
    (epilogue, steps): (Epilogue, Option<&BlockEpilogue>),
    integer: Option<&IntegerGemm>,
) -> Result<(), CodegenError> {
    let [out_h, out_w] = [conv.output.sizes[2], conv.output.sizes[3]];
    let [kernel_h, kernel_w] = conv.kernel();
    let group_channels = conv.group_channels();
    let group_outputs = conv.out_channels() / conv.groups;
    let taps = kernel_h * kernel_w * group_channels;
    let block_rows = im2col_block_rows(out_h, out_w, taps);
    let blocks = (out_h + block_rows - 1) / block_rows;
    let block_pixels = block_rows * out_w;
    // The last block is shorter when the blocks do not divide the height.
    let even = out_h % block_rows == 0;
    let [_, channels, input_h, width] = conv.input.sizes;
    // Scratch: the columns in f32; with an integer plan, A's rows, the
    // input rows converted to A's elements (with room for the conversion's
    // last 16-byte store) and each input row's NaN flag (an i32); for an
    // NCHW input, the image copied channels-last, so that a tap's
    // channels, and with a dilation of 1 the taps of a kernel row too, are
    // contiguous runs to copy.
    let columns_bytes = ((block_pixels * taps * 4) as u64).next_multiple_of(64);
    let integer_bytes = integer.map_or([0; 3], |plan| {
        [
            plan.a_bytes(block_pixels),
            (input_h * width * channels * plan.element().size() as i64 + 16) as u64,
            input_h as u64 * 4,
        ]
        .map(|bytes| bytes.next_multiple_of(64))
    });
    let image_bytes = match conv.input.channels_last {
        true => 0,
        false => conv.input.strides[0] as u64 * 4,
    };
    let regions = [
        columns_bytes,
        integer_bytes[0],
        integer_bytes[1],
        integer_bytes[2],
        image_bytes,
    ];
    let scratch = e.scratch(regions.iter().sum());
    let mut offset = 0;
    let [columns, packed, converted, nan_flags, image_copy] = regions.map(|bytes| {
        let start = offset;
        offset += bytes;
        e.b.ins().iadd_imm_s(scratch, start as i64)
    });
    let float_cells = Cells {
        columns,
        dtype: DType::F32,
        pixel: taps,
        outside: 0,
    };
    let integer = integer.map(|plan| {
        let cells = Cells {
            columns: packed,
            dtype: plan.element(),
            pixel: plan.a_row() / plan.element().size() as i64,
            outside: plan.outside_element(),
        };
        (plan, plan.prepare(e, epilogue), cells)
    });
    let axes = [Axis::of(conv, 0), Axis::of(conv, 1)];
    let [_, channel_stride, row_stride, column_stride] = match conv.input.channels_last {
        true => conv.input.strides,
        false => [0, 1, width * channels, channels],
    };
    // The columns where every tap of a kernel row lies inside the image,
    // copied a kernel row at a time when those taps' channels follow each
    // other in the input and in the columns.
    let whole_rows = (conv.dilation[1] == 1 && channel_stride == 1 && conv.groups == 1)
        .then(|| {
            (0..kernel_w)
                .map(|kx| axes[1].outputs_meeting(kx))
                .reduce(|a, b| a.start.max(b.start)..a.end.min(b.end))
                .filter(|xs| !xs.is_empty())
        })
        .flatten();
    let unfold = Unfold {
        conv,
        axes,
        block_rows,
        blocks,
        strides: [channel_stride, row_stride, column_stride],
        whole_rows,
    };
    // The cells every block unfolds into; with an integer plan, the f32
    // columns (a NaN block's) are filled before such a block is unfolded.
    let block_cells = integer.map_or(float_cells, |(_, _, cells)| cells);
    unfold.fill_outside_once(e, block_cells)?;
    // Threads share out the blocks; with one block, the groups, or with
    // one group too, the GEMM's rows or columns (below).
    let group_cost = (block_pixels * taps * group_outputs) as u64;
    let share = |e: &mut Emitter<'_, '_, '_>, count: i64, cost: u64| {
        let range = match count {
            1 => None,
            _ => e.parallel_range(count, cost),
        };
        match range {
            Some((lo, hi)) => (lo, Size::Dyn(e.b.ins().isub(hi, lo))),
            None => (e.iconst(0), Size::Const(count)),
        }
    };
    let (first_block, block_count) = share(e, blocks, group_cost * conv.groups as u64);
    let (first_group, group_count) = match blocks {
        1 => share(e, conv.groups, group_cost),
        _ => (e.iconst(0), Size::Const(conv.groups)),
    };
    // The input rows the blocks of this call read, for the NCHW input's
    // copy and the integer plan's conversion.
    let call_rows = (!conv.input.channels_last || integer.is_some()).then(|| {
        let first_row = e.b.ins().imul_imm_s(first_block, block_rows);
        let end_row = match block_count {
            Size::Const(count) => e.b.ins().iadd_imm_s(first_row, count * block_rows),
            Size::Dyn(count) => {
                let rows = e.b.ins().imul_imm_s(count, block_rows);
                e.b.ins().iadd(first_row, rows)
            }
        };
        let height = e.iconst(out_h);
        let end_row = e.b.ins().smin(end_row, height);
        unfold.input_rows(e, [first_row, end_row])
    });
    per_image(e, conv, [input, output], &mut |e, image, out| {
        let image = match (conv.input.channels_last, call_rows) {
            (false, Some(rows)) => image_channels_last(e, conv, image, image_copy, rows)?,
            _ => image,
        };
        if let (Some((plan, _, _)), Some(rows)) = (integer, call_rows) {
            let pointers = [image, converted, nan_flags];
            plan.convert_image_rows(e, pointers, width * channels, rows)?;
        }
        // The pointers of the first group this call computes.
        let group_input =
            e.b.ins()
                .imul_imm_s(first_group, group_channels * channel_stride * 4);
        let group_output = e.b.ins().imul_imm_s(first_group, group_outputs * 4);
        let bases = [
            e.b.ins().iadd(image, group_input),
            e.b.ins().iadd(filter.pointer(), group_output),
            e.b.ins().iadd(out, group_output),
            e.b.ins().iadd(bias.unwrap_or(out), group_output),
        ];
        e.counted_loop(group_count, &bases, |e, index, g| {
            let group = e.b.ins().iadd(first_group, index);
            e.counted_loop(block_count, &[], |e, index, _| {
                let block = e.b.ins().iadd(first_block, index);
                let first_row = e.b.ins().imul_imm_s(block, block_rows);
                let end_row = e.b.ins().iadd_imm_s(first_row, block_rows);
                let end_row = match even {
                    true => end_row,
                    false => {
                        let height = e.iconst(out_h);
                        let beyond = e.b.ins().icmp(IntCC::SignedGreaterThan, end_row, height);
                        e.b.ins().select(beyond, height, end_row)
                    }
                };
                let pixels = match even {
                    true => Size::Const(block_pixels),
                    false => {
                        let rows = e.b.ins().isub(end_row, first_row);
                        Size::Dyn(e.b.ins().imul_imm_s(rows, out_w))
                    }
                };
                let block_output =
                    e.b.ins()
                        .imul_imm_s(block, block_pixels * conv.output.strides[3] * 4);
                let block_output = e.b.ins().iadd(g[2], block_output);
                let group_bias = bias.map(|_| g[3]);
                let output_rows = [first_row, end_row];
                if let Some((plan, prepared, cells)) = integer {
                    // With one block, threads share out the columns.
                    let units = match blocks {
                        1 => plan.columns_of_this_call(e, block_pixels),
                        _ => Units::All,
                    };
                    let input_rows = unfold.input_rows(e, output_rows);
                    let nan = any_flag(e, nan_flags, input_rows)?;
                    let mut float_columns = |e: &mut Emitter<'_, '_, '_>| {
                        unfold.fill_outside_once(e, float_cells)?;
                        unfold.block(e, float_cells, g[0], output_rows)?;
                        Ok(columns)
                    };
                    // One group: the group's pointers are the node's.
                    return e
                        .whole(|e| {
                            unfold.block(e, cells, converted, output_rows)?;
                            plan.packed_block(
                                e,
                                prepared,
                                nan,
                                (&mut float_columns, taps * 4),
                                [packed, block_output],
                                pixels,
                                (rows(g[1], conv.out_channels()), units),
                                group_bias,
                                (epilogue, steps),
                            )
                        })
                        .map(|()| Vec::new());
                }
                unfold.block(e, float_cells, g[0], output_rows)?;
                let group_filter = match filter {
                    GemmFilter::Stored(_) => GemmFilter::Stored(g[1]),
                    packed @ GemmFilter::Packed(_) => packed,
                };
                let gemm = filter_gemm(
                    conv,
                    rows(columns, taps),
                    (pixels, [taps, group_outputs]),
                    group_filter,
                    block_output,
                    group_bias,
                    epilogue,
                );
                let group_channel = e.b.ins().imul_imm_s(group, group_outputs);
                let split = blocks == 1 && conv.groups == 1;
                gemm_then_steps(e, &gemm, steps, group_channel, split)?;
                Ok(Vec::new())
            })?;
            Ok(vec![
                e.b.ins()
                    .iadd_imm_s(g[0], group_channels * channel_stride * 4),
                e.b.ins().iadd_imm_s(g[1], group_outputs * 4),
                e.b.ins().iadd_imm_s(g[2], group_outputs * 4),
                e.b.ins().iadd_imm_s(g[3], group_outputs * 4),
            ])
        })?;
        Ok(())
    })
}

/// Whether any of the i32 flags of rows `[top, bottom)` (from `row_flags`,
/// one a row) is non-zero: an i32, zero for no row.
fn any_flag(
    e: &mut Emitter<'_, '_, '_>,
    row_flags: Value,
    [top, bottom]: [Value; 2],
) -> Result<Value, CodegenError> {
    let offset = e.b.ins().imul_imm_s(top, 4);
    let first = e.b.ins().iadd(row_flags, offset);
    let rows = e.b.ins().isub(bottom, top);
    let none = e.b.ins().iconst(types::I32, 0);
    let any = e.counted_loop(Size::Dyn(rows), &[first, none], |e, _, p| {
        let flag = e.b.ins().load(types::I32, flags(), p[0], 0);
        Ok(vec![
            e.b.ins().iadd_imm_s(p[0], 4),
            e.b.ins().bor(p[1], flag),
        ])
    })?;
    Ok(any[1])
}

/// How im2col's columns of one kind hold their cells: from `columns`,
/// `pixel` elements from one output pixel's cells to the next's (its taps',
/// then any padding), elements of `dtype` (f32 for the f32 GEMM, A's
/// elements for the integer one), `outside` the bits of a cell whose tap
/// lies outside the image.
#[derive(Clone, Copy)]
struct Cells {
    columns: Value,
    dtype: DType,
    pixel: i64,
    outside: i64,
}

impl Cells {
    fn element(&self) -> i64 {
        self.dtype.size() as i64
    }

    /// Stores the outside element in one tap's cells of `pixels` pixels in
    /// each of `rows` rows of `width` pixels from `start`, the first one's.
    /// `rows` may be zero or negative (no row).
    fn fill_outside(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        start: Value,
        rows: Size,
        [pixels, width, channels]: [i64; 3],
    ) -> Result<(), CodegenError> {
        let pixel_bytes = self.pixel * self.element();
        let value = match self.dtype {
            DType::F32 => e.b.ins().f32const(f32::from_bits(self.outside as u32)),
            dtype => e.b.ins().iconst(scalar_type(dtype), self.outside),
        };
        e.counted_loop(rows, &[start], |e, _, row| {
            e.counted_loop(Size::Const(pixels), &[row[0]], |e, _, pixel| {
                fill(e, pixel[0], channels, value)?;
                Ok(vec![e.b.ins().iadd_imm_s(pixel[0], pixel_bytes)])
            })?;
            Ok(vec![e.b.ins().iadd_imm_s(row[0], width * pixel_bytes)])
        })?;
        Ok(())
    }
}

/// The geometry of a convolution's im2col, from an image of element
/// `strides` along C, H and W (channels-last once an NCHW input is copied).
struct Unfold<'a> {
    conv: &'a ChannelsLast,
    axes: [Axis; 2],
    block_rows: i64,
    blocks: i64,
    strides: [i64; 3],
    /// The output columns whose taps of a kernel row all lie inside the
    /// image and are contiguous, copied a kernel row at a time.
    whole_rows: Option<Range<i64>>,
}

impl Unfold<'_> {
    /// The input rows `[top, bottom)` the output rows `[first, end)` read
    /// (clamped to the image; none when their windows leave it).
    fn input_rows(&self, e: &mut Emitter<'_, '_, '_>, [first, end]: [Value; 2]) -> [Value; 2] {
        let conv = self.conv;
        let top = e.b.ins().imul_imm_s(first, conv.stride[0]);
        let top = e.b.ins().iadd_imm_s(top, -conv.padding[0]);
        let zero = e.iconst(0);
        let top = e.b.ins().smax(top, zero);
        let bottom = e.b.ins().imul_imm_s(end, conv.stride[0]);
        let window = (conv.filter[2] - 1) * conv.dilation[0] + 1;
        let bottom =
            e.b.ins()
                .iadd_imm_s(bottom, window - conv.stride[0] - conv.padding[0]);
        let input_height = e.iconst(conv.input.sizes[2]);
        let bottom = e.b.ins().smin(bottom, input_height);
        let bottom = e.b.ins().smax(bottom, top);
        [top, bottom]
    }

    /// Stores the outside element in the cells of taps outside the image
    /// that no block's copies write (columns outside, and with one block
    /// rows outside too), once a call (or before a block that needs cells no
    /// other block of the call used); those of rows outside, in the blocks
    /// at the top and bottom when there are several, are filled per block
    /// ([`Unfold::block`]), since another block of this call wrote them.
    fn fill_outside_once(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        cells: Cells,
    ) -> Result<(), CodegenError> {
        let [kernel_h, kernel_w] = self.conv.kernel();
        let [out_h, out_w] = [self.axes[0].output, self.axes[1].output];
        let channels = self.conv.group_channels();
        for ky in 0..kernel_h {
            for kx in 0..kernel_w {
                let [ys, xs] = [
                    self.axes[0].outputs_meeting(ky),
                    self.axes[1].outputs_meeting(kx),
                ];
                let tap = (ky * kernel_w + kx) * channels;
                let block = 0..self.block_rows;
                let unwritten = match ys.is_empty() || xs.is_empty() {
                    true => vec![(block, 0..out_w)],
                    false => {
                        let mut outside =
                            vec![(block.clone(), 0..xs.start), (block, xs.end..out_w)];
                        if self.blocks == 1 {
                            outside.extend([(0..ys.start, xs.clone()), (ys.end..out_h, xs)]);
                        }
                        outside
                    }
                };
                for (rows, pixels) in unwritten {
                    if rows.is_empty() || pixels.is_empty() {
                        continue;
                    }
                    let first = (rows.start * out_w + pixels.start) * cells.pixel + tap;
                    let start = e.b.ins().iadd_imm_s(cells.columns, first * cells.element());
                    let [rows, pixels] = [rows, pixels].map(|range| range.end - range.start);
                    let shape = [pixels, out_w, channels];
                    cells.fill_outside(e, start, Size::Const(rows), shape)?;
                }
            }
        }
        Ok(())
    }

    /// Unfolds the windows of output rows `[first_row, end_row)` (a block's)
    /// from `image` (the group's first channel) into `cells`.
    fn block(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        cells: Cells,
        image: Value,
        [first_row, end_row]: [Value; 2],
    ) -> Result<(), CodegenError> {
        let conv = self.conv;
        let [kernel_h, kernel_w] = conv.kernel();
        let [out_h, out_w] = [self.axes[0].output, self.axes[1].output];
        let group_channels = conv.group_channels();
        let [channel_stride, row_stride, column_stride] = self.strides;
        let element = cells.element();
        let operand = |base: Value, strides: [i64; 3]| Operand {
            base,
            dtype: cells.dtype,
            strides: strides.map(Size::Const).to_vec(),
        };
        for ky in 0..kernel_h {
            // The block's output rows whose window meets kernel row `ky`
            // inside the image: `[from_row, to_row)`, within the block
            // (empty where the block lies wholly above or below them), so
            // that the rows above it and below it are in the block too.
            let ys = self.axes[0].outputs_meeting(ky);
            if ys.is_empty() {
                continue;
            }
            let [start, end] = [ys.start, ys.end].map(|bound| e.iconst(bound));
            let from_row = e.b.ins().smax(start, first_row);
            let from_row = e.b.ins().smin(from_row, end_row);
            let to_row = e.b.ins().smin(end, end_row);
            let to_row = e.b.ins().smax(to_row, from_row);
            let rows = e.b.ins().isub(to_row, from_row);
            // Copies the taps `kx..kx + span` of output columns `xs`: input
            // row `from_row * stride + ky * dilation - padding`, each
            // column's taps one run.
            let copy = |e: &mut Emitter<'_, '_, '_>,
                        xs: Range<i64>,
                        kx: i64,
                        span: i64|
             -> Result<(), CodegenError> {
                if xs.is_empty() {
                    return Ok(());
                }
                let tap_cell = xs.start * cells.pixel + (ky * kernel_w + kx) * group_channels;
                let ix0 = self.axes[1].position(xs.start, kx);
                let iy_offset = self.axes[0].position(0, ky);
                let source_row =
                    e.b.ins()
                        .imul_imm_s(from_row, conv.stride[0] * row_stride * element);
                let source = e.b.ins().iadd(image, source_row);
                let from = e.b.ins().iadd_imm_s(
                    source,
                    (iy_offset * row_stride + ix0 * column_stride) * element,
                );
                let block_row = e.b.ins().isub(from_row, first_row);
                let cell_row =
                    e.b.ins()
                        .imul_imm_s(block_row, out_w * cells.pixel * element);
                let to = e.b.ins().iadd(cells.columns, cell_row);
                let to = e.b.ins().iadd_imm_s(to, tap_cell * element);
                let (run, run_stride) = match span {
                    1 => (group_channels, channel_stride),
                    _ => (span * group_channels, 1),
                };
                emit_copy(
                    e,
                    vec![
                        Size::Dyn(rows),
                        Size::Const(xs.end - xs.start),
                        Size::Const(run),
                    ],
                    operand(to, [out_w * cells.pixel, cells.pixel, 1]),
                    operand(
                        from,
                        [
                            conv.stride[0] * row_stride,
                            conv.stride[1] * column_stride,
                            run_stride,
                        ],
                    ),
                )
            };
            if let Some(all) = &self.whole_rows {
                copy(e, all.clone(), 0, kernel_w)?;
            }
            for kx in 0..kernel_w {
                let xs = self.axes[1].outputs_meeting(kx);
                if xs.is_empty() {
                    continue;
                }
                if self.blocks > 1 && ys != (0..out_h) {
                    // The block's rows above and below the tap's.
                    let tap = (ky * kernel_w + kx) * group_channels * element;
                    let tap_cells = e.b.ins().iadd_imm_s(cells.columns, tap);
                    let above = e.b.ins().isub(from_row, first_row);
                    let below_start = e.b.ins().isub(to_row, first_row);
                    let below_bytes =
                        e.b.ins()
                            .imul_imm_s(below_start, out_w * cells.pixel * element);
                    let below = e.b.ins().iadd(tap_cells, below_bytes);
                    let below_rows = e.b.ins().isub(end_row, to_row);
                    let shape = [out_w, out_w, group_channels];
                    for (start, count) in [(tap_cells, above), (below, below_rows)] {
                        cells.fill_outside(e, start, Size::Dyn(count), shape)?;
                    }
                }
                match &self.whole_rows {
                    // The columns left of and right of those.
                    Some(all) => {
                        copy(e, xs.start..all.start.min(xs.end), kx, 1)?;
                        copy(e, all.end.max(xs.start)..xs.end, kx, 1)?;
                    }
                    None => copy(e, xs, kx, 1)?,
                }
            }
        }
        Ok(())
    }
}

/// Output rows of an im2col block: the most whose columns fit in
/// `BLOCK_BYTES` (L2 caches hold them beside the filter's panel), but
/// enough for 64 GEMM rows (the microkernels' tiles) when the height
/// allows, evened out over the blocks that makes (the last one may be
/// shorter). An image that would be one block is cut in two when each half
/// still has its 64 rows, so that threads share it out without each
/// unfolding the whole image. At least one row, also for an empty output
/// or no taps (no input channels).
fn im2col_block_rows(out_h: i64, out_w: i64, taps: i64) -> i64 {
    const BLOCK_BYTES: i64 = 256 << 10;
    const LEAST_PIXELS: i64 = 64;
    let fitting = BLOCK_BYTES / (out_w * taps * 4).max(1);
    let least = (LEAST_PIXELS + out_w - 1) / out_w.max(1);
    let rows = match fitting.max(least) {
        rows if rows < out_h => rows,
        _ if out_h >= 2 * least => (out_h + 1) / 2,
        _ => out_h.max(1),
    };
    let blocks = (out_h + rows - 1) / rows;
    (out_h + blocks - 1) / blocks.max(1)
}
