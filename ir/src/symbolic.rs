//! Run-time scalars: the symbols of a graph and what defines them.
//!
//! A symbol is a scalar known only when the method runs: a dimension of an
//! input, a size derived from others (the length of a concatenation, the
//! height of a convolution's output), a `SymInt` the program computes with
//! `executorch_prim` operators, or an element read from a tensor
//! (`_local_scalar_dense`). Each symbol has a definition ([`SymbolDef`]):
//! an input's dimension (the runtime settles it from the input's size), the
//! first element of a value (read once the node writing that value has
//! run), a polynomial over other symbols ([`Poly`], the canonical form of
//! integer sums and products), or an operation over other symbols and
//! constants ([`SymOp`]: floor division, comparisons, float arithmetic...).
//! Definitions only name symbols made before them, so symbol order is an
//! order the generated code can evaluate them in.
//!
//! [`SymbolTable::intern`] canonicalizes an expression (folds constants,
//! flattens sums and products into polynomials, orders the operands of
//! commutative operations, decides comparisons that the symbols' ranges
//! settle) and returns the symbol that already has that definition, if one
//! does: equal expressions are one symbol, so shapes that are equal compare
//! equal. Every integer symbol has a range, derived from its definition and
//! the bounds of the inputs, and a bound: the largest size it may have as a
//! dimension, which memory is planned for and which generated code checks
//! when the range does not settle it. Checks ([`Check`]) are conditions the
//! program requires at run time (sizes that must agree); generated code
//! evaluates each as soon as its condition is known and stops with its
//! message when it is false.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::graph::ValueId;
use crate::types::{DType, Dim, Scalar, SymbolId};

/// The kind of scalar a symbol holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    Int,
    Float,
    Bool,
}

impl ScalarKind {
    /// The name in the text form and in messages.
    pub fn name(self) -> &'static str {
        match self {
            ScalarKind::Int => "int",
            ScalarKind::Float => "float",
            ScalarKind::Bool => "bool",
        }
    }

    pub fn from_name(name: &str) -> Option<ScalarKind> {
        [ScalarKind::Int, ScalarKind::Float, ScalarKind::Bool]
            .into_iter()
            .find(|kind| kind.name() == name)
    }

    /// The kind of a constant.
    pub fn of(scalar: Scalar) -> ScalarKind {
        match scalar {
            Scalar::Bool(_) => ScalarKind::Bool,
            Scalar::Int(_) => ScalarKind::Int,
            Scalar::Float(_) => ScalarKind::Float,
        }
    }
}

impl fmt::Display for ScalarKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scalar operand: a constant, or a symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    Const(Scalar),
    Symbol(SymbolId),
}

impl Term {
    pub fn int(value: i64) -> Term {
        Term::Const(Scalar::Int(value))
    }

    pub fn constant(self) -> Option<Scalar> {
        match self {
            Term::Const(value) => Some(value),
            Term::Symbol(_) => None,
        }
    }

    pub fn symbol(self) -> Option<SymbolId> {
        match self {
            Term::Symbol(symbol) => Some(symbol),
            Term::Const(_) => None,
        }
    }

    /// The dimension this integer is, when it can be one (a symbol, or a
    /// constant that is not negative).
    pub fn as_dim(self) -> Option<Dim> {
        match self {
            Term::Symbol(symbol) => Some(Dim::Symbol(symbol)),
            Term::Const(Scalar::Int(value)) => u64::try_from(value).ok().map(Dim::Fixed),
            Term::Const(_) => None,
        }
    }
}

impl From<Dim> for Term {
    fn from(dim: Dim) -> Term {
        match dim {
            Dim::Fixed(size) => Term::int(size as i64),
            Dim::Symbol(symbol) => Term::Symbol(symbol),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Const(value) => write!(f, "{value}"),
            Term::Symbol(symbol) => write!(f, "{symbol}"),
        }
    }
}

/// A polynomial with integer coefficients over symbols that are not
/// themselves polynomials (inputs, elements, operations): the canonical
/// form of integer sums, differences and products. Each monomial is a
/// sorted list of symbols (repeated for powers; empty for the constant)
/// with a coefficient that is never zero. Arithmetic wraps, as the
/// generated code's 64-bit integers do.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Poly {
    monomials: BTreeMap<Vec<SymbolId>, i64>,
}

impl Poly {
    pub fn constant(value: i64) -> Poly {
        let mut poly = Poly::default();
        poly.accumulate(Vec::new(), value);
        poly
    }

    pub fn symbol(symbol: SymbolId) -> Poly {
        let mut poly = Poly::default();
        poly.accumulate(vec![symbol], 1);
        poly
    }

    fn accumulate(&mut self, monomial: Vec<SymbolId>, coefficient: i64) {
        let entry = self.monomials.entry(monomial).or_insert(0);
        *entry = entry.wrapping_add(coefficient);
        if *entry == 0 {
            self.monomials.retain(|_, &mut c| c != 0);
        }
    }

