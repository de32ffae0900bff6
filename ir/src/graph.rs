//! The graph of one method: values (what they are), nodes on a petgraph
//! graph whose edges run from a value's writer to its readers (how data
//! flows), and the schedule (the order nodes run in, labels and jumps
//! included).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use petgraph::stable_graph::{NodeIndex, StableDiGraph};

use crate::op::Op;
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
pub struct NodeId(NodeIndex);

impl NodeId {
    pub fn index(self) -> usize {
        self.0.index()
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0.index())
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
    State { initial: Option<&'a [u8]> },
    /// Written by nodes.
    Computed,
}

/// A value: its type, where it comes from, and where it lives.
#[derive(Clone, Debug)]
pub struct ValueData<'a> {
    pub ty: TensorType,
    pub kind: ValueKind<'a>,
    /// Byte offset in the method's arena; `None` for constants.
    pub offset: Option<u64>,
}

/// A symbolic dimension and what bounds it.
#[derive(Clone, Debug)]
pub struct SymbolData {
    pub bound: u64,
    /// Where the symbol first appears: `input 0 dim 0`.
    pub origin: String,
}

/// One application of an op.
#[derive(Clone, Debug)]
pub struct Node {
    pub op: Op,
    pub inputs: Vec<ValueId>,
    pub outputs: Vec<ValueId>,
}

/// The dataflow graph of one method.
#[derive(Clone, Debug)]
pub struct Graph<'a> {
    pub name: String,
    values: Vec<ValueData<'a>>,
    nodes: StableDiGraph<Node, ValueId>,
    schedule: Vec<NodeId>,
    inputs: Vec<ValueId>,
    outputs: Vec<ValueId>,
    symbols: Vec<SymbolData>,
    /// Bytes of the arena that `offset`s point into.
    arena_size: u64,
    /// The node that last wrote each value, while nodes are appended.
    last_writer: HashMap<ValueId, NodeId>,
}

impl<'a> Graph<'a> {
    pub fn new(name: impl Into<String>) -> Self {
        Graph {
            name: name.into(),
            values: Vec::new(),
            nodes: StableDiGraph::new(),
            schedule: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            symbols: Vec::new(),
            arena_size: 0,
            last_writer: HashMap::new(),
        }
    }

