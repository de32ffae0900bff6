//! A method running on a Vulkan device, seen like any other instance: its
//! inputs are checked and written into the device's mapped arena, its
//! segments run in order (device segments' recorded dispatches, and the
//! generated CPU code of host segments on the same mapped arena, on the
//! calling thread), and the outputs are read back from the arena.

use std::sync::Arc;

use super::{DeviceMethod, DeviceProgram, Segment, VulkanDevice, VulkanError};
use crate::abi::MethodAbi;
use crate::code::Code;
use crate::instance::{bind_inputs, read_outputs, write_initial_state};
use crate::{HostTensor, RuntimeError, TensorRef};

/// A method's shaders on a device, and the CPU code of its host segments,
/// with its state and boundary.
#[derive(Debug)]
pub struct VulkanInstance<'c> {
    abi: MethodAbi,
    dims: Vec<i64>,
    method: DeviceMethod,
    /// Entry `k` runs host segment `Segment::Host(k)`.
    host: Code<'c>,
}

impl<'c> VulkanInstance<'c> {
    /// Uploads `program` (whose arena follows `abi`) to `device`, with
    /// `host`, the code its host segments run; `profile` times each
    /// dispatch ([`DeviceMethod::profiled`]).
    ///
    /// # Safety
    /// Each entry of `host` must be code generated for `abi`'s arena
    /// layout and constants (see [`Code::new`]).
    pub unsafe fn new(
        device: Arc<VulkanDevice>,
        abi: MethodAbi,
        program: &DeviceProgram,
        host: Code<'c>,
        profile: bool,
    ) -> Result<Self, VulkanError> {
        if let Some(entry) = program.segments.iter().find_map(|segment| match *segment {
            Segment::Host(entry) if entry >= host.entries() => Some(entry),
            _ => None,
        }) {
            return Err(VulkanError::NoHostEntry {
                entry,
                entries: host.entries(),
            });
        }
        if program.arena_bytes < abi.arena_bytes {
            return Err(VulkanError::ArenaTooSmall {
                program: program.arena_bytes,
                method: abi.arena_bytes,
            });
        }
        let mut method = match profile {
            true => DeviceMethod::profiled(device, program)?,
            false => DeviceMethod::new(device, program)?,
        };
        write_initial_state(&abi, method.arena_mut());
        Ok(VulkanInstance {
            dims: abi.dim_bounds.iter().map(|&bound| bound as i64).collect(),
            abi,
            method,
            host,
        })
    }

    pub fn abi(&self) -> &MethodAbi {
        &self.abi
    }

    /// The method on the device: its pipelines, dispatches and buffers.
    pub fn device_method(&self) -> &DeviceMethod {
        &self.method
    }

    /// Runs the method on `inputs` and returns its outputs.
    pub fn run(&mut self, inputs: &[TensorRef<'_>]) -> Result<Vec<HostTensor>, RuntimeError> {
        bind_inputs(&self.abi, &mut self.dims, self.method.arena_mut(), inputs)?;
        for segment in 0..self.method.segments().len() {
            match self.method.segments()[segment] {
                Segment::Device(_) => {
                    self.method
                        .run_segment(segment)
                        .map_err(|error| RuntimeError::Execution {
                            method: self.abi.name.clone(),
                            message: error.to_string(),
                        })?
                }
                Segment::Host(entry) => {
                    let arena = self.method.arena_mut().as_mut_ptr();
                    // SAFETY: `new`'s contract and check: the entry exists
                    // and was generated for this arena layout, which holds
                    // at least `abi.arena_bytes` bytes (checked in `new`);
                    // no device work is in flight (`run_segment` waited for
                    // its fence), so the host alone touches the arena now;
                    // `dims` holds one size per symbol within its bound; the
                    // code runs on this thread alone (no pool).
                    unsafe {
                        self.host.call(
                            entry,
                            &self.abi,
                            arena,
                            &mut self.dims,
                            std::ptr::null_mut(),
                        )?
                    }
                }
            }
        }
        Ok(read_outputs(&self.abi, &self.dims, self.method.arena()))
    }
}
