//! The invariant a generated program must meet: the verifier refuses it, or
//! it runs on the JIT with the optimizer on and off and both agree (bit for
//! bit on integers and booleans, within a small tolerance on floats, whose
//! rounding fused chains and widened halves may change), the object code
//! generator compiles it (or refuses it as the JIT does), and the Vulkan
//! generator gives shaders naga validates, placing on the CPU the kernels no
//! shader expresses (it refuses only a whole method it cannot run, with
//! dynamic shapes). Where asked, the shared object is run through its C ABI
//! and must agree with the JIT bit for bit, and the Vulkan back end runs the
//! program (shaders on the device, the rest on the CPU between them) and
//! must agree within a looser tolerance (its math functions are not
//! libm's).

use ptec_codegen::{CodegenError, VulkanSegment};
use ptec_compiler::{Backend, Error, Options, instantiate, object};
use ptec_ir::Graph;
use ptec_passes::{PassOptions, names, run_pipeline};
use ptec_runtime::{ElementType, HostTensor, TensorRef};

use crate::generate::Case;

/// A broken invariant: a bug in ptec, or in the generator when the text
/// does not parse. The message says what disagreed and how.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Finding(pub String);

/// What to do beyond the JIT and compiling for the other back ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct Runs {
    /// Link the object into a shared object and run it through its C ABI.
    pub aot: bool,
    /// Run the shaders on the Vulkan device (one must open).
    pub vulkan: bool,
}

/// What happened to a program that broke no invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The verifier refused it, or the CPU code generator does not support
    /// it yet: the message.
    Refused(String),
    /// Both pipelines failed at run time, with these messages.
    Failed(String),
    /// It ran, and the optimized and unoptimized results agreed.
    Agreed {
        /// Every element the same bits (NaNs aside).
        exact: bool,
        /// The Vulkan generator compiled it (and the device agreed when run).
        vulkan: bool,
        /// How many of its kernels the Vulkan back end runs on the CPU.
        cpu_kernels: usize,
    },
}

/// How far two float results may be apart: `|a - b| <= tolerance * (1 +
/// max(|a|, |b|))`, per element type.
#[derive(Debug, Clone, Copy)]
struct Tolerance {
    f32: f64,
    f16: f64,
}

/// Optimizer on against off: the same operations, regrouped.
const PIPELINES: Tolerance = Tolerance {
    f32: 1e-5,
    f16: 2e-3,
};

/// A Vulkan device against the CPU: other math functions too.
const DEVICE: Tolerance = Tolerance {
    f32: 1e-4,
    f16: 4e-3,
};

/// How one back end fared with one graph.
enum Ran {
    Outputs(Vec<HostTensor>),
    Unsupported(String),
    Failed(String),
}

/// Checks the invariant on `case`.
pub fn check(case: &Case, runs: Runs) -> Result<Outcome, Finding> {
    let graph = ptec_ir::parse(&case.text)
        .map_err(|error| Finding(format!("the generated text does not parse: {error}")))?;
    if let Err(error) = ptec_ir::verify_unplanned(&graph) {
        return Ok(Outcome::Refused(error.to_string()));
    }
    let optimized = pipeline(&graph, PassOptions::default(), "on")?;
    let all_off = PassOptions {
        disabled: names().into_iter().map(String::from).collect(),
        ..PassOptions::default()
    };
    let plain = pipeline(&graph, all_off, "off")?;
    let options = Options::default();
    let reference = run(&plain, Backend::Jit, case, &options)?;
    let result = run(&optimized, Backend::Jit, case, &options)?;
    let outputs = match (reference, result) {
        (Ran::Unsupported(why), Ran::Unsupported(_)) => return Ok(Outcome::Refused(why)),
        (Ran::Failed(why), Ran::Failed(_)) => return Ok(Outcome::Failed(why)),
        (Ran::Outputs(expected), Ran::Outputs(got)) => (expected, got),
        (reference, result) => {
            return Err(Finding(format!(
                "the optimizer off gives {}, on gives {}",
                reference.describe(),
                result.describe()
            )));
        }
    };
    let exact = agree(
        &outputs.0,
        &outputs.1,
        PIPELINES,
        "optimizer on against off",
    )?;
    check_object(&optimized, case, runs.aot, &options, &outputs.1)?;
    let cpu_kernels = check_vulkan(&optimized, case, runs.vulkan, &options, &outputs.1)?;
    Ok(Outcome::Agreed {
        exact,
        vulkan: cpu_kernels.is_some(),
        cpu_kernels: cpu_kernels.unwrap_or(0),
    })
}

