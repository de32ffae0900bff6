//! The IR verifier: checks that a graph is well formed before passes and code
//! generators rely on it. Code generation accepts only verified graphs.
//!
//! The graph-wide rules are here (types are sound, values live inside the
//! arena, nothing is read before it is written, jumps land on labels); each
//! op's own rules come from its definition ([`crate::ops::OpDef::infer`]
//! and [`crate::ops::OpDef::check`]).

use std::collections::HashSet;
use std::fmt;

use crate::graph::{Graph, NodeId, OutputKind, Ready, ValueId, ValueKind};
use crate::ops::control::LabelId;
use crate::ops::{Expected, Identical, OpError, Outputs, show};
use crate::symbolic::{ScalarKind, SymbolDef, SymbolError, Term};
use crate::types::{Dim, SymbolId, TensorType};

/// A verification failure: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{graph}: {location}: {problem}")]
pub struct VerifyError {
    pub graph: String,
    pub location: Location,
    pub problem: Problem,
}

/// Where a graph is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Value(ValueId),
    Symbol(SymbolId),
    Node {
        node: NodeId,
        op: &'static str,
    },
    /// The method's output.
    Output(ValueId),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Value(value) => write!(f, "{value}"),
            Location::Symbol(symbol) => write!(f, "symbol {symbol}"),
            Location::Node { node, op } => write!(f, "{node} ({op})"),
            Location::Output(value) => write!(f, "output {value}"),
        }
    }
}

/// What is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    #[error("dim order {0:?} is not a permutation")]
    DimOrder(Vec<u8>),
    #[error("constant of type {ty} holds {bytes} bytes, not {expected}")]
    ConstantSize {
        ty: Box<TensorType>,
        bytes: usize,
        expected: u64,
    },
    #[error("a non-constant value has no memory")]
    Unplaced,
    #[error("bytes at offset {offset} of type {ty} lie outside the {arena}-byte arena")]
    OutsideArena {
        offset: u64,
        ty: Box<TensorType>,
        arena: u64,
    },
    #[error("{0} is read before anything writes it")]
    ReadBeforeWrite(ValueId),
    #[error("{0} is a constant or an input and cannot be written")]
    WritesReadOnly(ValueId),
    #[error("jump to {0}, which is not in the schedule")]
    MissingLabel(LabelId),
    #[error("writes {found} outputs, not {expected}")]
    OutputCount { expected: Outputs, found: usize },
    #[error("output {index} has shape {found} but the inputs imply {expected}")]
    OutputShape {
        index: usize,
        found: String,
        expected: String,
    },
    #[error(transparent)]
    Op(#[from] OpError),
    #[error("no node writes it")]
    NeverWritten,
    #[error("{0} is not a symbol of the graph")]
    UnknownSymbol(SymbolId),
    #[error("{symbol} is read before it is known (it is known after {known})")]
    SymbolNotReady { symbol: SymbolId, known: NodeId },
    #[error("its definition reads {0}, which is not an earlier symbol")]
    SymbolOrder(SymbolId),
    #[error("{symbol}, a {kind}, is used as a size")]
    SymbolKind { symbol: SymbolId, kind: ScalarKind },
    #[error("it reads an element of {0}, which the graph lacks or which is empty")]
    ElementValue(ValueId),
    #[error(transparent)]
    Symbolic(#[from] SymbolError),
    #[error("a check on {0}, which is not a bool")]
    CheckKind(SymbolId),
    #[error("a {kind} output must be a 0-dim {dtype} value, not {ty}")]
    ScalarOutput {
        kind: &'static str,
        dtype: crate::DType,
        ty: Box<TensorType>,
    },
}

/// Checks the whole graph, every value placed in memory; the first problem
/// found is the error.
pub fn verify(graph: &Graph<'_>) -> Result<(), VerifyError> {
    check(graph, Placement::Required)
}

/// Checks the whole graph, as [`verify`], except that values may still
/// wait for memory: for graphs before memory is planned.
pub fn verify_unplanned(graph: &Graph<'_>) -> Result<(), VerifyError> {
    check(graph, Placement::Pending)
}

/// Whether values must have memory yet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    Required,
    Pending,
}

