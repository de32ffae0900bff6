//! Each kind of bad input the reader must reject, built from a small valid
//! program with one fault injected, and checked for the error kind and for a
//! message that says where the fault is.

#[path = "../../tests/common/ptd_writer.rs"]
mod ptd_writer;

use flatbuffers::{FlatBufferBuilder, WIPOffset};
use ptec_frontend::{
    DataFile, Error, ExecutorchFile, TensorStorage, Value, read_bundled_program, read_data_file,
    read_program, read_program_with_data,
};
use ptec_schema::{bundled as bfb, program as fb};

/// A one-method program: `out = relu(x)`, with the knobs the tests turn.
#[derive(Clone)]
struct Spec {
    input_sizes: Vec<i32>,
    input_dim_order: Vec<u8>,
    scalar_type: fb::ScalarType,
    op_index: i32,
    kernel_args: Vec<i32>,
    memory_id: u32,
    output_offset: u32,
    arena: i64,
    /// A constant tensor in buffer 1 of the constant segment, of these sizes.
    constant_sizes: Vec<i32>,
    /// Extra values: an IntList whose items are these value indices.
    int_list_items: Option<Vec<i64>>,
    jump_destination: Option<i32>,
    segments: Vec<(u64, u64)>,
    segment_data: Vec<u8>,
    /// A delegate whose payload is segment `delegate_segment`.
    delegate_segment: Option<u32>,
    /// Keep the constant tensor outside the program, under this name.
    external: Option<&'static str>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            input_sizes: vec![2, 3],
            input_dim_order: vec![0, 1],
            scalar_type: fb::ScalarType::FLOAT,
            op_index: 0,
            kernel_args: vec![0, 1],
            memory_id: 1,
            output_offset: 32,
            arena: 64,
            constant_sizes: vec![4],
            int_list_items: None,
            jump_destination: None,
            // Segment 0 is the constant segment: 16 bytes.
            segments: vec![(0, 16)],
            segment_data: vec![0; 16],
            delegate_segment: None,
            external: None,
        }
    }
}

fn tensor<'b>(
    fbb: &mut FlatBufferBuilder<'b>,
    scalar_type: fb::ScalarType,
    sizes: &[i32],
    dim_order: &[u8],
    allocation: Option<(u32, u32)>,
    data_buffer_idx: u32,
    external: Option<&str>,
) -> WIPOffset<fb::EValue<'b>> {
    let extra_tensor_info = external.map(|name| {
        let name = fbb.create_string(name);
        fb::ExtraTensorInfo::create(
            fbb,
            &fb::ExtraTensorInfoArgs {
                fully_qualified_name: Some(name),
                location: fb::TensorDataLocation::EXTERNAL,
                ..Default::default()
            },
        )
    });
    let sizes = fbb.create_vector(sizes);
    let dim_order = fbb.create_vector(dim_order);
    let allocation_info = allocation.map(|(memory_id, offset)| {
        fb::AllocationDetails::create(
            fbb,
            &fb::AllocationDetailsArgs {
                memory_id,
                memory_offset_low: offset,
                memory_offset_high: 0,
            },
        )
    });
    let tensor = fb::Tensor::create(
        fbb,
        &fb::TensorArgs {
            scalar_type,
            sizes: Some(sizes),
            dim_order: Some(dim_order),
            data_buffer_idx,
            allocation_info,
            extra_tensor_info,
            ..Default::default()
        },
    );
    fb::EValue::create(
        fbb,
        &fb::EValueArgs {
            val_type: fb::KernelTypes::Tensor,
            val: Some(tensor.as_union_value()),
        },
    )
}

