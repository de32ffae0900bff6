//! Programs that lie (issue 16): committed fixtures with one flatbuffer field
//! changed so that the file is well formed but says something false. Each is
//! refused by `test`, `run` and `compile` on every back end (JIT, AOT,
//! Vulkan) with exit code 1 and an error naming the method, the instruction
//! and what is wrong, within a time limit: no panic, no hang, no exit 0.

mod common;

use std::path::Path;
use std::time::Duration;

use common::lie::{Lie, Patch, find_instruction, instructions, value};
use common::ptec_within;
use ptec_schema::program as fb;
use ptec_schema::xnnpack as xfb;

/// Longer than any of these programs takes to compile and run.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs every command on `file` and checks each refuses it with an error
/// containing each of `expected`.
fn refused(file: &Path, expected: &[&str]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = file.to_str().expect("utf-8 path");
    let so = dir.path().join("lie.so");
    let spirv = dir.path().join("spirv");
    let (so, spirv) = (so.to_str().expect("utf-8"), spirv.to_str().expect("utf-8"));
    let mut runs: Vec<Vec<&str>> = Vec::new();
    for backend in ["jit", "aot", "vulkan"] {
        runs.push(vec!["test", "--backend", backend, file]);
        runs.push(vec!["run", "--backend", backend, file]);
    }
    runs.push(vec!["compile", "-o", so, file]);
    runs.push(vec!["compile", "--emit", "spirv", "-o", spirv, file]);
    for args in runs {
        let output = ptec_within(TIMEOUT, &args);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let context = format!(
            "ptec {}:\nstdout: {stdout}\nstderr: {stderr}",
            args.join(" ")
        );
        assert_eq!(output.status.code(), Some(1), "{context}");
        assert!(!stderr.contains("panicked"), "{context}");
        // `test` reports each file on stdout (`FAIL file: why`); the other
        // commands print their error on stderr.
        let message = if args[0] == "test" {
            let line = stdout.lines().next().unwrap_or_default();
            assert!(line.starts_with("FAIL "), "{context}");
            line.to_string()
        } else {
            assert!(stderr.starts_with("error:"), "{context}");
            stderr.to_string()
        };
        for part in expected {
            assert!(message.contains(part), "expected {part:?}; {context}");
        }
    }
}

/// Saves `lie` and checks it is refused.
fn check(lie: &Lie, expected: &[&str]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    refused(&lie.save(dir.path(), "lie.bpte"), expected);
}

fn is_jump(instruction: &fb::Instruction<'_>) -> bool {
    instruction.instr_args_as_jump_false_call().is_some()
}

fn jump_destination(instruction: &fb::Instruction<'_>, destination: i32) -> Patch {
    let jump = instruction.instr_args_as_jump_false_call().expect("a jump");
    Patch::field(
        &jump._tab,
        fb::JumpFalseCall::VT_DESTINATION_INSTRUCTION,
        &destination.to_le_bytes(),
    )
}

/// The `n`th JumpFalseCall of `cond` (its `if`, then its jump over the
/// `else` on a constant false), with its index.
fn cond_jump(lie: &Lie, n: usize) -> (usize, fb::Instruction<'_>) {
    instructions(&lie.program())
        .filter(|(_, instruction)| is_jump(instruction))
        .nth(n)
        .expect("cond's jumps")
}

#[test]
fn a_backward_jump_is_refused() {
    let lie = Lie::of("cond.portable.bpte");
    let (at, _) = cond_jump(&lie, 0);
    let lie = lie.patch(|lie| vec![jump_destination(&cond_jump(lie, 0).1, 0)]);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "backward", "loop"]);
}

#[test]
fn a_jump_onto_itself_is_refused() {
    let lie = Lie::of("cond.portable.bpte");
    let (at, _) = cond_jump(&lie, 1);
    let lie = lie.patch(|lie| {
        let (at, jump) = cond_jump(lie, 1);
        vec![jump_destination(&jump, at as i32)]
    });
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "onto itself"]);
}

/// The `if` jumps past both branches, so the output the branches write is
/// read where nothing defined it.
#[test]
fn a_jump_over_a_definition_is_refused() {
    let lie = Lie::of("cond.portable.bpte");
    let (at, _) = cond_jump(&lie, 0);
    let lie = lie.patch(|lie| {
        let end = cond_jump(lie, 1)
            .1
            .instr_args_as_jump_false_call()
            .expect("a jump")
            .destination_instruction();
        vec![jump_destination(&cond_jump(lie, 0).1, end)]
    });
    let jump = format!("the jump at instruction 0.{at}");
    check(&lie, &["method forward", "the outputs", "undefined", &jump]);
}

/// A MoveCall from a tensor of another size and type (the scalar the
/// condition sums into) into the [3, 5] output.
#[test]
fn a_move_between_different_tensors_is_refused() {
    let lie = Lie::of("cond.portable.bpte");
    let (at, scalar) = {
        let program = lie.program();
        let (at, _) = find_instruction(&program, |i| i.instr_args_as_move_call().is_some());
        let scalar = (0..)
            .find(|&index| {
                value(&program, index)
                    .val_as_tensor()
                    .is_some_and(|tensor| tensor.sizes().is_some_and(|sizes| sizes.is_empty()))
            })
            .expect("a 0-dim tensor");
        (at, scalar)
    };
    let lie = lie.patch(|lie| {
        let (_, instruction) =
            find_instruction(&lie.program(), |i| i.instr_args_as_move_call().is_some());
        let call = instruction.instr_args_as_move_call().expect("a move");
        vec![Patch::field(
            &call._tab,
            fb::MoveCall::VT_MOVE_FROM,
            &(scalar as i32).to_le_bytes(),
        )]
    });
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "move", "float32[3, 5]"]);
}

