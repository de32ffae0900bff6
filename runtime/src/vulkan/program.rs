//! What a Vulkan device runs, as plain data the code generator builds
//! ([`DeviceProgram`]), and the check that a program fits a device's limits
//! ([`DeviceProgram::check`]) before any Vulkan object is made from it.

use std::ops::Range;

use thiserror::Error;

use super::spirv::{self, SpirvError};

/// What a device runs: one arena of activations, inputs and outputs; the
/// constants; compute dispatches in order; and the segments a run goes
/// through, device work and the host work between it.
///
/// Every shader sees descriptor set 0: binding 0 is the arena (a
/// read-write storage buffer) and binding 1 the constants (read-only), as
/// 32-bit words; binding 2 is the arena again, read and written as 16-byte
/// quads (one load for four words); bindings 3 and 4 are the constants and
/// the arena again as uniform texel buffers of `R32G32B32A32_UINT` texels,
/// quad `q` texel `q` (as many of the buffer's quads as the device's
/// `maxTexelBufferElements` allows), which shaders fetch quads through.
/// Each dispatch binds the bytes of the two buffers its [`Bindings`] say,
/// which a shader sees from word, quad and texel 0: the whole buffers
/// where a binding may show that much, otherwise the part a dispatch
/// reads and writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceProgram {
    pub arena_bytes: u64,
    /// Every constant, packed by the code generator.
    pub constants: Vec<u8>,
    /// SPIR-V modules, each with a compute entry point named `main` whose
    /// workgroup size is baked in.
    pub shaders: Vec<Vec<u32>>,
    /// Run in this order, each seeing what the ones before it wrote.
    pub dispatches: Vec<Dispatch>,
    /// A run, in order: device segments, which together hold every
    /// dispatch in order, and host segments between them.
    pub segments: Vec<Segment>,
    /// The most texels the shaders fetch through one texel buffer view.
    pub texels: u64,
}

/// A part of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// These dispatches, recorded into one command buffer: a run submits
    /// it and waits for it to finish.
    Device(Range<usize>),
    /// Work the host does on the arena between device segments: entry
    /// `k` of the code the method was made with (`VulkanInstance`).
    Host(usize),
}

/// One `vkCmdDispatch`: which shader, how many workgroups along x, y, z,
/// the 32-bit words its shader reads as push constants (from offset 0),
/// and the bytes of the buffers it binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    pub shader: usize,
    pub workgroups: [u32; 3],
    pub push_constants: Vec<u32>,
    pub bindings: Bindings,
}

/// The bytes of the arena and of the constants that a dispatch's shader
/// sees (every binding of each: words, quads and texels), each starting at
/// a multiple of the device's offset alignments and at most
/// `maxStorageBufferRange` long.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bindings {
    pub arena: Range<u64>,
    pub constants: Range<u64>,
}

/// The limits of a device that a program must keep to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    /// `maxComputeWorkGroupCount`: workgroups one dispatch may launch.
    pub max_workgroup_count: [u32; 3],
    /// `maxComputeWorkGroupSize`: invocations a workgroup may have along each axis.
    pub max_workgroup_size: [u32; 3],
    /// `maxComputeWorkGroupInvocations`: invocations a workgroup may have in all.
    pub max_workgroup_invocations: u32,
    /// `maxStorageBufferRange`: the largest buffer a shader may see.
    pub max_storage_buffer_range: u32,
    /// `maxMemoryAllocationSize`: the largest single allocation.
    pub max_allocation_bytes: u64,
    /// `maxTexelBufferElements`: the most texels (quads) a texel buffer
    /// view may have.
    pub max_texel_buffer_elements: u32,
    /// `maxPushConstantsSize`: the most bytes of push constants a dispatch
    /// may give.
    pub max_push_constant_bytes: u32,
    /// `minStorageBufferOffsetAlignment` and `minTexelBufferOffsetAlignment`,
    /// the larger: what a binding's start must be a multiple of.
    pub binding_alignment: u64,
}

