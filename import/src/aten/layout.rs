//! Copies, views and layout changes: clones and dtype or dim-order
//! conversions, reshapes, permutations, selections, slices, splits, padding,
//! repetition, concatenation and gathers along a dimension.

use ptec_ir::ops::ShapeContext;
use ptec_ir::ops::gather::IndexSelect;
use ptec_ir::ops::layout::{Cat, Copy, Pad, Permute, Repeat, Reshape, Select, Slice};
use ptec_ir::symbolic::{Poly, Range, SymOp, Term};
use ptec_ir::{Dim, Op, OpKind, Scalar};

use super::Operator;
use super::creation::emit_given;
use crate::call::{Call, TensorRef};
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "aten::_to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "aten::expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out) -> Tensor(a!)",
        expand,
        &[OpKind::Copy],
    ),
    (
        "aten::copy.out(Tensor self, Tensor src, bool non_blocking=False, *, Tensor(a!) out) -> Tensor(a!)",
        copy_from,
        &[OpKind::Copy],
    ),
    (
        "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
        copy_into,
        &[OpKind::Copy],
    ),
    (
        "aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let out = c.output("out")?;
            view(c, out)
        },
        &[OpKind::Reshape],
    ),
    (
        "aten::_unsafe_view.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let out = c.output("out")?;
            view(c, out)
        },
        &[OpKind::Reshape],
    ),
    (
        "executorch_prim::et_view.default(Tensor self, SymInt[] size) -> Tensor",
        |c| {
            let out = c.returned()?;
            view(c, out)
        },
        &[OpKind::Reshape],
    ),
    (
        "aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
        unsqueeze,
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let rank = c.rank_of("self")?;
            let dims = c.dims("dim", rank.max(1))?;
            squeeze(c, "dim", Some(dims))
        },
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let rank = c.rank_of("self")?;
            let dim = c.dim("dim", rank.max(1))?;
            squeeze(c, "dim", Some(vec![dim]))
        },
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |c| squeeze(c, "self", None),
        &[OpKind::Reshape],
    ),
    (
        "aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)",
        permute,
        &[OpKind::Permute],
    ),
    (
        "aten::t_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        transpose_matrix,
        &[OpKind::Permute],
    ),
    (
        "aten::transpose_copy.int_out(Tensor self, int dim0, int dim1, *, Tensor(a!) out) -> Tensor(a!)",
        transpose,
        &[OpKind::Permute],
    ),
    (
        "aten::select_copy.int_out(Tensor self, int dim, SymInt index, *, Tensor(a!) out) -> Tensor(a!)",
        select,
        &[OpKind::Select],
    ),
    (
        "aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)",
        slice,
        &[OpKind::Slice],
    ),
    (
        "aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()",
        split_with_sizes,
        &[OpKind::Slice],
    ),
    (
        "aten::constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *, Tensor(a!) out) -> Tensor(a!)",
        constant_pad,
        &[OpKind::Pad],
    ),
    (
        "aten::repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out) -> Tensor(a!)",
        repeat,
        &[OpKind::Repeat],
    ),
    (
        "aten::index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)",
        index_select,
        &[OpKind::IndexSelect],
    ),
    (
        "aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)",
        cat,
        &[OpKind::Cat],
    ),
];

/// `self` into `out` (a copy, a change of dim order or of dtype: the
/// output's type says which), of `self`'s shape.
fn copy(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let out = c.output("out")?;
    emit_given(c, Op::Copy(Copy { input }), out, shape)
}

/// `expand_copy(self, size)`: `self` broadcast to `size` (-1 keeps a
/// dimension; leading sizes add dimensions).
fn expand(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let sizes = c.terms("size")?;
    let Some(lead) = sizes.len().checked_sub(shape.len()) else {
        return Err(c.bad(
            "size",
            format!("has fewer sizes than the rank {} of `self`", shape.len()),
        ));
    };
    let mut expanded = Vec::with_capacity(sizes.len());
    for (axis, &size) in sizes.iter().enumerate() {
        let own = axis.checked_sub(lead).map(|index| shape[index]);
        let dim = match (own, size) {
            (Some(own), Term::Const(Scalar::Int(-1))) => own,
            (own, size) => {
                let dim = c.size("size", size)?;
                match own {
                    Some(Dim::Fixed(1)) | None => dim,
                    Some(own) => c.importer.symbols.equate(own, dim).ok_or_else(|| {
                        c.bad(
                            "size",
                            format!("expands dimension {axis} of size {own} to {dim}"),
                        )
                    })?,
                }
            }
        };
        expanded.push(dim);
    }
    let out = c.output("out")?;
    emit_given(c, Op::Copy(Copy { input }), out, expanded)
}

