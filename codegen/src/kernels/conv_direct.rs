//! Convolutions of any element type, over one to three spatial dimensions,
//! ordinary or transposed, computed directly: each output element is the
//! sum over its input channels and kernel taps, each tap's input position
//! checked against the input's bounds (padding contributes nothing). The
//! fast kernels (`conv.rs`, `conv_nhwc.rs`) take ordinary 2-D and 1-D f32
//! convolutions; this one takes the rest, reading every operand through its
//! own strides.
//!
//! An ordinary convolution reads input position `o * stride - padding + k *
//! dilation` for output position `o` and tap `k`; a transposed one reads
//! input position `i` where `i * stride - padding + k * dilation = o`, so
//! only taps where `o + padding - k * dilation` is a multiple of the stride
//! contribute.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{BlockArg, InstBuilder, Value};
use ptec_ir::ValueId;
use ptec_ir::ops::conv::Convolution;

use super::arith::{Arith, all, element_address};
use super::nest::{byte_strides, over_indices};
use crate::emit::{Emitter, Size};
use crate::error::CodegenError;

/// One operand: its first element, element type and byte strides.
struct Tensor {
    base: Value,
    dtype: ptec_ir::DType,
    strides: Vec<Size>,
}

fn tensor(e: &mut Emitter<'_, '_, '_>, value: ValueId) -> Tensor {
    Tensor {
        base: e.address(value),
        dtype: e.graph().value(value).ty.dtype,
        strides: byte_strides(e, value),
    }
}

pub(super) fn convolution(
    e: &mut Emitter<'_, '_, '_>,
    op: &Convolution,
    output: ValueId,
) -> Result<(), CodegenError> {
    let out_ty = e.graph().value(output).ty.clone();
    let in_ty = e.graph().value(op.input).ty.clone();
    let w_ty = e.graph().value(op.weight).ty.clone();
    let arith = Arith::of(out_ty.dtype);
    if !arith.is_float() && !op.clamp.is_none() {
        return Err(e.unsupported("a fused clamp on an integer convolution"));
    }
    let rank = op.spatial_rank();
    let fixed = |shape: &[ptec_ir::Dim], axis: usize| shape[axis].fixed().unwrap_or(0) as i64;
    let out_sizes = e.shape(&out_ty.shape);
    let in_spatial: Vec<i64> = (0..rank).map(|d| fixed(&in_ty.shape, 2 + d)).collect();
    let kernel: Vec<Size> = (0..rank)
        .map(|d| Size::Const(fixed(&w_ty.shape, 2 + d)))
        .collect();
    let groups = op.groups as i64;
    let out_channels = fixed(&out_ty.shape, 1);
    let outputs_per_group = out_channels / groups.max(1);
    let inputs_per_group = fixed(&in_ty.shape, 1) / groups.max(1);
    let (x, w, out) = (tensor(e, op.input), tensor(e, op.weight), tensor(e, output));
    let bias = op.bias.map(|bias| tensor(e, bias));
    let residual = op.residual.map(|residual| tensor(e, residual));
    over_indices(e, &out_sizes, &[], &mut |e, index, _| {
        let (n, oc, positions) = (index[0], index[1], &index[2..]);
        let group = e.b.ins().udiv_imm_u(oc, outputs_per_group);
        let first_channel = e.b.ins().imul_imm_s(group, inputs_per_group);
        let image = element_address(e, x.base, &[(n, x.strides[0])]);
        let zero = arith.zero(e);
        let mut taps = vec![Size::Const(inputs_per_group)];
        taps.extend(&kernel);
        let sum = over_indices(e, &taps, &[zero], &mut |e, tap, acc| {
            let (ic, k) = (tap[0], &tap[1..]);
            let channel = e.b.ins().iadd(first_channel, ic);
            // The filter's element, and the input position of each spatial
            // dimension with whether it lies inside the input.
            let filter = match op.transposed {
                None => vec![(oc, w.strides[0]), (ic, w.strides[1])],
                Some(_) => {
                    let within = e.b.ins().urem_imm_u(oc, outputs_per_group);
                    vec![(channel, w.strides[0]), (within, w.strides[1])]
                }
            };
            let mut at = vec![(channel, x.strides[1])];
            let mut filter = filter;
            let mut inside = Vec::new();
            for d in 0..rank {
                let (stride, padding, dilation) = (
                    op.stride[d] as i64,
                    op.padding[d] as i64,
                    op.dilation[d] as i64,
                );
                let reach = e.b.ins().imul_imm_s(k[d], dilation);
                let position = match op.transposed {
                    None => {
                        let start = e.b.ins().imul_imm_s(positions[d], stride);
                        let start = e.b.ins().iadd_imm_s(start, -padding);
                        e.b.ins().iadd(start, reach)
                    }
                    Some(_) => {
                        // A negative difference is a huge unsigned number,
                        // whose quotient is past any input.
                        let shifted = e.b.ins().iadd_imm_s(positions[d], padding);
                        let difference = e.b.ins().isub(shifted, reach);
                        if stride != 1 {
                            let rest = e.b.ins().urem_imm_u(difference, stride);
                            inside.push(e.b.ins().icmp_imm_s(IntCC::Equal, rest, 0));
                            e.b.ins().udiv_imm_u(difference, stride)
                        } else {
                            difference
                        }
                    }
                };
                inside.push(
                    e.b.ins()
                        .icmp_imm_u(IntCC::UnsignedLessThan, position, in_spatial[d]),
                );
                at.push((position, x.strides[2 + d]));
                filter.push((k[d], w.strides[2 + d]));
            }
            let inside = all(e, &inside);
            let add = e.b.create_block();
            let join = e.b.create_block();
            e.b.append_block_param(join, arith.ty);
            e.b.ins()
                .brif(inside, add, &[], join, &[BlockArg::from(acc[0])]);
            e.b.switch_to_block(add);
            let input_address = element_address(e, image, &at);
            let filter_address = element_address(e, w.base, &filter);
            let value = arith.load(e, x.dtype, input_address)?;
            let weight = arith.load(e, w.dtype, filter_address)?;
            let next = arith.mul_add(e, value, weight, acc[0]);
            e.b.ins().jump(join, &[BlockArg::from(next)]);
            e.b.switch_to_block(join);
            Ok(e.b.block_params(join).to_vec())
        })?;
        let mut result = sum[0];
        if let Some(bias) = &bias {
            let address = element_address(e, bias.base, &[(oc, bias.strides[0])]);
            let value = arith.load(e, bias.dtype, address)?;
            result = arith.add(e, result, value);
        }
        result = arith.clamp(
            e,
            result,
            op.clamp.min.map(|min| min.0),
            op.clamp.max.map(|max| max.0),
        );
        let terms: Vec<(Value, Size)> = index.iter().copied().zip(out.strides.clone()).collect();
        if let Some(residual) = &residual {
            let residual_terms: Vec<(Value, Size)> = index
                .iter()
                .copied()
                .zip(residual.strides.clone())
                .collect();
            let address = element_address(e, residual.base, &residual_terms);
            let value = arith.load(e, residual.dtype, address)?;
            result = arith.add(e, result, value);
        }
        let address = element_address(e, out.base, &terms);
        arith.store(e, result, out.dtype, address)?;
        Ok(Vec::new())
    })?;
    Ok(())
}