/// The first KernelCall (or DelegateCall) of `fixture` whose argument list
/// can be made one shorter or (`delta` 1) one longer, with that change, its
/// index, and what it calls (the operator's name, or the delegate's
/// backend).
fn argument_count_lie(fixture: &str, delta: i32) -> (Lie, usize, String) {
    fn calls<'a>(instruction: &fb::Instruction<'a>) -> Option<flatbuffers::Vector<'a, i32>> {
        instruction
            .instr_args_as_kernel_call()
            .and_then(|call| call.args())
            .or_else(|| {
                instruction
                    .instr_args_as_delegate_call()
                    .and_then(|c| c.args())
            })
    }
    // The longer list reads the four bytes after the list as one more
    // argument: the lie is about the count only where they name a value.
    let changeable = |lie: &Lie, instruction: &fb::Instruction<'_>| {
        let Some(args) = calls(instruction) else {
            return false;
        };
        let values = lie
            .program()
            .execution_plan()
            .expect("a plan")
            .get(0)
            .values();
        let count = values.expect("values").len() as i32;
        let after = args.bytes().as_ptr() as usize - lie.bytes_at() + args.len() * 4;
        delta < 0
            || lie.bytes(after, 4).is_some_and(|next| {
                let extra = i32::from_le_bytes(next.try_into().expect("four bytes"));
                (0..count).contains(&extra)
            })
    };
    let lie = Lie::of(fixture);
    let (at, instruction) = find_instruction(&lie.program(), |i| changeable(&lie, i));
    let callee = match instruction.instr_args_as_kernel_call() {
        Some(call) => {
            let operators = lie
                .program()
                .execution_plan()
                .expect("a plan")
                .get(0)
                .operators();
            let operator = operators.expect("operators").get(call.op_index() as usize);
            format!(
                "{}.{}",
                operator.name().expect("a name"),
                operator.overload().unwrap_or("")
            )
        }
        None if fixture.contains(".vulkan.") => "Vulkan".to_string(),
        None => "XNNPACK".to_string(),
    };
    let lie = lie.patch(|lie| {
        let (_, instruction) = find_instruction(&lie.program(), |i| changeable(lie, i));
        let args = calls(&instruction).expect("arguments");
        vec![Patch::length(
            args.bytes(),
            (args.len() as i32 + delta) as u32,
        )]
    });
    (lie, at, callee)
}

fn check_argument_count(fixture: &str, delta: i32) {
    let (lie, at, callee) = argument_count_lie(fixture, delta);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, &callee, "arguments"]);
}

#[test]
fn a_kernel_call_with_too_few_arguments_is_refused() {
    check_argument_count("add.portable.bpte", -1);
}

#[test]
fn a_kernel_call_with_too_many_arguments_is_refused() {
    check_argument_count("add.portable.bpte", 1);
}

#[test]
fn a_delegate_call_with_too_few_arguments_is_refused() {
    check_argument_count("add.xnnpack.bpte", -1);
}

#[test]
fn a_delegate_call_with_too_many_arguments_is_refused() {
    check_argument_count("add.xnnpack.bpte", 1);
}

#[test]
fn a_vulkan_delegate_call_with_too_few_arguments_is_refused() {
    check_argument_count("add.vulkan.bpte", -1);
}

#[test]
fn a_vulkan_delegate_call_with_too_many_arguments_is_refused() {
    check_argument_count("add.vulkan.bpte", 1);
}

/// An XNNPACK max-pooling node with a window of height 0.
#[test]
fn an_xnnpack_pooling_window_of_height_zero_is_refused() {
    let lie = Lie::of("xnnpack/max_pool_ceil.xnnpack.bpte").patch(|lie| {
        let graph = lie.xnnpack_graph();
        let pool = graph
            .xnodes()
            .expect("nodes")
            .iter()
            .find_map(|node| node.xnode_union_as_xnnmax_pooling_2d())
            .expect("a max-pooling node");
        vec![Patch::field(
            &pool._tab,
            xfb::_XNNPooling2D::VT_POOLING_HEIGHT,
            &0u32.to_le_bytes(),
        )]
    });
    check(&lie, &["method forward", "XNNPACK node", "pooling_height"]);
}

/// An XNNPACK average pooling padded 2 rows above and 1 below: XNNPACK
/// would average over the rows inside the input, but ptec's pooling pads
/// symmetrically, so it refuses rather than compute another average.
#[test]
fn an_xnnpack_average_pooling_padded_asymmetrically_is_refused() {
    let lie = Lie::of("xnnpack/avg_pool.xnnpack.bpte").patch(|lie| {
        let graph = lie.xnnpack_graph();
        let pool = graph
            .xnodes()
            .expect("nodes")
            .iter()
            .filter_map(|node| node.xnode_union_as_xnnavg_pooling_2d())
            .find(|pool| pool.padding_top() == 1)
            .expect("a padded average-pooling node");
        vec![Patch::field(
            &pool._tab,
            xfb::_XNNPooling2D::VT_PADDING_TOP,
            &2u32.to_le_bytes(),
        )]
    });
    check(
        &lie,
        &["XNNPACK node", "XNNAvgPooling2d", "asymmetric", "top 2"],
    );
}

