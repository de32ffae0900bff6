//! Compiles a verified graph into functions of a Cranelift module: one
//! function per kernel, and the method's entry point, which calls the
//! kernels in schedule order, follows jumps, and stops at the first kernel
//! that reports an error. Works on any `Module`, so the JIT and object
//! files share it. For the CPU segments of a method the Vulkan back end
//! runs, it compiles only their kernels, with an entry point per segment.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, Block, InstBuilder, Signature, UserFuncName, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};
use ptec_ir::ops::control::{Jump, JumpIfFalse, Label, LabelId};
use ptec_ir::{DType, Dim, Graph, NodeId, Op, Ready, ValueId, ValueKind};
use ptec_runtime::{DimSpec, ElementType, MethodAbi, StateSlot, TensorSlot};

use crate::CodegenOptions;
use crate::define::Definer;
use crate::emit::{Emitter, MethodContext, Microkernels, PTR, Split, flags, scratch_offset};
use crate::error::{Backend, CodegenError};
use crate::kernels::{self, conv_epilogue};
use crate::microkernel::WindowReads;
use crate::symbols::SymbolCode;
use crate::{chain_kernel, microkernel};

/// Which entry points to compile, and so which kernels.
#[derive(Clone, Copy)]
pub(crate) enum Entries<'s> {
    /// One, named by the symbol, running the whole method.
    Method,
    /// One per run of schedule nodes (named `{symbol}__segment{k}`), each
    /// calling that run's kernels only: the CPU segments of a method whose
    /// other nodes run on a Vulkan device.
    Segments(&'s [Vec<NodeId>]),
}

/// A method compiled into a module.
pub(crate) struct CompiledMethod<'a> {
    /// One per entry asked for, in order.
    pub entries: Vec<FuncId>,
    pub abi: MethodAbi,
    /// The constant table, in the order the entry point expects.
    pub constants: Vec<Cow<'a, [u8]>>,
}

/// A kernel: `(arena, constants, dims, scratch, start, end) -> status`,
/// computing the part `[start, end)` of its parallel loop.
fn kernel_signature(module: &dyn Module) -> Signature {
    let mut signature = module.make_signature();
    signature.params.extend([AbiParam::new(PTR); 4]);
    signature.params.extend([AbiParam::new(types::I64); 2]);
    signature.returns.push(AbiParam::new(types::I32));
    signature
}

/// The nodes that are kernels (functions the entry point calls), in the
/// order it calls them: not control flow, not views computed in place.
fn kernel_nodes<'g>(graph: &'g Graph<'_>) -> impl Iterator<Item = NodeId> + 'g {
    graph.schedule().iter().copied().filter(|&node_id| {
        !graph.node(node_id).op().is_control() && !graph.is_view_in_place(node_id)
    })
}

/// The kernels of `graph` as code compiled with `CodegenOptions::profile`
/// numbers them in its marks (`ptec_runtime::profile`): each node's id, op
/// and the values it writes as the IR dump names them, so a kernel's time
/// can be found in `ptec compile --emit ir` (`n12 convolution %18:
/// f32[1,32,112,112]`).
pub fn profiled_kernels(graph: &Graph<'_>) -> Vec<String> {
    kernel_nodes(graph)
        .map(|node_id| {
            let node = graph.node(node_id);
            let outputs: Vec<String> = node
                .outputs()
                .iter()
                .map(|&value| format!("{value}: {}", graph.value(value).ty))
                .collect();
            format!("{node_id} {} {}", node.op().name(), outputs.join(", "))
        })
        .collect()
}

/// `ptec_profile_mark(kernel)` of `ptec_runtime::profile`.
fn mark_signature(module: &dyn Module) -> Signature {
    let mut signature = module.make_signature();
    signature.params.push(AbiParam::new(types::I64));
    signature
}

/// The entry point: `(arena, constants, dims, pool) -> status`.
fn entry_signature(module: &dyn Module) -> Signature {
    let mut signature = module.make_signature();
    signature.params.extend([AbiParam::new(PTR); 4]);
    signature.returns.push(AbiParam::new(types::I32));
    signature
}

