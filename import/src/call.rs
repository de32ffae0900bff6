//! ATen calls as typed values: a program's KernelCall and a Vulkan graph's
//! operator call both become an [`AtenCall`] (the operator's key and its
//! arguments, in schema order with the `out` tensors last), which the
//! operator table (`aten.rs`) turns into IR nodes through [`Call`]'s typed
//! accessors.

use ptec_frontend::ValueIndex;
use ptec_ir::{Op, Scalar, TensorType, ValueId};

use crate::error::{ImportError, Problem};
use crate::program::Importer;

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
    String(String),
    IntList(Vec<i64>),
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
            Argument::String(_) => "String",
            Argument::IntList(_) => "IntList",
            Argument::DoubleList(_) => "DoubleList",
            Argument::BoolList(_) => "BoolList",
            Argument::Tensor(_) => "Tensor",
            Argument::TensorList(_) => "TensorList",
            Argument::OptionalTensorList(_) => "OptionalTensorList",
        }
    }
}

/// An operator call's arguments, as an operator table entry reads them:
/// positional, in schema order, `out` tensors last.
pub(crate) struct Call<'c, 'm, 'a> {
    pub(crate) importer: &'c mut Importer<'m, 'a>,
    pub(crate) args: &'c [Argument],
}

impl Call<'_, '_, '_> {
    fn argument(&self, position: usize) -> Result<&Argument, ImportError> {
        self.args.get(position).ok_or_else(|| {
            self.importer.invalid(Problem::MissingArgument {
                position,
                given: self.args.len(),
            })
        })
    }

    fn kind_error(&self, position: usize, expected: &'static str) -> ImportError {
        let found = self.argument(position).map_or("nothing", Argument::kind);
        self.importer.invalid(Problem::ArgumentKind {
            position,
            expected,
            found,
        })
    }

    pub(crate) fn invalid(&self, problem: impl Into<String>) -> ImportError {
        self.importer.invalid(Problem::Invalid(problem.into()))
    }

    fn tensor_ref(&self, position: usize) -> Result<TensorRef, ImportError> {
        match self.argument(position)? {
            Argument::Tensor(tensor) => Ok(*tensor),
            _ => Err(self.kind_error(position, "a tensor")),
        }
    }

    /// A tensor argument, read.
    pub(crate) fn tensor(&mut self, position: usize) -> Result<ValueId, ImportError> {
        let tensor = self.tensor_ref(position)?;
        self.importer.read(tensor)
    }

    /// An optional tensor argument (None is a Null value).
    pub(crate) fn optional_tensor(
        &mut self,
        position: usize,
    ) -> Result<Option<ValueId>, ImportError> {
        match self.argument(position)? {
            Argument::Null => Ok(None),
            _ => self.tensor(position).map(Some),
        }
    }

    /// The tensors of a TensorList argument, read.
    pub(crate) fn tensor_list(&mut self, position: usize) -> Result<Vec<ValueId>, ImportError> {
        self.tensor_list_refs(position)?
            .into_iter()
            .map(|tensor| self.importer.read(tensor))
            .collect()
    }

    /// The tensors of a TensorList argument, unread (outputs).
    pub(crate) fn tensor_list_refs(&self, position: usize) -> Result<Vec<TensorRef>, ImportError> {
        match self.argument(position)? {
            Argument::TensorList(items) => Ok(items.clone()),
            _ => Err(self.kind_error(position, "a tensor list")),
        }
    }

    pub(crate) fn int(&self, position: usize) -> Result<i64, ImportError> {
        match self.argument(position)? {
            Argument::Int(value) => Ok(*value),
            _ => Err(self.kind_error(position, "an Int")),
        }
    }

    pub(crate) fn optional_int(&self, position: usize) -> Result<Option<i64>, ImportError> {
        match self.argument(position)? {
            Argument::Null => Ok(None),
            _ => self.int(position).map(Some),
        }
    }

    pub(crate) fn bool(&self, position: usize) -> Result<bool, ImportError> {
        match self.argument(position)? {
            Argument::Bool(value) => Ok(*value),
            _ => Err(self.kind_error(position, "a Bool")),
        }
    }

    pub(crate) fn double(&self, position: usize) -> Result<f64, ImportError> {
        match self.argument(position)? {
            Argument::Double(value) => Ok(*value),
            Argument::Int(value) => Ok(*value as f64),
            _ => Err(self.kind_error(position, "a Double")),
        }
    }

    pub(crate) fn string(&self, position: usize) -> Result<String, ImportError> {
        match self.argument(position)? {
            Argument::String(value) => Ok(value.clone()),
            _ => Err(self.kind_error(position, "a String")),
        }
    }

    pub(crate) fn optional_string(&self, position: usize) -> Result<Option<String>, ImportError> {
        match self.argument(position)? {
            Argument::Null => Ok(None),
            _ => self.string(position).map(Some),
        }
    }

    pub(crate) fn scalar(&self, position: usize) -> Result<Scalar, ImportError> {
        match self.argument(position)? {
            Argument::Int(value) => Ok(Scalar::Int(*value)),
            Argument::Double(value) => Ok(Scalar::Float(*value)),
            Argument::Bool(value) => Ok(Scalar::Bool(*value)),
            _ => Err(self.kind_error(position, "a Scalar")),
        }
    }

    pub(crate) fn optional_scalar(&self, position: usize) -> Result<Option<Scalar>, ImportError> {
        match self.argument(position)? {
            Argument::Null => Ok(None),
            _ => self.scalar(position).map(Some),
        }
    }

    pub(crate) fn int_list(&self, position: usize) -> Result<Vec<i64>, ImportError> {
        match self.argument(position)? {
            Argument::IntList(items) => Ok(items.clone()),
            _ => Err(self.kind_error(position, "an IntList")),
        }
    }

    pub(crate) fn optional_int_list(
        &self,
        position: usize,
    ) -> Result<Option<Vec<i64>>, ImportError> {
        match self.argument(position)? {
            Argument::Null => Ok(None),
            _ => self.int_list(position).map(Some),
        }
    }

    /// The type of an IR value.
    pub(crate) fn ty(&self, id: ValueId) -> &TensorType {
        &self.importer.graph.value(id).ty
    }

    /// The sizes a tensor argument declares (upper bounds of dynamic ones),
    /// before it is read.
    pub(crate) fn sizes_of(&self, position: usize) -> Result<Vec<i64>, ImportError> {
        let tensor = self.tensor_ref(position)?;
        self.importer.declared_sizes(tensor)
    }

    /// The rank of a tensor argument, before it is read.
    pub(crate) fn rank_of(&self, position: usize) -> Result<usize, ImportError> {
        self.sizes_of(position).map(|sizes| sizes.len())
    }

    /// Emits `op`, writing the tensor arguments at `outputs`. The op's
    /// shape rule settles symbolic dimensions of the outputs.
    pub(crate) fn emit(&mut self, op: Op, outputs: &[usize]) -> Result<(), ImportError> {
        let outputs = outputs
            .iter()
            .map(|&position| self.tensor_ref(position))
            .collect::<Result<Vec<_>, _>>()?;
        self.emit_to(op, &outputs)
    }

    /// Emits `op`, writing the tensors `outputs`.
    pub(crate) fn emit_to(&mut self, op: Op, outputs: &[TensorRef]) -> Result<(), ImportError> {
        let expected = self.importer.expected_shapes(&op, outputs.len())?;
        let mut written = Vec::with_capacity(outputs.len());
        for (slot, &output) in outputs.iter().enumerate() {
            let inferred = match expected.get(slot) {
                Some(ptec_ir::ops::Expected::Shape(shape)) => Some(shape.as_slice()),
                _ => None,
            };
            written.push(
                self.importer
                    .write(output, inferred, op.def().name(), slot)?,
            );
        }
        self.importer.push(op, written);
        Ok(())
    }

    /// Emits `op` writing argument `target` in place (`copy_` into a
    /// buffer): the written value is the argument itself.
    pub(crate) fn emit_into(&mut self, op: Op, target: usize) -> Result<(), ImportError> {
        let target = self.tensor_ref(target)?;
        let id = self.importer.existing_or_read(target)?;
        self.importer.push(op, vec![id]);
        Ok(())
    }
}
