//! Buffers and their memory: a buffer bound to memory of a type chosen by
//! preference, host mappings, the one-time upload of constants into
//! device-local memory, and views of a buffer as texels of quads.

use std::ptr::NonNull;
use std::sync::Arc;

use ash::vk;

use super::device::VulkanDevice;
use super::error::{VulkanError, failed};

/// Memory the host writes and reads without flushing or invalidating.
pub(crate) const HOST_SHARED: vk::MemoryPropertyFlags = vk::MemoryPropertyFlags::from_raw(
    vk::MemoryPropertyFlags::HOST_VISIBLE.as_raw()
        | vk::MemoryPropertyFlags::HOST_COHERENT.as_raw(),
);

/// A buffer with memory of its own, freed on drop.
pub(crate) struct Buffer {
    device: Arc<VulkanDevice>,
    pub(crate) handle: vk::Buffer,
    memory: vk::DeviceMemory,
    pub(crate) bytes: u64,
    properties: vk::MemoryPropertyFlags,
}

/// A host mapping of a buffer's memory, valid while the buffer lives.
pub(crate) struct Mapping {
    pub(crate) start: NonNull<u8>,
    pub(crate) len: usize,
}

impl Buffer {
    /// A buffer of `bytes` for `usage`, bound to the first memory type that
    /// has every property of one of `preferences`, tried in order. `what`
    /// names the buffer in errors.
    pub(crate) fn new(
        device: &Arc<VulkanDevice>,
        what: &'static str,
        bytes: u64,
        usage: vk::BufferUsageFlags,
        preferences: &[vk::MemoryPropertyFlags],
    ) -> Result<Self, VulkanError> {
        let raw = device.raw();
        let info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: a plain object creation with a valid create-info (`bytes`
        // is never 0: see `program::buffer_bytes`).
        let handle = unsafe { raw.create_buffer(&info, None) }.map_err(failed("vkCreateBuffer"))?;
        // From here on, dropping `buffer` destroys what was made.
        let mut buffer = Buffer {
            device: Arc::clone(device),
            handle,
            memory: vk::DeviceMemory::null(),
            bytes,
            properties: vk::MemoryPropertyFlags::empty(),
        };
        // SAFETY: `handle` is a live buffer of this device.
        let requirements = unsafe { raw.get_buffer_memory_requirements(handle) };
        let (type_index, properties) = preferences
            .iter()
            .find_map(|&wanted| device.memory_type(requirements.memory_type_bits, wanted))
            .ok_or(VulkanError::NoMemoryType {
                buffer: what,
                wanted: preferences.last().copied().unwrap_or_default(),
            })?;
        let allocation = vk::MemoryAllocateInfo::default()
            .allocation_size(requirements.size)
            .memory_type_index(type_index);
        // SAFETY: the size and type come from the buffer's requirements.
        buffer.memory = unsafe { raw.allocate_memory(&allocation, None) }
            .map_err(failed("vkAllocateMemory"))?;
        buffer.properties = properties;
        // SAFETY: the memory is fresh, large enough and of an allowed type.
        unsafe { raw.bind_buffer_memory(handle, buffer.memory, 0) }
            .map_err(failed("vkBindBufferMemory"))?;
        Ok(buffer)
    }

    /// Whether the host can map the buffer and use it without flushes.
    pub(crate) fn is_host_shared(&self) -> bool {
        self.properties.contains(HOST_SHARED)
    }

    /// Maps the whole buffer into the host's address space. The mapping lasts
    /// until [`Self::unmap`] or until the buffer is dropped.
    pub(crate) fn map(&self) -> Result<Mapping, VulkanError> {
        let len = usize::try_from(self.bytes).map_err(|_| VulkanError::Call {
            call: "vkMapMemory",
            result: vk::Result::ERROR_MEMORY_MAP_FAILED,
        })?;
        // SAFETY: the memory is host-visible (callers check
        // `is_host_shared`), not mapped yet, and at least `bytes` long.
        let start = unsafe {
            self.device
                .raw()
                .map_memory(self.memory, 0, self.bytes, vk::MemoryMapFlags::empty())
        }
        .map_err(failed("vkMapMemory"))?;
        let start = NonNull::new(start.cast::<u8>()).ok_or(VulkanError::Call {
            call: "vkMapMemory",
            result: vk::Result::ERROR_MEMORY_MAP_FAILED,
        })?;
        Ok(Mapping { start, len })
    }

    pub(crate) fn unmap(&self) {
        // SAFETY: the memory is mapped (by `map`), and the mapping is no
        // longer used.
        unsafe { self.device.raw().unmap_memory(self.memory) };
    }

    /// Writes `data` at the start of a host-shared buffer and zeroes the rest.
    pub(crate) fn write(&self, data: &[u8]) -> Result<(), VulkanError> {
        let mapping = self.map()?;
        let written = data.len().min(mapping.len);
        // SAFETY: the mapping is `mapping.len` bytes that nothing else uses,
        // and `data` is host memory apart from it.
        unsafe {
            let start = mapping.start.as_ptr();
            start.copy_from_nonoverlapping(data.as_ptr(), written);
            start.add(written).write_bytes(0, mapping.len - written);
        }
        self.unmap();
        Ok(())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the device no longer uses the buffer (whoever submitted
        // work on it waited for it); freeing memory also unmaps it, and a
        // null memory handle is allowed.
        unsafe {
            self.device.raw().destroy_buffer(self.handle, None);
            self.device.raw().free_memory(self.memory, None);
        }
    }
}

/// A device-local storage (and uniform texel) buffer of `bytes` holding
/// `data`, then zeroes.
/// When the device-local memory is host-visible too, `data` is written
/// into it directly; else it goes through a staging buffer and a copy.
pub(crate) fn upload_constants(
    device: &Arc<VulkanDevice>,
    data: &[u8],
    bytes: u64,
) -> Result<Buffer, VulkanError> {
    let local = vk::MemoryPropertyFlags::DEVICE_LOCAL;
    let constants = Buffer::new(
        device,
        "constants",
        bytes,
        vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::UNIFORM_TEXEL_BUFFER
            | vk::BufferUsageFlags::TRANSFER_DST,
        &[local | HOST_SHARED, local],
    )?;
    if constants.is_host_shared() {
        constants.write(data)?;
        return Ok(constants);
    }
    let staging = Buffer::new(
        device,
        "constant staging",
        bytes,
        vk::BufferUsageFlags::TRANSFER_SRC,
        &[HOST_SHARED],
    )?;
    staging.write(data)?;
    device.run_once(|raw, commands| {
        let region = vk::BufferCopy::default().size(bytes);
        let copied = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ);
        // SAFETY: both buffers are live and `bytes` long; the command buffer
        // is recording. The barrier makes the copy visible to the shaders of
        // every later submission to the queue.
        unsafe {
            raw.cmd_copy_buffer(commands, staging.handle, constants.handle, &[region]);
            raw.cmd_pipeline_barrier(
                commands,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &[copied],
                &[],
                &[],
            );
        }
    })?;
    Ok(constants)
}

/// A view of bytes `range` of `buffer` as `R32G32B32A32_UINT` texels, one
/// quad of 32-bit words each (a uniform texel buffer), as many of its
/// quads as the device's maxTexelBufferElements allows: shaders fetch
/// quads through it for all lanes at once, where devices such as lavapipe
/// load storage buffers lane by lane. `buffer` was made for
/// `UNIFORM_TEXEL_BUFFER` use, `range` is whole quads of it starting at a
/// multiple of the device's `minTexelBufferOffsetAlignment` (checked with
/// the program); the caller destroys the view before the buffer.
pub(crate) fn quad_texels(
    device: &VulkanDevice,
    buffer: &Buffer,
    range: &std::ops::Range<u64>,
) -> Result<vk::BufferView, VulkanError> {
    let info = vk::BufferViewCreateInfo::default()
        .buffer(buffer.handle)
        .format(vk::Format::R32G32B32A32_UINT)
        .offset(range.start)
        .range(
            (range.end - range.start)
                .min(16 * u64::from(device.limits().max_texel_buffer_elements)),
        );
    // SAFETY: a plain object creation with a valid create-info (above).
    unsafe { device.raw().create_buffer_view(&info, None) }.map_err(failed("vkCreateBufferView"))
}
