//! The importer of a method: its values, kernel calls (through the operator
//! table), moves, jumps, and delegate calls (through the XNNPACK and Vulkan
//! importers) become a [`Graph`].
//!
//! The file's memory plan is read only to find its aliasing, which the
//! graph then states explicitly: reading a value nothing wrote, at the
//! offset of a value something did write, is a view of it (an explicit
//! `reshape` node); a value nothing wrote at an offset nothing wrote is
//! state that persists between calls (a mutable buffer). The graph itself
//! carries no memory placement: the pipeline plans memory afresh.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use ptec_frontend::{
    DelegateIndex, DelegatePayload, Instruction, Method, ScalarType, ShapeDynamism, Tensor,
    TensorStorage, Value, ValueIndex,
};
use ptec_ir::ops::control::{Jump, JumpIfFalse, Label, LabelId};
use ptec_ir::ops::creation::Full;
use ptec_ir::ops::layout::{Copy, Reshape};
use ptec_ir::ops::{Expected, show};
use ptec_ir::symbolic::{ScalarKind, Term};
use ptec_ir::{
    DType, Dim, Graph, Op, OutputKind, Scalar, TensorType, ValueData, ValueId, ValueKind,
};

use crate::aten;
use crate::call::{self, Argument, TensorRef};
use crate::error::{ImportError, InstructionId, Location, Problem, Unsupported};
use crate::symbols::Symbols;

/// Why a backward jump is refused: a loop could run forever, and the only
/// loop ExecuTorch's exporter emits (for `torch.ops.higher_order.map`) is
/// refused with its operators before any jump is read.
const LOOPS: &str = "ptec refuses loops, which ExecuTorch's exporter emits only for \
                     torch.ops.higher_order.map (not supported)";

/// Bytes each region of the file's plan is aligned to, in the importer's
/// view of the file's memory.
const REGION_ALIGNMENT: u64 = 64;

/// Imports `method` into a graph. Constant data stays borrowed from the
/// program's bytes.
pub fn import_method<'a>(method: &Method<'a>) -> Result<Graph<'a>, ImportError> {
    check_operators(method)?;
    let mut importer = Importer::new(method);
    importer.import()?;
    importer.finish()
}

