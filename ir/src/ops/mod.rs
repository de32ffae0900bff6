//! The operations of the IR, one module per family, each op defined once.
//!
//! An op is a Rust value holding its typed operands (the values it reads,
//! in named slots) and its attributes; [`OpDef`] is everything the rest of
//! ptec asks of an op: its name and operands, how many outputs it has, the
//! shapes of those outputs (the rule import uses to settle symbolic sizes
//! and the verifier checks), what else it requires of its types, its
//! attributes in the text form (and [`crate::parse`] reads them back through
//! the family's `parse`), its constant-folding rule, how it fuses, and how
//! it reads and writes layouts. [`crate::Op`] is the closed list of them:
//! code generators match it exhaustively, so a new op does not compile until
//! each back end lowers it or refuses it.
//!
//! Elementwise semantics (NaN rules, compute types, integer wrap and
//! division) are written once, as scalar expressions ([`expr`]), which both
//! back ends lower.

pub mod attributes;
pub mod control;
pub mod conv;
pub mod creation;
pub mod elementwise;
pub mod expr;
pub mod fused;
pub mod gather;
pub mod layout;
pub mod linalg;
pub mod norm;
pub mod promotion;
pub mod reduce;

use std::fmt;

use crate::graph::ValueId;
use crate::symbolic::{Poly, SymOp, SymbolDef, SymbolError, SymbolTable, Term};
use crate::types::{Dim, Shape, SymbolId, TensorType};
use attributes::AttributeWriter;

/// The operand methods of an op whose one operand is the field `input`.
macro_rules! one_input {
    () => {
        fn operands(&self) -> Vec<($crate::ops::Slot, $crate::ValueId)> {
            vec![($crate::ops::Slot::Positional, self.input)]
        }

        fn operands_mut(&mut self) -> Vec<&mut $crate::ValueId> {
            vec![&mut self.input]
        }
    };
}
pub(crate) use one_input;

/// Checks that the first output holds numbers, not bools (`what` names it).
pub(crate) fn numbers(outputs: &[&TensorType], what: &'static str) -> Result<(), OpError> {
    match outputs[0].dtype {
        crate::DType::Bool => Err(OpError::ElementType {
            what,
            expected: "numbers",
            found: crate::DType::Bool,
        }),
        _ => Ok(()),
    }
}

/// The element-type rule of an op whose result has its first operand's
/// type ([`keeps`]).
macro_rules! keeps_input_type {
    () => {
        fn element_types(
            &self,
            inputs: &[&$crate::TensorType],
            outputs: &[&$crate::TensorType],
        ) -> Result<(), $crate::ops::OpError> {
            $crate::ops::keeps(inputs, outputs, &[0])
        }
    };
}
pub(crate) use keeps_input_type;

/// The operand methods of an op that reads no value.
macro_rules! no_operands {
    () => {
        fn operands(&self) -> Vec<($crate::ops::Slot, $crate::ValueId)> {
            Vec::new()
        }

        fn operands_mut(&mut self) -> Vec<&mut $crate::ValueId> {
            Vec::new()
        }
    };
}
pub(crate) use no_operands;

/// How an operand is written in the text form: positionally, or by name
/// (optional operands, and those after one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Positional,
    Named(&'static str),
}

/// How many outputs a node of an op has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outputs {
    Exactly(usize),
    /// At least this many: the first is the result, the others are extra
    /// results some files declare (batch norm's saved statistics).
    AtLeast(usize),
}

impl Outputs {
    pub fn allows(self, count: usize) -> bool {
        match self {
            Outputs::Exactly(n) => count == n,
            Outputs::AtLeast(n) => count >= n,
        }
    }
}

impl fmt::Display for Outputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outputs::Exactly(n) => write!(f, "{n}"),
            Outputs::AtLeast(n) => write!(f, "at least {n}"),
        }
    }
}

/// What an op's rule says about one output's shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// The output must have exactly this shape.
    Shape(Shape),
    /// The op takes the output's shape as given (views, fills, ranges);
    /// [`OpDef::check`] still validates it against the inputs.
    Given,
}

