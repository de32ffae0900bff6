//! Fuzz target `read_data`: feeds arbitrary bytes to `read_data_file`, the
//! entry point for untrusted `.ptd` data files, and, when the bytes are
//! accepted, checks what the reader promises of every blob: a tensor layout
//! describes exactly the bytes of its blob.
//!
//! The reader must never panic, read out of bounds or hang.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ptec_frontend::read_data_file;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = read_data_file(data) else {
        return;
    };
    let mut total = u64::from(file.version);
    for (key, entry) in file.named_data.entries() {
        total = total.wrapping_add(key.len() as u64 + entry.data.len() as u64);
        if let Some(layout) = &entry.layout {
            let elements: u64 = layout.sizes.iter().map(|&size| size as u64).product();
            assert_eq!(
                elements * layout.dtype.element_size() as u64,
                entry.data.len() as u64,
                "a layout that does not describe its blob"
            );
            assert_eq!(layout.dim_order.len(), layout.sizes.len());
        }
    }
    std::hint::black_box(total);
});
