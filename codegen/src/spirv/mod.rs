//! Vulkan compute shaders for a method: one shader per dispatch, of a kernel
//! node or of a run of small ones ([`SHARED_WORK`]), written in WGSL with
//! the nodes' shapes and strides baked in and where their tensors lie in
//! the buffers read from push constants, checked by naga's validator and
//! turned into SPIR-V by naga's back end.
//!
//! Every shader sees two storage buffers as arrays of 32-bit words: the
//! arena (binding 0: inputs, outputs, activations and state, at the
//! offsets the memory planner chose, the same plan the CPU code uses) and
//! the constants (binding 1, packed here); and both again, the arena as
//! quads of words and both as texel buffers of quads (`wgsl::BUFFERS`).
//! A dispatch binds the whole buffers where a binding shows a shader that
//! much, or else the bytes its kernels touch ([`binding`]), and its
//! shader's offsets are from the start of its bindings. Identical shaders
//! (kernels of the same shapes, wherever their tensors lie) are kept once;
//! the dispatches run them in schedule order, each with its push constants
//! and bindings. [`support`] says which
//! kinds of op shaders express at all (`kernels.rs` dispatches each node,
//! `expr.rs` lowers elementwise expressions).
//!
//! A node no shader expresses (its kind, or its element types or layout)
//! runs on the CPU instead: the schedule is cut into segments, maximal runs
//! of kernels the device runs and of kernels the CPU runs (the JIT's code,
//! `compile_jit_segments`, on the same arena, which the device keeps mapped
//! in the same layout). A method with control flow runs on the CPU whole,
//! since a jump cannot cross segments.

mod exact;
mod expr;
mod kernels;
mod texel;
mod wgsl;
mod words;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;

use ptec_ir::tensor_data::relayout;
use ptec_ir::{Graph, NodeId, OpKind, TensorType, ValueId, ValueKind};
use ptec_runtime::MethodAbi;
use ptec_runtime::vulkan::{Bindings, DeviceProgram, Dispatch, Segment, buffer_bytes};

use crate::emit::scratch_offset;
use crate::error::{Backend, CodegenError};
use crate::method::method_abi;
use wgsl::{
    ARENA_QUAD_STORED, BUFFERS, CONSTANT_QUAD_STORED, FUNCTIONS, Refusal, WORKGROUP_SIZE,
    lift_bases, refuse,
};

/// Whether shaders express ops of `kind` at all, or why none of them.
pub(crate) fn support(kind: OpKind) -> Result<(), &'static str> {
    match kind {
        OpKind::Label | OpKind::Jump | OpKind::JumpIfFalse => Err("control flow"),
        OpKind::Index | OpKind::Gather => Err(
            "gathers, whose indices out of range the CPU reports as an error and a shader cannot",
        ),
        OpKind::Scatter | OpKind::IndexPut => Err(
            "scatters, whose indices out of range the CPU reports as an error and a shader cannot, and whose writes to one element must come in order",
        ),
        OpKind::MaskedScatter => Err(
            "masked scatters, which count the mask's true elements in order and report a source too short as an error",
        ),
        OpKind::RepeatInterleave => Err(
            "repeat_interleave, whose counts the CPU checks against the output's length and reports as an error",
        ),
        OpKind::ArgReduce => Err("arg-reductions, whose indices are 64-bit integers"),
        OpKind::TopK => Err("top-k selections, whose indices are 64-bit integers"),
        OpKind::Elementwise
        | OpKind::Fused
        | OpKind::Copy
        | OpKind::Reshape
        | OpKind::Permute
        | OpKind::Select
        | OpKind::Slice
        | OpKind::Cat
        | OpKind::Pad
        | OpKind::Roll
        | OpKind::Repeat
        | OpKind::Strided
        | OpKind::SliceScatter
        | OpKind::Tril
        | OpKind::Reduce
        | OpKind::CumSum
        | OpKind::Softmax
        | OpKind::LayerNorm
        | OpKind::BatchNorm
        | OpKind::MatMul
        | OpKind::Addmm
        | OpKind::Convolution
        | OpKind::MaxPool2d
        | OpKind::AvgPool2d
        | OpKind::Full
        | OpKind::Arange => Ok(()),
    }
}

/// Where each constant a shader reads lives in the constants buffer, and
/// in which dim order: its own, or the one every kernel reading it reads
/// fastest ([`kernels::preferred_order`]).
struct Packing {
    constants: HashMap<ValueId, Stored>,
    bytes: Vec<u8>,
}