fn check(graph: &Graph<'_>, placement: Placement) -> Result<(), VerifyError> {
    let fail = |location: Location, problem: Problem| VerifyError {
        graph: graph.name.clone(),
        location,
        problem,
    };
    check_symbols(graph).map_err(|(location, problem)| fail(location, problem))?;
    let points = graph.symbol_points();
    let referenced = graph.referenced_values();
    for (id, _) in graph.values() {
        if referenced.contains(&id) {
            check_value(graph, id, placement)
                .map_err(|problem| fail(Location::Value(id), problem))?;
        }
    }

    let labels: HashSet<LabelId> = graph
        .schedule()
        .iter()
        .filter_map(|&node| match graph.op(node) {
            crate::Op::Label(label) => Some(label.label),
            _ => None,
        })
        .collect();
    let mut defined: HashSet<ValueId> = graph
        .values()
        .filter(|(_, value)| !matches!(value.kind, ValueKind::Computed))
        .map(|(id, _)| id)
        .collect();
    for &node_id in graph.schedule() {
        let node = graph.node(node_id);
        let location = Location::Node {
            node: node_id,
            op: node.op().name(),
        };
        let problem = (|| {
            if let Some(&input) = node.inputs().iter().find(|input| !defined.contains(input)) {
                return Err(Problem::ReadBeforeWrite(input));
            }
            check_symbols_ready(graph, node_id, &points)?;
            for &output in node.outputs() {
                if let ValueKind::Constant(_) | ValueKind::Input(_) = graph.value(output).kind {
                    return Err(Problem::WritesReadOnly(output));
                }
                defined.insert(output);
            }
            match node.op() {
                crate::Op::Jump(jump) if !labels.contains(&jump.label) => {
                    Err(Problem::MissingLabel(jump.label))
                }
                crate::Op::JumpIfFalse(jump) if !labels.contains(&jump.label) => {
                    Err(Problem::MissingLabel(jump.label))
                }
                _ => check_node(graph, node_id),
            }
        })();
        problem.map_err(|problem| fail(location, problem))?;
    }
    for (&output, &kind) in graph.outputs().iter().zip(graph.output_kinds()) {
        if !defined.contains(&output) {
            return Err(fail(Location::Output(output), Problem::NeverWritten));
        }
        let ty = &graph.value(output).ty;
        if let Some(dtype) = kind.scalar_dtype()
            && (ty.rank() != 0 || ty.dtype != dtype)
        {
            return Err(fail(
                Location::Output(output),
                Problem::ScalarOutput {
                    kind: kind.name(),
                    dtype,
                    ty: Box::new(ty.clone()),
                },
            ));
        }
        debug_assert!(kind == OutputKind::Tensor || kind.scalar_dtype().is_some());
    }
    Ok(())
}

/// The symbols: every one the graph names exists and, used as a size, is
/// an int; each definition reads earlier symbols of the kinds it takes, or
/// an element of a value the graph has; checks are on bools.
fn check_symbols(graph: &Graph<'_>) -> Result<(), (Location, Problem)> {
    let table = graph.symbol_table();
    for (id, value) in graph.values() {
        for dim in &value.ty.shape {
            if let Dim::Symbol(symbol) = *dim {
                let kind = table
                    .get(symbol)
                    .ok_or((Location::Value(id), Problem::UnknownSymbol(symbol)))?
                    .kind;
                if kind != ScalarKind::Int {
                    return Err((Location::Value(id), Problem::SymbolKind { symbol, kind }));
                }
            }
        }
    }
    for &node in graph.schedule() {
        let op = graph.op(node);
        for symbol in op.def().terms().into_iter().filter_map(Term::symbol) {
            if table.get(symbol).is_none() {
                let location = Location::Node {
                    node,
                    op: op.name(),
                };
                return Err((location, Problem::UnknownSymbol(symbol)));
            }
        }
    }
    for (id, data) in table.iter() {
        let at = |problem| (Location::Symbol(id), problem);
        if let Some(&operand) = data.def.operands().iter().find(|operand| **operand >= id) {
            return Err(at(Problem::SymbolOrder(operand)));
        }
        match &data.def {
            SymbolDef::Element(value) => {
                let empty = graph
                    .value_id(value.index())
                    .map(|value| graph.value(value).ty.shape.contains(&Dim::Fixed(0)));
                if empty != Some(false) {
                    return Err(at(Problem::ElementValue(*value)));
                }
            }
            SymbolDef::Input => {}
            def => {
                // A definition is canonical: it is its own canonical form.
                let canonical = table.canonical(def.clone()).map_err(|e| at(e.into()))?;
                let expected = crate::symbolic::Canonical::Def(def.clone(), data.kind);
                if canonical != expected {
                    return Err(at(Problem::Symbolic(SymbolError::NeverHolds(format!(
                        "{def} is not in canonical form ({canonical:?})"
                    )))));
                }
            }
        }
    }
    for check in table.checks() {
        let kind = table.get(check.condition).map(|data| data.kind);
        if kind != Some(ScalarKind::Bool) {
            return Err((
                Location::Symbol(check.condition),
                Problem::CheckKind(check.condition),
            ));
        }
    }
    Ok(())
}

