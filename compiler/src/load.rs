//! Loading a method to run it: compiled for a back end, instantiated, and
//! called through one interface whichever back end runs it.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use ptec_codegen::{Linker, VulkanLimits, vulkan_dispatches};
use ptec_frontend::{Method, ScalarType};
use ptec_ir::Graph;
use ptec_passes::PassReport;
use ptec_runtime::library::{Library, LibraryInstance};
use ptec_runtime::vulkan::{DeviceLimits, VulkanDevice, VulkanInstance};
use ptec_runtime::{Code, ElementType, HostTensor, Instance, RuntimeError, TensorRef};

use crate::error::Error;
use crate::pipeline::{
    Options, jit, jit_segments, object, optimize_within, vulkan_within, write_shared_object,
};

/// The back ends a method can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// Compiled in-process with Cranelift and called directly.
    Jit,
    /// Compiled to a shared object, loaded, and called through its C ABI,
    /// as a C program would.
    Aot,
    /// Compute shaders (SPIR-V, with naga) on a Vulkan device
    /// (`PTEC_VULKAN_DEVICE` picks one).
    Vulkan,
}

impl Backend {
    pub const ALL: [Backend; 3] = [Backend::Jit, Backend::Aot, Backend::Vulkan];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Jit => "jit",
            Backend::Aot => "aot",
            Backend::Vulkan => "vulkan",
        }
    }

    /// The code generator that serves this back end.
    pub fn code_generator(self) -> ptec_codegen::Backend {
        match self {
            Backend::Jit | Backend::Aot => ptec_codegen::Backend::Cpu,
            Backend::Vulkan => ptec_codegen::Backend::Vulkan,
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Backend::ALL
            .into_iter()
            .find(|backend| backend.name() == name)
            .ok_or_else(|| format!("{name:?} is not a back end (jit, aot or vulkan)"))
    }
}

/// A loaded method, on whichever back end.
#[derive(Debug)]
pub enum Runner<'a> {
    Jit(Box<Instance<'a>>),
    Aot {
        instance: LibraryInstance,
        method: usize,
    },
    Vulkan(Box<VulkanInstance<'a>>),
}

impl Runner<'_> {
    /// Splits the method's kernels across `threads` threads from now on
    /// (1: the caller's alone). A Vulkan device runs its shaders its own
    /// way: the count does not apply there.
    pub fn set_threads(&mut self, threads: usize) -> Result<(), RuntimeError> {
        match self {
            Runner::Jit(instance) => instance.set_threads(threads),
            Runner::Aot { instance, .. } => instance.set_threads(threads),
            Runner::Vulkan(_) => Ok(()),
        }
    }

    /// Runs the method once on `inputs`; state persists to the next run.
    pub fn run(&mut self, inputs: &[TensorRef<'_>]) -> Result<Vec<HostTensor>, RuntimeError> {
        match self {
            Runner::Jit(instance) => instance.run(inputs),
            Runner::Aot { instance, method } => instance.run(*method, inputs),
            Runner::Vulkan(instance) => instance.run(inputs),
        }
    }
}

/// A loaded method, how long compiling it took, and what each pass did.
#[derive(Debug)]
pub struct Loaded<'a> {
    pub runner: Runner<'a>,
    pub compile_ms: f64,
    pub passes: Vec<PassReport>,
    /// With `options.codegen.profile`, the kernels the profile's marks
    /// number (`ptec_codegen::profiled_kernels`), or on Vulkan the
    /// dispatches in order; empty otherwise.
    pub kernels: Vec<String>,
}

