//! The whole compiler on generated programs: `ptec-fuzzgen` builds a valid
//! but arbitrary IR program and its inputs from the fuzzer's bytes, and
//! checks that the verifier refuses it or that it runs alike on the JIT
//! with the optimizer on and off, compiles to an object, and compiles to
//! shaders naga validates (or is refused as unsupported on Vulkan). A broken
//! invariant panics with the program's IR text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ptec_fuzzgen::{Case, Runs, check};

fuzz_target!(|case: Case| {
    if let Err(finding) = check(&case, Runs::default()) {
        panic!("{finding}\n{}", case.text);
    }
});
