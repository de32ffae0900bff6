//! ATen calls as typed values: a program's KernelCall and a Vulkan graph's
//! operator call both become an [`AtenCall`]-like list of [`Argument`]s
//! (the operator's arguments in schema order, the `out` tensors last),
//! checked against the operator's schema, which the operator table
//! (`aten.rs`) then turns into IR nodes through [`Call`]'s accessors, by
//! argument name.

use std::borrow::Cow;

use ptec_frontend::ValueIndex;
use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func};
use ptec_ir::symbolic::{Poly, ScalarKind, SymOp, SymbolDef, SymbolError, Term};
use ptec_ir::{DType, Dim, Op, Scalar, SymbolId, TensorType, ValueData, ValueId};

use crate::aten::{self, Entry};
use crate::error::{ImportError, Problem};
use crate::program::Importer;
use crate::schema::{Param, Schema};

/// Where the importer finds a tensor argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TensorRef {
    /// A tensor value of the method.
    Method(ValueIndex),
    /// A value of the IR graph already: a delegate graph's tensor, or a
    /// temporary of a composition. Read, it must have been written;
    /// written, it is the output.
    Ir(ValueId),
}

/// One argument of an ATen call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Argument {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    /// A scalar an earlier instruction computes at run time.
    Sym(SymbolId, ScalarKind),
    String(String),
    /// Ints, each a constant or a symbol.
    IntList(Vec<Term>),
    DoubleList(Vec<f64>),
    BoolList(Vec<bool>),
    Tensor(TensorRef),
    TensorList(Vec<TensorRef>),
    OptionalTensorList(Vec<Option<TensorRef>>),
}

impl Argument {
    /// The kind's name, as the program format's `KernelTypes` spells it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Argument::Null => "Null",
            Argument::Bool(_) => "Bool",
            Argument::Int(_) => "Int",
            Argument::Double(_) => "Double",
            Argument::Sym(_, ScalarKind::Int) => "Int (computed at run time)",
            Argument::Sym(_, ScalarKind::Bool) => "Bool (computed at run time)",
            Argument::Sym(_, ScalarKind::Float) => "Double (computed at run time)",
            Argument::String(_) => "String",
            Argument::IntList(_) => "IntList",
            Argument::DoubleList(_) => "DoubleList",
            Argument::BoolList(_) => "BoolList",
            Argument::Tensor(_) => "Tensor",
            Argument::TensorList(_) => "TensorList",
            Argument::OptionalTensorList(_) => "OptionalTensorList",
        }
    }

    /// The tensors of a tensor or tensor-list argument.
    fn tensors(&self) -> Vec<TensorRef> {
        match self {
            Argument::Tensor(tensor) => vec![*tensor],
            Argument::TensorList(tensors) => tensors.clone(),
            _ => Vec::new(),
        }
    }
}

/// Imports a call of the table's operator `key` with `args` (its schema's
/// parameters, in order): checks them against the schema, then runs the
/// entry's rule.
pub(crate) fn import(
    importer: &mut Importer<'_, '_>,
    key: &str,
    args: &[Argument],
) -> Result<(), ImportError> {
    let entry = aten::entry(key)
        .ok_or_else(|| importer.contradiction(format!("operator {key} is not supported")))?;
    import_with_result(importer, entry, args, &mut Returns::Nothing)
}

/// Imports a call of the table's operator `key`, which returns a scalar
/// (`sym_size`, `SymInt` arithmetic), with `args` (its schema's
/// parameters, in order); returns that scalar, a constant or a symbol.
pub(crate) fn import_scalar(
    importer: &mut Importer<'_, '_>,
    key: &str,
    args: &[Argument],
) -> Result<Term, ImportError> {
    let entry = aten::entry(key)
        .ok_or_else(|| importer.contradiction(format!("operator {key} is not supported")))?;
    let mut result = Returns::Scalar(None);
    import_with_result(importer, entry, args, &mut result)?;
    match result {
        Returns::Scalar(Some(term)) => Ok(term),
        _ => Err(importer.contradiction(format!("operator {key} returns no scalar"))),
    }
}