/// `ptec_parallel_for(pool, kernel, arena, constants, dims, scratch, count,
/// chunks) -> status` of the pool (`ptec_runtime::pool`).
fn parallel_for_signature(module: &dyn Module) -> Signature {
    let mut signature = module.make_signature();
    signature.params.extend([AbiParam::new(PTR); 6]);
    signature.params.extend([AbiParam::new(types::I64); 2]);
    signature.returns.push(AbiParam::new(types::I32));
    signature
}

/// The least work (in operations, about multiply-adds and elements moved)
/// worth a thread of its own: a kernel with less than twice this runs on
/// the calling thread alone, without the pool. The pool's workers poll for
/// the next call for some tens of microseconds, so a call of an awake pool
/// costs about what a few thousand multiply-adds take; on the 2-core EPYC
/// this was chosen on, mobilenet_v2 on two threads took 2.6 ms with a
/// million (38 of its 52 convolutions on the pool), 2.5 with a quarter of
/// that and 2.4 with this (all 52).
const MIN_PART_COST: u64 = 100_000;

/// Into how many parts a kernel that splits as `split` is worth cutting:
/// 1 means a plain call.
fn chunks(split: Split) -> i64 {
    let total = split.cost.saturating_mul(split.count as u64);
    (total / MIN_PART_COST).min(split.count as u64) as i64
}

/// Compiles `graph` (which must have passed [`ptec_ir::verify`]) into
/// `module`, with the entry points `entries` asks for (the whole method's
/// is named `symbol`). The constant table holds the constants the compiled
/// kernels read, each entered when a kernel first takes its address.
pub(crate) fn compile_method<'a>(
    module: &mut dyn Module,
    graph: &Graph<'a>,
    symbol: &str,
    options: &CodegenOptions,
    definer: &mut Definer<'_>,
    entries: Entries<'_>,
) -> Result<CompiledMethod<'a>, CodegenError> {
    ptec_ir::verify(graph)?;
    let has_fma = module
        .isa()
        .isa_flags()
        .iter()
        .any(|flag| flag.name == "has_fma" && flag.as_bool() == Some(true));
    let mut cx = MethodContext {
        graph,
        constants: Vec::new(),
        constant_index: HashMap::new(),
        has_fma,
        errors: Vec::new(),
        scratch_bytes: 0,
        microkernels: match options.microkernels {
            true => define_microkernels(module, graph, symbol, options, definer)?,
            false => Microkernels::default(),
        },
        math: HashMap::new(),
    };
    let signature = kernel_signature(module);
    let mut context = module.make_context();
    let mut builder_context = FunctionBuilderContext::new();
    let mut kernel_of = HashMap::new();
    let compiled: Option<HashSet<NodeId>> = match entries {
        Entries::Method => None,
        Entries::Segments(segments) => Some(segments.iter().flatten().copied().collect()),
    };
    let kernels = kernel_nodes(graph).filter(|node_id| {
        compiled
            .as_ref()
            .is_none_or(|nodes| nodes.contains(node_id))
    });
    for node_id in kernels {
        let node = graph.node(node_id);
        let name = format!("{symbol}__{node_id}_{}", node.op().name());
        let split;
        let id = module.declare_function(&name, Linkage::Local, &signature)?;
        context.func.signature = signature.clone();
        context.func.name = UserFuncName::user(0, id.as_u32());
        {
            let builder = FunctionBuilder::new(&mut context.func, &mut builder_context);
            let mut emitter = Emitter::new(builder, &mut cx, module, node.op());
            kernels::lower(&mut emitter, node).map_err(|source| CodegenError::Node {
                node: node_id.to_string(),
                op: node.op().name().to_string(),
                source: Box::new(source),
            })?;
            split = emitter.finish();
        }
        definer.function(module, id, &name, &mut context)?;
        module.clear_context(&mut context);
        kernel_of.insert(node_id, (id, split));
    }
    let mut define = |symbol: &str, nodes: &[NodeId]| {
        define_entry(
            module,
            graph,
            EntryPoint { symbol, nodes },
            &kernel_of,
            &mut cx.errors,
            options.profile,
            definer,
        )
    };
    let entries = match entries {
        Entries::Method => vec![define(symbol, graph.schedule())?],
        Entries::Segments(segments) => segments
            .iter()
            .enumerate()
            .map(|(k, nodes)| define(&format!("{symbol}__segment{k}"), nodes))
            .collect::<Result<_, _>>()?,
    };
    Ok(CompiledMethod {
        entries,
        abi: method_abi(graph, Backend::Cpu, cx.errors, cx.scratch_bytes)?,
        constants: cx.constants,
    })
}

