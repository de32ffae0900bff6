//! Symbols during import: each dimension of a dynamic-bound input starts as
//! a symbol; the ops' shape rules make symbols of what they compute from
//! sizes (a concatenation's length, a convolution's output height), the
//! `executorch_prim` operators of what they compute from `SymInt`s, and
//! `_local_scalar_dense` of tensors' elements. Shape rules also equate
//! dimensions: a batch dim stays symbolic, a feature dim that meets a weight
//! becomes its size, and two symbols that must be equal become one. When a
//! computed symbol is equated with something else, the graph checks at run
//! time that its definition equals it ([`SymbolTable::rebuild`] makes the
//! check when [`Symbols::apply`] writes the resolution into the graph).

use ptec_ir::ops::{OpError, ShapeContext};
use ptec_ir::symbolic::{Poly, SymbolDef, SymbolError, SymbolTable, Term};
use ptec_ir::{Dim, Graph, Shape, SymbolId, TensorType};

#[derive(Debug, Default)]
pub(crate) struct Symbols {
    pub(crate) table: SymbolTable,
    /// What each symbol has been equated with, if anything.
    resolved: Vec<Option<Dim>>,
    /// Where the importer is, for the origin of the symbols it makes.
    pub(crate) origin: String,
}

impl Symbols {
    /// A symbol for a dimension of a method input.
    pub(crate) fn add(&mut self, bound: u64, origin: String) -> SymbolId {
        self.table.add_input(bound, origin)
    }

    pub(crate) fn bound(&self, symbol: SymbolId) -> u64 {
        self.table.symbol(symbol).bound
    }

    /// The largest size of a dimension.
    pub(crate) fn max_size(&self, dim: Dim) -> u64 {
        match self.resolve(dim) {
            Dim::Fixed(size) => size,
            Dim::Symbol(symbol) => self.bound(symbol),
        }
    }

    pub(crate) fn resolve(&self, dim: Dim) -> Dim {
        let mut dim = dim;
        while let Dim::Symbol(symbol) = dim {
            match self.resolved.get(symbol.index()).copied().flatten() {
                Some(next) => dim = next,
                None => break,
            }
        }
        dim
    }

    pub(crate) fn resolve_term(&self, term: Term) -> Term {
        match term {
            Term::Symbol(symbol) => Term::from(self.resolve(Dim::Symbol(symbol))),
            constant => constant,
        }
    }

    pub(crate) fn resolve_shape(&self, shape: &[Dim]) -> Shape {
        shape.iter().map(|&dim| self.resolve(dim)).collect()
    }

    /// Equates an output's inferred shape with the shape it was given;
    /// false when they cannot be equal.
    pub(crate) fn equate_shapes(&mut self, inferred: &[Dim], declared: &[Dim]) -> bool {
        inferred.len() == declared.len()
            && inferred
                .iter()
                .zip(declared)
                .all(|(&a, &b)| self.equate(a, b).is_some())
    }

    /// The type of a view of a dynamic tensor: where the view's (upper-bound)
    /// sizes line up with the base's, it takes the base's dimensions.
    pub(crate) fn view_type(&self, base: &TensorType, view: TensorType) -> TensorType {
        let base_shape = self.resolve_shape(&base.shape);
        let bound = |dim: Dim| self.max_size(dim);
        let mut shape = view.shape.clone();
        // Keep symbols where the non-unit dims of both shapes match in order.
        let mut base_dims = base_shape.iter().filter(|&&dim| bound(dim) != 1);
        for dim in shape.iter_mut().filter(|dim| **dim != Dim::Fixed(1)) {
            match base_dims.next() {
                Some(&base_dim) if bound(base_dim) == bound(*dim) => *dim = base_dim,
                _ => return view,
            }
        }
        TensorType { shape, ..view }
    }

