//! Runs a shared object `ptec compile` wrote, through its C ABI
//! ([`crate::c_abi`]): the same calls a C program makes, so that testing a
//! library this way tests what its users get.

use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::abi::ElementType;
use crate::c_abi::{CTensor, CTensorInfo, symbol};
use crate::instance::{
    Dimension, HostTensor, RuntimeError, TensorRef, check_dimension, check_inputs,
};
use crate::layout::{load_in_order, store_in_order};

/// Why a library could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("cannot load {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: libloading::Error,
    },
    #[error("{path} does not export {symbol}: {source}")]
    Symbol {
        path: PathBuf,
        symbol: String,
        #[source]
        source: libloading::Error,
    },
    #[error("{path}: {problem}")]
    Malformed { path: PathBuf, problem: String },
}

type Create = unsafe extern "C" fn() -> *mut c_void;
type Destroy = unsafe extern "C" fn(*mut c_void);
type MethodCount = unsafe extern "C" fn() -> i32;
type MethodName = unsafe extern "C" fn(i32) -> *const c_char;
type TensorCount = unsafe extern "C" fn(i32) -> i32;
type TensorInfo = unsafe extern "C" fn(i32, i32) -> *const CTensorInfo;
type SetThreads = unsafe extern "C" fn(*mut c_void, i32) -> i32;
type Run = unsafe extern "C" fn(*mut c_void, i32, *const CTensor, *mut CTensor) -> i32;
type StatusMessage = unsafe extern "C" fn(i32) -> *const c_char;

/// The exported functions.
struct Api {
    create: Create,
    destroy: Destroy,
    set_threads: SetThreads,
    run: Run,
    status_message: StatusMessage,
}

/// A method's boundary, as the library describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryMethod {
    pub name: String,
    pub inputs: Vec<LibraryTensor>,
    pub outputs: Vec<LibraryTensor>,
}

/// One input or output: element type, sizes (`None` where dynamic), upper
/// bounds and dim order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryTensor {
    pub element: ElementType,
    pub sizes: Vec<Option<u64>>,
    pub max_sizes: Vec<u64>,
    pub dim_order: Vec<u8>,
}

impl LibraryTensor {
    fn max_bytes(&self) -> usize {
        self.max_sizes.iter().product::<u64>() as usize * self.element.size()
    }
}

/// A loaded shared object.
pub struct Library {
    api: Api,
    methods: Vec<LibraryMethod>,
    /// Keeps the code mapped; dropped last.
    _library: libloading::Library,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("methods", &self.methods)
            .finish_non_exhaustive()
    }
}

