//! Symbolic dimensions during import: each dimension of a dynamic-bound
//! input starts as a symbol; the ops' shape rules then equate symbols with
//! each other or with fixed sizes (a batch dim stays symbolic, a feature dim
//! that meets a weight becomes its size).

use ptec_ir::ops::DimEquality;
use ptec_ir::{Dim, Graph, Shape, SymbolId, TensorType};

#[derive(Debug, Default)]
pub(crate) struct Symbols {
    /// What each symbol has been equated with, if anything.
    resolved: Vec<Option<Dim>>,
    bounds: Vec<u64>,
}

impl Symbols {
    pub(crate) fn add(&mut self, graph: &mut Graph<'_>, bound: u64, origin: String) -> SymbolId {
        self.resolved.push(None);
        self.bounds.push(bound);
        graph.add_symbol(bound, origin)
    }

    pub(crate) fn resolve(&self, dim: Dim) -> Dim {
        let mut dim = dim;
        while let Dim::Symbol(symbol) = dim {
            match self.resolved[symbol.index()] {
                Some(next) => dim = next,
                None => break,
            }
        }
        dim
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
    pub(crate) fn view_type(
        &self,
        graph: &Graph<'_>,
        base: &TensorType,
        view: TensorType,
    ) -> TensorType {
        let base_shape = self.resolve_shape(&base.shape);
        let bound = |dim: Dim| match dim {
            Dim::Fixed(size) => size,
            Dim::Symbol(symbol) => graph.bound(symbol),
        };
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

    /// Writes the resolution into every value's type and drops the symbols
    /// that became fixed.
    pub(crate) fn apply(&self, graph: &mut Graph<'_>) {
        let ids: Vec<_> = graph.values().map(|(id, _)| id).collect();
        for id in ids {
            let resolved = self.resolve_shape(&graph.value(id).ty.shape);
            graph.value_mut(id).ty.shape = resolved;
        }
        graph.remove_unused_symbols();
    }
}

impl DimEquality for Symbols {
    fn equate(&mut self, a: Dim, b: Dim) -> Option<Dim> {
        let (a, b) = (self.resolve(a), self.resolve(b));
        match (a, b) {
            _ if a == b => Some(a),
            (Dim::Fixed(_), Dim::Fixed(_)) => None,
            (Dim::Symbol(symbol), Dim::Fixed(size)) | (Dim::Fixed(size), Dim::Symbol(symbol)) => {
                (size <= self.bounds[symbol.index()]).then(|| {
                    self.resolved[symbol.index()] = Some(Dim::Fixed(size));
                    Dim::Fixed(size)
                })
            }
            (Dim::Symbol(first), Dim::Symbol(second)) => {
                let bound = self.bounds[first.index()].min(self.bounds[second.index()]);
                self.bounds[first.index()] = bound;
                self.resolved[second.index()] = Some(Dim::Symbol(first));
                Some(Dim::Symbol(first))
            }
        }
    }
}