/// Defines the microkernels the target of `module` can run: GEMM tiles on
/// x86-64 with FMA and AVX2, or AVX-512 too (widest and tallest first), and
/// the direct convolution kernels (AVX-512 with BMI2, or AVX2) and the
/// integer GEMM tiles (AVX512-VNNI, AVX-VNNI or AVX2), and with AVX-512 and BMI2 a
/// chain kernel for each distinct epilogue of `graph`'s convolutions that
/// one computes; `options` may keep them to AVX2, keep the integer tiles
/// from VNNI, or leave them out.
fn define_microkernels(
    module: &mut dyn Module,
    graph: &Graph<'_>,
    symbol: &str,
    options: &CodegenOptions,
    definer: &mut Definer<'_>,
) -> Result<Microkernels, CodegenError> {
    let isa = module.isa();
    let enabled = |name: &str| {
        isa.isa_flags()
            .iter()
            .any(|flag| flag.name == name && flag.as_bool() == Some(true))
    };
    let x86_64 = isa.triple().architecture == target_lexicon::Architecture::X86_64;
    let mut widths = Vec::new();
    let avx2 = x86_64 && enabled("has_avx2") && enabled("has_fma");
    let avx512 = avx2 && options.avx512 && enabled("has_avx512f");
    if avx512 {
        widths.push(microkernel::Width::Avx512);
    }
    if avx2 {
        widths.push(microkernel::Width::Avx2);
    }
    // The direct convolution and activation kernels' widest: AVX-512's
    // masks need BMI2.
    let direct = match (avx512 && enabled("has_bmi2"), avx2) {
        (true, _) => Some(microkernel::Width::Avx512),
        (false, true) => Some(microkernel::Width::Avx2),
        (false, false) => None,
    };
    let vnni = options.vnni;
    let integer = match (avx512, avx2) {
        _ if !options.integer => None,
        // The tile's instructions are AVX512F's and `vpdpbusd` (there is no
        // byte or word instruction on zmm, which would need AVX512BW, a
        // flag Cranelift does not have: asking for it left this form unused).
        (true, _) if vnni && enabled("has_avx512vnni") => Some(microkernel::IntegerForm::Vnni512),
        (_, true) if vnni && enabled("has_avx_vnni") => Some(microkernel::IntegerForm::VnniAvx2),
        (_, true) => Some(microkernel::IntegerForm::Avx2),
        (_, false) => None,
    };
    // Declares and defines one microkernel, named `name` in the module.
    let mut define = |module: &mut dyn Module,
                      name: String,
                      signature: &Signature,
                      (what, code): (String, Result<Vec<u8>, iced_x86::IcedError>)|
     -> Result<FuncId, CodegenError> {
        let name = name.to_lowercase();
        let code =
            code.map_err(|error| CodegenError::Isa(format!("assembling the {what}: {error}")))?;
        let id = module.declare_function(&name, Linkage::Local, signature)?;
        definer.bytes(module, id, &name, 16, code)?;
        Ok(id)
    };
    let mut signature = module.make_signature();
    signature.params.extend([AbiParam::new(PTR); 10]);
    // The GEMM and integer GEMM tiles take one argument more.
    let mut gemm_signature = signature.clone();
    gemm_signature.params.push(AbiParam::new(PTR));
    let mut microkernels = Microkernels::default();
    for tile in microkernel::Tile::for_widths(&widths) {
        let name = format!(
            "{symbol}__gemm_{}x{}_{:?}",
            tile.rows,
            tile.columns(),
            tile.width
        );
        let code = microkernel::gemm_tile(tile);
        let id = define(
            module,
            name,
            &gemm_signature,
            (format!("{tile:?} GEMM microkernel"), code),
        )?;
        microkernels.gemm.push((tile, id));
    }
    if let Some(width) = direct {
        let [channels, broadcast] = [WindowReads::Channels, WindowReads::Broadcast].map(|reads| {
            let name = format!("{symbol}__direct_{reads:?}_{width:?}");
            let what = format!("direct convolution microkernel ({reads:?})");
            define(
                module,
                name,
                &signature,
                (what, microkernel::direct(width, reads)),
            )
        });
        microkernels.direct = Some((width, [channels?, broadcast?]));
        let mut signature = module.make_signature();
        signature.params.extend([AbiParam::new(PTR); 3]);
        for activation in microkernel::Activation::ALL {
            let name = format!("{symbol}__{activation:?}_{width:?}");
            let mut signature = signature.clone();
            if activation == microkernel::Activation::ShiftedExp {
                signature.params.push(AbiParam::new(types::F32));
            }
            let what = format!("{activation:?} microkernel");
            let code = microkernel::activation(width, activation);
            let id = define(module, name, &signature, (what, code))?;
            microkernels.activations.push((activation, id));
        }
    }
    if let Some(form) = integer {
        // The f32 tiles' arguments and the scales.
        let mut integer_signature = gemm_signature.clone();
        integer_signature.params.push(AbiParam::new(PTR));
        let [two, one] = [2, 1].map(|registers| {
            let name = format!("{symbol}__integer_gemm_{registers}_{form:?}");
            let what = format!("{form:?} integer GEMM microkernel");
            let code = microkernel::integer_gemm_tile(form, registers);
            define(module, name, &integer_signature, (what, code))
        });
        microkernels.integer = Some((form, [two?, one?]));
    }
    if direct == Some(microkernel::Width::Avx512) {
        let mut signature = module.make_signature();
        signature.params.extend([AbiParam::new(PTR); 5]);
        let epilogues = graph.schedule().iter().filter_map(|&id| {
            let node = graph.node(id);
            match node.op() {
                Op::Convolution(conv) => Some((conv.epilogue.as_ref()?, *node.outputs().first()?)),
                _ => None,
            }
        });
        // An epilogue with an activation may also run as the chains of the
        // steps before and after it, around the activation microkernel.
        let epilogues = epilogues.flat_map(|(epilogue, output)| {
            let parts = conv_epilogue::around_activation(epilogue)
                .map(|(before, _, after)| [before, after])
                .into_iter()
                .flatten()
                .filter(|part| !part.steps.is_empty());
            std::iter::once(epilogue.clone())
                .chain(parts)
                .map(move |epilogue| (epilogue, output))
        });
        for (epilogue, output) in epilogues {
            let epilogue = &epilogue;
            let Some((_, layouts)) = conv_epilogue::block_layouts(graph, epilogue, output) else {
                continue;
            };
            let Some((exprs, reaches)) = conv_epilogue::kernel_form(epilogue, &layouts) else {
                continue;
            };
            let key = (epilogue.steps.clone(), reaches);
            if microkernels.chains.contains_key(&key) {
                continue;
            }
            let steps: Vec<chain_kernel::Step<'_>> = exprs
                .iter()
                .zip(&epilogue.steps)
                .map(|(expr, step)| chain_kernel::Step {
                    expr,
                    inputs: &step.inputs,
                })
                .collect();
            let Some(code) = chain_kernel::chain(&steps, &key.1) else {
                continue;
            };
            let name = format!("{symbol}__epilogue{}", microkernels.chains.len());
            let what = "epilogue chain kernel".to_string();
            let id = define(module, name, &signature, (what, code))?;
            microkernels.chains.insert(key, id);
        }
    }
    Ok(microkernels)
}

