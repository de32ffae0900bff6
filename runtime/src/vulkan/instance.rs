//! A method running on a Vulkan device, seen like any other instance: its
//! inputs are checked and written into the device's mapped arena, the
//! recorded dispatches run, and the outputs are read back from the arena.

use std::sync::Arc;

use super::{DeviceMethod, DeviceProgram, VulkanDevice, VulkanError};
use crate::abi::MethodAbi;
use crate::instance::{bind_inputs, read_outputs, write_initial_state};
use crate::{HostTensor, RuntimeError, TensorRef};

/// A method's shaders on a device, with its state and boundary.
#[derive(Debug)]
pub struct VulkanInstance {
    abi: MethodAbi,
    dims: Vec<i64>,
    method: DeviceMethod,
}

impl VulkanInstance {
    /// Uploads `program` (whose arena follows `abi`) to `device`.
    pub fn new(
        device: Arc<VulkanDevice>,
        abi: MethodAbi,
        program: &DeviceProgram,
    ) -> Result<VulkanInstance, VulkanError> {
        let mut method = DeviceMethod::new(device, program)?;
        write_initial_state(&abi, method.arena_mut());
        Ok(VulkanInstance {
            dims: abi.dim_bounds.iter().map(|&bound| bound as i64).collect(),
            abi,
            method,
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
        self.method.run().map_err(|error| RuntimeError::Execution {
            method: self.abi.name.clone(),
            message: error.to_string(),
        })?;
        Ok(read_outputs(&self.abi, &self.dims, self.method.arena()))
    }
}