/// A constant in the constants buffer.
struct Stored {
    offset: u64,
    /// Its type as stored: the value's, its dim order perhaps another.
    ty: TensorType,
}

impl Packing {
    /// Packs every constant `nodes` read, each at a multiple of 64 bytes.
    fn new(graph: &Graph<'_>, nodes: &[NodeId]) -> Packing {
        // The order every reader of a constant prefers, if they agree.
        let mut preferred: HashMap<ValueId, Option<Vec<u8>>> = HashMap::new();
        let mut constants = Vec::new();
        for &node in nodes {
            let node = graph.node(node);
            for value in node.inputs() {
                if let ValueKind::Constant(data) = &graph.value(value).kind {
                    let order = kernels::preferred_order(graph, node, value);
                    match preferred.get_mut(&value) {
                        Some(agreed) if *agreed != order => *agreed = None,
                        Some(_) => {}
                        None => {
                            preferred.insert(value, order);
                            constants.push((value, data));
                        }
                    }
                }
            }
        }
        let mut packing = Packing {
            constants: HashMap::new(),
            bytes: Vec::new(),
        };
        for (value, data) in constants {
            let own = &graph.value(value).ty;
            let relaid = preferred[&value].clone().and_then(|dim_order| {
                let ty = TensorType {
                    dim_order,
                    ..own.clone()
                };
                let axes: Vec<usize> = (0..own.rank()).collect();
                Some((relayout(data, own, &ty, &axes)?, ty))
            });
            let (bytes, ty) = match &relaid {
                Some((bytes, ty)) => (bytes.as_slice(), ty.clone()),
                None => (data.as_ref(), own.clone()),
            };
            let offset = packing.bytes.len().next_multiple_of(64);
            packing.bytes.resize(offset, 0);
            packing.bytes.extend_from_slice(bytes);
            let offset = offset as u64;
            packing.constants.insert(value, Stored { offset, ty });
        }
        // Whole quads, as the shaders see them as texels.
        packing
            .bytes
            .resize(packing.bytes.len().next_multiple_of(16), 0);
        packing
    }

    /// Where `value`, a constant a shader reads, lies and how.
    fn constant(&self, value: ValueId) -> Result<&Stored, Refusal> {
        self.constants
            .get(&value)
            .ok_or_else(|| refuse(format!("constant {value}, which no node reads")))
    }

    /// The bytes of the arena and of the constants a dispatch of `nodes`
    /// binds ([`binding`]) on a device whose bindings show at most
    /// `max_range` bytes: from the first byte its tensors touch of each to
    /// the last.
    fn bindings(
        &self,
        graph: &Graph<'_>,
        nodes: &[NodeId],
        max_range: u64,
    ) -> Result<Bindings, Refusal> {
        let mut spans: [Option<Range<u64>>; 2] = [None, None];
        for &node in nodes {
            let node = graph.node(node);
            for value in node
                .inputs()
                .into_iter()
                .chain(node.outputs().iter().copied())
            {
                let data = graph.value(value);
                let bytes = data.ty.max_bytes(|symbol| graph.bound(symbol));
                let (span, start) = match (&data.kind, data.offset) {
                    (ValueKind::Constant(_), _) => (&mut spans[1], self.constant(value)?.offset),
                    (_, Some(offset)) => (&mut spans[0], offset),
                    (_, None) => continue,
                };
                let end = start.saturating_add(bytes);
                *span = Some(match span.take() {
                    Some(known) => known.start.min(start)..known.end.max(end),
                    None => start..end,
                });
            }
        }
        let [arena, constants] = spans;
        Ok(Bindings {
            arena: binding(arena.as_ref(), arena_bytes(graph), max_range),
            constants: binding(constants.as_ref(), self.bytes.len() as u64, max_range),
        })
    }
}

/// The bytes of the arena the shaders see: the memory plan's
/// (`MethodAbi::arena_bytes` of a Vulkan method, which has no scratch).
fn arena_bytes(graph: &Graph<'_>) -> u64 {
    scratch_offset(graph)
}

/// Where a binding of a buffer may start: 256 bytes is the most any device
/// asks of `minStorageBufferOffsetAlignment` and of
/// `minTexelBufferOffsetAlignment`.
const BINDING_ALIGNMENT: u64 = 256;