/// An XNNPACK transposed convolution of 0 groups.
#[test]
fn an_xnnpack_transposed_convolution_of_no_groups_is_refused() {
    let lie = Lie::of("xnnpack/conv_transpose.xnnpack.bpte").patch(|lie| {
        let graph = lie.xnnpack_graph();
        let conv = graph
            .xnodes()
            .expect("nodes")
            .iter()
            .find_map(|node| node.xnode_union_as_xnnconv_transpose_2d())
            .expect("a transposed convolution");
        vec![Patch::field(
            &conv._tab,
            xfb::_XNNNodeConv::VT_GROUPS,
            &0u32.to_le_bytes(),
        )]
    });
    check(&lie, &["XNNPACK node", "`groups` is 0"]);
}

/// An XNNPACK bilinear resize with a flag ptec does not know (0x10 beside
/// aligned corners).
#[test]
fn an_xnnpack_resize_with_an_unknown_flag_is_refused() {
    let lie = Lie::of("xnnpack/resize_bilinear.xnnpack.bpte").patch(|lie| {
        let graph = lie.xnnpack_graph();
        let resize = graph
            .xnodes()
            .expect("nodes")
            .iter()
            .filter_map(|node| node.xnode_union_as_xnnstatic_resize_bilinear_2_d())
            .find(|resize| resize.flags() != 0)
            .expect("a resize with aligned corners");
        vec![Patch::field(
            &resize._tab,
            xfb::XNNStaticResizeBilinear2D::VT_FLAGS,
            &(resize.flags() | 0x10).to_le_bytes(),
        )]
    });
    check(
        &lie,
        &["XNNPACK node", "XNNStaticResizeBilinear2D", "flags 0x10"],
    );
}

/// Sets the Int that item `item` of the IntList argument `argument` of the
/// first KernelCall names (or the Int argument itself, without `item`).
fn int_argument_lie(fixture: &str, argument: usize, item: Option<usize>, to: i64) -> (Lie, usize) {
    fn int_value<'a>(lie: &'a Lie, argument: usize, item: Option<usize>) -> fb::Int<'a> {
        let program = lie.program();
        let (_, instruction) =
            find_instruction(&program, |i| i.instr_args_as_kernel_call().is_some());
        let call = instruction
            .instr_args_as_kernel_call()
            .expect("a kernel call");
        let mut index = call.args().expect("arguments").get(argument) as usize;
        if let Some(item) = item {
            let list = value(&program, index)
                .val_as_int_list()
                .expect("an IntList");
            index = list.items().expect("items").get(item) as usize;
        }
        value(&program, index).val_as_int().expect("an Int")
    }
    let lie = Lie::of(fixture);
    let (at, _) = find_instruction(&lie.program(), |i| i.instr_args_as_kernel_call().is_some());
    let lie = lie.patch(|lie| {
        let int = int_value(lie, argument, item);
        vec![Patch::field(
            &int._tab,
            fb::Int::VT_INT_VAL,
            &to.to_le_bytes(),
        )]
    });
    (lie, at)
}

#[test]
fn a_max_pool_kernel_of_size_zero_is_refused() {
    let (lie, at) = int_argument_lie("ops/max_pool2d.portable.bpte", 1, Some(0), 0);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "max_pool2d", "kernel_size"]);
}

#[test]
fn a_max_pool_dilation_of_zero_is_refused() {
    let (lie, at) = int_argument_lie("ops/max_pool2d.portable.bpte", 4, Some(1), 0);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "max_pool2d", "dilation"]);
}

#[test]
fn an_arange_step_of_zero_is_refused() {
    let (lie, at) = int_argument_lie("ops/arange.portable.bpte", 2, None, 0);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "arange", "step"]);
}

/// `arange(0, 10, 2)` with its end moved before its start.
#[test]
fn an_arange_ending_before_its_start_is_refused() {
    let (lie, at) = int_argument_lie("ops/arange.portable.bpte", 1, None, -4);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "arange", "0 to -4"]);
}

#[test]
fn an_unsqueeze_dim_out_of_range_is_refused() {
    let (lie, at) = int_argument_lie("ops/unsqueeze.portable.bpte", 1, None, 9);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "unsqueeze", "dim"]);
}

/// The first KernelCall of `lie`'s program, with its index.
fn first_kernel_call<'a>(lie: &'a Lie) -> (usize, fb::KernelCall<'a>) {
    let (at, instruction) =
        find_instruction(&lie.program(), |i| i.instr_args_as_kernel_call().is_some());
    (
        at,
        instruction
            .instr_args_as_kernel_call()
            .expect("a kernel call"),
    )
}

/// A patch pointing argument `argument` of the first KernelCall at value
/// `to`.
fn point_argument(lie: &Lie, argument: usize, to: i32) -> Patch {
    let args = first_kernel_call(lie).1.args().expect("arguments");
    Patch::element(args.bytes(), 4, argument, &to.to_le_bytes())
}

/// `linear` over a [2, 3, 4] input, given that input as its bias: a bias of
/// rank 3.
#[test]
fn a_linear_bias_of_rank_three_is_refused() {
    let lie = Lie::of("ops/linear_kept.portable.bpte");
    let (at, input) = {
        let program = lie.program();
        let plan = program.execution_plan().expect("a plan").get(0);
        (
            first_kernel_call(&lie).0,
            plan.inputs().expect("inputs").get(0),
        )
    };
    let lie = lie.patch(|lie| vec![point_argument(lie, 2, input)]);
    let at = format!("instruction 0.{at}");
    check(
        &lie,
        &["method forward", &at, "linear", "bias of rank above 2"],
    );
}

