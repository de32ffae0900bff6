//! Tensors across the boundary, without copies: inputs are read in place
//! from C-contiguous numpy arrays (the Python half hands torch tensors over
//! as numpy views of their memory), and each output's bytes become the
//! memory of a numpy array, which the Python half views with the output's
//! dtype and shape.

use numpy::{PyArray1, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use ptec_runtime::{ElementType, HostTensor, TensorRef};
use pyo3::prelude::*;

use crate::errors::InputError;

/// An input as the Python half passes it: a C-contiguous numpy array and
/// the element type its bytes hold (`bfloat16` arrives as a view of 16-bit
/// integers, since numpy has no bfloat16).
pub(crate) type InputArray<'py> = (Bound<'py, PyUntypedArray>, String);

/// An output as the Python half receives it: its bytes as a one-dimensional
/// `uint8` array that owns them, its element type and its sizes.
pub(crate) type OutputArray<'py> = (Bound<'py, PyArray1<u8>>, &'static str, Vec<u64>);

/// An input's element type, sizes and the bytes it views in place.
pub(crate) struct InputView {
    element: ElementType,
    sizes: Vec<u64>,
    data: *const u8,
    len: usize,
}

// SAFETY: `data` points into a numpy array that the caller keeps alive (it
// holds the `InputArray`s) for as long as the view is used; the view only
// reads, so it may be sent to and shared with the thread that runs the
// method while the GIL is released.
unsafe impl Send for InputView {}
// SAFETY: as for `Send`.
unsafe impl Sync for InputView {}

impl InputView {
    /// Checks an input array and records where its bytes are.
    pub(crate) fn new(index: usize, (array, element): &InputArray<'_>) -> PyResult<Self> {
        let problem = |what: String| InputError::new_err(format!("input {index}: {what}"));
        let element = ElementType::ALL
            .into_iter()
            .find(|known| known.name() == element)
            .ok_or_else(|| problem(format!("ptec has no element type {element:?}")))?;
        if !array.is_c_contiguous() {
            return Err(problem("the array is not C-contiguous".to_string()));
        }
        let itemsize = array.dtype().itemsize();
        if itemsize != element.size() {
            return Err(problem(format!(
                "{itemsize}-byte items cannot hold {element} elements"
            )));
        }
        let len = array.len() * itemsize;
        // SAFETY: `as_array_ptr` is the array object itself, alive while
        // `array` is; its `data` field is the address of its first element.
        let data = unsafe { (*array.as_array_ptr()).fields.data } as *const u8;
        Ok(InputView {
            element,
            sizes: array.shape().iter().map(|&size| size as u64).collect(),
            data,
            len,
        })
    }

    /// The input as the runtime reads it.
    pub(crate) fn as_ref(&self) -> TensorRef<'_> {
        let data = if self.len == 0 {
            &[][..]
        } else {
            // SAFETY: a C-contiguous array holds `len` bytes from `data`,
            // and the array outlives the view (see the `Send` impl). A
            // writer on another thread while the method reads it races, as
            // it would with any consumer of the array's buffer.
            unsafe { std::slice::from_raw_parts(self.data, self.len) }
        };
        TensorRef {
            element: self.element,
            sizes: &self.sizes,
            data,
        }
    }
}

/// Hands a host tensor's bytes to numpy without copying them.
pub(crate) fn output(py: Python<'_>, tensor: HostTensor) -> OutputArray<'_> {
    let HostTensor {
        element,
        sizes,
        data,
    } = tensor;
    (PyArray1::from_vec(py, data), element.name(), sizes)
}