/// Imports a program's KernelCall: its arguments are the schema's
/// parameters then the call's result: the tensors it writes for an out
/// variant, the value it returns otherwise (a scalar an `executorch_prim`
/// operator computes, the tensor `et_view` makes), nothing for a schema
/// that returns nothing.
pub(crate) fn import_kernel_call(
    importer: &mut Importer<'_, '_>,
    key: &str,
    args: &[ValueIndex],
    arguments: &[Argument],
) -> Result<(), ImportError> {
    let entry: &Entry = aten::entry(key)
        .ok_or_else(|| importer.contradiction(format!("operator {key} is not supported")))?;
    let schema = &entry.schema;
    let count = schema.params.len();
    if schema.returns.is_empty() && arguments.len() == count {
        return import_with_result(importer, entry, arguments, &mut Returns::Nothing);
    }
    let Some((result, params)) = arguments
        .split_last()
        .filter(|_| arguments.len() == count + 1)
    else {
        return Err(importer.invalid(Problem::ArgumentCount {
            operator: schema.key,
            expected: count + 1,
            given: arguments.len(),
        }));
    };
    // The tensors the call returns: those it writes, less those it only
    // updates in place (as a cache) where the results name the alias sets
    // they are.
    let named = schema.returns.iter().any(|result| result.alias.is_some());
    let returned = |param: &Param| {
        param.ty.written
            && (!named
                || schema
                    .returns
                    .iter()
                    .any(|result| result.alias == param.ty.alias))
    };
    let written: Vec<TensorRef> = schema
        .params
        .iter()
        .zip(params)
        .filter(|(param, _)| returned(param))
        .flat_map(|(_, arg)| arg.tensors())
        .collect();
    let returns_own = written.is_empty() && !schema.returns.is_empty();
    if !returns_own && result.tensors() != written {
        return Err(importer.invalid(Problem::Result {
            operator: schema.key,
            found: result.kind(),
        }));
    }
    let mut result = if returns_own {
        Returns::Method(args[count])
    } else {
        Returns::Nothing
    };
    import_with_result(importer, entry, params, &mut result)
}

/// Checks `args` (their count and kinds) against the entry's schema and
/// runs its rule; `result` is where the value the call returns goes, when
/// it returns one of its own.
fn import_with_result(
    importer: &mut Importer<'_, '_>,
    entry: &'static Entry,
    args: &[Argument],
    result: &mut Returns,
) -> Result<(), ImportError> {
    let schema = &entry.schema;
    if args.len() != schema.params.len() {
        return Err(importer.invalid(Problem::ArgumentCount {
            operator: schema.key,
            expected: schema.params.len(),
            given: args.len(),
        }));
    }
    if let Some((position, param, found)) = schema.mismatch(args) {
        return Err(importer.invalid(Problem::ArgumentKind {
            name: param.name,
            position,
            expected: param.ty.to_string(),
            found: found.kind(),
        }));
    }
    let mut call = Call {
        importer,
        schema,
        args,
        result,
    };
    aten::import_call(entry, &mut call)
}

/// An operator call's arguments, as an operator table entry reads them: by
/// their names in the operator's schema.
pub(crate) struct Call<'c, 'm, 'a> {
    pub(crate) importer: &'c mut Importer<'m, 'a>,
    schema: &'static Schema,
    args: &'c [Argument],
    /// Where the value the call returns goes, for an operator that returns
    /// a value of its own (not its out arguments).
    result: &'c mut Returns,
}

/// Where the value a call returns goes.
pub(crate) enum Returns {
    /// The call returns nothing of its own (its out arguments are its
    /// results).
    Nothing,
    /// A value of the method.
    Method(ValueIndex),
    /// A scalar the caller reads once the call is imported (a Vulkan
    /// graph's `SymInt`).
    Scalar(Option<Term>),
}

