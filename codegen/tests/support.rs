//! What each back end supports, against what its dispatch does: for every
//! kind of op, a small graph in the IR's text form with a node of that kind
//! compiles on every back end whose [`support`] accepts the kind (on the
//! device, for the Vulkan back end), and is refused with `support`'s reason
//! by every back end that refuses it (the Vulkan back end places it on the
//! CPU for that reason).

use ptec_codegen::{
    Backend, CodegenError, CodegenOptions, Place, VulkanLimits, compile_jit, compile_vulkan,
    support, vulkan_placement,
};
use ptec_ir::{Graph, NodeId, OpKind};

/// A planned graph with a node of `kind` (of element types and layouts
/// every back end that supports the kind takes). A match over every kind,
/// so that a new op needs a graph here.
fn graph_of(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Elementwise => {
            "graph g (arena 192 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[3] @64 = input 1
  %2: f32[2,3] @128 = add(%0, %1) alpha=2
  return %2
}"
        }
        OpKind::Fused => {
            "graph g (arena 192 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[3] @64 = input 1
  %2: f32[2,3] @128 = fused(%0, %1) steps=[mul(in0, in1); relu(s0)]
  return %2
}"
        }
        OpKind::Copy => {
            "graph g (arena 128 bytes) {
  %0: i32[2,3] @0 = input 0
  %1: f32[2,3] @64 = copy(%0)
  return %1
}"
        }
        OpKind::Reshape => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[6] @64 = reshape(%0)
  return %1
}"
        }
        OpKind::Permute => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[3,2] @64 = permute(%0) dims=[1, 0]
  return %1
}"
        }
        OpKind::Select => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[3] @64 = select(%0) dim=0 index=1
  return %1
}"
        }
        OpKind::Slice => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2,2] @64 = slice(%0) dim=1 start=0 step=2
  return %1
}"
        }
        OpKind::Cat => {
            "graph g (arena 192 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[1,3] @64 = input 1
  %2: f32[3,3] @128 = cat(%0, %1) dim=0
  return %2
}"
        }
        OpKind::Pad => {
            "graph g (arena 128 bytes) {
  %0: f32[3] @0 = input 0
  %1: f32[6] @64 = pad(%0) before=[1] after=[2] value=0.5
  return %1
}"
        }
        OpKind::Repeat => {
            "graph g (arena 128 bytes) {
  %0: f32[3] @0 = input 0
  %1: f32[2,6] @64 = repeat(%0) repeats=[2, 2]
  return %1
}"
        }
        OpKind::Roll => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2,3] @64 = roll(%0) shifts=[1, 2]
  return %1
}"
        }
        OpKind::Strided => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2,3] @64 = strided(%0) offset=5 strides=[-3, -1]
  return %1
}"
        }
        OpKind::SliceScatter => {
            "graph g (arena 192 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2,1] @64 = input 1
  %2: f32[2,3] @128 = slice_scatter(%0, %1) dim=1 start=2 step=1
  return %2
}"
        }
        OpKind::Tril => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2,3] @64 = tril(%0) diagonal=0
  return %1
}"
        }
        OpKind::Index => {
            "graph g (arena 192 bytes) {
  %0: f32[4,3] @0 = input 0
  %1: i64[2] @64 = input 1
  %2: f32[2,3] @128 = index(%0, %1) dims=[0] wrap=true
  return %2
}"
        }
        OpKind::Gather => {
            "graph g (arena 192 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: i64[2,2] @64 = input 1
  %2: f32[2,2] @128 = gather(%0, %1) dim=1
  return %2
}"
        }
        OpKind::Scatter => {
            "graph g (arena 256 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: i64[2,2] @64 = input 1
  %2: f32[2,2] @128 = input 2
  %3: f32[2,3] @192 = scatter(%0, %1, %2) dim=1 accumulate=true
  return %3
}"
        }
        OpKind::IndexPut => {
            "graph g (arena 256 bytes) {
  %0: f32[4,3] @0 = input 0
  %1: f32[3] @64 = input 1
  %2: i64[2] @128 = input 2
  %3: f32[4,3] @192 = index_put(%0, %1, %2) dims=[0] accumulate=false
  return %3
}"
        }
        OpKind::MaskedScatter => {
            "graph g (arena 256 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: bool[3] @64 = input 1
  %2: f32[6] @128 = input 2
  %3: f32[2,3] @192 = masked_scatter(%0, %1, %2)
  return %3
}"
        }
        OpKind::Reduce => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2] @64 = reduce_sum(%0) dims=[1] keepdim=false
  return %1
}"
        }
        OpKind::ArgReduce => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: i64[2] @64 = arg_max(%0) dim=1 keepdim=false
  return %1
}"
        }
        OpKind::TopK => {
            "graph g (arena 192 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2,2] @64, %2: i64[2,2] @128 = top_k(%0) k=2 dim=1 largest=true
  return %1
}"
        }
        OpKind::CumSum => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2,3] @64 = cum_sum(%0) dim=1
  return %1
}"
        }
        OpKind::Softmax => {
            "graph g (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[2,3] @64 = softmax(%0) dim=1 log=true safe=false
  return %1
}"
        }
        OpKind::LayerNorm => {
            "graph g (arena 256 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[3] @64 = input 1
  %2: f32[2,3] @128, %3: f32[2,1] @192, %4: f32[2,1] @224 = layer_norm(%0, weight=%1) normalized_dims=1 eps=1e-5
  return %2
}"
        }
        OpKind::BatchNorm => {
            "graph g (arena 192 bytes) {
  %0: f32[1,2,2,2] @0 = input 0
  %1: f32[2] @64 = input 1
  %2: f32[2] @96 = input 2
  %3: f32[1,2,2,2] @128 = batch_norm(%0, mean=%1, variance=%2) eps=1e-5
  return %3
}"
        }
        OpKind::MatMul => {
            "graph g (arena 192 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[3,2] @64 = input 1
  %2: f32[2,2] @128 = mat_mul(%0, %1) clamp_min=0.0
  return %2
}"
        }
        OpKind::Addmm => {
            "graph g (arena 256 bytes) {
  %0: f32[2] @0 = input 0
  %1: f32[2,3] @64 = input 1
  %2: f32[3,2] @128 = input 2
  %3: f32[2,2] @192 = addmm(%0, %1, %2) beta=1 alpha=0.5
  return %3
}"
        }
        OpKind::Convolution => {
            "graph g (arena 256 bytes) {
  %0: f32[1,1,3,3] @0 = input 0
  %1: f32[2,1,2,2] @64 = input 1
  %2: f32[2] @128 = input 2
  %3: f32[1,2,2,2] @192 = convolution(%0, %1, bias=%2) stride=[1, 1] padding=[0, 0] dilation=[1, 1] groups=1 clamp_max=6.0
  return %3
}"
        }
        OpKind::MaxPool2d => {
            "graph g (arena 128 bytes) {
  %0: f32[1,1,3,3] @0 = input 0
  %1: f32[1,1,2,2] @64, %2: i64[1,1,2,2] @96 = max_pool2d(%0) kernel=[2, 2] stride=[1, 1] padding=[0, 0] dilation=[1, 1] ceil_mode=false
  return %1
}"
        }
        OpKind::AvgPool2d => {
            "graph g (arena 128 bytes) {
  %0: f32[1,1,3,3] @0 = input 0
  %1: f32[1,1,2,2] @64 = avg_pool2d(%0) kernel=[2, 2] stride=[1, 1] padding=[0, 0] ceil_mode=false count_include_pad=true
  return %1
}"
        }
        OpKind::Full => {
            "graph g (arena 64 bytes) {
  %0: f32[3] @0 = full() value=1.5
  return %0
}"
        }
        OpKind::Arange => {
            "graph g (arena 64 bytes) {
  %0: i32[4] @0 = arange() start=2 step=3
  return %0
}"
        }
        OpKind::RepeatInterleave => {
            "graph g (arena 128 bytes) {
  %0: i64[3] @0 = input 0
  %1: i64[4] @64 = repeat_interleave(%0)
  return %1
}"
        }
        OpKind::Label => {
            "graph g (arena 128 bytes) {
  %0: f32[3] @0 = input 0
  L0:
  %1: f32[3] @64 = neg(%0)
  return %1
}"
        }
        OpKind::Jump => {
            "graph g (arena 128 bytes) {
  %0: f32[3] @0 = input 0
  jump L0
  L0:
  %1: f32[3] @64 = neg(%0)
  return %1
}"
        }
        OpKind::JumpIfFalse => {
            "graph g (arena 128 bytes) {
  %0: bool[] @0 = input 0
  %1: f32[3] @32 = input 1
  jump_if_false %0 L0
  L0:
  %2: f32[3] @64 = neg(%1)
  return %2
}"
        }
    }
}