/// The graph through the pipeline, verified after each pass.
fn pipeline(
    graph: &Graph<'static>,
    passes: PassOptions,
    which: &str,
) -> Result<Graph<'static>, Finding> {
    let mut graph = graph.clone();
    let passes = PassOptions {
        verify: true,
        ..passes
    };
    run_pipeline(&mut graph, &passes, |_, _| {}).map_err(|error| {
        Finding(format!(
            "the pipeline with the optimizer {which} fails on a verified graph: {error}"
        ))
    })?;
    Ok(graph)
}

/// Whether a code generator's error is a refusal (something not supported
/// yet) rather than a bug.
fn unsupported(error: &CodegenError) -> bool {
    match error {
        CodegenError::Unsupported { .. } | CodegenError::UnsupportedMethod { .. } => true,
        CodegenError::Node { source, .. } => unsupported(source),
        _ => false,
    }
}

/// Compiles `graph` for `backend` and runs it on the case's inputs.
fn run(
    graph: &Graph<'_>,
    backend: Backend,
    case: &Case,
    options: &Options,
) -> Result<Ran, Finding> {
    let mut runner = match instantiate(graph, backend, options) {
        Ok(runner) => runner,
        Err(Error::Codegen { source, .. }) if unsupported(&source) => {
            return Ok(Ran::Unsupported(source.to_string()));
        }
        Err(error) => {
            return Err(Finding(format!(
                "compiling for {backend} fails: {}",
                ptec_compiler::full_message(&error)
            )));
        }
    };
    let elements: Vec<ElementType> = case
        .inputs
        .iter()
        .map(|input| ptec_codegen::element_type(input.dtype))
        .collect();
    let inputs: Vec<TensorRef<'_>> = case
        .inputs
        .iter()
        .zip(&elements)
        .map(|(input, &element)| TensorRef {
            element,
            sizes: &input.sizes,
            data: &input.data,
        })
        .collect();
    Ok(match runner.run(&inputs) {
        Ok(outputs) => Ran::Outputs(outputs),
        Err(error) => Ran::Failed(error.to_string()),
    })
}

impl Ran {
    fn describe(&self) -> String {
        match self {
            Ran::Outputs(outputs) => format!("{} outputs", outputs.len()),
            Ran::Unsupported(why) => format!("a refusal ({why})"),
            Ran::Failed(why) => format!("a run-time error ({why})"),
        }
    }
}

/// The object code generator must compile what the JIT compiled; linked and
/// run (`run`), it must give the JIT's outputs bit for bit.
fn check_object(
    graph: &Graph<'_>,
    case: &Case,
    run_it: bool,
    options: &Options,
    jit: &[HostTensor],
) -> Result<(), Finding> {
    if !run_it {
        object(
            std::slice::from_ref(graph),
            &options.aot(None, "ptec", false),
        )
        .map_err(|error| {
            Finding(format!(
                "the JIT compiles the graph, the object code generator fails: {}",
                ptec_compiler::full_message(&error)
            ))
        })?;
        return Ok(());
    }
    match run(graph, Backend::Aot, case, options)? {
        Ran::Outputs(outputs) => {
            let exact = agree(
                jit,
                &outputs,
                PIPELINES,
                "the shared object against the JIT",
            )?;
            match exact {
                true => Ok(()),
                false => Err(Finding(
                    "the shared object and the JIT give different bits".into(),
                )),
            }
        }
        other => Err(Finding(format!(
            "the JIT runs the graph, the shared object gives {}",
            other.describe()
        ))),
    }
}

