//! Copies, views and layout changes: clones, aliases and dtype or
//! dim-order conversions, expansions, reshapes, permutations, selections,
//! slices, splits, stacks, flips, rolls, diagonals and other strided reads,
//! triangles, pixel shuffles, scatters into slices, padding, repetition and
//! concatenation.
//!
//! Several operators become an op that exists for another: `stack` is
//! views and a concatenation, `narrow` a slice, `flip`, `diagonal`,
//! `as_strided` and `unfold` strided reads, pixel shuffles a view, a
//! permutation and a view (the views cost nothing).

use ptec_ir::ops::ShapeContext;
use ptec_ir::ops::gather::Index;
use ptec_ir::ops::layout::{
    Cat, Copy, Pad, PadMode, Permute, Repeat, Reshape, Roll, Select, Slice, SliceScatter, Strided,
    Tril,
};
use ptec_ir::symbolic::{Poly, Range, SymOp, Term};
use ptec_ir::{Dim, Op, OpKind, Scalar, SymbolId, TensorType, ValueId};

use super::creation::emit_given;
use super::{Operator, Refused};
use crate::call::{Call, TensorRef};
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        clone,
        &[OpKind::Copy],
    ),
    (
        "aten::_to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        copy,
        &[OpKind::Copy],
    ),
    (
        "dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
        copy_dim_order,
        &[OpKind::Copy],
    ),
    (
        "dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
        clone_dim_order,
        &[OpKind::Copy],
    ),
    (
        "aten::alias_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        clone,
        &[OpKind::Copy],
    ),
    (
        "aten::detach_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        clone,
        &[OpKind::Copy],
    ),
    (
        "aten::lift_fresh_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        clone,
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
            view_into(c, out)
        },
        &[OpKind::Reshape],
    ),
    (
        "aten::_unsafe_view.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        |c| {
            let out = c.output("out")?;
            view_into(c, out)
        },
        &[OpKind::Reshape],
    ),
    (
        "executorch_prim::et_view.default(Tensor self, SymInt[] size) -> Tensor",
        |c| {
            let out = c.returned()?;
            view_into(c, out)
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
        "aten::narrow_copy.out(Tensor self, int dim, SymInt start, SymInt length, *, Tensor(a!) out) -> Tensor(a!)",
        narrow,
        &[OpKind::Slice],
    ),
    (
        "aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()",
        split_with_sizes,
        &[OpKind::Slice],
    ),
    (
        "aten::split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out) -> ()",
        split,
        &[OpKind::Slice],
    ),
    (
        "aten::unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()",
        unbind,
        &[OpKind::Select],
    ),
    (
        "aten::stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)",
        stack,
        &[OpKind::Copy, OpKind::Reshape, OpKind::Cat],
    ),
    (
        "aten::flip.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)",
        flip,
        &[OpKind::Strided],
    ),
    (
        "aten::roll.out(Tensor self, SymInt[1] shifts, int[1] dims=[], *, Tensor(a!) out) -> Tensor(a!)",
        roll,
        &[OpKind::Copy, OpKind::Reshape, OpKind::Roll],
    ),
    (
        "aten::diagonal_copy.out(Tensor self, int offset=0, int dim1=0, int dim2=1, *, Tensor(a!) out) -> Tensor(a!)",
        diagonal,
        &[OpKind::Strided],
    ),
    (
        "aten::as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None, *, Tensor(a!) out) -> Tensor(a!)",
        as_strided,
        &[OpKind::Strided],
    ),
    (
        "aten::unfold_copy.out(Tensor self, int dimension, int size, int step, *, Tensor(a!) out) -> Tensor(a!)",
        unfold,
        &[OpKind::Strided],
    ),
    (
        "aten::tril.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out) -> Tensor(a!)",
        tril,
        &[OpKind::Tril],
    ),
    (
        "aten::pixel_shuffle.out(Tensor self, int upscale_factor, *, Tensor(a!) out) -> Tensor(a!)",
        pixel_shuffle,
        &[OpKind::Copy, OpKind::Reshape, OpKind::Permute],
    ),
    (
        "aten::pixel_unshuffle.out(Tensor self, int downscale_factor, *, Tensor(a!) out) -> Tensor(a!)",
        pixel_unshuffle,
        &[OpKind::Copy, OpKind::Reshape, OpKind::Permute],
    ),
    (
        "aten::select_scatter.out(Tensor self, Tensor src, int dim, SymInt index, *, Tensor(a!) out) -> Tensor(a!)",
        select_scatter,
        &[OpKind::Copy, OpKind::Reshape, OpKind::SliceScatter],
    ),
    (
        "aten::slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)",
        slice_scatter,
        &[OpKind::SliceScatter],
    ),
    (
        "aten::constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *, Tensor(a!) out) -> Tensor(a!)",
        constant_pad,
        &[OpKind::Pad],
    ),
    (
        "aten::reflection_pad1d.out(Tensor self, SymInt[2] padding, *, Tensor(a!) out) -> Tensor(a!)",
        reflection_pad,
        &[OpKind::Pad],
    ),
    (
        "aten::reflection_pad2d.out(Tensor self, SymInt[4] padding, *, Tensor(a!) out) -> Tensor(a!)",
        reflection_pad,
        &[OpKind::Pad],
    ),
    (
        "aten::reflection_pad3d.out(Tensor self, SymInt[6] padding, *, Tensor(a!) out) -> Tensor(a!)",
        reflection_pad,
        &[OpKind::Pad],
    ),
    (
        "aten::replication_pad1d.out(Tensor self, SymInt[2] padding, *, Tensor(a!) out) -> Tensor(a!)",
        replication_pad,
        &[OpKind::Pad],
    ),
    (
        "aten::replication_pad2d.out(Tensor self, SymInt[4] padding, *, Tensor(a!) out) -> Tensor(a!)",
        replication_pad,
        &[OpKind::Pad],
    ),
    (
        "aten::replication_pad3d.out(Tensor self, SymInt[6] padding, *, Tensor(a!) out) -> Tensor(a!)",
        replication_pad,
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
        &[OpKind::Reshape, OpKind::Index],
    ),
    (
        "aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)",
        cat,
        &[OpKind::Cat],
    ),
];

