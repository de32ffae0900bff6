//! ptec's optimizer: a pipeline of named passes over a method's graph. Each
//! pass takes verified IR to verified IR (the verifier runs after every pass
//! when asked, and always in debug builds), is timed, can be switched off,
//! and the pipeline can stop after any of them. Passes may rewrite dataflow
//! freely: values have no memory until `plan-memory` places them, and the
//! pipeline places them itself when that pass does not run. Passes do no
//! I/O.

mod common_subexpressions;
mod dead_code;
mod elide_requantize;
mod epilogue;
mod fold_batch_norm;
mod fold_constants;
mod fuse_clamp;
mod fuse_elementwise;
mod fuse_epilogue;
mod fuse_residual;
mod fuse_safe_softmax;
mod plan_memory;
mod propagate_dim_order;
mod remove_copies;
mod schedule;
mod shorten_integer_chains;
mod unary_chain;
mod widen_halves;

use std::time::{Duration, Instant};

use ptec_ir::{Graph, VerifyError};

pub use plan_memory::live_peak;

/// Why the pipeline stopped.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    // Verifier errors are boxed: they are large, and rare.
    #[error("after pass {pass}: {source}")]
    Verify {
        pass: &'static str,
        #[source]
        source: Box<VerifyError>,
    },
    /// The pipeline placed every value in memory of its own, as
    /// `plan-memory` did not run, and the result does not verify.
    #[error("after placing every value in memory of its own: {0}")]
    Placement(#[source] Box<VerifyError>),
    #[error("unknown pass {0:?} (the passes are: {passes})", passes = names().join(", "))]
    UnknownPass(String),
}

/// One pass: rewrites the graph in place and says whether it changed it.
#[derive(Clone, Copy)]
pub struct Pass {
    pub name: &'static str,
    pub description: &'static str,
    run: fn(&mut Graph<'_>) -> bool,
}

impl std::fmt::Debug for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The pipeline, in order.
pub const PIPELINE: &[Pass] = &[
    Pass {
        name: "fold-constants",
        description: "computes layout ops (permute, reshape, copy) and casts of constants at compile time",
        run: fold_constants::run,
    },
    Pass {
        name: "common-subexpressions",
        description: "removes a node that repeats an earlier computation on the same inputs",
        run: common_subexpressions::run,
    },
    Pass {
        name: "remove-copies",
        description: "removes copies that change nothing and composes chains of permutes",
        run: remove_copies::run,
    },
    Pass {
        name: "fuse-safe-softmax",
        description: "folds PyTorch's safe softmax (a softmax, a test of its rows for all -inf, and a where) into one softmax",
        run: fuse_safe_softmax::run,
    },
    Pass {
        name: "fold-batch-norm",
        description: "folds an inference batch norm into the convolution that feeds it",
        run: fold_batch_norm::run,
    },
    Pass {
        name: "fuse-clamp",
        description: "fuses relu, hardtanh and clamp into the convolution or matrix product that feeds them",
        run: fuse_clamp::run,
    },
    Pass {
        name: "fuse-residual",
        description: "adds a residual in the epilogue of the convolution that feeds the add",
        run: fuse_residual::run,
    },
    Pass {
        name: "fuse-elementwise",
        description: "fuses chains of elementwise ops into one loop that keeps intermediates in registers",
        run: fuse_elementwise::run,
    },
    Pass {
        name: "shorten-integer-chains",
        description: "replaces the steps that end a fused chain after a clamp of integers with the one clamp that gives the same on every integer",
        run: shorten_integer_chains::run,
    },
    Pass {
        name: "dead-code",
        description: "removes nodes whose results nothing reads",
        run: dead_code::run,
    },
    Pass {
        name: "propagate-dim-order",
        description: "stores convolution results, and the elementwise ops after them, channels-last where nothing observes their layout",
        run: propagate_dim_order::run,
    },
    Pass {
        name: "fuse-epilogue",
        description: "applies the elementwise chain after a channels-last convolution in the convolution's epilogue, block by block",
        run: fuse_epilogue::run,
    },
    Pass {
        name: "elide-requantize",
        description: "stores a quantized program's integers where a later quantize of their dequantized value gives them back, and drops that quantize",
        run: elide_requantize::run,
    },
    Pass {
        name: "plan-memory",
        description: "places every value in one arena from liveness over the final schedule, elementwise results over dying inputs (each value apart when the schedule loops)",
        run: plan_memory::run,
    },
];

const PLAN_MEMORY: &str = "plan-memory";

/// The legalization that runs before the passes (`widen_halves.rs`).
const WIDEN_HALVES: &str = "widen-halves";

pub fn names() -> Vec<&'static str> {
    PIPELINE.iter().map(|pass| pass.name).collect()
}