    /// The value, when the polynomial is a constant.
    pub fn as_constant(&self) -> Option<i64> {
        match self.monomials.len() {
            0 => Some(0),
            1 => self.monomials.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    /// The symbol, when the polynomial is one symbol.
    pub fn as_symbol(&self) -> Option<SymbolId> {
        match self.monomials.iter().next() {
            Some((monomial, 1)) if self.monomials.len() == 1 && monomial.len() == 1 => {
                Some(monomial[0])
            }
            _ => None,
        }
    }

    /// Each monomial's symbols and coefficient.
    pub fn monomials(&self) -> impl Iterator<Item = (&[SymbolId], i64)> {
        self.monomials
            .iter()
            .map(|(monomial, &coefficient)| (monomial.as_slice(), coefficient))
    }

    /// The symbols the polynomial names.
    pub fn atoms(&self) -> impl Iterator<Item = SymbolId> + '_ {
        self.monomials.keys().flatten().copied()
    }

    pub fn add(&self, other: &Poly) -> Poly {
        let mut sum = self.clone();
        for (monomial, &coefficient) in &other.monomials {
            sum.accumulate(monomial.clone(), coefficient);
        }
        sum
    }

    pub fn scale(&self, factor: i64) -> Poly {
        let mut scaled = Poly::default();
        for (monomial, &coefficient) in &self.monomials {
            scaled.accumulate(monomial.clone(), coefficient.wrapping_mul(factor));
        }
        scaled
    }

    pub fn neg(&self) -> Poly {
        self.scale(-1)
    }

    pub fn sub(&self, other: &Poly) -> Poly {
        self.add(&other.neg())
    }

    pub fn mul(&self, other: &Poly) -> Poly {
        let mut product = Poly::default();
        for (a, &x) in &self.monomials {
            for (b, &y) in &other.monomials {
                let mut monomial: Vec<SymbolId> = a.iter().chain(b).copied().collect();
                monomial.sort_unstable();
                product.accumulate(monomial, x.wrapping_mul(y));
            }
        }
        product
    }

    /// The polynomial divided by `divisor`, when every coefficient is a
    /// multiple of it.
    pub fn exact_div(&self, divisor: i64) -> Option<Poly> {
        (divisor != 0
            && self
                .monomials
                .values()
                .all(|&coefficient| coefficient % divisor == 0))
        .then(|| {
            let mut quotient = Poly::default();
            for (monomial, &coefficient) in &self.monomials {
                quotient.accumulate(monomial.clone(), coefficient / divisor);
            }
            quotient
        })
    }

    /// The polynomial with each symbol replaced by a polynomial.
    fn substitute(&self, mut value: impl FnMut(SymbolId) -> Poly) -> Poly {
        let mut result = Poly::default();
        for (monomial, &coefficient) in &self.monomials {
            let mut product = Poly::constant(coefficient);
            for &symbol in monomial {
                product = product.mul(&value(symbol));
            }
            result = result.add(&product);
        }
        result
    }
}

impl fmt::Display for Poly {
    /// `2*s0*s1 + 3*s2 - 4`: monomials in order, the constant last.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ordered = self
            .monomials
            .iter()
            .filter(|(monomial, _)| !monomial.is_empty())
            .chain(self.monomials.get_key_value(&Vec::new()));
        let mut first = true;
        for (monomial, &coefficient) in ordered {
            let magnitude = coefficient.unsigned_abs();
            match (first, coefficient < 0) {
                (true, true) => f.write_str("-")?,
                (true, false) => {}
                (false, true) => f.write_str(" - ")?,
                (false, false) => f.write_str(" + ")?,
            }
            first = false;
            let mut factors: Vec<String> = monomial.iter().map(SymbolId::to_string).collect();
            if magnitude != 1 || factors.is_empty() {
                factors.insert(0, magnitude.to_string());
            }
            f.write_str(&factors.join("*"))?;
        }
        if first {
            f.write_str("0")?;
        }
        Ok(())
    }
}

/// An operation on scalars. Integer sums and products are [`Poly`]s; the
/// arithmetic operations here are the float ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SymOp {
    /// Integer division rounding toward negative infinity (Python's `//`).
    FloorDiv,
    /// The remainder of [`SymOp::FloorDiv`], with the divisor's sign
    /// (Python's `%`).
    Mod,
    Max,
    Min,
    Eq,
    Ne,
    Lt,
    Le,
    Not,
    /// `if a { b } else { c }`.
    Ite,
    Add,
    Sub,
    Mul,
    /// Float division (of floats; integers are converted first).
    TrueDiv,
    Neg,
    /// An integer or bool as a float.
    ToFloat,
    /// A float rounded toward zero, to an integer (saturating).
    Trunc,
    Floor,
    Ceil,
    /// A float rounded half to even, to an integer.
    Round,
}

impl SymOp {
    pub const ALL: [SymOp; 20] = [
        SymOp::FloorDiv,
        SymOp::Mod,
        SymOp::Max,
        SymOp::Min,
        SymOp::Eq,
        SymOp::Ne,
        SymOp::Lt,
        SymOp::Le,
        SymOp::Not,
        SymOp::Ite,
        SymOp::Add,
        SymOp::Sub,
        SymOp::Mul,
        SymOp::TrueDiv,
        SymOp::Neg,
        SymOp::ToFloat,
        SymOp::Trunc,
        SymOp::Floor,
        SymOp::Ceil,
        SymOp::Round,
    ];

    /// The name in the text form.
    pub fn name(self) -> &'static str {
        match self {
            SymOp::FloorDiv => "floordiv",
            SymOp::Mod => "mod",
            SymOp::Max => "max",
            SymOp::Min => "min",
            SymOp::Eq => "eq",
            SymOp::Ne => "ne",
            SymOp::Lt => "lt",
            SymOp::Le => "le",
            SymOp::Not => "not",
            SymOp::Ite => "ite",
            SymOp::Add => "add",
            SymOp::Sub => "sub",
            SymOp::Mul => "mul",
            SymOp::TrueDiv => "truediv",
            SymOp::Neg => "neg",
            SymOp::ToFloat => "float",
            SymOp::Trunc => "trunc",
            SymOp::Floor => "floor",
            SymOp::Ceil => "ceil",
            SymOp::Round => "round",
        }
    }

    pub fn from_name(name: &str) -> Option<SymOp> {
        SymOp::ALL.into_iter().find(|op| op.name() == name)
    }

    /// The kind of the result for operands of `kinds`, or what the
    /// operation takes instead.
    pub fn result(self, kinds: &[ScalarKind]) -> Result<ScalarKind, &'static str> {
        use ScalarKind::{Bool, Float, Int};
        match (self, kinds) {
            (SymOp::FloorDiv | SymOp::Mod, [Int, Int]) => Ok(Int),
            (SymOp::FloorDiv | SymOp::Mod, _) => Err("two ints"),
            (SymOp::Max | SymOp::Min, [a, b]) if a == b && *a != Bool => Ok(*a),
            (SymOp::Max | SymOp::Min, _) => Err("two ints or two floats"),
            (SymOp::Eq | SymOp::Ne, [a, b]) if a == b => Ok(Bool),
            (SymOp::Eq | SymOp::Ne, _) => Err("two scalars of one kind"),
            (SymOp::Lt | SymOp::Le, [a, b]) if a == b && *a != Bool => Ok(Bool),
            (SymOp::Lt | SymOp::Le, _) => Err("two ints or two floats"),
            (SymOp::Not, [Bool]) => Ok(Bool),
            (SymOp::Not, _) => Err("a bool"),
            (SymOp::Ite, [Bool, a, b]) if a == b => Ok(*a),
            (SymOp::Ite, _) => Err("a bool and two scalars of one kind"),
            (SymOp::Add | SymOp::Sub | SymOp::Mul | SymOp::TrueDiv, [Float, Float]) => Ok(Float),
            (SymOp::Add | SymOp::Sub | SymOp::Mul | SymOp::TrueDiv, _) => Err("two floats"),
            (SymOp::Neg, [Float]) => Ok(Float),
            (SymOp::Neg, _) => Err("a float"),
            (SymOp::ToFloat, [Int | Bool]) => Ok(Float),
            (SymOp::ToFloat, _) => Err("an int or a bool"),
            (SymOp::Trunc | SymOp::Floor | SymOp::Ceil | SymOp::Round, [Float]) => Ok(Int),
            (SymOp::Trunc | SymOp::Floor | SymOp::Ceil | SymOp::Round, _) => Err("a float"),
        }
    }

    /// Whether the operands may be swapped.
    fn is_commutative(self) -> bool {
        matches!(
            self,
            SymOp::Max | SymOp::Min | SymOp::Eq | SymOp::Ne | SymOp::Add | SymOp::Mul
        )
    }
}