pub(super) const REFUSED: &[Refused] = &[(
    "aten::view_as_real_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    "its input is a complex tensor, and ptec has no complex element types",
)];

/// `self` into `out` (a copy, a change of dim order or of dtype: the
/// output's type says which), of `self`'s shape.
fn copy(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let out = c.output("out")?;
    emit_given(c, Op::Copy(Copy { input }), out, shape)
}

/// `clone` and its aliases: a copy of `self` in its own element type.
pub(super) fn clone(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    c.keeps_dtype("self", "out")?;
    copy(c)
}

/// `_clone_dim_order`: `_to_dim_order_copy` in `self`'s own element type.
fn clone_dim_order(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    c.keeps_dtype("self", "out")?;
    copy_dim_order(c)
}

/// `_to_dim_order_copy` and `_clone_dim_order`: a copy of `self` (in the
/// layout of `out`), whose `dim_order`, when given, must be a permutation
/// of the dimensions of `self`.
fn copy_dim_order(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    if let Some(order) = c.optional_int_list("dim_order")? {
        let rank = c.rank_of("self")?;
        let mut sorted = order.clone();
        sorted.sort_unstable();
        if !sorted.into_iter().eq(0..rank as i64) {
            return Err(c.bad(
                "dim_order",
                format!("{order:?} is not a permutation of the {rank} dimensions of `self`"),
            ));
        }
    }
    copy(c)
}

/// `expand_copy(self, size)`: `self` broadcast to `size` (-1 keeps a
/// dimension; leading sizes add dimensions).
fn expand(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    c.keeps_dtype("self", "out")?;
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
    let declared = c.declared_type_of("out")?.shape;
    let agrees = declared.len() == expanded.len()
        && declared.iter().zip(&expanded).all(|pair| match pair {
            (Dim::Fixed(a), Dim::Fixed(b)) => a == b,
            _ => true,
        });
    if !agrees {
        return Err(c.bad(
            "size",
            format!(
                "expands self to {}, but out is declared {}",
                ptec_ir::ops::show(&expanded),
                ptec_ir::ops::show(&declared)
            ),
        ));
    }
    let out = c.output("out")?;
    emit_given(c, Op::Copy(Copy { input }), out, expanded)
}