/// The Vulkan generator must compile what the JIT ran (placing on the CPU
/// what no shader expresses) or refuse the whole method; on a device
/// (`run`), the results must agree with the JIT's. Says how many kernels
/// run on the CPU, or `None` for a method it refused.
fn check_vulkan(
    graph: &Graph<'_>,
    case: &Case,
    run_it: bool,
    options: &Options,
    jit: &[HostTensor],
) -> Result<Option<usize>, Finding> {
    let compiled = match ptec_compiler::vulkan(graph, &ptec_codegen::VulkanLimits::DEFAULT) {
        Ok(compiled) => compiled,
        Err(Error::Codegen {
            source: CodegenError::UnsupportedMethod { .. },
            ..
        }) => return Ok(None),
        Err(error) => {
            return Err(Finding(format!(
                "the JIT runs the graph, the Vulkan code generator fails: {}",
                ptec_compiler::full_message(&error)
            )));
        }
    };
    let cpu_kernels = compiled
        .segments
        .iter()
        .map(|segment| match segment {
            VulkanSegment::Cpu { kernels, .. } => kernels.len(),
            VulkanSegment::Device { .. } => 0,
        })
        .sum();
    if !run_it {
        return Ok(Some(cpu_kernels));
    }
    match run(graph, Backend::Vulkan, case, options)? {
        Ran::Outputs(outputs) => {
            agree(jit, &outputs, DEVICE, "the Vulkan device against the JIT")?;
            Ok(Some(cpu_kernels))
        }
        other => Err(Finding(format!(
            "the JIT runs the graph, the Vulkan back end gives {}",
            other.describe()
        ))),
    }
}

/// Compares two runs' outputs; says whether every element has the same
/// bits (any NaN equal to any NaN), and fails when an integer or boolean
/// differs at all or a float beyond `tolerance`.
fn agree(
    expected: &[HostTensor],
    got: &[HostTensor],
    tolerance: Tolerance,
    what: &str,
) -> Result<bool, Finding> {
    if expected.len() != got.len() {
        return Err(Finding(format!(
            "{what}: {} outputs against {}",
            expected.len(),
            got.len()
        )));
    }
    let mut exact = true;
    for (index, (a, b)) in expected.iter().zip(got).enumerate() {
        if a.element != b.element || a.sizes != b.sizes || a.data.len() != b.data.len() {
            return Err(Finding(format!(
                "{what}: output {index} is {:?}{:?} against {:?}{:?}",
                a.element, a.sizes, b.element, b.sizes
            )));
        }
        let floats = |tensor: &HostTensor| -> Option<Vec<f64>> {
            match tensor.element {
                ElementType::F32 => Some(
                    tensor
                        .data
                        .chunks_exact(4)
                        .map(|bytes| {
                            f64::from(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
                        })
                        .collect(),
                ),
                ElementType::F16 => Some(
                    tensor
                        .data
                        .chunks_exact(2)
                        .map(|bytes| half::f16::from_le_bytes([bytes[0], bytes[1]]).to_f64())
                        .collect(),
                ),
                _ => None,
            }
        };
        let (Some(xs), Some(ys)) = (floats(a), floats(b)) else {
            if let Some(at) = a.data.iter().zip(&b.data).position(|(x, y)| x != y) {
                return Err(Finding(format!(
                    "{what}: output {index} ({:?}) differs at byte {at}",
                    a.element
                )));
            }
            continue;
        };
        let bound = match a.element {
            ElementType::F16 => tolerance.f16,
            _ => tolerance.f32,
        };
        for (k, (&x, &y)) in xs.iter().zip(&ys).enumerate() {
            if x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) {
                continue;
            }
            exact = false;
            let close = x.is_finite()
                && y.is_finite()
                && (x - y).abs() <= bound * (1.0 + x.abs().max(y.abs()));
            if !close {
                return Err(Finding(format!(
                    "{what}: output {index} element {k}: {x} against {y}"
                )));
            }
        }
    }
    Ok(exact)
}
