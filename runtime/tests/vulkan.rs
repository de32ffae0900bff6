//! The Vulkan runtime on a real device (Mesa's lavapipe where there is no
//! GPU): WGSL compute shaders compiled to SPIR-V with naga, run as
//! `DeviceProgram`s (whole, or in segments with the host's work on the
//! mapped arena between them) and checked against the same computation on
//! the CPU, and bad programs refused with the right error.
//!
//! Without a Vulkan loader or device the tests fail under CI (`.ci/run`
//! installs lavapipe); elsewhere they say on the terminal that they did not
//! run (written past the test harness's capture, so it is never silent).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use naga::back::spv;
use naga::valid::{Capabilities, ValidationFlags, Validator};
use ptec_runtime::vulkan::{
    BindingProblem, Bindings, DeviceMethod, DeviceProgram, Dispatch, ProgramError, Segment,
    SpirvError, VulkanDevice, VulkanError, buffer_bytes, spirv_from_bytes,
};

/// Elements of each array the test programs compute: not a multiple of the
/// workgroup size, so the last workgroup has idle invocations.
const N: usize = 100;
const WORKGROUP_SIZE: usize = 64;

/// The device, or `None` after saying why `test` did not run.
fn device(test: &str) -> Option<Arc<VulkanDevice>> {
    match VulkanDevice::open() {
        Ok(device) => Some(Arc::new(device)),
        Err(problem) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: no Vulkan device: {problem}"
            );
            let notice = format!("\nNOT RUN {test}: {problem}\n");
            std::io::stderr()
                .write_all(notice.as_bytes())
                .expect("stderr is writable");
            None
        }
    }
}

/// A compute shader over the arena and the constants, as f32 arrays, whose
/// entry point `entry` runs `body` for each element `i` below `N` (with a
/// word of push constants, `push.at`).
fn shader_named(entry: &str, body: &str) -> Vec<u32> {
    let source = format!(
        "@group(0) @binding(0) var<storage, read_write> arena: array<f32>;
         @group(0) @binding(1) var<storage, read> constants: array<f32>;
         struct Push {{ at: u32 }}
         var<immediate> push: Push;
         const N: u32 = {N}u;
         @compute @workgroup_size({WORKGROUP_SIZE})
         fn {entry}(@builtin(global_invocation_id) id: vec3<u32>) {{
             let i = id.x;
             if i < N {{ {body} }}
         }}"
    );
    let module = naga::front::wgsl::parse_str(&source).expect("the WGSL parses");
    let info = Validator::new(ValidationFlags::all(), Capabilities::IMMEDIATES)
        .validate(&module)
        .expect("the WGSL is valid");
    let pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: entry.to_owned(),
    };
    spv::write_vec(&module, &info, &spv::Options::default(), Some(&pipeline))
        .expect("naga writes SPIR-V")
}

fn shader(body: &str) -> Vec<u32> {
    shader_named("main", body)
}

fn workgroups() -> [u32; 3] {
    [N.div_ceil(WORKGROUP_SIZE) as u32, 1, 1]
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect()
}

/// `len` f32s of `arena` from element `start`.
fn read_f32s(arena: &[u8], start: usize, len: usize) -> Vec<f32> {
    arena[start * 4..(start + len) * 4]
        .chunks_exact(4)
        .map(|bytes| f32::from_le_bytes(bytes.try_into().expect("4 bytes")))
        .collect()
}

fn write_f32s(arena: &mut [u8], start: usize, values: &[f32]) {
    arena[start * 4..(start + values.len()) * 4].copy_from_slice(&f32_bytes(values));
}

/// The arena holds x (elements 0..N) and y (N..2N); the constants hold c.
/// Three dispatches: x *= c, then y = x + 1, then x *= c again, so the
/// second sees what the first wrote and not what the third will, and the
/// first shader's pipeline is bound again after the second's. The second
/// finds y where its push constant says.
fn scale_then_increment(constants: &[f32]) -> DeviceProgram {
    let arena_bytes = (2 * N * 4) as u64;
    let whole = Bindings {
        arena: 0..buffer_bytes(arena_bytes),
        constants: 0..buffer_bytes(4 * constants.len() as u64),
    };
    let scale = Dispatch {
        shader: 0,
        workgroups: workgroups(),
        push_constants: Vec::new(),
        bindings: whole.clone(),
    };
    let increment = Dispatch {
        shader: 1,
        workgroups: workgroups(),
        push_constants: vec![N as u32],
        bindings: whole,
    };
    DeviceProgram {
        arena_bytes,
        constants: f32_bytes(constants),
        shaders: vec![
            shader("arena[i] = arena[i] * constants[i];"),
            shader("arena[push.at + i] = arena[i] + 1.0;"),
        ],
        dispatches: vec![scale.clone(), increment, scale],
        segments: vec![Segment::Device(0..3)],
        texels: 0,
    }
}

