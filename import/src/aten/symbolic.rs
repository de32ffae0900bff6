//! Scalars computed at run time: the sizes of tensors (`sym_size`,
//! `sym_numel`), elements read from them (`_local_scalar_dense`) and the
//! `executorch_prim` operators that compute with `SymInt`s, `SymFloat`s and
//! `SymBool`s. Each call's result is a term (a constant when the operands
//! are, else a symbol of the graph) that later calls read as their argument.
//!
//! Integer division and remainder follow Python and PyTorch (`//` rounds
//! toward negative infinity, `%` takes the divisor's sign), where
//! ExecuTorch's `floordiv.int`, `mod.int` and `mod.Scalar` kernels use C's
//! truncating `/` and `%`; a zero divisor is an error, not undefined
//! behaviour.

use ptec_ir::ops::layout::Reshape;
use ptec_ir::symbolic::{ScalarKind, SymOp, Term, element_scalar};
use ptec_ir::{Op, OpKind, TensorType, ValueData};

use super::Operator;
use crate::call::{Call, TensorRef};
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::sym_size.int(Tensor self, int dim) -> SymInt",
        sym_size,
        &[],
    ),
    ("aten::sym_numel(Tensor self) -> SymInt", sym_numel, &[]),
    (
        "aten::_local_scalar_dense(Tensor self) -> Scalar",
        local_scalar_dense,
        &[OpKind::Reshape],
    ),
    (
        "executorch_prim::add.Scalar(Scalar a, Scalar b) -> Scalar",
        |c| arithmetic(c, Arithmetic::Add),
        &[],
    ),
    (
        "executorch_prim::sub.Scalar(Scalar a, Scalar b) -> Scalar",
        |c| arithmetic(c, Arithmetic::Sub),
        &[],
    ),
    (
        "executorch_prim::mul.Scalar(Scalar a, Scalar b) -> Scalar",
        |c| arithmetic(c, Arithmetic::Mul),
        &[],
    ),
    (
        "executorch_prim::floordiv.Scalar(Scalar a, Scalar b) -> Scalar",
        |c| integer(c, SymOp::FloorDiv),
        &[],
    ),
    (
        "executorch_prim::floordiv.int(SymInt a, SymInt b) -> SymInt",
        |c| integer(c, SymOp::FloorDiv),
        &[],
    ),
    (
        "executorch_prim::mod.Scalar(SymInt a, SymInt b) -> SymInt",
        |c| integer(c, SymOp::Mod),
        &[],
    ),
    (
        "executorch_prim::mod.int(SymInt a, SymInt b) -> SymInt",
        |c| integer(c, SymOp::Mod),
        &[],
    ),
    (
        "executorch_prim::truediv.Scalar(Scalar a, Scalar b) -> Scalar",
        truediv,
        &[],
    ),
    ("executorch_prim::neg.Scalar(Scalar a) -> Scalar", neg, &[]),
    (
        "executorch_prim::eq.Scalar(Scalar a, Scalar b) -> bool",
        |c| compare(c, SymOp::Eq, false),
        &[],
    ),
    (
        "executorch_prim::gt.Scalar(Scalar a, Scalar b) -> bool",
        |c| compare(c, SymOp::Lt, true),
        &[],
    ),
    (
        "executorch_prim::ge.Scalar(Scalar a, Scalar b) -> bool",
        |c| compare(c, SymOp::Le, true),
        &[],
    ),
    (
        "executorch_prim::lt.Scalar(Scalar a, Scalar b) -> bool",
        |c| compare(c, SymOp::Lt, false),
        &[],
    ),
    (
        "executorch_prim::le.Scalar(Scalar a, Scalar b) -> bool",
        |c| compare(c, SymOp::Le, false),
        &[],
    ),
    (
        "executorch_prim::sym_max.Scalar(Scalar a, Scalar b) -> Scalar",
        |c| compare(c, SymOp::Max, false),
        &[],
    ),
    (
        "executorch_prim::sym_min.Scalar(Scalar a, Scalar b) -> Scalar",
        |c| compare(c, SymOp::Min, false),
        &[],
    ),
    (
        "executorch_prim::sym_not.Scalar(Scalar a) -> bool",
        sym_not,
        &[],
    ),
    (
        "executorch_prim::sym_ite.Scalar(Scalar b, Scalar t, Scalar f) -> Scalar",
        sym_ite,
        &[],
    ),
    (
        "executorch_prim::sym_float.Scalar(Scalar a) -> Scalar",
        sym_float,
        &[],
    ),
    (
        "executorch_prim::sym_int.Scalar(Scalar a) -> Scalar",
        |c| to_int(c, SymOp::Trunc),
        &[],
    ),
    (
        "executorch_prim::ceil.Scalar(Scalar a) -> Scalar",
        |c| to_int(c, SymOp::Ceil),
        &[],
    ),
    (
        "executorch_prim::round.Scalar(Scalar a) -> Scalar",
        |c| to_int(c, SymOp::Round),
        &[],
    ),
    (
        "executorch_prim::trunc.Scalar(Scalar a) -> Scalar",
        |c| to_int(c, SymOp::Trunc),
        &[],
    ),
];

