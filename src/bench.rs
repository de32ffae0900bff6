//! `ptec bench`: times a compiled method on the first test case's inputs (or
//! given `.npy` inputs). Each timed call binds the inputs, runs the method and
//! copies the outputs out, as a caller would.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::bail;
use ptec_compiler::bundled::refs;
use ptec_compiler::file::ProgramFile;
use serde::Serialize;

use crate::instance::{Backend, CompileArgs, load};
use crate::method::select_method;
use crate::run::method_inputs;

pub struct BenchOptions<'o> {
    pub method: Option<&'o str>,
    pub inputs: &'o [PathBuf],
    pub iters: usize,
    pub warmup: usize,
    pub backend: Backend,
    pub json: bool,
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
}

pub fn run(path: &Path, data: &[PathBuf], options: BenchOptions<'_>) -> anyhow::Result<()> {
    if options.iters == 0 {
        bail!("--iters must be at least 1");
    }
    let program = ProgramFile::open(path, data)?;
    let file = program.file();
    let method = select_method(file.program(), options.method)?;
    let inputs = method_inputs(file, &method.name, options.inputs)?;
    let inputs = refs(&inputs);
    let mut loaded = load(method, options.backend, options.passes)?;
    for _ in 0..options.warmup {
        loaded.runner.run(&inputs)?;
    }
    let mut times = Vec::with_capacity(options.iters);
    for _ in 0..options.iters {
        let start = Instant::now();
        let outputs = loaded.runner.run(&inputs)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(outputs);
    }
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
    }
    Ok(())
}