/// Checks that the outputs `kept` have the element type of the first
/// operand: the op moves its data, or computes in its type (PyTorch
/// requires `out` to have it, as ExecuTorch's kernels do).
pub(crate) fn keeps(
    inputs: &[&TensorType],
    outputs: &[&TensorType],
    kept: &[usize],
) -> Result<(), OpError> {
    let Some(input) = inputs.first() else {
        return Ok(());
    };
    match kept
        .iter()
        .filter_map(|&index| Some((index, outputs.get(index)?)))
        .find(|(_, output)| output.dtype != input.dtype)
    {
        Some((index, output)) => Err(OpError::Keeps {
            index,
            input: input.dtype,
            output: output.dtype,
        }),
        None => Ok(()),
    }
}

/// How an op treats the dim order of what it reads and writes, for
/// dim-order propagation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutRule {
    /// Reads each operand and writes its result in any dim order, element
    /// by element at the same coordinates (elementwise maps).
    Elementwise,
    /// Reads its operands in any dim order; writes its result as its type
    /// says (copies, reductions).
    ReadsAny,
    /// Reads its operands and writes its result in any dim order, each
    /// element of the result a copy of one of an operand's
    /// (concatenation).
    Copy,
    /// Reads its input in any dim order and can write its result
    /// channels-last from a filter stored HWIO; a residual is read in the
    /// result's layout (convolutions).
    Convolution,
    /// Reads its input and writes its first result in one dim order, NCHW
    /// or channels-last, when nothing reads its other results (max
    /// pooling, whose indices count NCHW positions).
    Pooling,
    /// Observes the layout of what it reads (a reshape reinterprets bytes;
    /// average pooling and gathers want row-major tensors).
    Fixed,
}

/// Everything ptec asks of an op. Each op family implements it in its own
/// module; [`crate::Op`] forwards to the implementation of its variant.
pub trait OpDef {
    /// The name in the text form and in messages (`add`, `convolution`).
    fn name(&self) -> &'static str;

    /// The values the op reads, in slot order.
    fn operands(&self) -> Vec<(Slot, ValueId)>;

    /// The same values, to rewire them.
    fn operands_mut(&mut self) -> Vec<&mut ValueId>;

    /// How many outputs a node of this op has.
    fn outputs(&self) -> Outputs {
        Outputs::Exactly(1)
    }

    /// Whether the outputs' element types follow from the operands' as the
    /// op requires: no default, so that every op states its rule. Import
    /// checks it as each node is made (where an error can name the call),
    /// the verifier on every node. Rules that also need settled shapes or
    /// symbols live in [`OpDef::check`], and each op's comment says so.
    fn element_types(&self, inputs: &[&TensorType], outputs: &[&TensorType])
    -> Result<(), OpError>;