/// Every symbol a node's values and attributes name is known before it
/// runs.
fn check_symbols_ready(graph: &Graph<'_>, node: NodeId, points: &[Ready]) -> Result<(), Problem> {
    let op = graph.op(node);
    let position = graph.position(node);
    let values = op
        .inputs()
        .into_iter()
        .chain(graph.node(node).outputs().iter().copied());
    let mut symbols: Vec<SymbolId> = op
        .def()
        .terms()
        .into_iter()
        .filter_map(Term::symbol)
        .collect();
    for value in values {
        symbols.extend(
            graph
                .value(value)
                .ty
                .shape
                .iter()
                .filter_map(|dim| match dim {
                    Dim::Symbol(symbol) => Some(*symbol),
                    Dim::Fixed(_) => None,
                }),
        );
    }
    for symbol in symbols {
        if let Ready::After(known) = points[symbol.index()]
            && graph.position(known) >= position
        {
            return Err(Problem::SymbolNotReady { symbol, known });
        }
    }
    Ok(())
}

/// A value's type is sound, a constant holds its bytes, and memory, when
/// placed, lies in the arena.
fn check_value(graph: &Graph<'_>, id: ValueId, placement: Placement) -> Result<(), Problem> {
    let value = graph.value(id);
    let ty = &value.ty;
    let mut seen = vec![false; ty.rank()];
    let permutation = ty.dim_order.len() == ty.rank()
        && ty
            .dim_order
            .iter()
            .all(|&d| (d as usize) < ty.rank() && !std::mem::replace(&mut seen[d as usize], true));
    if !permutation {
        return Err(Problem::DimOrder(ty.dim_order.clone()));
    }
    let bytes = ty.max_bytes(|symbol| graph.bound(symbol));
    match (&value.kind, value.offset) {
        (ValueKind::Constant(data), _) => {
            if data.len() as u64 != bytes || ty.fixed_shape().is_none() {
                return Err(Problem::ConstantSize {
                    ty: Box::new(ty.clone()),
                    bytes: data.len(),
                    expected: bytes,
                });
            }
        }
        (_, None) if placement == Placement::Pending => {}
        (_, None) => return Err(Problem::Unplaced),
        (_, Some(offset)) => {
            if offset
                .checked_add(bytes)
                .is_none_or(|end| end > graph.arena_size())
            {
                return Err(Problem::OutsideArena {
                    offset,
                    ty: Box::new(ty.clone()),
                    arena: graph.arena_size(),
                });
            }
        }
    }
    Ok(())
}

/// Checks a node's outputs against its op's rules.
fn check_node(graph: &Graph<'_>, id: NodeId) -> Result<(), Problem> {
    let node = graph.node(id);
    let def = node.op().def();
    let expected_count = def.outputs();
    if !expected_count.allows(node.outputs().len()) {
        return Err(Problem::OutputCount {
            expected: expected_count,
            found: node.outputs().len(),
        });
    }
    let ty = |value: ValueId| &graph.value(value).ty;
    let inputs: Vec<&TensorType> = node.inputs().into_iter().map(ty).collect();
    let outputs: Vec<&TensorType> = node.outputs().iter().map(|&output| ty(output)).collect();
    let mut cx = Identical::new(graph.symbol_table());
    let expected = def.infer(&inputs, outputs.len(), &mut cx)?;
    for (index, (output, expected)) in outputs.iter().zip(&expected).enumerate() {
        if let Expected::Shape(shape) = expected
            && (shape.len() != output.shape.len()
                || shape
                    .iter()
                    .zip(&output.shape)
                    .any(|(&a, &b)| !cx.same(a, b)))
        {
            return Err(Problem::OutputShape {
                index,
                found: show(&output.shape),
                expected: show(shape),
            });
        }
    }
    def.element_types(&inputs, &outputs)?;
    def.check(&inputs, &outputs, &mut cx)?;
    Ok(())
}