/// What defines a symbol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SymbolDef {
    /// A dimension of a method input, settled by the runtime.
    Input,
    /// The first element of a value, read when the last node writing it
    /// has run.
    Element(ValueId),
    /// A sum of products of other symbols.
    Poly(Poly),
    /// An operation on other symbols and constants.
    Op(SymOp, Vec<Term>),
}

impl SymbolDef {
    /// The symbols the definition reads.
    pub fn operands(&self) -> Vec<SymbolId> {
        match self {
            SymbolDef::Input | SymbolDef::Element(_) => Vec::new(),
            SymbolDef::Poly(poly) => poly.atoms().collect(),
            SymbolDef::Op(_, args) => args.iter().filter_map(|arg| arg.symbol()).collect(),
        }
    }

    /// The definition with each symbol it reads replaced by `map`.
    pub fn map_symbols(
        &self,
        map: &impl Fn(SymbolId) -> Result<Term, SymbolError>,
    ) -> Result<SymbolDef, SymbolError> {
        Ok(match self {
            SymbolDef::Input | SymbolDef::Element(_) => self.clone(),
            SymbolDef::Poly(poly) => {
                let mut failed = None;
                let substituted = poly.substitute(|symbol| match map(symbol) {
                    Ok(Term::Symbol(symbol)) => Poly::symbol(symbol),
                    Ok(Term::Const(Scalar::Int(value))) => Poly::constant(value),
                    Ok(Term::Const(other)) => {
                        failed.get_or_insert(SymbolError::Kinds {
                            op: "a polynomial",
                            expected: "ints",
                            found: ScalarKind::of(other).to_string(),
                        });
                        Poly::default()
                    }
                    Err(error) => {
                        failed.get_or_insert(error);
                        Poly::default()
                    }
                });
                if let Some(error) = failed {
                    return Err(error);
                }
                SymbolDef::Poly(substituted)
            }
            SymbolDef::Op(op, args) => SymbolDef::Op(
                *op,
                args.iter()
                    .map(|&arg| match arg {
                        Term::Symbol(symbol) => map(symbol),
                        constant => Ok(constant),
                    })
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

impl fmt::Display for SymbolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymbolDef::Input => f.write_str("input"),
            SymbolDef::Element(value) => write!(f, "element {value}"),
            SymbolDef::Poly(poly) => write!(f, "{poly}"),
            SymbolDef::Op(op, args) => {
                let args: Vec<String> = args.iter().map(Term::to_string).collect();
                write!(f, "{}({})", op.name(), args.join(", "))
            }
        }
    }
}

/// The values an integer (or bool, as 0 and 1) symbol can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: i64,
    pub hi: i64,
}

impl Range {
    pub const FULL: Range = Range {
        lo: i64::MIN,
        hi: i64::MAX,
    };

    pub fn exactly(value: i64) -> Range {
        Range {
            lo: value,
            hi: value,
        }
    }

    fn from_wide(lo: i128, hi: i128) -> Range {
        let clamp = |value: i128| value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        Range {
            lo: clamp(lo),
            hi: clamp(hi),
        }
    }

    fn union(self, other: Range) -> Range {
        Range {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    pub fn contains(self, value: i64) -> bool {
        self.lo <= value && value <= self.hi
    }

    fn add(self, other: Range) -> Range {
        Range::from_wide(
            i128::from(self.lo) + i128::from(other.lo),
            i128::from(self.hi) + i128::from(other.hi),
        )
    }

    fn mul(self, other: Range) -> Range {
        let corners = [
            i128::from(self.lo) * i128::from(other.lo),
            i128::from(self.lo) * i128::from(other.hi),
            i128::from(self.hi) * i128::from(other.lo),
            i128::from(self.hi) * i128::from(other.hi),
        ];
        Range::from_wide(
            corners.into_iter().min().unwrap_or(0),
            corners.into_iter().max().unwrap_or(0),
        )
    }
}

/// A symbol: its definition, kind and ranges, and where it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct SymbolData {
    pub def: SymbolDef,
    pub kind: ScalarKind,
    /// The largest value it may have as a dimension: memory is planned for
    /// it, and generated code checks it when [`SymbolData::range`] allows
    /// more. `u64::MAX` when nothing bounds it.
    pub bound: u64,
    /// Where the symbol first appears: `input 0 dim 0`.
    pub origin: String,
    range: Range,
}

impl SymbolData {
    /// The values its definition allows (for ints and bools).
    pub fn range(&self) -> Range {
        self.range
    }

    /// The bound a symbol of this range gets when nothing else bounds it.
    fn default_bound(range: Range) -> u64 {
        match range.hi {
            i64::MAX => u64::MAX,
            hi => hi.max(0) as u64,
        }
    }

    /// Whether the bound is the one its range gives (the text form leaves
    /// such a bound out).
    pub fn has_default_bound(&self) -> bool {
        self.def != SymbolDef::Input && self.bound == SymbolData::default_bound(self.range)
    }

    /// Whether its range proves it a valid dimension: within `0..=bound`.
    pub fn is_within_bound(&self) -> bool {
        self.range.lo >= 0 && (self.range.hi as u64) <= self.bound
    }
}

/// A condition the program requires at run time.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// A bool symbol that must be true.
    pub condition: SymbolId,
    pub message: String,
}

/// Why an expression over symbols is not one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SymbolError {
    #[error("{op} takes {expected}, not {found}")]
    Kinds {
        op: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error("{op} takes {expected} operands, not {found}")]
    Arity {
        op: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("division by zero in {0}")]
    DivisionByZero(String),
    #[error("{0} is not a symbol of the graph")]
    Unknown(SymbolId),
    #[error("{0} must hold, but never does")]
    NeverHolds(String),
}

