//! Indices read from tensors at run time, on the CPU: gathers, advanced
//! indexing, scatters, `index_put`, `masked_scatter` and
//! `repeat_interleave` give PyTorch's results for indices in range
//! (negative ones counted from the end once where PyTorch counts them), and
//! an index out of range, a source too short or counts that do not add up
//! make the method return an error that names the op and the problem,
//! never a read or write outside a tensor.

mod common;

use common::{elements, le_bytes, run_jit};
use ptec_runtime::{HostTensor, RuntimeError};

/// Parses `text` and runs it with the JIT on `inputs`.
fn run(text: &str, inputs: &[Vec<u8>]) -> Result<Vec<HostTensor>, RuntimeError> {
    let graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    run_jit(&graph, &inputs)
}

/// The f32 elements of the first output of a graph that must run.
fn f32s(text: &str, inputs: &[Vec<u8>]) -> Vec<f32> {
    let results = run(text, inputs).expect("the graph runs");
    elements(&results[0], f32::from_le_bytes)
}

/// The message of the execution error a graph must give.
fn error(text: &str, inputs: &[Vec<u8>]) -> String {
    match run(text, inputs) {
        Err(RuntimeError::Execution { message, .. }) => message,
        Err(other) => panic!("an execution error, not {other}"),
        Ok(results) => panic!("an error, not {results:?}"),
    }
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    le_bytes(values, f32::to_le_bytes)
}

fn i64_bytes(values: &[i64]) -> Vec<u8> {
    le_bytes(values, i64::to_le_bytes)
}