/// The flatbuffer of `spec`, without an extended header.
fn flatbuffer(spec: &Spec) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::new();
    let constant_order: Vec<u8> = (0..spec.constant_sizes.len() as u8).collect();
    let mut values = vec![
        tensor(
            &mut fbb,
            spec.scalar_type,
            &spec.input_sizes,
            &spec.input_dim_order,
            Some((spec.memory_id, 0)),
            0,
            None,
        ),
        tensor(
            &mut fbb,
            fb::ScalarType::FLOAT,
            &[2, 3],
            &[0, 1],
            Some((1, spec.output_offset)),
            0,
            None,
        ),
        tensor(
            &mut fbb,
            fb::ScalarType::FLOAT,
            &spec.constant_sizes,
            &constant_order,
            None,
            1,
            spec.external,
        ),
    ];
    let condition = fb::Bool::create(&mut fbb, &fb::BoolArgs { bool_val: true });
    values.push(fb::EValue::create(
        &mut fbb,
        &fb::EValueArgs {
            val_type: fb::KernelTypes::Bool,
            val: Some(condition.as_union_value()),
        },
    ));
    if let Some(items) = &spec.int_list_items {
        let items = fbb.create_vector(items);
        let list = fb::IntList::create(&mut fbb, &fb::IntListArgs { items: Some(items) });
        values.push(fb::EValue::create(
            &mut fbb,
            &fb::EValueArgs {
                val_type: fb::KernelTypes::IntList,
                val: Some(list.as_union_value()),
            },
        ));
    }
    let values = fbb.create_vector(&values);
    let name = fbb.create_string("aten::relu");
    let overload = fbb.create_string("out");
    let operator = fb::Operator::create(
        &mut fbb,
        &fb::OperatorArgs {
            name: Some(name),
            overload: Some(overload),
        },
    );
    let operators = fbb.create_vector(&[operator]);
    let args = fbb.create_vector(&spec.kernel_args);
    let call = fb::KernelCall::create(
        &mut fbb,
        &fb::KernelCallArgs {
            op_index: spec.op_index,
            args: Some(args),
        },
    );
    let mut instructions = vec![fb::Instruction::create(
        &mut fbb,
        &fb::InstructionArgs {
            instr_args_type: fb::InstructionArguments::KernelCall,
            instr_args: Some(call.as_union_value()),
        },
    )];
    if let Some(destination) = spec.jump_destination {
        let jump = fb::JumpFalseCall::create(
            &mut fbb,
            &fb::JumpFalseCallArgs {
                cond_value_index: 3,
                destination_instruction: destination,
            },
        );
        instructions.push(fb::Instruction::create(
            &mut fbb,
            &fb::InstructionArgs {
                instr_args_type: fb::InstructionArguments::JumpFalseCall,
                instr_args: Some(jump.as_union_value()),
            },
        ));
    }
    let instructions = fbb.create_vector(&instructions);
    let chain = fb::Chain::create(
        &mut fbb,
        &fb::ChainArgs {
            instructions: Some(instructions),
            ..Default::default()
        },
    );
    let chains = fbb.create_vector(&[chain]);
    let inputs = fbb.create_vector(&[0i32]);
    let outputs = fbb.create_vector(&[1i32]);
    let buffer_sizes = fbb.create_vector(&[0i64, spec.arena]);
    let delegates = spec.delegate_segment.map(|index| {
        let id = fbb.create_string("XnnpackBackend");
        let processed = fb::BackendDelegateDataReference::create(
            &mut fbb,
            &fb::BackendDelegateDataReferenceArgs {
                location: fb::DataLocation::SEGMENT,
                index,
            },
        );
        let delegate = fb::BackendDelegate::create(
            &mut fbb,
            &fb::BackendDelegateArgs {
                id: Some(id),
                processed: Some(processed),
                compile_specs: None,
            },
        );
        fbb.create_vector(&[delegate])
    });
    let method_name = fbb.create_string("forward");
    let plan = fb::ExecutionPlan::create(
        &mut fbb,
        &fb::ExecutionPlanArgs {
            name: Some(method_name),
            values: Some(values),
            inputs: Some(inputs),
            outputs: Some(outputs),
            chains: Some(chains),
            operators: Some(operators),
            delegates,
            non_const_buffer_sizes: Some(buffer_sizes),
            ..Default::default()
        },
    );
    let plans = fbb.create_vector(&[plan]);
    let segments: Vec<_> = spec
        .segments
        .iter()
        .map(|&(offset, size)| {
            fb::DataSegment::create(
                &mut fbb,
                &fb::DataSegmentArgs {
                    offset,
                    size_: size,
                },
            )
        })
        .collect();
    let segments = fbb.create_vector(&segments);
    let offsets = fbb.create_vector(&[0u64, 0]);
    let constant_segment = fb::SubsegmentOffsets::create(
        &mut fbb,
        &fb::SubsegmentOffsetsArgs {
            segment_index: 0,
            offsets: Some(offsets),
        },
    );
    let program = fb::Program::create(
        &mut fbb,
        &fb::ProgramArgs {
            execution_plan: Some(plans),
            segments: Some(segments),
            constant_segment: Some(constant_segment),
            ..Default::default()
        },
    );
    fbb.finish(program, Some("ET12"));
    fbb.finished_data().to_vec()
}