impl Call<'_, '_, '_> {
    /// The argument `name`: its position, its parameter, its value.
    fn at(&self, name: &str) -> Result<(usize, &'static Param, &Argument), ImportError> {
        let position = self.schema.position(name).ok_or_else(|| {
            self.invalid(format!(
                "ptec's rule for {} reads an argument `{name}` its schema lacks",
                self.schema.key
            ))
        })?;
        Ok((
            position,
            &self.schema.params[position],
            &self.args[position],
        ))
    }

    fn argument(&self, name: &str) -> Result<(&'static Param, &Argument), ImportError> {
        self.at(name).map(|(_, param, argument)| (param, argument))
    }

    fn kind_error(&self, name: &str, expected: &'static str) -> ImportError {
        match self.at(name) {
            Ok((position, param, found)) => self.importer.invalid(Problem::ArgumentKind {
                name: param.name,
                position,
                expected: expected.to_string(),
                found: found.kind(),
            }),
            Err(error) => error,
        }
    }

    /// A problem of the call as a whole.
    pub(crate) fn invalid(&self, problem: impl Into<String>) -> ImportError {
        self.importer.invalid(Problem::Invalid(problem.into()))
    }

    /// A problem with the argument `name`.
    pub(crate) fn bad(&self, name: &str, why: impl Into<String>) -> ImportError {
        match self.argument(name) {
            Ok((param, _)) => self.importer.invalid(Problem::Argument {
                name: param.name,
                why: why.into(),
            }),
            Err(error) => error,
        }
    }

    /// A tensor argument the call writes, unread.
    pub(crate) fn output(&self, name: &str) -> Result<TensorRef, ImportError> {
        self.tensor_ref(name)
    }

    fn tensor_ref(&self, name: &str) -> Result<TensorRef, ImportError> {
        match self.argument(name)?.1 {
            Argument::Tensor(tensor) => Ok(*tensor),
            _ => Err(self.kind_error(name, "a tensor")),
        }
    }

    /// A tensor argument, read.
    pub(crate) fn tensor(&mut self, name: &str) -> Result<ValueId, ImportError> {
        let tensor = self.tensor_ref(name)?;
        self.importer.read(tensor)
    }

    /// An optional tensor argument (None is a Null value).
    pub(crate) fn optional_tensor(&mut self, name: &str) -> Result<Option<ValueId>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            _ => self.tensor(name).map(Some),
        }
    }

    /// The tensors of a TensorList argument, read.
    pub(crate) fn tensor_list(&mut self, name: &str) -> Result<Vec<ValueId>, ImportError> {
        self.tensor_list_refs(name)?
            .into_iter()
            .map(|tensor| self.importer.read(tensor))
            .collect()
    }

    /// The tensors of an optional-tensor list argument (`Tensor?[]`), read,
    /// None where the list holds none.
    pub(crate) fn optional_tensor_list(
        &mut self,
        name: &str,
    ) -> Result<Vec<Option<ValueId>>, ImportError> {
        let items = match self.argument(name)?.1 {
            Argument::OptionalTensorList(items) => items.clone(),
            Argument::TensorList(items) => items.iter().copied().map(Some).collect(),
            _ => return Err(self.kind_error(name, "a list of optional tensors")),
        };
        items
            .into_iter()
            .map(|item| item.map(|tensor| self.importer.read(tensor)).transpose())
            .collect()
    }

    /// The tensors of a TensorList argument, unread (outputs).
    pub(crate) fn tensor_list_refs(&self, name: &str) -> Result<Vec<TensorRef>, ImportError> {
        match self.argument(name)?.1 {
            Argument::TensorList(items) => Ok(items.clone()),
            _ => Err(self.kind_error(name, "a tensor list")),
        }
    }

    pub(crate) fn int(&self, name: &str) -> Result<i64, ImportError> {
        match self.argument(name)?.1 {
            Argument::Int(value) => Ok(*value),
            Argument::Sym(..) => Err(self.computed(name)),
            _ => Err(self.kind_error(name, "an Int")),
        }
    }

    /// The error for an argument computed at run time where ptec needs its
    /// value when compiling.
    fn computed(&self, name: &str) -> ImportError {
        self.bad(
            name,
            "is computed at run time, and ptec needs its value when compiling",
        )
    }

    /// A scalar argument that may be computed at run time.
    pub(crate) fn term(&self, name: &str) -> Result<Term, ImportError> {
        match self.argument(name)?.1 {
            Argument::Sym(symbol, _) => Ok(Term::Symbol(*symbol)),
            _ => self.scalar(name).map(Term::Const),
        }
    }

    /// A Scalar argument a run computes (a `SymInt`, `SymFloat` or
    /// `SymBool`), as a 0-dim tensor of int64, float64 or bool that holds
    /// it, which type promotion ranks as it ranks a Python number; `None`
    /// for one known when compiling.
    pub(crate) fn computed_scalar(&mut self, name: &str) -> Result<Option<ValueId>, ImportError> {
        let &Argument::Sym(symbol, _) = self.argument(name)?.1 else {
            return Ok(None);
        };
        let value = Term::Symbol(symbol);
        let dtype = match self.kind(value)? {
            ScalarKind::Int => DType::I64,
            ScalarKind::Float => DType::F64,
            ScalarKind::Bool => DType::Bool,
        };
        let op = Op::Full(ptec_ir::ops::creation::Full { value });
        Ok(Some(self.temporary_of(
            op,
            TensorType::contiguous(dtype, Vec::new()),
        )))
    }

    /// An optional scalar argument that may be computed at run time.
    pub(crate) fn optional_term(&self, name: &str) -> Result<Option<Term>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            _ => self.term(name).map(Some),
        }
    }

    /// An IntList argument whose items may be computed at run time.
    pub(crate) fn terms(&self, name: &str) -> Result<Vec<Term>, ImportError> {
        match self.argument(name)?.1 {
            Argument::IntList(items) => Ok(items.clone()),
            _ => Err(self.kind_error(name, "an IntList")),
        }
    }

    pub(crate) fn optional_int(&self, name: &str) -> Result<Option<i64>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            _ => self.int(name).map(Some),
        }
    }

    pub(crate) fn bool(&self, name: &str) -> Result<bool, ImportError> {
        match self.argument(name)?.1 {
            Argument::Bool(value) => Ok(*value),
            _ => Err(self.kind_error(name, "a Bool")),
        }
    }

    pub(crate) fn optional_bool(&self, name: &str) -> Result<Option<bool>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            _ => self.bool(name).map(Some),
        }
    }

    pub(crate) fn double(&self, name: &str) -> Result<f64, ImportError> {
        match self.argument(name)?.1 {
            Argument::Double(value) => Ok(*value),
            Argument::Int(value) => Ok(*value as f64),
            Argument::Sym(..) => Err(self.computed(name)),
            _ => Err(self.kind_error(name, "a Double")),
        }
    }

    pub(crate) fn optional_double(&self, name: &str) -> Result<Option<f64>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            _ => self.double(name).map(Some),
        }
    }

    pub(crate) fn string(&self, name: &str) -> Result<String, ImportError> {
        match self.argument(name)?.1 {
            Argument::String(value) => Ok(value.clone()),
            _ => Err(self.kind_error(name, "a String")),
        }
    }

    pub(crate) fn optional_string(&self, name: &str) -> Result<Option<String>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            _ => self.string(name).map(Some),
        }
    }

    pub(crate) fn scalar(&self, name: &str) -> Result<Scalar, ImportError> {
        match self.argument(name)?.1 {
            Argument::Int(value) => Ok(Scalar::Int(*value)),
            Argument::Double(value) => Ok(Scalar::Float(*value)),
            Argument::Bool(value) => Ok(Scalar::Bool(*value)),
            Argument::Sym(..) => Err(self.computed(name)),
            _ => Err(self.kind_error(name, "a Scalar")),
        }
    }

    pub(crate) fn optional_scalar(&self, name: &str) -> Result<Option<Scalar>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            _ => self.scalar(name).map(Some),
        }
    }

    pub(crate) fn int_list(&self, name: &str) -> Result<Vec<i64>, ImportError> {
        self.terms(name)?
            .into_iter()
            .map(|item| match item {
                Term::Const(Scalar::Int(value)) => Ok(value),
                _ => Err(self.computed(name)),
            })
            .collect()
    }

    pub(crate) fn optional_int_list(&self, name: &str) -> Result<Option<Vec<i64>>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            _ => self.int_list(name).map(Some),
        }
    }

    pub(crate) fn optional_double_list(&self, name: &str) -> Result<Option<Vec<f64>>, ImportError> {
        match self.argument(name)?.1 {
            Argument::Null => Ok(None),
            Argument::DoubleList(values) => Ok(Some(values.clone())),
            _ => Err(self.kind_error(name, "a DoubleList")),
        }
    }

    pub(crate) fn bool_list(&self, name: &str) -> Result<Vec<bool>, ImportError> {
        match self.argument(name)?.1 {
            Argument::BoolList(items) => Ok(items.clone()),
            _ => Err(self.kind_error(name, "a BoolList")),
        }
    }

    /// A non-negative Int argument.
    pub(crate) fn count(&self, name: &str) -> Result<u64, ImportError> {
        let value = self.int(name)?;
        u64::try_from(value).map_err(|_| self.bad(name, format!("{value} must not be negative")))
    }

    /// An IntList argument of non-negative values.
    pub(crate) fn counts(&self, name: &str) -> Result<Vec<u64>, ImportError> {
        self.int_list(name)?
            .into_iter()
            .map(|value| {
                u64::try_from(value)
                    .map_err(|_| self.bad(name, format!("{value} must not be negative")))
            })
            .collect()
    }

    /// A dimension argument of a tensor of rank `rank`, negative ones
    /// counted from the end.
    pub(crate) fn dim(&self, name: &str, rank: usize) -> Result<usize, ImportError> {
        let dim = self.int(name)?;
        self.axis(name, dim, rank)
    }

    /// A list of dimensions of a tensor of rank `rank`.
    pub(crate) fn dims(&self, name: &str, rank: usize) -> Result<Vec<usize>, ImportError> {
        self.int_list(name)?
            .into_iter()
            .map(|dim| self.axis(name, dim, rank))
            .collect()
    }

    /// The dimension argument `name` of a reduction over a tensor of rank
    /// `rank`: `None` for a 0-D tensor, whose one element PyTorch reduces
    /// along dimension 0 or -1 (`maybe_wrap_dim`'s `wrap_scalar`).
    pub(crate) fn reduced_dim(
        &self,
        name: &str,
        rank: usize,
    ) -> Result<Option<usize>, ImportError> {
        let dim = self.dim(name, rank.max(1))?;
        Ok((rank > 0).then_some(dim))
    }

    /// The dimensions a reduction over a tensor of rank `rank` reduces: those
    /// of the optional IntList argument `name`, every one when it is None or
    /// empty. A 0-D tensor takes 0 and -1, reducing nothing; a dimension
    /// named twice is an error, as in PyTorch.
    pub(crate) fn reduced_dims(&self, name: &str, rank: usize) -> Result<Vec<usize>, ImportError> {
        let list = match self.optional_int_list(name)? {
            Some(list) if !list.is_empty() => list,
            _ => return Ok((0..rank).collect()),
        };
        let mut dims = Vec::with_capacity(list.len());
        for dim in list {
            let axis = self.axis(name, dim, rank.max(1))?;
            if dims.contains(&axis) {
                return Err(self.bad(name, format!("names dimension {axis} more than once")));
            }
            dims.push(axis);
        }
        if rank == 0 {
            dims.clear();
        }
        Ok(dims)
    }

    /// An optional ScalarType argument: the element type it names.
    pub(crate) fn optional_dtype(&self, name: &str) -> Result<Option<DType>, ImportError> {
        let Some(code) = self.optional_int(name)? else {
            return Ok(None);
        };
        i8::try_from(code)
            .ok()
            .and_then(ptec_frontend::ScalarType::from_code)
            .and_then(crate::program::dtype_of)
            .map(Some)
            .ok_or_else(|| self.bad(name, format!("{code} is not an element type ptec knows")))
    }

    /// The optional ScalarType argument `name`, which when given must be
    /// the element type of the tensor argument `out` (the result has the
    /// type the call requests, as ATen's out variants require).
    pub(crate) fn requested_dtype(
        &self,
        name: &str,
        out: &str,
    ) -> Result<Option<DType>, ImportError> {
        let requested = self.optional_dtype(name)?;
        let declared = self.declared_type_of(out)?.dtype;
        match requested {
            Some(dtype) if dtype != declared => Err(self.bad(
                name,
                format!(
                    "is {dtype}, but {out} is {declared}: the result must have the requested type"
                ),
            )),
            _ => Ok(requested),
        }
    }

    fn axis(&self, name: &str, dim: i64, rank: usize) -> Result<usize, ImportError> {
        let rank = rank as i64;
        let normalized = if dim < 0 { dim + rank } else { dim };
        if (0..rank).contains(&normalized) {
            Ok(normalized as usize)
        } else {
            Err(self.bad(
                name,
                format!("dimension {dim} is out of range for rank {rank}"),
            ))
        }
    }

    /// A two-element spatial argument (one element means both), or
    /// `default` when the list is empty.
    pub(crate) fn pair(&self, name: &str, default: u64) -> Result<[u64; 2], ImportError> {
        let values = self.spatial(name, 2, default)?;
        Ok([values[0], values[1]])
    }

    /// [`Call::pair`] for a size, a stride or a dilation, each of which
    /// must be positive.
    pub(crate) fn positive_pair(&self, name: &str, default: u64) -> Result<[u64; 2], ImportError> {
        let values = self.positive_spatial(name, 2, default)?;
        Ok([values[0], values[1]])
    }

    /// [`Call::spatial`] for sizes, strides or dilations, each of which
    /// must be positive.
    pub(crate) fn positive_spatial(
        &self,
        name: &str,
        rank: usize,
        default: u64,
    ) -> Result<Vec<u64>, ImportError> {
        let values = self.spatial(name, rank, default)?;
        if values.contains(&0) {
            return Err(self.bad(name, format!("{values:?}: each value must be positive")));
        }
        Ok(values)
    }

    /// A spatial argument of `rank` values (one element means all of them),
    /// or `default` for each when the list is empty.
    pub(crate) fn spatial(
        &self,
        name: &str,
        rank: usize,
        default: u64,
    ) -> Result<Vec<u64>, ImportError> {
        match self.counts(name)?.as_slice() {
            [] => Ok(vec![default; rank]),
            &[all] => Ok(vec![all; rank]),
            list if list.len() == rank => Ok(list.to_vec()),
            list => Err(self.bad(
                name,
                format!(
                    "has {} values; an op over {rank} spatial dimensions takes {rank}",
                    list.len()
                ),
            )),
        }
    }

    /// The type of an IR value.
    pub(crate) fn ty(&self, id: ValueId) -> &TensorType {
        &self.importer.graph.value(id).ty
    }

    /// The shape of an IR value, its symbols resolved.
    pub(crate) fn shape(&self, id: ValueId) -> Vec<Dim> {
        self.importer.symbols.resolve_shape(&self.ty(id).shape)
    }

    /// The term `def` is: a constant, or a symbol (made if new).
    pub(crate) fn sym(&mut self, def: SymbolDef) -> Result<Term, ImportError> {
        self.importer
            .symbols
            .intern(def)
            .map_err(|error| self.symbolic(error))
    }

    /// The term of an operation on terms.
    pub(crate) fn sym_op(&mut self, op: SymOp, args: Vec<Term>) -> Result<Term, ImportError> {
        self.sym(SymbolDef::Op(op, args))
    }

    /// The term of a polynomial.
    pub(crate) fn poly_term(&mut self, poly: Poly) -> Result<Term, ImportError> {
        self.sym(SymbolDef::Poly(poly))
    }

    /// An integer term as a polynomial.
    pub(crate) fn poly(&self, term: Term) -> Result<Poly, ImportError> {
        let term = self.importer.symbols.resolve_term(term);
        self.importer
            .symbols
            .table
            .poly(term)
            .map_err(|error| self.symbolic(error))
    }

    /// The kind of a term.
    pub(crate) fn kind(&self, term: Term) -> Result<ScalarKind, ImportError> {
        self.importer
            .symbols
            .table
            .kind(term)
            .map_err(|error| self.symbolic(error))
    }

    /// The number of elements of a shape, as a polynomial of its symbols.
    pub(crate) fn numel(&self, shape: &[Dim]) -> Result<Poly, ImportError> {
        self.importer
            .symbols
            .numel(shape)
            .map_err(|error| self.symbolic(error))
    }

    /// The number of elements of a shape as one dimension (a symbol when
    /// it is not fixed), for the argument `name` whose shape it is.
    pub(crate) fn numel_dim(&mut self, name: &str, shape: &[Dim]) -> Result<Dim, ImportError> {
        let count = self.importer.symbols.product(shape);
        let count = count.map_err(|error| self.symbolic(error))?;
        self.size(name, count)
    }

    fn symbolic(&self, error: SymbolError) -> ImportError {
        self.invalid(error.to_string())
    }

    /// An integer term of the argument `name` as a dimension: a size that
    /// is not negative, or a symbol (which generated code checks at run
    /// time).
    pub(crate) fn size(&self, name: &str, term: Term) -> Result<Dim, ImportError> {
        if self.kind(term)? != ScalarKind::Int {
            return Err(self.bad(name, format!("{term} is not an integer")));
        }
        term.as_dim()
            .ok_or_else(|| self.bad(name, format!("{term} is a negative size")))
    }

    /// Requires `condition` to hold at run time, with `message`.
    pub(crate) fn require(&mut self, condition: Term, message: String) -> Result<(), ImportError> {
        let origin = self.importer.symbols.origin.clone();
        self.importer
            .symbols
            .table
            .require(condition, format!("{origin}: {message}"))
            .map_err(|error| self.symbolic(error))
    }

    /// Records the scalar the call returns.
    pub(crate) fn define(&mut self, term: Term) -> Result<(), ImportError> {
        match self.result {
            Returns::Method(result) => self.importer.define_scalar(*result, term),
            Returns::Scalar(slot) => *slot = Some(term),
            Returns::Nothing => {
                return Err(self.invalid("a call whose result ptec cannot record"));
            }
        }
        Ok(())
    }

    /// The tensor the call returns (an operator that is not an out
    /// variant).
    pub(crate) fn returned(&self) -> Result<TensorRef, ImportError> {
        match &*self.result {
            Returns::Method(result) => Ok(TensorRef::Method(*result)),
            _ => Err(self.invalid("a call whose result ptec cannot record")),
        }
    }

    /// The fixed sizes of an IR value, or an error naming the argument
    /// `name` it comes from when a dimension is symbolic.
    pub(crate) fn fixed_sizes(&self, name: &str, id: ValueId) -> Result<Vec<u64>, ImportError> {
        let shape = self.shape(id);
        shape
            .iter()
            .map(|dim| dim.fixed())
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| {
                self.bad(
                name,
                format!(
                    "a tensor of symbolic shape {}, which ptec handles only with fixed sizes here",
                    ptec_ir::ops::show(&shape)
                ),
            )
            })
    }

    /// A new value the call computes on the way to its outputs, for an op
    /// emitted after it (`emit_to`).
    pub(crate) fn new_value(&mut self, ty: TensorType) -> ValueId {
        self.importer.graph.add_value(ValueData::computed(ty))
    }

    /// A new constant value holding `bytes`.
    pub(crate) fn constant(&mut self, ty: TensorType, bytes: Vec<u8>) -> ValueId {
        self.importer
            .graph
            .add_value(ValueData::constant(ty, Cow::Owned(bytes)))
    }

    /// The sizes a tensor argument declares (upper bounds of dynamic ones),
    /// before it is read.
    pub(crate) fn sizes_of(&self, name: &str) -> Result<Vec<i64>, ImportError> {
        let tensor = self.tensor_ref(name)?;
        self.importer.declared_sizes(tensor)
    }

    /// The sizes a tensor argument declares, all of which an op needs at
    /// compile time: one of symbolic shape is refused.
    pub(crate) fn fixed_sizes_of(&self, name: &str) -> Result<Vec<i64>, ImportError> {
        let declared = self.declared_type_of(name)?;
        if declared.fixed_shape().is_none() {
            return Err(self.bad(
                name,
                format!(
                    "has the symbolic shape {}, which ptec handles only with fixed sizes here",
                    ptec_ir::ops::show(&declared.shape)
                ),
            ));
        }
        self.sizes_of(name)
    }

    /// The type a tensor argument declares (symbolic dimensions as
    /// symbols), before it is read.
    pub(crate) fn declared_type_of(&self, name: &str) -> Result<TensorType, ImportError> {
        let tensor = self.tensor_ref(name)?;
        self.importer.declared_type(tensor)
    }

    /// Checks that `out` is declared with the element type of the tensor
    /// argument `input`: an op that copies or fills keeps it, and PyTorch
    /// requires its `out` to have it, as ExecuTorch's kernels do.
    pub(crate) fn keeps_dtype(&self, input: &str, out: &str) -> Result<(), ImportError> {
        let kept = self.declared_type_of(input)?.dtype;
        let declared = self.declared_type_of(out)?.dtype;
        if kept == declared {
            return Ok(());
        }
        Err(self.bad(
            out,
            format!("is {declared}, but `{input}` is {kept}: the op keeps its element type"),
        ))
    }

    /// Checks that the IntList argument `size` is the shape the tensor
    /// argument `out` declares: a creation op's size decides its result,
    /// which the program's declaration must not contradict. A symbolic
    /// dimension takes its size at run time, so only its presence is
    /// checked.
    pub(crate) fn check_size(&self, size: &str, out: &str) -> Result<(), ImportError> {
        let sizes = self.terms(size)?;
        let declared = self.declared_type_of(out)?.shape;
        // A size computed at run time is checked against `out` then.
        let agrees = sizes.len() == declared.len()
            && sizes
                .iter()
                .zip(&declared)
                .all(|(&size, dim)| match (size, dim) {
                    (Term::Const(Scalar::Int(size)), Dim::Fixed(fixed)) => {
                        i64::try_from(*fixed) == Ok(size)
                    }
                    (Term::Const(Scalar::Int(size)), Dim::Symbol(_)) => size >= 0,
                    (Term::Symbol(_), _) => true,
                    (Term::Const(_), _) => false,
                });
        if agrees {
            Ok(())
        } else {
            let sizes: Vec<String> = sizes.iter().map(Term::to_string).collect();
            Err(self.bad(
                size,
                format!(
                    "[{}] is not the shape {} that {out} declares",
                    sizes.join(", "),
                    ptec_ir::ops::show(&declared)
                ),
            ))
        }
    }

    /// The rank of a tensor argument, before it is read.
    pub(crate) fn rank_of(&self, name: &str) -> Result<usize, ImportError> {
        self.sizes_of(name).map(|sizes| sizes.len())
    }

    /// Emits `op`, writing the tensor arguments `outputs`. The op's shape
    /// rule settles symbolic dimensions of the outputs.
    pub(crate) fn emit(&mut self, op: Op, outputs: &[&str]) -> Result<(), ImportError> {
        let outputs = outputs
            .iter()
            .map(|&name| self.tensor_ref(name))
            .collect::<Result<Vec<_>, _>>()?;
        self.emit_to(op, &outputs)
    }

    /// Emits a copy of `input` (converted to the element type of the
    /// tensor argument `output`) into `output`, which has the input's shape:
    /// a copy broadcasts into its result, so the shape is given, not
    /// inferred, and settles the output's symbolic sizes.
    pub(crate) fn emit_copy(&mut self, input: ValueId, output: &str) -> Result<(), ImportError> {
        let output = self.output(output)?;
        let shape = self.ty(input).shape.clone();
        let copy = ptec_ir::ops::layout::Copy { input };
        self.emit_shaped(Op::Copy(copy), &[output], Some(shape))
    }

    /// Emits `input` as the tensor argument `output`, which has its shape
    /// and element type (checked: unlike a copy, this converts nothing).
    pub(crate) fn emit_as(&mut self, input: ValueId, output: &str) -> Result<(), ImportError> {
        let output = self.output(output)?;
        let shape = self.ty(input).shape.clone();
        let view = ptec_ir::ops::layout::Reshape { input };
        self.emit_shaped(Op::Reshape(view), &[output], Some(shape))
    }

    /// Emits `op`, writing the tensors `outputs`.
    pub(crate) fn emit_to(&mut self, op: Op, outputs: &[TensorRef]) -> Result<(), ImportError> {
        self.emit_shaped(op, outputs, None)
    }

    /// Emits `op`, writing the tensors `outputs`; `given` is the shape of
    /// the first output when the op takes it as given (a view, a fill, a
    /// slice) and the rule computed it.
    pub(crate) fn emit_shaped(
        &mut self,
        op: Op,
        outputs: &[TensorRef],
        given: Option<Vec<Dim>>,
    ) -> Result<(), ImportError> {
        let expected = self.importer.expected_shapes(&op, outputs.len())?;
        let mut written = Vec::with_capacity(outputs.len());
        for (slot, &output) in outputs.iter().enumerate() {
            let inferred = match (expected.get(slot), slot) {
                (Some(ptec_ir::ops::Expected::Shape(shape)), _) => Some(shape.as_slice()),
                (_, 0) => given.as_deref(),
                _ => None,
            };
            written.push(
                self.importer
                    .write(output, inferred, op.def().name(), slot)?,
            );
        }
        // Element types are checked here, where the error can name the call
        // (a float written into an integer tensor, bitwise operations of
        // floats); the verifier checks every op's rules again once the
        // graph's symbols have settled.
        self.importer.check_types(&op, &written)?;
        self.importer.push(op, written);
        Ok(())
    }

    /// Emits `op` into a new value of element type `dtype` (contiguous, of
    /// the shape the op's rule gives), for a composition of ops; returns
    /// the value.
    pub(crate) fn temporary(&mut self, op: Op, dtype: DType) -> Result<ValueId, ImportError> {
        let shape = match self.importer.expected_shapes(&op, 1)?.first() {
            Some(ptec_ir::ops::Expected::Shape(shape)) => shape.clone(),
            _ => {
                return Err(self.invalid(format!(
                    "ptec composes {} with an op whose result's shape its rule does not give",
                    self.schema.key
                )));
            }
        };
        Ok(self.temporary_of(op, TensorType::contiguous(dtype, shape)))
    }

    /// `func` of `inputs` into a new value of element type `dtype`: an
    /// elementwise step of a composition.
    pub(crate) fn elementwise(
        &mut self,
        func: Func,
        inputs: Vec<ValueId>,
        dtype: DType,
    ) -> Result<ValueId, ImportError> {
        self.temporary(Elementwise::op(func, inputs), dtype)
    }

    /// `a op b` into a new value of element type `dtype`.
    pub(crate) fn binary(
        &mut self,
        op: BinaryOp,
        a: ValueId,
        b: ValueId,
        dtype: DType,
    ) -> Result<ValueId, ImportError> {
        self.elementwise(Func::Binary { op, alpha: None }, vec![a, b], dtype)
    }

    /// `x op scalar` into a new value of element type `dtype`.
    pub(crate) fn with_scalar(
        &mut self,
        x: ValueId,
        op: BinaryOp,
        scalar: Scalar,
        dtype: DType,
    ) -> Result<ValueId, ImportError> {
        self.elementwise(Func::BinaryScalar { op, scalar }, vec![x], dtype)
    }

    /// Emits `op` into a new value of type `ty`, for a composition of ops
    /// whose result's shape the op takes as given (views, slices, fills).
    pub(crate) fn temporary_of(&mut self, op: Op, ty: TensorType) -> ValueId {
        let id = self.importer.graph.add_value(ValueData::computed(ty));
        self.importer.push(op, vec![id]);
        id
    }

    /// Emits `op` writing the tensor argument `target` in place (`copy_`
    /// into a buffer): the written value is the argument itself.
    pub(crate) fn emit_into(&mut self, op: Op, target: &str) -> Result<(), ImportError> {
        let target = self.tensor_ref(target)?;
        let id = self.importer.existing_or_read(target)?;
        self.importer.push(op, vec![id]);
        Ok(())
    }
}
