//! Golden tests of the IR: for each small fixture, the text of its graph
//! after import and after every pass, compared with `tests/golden/STEM.ir`.
//! Any difference fails; `PTEC_BLESS=1 cargo test --test golden_ir` rewrites
//! the files, to be reviewed like code.

mod common;

use common::{ptec, repo_dir};

/// Fixtures by file stem (`tests/fixtures/STEM.bpte`).
const PROGRAMS: &[&str] = &[
    "add.portable",
    "cond.portable",
    "counter.portable",
    "conv_bn.portable",
    "dyn_batch.portable",
    "linear_relu.portable",
    "multi_out.portable",
    "add.xnnpack",
    "conv_bn.xnnpack",
    "linear_relu.xnnpack",
];

fn dump(file: &str, extra: &[&str]) -> String {
    let mut args = vec!["dump", file];
    args.extend_from_slice(extra);
    let output = ptec(&args);
    assert!(
        output.status.success(),
        "ptec dump {file}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 IR text")
}

#[test]
fn ir_after_import_and_each_pass_matches_the_golden_files() {
    let bless = std::env::var_os("PTEC_BLESS").is_some();
    let mut stale = Vec::new();
    for name in PROGRAMS {
        let file = repo_dir().join(format!("tests/fixtures/{name}.bpte"));
        let file = file.to_str().expect("utf-8 path");
        let text = format!(
            "; after import\n{}{}",
            dump(file, &[]),
            dump(file, &["--after", "all"])
        );
        let golden = repo_dir().join(format!("tests/golden/{name}.ir"));
        if bless {
            std::fs::write(&golden, &text).expect("golden file is writable");
        } else if std::fs::read_to_string(&golden).ok().as_deref() != Some(text.as_str()) {
            stale.push(golden.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "IR differs from {}: review the change and run `PTEC_BLESS=1 cargo test --test golden_ir`",
        stale.join(", ")
    );
}
