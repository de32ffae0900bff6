//! The typed values the reader produces: programs, methods, values,
//! instructions and tensors. They hold no flatbuffer types; constant data is
//! borrowed from the file's bytes, never copied. Every index in them has been
//! checked against the table it points into.

use std::collections::BTreeMap;

use crate::delegate::DelegatePayload;
use crate::error::{Error, Result};
use crate::scalar_type::ScalarType;

/// Declares a typed index into one table of a method or of a delegate
/// graph, so that a value index can never be used where an operator index
/// is meant.
macro_rules! typed_index {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub(crate) u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}
pub(crate) use typed_index;

typed_index!(
    /// An index into [`Method::values`].
    ValueIndex,
    "v"
);
typed_index!(
    /// An index into [`Method::operators`].
    OperatorIndex,
    "op"
);
typed_index!(
    /// An index into [`Method::delegates`].
    DelegateIndex,
    "delegate"
);

/// A whole `.pte` program.
#[derive(Debug)]
pub struct Program<'a> {
    pub version: u32,
    /// The `eh00` extended header, when the file has one.
    pub header: Option<ExtendedHeader>,
    pub methods: Vec<Method<'a>>,
    pub segments: Vec<Segment<'a>>,
    /// The data of `Program.named_data` and of the data files the program
    /// was read with, by key.
    pub named_data: NamedData<'a>,
    /// Bytes of the constant segment or of the legacy inline constant buffers.
    pub constant_bytes: u64,
}

impl<'a> Program<'a> {
    pub fn method(&self, name: &str) -> Option<&Method<'a>> {
        self.methods.iter().find(|method| method.name == name)
    }
}

/// The `eh00` header that follows the file identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtendedHeader {
    /// Bytes of the flatbuffer, header included.
    pub program_size: u64,
    /// Absolute offset of the segment area.
    pub segment_base_offset: u64,
    /// Bytes of the segment area, when the header records it.
    pub segment_data_size: Option<u64>,
}

/// One entry of `Program.segments`, resolved against the file.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    /// Absolute offset in the file.
    pub offset: u64,
    pub data: &'a [u8],
}

/// Blobs that backends and external tensors look up by key: a program's
/// named data, a data file's, or both merged.
#[derive(Clone, Debug, Default)]
pub struct NamedData<'a> {
    entries: BTreeMap<String, DataEntry<'a>>,
    /// How many data files were merged in.
    data_files: usize,
}

/// One named blob.
#[derive(Clone, Debug)]
pub struct DataEntry<'a> {
    pub data: &'a [u8],
    /// What the blob holds when it is a tensor (data files record it).
    pub layout: Option<TensorLayout>,
}

/// The element type, sizes and dim order a data file records for a blob
/// that is a tensor, checked against the blob's length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorLayout {
    pub dtype: ScalarType,
    pub sizes: Vec<i64>,
    pub dim_order: Vec<u8>,
}

impl<'a> NamedData<'a> {
    /// Adds `entry` under `key`; gives back the entry it replaces, if any.
    pub(crate) fn insert(&mut self, key: String, entry: DataEntry<'a>) -> Option<DataEntry<'a>> {
        self.entries.insert(key, entry)
    }

    pub fn get(&self, key: &str) -> Option<&'a [u8]> {
        self.entries.get(key).map(|entry| entry.data)
    }

    pub fn entry(&self, key: &str) -> Option<&DataEntry<'a>> {
        self.entries.get(key)
    }

    /// How many data files (`.ptd`) were merged into these.
    pub fn data_files(&self) -> usize {
        self.data_files
    }

    /// Adds the blobs of a data file; a key already present is an error.
    pub(crate) fn merge(&mut self, file: &NamedData<'a>) -> Result<()> {
        for (key, entry) in file.entries() {
            if self.insert(key.to_string(), entry.clone()).is_some() {
                return Err(Error::DuplicateKey {
                    data_file: self.data_files,
                    key: key.to_string(),
                });
            }
        }
        self.data_files += 1;
        Ok(())
    }

    /// The error for a key that is missing, naming it and the data files
    /// that were searched.
    pub(crate) fn missing(&self, at: String, what: &'static str, key: &str) -> Error {
        Error::MissingData {
            at,
            what,
            key: key.to_string(),
            data_files: self.data_files,
        }
    }

    /// The keys and their blobs, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &DataEntry<'a>)> {
        self.entries
            .iter()
            .map(|(key, entry)| (key.as_str(), entry))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn total_bytes(&self) -> u64 {
        self.entries
            .values()
            .map(|entry| entry.data.len() as u64)
            .sum()
    }
}

/// One method (`ExecutionPlan`) of a program.
#[derive(Debug)]
pub struct Method<'a> {
    pub name: String,
    pub values: Vec<Value<'a>>,
    pub inputs: Vec<ValueIndex>,
    pub outputs: Vec<ValueIndex>,
    /// The instructions of each chain, in order.
    pub chains: Vec<Vec<Instruction>>,
    pub operators: Vec<Operator>,
    pub delegates: Vec<Delegate<'a>>,
    /// Byte size of each planned arena, by memory id; entry 0 is reserved.
    pub non_const_buffer_sizes: Vec<u64>,
}

