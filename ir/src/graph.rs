//! The graph of one method: values (what they are), nodes that apply ops to
//! them, and the schedule (the order nodes run in, labels and jumps
//! included).
//!
//! A petgraph graph holds the dataflow and is its single source of truth:
//! each value and each node is a vertex, an edge runs from a value to each
//! node that reads it and from a node to each value it writes, so readers
//! and writers come from a vertex's edges. Nodes can be changed only
//! through the methods here, which keep the edges, the ops' operands and the
//! schedule consistent; no pass rebuilds anything.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashSet;
use std::fmt;

use petgraph::Direction;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;

use crate::op::Op;
use crate::ops::control::LabelId;
use crate::symbolic::{SymbolData, SymbolDef, SymbolError, SymbolTable, Term};
use crate::types::{Dim, SymbolId, TensorType};

/// A value of a graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ValueId(u32);

impl ValueId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ValueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// A node of a graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// Where a value comes from.
#[derive(Clone, Debug)]
pub enum ValueKind<'a> {
    /// The method's input at this position.
    Input(usize),
    /// Constant bytes, laid out as the value's type says; borrowed from the
    /// program file unless a pass computed them.
    Constant(Cow<'a, [u8]>),
    /// A buffer that keeps its contents from one call to the next; zeros, or
    /// the given bytes, before the first call.
    State { initial: Option<Cow<'a, [u8]>> },
    /// Written by nodes.
    Computed,
}

/// A value: its type, where it comes from, and where it lives.
#[derive(Clone, Debug)]
pub struct ValueData<'a> {
    pub ty: TensorType,
    pub kind: ValueKind<'a>,
    /// Byte offset in the method's arena, once memory is planned; `None`
    /// for constants.
    pub offset: Option<u64>,
}

impl<'a> ValueData<'a> {
    /// A value nodes write, not placed in memory yet.
    pub fn computed(ty: TensorType) -> Self {
        ValueData {
            ty,
            kind: ValueKind::Computed,
            offset: None,
        }
    }

    pub fn constant(ty: TensorType, bytes: Cow<'a, [u8]>) -> Self {
        ValueData {
            ty,
            kind: ValueKind::Constant(bytes),
            offset: None,
        }
    }

    /// The bytes of a constant; `None` for any other value.
    pub fn constant_bytes(&self) -> Option<&[u8]> {
        match &self.kind {
            ValueKind::Constant(bytes) => Some(bytes),
            _ => None,
        }
    }
}

/// Where in the schedule a symbol's value is known, so that generated code
/// computes it there: when the method starts (inputs' sizes and what
/// follows from them), or once a node has run (an element of what it
/// wrote, and what follows from that).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    Start,
    After(NodeId),
}

/// What a method output is at the boundary: a tensor, or a scalar the
/// method returns (held in the graph as a 0-dim value of `i64`, `bool` or
/// `f64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputKind {
    Tensor,
    Int,
    Bool,
    Double,
}

impl OutputKind {
    /// The name in the text form (`return %3, int %4`).
    pub fn name(self) -> &'static str {
        match self {
            OutputKind::Tensor => "tensor",
            OutputKind::Int => "int",
            OutputKind::Bool => "bool",
            OutputKind::Double => "double",
        }
    }

    pub fn from_name(name: &str) -> Option<OutputKind> {
        [
            OutputKind::Tensor,
            OutputKind::Int,
            OutputKind::Bool,
            OutputKind::Double,
        ]
        .into_iter()
        .find(|kind| kind.name() == name)
    }

    /// The element type of the 0-dim value that holds a scalar output.
    pub fn scalar_dtype(self) -> Option<crate::DType> {
        match self {
            OutputKind::Tensor => None,
            OutputKind::Int => Some(crate::DType::I64),
            OutputKind::Bool => Some(crate::DType::Bool),
            OutputKind::Double => Some(crate::DType::F64),
        }
    }
}

/// One application of an op: the op (with the values it reads) and the
/// values it writes. Changed only through [`Graph`].
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    op: Op,
    outputs: Vec<ValueId>,
}

impl Node {
    pub fn op(&self) -> &Op {
        &self.op
    }

    pub fn outputs(&self) -> &[ValueId] {
        &self.outputs
    }

