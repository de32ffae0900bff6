//! Language models exported by ExecuTorch's own LLM path (`export_llama`,
//! `tests/fixtures/llm/`, written by `scripts/gen_llm_fixtures.py`): each
//! configuration's method runs a prefill (6 tokens, or 1 for a program of
//! static shapes) and 16 greedy decode steps on one instance with `ptec run
//! --steps` (the KV cache carrying over), on the JIT and the AOT back end,
//! and every step's logits must be ExecuTorch's, recorded by its own
//! runtime (for a Vulkan export, its XNNPACK twin's), within the tolerance
//! of the configuration's element type. The C decode loop (`examples/llm/`),
//! built against compiled libraries, must generate ExecuTorch's 32 greedy
//! tokens.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ptec, ptec_ok, repo_dir, run_ok};

fn fixtures() -> PathBuf {
    repo_dir().join("tests/fixtures/llm")
}

fn index() -> serde_json::Value {
    let index = std::fs::read_to_string(fixtures().join("index.json"))
        .expect("tests/fixtures/llm/index.json is committed");
    serde_json::from_str(&index).expect("the index is JSON")
}

/// Each configuration of the fixtures' index, with its flags.
fn configurations() -> Vec<(String, Vec<String>)> {
    let index = index();
    let configurations: Vec<(String, Vec<String>)> = index
        .as_object()
        .expect("the index maps names to configurations")
        .iter()
        .map(|(name, entry)| {
            let flags = entry["flags"]
                .as_array()
                .expect("a configuration lists its flags")
                .iter()
                .map(|flag| flag.as_str().expect("a flag is a string").to_owned())
                .collect();
            (name.clone(), flags)
        })
        .collect();
    assert!(
        configurations.len() >= 11,
        "the index lists {configurations:?}"
    );
    configurations
}

/// How far ptec's logits may be from ExecuTorch's: 1e-4 for float32
/// programs; for fp16 and bf16 ones, one unit in the last place of the
/// step's largest logit (at most `2^-10` and `2^-7` of it): where a sum
/// rounded in another order lands an intermediate value on its neighbour,
/// the last linear layer spreads that step over every logit. A Vulkan
/// export forced to fp16 computes every layer in f16 and is checked against
/// its float32 twin: `2^-7` of the largest logit; a Vulkan 8da4w one is
/// checked against its XNNPACK 8da4w twin, which quantizes activations by
/// XNNPACK's rule rather than torchao's, each layer's re-quantization
/// spreading the difference: `2^-4` (a wrong block, group or scale errs by
/// the logits' own size).
struct Tolerance {
    absolute: f64,
    relative: f64,
}

fn tolerance(flags: &[String]) -> Tolerance {
    let dtype = flags
        .iter()
        .position(|flag| flag == "-d")
        .map(|at| flags[at + 1].as_str());
    let has = |name: &str| flags.iter().any(|flag| flag == name);
    let relative = match dtype {
        _ if has("-V") && has("-qmode") => 2f64.powi(-4),
        _ if has("--vulkan-force-fp16") => 2f64.powi(-7),
        Some("fp16") => 2f64.powi(-10),
        Some("bf16") => 2f64.powi(-7),
        _ => 0.0,
    };
    Tolerance {
        absolute: 1e-4,
        relative,
    }
}

/// A `.npy` file of float32 or float16 logits, as float32.
fn read_f32(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).expect("a .npy file");
    let shape = npy.shape().to_vec();
    // ptec writes fp16 logits as they are; the fixtures hold them widened.
    let values = if npy.dtype().descr() == "'<f2'" {
        let values = npy.into_vec::<half::f16>().expect("float16 logits");
        values.into_iter().map(f32::from).collect()
    } else {
        npy.into_vec::<f32>().expect("float32 logits")
    };
    (shape, values)
}

/// The step folders of a configuration, in order.
fn steps(dir: &Path) -> Vec<PathBuf> {
    let mut steps: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a configuration's folder")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.is_dir())
        .collect();
    steps.sort();
    assert_eq!(
        steps.len(),
        17,
        "{}: a prefill and 16 decode steps",
        dir.display()
    );
    steps
}