/// `sym_size(self, dim)`: a dimension's size.
fn sym_size(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let dim = c.dim("dim", shape.len())?;
    c.define(Term::from(shape[dim]))
}

/// `sym_numel(self)`: the number of elements.
fn sym_numel(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let shape = c.shape(input);
    let count = c.numel(&shape)?;
    let count = c.poly_term(count)?;
    c.define(count)
}

/// `_local_scalar_dense(self)` (`Tensor.item()`): the element of a
/// one-element tensor, read by the generated code once the tensor holds
/// it. The element is viewed as a 0-dim value of its own, so that what
/// the symbol reads is written at this point of the program and nowhere
/// else.
fn local_scalar_dense(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let ty = c.ty(input).clone();
    if ty
        .fixed_shape()
        .is_none_or(|shape| shape.iter().product::<u64>() != 1)
    {
        return Err(c.bad(
            "self",
            format!(
                "has shape {}, and .item() needs exactly one element",
                ptec_ir::ops::show(&ty.shape)
            ),
        ));
    }
    let element = c.importer.graph.add_value(ValueData::computed(TensorType {
        dtype: ty.dtype,
        shape: Vec::new(),
        dim_order: Vec::new(),
    }));
    c.emit_to(Op::Reshape(Reshape { input }), &[TensorRef::Ir(element)])?;
    let (kind, range) = element_scalar(ty.dtype);
    let origin = format!("{}: .item()", c.importer.symbols.origin);
    let symbol = c
        .importer
        .symbols
        .table
        .add_element(element, kind, range, u64::MAX, origin);
    c.define(Term::Symbol(symbol))
}

/// An operand as an int (a bool is 0 or 1, as Python counts it).
fn as_int(c: &mut Call<'_, '_, '_>, term: Term) -> Result<Term, ImportError> {
    match c.kind(term)? {
        ScalarKind::Bool => c.sym_op(SymOp::Ite, vec![term, Term::int(1), Term::int(0)]),
        _ => Ok(term),
    }
}

/// An operand as a float.
fn as_float(c: &mut Call<'_, '_, '_>, term: Term) -> Result<Term, ImportError> {
    match c.kind(term)? {
        ScalarKind::Float => Ok(term),
        _ => c.sym_op(SymOp::ToFloat, vec![term]),
    }
}

/// The operands `a` and `b` in one kind, as Python promotes them: floats
/// when either is, ints when either is (a bool counting as 0 or 1), else
/// bools.
fn promoted(c: &mut Call<'_, '_, '_>) -> Result<(Term, Term, ScalarKind), ImportError> {
    let (a, b) = (c.term("a")?, c.term("b")?);
    let kinds = (c.kind(a)?, c.kind(b)?);
    Ok(match kinds {
        (ScalarKind::Bool, ScalarKind::Bool) => (a, b, ScalarKind::Bool),
        (ScalarKind::Float, _) | (_, ScalarKind::Float) => {
            (as_float(c, a)?, as_float(c, b)?, ScalarKind::Float)
        }
        _ => (as_int(c, a)?, as_int(c, b)?, ScalarKind::Int),
    })
}

#[derive(Clone, Copy)]
enum Arithmetic {
    Add,
    Sub,
    Mul,
}

