//! Symbols the generated code computes: integer floor division and modulo
//! of run-time scalars (read from tensors' elements) round as Python's `//`
//! and `%` do, as `ptec_ir::symbolic` folds them, including the extremes,
//! and a zero divisor stops the method with an error instead of trapping.

mod common;

use common::{elements, le_bytes, run_jit};
use ptec_ir::symbolic::{floor_div, floor_mod};
use ptec_runtime::RuntimeError;

const FLOOR_DIV_MOD: &str = "
graph forward (arena 64 bytes) {
  symbol s0 = element %0
  symbol s1 = element %1
  symbol s2 = floordiv(s0, s1)
  symbol s3 = mod(s0, s1)
  %0: i64[] @0 = input 0
  %1: i64[] @16 = input 1
  %2: i64[] @32 = full() value=s2
  %3: i64[] @48 = full() value=s3
  return %2, %3
}
";

fn floor_div_mod(a: i64, b: i64) -> Result<(i64, i64), RuntimeError> {
    let graph = ptec_ir::parse(FLOOR_DIV_MOD).unwrap_or_else(|error| panic!("{error}"));
    let (a, b) = (
        le_bytes(&[a], i64::to_le_bytes),
        le_bytes(&[b], i64::to_le_bytes),
    );
    let outputs = run_jit(&graph, &[&a, &b])?;
    let value = |index: usize| elements(&outputs[index], i64::from_le_bytes)[0];
    Ok((value(0), value(1)))
}

#[test]
fn floor_division_and_modulo_round_as_python() {
    let operands = [
        (7, 2),
        (-7, 2),
        (7, -2),
        (-7, -2),
        (6, 3),
        (-6, 3),
        (0, -5),
        (i64::MIN, -1),
        (i64::MIN, 1),
        (i64::MAX, -1),
        (i64::MIN, i64::MAX),
        (5, i64::MIN),
    ];
    for (a, b) in operands {
        let wanted = (
            floor_div(a, b).expect("a divisor"),
            floor_mod(a, b).expect("a divisor"),
        );
        let got = floor_div_mod(a, b).unwrap_or_else(|error| panic!("{a} // {b}: {error}"));
        assert_eq!(got, wanted, "{a} // {b} and {a} % {b}");
    }
}

#[test]
fn a_zero_divisor_is_an_error() {
    let error = floor_div_mod(7, 0).expect_err("division by zero");
    assert!(
        error.to_string().contains("division by zero computing s2"),
        "{error}"
    );
}
