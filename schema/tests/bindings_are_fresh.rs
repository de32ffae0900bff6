//! Fails when the committed bindings in `src/generated/` are stale: when a
//! schema or a generated file was edited without running `regenerate.sh`.
//!
//! Two checks: the stamp that `regenerate.sh` writes must match the current
//! files (needs nothing but this crate), and, when flatc 24.3.25 is at hand
//! (`$FLATC`, or `flatc` on PATH), regenerating must reproduce the committed
//! files byte for byte. CI (`CI` set) must have flatc; elsewhere its absence
//! is reported.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sha256_hex(path: &Path) -> String {
    let bytes =
        fs::read(path).unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[test]
fn stamp_matches_schemas_and_generated_code() {
    let dir = crate_dir();
    let stamp =
        fs::read_to_string(dir.join("src/generated/STAMP.sha256")).expect("the stamp file exists");
    let mut listed = Vec::new();
    for line in stamp.lines() {
        let (hash, file) = line.split_once("  ").expect("stamp lines are `HASH  PATH`");
        assert_eq!(
            sha256_hex(&dir.join(file)),
            hash,
            "{file} changed since schema/regenerate.sh last ran: run it and commit the result"
        );
        listed.push(file.to_string());
    }
    for folder in ["fbs", "src/generated"] {
        for entry in fs::read_dir(dir.join(folder)).expect("folder exists") {
            let name = entry
                .expect("readable entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            if name.ends_with(".fbs") || name.ends_with(".rs") {
                let file = format!("{folder}/{name}");
                assert!(
                    listed.contains(&file),
                    "{file} is not in the stamp: run schema/regenerate.sh"
                );
            }
        }
    }
}

fn flatc() -> Option<String> {
    let flatc = std::env::var("FLATC").unwrap_or_else(|_| "flatc".to_string());
    let output = Command::new(&flatc).arg("--version").output().ok()?;
    (String::from_utf8_lossy(&output.stdout).trim() == "flatc version 24.3.25").then_some(flatc)
}

#[test]
fn regenerating_reproduces_the_committed_bindings() {
    let Some(flatc) = flatc() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide flatc 24.3.25 (scripts/fetch_flatc.sh) in $FLATC"
        );
        eprintln!("flatc 24.3.25 not found ($FLATC or PATH): only the stamp was checked");
        return;
    };
    let dir = crate_dir();
    let out = std::env::temp_dir().join(format!("ptec-schema-regen-{}", std::process::id()));
    let status = Command::new(dir.join("regenerate.sh"))
        .arg(&out)
        .env("FLATC", flatc)
        .status()
        .expect("regenerate.sh runs");
    assert!(status.success(), "regenerate.sh failed");
    let committed = dir.join("src/generated");
    for entry in fs::read_dir(&out).expect("output folder exists") {
        let name = entry.expect("readable entry").file_name();
        let fresh = fs::read(out.join(&name)).expect("fresh file");
        let old = fs::read(committed.join(&name)).unwrap_or_default();
        assert!(
            fresh == old,
            "{} is stale: run schema/regenerate.sh",
            name.to_string_lossy()
        );
    }
    fs::remove_dir_all(&out).ok();
}