/// The result of canonicalizing an expression: a constant or an existing
/// symbol, or the definition a symbol of that value has.
#[derive(Clone, Debug, PartialEq)]
pub enum Canonical {
    Term(Term),
    Def(SymbolDef, ScalarKind),
}

/// A graph's symbols and checks.
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    symbols: Vec<SymbolData>,
    /// The symbol of each polynomial and operation definition.
    interned: HashMap<SymbolDef, SymbolId>,
    checks: Vec<Check>,
}

impl SymbolTable {
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The symbol's data; `None` for an id the table lacks.
    pub fn get(&self, symbol: SymbolId) -> Option<&SymbolData> {
        self.symbols.get(symbol.index())
    }

    pub fn symbol(&self, symbol: SymbolId) -> &SymbolData {
        &self.symbols[symbol.index()]
    }

    pub fn iter(&self) -> impl Iterator<Item = (SymbolId, &SymbolData)> {
        self.symbols
            .iter()
            .enumerate()
            .map(|(index, data)| (SymbolId(index as u32), data))
    }

    pub fn checks(&self) -> &[Check] {
        &self.checks
    }

    fn push(&mut self, data: SymbolData) -> SymbolId {
        let id = SymbolId(self.symbols.len() as u32);
        if matches!(data.def, SymbolDef::Poly(_) | SymbolDef::Op(..)) {
            self.interned.insert(data.def.clone(), id);
        }
        self.symbols.push(data);
        id
    }

    /// A dimension of a method input, at most `bound`.
    pub fn add_input(&mut self, bound: u64, origin: String) -> SymbolId {
        self.push(SymbolData {
            def: SymbolDef::Input,
            kind: ScalarKind::Int,
            bound,
            origin,
            range: Range {
                lo: 0,
                hi: i64::try_from(bound).unwrap_or(i64::MAX),
            },
        })
    }

    /// The first element of `value`, of `kind`, within `range`; at most
    /// `bound` as a dimension.
    pub fn add_element(
        &mut self,
        value: ValueId,
        kind: ScalarKind,
        range: Range,
        bound: u64,
        origin: String,
    ) -> SymbolId {
        self.push(SymbolData {
            def: SymbolDef::Element(value),
            kind,
            bound,
            origin,
            range,
        })
    }

    /// A symbol with `def` exactly as given, not canonicalized (the text
    /// form's reader: the verifier then requires definitions to be
    /// canonical); `bound` defaults to what the range gives. Elements get
    /// the range of their element type ([`element_scalar`]).
    pub fn insert(
        &mut self,
        def: SymbolDef,
        kind: ScalarKind,
        range: Option<Range>,
        bound: Option<u64>,
        origin: String,
    ) -> SymbolId {
        let range = match (&def, range) {
            (_, Some(range)) => range,
            (SymbolDef::Input, None) => Range {
                lo: 0,
                hi: bound.map_or(i64::MAX, |bound| i64::try_from(bound).unwrap_or(i64::MAX)),
            },
            (def, None) => self.def_range(def, kind),
        };
        self.push(SymbolData {
            bound: bound.unwrap_or(SymbolData::default_bound(range)),
            def,
            kind,
            origin,
            range,
        })
    }

    /// Makes symbols that read an element of `old` read it of `new`.
    pub fn replace_element_reads(&mut self, old: ValueId, new: ValueId) {
        for data in &mut self.symbols {
            if data.def == SymbolDef::Element(old) {
                data.def = SymbolDef::Element(new);
            }
        }
    }

    /// Lowers a symbol's bound (a declared size, a tighter limit).
    pub fn tighten_bound(&mut self, symbol: SymbolId, bound: u64) {
        let data = &mut self.symbols[symbol.index()];
        data.bound = data.bound.min(bound);
    }

    /// The kind of a term.
    pub fn kind(&self, term: Term) -> Result<ScalarKind, SymbolError> {
        match term {
            Term::Const(value) => Ok(ScalarKind::of(value)),
            Term::Symbol(symbol) => self
                .get(symbol)
                .map(|data| data.kind)
                .ok_or(SymbolError::Unknown(symbol)),
        }
    }

    /// The values an integer or bool term can take.
    pub fn range(&self, term: Term) -> Range {
        match term {
            Term::Const(Scalar::Int(value)) => Range::exactly(value),
            Term::Const(Scalar::Bool(value)) => Range::exactly(i64::from(value)),
            Term::Const(Scalar::Float(_)) => Range::FULL,
            Term::Symbol(symbol) => self.get(symbol).map_or(Range::FULL, |data| data.range),
        }
    }

    /// An integer term as a polynomial over symbols that are not
    /// polynomials.
    pub fn poly(&self, term: Term) -> Result<Poly, SymbolError> {
        match term {
            Term::Const(Scalar::Int(value)) => Ok(Poly::constant(value)),
            Term::Const(other) => Err(SymbolError::Kinds {
                op: "a size",
                expected: "an int",
                found: ScalarKind::of(other).to_string(),
            }),
            Term::Symbol(symbol) => {
                let data = self.get(symbol).ok_or(SymbolError::Unknown(symbol))?;
                match (&data.def, data.kind) {
                    (SymbolDef::Poly(poly), _) => Ok(poly.clone()),
                    (_, ScalarKind::Int) => Ok(Poly::symbol(symbol)),
                    (_, kind) => Err(SymbolError::Kinds {
                        op: "a size",
                        expected: "an int",
                        found: kind.to_string(),
                    }),
                }
            }
        }
    }

    /// A dimension as a polynomial.
    pub fn dim_poly(&self, dim: Dim) -> Result<Poly, SymbolError> {
        self.poly(Term::from(dim))
    }

    /// The range of a polynomial from its symbols' ranges.
    fn poly_range(&self, poly: &Poly) -> Range {
        poly.monomials()
            .fold(Range::exactly(0), |sum, (monomial, c)| {
                let product = monomial.iter().fold(Range::exactly(c), |product, &symbol| {
                    product.mul(self.range(Term::Symbol(symbol)))
                });
                sum.add(product)
            })
    }