/// The bytes of a buffer of `len` bytes that a dispatch whose tensors lie
/// in `span` binds: the whole buffer where one binding may show a shader
/// that much (`max_range`, the device's `maxStorageBufferRange`), and
/// otherwise the span, from an aligned start to a whole quad.
fn binding(span: Option<&Range<u64>>, len: u64, max_range: u64) -> Range<u64> {
    let whole = buffer_bytes(len);
    match span {
        _ if whole <= max_range => 0..whole,
        Some(span) => {
            let start = span.start - span.start % BINDING_ALIGNMENT;
            start..span.end.next_multiple_of(16).min(whole)
        }
        None => 0..16,
    }
}

/// Where a dispatch sees its tensors: the constants as packed, and the
/// byte of each buffer its bindings start at, which every offset in its
/// shader is relative to.
#[derive(Clone, Copy)]
struct Layout<'p> {
    packing: &'p Packing,
    arena_start: u64,
    constants_start: u64,
}

impl<'p> Layout<'p> {
    /// The layout of a dispatch that binds both buffers from their start.
    fn whole(packing: &'p Packing) -> Self {
        Layout {
            packing,
            arena_start: 0,
            constants_start: 0,
        }
    }

    /// Where `value`, a constant a shader reads, lies from the start of
    /// the binding, and its type as stored.
    fn constant(&self, value: ValueId) -> Result<(u64, &'p TensorType), Refusal> {
        let stored = self.packing.constant(value)?;
        let offset = stored
            .offset
            .checked_sub(self.constants_start)
            .ok_or_else(|| refuse(format!("constant {value}, before its dispatch's binding")))?;
        Ok((offset, &stored.ty))
    }

    /// Where `value`, planned at `offset` in the arena, lies from the
    /// start of the binding.
    fn arena(&self, value: ValueId, offset: u64) -> Result<u64, Refusal> {
        offset.checked_sub(self.arena_start).ok_or_else(|| {
            refuse(format!(
                "{value}, before its dispatch's binding of the arena"
            ))
        })
    }
}

/// One distinct shader: its WGSL source and the SPIR-V naga made of it.
#[derive(Clone, Debug)]
pub struct Shader {
    pub wgsl: String,
    pub spirv: Vec<u32>,
}

/// A byte range of one of the two buffers that a dispatch reads or writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferRange {
    /// The IR value (`%12`).
    pub value: String,
    /// `arena` or `constants`.
    pub buffer: &'static str,
    pub offset: u64,
    pub bytes: u64,
    /// The order its dimensions lie in there, outermost first: the IR
    /// value's, except for a constant stored in the order its readers
    /// prefer ([`Layout`]).
    pub dim_order: Vec<u8>,
}

/// One dispatch: which shader, how many workgroups, for which nodes.
#[derive(Clone, Debug)]
pub struct ShaderDispatch {
    pub shader: usize,
    pub workgroups: [u32; 3],
    /// Where its tensors lie, which the shader reads as push constants:
    /// from the start of its bindings.
    pub push_constants: Vec<u32>,
    /// The bytes of each buffer it binds.
    pub bindings: Bindings,
    /// The kernels it runs, in order: one, or a run of small ones.
    pub kernels: Vec<DispatchedKernel>,
    /// What its kernels read and write, kernel by kernel.
    pub reads: Vec<BufferRange>,
    pub writes: Vec<BufferRange>,
}

/// A kernel a dispatch runs: its node (`n12`) and its op's name.
#[derive(Clone, Debug)]
pub struct DispatchedKernel {
    pub node: String,
    pub op: String,
}

/// A kernel no shader expresses, which the CPU runs.
#[derive(Clone, Debug)]
pub struct CpuKernel {
    pub node: NodeId,
    /// The op's name.
    pub op: String,
    /// Why no shader runs it.
    pub reason: String,
}

/// A run of a method's schedule on one side.
#[derive(Clone, Debug)]
pub enum VulkanSegment {
    /// These dispatches, one command buffer.
    Device { dispatches: Range<usize> },
    /// Kernels the CPU runs on the device's mapped arena: `nodes` (the
    /// schedule nodes its entry point runs, in order: every node for a
    /// method with control flow) and, of them, the kernels.
    Cpu {
        nodes: Vec<NodeId>,
        kernels: Vec<CpuKernel>,
    },
}