/// Runs every configuration with `extra` arguments and compares each
/// step's logits with ExecuTorch's.
fn every_configuration_matches_executorch(extra: &[&str]) {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let mut failures = Vec::new();
    for (name, flags) in configurations() {
        let dir = fixtures().join(&name);
        let out = scratch.path().join(&name);
        let (model, steps_dir, out_dir) = (
            dir.join("model.pte"),
            dir.display().to_string(),
            out.display().to_string(),
        );
        let mut args = vec!["run", model.to_str().expect("a UTF-8 path")];
        // A configuration that keeps its weights apart has them in model.ptd.
        let data = dir.join("model.ptd");
        let data = data.to_str().expect("a UTF-8 path");
        if Path::new(data).exists() {
            args.extend(["--data", data]);
        }
        args.extend_from_slice(extra);
        args.extend(["--steps", &steps_dir, "--output-dir", &out_dir]);
        let output = ptec(&args);
        if !output.status.success() {
            failures.push(format!(
                "{name}: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
            continue;
        }
        let tolerance = tolerance(&flags);
        let mut worst = 0f64;
        for step in steps(&dir) {
            let (shape, expected) = read_f32(&step.join("out_0.npy"));
            let (got_shape, got) = read_f32(
                &out.join(step.file_name().expect("a step folder has a name"))
                    .join("out_0.npy"),
            );
            assert_eq!(got_shape, shape, "{name} {}: logits' shape", step.display());
            let largest = expected
                .iter()
                .fold(0f64, |m, &e| m.max(f64::from(e).abs()));
            let allowed = tolerance.absolute + tolerance.relative * largest;
            for (&e, &g) in expected.iter().zip(&got) {
                let (e, g) = (f64::from(e), f64::from(g));
                let error = (e - g).abs();
                assert!(!error.is_nan(), "{name} {}: NaN logits", step.display());
                worst = worst.max(error / allowed);
            }
        }
        if worst > 1.0 {
            failures.push(format!("{name}: an error {worst:.2} times the tolerance"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_configuration_matches_executorch_on_the_jit() {
    every_configuration_matches_executorch(&[]);
}

#[test]
fn every_configuration_matches_executorch_on_aot() {
    every_configuration_matches_executorch(&["--backend", "aot"]);
}

/// The prompt of a configuration: the tokens of its first step.
fn prompt(name: &str) -> Vec<i64> {
    let path = fixtures().join(name).join("step_00/in_0.npy");
    let bytes = std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).expect("a .npy file");
    npy.into_vec::<i64>().expect("int64 tokens")
}

#[test]
fn c_decode_loop_generates_executorch_greedy_tokens() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let index = index();
    for name in ["llama_kv", "llama_8da4w_g32"] {
        let dir = scratch.path().join(name);
        std::fs::create_dir(&dir).expect("a folder per model");
        let (library, header, program) = (
            dir.join("model.so"),
            dir.join("model.h"),
            dir.join("decode"),
        );
        let model = fixtures().join(name).join("model.pte");
        let path = |path: &Path| path.to_str().expect("a UTF-8 path").to_owned();
        ptec_ok(&[
            "compile",
            &path(&model),
            "-o",
            &path(&library),
            "--header",
            &path(&header),
        ]);
        let source = repo_dir().join("examples/llm/decode.c");
        run_ok(
            Command::new("cc")
                .args(["-O2", "-Wall", "-Werror", "-I"])
                .arg(&dir)
                .arg(&source)
                .arg(&library)
                .args(["-lm", "-o"])
                .arg(&program),
            "building the decode loop",
        );
        let expected: Vec<i64> = index[name]["greedy_tokens"]
            .as_array()
            .expect("the index records ExecuTorch's greedy tokens")
            .iter()
            .map(|token| token.as_i64().expect("a token id"))
            .collect();
        assert_eq!(expected.len(), 32, "{name}: ExecuTorch's 32 greedy tokens");
        let mut command = Command::new(&program);
        command.env("LD_LIBRARY_PATH", &dir).args(["--steps", "32"]);
        command.args(prompt(name).iter().map(i64::to_string));
        let stdout = run_ok(&mut command, "the decode loop");
        let mut lines = stdout.lines();
        let tokens: Vec<i64> = lines
            .next()
            .expect("a line of generated ids")
            .split(' ')
            .map(|id| id.parse().expect("an id"))
            .collect();
        assert_eq!(tokens, expected, "{name}: the decode loop's greedy tokens");
        let speed = lines.next().expect("a line of speeds");
        assert!(speed.starts_with("prefill: 6 tokens"), "{name}: {speed}");
    }
}
