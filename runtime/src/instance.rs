//! An instance of a compiled method: its arena and state, the checks on its
//! inputs, and the call into generated code.

use std::any::Any;
use std::borrow::Cow;

use crate::abi::{DimSpec, ElementType, EntryFn, MethodAbi};
use crate::code::Code;
use crate::layout::{load_in_order, store_in_order};
use crate::pool::Pool;

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    #[error("method {method} takes {expected} inputs, {given} given")]
    InputCount {
        method: String,
        expected: usize,
        given: usize,
    },
    #[error("input {index}: expected {expected}, got {given}")]
    InputType {
        index: usize,
        expected: String,
        given: String,
    },
    #[error("input {index}: {problem}")]
    InputShape { index: usize, problem: String },
    #[error("input {index}: {given} bytes of data for {expected} expected")]
    InputBytes {
        index: usize,
        expected: usize,
        given: usize,
    },
    #[error("method {method} failed: {message}")]
    Execution { method: String, message: String },
    #[error("the arena of {bytes} bytes cannot be allocated")]
    Allocation { bytes: u64 },
    #[error("{threads} threads cannot be started (a method runs on 1 or more)")]
    Threads { threads: usize },
}

/// A tensor given to or returned by a method: element type, sizes and
/// contiguous (row-major) little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub element: ElementType,
    pub sizes: Vec<u64>,
    pub data: Vec<u8>,
}

impl HostTensor {
    /// A host tensor from elements stored in `dim_order` (outermost first);
    /// `None` unless `dim_order` is a permutation of the dimensions and
    /// `data` holds exactly the elements of `sizes`.
    pub fn from_dim_order(
        element: ElementType,
        sizes: Vec<u64>,
        data: &[u8],
        dim_order: &[u8],
    ) -> Option<HostTensor> {
        let mut order = dim_order.to_vec();
        order.sort_unstable();
        let is_permutation = order.iter().enumerate().all(|(i, &dim)| i == dim as usize)
            && order.len() == sizes.len();
        let bytes = sizes
            .iter()
            .try_fold(element.size() as u64, |bytes, &size| {
                bytes.checked_mul(size)
            });
        if !is_permutation || bytes != Some(data.len() as u64) {
            return None;
        }
        let data = load_in_order(data, &sizes, element.size(), dim_order);
        Some(HostTensor {
            element,
            sizes,
            data,
        })
    }
}

/// A borrowed input tensor.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'t> {
    pub element: ElementType,
    pub sizes: &'t [u64],
    pub data: &'t [u8],
}

/// Zeroed, page-aligned memory: an anonymous mapping, whose pages the
/// system provides (zeroed) when they are first touched, so that a method
/// planned for the bounds of dynamic shapes uses memory for the sizes it
/// runs at. Pages are not reserved in swap up front: a bound far beyond a
/// run's sizes costs address space only.
struct Arena {
    map: memmap2::MmapMut,
    ptr: *mut u8,
}

impl Arena {
    fn new(bytes: u64) -> Result<Self, RuntimeError> {
        let size = usize::try_from(bytes.max(1)).map_err(|_| RuntimeError::Allocation { bytes })?;
        let mut map = memmap2::MmapOptions::new()
            .len(size)
            .no_reserve_swap()
            .map_anon()
            .map_err(|_| RuntimeError::Allocation { bytes })?;
        let ptr = map.as_mut_ptr();
        Ok(Arena { map, ptr })
    }

    fn bytes(&self) -> &[u8] {
        &self.map
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }
}

/// A loaded method, ready to run; its state persists across calls.
pub struct Instance<'c> {
    abi: MethodAbi,
    /// The method's one entry point, with its constants.
    code: Code<'c>,
    arena: Arena,
    dims: Vec<i64>,
    /// The threads kernels split their work on; none runs everything on
    /// the caller's thread.
    pool: Option<Pool>,
}

// SAFETY: the arena's pointer is the instance's own (it allocated and owns
// the mapping), `Code` is `Send`, and `run` takes `&mut self`, so moving an
// instance to another thread moves everything its calls touch.
unsafe impl Send for Instance<'_> {}

impl std::fmt::Debug for Instance<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("abi", &self.abi)
            .finish_non_exhaustive()
    }
}

