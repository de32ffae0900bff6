//! `ptec bench`: times a compiled method on the first test case's inputs (or
//! given `.npy` inputs). Each timed call binds the inputs, runs the method and
//! copies the outputs out, as a caller would. With `--profile` the JIT's code
//! also marks the time after each kernel (on Vulkan, the device writes a
//! timestamp around each dispatch), and the kernels' times, summed over the
//! timed runs, are printed from the slowest.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;
use ptec_compiler::Runner;
use ptec_compiler::bundled::refs;
use ptec_compiler::file::ProgramFile;
use serde::Serialize;

use ptec_runtime::profile::{self, KernelTime};

use crate::instance::{Backend, CompileArgs, load_with};
use crate::method::select_method;
use crate::run::method_inputs;

pub struct BenchOptions<'o> {
    pub method: Option<&'o str>,
    pub inputs: &'o [PathBuf],
    pub iters: usize,
    pub warmup: usize,
    pub backend: Backend,
    pub json: bool,
    pub profile: bool,
    pub passes: &'o CompileArgs,
}

#[derive(Debug, Serialize)]
struct BenchReport {
    file: String,
    method: String,
    backend: String,
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    compile_ms: f64,
    iters: usize,
    /// With `--profile`: each kernel's time, from the slowest.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Vec<KernelReport>>,
}

#[derive(Debug, Serialize)]
struct KernelReport {
    /// The node and its op (`n12 convolution`).
    kernel: String,
    /// Milliseconds per run.
    ms: f64,
    /// Its share of the time all kernels took.
    percent: f64,
}

pub fn run(path: &Path, data: &[PathBuf], options: BenchOptions<'_>) -> anyhow::Result<()> {
    if options.iters == 0 {
        bail!("--iters must be at least 1");
    }
    if options.profile && options.backend == Backend::Aot {
        bail!("--profile times the JIT's kernels or the Vulkan dispatches, not a shared object's");
    }
    let program = ProgramFile::open(path, data)?;
    let file = program.file();
    let method = select_method(file.program(), options.method)?;
    let inputs = method_inputs(file, &method.name, options.inputs)?;
    let inputs = refs(&inputs);
    let mut compile = options.passes.options();
    compile.codegen.profile = options.profile;
    let mut loaded = load_with(method, options.backend, options.passes, &compile)?;
    for _ in 0..options.warmup {
        loaded.runner.run(&inputs)?;
    }
    if options.profile && options.backend == Backend::Jit {
        profile::start(loaded.kernels.len());
    }
    // The device's times so far (the warm-up runs'), left out below.
    let warm = dispatch_times(&loaded.runner);
    let mut times = Vec::with_capacity(options.iters);
    for _ in 0..options.iters {
        let start = Instant::now();
        let outputs = loaded.runner.run(&inputs)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(outputs);
    }
    let profile = profile::stop().or_else(|| {
        let (times, warm) = (dispatch_times(&loaded.runner)?, warm?);
        Some(
            times
                .iter()
                .zip(warm)
                .map(|(time, warm)| KernelTime {
                    total: time.saturating_sub(warm),
                    calls: options.iters as u64,
                })
                .collect(),
        )
    });
    let profile = profile.map(|times| kernel_reports(&loaded.kernels, &times, options.iters));
    times.sort_by(f64::total_cmp);
    let middle = times.len() / 2;
    let median = if times.len() % 2 == 0 {
        (times[middle - 1] + times[middle]) / 2.0
    } else {
        times[middle]
    };
    let report = BenchReport {
        file: path.display().to_string(),
        method: method.name.clone(),
        backend: format!("{:?}", options.backend).to_lowercase(),
        median_ms: median,
        min_ms: times[0],
        max_ms: times[times.len() - 1],
        compile_ms: loaded.compile_ms,
        iters: options.iters,
        profile,
    };
    if options.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{} ({}, {}): median {:.4} ms, min {:.4} ms, max {:.4} ms over {} runs; compiled in {:.1} ms",
            report.file,
            report.method,
            report.backend,
            report.median_ms,
            report.min_ms,
            report.max_ms,
            report.iters,
            report.compile_ms
        );
        for kernel in report.profile.iter().flatten() {
            println!(
                "  {:>10.4} ms {:>5.1}%  {}",
                kernel.ms, kernel.percent, kernel.kernel
            );
        }
    }
    Ok(())
}

/// Each dispatch's device time so far, when the method runs on a profiled
/// Vulkan device.
fn dispatch_times(runner: &Runner<'_>) -> Option<Vec<Duration>> {
    match runner {
        Runner::Vulkan(instance) => instance.device_method().dispatch_times().map(<[_]>::to_vec),
        _ => None,
    }
}

/// Each kernel's time per run and share, from the slowest.
fn kernel_reports(kernels: &[String], times: &[KernelTime], runs: usize) -> Vec<KernelReport> {
    let all: f64 = times.iter().map(|time| time.total.as_secs_f64()).sum();
    let mut reports: Vec<KernelReport> = kernels
        .iter()
        .zip(times)
        .map(|(kernel, time)| KernelReport {
            kernel: kernel.clone(),
            ms: time.total.as_secs_f64() * 1e3 / runs as f64,
            percent: match all > 0.0 {
                true => time.total.as_secs_f64() / all * 100.0,
                false => 0.0,
            },
        })
        .collect();
    reports.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    reports
}