/// Reports every kernel call of an operator ptec cannot import, at once,
/// with the reason when ptec knows the operator.
fn check_operators(method: &Method<'_>) -> Result<(), ImportError> {
    let mut unsupported: BTreeMap<String, Unsupported> = BTreeMap::new();
    for (chain, instructions) in method.chains.iter().enumerate() {
        for (index, instruction) in instructions.iter().enumerate() {
            if let Instruction::Kernel { operator, .. } = instruction {
                let key = method.operator(*operator).key();
                let why = match aten::entry(&key) {
                    None => None,
                    Some(entry) => match entry.refusal() {
                        None => continue,
                        refused => refused,
                    },
                };
                let calls = unsupported.entry(key).or_insert_with(|| Unsupported {
                    instructions: Vec::new(),
                    why,
                });
                calls.instructions.push(InstructionId { chain, index });
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

/// The element type ptec computes with for an element type of the file.
pub fn dtype_of(scalar: ScalarType) -> Option<DType> {
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

/// The state of one import.
pub(crate) struct Importer<'m, 'a> {
    pub(crate) method: &'m Method<'a>,
    pub(crate) graph: Graph<'a>,
    /// The IR value of each frontend value, once it has one.
    values: HashMap<ValueIndex, ValueId>,
    /// Where the file's plan puts each value the method's tensors became.
    file_offsets: HashMap<ValueId, u64>,
    /// The value last written at each offset of the file's plan.
    written_at: HashMap<u64, ValueId>,
    /// Start of each memory id's region in one view of the file's memory.
    region_base: Vec<u64>,
    /// Where the next tensor the file does not plan goes in that view, so
    /// that it aliases nothing.
    file_end: u64,
    pub(crate) symbols: Symbols,
    /// The run-time scalars the instructions so far have written into the
    /// method's Int, Bool and Double values (sizes, `SymInt` arithmetic),
    /// as constants or symbols.
    scalars: HashMap<ValueIndex, Term>,
    /// IR values whose type's sizes only bound those the op that writes
    /// them computes (a Vulkan graph's tensors, where its shapes are
    /// dynamic): the write gives them the shape the op's rule infers.
    pub(crate) bounded: HashSet<ValueId>,
    /// Where the importer is, for messages.
    pub(crate) at: Location,
    /// The method's values an instruction wrote on every path that
    /// reaches the instruction being imported.
    defined: HashSet<ValueIndex>,
    /// The values defined before the first instruction (inputs, constants,
    /// state), which every path has.
    always_defined: HashSet<ValueIndex>,
    /// For each instruction a jump lands on, each jump there so far with
    /// the values defined where it jumps.
    defined_at_jump: HashMap<usize, Vec<(usize, HashSet<ValueIndex>)>>,
    /// For a value some path to the current instruction does not define,
    /// the path that skips its definition (for messages).
    skipped: HashMap<ValueIndex, String>,
}

impl<'m, 'a> Importer<'m, 'a> {
    fn new(method: &'m Method<'a>) -> Self {
        let mut region_base = Vec::with_capacity(method.non_const_buffer_sizes.len());
        let mut end = 0;
        for &size in &method.non_const_buffer_sizes {
            region_base.push(end);
            end = (end + size).next_multiple_of(REGION_ALIGNMENT);
        }
        Importer {
            method,
            graph: Graph::new(method.name.clone()),
            values: HashMap::new(),
            file_offsets: HashMap::new(),
            written_at: HashMap::new(),
            region_base,
            file_end: end,
            symbols: Symbols::default(),
            scalars: HashMap::new(),
            bounded: HashSet::new(),
            at: Location::Inputs,
            defined: HashSet::new(),
            always_defined: HashSet::new(),
            defined_at_jump: HashMap::new(),
            skipped: HashMap::new(),
        }
    }

    pub(crate) fn invalid(&self, problem: Problem) -> ImportError {
        ImportError::Invalid {
            method: self.method.name.clone(),
            location: self.at.clone(),
            problem: Box::new(problem),
        }
    }

    /// [`Importer::invalid`] with a message.
    pub(crate) fn contradiction(&self, problem: impl Into<String>) -> ImportError {
        self.invalid(Problem::Invalid(problem.into()))
    }

    /// The instruction being imported.
    pub(crate) fn current_instruction(&self) -> InstructionId {
        match &self.at {
            Location::Instruction(at)
            | Location::KernelCall {
                instruction: at, ..
            }
            | Location::XnnpackOutputs(at)
            | Location::VulkanOutputs(at)
            | Location::XnnpackNode {
                instruction: at, ..
            }
            | Location::VulkanCall {
                instruction: at, ..
            } => *at,
            Location::Inputs | Location::Outputs => InstructionId { chain: 0, index: 0 },
        }
    }

    fn import(&mut self) -> Result<(), ImportError> {
        for (position, &input) in self.method.inputs.iter().enumerate() {
            let tensor = self.tensor(input)?.clone();
            let mut ty = self.file_type(&tensor)?;
            if tensor.dynamism == ShapeDynamism::DynamicBound {
                // The file records only upper bounds. One of 0 or 1 is a
                // static size: `torch.export` specializes sizes 0 and 1, so
                // a dynamic dimension's bound is at least 2.
                for (axis, dim) in ty.shape.iter_mut().enumerate() {
                    if let Dim::Fixed(bound) = *dim
                        && bound > 1
                    {
                        *dim = Dim::Symbol(
                            self.symbols
                                .add(bound, format!("input {position} dim {axis}")),
                        );
                    }
                }
            }
            let offset = self.place(&tensor, &ty)?;
            let id = self.graph.add_value(ValueData {
                ty,
                kind: ValueKind::Input(position),
                offset: None,
            });
            self.values.insert(input, id);
            self.always_defined.insert(input);
            self.file_offsets.insert(id, offset);
            self.record_written(id);
        }
        for (chain, instructions) in self.method.chains.iter().enumerate() {
            let labels = self.jump_targets(instructions);
            self.defined_at_jump.clear();
            // Whether the instruction before falls through to the next.
            let mut falls_through = true;
            for (index, instruction) in instructions.iter().enumerate() {
                self.at = Location::Instruction(InstructionId { chain, index });
                self.symbols.origin = format!("instruction {chain}:{index}");
                if let Some(&label) = labels.get(&index) {
                    self.graph.push_node(Op::Label(Label { label }), Vec::new());
                }
                self.arrive(index, falls_through);
                falls_through = self.instruction(instruction, index, &labels)?;
            }
            if let Some(&label) = labels.get(&instructions.len()) {
                self.graph.push_node(Op::Label(Label { label }), Vec::new());
            }
            self.arrive(instructions.len(), falls_through);
        }
        self.at = Location::Outputs;
        self.symbols.origin = "the method's outputs".to_string();
        let outputs = self
            .method
            .outputs
            .iter()
            .map(|&output| self.output(output))
            .collect::<Result<Vec<_>, _>>()?;
        self.graph.set_outputs_with_kinds(outputs);
        Ok(())
    }

    /// A method output: a tensor, or a scalar held in a 0-dim value that a
    /// fill writes.
    fn output(&mut self, output: ValueIndex) -> Result<(ValueId, OutputKind), ImportError> {
        let Some(term) = self.scalar_value(output)? else {
            return Ok((self.read(TensorRef::Method(output))?, OutputKind::Tensor));
        };
        let kind = match self.symbols.table.kind(term) {
            Ok(ScalarKind::Int) => OutputKind::Int,
            Ok(ScalarKind::Bool) => OutputKind::Bool,
            Ok(ScalarKind::Float) => OutputKind::Double,
            Err(error) => return Err(self.contradiction(error.to_string())),
        };
        let value = self.scalar_tensor(term, kind)?;
        Ok((value, kind))
    }

    /// A 0-dim value holding `term`, of the type a scalar output of `kind`
    /// is held in.
    pub(crate) fn scalar_tensor(
        &mut self,
        term: Term,
        kind: OutputKind,
    ) -> Result<ValueId, ImportError> {
        let dtype = kind
            .scalar_dtype()
            .ok_or_else(|| self.contradiction("a tensor output held as a scalar"))?;
        let value = self.graph.add_value(ValueData::computed(TensorType {
            dtype,
            shape: Vec::new(),
            dim_order: Vec::new(),
        }));
        self.graph
            .push_node(Op::Full(Full { value: term }), vec![value]);
        Ok(value)
    }

    /// The scalar a non-tensor value holds: what an instruction wrote into
    /// it, or its constant; `None` for a tensor.
    pub(crate) fn scalar_value(&self, index: ValueIndex) -> Result<Option<Term>, ImportError> {
        if let Some(&term) = self.scalars.get(&index) {
            return Ok(Some(self.symbols.resolve_term(term)));
        }
        Ok(Some(Term::Const(match self.method.value(index) {
            Value::Int(value) => Scalar::Int(*value),
            Value::Bool(value) => Scalar::Bool(*value),
            Value::Double(value) => Scalar::Float(*value),
            Value::Tensor(_) => return Ok(None),
            other => {
                return Err(self.contradiction(format!(
                    "value {index} is a {}, which is neither a tensor nor a scalar",
                    other.kind()
                )));
            }
        })))
    }

    /// Records the scalar an instruction writes into a method value.
    pub(crate) fn define_scalar(&mut self, index: ValueIndex, term: Term) {
        self.scalars.insert(index, term);
    }

    fn finish(mut self) -> Result<Graph<'a>, ImportError> {
        self.at = Location::Outputs;
        self.symbols
            .apply(&mut self.graph)
            .map_err(|error| self.contradiction(error.to_string()))?;
        // Memory is planned for the largest sizes, so every size needs a
        // bound (a scalar that is no size, a fill value, needs none).
        for symbol in self.graph.shape_symbols() {
            let data = self.graph.symbol(symbol);
            if data.bound == u64::MAX {
                return Err(self.contradiction(format!(
                    "the size {symbol} ({}: {}) has no upper bound, and ptec plans memory for \
                     the largest size",
                    data.origin, data.def
                )));
            }
        }
        Ok(self.graph)
    }

    /// A label for every instruction a jump lands on (the chain's length
    /// when a jump ends it).
    fn jump_targets(&mut self, chain: &[Instruction]) -> HashMap<usize, LabelId> {
        let mut labels = HashMap::new();
        for instruction in chain {
            if let Instruction::JumpFalse { destination, .. } = instruction {
                labels
                    .entry(*destination)
                    .or_insert_with(|| self.graph.new_label());
            }
        }
        labels
    }

    /// The values defined on arrival at instruction `index` (the chain's
    /// length: its end): those of every jump landing there, and of the
    /// instruction before when it falls through.
    fn arrive(&mut self, index: usize, falls_through: bool) {
        let Some(jumps) = self.defined_at_jump.remove(&index) else {
            return;
        };
        let chain = self.current_instruction().chain;
        let mut paths: Vec<(String, HashSet<ValueIndex>)> = jumps
            .into_iter()
            .map(|(jump, defined)| {
                let at = InstructionId { chain, index: jump };
                (format!("the jump at instruction {at}"), defined)
            })
            .collect();
        if falls_through {
            let before = InstructionId {
                chain,
                index: index.saturating_sub(1),
            };
            let path = format!("the path through instruction {before}");
            paths.push((path, std::mem::take(&mut self.defined)));
        }
        let mut on_every_path = paths[0].1.clone();
        for (_, defined) in &paths[1..] {
            on_every_path.retain(|value| defined.contains(value));
        }
        for (_, defined) in &paths {
            for &value in defined.difference(&on_every_path) {
                if let Some((path, _)) = paths.iter().find(|(_, other)| !other.contains(&value)) {
                    self.skipped.insert(value, path.clone());
                }
            }
        }
        self.defined = on_every_path;
    }

    /// Imports one instruction, at `index` in its chain; says whether the
    /// next instruction runs after it (false after a jump that always
    /// jumps).
    fn instruction(
        &mut self,
        instruction: &Instruction,
        index: usize,
        labels: &HashMap<usize, LabelId>,
    ) -> Result<bool, ImportError> {
        if let Instruction::JumpFalse { destination, .. } = *instruction {
            self.check_jump(index, destination)?;
            self.defined_at_jump
                .entry(destination)
                .or_default()
                .push((index, self.defined.clone()));
        }
        match instruction {
            Instruction::Kernel { operator, args } => {
                let key = self.method.operator(*operator).key();
                let instruction = self.current_instruction();
                self.symbols.origin = format!("instruction {instruction} ({key})");
                self.at = Location::KernelCall {
                    instruction,
                    operator: key.clone(),
                };
                let arguments = self.arguments(args)?;
                call::import_kernel_call(self, &key, args, &arguments)?;
                Ok(true)
            }
            Instruction::Delegate { delegate, args } => {
                self.delegate(*delegate, args)?;
                Ok(true)
            }
            Instruction::Move { from, to } => {
                self.check_move(*from, *to)?;
                let input = self.read(TensorRef::Method(*from))?;
                let destination = self.write(TensorRef::Method(*to), None, "copy", 0)?;
                self.push(Op::Copy(Copy { input }), vec![destination]);
                Ok(true)
            }
            Instruction::JumpFalse {
                condition,
                destination,
            } => {
                let label = labels[destination];
                match self.scalar_value(*condition)? {
                    Some(Term::Const(Scalar::Bool(false))) => {
                        self.graph.push_node(Op::Jump(Jump { label }), Vec::new());
                        return Ok(false);
                    }
                    Some(Term::Const(Scalar::Bool(true))) => {}
                    None => {
                        let condition = self.read(TensorRef::Method(*condition))?;
                        let op = Op::JumpIfFalse(JumpIfFalse { condition, label });
                        self.graph.push_node(op, Vec::new());
                    }
                    Some(term @ Term::Symbol(_))
                        if self.symbols.table.kind(term) == Ok(ScalarKind::Bool) =>
                    {
                        let condition = self.scalar_tensor(term, OutputKind::Bool)?;
                        let op = Op::JumpIfFalse(JumpIfFalse { condition, label });
                        self.graph.push_node(op, Vec::new());
                    }
                    Some(other) => {
                        return Err(self.contradiction(format!(
                            "a jump condition must be a Bool, not {other}"
                        )));
                    }
                }
                Ok(true)
            }
            // Memory is planned ahead; freeing changes nothing.
            Instruction::Free { .. } => Ok(true),
        }
    }

    /// Refuses a jump that does not go forward (see [`LOOPS`]).
    fn check_jump(&self, index: usize, destination: usize) -> Result<(), ImportError> {
        if destination == index {
            return Err(self.contradiction(format!(
                "the jump lands onto itself (instruction {destination}), a loop that never \
                 ends; {LOOPS}"
            )));
        }
        if destination < index {
            return Err(self.contradiction(format!(
                "the jump goes backward to instruction {destination}, a loop; {LOOPS}"
            )));
        }
        Ok(())
    }

    /// Refuses a MoveCall between tensors of different element types or
    /// sizes (a move copies a tensor as it is).
    fn check_move(&self, from: ValueIndex, to: ValueIndex) -> Result<(), ImportError> {
        let (source, destination) = (self.tensor(from)?, self.tensor(to)?);
        if source.dtype != destination.dtype || source.sizes != destination.sizes {
            return Err(self.contradiction(format!(
                "the move from value {from} ({}{:?}) into value {to} ({}{:?}) changes the \
                 tensor's type or size; a move copies a tensor into one of the same type and \
                 sizes",
                source.dtype, source.sizes, destination.dtype, destination.sizes
            )));
        }
        Ok(())
    }

    /// A KernelCall's arguments as typed values: scalars that earlier
    /// instructions wrote at run time as what they wrote (constants, or
    /// symbols).
    fn arguments(&self, args: &[ValueIndex]) -> Result<Vec<Argument>, ImportError> {
        args.iter()
            .map(|&index| {
                Ok(match self.method.value(index) {
                    Value::Null => Argument::Null,
                    Value::Int(_) | Value::Bool(_) | Value::Double(_) => {
                        match self.scalar_value(index)? {
                            Some(term) => self.scalar_argument(term, index)?,
                            None => Argument::Null,
                        }
                    }
                    Value::String(value) => Argument::String(value.clone()),
                    Value::Tensor(_) => Argument::Tensor(TensorRef::Method(index)),
                    Value::IntList(items) => Argument::IntList(
                        items
                            .iter()
                            .map(|&item| match self.scalar_value(item)? {
                                Some(term @ Term::Const(Scalar::Int(_))) => Ok(term),
                                Some(term @ Term::Symbol(_))
                                    if self.symbols.table.kind(term) == Ok(ScalarKind::Int) =>
                                {
                                    Ok(term)
                                }
                                _ => Err(self.contradiction(format!(
                                    "IntList item {item} is a {}, not an Int",
                                    self.method.value(item).kind()
                                ))),
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                    Value::DoubleList(items) => Argument::DoubleList(items.clone()),
                    Value::BoolList(items) => Argument::BoolList(items.clone()),
                    Value::TensorList(items) => {
                        Argument::TensorList(items.iter().copied().map(TensorRef::Method).collect())
                    }
                    Value::OptionalTensorList(items) => Argument::OptionalTensorList(
                        items
                            .iter()
                            .map(|item| item.map(TensorRef::Method))
                            .collect(),
                    ),
                })
            })
            .collect()
    }

    /// The argument a scalar is: a constant of its kind, or a symbol.
    pub(crate) fn scalar_argument(
        &self,
        term: Term,
        index: impl std::fmt::Display,
    ) -> Result<Argument, ImportError> {
        Ok(match term {
            Term::Const(Scalar::Int(value)) => Argument::Int(value),
            Term::Const(Scalar::Bool(value)) => Argument::Bool(value),
            Term::Const(Scalar::Float(value)) => Argument::Double(value),
            Term::Symbol(symbol) => {
                let kind = self
                    .symbols
                    .table
                    .kind(term)
                    .map_err(|error| self.contradiction(format!("value {index}: {error}")))?;
                Argument::Sym(symbol, kind)
            }
        })
    }

    fn delegate(&mut self, index: DelegateIndex, args: &[ValueIndex]) -> Result<(), ImportError> {
        let delegate = self.method.delegate(index);
        match &delegate.payload {
            DelegatePayload::Xnnpack(graph) => crate::xnnpack::import(self, graph, args),
            DelegatePayload::Vulkan(graph) => crate::vulkan::import(self, graph, args),
            DelegatePayload::Opaque(_) => {
                Err(self.contradiction(format!("backend {} is not one ptec can read", delegate.id)))
            }
        }
    }

    /// A tensor value of the method.
    pub(crate) fn tensor(&self, index: ValueIndex) -> Result<&Tensor<'a>, ImportError> {
        match self.method.value(index) {
            Value::Tensor(tensor) => Ok(tensor),
            other => Err(self.contradiction(format!(
                "value {index} must be a tensor, not a {}",
                other.kind()
            ))),
        }
    }

    /// The type a tensor has in the file (upper-bound sizes).
    pub(crate) fn file_type(&self, tensor: &Tensor<'_>) -> Result<TensorType, ImportError> {
        if tensor.dynamism == ShapeDynamism::DynamicUnbound {
            return Err(self.contradiction("tensors of unbounded dynamic shape are not supported"));
        }
        Ok(TensorType {
            dtype: dtype_of(tensor.dtype).ok_or_else(|| {
                self.contradiction(format!("element type {} is not supported", tensor.dtype))
            })?,
            shape: tensor
                .sizes
                .iter()
                .map(|&size| Dim::Fixed(size as u64))
                .collect(),
            dim_order: tensor.dim_order.clone(),
        })
    }

    /// Where the file's plan puts a non-constant tensor; tensors it does
    /// not plan get a place of their own.
    fn place(&mut self, tensor: &Tensor<'_>, ty: &TensorType) -> Result<u64, ImportError> {
        match tensor.storage {
            TensorStorage::Planned {
                memory_id, offset, ..
            } => Ok(self.region_base[memory_id as usize] + offset),
            TensorStorage::Unplanned => {
                let offset = self.file_end;
                let bytes = ty.max_bytes(|symbol| self.symbols.bound(symbol));
                self.file_end = (offset + bytes).next_multiple_of(REGION_ALIGNMENT);
                Ok(offset)
            }
            TensorStorage::Constant(_) => {
                Err(self.contradiction("a constant tensor cannot be written"))
            }
        }
    }

    /// The type a tensor argument declares (upper-bound sizes for the
    /// method's dynamic tensors).
    pub(crate) fn declared_type(&self, tensor: TensorRef) -> Result<TensorType, ImportError> {
        match tensor {
            TensorRef::Method(index) => self.file_type(self.tensor(index)?),
            TensorRef::Ir(id) => Ok(self.graph.value(id).ty.clone()),
        }
    }

    /// The type of a tensor argument as the program has it so far: its IR
    /// value's, whose sizes a run computes are symbols, once it has one
    /// (an input read, a result written); else what the file declares.
    pub(crate) fn current_type(&self, tensor: TensorRef) -> Result<TensorType, ImportError> {
        match tensor {
            TensorRef::Method(index) => match self.values.get(&index) {
                Some(&id) => Ok(self.graph.value(id).ty.clone()),
                None => self.declared_type(tensor),
            },
            TensorRef::Ir(id) => Ok(self.graph.value(id).ty.clone()),
        }
    }

    /// The sizes a tensor argument declares.
    pub(crate) fn declared_sizes(&self, tensor: TensorRef) -> Result<Vec<i64>, ImportError> {
        let ty = self.declared_type(tensor)?;
        Ok(ty
            .shape
            .iter()
            .map(|&dim| self.symbols.max_size(dim) as i64)
            .collect())
    }

    /// Whether a tensor of the method has a value yet (it was an input,
    /// read, or written).
    pub(crate) fn is_written(&self, index: ValueIndex) -> bool {
        self.values.contains_key(&index)
    }

    /// The IR value for reading a tensor.
    pub(crate) fn read(&mut self, tensor: TensorRef) -> Result<ValueId, ImportError> {
        let index = match tensor {
            TensorRef::Ir(id) => return Ok(id),
            TensorRef::Method(index) => index,
        };
        if let Some(&id) = self.values.get(&index) {
            if !self.defined.contains(&index) && !self.always_defined.contains(&index) {
                let path = self.skipped.get(&index).map_or("a jump", String::as_str);
                return Err(self.contradiction(format!(
                    "value {index} is read where it is undefined: {path} skips the \
                     instruction that writes it"
                )));
            }
            return Ok(id);
        }
        self.always_defined.insert(index);
        let tensor = self.tensor(index)?.clone();
        let ty = self.file_type(&tensor)?;
        let (kind, offset) = match tensor.storage {
            TensorStorage::Constant(bytes) => (ValueKind::Constant(Cow::Borrowed(bytes)), None),
            TensorStorage::Planned { initial, .. } => {
                let offset = self.place(&tensor, &ty)?;
                if let Some(&base) = self.written_at.get(&offset).filter(|_| holds_bytes(&ty)) {
                    return self.view_of(index, base, ty, offset);
                }
                let initial = initial.map(Cow::Borrowed);
                (ValueKind::State { initial }, Some(offset))
            }
            _ => {
                return Err(
                    self.contradiction(format!("value {index} is read before anything writes it"))
                );
            }
        };
        let id = self.graph.add_value(ValueData {
            ty,
            kind,
            offset: None,
        });
        self.values.insert(index, id);
        if let Some(offset) = offset {
            self.file_offsets.insert(id, offset);
            self.record_written(id);
        }
        Ok(id)
    }

    /// An instruction-less view: `index` reinterprets the bytes of `base`,
    /// which must have as many (a tensor nothing writes, at the offset of
    /// one of another size, is no view: it is never written).
    fn view_of(
        &mut self,
        index: ValueIndex,
        base: ValueId,
        ty: TensorType,
        offset: u64,
    ) -> Result<ValueId, ImportError> {
        let base_ty = self.graph.value(base).ty.clone();
        if let (Some(_), Some(_)) = (ty.fixed_shape(), base_ty.fixed_shape())
            && ty.max_bytes(|_| 0) != base_ty.max_bytes(|_| 0)
        {
            return Err(self.contradiction(format!(
                "value {index} ({ty}) is read but never written: nothing writes it, and the \
                 {base_ty} written at its offset is no view of it"
            )));
        }
        let ty = if base_ty.fixed_shape().is_some() {
            ty
        } else {
            // A view of a dynamic tensor keeps its symbolic dims where the
            // file's sizes match the bound.
            self.symbols.view_type(&base_ty, ty)
        };
        let id = self.graph.add_value(ValueData::computed(ty.clone()));
        self.values.insert(index, id);
        self.file_offsets.insert(id, offset);
        // The file's two tensors share memory only in its plan.
        let op = self.view_op(base, &ty);
        self.push(op, vec![id]);
        Ok(id)
    }

    /// The op that writes `input` viewed as a tensor of type `to`, as
    /// PyTorch views it, by its logical order: a view (`Reshape`, which
    /// reinterprets row-major bytes) where both are row-major; otherwise a
    /// row-major copy of the input is viewed, and the view copied into
    /// `to`'s dim order (the nodes before the returned op are pushed).
    pub(crate) fn view_op(&mut self, input: ValueId, to: &TensorType) -> Op {
        let row_major = |ty: &TensorType| TensorType::contiguous(ty.dtype, ty.shape.clone());
        let from = &self.graph.value(input).ty;
        let input = match from.is_contiguous() {
            true => input,
            false => {
                let copy = self.graph.add_value(ValueData::computed(row_major(from)));
                self.push(Op::Copy(Copy { input }), vec![copy]);
                copy
            }
        };
        if to.is_contiguous() {
            return Op::Reshape(Reshape { input });
        }
        let viewed = self.graph.add_value(ValueData::computed(row_major(to)));
        self.push(Op::Reshape(Reshape { input }), vec![viewed]);
        Op::Copy(Copy { input: viewed })
    }

    /// The value a node writes in place: the tensor's value when it has
    /// one, else the tensor read (state a `copy_` fills).
    pub(crate) fn existing_or_read(&mut self, tensor: TensorRef) -> Result<ValueId, ImportError> {
        match tensor {
            TensorRef::Method(index) if !self.values.contains_key(&index) => self.read(tensor),
            TensorRef::Method(index) => Ok(self.values[&index]),
            TensorRef::Ir(id) => Ok(id),
        }
    }

    /// The IR value for writing a tensor; `inferred` is the shape output
    /// `slot` of `op`'s rule gives it, when the rule gives one, which is
    /// then equated with the shape the file declares (settling symbols).
    pub(crate) fn write(
        &mut self,
        tensor: TensorRef,
        inferred: Option<&[Dim]>,
        op: &'static str,
        slot: usize,
    ) -> Result<ValueId, ImportError> {
        let id = match tensor {
            TensorRef::Ir(id) => {
                if self.bounded.remove(&id)
                    && let Some(inferred) = inferred
                {
                    self.settle_bounded(id, inferred);
                }
                id
            }
            TensorRef::Method(index) => match self.values.get(&index) {
                Some(&id) => id,
                None => {
                    let tensor = self.tensor(index)?.clone();
                    let mut ty = self.file_type(&tensor)?;
                    if tensor.dynamism == ShapeDynamism::DynamicBound {
                        let Some(inferred) = inferred.filter(|shape| shape.len() == ty.rank())
                        else {
                            return Err(self.contradiction(format!(
                                "{op} writes value {index}, whose shape is dynamic, and ptec \
                                 cannot tell its size at run time"
                            )));
                        };
                        // The file's sizes bound what the op computes.
                        for (&dim, &declared) in inferred.iter().zip(&tensor.sizes) {
                            if let Dim::Symbol(symbol) = self.symbols.resolve(dim) {
                                self.symbols.table.tighten_bound(symbol, declared as u64);
                            }
                        }
                        ty.shape = inferred.to_vec();
                    }
                    let offset = self.place(&tensor, &ty)?;
                    let id = self.graph.add_value(ValueData::computed(ty));
                    self.values.insert(index, id);
                    self.file_offsets.insert(id, offset);
                    id
                }
            },
        };
        let read_only = match self.graph.value(id).kind {
            ValueKind::Input(_) => Some("one of the method's inputs"),
            ValueKind::Constant(_) => Some("a constant"),
            _ => None,
        };
        if let Some(what) = read_only {
            let value = match tensor {
                TensorRef::Method(index) => format!("value {index}"),
                TensorRef::Ir(id) => id.to_string(),
            };
            return Err(self.contradiction(format!(
                "{op} writes {value}, which is {what} and cannot be written"
            )));
        }
        if let TensorRef::Method(index) = tensor {
            self.defined.insert(index);
        }
        if let Some(inferred) = inferred {
            let declared = self.graph.value(id).ty.shape.clone();
            if !self.symbols.equate_shapes(inferred, &declared) {
                return Err(self.invalid(Problem::DeclaredShape {
                    op,
                    output: slot,
                    inferred: show(inferred),
                    declared: show(&declared),
                }));
            }
        }
        Ok(id)
    }

    /// Gives the bounded value `id` the shape its op infers, where that
    /// has its rank (else the shapes disagree, which the write reports): a
    /// symbol where the declared size bounds a symbolic one, the declared
    /// size where it is fixed or `torch.export` specialized it (0 or 1).
    /// An op whose rule gives no shape (a fill of a placeholder) writes
    /// the declared sizes.
    fn settle_bounded(&mut self, id: ValueId, inferred: &[Dim]) {
        let declared = self.graph.value(id).ty.shape.clone();
        if inferred.len() != declared.len() {
            return;
        }
        let shape = inferred
            .iter()
            .zip(declared)
            .map(|(&dim, bound)| match (self.symbols.resolve(dim), bound) {
                (Dim::Symbol(symbol), Dim::Fixed(size)) if size > 1 => {
                    self.symbols.table.tighten_bound(symbol, size);
                    Dim::Symbol(symbol)
                }
                _ => bound,
            })
            .collect();
        self.graph.value_mut(id).ty.shape = shape;
    }

    /// What `op`'s shape rule says of its `outputs` outputs (settling
    /// symbols the rule equates).
    pub(crate) fn expected_shapes(
        &mut self,
        op: &Op,
        outputs: usize,
    ) -> Result<Vec<Expected>, ImportError> {
        let inputs: Vec<TensorType> = op
            .inputs()
            .into_iter()
            .map(|input| {
                let ty = &self.graph.value(input).ty;
                TensorType {
                    shape: self.symbols.resolve_shape(&ty.shape),
                    ..ty.clone()
                }
            })
            .collect();
        let refs: Vec<&TensorType> = inputs.iter().collect();
        op.def()
            .infer(&refs, outputs, &mut self.symbols)
            .map_err(|error| {
                self.invalid(Problem::Rule {
                    op: op.def().name(),
                    error,
                })
            })
    }

    /// What `op`'s rule requires of its operands' and `outputs`' element
    /// types (`OpDef::element_types`, and an elementwise function's
    /// `OpDef::check`, which needs no settled symbols).
    pub(crate) fn check_types(&mut self, op: &Op, outputs: &[ValueId]) -> Result<(), ImportError> {
        let graph = &self.graph;
        let types = |values: &[ValueId]| -> Vec<&TensorType> {
            values.iter().map(|&value| &graph.value(value).ty).collect()
        };
        let (inputs, outputs) = (types(&op.inputs()), types(outputs));
        let def = op.def();
        def.element_types(&inputs, &outputs)
            .and_then(|()| match op {
                Op::Elementwise(_) => def.check(&inputs, &outputs, &mut self.symbols),
                _ => Ok(()),
            })
            .map_err(|error| {
                self.invalid(Problem::Rule {
                    op: op.def().name(),
                    error,
                })
            })
    }

    /// Records that `value` now holds what the file's plan places where it
    /// lives (a delegate's node writes a call output directly).
    /// An empty tensor holds no bytes: the file may place it anywhere, and
    /// it is nobody's view nor the base of one.
    pub(crate) fn record_written(&mut self, value: ValueId) {
        if !holds_bytes(&self.graph.value(value).ty) {
            return;
        }
        if let Some(&offset) = self.file_offsets.get(&value) {
            self.written_at.insert(offset, value);
        }
    }

    /// Appends a node and records where the file's plan has its outputs
    /// written (shape rules were applied by `Call::emit_to`, and the
    /// verifier checks them again).
    pub(crate) fn push(&mut self, op: Op, outputs: Vec<ValueId>) {
        for &output in &outputs {
            self.record_written(output);
        }
        self.graph.push_node(op, outputs);
    }
}

/// Whether a tensor of type `ty` has elements (an empty one shares its
/// offset in the file's plan with whatever lives there).
fn holds_bytes(ty: &TensorType) -> bool {
    !ty.shape.contains(&Dim::Fixed(0))
}