impl<'c> Instance<'c> {
    /// Creates an instance of the method that `entry` implements.
    ///
    /// # Safety
    /// `entry` must be code generated for exactly this `abi`, reading each
    /// constant `k` as the bytes of `constants[k]`, and must stay valid while
    /// `code` is alive.
    pub unsafe fn new(
        abi: MethodAbi,
        entry: EntryFn,
        constants: Vec<Cow<'c, [u8]>>,
        code: Box<dyn Any + Send>,
    ) -> Result<Self, RuntimeError> {
        let mut arena = Arena::new(abi.arena_bytes)?;
        write_initial_state(&abi, arena.bytes_mut());
        Ok(Instance {
            dims: abi.dim_bounds.iter().map(|&bound| bound as i64).collect(),
            abi,
            // SAFETY: this function's contract.
            code: unsafe { Code::new(vec![entry], constants, code) },
            arena,
            pool: None,
        })
    }

    pub fn abi(&self) -> &MethodAbi {
        &self.abi
    }

    /// Runs the method's kernels on `threads` threads from now on (1: on
    /// the caller's alone). Results are the same bits whatever the count.
    pub fn set_threads(&mut self, threads: usize) -> Result<(), RuntimeError> {
        self.pool = None;
        if threads == 1 {
            return Ok(());
        }
        self.pool = Some(
            Pool::new(threads, self.abi.scratch_bytes).ok_or(RuntimeError::Threads { threads })?,
        );
        Ok(())
    }