/// Writes x, runs, and compares x and y with the CPU's results.
fn run_and_check(method: &mut DeviceMethod, x: &[f32], c: &[f32]) {
    write_f32s(method.arena_mut(), 0, x);
    method.run().expect("the program runs");
    let once: Vec<f32> = x.iter().zip(c).map(|(x, c)| x * c).collect();
    let twice: Vec<f32> = once.iter().zip(c).map(|(x, c)| x * c).collect();
    let incremented: Vec<f32> = once.iter().map(|x| x + 1.0).collect();
    assert_eq!(read_f32s(method.arena(), 0, N), twice);
    assert_eq!(read_f32s(method.arena(), N, N), incremented);
}

fn constants() -> Vec<f32> {
    (0..N).map(|i| 0.25 * i as f32 - 3.0).collect()
}

#[test]
fn a_profiled_method_runs_alike_and_times_each_dispatch() {
    let Some(device) = device("a_profiled_method_runs_alike_and_times_each_dispatch") else {
        return;
    };
    let c = constants();
    let program = scale_then_increment(&c);
    let plain = DeviceMethod::new(Arc::clone(&device), &program).expect("a valid program");
    assert_eq!(plain.dispatch_times(), None);
    let mut method = DeviceMethod::profiled(device, &program).expect("a valid program");
    assert_eq!(method.dispatch_times(), Some(&[Duration::ZERO; 3][..]));
    let x: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    run_and_check(&mut method, &x, &c);
    let once = method.dispatch_times().expect("profiled").to_vec();
    assert_eq!(once.len(), 3);
    assert!(once.iter().all(|time| *time > Duration::ZERO), "{once:?}");
    run_and_check(&mut method, &x, &c);
    let twice = method.dispatch_times().expect("profiled");
    assert!(
        twice.iter().zip(&once).all(|(twice, once)| twice > once),
        "{twice:?}"
    );
}

#[test]
fn dispatches_run_in_order_and_see_earlier_writes() {
    let Some(device) = device("dispatches_run_in_order_and_see_earlier_writes") else {
        return;
    };
    assert!(!device.name().is_empty());
    assert!(device.api_version().major == 1 && device.api_version().minor >= 1);
    let c = constants();
    let mut method = DeviceMethod::new(device, &scale_then_increment(&c)).expect("a valid program");
    assert_eq!(method.pipelines(), 2);
    assert_eq!(method.dispatches(), 3);
    assert_eq!(method.arena_bytes(), 2 * N * 4);
    assert_eq!(method.constant_bytes(), N * 4);
    assert!(
        method.arena().iter().all(|&byte| byte == 0),
        "the arena starts zeroed"
    );

    let x: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    run_and_check(&mut method, &x, &c);
    let x: Vec<f32> = (0..N).map(|i| 7.0 - i as f32).collect();
    run_and_check(&mut method, &x, &c);
}