#[test]
fn a_negative_full_size_is_refused() {
    let (lie, at) = int_argument_lie("ops/full.portable.bpte", 0, Some(0), -2);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "full", "size"]);
}

#[test]
fn a_negative_expand_size_is_refused() {
    let (lie, at) = int_argument_lie("ops/expand.portable.bpte", 1, Some(0), -2);
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "expand_copy", "size"]);
}

/// A slice ending at INT64_MIN is empty: the [3, 8] the file declares is
/// not what the slice computes.
#[test]
fn a_slice_ending_at_int64_min_is_refused() {
    let (lie, at) = int_argument_lie("ops/slice_negative_end.portable.bpte", 3, None, i64::MIN);
    let at = format!("instruction 0.{at}");
    check(
        &lie,
        &["method forward", &at, "slice_copy", "[0,8]", "[3,8]"],
    );
}

/// `_clone_dim_order` with a dim order [0, 0]: not a permutation.
#[test]
fn a_clone_dim_order_that_is_no_permutation_is_refused() {
    let lie = Lie::of("ops/clone.portable.bpte");
    let at = first_kernel_call(&lie).0;
    let lie = lie.patch(|lie| {
        let program = lie.program();
        let list = first_kernel_call(lie).1.args().expect("arguments").get(2);
        let list = value(&program, list as usize)
            .val_as_int_list()
            .expect("a dim order");
        let items = list.items().expect("items");
        vec![Patch::element(
            items.bytes(),
            8,
            1,
            &items.get(0).to_le_bytes(),
        )]
    });
    let at = format!("instruction 0.{at}");
    check(
        &lie,
        &["method forward", &at, "_clone_dim_order", "dim_order"],
    );
}

#[test]
fn a_layer_norm_shape_unlike_the_input_is_refused() {
    let (lie, at) = int_argument_lie("ops/layer_norm.portable.bpte", 1, Some(0), 7);
    let at = format!("instruction 0.{at}");
    check(
        &lie,
        &[
            "method forward",
            &at,
            "native_layer_norm",
            "normalized_shape",
        ],
    );
}

/// `addmm` whose out tensor says int64: a float product into integers.
#[test]
fn a_float_result_into_an_int64_out_is_refused() {
    let lie = Lie::of("ops/addmm.portable.bpte");
    let at = first_kernel_call(&lie).0;
    let lie = lie.patch(|lie| {
        let program = lie.program();
        let args = first_kernel_call(lie).1.args().expect("arguments");
        let out = value(&program, args.get(args.len() - 1) as usize);
        let tensor = out.val_as_tensor().expect("the out tensor");
        vec![Patch::field(
            &tensor._tab,
            fb::Tensor::VT_SCALAR_TYPE,
            &[fb::ScalarType::LONG.0 as u8],
        )]
    });
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "addmm", "`out`", "i64"]);
}

/// Writes `to` over element `index` of the XNNPACK graph's `input_ids` (or
/// `output_ids`, with `outputs`).
fn graph_id_lie(fixture: &str, outputs: bool, index: usize, to: impl Fn(&Lie) -> u32) -> Lie {
    Lie::of(fixture).patch(|lie| {
        let graph = lie.xnnpack_graph();
        let ids = if outputs {
            graph.output_ids()
        } else {
            graph.input_ids()
        };
        let ids = ids.expect("the graph's ids");
        vec![Patch::element(
            ids.bytes(),
            4,
            index,
            &to(lie).to_le_bytes(),
        )]
    })
}

#[test]
fn an_xnnpack_input_id_out_of_range_is_refused() {
    let lie = graph_id_lie("add.xnnpack.bpte", false, 0, |_| 1000);
    // The frontend reads delegate payloads before any method.
    check(
        &lie,
        &["execution_plan[0].delegates[0]", "input_ids[0]", "1000"],
    );
}

/// The graph's output listed as the id of its first input: a value that
/// is no output of the call.
#[test]
fn an_xnnpack_output_id_naming_an_input_is_refused() {
    let lie = graph_id_lie("add.xnnpack.bpte", true, 0, |lie| {
        lie.xnnpack_graph().input_ids().expect("inputs").get(0)
    });
    check(
        &lie,
        &["method forward", "XNNPACK", "output_ids[0]", "not flagged"],
    );
}

#[test]
fn an_xnnpack_num_dims_unlike_the_dims_is_refused() {
    let lie = Lie::of("add.xnnpack.bpte").patch(|lie| {
        let graph = lie.xnnpack_graph();
        let value = graph.xvalues().expect("values").get(0);
        let tensor = value
            .xvalue_union_as_xnntensor_value()
            .expect("a tensor value");
        let rank = tensor.dims().expect("dims").len() as u32;
        vec![Patch::field(
            &tensor._tab,
            xfb::XNNTensorValue::VT_NUM_DIMS,
            &(rank + 1).to_le_bytes(),
        )]
    });
    check(&lie, &["method forward", "XNNPACK", "num_dims", "dims"]);
}

