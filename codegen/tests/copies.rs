//! Copies of every element type (`cat`, `permute`, `slice`) move each
//! element's bytes unchanged: sixteen bytes at a time where a run is
//! contiguous, then the elements left one by one, from any offset.

#[allow(dead_code)] // The helpers decoding elements, which byte copies need not.
mod common;

use common::run_jit;
use ptec_ir::DType;

/// The bytes of `elements` elements of `dtype`, every one different (bools
/// alternate, as a bool holds 0 or 1).
fn bytes_of(dtype: DType, elements: usize, seed: usize) -> Vec<u8> {
    let size = dtype.size();
    (0..elements * size)
        .map(|index| match dtype {
            DType::Bool => ((index + seed) % 2) as u8,
            _ => (index * 37 + seed * 11 + index / size * 5) as u8,
        })
        .collect()
}

/// `cat` of `[3, 37]` and `[2, 37]` along rows, the first one's columns
/// `3..33`, and its transpose.
fn graph(dtype: DType) -> String {
    let name = dtype.name();
    let at = |elements: usize| (elements * dtype.size()).next_multiple_of(64);
    let offsets: Vec<usize> = [111, 74, 185, 90, 111]
        .iter()
        .scan(0, |offset, &elements| {
            let start = *offset;
            *offset += at(elements);
            Some(start)
        })
        .collect();
    let arena = offsets[4] + at(111);
    format!(
        "graph copies (arena {arena} bytes) {{
  %0: {name}[3,37] @{} = input 0
  %1: {name}[2,37] @{} = input 1
  %2: {name}[5,37] @{} = cat(%0, %1) dim=0
  %3: {name}[3,30] @{} = slice(%0) dim=1 start=3 step=1
  %4: {name}[37,3] @{} = permute(%0) dims=[1, 0]
  return %2, %3, %4
}}",
        offsets[0], offsets[1], offsets[2], offsets[3], offsets[4]
    )
}

#[test]
fn copies_of_every_element_type_keep_every_byte() {
    for dtype in DType::ALL {
        let text = graph(dtype);
        let graph = ptec_ir::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
        let size = dtype.size();
        let [a, b] = [bytes_of(dtype, 111, 1), bytes_of(dtype, 74, 2)];
        let outputs = run_jit(&graph, &[&a, &b]).unwrap_or_else(|error| panic!("{error}"));
        let element = |data: &[u8], index: usize| data[index * size..(index + 1) * size].to_vec();
        let joined = [a.clone(), b].concat();
        assert_eq!(outputs[0].data, joined, "{dtype:?}: cat");
        let sliced: Vec<u8> = (0..3)
            .flat_map(|row| (3..33).map(move |column| (row, column)))
            .flat_map(|(row, column)| element(&a, row * 37 + column))
            .collect();
        assert_eq!(outputs[1].data, sliced, "{dtype:?}: slice");
        let transposed: Vec<u8> = (0..37)
            .flat_map(|column| (0..3).map(move |row| (row, column)))
            .flat_map(|(row, column)| element(&a, row * 37 + column))
            .collect();
        assert_eq!(outputs[2].data, transposed, "{dtype:?}: permute");
    }
}
