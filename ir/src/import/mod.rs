//! Import: turns a frontend [`Method`] into a [`Graph`].
//!
//! Kernel calls become ops following ATen's out-variant convention (the
//! `out` arguments become the node's outputs); calls of XNNPACK delegates
//! become the ops of their graphs' nodes (`xnnpack.rs`), calls of Vulkan
//! delegates the ops of their operator calls (`vulkan.rs`); moves become copies; jumps
//! become labels and jumps; frees are dropped (memory is planned). Values live
//! where the file's memory plan puts them, one arena for all memory ids, so
//! that the file's instruction-less views (a tensor that shares its base's
//! bytes and has no producing instruction) are found: reading a value nothing
//! wrote, at the offset of a value something did write, is a view of it. A
//! value nothing wrote at an offset nothing wrote is state that persists
//! between calls (a mutable buffer).

mod aten;
mod symbols;
mod vulkan;
mod xnnpack;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use ptec_frontend::{
    DelegateIndex, DelegatePayload, Instruction, Method, ScalarType, ShapeDynamism, Tensor,
    TensorStorage, Value, ValueIndex,
};

use crate::graph::{Graph, ValueData, ValueId, ValueKind};
use crate::op::{LabelId, Op};
use crate::shape::{self, Expected};
use crate::types::{DType, Dim, Scalar, TensorType};
use symbols::Symbols;

/// Why a method cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Operators ptec does not implement, each with every instruction that
    /// calls it (`chain.instruction`).
    #[error("unsupported operators in method {method}: {}", list_unsupported(.operators))]
    UnsupportedOperators {
        method: String,
        operators: BTreeMap<String, Vec<String>>,
    },
    /// An XNNPACK node ptec cannot compile: its node type, or a value,
    /// attribute or flag it uses.
    #[error(
        "method {method}, instruction {at}: XNNPACK node {node} ({kind}, debug handle {debug_handle}): {what} is not supported"
    )]
    UnsupportedXnnpack {
        method: String,
        at: String,
        /// The node's index in the delegate's graph.
        node: usize,
        /// The node type, e.g. `XNNConvTranspose2d`.
        kind: String,
        debug_handle: u32,
        what: String,
    },
    /// An operator call of a Vulkan delegate ptec cannot compile: the
    /// operator, or a value it uses.
    #[error(
        "method {method}, instruction {at}: Vulkan operator call {node} ({name}): {what} is not supported"
    )]
    UnsupportedVulkan {
        method: String,
        at: String,
        /// The call's position in the delegate graph's chain.
        node: usize,
        /// The operator, e.g. `aten.add.Tensor`.
        name: String,
        what: String,
    },
    #[error("method {method}, instruction {at}: {problem}")]
    Invalid {
        method: String,
        at: String,
        problem: String,
    },
}

fn list_unsupported(operators: &BTreeMap<String, Vec<String>>) -> String {
    operators
        .iter()
        .map(|(name, places)| format!("{name} (instructions {})", places.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Bytes each arena region is aligned to.
const ARENA_ALIGNMENT: u64 = 64;

/// Imports `method` into a graph. Constant data stays borrowed from the
/// program's bytes.
pub fn import_method<'a>(method: &Method<'a>) -> Result<Graph<'a>, ImportError> {
    check_operators(method)?;
    let mut importer = Importer::new(method);
    importer.import()?;
    Ok(importer.finish())
}

/// Reports every kernel call of an operator ptec cannot import, at once.
fn check_operators(method: &Method<'_>) -> Result<(), ImportError> {
    let mut unsupported: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (chain_index, chain) in method.chains.iter().enumerate() {
        for (index, instruction) in chain.iter().enumerate() {
            if let Instruction::Kernel { operator, .. } = instruction {
                let key = method.operator(*operator).key();
                if !aten::is_supported(&key) {
                    unsupported
                        .entry(key)
                        .or_default()
                        .push(format!("{chain_index}.{index}"));
                }
            }
        }
    }
    if unsupported.is_empty() {
        Ok(())
    } else {
        Err(ImportError::UnsupportedOperators {
            method: method.name.clone(),
            operators: unsupported,
        })
    }
}

/// The state of one import.
struct Importer<'m, 'a> {
    method: &'m Method<'a>,
    graph: Graph<'a>,
    /// The IR value of each frontend value, once it has one.
    values: HashMap<ValueIndex, ValueId>,
    /// The value last written at each arena offset.
    written_at: HashMap<u64, ValueId>,
    /// Start of each memory id's region in the arena.
    region_base: Vec<u64>,
    /// Where the next unplanned tensor goes.
    arena_end: u64,
    symbols: Symbols,
    /// Values a delegate's graph adds to the method's (its own tensors,
    /// scalars and lists), numbered after them (`Method::appended_index`).
    appended: Vec<Value<'a>>,
    /// Where the current instruction is, for messages.
    at: String,
}

/// An instruction's operands, as the op table hands them over.
pub(crate) struct Call<'c, 'm, 'a> {
    importer: &'c mut Importer<'m, 'a>,
    args: &'c [ValueIndex],
}

