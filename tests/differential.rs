//! The differential test: generated programs (`ptec-fuzzgen`, seeded, the
//! same on every run) through the JIT with the optimizer on and off, a
//! shared object run through its C ABI, and the Vulkan back end, which
//! must agree (bit for bit on integers and booleans and between the JIT
//! and the shared object; within a small tolerance on floats, which the
//! optimizer's fused chains and a device's math functions may round
//! otherwise). A failure prints the program's IR text.
//!
//! Without a Vulkan device the shaders are only compiled and validated,
//! and the test says `NOT RUN` for the device runs, except under CI (`CI`
//! set), where it fails.

mod common;

use ptec_fuzzgen::{Outcome, Runs, case_from_seed, check};

/// How many programs run: enough to reach every kind of node many times,
/// few enough for well under a minute in release on two cores.
const CASES: u64 = 400;

/// Every how many programs one is also linked and run as a shared object
/// (linking is the expensive step).
const AOT_EVERY: u64 = 10;

#[test]
fn generated_programs_agree_on_every_back_end() {
    let device = match ptec_runtime::vulkan::VulkanDevice::open() {
        Ok(_) => true,
        Err(error) => {
            common::not_run(
                "generated_programs_agree_on_every_back_end (Vulkan runs)",
                &format!("no Vulkan device: {error}"),
            );
            false
        }
    };
    let (mut refused, mut failed, mut agreed, mut exact, mut on_vulkan) = (0, 0, 0, 0, 0);
    for seed in 0..CASES {
        let case = case_from_seed(seed);
        let runs = Runs {
            aot: seed % AOT_EVERY == 0,
            vulkan: device,
        };
        match check(&case, runs) {
            Ok(Outcome::Refused(_)) => refused += 1,
            Ok(Outcome::Failed(_)) => failed += 1,
            Ok(Outcome::Agreed {
                exact: same,
                vulkan,
            }) => {
                agreed += 1;
                exact += usize::from(same);
                on_vulkan += usize::from(vulkan);
            }
            Err(finding) => panic!("seed {seed}: {finding}\n{}", case.text),
        }
    }
    eprintln!(
        "{CASES} programs: {agreed} agreed ({exact} bit for bit, {on_vulkan} on Vulkan too), \
         {failed} failed alike at run time, {refused} refused"
    );
    // The generator writes programs the verifier accepts: most must run,
    // or the test would check little.
    assert!(
        agreed * 4 >= CASES as usize * 3,
        "only {agreed} of {CASES} programs ran ({refused} refused, {failed} failed)"
    );
    assert!(on_vulkan > 0, "no program compiled for Vulkan");
}
