//! File tests in the style of Cranelift's: a small hand-written graph in the
//! text form, what to do with it, and the expected outcome, in one `.ir`
//! file. The crates that transform or check graphs (the verifier here, the
//! passes) run a folder of them from their tests.
//!
//! ```text
//! ; Fuses the relu into the convolution that feeds it.
//! ; test: pass fuse-clamp
//! graph forward {
//!   ...
//! }
//! ; expect:
//! ; graph forward {
//! ;   ...
//! ; }
//! ```
//!
//! The `; test:` line says what to run; everything from `; expect:` on is
//! the outcome, each line commented. With `PTEC_BLESS` set, the outcome is
//! rewritten instead of compared, to be reviewed like code.

use std::path::{Path, PathBuf};

const TEST: &str = "; test:";
const EXPECT: &str = "; expect:";

/// One file test: its path, what to run, and the graph's text.
#[derive(Debug)]
pub struct FileTest {
    pub path: PathBuf,
    /// The words after `; test:` (`["pass", "fuse-clamp"]`).
    pub command: Vec<String>,
    /// The file up to `; expect:`: comments and the graph.
    pub input: String,
}

/// Runs every `.ir` file of `dir` through `run`, which returns the outcome
/// (a line, or a graph's text); fails listing every file whose outcome
/// differs from the one it expects, unless blessing.
pub fn run_directory(dir: &Path, run: impl Fn(&FileTest) -> String) {
    let bless = std::env::var_os("PTEC_BLESS").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "ir"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has no .ir files", dir.display());
    let mut failures = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
        let input = match text.find(EXPECT) {
            Some(end) => text[..end].to_string(),
            None => text.clone(),
        };
        let command = input
            .lines()
            .find_map(|line| line.strip_prefix(TEST))
            .unwrap_or_else(|| panic!("{} has no `{TEST}` line", path.display()))
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let test = FileTest {
            path: path.clone(),
            command,
            input: input.clone(),
        };
        let outcome = run(&test);
        let expected = format!("{input}{}", expectation(&outcome));
        if bless {
            std::fs::write(&path, &expected)
                .unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
        } else if text != expected {
            failures.push(format!(
                "{}:\n--- expected\n{}\n--- found\n{}",
                path.display(),
                text.get(input.len()..).unwrap_or_default(),
                expectation(&outcome)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "file tests whose outcome changed (review, then bless with PTEC_BLESS=1):\n{}",
        failures.join("\n")
    );
}

/// The `; expect:` section for an outcome: on the same line when it is one
/// line, else each line commented below.
fn expectation(outcome: &str) -> String {
    let lines: Vec<&str> = outcome.trim_end().lines().collect();
    match lines.as_slice() {
        [line] => format!("{EXPECT} {line}\n"),
        _ => {
            let mut section = format!("{EXPECT}\n");
            for line in lines {
                section.push_str(format!("; {line}").trim_end());
                section.push('\n');
            }
            section
        }
    }
}