    /// The shape of each output, given the operands' types, in slot order
    /// (`inputs[k]` is the type of `operands()[k]`). `eq` decides whether
    /// two dimensions the rule requires to be equal are: the verifier asks
    /// for identity, import lets a symbolic size meet a fixed one.
    fn infer(
        &self,
        inputs: &[&TensorType],
        outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError>;

    /// What the shape rule cannot say: outputs whose shape the op takes as
    /// given, element types the op requires.
    fn check(
        &self,
        _inputs: &[&TensorType],
        _outputs: &[&TensorType],
        _cx: &mut dyn ShapeContext,
    ) -> Result<(), OpError> {
        Ok(())
    }

    /// The run-time scalars among the attributes (a slice's start, a fill
    /// value), as terms: constants, or symbols of the graph.
    fn terms(&self) -> Vec<Term> {
        Vec::new()
    }

    /// Replaces each of [`OpDef::terms`] by what `map` makes of it.
    fn map_terms(&mut self, _map: &mut dyn FnMut(Term) -> Term) {}

    /// The attributes, as the text form writes them.
    fn attributes(&self, _out: &mut AttributeWriter) {}

    /// The bytes of the single output when every operand is a constant
    /// (`inputs[k]`: type and bytes of operand `k`), for ops cheaper to
    /// compute once at compile time than at every call; `None` when the op
    /// does not fold or these operands do not.
    fn fold(&self, _inputs: &[(&TensorType, &[u8])], _output: &TensorType) -> Option<Vec<u8>> {
        None
    }

    /// How the op reads and writes dim orders.
    fn layout(&self) -> LayoutRule {
        LayoutRule::Fixed
    }

    /// The clamp the op applies to its result before anything else in its
    /// epilogue, when it has one (`fuse-clamp` moves an activation there).
    fn clamp_epilogue(&mut self) -> Option<&mut linalg::ClampRange> {
        None
    }

    /// The residual the op adds to its result at the end of its epilogue,
    /// after the clamp, when it can add one (`fuse-residual` moves an add
    /// there).
    fn residual_epilogue(&mut self) -> Option<&mut Option<ValueId>> {
        None
    }
}

/// Why an op cannot apply to its operands, or its outputs do not fit it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OpError {
    /// Operands whose shapes the op cannot combine.
    #[error("{what}: {}", show_shapes(shapes))]
    Shapes {
        what: &'static str,
        shapes: Vec<Shape>,
    },
    /// A dimension the op needs to know at compile time is symbolic.
    #[error("{what} must have a fixed size, not {dim}")]
    NotFixed { what: &'static str, dim: Dim },
    /// An expression over symbols that is not one, or that the graph lacks.
    #[error("{what}: {problem}")]
    Symbolic { what: &'static str, problem: String },
    #[error("takes {expected} operands, not {found}")]
    Arity { expected: usize, found: usize },
    #[error("dimension {dim} is out of range for rank {rank}")]
    Axis { dim: usize, rank: usize },
    /// An attribute that does not fit the operands.
    #[error("{name} {value}: {problem}")]
    Attribute {
        name: &'static str,
        value: String,
        problem: String,
    },
    /// A step of a fused kernel that does not fit it.
    #[error("step {index}: {problem}")]
    FusedStep { index: usize, problem: String },
    /// An operand or output of an element type the op does not take.
    #[error("{what} must be {expected}, not {found}")]
    ElementType {
        what: &'static str,
        expected: &'static str,
        found: crate::DType,
    },
    /// An output of another element type than the input whose type the op
    /// keeps.
    #[error(
        "output {index} must have the input's element type {input}, not {output} (the op moves its input or computes in its type)"
    )]
    Keeps {
        index: usize,
        input: crate::DType,
        output: crate::DType,
    },
    /// A function that does not compute in the type of its operands.
    #[error("{0}")]
    Undefined(elementwise::Undefined),
    /// A result the output's element type cannot receive.
    #[error(
        "its result of type {from} cannot be cast to the output's {to} (PyTorch casts no float into an integer and nothing but a bool into a bool)"
    )]
    Cast {
        from: crate::DType,
        to: crate::DType,
    },
    /// An output whose type the operands do not give.
    #[error("cannot {what} {from} into {to}")]
    Output {
        what: &'static str,
        from: Box<TensorType>,
        to: Box<TensorType>,
    },
}

fn show_shapes(shapes: &[Shape]) -> String {
    shapes
        .iter()
        .map(|shape| show(shape))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// What a shape rule works in: it decides whether two dimensions must be,
/// and can be, the same size, and turns expressions over dimensions into
/// dimensions. Import makes the symbols a rule needs and lets a symbolic
/// size meet a fixed one; the verifier finds the symbols the graph has and
/// asks for identity (or an equality the graph checks at run time).
pub trait ShapeContext {
    /// The common dimension, or `None` when `a` and `b` cannot be equal.
    fn equate(&mut self, a: Dim, b: Dim) -> Option<Dim>;

    /// The graph's symbols.
    fn symbols(&self) -> &SymbolTable;

    /// The term a polynomial or operation definition is: interned at
    /// import; found by the verifier, `None` when the graph lacks it.
    fn term(&mut self, def: SymbolDef) -> Result<Option<Term>, SymbolError>;

    /// Requires the bool `condition` to hold at run time (import records a
    /// check with `message`; the verifier asks nothing: the checks are the
    /// graph's own).
    fn require(
        &mut self,
        condition: SymbolDef,
        message: &dyn Fn() -> String,
    ) -> Result<(), OpError>;
}

/// The verifier's context: dimensions are equal when identical, or when
/// a check of the graph requires them to be at run time; expressions are
/// the graph's symbols.
#[derive(Debug)]
pub struct Identical<'g> {
    symbols: &'g SymbolTable,
    /// For each symbol, a symbol or size a check equates it with.
    equal: Vec<Option<Term>>,
}