/// An entry point to define: its symbol and the schedule nodes it runs.
struct EntryPoint<'e> {
    symbol: &'e str,
    nodes: &'e [NodeId],
}

/// An entry point running `nodes` (the schedule, or a run of it): computes
/// the symbols known at the start, calls each kernel in order (computing
/// the symbols each node's result settles after it), returns the first
/// non-zero status, and turns labels and jumps into blocks and branches.
/// A kernel that splits into at least two parts worth a thread goes
/// through the pool; any other is called directly on its whole range.
fn define_entry(
    module: &mut dyn Module,
    graph: &Graph<'_>,
    EntryPoint { symbol, nodes }: EntryPoint<'_>,
    kernel_of: &HashMap<NodeId, (FuncId, Option<Split>)>,
    errors: &mut Vec<String>,
    profile: bool,
    definer: &mut Definer<'_>,
) -> Result<FuncId, CodegenError> {
    let signature = entry_signature(module);
    let mark = match profile {
        true => Some(module.declare_function(
            ptec_runtime::profile::PROFILE_MARK_SYMBOL,
            Linkage::Import,
            &mark_signature(module),
        )?),
        false => None,
    };
    let id = module.declare_function(symbol, Linkage::Local, &signature)?;
    let parallel_for = module.declare_function(
        ptec_runtime::pool::PARALLEL_FOR_SYMBOL,
        Linkage::Import,
        &parallel_for_signature(module),
    )?;
    let mut context = module.make_context();
    context.func.signature = signature;
    context.func.name = UserFuncName::user(0, id.as_u32());
    let mut builder_context = FunctionBuilderContext::new();
    let target = module.target_config();
    let mut b = FunctionBuilder::new(&mut context.func, &mut builder_context);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let fail = b.create_block();
    b.append_block_param(fail, types::I32);
    let symbols = SymbolCode::new(graph, params[0], params[2], fail);
    let (arena, constants, dims, pool) = (params[0], params[1], params[2], params[3]);
    let scratch = b.ins().iadd_imm_s(arena, scratch_offset(graph) as i64);
    let whole = [
        b.ins().iconst(types::I64, 0),
        b.ins().iconst(types::I64, i64::MAX),
    ];
    let parallel_for = module.declare_func_in_func(parallel_for, b.func);
    // With profiling, a mark as the method starts and after each kernel.
    let mark = mark.map(|id| module.declare_func_in_func(id, b.func));
    let mut kernel_index = 0;
    let emit_mark = |b: &mut FunctionBuilder<'_>, index: i64| {
        if let Some(mark) = mark {
            let index = b.ins().iconst(types::I64, index);
            b.ins().call(mark, &[index]);
        }
    };
    emit_mark(&mut b, -1);
    symbols.emit(&mut b, Ready::Start, errors)?;
    let mut labels: HashMap<LabelId, Block> = HashMap::new();
    let mut label_block = |b: &mut FunctionBuilder<'_>, label| {
        *labels.entry(label).or_insert_with(|| b.create_block())
    };
    for &node_id in nodes {
        let node = graph.node(node_id);
        match *node.op() {
            Op::Label(Label { label }) => {
                let block = label_block(&mut b, label);
                b.ins().jump(block, &[]);
                b.switch_to_block(block);
            }
            Op::Jump(Jump { label }) => {
                let block = label_block(&mut b, label);
                b.ins().jump(block, &[]);
                let unreachable = b.create_block();
                b.switch_to_block(unreachable);
            }
            Op::JumpIfFalse(JumpIfFalse { condition, label }) => {
                let offset = graph.value(condition).offset.unwrap_or(0);
                let condition = b.ins().load(types::I8, flags(), params[0], offset as i32);
                let target = label_block(&mut b, label);
                let next = b.create_block();
                b.ins().brif(condition, next, &[], target, &[]);
                b.switch_to_block(next);
            }
            _ if graph.is_view_in_place(node_id) => {}
            _ => {
                let (kernel, split) = kernel_of[&node_id];
                let func_ref = module.declare_func_in_func(kernel, b.func);
                let call = match split.filter(|&split| chunks(split) >= 2) {
                    Some(split) => {
                        let address = b.ins().func_addr(PTR, func_ref);
                        let count = b.ins().iconst(types::I64, split.count);
                        let parts = b.ins().iconst(types::I64, chunks(split));
                        b.ins().call(
                            parallel_for,
                            &[pool, address, arena, constants, dims, scratch, count, parts],
                        )
                    }
                    None => b.ins().call(
                        func_ref,
                        &[arena, constants, dims, scratch, whole[0], whole[1]],
                    ),
                };
                let status = b.inst_results(call)[0];
                emit_mark(&mut b, kernel_index);
                kernel_index += 1;
                let failed = b.ins().icmp_imm_s(IntCC::NotEqual, status, 0);
                let next = b.create_block();
                b.ins().brif(failed, fail, &[status.into()], next, &[]);
                b.switch_to_block(next);
            }
        }
        symbols.emit(&mut b, Ready::After(node_id), errors)?;
    }
    let zero = b.ins().iconst(types::I32, 0);
    b.ins().return_(&[zero]);
    b.switch_to_block(fail);
    let status = b.block_params(fail)[0];
    b.ins().return_(&[status]);
    b.seal_all_blocks();
    b.finalize(target);
    definer.function(module, id, symbol, &mut context)?;
    Ok(id)
}