    /// The canonical form of a polynomial or operation definition:
    /// constants folded, polynomials expanded, commutative operands
    /// ordered, and what the operands' ranges decide, decided.
    pub fn canonical(&self, def: SymbolDef) -> Result<Canonical, SymbolError> {
        match def {
            SymbolDef::Poly(poly) => {
                for symbol in poly.atoms() {
                    let kind = self.kind(Term::Symbol(symbol))?;
                    if kind != ScalarKind::Int {
                        return Err(SymbolError::Kinds {
                            op: "a polynomial",
                            expected: "ints",
                            found: kind.to_string(),
                        });
                    }
                }
                let expanded = poly.substitute(|symbol| {
                    self.poly(Term::Symbol(symbol))
                        .unwrap_or_else(|_| Poly::symbol(symbol))
                });
                Ok(self.canonical_poly(expanded))
            }
            SymbolDef::Op(op, args) => self.canonical_op(op, args),
            SymbolDef::Input | SymbolDef::Element(_) => Ok(Canonical::Def(def, ScalarKind::Int)),
        }
    }

    fn canonical_poly(&self, poly: Poly) -> Canonical {
        if let Some(value) = poly.as_constant() {
            Canonical::Term(Term::int(value))
        } else if let Some(symbol) = poly.as_symbol() {
            Canonical::Term(Term::Symbol(symbol))
        } else {
            Canonical::Def(SymbolDef::Poly(poly), ScalarKind::Int)
        }
    }