#[test]
fn a_dispatch_sees_the_bytes_of_the_buffers_it_binds_from_their_start() {
    let Some(device) = device("a_dispatch_sees_the_bytes_of_the_buffers_it_binds_from_their_start")
    else {
        return;
    };
    // x at byte 0 of the arena, y at byte 1024; c at byte 0 of the
    // constants, d at byte 512. The second dispatch binds both buffers
    // from y and d, and its shader writes element i of each binding.
    let c = constants();
    let mut constants = f32_bytes(&c);
    constants.resize(512, 0);
    let d: Vec<f32> = (0..N).map(|i| 100.0 + i as f32).collect();
    constants.extend(f32_bytes(&d));
    let program = DeviceProgram {
        arena_bytes: 1024 + 4 * N as u64,
        constants,
        shaders: vec![
            shader("arena[i] = arena[i] * constants[i];"),
            shader("arena[i] = arena[i] + constants[i];"),
        ],
        dispatches: vec![
            Dispatch {
                shader: 0,
                workgroups: workgroups(),
                push_constants: Vec::new(),
                bindings: Bindings {
                    arena: 0..1024,
                    constants: 0..512,
                },
            },
            Dispatch {
                shader: 1,
                workgroups: workgroups(),
                push_constants: Vec::new(),
                bindings: Bindings {
                    arena: 1024..1024 + 4 * N as u64,
                    constants: 512..512 + 4 * N as u64,
                },
            },
        ],
        segments: vec![Segment::Device(0..2)],
        texels: 0,
    };
    let mut method = DeviceMethod::new(device, &program).expect("a valid program");
    let x: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let y: Vec<f32> = (0..N).map(|i| 1.0 - i as f32).collect();
    write_f32s(method.arena_mut(), 0, &x);
    write_f32s(method.arena_mut(), 256, &y);
    method.run().expect("the program runs");
    let scaled: Vec<f32> = x.iter().zip(&c).map(|(x, c)| x * c).collect();
    let added: Vec<f32> = y.iter().zip(&d).map(|(y, d)| y + d).collect();
    assert_eq!(read_f32s(method.arena(), 0, N), scaled);
    assert_eq!(read_f32s(method.arena(), N, 256 - N), vec![0.0; 256 - N]);
    assert_eq!(read_f32s(method.arena(), 256, N), added);
}

#[test]
fn methods_share_a_device_across_threads() {
    let Some(device) = device("methods_share_a_device_across_threads") else {
        return;
    };
    let c = constants();
    std::thread::scope(|scope| {
        for thread in 0..3 {
            let device = Arc::clone(&device);
            let c = &c;
            scope.spawn(move || {
                let mut method =
                    DeviceMethod::new(device, &scale_then_increment(c)).expect("a valid program");
                for run in 0..4 {
                    let x: Vec<f32> = (0..N).map(|i| (i + thread * 10 + run) as f32).collect();
                    run_and_check(&mut method, &x, c);
                }
            });
        }
    });
}

#[test]
fn empty_buffers_and_no_dispatches_are_allowed() {
    let Some(device) = device("empty_buffers_and_no_dispatches_are_allowed") else {
        return;
    };
    let mut method =
        DeviceMethod::new(device, &DeviceProgram::default()).expect("an empty program");
    method.run().expect("an empty program runs");
    assert!(method.arena().is_empty());
    assert_eq!(method.pipelines(), 0);
}

/// The first dispatch in a segment of its own, then the host's work, then
/// the two others: the host sees what the first wrote, and the next segment
/// what the host wrote.
#[test]
fn host_work_between_segments_sees_and_is_seen() {
    let Some(device) = device("host_work_between_segments_sees_and_is_seen") else {
        return;
    };
    let c = constants();
    let mut program = scale_then_increment(&c);
    program.segments = vec![
        Segment::Device(0..1),
        Segment::Host(0),
        Segment::Device(1..3),
    ];
    let mut method = DeviceMethod::new(device, &program).expect("a valid program");
    assert_eq!(method.segments(), program.segments);
    for run in 0..2 {
        let x: Vec<f32> = (0..N).map(|i| (i + run) as f32 * 0.5).collect();
        write_f32s(method.arena_mut(), 0, &x);
        method.run_segment(0).expect("the first segment runs");
        let once: Vec<f32> = x.iter().zip(&c).map(|(x, c)| x * c).collect();
        assert_eq!(read_f32s(method.arena(), 0, N), once);
        let shifted: Vec<f32> = once.iter().map(|x| x - 2.0).collect();
        write_f32s(method.arena_mut(), 0, &shifted);
        method.run_segment(2).expect("the last segment runs");
        let incremented: Vec<f32> = shifted.iter().map(|x| x + 1.0).collect();
        let twice: Vec<f32> = shifted.iter().zip(&c).map(|(x, c)| x * c).collect();
        assert_eq!(read_f32s(method.arena(), 0, N), twice);
        assert_eq!(read_f32s(method.arena(), N, N), incremented);
    }
    assert!(matches!(
        method.run_segment(1),
        Err(VulkanError::NotADeviceSegment { segment: 1 })
    ));
    assert!(matches!(
        method.run(),
        Err(VulkanError::NotADeviceSegment { segment: 1 })
    ));
}

/// The error `DeviceMethod::new` gives for `program`.
fn refusal(device: &Arc<VulkanDevice>, program: &DeviceProgram) -> ProgramError {
    match DeviceMethod::new(Arc::clone(device), program) {
        Err(VulkanError::Program(error)) => error,
        other => panic!("expected a program error, got {other:?}"),
    }
}

