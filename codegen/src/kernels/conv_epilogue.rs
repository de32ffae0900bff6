//! A convolution's epilogue steps (`Convolution::epilogue`, which
//! `fuse-epilogue` attaches): the elementwise chain applied to what the
//! convolution computed, in place. With a channels-last f32 result whose
//! epilogue operands are laid out as the result or hold one value per
//! channel, the kernels apply it to each block of output pixels right after
//! computing the block, while it is in the cache ([`BlockEpilogue`]: a call
//! of the target's chain kernel for the epilogue, `chain_kernel.rs`, where
//! it has one, else a Cranelift map; a chain with a sigmoid or SiLU of the
//! result so far goes as the steps before it, the activation microkernel
//! and the steps after it, each in place); any other convolution computes its whole
//! result and then applies the chain over it ([`apply_whole`]). Either way
//! each element goes through the chain's steps in order, as the fused
//! kernel would have.

use cranelift_codegen::ir::{InstBuilder, StackSlotData, StackSlotKind, Value};
use cranelift_module::FuncId;
use ptec_ir::ops::expr::Expr;
use ptec_ir::ops::fused::Epilogue;
use ptec_ir::ops::promotion::Operand as PromotionOperand;
use ptec_ir::{CHANNELS_LAST, DType, Graph, ValueId, strides_in_order};

use super::elementwise::{dtype, map_over};
use super::map::{Body, Map, Operand, Vectors, emit_map};
use super::pointwise::{Chain, split_at_activation};
use crate::chain_kernel::Reach;
use crate::emit::{Emitter, PTR, Size};
use crate::error::CodegenError;
use crate::microkernel::Activation;

/// How the epilogue reads an operand for an output element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Laid out as the output: at a fixed distance from the element.
    Beside,
    /// One value per channel, `stride` elements apart (0 for one value).
    PerChannel { stride: i64 },
}

impl Layout {
    /// How the chain kernel reads an operand of this layout, if it can.
    fn reach(self) -> Option<Reach> {
        match self {
            Layout::Beside => Some(Reach::Beside),
            Layout::PerChannel { stride: 0 } => Some(Reach::One),
            Layout::PerChannel { stride: 1 } => Some(Reach::PerChannel),
            Layout::PerChannel { .. } => None,
        }
    }
}

/// The channels of `output` and the layouts of `epilogue`'s operands, when
/// the epilogue goes block by block: an f32 channels-last result of fixed
/// shape, and operands laid out as it or constant along every dimension but
/// the channels'.
pub(crate) fn block_layouts(
    graph: &Graph<'_>,
    epilogue: &Epilogue,
    output: ValueId,
) -> Option<(i64, Vec<Layout>)> {
    let output_ty = &graph.value(output).ty;
    let sizes = output_ty.fixed_shape()?;
    let (&[_, channels, _, _], true) = (
        sizes.as_slice(),
        output_ty.dtype == DType::F32 && output_ty.dim_order == CHANNELS_LAST,
    ) else {
        return None;
    };
    let layouts = epilogue
        .operands
        .iter()
        .map(|&operand| {
            let ty = &graph.value(operand).ty;
            if ty == output_ty {
                return Some(Layout::Beside);
            }
            let own = ty.fixed_shape()?;
            let own: Vec<i64> = own.iter().map(|&size| size as i64).collect();
            let strides = strides_in_order(&own, &ty.dim_order, 1, |a, b| a * b);
            // Aligned at the right, as broadcasting reads them.
            let lead = sizes.len().checked_sub(own.len())?;
            let mut channel_stride = 0;
            for (axis, (&size, &stride)) in own.iter().zip(&strides).enumerate() {
                match (axis + lead, size) {
                    (_, 1) => {}
                    (1, _) => channel_stride = stride,
                    _ => return None,
                }
            }
            (ty.dtype == DType::F32).then_some(Layout::PerChannel {
                stride: channel_stride,
            })
        })
        .collect::<Option<Vec<Layout>>>()?;
    Some((channels as i64, layouts))
}