/// A 2x3 table, 0 to 5.
fn table() -> Vec<u8> {
    f32_bytes(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
}

const GATHER: &str = "
graph gather (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: i64[2,2] @32 = input 1
  %2: f32[2,2] @64 = gather(%0, %1) dim=1
  return %2
}";

#[test]
fn gather_reads_along_its_dimension_and_refuses_negative_or_large_indices() {
    assert_eq!(
        f32s(GATHER, &[table(), i64_bytes(&[2, 0, 1, 1])]),
        [2.0, 0.0, 4.0, 4.0]
    );
    for bad in [[0, 3, 1, 1], [0, 1, -1, 1]] {
        let message = error(GATHER, &[table(), i64_bytes(&bad)]);
        assert!(
            message.contains(
                "index out of range: an index of dimension 1 (size 3) is outside 0..size"
            ),
            "{bad:?}: {message}"
        );
    }
}

/// Advanced indexing `x[i, j]`: negative indices wrap once; `wrap=false`
/// (index_select, embedding) refuses them.
const INDEX: &str = "
graph index (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: i64[4] @32 = input 1
  %2: i64[4] @64 = input 2
  %3: f32[4] @96 = index(%0, %1, %2) dims=[0, 1] wrap=true
  return %3
}";

const INDEX_SELECT: &str = "
graph index_select (arena 128 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: i64[2] @32 = input 1
  %2: f32[2,3] @64 = index(%0, %1) dims=[0] wrap=false
  return %2
}";

#[test]
fn advanced_indexing_wraps_negative_indices_once() {
    let rows = i64_bytes(&[0, -1, 1, -2]);
    let columns = i64_bytes(&[-3, 2, -1, 1]);
    assert_eq!(
        f32s(INDEX, &[table(), rows.clone(), columns]),
        [0.0, 5.0, 5.0, 1.0]
    );
    let message = error(INDEX, &[table(), rows, i64_bytes(&[0, 1, -4, 2])]);
    assert!(
        message.contains(
            "index out of range: an index of dimension 1 (size 3) is outside -size..size"
        ),
        "{message}"
    );
    let message = error(
        INDEX,
        &[table(), i64_bytes(&[0, 2, 0, 0]), i64_bytes(&[0; 4])],
    );
    assert!(
        message.contains("an index of dimension 0 (size 2)"),
        "{message}"
    );
}

#[test]
fn index_select_refuses_negative_indices() {
    assert_eq!(
        f32s(INDEX_SELECT, &[table(), i64_bytes(&[1, 1])]),
        [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]
    );
    let message = error(INDEX_SELECT, &[table(), i64_bytes(&[1, -1])]);
    assert!(
        message.contains("index out of range: an index of dimension 0 (size 2) is outside 0..size"),
        "{message}"
    );
}

/// `scatter_add` along dim 1 with a repeated index; the values are chosen
/// so that the order of the additions shows (1e8 + 1 - 1e8 is 0 in f32
/// but 1e8 - 1e8 + 1 is 1).
const SCATTER_ADD: &str = "
graph scatter_add (arena 192 bytes) {
  %0: f32[1,3] @0 = input 0
  %1: i64[1,3] @32 = input 1
  %2: f32[1,3] @64 = input 2
  %3: f32[1,3] @96 = scatter(%0, %1, %2) dim=1 accumulate=true
  return %3
}";

#[test]
fn scatter_add_accumulates_duplicates_in_order_and_checks_indices() {
    let x = f32_bytes(&[1e8, 7.0, 0.0]);
    let src = f32_bytes(&[1.0, -1e8, 2.0]);
    // x[0] = ((1e8 + 1) + -1e8) = 0 in f32 (1e8 + 1 rounds to 1e8).
    assert_eq!(
        f32s(
            SCATTER_ADD,
            &[x.clone(), i64_bytes(&[0, 0, 2]), src.clone()]
        ),
        [0.0, 7.0, 2.0]
    );
    let message = error(SCATTER_ADD, &[x, i64_bytes(&[0, 3, 2]), src]);
    assert!(
        message.contains("index out of range: an index of dimension 1 (size 3)"),
        "{message}"
    );
}

/// `x[i] += v` with repeated rows (accumulate) and `x[i] = v`.
const INDEX_PUT: &str = "
graph index_put (arena 256 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: f32[3] @32 = input 1
  %2: i64[3] @64 = input 2
  %3: f32[2,3] @96 = index_put(%0, %1, %2) dims=[0] accumulate=true
  %4: f32[2,3] @128 = index_put(%0, %1, %2) dims=[0] accumulate=false
  return %3, %4
}";

#[test]
fn index_put_wraps_negative_indices_and_refuses_large_ones() {
    let v = f32_bytes(&[10.0, 20.0, 30.0]);
    let results =
        run(INDEX_PUT, &[table(), v.clone(), i64_bytes(&[-1, 1, 0])]).expect("the graph runs");
    assert_eq!(
        elements(&results[0], f32::from_le_bytes),
        [10.0, 21.0, 32.0, 23.0, 44.0, 65.0]
    );
    assert_eq!(
        elements(&results[1], f32::from_le_bytes),
        [10.0, 20.0, 30.0, 10.0, 20.0, 30.0]
    );
    let message = error(INDEX_PUT, &[table(), v, i64_bytes(&[0, -3, 1])]);
    assert!(
        message.contains(
            "index out of range: an index of dimension 0 (size 2) is outside -size..size"
        ),
        "{message}"
    );
}

const MASKED_SCATTER: &str = "
graph masked_scatter (arena 192 bytes) {
  %0: f32[2,3] @0 = input 0
  %1: bool[3] @32 = input 1
  %2: f32[3] @64 = input 2
  %3: f32[2,3] @96 = masked_scatter(%0, %1, %2)
  return %3
}";

#[test]
fn masked_scatter_takes_the_source_in_order_and_refuses_a_short_one() {
    let source = f32_bytes(&[10.0, 20.0, 30.0]);
    assert_eq!(
        f32s(MASKED_SCATTER, &[table(), vec![0, 1, 0], source.clone()]),
        [0.0, 10.0, 2.0, 3.0, 20.0, 5.0]
    );
    let message = error(MASKED_SCATTER, &[table(), vec![1, 0, 1], source]);
    assert!(message.contains("masked_scatter"), "{message}");
}

const REPEAT_INTERLEAVE: &str = "
graph repeat_interleave (arena 128 bytes) {
  %0: i64[3] @0 = input 0
  %1: i64[4] @64 = repeat_interleave(%0)
  return %1
}";

#[test]
fn repeat_interleave_checks_its_counts_against_output_size() {
    let results = run(REPEAT_INTERLEAVE, &[i64_bytes(&[1, 0, 3])]).expect("the graph runs");
    assert_eq!(elements(&results[0], i64::from_le_bytes), [0, 2, 2, 2]);
    for (counts, problem) in [
        ([1, 1, 1], "the counts add up to less than output_size"),
        ([2, 2, 1], "the counts add up to more than output_size"),
        ([2, -1, 3], "a count of repeats is negative"),
    ] {
        let message = error(REPEAT_INTERLEAVE, &[i64_bytes(&counts)]);
        assert!(message.contains(problem), "{counts:?}: {message}");
    }
}