/// A method compiled for a Vulkan device.
#[derive(Clone, Debug)]
pub struct VulkanMethod {
    /// The method's boundary and arena, without the CPU kernels' scratch
    /// memory (`compile_jit_segments` gives the arena with it).
    pub abi: MethodAbi,
    /// The constants buffer's contents.
    pub constants: Vec<u8>,
    pub shaders: Vec<Shader>,
    pub dispatches: Vec<ShaderDispatch>,
    /// The schedule's segments in order.
    pub segments: Vec<VulkanSegment>,
    /// The most texels (quads) the shaders fetch through one texel buffer
    /// view: the constants' or the arena's quads where they read them so,
    /// 0 where they read neither.
    pub texels: u64,
}

impl VulkanMethod {
    /// Invocations per workgroup (x), the same for every shader.
    pub const WORKGROUP_SIZE: u32 = WORKGROUP_SIZE as u32;

    /// The nodes of each CPU segment, in order: what
    /// `compile_jit_segments` compiles an entry point for each of.
    pub fn cpu_segments(&self) -> Vec<Vec<NodeId>> {
        self.segments
            .iter()
            .filter_map(|segment| match segment {
                VulkanSegment::Cpu { nodes, .. } => Some(nodes.clone()),
                VulkanSegment::Device { .. } => None,
            })
            .collect()
    }

    /// What the Vulkan runtime runs, in an arena of `arena_bytes` (the
    /// method's, with the CPU kernels' scratch memory when some run on the
    /// CPU): the buffers' sizes and contents, the SPIR-V modules, the
    /// dispatches and the segments, CPU segment `k` running host entry `k`.
    pub fn device_program(&self, arena_bytes: u64) -> DeviceProgram {
        let mut cpu_segments = 0;
        DeviceProgram {
            arena_bytes,
            constants: self.constants.clone(),
            texels: self.texels,
            shaders: self
                .shaders
                .iter()
                .map(|shader| shader.spirv.clone())
                .collect(),
            dispatches: self
                .dispatches
                .iter()
                .map(|dispatch| Dispatch {
                    shader: dispatch.shader,
                    workgroups: dispatch.workgroups,
                    push_constants: dispatch.push_constants.clone(),
                    bindings: dispatch.bindings.clone(),
                })
                .collect(),
            segments: self
                .segments
                .iter()
                .map(|segment| match segment {
                    VulkanSegment::Device { dispatches } => Segment::Device(dispatches.clone()),
                    VulkanSegment::Cpu { .. } => {
                        cpu_segments += 1;
                        Segment::Host(cpu_segments - 1)
                    }
                })
                .collect(),
        }
    }
}

/// Where the Vulkan back end runs a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// A compute shader.
    Device,
    /// The JIT's code, between device segments, for this reason.
    Cpu(String),
}

/// Where the Vulkan back end runs each kernel of a verified, planned graph,
/// in schedule order (views computed in place and kernels of no elements
/// need no code and are not listed): on the device when a shader lowers
/// it, on the CPU for the reason none does, and every kernel on the CPU in
/// a method with control flow, since a jump cannot cross segments. A method
/// with dynamic shapes is refused whole.
pub fn vulkan_placement(
    graph: &Graph<'_>,
    limits: &VulkanLimits,
) -> Result<Vec<(NodeId, Place)>, CodegenError> {
    Ok(units(graph, limits)?
        .into_iter()
        .flat_map(|unit| match unit {
            Unit::Dispatch(nodes) => nodes
                .into_iter()
                .map(|node| (node, Place::Device))
                .collect::<Vec<_>>(),
            Unit::Cpu(node, why) => vec![(node, Place::Cpu(why))],
        })
        .collect())
}

/// The kernels of each dispatch of a graph's Vulkan program, in order: a
/// kernel alone, or a run of small ones in one workgroup
/// ([`SHARED_WORK`]).
pub fn vulkan_dispatches(
    graph: &Graph<'_>,
    limits: &VulkanLimits,
) -> Result<Vec<Vec<NodeId>>, CodegenError> {
    Ok(units(graph, limits)?
        .into_iter()
        .filter_map(|unit| match unit {
            Unit::Dispatch(nodes) => Some(nodes),
            Unit::Cpu(..) => None,
        })
        .collect())
}

/// The most work (`kernels::work`) of a kernel that shares its dispatch
/// with the small kernels next to it, as does one of at most one
/// workgroup's invocations (which a dispatch of its own would run on one
/// workgroup too): such a run of kernels is one shader of one workgroup,
/// each kernel a loop over its invocations by the workgroup's, a barrier
/// after it. A dispatch costs more than such a kernel (lavapipe, two cores:
/// about 20 µs, half of it handing the workgroups to its threads), and a
/// run of them sees each other's writes without leaving the shader.
const SHARED_WORK: u64 = 1 << 17;