/// Why a program cannot run on a device.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProgramError {
    #[error("dispatch {dispatch} names shader {shader}, but the program has {shaders} shaders")]
    NoSuchShader {
        dispatch: usize,
        shader: usize,
        shaders: usize,
    },

    #[error(
        "dispatch {dispatch} gives {bytes} bytes of push constants, above the device's maxPushConstantsSize of {limit}"
    )]
    TooManyPushConstants {
        dispatch: usize,
        bytes: u64,
        limit: u32,
    },

    #[error("dispatch {dispatch} launches no workgroups along {axis}")]
    NoWorkgroups { dispatch: usize, axis: char },

    #[error(
        "dispatch {dispatch} launches {count} workgroups along {axis}, above the device's maxComputeWorkGroupCount of {limit}"
    )]
    TooManyWorkgroups {
        dispatch: usize,
        axis: char,
        count: u32,
        limit: u32,
    },

    #[error(
        "segment {segment} holds dispatches {range:?}, but the dispatches before it end at {expected}"
    )]
    SegmentOutOfOrder {
        segment: usize,
        range: Range<usize>,
        expected: usize,
    },

    #[error("segment {segment} holds dispatches {range:?}, but the program has {dispatches}")]
    NoSuchDispatches {
        segment: usize,
        range: Range<usize>,
        dispatches: usize,
    },

    #[error("dispatches {unsegmented:?} are in no segment")]
    DispatchesOutsideSegments { unsegmented: Range<usize> },

    #[error("shader {shader}: {source}")]
    Spirv {
        shader: usize,
        #[source]
        source: SpirvError,
    },

    #[error(
        "shader {shader} has workgroups of {size:?} invocations, beyond the device's maxComputeWorkGroupSize {limit:?}"
    )]
    WorkgroupTooLarge {
        shader: usize,
        size: [u32; 3],
        limit: [u32; 3],
    },

    #[error(
        "shader {shader} has workgroups of {invocations} invocations, above the device's maxComputeWorkGroupInvocations of {limit}"
    )]
    TooManyInvocations {
        shader: usize,
        invocations: u64,
        limit: u32,
    },

    #[error(
        "the shaders fetch {texels} texels of 16 bytes through one view, above the device's maxTexelBufferElements of {limit}"
    )]
    TooManyTexels { texels: u64, limit: u32 },

    #[error("dispatch {dispatch} binds bytes {range:?} of the {buffer}, which {problem}")]
    BadBinding {
        dispatch: usize,
        buffer: &'static str,
        range: Range<u64>,
        problem: BindingProblem,
    },

    #[error(
        "the {buffer} needs a buffer of {bytes} bytes, above the device's {limit_name} of {limit}"
    )]
    BufferTooLarge {
        buffer: &'static str,
        bytes: u64,
        limit_name: &'static str,
        limit: u64,
    },
}

/// What is wrong with a dispatch's binding of a buffer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BindingProblem {
    #[error("is empty or ends past the buffer's {bytes} bytes")]
    OutsideBuffer { bytes: u64 },
    #[error("is longer than the device's maxStorageBufferRange of {limit}")]
    TooLong { limit: u32 },
    #[error("starts at no multiple of the device's offset alignment of {alignment}")]
    Misaligned { alignment: u64 },
    #[error("is no whole number of 16-byte quads")]
    NotQuads,
}

const AXES: [char; 3] = ['x', 'y', 'z'];