/// How `backend` takes the node `node` of `graph`: compiled, or refused
/// with a reason (the Vulkan back end's reason for placing it on the CPU;
/// for control flow, which needs no kernel, the reason it places the
/// method's kernels there).
fn verdict(backend: Backend, graph: &Graph<'_>, node: NodeId) -> Result<(), String> {
    match backend {
        Backend::Cpu => match compile_jit(graph, &CodegenOptions::default(), u64::MAX) {
            Ok(_) => Ok(()),
            Err(CodegenError::Node { source, .. }) => match *source {
                CodegenError::Unsupported {
                    backend: Backend::Cpu,
                    why,
                    ..
                } => Err(why),
                other => panic!("the CPU: {other}"),
            },
            Err(error) => panic!("the CPU: {error}"),
        },
        Backend::Vulkan => {
            compile_vulkan(graph, &VulkanLimits::DEFAULT)
                .unwrap_or_else(|error| panic!("Vulkan: {error}"));
            let placed = vulkan_placement(graph, &VulkanLimits::DEFAULT)
                .unwrap_or_else(|error| panic!("{error}"));
            let place = match graph.op(node).is_control() {
                true => placed.first().map(|(_, place)| place.clone()),
                false => placed
                    .iter()
                    .find(|(placed, _)| *placed == node)
                    .map(|(_, place)| place.clone()),
            };
            match place {
                Some(Place::Device) => Ok(()),
                Some(Place::Cpu(why)) => Err(why),
                None => panic!("{node} is placed nowhere: {placed:?}"),
            }
        }
    }
}

