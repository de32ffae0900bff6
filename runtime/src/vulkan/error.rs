//! The Vulkan runtime's error type: each variant says what failed, naming
//! the Vulkan call and its result, the limit and the figures, or the device.

use ash::vk;
use thiserror::Error;

use super::device::ApiVersion;
use super::program::ProgramError;

#[derive(Debug, Error)]
pub enum VulkanError {
    #[error("cannot load the Vulkan loader (libvulkan): {0}")]
    NoLoader(#[source] ash::LoadingError),

    #[error("the Vulkan loader offers Vulkan {version}, and ptec needs 1.1")]
    LoaderTooOld { version: ApiVersion },

    #[error("no Vulkan device can run ptec's compute shaders: {devices}")]
    NoDevice { devices: String },

    #[error("PTEC_VULKAN_DEVICE={wanted} names none of the Vulkan devices: {devices}")]
    DeviceNotFound { wanted: String, devices: String },

    #[error("PTEC_VULKAN_DEVICE={wanted} names {name}, which {reason}")]
    DeviceUnsuitable {
        wanted: String,
        name: String,
        reason: String,
    },

    #[error("{call} failed: the device was lost")]
    DeviceLost { call: &'static str },

    #[error("{call} failed: out of memory ({result:?})")]
    OutOfMemory {
        call: &'static str,
        result: vk::Result,
    },

    #[error("{call} failed: {result:?} ({result})")]
    Call {
        call: &'static str,
        result: vk::Result,
    },

    #[error("shader {shader}: {source}")]
    Shader {
        shader: usize,
        #[source]
        source: Box<VulkanError>,
    },

    #[error("no memory type of the device can hold the {buffer} buffer as {wanted:?}")]
    NoMemoryType {
        buffer: &'static str,
        wanted: vk::MemoryPropertyFlags,
    },

    #[error("a host segment runs code entry {entry}, but the method has {entries}")]
    NoHostEntry { entry: usize, entries: usize },

    #[error("the program's arena of {program} bytes is smaller than its method's of {method}")]
    ArenaTooSmall { program: u64, method: u64 },

    #[error("segment {segment} is not a device segment of the program")]
    NotADeviceSegment { segment: usize },

    #[error("the program does not fit the device: {0}")]
    Program(#[from] ProgramError),
}

/// Turns the result of the Vulkan call `call` into a [`VulkanError`]:
/// `.map_err(failed("vkQueueSubmit"))`.
pub(crate) fn failed(call: &'static str) -> impl Fn(vk::Result) -> VulkanError {
    move |result| match result {
        vk::Result::ERROR_DEVICE_LOST => VulkanError::DeviceLost { call },
        vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => {
            VulkanError::OutOfMemory { call, result }
        }
        _ => VulkanError::Call { call, result },
    }
}