impl DeviceProgram {
    /// Checks that every dispatch names a shader, launches between 1 and
    /// the device's maximum of workgroups, every shader is a SPIR-V module
    /// with a `main` compute entry point whose workgroups the device allows,
    /// the device segments hold every dispatch once, in order, both
    /// buffers fit the device and every dispatch binds a part of each that
    /// the device can show a shader.
    pub fn check(&self, limits: &DeviceLimits) -> Result<(), ProgramError> {
        for (shader, words) in self.shaders.iter().enumerate() {
            check_shader(shader, words, limits)?;
        }
        let buffers = [self.arena_bytes, self.constants.len() as u64].map(buffer_bytes);
        for (index, dispatch) in self.dispatches.iter().enumerate() {
            check_dispatch(index, dispatch, self.shaders.len(), limits)?;
            check_bindings(index, &dispatch.bindings, buffers, limits)?;
        }
        let mut segmented = 0;
        for (segment, part) in self.segments.iter().enumerate() {
            if let Segment::Device(range) = part {
                if range.start != segmented || range.end < range.start {
                    return Err(ProgramError::SegmentOutOfOrder {
                        segment,
                        range: range.clone(),
                        expected: segmented,
                    });
                }
                if range.end > self.dispatches.len() {
                    return Err(ProgramError::NoSuchDispatches {
                        segment,
                        range: range.clone(),
                        dispatches: self.dispatches.len(),
                    });
                }
                segmented = range.end;
            }
        }
        if segmented != self.dispatches.len() {
            return Err(ProgramError::DispatchesOutsideSegments {
                unsegmented: segmented..self.dispatches.len(),
            });
        }
        check_buffer("arena", self.arena_bytes, limits)?;
        let constant_bytes = self.constants.len() as u64;
        check_buffer("constants", constant_bytes, limits)?;
        if self.texels > u64::from(limits.max_texel_buffer_elements) {
            return Err(ProgramError::TooManyTexels {
                texels: self.texels,
                limit: limits.max_texel_buffer_elements,
            });
        }
        Ok(())
    }
}

fn check_shader(shader: usize, words: &[u32], limits: &DeviceLimits) -> Result<(), ProgramError> {
    let entry =
        spirv::compute_entry(words).map_err(|source| ProgramError::Spirv { shader, source })?;
    let Some(size) = entry.workgroup_size else {
        return Ok(());
    };
    if size
        .iter()
        .zip(limits.max_workgroup_size)
        .any(|(&n, max)| n > max)
    {
        return Err(ProgramError::WorkgroupTooLarge {
            shader,
            size,
            limit: limits.max_workgroup_size,
        });
    }
    let invocations = size.iter().map(|&n| u64::from(n)).product::<u64>();
    if invocations > u64::from(limits.max_workgroup_invocations) {
        return Err(ProgramError::TooManyInvocations {
            shader,
            invocations,
            limit: limits.max_workgroup_invocations,
        });
    }
    Ok(())
}

fn check_dispatch(
    index: usize,
    dispatch: &Dispatch,
    shaders: usize,
    limits: &DeviceLimits,
) -> Result<(), ProgramError> {
    if dispatch.shader >= shaders {
        return Err(ProgramError::NoSuchShader {
            dispatch: index,
            shader: dispatch.shader,
            shaders,
        });
    }
    let bytes = 4 * dispatch.push_constants.len() as u64;
    if bytes > u64::from(limits.max_push_constant_bytes) {
        return Err(ProgramError::TooManyPushConstants {
            dispatch: index,
            bytes,
            limit: limits.max_push_constant_bytes,
        });
    }
    for ((axis, count), limit) in AXES
        .into_iter()
        .zip(dispatch.workgroups)
        .zip(limits.max_workgroup_count)
    {
        if count == 0 {
            return Err(ProgramError::NoWorkgroups {
                dispatch: index,
                axis,
            });
        }
        if count > limit {
            return Err(ProgramError::TooManyWorkgroups {
                dispatch: index,
                axis,
                count,
                limit,
            });
        }
    }
    Ok(())
}

/// Checks that each binding of a dispatch is whole quads of its buffer
/// (`buffers`: the arena's and the constants' bytes), starts aligned and
/// is no longer than a binding may be.
fn check_bindings(
    dispatch: usize,
    bindings: &Bindings,
    buffers: [u64; 2],
    limits: &DeviceLimits,
) -> Result<(), ProgramError> {
    let named = [
        ("arena", &bindings.arena),
        ("constants", &bindings.constants),
    ];
    for ((buffer, range), bytes) in named.into_iter().zip(buffers) {
        let problem = if range.start >= range.end || range.end > bytes {
            Some(BindingProblem::OutsideBuffer { bytes })
        } else if range.end - range.start > u64::from(limits.max_storage_buffer_range) {
            Some(BindingProblem::TooLong {
                limit: limits.max_storage_buffer_range,
            })
        } else if !range.start.is_multiple_of(limits.binding_alignment.max(1)) {
            Some(BindingProblem::Misaligned {
                alignment: limits.binding_alignment,
            })
        } else if !(range.end - range.start).is_multiple_of(16) {
            Some(BindingProblem::NotQuads)
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(ProgramError::BadBinding {
                dispatch,
                buffer,
                range: range.clone(),
                problem,
            });
        }
    }
    Ok(())
}