/// What runs where, in schedule order: dispatches of one or more kernels,
/// and kernels the CPU runs.
enum Unit {
    Dispatch(Vec<NodeId>),
    Cpu(NodeId, String),
}

/// The schedule's kernels in [`Unit`]s.
fn units(graph: &Graph<'_>, limits: &VulkanLimits) -> Result<Vec<Unit>, CodegenError> {
    ptec_ir::verify(graph)?;
    if graph.symbols().next().is_some() {
        return Err(CodegenError::UnsupportedMethod {
            backend: Backend::Vulkan,
            why: "dynamic shapes".to_string(),
        });
    }
    let schedule = graph.schedule();
    if has_control_flow(graph) {
        let reason = support(OpKind::Jump).err().unwrap_or_default();
        return Ok(schedule
            .iter()
            .filter(|&&node| !graph.node(node).op().is_control() && !graph.is_view_in_place(node))
            .map(|&node| Unit::Cpu(node, format!("the method has {reason}")))
            .collect());
    }
    let everything = Packing::new(graph, schedule);
    let max_range = limits.storage_range();
    let mut units = Vec::new();
    // Whether the last unit is a dispatch of small kernels.
    let mut sharing = false;
    for &node in schedule {
        let in_place = graph.is_view_in_place(node);
        let kernel = kernels::kernel(
            graph,
            &Layout::whole(&everything),
            graph.node(node),
            in_place,
        )
        .and_then(|kernel| match &kernel {
            Some(found) if found.invocations > 0 => {
                check_bindable(graph, &everything, &[node], max_range).map(|()| kernel)
            }
            _ => Ok(kernel),
        });
        match kernel {
            Ok(Some(kernel)) if kernel.invocations > 0 => {
                let small = kernel.invocations <= WORKGROUP_SIZE
                    || kernels::work(graph, graph.node(node)) <= SHARED_WORK;
                match units.last_mut() {
                    Some(Unit::Dispatch(nodes))
                        if small
                            && sharing
                            && check_bindable(
                                graph,
                                &everything,
                                &[nodes.as_slice(), &[node]].concat(),
                                max_range,
                            )
                            .is_ok() =>
                    {
                        nodes.push(node)
                    }
                    _ => units.push(Unit::Dispatch(vec![node])),
                }
                sharing = small;
            }
            Ok(_) => {}
            Err(Refusal(why)) => {
                units.push(Unit::Cpu(node, why));
                sharing = false;
            }
        }
    }
    Ok(units)
}

/// Refuses `nodes` together where a binding of a device whose bindings
/// show at most `max_range` bytes would not show a shader every byte they
/// touch of a buffer, judged on `packing`, of every constant any kernel
/// reads (placement comes before the packing of the device's constants
/// alone, which is no longer between two constants, but whose binding may
/// start up to an alignment earlier).
fn check_bindable(
    graph: &Graph<'_>,
    packing: &Packing,
    nodes: &[NodeId],
    max_range: u64,
) -> Result<(), Refusal> {
    let bindings = packing.bindings(graph, nodes, max_range)?;
    let buffers = [
        ("arena", bindings.arena, arena_bytes(graph), 0),
        (
            "constants",
            bindings.constants,
            packing.bytes.len() as u64,
            BINDING_ALIGNMENT,
        ),
    ];
    for (buffer, bound, len, slack) in buffers {
        let needed = match bound.end - bound.start {
            whole if bound.start == 0 && bound.end == buffer_bytes(len) => whole,
            part => part + slack,
        };
        if needed > max_range {
            return Err(refuse(format!(
                "tensors that span {needed} bytes of the {buffer}, more than the {max_range} one binding shows a shader (maxStorageBufferRange)"
            )));
        }
    }
    Ok(())
}

fn has_control_flow(graph: &Graph<'_>) -> bool {
    graph
        .schedule()
        .iter()
        .any(|&node| graph.node(node).op().is_control())
}

