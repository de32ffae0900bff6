//! Runs [`DeviceProgram`]s, the SPIR-V compute programs ptec generates, on a
//! Vulkan device through ash (the loader is loaded at run time, so nothing
//! links against Vulkan and a machine without it gets
//! [`VulkanError::NoLoader`]).
//!
//! The execution model is deliberately simple:
//! - **One arena.** Activations, inputs and outputs live at offsets the
//!   memory planner chose in one storage buffer (binding 0 of set 0). It is
//!   host-visible and coherent (device-local too when the device has such
//!   memory), mapped for the method's life and zeroed at the start, so the
//!   caller writes inputs and reads outputs in place, with no copies.
//! - **Constants uploaded once.** Every constant, packed into one buffer
//!   (binding 1, read-only), goes into device-local memory when the method
//!   is made: directly when that memory is host-visible, else through a
//!   staging buffer. Shaders read quads of both buffers through uniform
//!   texel buffer views of them (bindings 3 and 4).
//! - **Bindings per dispatch.** A dispatch binds the bytes of each buffer
//!   its `Bindings` name: the whole buffers, or where they are larger than
//!   a binding shows a shader (`maxStorageBufferRange`), the part it
//!   touches; each distinct `Bindings` is one descriptor set.
//! - **A command buffer per device segment.** Each shader becomes a compute
//!   pipeline (all share one layout), and each device
//!   segment's dispatches are recorded once, in order, with a barrier before
//!   each (so a dispatch sees what earlier ones, earlier segments and the
//!   last run wrote) and one to the host at the end. A run goes through the
//!   segments in order: it submits a device segment's command buffer and
//!   waits on a fence; between them, host segments run generated CPU code
//!   (the kernels no shader expresses) on the mapped arena, on the calling
//!   thread ([`VulkanInstance`]).
//!
//! A program is checked against the device's limits ([`DeviceLimits`])
//! before any Vulkan object is made from it, and each SPIR-V module is
//! walked so that a malformed one never reaches the driver.
//!
//! [`VulkanDevice::open`] picks the device; `PTEC_VULKAN_DEVICE` (an index
//! or part of a name) overrides its preference for discrete, then
//! integrated, virtual and CPU devices.

mod device;
mod error;
mod instance;
mod memory;
mod method;
mod program;
mod spirv;

pub use device::{ApiVersion, DeviceType, VulkanDevice};
pub use error::VulkanError;
pub use instance::VulkanInstance;
pub use method::DeviceMethod;
pub use program::{
    BindingProblem, Bindings, DeviceLimits, DeviceProgram, Dispatch, ProgramError, Segment,
    buffer_bytes,
};
pub use spirv::{SpirvError, spirv_from_bytes};