/// `a + b`, `a - b`, `a * b`: polynomials of ints, float operations of
/// floats.
fn arithmetic(c: &mut Call<'_, '_, '_>, op: Arithmetic) -> Result<(), ImportError> {
    let (a, b, kind) = promoted(c)?;
    let result = match kind {
        ScalarKind::Float => {
            let op = match op {
                Arithmetic::Add => SymOp::Add,
                Arithmetic::Sub => SymOp::Sub,
                Arithmetic::Mul => SymOp::Mul,
            };
            c.sym_op(op, vec![a, b])?
        }
        ScalarKind::Int | ScalarKind::Bool => {
            let (a, b) = (as_int(c, a)?, as_int(c, b)?);
            let (x, y) = (c.poly(a)?, c.poly(b)?);
            let poly = match op {
                Arithmetic::Add => x.add(&y),
                Arithmetic::Sub => x.sub(&y),
                Arithmetic::Mul => x.mul(&y),
            };
            c.poly_term(poly)?
        }
    };
    c.define(result)
}

/// Floor division and remainder, of ints.
fn integer(c: &mut Call<'_, '_, '_>, op: SymOp) -> Result<(), ImportError> {
    let (a, b, kind) = promoted(c)?;
    if kind == ScalarKind::Float {
        return Err(c.bad("a", format!("{} of floats is not supported", op.name())));
    }
    let (a, b) = (as_int(c, a)?, as_int(c, b)?);
    let result = c.sym_op(op, vec![a, b])?;
    c.define(result)
}

/// `a / b`, in floats.
fn truediv(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (a, b) = (c.term("a")?, c.term("b")?);
    let (a, b) = (as_float(c, a)?, as_float(c, b)?);
    let result = c.sym_op(SymOp::TrueDiv, vec![a, b])?;
    c.define(result)
}

fn neg(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let a = c.term("a")?;
    let result = match c.kind(a)? {
        ScalarKind::Float => c.sym_op(SymOp::Neg, vec![a])?,
        ScalarKind::Int | ScalarKind::Bool => {
            let a = as_int(c, a)?;
            let negated = c.poly(a)?.neg();
            c.poly_term(negated)?
        }
    };
    c.define(result)
}

/// A comparison or extreme of `a` and `b` (swapped when `swap`: `a > b` is
/// `b < a`).
fn compare(c: &mut Call<'_, '_, '_>, op: SymOp, swap: bool) -> Result<(), ImportError> {
    let (a, b, kind) = promoted(c)?;
    let ordered = matches!(op, SymOp::Lt | SymOp::Le | SymOp::Max | SymOp::Min);
    let (a, b) = if kind == ScalarKind::Bool && ordered {
        (as_int(c, a)?, as_int(c, b)?)
    } else {
        (a, b)
    };
    let args = if swap { vec![b, a] } else { vec![a, b] };
    let result = c.sym_op(op, args)?;
    c.define(result)
}

fn sym_not(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let a = c.term("a")?;
    if c.kind(a)? != ScalarKind::Bool {
        return Err(c.bad("a", format!("{a} is not a bool")));
    }
    let result = c.sym_op(SymOp::Not, vec![a])?;
    c.define(result)
}

/// `t if b else f`, `t` and `f` promoted to one kind.
fn sym_ite(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let condition = c.term("b")?;
    if c.kind(condition)? != ScalarKind::Bool {
        return Err(c.bad("b", format!("{condition} is not a bool")));
    }
    let (t, f) = (c.term("t")?, c.term("f")?);
    let (t, f) = match (c.kind(t)?, c.kind(f)?) {
        (a, b) if a == b => (t, f),
        (ScalarKind::Float, _) | (_, ScalarKind::Float) => (as_float(c, t)?, as_float(c, f)?),
        _ => (as_int(c, t)?, as_int(c, f)?),
    };
    let result = c.sym_op(SymOp::Ite, vec![condition, t, f])?;
    c.define(result)
}

fn sym_float(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let a = c.term("a")?;
    let result = as_float(c, a)?;
    c.define(result)
}

/// A float rounded to an int by `op`; an int (or bool) as it is.
fn to_int(c: &mut Call<'_, '_, '_>, op: SymOp) -> Result<(), ImportError> {
    let a = c.term("a")?;
    let result = match c.kind(a)? {
        ScalarKind::Float => c.sym_op(op, vec![a])?,
        ScalarKind::Int | ScalarKind::Bool => as_int(c, a)?,
    };
    c.define(result)
}