impl<'m, 'a> Importer<'m, 'a> {
    fn new(method: &'m Method<'a>) -> Self {
        let mut region_base = Vec::with_capacity(method.non_const_buffer_sizes.len());
        let mut end = 0;
        for &size in &method.non_const_buffer_sizes {
            region_base.push(end);
            end = (end + size).next_multiple_of(ARENA_ALIGNMENT);
        }
        Importer {
            method,
            graph: Graph::new(method.name.clone()),
            values: HashMap::new(),
            written_at: HashMap::new(),
            region_base,
            arena_end: end,
            symbols: Symbols::default(),
            appended: Vec::new(),
            at: "inputs".to_string(),
        }
    }

    fn invalid(&self, problem: impl Into<String>) -> ImportError {
        ImportError::Invalid {
            method: self.method.name.clone(),
            at: self.at.clone(),
            problem: problem.into(),
        }
    }

    fn import(&mut self) -> Result<(), ImportError> {
        for (position, &input) in self.method.inputs.iter().enumerate() {
            let tensor = self.tensor(input)?.clone();
            let mut ty = self.file_type(&tensor)?;
            if tensor.dynamism == ShapeDynamism::DynamicBound {
                for (axis, dim) in ty.shape.iter_mut().enumerate() {
                    if let Dim::Fixed(bound) = *dim {
                        *dim = Dim::Symbol(self.symbols.add(
                            &mut self.graph,
                            bound,
                            format!("input {position} dim {axis}"),
                        ));
                    }
                }
            }
            let offset = self.place(&tensor, &ty)?;
            let id = self.graph.add_value(ValueData {
                ty,
                kind: ValueKind::Input(position),
                offset: Some(offset),
            });
            self.values.insert(input, id);
            self.written_at.insert(offset, id);
        }
        for (chain_index, chain) in self.method.chains.iter().enumerate() {
            let labels = jump_targets(chain);
            for (index, instruction) in chain.iter().enumerate() {
                self.at = format!("{chain_index}.{index}");
                if let Some(&label) = labels.get(&index) {
                    self.graph
                        .push_node(Op::Label(label), Vec::new(), Vec::new());
                }
                self.instruction(instruction, &labels)?;
            }
            if let Some(&label) = labels.get(&chain.len()) {
                self.graph
                    .push_node(Op::Label(label), Vec::new(), Vec::new());
            }
        }
        self.at = "outputs".to_string();
        let outputs = self
            .method
            .outputs
            .iter()
            .map(|&output| self.read(output))
            .collect::<Result<Vec<_>, _>>()?;
        self.graph.set_outputs(outputs);
        Ok(())
    }

