//! Convolution and pooling over images whose sizes are known only at run
//! time (a symbolic batch, height or width; a 1-D convolution's length):
//! direct loop nests over every output element, in any layout, each
//! computed from its window with the padding's bounds checked (a position
//! outside reads zero for a convolution and nothing for a pooling). The
//! fixed-size kernels (`conv.rs`, `conv_nhwc.rs`) are the fast path; these
//! are plain, not tuned.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};
use ptec_ir::ops::conv::Convolution;
use ptec_ir::{DType, ValueId};

use super::conv::{Window, max_keeping_nan};
use super::linalg::Epilogue;
use super::map::layout_strides;
use crate::emit::{Emitter, Size, flags};
use crate::error::CodegenError;

/// Whether any of `values` has a size known only at run time.
pub(super) fn is_dynamic(e: &Emitter<'_, '_, '_>, values: &[ValueId]) -> bool {
    values
        .iter()
        .any(|&value| e.graph().value(value).ty.fixed_shape().is_none())
}

/// A 4-D f32 tensor: its address, and its sizes and byte strides along
/// N, C, H, W (whatever its dim order). A 3-D one (a 1-D convolution's
/// N, C, L) is an image of one row.
struct Image {
    base: Value,
    sizes: [Size; 4],
    strides: [Value; 4],
}

fn image(e: &mut Emitter<'_, '_, '_>, value: ValueId, what: &str) -> Result<Image, CodegenError> {
    let ty = e.graph().value(value).ty.clone();
    if !matches!(ty.rank(), 3 | 4) || ty.dtype != DType::F32 {
        return Err(e.unsupported(format!("{what} other than a 3-D or 4-D f32 tensor ({ty})")));
    }
    let mut sizes = e.shape(&ty.shape);
    let strides = layout_strides(e, &ty.shape, &ty.dim_order);
    let mut strides: Vec<Value> = (strides.into_iter())
        .map(|stride| {
            let bytes = e.mul(stride, Size::Const(4));
            e.value_of(bytes)
        })
        .collect();
    if ty.rank() == 3 {
        sizes.insert(2, Size::Const(1));
        strides.insert(2, e.iconst(0));
    }
    let base = e.address(value);
    Ok(Image {
        base,
        sizes: [sizes[0], sizes[1], sizes[2], sizes[3]],
        strides: [strides[0], strides[1], strides[2], strides[3]],
    })
}

/// The address of the element at `coords` (N, C, H, W).
fn at(e: &mut Emitter<'_, '_, '_>, image: &Image, coords: [Value; 4]) -> Value {
    let mut address = image.base;
    for (coord, stride) in coords.into_iter().zip(image.strides) {
        let offset = e.b.ins().imul(coord, stride);
        address = e.b.ins().iadd(address, offset);
    }
    address
}

/// The element at row `y`, column `x` of plane (`n`, `c`), and whether the
/// position lies inside the image (when it does not, the element read is
/// the plane's first, which the caller discards).
fn load_inside(
    e: &mut Emitter<'_, '_, '_>,
    image: &Image,
    [n, c, y, x]: [Value; 4],
) -> (Value, Value) {
    let [height, width] = [image.sizes[2], image.sizes[3]].map(|size| e.value_of(size));
    let row_ok = e.b.ins().icmp(IntCC::UnsignedLessThan, y, height);
    let column_ok = e.b.ins().icmp(IntCC::UnsignedLessThan, x, width);
    let inside = e.b.ins().band(row_ok, column_ok);
    let zero = e.iconst(0);
    let y = e.b.ins().select(inside, y, zero);
    let x = e.b.ins().select(inside, x, zero);
    let address = at(e, image, [n, c, y, x]);
    (e.b.ins().load(types::F32, flags(), address, 0), inside)
}

