//! Compiles the thread pool (`src/pool.c`) into the runtime, for the code
//! the JIT generates in this process; `ptec compile` links the same source
//! into every shared object.

fn main() {
    println!("cargo:rerun-if-changed=src/pool.c");
    cc::Build::new()
        .file("src/pool.c")
        .flag_if_supported("-pthread")
        .opt_level(2)
        .compile("ptec_pool");
}
