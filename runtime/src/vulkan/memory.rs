//! Buffers and their memory: a buffer bound to memory of a type chosen by
//! preference, host mappings, and the one-time upload of constants into
//! device-local memory.

use std::ptr::NonNull;
use std::sync::Arc;

use ash::vk;

use super::device::VulkanDevice;
use super::error::{VulkanError, failed};
use super::program::{TEXEL_ROW, texel_rows};

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

/// A device-local storage buffer of `bytes` holding `data`, then zeroes.
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
        vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST,
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

/// The constants again as a 2D image of `R32G32B32A32_UINT` texels, one
/// quad of words each, [`TEXEL_ROW`] to a row ([`texel_rows`] of them):
/// shaders read quads of constants through it, which devices fetch for all
/// lanes at once where they load storage buffers lane by lane (lavapipe
/// does).
pub(crate) struct ConstantTexels {
    device: Arc<VulkanDevice>,
    image: vk::Image,
    memory: vk::DeviceMemory,
    /// The bytes of memory the image holds.
    pub(crate) bytes: u64,
    pub(crate) view: vk::ImageView,
}

impl ConstantTexels {
    /// Uploads `data` into a new image, through a staging buffer.
    pub(crate) fn new(device: &Arc<VulkanDevice>, data: &[u8]) -> Result<Self, VulkanError> {
        let raw = device.raw();
        let rows = texel_rows(data.len() as u64);
        let extent = vk::Extent3D {
            width: TEXEL_ROW as u32,
            height: u32::try_from(rows).unwrap_or(u32::MAX),
            depth: 1,
        };
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(vk::Format::R32G32B32A32_UINT)
            .extent(extent)
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        // SAFETY: a plain object creation with a valid create-info (the
        // program's check keeps the rows within maxImageDimension2D).
        let image = unsafe { raw.create_image(&info, None) }.map_err(failed("vkCreateImage"))?;
        // From here on, dropping `texels` destroys what was made.
        let mut texels = ConstantTexels {
            device: Arc::clone(device),
            image,
            memory: vk::DeviceMemory::null(),
            bytes: 0,
            view: vk::ImageView::null(),
        };
        // SAFETY: `image` is a live image of this device.
        let requirements = unsafe { raw.get_image_memory_requirements(image) };
        let local = vk::MemoryPropertyFlags::DEVICE_LOCAL;
        let (type_index, _) = [local, vk::MemoryPropertyFlags::empty()]
            .iter()
            .find_map(|&wanted| device.memory_type(requirements.memory_type_bits, wanted))
            .ok_or(VulkanError::NoMemoryType {
                buffer: "constant texels",
                wanted: local,
            })?;
        let allocation = vk::MemoryAllocateInfo::default()
            .allocation_size(requirements.size)
            .memory_type_index(type_index);
        // SAFETY: the size and type come from the image's requirements.
        texels.memory = unsafe { raw.allocate_memory(&allocation, None) }
            .map_err(failed("vkAllocateMemory"))?;
        texels.bytes = requirements.size;
        // SAFETY: the memory is fresh, large enough and of an allowed type.
        unsafe { raw.bind_image_memory(image, texels.memory, 0) }
            .map_err(failed("vkBindImageMemory"))?;
        let whole = vk::ImageSubresourceRange::default()
            .aspect_mask(vk::ImageAspectFlags::COLOR)
            .level_count(1)
            .layer_count(1);
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(vk::Format::R32G32B32A32_UINT)
            .subresource_range(whole);
        // SAFETY: the image is live and bound to memory.
        texels.view = unsafe { raw.create_image_view(&view_info, None) }
            .map_err(failed("vkCreateImageView"))?;
        let staging = Buffer::new(
            device,
            "constant texel staging",
            rows * TEXEL_ROW * 16,
            vk::BufferUsageFlags::TRANSFER_SRC,
            &[HOST_SHARED],
        )?;
        staging.write(data)?;
        let transition = |from, to, src_access, dst_access| {
            vk::ImageMemoryBarrier::default()
                .old_layout(from)
                .new_layout(to)
                .src_access_mask(src_access)
                .dst_access_mask(dst_access)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .image(image)
                .subresource_range(whole)
        };
        device.run_once(|raw, commands| {
            let region = vk::BufferImageCopy::default()
                .image_subresource(
                    vk::ImageSubresourceLayers::default()
                        .aspect_mask(vk::ImageAspectFlags::COLOR)
                        .layer_count(1),
                )
                .image_extent(extent);
            let to_transfer = transition(
                vk::ImageLayout::UNDEFINED,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                vk::AccessFlags::empty(),
                vk::AccessFlags::TRANSFER_WRITE,
            );
            let to_shaders = transition(
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                vk::AccessFlags::TRANSFER_WRITE,
                vk::AccessFlags::SHADER_READ,
            );
            // SAFETY: the image and the staging buffer are live, the buffer
            // holds every texel of the image, and the command buffer is
            // recording. The last barrier makes the copy visible to the
            // shaders of every later submission to the queue, in the layout
            // they read the image in.
            unsafe {
                raw.cmd_pipeline_barrier(
                    commands,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &[to_transfer],
                );
                raw.cmd_copy_buffer_to_image(
                    commands,
                    staging.handle,
                    image,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &[region],
                );
                raw.cmd_pipeline_barrier(
                    commands,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &[to_shaders],
                );
            }
        })?;
        Ok(texels)
    }
}

impl Drop for ConstantTexels {
    fn drop(&mut self) {
        // SAFETY: the device no longer uses the image (whoever submitted
        // work on it waited for it); null handles are allowed.
        unsafe {
            let raw = self.device.raw();
            raw.destroy_image_view(self.view, None);
            raw.destroy_image(self.image, None);
            raw.free_memory(self.memory, None);
        }
    }
}