/// The first XNNPACK convolution of `fixture` with its `u32` field `field`
/// set to what `to` gives of the node.
fn convolution_lie(
    fixture: &str,
    field: flatbuffers::VOffsetT,
    to: fn(&xfb::_XNNNodeConv<'_>) -> u32,
) -> Lie {
    Lie::of(fixture).patch(|lie| {
        let graph = lie.xnnpack_graph();
        let conv = graph
            .xnodes()
            .expect("nodes")
            .iter()
            .find_map(|node| node.xnode_union_as_xnnconv_2d())
            .expect("a convolution node");
        vec![Patch::field(&conv._tab, field, &to(&conv).to_le_bytes())]
    })
}

#[test]
fn an_xnnpack_convolution_with_other_group_input_channels_is_refused() {
    let lie = convolution_lie(
        "conv_bn.xnnpack.bpte",
        xfb::_XNNNodeConv::VT_GROUP_INPUT_CHANNELS,
        |conv| conv.group_input_channels() + 1,
    );
    check(
        &lie,
        &[
            "method forward",
            "XNNConv2d",
            "debug handle",
            "field `group_input_channels`",
        ],
    );
}

#[test]
fn an_xnnpack_convolution_with_other_groups_is_refused() {
    let lie = convolution_lie(
        "conv_bn.xnnpack.bpte",
        xfb::_XNNNodeConv::VT_GROUPS,
        |conv| conv.groups() + 1,
    );
    check(
        &lie,
        &[
            "method forward",
            "XNNConv2d",
            "debug handle",
            "field `groups`",
        ],
    );
}

/// A node's output range with its maximum below its minimum (a ReLU's 0,
/// the default, which the file does not store).
#[test]
fn an_xnnpack_clamp_with_min_above_max_is_refused() {
    let lie = Lie::of("linear_relu.xnnpack.bpte").patch(|lie| {
        let graph = lie.xnnpack_graph();
        let range = graph
            .xnodes()
            .expect("nodes")
            .iter()
            .find_map(|node| node.output_min_max())
            .expect("a node with an output range");
        vec![Patch::field(
            &range._tab,
            xfb::OutputMinMax::VT_OUTPUT_MAX,
            &(-1.0f32).to_le_bytes(),
        )]
    });
    check(
        &lie,
        &["method forward", "debug handle", "output_min", "output_max"],
    );
}

/// A Vulkan tensor whose every dim is 2^32 - 1: its element count does not
/// fit 64 bits.
#[test]
fn vulkan_dims_whose_product_wraps_are_refused() {
    let lie = Lie::of("add.vulkan.bpte").patch(|lie| {
        let graph = lie.vulkan_graph();
        let tensor = graph
            .values()
            .expect("values")
            .iter()
            .find_map(|value| {
                value
                    .value_as_vk_tensor()
                    .filter(|tensor| tensor.dims().is_some_and(|dims| dims.len() >= 2))
            })
            .expect("a tensor of rank 2 or more");
        let dims = tensor.dims().expect("dims");
        (0..dims.len())
            .map(|index| Patch::element(dims.bytes(), 4, index, &u32::MAX.to_le_bytes()))
            .collect()
    });
    check(&lie, &["method forward", "Vulkan", "dims", "too large"]);
}

/// The first input of the Vulkan graph of `lie`'s program.
fn vulkan_first_input(lie: &Lie) -> ptec_schema::vulkan::VkTensor<'_> {
    let graph = lie.vulkan_graph();
    let input = graph.input_ids().expect("inputs").get(0) as usize;
    graph
        .values()
        .expect("values")
        .get(input)
        .value_as_vk_tensor()
        .expect("a tensor input")
}

/// The Vulkan graph's first input declared one larger than the argument the
/// call passes.
#[test]
fn a_vulkan_input_unlike_the_argument_is_refused() {
    let lie = Lie::of("add.vulkan.bpte").patch(|lie| {
        let tensor = vulkan_first_input(lie);
        let dims = tensor.dims().expect("dims");
        vec![Patch::element(
            dims.bytes(),
            4,
            0,
            &(dims.get(0) + 1).to_le_bytes(),
        )]
    });
    check(&lie, &["method forward", "Vulkan", "dims", "sizes"]);
}

/// The Vulkan graph's first input declared int8 where the call passes
/// float32, a conversion ExecuTorch's Vulkan runtime does not make as it
/// stages a tensor (it makes int64 to int32 and float64 or float16 to
/// float32 only).
#[test]
fn a_vulkan_input_of_another_element_type_is_refused() {
    let lie = Lie::of("add.vulkan.bpte").patch(|lie| {
        let tensor = vulkan_first_input(lie);
        vec![Patch::field(
            &tensor._tab,
            ptec_schema::vulkan::VkTensor::VT_DATATYPE,
            &[ptec_schema::vulkan::VkDataType::INT8.0 as u8],
        )]
    });
    check(&lie, &["method forward", "Vulkan", "holds i8", "is f32"]);
}

/// `cumsum(x, dim)` of floats, given its `dim` (an Int, read as a
/// ScalarType: an integer type) as its `dtype`: the float out tensor is not
/// the type the call requests.
#[test]
fn a_cumsum_dtype_unlike_the_out_tensor_is_refused() {
    let lie = Lie::of("ops/cumsum.portable.bpte");
    let at = first_kernel_call(&lie).0;
    let lie = lie.patch(|lie| {
        let dim = first_kernel_call(lie).1.args().expect("arguments").get(1);
        vec![point_argument(lie, 2, dim)]
    });
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "cumsum", "`dtype`", "out"]);
}

/// A program whose second method is renamed to its first's name.
#[test]
fn two_methods_of_one_name_are_refused() {
    let lie = Lie::of("llm/llama_kv/model.pte");
    let first = {
        let program = lie.program();
        let plans = program.execution_plan().expect("plans");
        plans.get(0).name().expect("a name").to_string()
    };
    let lie = lie.patch(|lie| {
        let program = lie.program();
        let plans = program.execution_plan().expect("plans");
        let other = plans
            .iter()
            .skip(1)
            .find_map(|plan| plan.name().filter(|name| name.len() > first.len()))
            .expect("a method with a longer name");
        Patch::shorter_string(other, &first)
    });
    check(&lie, &["execution_plan[", "name", &format!("{first:?}")]);
}