/// The limits of the device shaders are written for: one that runs the
/// program in-process compiles it for its own; `ptec compile --emit spirv`
/// for [`VulkanLimits::DEFAULT`] unless told others. A device with lower
/// limits refuses the program (`DeviceProgram::check`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VulkanLimits {
    /// `maxTexelBufferElements`: the most texels (quads) a texel buffer
    /// view holds. Shaders read quads of a binding with more through
    /// storage, as they do with 0.
    pub texel_buffer_elements: u64,
    /// `maxStorageBufferRange`: the most bytes a binding of a buffer shows
    /// a shader. Where a buffer is larger, each dispatch binds the part its
    /// kernels touch, and a kernel that touches more runs on the CPU. `None`
    /// where no one asked: the device's own when a run opens one (desktop
    /// GPUs show up to 4 GiB), otherwise [`Self::ASSUMED_STORAGE_BUFFER_RANGE`].
    pub storage_buffer_range: Option<u64>,
}

impl VulkanLimits {
    /// 2^27 texels, what lavapipe and NVIDIA's and Intel's drivers offer
    /// (AMD's more), and the storage range no one asked for.
    pub const DEFAULT: VulkanLimits = VulkanLimits {
        texel_buffer_elements: 1 << 27,
        storage_buffer_range: None,
    };

    /// The bytes a binding shows a shader where neither a device nor the
    /// user says: 2^27, what lavapipe and many mobile GPUs offer.
    pub const ASSUMED_STORAGE_BUFFER_RANGE: u64 = 1 << 27;

    /// The bytes shaders are written for one binding to show.
    fn storage_range(&self) -> u64 {
        self.storage_buffer_range
            .unwrap_or(Self::ASSUMED_STORAGE_BUFFER_RANGE)
    }
}

impl Default for VulkanLimits {
    fn default() -> Self {
        VulkanLimits::DEFAULT
    }
}

/// Which buffers shaders read quads of through texel buffer views: each
/// binding whose quads a view of the device's `maxTexelBufferElements`
/// holds; the others through storage.
#[derive(Clone, Copy)]
struct Texels {
    constants: bool,
    arena: bool,
}

/// Compiles a verified, planned graph into compute shaders for the kernels
/// [`vulkan_placement`] puts on the device, and segments saying where the
/// others run, for a device of `limits`.
pub fn compile_vulkan(
    graph: &Graph<'_>,
    limits: &VulkanLimits,
) -> Result<VulkanMethod, CodegenError> {
    let units = units(graph, limits)?;
    let abi = method_abi(graph, Backend::Vulkan, Vec::new(), 0)?;
    let on_device: Vec<NodeId> = units
        .iter()
        .filter_map(|unit| match unit {
            Unit::Dispatch(nodes) => Some(nodes.iter().copied()),
            Unit::Cpu(..) => None,
        })
        .flatten()
        .collect();
    // The constants buffer holds what the shaders read only.
    let packing = Packing::new(graph, &on_device);
    let mut shaders = Shaders {
        limits: *limits,
        shaders: Vec::new(),
        known: HashMap::new(),
        dispatches: Vec::new(),
        texels: 0,
    };
    let mut segments: Vec<VulkanSegment> = Vec::new();
    for unit in units {
        match (unit, segments.last_mut()) {
            (Unit::Dispatch(nodes), last) => {
                let index = shaders.dispatches.len();
                shaders.add(graph, &packing, &nodes)?;
                match last {
                    Some(VulkanSegment::Device { dispatches }) => dispatches.end = index + 1,
                    _ => segments.push(VulkanSegment::Device {
                        dispatches: index..index + 1,
                    }),
                }
            }
            (Unit::Cpu(node, why), last) => {
                let kernel = cpu_kernel(graph, node, why);
                match last {
                    Some(VulkanSegment::Cpu { nodes, kernels }) => {
                        nodes.push(node);
                        kernels.push(kernel);
                    }
                    _ => segments.push(VulkanSegment::Cpu {
                        nodes: vec![node],
                        kernels: vec![kernel],
                    }),
                }
            }
        }
    }
    if let [VulkanSegment::Cpu { nodes, .. }] = segments.as_mut_slice()
        && has_control_flow(graph)
    {
        // Every kernel runs on the CPU: the entry runs the whole schedule,
        // labels and jumps included.
        *nodes = graph.schedule().to_vec();
    }
    Ok(VulkanMethod {
        abi,
        constants: packing.bytes,
        shaders: shaders.shaders,
        dispatches: shaders.dispatches,
        segments,
        texels: shaders.texels,
    })
}

fn cpu_kernel(graph: &Graph<'_>, node: NodeId, reason: String) -> CpuKernel {
    CpuKernel {
        node,
        op: graph.node(node).op().name().to_string(),
        reason,
    }
}

