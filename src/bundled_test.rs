//! `ptec test`: runs every test case of bundled programs (the library's
//! `bundled::test_file`) and prints a line per file, or its JSON report.

use std::path::{Path, PathBuf};

use ptec_compiler::bundled::{FileReport, Tolerance, test_file};

use crate::instance::{Backend, CompileArgs};

/// `paths` with each directory replaced by the bundled programs (`.bpte`)
/// in it, sorted by name; a directory holding none is an error.
fn bundled_programs(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let is_bundled = |file: &Path| {
            file.extension()
                .is_some_and(|extension| extension == "bpte")
                && file.is_file()
        };
        let inside = crate::listing::sorted_entries(path, is_bundled)?;
        anyhow::ensure!(
            !inside.is_empty(),
            "{} holds no bundled program (.bpte file)",
            path.display()
        );
        files.extend(inside);
    }
    Ok(files)
}

/// Runs the tests of every file (every `.bpte` of a directory); returns
/// whether all passed.
pub fn run(
    files: &[PathBuf],
    data: &[PathBuf],
    backend: Backend,
    tolerance: Tolerance,
    json: bool,
    passes: &CompileArgs,
) -> anyhow::Result<bool> {
    let options = passes.options();
    let (mut passed, mut failed) = (0, 0);
    for path in &bundled_programs(files)? {
        let report = test_file(path, data, backend, tolerance, &options, |reports| {
            passes.report(reports);
        });
        if report.pass {
            passed += 1;
        } else {
            failed += 1;
        }
        if json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            print_report(&report);
        }
    }
    if !json {
        println!("{passed} passed, {failed} failed");
    }
    Ok(failed == 0)
}

fn print_report(report: &FileReport) {
    let worst = report
        .cases
        .iter()
        .map(|case| case.max_abs_err)
        .fold(0.0, f64::max);
    match (&report.error, report.pass) {
        (Some(error), _) => println!("FAIL {}: {error}", report.file),
        (None, true) => println!(
            "ok   {} ({} cases, max abs err {worst:.3e})",
            report.file,
            report.cases.len()
        ),
        (None, false) => {
            println!("FAIL {}", report.file);
            for (index, case) in report.cases.iter().enumerate() {
                let verdict = if case.pass { "ok" } else { "FAIL" };
                let problem = case
                    .problem
                    .as_deref()
                    .map(|p| format!(": {p}"))
                    .unwrap_or_default();
                println!(
                    "     case {index} ({}): {verdict}, max abs err {:.3e}{problem}",
                    case.method, case.max_abs_err
                );
            }
        }
    }
}
