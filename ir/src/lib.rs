//! ptec's intermediate representation: each method of a program as a typed
//! dataflow graph.
//!
//! A [`Graph`] holds values (element type, shape with fixed or symbolic
//! dimensions, dim order, and where each lives), nodes that apply [`Op`]s
//! (with typed attributes) on a petgraph graph whose edges carry values from
//! writer to reader, and a schedule that orders the nodes, labels and jumps
//! included. [`import_method`] builds one from the frontend's checked values;
//! [`verify`] checks one; [`to_text`] and [`to_dot`] print one. The IR parses
//! no bytes: the frontend hands over delegate graphs decoded into typed
//! values.

mod graph;
mod import;
mod op;
pub mod shape;
mod text;
mod types;
mod verify;

pub use graph::{Graph, Node, NodeId, SymbolData, ValueData, ValueId, ValueKind};
pub use import::{ImportError, import_method, supported_operators};
pub use op::{BinaryOp, ClampRange, FusedStep, LabelId, Op, Pair, ReduceOp, StepInput, UnaryOp};
pub use text::{to_dot, to_text};
pub use types::{CHANNELS_LAST, DType, Dim, FILTER_HWIO, Scalar, Shape, SymbolId, TensorType};
pub use verify::{VerifyError, verify, verify_unplanned};