/// `dyn_batch` (`tanh(x @ w^T + b)` over a batch of at most 8 rows of 16)
/// with the bound of its batch, on every tensor of dynamic shape, set to
/// `bound`: ptec's arena grows with the bound, 96 bytes a row. The file's
/// own plan is made large enough to hold its values at their offsets.
fn dyn_batch_bounded(bound: i32) -> Lie {
    Lie::of("dyn_batch.portable.bpte").patch(|lie| {
        let program = lie.program();
        let plan = program.execution_plan().expect("a plan").get(0);
        let arenas = plan.non_const_buffer_sizes().expect("the file's plan");
        let arena = Patch::element(arenas.bytes(), 8, 1, &(i64::MAX / 2).to_le_bytes());
        let values = plan.values().expect("values");
        let bounds = values.iter().filter_map(|value| {
            let tensor = value.val_as_tensor().filter(|tensor| {
                tensor.shape_dynamism() == fb::TensorShapeDynamism::DYNAMIC_BOUND
            })?;
            let sizes = tensor.sizes().expect("sizes");
            Some(Patch::element(sizes.bytes(), 4, 0, &bound.to_le_bytes()))
        });
        bounds.chain([arena]).collect()
    })
}

/// A batch bounded at 2^31 - 1 plans 206 GB: above the default limit, it is
/// refused before anything is allocated, by every command and back end.
#[test]
fn an_arena_above_the_memory_limit_is_refused() {
    check(
        &dyn_batch_bounded(i32::MAX),
        &["method forward", "arena", "--max-memory"],
    );
}

/// The peak resident memory of the children this process has waited for,
/// in bytes.
fn children_peak_rss() -> u64 {
    // SAFETY: getrusage writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage), 0);
        usage
    };
    // Linux gives kilobytes.
    usage.ru_maxrss as u64 * 1024
}

/// A batch bounded at 2^25 plans 3.2 GB, within the limit: its cases (a few
/// rows each) pass on the CPU back ends touching memory for their rows,
/// not for the bound.
#[test]
fn a_high_dynamic_bound_touches_memory_for_the_actual_sizes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dyn_batch_bounded(1 << 25).save(dir.path(), "bounded.bpte");
    let file = file.to_str().expect("utf-8 path");
    for backend in ["jit", "aot"] {
        let output = ptec_within(TIMEOUT, &["test", "--backend", backend, file]);
        assert!(
            output.status.success(),
            "{backend}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let peak = children_peak_rss();
    assert!(
        peak < 1 << 30,
        "a child's peak resident memory is {peak} bytes"
    );
}

/// With the limit raised, the program the default refuses compiles.
#[test]
fn the_memory_limit_can_be_raised() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dyn_batch_bounded(i32::MAX).save(dir.path(), "bounded.bpte");
    let so = dir.path().join("bounded.so");
    let args = [
        "compile",
        "--max-memory",
        "1000000000000",
        "-o",
        so.to_str().expect("utf-8"),
        file.to_str().expect("utf-8"),
    ];
    let output = ptec_within(TIMEOUT, &args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A bundled program whose one suite lists no cases fails, saying so.
#[test]
fn a_bundled_program_without_cases_fails_saying_why() {
    let lie = Lie::of("add.portable.bpte").patch(|lie| {
        let suites = lie.bundled().method_test_suites().expect("suites");
        let cases = suites.get(0).test_cases().expect("cases");
        vec![Patch::length(cases.bytes(), 0)]
    });
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = lie.save(dir.path(), "lie.bpte");
    let file = file.to_str().expect("utf-8 path");
    for backend in ["jit", "aot", "vulkan"] {
        let output = ptec_within(TIMEOUT, &["test", "--backend", backend, file]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{backend}: {stdout}");
        assert!(
            stdout.contains("has no test cases for method forward"),
            "{backend}: {stdout}"
        );
    }
}

/// The last KernelCall of `fixture` with its `out` argument and result
/// (an out variant's last two arguments, the same value) pointed at the
/// value `to` gives, with the call's index.
fn redirect_last_result(fixture: &str, to: fn(&Lie) -> i32) -> (Lie, usize) {
    fn last_call<'a>(lie: &'a Lie) -> (usize, fb::KernelCall<'a>) {
        instructions(&lie.program())
            .filter_map(|(at, i)| i.instr_args_as_kernel_call().map(|call| (at, call)))
            .last()
            .expect("a kernel call")
    }
    let lie = Lie::of(fixture);
    let at = last_call(&lie).0;
    let lie = lie.patch(|lie| {
        let args = last_call(lie).1.args().expect("arguments");
        let value = to(lie).to_le_bytes();
        (args.len() - 2..args.len())
            .map(|index| Patch::element(args.bytes(), 4, index, &value))
            .collect()
    });
    (lie, at)
}

/// `add.portable`'s last call made to write its result into the input `x`
/// (of the output's type).
#[test]
fn a_kernel_writing_an_input_is_refused() {
    let (lie, at) = redirect_last_result("add.portable.bpte", |lie| {
        let program = lie.program();
        let plan = program.execution_plan().expect("a plan").get(0);
        plan.inputs().expect("inputs").get(0)
    });
    let at = format!("instruction 0.{at}");
    check(&lie, &["method forward", &at, "one of the method's inputs"]);
}

/// `linear_relu.portable`'s ReLU made to write its result over its own
/// input (the linear layer's result, of the output's type): the method's
/// output is never written.
#[test]
fn an_unwritten_output_is_reported_as_such() {
    let (lie, _) = redirect_last_result("linear_relu.portable.bpte", |lie| {
        let program = lie.program();
        let (_, relu) = instructions(&program)
            .filter(|(_, i)| i.instr_args_as_kernel_call().is_some())
            .last()
            .expect("a kernel call");
        let call = relu.instr_args_as_kernel_call().expect("a kernel call");
        call.args().expect("arguments").get(0)
    });
    check(&lie, &["method forward", "the outputs", "never written"]);
}

/// `repeat` with a repeat count of -1: the message names the argument.
#[test]
fn a_negative_repeat_names_its_argument() {
    let (lie, at) = int_argument_lie("ops/repeat.portable.bpte", 1, Some(0), -1);
    let at = format!("instruction 0.{at}");
    check(
        &lie,
        &[
            "method forward",
            &at,
            "repeat",
            "`repeats`",
            "-1 must not be negative",
        ],
    );
}

/// `topk` with k = -1.
#[test]
fn a_negative_topk_k_names_its_argument() {
    let (lie, at) = int_argument_lie("ops/topk.portable.bpte", 1, None, -1);
    let at = format!("instruction 0.{at}");
    check(
        &lie,
        &[
            "method forward",
            &at,
            "topk",
            "`k`",
            "-1 must not be negative",
        ],
    );
}

/// Generated code above `--max-code` is refused, as a shared object, as
/// SPIR-V and on the JIT (as each function is compiled, before the JIT maps
/// memory for it), naming the option that raises the limit.
#[test]
fn code_above_the_code_limit_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = common::repo_dir().join("tests/fixtures/add.vulkan.bpte");
    let file = file.to_str().expect("utf-8 path");
    let so = dir.path().join("add.so");
    let spirv = dir.path().join("spirv");
    let (so, spirv) = (so.to_str().expect("utf-8"), spirv.to_str().expect("utf-8"));
    let runs = [
        vec!["compile", "--max-code", "64", "-o", so, file],
        vec![
            "compile",
            "--max-code",
            "64",
            "--emit",
            "spirv",
            "-o",
            spirv,
            file,
        ],
        vec!["test", "--backend", "aot", "--max-code", "64", file],
        vec!["test", "--max-code", "64", file],
        vec!["run", "--max-code", "64", file],
    ];
    for args in runs {
        let output = ptec_within(TIMEOUT, &args);
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.status.code(), Some(1), "{args:?}: {said}");
        for part in ["method forward", "compiled code", "--max-code"] {
            assert!(said.contains(part), "expected {part:?}; {args:?}: {said}");
        }
    }
}