/// The runtime's name for an element type: the one mapping between them,
/// for every back end and the bundled tensors of the command line.
pub fn element_type(dtype: DType) -> ElementType {
    match dtype {
        DType::Bool => ElementType::Bool,
        DType::U8 => ElementType::U8,
        DType::I8 => ElementType::I8,
        DType::I16 => ElementType::I16,
        DType::I32 => ElementType::I32,
        DType::I64 => ElementType::I64,
        DType::F16 => ElementType::F16,
        DType::BF16 => ElementType::BF16,
        DType::F32 => ElementType::F32,
        DType::F64 => ElementType::F64,
    }
}

fn tensor_slot(
    graph: &Graph<'_>,
    backend: Backend,
    value: ValueId,
) -> Result<TensorSlot, CodegenError> {
    let data = graph.value(value);
    Ok(TensorSlot {
        offset: data.offset.ok_or_else(|| CodegenError::UnsupportedMethod {
            backend,
            why: format!("{value}, a constant, as a method input or output"),
        })?,
        element: element_type(data.ty.dtype),
        shape: data
            .ty
            .shape
            .iter()
            .map(|dim| match *dim {
                Dim::Fixed(size) => DimSpec::Fixed(size),
                Dim::Symbol(symbol) => DimSpec::Symbol(symbol.index()),
            })
            .collect(),
        dim_order: data.ty.dim_order.clone(),
    })
}

/// The description of the method the runtime needs.
pub(crate) fn method_abi(
    graph: &Graph<'_>,
    backend: Backend,
    errors: Vec<String>,
    scratch_bytes: u64,
) -> Result<MethodAbi, CodegenError> {
    let states = graph
        .values()
        .filter_map(|(_, value)| match (&value.kind, value.offset) {
            (ValueKind::State { initial }, Some(offset)) => Some(StateSlot {
                offset,
                initial: initial.as_deref().map(<[u8]>::to_vec),
            }),
            _ => None,
        })
        .collect();
    Ok(MethodAbi {
        name: graph.name.clone(),
        arena_bytes: scratch_offset(graph) + scratch_bytes,
        scratch_bytes,
        inputs: graph
            .inputs()
            .iter()
            .map(|&input| tensor_slot(graph, backend, input))
            .collect::<Result<_, _>>()?,
        outputs: graph
            .outputs()
            .iter()
            .map(|&output| tensor_slot(graph, backend, output))
            .collect::<Result<_, _>>()?,
        states,
        dim_bounds: graph.symbols().map(|(_, symbol)| symbol.bound).collect(),
        errors,
    })
}