    fn finish(mut self) -> Graph<'a> {
        self.graph.set_arena_size(self.arena_end);
        self.symbols.apply(&mut self.graph);
        self.graph
    }

    fn instruction(
        &mut self,
        instruction: &Instruction,
        labels: &HashMap<usize, LabelId>,
    ) -> Result<(), ImportError> {
        match instruction {
            Instruction::Kernel { operator, args } => {
                let key = self.method.operator(*operator).key();
                let mut call = Call {
                    importer: self,
                    args,
                };
                aten::import_call(&key, &mut call)
            }
            Instruction::Delegate { delegate, args } => self.delegate(*delegate, args),
            Instruction::Move { from, to } => {
                let source = self.read(*from)?;
                let destination = self.write(*to, None)?;
                self.push(Op::Copy, vec![source], vec![destination])
            }
            Instruction::JumpFalse {
                condition,
                destination,
            } => {
                let label = labels[destination];
                match self.value(*condition) {
                    Value::Bool(false) => {
                        self.graph
                            .push_node(Op::Jump(label), Vec::new(), Vec::new());
                    }
                    Value::Bool(true) => {}
                    Value::Tensor(_) => {
                        let condition = self.read(*condition)?;
                        self.graph
                            .push_node(Op::JumpIfFalse(label), vec![condition], Vec::new());
                    }
                    other => {
                        return Err(self.invalid(format!(
                            "a jump condition must be a Bool, not a {}",
                            other.kind()
                        )));
                    }
                }
                Ok(())
            }
            // Memory is planned ahead; freeing changes nothing.
            Instruction::Free { .. } => Ok(()),
        }
    }

    fn delegate(&mut self, index: DelegateIndex, args: &[ValueIndex]) -> Result<(), ImportError> {
        let delegate = self.method.delegate(index);
        match &delegate.payload {
            DelegatePayload::Xnnpack(graph) => xnnpack::import(self, graph, args),
            DelegatePayload::Vulkan(graph) => vulkan::import(self, graph, args),
            DelegatePayload::Opaque(_) => {
                Err(self.invalid(format!("backend {} is not one ptec can read", delegate.id)))
            }
        }
    }

    /// A value of the method, or one a delegate's graph added.
    fn value(&self, index: ValueIndex) -> &Value<'a> {
        match index.index().checked_sub(self.method.values.len()) {
            Some(appended) => &self.appended[appended],
            None => self.method.value(index),
        }
    }

    /// Adds a value of a delegate's graph to those of the method.
    fn append(&mut self, value: Value<'a>) -> Result<ValueIndex, ImportError> {
        let index = self
            .method
            .appended_index(self.appended.len())
            .ok_or_else(|| self.invalid("too many values"))?;
        self.appended.push(value);
        Ok(index)
    }

    fn tensor(&self, index: ValueIndex) -> Result<&Tensor<'a>, ImportError> {
        match self.value(index) {
            Value::Tensor(tensor) => Ok(tensor),
            other => Err(self.invalid(format!(
                "value {index} must be a tensor, not a {}",
                other.kind()
            ))),
        }
    }

    /// The type a tensor has in the file (upper-bound sizes).
    fn file_type(&self, tensor: &Tensor<'_>) -> Result<TensorType, ImportError> {
        if tensor.dynamism == ShapeDynamism::DynamicUnbound {
            return Err(self.invalid("tensors of unbounded dynamic shape are not supported"));
        }
        Ok(TensorType {
            dtype: dtype(tensor.dtype).ok_or_else(|| {
                self.invalid(format!("element type {} is not supported", tensor.dtype))
            })?,
            shape: tensor
                .sizes
                .iter()
                .map(|&size| Dim::Fixed(size as u64))
                .collect(),
            dim_order: tensor.dim_order.clone(),
        })
    }

    /// The arena offset of a non-constant tensor.
    fn place(&mut self, tensor: &Tensor<'_>, ty: &TensorType) -> Result<u64, ImportError> {
        match tensor.storage {
            TensorStorage::Planned {
                memory_id, offset, ..
            } => Ok(self.region_base[memory_id as usize] + offset),
            TensorStorage::Unplanned => Ok(self.allocate(ty)),
            TensorStorage::Constant(_) => Err(self.invalid("a constant tensor cannot be written")),
            TensorStorage::External { ref name } => {
                Err(self.invalid(format!("external tensor data ({name}) is not supported")))
            }
        }
    }

    /// Arena space of its own for a value the file does not plan, at the
    /// largest size its type allows.
    fn allocate(&mut self, ty: &TensorType) -> u64 {
        let offset = self.arena_end;
        let bytes = ty.max_bytes(|symbol| self.graph.bound(symbol));
        self.arena_end = (offset + bytes).next_multiple_of(ARENA_ALIGNMENT);
        offset
    }

    /// The IR value for reading frontend value `index`.
    fn read(&mut self, index: ValueIndex) -> Result<ValueId, ImportError> {
        if let Some(&id) = self.values.get(&index) {
            return Ok(id);
        }
        let tensor = self.tensor(index)?.clone();
        let ty = self.file_type(&tensor)?;
        let (kind, offset) = match tensor.storage {
            TensorStorage::Constant(bytes) => (ValueKind::Constant(Cow::Borrowed(bytes)), None),
            TensorStorage::Planned { initial, .. } => {
                let offset = self.place(&tensor, &ty)?;
                if let Some(&base) = self.written_at.get(&offset) {
                    return self.view_of(index, base, ty, offset);
                }
                (ValueKind::State { initial }, Some(offset))
            }
            _ => {
                return Err(
                    self.invalid(format!("value {index} is read before anything writes it"))
                );
            }
        };
        let id = self.graph.add_value(ValueData { ty, kind, offset });
        self.values.insert(index, id);
        if let Some(offset) = offset {
            self.written_at.insert(offset, id);
        }
        Ok(id)
    }

    /// An instruction-less view: `index` reinterprets the bytes of `base`.
    fn view_of(
        &mut self,
        index: ValueIndex,
        base: ValueId,
        ty: TensorType,
        offset: u64,
    ) -> Result<ValueId, ImportError> {
        let base_ty = self.graph.value(base).ty.clone();
        let ty = if base_ty.fixed_shape().is_some() {
            ty
        } else {
            // A view of a dynamic tensor keeps its symbolic dims where the
            // file's sizes match the bound.
            self.symbols.view_type(&self.graph, &base_ty, ty)
        };
        let id = self.graph.add_value(ValueData {
            ty,
            kind: ValueKind::Computed,
            offset: Some(offset),
        });
        self.values.insert(index, id);
        self.push(Op::Reshape, vec![base], vec![id])?;
        Ok(id)
    }

    /// The IR value for writing frontend value `index`; `inferred` is the
    /// shape the op's rule gives it, when the rule gives one.
    fn write(
        &mut self,
        index: ValueIndex,
        inferred: Option<&[Dim]>,
    ) -> Result<ValueId, ImportError> {
        if let Some(&id) = self.values.get(&index) {
            return Ok(id);
        }
        let tensor = self.tensor(index)?.clone();
        let mut ty = self.file_type(&tensor)?;
        if let Some(inferred) = inferred
            && inferred.len() == ty.rank()
            && tensor.dynamism == ShapeDynamism::DynamicBound
        {
            ty.shape = inferred.to_vec();
        }
        let offset = self.place(&tensor, &ty)?;
        let id = self.graph.add_value(ValueData {
            ty,
            kind: ValueKind::Computed,
            offset: Some(offset),
        });
        self.values.insert(index, id);
        Ok(id)
    }

    /// [`Importer::write`] for an output whose shape an op's rule gives as
    /// `inferred`, which is then equated with the shape the file declares
    /// (settling symbols); `what` names the output in messages.
    fn write_inferred(
        &mut self,
        index: ValueIndex,
        inferred: Option<&[Dim]>,
        what: &str,
    ) -> Result<ValueId, ImportError> {
        let id = self.write(index, inferred)?;
        if let Some(inferred) = inferred {
            let declared = self.graph.value(id).ty.shape.clone();
            self.symbols
                .equate_shapes(inferred, &declared)
                .map_err(|problem| self.invalid(format!("{what}: {problem}")))?;
        }
        Ok(id)
    }

    /// What `op`'s shape rule says of its outputs for `inputs` (settling
    /// symbols the rule equates).
    fn expected_shapes(
        &mut self,
        op: &Op,
        inputs: &[ValueId],
        output_count: usize,
    ) -> Result<Vec<Expected>, ImportError> {
        let input_shapes: Vec<Vec<Dim>> = inputs
            .iter()
            .map(|&input| {
                self.symbols
                    .resolve_shape(&self.graph.value(input).ty.shape)
            })
            .collect();
        let shape_refs: Vec<&[Dim]> = input_shapes.iter().map(Vec::as_slice).collect();
        shape::expected_shapes(op, &shape_refs, output_count, &mut self.symbols)
            .map_err(|problem| self.invalid(format!("{}: {problem}", op.name())))
    }

    /// Appends a node and records where its outputs were written (shape
    /// rules were applied by `Call::emit_values`, and the verifier checks
    /// them again).
    fn push(
        &mut self,
        op: Op,
        inputs: Vec<ValueId>,
        outputs: Vec<ValueId>,
    ) -> Result<(), ImportError> {
        for &output in &outputs {
            self.written_at
                .insert(self.graph.value(output).offset.unwrap_or(u64::MAX), output);
        }
        self.graph.push_node(op, inputs, outputs);
        Ok(())
    }
}