/// The operators whose result takes `out`'s element type, whatever it is
/// (a cast, a fill, a sum computed in `out`'s type, a result that is never
/// written), as in PyTorch; with the types `out` may not be.
const OUT_CHOOSES_ITS_TYPE: &[(&str, &[fb::ScalarType])] = &[
    ("dim_order_ops::_to_dim_order_copy", &[]),
    ("dim_order_ops::_empty_dim_order", &[]),
    ("aten::_to_copy", &[]),
    ("aten::full", &[]),
    ("aten::full_like", &[]),
    ("aten::scalar_tensor", &[]),
    ("aten::sum", &[]),
    ("aten::prod", &[]),
    ("aten::cumsum", &[fb::ScalarType::BOOL]),
    ("aten::arange", &[fb::ScalarType::BOOL]),
    ("llama::update_cache", &[]),
    ("llama::update_cache_with_indices", &[]),
];

/// Every float result of every operator fixture ptec compiles, its `out` said to be int32
/// (an integer of the float's size, so the memory plan stays true) and then
/// bool: refused, naming the instruction and the operator, unless the
/// operator's result takes `out`'s type. (Refused at import, so on every
/// back end alike: `addmm` above checks each of them.)
#[test]
fn float_results_into_integer_or_bool_outs_are_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut refused = 0;
    for path in common::bpte_files(&common::repo_dir().join("tests/fixtures/ops")) {
        let name = path.file_name().expect("a name").to_string_lossy();
        if !name.ends_with(".portable.bpte") {
            continue;
        }
        let fixture = format!("ops/{name}");
        // Only programs ptec takes as they are (not the complex ones).
        let path = path.to_str().expect("utf-8 path");
        let taken = ptec_within(
            TIMEOUT,
            &["compile", "--emit", "ir", "-o", "/dev/null", path],
        );
        if !taken.status.success() {
            continue;
        }
        let base = Lie::of(&fixture);
        let program = base.program();
        let operators = program.execution_plan().expect("a plan").get(0).operators();
        let float_calls: Vec<(usize, String)> = instructions(&program)
            .filter_map(|(at, instruction)| {
                let call = instruction.instr_args_as_kernel_call()?;
                let args = call.args()?;
                let out = value(&program, args.get(args.len() - 1) as usize);
                let tensor = out.val_as_tensor()?;
                let operator = operators?.get(call.op_index() as usize).name()?;
                (tensor.scalar_type() == fb::ScalarType::FLOAT).then(|| (at, operator.to_string()))
            })
            .collect();
        for (at, operator) in float_calls {
            for to in [fb::ScalarType::INT, fb::ScalarType::BOOL] {
                let lie = Lie::of(&fixture).patch(|lie| {
                    let program = lie.program();
                    let call = instructions(&program)
                        .find(|(index, _)| *index == at)
                        .and_then(|(_, instruction)| instruction.instr_args_as_kernel_call())
                        .expect("the kernel call");
                    let args = call.args().expect("arguments");
                    let out = value(&program, args.get(args.len() - 1) as usize);
                    let tensor = out.val_as_tensor().expect("the out tensor");
                    vec![Patch::field(
                        &tensor._tab,
                        fb::Tensor::VT_SCALAR_TYPE,
                        &[to.0 as u8],
                    )]
                });
                let file = lie.save(dir.path(), "lie.bpte");
                let file = file.to_str().expect("utf-8 path");
                let output = ptec_within(
                    TIMEOUT,
                    &["compile", "--emit", "ir", "-o", "/dev/null", file],
                );
                let stderr = String::from_utf8_lossy(&output.stderr);
                let context =
                    format!("{name}, instruction {at} ({operator}) into {to:?}: {stderr}");
                let allowed = OUT_CHOOSES_ITS_TYPE
                    .iter()
                    .find(|(name, _)| *name == operator)
                    .is_some_and(|(_, refused)| !refused.contains(&to));
                if allowed {
                    // Taken, or refused for what the new type does to the
                    // other arguments (a range's float step truncated to 0).
                    assert!(matches!(output.status.code(), Some(0 | 1)), "{context}");
                    continue;
                }
                assert_eq!(output.status.code(), Some(1), "{context}");
                let instruction = format!("instruction 0.{at}");
                for part in ["error:", "method forward", &instruction, &operator] {
                    assert!(stderr.contains(part), "expected {part:?}; {context}");
                }
                refused += 1;
            }
        }
    }
    assert!(refused >= 200, "only {refused} lies refused");
}