/// The size of the buffer that holds `bytes`: Vulkan forbids empty buffers,
/// and shaders see storage buffers as arrays of 4-byte words and of 16-byte
/// quads, so a whole number of quads, at least one.
pub fn buffer_bytes(bytes: u64) -> u64 {
    bytes.div_ceil(16).max(1).saturating_mul(16)
}

fn check_buffer(
    buffer: &'static str,
    bytes: u64,
    limits: &DeviceLimits,
) -> Result<(), ProgramError> {
    let needed = buffer_bytes(bytes);
    let too_large = |limit_name, limit| ProgramError::BufferTooLarge {
        buffer,
        bytes: needed,
        limit_name,
        limit,
    };
    if needed > limits.max_allocation_bytes {
        return Err(too_large(
            "maxMemoryAllocationSize",
            limits.max_allocation_bytes,
        ));
    }
    // The arena is mapped into the host's address space whole.
    let host = u64::try_from(usize::MAX).unwrap_or(u64::MAX);
    if needed > host {
        return Err(too_large("host address space", host));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vulkan::spirv::tests::compute_shader;

    const LIMITS: DeviceLimits = DeviceLimits {
        max_workgroup_count: [65535, 65535, 65535],
        max_workgroup_size: [1024, 1024, 64],
        max_workgroup_invocations: 1024,
        max_storage_buffer_range: 1 << 27,
        max_allocation_bytes: 1 << 30,
        max_texel_buffer_elements: 1 << 27,
        max_push_constant_bytes: 128,
        binding_alignment: 64,
    };

    /// The whole of both buffers of [`program`].
    fn whole() -> Bindings {
        Bindings {
            arena: 0..16,
            constants: 0..16,
        }
    }

    fn program(dispatches: &[Dispatch]) -> DeviceProgram {
        DeviceProgram {
            arena_bytes: 16,
            constants: vec![0; 8],
            shaders: vec![compute_shader([64, 1, 1])],
            dispatches: dispatches.to_vec(),
            segments: vec![Segment::Device(0..dispatches.len())],
            texels: 0,
        }
    }

    #[test]
    fn accepts_a_program_that_fits() {
        let dispatch = Dispatch {
            shader: 0,
            workgroups: [65535, 2, 1],
            push_constants: vec![7; 32],
            bindings: whole(),
        };
        assert_eq!(program(&[dispatch]).check(&LIMITS), Ok(()));
    }

    #[test]
    fn refuses_dispatches_the_device_cannot_run() {
        let no_shader = Dispatch {
            shader: 1,
            workgroups: [1, 1, 1],
            push_constants: Vec::new(),
            bindings: whole(),
        };
        assert_eq!(
            program(&[no_shader]).check(&LIMITS),
            Err(ProgramError::NoSuchShader {
                dispatch: 0,
                shader: 1,
                shaders: 1
            })
        );
        let ok = Dispatch {
            shader: 0,
            workgroups: [1, 1, 1],
            push_constants: Vec::new(),
            bindings: whole(),
        };
        let empty = Dispatch {
            shader: 0,
            workgroups: [4, 0, 1],
            push_constants: Vec::new(),
            bindings: whole(),
        };
        assert_eq!(
            program(&[ok.clone(), empty]).check(&LIMITS),
            Err(ProgramError::NoWorkgroups {
                dispatch: 1,
                axis: 'y'
            })
        );
        let pushy = Dispatch {
            push_constants: vec![0; 33],
            ..ok.clone()
        };
        assert_eq!(
            program(&[ok, pushy]).check(&LIMITS),
            Err(ProgramError::TooManyPushConstants {
                dispatch: 1,
                bytes: 132,
                limit: 128
            })
        );
        let many = Dispatch {
            shader: 0,
            workgroups: [1, 1, 65536],
            push_constants: Vec::new(),
            bindings: whole(),
        };
        assert_eq!(
            program(&[many]).check(&LIMITS),
            Err(ProgramError::TooManyWorkgroups {
                dispatch: 0,
                axis: 'z',
                count: 65536,
                limit: 65535
            })
        );
    }

    #[test]
    fn refuses_workgroups_the_device_cannot_hold() {
        let mut wide = program(&[]);
        wide.shaders.push(compute_shader([1, 1, 65]));
        assert_eq!(
            wide.check(&LIMITS),
            Err(ProgramError::WorkgroupTooLarge {
                shader: 1,
                size: [1, 1, 65],
                limit: [1024, 1024, 64]
            })
        );
        let mut many = program(&[]);
        many.shaders[0] = compute_shader([64, 32, 1]);
        assert_eq!(
            many.check(&LIMITS),
            Err(ProgramError::TooManyInvocations {
                shader: 0,
                invocations: 2048,
                limit: 1024
            })
        );
    }

    #[test]
    fn refuses_buffers_above_the_limits() {
        let small_allocations = DeviceLimits {
            max_allocation_bytes: 4,
            ..LIMITS
        };
        assert_eq!(
            program(&[]).check(&small_allocations),
            Err(ProgramError::BufferTooLarge {
                buffer: "arena",
                bytes: 16,
                limit_name: "maxMemoryAllocationSize",
                limit: 4,
            })
        );
    }

    #[test]
    fn binds_parts_of_buffers_larger_than_a_binding_shows() {
        let mut large = program(&[]);
        large.arena_bytes = 3 << 26;
        let part = Dispatch {
            shader: 0,
            workgroups: [1, 1, 1],
            push_constants: Vec::new(),
            bindings: Bindings {
                arena: (1 << 26)..(3 << 26),
                constants: 0..16,
            },
        };
        large.dispatches = vec![part.clone()];
        large.segments = vec![Segment::Device(0..1)];
        assert_eq!(large.check(&LIMITS), Ok(()));
        let refused = |arena: Range<u64>, constants: Range<u64>| {
            let mut bad = large.clone();
            bad.dispatches[0].bindings = Bindings { arena, constants };
            bad.check(&LIMITS).err()
        };
        let bad_binding = |buffer, range, problem| {
            Some(ProgramError::BadBinding {
                dispatch: 0,
                buffer,
                range,
                problem,
            })
        };
        assert_eq!(
            refused(0..(3 << 26), 0..16),
            bad_binding(
                "arena",
                0..(3 << 26),
                BindingProblem::TooLong { limit: 1 << 27 }
            )
        );
        assert_eq!(
            refused(32..48, 0..16),
            bad_binding(
                "arena",
                32..48,
                BindingProblem::Misaligned { alignment: 64 }
            )
        );
        assert_eq!(
            refused(64..72, 0..16),
            bad_binding("arena", 64..72, BindingProblem::NotQuads)
        );
        assert_eq!(
            refused(64..64, 0..16),
            bad_binding(
                "arena",
                64..64,
                BindingProblem::OutsideBuffer { bytes: 3 << 26 }
            )
        );
        assert_eq!(
            refused(0..16, 0..32),
            bad_binding(
                "constants",
                0..32,
                BindingProblem::OutsideBuffer { bytes: 16 }
            )
        );
    }

    #[test]
    fn refuses_more_texels_than_a_view_holds() {
        let two_texels = DeviceLimits {
            max_texel_buffer_elements: 2,
            ..LIMITS
        };
        let mut fits = program(&[]);
        fits.texels = 2;
        assert_eq!(fits.check(&two_texels), Ok(()));
        let mut large = fits.clone();
        large.texels = 3;
        assert_eq!(
            large.check(&two_texels),
            Err(ProgramError::TooManyTexels {
                texels: 3,
                limit: 2,
            })
        );
    }

    #[test]
    fn buffers_are_whole_quads_and_never_empty() {
        assert_eq!(buffer_bytes(0), 16);
        assert_eq!(buffer_bytes(5), 16);
        assert_eq!(buffer_bytes(16), 16);
        assert_eq!(buffer_bytes(17), 32);
        assert_eq!(buffer_bytes(u64::MAX), u64::MAX);
    }
}
