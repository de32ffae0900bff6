//! The verifier on hand-written graphs (`tests/verify/*.ir`): graphs it
//! accepts, and graphs it rejects with the error they must give.
//! `PTEC_BLESS=1 cargo test -p ptec-ir --test verify` rewrites the
//! expectations.

use std::path::Path;

use ptec_ir::filetest::{FileTest, run_directory};

fn verify(test: &FileTest) -> String {
    let graph = match ptec_ir::parse(&test.input) {
        Ok(graph) => graph,
        Err(error) => return format!("parse error: {error}"),
    };
    let result = match test.command.as_slice() {
        [verify] if verify == "verify" => ptec_ir::verify_unplanned(&graph),
        [verify, planned] if verify == "verify" && planned == "planned" => ptec_ir::verify(&graph),
        other => panic!("{}: unknown test {other:?}", test.path.display()),
    };
    match result {
        Ok(()) => "ok".to_string(),
        Err(error) => format!("error: {error}"),
    }
}

#[test]
fn verifier_accepts_and_rejects_hand_written_graphs() {
    run_directory(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/verify"),
        verify,
    );
}