/// Which passes run and how they are checked; built once, passed in.
#[derive(Debug, Clone, Default)]
pub struct PassOptions {
    pub disabled: Vec<String>,
    pub stop_after: Option<String>,
    /// Verify after every pass (always on in debug builds).
    pub verify: bool,
}

impl PassOptions {
    /// Checks that every pass named exists.
    pub fn validate(&self) -> Result<(), PassError> {
        for name in self.disabled.iter().chain(&self.stop_after) {
            if !PIPELINE.iter().any(|pass| pass.name == name) {
                return Err(PassError::UnknownPass(name.clone()));
            }
        }
        Ok(())
    }
}

/// What one pass did.
#[derive(Debug, Clone)]
pub struct PassReport {
    pub name: &'static str,
    pub changed: bool,
    pub time: Duration,
}

/// Runs the pipeline on `graph` (which must pass
/// [`ptec_ir::verify_unplanned`]), calling `after` with the graph after each
/// pass that ran. Accumulating ops on half-precision values are first
/// rewritten to compute in f32 (`widen_halves.rs`), always. The graph that comes back is always placed in memory: by
/// `plan-memory`, or, when that pass is switched off or the pipeline stops
/// before it, with every value in memory of its own.
pub fn run_pipeline(
    graph: &mut Graph<'_>,
    options: &PassOptions,
    mut after: impl FnMut(&Pass, &Graph<'_>),
) -> Result<Vec<PassReport>, PassError> {
    options.validate()?;
    let verify = options.verify || cfg!(debug_assertions);
    let mut reports = Vec::new();
    // Not a pass: what the IR means by an accumulating op on halves, made
    // explicit before any pass, whatever the switches.
    widen_halves::run(graph);
    if verify {
        ptec_ir::verify_unplanned(graph).map_err(|source| PassError::Verify {
            pass: WIDEN_HALVES,
            source: Box::new(source),
        })?;
    }
    // Until memory is planned, passes may leave values without memory.
    let mut placed = false;
    for pass in PIPELINE {
        if options.disabled.iter().any(|name| name == pass.name) {
            continue;
        }
        let start = Instant::now();
        let changed = (pass.run)(graph);
        let time = start.elapsed();
        placed |= pass.name == PLAN_MEMORY;
        if verify {
            let verified = match placed {
                true => ptec_ir::verify(graph),
                false => ptec_ir::verify_unplanned(graph),
            };
            verified.map_err(|source| PassError::Verify {
                pass: pass.name,
                source: Box::new(source),
            })?;
        }
        after(pass, graph);
        reports.push(PassReport {
            name: pass.name,
            changed,
            time,
        });
        if options.stop_after.as_deref() == Some(pass.name) {
            break;
        }
    }
    if !placed {
        plan_memory::place_separately(graph);
        if verify {
            ptec_ir::verify(graph).map_err(|source| PassError::Placement(Box::new(source)))?;
        }
    }
    Ok(reports)
}

/// Runs the pass named `name` alone, without verifying before or after, and
/// says whether it changed the graph: for tests and tools that study one
/// pass. Unlike [`run_pipeline`], it leaves the graph unplaced unless the
/// pass is `plan-memory`.
pub fn run_pass(graph: &mut Graph<'_>, name: &str) -> Result<bool, PassError> {
    let pass = PIPELINE
        .iter()
        .find(|pass| pass.name == name)
        .ok_or_else(|| PassError::UnknownPass(name.to_string()))?;
    Ok((pass.run)(graph))
}