impl<'g> Identical<'g> {
    pub fn new(symbols: &'g SymbolTable) -> Self {
        let mut equal = vec![None; symbols.len()];
        for check in symbols.checks() {
            if let SymbolDef::Op(SymOp::Eq, args) = &symbols.symbol(check.condition).def {
                for (a, b) in [(args[0], args[1]), (args[1], args[0])] {
                    if let Term::Symbol(symbol) = a {
                        equal[symbol.index()].get_or_insert(b);
                    }
                }
            }
        }
        Identical { symbols, equal }
    }

    /// The dimensions a dimension is checked equal to, itself first.
    fn class(&self, dim: Dim) -> Vec<Dim> {
        let mut class = vec![dim];
        let mut at = dim;
        while let Dim::Symbol(symbol) = at
            && let Some(Some(next)) = self.equal.get(symbol.index())
            && let Some(next) = next.as_dim()
            && !class.contains(&next)
        {
            class.push(next);
            at = next;
        }
        class
    }

    /// Whether two dimensions are the same size.
    pub fn same(&self, a: Dim, b: Dim) -> bool {
        a == b || {
            let (x, y) = (self.class(a), self.class(b));
            x.iter().any(|dim| y.contains(dim))
        }
    }
}

impl ShapeContext for Identical<'_> {
    fn equate(&mut self, a: Dim, b: Dim) -> Option<Dim> {
        self.same(a, b).then_some(a)
    }

    fn symbols(&self) -> &SymbolTable {
        self.symbols
    }

    fn term(&mut self, def: SymbolDef) -> Result<Option<Term>, SymbolError> {
        self.symbols.find(def)
    }

    fn require(
        &mut self,
        _condition: SymbolDef,
        _message: &dyn Fn() -> String,
    ) -> Result<(), OpError> {
        Ok(())
    }
}

/// A dimension as a polynomial over the context's symbols.
pub fn dim_poly(cx: &dyn ShapeContext, dim: Dim) -> Result<Poly, OpError> {
    cx.symbols()
        .dim_poly(dim)
        .map_err(|error| OpError::Symbolic {
            what: "a dimension",
            problem: error.to_string(),
        })
}

/// The term of a definition, or an error naming `what` when it is none
/// of the graph's.
pub fn term_of(
    cx: &mut dyn ShapeContext,
    def: SymbolDef,
    what: &'static str,
) -> Result<Term, OpError> {
    let shown = def.to_string();
    match cx.term(def) {
        Ok(Some(term)) => Ok(term),
        Ok(None) => Err(OpError::Symbolic {
            what,
            problem: format!("{shown} is no symbol of the graph"),
        }),
        Err(error) => Err(OpError::Symbolic {
            what,
            problem: error.to_string(),
        }),
    }
}

/// The dimension a polynomial is.
pub fn poly_dim(cx: &mut dyn ShapeContext, poly: Poly, what: &'static str) -> Result<Dim, OpError> {
    let term = term_of(cx, SymbolDef::Poly(poly), what)?;
    term.as_dim().ok_or_else(|| OpError::Symbolic {
        what,
        problem: format!("{term} is negative"),
    })
}

/// `a // b` (floor division) of an integer polynomial by a constant, as a
/// polynomial.
pub fn floor_div_poly(
    cx: &mut dyn ShapeContext,
    a: Poly,
    b: i64,
    what: &'static str,
) -> Result<Poly, OpError> {
    let dividend = term_of(cx, SymbolDef::Poly(a), what)?;
    let quotient = term_of(
        cx,
        SymbolDef::Op(SymOp::FloorDiv, vec![dividend, Term::int(b)]),
        what,
    )?;
    cx.symbols()
        .poly(quotient)
        .map_err(|error| OpError::Symbolic {
            what,
            problem: error.to_string(),
        })
}

