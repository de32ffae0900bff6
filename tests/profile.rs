//! `ptec bench --profile`: the JIT's code marks the time after each kernel,
//! and the report names every kernel of the method (node, op and the value
//! it writes, as the IR dump does) with its time per run and its share; a
//! shared object is refused (`tests/spirv.rs` profiles the Vulkan
//! dispatches).

mod common;

use common::{ptec, ptec_ok, repo_dir};

#[test]
fn every_kernel_is_timed_and_the_shares_add_up() {
    let file = repo_dir().join("tests/fixtures/add.portable.bpte");
    let file = file.to_str().expect("a UTF-8 path");
    for threads in ["1", "2"] {
        let out = ptec_ok(&[
            "bench",
            "--profile",
            "--json",
            "--iters",
            "5",
            "--threads",
            threads,
            file,
        ]);
        let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let kernels = report["profile"].as_array().expect("a profile");
        let mut names: Vec<&str> = kernels
            .iter()
            .map(|kernel| kernel["kernel"].as_str().expect("a name"))
            .collect();
        names.sort();
        // Each kernel by node, op and the value it writes, as the IR dump
        // names and types it.
        assert_eq!(names, ["n0 mul %3: f32[8]", "n1 add %4: f32[4,8]"], "{out}");
        let dump = ptec_ok(&["compile", "--emit", "ir", file]);
        for value in ["%3: f32[8] @", "%4: f32[4,8] @"] {
            assert!(dump.contains(value), "{dump}");
        }
        let shares: f64 = kernels
            .iter()
            .map(|kernel| kernel["percent"].as_f64().expect("a share"))
            .sum();
        assert!((shares - 100.0).abs() < 1e-6, "{out}");
        let times: Vec<f64> = kernels
            .iter()
            .map(|kernel| kernel["ms"].as_f64().expect("a time"))
            .collect();
        assert!(times.iter().all(|&ms| ms > 0.0), "{out}");
        assert!(times.windows(2).all(|pair| pair[0] >= pair[1]), "{out}");
    }
    let out = ptec_ok(&["bench", "--json", "--iters", "1", file]);
    assert!(!out.contains("profile"), "{out}");
}

#[test]
fn a_shared_object_is_refused() {
    let file = repo_dir().join("tests/fixtures/add.portable.bpte");
    let file = file.to_str().expect("a UTF-8 path");
    let output = ptec(&["bench", "--profile", "--backend", "aot", file]);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("error: --profile"), "{said}");
}