    /// Writes the resolution into the graph: every symbol equated with
    /// another or with a size is replaced by it (a computed one leaving a
    /// run-time check that they are equal), and symbols nothing needs are
    /// dropped.
    pub(crate) fn apply(&self, graph: &mut Graph<'_>) -> Result<(), SymbolError> {
        graph.set_symbol_table(self.table.clone());
        let resolved = |symbol: SymbolId| {
            self.resolved
                .get(symbol.index())
                .copied()
                .flatten()
                .map(|_| Term::from(self.resolve(Dim::Symbol(symbol))))
        };
        graph.rewrite_symbols(resolved)
    }

    /// The product of dimensions as one term: a constant when they are all
    /// fixed, else a symbol for their product.
    pub(crate) fn product(&mut self, dims: &[Dim]) -> Result<Term, SymbolError> {
        let product = self.numel(dims)?;
        self.intern(SymbolDef::Poly(product))
    }

    /// The number of elements of a shape, as a polynomial of its symbols.
    pub(crate) fn numel(&self, shape: &[Dim]) -> Result<Poly, SymbolError> {
        shape.iter().try_fold(Poly::constant(1), |product, &dim| {
            let term = self.resolve_term(Term::from(dim));
            Ok(product.mul(&self.table.poly(term)?))
        })
    }

    /// Makes the symbol (or constant) `def` defines, with the current
    /// origin; its operands are resolved first.
    pub(crate) fn intern(&mut self, def: SymbolDef) -> Result<Term, SymbolError> {
        let def = def.map_symbols(&|symbol| Ok(self.resolve_term(Term::Symbol(symbol))))?;
        let origin = self.origin.clone();
        let term = self.table.intern(def, || origin)?;
        self.resolved.resize(self.table.len(), None);
        Ok(term)
    }
}

impl ShapeContext for Symbols {
    fn equate(&mut self, a: Dim, b: Dim) -> Option<Dim> {
        let (a, b) = (self.resolve(a), self.resolve(b));
        self.resolved.resize(self.table.len(), None);
        match (a, b) {
            _ if a == b => Some(a),
            (Dim::Fixed(_), Dim::Fixed(_)) => None,
            (Dim::Symbol(symbol), Dim::Fixed(size)) | (Dim::Fixed(size), Dim::Symbol(symbol)) => {
                let data = self.table.symbol(symbol);
                let possible = size <= data.bound
                    && i64::try_from(size).is_ok_and(|size| data.range().contains(size));
                possible.then(|| {
                    self.resolved[symbol.index()] = Some(Dim::Fixed(size));
                    Dim::Fixed(size)
                })
            }
            (Dim::Symbol(first), Dim::Symbol(second)) => {
                // An input's dimension stays (the runtime binds it), else
                // the older symbol, which the newer one's definition may
                // read but not the other way round.
                let is_input = |symbol: SymbolId| self.table.symbol(symbol).def == SymbolDef::Input;
                let (kept, replaced) = match (is_input(first), is_input(second)) {
                    (false, true) => (second, first),
                    (true, false) => (first, second),
                    _ => (first.min(second), first.max(second)),
                };
                let bound = self.bound(first).min(self.bound(second));
                self.table.tighten_bound(kept, bound);
                self.resolved[replaced.index()] = Some(Dim::Symbol(kept));
                Some(Dim::Symbol(kept))
            }
        }
    }

    fn symbols(&self) -> &SymbolTable {
        &self.table
    }

    fn term(&mut self, def: SymbolDef) -> Result<Option<Term>, SymbolError> {
        self.intern(def).map(Some)
    }

    fn require(
        &mut self,
        condition: SymbolDef,
        message: &dyn Fn() -> String,
    ) -> Result<(), OpError> {
        let symbolic = |error: SymbolError| OpError::Symbolic {
            what: "a run-time check",
            problem: error.to_string(),
        };
        let condition = self.intern(condition).map_err(symbolic)?;
        self.table
            .require(condition, format!("{}: {}", self.origin, message()))
            .map_err(symbolic)
    }
}