impl<'a> Method<'a> {
    pub fn value(&self, index: ValueIndex) -> &Value<'a> {
        &self.values[index.index()]
    }

    pub fn operator(&self, index: OperatorIndex) -> &Operator {
        &self.operators[index.index()]
    }

    pub fn delegate(&self, index: DelegateIndex) -> &Delegate<'a> {
        &self.delegates[index.index()]
    }

    /// Every instruction of every chain, in order.
    pub fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.chains.iter().flatten()
    }
}

/// A value of a method (`EValue`).
#[derive(Debug, Clone)]
pub enum Value<'a> {
    Null,
    Int(i64),
    Bool(bool),
    Double(f64),
    Tensor(Tensor<'a>),
    String(String),
    /// Indices of `Int` values (the format boxes list items).
    IntList(Vec<ValueIndex>),
    DoubleList(Vec<f64>),
    BoolList(Vec<bool>),
    /// Indices of `Tensor` values.
    TensorList(Vec<ValueIndex>),
    /// Indices of `Tensor` values, `None` where the list holds None.
    OptionalTensorList(Vec<Option<ValueIndex>>),
}

impl Value<'_> {
    /// The kind's name, as the format's `KernelTypes` union spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "Null",
            Value::Int(_) => "Int",
            Value::Bool(_) => "Bool",
            Value::Double(_) => "Double",
            Value::Tensor(_) => "Tensor",
            Value::String(_) => "String",
            Value::IntList(_) => "IntList",
            Value::DoubleList(_) => "DoubleList",
            Value::BoolList(_) => "BoolList",
            Value::TensorList(_) => "TensorList",
            Value::OptionalTensorList(_) => "OptionalTensorList",
        }
    }
}

/// A tensor value of a method.
#[derive(Debug, Clone)]
pub struct Tensor<'a> {
    pub dtype: ScalarType,
    /// The shape; for `DynamicBound` tensors, its upper bound.
    pub sizes: Vec<i64>,
    /// A permutation of the dimensions, outermost first.
    pub dim_order: Vec<u8>,
    pub dynamism: ShapeDynamism,
    pub storage: TensorStorage<'a>,
}

impl Tensor<'_> {
    pub fn numel(&self) -> u64 {
        self.sizes.iter().map(|&size| size as u64).product()
    }

    /// Bytes of the tensor at its (upper-bound) shape. The reader checked
    /// that this does not overflow.
    pub fn nbytes(&self) -> u64 {
        self.numel() * self.dtype.element_size() as u64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeDynamism {
    Static,
    /// Sizes are an upper bound; memory is planned for it.
    DynamicBound,
    /// Sizes mean nothing; memory is found at run time.
    DynamicUnbound,
}

impl ShapeDynamism {
    pub fn name(self) -> &'static str {
        match self {
            ShapeDynamism::Static => "static",
            ShapeDynamism::DynamicBound => "dynamic_bound",
            ShapeDynamism::DynamicUnbound => "dynamic_unbound",
        }
    }
}

/// Where a tensor's bytes live.
#[derive(Clone, Debug)]
pub enum TensorStorage<'a> {
    /// A constant: its bytes in the file, or in a data file when the program
    /// keeps the tensor outside (`TensorDataLocation::EXTERNAL`).
    Constant(&'a [u8]),
    /// Planned memory: an arena (`memory_id`, 1-based, an index into
    /// `non_const_buffer_sizes`) and a byte offset in it, with the initial
    /// contents when the file gives some.
    Planned {
        memory_id: u32,
        offset: u64,
        initial: Option<&'a [u8]>,
    },
    /// No memory: bound by the caller at run time.
    Unplanned,
}

/// An operator as KernelCalls name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// Namespace and name: `aten::add`.
    pub name: String,
    /// The overload, empty for the default one: `out`.
    pub overload: String,
}

impl Operator {
    /// `name.overload`, or `name` alone for the default overload: the key
    /// ExecuTorch's kernel registry uses.
    pub fn key(&self) -> String {
        if self.overload.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, self.overload)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instruction {
    Kernel {
        operator: OperatorIndex,
        args: Vec<ValueIndex>,
    },
    Delegate {
        delegate: DelegateIndex,
        args: Vec<ValueIndex>,
    },
    Move {
        from: ValueIndex,
        to: ValueIndex,
    },
    /// Jumps to `destination` (an index into the chain, at most its length)
    /// when the Bool value `condition` is false.
    JumpFalse {
        condition: ValueIndex,
        destination: usize,
    },
    Free {
        value: ValueIndex,
    },
}

/// A delegated subgraph and its backend's payload.
#[derive(Debug)]
pub struct Delegate<'a> {
    /// The backend: `XnnpackBackend`, `VulkanBackend`, ...
    pub id: String,
    pub payload: DelegatePayload<'a>,
    pub compile_specs: Vec<CompileSpec<'a>>,
}

#[derive(Debug, Clone)]
pub struct CompileSpec<'a> {
    pub key: String,
    pub value: &'a [u8],
}

impl Tensor<'_> {
    /// Whether `dim_order` is the identity: contiguous, row-major storage.
    pub fn is_contiguous_order(dim_order: &[u8]) -> bool {
        dim_order
            .iter()
            .enumerate()
            .all(|(index, &dim)| index == dim as usize)
    }
}
