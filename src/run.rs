//! `ptec run`: runs a method once on `.npy` inputs (or a bundled program's
//! first test case) and writes or prints its outputs.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ptec_compiler::bundled::refs;
use ptec_frontend::{ExecutorchFile, FileBytes};
use ptec_runtime::HostTensor;

use crate::instance::{Backend, CompileArgs, load};
use crate::method::select_method;
use crate::npy;

pub struct RunOptions<'o> {
    pub method: Option<&'o str>,
    pub inputs: &'o [PathBuf],
    pub output_dir: Option<&'o Path>,
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

pub fn run(path: &Path, options: RunOptions<'_>) -> anyhow::Result<()> {
    let bytes = FileBytes::open(path)?;
    let file = ExecutorchFile::read(bytes.bytes()).with_context(|| path.display().to_string())?;
    let method = select_method(file.program(), options.method)?;
    // A method without inputs (`get_max_seq_len`) needs no test case.
    let inputs = match method.inputs.is_empty() && options.inputs.is_empty() {
        true => Vec::new(),
        false => method_inputs(&file, &method.name, options.inputs)?,
    };
    let mut loaded = load(method, options.backend, options.passes)?;
    let outputs = loaded.runner.run(&refs(&inputs))?;
    match options.output_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            for (index, output) in outputs.iter().enumerate() {
                let path = dir.join(format!("output_{index}.npy"));
                npy::write(&path, output)?;
                println!("{}", path.display());
            }
        }
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
