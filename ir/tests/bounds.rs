//! What `value_bounds` proves of values written by elementwise functions
//! and fused chains: the bounds and integrality each function's rule gives,
//! followed back through the nodes that write the operands, and nothing
//! where a rule or a writer is missing.

use ptec_ir::{Bounds, Graph, parse, value_bounds};

fn graph(text: &str) -> Graph<'static> {
    parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"))
}

/// The bounds of value `%index`.
fn bounds_of(graph: &Graph<'_>, index: usize) -> Bounds {
    let value = graph
        .values()
        .map(|(id, _)| id)
        .find(|id| id.to_string() == format!("%{index}"))
        .unwrap_or_else(|| panic!("no %{index}"));
    value_bounds(graph, value)
}

#[test]
fn round_then_clamp_gives_the_quantized_range() {
    let g = graph(
        "graph g {
  %0: f32[4] = input 0
  %1: f32[4] = round(%0)
  %2: f32[4] = clamp(%1) min=-133.0 max=122.0
  %3: f32[4] = clamp(%1) min=-1.5 max=2.0
  %4: f32[4] = clamp(%0) min=-3.0 max=3.0
  return %2, %3, %4
}",
    );
    assert_eq!(bounds_of(&g, 0), Bounds::UNKNOWN);
    let round = bounds_of(&g, 1);
    assert!(round.integral && round.integers().is_none());
    assert_eq!(bounds_of(&g, 2).integers(), Some((-133, 122)));
    // A bound that is no integer, or an input that is none, proves no
    // integers.
    assert_eq!(bounds_of(&g, 3), Bounds::new(-1.5, 2.0, false));
    assert_eq!(bounds_of(&g, 4), Bounds::new(-3.0, 3.0, false));
}

#[test]
fn scalar_products_and_sums_carry_the_bounds_through_fused_chains() {
    let g = graph(
        "graph g {
  %0: f32[4] = input 0
  %1: f32[4] = input 1
  %2: f32[4] = fused(%0) steps=[round(in0); clamp(s0) min=-123.0 max=132.0; mul_scalar(s1) scalar=0.03235246241092682; clamp(s2) min=0.0 max=4.270524978637695; mul_scalar(s3) scalar=30.909547805786133; round(s4)]
  %3: f32[4] = mul_scalar(%2) scalar=-2.0
  %4: f32[4] = fused(%2, %3) steps=[add(in0, in1); add_scalar(s0) scalar=7.0]
  %5: f32[4] = fused(%2, %1) steps=[add(in0, in1)]
  return %4, %5
}",
    );
    let top = (4.270_525_f32 * 30.909_548_f32).round_ties_even();
    assert_eq!(bounds_of(&g, 2), Bounds::new(0.0, top, true));
    // A negative factor swaps the bounds.
    assert_eq!(bounds_of(&g, 3), Bounds::new(-2.0 * top, 0.0, true));
    assert_eq!(
        bounds_of(&g, 4),
        Bounds::new(-2.0 * top + 7.0, top + 7.0, true)
    );
    // An operand of unknown bounds leaves the sum's unknown.
    assert_eq!(bounds_of(&g, 5).integers(), None);
}

#[test]
fn other_element_types_and_functions_prove_nothing() {
    let g = graph(
        "graph g {
  %0: f64[4] = input 0
  %1: f64[4] = round(%0)
  %2: f64[4] = clamp(%1) min=-1.0 max=1.0
  %3: f32[4] = input 1
  %4: f32[4] = fused(%3) steps=[round(in0); clamp(s0) min=-1.0 max=1.0; exp(s1)]
  return %2, %4
}",
    );
    assert_eq!(bounds_of(&g, 2), Bounds::UNKNOWN);
    assert_eq!(bounds_of(&g, 4), Bounds::UNKNOWN);
}

#[test]
fn max_pooling_keeps_its_input_bounds_where_every_window_holds_an_element() {
    let g = graph(
        "graph g {
  %0: f32[1,2,7,7] = input 0
  %1: f32[1,2,7,7] = fused(%0) steps=[round(in0); clamp(s0) min=0.0 max=255.0]
  %2: f32[1,2,4,4], %3: i64[1,2,4,4] = max_pool2d(%1) kernel=[3, 3] stride=[2, 2] padding=[1, 1] dilation=[1, 1] ceil_mode=false
  %4: f32[1,2,3,3], %5: i64[1,2,3,3] = max_pool2d(%1) kernel=[3, 3] stride=[2, 2] padding=[0, 0] dilation=[2, 2] ceil_mode=false
  %10: f32[1,2,2,2] = input 1
  %11: f32[1,2,2,2] = fused(%10) steps=[round(in0); clamp(s0) min=0.0 max=255.0]
  %6: f32[1,2,1,1], %7: i64[1,2,1,1] = max_pool2d(%11) kernel=[2, 2] stride=[1, 1] padding=[1, 1] dilation=[3, 3] ceil_mode=false
  %8: f32[1,2,3,3], %9: i64[1,2,3,3] = max_pool2d(%0) kernel=[3, 3] stride=[2, 2] padding=[0, 0] dilation=[1, 1] ceil_mode=false
  return %2, %4, %6, %8
}",
    );
    assert_eq!(bounds_of(&g, 2).integers(), Some((0, 255)));
    assert_eq!(bounds_of(&g, 4).integers(), Some((0, 255)));
    // Dilated and padded: the one window's taps, -1 and 2 along each axis
    // of two elements, are all padding, and its maximum -inf.
    assert_eq!(
        bounds_of(&g, 6),
        Bounds::new(f32::NEG_INFINITY, 255.0, true)
    );
    assert_eq!(bounds_of(&g, 8), Bounds::UNKNOWN);
}
