//! Generated CPU code as the runtime holds it: entry points, the constant
//! table they read and whatever keeps the code alive. An [`Instance`]
//! calls one entry (the whole method); a Vulkan method with CPU segments
//! calls one per segment, on the device's mapped arena.
//!
//! [`Instance`]: crate::Instance

use std::any::Any;
use std::borrow::Cow;

use crate::abi::{EntryFn, MethodAbi};
use crate::instance::RuntimeError;

/// Entry points into generated code, with their constants.
pub struct Code<'c> {
    entries: Vec<EntryFn>,
    /// The constant tensors: borrowed from the program, or computed by the
    /// compiler and owned here. Only their addresses are read, through
    /// `constant_table`; this keeps the bytes alive.
    _constants: Vec<Cow<'c, [u8]>>,
    /// Their addresses, as the entry points read them.
    constant_table: Vec<*const u8>,
    /// Whatever owns the generated code (a JIT module, a loaded library).
    _code: Box<dyn Any + Send>,
}

// SAFETY: the raw pointers are the addresses of constants this keeps alive
// (`_constants`, bytes that are never written), and generated code keeps no
// thread-local state: moving this to another thread moves everything a call
// touches but the arena, which the caller owns.
unsafe impl Send for Code<'_> {}

impl std::fmt::Debug for Code<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Code")
            .field("entries", &self.entries.len())
            .field("constants", &self.constant_table.len())
            .finish_non_exhaustive()
    }
}

impl<'c> Code<'c> {
    /// Holds `entries` of generated code.
    ///
    /// # Safety
    /// Each entry must be code generated for the arena layout of the method
    /// it is called for, reading each constant `k` as the bytes of
    /// `constants[k]`, and must stay valid while `code` is alive.
    pub unsafe fn new(
        entries: Vec<EntryFn>,
        constants: Vec<Cow<'c, [u8]>>,
        code: Box<dyn Any + Send>,
    ) -> Self {
        Code {
            entries,
            // The bytes of a Cow do not move when the Vec holding it does.
            constant_table: constants.iter().map(|data| data.as_ptr()).collect(),
            _constants: constants,
            _code: code,
        }
    }

    /// No code: for a method that runs no generated CPU code.
    pub fn none() -> Code<'static> {
        Code {
            entries: Vec::new(),
            _constants: Vec::new(),
            constant_table: Vec::new(),
            _code: Box::new(()),
        }
    }

    /// How many entry points there are.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// Calls entry `entry` and turns a non-zero status into the error
    /// `abi.errors` names for it.
    ///
    /// # Safety
    /// `entry` is below [`Self::entries`]; `arena` holds `abi.arena_bytes`
    /// bytes laid out as the code expects, with the inputs it reads written;
    /// `dims` has one size per symbol of `abi`, each within its bound; `pool`
    /// is null or a pool whose workers have `abi.scratch_bytes` each.
    pub(crate) unsafe fn call(
        &self,
        entry: usize,
        abi: &MethodAbi,
        arena: *mut u8,
        dims: &mut [i64],
        pool: *mut std::ffi::c_void,
    ) -> Result<(), RuntimeError> {
        // SAFETY: the caller's contract, and `new`'s for the code itself.
        let status = unsafe {
            (self.entries[entry])(arena, self.constant_table.as_ptr(), dims.as_mut_ptr(), pool)
        };
        if status == 0 {
            return Ok(());
        }
        let message = usize::try_from(status - 1)
            .ok()
            .and_then(|index| abi.errors.get(index))
            .cloned()
            .unwrap_or_else(|| format!("unknown error code {status}"));
        Err(RuntimeError::Execution {
            method: abi.name.clone(),
            message,
        })
    }
}