/// The chain kernel's form of `epilogue`: its steps' expressions (each
/// computing in f32) and how it reads its operands, when it has one.
pub(crate) fn kernel_form(
    epilogue: &Epilogue,
    layouts: &[Layout],
) -> Option<(Vec<Expr>, Vec<Reach>)> {
    let reaches = layouts
        .iter()
        .map(|layout| layout.reach())
        .collect::<Option<Vec<Reach>>>()?;
    let exprs = epilogue
        .steps
        .iter()
        .map(|step| {
            let operands = vec![PromotionOperand::tensor(DType::F32); step.inputs.len()];
            let (compute, result) = step.func.types(&operands).ok()?;
            let f32s = compute == DType::F32 && result == DType::F32;
            f32s.then(|| step.func.expr(compute).ok()).flatten()
        })
        .collect::<Option<Vec<Expr>>>()?;
    Some((exprs, reaches))
}

/// Where an epilogue operand's element for a block's first is.
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
/// result: with the chain kernel the target has for it, or as a map.
pub(super) struct BlockEpilogue {
    chain: Chain,
    /// Elements from one output pixel to the next.
    channels: i64,
    sources: Vec<Source>,
    kernel: Option<FuncId>,
    /// The chain cut around an activation of the result so far (sigmoid,
    /// SiLU), which the activation microkernel computes.
    split: Option<Split>,
}

/// The steps before an activation, the activation microkernel, and the
/// steps after it, each applied in place to a block of whole pixels: the
/// parts as chains of their own, each with the chain kernel the target has
/// for it.
struct Split {
    before: Option<(Chain, Option<FuncId>)>,
    activation: FuncId,
    after: Option<(Chain, Option<FuncId>)>,
}

