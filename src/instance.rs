//! From a frontend method to a runnable instance: import, verify, compile
//! (JIT) and load.

use std::time::Instant;

use anyhow::Context as _;
use ptec_frontend::Method;
use ptec_runtime::{HostTensor, Instance, TensorRef};

/// The back ends `ptec run`, `test` and `bench` can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// Compile in-process with Cranelift and run the code directly.
    Jit,
}

/// An instance and how long it took to compile.
pub struct Loaded<'a> {
    pub instance: Instance<'a>,
    pub compile_ms: f64,
}

pub fn load<'a>(method: &Method<'a>, backend: Backend) -> anyhow::Result<Loaded<'a>> {
    let start = Instant::now();
    let graph = ptec_ir::import_method(method)?;
    ptec_ir::verify(&graph)?;
    let instance = match backend {
        Backend::Jit => {
            let jit = ptec_codegen::compile_jit(&graph)
                .with_context(|| format!("compiling method {}", method.name))?;
            let (entry, abi, constants) = (jit.entry, jit.abi.clone(), jit.constants.clone());
            // SAFETY: `entry` was generated for `abi` and reads its constants
            // from this table; the boxed code keeps it alive.
            unsafe { Instance::new(abi, entry, &constants, Box::new(jit.code))? }
        }
    };
    Ok(Loaded {
        instance,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

/// Borrowed views of host tensors, for `Instance::run`.
pub fn refs(tensors: &[HostTensor]) -> Vec<TensorRef<'_>> {
    tensors
        .iter()
        .map(|tensor| TensorRef {
            element: tensor.element,
            sizes: &tensor.sizes,
            data: &tensor.data,
        })
        .collect()
}
