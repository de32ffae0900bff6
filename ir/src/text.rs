//! The IR's text form, stable and diff-friendly (one value or node per
//! line, in schedule order), and its DOT rendering. [`crate::parse`] reads
//! the text form back.
//!
//! ```text
//! graph forward (arena 2048 bytes) {
//!   symbol s0 <= 32  // input 0 dim 0
//!   symbol s1 = 2*s0 + 1  // cat output dim 0
//!   symbol s2: bool = le(s1, 40)  // ...
//!   check s2  // what the program requires
//!   %0: f32[s0,3] @0 = input 0
//!   %1: f32[3] = constant [1.0, 2.0, 3.0]
//!   %2: f32[s0,3] @64 = add(%0, %1) alpha=2
//!   return %2
//! }
//! ```
//!
//! Symbols other than inputs' dimensions show their definition (and kind,
//! when not an int; and bound, when not the one their range gives); a
//! scalar output is returned as `int %3`, `bool %3` or `double %3`.
//! The arena appears once memory is planned, offsets (`@64`) likewise.
//! Constants and initialized state show their elements, or only their size
//! when they are large (see [`Constants`]); labels and jumps are written
//! `L0:`, `jump L0` and `jump_if_false %3 L0`.

use std::fmt::Write as _;

use crate::graph::{Graph, Node, OutputKind, ValueId, ValueKind};
use crate::op::Op;
use crate::ops::Slot;
use crate::ops::attributes::AttributeWriter;
use crate::symbolic::{ScalarKind, SymbolDef};
use crate::types::DType;

/// How much of a constant's data the text shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constants {
    /// Elements of constants of at most [`ELIDED_ABOVE`] elements, only
    /// the byte count of larger ones (which parse back as zeros).
    Elided,
    /// Every element: the text parses back into the same graph.
    Full,
}

/// The most elements a constant shows in [`Constants::Elided`] text.
pub const ELIDED_ABOVE: usize = 16;

/// The graph as text, large constants elided.
pub fn to_text(graph: &Graph<'_>) -> String {
    to_text_with(graph, Constants::Elided)
}

/// The graph as text.
pub fn to_text_with(graph: &Graph<'_>, constants: Constants) -> String {
    let mut out = String::new();
    let arena = match graph.arena_size() {
        0 => String::new(),
        bytes => format!(" (arena {bytes} bytes)"),
    };
    writeln!(out, "graph {}{arena} {{", graph.name).ok();
    for (symbol, data) in graph.symbols() {
        let kind = match data.kind {
            ScalarKind::Int => String::new(),
            kind => format!(": {kind}"),
        };
        let bound = match data.has_default_bound() {
            true => String::new(),
            false => format!(" <= {}", data.bound),
        };
        let def = match data.def {
            SymbolDef::Input => String::new(),
            ref def => format!(" = {def}"),
        };
        let origin = match data.origin.is_empty() {
            true => String::new(),
            false => format!("  // {}", data.origin),
        };
        writeln!(out, "  symbol {symbol}{kind}{bound}{def}{origin}").ok();
    }
    for check in graph.symbol_table().checks() {
        writeln!(out, "  check {}  // {}", check.condition, check.message).ok();
    }
    let referenced = graph.referenced_values();
    for (id, value) in graph.values().filter(|(id, _)| referenced.contains(id)) {
        let source = match &value.kind {
            ValueKind::Input(index) => format!("input {index}"),
            ValueKind::Constant(bytes) => {
                format!("constant {}", data(bytes, value.ty.dtype, constants))
            }
            ValueKind::State {
                initial: Some(bytes),
            } => {
                format!("state {}", data(bytes, value.ty.dtype, constants))
            }
            ValueKind::State { initial: None } => "state".to_string(),
            ValueKind::Computed => continue,
        };
        writeln!(out, "  {} = {source}", result(graph, id)).ok();
    }
    for &node in graph.schedule() {
        writeln!(out, "  {}", node_line(graph, graph.node(node))).ok();
    }
    let outputs: Vec<String> = graph
        .outputs()
        .iter()
        .zip(graph.output_kinds())
        .map(|(value, kind)| match kind {
            OutputKind::Tensor => value.to_string(),
            kind => format!("{} {value}", kind.name()),
        })
        .collect();
    writeln!(out, "  return {}", outputs.join(", ")).ok();
    out.push_str("}\n");
    out
}

/// `%3: f32[2,3] @64`.
fn result(graph: &Graph<'_>, id: ValueId) -> String {
    let value = graph.value(id);
    let place = value
        .offset
        .map(|offset| format!(" @{offset}"))
        .unwrap_or_default();
    format!("{id}: {}{place}", value.ty)
}

/// A constant's elements, `[1.0, 2.0]` (half-precision ones as bit
/// patterns, `0x3c00`), or `N bytes` when elided.
fn data(bytes: &[u8], dtype: DType, constants: Constants) -> String {
    let count = bytes.len() / dtype.size();
    if constants == Constants::Elided && count > ELIDED_ABOVE {
        return format!("{} bytes", bytes.len());
    }
    let elements: Vec<String> = bytes
        .chunks_exact(dtype.size())
        .map(|element| element_text(element, dtype))
        .collect();
    format!("[{}]", elements.join(", "))
}

fn element_text(element: &[u8], dtype: DType) -> String {
    let mut bits = [0u8; 8];
    bits[..element.len()].copy_from_slice(element);
    let raw = u64::from_le_bytes(bits);
    match dtype {
        DType::Bool => (raw != 0).to_string(),
        DType::U8 => raw.to_string(),
        DType::I8 => (raw as u8 as i8).to_string(),
        DType::I16 => (raw as u16 as i16).to_string(),
        DType::I32 => (raw as u32 as i32).to_string(),
        DType::I64 => (raw as i64).to_string(),
        DType::F16 | DType::BF16 => format!("{raw:#06x}"),
        DType::F32 => format!("{:?}", f32::from_bits(raw as u32)),
        DType::F64 => format!("{:?}", f64::from_bits(raw)),
    }
}

fn node_line(graph: &Graph<'_>, node: &Node) -> String {
    match node.op() {
        Op::Label(label) => return format!("{}:", label.label),
        Op::Jump(jump) => return format!("jump {}", jump.label),
        Op::JumpIfFalse(jump) => return format!("jump_if_false {} {}", jump.condition, jump.label),
        _ => {}
    }
    let results: Vec<String> = node
        .outputs()
        .iter()
        .map(|&output| result(graph, output))
        .collect();
    let def = node.op().def();
    let operands: Vec<String> = def
        .operands()
        .into_iter()
        .map(|(slot, value)| match slot {
            Slot::Positional => value.to_string(),
            Slot::Named(name) => format!("{name}={value}"),
        })
        .collect();
    let mut attributes = AttributeWriter::default();
    def.attributes(&mut attributes);
    let attributes = attributes.finish();
    let space = if attributes.is_empty() { "" } else { " " };
    format!(
        "{} = {}({}){space}{attributes}",
        results.join(", "),
        def.name(),
        operands.join(", ")
    )
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
