//! What the code generator's tests share: running a graph with the JIT, and
//! reading the elements of its outputs.

use ptec_codegen::{CodegenOptions, compile_jit};
use ptec_ir::Graph;
use ptec_runtime::{DimSpec, HostTensor, Instance, RuntimeError, TensorRef};

/// Compiles `graph` (of fixed shapes) with the JIT and runs it on `inputs`,
/// the bytes of each input, whose element types and sizes the graph gives.
pub fn run_jit(graph: &Graph<'_>, inputs: &[&[u8]]) -> Result<Vec<HostTensor>, RuntimeError> {
    run_jit_with(graph, &CodegenOptions::default(), inputs)
}

/// [`run_jit`] with the code generator's `options`.
pub fn run_jit_with(
    graph: &Graph<'_>,
    options: &CodegenOptions,
    inputs: &[&[u8]],
) -> Result<Vec<HostTensor>, RuntimeError> {
    run_jit_on(graph, options, inputs, 1)
}

/// [`run_jit_with`] on `threads` threads (kernels large enough split
/// across them).
pub fn run_jit_on(
    graph: &Graph<'_>,
    options: &CodegenOptions,
    inputs: &[&[u8]],
    threads: usize,
) -> Result<Vec<HostTensor>, RuntimeError> {
    let method = compile_jit(graph, options, u64::MAX).expect("the graph compiles");
    let slots: Vec<_> = method
        .abi
        .inputs
        .iter()
        .map(|slot| {
            let sizes: Vec<u64> = slot
                .shape
                .iter()
                .map(|dim| match dim {
                    DimSpec::Fixed(size) => *size,
                    DimSpec::Symbol(_) => panic!("the test graphs have fixed shapes"),
                })
                .collect();
            (slot.element, sizes)
        })
        .collect();
    // SAFETY: `entry` was generated for `abi` and reads its constants from
    // this table; the boxed code keeps it alive.
    let mut instance = unsafe {
        Instance::new(
            method.abi,
            method.entry,
            method.constants,
            Box::new(method.code),
        )
    }
    .expect("an instance");
    instance.set_threads(threads)?;
    let inputs: Vec<TensorRef<'_>> = slots
        .iter()
        .zip(inputs)
        .map(|((element, sizes), data)| TensorRef {
            element: *element,
            sizes,
            data,
        })
        .collect();
    instance.run(&inputs)
}

/// The elements of `tensor`, each decoded from its little-endian bytes by
/// `from` (`f32::from_le_bytes`).
pub fn elements<T, const N: usize>(tensor: &HostTensor, from: fn([u8; N]) -> T) -> Vec<T> {
    tensor
        .data
        .chunks_exact(N)
        .map(|chunk| {
            let mut bytes = [0; N];
            bytes.copy_from_slice(chunk);
            from(bytes)
        })
        .collect()
}

/// The little-endian bytes of `values`, each encoded by `to`
/// (`i64::to_le_bytes`).
pub fn le_bytes<T: Copy, const N: usize>(values: &[T], to: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&value| to(value)).collect()
}
