//! What a compiled method looks like from outside: the entry point's
//! signature and the description of its memory, inputs, outputs and state.
//! Code generators produce these; the runtime needs nothing else.

use std::fmt;

/// The generated entry point of a method.
///
/// `arena` is the method's planned memory (inputs, outputs, activations
/// and state, at the offsets the [`MethodAbi`] gives), `constants` the
/// addresses of its constant tensors, and `dims` the current size of each
/// symbolic dimension; `pool` is a [`crate::pool::Pool`] the kernels split
/// their work on, or null to run on the calling thread alone. Returns 0 on
/// success, or `k` > 0 for the error `MethodAbi::errors[k - 1]`.
pub type EntryFn = unsafe extern "C" fn(
    arena: *mut u8,
    constants: *const *const u8,
    dims: *mut i64,
    pool: *mut std::ffi::c_void,
) -> i32;

/// Element types at the boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl ElementType {
    pub const ALL: [ElementType; 10] = [
        ElementType::Bool,
        ElementType::U8,
        ElementType::I8,
        ElementType::I16,
        ElementType::I32,
        ElementType::I64,
        ElementType::F16,
        ElementType::BF16,
        ElementType::F32,
        ElementType::F64,
    ];

    pub fn size(self) -> usize {
        match self {
            ElementType::Bool | ElementType::U8 | ElementType::I8 => 1,
            ElementType::I16 | ElementType::F16 | ElementType::BF16 => 2,
            ElementType::I32 | ElementType::F32 => 4,
            ElementType::I64 | ElementType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64
        )
    }

    /// The numpy name (`float32`, `int64`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ElementType::Bool => "bool",
            ElementType::U8 => "uint8",
            ElementType::I8 => "int8",
            ElementType::I16 => "int16",
            ElementType::I32 => "int32",
            ElementType::I64 => "int64",
            ElementType::F16 => "float16",
            ElementType::BF16 => "bfloat16",
            ElementType::F32 => "float32",
            ElementType::F64 => "float64",
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One dimension of a boundary tensor: a fixed size, or symbolic dimension
/// `k` (an index into the entry's `dims`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimSpec {
    Fixed(u64),
    Symbol(usize),
}

/// A tensor the method reads or writes at its boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSlot {
    /// Byte offset in the arena.
    pub offset: u64,
    pub element: ElementType,
    pub shape: Vec<DimSpec>,
    pub dim_order: Vec<u8>,
}

/// A buffer that persists between calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateSlot {
    pub offset: u64,
    /// Its contents before the first call; zeros when `None`.
    pub initial: Option<Vec<u8>>,
}

/// Everything the runtime needs to call a compiled method.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodAbi {
    pub name: String,
    pub arena_bytes: u64,
    /// The scratch memory at the end of the arena (included in
    /// `arena_bytes`), which each further thread of a pool needs for itself.
    pub scratch_bytes: u64,
    pub inputs: Vec<TensorSlot>,
    pub outputs: Vec<TensorSlot>,
    pub states: Vec<StateSlot>,
    /// The upper bound of each symbolic dimension.
    pub dim_bounds: Vec<u64>,
    /// The messages of the errors the generated code can return.
    pub errors: Vec<String>,
}