    /// The values the op reads, in slot order.
    pub fn inputs(&self) -> Vec<ValueId> {
        self.op.inputs()
    }
}

/// A vertex of the dataflow graph: a value (found through
/// `Graph::value_vertices`) or a node.
#[derive(Clone, Copy, Debug)]
enum Vertex {
    Value,
    Node(NodeId),
}

/// The dataflow graph of one method.
#[derive(Clone, Debug)]
pub struct Graph<'a> {
    pub name: String,
    values: Vec<ValueData<'a>>,
    value_vertices: Vec<NodeIndex>,
    /// Each node by id; `None` once removed (ids are never reused).
    nodes: Vec<Option<Node>>,
    node_vertices: Vec<NodeIndex>,
    flow: StableDiGraph<Vertex, ()>,
    schedule: Vec<NodeId>,
    /// Each node's place in the schedule, by node index, computed when
    /// first asked for after the schedule changed.
    positions: OnceCell<Vec<usize>>,
    inputs: Vec<ValueId>,
    outputs: Vec<ValueId>,
    /// What each output is at the boundary, by position.
    output_kinds: Vec<OutputKind>,
    symbols: SymbolTable,
    /// Bytes of the arena that `offset`s point into.
    arena_size: u64,
    next_label: u32,
}

impl<'a> Graph<'a> {
    pub fn new(name: impl Into<String>) -> Self {
        Graph {
            name: name.into(),
            values: Vec::new(),
            value_vertices: Vec::new(),
            nodes: Vec::new(),
            node_vertices: Vec::new(),
            flow: StableDiGraph::new(),
            schedule: Vec::new(),
            positions: OnceCell::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            output_kinds: Vec::new(),
            symbols: SymbolTable::default(),
            arena_size: 0,
            next_label: 0,
        }
    }

    pub fn add_value(&mut self, data: ValueData<'a>) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        let input = matches!(data.kind, ValueKind::Input(_));
        self.values.push(data);
        self.value_vertices.push(self.flow.add_node(Vertex::Value));
        if input {
            // The method's inputs, by position.
            self.inputs.push(id);
            let values = &self.values;
            self.inputs
                .sort_by_key(|input| match values[input.index()].kind {
                    ValueKind::Input(position) => position,
                    _ => usize::MAX,
                });
        }
        id
    }