/// The value argument `position` of the first call of the Vulkan fixture
/// `fixture` named `name`.
fn vulkan_argument<'a>(
    lie: &'a Lie,
    name: &str,
    position: usize,
) -> ptec_schema::vulkan::VkValue<'a> {
    let graph = lie.vulkan_graph();
    let call = graph
        .chain()
        .expect("a chain")
        .iter()
        .find(|call| call.name() == Some(name))
        .unwrap_or_else(|| panic!("the fixture calls {name}"));
    let id = call.args().expect("arguments").get(position) as usize;
    graph.values().expect("values").get(id)
}

/// The Vulkan fixture `fixture`'s call `name` with its int argument
/// `position` rewritten as `value`.
fn vulkan_int_lie(fixture: &str, name: &str, position: usize, value: i64) -> Lie {
    Lie::of(fixture).patch(|lie| {
        let int = vulkan_argument(lie, name, position)
            .value_as_int()
            .expect("an int argument");
        vec![Patch::field(
            &int._tab,
            ptec_schema::vulkan::Int::VT_INT_VAL,
            &value.to_le_bytes(),
        )]
    })
}

/// A 4-bit linear layer whose `group_size` does not split the input's 64
/// features into the scales' 2 groups.
#[test]
fn a_q4gsw_group_size_unlike_the_scales_is_refused() {
    let lie = vulkan_int_lie(
        "vulkan/linear_q4gsw.vulkan.bpte",
        "et_vk.linear_q4gsw.default",
        3,
        24,
    );
    check(
        &lie,
        &[
            "et_vk.linear_q4gsw.default",
            "group_size is 24",
            "64 columns",
            "2 groups",
        ],
    );
}

/// A 4-bit embedding whose `group_size` does not split its 32 columns into
/// the scales' 2 groups.
#[test]
fn an_embedding_q4gsw_group_size_unlike_the_scales_is_refused() {
    let lie = vulkan_int_lie(
        "vulkan/embedding_q4gsw.vulkan.bpte",
        "et_vk.embedding_q4gsw.default",
        2,
        0,
    );
    check(&lie, &["et_vk.embedding_q4gsw.default", "group_size is 0"]);
}

/// A per-channel 4-bit weight declared `[3, 16]` instead of `[6, 8]` (as
/// many bytes): its rows disagree with the output's 6 features.
#[test]
fn a_qcs4w_weight_unlike_the_output_is_refused() {
    let lie = Lie::of("vulkan/linear_qcs4w.vulkan.bpte").patch(|lie| {
        let tensor = vulkan_argument(lie, "et_vk.linear_qcs4w.default", 1)
            .value_as_vk_tensor()
            .expect("a tensor argument");
        let dims = tensor.dims().expect("dims");
        assert_eq!(dims.iter().collect::<Vec<_>>(), [6, 8]);
        vec![
            Patch::element(dims.bytes(), 4, 0, &3u32.to_le_bytes()),
            Patch::element(dims.bytes(), 4, 1, &16u32.to_le_bytes()),
        ]
    });
    check(
        &lie,
        &[
            "et_vk.linear_qcs4w.default",
            "weight has 3 rows",
            "6 features",
        ],
    );
}

/// torchao's `dequantize_affine` with a `block_size` of `[1, 24]`, which
/// does not divide the weight's 64 columns.
#[test]
fn an_affine_block_size_that_does_not_divide_is_refused() {
    let lie = Lie::of("vulkan/dequantize_affine.vulkan.bpte").patch(|lie| {
        let list = vulkan_argument(lie, "torchao.dequantize_affine.default", 1)
            .value_as_int_list()
            .expect("an int list");
        let items = list.items().expect("items");
        vec![Patch::element(items.bytes(), 8, 1, &24i64.to_le_bytes())]
    });
    check(
        &lie,
        &[
            "torchao.dequantize_affine.default",
            "block_size [1, 24] does not divide",
        ],
    );
}