#[test]
fn bad_programs_are_refused_with_what_is_wrong() {
    let Some(device) = device("bad_programs_are_refused_with_what_is_wrong") else {
        return;
    };
    let good = scale_then_increment(&constants());

    let mut bad = good.clone();
    bad.dispatches[2].shader = 2;
    assert_eq!(
        refusal(&device, &bad),
        ProgramError::NoSuchShader {
            dispatch: 2,
            shader: 2,
            shaders: 2
        }
    );

    let mut bad = good.clone();
    bad.dispatches[1].workgroups = [2, 1, 0];
    assert_eq!(
        refusal(&device, &bad),
        ProgramError::NoWorkgroups {
            dispatch: 1,
            axis: 'z'
        }
    );

    let limit = device.limits().max_workgroup_count[0];
    if let Some(count) = limit.checked_add(1) {
        let mut bad = good.clone();
        bad.dispatches[0].workgroups = [count, 1, 1];
        assert_eq!(
            refusal(&device, &bad),
            ProgramError::TooManyWorkgroups {
                dispatch: 0,
                axis: 'x',
                count,
                limit
            }
        );
    }

    let mut bad = good.clone();
    bad.segments = vec![Segment::Device(0..1), Segment::Device(2..3)];
    assert_eq!(
        refusal(&device, &bad),
        ProgramError::SegmentOutOfOrder {
            segment: 1,
            range: 2..3,
            expected: 1
        }
    );

    let mut bad = good.clone();
    bad.segments = vec![Segment::Device(0..4)];
    assert_eq!(
        refusal(&device, &bad),
        ProgramError::NoSuchDispatches {
            segment: 0,
            range: 0..4,
            dispatches: 3
        }
    );

    let mut bad = good.clone();
    bad.segments = vec![Segment::Device(0..2), Segment::Host(0)];
    assert_eq!(
        refusal(&device, &bad),
        ProgramError::DispatchesOutsideSegments { unsegmented: 2..3 }
    );

    // A binding longer than the device shows a shader, of an arena that
    // may be that large.
    let range = u64::from(device.limits().max_storage_buffer_range);
    let mut bad = good.clone();
    bad.arena_bytes = 2 * range;
    bad.dispatches[1].bindings.arena = 0..range + 16;
    assert_eq!(
        refusal(&device, &bad),
        ProgramError::BadBinding {
            dispatch: 1,
            buffer: "arena",
            range: 0..range + 16,
            problem: BindingProblem::TooLong {
                limit: device.limits().max_storage_buffer_range
            },
        }
    );
    let mut bad = good.clone();
    bad.dispatches[2].bindings.constants = 0..416;
    assert_eq!(
        refusal(&device, &bad),
        ProgramError::BadBinding {
            dispatch: 2,
            buffer: "constants",
            range: 0..416,
            problem: BindingProblem::OutsideBuffer { bytes: 400 },
        }
    );
}

#[test]
fn bad_spirv_never_reaches_the_driver() {
    let Some(device) = device("bad_spirv_never_reaches_the_driver") else {
        return;
    };
    let with_shader = |words: Vec<u32>| {
        let mut program = scale_then_increment(&constants());
        program.shaders[1] = words;
        refusal(&device, &program)
    };
    let spirv_error = |source| ProgramError::Spirv { shader: 1, source };

    assert_eq!(
        with_shader(vec![0xdead_beef; 16]),
        spirv_error(SpirvError::BadMagic { found: 0xdead_beef })
    );
    assert_eq!(
        with_shader(Vec::new()),
        spirv_error(SpirvError::TooShort { words: 0 })
    );
    let mut overlong = shader("arena[i] = 0.0;");
    overlong.truncate(5);
    overlong.push(0xffff_0011);
    assert_eq!(
        with_shader(overlong),
        spirv_error(SpirvError::BadWordCount {
            at: 5,
            count: 0xffff,
            left: 1
        })
    );
    assert_eq!(
        with_shader(shader_named("run", "arena[i] = 0.0;")),
        spirv_error(SpirvError::NoComputeMain)
    );
}

#[test]
fn spirv_is_read_from_bytes_whole_words_only() {
    let words = shader("arena[i] = 1.0;");
    let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    assert_eq!(spirv_from_bytes(&bytes), Ok(words));
    assert_eq!(
        spirv_from_bytes(&bytes[..bytes.len() - 1]),
        Err(SpirvError::NotWords {
            bytes: bytes.len() - 1
        })
    );
}