    pub fn value(&self, id: ValueId) -> &ValueData<'a> {
        &self.values[id.index()]
    }

    /// A value's type, kind and place; changing them leaves the dataflow
    /// as it is.
    pub fn value_mut(&mut self, id: ValueId) -> &mut ValueData<'a> {
        &mut self.values[id.index()]
    }

    pub fn values(&self) -> impl Iterator<Item = (ValueId, &ValueData<'a>)> {
        self.values
            .iter()
            .enumerate()
            .map(|(index, data)| (ValueId(index as u32), data))
    }

    pub fn value_count(&self) -> usize {
        self.values.len()
    }

    /// The value with this number, if the graph has it.
    pub fn value_id(&self, index: usize) -> Option<ValueId> {
        (index < self.values.len()).then_some(ValueId(index as u32))
    }

    /// Adds a symbol for a dimension of a method input, at most `bound`.
    pub fn add_symbol(&mut self, bound: u64, origin: String) -> SymbolId {
        self.symbols.add_input(bound, origin)
    }

    pub fn symbol(&self, id: SymbolId) -> &SymbolData {
        self.symbols.symbol(id)
    }

    pub fn symbols(&self) -> impl Iterator<Item = (SymbolId, &SymbolData)> {
        self.symbols.iter()
    }

    /// The symbols with their definitions, and the checks.
    pub fn symbol_table(&self) -> &SymbolTable {
        &self.symbols
    }

    pub fn symbol_table_mut(&mut self) -> &mut SymbolTable {
        &mut self.symbols
    }

    pub fn set_symbol_table(&mut self, symbols: SymbolTable) {
        self.symbols = symbols;
    }

    /// Every symbol the graph names outside the table: in the types of the
    /// values it uses, in ops' attributes.
    pub fn named_symbols(&self) -> Vec<SymbolId> {
        let mut named = self.shape_symbols();
        for node in self.nodes.iter().flatten() {
            named.extend(node.op.def().terms().into_iter().filter_map(Term::symbol));
        }
        named
    }

    /// The symbols the shapes of the values in use name (the sizes memory
    /// is planned for), with repeats.
    pub fn shape_symbols(&self) -> Vec<SymbolId> {
        let referenced = self.referenced_values();
        referenced
            .iter()
            .flat_map(|&id| &self.values[id.index()].ty.shape)
            .filter_map(|dim| match dim {
                Dim::Symbol(symbol) => Some(*symbol),
                Dim::Fixed(_) => None,
            })
            .collect()
    }

    /// Replaces every symbol the graph names (in types, attributes and the
    /// table itself) as `replace` says, dropping symbols nothing needs any
    /// more and renumbering the rest; a replaced symbol that was computed
    /// becomes a check that it equals its replacement.
    pub fn rewrite_symbols(
        &mut self,
        replace: impl Fn(SymbolId) -> Option<Term>,
    ) -> Result<(), SymbolError> {
        let roots: Vec<SymbolId> = self
            .named_symbols()
            .into_iter()
            .map(|symbol| match replace(symbol) {
                Some(Term::Symbol(target)) => target,
                _ => symbol,
            })
            .collect();
        let (table, map) = self.symbols.rebuild(&replace, roots)?;
        let mapped = |symbol: SymbolId| map[symbol.index()];
        for value in &mut self.values {
            for dim in &mut value.ty.shape {
                if let Dim::Symbol(symbol) = *dim {
                    *dim = mapped(symbol).as_dim().ok_or(SymbolError::Kinds {
                        op: "a dimension",
                        expected: "a size that is not negative",
                        found: mapped(symbol).to_string(),
                    })?;
                }
            }
        }
        let ids: Vec<NodeId> = self.schedule.clone();
        for id in ids {
            let mut op = self.node(id).op.clone();
            let before = op.clone();
            op.def_mut().map_terms(&mut |term| match term {
                Term::Symbol(symbol) => mapped(symbol),
                constant => constant,
            });
            if op != before {
                self.node_slot(id).op = op;
            }
        }
        self.symbols = table;
        Ok(())
    }

    /// Drops symbols nothing names, renumbering the rest.
    pub fn remove_unused_symbols(&mut self) {
        // Nothing is replaced, so nothing can fail.
        let _ = self.rewrite_symbols(|_| None);
    }

    /// The largest value of a symbol, for sizing memory.
    pub fn bound(&self, symbol: SymbolId) -> u64 {
        self.symbol(symbol).bound
    }

    /// Where each symbol is known, by index (see [`Ready`]): an input's at
    /// the start; an element once the last node writing its value has run
    /// (at the start when nothing writes it); an expression once its last
    /// operand is known. Symbols must only read earlier symbols
    /// (`ir::verify` checks it before asking).
    pub fn symbol_points(&self) -> Vec<Ready> {
        let mut points: Vec<Ready> = Vec::with_capacity(self.symbols.len());
        let rank = |point: Ready| match point {
            Ready::Start => 0,
            Ready::After(node) => self.position(node) + 1,
        };
        for (_, data) in self.symbols.iter() {
            let point = match &data.def {
                SymbolDef::Input => Ready::Start,
                SymbolDef::Element(value) if value.index() < self.values.len() => self
                    .writers(*value)
                    .last()
                    .map_or(Ready::Start, |&node| Ready::After(node)),
                SymbolDef::Element(_) => Ready::Start,
                def => def
                    .operands()
                    .into_iter()
                    .filter_map(|operand| points.get(operand.index()).copied())
                    .max_by_key(|&point| rank(point))
                    .unwrap_or(Ready::Start),
            };
            points.push(point);
        }
        points
    }

    /// The values symbols read an element of.
    pub fn element_values(&self) -> impl Iterator<Item = ValueId> + '_ {
        self.symbols.iter().filter_map(|(_, data)| match data.def {
            SymbolDef::Element(value) => Some(value),
            _ => None,
        })
    }

    /// A label no node uses yet.
    pub fn new_label(&mut self) -> LabelId {
        self.next_label += 1;
        LabelId(self.next_label - 1)
    }

    /// Appends a node to the schedule.
    pub fn push_node(&mut self, op: Op, outputs: Vec<ValueId>) -> NodeId {
        let position = self.schedule.len();
        self.insert_node(position, op, outputs)
    }

    /// Inserts a node into the schedule at `position`.
    pub fn insert_node(&mut self, position: usize, op: Op, outputs: Vec<ValueId>) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        if let Some(label) = op.label() {
            self.next_label = self.next_label.max(label.0 + 1);
        }
        self.nodes.push(Some(Node { op, outputs }));
        self.node_vertices
            .push(self.flow.add_node(Vertex::Node(id)));
        self.connect(id, Direction::Incoming);
        self.connect(id, Direction::Outgoing);
        self.schedule.insert(position, id);
        self.positions.take();
        id
    }

    pub fn node(&self, id: NodeId) -> &Node {
        self.nodes[id.index()]
            .as_ref()
            .unwrap_or_else(|| panic!("node {id} was removed"))
    }

    pub fn op(&self, id: NodeId) -> &Op {
        &self.node(id).op
    }

    fn node_slot(&mut self, id: NodeId) -> &mut Node {
        self.nodes[id.index()]
            .as_mut()
            .unwrap_or_else(|| panic!("node {id} was removed"))
    }

    /// Replaces a node's op (and so what it reads).
    pub fn set_op(&mut self, id: NodeId, op: Op) {
        if let Some(label) = op.label() {
            self.next_label = self.next_label.max(label.0 + 1);
        }
        self.node_slot(id).op = op;
        self.disconnect(id, Direction::Incoming);
        self.connect(id, Direction::Incoming);
    }

    /// Replaces the values a node writes.
    pub fn set_node_outputs(&mut self, id: NodeId, outputs: Vec<ValueId>) {
        self.node_slot(id).outputs = outputs;
        self.disconnect(id, Direction::Outgoing);
        self.connect(id, Direction::Outgoing);
    }

    /// Makes every node (and symbol) that reads `old` read `new` instead.
    pub fn replace_reads(&mut self, old: ValueId, new: ValueId) {
        self.symbols.replace_element_reads(old, new);
        for reader in self.readers(old) {
            let mut op = self.node(reader).op.clone();
            for operand in op.def_mut().operands_mut() {
                if *operand == old {
                    *operand = new;
                }
            }
            self.set_op(reader, op);
        }
    }

    /// Removes a node from the graph and the schedule.
    pub fn remove_node(&mut self, id: NodeId) {
        self.flow.remove_node(self.node_vertices[id.index()]);
        self.nodes[id.index()] = None;
        self.schedule.retain(|&node| node != id);
        self.positions.take();
    }

    /// Adds the edges of a node's reads (`Incoming`) or writes
    /// (`Outgoing`), one per distinct value.
    fn connect(&mut self, id: NodeId, direction: Direction) {
        let node = self.node(id);
        let mut values = match direction {
            Direction::Incoming => node.op.inputs(),
            Direction::Outgoing => node.outputs.clone(),
        };
        values.sort_unstable();
        values.dedup();
        let vertex = self.node_vertices[id.index()];
        for value in values {
            let value_vertex = *self
                .value_vertices
                .get(value.index())
                .unwrap_or_else(|| panic!("node {id} names {value}, which the graph lacks"));
            match direction {
                Direction::Incoming => self.flow.add_edge(value_vertex, vertex, ()),
                Direction::Outgoing => self.flow.add_edge(vertex, value_vertex, ()),
            };
        }
    }

    fn disconnect(&mut self, id: NodeId, direction: Direction) {
        let vertex = self.node_vertices[id.index()];
        let edges: Vec<_> = self
            .flow
            .edges_directed(vertex, direction)
            .map(|edge| edge.id())
            .collect();
        for edge in edges {
            self.flow.remove_edge(edge);
        }
    }

    /// The nodes at the other end of a value's edges, in schedule order.
    fn neighbours(&self, value: ValueId, direction: Direction) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self
            .flow
            .neighbors_directed(self.value_vertices[value.index()], direction)
            .filter_map(|vertex| match self.flow[vertex] {
                Vertex::Node(id) => Some(id),
                Vertex::Value => None,
            })
            .collect();
        nodes.sort_by_key(|&node| self.position(node));
        nodes
    }

    /// The nodes that read `value`, in schedule order.
    pub fn readers(&self, value: ValueId) -> Vec<NodeId> {
        self.neighbours(value, Direction::Outgoing)
    }

    /// The nodes that write `value`, in schedule order.
    pub fn writers(&self, value: ValueId) -> Vec<NodeId> {
        self.neighbours(value, Direction::Incoming)
    }

    /// The node's place in the schedule.
    pub fn position(&self, id: NodeId) -> usize {
        let positions = self.positions.get_or_init(|| {
            let mut positions = vec![usize::MAX; self.nodes.len()];
            for (position, node) in self.schedule.iter().enumerate() {
                positions[node.index()] = position;
            }
            positions
        });
        positions[id.index()]
    }

    /// The nodes in the order they run.
    pub fn schedule(&self) -> &[NodeId] {
        &self.schedule
    }

    /// Each dataflow edge between nodes: a writer, a reader and the value
    /// between them.
    pub fn edges(&self) -> Vec<(NodeId, NodeId, ValueId)> {
        let mut edges = Vec::new();
        for (value, _) in self.values() {
            let readers = self.readers(value);
            for writer in self.writers(value) {
                edges.extend(readers.iter().map(|&reader| (writer, reader, value)));
            }
        }
        edges
    }

    /// Whether a node is a view that needs no code: a reshape whose output
    /// already lives where its input does.
    pub fn is_view_in_place(&self, id: NodeId) -> bool {
        let node = self.node(id);
        let Op::Reshape(reshape) = &node.op else {
            return false;
        };
        let offset = self.value(reshape.input).offset;
        offset.is_some() && node.outputs.first().map(|&out| self.value(out).offset) == Some(offset)
    }

    /// The nodes that run code: not labels or jumps, not views in place.
    pub fn kernel_count(&self) -> usize {
        self.schedule
            .iter()
            .filter(|&&id| !self.node(id).op.is_control() && !self.is_view_in_place(id))
            .count()
    }

    /// The values that nodes, the method's inputs and outputs, or its state
    /// refer to; passes can leave others behind, unused.
    pub fn referenced_values(&self) -> HashSet<ValueId> {
        let mut referenced: HashSet<ValueId> = self
            .values()
            .filter(|&(id, value)| {
                matches!(value.kind, ValueKind::State { .. })
                    || self
                        .flow
                        .neighbors_undirected(self.value_vertices[id.index()])
                        .next()
                        .is_some()
            })
            .map(|(id, _)| id)
            .collect();
        referenced.extend(self.inputs.iter().chain(&self.outputs).copied());
        referenced
    }

    /// Whether anything outside the nodes needs `value`: a method output,
    /// state that outlives the call, or a symbol that reads its element.
    pub fn is_live_out(&self, value: ValueId) -> bool {
        self.outputs.contains(&value)
            || matches!(self.values[value.index()].kind, ValueKind::State { .. })
            || self.element_values().any(|read| read == value)
    }

    pub fn inputs(&self) -> &[ValueId] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[ValueId] {
        &self.outputs
    }

    /// Sets the method's outputs, each a tensor.
    pub fn set_outputs(&mut self, outputs: Vec<ValueId>) {
        self.output_kinds = vec![OutputKind::Tensor; outputs.len()];
        self.outputs = outputs;
    }

    /// Sets the method's outputs with what each is at the boundary.
    pub fn set_outputs_with_kinds(&mut self, outputs: Vec<(ValueId, OutputKind)>) {
        (self.outputs, self.output_kinds) = outputs.into_iter().unzip();
    }

    /// What each output is at the boundary, by position.
    pub fn output_kinds(&self) -> &[OutputKind] {
        &self.output_kinds
    }

    /// Replaces the output at `position` (keeping what it is).
    pub fn replace_output(&mut self, position: usize, value: ValueId) {
        self.outputs[position] = value;
    }

    pub fn arena_size(&self) -> u64 {
        self.arena_size
    }

    pub fn set_arena_size(&mut self, size: u64) {
        self.arena_size = size;
    }
}
