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
//! quads of words and the constants as an image of quads
//! (`wgsl::BUFFERS`). Identical shaders (kernels of the same shapes,
//! wherever their tensors lie) are kept once; the dispatches run them in
//! schedule order, each with its push constants. [`support`] says which
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
use ptec_runtime::vulkan::{DeviceProgram, Dispatch, Segment};

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
pub(crate) struct Layout {
    constants: HashMap<ValueId, Stored>,
    bytes: Vec<u8>,
}

/// A constant in the constants buffer.
struct Stored {
    offset: u64,
    /// Its type as stored: the value's, its dim order perhaps another.
    ty: TensorType,
}

impl Layout {
    /// Packs every constant `nodes` read, each at a multiple of 64 bytes.
    fn new(graph: &Graph<'_>, nodes: &[NodeId]) -> Layout {
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
        let mut layout = Layout {
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
            let offset = layout.bytes.len().next_multiple_of(64);
            layout.bytes.resize(offset, 0);
            layout.bytes.extend_from_slice(bytes);
            let offset = offset as u64;
            layout.constants.insert(value, Stored { offset, ty });
        }
        // Whole quads, as the shaders see them as texels.
        layout
            .bytes
            .resize(layout.bytes.len().next_multiple_of(16), 0);
        layout
    }

    /// Where `value`, a constant a shader reads, lies and how.
    fn constant(&self, value: ValueId) -> Result<&Stored, Refusal> {
        self.constants
            .get(&value)
            .ok_or_else(|| refuse(format!("constant {value}, which no node reads")))
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
    /// Where its tensors lie, which the shader reads as push constants.
    pub push_constants: Vec<u32>,
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
pub fn vulkan_placement(graph: &Graph<'_>) -> Result<Vec<(NodeId, Place)>, CodegenError> {
    Ok(units(graph)?
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
pub fn vulkan_dispatches(graph: &Graph<'_>) -> Result<Vec<Vec<NodeId>>, CodegenError> {
    Ok(units(graph)?
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
fn units(graph: &Graph<'_>) -> Result<Vec<Unit>, CodegenError> {
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
    let everything = Layout::new(graph, schedule);
    let mut units = Vec::new();
    // Whether the last unit is a dispatch of small kernels.
    let mut sharing = false;
    for &node in schedule {
        let in_place = graph.is_view_in_place(node);
        match kernels::kernel(graph, &everything, graph.node(node), in_place) {
            Ok(Some(kernel)) if kernel.invocations > 0 => {
                let small = kernel.invocations <= WORKGROUP_SIZE
                    || kernels::work(graph, graph.node(node)) <= SHARED_WORK;
                match units.last_mut() {
                    Some(Unit::Dispatch(nodes)) if small && sharing => nodes.push(node),
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

fn has_control_flow(graph: &Graph<'_>) -> bool {
    graph
        .schedule()
        .iter()
        .any(|&node| graph.node(node).op().is_control())
}

/// The `maxTexelBufferElements` shaders are written for when no device is
/// at hand (`ptec compile --emit spirv`): 2^27, what lavapipe and NVIDIA's
/// and Intel's drivers offer (AMD's more). A device that offers fewer
/// refuses a program whose shaders fetch more through one view
/// (`DeviceProgram::check`); one that runs the program in-process compiles
/// it for its own limit.
pub const DEFAULT_TEXEL_BUFFER_ELEMENTS: u64 = 1 << 27;

/// Which buffers shaders read quads of through texel buffer views: each
/// one whose quads a view of `max_texels` (a device's
/// `maxTexelBufferElements`) holds; the others through storage.
#[derive(Clone, Copy)]
struct Texels {
    constants: bool,
    arena: bool,
}

/// Compiles a verified, planned graph into compute shaders for the kernels
/// [`vulkan_placement`] puts on the device, and segments saying where the
/// others run, for a device whose texel buffer views hold `max_texels`
/// texels.
pub fn compile_vulkan(graph: &Graph<'_>, max_texels: u64) -> Result<VulkanMethod, CodegenError> {
    let units = units(graph)?;
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
    let layout = Layout::new(graph, &on_device);
    let [constants, arena] = [layout.bytes.len() as u64 / 16, abi.arena_bytes.div_ceil(16)];
    let texels = Texels {
        constants: constants <= max_texels,
        arena: arena <= max_texels,
    };
    let mut shaders = Shaders::default();
    let mut segments: Vec<VulkanSegment> = Vec::new();
    for unit in units {
        match (unit, segments.last_mut()) {
            (Unit::Dispatch(nodes), last) => {
                let index = shaders.dispatches.len();
                shaders.add(graph, &layout, &nodes, texels)?;
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
    // The larger of the buffers fetched as texels.
    let fetched = [(texels.constants, constants), (texels.arena, arena)]
        .into_iter()
        .filter_map(|(viewed, quads)| viewed.then_some(quads))
        .max()
        .unwrap_or(0);
    Ok(VulkanMethod {
        abi,
        constants: layout.bytes,
        shaders: shaders.shaders,
        dispatches: shaders.dispatches,
        segments,
        texels: fetched,
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
#[derive(Default)]
struct Shaders {
    shaders: Vec<Shader>,
    /// Each shader's index, by its source.
    known: HashMap<String, usize>,
    dispatches: Vec<ShaderDispatch>,
}

impl Shaders {
    /// Adds the dispatch of `nodes`, kernels whose shaders lower (with a
    /// layout of every constant the shaders read) and do some work: one
    /// kernel's shader, or one workgroup running each in turn.
    fn add(
        &mut self,
        graph: &Graph<'_>,
        layout: &Layout,
        nodes: &[NodeId],
        texels: Texels,
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
        let mut kernels = Vec::with_capacity(nodes.len());
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for &node_id in nodes {
            let node = graph.node(node_id);
            let kernel = kernels::kernel(graph, layout, node, graph.is_view_in_place(node_id))
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
                        buffer_range(graph, layout, value)
                            .map_err(|refusal| refused(node_id, refusal))?,
                    );
                }
            }
        }
        let (source, workgroups, push_constants) = shader_source(&kernels, texels);
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
    layout: &Layout,
    value: ValueId,
) -> Result<BufferRange, Refusal> {
    let data = graph.value(value);
    let bytes = data.ty.max_bytes(|symbol| graph.bound(symbol));
    let (buffer, offset, ty) = match (&data.kind, data.offset) {
        (ValueKind::Constant(_), _) => {
            let stored = layout.constant(value)?;
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