/// Compiles `method` for `backend` and makes an instance of it.
pub fn load<'a>(
    method: &Method<'a>,
    backend: Backend,
    options: &Options,
) -> Result<Loaded<'a>, Error> {
    let start = Instant::now();
    let vulkan;
    let options = match backend {
        Backend::Vulkan => {
            vulkan = options.for_vulkan();
            &vulkan
        }
        _ => options,
    };
    let optimized = optimize_within(method, options, |_, _| {})?;
    let runner = instantiate(&optimized.graph, backend, options)?;
    let kernels = match (options.codegen.profile, backend) {
        (false, _) => Vec::new(),
        (true, Backend::Vulkan) => vulkan_dispatch_names(&optimized.graph, options)?,
        (true, _) => ptec_codegen::profiled_kernels(&optimized.graph),
    };
    Ok(Loaded {
        runner,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
        passes: optimized.reports,
        kernels,
    })
}

/// Generates code for a graph the pipeline planned and makes an instance of
/// it on `backend`, running on `options.threads` threads: [`load`] after the
/// optimizer, and what a caller that builds graphs itself (the differential
/// test, the fuzzer) runs them with.
pub fn instantiate<'a>(
    graph: &Graph<'a>,
    backend: Backend,
    options: &Options,
) -> Result<Runner<'a>, Error> {
    let mut runner = instance(graph, backend, options)?;
    runner.set_threads(options.threads)?;
    Ok(runner)
}

fn instance<'a>(
    graph: &Graph<'a>,
    backend: Backend,
    options: &Options,
) -> Result<Runner<'a>, Error> {
    Ok(match backend {
        Backend::Jit => {
            let ptec_codegen::JitMethod {
                code,
                entry,
                abi,
                constants,
            } = jit(graph, options)?;
            // SAFETY: `entry` was generated for `abi` and reads its constants
            // from this table; the boxed code keeps it alive.
            Runner::Jit(Box::new(unsafe {
                Instance::new(abi, entry, constants, Box::new(code))?
            }))
        }
        Backend::Aot => load_shared_object(graph, options)?,
        Backend::Vulkan => {
            // Shaders for this device's limits; what the back end refuses
            // is said before a missing device is.
            let device = vulkan_device();
            let limits = vulkan_limits(
                device.as_ref().ok().map(|device| device.limits()),
                options.codegen.vulkan,
            );
            let compiled = vulkan_within(graph, &options.limits, &limits)?;
            let device = device?;
            // The kernels no shader runs are the JIT's, on the same arena
            // (with their scratch memory after the plan's).
            let segments = compiled.cpu_segments();
            let (abi, host) = match segments.is_empty() {
                true => (compiled.abi.clone(), Code::none()),
                false => {
                    let jit = jit_segments(graph, &segments, options)?;
                    // SAFETY: the entries were generated for this graph's
                    // arena plan and read this constant table; the boxed
                    // code keeps them alive.
                    let host = unsafe { Code::new(jit.entries, jit.constants, Box::new(jit.code)) };
                    (jit.abi, host)
                }
            };
            let program = compiled.device_program(abi.arena_bytes);
            // SAFETY: as above: `host` is code generated for `abi`.
            let profile = options.codegen.profile;
            let instance = unsafe { VulkanInstance::new(device, abi, &program, host, profile) }
                .map_err(|source| Error::Vulkan {
                    method: graph.name.clone(),
                    source,
                })?;
            Runner::Vulkan(Box::new(instance))
        }
    })
}

