//! Reductions into another element type than their input's, on the CPU: a
//! sum or product computes in its output's type, as PyTorch does, so each
//! element is converted first (a float truncated into integers), and into
//! bool a sum is `or` and a product `and`.

mod common;

use common::{elements, le_bytes, run_jit};

/// The bytes of the first output of `text` run on one f32 input.
fn reduced(text: &str, input: &[f32]) -> Vec<u8> {
    let graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let input = le_bytes(input, f32::to_le_bytes);
    let results = run_jit(&graph, &[&input]).expect("the graph runs");
    results[0].data.clone()
}

fn graph(op: &str, output: &str) -> String {
    format!(
        "graph g (arena 128 bytes) {{
  %0: f32[2,3] @0 = input 0
  %1: {output}[2] @64 = {op}(%0) dims=[1] keepdim=false
  return %1
}}"
    )
}

#[test]
fn sums_and_products_into_bool_are_or_and_and() {
    let input = [0.5, -0.5, 0.0, 0.0, 0.0, 0.0];
    assert_eq!(reduced(&graph("reduce_sum", "bool"), &input), [1, 0]);
    let input = [1.0, -1.0, 0.0, 0.5, 2.0, 3.0];
    assert_eq!(reduced(&graph("reduce_sum", "bool"), &input), [1, 1]);
    assert_eq!(reduced(&graph("reduce_prod", "bool"), &input), [0, 1]);
}

#[test]
fn sums_into_integers_truncate_each_element() {
    let input = [0.6, 0.6, 0.6, -1.5, 2.5, 1.0];
    let sums = reduced(&graph("reduce_sum", "i64"), &input);
    let sums = elements(
        &ptec_runtime::HostTensor {
            element: ptec_runtime::ElementType::I64,
            sizes: vec![2],
            data: sums,
        },
        i64::from_le_bytes,
    );
    assert_eq!(sums, [0, 2]);
}