/// `copy(self, src, non_blocking, *, out)`: the source into `out`.
fn copy_from(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    c.keeps_dtype("self", "out")?;
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
fn view_into(c: &mut Call<'_, '_, '_>, out: TensorRef) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let sizes = c.terms("size")?;
    let count = c.numel(&shape)?;
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
    let viewed = c.numel(&dims)?;
    if viewed != count {
        let (a, b) = cancel_common_factors(&count, &viewed);
        let (a, b) = (c.poly_term(a)?, c.poly_term(b)?);
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
    // By the logical order, whatever dim order input and out are stored in
    // (a channels-last image split or flattened).
    let to = TensorType {
        shape: dims.clone(),
        ..c.importer.declared_type(out)?
    };
    let op = c.importer.view_op(input, &to);
    emit_given(c, op, out, dims)
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

/// Two monomials without the symbols and the constant factor they share
/// (`8·s16` and `8·s0` become `s16` and `s0`, which can then be equated);
/// other polynomials as they are.
fn cancel_common_factors(a: &Poly, b: &Poly) -> (Poly, Poly) {
    let (Some((a_symbols, a_factor)), Some((b_symbols, b_factor))) = (single(a), single(b)) else {
        return (a.clone(), b.clone());
    };
    let mut b_rest = b_symbols.to_vec();
    let mut a_rest = Vec::with_capacity(a_symbols.len());
    for symbol in a_symbols {
        match b_rest.iter().position(|other| other == symbol) {
            Some(position) => {
                b_rest.remove(position);
            }
            None => a_rest.push(*symbol),
        }
    }
    let common = gcd(a_factor.unsigned_abs(), b_factor.unsigned_abs()).max(1) as i64;
    let monomial = |factor: i64, symbols: Vec<SymbolId>| {
        symbols
            .into_iter()
            .fold(Poly::constant(factor / common), |product, symbol| {
                product.mul(&Poly::symbol(symbol))
            })
    };
    (monomial(a_factor, a_rest), monomial(b_factor, b_rest))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The one monomial of a polynomial that has one.
fn single(poly: &Poly) -> Option<(&[SymbolId], i64)> {
    let mut monomials = poly.monomials();
    let first = monomials.next();
    first.filter(|_| monomials.next().is_none())
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

/// `given` as a position along a dimension of `size`, negative ones
/// counted from the end once; `None` outside `0..size`.
fn position(given: i64, size: i64) -> Option<u64> {
    let index = if given < 0 { given + size } else { given };
    u64::try_from(index)
        .ok()
        .filter(|&index| index < size.max(0) as u64)
}

/// The index argument `name`, a position along dimension `dim` of `sizes`.
fn index_along(
    c: &Call<'_, '_, '_>,
    name: &str,
    sizes: &[i64],
    dim: usize,
) -> Result<u64, ImportError> {
    let given = c.int(name)?;
    position(given, sizes[dim]).ok_or_else(|| {
        c.bad(
            name,
            format!(
                "{given} is out of range for dimension {dim} of size {}",
                sizes[dim]
            ),
        )
    })
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
    // A negative bound wraps below `size`; saying so gives the clamped
    // bound a range of `0..=size` when `bound` is only known at run time.
    let low = c.sym_op(SymOp::Min, vec![low, size])?;
    let high = c.sym_op(SymOp::Min, vec![bound, size])?;
    c.sym_op(SymOp::Ite, vec![negative, low, high])
}

/// A slice bound clamped into `0..=size`, negative ones counted from the
/// end, as `slice` treats them.
fn clamp_index(value: i64, size: i64) -> i64 {
    if value < 0 {
        value.saturating_add(size).max(0)
    } else {
        value.min(size)
    }
}

/// The positive `step` argument.
fn step(c: &Call<'_, '_, '_>) -> Result<u64, ImportError> {
    let step = c.int("step")?;
    u64::try_from(step)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| c.bad("step", format!("{step} must be positive")))
}

fn slice(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let mut shape = c.shape(input);
    let dim = c.dim("dim", shape.len())?;
    let step = step(c)?;
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

/// `narrow_copy(self, dim, start, length)`: a slice of `length` elements
/// from `start` (which may be the end of the dimension, an empty narrow).
/// A start or length computed at run time is checked then.
fn narrow(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let mut shape = c.shape(input);
    let dim = c.dim("dim", shape.len())?;
    let size = shape[dim];
    let given = c.term("start")?;
    let start = from_end(c, given, size)?;
    let length = c.term("length")?;
    if let (Some(Scalar::Int(start)), Some(Scalar::Int(length)), Dim::Fixed(size)) =
        (start.constant(), length.constant(), size)
    {
        let size = size as i64;
        if !(0..=size).contains(&start) {
            return Err(c.bad(
                "start",
                format!("{given} is out of range for dimension {dim} of size {size}"),
            ));
        }
        if length < 0 || start + length > size {
            return Err(c.bad(
                "length",
                format!("{length} elements from {start} do not fit dimension {dim} of size {size}"),
            ));
        }
    }
    let end = c.poly(start)?.add(&c.poly(length)?);
    let end = c.poly_term(end)?;
    let fits = c.sym_op(SymOp::Le, vec![end, Term::from(size)])?;
    c.require(
        fits,
        format!("narrow's {length} elements from {given} must fit dimension {dim}"),
    )?;
    let start = c.size("start", start)?;
    shape[dim] = c.size("length", length)?;
    if let Dim::Fixed(length) = shape[dim] {
        let declared = c.declared_type_of("out")?.shape;
        if let Some(&Dim::Fixed(declared_length)) = declared.get(dim)
            && declared_length != length
        {
            return Err(c.bad(
                "length",
                format!(
                    "{length}, but out is declared {}",
                    ptec_ir::ops::show(&declared)
                ),
            ));
        }
    }
    let op = Op::Slice(Slice {
        input,
        dim,
        start,
        step: 1,
    });
    let out = c.output("out")?;
    emit_given(c, op, out, shape)
}

/// Slices `self` along `dim` into consecutive pieces of the given lengths,
/// one per tensor of the `out` list, whose declared lengths must be them.
fn split_into(
    c: &mut Call<'_, '_, '_>,
    dim: usize,
    pieces: &[u64],
    argument: &str,
) -> Result<(), ImportError> {
    let outputs = c.tensor_list_refs("out")?;
    let input = c.tensor("self")?;
    let mut start = 0;
    for (&piece, &output) in pieces.iter().zip(&outputs) {
        let declared = c.importer.declared_sizes(output)?;
        if declared.get(dim) != Some(&(piece as i64)) {
            return Err(c.bad(
                argument,
                format!(
                    "gives a piece of {piece} at {start}, but its output is declared {declared:?}"
                ),
            ));
        }
        let op = Op::Slice(Slice {
            input,
            dim,
            start: Dim::Fixed(start),
            step: 1,
        });
        c.emit_to(op, &[output])?;
        start += piece;
    }
    Ok(())
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

/// `split_copy(self, split_size, dim)`: pieces of `split_size`, the last
/// one shorter when the dimension does not divide.
fn split(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.fixed_sizes_of("self")?;
    let dim = c.dim("dim", sizes.len())?;
    let size = sizes[dim] as u64;
    let piece = c.count("split_size")?;
    let outputs = c.tensor_list_refs("out")?.len();
    let count = match (size, piece) {
        (0, _) => Some(1),
        (_, 0) => None,
        _ => Some(size.div_ceil(piece)),
    };
    if count != Some(outputs as u64) {
        return Err(c.bad(
            "split_size",
            format!(
                "{piece} does not split dimension {dim} of size {size} into the {outputs} outputs"
            ),
        ));
    }
    let pieces: Vec<u64> = (0..outputs as u64)
        .map(|k| piece.min(size - k * piece))
        .collect();
    split_into(c, dim, &pieces, "split_size")
}

/// `unbind_copy(self, dim)`: every element along `dim`, one per output.
fn unbind(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.fixed_sizes_of("self")?;
    let dim = c.dim("dim", sizes.len())?;
    let outputs = c.tensor_list_refs("out")?;
    if outputs.len() as i64 != sizes[dim] {
        return Err(c.bad(
            "out",
            format!(
                "{} tensors for the {} elements of dimension {dim}",
                outputs.len(),
                sizes[dim]
            ),
        ));
    }
    let input = c.tensor("self")?;
    for (index, output) in outputs.into_iter().enumerate() {
        let op = Op::Select(Select {
            input,
            dim,
            index: Dim::Fixed(index as u64),
        });
        c.emit_to(op, &[output])?;
    }
    Ok(())
}

/// `value` seen row-major with `shape` (a view, which costs nothing; a value
/// in another dim order is copied row-major first).
pub(super) fn view(
    c: &mut Call<'_, '_, '_>,
    value: ValueId,
    shape: Vec<Dim>,
) -> Result<ValueId, ImportError> {
    let ty = c.ty(value).clone();
    let row_major = |shape: Vec<Dim>| TensorType {
        dtype: ty.dtype,
        dim_order: (0..shape.len() as u8).collect(),
        shape,
    };
    let source = if ty.is_contiguous() {
        value
    } else {
        let copy = c.new_value(row_major(ty.shape.clone()));
        c.emit_to(Op::Copy(Copy { input: value }), &[TensorRef::Ir(copy)])?;
        copy
    };
    let view = c.new_value(row_major(shape));
    c.emit_to(
        Op::Reshape(Reshape { input: source }),
        &[TensorRef::Ir(view)],
    )?;
    Ok(view)
}

/// `stack(tensors, dim)`: each tensor given a dimension of size 1 at `dim`
/// (a view), then concatenated along it.
fn stack(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let tensors = c.tensor_list("tensors")?;
    let rank = tensors.first().map_or(0, |&first| c.ty(first).rank());
    let dim = c.dim("dim", rank + 1)?;
    let mut inputs = Vec::with_capacity(tensors.len());
    for tensor in tensors {
        let mut shape = c.ty(tensor).shape.clone();
        if shape.len() != rank {
            return Err(c.bad("tensors", "holds tensors of different ranks"));
        }
        shape.insert(dim, Dim::Fixed(1));
        inputs.push(view(c, tensor, shape)?);
    }
    c.emit(Op::Cat(Cat { inputs, dim }), &["out"])
}

/// The stride of each dimension of a value in memory (its dim order's), as
/// a strided read sees them.
fn memory_strides(c: &Call<'_, '_, '_>, value: ValueId) -> Vec<i64> {
    c.ty(value)
        .fixed_strides()
        .unwrap_or_default()
        .into_iter()
        .map(|stride| stride as i64)
        .collect()
}

/// Emits a strided read of `self` into `out` of `shape`, after checking that
/// `out` is declared so and that the read stays inside `self` (the argument
/// `argument` is blamed otherwise).
fn emit_strided(
    c: &mut Call<'_, '_, '_>,
    argument: &str,
    shape: Vec<u64>,
    offset: u64,
    strides: Vec<i64>,
) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let elements: u64 = c.fixed_sizes("self", input)?.iter().product();
    let op = Strided {
        input,
        offset,
        strides,
    };
    if op
        .reach(&shape)
        .is_some_and(|(low, high)| low < 0 || high >= i128::from(elements))
    {
        return Err(c.bad(
            argument,
            format!(
                "a read of {shape:?} with strides {:?} from offset {offset} reaches outside the {elements} elements of self",
                op.strides
            ),
        ));
    }
    let declared = c.sizes_of("out")?;
    if declared
        .iter()
        .map(|&size| size as u64)
        .ne(shape.iter().copied())
    {
        return Err(c.bad(
            argument,
            format!("gives {shape:?}, but out is declared {declared:?}"),
        ));
    }
    c.emit(Op::Strided(op), &["out"])
}

/// `flip(self, dims)`: each listed dimension read backwards.
fn flip(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let sizes = c.fixed_sizes("self", input)?;
    let dims = c.dims("dims", sizes.len())?;
    let mut strides = memory_strides(c, input);
    let mut offset = 0;
    for (position, &dim) in dims.iter().enumerate() {
        if dims[..position].contains(&dim) {
            return Err(c.bad("dims", format!("lists dimension {dim} twice")));
        }
        offset += sizes[dim].saturating_sub(1) * strides[dim] as u64;
        strides[dim] = -strides[dim];
    }
    emit_strided(c, "dims", sizes, offset, strides)
}

/// `diagonal_copy(self, offset, dim1, dim2)`: the diagonal of the matrices
/// `dim1` by `dim2` (above the main one for a positive offset), as a last
/// dimension.
fn diagonal(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let sizes = c.fixed_sizes("self", input)?;
    let (first, second) = (c.dim("dim1", sizes.len())?, c.dim("dim2", sizes.len())?);
    if first == second {
        return Err(c.bad("dim2", format!("is dimension {first}, as dim1 is")));
    }
    let shift = c.int("offset")?;
    let strides = memory_strides(c, input);
    let (rows, columns) = (sizes[first] as i64, sizes[second] as i64);
    // The first element: row -offset below the main diagonal, column
    // offset above it.
    let (row, column) = (shift.min(0).saturating_neg(), shift.max(0));
    let len = (rows - row).min(columns - column).max(0) as u64;
    let start = if len == 0 {
        0
    } else {
        (row * strides[first] + column * strides[second]) as u64
    };
    let (mut shape, mut steps) = (Vec::new(), Vec::new());
    for dim in (0..sizes.len()).filter(|&dim| dim != first && dim != second) {
        shape.push(sizes[dim]);
        steps.push(strides[dim]);
    }
    shape.push(len);
    steps.push(strides[first] + strides[second]);
    emit_strided(c, "offset", shape, start, steps)
}

/// `as_strided_copy(self, size, stride, storage_offset)`: `self`'s elements
/// in memory read with the given sizes and strides.
fn as_strided(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let size = c.counts("size")?;
    let stride = c.counts("stride")?;
    if stride.len() != size.len() {
        return Err(c.bad(
            "stride",
            format!("has {} strides for {} sizes", stride.len(), size.len()),
        ));
    }
    let offset = match c.optional_int("storage_offset")? {
        None => 0,
        Some(_) => c.count("storage_offset")?,
    };
    let strides = stride.into_iter().map(|stride| stride as i64).collect();
    emit_strided(c, "size", size, offset, strides)
}

/// `unfold_copy(self, dimension, size, step)`: windows of `size` elements
/// every `step` along `dimension`, as a new last dimension.
fn unfold(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let mut sizes = c.fixed_sizes("self", input)?;
    let mut strides = memory_strides(c, input);
    // A 0-D tensor unfolds as one element along one dimension.
    let scalar = sizes.is_empty();
    if scalar {
        (sizes, strides) = (vec![1], vec![1]);
    }
    let dim = c.dim("dimension", sizes.len())?;
    let window = c.count("size")?;
    let step = c.count("step")?;
    if step == 0 {
        return Err(c.bad("step", "must be positive"));
    }
    if window > sizes[dim] {
        return Err(c.bad(
            "size",
            format!(
                "{window} is larger than dimension {dim} of size {}",
                sizes[dim]
            ),
        ));
    }
    let stride = strides[dim];
    if scalar {
        (sizes, strides) = (Vec::new(), Vec::new());
    } else {
        sizes[dim] = (sizes[dim] - window) / step + 1;
        strides[dim] = stride * step as i64;
    }
    sizes.push(window);
    strides.push(stride);
    emit_strided(c, "size", sizes, 0, strides)
}

/// `roll(self, shifts, dims)`: each dimension rotated by its shift; with no
/// dimensions, the flattened tensor rotated.
fn roll(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let given = c.int_list("shifts")?;
    let input = c.tensor("self")?;
    let sizes = c.fixed_sizes("self", input)?;
    let dims = c.int_list("dims")?;
    if dims.is_empty() {
        let [shift] = given[..] else {
            return Err(c.bad(
                "shifts",
                format!("{given:?} for a roll of the flattened tensor must be one shift"),
            ));
        };
        let count: u64 = sizes.iter().product();
        let flat = view(c, input, vec![Dim::Fixed(count)])?;
        let ty = c.ty(flat).clone();
        let rolled = c.new_value(ty);
        let shifts = vec![rotation(shift, count)];
        c.emit_to(
            Op::Roll(Roll {
                input: flat,
                shifts,
            }),
            &[TensorRef::Ir(rolled)],
        )?;
        return c.emit(Op::Reshape(Reshape { input: rolled }), &["out"]);
    }
    if given.len() != dims.len() {
        return Err(c.bad(
            "shifts",
            format!("{} shifts for {} dimensions", given.len(), dims.len()),
        ));
    }
    let dims = c.dims("dims", sizes.len())?;
    let mut shifts = vec![0; sizes.len()];
    for (&dim, &shift) in dims.iter().zip(&given) {
        // A dimension listed twice rolls by both shifts.
        let total = i128::from(shifts[dim]) + i128::from(shift);
        shifts[dim] = rotation(
            total.rem_euclid(i128::from(sizes[dim].max(1))) as i64,
            sizes[dim],
        );
    }
    c.emit(Op::Roll(Roll { input, shifts }), &["out"])
}

/// A shift as a rotation by `0..size`.
fn rotation(shift: i64, size: u64) -> u64 {
    if size == 0 {
        0
    } else {
        i128::from(shift).rem_euclid(i128::from(size)) as u64
    }
}

fn tril(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    if c.rank_of("self")? < 2 {
        return Err(c.bad("self", "must have at least 2 dimensions"));
    }
    let diagonal = c.int("diagonal")?;
    let input = c.tensor("self")?;
    c.emit(Op::Tril(Tril { input, diagonal }), &["out"])
}

/// The factor argument `name` of a pixel shuffle, positive.
fn factor(c: &Call<'_, '_, '_>, name: &str) -> Result<u64, ImportError> {
    let factor = c.count(name)?;
    if factor == 0 {
        return Err(c.bad(name, "must be positive"));
    }
    Ok(factor)
}

/// Permutes `value` by `dims` into a row-major temporary, then views that
/// as `out`.
fn permute_into_out(
    c: &mut Call<'_, '_, '_>,
    value: ValueId,
    dims: Vec<usize>,
) -> Result<(), ImportError> {
    let permuted = permuted(c, value, dims)?;
    c.emit(Op::Reshape(Reshape { input: permuted }), &["out"])
}

/// `value.permute(dims)` into a new row-major value.
pub(super) fn permuted(
    c: &mut Call<'_, '_, '_>,
    value: ValueId,
    dims: Vec<usize>,
) -> Result<ValueId, ImportError> {
    let ty = c.ty(value).clone();
    let shape: Vec<Dim> = dims.iter().map(|&dim| ty.shape[dim]).collect();
    let permuted = c.new_value(TensorType::contiguous(ty.dtype, shape));
    let op = Op::Permute(Permute { input: value, dims });
    c.emit_to(op, &[TensorRef::Ir(permuted)])?;
    Ok(permuted)
}

/// The leading (batch) dimensions of `self` and its last three sizes, for
/// the pixel shuffles.
fn image(c: &Call<'_, '_, '_>, value: ValueId) -> Result<(Vec<Dim>, [u64; 3]), ImportError> {
    let shape = c.ty(value).shape.clone();
    let Some(batch) = shape.len().checked_sub(3) else {
        return Err(c.bad("self", "must have at least 3 dimensions"));
    };
    let mut last = [0; 3];
    for (slot, &dim) in last.iter_mut().zip(&shape[batch..]) {
        *slot = dim
            .fixed()
            .ok_or_else(|| c.bad("self", "needs fixed channels, height and width"))?;
    }
    Ok((shape[..batch].to_vec(), last))
}

/// `pixel_shuffle(self, r)`: `[*, C*r*r, H, W]` seen as `[*, C, r, r, H,
/// W]`, permuted to `[*, C, H, r, W, r]`, seen as `[*, C, H*r, W*r]`.
fn pixel_shuffle(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let r = factor(c, "upscale_factor")?;
    let input = c.tensor("self")?;
    let (batch, [channels, height, width]) = image(c, input)?;
    if channels % (r * r) != 0 {
        return Err(c.bad(
            "upscale_factor",
            format!("{r} squared does not divide the {channels} channels"),
        ));
    }
    let b = batch.len();
    let mut shape = batch;
    shape.extend([channels / (r * r), r, r, height, width].map(Dim::Fixed));
    let split = view(c, input, shape)?;
    let mut dims: Vec<usize> = (0..b).collect();
    dims.extend([b, b + 3, b + 1, b + 4, b + 2]);
    permute_into_out(c, split, dims)
}

/// `pixel_unshuffle(self, r)`: `[*, C, H*r, W*r]` seen as `[*, C, H, r, W,
/// r]`, permuted to `[*, C, r, r, H, W]`, seen as `[*, C*r*r, H, W]`.
fn pixel_unshuffle(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let r = factor(c, "downscale_factor")?;
    let input = c.tensor("self")?;
    let (batch, [channels, height, width]) = image(c, input)?;
    if height % r != 0 || width % r != 0 {
        return Err(c.bad(
            "downscale_factor",
            format!("{r} does not divide the height {height} and width {width}"),
        ));
    }
    let b = batch.len();
    let mut shape = batch;
    shape.extend([channels, height / r, r, width / r, r].map(Dim::Fixed));
    let split = view(c, input, shape)?;
    let mut dims: Vec<usize> = (0..b).collect();
    dims.extend([b, b + 2, b + 4, b + 1, b + 3]);
    permute_into_out(c, split, dims)
}

/// `select_scatter(self, src, dim, index)`: `src` (self without `dim`)
/// given `dim` back as size 1, written over position `index`.
fn select_scatter(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.fixed_sizes_of("self")?;
    let dim = c.dim("dim", sizes.len())?;
    let index = index_along(c, "index", &sizes, dim)?;
    let src = c.tensor("src")?;
    let mut shape = c.ty(src).shape.clone();
    if shape.len() + 1 != sizes.len() {
        return Err(c.bad(
            "src",
            format!(
                "{} is not self {sizes:?} without dimension {dim}",
                c.ty(src)
            ),
        ));
    }
    shape.insert(dim, Dim::Fixed(1));
    let src = view(c, src, shape)?;
    let input = c.tensor("self")?;
    let op = Op::SliceScatter(SliceScatter {
        input,
        src,
        dim,
        start: index,
        step: 1,
    });
    c.emit(op, &["out"])
}

/// `slice_scatter(self, src, dim, start, end, step)`: `src` written over
/// the slice `start:end:step`, whose length it must have.
fn slice_scatter(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.fixed_sizes_of("self")?;
    let dim = c.dim("dim", sizes.len())?;
    let size = sizes[dim];
    let start = clamp_index(c.optional_int("start")?.unwrap_or(0), size);
    let end = clamp_index(c.optional_int("end")?.unwrap_or(size), size);
    let step = step(c)?;
    let len = if end > start {
        ((end - start) as u64).div_ceil(step)
    } else {
        0
    };
    let src_sizes = c.fixed_sizes_of("src")?;
    if src_sizes.len() != sizes.len() || src_sizes[dim] as u64 != len {
        return Err(c.bad(
            "src",
            format!(
                "{src_sizes:?} does not have the {len} elements of the slice {start}:{end}:{step} along dimension {dim} of {sizes:?}"
            ),
        ));
    }
    let (input, src) = (c.tensor("self")?, c.tensor("src")?);
    let op = Op::SliceScatter(SliceScatter {
        input,
        src,
        dim,
        start: start as u64,
        step,
    });
    c.emit(op, &["out"])
}

/// Emits padding of the last `pad.len() / 2` dimensions of `self` (pairs
/// from the last dimension backwards), after checking that no dimension is
/// cropped below nothing and that `mode` can pad it.
fn emit_pad(
    c: &mut Call<'_, '_, '_>,
    argument: &str,
    pad: &[i64],
    mode: PadMode,
) -> Result<(), ImportError> {
    let sizes = c.sizes_of("self")?;
    let rank = sizes.len();
    if !pad.len().is_multiple_of(2) || pad.len() / 2 > rank {
        return Err(c.bad(
            argument,
            format!("{pad:?} is not a pair of paddings for each of at most {rank} dimensions"),
        ));
    }
    let (mut before, mut after) = (vec![0; rank], vec![0; rank]);
    for (pair, chunk) in pad.chunks(2).enumerate() {
        let dim = rank - 1 - pair;
        let size = sizes[dim];
        let (low, high) = (chunk[0], chunk[1]);
        let out = size.checked_add(low).and_then(|out| out.checked_add(high));
        let fits = out.is_some_and(|out| out >= 0)
            && match mode {
                PadMode::Constant(_) => true,
                PadMode::Reflect => low < size && high < size,
                PadMode::Replicate => size > 0 || out == Some(0),
            };
        if !fits {
            return Err(c.bad(
                argument,
                format!("{low} and {high} cannot pad dimension {dim} of size {size} of {sizes:?}"),
            ));
        }
        (before[dim], after[dim]) = (low, high);
    }
    let input = c.tensor("self")?;
    c.emit(
        Op::Pad(Pad {
            input,
            before,
            after,
            mode,
        }),
        &["out"],
    )
}

/// `constant_pad_nd(self, pad, value)`; negative padding crops.
fn constant_pad(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let pad = c.int_list("pad")?;
    let value = c.scalar("value")?;
    emit_pad(c, "pad", &pad, PadMode::Constant(value))
}

/// The padding of an `N`-d reflection or replication pad, of a tensor of
/// `N + 1` or `N + 2` dimensions.
fn mode_pad(c: &mut Call<'_, '_, '_>, mode: PadMode) -> Result<(), ImportError> {
    let padding = c.int_list("padding")?;
    let rank = c.rank_of("self")?;
    let spatial = padding.len() / 2;
    if rank != spatial + 1 && rank != spatial + 2 {
        return Err(c.bad(
            "self",
            format!(
                "has {rank} dimensions; a {spatial}-d pad takes {} or {}",
                spatial + 1,
                spatial + 2
            ),
        ));
    }
    emit_pad(c, "padding", &padding, mode)
}

fn reflection_pad(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    mode_pad(c, PadMode::Reflect)
}

fn replication_pad(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    mode_pad(c, PadMode::Replicate)
}

fn repeat(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let repeats = c.counts("repeats")?;
    let input = c.tensor("self")?;
    c.emit(Op::Repeat(Repeat { input, repeats }), &["out"])
}

/// `index_select(self, dim, index)`: advanced indexing of one dimension by
/// a 1-D index (a 0-D one seen as 1-D, and a 0-D `self` as 1-D), without
/// negative indices.
fn index_select(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let mut input = c.tensor("self")?;
    let dim = c.dim("dim", c.ty(input).rank().max(1))?;
    let mut index = c.tensor("index")?;
    if c.ty(index).rank() > 1 {
        return Err(c.bad(
            "index",
            format!("{} has more than one dimension", c.ty(index)),
        ));
    }
    if c.ty(index).rank() == 0 {
        index = view(c, index, vec![Dim::Fixed(1)])?;
    }
    if c.ty(input).rank() == 0 {
        input = view(c, input, vec![Dim::Fixed(1)])?;
    }
    let op = Index {
        input,
        indices: vec![index],
        dims: vec![dim],
        wrap: false,
    };
    if c.rank_of("out")? == c.ty(input).rank() {
        return c.emit(Op::Index(op), &["out"]);
    }
    // A 0-D self gives a 0-D result.
    let ty = c.ty(input).clone();
    let shape = c.ty(index).shape.clone();
    let gathered = c.new_value(TensorType { shape, ..ty });
    c.emit_to(Op::Index(op), &[TensorRef::Ir(gathered)])?;
    c.emit(Op::Reshape(Reshape { input: gathered }), &["out"])
}

fn cat(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let inputs = c.tensor_list("tensors")?;
    let rank = inputs.first().map_or(0, |&first| c.ty(first).rank());
    let dim = c.dim("dim", rank)?;
    c.emit(Op::Cat(Cat { inputs, dim }), &["out"])
}