/// The kernels of each dispatch of a graph's Vulkan program, in order, by
/// node and op (`n12 convolution`, or `n3 add + n4 softmax` for a run of
/// small kernels in one dispatch).
fn vulkan_dispatch_names(graph: &Graph<'_>, options: &Options) -> Result<Vec<String>, Error> {
    let device = vulkan_device().ok();
    let limits = vulkan_limits(
        device.as_ref().map(|device| device.limits()),
        options.codegen.vulkan,
    );
    let dispatches = vulkan_dispatches(graph, &limits).map_err(|source| Error::Codegen {
        method: graph.name.clone(),
        target: "Vulkan",
        source,
    })?;
    Ok(dispatches
        .into_iter()
        .map(|nodes| {
            nodes
                .iter()
                .map(|&node| format!("{node} {}", graph.node(node).op().name()))
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .collect())
}

/// The Vulkan device, opened once per process.
/// The limits shaders are written for on `device`: the device's own, or
/// what the user asked for (`asked`) where it is lower; without a device,
/// what the user asked for.
fn vulkan_limits(device: Option<&DeviceLimits>, asked: VulkanLimits) -> VulkanLimits {
    device.map_or(asked, |device| {
        let range = u64::from(device.max_storage_buffer_range);
        VulkanLimits {
            texel_buffer_elements: asked
                .texel_buffer_elements
                .min(device.max_texel_buffer_elements.into()),
            storage_buffer_range: Some(
                asked
                    .storage_buffer_range
                    .map_or(range, |asked| asked.min(range)),
            ),
        }
    })
}

fn vulkan_device() -> Result<Arc<VulkanDevice>, Error> {
    static DEVICE: OnceLock<Arc<VulkanDevice>> = OnceLock::new();
    if let Some(device) = DEVICE.get() {
        return Ok(device.clone());
    }
    let device = Arc::new(VulkanDevice::open().map_err(Error::VulkanDevice)?);
    Ok(DEVICE.get_or_init(|| device).clone())
}

/// Compiles an optimized graph into a shared object for this machine, links
/// it in a temporary directory, loads it and creates an instance.
fn load_shared_object<'a>(graph: &Graph<'_>, options: &Options) -> Result<Runner<'a>, Error> {
    const PREFIX: &str = "ptec";
    let object = object(
        std::slice::from_ref(graph),
        &options.aot(None, PREFIX, false),
    )?;
    options.limits.check_code(&graph.name, object.bytes.len())?;
    let directory = tempfile::tempdir().map_err(|source| Error::Io {
        what: "creating a temporary directory".into(),
        source,
    })?;
    let path = directory.path().join("model.so");
    write_shared_object(&object, &Linker::for_target(None), &path)?;
    // SAFETY: ptec just wrote this library with this prefix.
    let library = unsafe { Library::open(&path, PREFIX)? };
    let instance = LibraryInstance::new(Arc::new(library), graph.arena_size())?;
    Ok(Runner::Aot {
        instance,
        method: 0,
    })
}

/// The runtime's element type for an element type of the file, when ptec
/// computes with it.
pub fn element_type_of(scalar: ScalarType) -> Option<ElementType> {
    ptec_import::dtype_of(scalar).map(ptec_codegen::element_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A desktop GPU's limits: 4 GiB - 1 a binding, 2^28 texels a view.
    const DESKTOP: DeviceLimits = DeviceLimits {
        max_workgroup_count: [65535; 3],
        max_workgroup_size: [1024, 1024, 64],
        max_workgroup_invocations: 1024,
        max_storage_buffer_range: u32::MAX,
        max_allocation_bytes: 1 << 32,
        max_texel_buffer_elements: 1 << 28,
        max_push_constant_bytes: 256,
        binding_alignment: 64,
    };

    #[test]
    fn shaders_are_written_for_the_devices_limits_or_lower_ones_asked_for() {
        let unasked = VulkanLimits::DEFAULT;
        assert_eq!(
            vulkan_limits(Some(&DESKTOP), unasked),
            VulkanLimits {
                texel_buffer_elements: 1 << 27,
                storage_buffer_range: Some(u64::from(u32::MAX)),
            }
        );
        let asked = VulkanLimits {
            texel_buffer_elements: 1 << 30,
            storage_buffer_range: Some(2048),
        };
        assert_eq!(
            vulkan_limits(Some(&DESKTOP), asked),
            VulkanLimits {
                texel_buffer_elements: 1 << 28,
                storage_buffer_range: Some(2048),
            }
        );
        let above = VulkanLimits {
            storage_buffer_range: Some(1 << 40),
            ..unasked
        };
        assert_eq!(
            vulkan_limits(Some(&DESKTOP), above).storage_buffer_range,
            Some(u64::from(u32::MAX))
        );
        assert_eq!(vulkan_limits(None, asked), asked);
    }
}
