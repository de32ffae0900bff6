//! The IR's text form (stable and diff-friendly: one value or node per line,
//! in schedule order) and its DOT rendering.

use std::fmt::Write as _;

use crate::graph::{Graph, Node, ValueId, ValueKind};
use crate::op::Op;

/// The graph as text.
pub fn to_text(graph: &Graph<'_>) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "graph {} (arena {} bytes) {{",
        graph.name,
        graph.arena_size()
    )
    .ok();
    for (symbol, data) in graph.symbols() {
        writeln!(
            out,
            "  symbol {symbol} <= {}  // {}",
            data.bound, data.origin
        )
        .ok();
    }
    let referenced = graph.referenced_values();
    for (id, value) in graph.values().filter(|(id, _)| referenced.contains(id)) {
        let place = value
            .offset
            .map(|offset| format!(" @{offset}"))
            .unwrap_or_default();
        let source = match &value.kind {
            ValueKind::Input(index) => format!("input {index}"),
            ValueKind::Constant(bytes) => format!("constant {} bytes", bytes.len()),
            ValueKind::State { initial: Some(_) } => "state (initialized)".to_string(),
            ValueKind::State { initial: None } => "state".to_string(),
            ValueKind::Computed => continue,
        };
        writeln!(out, "  {id}: {}{place} = {source}", value.ty).ok();
    }
    for &node in graph.schedule() {
        writeln!(out, "  {}", node_line(graph, graph.node(node))).ok();
    }
    let outputs: Vec<String> = graph.outputs().iter().map(ValueId::to_string).collect();
    writeln!(out, "  return {}", outputs.join(", ")).ok();
    out.push_str("}\n");
    out
}

fn node_line(graph: &Graph<'_>, node: &Node) -> String {
    let list = |values: &[ValueId]| {
        values
            .iter()
            .map(ValueId::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &node.op {
        Op::Label(label) => return format!("{label}:"),
        Op::Jump(label) => return format!("jump {label}"),
        Op::JumpIfFalse(label) => return format!("jump_if_false {} {label}", list(&node.inputs)),
        _ => {}
    }
    let results: Vec<String> = node
        .outputs
        .iter()
        .map(|&output| {
            let value = graph.value(output);
            let place = value
                .offset
                .map(|offset| format!(" @{offset}"))
                .unwrap_or_default();
            format!("{output}: {}{place}", value.ty)
        })
        .collect();
    let attributes = attributes(&node.op);
    let attributes = if attributes.is_empty() {
        String::new()
    } else {
        format!(" {attributes}")
    };
    format!(
        "{} = {}({}){attributes}",
        results.join(", "),
        node.op.name(),
        list(&node.inputs)
    )
}

/// A fused clamp's bounds, each as ` clamp_min=...`/` clamp_max=...`.
fn show_clamp(clamp: crate::ClampRange) -> String {
    let mut text = String::new();
    if let Some(min) = clamp.min {
        text.push_str(&format!(" clamp_min={min:?}"));
    }
    if let Some(max) = clamp.max {
        text.push_str(&format!(" clamp_max={max:?}"));
    }
    text
}

/// The op's attributes as `key=value` pairs.
fn attributes(op: &Op) -> String {
    match op {
        Op::Binary {
            alpha: Some(alpha), ..
        } => format!("alpha={alpha}"),
        Op::BinaryScalar { scalar, .. } => format!("scalar={scalar}"),
        Op::Clamp { min, max } => {
            let show = |bound: &Option<_>| {
                bound.map_or("none".to_string(), |b: crate::Scalar| b.to_string())
            };
            format!("min={} max={}", show(min), show(max))
        }
        Op::Permute { dims } => format!("dims={dims:?}"),
        Op::LeakyRelu { slope } => format!("slope={slope:?}"),
        Op::Fused { steps } => {
            let steps: Vec<String> = steps
                .iter()
                .map(|step| {
                    let inputs: Vec<String> = step.inputs.iter().map(ToString::to_string).collect();
                    let attributes = attributes(&step.op);
                    let space = if attributes.is_empty() { "" } else { " " };
                    format!(
                        "{}({}){space}{attributes}",
                        step.op.name(),
                        inputs.join(", ")
                    )
                })
                .collect();
            format!("steps=[{}]", steps.join("; "))
        }
        Op::Elu {
            alpha,
            scale,
            input_scale,
        } => format!("alpha={alpha:?} scale={scale:?} input_scale={input_scale:?}"),
        Op::Pad {
            before,
            after,
            value,
        } => format!("before={before:?} after={after:?} value={value}"),
        Op::Repeat { repeats } => format!("repeats={repeats:?}"),
        Op::IndexSelect { dim } => format!("dim={dim}"),
        Op::ArgMin { dim, keepdim } => format!("dim={dim:?} keepdim={keepdim}"),
        Op::Select { dim, index } => format!("dim={dim} index={index}"),
        Op::Slice { dim, start, step } => format!("dim={dim} start={start} step={step}"),
        Op::Cat { dim } | Op::CumSum { dim } => format!("dim={dim}"),
        Op::Reduce { dims, keepdim, .. } => format!("dims={dims:?} keepdim={keepdim}"),
        Op::ArgMax { dim, keepdim } => format!("dim={dim:?} keepdim={keepdim}"),
        Op::Softmax { dim, log } => format!("dim={dim} log={log}"),
        Op::LayerNorm {
            normalized_dims,
            eps,
            ..
        } => format!("normalized_dims={normalized_dims} eps={eps:?}"),
        Op::BatchNorm { eps, .. } => format!("eps={eps:?}"),
        Op::MatMul { clamp } => show_clamp(*clamp).trim_start().to_string(),
        Op::Addmm { beta, alpha, clamp } => {
            format!("beta={beta} alpha={alpha}{}", show_clamp(*clamp))
        }
        Op::Convolution {
            stride,
            padding,
            dilation,
            groups,
            clamp,
            residual,
            ..
        } => {
            let mut text = format!(
                "stride={stride:?} padding={padding:?} dilation={dilation:?} groups={groups}"
            );
            text.push_str(&show_clamp(*clamp));
            if *residual {
                text.push_str(" residual");
            }
            text
        }
        Op::MaxPool2d {
            kernel,
            stride,
            padding,
            dilation,
            ceil_mode,
        } => format!(
            "kernel={kernel:?} stride={stride:?} padding={padding:?} dilation={dilation:?} ceil_mode={ceil_mode}"
        ),
        Op::AvgPool2d {
            kernel,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
        } => format!(
            "kernel={kernel:?} stride={stride:?} padding={padding:?} ceil_mode={ceil_mode} count_include_pad={count_include_pad}"
        ),
        Op::Full { value } => format!("value={value}"),
        Op::Arange { start, step } => format!("start={start} step={step}"),
        _ => String::new(),
    }
}

/// The graph in Graphviz DOT: one box per node, edges labelled by value.
pub fn to_dot(graph: &Graph<'_>) -> String {
    let mut out = String::new();
    writeln!(out, "digraph \"{}\" {{", graph.name.escape_default()).ok();
    writeln!(out, "  node [shape=box, fontname=monospace];").ok();
    for &node in graph.schedule() {
        let label = node_line(graph, graph.node(node)).replace('"', "\\\"");
        writeln!(out, "  {node} [label=\"{label}\"];").ok();
    }
    for (from, to, value) in graph.edges() {
        writeln!(out, "  {from} -> {to} [label=\"{value}\"];").ok();
    }
    out.push_str("}\n");
    out
}