impl Library {
    /// Loads `path` and reads the description of its methods; `prefix` is
    /// the one it was compiled with.
    ///
    /// # Safety
    /// `path` must be a library `ptec compile` wrote: loading runs its
    /// initialisers, and its functions are called with the C ABI's
    /// signatures.
    pub unsafe fn open(path: &Path, prefix: &str) -> Result<Library, LibraryError> {
        // SAFETY: the caller vouches for the library.
        let library =
            unsafe { libloading::Library::new(path) }.map_err(|source| LibraryError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        let lookup = |name: &str| {
            let symbol = format!("{prefix}_{name}");
            // SAFETY: every use below casts to the type the C ABI gives
            // this function.
            unsafe { library.get::<*const c_void>(symbol.as_bytes()) }
                .map(|function| *function)
                .map_err(|source| LibraryError::Symbol {
                    path: path.to_path_buf(),
                    symbol,
                    source,
                })
        };
        // SAFETY (all transmutes): each symbol is the function of that name
        // in the C ABI, with the signature its type alias spells out.
        let api = unsafe {
            Api {
                create: std::mem::transmute::<*const c_void, Create>(lookup(symbol::CREATE)?),
                destroy: std::mem::transmute::<*const c_void, Destroy>(lookup(symbol::DESTROY)?),
                set_threads: std::mem::transmute::<*const c_void, SetThreads>(lookup(
                    symbol::SET_THREADS,
                )?),
                run: std::mem::transmute::<*const c_void, Run>(lookup(symbol::RUN)?),
                status_message: std::mem::transmute::<*const c_void, StatusMessage>(lookup(
                    symbol::STATUS_MESSAGE,
                )?),
            }
        };
        // SAFETY: as above.
        let (method_count, method_name, input_count, output_count, input_info, output_info) = unsafe {
            (
                std::mem::transmute::<*const c_void, MethodCount>(lookup(symbol::METHOD_COUNT)?),
                std::mem::transmute::<*const c_void, MethodName>(lookup(symbol::METHOD_NAME)?),
                std::mem::transmute::<*const c_void, TensorCount>(lookup(symbol::INPUT_COUNT)?),
                std::mem::transmute::<*const c_void, TensorCount>(lookup(symbol::OUTPUT_COUNT)?),
                std::mem::transmute::<*const c_void, TensorInfo>(lookup(symbol::INPUT_INFO)?),
                std::mem::transmute::<*const c_void, TensorInfo>(lookup(symbol::OUTPUT_INFO)?),
            )
        };
        let malformed = |problem: String| LibraryError::Malformed {
            path: path.to_path_buf(),
            problem,
        };
        let tensors = |method: i32, count: TensorCount, info: TensorInfo| {
            // SAFETY: the query functions take any index and return a count
            // or null for one out of range.
            let count = unsafe { count(method) };
            (0..count)
                .map(|index| {
                    // SAFETY: as above.
                    let info = unsafe { info(method, index).as_ref() }
                        .ok_or_else(|| malformed(format!("no info for tensor {index}")))?;
                    // SAFETY: a non-null info points to `rank` entries in
                    // each of its arrays, in the library's read-only data.
                    unsafe { read_info(info) }.ok_or_else(|| {
                        malformed(format!("unknown element type code {}", info.dtype))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        // SAFETY: takes no arguments.
        let methods = (0..unsafe { method_count() })
            .map(|method| {
                // SAFETY: `method` is in range, so the name is a C string in
                // the library's read-only data.
                let name = unsafe { CStr::from_ptr(method_name(method)) };
                Ok(LibraryMethod {
                    name: name.to_string_lossy().into_owned(),
                    inputs: tensors(method, input_count, input_info)?,
                    outputs: tensors(method, output_count, output_info)?,
                })
            })
            .collect::<Result<_, LibraryError>>()?;
        Ok(Library {
            api,
            methods,
            _library: library,
        })
    }

    pub fn methods(&self) -> &[LibraryMethod] {
        &self.methods
    }

    /// The message for a status `run` returned.
    fn status_message(&self, status: i32) -> String {
        // SAFETY: returns a C string in read-only data for every status.
        unsafe { CStr::from_ptr((self.api.status_message)(status)) }
            .to_string_lossy()
            .into_owned()
    }
}

/// # Safety
/// `info`'s arrays must each hold `rank` entries.
unsafe fn read_info(info: &CTensorInfo) -> Option<LibraryTensor> {
    let rank = usize::try_from(info.rank).ok()?;
    let array = |pointer: *const i64| {
        // SAFETY: the caller's contract.
        (rank > 0).then(|| unsafe { std::slice::from_raw_parts(pointer, rank) })
    };
    let sizes = array(info.sizes).unwrap_or_default();
    let max_sizes = array(info.max_sizes).unwrap_or_default();
    Some(LibraryTensor {
        element: ElementType::from_code(info.dtype)?,
        sizes: sizes.iter().map(|&size| u64::try_from(size).ok()).collect(),
        max_sizes: max_sizes.iter().map(|&size| size as u64).collect(),
        dim_order: match rank {
            // SAFETY: the caller's contract.
            1.. => unsafe { std::slice::from_raw_parts(info.dim_order, rank) }.to_vec(),
            0 => Vec::new(),
        },
    })
}

/// An instance of a library: the memory and state of each of its methods.
pub struct LibraryInstance {
    library: Arc<Library>,
    handle: NonNull<c_void>,
}

// SAFETY: `handle` is this instance's own memory, created by the library's
// `create` and freed by its `destroy` in `drop`; the library's code keeps no
// thread-local state, and runs take `&mut self`.
unsafe impl Send for LibraryInstance {}

impl std::fmt::Debug for LibraryInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LibraryInstance")
            .field("library", &self.library)
            .finish_non_exhaustive()
    }
}

impl LibraryInstance {
    /// An instance of `library`, whose methods' arenas take `arena_bytes`
    /// together (the C ABI does not say; the error names it when the
    /// library cannot allocate them).
    pub fn new(library: Arc<Library>, arena_bytes: u64) -> Result<LibraryInstance, RuntimeError> {
        // SAFETY: takes no arguments; returns null when out of memory.
        let handle = unsafe { (library.api.create)() };
        let handle = NonNull::new(handle).ok_or(RuntimeError::Allocation { bytes: arena_bytes })?;
        Ok(LibraryInstance { library, handle })
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    /// Runs the instance's methods on `threads` threads from now on
    /// (`<prefix>_set_threads`).
    pub fn set_threads(&mut self, threads: usize) -> Result<(), RuntimeError> {
        let count = i32::try_from(threads).map_err(|_| RuntimeError::Threads { threads })?;
        // SAFETY: the instance is live and no run is in progress (`&mut`).
        let status = unsafe { (self.library.api.set_threads)(self.handle.as_ptr(), count) };
        match status {
            0 => Ok(()),
            _ => Err(RuntimeError::Threads { threads }),
        }
    }

    /// Runs method `method` on `inputs` (row-major) and returns its outputs
    /// (row-major).
    pub fn run(
        &mut self,
        method: usize,
        inputs: &[TensorRef<'_>],
    ) -> Result<Vec<HostTensor>, RuntimeError> {
        let description = &self.library.methods[method];
        let expected = description
            .inputs
            .iter()
            .map(|tensor| (tensor.element, tensor.sizes.len()));
        check_inputs(&description.name, expected, inputs)?;
        for (index, (tensor, input)) in description.inputs.iter().zip(inputs).enumerate() {
            for (axis, (&fixed, &bound)) in tensor.sizes.iter().zip(&tensor.max_sizes).enumerate() {
                let dimension = match fixed {
                    Some(size) => Dimension::Fixed(size),
                    None => Dimension::AtMost(bound),
                };
                check_dimension(index, axis, input.sizes, dimension)?;
            }
        }
        let mut input_data: Vec<Vec<u8>> = description
            .inputs
            .iter()
            .zip(inputs)
            .map(|(tensor, input)| {
                let mut stored = vec![0; input.data.len()];
                store_in_order(&mut stored, input, &tensor.dim_order);
                stored
            })
            .collect();
        let mut input_sizes: Vec<Vec<i64>> = inputs
            .iter()
            .map(|input| input.sizes.iter().map(|&size| size as i64).collect())
            .collect();
        let c_inputs: Vec<CTensor> = input_data
            .iter_mut()
            .zip(&mut input_sizes)
            .map(|(data, sizes)| CTensor {
                data: data.as_mut_ptr().cast(),
                sizes: sizes.as_mut_ptr(),
            })
            .collect();
        let mut output_data: Vec<Vec<u8>> = description
            .outputs
            .iter()
            .map(|tensor| vec![0; tensor.max_bytes()])
            .collect();
        let mut output_sizes: Vec<Vec<i64>> = description
            .outputs
            .iter()
            .map(|tensor| vec![0; tensor.sizes.len()])
            .collect();
        let mut c_outputs: Vec<CTensor> = output_data
            .iter_mut()
            .zip(&mut output_sizes)
            .map(|(data, sizes)| CTensor {
                data: data.as_mut_ptr().cast(),
                sizes: sizes.as_mut_ptr(),
            })
            .collect();
        // SAFETY: one tensor per input, each holding as many bytes as its
        // sizes say (checked above), and one per output with room for its
        // largest size; the instance is live.
        let status = unsafe {
            (self.library.api.run)(
                self.handle.as_ptr(),
                method as i32,
                c_inputs.as_ptr(),
                c_outputs.as_mut_ptr(),
            )
        };
        if status != 0 {
            return Err(RuntimeError::Execution {
                method: description.name.clone(),
                message: self.library.status_message(status),
            });
        }
        description
            .outputs
            .iter()
            .zip(output_data)
            .zip(output_sizes)
            .enumerate()
            .map(|(index, ((tensor, stored), sizes))| {
                let sizes: Vec<u64> = sizes.iter().map(|&size| size as u64).collect();
                let within_bounds = sizes.iter().zip(&tensor.max_sizes).all(|(s, max)| s <= max);
                if !within_bounds {
                    return Err(RuntimeError::Execution {
                        method: description.name.clone(),
                        message: format!(
                            "output {index} has sizes {sizes:?}, beyond its bounds {:?}",
                            tensor.max_sizes
                        ),
                    });
                }
                let bytes = sizes.iter().product::<u64>() as usize * tensor.element.size();
                Ok(HostTensor {
                    element: tensor.element,
                    data: load_in_order(
                        &stored[..bytes],
                        &sizes,
                        tensor.element.size(),
                        &tensor.dim_order,
                    ),
                    sizes,
                })
            })
            .collect()
    }
}

impl Drop for LibraryInstance {
    fn drop(&mut self) {
        // SAFETY: created by this library's `create`, destroyed once.
        unsafe { (self.library.api.destroy)(self.handle.as_ptr()) }
    }
}
