//! The random operators (`rand`, `randn`, `native_dropout`), which draw from
//! ptec's own counter-based generator (ARCHITECTURE.md, import): PyTorch's
//! draws cannot be reproduced, so the fixture
//! `tests/fixtures/random/random.portable.bpte` (written by
//! `scripts/gen_random_fixtures.py`) is run with `ptec run` and what ptec
//! draws is checked by shape, range and statistics, on every back end the
//! portable tests use (the JIT and the shared object).

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};

use common::{ptec, repo_dir};

const COUNT: usize = 1024;

/// One output: its shape and its elements as f64.
struct Drawn {
    shape: Vec<u64>,
    values: Vec<f64>,
}

fn read(path: &Path) -> Drawn {
    let file = npyz::NpyFile::new(File::open(path).expect("output written")).expect("npy");
    let shape = file.shape().to_vec();
    let descr = file.dtype().descr();
    let values = match descr.trim_matches('\'') {
        "<f4" => file
            .into_vec::<f32>()
            .expect("f32")
            .into_iter()
            .map(f64::from)
            .collect(),
        "<f8" => file.into_vec::<f64>().expect("f64"),
        "<f2" => file
            .into_vec::<half::f16>()
            .expect("f16")
            .into_iter()
            .map(f64::from)
            .collect(),
        "|b1" => file
            .into_vec::<bool>()
            .expect("bool")
            .into_iter()
            .map(|flag| f64::from(u8::from(flag)))
            .collect(),
        other => panic!("unexpected output type {other}"),
    };
    Drawn { shape, values }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn variance(values: &[f64]) -> f64 {
    let m = mean(values);
    values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / values.len() as f64
}

/// Runs the fixture with `args` and reads its outputs.
fn run(args: &[&str]) -> Vec<Drawn> {
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "ptec-random-{}-{}",
        std::process::id(),
        args.join("-")
    ));
    let file = repo_dir().join("tests/fixtures/random/random.portable.bpte");
    let path = |path: &Path| path.to_str().expect("utf-8 path").to_string();
    let mut command = vec![
        "run".to_string(),
        path(&file),
        "--output-dir".into(),
        path(&dir),
    ];
    command.extend(args.iter().map(|arg| arg.to_string()));
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let output = ptec(&command);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let outputs = (0..11)
        .map(|n| read(&dir.join(format!("output_{n}.npy"))))
        .collect();
    std::fs::remove_dir_all(&dir).ok();
    outputs
}

/// Uniform draws: in `[0, 1)`, mean 1/2 and variance 1/12 within about six
/// standard deviations of their estimates over `COUNT` draws, and not all
/// alike.
fn check_uniform(drawn: &Drawn, what: &str) {
    let values = &drawn.values;
    assert_eq!(values.len(), COUNT, "{what}");
    assert!(
        values.iter().all(|v| (0.0..1.0).contains(v)),
        "{what}: outside [0, 1)"
    );
    assert!(
        (mean(values) - 0.5).abs() < 0.055,
        "{what}: mean {}",
        mean(values)
    );
    assert!(
        (variance(values) - 1.0 / 12.0).abs() < 0.016,
        "{what}: variance {}",
        variance(values)
    );
    let distinct: std::collections::HashSet<u64> = values.iter().map(|v| v.to_bits()).collect();
    assert!(
        distinct.len() > COUNT / 4,
        "{what}: {} distinct values",
        distinct.len()
    );
}

/// Normal draws: mean 0 and variance 1 within about six standard deviations,
/// and a tail as heavy as a normal one's (about 4.6% beyond 2).
fn check_normal(drawn: &Drawn, what: &str) {
    let values = &drawn.values;
    assert_eq!(values.len(), COUNT, "{what}");
    assert!(
        values.iter().all(|v| v.is_finite() && v.abs() < 6.0),
        "{what}: not finite or beyond 6"
    );
    assert!(mean(values).abs() < 0.19, "{what}: mean {}", mean(values));
    assert!(
        (variance(values) - 1.0).abs() < 0.27,
        "{what}: variance {}",
        variance(values)
    );
    let tail = values.iter().filter(|v| v.abs() > 2.0).count() as f64 / COUNT as f64;
    assert!((0.015..0.08).contains(&tail), "{what}: {tail} beyond 2");
}

/// Dropout of ones with probability `p`: the mask keeps about `1 - p` of
/// them, the output is `1 / (1 - p)` where it does and 0 where it does not.
fn check_dropout(output: &Drawn, mask: &Drawn, p: f64, what: &str) {
    assert_eq!(output.shape, [COUNT as u64], "{what}");
    assert_eq!(mask.shape, [COUNT as u64], "{what}");
    let kept = mean(&mask.values);
    let sigma = (p * (1.0 - p) / COUNT as f64).sqrt();
    assert!(
        (kept - (1.0 - p)).abs() < 6.0 * sigma,
        "{what}: kept {kept}"
    );
    for (value, flag) in output.values.iter().zip(&mask.values) {
        let expected = if *flag == 1.0 { 1.0 / (1.0 - p) } else { 0.0 };
        // The scale is rounded to the output's type.
        assert!(
            (value - expected).abs() <= 1e-3 * expected,
            "{what}: {value} for {expected}"
        );
    }
}

fn check_all(outputs: &[Drawn]) {
    assert_eq!(outputs[0].shape, [COUNT as u64]);
    check_uniform(&outputs[0], "rand f32");
    assert_eq!(outputs[1].shape, [8, COUNT as u64 / 8]);
    check_uniform(&outputs[1], "rand f64");
    check_uniform(&outputs[2], "rand f16");
    check_normal(&outputs[3], "randn f32");
    check_normal(&outputs[4], "randn bf16");
    check_dropout(&outputs[5], &outputs[6], 0.25, "dropout f32");
    check_dropout(&outputs[7], &outputs[8], 0.5, "dropout f16, train None");
    assert!(
        outputs[9].values.iter().all(|&v| v == 1.0),
        "dropout in eval is the input"
    );
    assert!(
        outputs[10].values.iter().all(|&v| v == 1.0),
        "its mask is all true"
    );
    // Call sites draw from streams of their own.
    let first: Vec<f64> = outputs[0].values.iter().take(16).copied().collect();
    let other: Vec<f64> = outputs[2].values.iter().take(16).copied().collect();
    assert_ne!(first, other, "two calls drew the same numbers");
}

#[test]
fn random_draws_have_the_distributions_asked() {
    let jit = run(&[]);
    check_all(&jit);
    let aot = run(&["--backend", "aot"]);
    check_all(&aot);
    // The generator is counter-based: every back end draws the same numbers.
    for (a, b) in jit.iter().zip(&aot) {
        assert_eq!(a.values, b.values);
    }
}
