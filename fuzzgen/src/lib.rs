//! Generated programs for testing the whole compiler: [`Case`] builds a
//! small valid-but-arbitrary IR program and its inputs from bytes (with the
//! `arbitrary` crate, so that cargo-fuzz can drive it), and [`check`] runs
//! one through the verifier, the pipeline with the optimizer on and off,
//! the JIT, the object code generator and the Vulkan generator, and says
//! whether they agree. The fuzz target `fuzz/fuzz_targets/compile.rs` and
//! the differential test `tests/differential.rs` share both.

mod check;
mod generate;

pub use check::{Finding, Outcome, Runs, check};
pub use generate::{Case, Input};

/// The case that `seed` gives: bytes from splitmix64 seeded with it, read
/// as a [`Case`]. The same seed gives the same case on every machine.
pub fn case_from_seed(seed: u64) -> Case {
    const BYTES: usize = 4096;
    let mut state = seed;
    let mut bytes = Vec::with_capacity(BYTES);
    while bytes.len() < BYTES {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    let mut u = arbitrary::Unstructured::new(&bytes);
    // Running out of bytes makes every choice its first, never an error.
    <Case as arbitrary::Arbitrary>::arbitrary(&mut u)
        .unwrap_or_else(|error| panic!("4096 bytes make a case: {error}"))
}
