//! The passes on hand-written graphs. Each folder `tests/<pass>/` holds file
//! tests of that pass alone (`; test: pass <pass>`: the input and the
//! result verify before memory is planned, `plan-memory`'s result once it
//! is), `tests/pipeline/` those of the whole pipeline (`; test: pipeline`).
//! The outcome is the graph's text with every constant in full, and for
//! `plan-memory` the live peak that bounds its arena from below.
//! `PTEC_BLESS=1 cargo test -p ptec-passes --test passes` rewrites the
//! expectations, to be reviewed like code.

use std::path::{Path, PathBuf};

use ptec_ir::filetest::{FileTest, run_directory};
use ptec_ir::{Constants, Graph, to_text_with};
use ptec_passes::{PassOptions, live_peak, names, run_pass, run_pipeline};

const PLAN_MEMORY: &str = "plan-memory";

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn text(graph: &Graph<'_>) -> String {
    to_text_with(graph, Constants::Full)
}

/// The graph the file holds, which must verify before memory is planned.
fn input(test: &FileTest) -> Graph<'static> {
    let path = test.path.display();
    let graph = ptec_ir::parse(&test.input).unwrap_or_else(|error| panic!("{path}: {error}"));
    ptec_ir::verify_unplanned(&graph)
        .unwrap_or_else(|error| panic!("{path}: the input does not verify: {error}"));
    graph
}

/// Runs one pass on the file's graph: the pass of the file's folder.
fn one_pass(test: &FileTest, name: &str) -> String {
    let path = test.path.display();
    let folder = test.path.parent().and_then(Path::file_name);
    assert_eq!(
        folder.and_then(|folder| folder.to_str()),
        Some(name),
        "{path} tests {name}, so it belongs in tests/{name}/"
    );
    let mut graph = input(test);
    let before = text(&graph);
    let changed = run_pass(&mut graph, name).unwrap_or_else(|error| panic!("{path}: {error}"));
    let verified = match name {
        PLAN_MEMORY => ptec_ir::verify(&graph),
        _ => ptec_ir::verify_unplanned(&graph),
    };
    verified.unwrap_or_else(|error| panic!("{path}: after {name}: {error}"));
    let after = text(&graph);
    assert_eq!(
        changed,
        after != before,
        "{path}: {name} says whether it changed the graph wrongly"
    );
    match name {
        PLAN_MEMORY => format!("{after}live peak: {} bytes", live_peak(&graph)),
        _ => after,
    }
}

/// Runs the whole pipeline, verifying after every pass.
fn pipeline(test: &FileTest) -> String {
    let mut graph = input(test);
    let options = PassOptions {
        verify: true,
        ..PassOptions::default()
    };
    run_pipeline(&mut graph, &options, |_, _| {})
        .unwrap_or_else(|error| panic!("{}: {error}", test.path.display()));
    text(&graph)
}

fn outcome(test: &FileTest) -> String {
    match test.command.as_slice() {
        [pass, name] if pass == "pass" => one_pass(test, name),
        [pipeline_word] if pipeline_word == "pipeline" => pipeline(test),
        other => panic!("{}: unknown test {other:?}", test.path.display()),
    }
}

fn run_folder(folder: &str) {
    run_directory(&tests_dir().join(folder), outcome);
}

#[test]
fn every_pass_has_file_tests() {
    for name in names() {
        assert!(
            tests_dir().join(name).is_dir(),
            "pass {name} has no file tests (tests/{name}/)"
        );
    }
}

#[test]
fn fold_constants() {
    run_folder("fold-constants");
}

#[test]
fn common_subexpressions() {
    run_folder("common-subexpressions");
}

#[test]
fn remove_copies() {
    run_folder("remove-copies");
}

#[test]
fn fuse_safe_softmax() {
    run_folder("fuse-safe-softmax");
}

#[test]
fn fold_batch_norm() {
    run_folder("fold-batch-norm");
}

#[test]
fn fuse_clamp() {
    run_folder("fuse-clamp");
}

#[test]
fn fuse_residual() {
    run_folder("fuse-residual");
}

#[test]
fn fuse_elementwise() {
    run_folder("fuse-elementwise");
}

#[test]
fn fuse_epilogue() {
    run_folder("fuse-epilogue");
}

#[test]
fn shorten_integer_chains() {
    run_folder("shorten-integer-chains");
}

#[test]
fn dead_code() {
    run_folder("dead-code");
}

#[test]
fn propagate_dim_order() {
    run_folder("propagate-dim-order");
}

#[test]
fn elide_requantize() {
    run_folder("elide-requantize");
}

#[test]
fn plan_memory() {
    run_folder("plan-memory");
}

#[test]
fn pipeline_of_every_pass() {
    run_folder("pipeline");
}