/// `copy(self, src, non_blocking, *, out)`: the source into `out`.
fn copy_from(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("src")?;
    let target = c.tensor("self")?;
    let shape = c.shape(target);
    let out = c.output("out")?;
    emit_given(c, Op::Copy(Copy { input }), out, shape)
}

/// `copy_(self, src)`: the source into `self`, in place.
fn copy_into(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("src")?;
    c.emit_into(Op::Copy(Copy { input }), "self")
}

/// `view(self, size)` into `out`: `size` with at most one -1, which takes
/// what the other sizes leave of `self`'s elements; the element counts
/// must agree (checked at run time when they are known only then).
fn view(c: &mut Call<'_, '_, '_>, out: TensorRef) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let sizes = c.terms("size")?;
    let count = numel(c, &shape)?;
    let mut known = Poly::constant(1);
    let mut inferred = None;
    let mut dims = Vec::with_capacity(sizes.len());
    for (axis, &size) in sizes.iter().enumerate() {
        if size == Term::int(-1) {
            if inferred.replace(axis).is_some() {
                return Err(c.bad("size", "has more than one -1"));
            }
            dims.push(Dim::Fixed(0));
            continue;
        }
        let dim = c.size("size", size)?;
        known = known.mul(&c.poly(Term::from(dim))?);
        dims.push(dim);
    }
    if let Some(axis) = inferred {
        dims[axis] = quotient(c, &count, &known)?;
    }
    let viewed = numel(c, &dims)?;
    if viewed != count {
        let (a, b) = (c.poly_term(count.clone())?, c.poly_term(viewed)?);
        let same = match (a.as_dim(), b.as_dim()) {
            (Some(a), Some(b)) => c.importer.symbols.equate(a, b).is_some(),
            _ => false,
        };
        if !same {
            return Err(c.bad(
                "size",
                format!("{sizes:?} is invalid for an input of {count} elements"),
            ));
        }
    }
    emit_given(c, Op::Reshape(Reshape { input }), out, dims)
}

/// The number of elements of a shape.
fn numel(c: &Call<'_, '_, '_>, shape: &[Dim]) -> Result<Poly, ImportError> {
    shape.iter().try_fold(Poly::constant(1), |product, &dim| {
        Ok(product.mul(&c.poly(Term::from(dim))?))
    })
}

/// `count / known`, the size a view's -1 takes: exact when `known` divides
/// `count` as polynomials, else a floor division by a constant whose
/// remainder must be zero at run time.
fn quotient(c: &mut Call<'_, '_, '_>, count: &Poly, known: &Poly) -> Result<Dim, ImportError> {
    let exact = divide(count, known);
    let quotient = match (exact, known.as_constant()) {
        (Some(exact), _) => c.poly_term(exact)?,
        (None, Some(divisor)) if divisor > 0 => {
            let count = c.poly_term(count.clone())?;
            let remainder = c.sym_op(SymOp::Mod, vec![count, Term::int(divisor)])?;
            let divides = c.sym_op(SymOp::Eq, vec![remainder, Term::int(0)])?;
            c.require(
                divides,
                format!("a view's -1 leaves {count} elements that {divisor} does not divide"),
            )?;
            c.sym_op(SymOp::FloorDiv, vec![count, Term::int(divisor)])?
        }
        _ => {
            return Err(c.bad(
                "size",
                format!("cannot infer the -1 of {count} elements viewed with the others {known}"),
            ));
        }
    };
    c.size("size", quotient)
}

/// `count / known` when `known` is one monomial dividing each of `count`'s.
fn divide(count: &Poly, known: &Poly) -> Option<Poly> {
    let mut monomials = known.monomials();
    let (symbols, factor) = monomials.next()?;
    if monomials.next().is_some() {
        return None;
    }
    let mut quotient = Poly::constant(0);
    for (monomial, coefficient) in count.monomials() {
        if coefficient % factor != 0 {
            return None;
        }
        let mut rest = monomial.to_vec();
        for symbol in symbols {
            let position = rest.iter().position(|s| s == symbol)?;
            rest.remove(position);
        }
        let term = rest
            .into_iter()
            .fold(Poly::constant(coefficient / factor), |product, symbol| {
                product.mul(&Poly::symbol(symbol))
            });
        quotient = quotient.add(&term);
    }
    Some(quotient)
}