/// The distinct shaders of a method and its dispatches so far.
struct Shaders {
    limits: VulkanLimits,
    shaders: Vec<Shader>,
    /// Each shader's index, by its source.
    known: HashMap<String, usize>,
    dispatches: Vec<ShaderDispatch>,
    /// The most texels a dispatch so far fetches through one view.
    texels: u64,
}

impl Shaders {
    /// Adds the dispatch of `nodes`, kernels whose shaders lower (with a
    /// packing of every constant the shaders read) and do some work: one
    /// kernel's shader, or one workgroup running each in turn. It binds
    /// the buffers whole where a binding shows that much, otherwise the
    /// bytes its kernels touch, and reads quads through texel views where
    /// one holds a binding's quads.
    fn add(
        &mut self,
        graph: &Graph<'_>,
        packing: &Packing,
        nodes: &[NodeId],
    ) -> Result<(), CodegenError> {
        let in_context = |node_id: NodeId, source: CodegenError| CodegenError::Node {
            node: node_id.to_string(),
            op: graph.node(node_id).op().name().to_string(),
            source: Box::new(source),
        };
        let refused = |node_id: NodeId, Refusal(why)| {
            in_context(
                node_id,
                CodegenError::unsupported(graph.node(node_id).op(), Backend::Vulkan, why),
            )
        };
        let bindings = packing
            .bindings(graph, nodes, self.limits.storage_range())
            .map_err(|refusal| refused(nodes[0], refusal))?;
        let [arena_quads, constant_quads] =
            [&bindings.arena, &bindings.constants].map(|range| (range.end - range.start) / 16);
        let max_texels = self.limits.texel_buffer_elements;
        let texels = Texels {
            constants: constant_quads <= max_texels,
            arena: arena_quads <= max_texels,
        };
        let layout = Layout {
            packing,
            arena_start: bindings.arena.start,
            constants_start: bindings.constants.start,
        };
        let mut kernels = Vec::with_capacity(nodes.len());
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for &node_id in nodes {
            let node = graph.node(node_id);
            let kernel = kernels::kernel(graph, &layout, node, graph.is_view_in_place(node_id))
                .map_err(|refusal| refused(node_id, refusal))?
                .ok_or_else(|| {
                    refused(
                        node_id,
                        refuse("no kernel, although one was placed on the device"),
                    )
                })?;
            kernels.push(kernel);
            for (values, ranges) in [
                (&node.inputs()[..], &mut reads),
                (node.outputs(), &mut writes),
            ] {
                for &value in values {
                    ranges.push(
                        buffer_range(graph, packing, value)
                            .map_err(|refusal| refused(node_id, refusal))?,
                    );
                }
            }
        }
        let (source, workgroups, push_constants) = shader_source(&kernels, texels);
        // The larger of the bindings fetched as texels.
        let fetched = [
            (texels.constants, constant_quads),
            (texels.arena, arena_quads),
        ]
        .into_iter()
        .filter_map(|(viewed, quads)| viewed.then_some(quads));
        self.texels = fetched.fold(self.texels, u64::max);
        let shader = match self.known.get(&source) {
            Some(&shader) => shader,
            None => {
                let spirv = to_spirv(&source).map_err(|error| in_context(nodes[0], error))?;
                self.shaders.push(Shader {
                    wgsl: source.clone(),
                    spirv,
                });
                self.known.insert(source, self.shaders.len() - 1);
                self.shaders.len() - 1
            }
        };
        self.dispatches.push(ShaderDispatch {
            shader,
            workgroups,
            push_constants,
            bindings,
            kernels: nodes
                .iter()
                .map(|&node| DispatchedKernel {
                    node: node.to_string(),
                    op: graph.node(node).op().name().to_string(),
                })
                .collect(),
            reads,
            writes,
        });
        Ok(())
    }
}

fn buffer_range(
    graph: &Graph<'_>,
    packing: &Packing,
    value: ValueId,
) -> Result<BufferRange, Refusal> {
    let data = graph.value(value);
    let bytes = data.ty.max_bytes(|symbol| graph.bound(symbol));
    let (buffer, offset, ty) = match (&data.kind, data.offset) {
        (ValueKind::Constant(_), _) => {
            let stored = packing.constant(value)?;
            ("constants", stored.offset, &stored.ty)
        }
        (_, offset) => ("arena", offset.unwrap_or_default(), &data.ty),
    };
    Ok(BufferRange {
        value: value.to_string(),
        buffer,
        offset,
        bytes,
        dim_order: ty.dim_order.clone(),
    })
}