    pub fn add_value(&mut self, data: ValueData<'a>) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        if let ValueKind::Input(_) = data.kind {
            self.inputs.push(id);
        }
        self.values.push(data);
        id
    }

    pub fn value(&self, id: ValueId) -> &ValueData<'a> {
        &self.values[id.index()]
    }

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

    pub fn add_symbol(&mut self, bound: u64, origin: String) -> SymbolId {
        self.symbols.push(SymbolData { bound, origin });
        SymbolId(self.symbols.len() as u32 - 1)
    }

    pub fn symbol(&self, id: SymbolId) -> &SymbolData {
        &self.symbols[id.index()]
    }

    /// Drops symbols no value's type mentions, renumbering the rest.
    pub fn remove_unused_symbols(&mut self) {
        let mut renumbered: Vec<Option<SymbolId>> = vec![None; self.symbols.len()];
        let mut kept = Vec::new();
        for value in &mut self.values {
            for dim in &mut value.ty.shape {
                if let Dim::Symbol(symbol) = dim {
                    let new = *renumbered[symbol.index()].get_or_insert_with(|| {
                        kept.push(self.symbols[symbol.index()].clone());
                        SymbolId(kept.len() as u32 - 1)
                    });
                    *symbol = new;
                }
            }
        }
        self.symbols = kept;
    }

    pub fn symbols(&self) -> impl Iterator<Item = (SymbolId, &SymbolData)> {
        self.symbols
            .iter()
            .enumerate()
            .map(|(index, data)| (SymbolId(index as u32), data))
    }

    /// Appends a node to the schedule, with edges from the latest writers of
    /// its inputs.
    pub fn push_node(&mut self, op: Op, inputs: Vec<ValueId>, outputs: Vec<ValueId>) -> NodeId {
        let writers: Vec<(NodeId, ValueId)> = inputs
            .iter()
            .filter_map(|input| self.last_writer.get(input).map(|&writer| (writer, *input)))
            .collect();
        let written = outputs.clone();
        let id = NodeId(self.nodes.add_node(Node {
            op,
            inputs,
            outputs,
        }));
        for (writer, value) in writers {
            self.nodes.add_edge(writer.0, id.0, value);
        }
        for value in written {
            self.last_writer.insert(value, id);
        }
        self.schedule.push(id);
        id
    }

    /// Inserts a node into the schedule at `position`; call
    /// [`Graph::rebuild_edges`] once the rewrites of a pass are done.
    pub fn insert_node(
        &mut self,
        position: usize,
        op: Op,
        inputs: Vec<ValueId>,
        outputs: Vec<ValueId>,
    ) -> NodeId {
        let id = NodeId(self.nodes.add_node(Node {
            op,
            inputs,
            outputs,
        }));
        self.schedule.insert(position, id);
        id
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0]
    }

    /// Changes a node in place; call [`Graph::rebuild_edges`] once the
    /// rewrites of a pass are done.
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.0]
    }

    /// Makes every node that reads `old` read `new` instead.
    pub fn replace_reads(&mut self, old: ValueId, new: ValueId) {
        for &id in &self.schedule {
            for input in &mut self.nodes[id.0].inputs {
                if *input == old {
                    *input = new;
                }
            }
        }
    }

    /// Removes a node from the graph and the schedule.
    pub fn remove_node(&mut self, id: NodeId) {
        self.nodes.remove_node(id.0);
        self.schedule.retain(|&node| node != id);
        self.last_writer.retain(|_, writer| *writer != id);
    }

    /// Recomputes the dataflow edges from the schedule: each input is
    /// connected to the latest node before it that writes the value.
    pub fn rebuild_edges(&mut self) {
        self.nodes.clear_edges();
        let mut last_writer: HashMap<ValueId, NodeId> = HashMap::new();
        for &id in &self.schedule {
            let node = &self.nodes[id.0];
            let edges: Vec<(NodeId, ValueId)> = node
                .inputs
                .iter()
                .filter_map(|input| last_writer.get(input).map(|&writer| (writer, *input)))
                .collect();
            for &output in &node.outputs {
                last_writer.insert(output, id);
            }
            for (writer, value) in edges {
                self.nodes.add_edge(writer.0, id.0, value);
            }
        }
        self.last_writer = last_writer;
    }

    /// The nodes that read `value`, in schedule order.
    pub fn readers(&self, value: ValueId) -> Vec<NodeId> {
        self.schedule
            .iter()
            .copied()
            .filter(|&id| self.nodes[id.0].inputs.contains(&value))
            .collect()
    }

    /// The nodes that write `value`, in schedule order.
    pub fn writers(&self, value: ValueId) -> Vec<NodeId> {
        self.schedule
            .iter()
            .copied()
            .filter(|&id| self.nodes[id.0].outputs.contains(&value))
            .collect()
    }

    /// Whether a node is a view that needs no code: a reshape whose output
    /// already lives where its input does.
    pub fn is_view_in_place(&self, id: NodeId) -> bool {
        let node = &self.nodes[id.0];
        matches!(node.op, Op::Reshape)
            && self.values[node.inputs[0].index()].offset.is_some()
            && self.values[node.inputs[0].index()].offset
                == self.values[node.outputs[0].index()].offset
    }

    /// The nodes that run code: not labels or jumps, not views in place.
    pub fn kernel_count(&self) -> usize {
        self.schedule
            .iter()
            .filter(|&&id| !self.nodes[id.0].op.is_control() && !self.is_view_in_place(id))
            .count()
    }

    /// The values that nodes, the method's inputs and outputs, or its state
    /// refer to; passes can leave others behind, unused.
    pub fn referenced_values(&self) -> std::collections::HashSet<ValueId> {
        let mut referenced: std::collections::HashSet<ValueId> = self
            .schedule
            .iter()
            .flat_map(|&id| {
                let node = &self.nodes[id.0];
                node.inputs.iter().chain(&node.outputs).copied()
            })
            .collect();
        referenced.extend(self.inputs.iter().chain(&self.outputs).copied());
        referenced.extend(
            self.values()
                .filter(|(_, value)| matches!(value.kind, ValueKind::State { .. }))
                .map(|(id, _)| id),
        );
        referenced
    }

    /// Whether anything outside the nodes needs `value`: a method output, or
    /// state that outlives the call.
    pub fn is_live_out(&self, value: ValueId) -> bool {
        self.outputs.contains(&value)
            || matches!(self.values[value.index()].kind, ValueKind::State { .. })
    }

    /// The nodes in the order they run.
    pub fn schedule(&self) -> &[NodeId] {
        &self.schedule
    }

    /// Each dataflow edge: writer, reader and the value between them.
    pub fn edges(&self) -> impl Iterator<Item = (NodeId, NodeId, ValueId)> + '_ {
        use petgraph::visit::{EdgeRef, IntoEdgeReferences};
        self.nodes
            .edge_references()
            .map(|edge| (NodeId(edge.source()), NodeId(edge.target()), *edge.weight()))
    }

    pub fn inputs(&self) -> &[ValueId] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[ValueId] {
        &self.outputs
    }

    pub fn set_outputs(&mut self, outputs: Vec<ValueId>) {
        self.outputs = outputs;
    }

    pub fn arena_size(&self) -> u64 {
        self.arena_size
    }

    pub fn set_arena_size(&mut self, size: u64) {
        self.arena_size = size;
    }

    /// The largest value of a symbol, for sizing memory.
    pub fn bound(&self, symbol: SymbolId) -> u64 {
        self.symbol(symbol).bound
    }
}
