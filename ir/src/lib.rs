//! ptec's intermediate representation: each method of a program as a typed
//! dataflow graph.
//!
//! A [`Graph`] holds values (element type, shape with fixed or symbolic
//! dimensions, dim order, and where each lives), nodes that apply [`Op`]s
//! on a petgraph graph whose edges join values to the nodes that read and
//! write them, and a schedule that orders the nodes, labels and jumps
//! included. Every op is defined once, in its family's module under
//! [`ops`]: its typed operands and attributes, its shape rule, what the
//! verifier requires of it, its text form, its constant folding, how it
//! fuses and how it reads layouts; elementwise semantics are scalar
//! expressions ([`ops::expr`]) that every back end lowers. [`verify`] checks
//! a graph; [`to_text`] prints one and [`parse`] reads it back; [`to_dot`]
//! draws one. Sizes and scalars known only at run time are symbols
//! ([`symbolic`]), each defined by an input's dimension, an expression over
//! other symbols or a tensor's element. The IR depends on no other ptec
//! crate: importers build it.

pub mod bounds;
pub mod filetest;
mod graph;
mod op;
pub mod ops;
mod parse;
pub mod symbolic;
pub mod tensor_data;
mod text;
mod types;
mod verify;

pub use bounds::{Bounds, value_bounds};
pub use graph::{Graph, Node, NodeId, OutputKind, Ready, ValueData, ValueId, ValueKind};
pub use op::{Op, OpKind};
pub use parse::{ParseError, ParseProblem, parse};
pub use text::{Constants, ELIDED_ABOVE, to_dot, to_text, to_text_with};
pub use types::{
    CHANNELS_LAST, DType, Dim, FILTER_HWIO, Real, Scalar, Shape, SymbolId, TensorType,
    strides_in_order,
};
pub use verify::{Location, Problem, VerifyError, verify, verify_unplanned};