impl<'a> Call<'_, '_, 'a> {
    fn value(&self, position: usize) -> Result<&Value<'a>, ImportError> {
        let index = *self.args.get(position).ok_or_else(|| {
            self.importer.invalid(format!(
                "argument {position} is missing ({} given)",
                self.args.len()
            ))
        })?;
        Ok(self.importer.value(index))
    }

    pub(crate) fn invalid(&self, problem: impl Into<String>) -> ImportError {
        self.importer.invalid(problem)
    }

    fn kind_error(&self, position: usize, want: &str) -> ImportError {
        let found = self.value(position).map(Value::kind).unwrap_or("nothing");
        self.invalid(format!("argument {position} must be {want}, not {found}"))
    }

    /// A tensor argument, read.
    pub(crate) fn tensor(&mut self, position: usize) -> Result<ValueId, ImportError> {
        self.value(position)?;
        self.importer.read(self.args[position])
    }

    /// An optional tensor argument (None is a Null value).
    pub(crate) fn optional_tensor(
        &mut self,
        position: usize,
    ) -> Result<Option<ValueId>, ImportError> {
        match self.value(position)? {
            Value::Null => Ok(None),
            _ => self.tensor(position).map(Some),
        }
    }

    /// The tensors of a TensorList argument, read.
    pub(crate) fn tensor_list(&mut self, position: usize) -> Result<Vec<ValueId>, ImportError> {
        let Value::TensorList(items) = self.value(position)?.clone() else {
            return Err(self.kind_error(position, "a tensor list"));
        };
        items
            .into_iter()
            .map(|item| self.importer.read(item))
            .collect()
    }

    pub(crate) fn int(&self, position: usize) -> Result<i64, ImportError> {
        match self.value(position)? {
            Value::Int(value) => Ok(*value),
            _ => Err(self.kind_error(position, "an Int")),
        }
    }

    pub(crate) fn optional_int(&self, position: usize) -> Result<Option<i64>, ImportError> {
        match self.value(position)? {
            Value::Null => Ok(None),
            _ => self.int(position).map(Some),
        }
    }

    pub(crate) fn bool(&self, position: usize) -> Result<bool, ImportError> {
        match self.value(position)? {
            Value::Bool(value) => Ok(*value),
            _ => Err(self.kind_error(position, "a Bool")),
        }
    }

    pub(crate) fn double(&self, position: usize) -> Result<f64, ImportError> {
        match self.value(position)? {
            Value::Double(value) => Ok(*value),
            Value::Int(value) => Ok(*value as f64),
            _ => Err(self.kind_error(position, "a Double")),
        }
    }

    pub(crate) fn string(&self, position: usize) -> Result<String, ImportError> {
        match self.value(position)? {
            Value::String(value) => Ok(value.clone()),
            _ => Err(self.kind_error(position, "a String")),
        }
    }

    pub(crate) fn optional_string(&self, position: usize) -> Result<Option<String>, ImportError> {
        match self.value(position)? {
            Value::Null => Ok(None),
            _ => self.string(position).map(Some),
        }
    }

    pub(crate) fn scalar(&self, position: usize) -> Result<Scalar, ImportError> {
        match self.value(position)? {
            Value::Int(value) => Ok(Scalar::Int(*value)),
            Value::Double(value) => Ok(Scalar::Float(*value)),
            Value::Bool(value) => Ok(Scalar::Bool(*value)),
            _ => Err(self.kind_error(position, "a Scalar")),
        }
    }

    pub(crate) fn optional_scalar(&self, position: usize) -> Result<Option<Scalar>, ImportError> {
        match self.value(position)? {
            Value::Null => Ok(None),
            _ => self.scalar(position).map(Some),
        }
    }

    /// The integers of an IntList argument (the list holds Int values'
    /// indices; the reader checked they are Ints).
    pub(crate) fn int_list(&self, position: usize) -> Result<Vec<i64>, ImportError> {
        match self.value(position)? {
            Value::IntList(items) => Ok(items
                .iter()
                .map(|&item| match self.importer.value(item) {
                    Value::Int(value) => *value,
                    _ => unreachable!("the reader checks that IntList items are Ints"),
                })
                .collect()),
            _ => Err(self.kind_error(position, "an IntList")),
        }
    }

    pub(crate) fn optional_int_list(
        &self,
        position: usize,
    ) -> Result<Option<Vec<i64>>, ImportError> {
        match self.value(position)? {
            Value::Null => Ok(None),
            _ => self.int_list(position).map(Some),
        }
    }

    /// The type of an IR value.
    pub(crate) fn ty(&self, id: ValueId) -> &TensorType {
        &self.importer.graph.value(id).ty
    }

    /// The rank of a tensor argument, before it is read.
    pub(crate) fn rank_of(&self, position: usize) -> Result<usize, ImportError> {
        match self.value(position)? {
            Value::Tensor(tensor) => Ok(tensor.sizes.len()),
            _ => Err(self.kind_error(position, "a tensor")),
        }
    }

    /// The file's sizes of a tensor argument.
    pub(crate) fn sizes_of(&self, position: usize) -> Result<Vec<i64>, ImportError> {
        match self.value(position)? {
            Value::Tensor(tensor) => Ok(tensor.sizes.clone()),
            _ => Err(self.kind_error(position, "a tensor")),
        }
    }

    /// Emits `op` over `inputs`, writing the tensor arguments at `outputs`.
    /// The op's shape rule settles symbolic dimensions of the outputs.
    pub(crate) fn emit(
        &mut self,
        op: Op,
        inputs: Vec<ValueId>,
        outputs: &[usize],
    ) -> Result<(), ImportError> {
        let values = outputs
            .iter()
            .map(|&position| {
                self.args.get(position).copied().ok_or_else(|| {
                    self.importer
                        .invalid(format!("output argument {position} is missing"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.emit_values(op, inputs, &values)
    }

    /// Emits `op` over `inputs`, writing the frontend values `outputs`.
    pub(crate) fn emit_values(
        &mut self,
        op: Op,
        inputs: Vec<ValueId>,
        outputs: &[ValueIndex],
    ) -> Result<(), ImportError> {
        let expected = self.importer.expected_shapes(&op, &inputs, outputs.len())?;
        let mut output_ids = Vec::with_capacity(outputs.len());
        for (slot, &index) in outputs.iter().enumerate() {
            let inferred = match expected.get(slot) {
                Some(Expected::Shape(shape)) => Some(shape.clone()),
                _ => None,
            };
            let what = format!("{}: output {slot}", op.name());
            output_ids.push(
                self.importer
                    .write_inferred(index, inferred.as_deref(), &what)?,
            );
        }
        self.importer.push(op, inputs, output_ids)
    }

    /// The frontend values of a TensorList argument (for outputs).
    pub(crate) fn tensor_list_values(
        &self,
        position: usize,
    ) -> Result<Vec<ValueIndex>, ImportError> {
        match self.value(position)? {
            Value::TensorList(items) => Ok(items.clone()),
            _ => Err(self.kind_error(position, "a tensor list")),
        }
    }

    /// Emits a node that writes argument `target` in place (copy_ into a
    /// buffer): the written value is the argument itself.
    pub(crate) fn emit_into(
        &mut self,
        op: Op,
        inputs: Vec<ValueId>,
        target: usize,
    ) -> Result<(), ImportError> {
        self.value(target)?;
        let index = self.args[target];
        let id = match self.importer.values.get(&index) {
            Some(&id) => id,
            None => self.importer.read(index)?,
        };
        self.importer.push(op, inputs, vec![id])
    }
}

/// A label for every instruction a jump lands on (the chain's length when a
/// jump ends it).
fn jump_targets(chain: &[Instruction]) -> HashMap<usize, LabelId> {
    let mut labels = HashMap::new();
    for instruction in chain {
        if let Instruction::JumpFalse { destination, .. } = instruction {
            let next = LabelId(labels.len() as u32);
            labels.entry(*destination).or_insert(next);
        }
    }
    labels
}

/// The IR element type of a file element type, for the types ptec computes
/// with.
fn dtype(scalar: ScalarType) -> Option<DType> {
    Some(match scalar {
        ScalarType::Bool => DType::Bool,
        ScalarType::Byte => DType::U8,
        ScalarType::Char => DType::I8,
        ScalarType::Short => DType::I16,
        ScalarType::Int => DType::I32,
        ScalarType::Long => DType::I64,
        ScalarType::Half => DType::F16,
        ScalarType::BFloat16 => DType::BF16,
        ScalarType::Float => DType::F32,
        ScalarType::Double => DType::F64,
        _ => return None,
    })
}

/// The kernel keys of every operator ptec imports, in table order.
pub fn supported_operators() -> impl Iterator<Item = &'static str> {
    aten::OPERATORS.iter().map(|(name, _)| *name)
}
