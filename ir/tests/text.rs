//! The text form reads back: a graph with a node of every kind of op prints
//! as the text it was parsed from (large constants elided), and parsing what
//! `to_text_with(Full)` prints gives the same graph again.

use std::collections::BTreeSet;
use std::path::Path;

use ptec_ir::{Constants, OpKind, to_text_with};

fn every_op() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/text/every_op.ir");
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The text without its leading comment lines.
fn graph_text(text: &str) -> String {
    text.lines()
        .filter(|line| !line.starts_with(';'))
        .map(|line| format!("{line}\n"))
        .collect()
}

#[test]
fn every_op_prints_as_it_was_written() {
    let text = every_op();
    let graph = ptec_ir::parse(&text).expect("the text parses");
    ptec_ir::verify_unplanned(&graph).expect("the graph is valid");
    assert_eq!(ptec_ir::to_text(&graph), graph_text(&text));
}

#[test]
fn text_round_trips() {
    let graph = ptec_ir::parse(&every_op()).expect("the text parses");
    let printed = to_text_with(&graph, Constants::Full);
    let again = ptec_ir::parse(&printed).expect("printed text parses");
    assert_eq!(to_text_with(&again, Constants::Full), printed);
}

#[test]
fn the_text_test_covers_every_kind_of_op() {
    let graph = ptec_ir::parse(&every_op()).expect("the text parses");
    let covered: BTreeSet<OpKind> = graph
        .schedule()
        .iter()
        .map(|&node| graph.op(node).kind())
        .collect();
    let missing: Vec<&str> = OpKind::ALL
        .iter()
        .filter(|kind| !covered.contains(kind))
        .map(|kind| kind.name())
        .collect();
    assert!(
        missing.is_empty(),
        "tests/text/every_op.ir has no node of {missing:?}"
    );
}