/// `unsqueeze(self, dim)`: a dimension of size 1 at `dim`.
fn unsqueeze(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let mut shape = c.shape(input);
    let dim = c.dim("dim", shape.len() + 1)?;
    shape.insert(dim, Dim::Fixed(1));
    let out = c.output("out")?;
    emit_given(c, Op::Reshape(Reshape { input }), out, shape)
}

/// `squeeze(self, dims)`: the listed dimensions (all when `None`) of size
/// 1 removed.
fn squeeze(
    c: &mut Call<'_, '_, '_>,
    name: &str,
    dims: Option<Vec<usize>>,
) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let listed = |axis: usize| dims.as_ref().is_none_or(|dims| dims.contains(&axis));
    let mut squeezed = Vec::with_capacity(shape.len());
    for (axis, &dim) in shape.iter().enumerate() {
        match dim {
            Dim::Fixed(1) if listed(axis) => {}
            Dim::Symbol(_) if listed(axis) && dims.is_some() => {
                return Err(c.bad(
                    name,
                    format!("squeezes dimension {axis}, whose size is known only at run time"),
                ));
            }
            dim => squeezed.push(dim),
        }
    }
    let out = c.output("out")?;
    emit_given(c, Op::Reshape(Reshape { input }), out, squeezed)
}

fn permute(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let dims = c.dims("dims", rank)?;
    let input = c.tensor("self")?;
    c.emit(Op::Permute(Permute { input, dims }), &["out"])
}

/// `t_copy(self, *, out)`: a matrix transposed, anything smaller as it is.
fn transpose_matrix(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let input = c.tensor("self")?;
    let dims = if rank == 2 {
        vec![1, 0]
    } else {
        (0..rank).collect()
    };
    c.emit(Op::Permute(Permute { input, dims }), &["out"])
}

fn transpose(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let (a, b) = (c.dim("dim0", rank)?, c.dim("dim1", rank)?);
    let mut dims: Vec<usize> = (0..rank).collect();
    dims.swap(a, b);
    let input = c.tensor("self")?;
    c.emit(Op::Permute(Permute { input, dims }), &["out"])
}

/// The term `index` is along a dimension of `size` once a negative one
/// counts from the end (as a run-time choice when its sign is known only
/// then).
fn from_end(c: &mut Call<'_, '_, '_>, index: Term, size: Dim) -> Result<Term, ImportError> {
    let range = range(c, index);
    if range.lo >= 0 {
        return Ok(index);
    }
    let wrapped = c.poly(index)?.add(&c.poly(Term::from(size))?);
    let wrapped = c.poly_term(wrapped)?;
    if range.hi < 0 {
        return Ok(wrapped);
    }
    let negative = c.sym_op(SymOp::Lt, vec![index, Term::int(0)])?;
    c.sym_op(SymOp::Ite, vec![negative, wrapped, index])
}

fn range(c: &Call<'_, '_, '_>, term: Term) -> Range {
    let term = c.importer.symbols.resolve_term(term);
    c.importer.symbols.table.range(term)
}

fn select(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let dim = c.dim("dim", shape.len())?;
    let given = c.term("index")?;
    let index = from_end(c, given, shape[dim])?;
    // A fixed index must lie in a fixed dimension; anything known only at
    // run time is checked then.
    if let (Some(Scalar::Int(index)), Dim::Fixed(size)) = (index.constant(), shape[dim])
        && !(0..size as i64).contains(&index)
    {
        return Err(c.bad(
            "index",
            format!("{given} is out of range for dimension {dim} of size {size}"),
        ));
    }
    let index = c.size("index", index).map_err(|_| {
        c.bad(
            "index",
            format!(
                "{given} is out of range for dimension {dim} of size {}",
                shape[dim]
            ),
        )
    })?;
    c.emit(Op::Select(Select { input, dim, index }), &["out"])
}

/// A slice bound clamped into `0..=size` as Python clamps it (a negative
/// one counts from the end).
fn clamp_bound(c: &mut Call<'_, '_, '_>, bound: Term, size: Dim) -> Result<Term, ImportError> {
    let size = Term::from(size);
    let negative = c.sym_op(SymOp::Lt, vec![bound, Term::int(0)])?;
    let wrapped = c.poly(bound)?.add(&c.poly(size)?);
    let wrapped = c.poly_term(wrapped)?;
    let low = c.sym_op(SymOp::Max, vec![wrapped, Term::int(0)])?;
    let high = c.sym_op(SymOp::Min, vec![bound, size])?;
    c.sym_op(SymOp::Ite, vec![negative, low, high])
}