    /// How many threads the method runs on.
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, Pool::threads)
    }

    /// Runs the method on `inputs` and returns its outputs.
    pub fn run(&mut self, inputs: &[TensorRef<'_>]) -> Result<Vec<HostTensor>, RuntimeError> {
        self.bind(inputs)?;
        self.execute()?;
        Ok(self.outputs())
    }

    /// Checks the inputs, settles symbolic dimensions and copies the inputs
    /// into the arena.
    pub fn bind(&mut self, inputs: &[TensorRef<'_>]) -> Result<(), RuntimeError> {
        bind_inputs(&self.abi, &mut self.dims, self.arena.bytes_mut(), inputs)
    }

    /// Calls the generated code on the bound inputs.
    pub fn execute(&mut self) -> Result<(), RuntimeError> {
        // SAFETY: `Instance::new`'s contract: the entry point was generated
        // for this ABI; the arena has `arena_bytes` bytes, the constant table
        // one address per constant and `dims` one size per symbol, each
        // within its bound (checked in `bind`); the pool, when there is one,
        // gave each worker `scratch_bytes` of its own.
        let pool = self
            .pool
            .as_ref()
            .map_or(std::ptr::null_mut(), Pool::as_ptr);
        unsafe {
            self.code
                .call(0, &self.abi, self.arena.ptr, &mut self.dims, pool)
        }
    }

    /// The outputs of the last call, as contiguous tensors.
    pub fn outputs(&self) -> Vec<HostTensor> {
        read_outputs(&self.abi, &self.dims, self.arena.bytes())
    }
}

/// Writes the initial contents of the method's state into a fresh arena.
pub(crate) fn write_initial_state(abi: &MethodAbi, arena: &mut [u8]) {
    for state in &abi.states {
        if let Some(initial) = &state.initial {
            let start = state.offset as usize;
            arena[start..start + initial.len()].copy_from_slice(initial);
        }
    }
}

/// Checks the inputs against `abi`, settles symbolic dimensions into
/// `dims` and copies the inputs into `arena`.
pub(crate) fn bind_inputs(
    abi: &MethodAbi,
    dims: &mut [i64],
    arena: &mut [u8],
    inputs: &[TensorRef<'_>],
) -> Result<(), RuntimeError> {
    let expected = abi
        .inputs
        .iter()
        .map(|slot| (slot.element, slot.shape.len()));
    check_inputs(&abi.name, expected, inputs)?;
    let mut settled: Vec<Option<u64>> = vec![None; abi.dim_bounds.len()];
    for (index, (slot, input)) in abi.inputs.iter().zip(inputs).enumerate() {
        let shape_error = |problem: String| RuntimeError::InputShape { index, problem };
        for (axis, (spec, &size)) in slot.shape.iter().zip(input.sizes).enumerate() {
            match *spec {
                DimSpec::Fixed(fixed) => {
                    check_dimension(index, axis, input.sizes, Dimension::Fixed(fixed))?
                }
                DimSpec::Symbol(symbol) => {
                    let bound = Dimension::AtMost(abi.dim_bounds[symbol]);
                    check_dimension(index, axis, input.sizes, bound)?;
                    match settled[symbol] {
                        Some(seen) if seen != size => {
                            return Err(shape_error(format!(
                                "dimension {axis} is {size}, but another input gives this dimension size {seen}"
                            )));
                        }
                        _ => settled[symbol] = Some(size),
                    }
                }
            }
        }
    }
    for (symbol, size) in settled.iter().enumerate() {
        if let Some(size) = size {
            dims[symbol] = *size as i64;
        }
    }
    for (slot, input) in abi.inputs.iter().zip(inputs) {
        let start = slot.offset as usize;
        store_in_order(&mut arena[start..], input, &slot.dim_order);
    }
    Ok(())
}

/// What a dimension of an input may be.
#[derive(Clone, Copy)]
pub(crate) enum Dimension {
    Fixed(u64),
    /// A dynamic dimension, with its bound.
    AtMost(u64),
}

/// Checks dimension `axis` of input `index`, whose sizes are `sizes`.
pub(crate) fn check_dimension(
    index: usize,
    axis: usize,
    sizes: &[u64],
    dimension: Dimension,
) -> Result<(), RuntimeError> {
    let size = sizes[axis];
    let problem = match dimension {
        Dimension::Fixed(fixed) if size != fixed => {
            format!("dimension {axis} must be {fixed}, got shape {sizes:?}")
        }
        Dimension::AtMost(bound) if size > bound => {
            format!("dimension {axis} is {size}, above its bound {bound}")
        }
        _ => return Ok(()),
    };
    Err(RuntimeError::InputShape { index, problem })
}

/// The outputs in `arena`, as contiguous tensors.
pub(crate) fn read_outputs(abi: &MethodAbi, dims: &[i64], arena: &[u8]) -> Vec<HostTensor> {
    abi.outputs
        .iter()
        .map(|slot| {
            let sizes: Vec<u64> = slot
                .shape
                .iter()
                .map(|dim| match *dim {
                    DimSpec::Fixed(size) => size,
                    DimSpec::Symbol(symbol) => dims[symbol] as u64,
                })
                .collect();
            let bytes = sizes.iter().product::<u64>() as usize * slot.element.size();
            let start = slot.offset as usize;
            HostTensor {
                element: slot.element,
                data: load_in_order(
                    &arena[start..start + bytes],
                    &sizes,
                    slot.element.size(),
                    &slot.dim_order,
                ),
                sizes,
            }
        })
        .collect()
}

/// Checks what every back end needs before it touches memory: the number of
/// inputs, and each input's element type, rank and byte count (`expected`
/// gives the element type and rank of each input).
pub(crate) fn check_inputs(
    method: &str,
    expected: impl ExactSizeIterator<Item = (ElementType, usize)>,
    inputs: &[TensorRef<'_>],
) -> Result<(), RuntimeError> {
    if inputs.len() != expected.len() {
        return Err(RuntimeError::InputCount {
            method: method.to_string(),
            expected: expected.len(),
            given: inputs.len(),
        });
    }
    for (index, ((element, rank), input)) in expected.zip(inputs).enumerate() {
        if element != input.element {
            return Err(RuntimeError::InputType {
                index,
                expected: element.to_string(),
                given: input.element.to_string(),
            });
        }
        if rank != input.sizes.len() {
            return Err(RuntimeError::InputShape {
                index,
                problem: format!("expected rank {rank}, got shape {:?}", input.sizes),
            });
        }
        let bytes = input
            .sizes
            .iter()
            .try_fold(input.element.size() as u64, |bytes, &size| {
                bytes.checked_mul(size)
            });
        if bytes != Some(input.data.len() as u64) {
            return Err(RuntimeError::InputBytes {
                index,
                expected: bytes.map_or(usize::MAX, |bytes| bytes as usize),
                given: input.data.len(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_stored_transposed_reads_back_row_major() {
        // [2, 3] stored in dim order [1, 0]: column by column.
        let stored: Vec<u8> = [0u8, 3, 1, 4, 2, 5].to_vec();
        let tensor = HostTensor::from_dim_order(ElementType::U8, vec![2, 3], &stored, &[1, 0])
            .expect("a permutation and every element");
        assert_eq!(tensor.data, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_dim_order_that_is_no_permutation_or_short_data_is_refused() {
        let data = [0u8; 6];
        assert!(HostTensor::from_dim_order(ElementType::U8, vec![2, 3], &data, &[0, 0]).is_none());
        assert!(HostTensor::from_dim_order(ElementType::U8, vec![2, 3], &data, &[0]).is_none());
        assert!(HostTensor::from_dim_order(ElementType::U8, vec![2, 4], &data, &[0, 1]).is_none());
        assert!(
            HostTensor::from_dim_order(ElementType::U8, vec![u64::MAX, 3], &data, &[0, 1])
                .is_none()
        );
    }
}