impl BlockEpilogue {
    /// The block-by-block form of `epilogue` on `output`, or `None` where
    /// the result or an operand is not laid out for it.
    pub(super) fn new(
        e: &mut Emitter<'_, '_, '_>,
        epilogue: &Epilogue,
        output: ValueId,
    ) -> Result<Option<BlockEpilogue>, CodegenError> {
        let Some((channels, layouts)) = block_layouts(e.graph(), epilogue, output) else {
            return Ok(None);
        };
        let chain_kernel = |e: &Emitter<'_, '_, '_>, epilogue: &Epilogue| {
            kernel_form(epilogue, &layouts)
                .and_then(|form| {
                    e.cx.microkernels
                        .chains
                        .get(&(epilogue.steps.clone(), form.1))
                })
                .copied()
        };
        let kernel = chain_kernel(e, epilogue);
        let split = around_activation(epilogue)
            .and_then(|(before, activation, after)| {
                Some((before, e.cx.microkernels.activation(activation)?, after))
            })
            .map(|(before, activation, after)| {
                let part = |part: &Epilogue| match part.steps.is_empty() {
                    true => Ok(None),
                    false => Chain::new(e, &part.steps, DType::F32)
                        .map(|chain| Some((chain, chain_kernel(e, part)))),
                };
                Ok::<_, CodegenError>(Split {
                    before: part(&before)?,
                    activation,
                    after: part(&after)?,
                })
            })
            .transpose()?;
        let output_address = e.address(output);
        let mut sources = Vec::with_capacity(layouts.len());
        for (&operand, layout) in epilogue.operands.iter().zip(layouts) {
            let address = e.address(operand);
            sources.push(match layout {
                Layout::Beside => Source::Beside(e.b.ins().isub(address, output_address)),
                Layout::PerChannel { stride } => Source::PerChannel {
                    base: address,
                    stride,
                },
            });
        }
        let chain = Chain::new(e, &epilogue.steps, DType::F32)?;
        Ok(Some(BlockEpilogue {
            chain,
            channels,
            sources,
            kernel,
            split,
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
        channels: Size,
    ) -> Result<(), CodegenError> {
        // A whole block of pixels is one run of elements.
        if let (Some(split), Size::Const(channels)) = (&self.split, channels)
            && channels == self.channels
        {
            let channels = Size::Const(channels);
            if let Some((chain, kernel)) = &split.before {
                self.apply_chain(e, (chain, *kernel), block, first_channel, pixels, channels)?;
            }
            let function = e.import_function(split.activation);
            let pixel_count = e.value_of(pixels);
            let count = e.b.ins().imul_imm_s(pixel_count, self.channels);
            e.b.ins().call(function, &[block, block, count]);
            if let Some((chain, kernel)) = &split.after {
                self.apply_chain(e, (chain, *kernel), block, first_channel, pixels, channels)?;
            }
            return Ok(());
        }
        self.apply_chain(
            e,
            (&self.chain, self.kernel),
            block,
            first_channel,
            pixels,
            channels,
        )
    }

    /// Applies `chain`, with the chain kernel the target has for it, if
    /// any, to the block as [`BlockEpilogue::apply`] says.
    fn apply_chain(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        (chain, kernel): (&Chain, Option<FuncId>),
        block: Value,
        first_channel: Option<Value>,
        pixels: Size,
        channels: Size,
    ) -> Result<(), CodegenError> {
        // Each operand's element for the block's first.
        let firsts: Vec<Value> = self
            .sources
            .iter()
            .map(|&source| match source {
                Source::Beside(distance) => e.b.ins().iadd(block, distance),
                Source::PerChannel { base, stride } => match first_channel {
                    Some(channel) => {
                        let offset = e.b.ins().imul_imm_s(channel, stride * 4);
                        e.b.ins().iadd(base, offset)
                    }
                    None => base,
                },
            })
            .collect();
        if let Some(kernel) = kernel {
            let bytes = (firsts.len().max(1) * 8) as u32;
            let slot = e.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes,
                3,
            ));
            for (index, &first) in firsts.iter().enumerate() {
                e.b.ins().stack_store(PTR, first, slot, 8 * index as i32);
            }
            let table = e.b.ins().stack_addr(PTR, slot, 0);
            let function = e.import_function(kernel);
            let pixels = e.value_of(pixels);
            let channels = e.value_of(channels);
            let row = e.iconst(self.channels * 4);
            e.b.ins()
                .call(function, &[block, pixels, channels, row, table]);
            return Ok(());
        }
        let along = |base: Value, channel: i64| Operand {
            base,
            dtype: DType::F32,
            strides: vec![Size::Const(self.channels), Size::Const(channel)],
        };
        let mut inputs = vec![along(block, 1)];
        for (&source, &first) in self.sources.iter().zip(&firsts) {
            inputs.push(match source {
                Source::Beside(_) => along(first, 1),
                Source::PerChannel { stride, .. } => Operand {
                    base: first,
                    dtype: DType::F32,
                    strides: vec![Size::Const(0), Size::Const(stride)],
                },
            });
        }
        emit_map(
            e,
            Map {
                shape: vec![pixels, channels],
                output: along(block, 1),
                inputs,
                compute: chain.compute,
                result: chain.compute,
                vectors: Vectors::f32_when(chain.vectorizable()),
                body: &|e, x, ty| chain.eval(e, x, ty),
                whole_kernel: false,
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
    let body: Body<'_> = &|e, x, ty| chain.eval(e, x, ty);
    let map = map_over(
        e,
        output,
        &inputs,
        chain.compute,
        chain.compute,
        Vectors::f32_when(chain.vectorizable()),
        body,
    );
    emit_map(e, map)
}

/// An epilogue cut around an activation the microkernel has: the epilogue
/// of the steps before it, the activation, and the epilogue of the steps
/// after it (on the activation's result), each with the same operands.
pub(crate) fn around_activation(epilogue: &Epilogue) -> Option<(Epilogue, Activation, Epilogue)> {
    let split = split_at_activation(&epilogue.steps)?;
    let part = |steps| Epilogue {
        steps,
        operands: epilogue.operands.clone(),
    };
    Some((part(split.before), split.activation, part(split.after)))
}
