//! Programs whose weights live in a separate `.ptd` data file: the
//! `llama_xnnpack_ptd` fixture (export_llama's foundation weights file, an
//! XNNPACK KV-cache Llama; `tests/llm.rs` runs its steps with `--data`
//! against ExecuTorch's) without its data file, with a mismatched one, twice,
//! or with a file that is no data file, is a clear error naming what is
//! wrong; `compile` embeds the data.

mod common;
#[path = "common/ptd_writer.rs"]
mod ptd_writer;

use std::path::{Path, PathBuf};

use common::{ptec, repo_dir};

fn fixture() -> PathBuf {
    repo_dir().join("tests/fixtures/llm/llama_xnnpack_ptd")
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

fn stderr_of(args: &[&str]) -> String {
    let output = ptec(args);
    assert_eq!(
        output.status.code(),
        Some(1),
        "ptec {args:?} must fail with exit 1; stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn without_its_data_file_the_error_names_the_missing_key() {
    let pte = fixture().join("model.pte");
    for command in ["run", "inspect", "compile"] {
        let mut args = vec![command, ""];
        let pte = path_arg(&pte);
        args[1] = &pte;
        let stderr = stderr_of(&args);
        assert!(
            stderr.contains("\"tok_embeddings.weight\" is in neither the program nor a data file")
                && stderr.contains("--data"),
            "{command}: {stderr}"
        );
    }
}

/// The fixture's data file with one tensor's blob and layout replaced.
fn data_file_with(key: &str, sizes: Vec<i32>) -> Vec<u8> {
    let bytes = std::fs::read(fixture().join("model.ptd")).expect("the data file reads");
    let file = ptec_frontend::read_data_file(&bytes).expect("the fixture's data file is valid");
    let mut replaced = false;
    let blobs: Vec<ptd_writer::Blob> = file
        .named_data
        .entries()
        .map(|(name, entry)| {
            let layout = entry.layout.as_ref().map(|layout| ptd_writer::Layout {
                scalar_type: layout.dtype.code(),
                sizes: layout.sizes.iter().map(|&size| size as i32).collect(),
                dim_order: layout.dim_order.clone(),
            });
            let mut blob = ptd_writer::Blob {
                key: name.to_string(),
                data: entry.data.to_vec(),
                layout,
            };
            if name == key {
                replaced = true;
                let elements: i32 = sizes.iter().product();
                blob.data = vec![0; elements as usize * 4];
                blob.layout = Some(ptd_writer::Layout {
                    scalar_type: 6,
                    dim_order: (0..sizes.len() as u8).collect(),
                    sizes: sizes.clone(),
                });
            }
            blob
        })
        .collect();
    assert!(replaced, "the data file has {key}");
    ptd_writer::write(&blobs)
}

#[test]
fn a_data_file_whose_tensor_has_other_sizes_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let ptd = dir.path().join("wrong.ptd");
    std::fs::write(&ptd, data_file_with("norm.weight", vec![64])).expect("written");
    let pte = path_arg(&fixture().join("model.pte"));
    let stderr = stderr_of(&["inspect", &pte, "--data", &path_arg(&ptd)]);
    assert!(
        stderr.contains("external tensor \"norm.weight\" has sizes [32] in the program but [64] in the data file"),
        "{stderr}"
    );
}

#[test]
fn the_same_data_file_twice_is_refused() {
    let pte = path_arg(&fixture().join("model.pte"));
    let ptd = path_arg(&fixture().join("model.ptd"));
    let stderr = stderr_of(&["inspect", &pte, "--data", &ptd, "--data", &ptd]);
    assert!(
        stderr.starts_with(&format!("error: {ptd}: named data key "))
            && stderr.contains("is also in the program or an earlier data file"),
        "{stderr}"
    );
}

#[test]
fn a_data_file_that_is_not_one_names_itself() {
    let pte = path_arg(&fixture().join("model.pte"));
    let npy = path_arg(&fixture().join("step_00/in_0.npy"));
    let stderr = stderr_of(&["inspect", &pte, "--data", &npy]);
    assert!(
        stderr.contains("in_0.npy: data file: expected file identifier \"FT01\""),
        "{stderr}"
    );
}

#[test]
fn compile_embeds_the_data() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let library = dir.path().join("model.so");
    let fixture = fixture();
    let output = ptec(&[
        "compile",
        &path_arg(&fixture.join("model.pte")),
        "--data",
        &path_arg(&fixture.join("model.ptd")),
        "-o",
        &path_arg(&library),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The library holds the weights: the embedding table, which no pass
    // repacks, is in it byte for byte.
    let data = std::fs::read(fixture.join("model.ptd")).expect("the data file");
    let data = ptec_frontend::read_data_file(&data).expect("a valid data file");
    let table = data
        .named_data
        .get("tok_embeddings.weight")
        .expect("the data file holds the embedding table");
    let so = std::fs::read(&library).expect("the library");
    assert!(
        so.windows(table.len()).any(|window| window == table),
        "the {}-byte library does not hold the {}-byte embedding table",
        so.len(),
        table.len()
    );
}
