//! Criterion benchmarks of the compiler and of the code it generates, from
//! the project's fixtures (always) and the shared corpus's mobilenet_v2 (when
//! `../shared/corpus` is beside the repository): how long import, the passes
//! and the JIT take for a program, and how long a compiled method takes on
//! its first bundled test case. `cargo bench --bench pipeline`; pin to one
//! core (`taskset -c 0`) for figures worth comparing. Side-by-side figures
//! against ExecuTorch come from `ptec bench` and `scripts/compare_speed.py`.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use ptec_compiler::{Backend, Options, Runner};
use ptec_frontend::{ExecutorchFile, FileBytes, ScalarType, TestValue};
use ptec_runtime::{ElementType, TensorRef};

/// The programs benchmarked: small fixtures, and mobilenet_v2 when present.
fn programs() -> Vec<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = ["linear_relu.portable", "conv_bn.portable"]
        .iter()
        .map(|name| repo.join(format!("tests/fixtures/{name}.bpte")))
        .collect();
    let mobilenet = repo.join("../shared/corpus/mobilenet_v2.portable.bpte");
    if mobilenet.is_file() {
        files.push(mobilenet);
    }
    files
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().replace(".bpte", ""))
        .unwrap_or_default()
}

/// Imports, optimizes and JIT-compiles the first method of `file`.
fn compile<'a>(file: &ExecutorchFile<'a>) -> Runner<'a> {
    let method = &file.program().methods[0];
    ptec_compiler::load(method, Backend::Jit, &Options::default())
        .expect("the method compiles")
        .runner
}

fn benchmarks(c: &mut Criterion) {
    for path in programs() {
        let bytes = FileBytes::open(&path).expect("the file opens");
        let file = ExecutorchFile::read(bytes.bytes()).expect("the file reads");
        let label = name(&path);
        c.bench_function(&format!("compile/{label}"), |b| {
            b.iter(|| black_box(compile(&file)))
        });
        let case = &file.test_suites()[0].cases[0];
        let tensors: Vec<(Vec<u64>, &[u8])> = case
            .inputs
            .iter()
            .map(|input| match input {
                TestValue::Tensor(tensor) if tensor.dtype == ScalarType::Float => (
                    tensor.sizes.iter().map(|&s| s as u64).collect(),
                    tensor.data,
                ),
                other => panic!("{label}: the benchmark feeds f32 tensors, not {other:?}"),
            })
            .collect();
        let inputs: Vec<TensorRef<'_>> = tensors
            .iter()
            .map(|(sizes, data)| TensorRef {
                element: ElementType::F32,
                sizes,
                data,
            })
            .collect();
        let mut instance = compile(&file);
        c.bench_function(&format!("run/{label}"), |b| {
            b.iter(|| black_box(instance.run(&inputs).expect("the method runs")))
        });
    }
}

criterion_group!(benches, benchmarks);
criterion_main!(benches);