fn slice(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let mut shape = c.shape(input);
    let dim = c.dim("dim", shape.len())?;
    let step = c.int("step")?;
    let step = u64::try_from(step)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| c.bad("step", format!("{step} must be positive")))?;
    let size = shape[dim];
    let start = c.optional_term("start")?.unwrap_or(Term::int(0));
    let end = c.optional_term("end")?.unwrap_or(Term::from(size));
    let start = clamp_bound(c, start, size)?;
    let end = clamp_bound(c, end, size)?;
    // ceil((end - start) / step) elements, none when end <= start.
    let span = c.poly(end)?.sub(&c.poly(start)?);
    let span = c.poly_term(span.add(&Poly::constant(step as i64 - 1)))?;
    let count = c.sym_op(SymOp::FloorDiv, vec![span, Term::int(step as i64)])?;
    let count = c.sym_op(SymOp::Max, vec![count, Term::int(0)])?;
    shape[dim] = c.size("end", count)?;
    let start = c.size("start", start)?;
    let op = Op::Slice(Slice {
        input,
        dim,
        start,
        step,
    });
    let out = c.output("out")?;
    emit_given(c, op, out, shape)
}

fn split_with_sizes(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let dim = c.dim("dim", shape.len())?;
    let pieces = c.terms("split_sizes")?;
    let outputs = c.tensor_list_refs("out")?;
    if pieces.len() != outputs.len() {
        return Err(c.bad(
            "split_sizes",
            format!("{} sizes for the {} outputs", pieces.len(), outputs.len()),
        ));
    }
    let mut start = Poly::constant(0);
    for (&piece, output) in pieces.iter().zip(outputs) {
        let length = c.size("split_sizes", piece)?;
        let first = c.poly_term(start.clone())?;
        let first = c.size("split_sizes", first)?;
        let op = Op::Slice(Slice {
            input,
            dim,
            start: first,
            step: 1,
        });
        let mut piece_shape = shape.clone();
        piece_shape[dim] = length;
        emit_given(c, op, output, piece_shape)?;
        start = start.add(&c.poly(Term::from(length))?);
    }
    let total = c.poly_term(start)?;
    let covers = c.sym_op(SymOp::Eq, vec![total, Term::from(shape[dim])])?;
    if covers == Term::Const(Scalar::Bool(false)) {
        return Err(c.bad(
            "split_sizes",
            format!("{pieces:?} do not split dimension {dim} of {shape:?}"),
        ));
    }
    c.require(
        covers,
        format!("split sizes {pieces:?} must add up to dimension {dim}"),
    )
}

fn constant_pad(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("self")?;
    let pad = c.int_list("pad")?;
    if pad.len() % 2 != 0 || pad.len() / 2 > rank || pad.iter().any(|&p| p < 0) {
        return Err(c.bad(
            "pad",
            format!("{pad:?} (negative padding crops, which ptec does not support)"),
        ));
    }
    // Pairs run from the last dimension backwards.
    let (mut before, mut after) = (vec![0; rank], vec![0; rank]);
    for (pair, chunk) in pad.chunks(2).enumerate() {
        before[rank - 1 - pair] = chunk[0] as u64;
        after[rank - 1 - pair] = chunk[1] as u64;
    }
    let value = c.scalar("value")?;
    let input = c.tensor("self")?;
    c.emit(
        Op::Pad(Pad {
            input,
            before,
            after,
            value,
        }),
        &["out"],
    )
}

fn repeat(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let repeats = c.counts("repeats")?;
    let input = c.tensor("self")?;
    c.emit(Op::Repeat(Repeat { input, repeats }), &["out"])
}

fn index_select(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dim = c.dim("dim", c.rank_of("self")?.max(1))?;
    let (input, index) = (c.tensor("self")?, c.tensor("index")?);
    c.emit(Op::IndexSelect(IndexSelect { input, index, dim }), &["out"])
}

fn cat(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let inputs = c.tensor_list("tensors")?;
    let rank = inputs.first().map_or(0, |&first| c.ty(first).rank());
    let dim = c.dim("dim", rank)?;
    c.emit(Op::Cat(Cat { inputs, dim }), &["out"])
}