/// The whole shader of a dispatch's kernels, the workgroups to dispatch
/// and the push constants it reads: where its tensors lie, so that kernels
/// of the same shapes elsewhere in the buffers share the shader. A kernel
/// alone runs an invocation per invocation of its own, in a grid of at most
/// 65,535 workgroups in x (the least every device allows), rows of them in
/// y; a run of kernels runs in one workgroup, each kernel's invocations a
/// loop over the workgroup's, a barrier after each so that the next sees
/// what it wrote.
fn shader_source(kernels: &[kernels::Kernel], texels: Texels) -> (String, [u32; 3], Vec<u32>) {
    const MAX_X: u64 = 65_535;
    let (main, workgroups) = match kernels {
        [kernel] => {
            let groups = kernel.invocations.div_ceil(WORKGROUP_SIZE);
            let x = groups.min(MAX_X);
            let y = groups.div_ceil(x);
            let main = format!(
                "@compute @workgroup_size({WORKGROUP_SIZE})
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
    let t = id.x + id.y * {}u;
    if (t >= {}u) {{ return; }}
{}}}
",
                x * WORKGROUP_SIZE,
                kernel.invocations,
                kernel.body
            );
            (main, [x as u32, y as u32, 1])
        }
        _ => {
            let mut main = format!(
                "@compute @workgroup_size({WORKGROUP_SIZE})
fn main(@builtin(local_invocation_index) lane: u32) {{
"
            );
            for (k, kernel) in kernels.iter().enumerate() {
                if k > 0 {
                    main.push_str("    storageBarrier();\n");
                }
                let _ = write!(
                    main,
                    "    for (var t = lane; t < {}u; t = t + {WORKGROUP_SIZE}u) {{\n{}    }}\n",
                    kernel.invocations, kernel.body
                );
            }
            main.push_str("}\n");
            (main, [1, 1, 1])
        }
    };
    let (main, bases, push_constants) = lift_bases(&main);
    // The helper functions the code calls, and those they call; quads
    // through storage where no view holds them, and the arena's where
    // kernels share the dispatch.
    let shared = kernels.len() > 1;
    let function_named = |name: &str, function: &'static str| match name {
        "arena_quad" if shared || !texels.arena => ARENA_QUAD_STORED,
        "constant_quad" if !texels.constants => CONSTANT_QUAD_STORED,
        _ => function,
    };
    let mut included = vec![false; FUNCTIONS.len()];
    let mut text = main.clone();
    loop {
        let mut added = false;
        for (k, (name, function)) in FUNCTIONS.iter().enumerate() {
            if !included[k] && text.contains(&format!("{name}(")) {
                included[k] = true;
                text.push_str(function);
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    let mut source = BUFFERS.to_string();
    source.push_str(&bases);
    for (k, &(name, function)) in FUNCTIONS.iter().enumerate() {
        if included[k] {
            source.push_str(function_named(name, function));
        }
    }
    source.push_str(&main);
    (source, workgroups, push_constants)
}

/// Parses, validates and translates one shader.
fn to_spirv(source: &str) -> Result<Vec<u32>, CodegenError> {
    use naga::back::spv;
    use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
    let rejected = |stage: &str, message: String| CodegenError::Shader {
        stage: stage.to_string(),
        message,
        shader: source.to_string(),
    };
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|error| rejected("parsing", error.emit_to_string(source)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::IMMEDIATES,
    )
    .validate(&module)
    .map_err(|error| rejected("validation", error.emit_to_string(source)))?;
    // Every index is clamped into its buffer, so that no shader reads or
    // writes outside the two buffers whatever a bug in ptec computes.
    let options = spv::Options {
        lang_version: (1, 3),
        flags: spv::WriterFlags::empty(),
        bounds_check_policies: BoundsCheckPolicies {
            index: BoundsCheckPolicy::Restrict,
            buffer: BoundsCheckPolicy::Restrict,
            ..BoundsCheckPolicies::default()
        },
        force_loop_bounding: false,
        ..spv::Options::default()
    };
    let pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".to_string(),
    };
    spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map(exact::mark_exact)
        .map(exact::preserve_special_floats)
        .map(texel::texel_buffers)
        .map_err(|error| rejected("SPIR-V generation", error.to_string()))
}