/// The number of elements of a shape, as a polynomial.
pub fn numel(cx: &dyn ShapeContext, shape: &[Dim]) -> Result<Poly, OpError> {
    shape.iter().try_fold(Poly::constant(1), |product, &dim| {
        Ok(product.mul(&dim_poly(cx, dim)?))
    })
}

/// The symbols among `dims`.
pub fn dim_symbols(dims: &[Dim]) -> impl Iterator<Item = SymbolId> + '_ {
    dims.iter().filter_map(|dim| match dim {
        Dim::Symbol(symbol) => Some(*symbol),
        Dim::Fixed(_) => None,
    })
}

fn broadcast_pair(a: &[Dim], b: &[Dim], eq: &mut dyn ShapeContext) -> Result<Shape, OpError> {
    let rank = a.len().max(b.len());
    let mut out = Vec::with_capacity(rank);
    for position in 0..rank {
        let pick = |shape: &[Dim]| {
            (position + shape.len())
                .checked_sub(rank)
                .map_or(Dim::Fixed(1), |index| shape[index])
        };
        let (x, y) = (pick(a), pick(b));
        let dim = if x == Dim::Fixed(1) {
            y
        } else if y == Dim::Fixed(1) {
            x
        } else {
            eq.equate(x, y).ok_or_else(|| OpError::Shapes {
                what: "shapes that do not broadcast",
                shapes: vec![a.to_vec(), b.to_vec()],
            })?
        };
        out.push(dim);
    }
    Ok(out)
}

/// The shape the given shapes broadcast to.
pub fn broadcast(shapes: &[&[Dim]], eq: &mut dyn ShapeContext) -> Result<Shape, OpError> {
    let mut out: Shape = Vec::new();
    for shape in shapes {
        out = broadcast_pair(&out, shape, eq)?;
    }
    Ok(out)
}

/// Whether `from` broadcasts to exactly `to`.
pub fn broadcasts_to(from: &[Dim], to: &[Dim]) -> bool {
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&a, &b)| a == b || a == Dim::Fixed(1))
}

/// A shape as the text form writes it: `[2,s0,3]`.
pub fn show(shape: &[Dim]) -> String {
    let dims: Vec<String> = shape.iter().map(Dim::to_string).collect();
    format!("[{}]", dims.join(","))
}

/// Whether two shapes can be equal, equating their dimensions pairwise (at
/// import, a symbol meeting a size becomes it).
pub(crate) fn equate_shapes(eq: &mut dyn ShapeContext, a: &[Dim], b: &[Dim]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&a, &b)| eq.equate(a, b).is_some())
}

/// The size of a dimension the op needs at compile time.
pub(crate) fn fixed(dim: Dim, what: &'static str) -> Result<u64, OpError> {
    dim.fixed().ok_or(OpError::NotFixed { what, dim })
}

/// `dim`, when it is a dimension of a tensor of `rank`.
pub(crate) fn axis(rank: usize, dim: usize) -> Result<usize, OpError> {
    if dim < rank {
        Ok(dim)
    } else {
        Err(OpError::Axis { dim, rank })
    }
}

/// `shapes` with every operand's shape but the first one listed.
pub(crate) fn shapes_of(types: &[&TensorType]) -> Vec<Shape> {
    types.iter().map(|ty| ty.shape.clone()).collect()
}

/// `x` with the dimensions `reduce` picks removed, or kept as size 1.
pub(crate) fn reduced(x: &[Dim], reduce: impl Fn(usize) -> bool, keepdim: bool) -> Shape {
    x.iter()
        .enumerate()
        .filter_map(|(index, &dim)| match (reduce(index), keepdim) {
            (false, _) => Some(dim),
            (true, true) => Some(Dim::Fixed(1)),
            (true, false) => None,
        })
        .collect()
}

/// The rule of an op with one output of the shape `shape`.
pub(crate) fn one(shape: Shape) -> Result<Vec<Expected>, OpError> {
    Ok(vec![Expected::Shape(shape)])
}