/// A complete `.pte`: the flatbuffer with an `eh00` header spliced in after
/// its identifier (as the exporter does), then the segment data at the next
/// 128-byte boundary.
fn pte(spec: &Spec) -> Vec<u8> {
    const HEADER_LEN: u32 = 32;
    let flatbuffer = flatbuffer(spec);
    let program_size = flatbuffer.len() as u64 + u64::from(HEADER_LEN);
    let base = program_size.div_ceil(128) * 128;
    let root = u32::from_le_bytes(flatbuffer[0..4].try_into().expect("4 bytes")) + HEADER_LEN;
    let mut file = Vec::new();
    file.extend_from_slice(&root.to_le_bytes());
    file.extend_from_slice(&flatbuffer[4..8]);
    file.extend_from_slice(b"eh00");
    file.extend_from_slice(&HEADER_LEN.to_le_bytes());
    file.extend_from_slice(&program_size.to_le_bytes());
    file.extend_from_slice(&base.to_le_bytes());
    file.extend_from_slice(&(spec.segment_data.len() as u64).to_le_bytes());
    file.extend_from_slice(&flatbuffer[8..]);
    file.resize(base as usize, 0);
    file.extend_from_slice(&spec.segment_data);
    file
}

fn error_of(bytes: &[u8]) -> Error {
    match read_program(bytes) {
        Ok(_) => panic!("the reader accepted a faulty program"),
        Err(error) => error,
    }
}

#[test]
fn the_unfaulted_program_reads() {
    let bytes = pte(&Spec::default());
    let program = read_program(&bytes).expect("valid program");
    assert_eq!(program.methods[0].name, "forward");
    assert_eq!(program.constant_bytes, 16);
    assert!(matches!(
        ExecutorchFile::read(&bytes),
        Ok(ExecutorchFile::Program(_))
    ));
}

#[test]
fn truncated_files() {
    let bytes = pte(&Spec::default());
    for len in [0, 3, 7] {
        assert!(
            matches!(error_of(&bytes[..len]), Error::Truncated { .. }),
            "length {len}"
        );
    }
    // Cut inside the header, the flatbuffer and the segment area.
    for len in [20, 100, bytes.len() - 1] {
        let error = error_of(&bytes[..len]);
        assert!(
            matches!(
                error,
                Error::Truncated { .. } | Error::Header { .. } | Error::Flatbuffer { .. }
            ),
            "length {len}: {error}"
        );
    }
}

#[test]
fn wrong_identifiers() {
    let mut bytes = pte(&Spec::default());
    bytes[4..8].copy_from_slice(b"XX99");
    assert!(matches!(error_of(&bytes), Error::Identifier { .. }));
    let error = ExecutorchFile::read(&bytes).expect_err("unknown format");
    assert!(matches!(error, Error::UnknownFormat { .. }));
    assert!(
        error.to_string().contains("bytes 4..8 are \"XX99\""),
        "{error}"
    );
}