/// Stores `element(coords, address)` at every element of `output`.
fn for_each_output(
    e: &mut Emitter<'_, '_, '_>,
    output: &Image,
    mut element: impl FnMut(&mut Emitter<'_, '_, '_>, [Value; 4], Value) -> Result<Value, CodegenError>,
) -> Result<(), CodegenError> {
    let [batch, channels, height, width] = output.sizes;
    e.counted_loop(batch, &[], |e, n, _| {
        e.counted_loop(channels, &[], |e, c, _| {
            e.counted_loop(height, &[], |e, y, _| {
                e.counted_loop(width, &[], |e, x, _| {
                    let address = at(e, output, [n, c, y, x]);
                    let value = element(e, [n, c, y, x], address)?;
                    e.b.ins().store(flags(), value, address, 0);
                    Ok(Vec::new())
                })?;
                Ok(Vec::new())
            })?;
            Ok(Vec::new())
        })?;
        Ok(Vec::new())
    })?;
    Ok(())
}

/// The input position of window offset `k` for output position `o`:
/// `o * stride - padding + k * dilation`.
fn position(e: &mut Emitter<'_, '_, '_>, o: Value, stride: u64, padding: u64, k: i64) -> Value {
    let scaled = e.b.ins().imul_imm_s(o, stride as i64);
    e.b.ins().iadd_imm_s(scaled, k - padding as i64)
}

/// A convolution (NCHW semantics, any layouts) into `output_value`, its
/// epilogue applied to each element.
pub(super) fn convolution(
    e: &mut Emitter<'_, '_, '_>,
    op: &Convolution,
    output_value: ValueId,
    epilogue: Epilogue,
) -> Result<(), CodegenError> {
    // A 1-D convolution is a 2-D one over images of one row.
    let params = match (op.spatial_rank(), &op.transposed) {
        (1, None) => Some([[1, op.stride[0]], [0, op.padding[0]], [1, op.dilation[0]]]),
        _ => op.as_2d(),
    };
    let Some([stride, padding, dilation]) = params else {
        return Err(e.unsupported(
            "a convolution over sizes known only at run time other than an ordinary 1-D or 2-D \
             one",
        ));
    };
    let input = image(e, op.input, "convolution input")?;
    let weight = image(e, op.weight, "convolution weight")?;
    let output = image(e, output_value, "convolution output")?;
    let [
        Size::Const(out_channels),
        Size::Const(group_channels),
        Size::Const(kernel_h),
        Size::Const(kernel_w),
    ] = weight.sizes
    else {
        return Err(e.unsupported("a convolution weight of sizes known only at run time"));
    };
    let per_group = out_channels / (op.groups.max(1) as i64);
    let bias = op.bias.map(|bias| e.address(bias));
    for_each_output(e, &output, |e, [n, oc, oy, ox], address| {
        let group = e.b.ins().udiv_imm_u(oc, per_group);
        let first = e.b.ins().imul_imm_s(group, group_channels);
        let initial = match bias {
            Some(bias) => {
                let offset = e.b.ins().imul_imm_s(oc, 4);
                let address = e.b.ins().iadd(bias, offset);
                e.b.ins().load(types::F32, flags(), address, 0)
            }
            None => e.b.ins().f32const(0.0),
        };
        let sum = e.counted_loop(Size::Const(group_channels), &[initial], |e, ic, sum| {
            let channel = e.b.ins().iadd(first, ic);
            let mut sum = sum[0];
            for ky in 0..kernel_h {
                let iy = position(e, oy, stride[0], padding[0], ky * dilation[0] as i64);
                for kx in 0..kernel_w {
                    let ix = position(e, ox, stride[1], padding[1], kx * dilation[1] as i64);
                    let (x, inside) = load_inside(e, &input, [n, channel, iy, ix]);
                    // Padding is zeros, multiplied as PyTorch does.
                    let zero = e.b.ins().f32const(0.0);
                    let x = e.b.ins().select(inside, x, zero);
                    let [ky, kx] = [ky, kx].map(|k| e.iconst(k));
                    let w_address = at(e, &weight, [oc, ic, ky, kx]);
                    let w = e.b.ins().load(types::F32, flags(), w_address, 0);
                    let product = e.b.ins().fmul(x, w);
                    sum = e.b.ins().fadd(sum, product);
                }
            }
            Ok(vec![sum])
        })?[0];
        Ok(epilogue.apply(e, sum, address, 0))
    })
}

/// Max pooling (`average` `None`; its indices are not written, so the
/// caller refuses a node whose indices something reads) or average
/// pooling (`Some(count_include_pad)`).
pub(super) fn pooling(
    e: &mut Emitter<'_, '_, '_>,
    input_value: ValueId,
    output_value: ValueId,
    window: Window,
    average: Option<bool>,
) -> Result<(), CodegenError> {
    let input = image(e, input_value, "pooling input")?;
    let output = image(e, output_value, "pooling output")?;
    for_each_output(e, &output, |e, [n, c, oy, ox], _| {
        let initial = match average {
            Some(_) => e.b.ins().f32const(0.0),
            None => e.b.ins().f32const(f32::NEG_INFINITY),
        };
        let (mut best, mut count) = (initial, e.iconst(0));
        for ky in 0..window.kernel[0] as i64 {
            let k = ky * window.dilation[0] as i64;
            let iy = position(e, oy, window.stride[0], window.padding[0], k);
            for kx in 0..window.kernel[1] as i64 {
                let k = kx * window.dilation[1] as i64;
                let ix = position(e, ox, window.stride[1], window.padding[1], k);
                let (x, inside) = load_inside(e, &input, [n, c, iy, ix]);
                best = match average {
                    Some(_) => {
                        let zero = e.b.ins().f32const(0.0);
                        let x = e.b.ins().select(inside, x, zero);
                        e.b.ins().fadd(best, x)
                    }
                    None => {
                        let x = e.b.ins().select(inside, x, best);
                        max_keeping_nan(e, best, x)
                    }
                };
                let one = e.b.ins().uextend(types::I64, inside);
                count = e.b.ins().iadd(count, one);
            }
        }
        let divisor = match average {
            None => return Ok(best),
            // The window clipped to the padded input.
            Some(true) => {
                let mut cells = e.iconst(1);
                for (axis, o) in [(0, oy), (1, ox)] {
                    let start = position(e, o, window.stride[axis], window.padding[axis], 0);
                    let end = e.b.ins().iadd_imm_s(start, window.kernel[axis] as i64);
                    let extent = e.value_of(input.sizes[2 + axis]);
                    let limit = e.b.ins().iadd_imm_s(extent, window.padding[axis] as i64);
                    let end = e.b.ins().smin(end, limit);
                    let size = e.b.ins().isub(end, start);
                    cells = e.b.ins().imul(cells, size);
                }
                cells
            }
            Some(false) => count,
        };
        let divisor = e.b.ins().fcvt_from_sint(types::F32, divisor);
        Ok(e.b.ins().fdiv(best, divisor))
    })
}