#[test]
fn each_dispatch_refuses_exactly_what_support_refuses_with_its_reason() {
    for &kind in OpKind::ALL {
        let graph = ptec_ir::parse(graph_of(kind))
            .unwrap_or_else(|error| panic!("the graph of {}: {error}", kind.name()));
        let node = graph
            .schedule()
            .iter()
            .copied()
            .find(|&node| graph.op(node).kind() == kind)
            .unwrap_or_else(|| panic!("the graph of {} has no such node", kind.name()));
        for backend in Backend::ALL {
            let expected =
                support(backend, kind).map_err(|reason| match graph.op(node).is_control() {
                    true => format!("the method has {reason}"),
                    false => reason.to_string(),
                });
            assert_eq!(
                verdict(backend, &graph, node),
                expected,
                "{backend} on {}",
                kind.name()
            );
        }
    }
}

/// A method the Vulkan back end refuses whole says so in a sentence.
#[test]
fn a_refusal_reads_as_a_sentence() {
    let graph = ptec_ir::parse(
        "graph g (arena 64 bytes) {
  symbol s0 <= 8  // input 0 dim 0
  %0: f32[s0] @0 = input 0
  %1: f32[s0] @32 = neg(%0)
  return %1
}",
    )
    .expect("the graph parses");
    let error =
        compile_vulkan(&graph, &VulkanLimits::DEFAULT).expect_err("shaders take no dynamic shapes");
    assert_eq!(
        error.to_string(),
        "not supported yet on the Vulkan backend: dynamic shapes"
    );
}
