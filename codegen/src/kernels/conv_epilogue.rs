//! A convolution's epilogue steps (`Convolution::epilogue`, which
//! `fuse-epilogue` attaches): the elementwise chain applied to what the
//! convolution computed, in place. With a channels-last f32 result whose
//! epilogue operands are laid out as the result or hold one value per
//! channel, the kernels apply it to each block of output pixels right after
//! computing the block, while it is in the cache ([`BlockEpilogue`]); any
//! other convolution computes its whole result and then applies the chain
//! over it ([`apply_whole`]). Either way each element goes through the
//! chain's steps in order, as the fused kernel would have.

use cranelift_codegen::ir::{InstBuilder, Value};
use ptec_ir::ops::fused::Epilogue;
use ptec_ir::{CHANNELS_LAST, DType, ValueId};

use super::elementwise::{dtype, map_over};
use super::map::{Map, Operand, broadcast_strides, emit_map};
use super::pointwise::Chain;
use crate::emit::{Emitter, Size};
use crate::error::CodegenError;

/// Where an epilogue operand's element for an output element is.
#[derive(Clone, Copy)]
enum Source {
    /// This many bytes from the output element (an operand laid out as
    /// the output).
    Beside(Value),
    /// The operand's element for the output's channel: one per channel,
    /// `stride` elements apart (0 for one value).
    PerChannel { base: Value, stride: i64 },
}

/// An epilogue the kernels apply block by block to a channels-last f32
/// result.
pub(super) struct BlockEpilogue<'s> {
    chain: Chain<'s>,
    /// Elements from one output pixel to the next.
    channels: i64,
    sources: Vec<Source>,
}

impl<'s> BlockEpilogue<'s> {
    /// The block-by-block form of `epilogue` on `output`, or `None` where
    /// the result or an operand is not laid out for it.
    pub(super) fn new(
        e: &mut Emitter<'_, '_, '_>,
        epilogue: &'s Epilogue,
        output: ValueId,
    ) -> Result<Option<BlockEpilogue<'s>>, CodegenError> {
        let output_ty = e.graph().value(output).ty.clone();
        let fits = output_ty.dtype == DType::F32
            && output_ty.dim_order == CHANNELS_LAST
            && output_ty.fixed_shape().is_some();
        let Some(&[_, channels, _, _]) = output_ty.fixed_shape().as_deref().filter(|_| fits) else {
            return Ok(None);
        };
        let output_address = e.address(output);
        let mut sources = Vec::with_capacity(epilogue.operands.len());
        for &operand in &epilogue.operands {
            let ty = e.graph().value(operand).ty.clone();
            let strides = broadcast_strides(e, &ty, &output_ty.shape);
            let source = match strides[..] {
                _ if ty == output_ty => {
                    let address = e.address(operand);
                    Source::Beside(e.b.ins().isub(address, output_address))
                }
                [
                    Size::Const(0),
                    Size::Const(stride),
                    Size::Const(0),
                    Size::Const(0),
                ] if ty.dtype == DType::F32 => Source::PerChannel {
                    base: e.address(operand),
                    stride,
                },
                _ => return Ok(None),
            };
            sources.push(source);
        }
        let chain = Chain::new(e, &epilogue.steps, DType::F32)?;
        Ok(Some(BlockEpilogue {
            chain,
            channels: channels as i64,
            sources,
        }))
    }

    /// Applies the chain to `pixels` output pixels from `block`, the
    /// address of the first one's channel `first_channel` (0 when `None`),
    /// `channels` channels of each.
    pub(super) fn apply(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        block: Value,
        first_channel: Option<Value>,
        pixels: Size,
        channels: i64,
    ) -> Result<(), CodegenError> {
        let along = |base: Value, channel: i64| Operand {
            base,
            dtype: DType::F32,
            strides: vec![Size::Const(self.channels), Size::Const(channel)],
        };
        let mut inputs = vec![along(block, 1)];
        for &source in &self.sources {
            inputs.push(match source {
                Source::Beside(distance) => along(e.b.ins().iadd(block, distance), 1),
                Source::PerChannel { base, stride } => {
                    let base = match first_channel {
                        Some(channel) => {
                            let offset = e.b.ins().imul_imm_s(channel, stride * 4);
                            e.b.ins().iadd(base, offset)
                        }
                        None => base,
                    };
                    Operand {
                        base,
                        dtype: DType::F32,
                        strides: vec![Size::Const(0), Size::Const(stride)],
                    }
                }
            });
        }
        emit_map(
            e,
            Map {
                shape: vec![pixels, Size::Const(channels)],
                output: along(block, 1),
                inputs,
                compute: self.chain.compute,
                result: self.chain.compute,
                vectorizable: self.chain.vectorizable(),
                body: &|e, x, ty| self.chain.eval(e, x, ty),
            },
        )
    }
}

/// Applies `epilogue` to the whole of `output`, which the convolution has
/// computed, in place.
pub(super) fn apply_whole(
    e: &mut Emitter<'_, '_, '_>,
    epilogue: &Epilogue,
    output: ValueId,
) -> Result<(), CodegenError> {
    let chain = Chain::new(e, &epilogue.steps, dtype(e, output))?;
    let inputs: Vec<ValueId> = std::iter::once(output)
        .chain(epilogue.operands.iter().copied())
        .collect();
    map_over(
        e,
        output,
        &inputs,
        chain.compute,
        chain.compute,
        chain.vectorizable(),
        &|e, x, ty| chain.eval(e, x, ty),
    )
}
