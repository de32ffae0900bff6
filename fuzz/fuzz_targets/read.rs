//! Fuzz target `read`: feeds arbitrary bytes to `ExecutorchFile::read`, the
//! entry point ptec uses for untrusted `.pte` and `.bpte` files, and, when the
//! bytes are accepted, walks everything the result holds — methods, values,
//! instructions, delegates and their decoded graphs, test suites — so that
//! the guarantees the reader documents (every index checked, no byte count
//! overflows) are exercised too.
//!
//! The reader must never panic, read out of bounds or hang: libFuzzer reports
//! a panic or a sanitizer finding as a crash and a slow input as a timeout.

#![no_main]

use std::fmt::Write as _;

use libfuzzer_sys::fuzz_target;
use ptec_frontend::{
    DelegatePayload, ExecutorchFile, Instruction, Method, TensorStorage, TestValue, Value,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = ExecutorchFile::read(data) {
        walk(&file);
    }
});

/// Touches every part of an accepted file; panics if a documented guarantee
/// of the reader does not hold.
fn walk(file: &ExecutorchFile<'_>) {
    let program = file.program();
    let mut total: u64 = u64::from(program.version) + program.constant_bytes;
    for segment in &program.segments {
        total = total.wrapping_add(segment.offset ^ segment.data.len() as u64);
    }
    total = total.wrapping_add(program.named_data.total_bytes() + program.named_data.len() as u64);
    for method in &program.methods {
        total = total.wrapping_add(walk_method(method));
    }
    for suite in file.test_suites() {
        let method = program
            .method(&suite.method)
            .expect("a test suite names a method of the program");
        for case in &suite.cases {
            assert_eq!(case.inputs.len(), method.inputs.len());
            assert_eq!(case.expected_outputs.len(), method.outputs.len());
            for value in case.inputs.iter().chain(&case.expected_outputs) {
                total = total.wrapping_add(match value {
                    TestValue::Tensor(tensor) => {
                        tensor.data.len() as u64 + tensor.sizes.len() as u64
                    }
                    TestValue::Int(value) => *value as u64,
                    TestValue::Bool(value) => u64::from(*value),
                    TestValue::Double(value) => value.to_bits(),
                });
            }
        }
    }
    std::hint::black_box(total);
}

fn walk_method(method: &Method<'_>) -> u64 {
    let mut total = method.name.len() as u64;
    for value in &method.values {
        total = total.wrapping_add(match value {
            Value::Tensor(tensor) => {
                // The reader checked that the byte count does not overflow.
                let nbytes = tensor.nbytes();
                let numel = tensor.numel();
                let storage = match &tensor.storage {
                    TensorStorage::Constant(data) => data.len() as u64,
                    TensorStorage::Planned {
                        memory_id,
                        offset,
                        initial,
                    } => {
                        let arena = method.non_const_buffer_sizes[*memory_id as usize];
                        assert!(offset + nbytes <= arena, "planned tensor outside its arena");
                        initial.map_or(0, |data| data.len() as u64)
                    }
                    TensorStorage::Unplanned => 0,
                };
                let _ = ptec_frontend::Tensor::is_contiguous_order(&tensor.dim_order);
                nbytes ^ numel ^ storage ^ tensor.dynamism.name().len() as u64
            }
            Value::IntList(items) | Value::TensorList(items) => {
                items.iter().map(|&item| method.value(item).kind().len() as u64).sum()
            }
            Value::OptionalTensorList(items) => items
                .iter()
                .flatten()
                .map(|&item| method.value(item).kind().len() as u64)
                .sum(),
            Value::String(text) => text.len() as u64,
            Value::DoubleList(list) => list.len() as u64,
            Value::BoolList(list) => list.len() as u64,
            Value::Int(value) => *value as u64,
            Value::Double(value) => value.to_bits(),
            Value::Bool(value) => u64::from(*value),
            Value::Null => 0,
        });
    }
    for &index in method.inputs.iter().chain(&method.outputs) {
        total = total.wrapping_add(method.value(index).kind().len() as u64);
    }
    for chain in &method.chains {
        for instruction in chain {
            total = total.wrapping_add(match instruction {
                Instruction::Kernel { operator, args } => {
                    let key = method.operator(*operator).key();
                    key.len() as u64 + args_weight(method, args)
                }
                Instruction::Delegate { delegate, args } => {
                    let delegate = method.delegate(*delegate);
                    delegate.id.len() as u64 + args_weight(method, args)
                }
                Instruction::Move { from, to } => {
                    (method.value(*from).kind().len() + method.value(*to).kind().len()) as u64
                }
                Instruction::JumpFalse {
                    condition,
                    destination,
                } => {
                    assert!(*destination <= chain.len(), "jump past the end of its chain");
                    method.value(*condition).kind().len() as u64
                }
                Instruction::Free { value } => method.value(*value).kind().len() as u64,
            });
        }
    }
    for delegate in &method.delegates {
        let payload = &delegate.payload;
        total = total.wrapping_add(
            payload.node_count().unwrap_or(0) as u64
                + payload.constant_bytes()
                + payload.node_histogram().len() as u64,
        );
        // Format the decoded delegate graphs whole to visit every value
        // they hold.
        let mut sink = Sink(0);
        match payload {
            DelegatePayload::Xnnpack(graph) => {
                let _ = write!(sink, "{graph:?}");
                total = total.wrapping_add(graph.constants.len() as u64);
            }
            DelegatePayload::Vulkan(graph) => {
                let _ = write!(sink, "{graph:?}");
                total = total.wrapping_add(graph.constants.len() as u64);
            }
            DelegatePayload::Opaque(data) => total = total.wrapping_add(data.len() as u64),
        }
        total = total.wrapping_add(sink.0);
        for spec in &delegate.compile_specs {
            total = total.wrapping_add((spec.key.len() + spec.value.len()) as u64);
        }
    }
    total
}

fn args_weight(method: &Method<'_>, args: &[ptec_frontend::ValueIndex]) -> u64 {
    args.iter()
        .map(|&arg| method.value(arg).kind().len() as u64)
        .sum()
}

/// Counts the bytes written to it, and keeps none.
struct Sink(u64);

impl std::fmt::Write for Sink {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0 += text.len() as u64;
        Ok(())
    }
}
