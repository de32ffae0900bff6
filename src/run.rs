//! `ptec run`: runs a method once on `.npy` inputs (or a bundled program's
//! first test case) and writes or prints its outputs; or, with `--steps`,
//! once per step folder on one instance, so that state (a language model's
//! KV cache) carries from one call to the next.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ptec_compiler::bundled::refs;
use ptec_compiler::file::ProgramFile;
use ptec_frontend::ExecutorchFile;
use ptec_runtime::HostTensor;

use crate::instance::{Backend, CompileArgs, load};
use crate::method::select_method;
use crate::npy;

pub struct RunOptions<'o> {
    pub method: Option<&'o str>,
    pub inputs: &'o [PathBuf],
    pub output_dir: Option<&'o Path>,
    pub steps: Option<&'o Path>,
    pub backend: Backend,
    pub passes: &'o CompileArgs,
}

/// The inputs a command runs `method` on: the given `.npy` files, or the
/// first bundled test case's when none are given.
pub fn method_inputs(
    file: &ExecutorchFile<'_>,
    method: &str,
    paths: &[PathBuf],
) -> anyhow::Result<Vec<HostTensor>> {
    if paths.is_empty() {
        first_case_inputs(file, method)
    } else {
        paths.iter().map(|path| npy::read(path)).collect()
    }
}

/// The inputs of the first test case of `method`.
pub fn first_case_inputs(
    file: &ExecutorchFile<'_>,
    method: &str,
) -> anyhow::Result<Vec<HostTensor>> {
    let suite = file
        .test_suites()
        .iter()
        .find(|suite| suite.method == method)
        .with_context(|| {
            format!("no inputs given and the file has no test case for method {method}")
        })?;
    let case = suite
        .cases
        .first()
        .with_context(|| format!("the test suite of {method} is empty"))?;
    Ok(case
        .inputs
        .iter()
        .map(ptec_compiler::tensors::test_tensor)
        .collect::<Result<_, _>>()?)
}

pub fn run(path: &Path, data: &[PathBuf], options: RunOptions<'_>) -> anyhow::Result<()> {
    let program = ProgramFile::open(path, data)?;
    let file = program.file();
    let method = select_method(file.program(), options.method)?;
    if let Some(steps) = options.steps {
        let output_dir = options
            .output_dir
            .context("--steps writes each step's outputs under --output-dir, which is missing")?;
        if !options.inputs.is_empty() {
            anyhow::bail!("--steps takes each step's inputs from its folder, not from --input");
        }
        let mut loaded = load(method, options.backend, options.passes)?;
        for step in step_folders(steps)? {
            let inputs = step_inputs(&step, method.inputs.len())?;
            let outputs = loaded
                .runner
                .run(&refs(&inputs))
                .with_context(|| format!("step {}", step.display()))?;
            let name = step.file_name().context("a step folder has a name")?;
            write_outputs(&output_dir.join(name), "out", &outputs)?;
        }
        return Ok(());
    }
    // A method without inputs (`get_max_seq_len`) needs no test case.
    let inputs = match method.inputs.is_empty() && options.inputs.is_empty() {
        true => Vec::new(),
        false => method_inputs(file, &method.name, options.inputs)?,
    };
    let mut loaded = load(method, options.backend, options.passes)?;
    let outputs = loaded.runner.run(&refs(&inputs))?;
    match options.output_dir {
        Some(dir) => write_outputs(dir, "output", &outputs)?,
        None => {
            for (index, output) in outputs.iter().enumerate() {
                println!(
                    "output {index}: {}{:?} {}",
                    output.element,
                    output.sizes,
                    preview(output)
                );
            }
        }
    }
    Ok(())
}

/// Writes each output to `dir/<prefix>_N.npy`, printing the paths.
fn write_outputs(dir: &Path, prefix: &str, outputs: &[HostTensor]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (index, output) in outputs.iter().enumerate() {
        let path = dir.join(format!("{prefix}_{index}.npy"));
        npy::write(&path, output)?;
        println!("{}", path.display());
    }
    Ok(())
}

/// The sub-folders of `dir`, in lexical order of their names: one method
/// call each.
fn step_folders(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let folders = crate::listing::sorted_entries(dir, Path::is_dir)?;
    if folders.is_empty() {
        anyhow::bail!(
            "{} has no step folders (step_0, step_1, ...)",
            dir.display()
        );
    }
    Ok(folders)
}

/// A step's inputs: `in_0.npy` to `in_{count-1}.npy` of its folder, which
/// must hold no other `in_*.npy`.
fn step_inputs(step: &Path, count: usize) -> anyhow::Result<Vec<HostTensor>> {
    let inputs = (0..count)
        .map(|index| {
            let path = step.join(format!("in_{index}.npy"));
            if !path.exists() {
                anyhow::bail!(
                    "step {} lacks {} (the method takes {count} inputs)",
                    step.display(),
                    path.display()
                );
            }
            npy::read(&path)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if step.join(format!("in_{count}.npy")).exists() {
        anyhow::bail!(
            "step {} has in_{count}.npy, but the method takes {count} inputs",
            step.display()
        );
    }
    Ok(inputs)
}

/// The first few elements, for a glance.
fn preview(tensor: &HostTensor) -> String {
    const SHOWN: usize = 8;
    let count = tensor.data.len() / tensor.element.size();
    let mut shown: Vec<String> = ptec_compiler::tensors::elements(tensor)
        .take(SHOWN)
        .map(|element| element.to_string())
        .collect();
    if count > SHOWN {
        shown.push(format!("... ({} more)", count - SHOWN));
    }
    format!("[{}]", shown.join(", "))
}