    fn canonical_op(&self, op: SymOp, mut args: Vec<Term>) -> Result<Canonical, SymbolError> {
        let kinds = args
            .iter()
            .map(|&arg| self.kind(arg))
            .collect::<Result<Vec<_>, _>>()?;
        let arity = match op {
            SymOp::Ite => 3,
            SymOp::Not | SymOp::Neg | SymOp::ToFloat => 1,
            SymOp::Trunc | SymOp::Floor | SymOp::Ceil | SymOp::Round => 1,
            _ => 2,
        };
        if args.len() != arity {
            return Err(SymbolError::Arity {
                op: op.name(),
                expected: arity,
                found: args.len(),
            });
        }
        let kind = op.result(&kinds).map_err(|expected| SymbolError::Kinds {
            op: op.name(),
            expected,
            found: kinds
                .iter()
                .map(|kind| kind.name())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        if let Some(folded) = fold(op, &args)? {
            return Ok(Canonical::Term(Term::Const(folded)));
        }
        if let Some(simplified) = self.simplify(op, &args)? {
            return Ok(simplified);
        }
        if op.is_commutative() {
            args.sort_by_key(term_order);
        }
        Ok(Canonical::Def(SymbolDef::Op(op, args), kind))
    }

    /// What an operation on symbols reduces to without computing it: a
    /// division of a polynomial whose coefficients the divisor divides, a
    /// comparison the operands' ranges settle, a choice between equals.
    fn simplify(&self, op: SymOp, args: &[Term]) -> Result<Option<Canonical>, SymbolError> {
        let constant_int = |term: Term| match term {
            Term::Const(Scalar::Int(value)) => Some(value),
            _ => None,
        };
        let int_kind = self.kind(args[0])? == ScalarKind::Int;
        // The difference a - b of two ints, and its range.
        let difference = || -> Result<Range, SymbolError> {
            let diff = self.poly(args[0])?.sub(&self.poly(args[1])?);
            Ok(self.poly_range(&diff))
        };
        let term = |term: Term| Ok(Some(Canonical::Term(term)));
        let decided = |value: bool| term(Term::Const(Scalar::Bool(value)));
        match op {
            SymOp::FloorDiv | SymOp::Mod => {
                let Some(divisor) = constant_int(args[1]) else {
                    return Ok(None);
                };
                if divisor == 0 {
                    return Err(SymbolError::DivisionByZero(format!(
                        "{}({}, 0)",
                        op.name(),
                        args[0]
                    )));
                }
                let dividend = self.poly(args[0])?;
                let range = self.range(args[0]);
                let below = divisor > 0 && range.lo >= 0 && range.hi < divisor;
                let exact = dividend.exact_div(divisor);
                match (op, exact, below) {
                    (SymOp::FloorDiv, Some(quotient), _) => Ok(Some(self.canonical_poly(quotient))),
                    (SymOp::FloorDiv, None, true) => term(Term::int(0)),
                    (_, Some(_), _) => term(Term::int(0)),
                    (_, None, true) => term(args[0]),
                    (_, None, false) => Ok(None),
                }
            }
            SymOp::Max | SymOp::Min if args[0] == args[1] => term(args[0]),
            SymOp::Max | SymOp::Min if int_kind => {
                let range = difference()?;
                let first_larger = if range.lo >= 0 {
                    true
                } else if range.hi <= 0 {
                    false
                } else {
                    return Ok(None);
                };
                let pick_first = first_larger == (op == SymOp::Max);
                term(if pick_first { args[0] } else { args[1] })
            }
            SymOp::Eq | SymOp::Le if args[0] == args[1] => decided(true),
            SymOp::Ne | SymOp::Lt if args[0] == args[1] => decided(false),
            SymOp::Eq | SymOp::Ne | SymOp::Lt | SymOp::Le if int_kind => {
                let range = difference()?;
                let holds = match op {
                    SymOp::Eq if !range.contains(0) => Some(false),
                    SymOp::Ne if !range.contains(0) => Some(true),
                    SymOp::Lt if range.hi < 0 => Some(true),
                    SymOp::Lt if range.lo >= 0 => Some(false),
                    SymOp::Le if range.hi <= 0 => Some(true),
                    SymOp::Le if range.lo > 0 => Some(false),
                    _ => None,
                };
                Ok(holds.map(|value| Canonical::Term(Term::Const(Scalar::Bool(value)))))
            }
            SymOp::Not => {
                if let Term::Symbol(symbol) = args[0]
                    && let SymbolDef::Op(SymOp::Not, inner) = &self.symbol(symbol).def
                {
                    return term(inner[0]);
                }
                Ok(None)
            }
            SymOp::Ite if args[1] == args[2] => term(args[1]),
            SymOp::Ite => match args[0] {
                Term::Const(Scalar::Bool(condition)) => term(args[if condition { 1 } else { 2 }]),
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// The term of a definition: a constant, the symbol that has it
    /// already, or a new symbol.
    pub fn intern(
        &mut self,
        def: SymbolDef,
        origin: impl FnOnce() -> String,
    ) -> Result<Term, SymbolError> {
        match self.canonical(def)? {
            Canonical::Term(term) => Ok(term),
            Canonical::Def(def, kind) => {
                if let Some(&symbol) = self.interned.get(&def) {
                    return Ok(Term::Symbol(symbol));
                }
                let range = self.def_range(&def, kind);
                Ok(Term::Symbol(self.push(SymbolData {
                    bound: SymbolData::default_bound(range),
                    def,
                    kind,
                    origin: origin(),
                    range,
                })))
            }
        }
    }

    /// The term of a definition if the table has it: a constant or an
    /// existing symbol.
    pub fn find(&self, def: SymbolDef) -> Result<Option<Term>, SymbolError> {
        Ok(match self.canonical(def)? {
            Canonical::Term(term) => Some(term),
            Canonical::Def(def, _) => self.interned.get(&def).map(|&symbol| Term::Symbol(symbol)),
        })
    }

    /// The values a definition of `kind` can take.
    fn def_range(&self, def: &SymbolDef, kind: ScalarKind) -> Range {
        if kind == ScalarKind::Bool {
            return Range { lo: 0, hi: 1 };
        }
        if kind == ScalarKind::Float {
            return Range::FULL;
        }
        match def {
            SymbolDef::Input | SymbolDef::Element(_) => Range::FULL,
            SymbolDef::Poly(poly) => self.poly_range(poly),
            SymbolDef::Op(op, args) => {
                let range = |index: usize| self.range(args[index]);
                let divisor = args.get(1).and_then(|arg| match arg {
                    Term::Const(Scalar::Int(value)) if *value != 0 => Some(*value),
                    _ => None,
                });
                match (op, divisor) {
                    (SymOp::FloorDiv, Some(d)) => {
                        let floor = |x: i64| floor_div(x, d).unwrap_or(0);
                        let (x, y) = (floor(range(0).lo), floor(range(0).hi));
                        Range {
                            lo: x.min(y),
                            hi: x.max(y),
                        }
                    }
                    (SymOp::Mod, Some(d)) if d > 0 => Range { lo: 0, hi: d - 1 },
                    (SymOp::Mod, Some(d)) => Range { lo: d + 1, hi: 0 },
                    (SymOp::Max, _) => Range {
                        lo: range(0).lo.max(range(1).lo),
                        hi: range(0).hi.max(range(1).hi),
                    },
                    (SymOp::Min, _) => Range {
                        lo: range(0).lo.min(range(1).lo),
                        hi: range(0).hi.min(range(1).hi),
                    },
                    (SymOp::Ite, _) => range(1).union(range(2)),
                    _ => Range::FULL,
                }
            }
        }
    }

    /// Adds a check as it is (the text form's reader; the verifier judges
    /// it).
    pub fn push_check(&mut self, check: Check) {
        self.checks.push(check);
    }

    /// Records that `condition` must hold at run time; an error when it
    /// never does.
    pub fn require(&mut self, condition: Term, message: String) -> Result<(), SymbolError> {
        match condition {
            Term::Const(Scalar::Bool(true)) => Ok(()),
            Term::Const(_) => Err(SymbolError::NeverHolds(message)),
            Term::Symbol(symbol) => {
                if self.kind(condition)? != ScalarKind::Bool {
                    return Err(SymbolError::Kinds {
                        op: "a check",
                        expected: "a bool",
                        found: self.symbol(symbol).kind.to_string(),
                    });
                }
                if !self.checks.iter().any(|check| check.condition == symbol) {
                    self.checks.push(Check {
                        condition: symbol,
                        message,
                    });
                }
                Ok(())
            }
        }
    }

    /// The table with symbols replaced as `replace` says (`None`: kept),
    /// rebuilt in order so that each definition is canonical again, and
    /// the term each old symbol became. Only the symbols `roots` name, the
    /// checks' and those the kept symbols' definitions read survive. A
    /// replaced symbol that is not an input becomes a check that its
    /// definition equals what replaces it (an input's size is checked by
    /// the runtime instead).
    pub fn rebuild(
        &self,
        replace: impl Fn(SymbolId) -> Option<Term>,
        roots: impl IntoIterator<Item = SymbolId>,
    ) -> Result<(SymbolTable, Vec<Term>), SymbolError> {
        let mut roots: Vec<SymbolId> = roots.into_iter().collect();
        for (id, data) in self.iter() {
            if let Some(target) = replace(id) {
                roots.extend(target.symbol());
                if data.def != SymbolDef::Input {
                    roots.push(id);
                }
            }
        }
        let used = self.closure(roots);
        let mut table = SymbolTable::default();
        // What each old symbol became; `None` for those dropped.
        let mut map: Vec<Option<Term>> = Vec::with_capacity(self.symbols.len());
        for (id, data) in self.iter() {
            // A replaced symbol maps to its replacement even when nothing
            // needs it any more (types still name it until rewritten).
            if !used[id.index()] && replace(id).is_none() {
                map.push(None);
                continue;
            }
            let mapped = |symbol: SymbolId| {
                map.get(symbol.index())
                    .copied()
                    .flatten()
                    .ok_or(SymbolError::Unknown(symbol))
            };
            let own = match &data.def {
                SymbolDef::Input => None,
                SymbolDef::Element(value) => Some(Term::Symbol(table.add_element(
                    *value,
                    data.kind,
                    data.range,
                    data.bound,
                    data.origin.clone(),
                ))),
                def => {
                    let def = def.map_symbols(&mapped)?;
                    let term = table.intern(def, || data.origin.clone())?;
                    if let Term::Symbol(symbol) = term {
                        table.tighten_bound(symbol, data.bound);
                    }
                    Some(term)
                }
            };
            let term = match (replace(id), own) {
                (Some(target), own) => {
                    let target = match target {
                        Term::Symbol(symbol) => mapped(symbol)?,
                        constant => constant,
                    };
                    if let Some(own) = own {
                        let equal = table
                            .intern(SymbolDef::Op(SymOp::Eq, vec![own, target]), || {
                                format!("{} = {target}", data.origin)
                            })?;
                        table.require(
                            equal,
                            format!("{} ({}) must equal {target}", data.origin, data.def),
                        )?;
                    }
                    target
                }
                (None, Some(own)) => own,
                (None, None) => Term::Symbol(table.add_input(data.bound, data.origin.clone())),
            };
            map.push(Some(term));
        }
        for check in &self.checks {
            let condition =
                map[check.condition.index()].ok_or(SymbolError::Unknown(check.condition))?;
            table.require(condition, check.message.clone())?;
        }
        let map = map
            .into_iter()
            .map(|term| term.unwrap_or(Term::int(0)))
            .collect();
        Ok((table, map))
    }

    /// Which symbols `roots` and the checks need: themselves and every
    /// symbol their definitions read, by index.
    pub fn closure(&self, roots: impl IntoIterator<Item = SymbolId>) -> Vec<bool> {
        let mut used = vec![false; self.symbols.len()];
        let checks = self.checks.iter().map(|check| check.condition);
        for symbol in roots.into_iter().chain(checks) {
            if let Some(flag) = used.get_mut(symbol.index()) {
                *flag = true;
            }
        }
        for index in (0..self.symbols.len()).rev() {
            if used[index] {
                for operand in self.symbols[index].def.operands() {
                    if let Some(flag) = used.get_mut(operand.index()) {
                        *flag = true;
                    }
                }
            }
        }
        used
    }
}

/// The kind and range of a symbol reading an element of type `dtype`.
pub fn element_scalar(dtype: DType) -> (ScalarKind, Range) {
    let ints = |lo: i64, hi: i64| (ScalarKind::Int, Range { lo, hi });
    match dtype {
        DType::Bool => (ScalarKind::Bool, Range { lo: 0, hi: 1 }),
        DType::U8 => ints(0, 255),
        DType::I8 => ints(-128, 127),
        DType::I16 => ints(i64::from(i16::MIN), i64::from(i16::MAX)),
        DType::I32 => ints(i64::from(i32::MIN), i64::from(i32::MAX)),
        DType::I64 => ints(i64::MIN, i64::MAX),
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => (ScalarKind::Float, Range::FULL),
    }
}

/// The order commutative operands are sorted in: constants first.
fn term_order(term: &Term) -> (u8, i64, u64, u32) {
    match *term {
        Term::Const(Scalar::Bool(value)) => (0, i64::from(value), 0, 0),
        Term::Const(Scalar::Int(value)) => (1, value, 0, 0),
        Term::Const(Scalar::Float(value)) => (2, 0, value.to_bits(), 0),
        Term::Symbol(symbol) => (3, 0, 0, symbol.0),
    }
}

/// Python's floor division of integers; `None` for a zero divisor.
pub fn floor_div(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let quotient = a.wrapping_div(b);
    Some(if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        quotient - 1
    } else {
        quotient
    })
}

/// Python's remainder of integers, with the divisor's sign; `None` for a
/// zero divisor.
pub fn floor_mod(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let remainder = a.wrapping_rem(b);
    Some(if remainder != 0 && ((remainder < 0) != (b < 0)) {
        remainder + b
    } else {
        remainder
    })
}

/// Rounds half to even, as Python's `round`.
pub fn round_half_even(value: f64) -> f64 {
    let rounded = value.round();
    if (rounded - value).abs() == 0.5 && rounded % 2.0 != 0.0 {
        rounded - (rounded - value).signum()
    } else {
        rounded
    }
}

/// A float converted to an integer as the generated code does: toward
/// zero, saturating, NaN as 0.
pub fn float_to_int(value: f64) -> i64 {
    value as i64
}

/// The value of an operation on constants, when every operand is one.
fn fold(op: SymOp, args: &[Term]) -> Result<Option<Scalar>, SymbolError> {
    let Some(values) = args
        .iter()
        .map(|arg| arg.constant())
        .collect::<Option<Vec<Scalar>>>()
    else {
        return Ok(None);
    };
    let division_by_zero = || {
        SymbolError::DivisionByZero(format!(
            "{}({})",
            op.name(),
            values
                .iter()
                .map(Scalar::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    use Scalar::{Bool, Float, Int};
    let compare = |ordering: Option<std::cmp::Ordering>| -> Option<Scalar> {
        use std::cmp::Ordering::{Equal, Less};
        Some(Bool(match op {
            SymOp::Eq => ordering == Some(Equal),
            SymOp::Ne => ordering != Some(Equal),
            SymOp::Lt => ordering == Some(Less),
            SymOp::Le => matches!(ordering, Some(Less | Equal)),
            _ => return None,
        }))
    };
    Ok(match (op, values.as_slice()) {
        (SymOp::FloorDiv, &[Int(a), Int(b)]) => {
            Some(Int(floor_div(a, b).ok_or_else(division_by_zero)?))
        }
        (SymOp::Mod, &[Int(a), Int(b)]) => Some(Int(floor_mod(a, b).ok_or_else(division_by_zero)?)),
        (SymOp::Max, &[Int(a), Int(b)]) => Some(Int(a.max(b))),
        (SymOp::Min, &[Int(a), Int(b)]) => Some(Int(a.min(b))),
        (SymOp::Max, &[Float(a), Float(b)]) => Some(Float(max_keeping_nan(a, b))),
        (SymOp::Min, &[Float(a), Float(b)]) => Some(Float(-max_keeping_nan(-a, -b))),
        (SymOp::Eq | SymOp::Ne | SymOp::Lt | SymOp::Le, &[Int(a), Int(b)]) => {
            compare(Some(a.cmp(&b)))
        }
        (SymOp::Eq | SymOp::Ne | SymOp::Lt | SymOp::Le, &[Float(a), Float(b)]) => {
            compare(a.partial_cmp(&b))
        }
        (SymOp::Eq | SymOp::Ne, &[Bool(a), Bool(b)]) => compare(Some(a.cmp(&b))),
        (SymOp::Not, &[Bool(a)]) => Some(Bool(!a)),
        (SymOp::Ite, &[Bool(condition), a, b]) => Some(if condition { a } else { b }),
        (SymOp::Add, &[Float(a), Float(b)]) => Some(Float(a + b)),
        (SymOp::Sub, &[Float(a), Float(b)]) => Some(Float(a - b)),
        (SymOp::Mul, &[Float(a), Float(b)]) => Some(Float(a * b)),
        (SymOp::TrueDiv, &[Float(a), Float(b)]) => Some(Float(a / b)),
        (SymOp::Neg, &[Float(a)]) => Some(Float(-a)),
        (SymOp::ToFloat, &[Int(a)]) => Some(Float(a as f64)),
        (SymOp::ToFloat, &[Bool(a)]) => Some(Float(f64::from(u8::from(a)))),
        (SymOp::Trunc, &[Float(a)]) => Some(Int(float_to_int(a))),
        (SymOp::Floor, &[Float(a)]) => Some(Int(float_to_int(a.floor()))),
        (SymOp::Ceil, &[Float(a)]) => Some(Int(float_to_int(a.ceil()))),
        (SymOp::Round, &[Float(a)]) => Some(Int(float_to_int(round_half_even(a)))),
        _ => None,
    })
}

/// The larger of two floats, NaN if either is (PyTorch's `max`).
pub fn max_keeping_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_with_inputs(bounds: &[u64]) -> (SymbolTable, Vec<SymbolId>) {
        let mut table = SymbolTable::default();
        let symbols = bounds
            .iter()
            .enumerate()
            .map(|(index, &bound)| table.add_input(bound, format!("input {index}")))
            .collect();
        (table, symbols)
    }

    fn poly(table: &SymbolTable, term: Term) -> Poly {
        table.poly(term).expect("a valid expression")
    }

    #[test]
    fn equal_sums_are_one_symbol() {
        let (mut table, s) = table_with_inputs(&[8, 8]);
        let (a, b) = (Poly::symbol(s[0]), Poly::symbol(s[1]));
        let x = table
            .intern(SymbolDef::Poly(a.add(&b)), String::new)
            .expect("a valid expression");
        let y = table
            .intern(SymbolDef::Poly(b.add(&a)), String::new)
            .expect("a valid expression");
        assert_eq!(x, y);
        // (s0 + s1) + 2 - 2 is s0 + s1 again.
        let z = poly(&table, x).add(&Poly::constant(2));
        let z = table
            .intern(SymbolDef::Poly(z), String::new)
            .expect("a valid expression");
        let back = poly(&table, z).sub(&Poly::constant(2));
        assert_eq!(
            table
                .intern(SymbolDef::Poly(back), String::new)
                .expect("a valid expression"),
            x
        );
        assert_eq!(
            table.symbol(x.symbol().expect("a symbol")).range(),
            Range { lo: 0, hi: 16 }
        );
    }

    #[test]
    fn division_by_a_factor_cancels() {
        let (mut table, s) = table_with_inputs(&[128]);
        let scaled = Poly::symbol(s[0]).scale(32);
        let product = table
            .intern(SymbolDef::Poly(scaled), String::new)
            .expect("a valid expression");
        let quotient = table
            .intern(
                SymbolDef::Op(SymOp::FloorDiv, vec![product, Term::int(32)]),
                String::new,
            )
            .expect("a valid expression");
        assert_eq!(quotient, Term::Symbol(s[0]));
        let remainder = table
            .intern(
                SymbolDef::Op(SymOp::Mod, vec![product, Term::int(8)]),
                String::new,
            )
            .expect("a valid expression");
        assert_eq!(remainder, Term::int(0));
    }

    #[test]
    fn ranges_decide_comparisons_and_extremes() {
        let (mut table, s) = table_with_inputs(&[16]);
        let plus_one = table
            .intern(
                SymbolDef::Poly(Poly::symbol(s[0]).add(&Poly::constant(1))),
                String::new,
            )
            .expect("a valid expression");
        let smaller = table
            .intern(
                SymbolDef::Op(SymOp::Min, vec![plus_one, Term::Symbol(s[0])]),
                String::new,
            )
            .expect("a valid expression");
        assert_eq!(smaller, Term::Symbol(s[0]));
        let below = table
            .intern(
                SymbolDef::Op(SymOp::Lt, vec![Term::Symbol(s[0]), Term::int(17)]),
                String::new,
            )
            .expect("a valid expression");
        assert_eq!(below, Term::Const(Scalar::Bool(true)));
        let open = table
            .intern(
                SymbolDef::Op(SymOp::Lt, vec![Term::Symbol(s[0]), Term::int(8)]),
                String::new,
            )
            .expect("a valid expression");
        assert!(open.symbol().is_some());
    }

    #[test]
    fn constants_fold_with_python_semantics() {
        let mut table = SymbolTable::default();
        let fold = |table: &mut SymbolTable, op, a: i64, b: i64| {
            table
                .intern(
                    SymbolDef::Op(op, vec![Term::int(a), Term::int(b)]),
                    String::new,
                )
                .expect("a valid expression")
        };
        assert_eq!(fold(&mut table, SymOp::FloorDiv, -7, 2), Term::int(-4));
        assert_eq!(fold(&mut table, SymOp::Mod, -7, 2), Term::int(1));
        assert_eq!(fold(&mut table, SymOp::Mod, 7, -2), Term::int(-1));
        let error = table
            .intern(
                SymbolDef::Op(SymOp::FloorDiv, vec![Term::int(1), Term::int(0)]),
                String::new,
            )
            .expect_err("an invalid expression");
        assert!(matches!(error, SymbolError::DivisionByZero(_)));
        assert_eq!(round_half_even(2.5), 2.0);
        assert_eq!(round_half_even(3.5), 4.0);
        assert_eq!(round_half_even(-2.5), -2.0);
    }

    #[test]
    fn kinds_are_checked() {
        let (mut table, s) = table_with_inputs(&[4]);
        let error = table
            .intern(
                SymbolDef::Op(SymOp::Not, vec![Term::Symbol(s[0])]),
                String::new,
            )
            .expect_err("an invalid expression");
        assert!(matches!(error, SymbolError::Kinds { .. }));
    }

    #[test]
    fn a_replaced_expression_becomes_a_check() {
        let (mut table, s) = table_with_inputs(&[8, 8]);
        let sum = table
            .intern(
                SymbolDef::Poly(Poly::symbol(s[0]).add(&Poly::symbol(s[1]))),
                || "sum".into(),
            )
            .expect("a valid expression")
            .symbol()
            .expect("a symbol");
        // The sum is equated with 6.
        let (rebuilt, map) = table
            .rebuild(|symbol| (symbol == sum).then_some(Term::int(6)), s.clone())
            .expect("a valid expression");
        assert_eq!(map[sum.index()], Term::int(6));
        assert_eq!(rebuilt.checks().len(), 1);
        let condition = rebuilt.symbol(rebuilt.checks()[0].condition);
        assert_eq!(condition.kind, ScalarKind::Bool);
        assert_eq!(condition.def.to_string(), format!("eq(6, {})", SymbolId(2)));
    }
}