#[test]
fn extended_header_fields_outside_the_file() {
    let bytes = pte(&Spec::default());
    let mut too_big = bytes.clone();
    too_big[16..24].copy_from_slice(&(bytes.len() as u64 + 1).to_le_bytes());
    let error = error_of(&too_big);
    assert!(matches!(error, Error::Header { .. }), "{error}");
    assert!(error.to_string().contains("program_size"), "{error}");

    let mut base_past_end = bytes.clone();
    base_past_end[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(
        error_of(&base_past_end)
            .to_string()
            .contains("segment_base_offset")
    );

    let mut data_past_end = bytes;
    data_past_end[32..40].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(
        error_of(&data_past_end)
            .to_string()
            .contains("segment_data_size")
    );
}

#[test]
fn segment_outside_the_file() {
    let spec = Spec {
        segments: vec![(0, 16), (64, 1 << 20)],
        ..Spec::default()
    };
    let error = error_of(&pte(&spec));
    assert!(matches!(error, Error::OutOfBounds { .. }), "{error}");
    assert!(error.to_string().contains("segments[1]"), "{error}");
}

#[test]
fn segment_offset_that_overflows() {
    let spec = Spec {
        segments: vec![(u64::MAX - 4, 16)],
        ..Spec::default()
    };
    assert!(error_of(&pte(&spec)).to_string().contains("segments[0]"));
}

#[test]
fn overlapping_segments() {
    let spec = Spec {
        segments: vec![(0, 16), (64, 64), (96, 64)],
        segment_data: vec![0; 192],
        ..Spec::default()
    };
    let error = error_of(&pte(&spec));
    assert!(
        matches!(
            error,
            Error::SegmentOverlap {
                first: 1,
                second: 2,
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn empty_segments_may_share_an_offset() {
    let spec = Spec {
        segments: vec![(0, 16), (16, 0), (16, 16)],
        segment_data: vec![0; 32],
        ..Spec::default()
    };
    read_program(&pte(&spec)).expect("an empty segment overlaps nothing");
}

#[test]
fn dim_order_that_is_not_a_permutation() {
    for dim_order in [vec![0, 0], vec![1, 2], vec![0], vec![0, 1, 2]] {
        let spec = Spec {
            input_dim_order: dim_order.clone(),
            ..Spec::default()
        };
        let error = error_of(&pte(&spec));
        assert!(
            matches!(error, Error::DimOrder { .. }),
            "{dim_order:?}: {error}"
        );
        assert!(
            error.to_string().contains("execution_plan[0].values[0]"),
            "{error}"
        );
    }
}

#[test]
fn sizes_whose_byte_count_overflows_or_is_negative() {
    for sizes in [vec![i32::MAX; 4], vec![-1, 3]] {
        let spec = Spec {
            input_sizes: sizes.clone(),
            input_dim_order: (0..sizes.len() as u8).collect(),
            ..Spec::default()
        };
        let error = error_of(&pte(&spec));
        assert!(
            matches!(error, Error::ByteCount { .. }),
            "{sizes:?}: {error}"
        );
    }
}

#[test]
fn constant_larger_than_its_segment() {
    let spec = Spec {
        constant_sizes: vec![5],
        ..Spec::default()
    };
    let error = error_of(&pte(&spec));
    assert!(
        matches!(
            error,
            Error::OutOfBounds {
                region: "constant segment",
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("values[2]"), "{error}");
}

#[test]
fn planned_tensor_outside_its_arena() {
    let spec = Spec {
        output_offset: 48,
        ..Spec::default()
    };
    let error = error_of(&pte(&spec));
    assert!(
        matches!(
            error,
            Error::OutOfBounds {
                region: "planned arena",
                ..
            }
        ),
        "{error}"
    );

    for memory_id in [0, 2] {
        let spec = Spec {
            memory_id,
            ..Spec::default()
        };
        assert!(
            matches!(error_of(&pte(&spec)), Error::OutOfRange { .. }),
            "memory id {memory_id}"
        );
    }
}

#[test]
fn negative_arena_size() {
    let spec = Spec {
        arena: -64,
        ..Spec::default()
    };
    assert!(
        error_of(&pte(&spec))
            .to_string()
            .contains("non_const_buffer_sizes[1]")
    );
}

#[test]
fn value_and_operator_indices_out_of_range() {
    let spec = Spec {
        kernel_args: vec![0, 99],
        ..Spec::default()
    };
    let error = error_of(&pte(&spec));
    assert!(
        matches!(
            error,
            Error::OutOfRange {
                what: "value index",
                index: 99,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains("instructions[0].args[1]"),
        "{error}"
    );

    for op_index in [1, -1] {
        let spec = Spec {
            op_index,
            ..Spec::default()
        };
        let error = error_of(&pte(&spec));
        assert!(
            matches!(
                error,
                Error::OutOfRange {
                    what: "operator index",
                    ..
                }
            ),
            "{error}"
        );
    }
}

#[test]
fn list_items_of_the_wrong_kind_or_out_of_range() {
    let spec = Spec {
        int_list_items: Some(vec![0]),
        ..Spec::default()
    };
    let error = error_of(&pte(&spec));
    assert!(
        error
            .to_string()
            .contains("IntList items must be Int values"),
        "{error}"
    );

    let spec = Spec {
        int_list_items: Some(vec![1 << 40]),
        ..Spec::default()
    };
    assert!(matches!(error_of(&pte(&spec)), Error::OutOfRange { .. }));
}

#[test]
fn jump_destination_out_of_range() {
    // Two instructions: jumping to 2 ends the chain; 3 is past it.
    let ok = Spec {
        jump_destination: Some(2),
        ..Spec::default()
    };
    read_program(&pte(&ok)).expect("a jump to the end of the chain is valid");
    let bad = Spec {
        jump_destination: Some(3),
        ..Spec::default()
    };
    assert!(matches!(
        error_of(&pte(&bad)),
        Error::OutOfRange {
            what: "destination instruction",
            ..
        }
    ));
}

#[test]
fn unknown_scalar_type() {
    let spec = Spec {
        scalar_type: fb::ScalarType(30),
        ..Spec::default()
    };
    assert!(
        error_of(&pte(&spec))
            .to_string()
            .contains("unknown scalar type 30")
    );
}

/// Complex tensors are named as what ptec does not support, not as an
/// unknown type.
#[test]
fn complex_scalar_type() {
    let spec = Spec {
        scalar_type: fb::ScalarType(9),
        ..Spec::default()
    };
    let error = error_of(&pte(&spec));
    assert!(
        matches!(error, Error::Unsupported { .. })
            && error
                .to_string()
                .contains("a complex element type (ComplexFloat, scalar type 9) is not supported"),
        "{error}"
    );
}

#[test]
fn delegate_payloads() {
    let missing = Spec {
        delegate_segment: Some(7),
        ..Spec::default()
    };
    assert!(
        error_of(&pte(&missing))
            .to_string()
            .contains("delegates[0].processed.index")
    );

    // An XH00 header whose flatbuffer range runs past the payload.
    let mut payload = vec![0u8; 64];
    payload[4..8].copy_from_slice(b"XH00");
    payload[8..10].copy_from_slice(&30u16.to_le_bytes());
    payload[10..14].copy_from_slice(&32u32.to_le_bytes());
    payload[14..18].copy_from_slice(&1000u32.to_le_bytes());
    let mut data = vec![0u8; 128];
    data.extend_from_slice(&payload);
    let bad_header = Spec {
        segments: vec![(0, 16), (128, 64)],
        segment_data: data.clone(),
        delegate_segment: Some(1),
        ..Spec::default()
    };
    let error = error_of(&pte(&bad_header));
    assert!(
        error.to_string().contains("XNNPACK payload flatbuffer"),
        "{error}"
    );

    // A well-placed flatbuffer with the wrong identifier.
    data[128 + 14..128 + 18].copy_from_slice(&16u32.to_le_bytes());
    data[128 + 32 + 4..128 + 32 + 8].copy_from_slice(b"ZZ00");
    let bad_identifier = Spec {
        segment_data: data,
        ..bad_header
    };
    let error = error_of(&pte(&bad_identifier));
    assert!(matches!(error, Error::Identifier { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("execution_plan[0].delegates[0]: XNNPACK graph"),
        "{error}"
    );
}

/// A bundled program around `program` with one test case whose input tensor
/// has `data_len` bytes.
fn bundled(program: &[u8], data_len: usize) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::new();
    let sizes = fbb.create_vector(&[2i32, 3]);
    let dim_order = fbb.create_vector(&[0u8, 1]);
    let zeros = vec![0u8; data_len];
    let data = fbb.create_vector(&zeros);
    let tensor = bfb::Tensor::create(
        &mut fbb,
        &bfb::TensorArgs {
            scalar_type: ptec_schema::BundledScalarType::FLOAT,
            sizes: Some(sizes),
            data: Some(data),
            dim_order: Some(dim_order),
        },
    );
    let value = bfb::Value::create(
        &mut fbb,
        &bfb::ValueArgs {
            val_type: bfb::ValueUnion::Tensor,
            val: Some(tensor.as_union_value()),
        },
    );
    let values = fbb.create_vector(&[value]);
    let case = bfb::BundledMethodTestCase::create(
        &mut fbb,
        &bfb::BundledMethodTestCaseArgs {
            inputs: Some(values),
            expected_outputs: Some(values),
        },
    );
    let cases = fbb.create_vector(&[case]);
    let name = fbb.create_string("forward");
    let suite = bfb::BundledMethodTestSuite::create(
        &mut fbb,
        &bfb::BundledMethodTestSuiteArgs {
            method_name: Some(name),
            test_cases: Some(cases),
        },
    );
    let suites = fbb.create_vector(&[suite]);
    let program = fbb.create_vector(program);
    let root = bfb::BundledProgram::create(
        &mut fbb,
        &bfb::BundledProgramArgs {
            version: 2,
            method_test_suites: Some(suites),
            program: Some(program),
        },
    );
    fbb.finish(root, Some("BP08"));
    fbb.finished_data().to_vec()
}

#[test]
fn bundled_test_tensor_whose_data_disagrees_with_its_sizes() {
    let program = pte(&Spec::default());
    let good_bytes = bundled(&program, 24);
    let good = read_bundled_program(&good_bytes).expect("valid bundled program");
    assert_eq!(good.test_suites[0].cases.len(), 1);
    let bytes = bundled(&program, 20);
    let error = read_bundled_program(&bytes).expect_err("20 bytes for 6 floats");
    assert!(matches!(error, Error::ByteCount { .. }), "{error}");
    assert!(
        error.to_string().contains("test_cases[0].inputs[0]"),
        "{error}"
    );
}

#[test]
fn bundled_program_whose_inner_program_is_bad() {
    let mut program = pte(&Spec::default());
    program[4..8].copy_from_slice(b"ET11");
    let bytes = bundled(&program, 24);
    let error = read_bundled_program(&bytes).expect_err("bad inner program");
    let Error::InBundle { offset, source } = &error else {
        panic!("not an InBundle error: {error}");
    };
    let start = *offset as usize;
    assert_eq!(
        &bytes[start + 4..start + 8],
        b"ET11",
        "the offset points at the embedded program"
    );
    assert!(matches!(**source, Error::Identifier { .. }), "{source}");
}

/// A data file holding one float tensor `key` of `sizes`, with `bytes` bytes.
fn data_file(key: &str, sizes: Vec<i32>, bytes: usize) -> Vec<u8> {
    let dim_order = (0..sizes.len() as u8).collect();
    ptd_writer::write(&[ptd_writer::Blob {
        key: key.to_string(),
        data: (0..bytes).map(|byte| byte as u8).collect(),
        layout: Some(ptd_writer::Layout {
            scalar_type: 6,
            sizes,
            dim_order,
        }),
    }])
}

fn external_program() -> Vec<u8> {
    pte(&Spec {
        external: Some("layer.weight"),
        ..Spec::default()
    })
}

fn with_data(program: &[u8], files: &[&[u8]]) -> Result<(), Error> {
    let files: Vec<DataFile<'_>> = files
        .iter()
        .map(|bytes| read_data_file(bytes).expect("a valid data file"))
        .collect();
    read_program_with_data(program, &files).map(|_| ())
}

#[test]
fn external_tensors_read_their_data_file() {
    let program = external_program();
    let data = data_file("layer.weight", vec![4], 16);
    let file = read_data_file(&data).expect("a valid data file");
    let read = read_program_with_data(&program, std::slice::from_ref(&file))
        .expect("the data file holds the tensor");
    let Value::Tensor(tensor) = &read.methods[0].values[2] else {
        panic!("value 2 is the constant tensor");
    };
    let TensorStorage::Constant(bytes) = tensor.storage else {
        panic!("an external tensor is a constant once resolved");
    };
    assert_eq!(bytes, (0..16).collect::<Vec<u8>>());
    assert_eq!(read.named_data.data_files(), 1);
}

#[test]
fn external_tensor_without_its_data() {
    let program = external_program();
    let message = error_of(&program).to_string();
    assert!(
        message.contains("execution_plan[0].values[2]")
            && message.contains("\"layer.weight\"")
            && message.contains("none was given"),
        "{message}"
    );
    let other = data_file("other.weight", vec![4], 16);
    let message = with_data(&program, &[&other])
        .expect_err("the key is missing")
        .to_string();
    assert!(
        message.contains("\"layer.weight\" is in neither the program nor its data file"),
        "{message}"
    );
}

#[test]
fn external_tensor_that_disagrees_with_its_data() {
    let program = external_program();
    let wrong_sizes = data_file("layer.weight", vec![2, 2], 16);
    let message = with_data(&program, &[&wrong_sizes])
        .expect_err("sizes differ")
        .to_string();
    assert!(
        message
            .contains("\"layer.weight\" has sizes [4] in the program but [2, 2] in the data file"),
        "{message}"
    );
    let too_long = data_file("layer.weight", vec![8], 32);
    let message = with_data(&program, &[&too_long])
        .expect_err("sizes differ")
        .to_string();
    assert!(message.contains("[8] in the data file"), "{message}");
    // A blob without a layout is checked by its length alone.
    let untyped = ptd_writer::write(&[ptd_writer::Blob {
        key: "layer.weight".to_string(),
        data: vec![0; 12],
        layout: None,
    }]);
    let message = with_data(&program, &[&untyped])
        .expect_err("lengths differ")
        .to_string();
    assert!(
        message.contains("is 16 bytes in the program but 12 in the data file"),
        "{message}"
    );
}

#[test]
fn a_key_in_two_data_files() {
    let program = external_program();
    let data = data_file("layer.weight", vec![4], 16);
    match with_data(&program, &[&data, &data]).expect_err("the key is defined twice") {
        Error::DuplicateKey { data_file, key } => {
            assert_eq!((data_file, key.as_str()), (1, "layer.weight"));
        }
        other => panic!("expected DuplicateKey, got {other}"),
    }
}
