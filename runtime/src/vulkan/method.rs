//! A [`DeviceProgram`] made ready to run on a device: its buffers, one
//! compute pipeline per shader, a descriptor set (with its views of the
//! buffers as texels) per distinct [`Bindings`] its dispatches ask for (one,
//! unless the buffers are larger than a binding shows), and one command
//! buffer per device segment, recorded once and submitted on every run (one
//! per dispatch, each timed, when the method is profiled:
//! [`DeviceMethod::profiled`]).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ash::vk;

use super::device::VulkanDevice;
use super::error::{VulkanError, failed};
use super::memory::{Buffer, HOST_SHARED, Mapping, quad_texels, upload_constants};
use super::program::{Bindings, DeviceProgram, Dispatch, Segment, buffer_bytes};

/// The descriptor bindings of set 0, as every shader declares them: the
/// arena and the constants as words, the arena as quads (storage buffers),
/// and the constants and the arena as texels of quads (uniform texel
/// buffers).
const ARENA_BINDING: u32 = 0;
const CONSTANTS_BINDING: u32 = 1;
const ARENA_QUADS_BINDING: u32 = 2;
const CONSTANT_TEXELS_BINDING: u32 = 3;
const ARENA_TEXELS_BINDING: u32 = 4;

/// A program on a device, ready to run: write inputs into [`Self::arena_mut`]
/// at their offsets, run each segment in order ([`Self::run_segment`] for
/// device segments, the host's work on [`Self::arena_mut`] for the others),
/// read outputs from [`Self::arena`].
pub struct DeviceMethod {
    /// Declared first so that it is dropped first: it waits for the device
    /// and destroys what uses the buffers before they go.
    objects: Objects,
    arena: Buffer,
    /// The arena's persistent host mapping.
    mapping: Mapping,
    /// The program's arena size (the buffer may be a little larger).
    arena_len: usize,
    constants: Buffer,
    constant_len: usize,
    dispatches: usize,
    segments: Vec<Segment>,
    /// When profiled: the time each dispatch took, summed over the runs.
    times: Option<Vec<Duration>>,
}

// SAFETY: the mapping is host memory that only this method reaches, through
// `&self` for reads and `&mut self` for writes; Vulkan handles may be used
// from any thread, and the queue and command pool they need serialized are
// locked by the device.
unsafe impl Send for DeviceMethod {}
// SAFETY: as above; `&self` only reads the mapping.
unsafe impl Sync for DeviceMethod {}

impl std::fmt::Debug for DeviceMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMethod")
            .field("device", &self.objects.device.name())
            .field("arena_bytes", &self.arena_len)
            .field("constant_bytes", &self.constant_len)
            .field("pipelines", &self.objects.pipelines.len())
            .field("dispatches", &self.dispatches)
            .finish_non_exhaustive()
    }
}

impl DeviceMethod {
    /// Checks `program` against the device's limits, then makes its arena
    /// (host-visible, mapped and zeroed), uploads its constants, builds a
    /// pipeline per shader and records the command buffer that runs it.
    pub fn new(device: Arc<VulkanDevice>, program: &DeviceProgram) -> Result<Self, VulkanError> {
        Self::make(device, program, false)
    }

    /// As [`Self::new`], but each dispatch in a command buffer of its own,
    /// submitted and waited for alone and timed on the host, so that
    /// [`Self::dispatch_times`] says how long each took (its submission
    /// included, which is what a device's timestamps would leave out, and
    /// which some devices, lavapipe among them, do not write for compute
    /// work).
    pub fn profiled(
        device: Arc<VulkanDevice>,
        program: &DeviceProgram,
    ) -> Result<Self, VulkanError> {
        Self::make(device, program, true)
    }

    fn make(
        device: Arc<VulkanDevice>,
        program: &DeviceProgram,
        profile: bool,
    ) -> Result<Self, VulkanError> {
        program.check(device.limits())?;
        let arena = Buffer::new(
            &device,
            "arena",
            buffer_bytes(program.arena_bytes),
            vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::UNIFORM_TEXEL_BUFFER,
            &[
                HOST_SHARED | vk::MemoryPropertyFlags::DEVICE_LOCAL,
                HOST_SHARED,
            ],
        )?;
        let mapping = arena.map()?;
        // SAFETY: the mapping is `mapping.len` bytes that nothing else uses.
        unsafe { mapping.start.as_ptr().write_bytes(0, mapping.len) };
        let arena_len =
            usize::try_from(program.arena_bytes).map_or(mapping.len, |len| len.min(mapping.len));
        let constants = upload_constants(
            &device,
            &program.constants,
            buffer_bytes(program.constants.len() as u64),
        )?;
        let mut objects = Objects::new(device);
        objects.build(program, &arena, &constants, profile)?;
        Ok(DeviceMethod {
            objects,
            arena,
            mapping,
            arena_len,
            constants,
            constant_len: program.constants.len(),
            dispatches: program.dispatches.len(),
            segments: program.segments.clone(),
            times: profile.then(|| vec![Duration::ZERO; program.dispatches.len()]),
        })
    }

    /// The program's segments, in the order a run goes through them.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Runs every segment of a program that has no host segments.
    pub fn run(&mut self) -> Result<(), VulkanError> {
        (0..self.segments.len()).try_for_each(|segment| self.run_segment(segment))
    }

    /// Runs device segment `segment` (an index into [`Self::segments`]) and
    /// waits until it is done: what the host wrote into the arena before is
    /// visible to its shaders (the memory is coherent, and a submission
    /// makes earlier host writes visible), and what they write is visible
    /// to the host after (the fence, after a barrier to the host at the end
    /// of the segment).
    pub fn run_segment(&mut self, segment: usize) -> Result<(), VulkanError> {
        let first = match self.segments.get(segment) {
            Some(Segment::Device(range)) => range.start,
            _ => return Err(VulkanError::NotADeviceSegment { segment }),
        };
        let objects = &mut self.objects;
        let device = &objects.device;
        if objects.in_flight {
            // The last run failed while waiting; its work must end first.
            device.wait(objects.fence)?;
            objects.in_flight = false;
        }
        for (k, &command_buffer) in objects.command_buffers[segment].iter().enumerate() {
            let start = Instant::now();
            // SAFETY: the fence is this method's and not in use (no
            // submission is in flight).
            unsafe { device.raw().reset_fences(&[objects.fence]) }
                .map_err(failed("vkResetFences"))?;
            device.submit(command_buffer, objects.fence)?;
            objects.in_flight = true;
            device.wait(objects.fence)?;
            objects.in_flight = false;
            if let Some(times) = &mut self.times {
                // Profiled: command buffer `k` is the segment's dispatch `k`.
                times[first + k] += start.elapsed();
            }
        }
        Ok(())
    }

    /// When the method is profiled: how long each dispatch took, summed
    /// over the runs so far.
    pub fn dispatch_times(&self) -> Option<&[Duration]> {
        self.times.as_deref()
    }

    /// The arena, as the last run left it: outputs are read here.
    pub fn arena(&self) -> &[u8] {
        // SAFETY: the mapping lives as long as `self.arena`, holds at least
        // `arena_len` bytes, and the device does not write it outside `run`,
        // which needs `&mut self`.
        unsafe { std::slice::from_raw_parts(self.mapping.start.as_ptr(), self.arena_len) }
    }

    /// The arena, to write inputs into before a run.
    pub fn arena_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `arena`, and `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.mapping.start.as_ptr(), self.arena_len) }
    }

    pub fn device(&self) -> &Arc<VulkanDevice> {
        &self.objects.device
    }

    pub fn arena_bytes(&self) -> usize {
        self.arena_len
    }

    pub fn constant_bytes(&self) -> usize {
        self.constant_len
    }

    /// One compute pipeline per shader of the program.
    pub fn pipelines(&self) -> usize {
        self.objects.pipelines.len()
    }

    pub fn dispatches(&self) -> usize {
        self.dispatches
    }

    /// The bytes of device memory the method holds in buffers (the arena
    /// and constants, each rounded up to whole quads; their texel views
    /// hold none of their own).
    pub fn buffer_bytes(&self) -> u64 {
        self.arena.bytes + self.constants.bytes
    }
}

/// The Vulkan objects of a method besides its buffers. Each starts null and
/// is destroyed on drop whether or not it was made, since destroying a null
/// handle does nothing: a method that fails half-way cleans up alike.
struct Objects {
    device: Arc<VulkanDevice>,
    set_layout: vk::DescriptorSetLayout,
    pipeline_layout: vk::PipelineLayout,
    pipelines: Vec<vk::Pipeline>,
    descriptor_pool: vk::DescriptorPool,
    /// The constants and the arena as texels of quads, two views for each
    /// distinct [`Bindings`].
    texel_views: Vec<vk::BufferView>,
    /// Per segment of the program: a device segment's dispatches (one
    /// command buffer, or one per dispatch when profiled), none for a host
    /// segment.
    command_buffers: Vec<Vec<vk::CommandBuffer>>,
    fence: vk::Fence,
    /// Whether a command buffer was submitted and not yet seen finished.
    in_flight: bool,
}

impl Objects {
    fn new(device: Arc<VulkanDevice>) -> Self {
        Objects {
            device,
            set_layout: vk::DescriptorSetLayout::null(),
            pipeline_layout: vk::PipelineLayout::null(),
            pipelines: Vec::new(),
            descriptor_pool: vk::DescriptorPool::null(),
            texel_views: Vec::new(),
            command_buffers: Vec::new(),
            fence: vk::Fence::null(),
            in_flight: false,
        }
    }

    fn build(
        &mut self,
        program: &DeviceProgram,
        arena: &Buffer,
        constants: &Buffer,
        profile: bool,
    ) -> Result<(), VulkanError> {
        let device = Arc::clone(&self.device);
        let raw = device.raw();
        let bindings = [
            (ARENA_BINDING, vk::DescriptorType::STORAGE_BUFFER),
            (CONSTANTS_BINDING, vk::DescriptorType::STORAGE_BUFFER),
            (ARENA_QUADS_BINDING, vk::DescriptorType::STORAGE_BUFFER),
            (
                CONSTANT_TEXELS_BINDING,
                vk::DescriptorType::UNIFORM_TEXEL_BUFFER,
            ),
            (
                ARENA_TEXELS_BINDING,
                vk::DescriptorType::UNIFORM_TEXEL_BUFFER,
            ),
        ]
        .map(|(binding, kind)| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(binding)
                .descriptor_type(kind)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        });
        let set_info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        // SAFETY (this and each creation below): a plain object creation
        // with a valid create-info whose pointers live across the call.
        self.set_layout = unsafe { raw.create_descriptor_set_layout(&set_info, None) }
            .map_err(failed("vkCreateDescriptorSetLayout"))?;
        let set_layouts = [self.set_layout];
        // One range of push constants, as long as the longest any dispatch
        // gives (`DeviceProgram::check` keeps it within the device's limit).
        let push_bytes = program
            .dispatches
            .iter()
            .map(|dispatch| 4 * dispatch.push_constants.len() as u32)
            .max()
            .unwrap_or(0);
        let push_ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(push_bytes)];
        let layout_info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&set_layouts)
            .push_constant_ranges(&push_ranges[..usize::from(push_bytes > 0)]);
        // SAFETY: see above.
        self.pipeline_layout = unsafe { raw.create_pipeline_layout(&layout_info, None) }
            .map_err(failed("vkCreatePipelineLayout"))?;
        for (shader, words) in program.shaders.iter().enumerate() {
            let pipeline = self.pipeline(words).map_err(|source| VulkanError::Shader {
                shader,
                source: Box::new(source),
            })?;
            self.pipelines.push(pipeline);
        }
        let sets = self.descriptor_sets(program, arena, constants)?;
        self.fence = device.create_fence()?;
        for segment in &program.segments {
            let mut buffers = Vec::new();
            if let Segment::Device(range) = segment {
                let parts: Vec<Range<usize>> = match profile {
                    true => range.clone().map(|k| k..k + 1).collect(),
                    false => vec![range.clone()],
                };
                for part in parts {
                    let commands = device.allocate_command_buffer()?;
                    buffers.push(commands);
                    let dispatches = &program.dispatches[part.clone()];
                    let sets = &sets[part];
                    device.record(
                        commands,
                        vk::CommandBufferUsageFlags::empty(),
                        |raw, commands| self.record(raw, commands, sets, dispatches),
                    )?;
                }
            }
            self.command_buffers.push(buffers);
        }
        Ok(())
    }

    /// A compute pipeline for one checked SPIR-V module.
    fn pipeline(&self, words: &[u32]) -> Result<vk::Pipeline, VulkanError> {
        let raw = self.device.raw();
        let module_info = vk::ShaderModuleCreateInfo::default().code(words);
        // SAFETY: the module passed `DeviceProgram::check`: a SPIR-V header,
        // well-formed instruction lengths and a `main` compute entry point.
        let module = unsafe { raw.create_shader_module(&module_info, None) }
            .map_err(failed("vkCreateShaderModule"))?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let info = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(self.pipeline_layout)];
        // SAFETY: the module and layout are live; the module is only needed
        // while the pipeline is created, so it goes right after.
        let created = unsafe {
            let created = raw.create_compute_pipelines(vk::PipelineCache::null(), &info, None);
            raw.destroy_shader_module(module, None);
            created
        };
        match created {
            Ok(pipelines) => pipelines.first().copied().ok_or(VulkanError::Call {
                call: "vkCreateComputePipelines",
                result: vk::Result::INCOMPLETE,
            }),
            Err((_, result)) => Err(failed("vkCreateComputePipelines")(result)),
        }
    }

    /// The descriptor set of each dispatch, one per distinct [`Bindings`]:
    /// the arena and the constants as words, the arena as quads, and the
    /// constants and the arena as texels of quads (`texel_views`), each of
    /// the bytes the dispatch binds.
    fn descriptor_sets(
        &mut self,
        program: &DeviceProgram,
        arena: &Buffer,
        constants: &Buffer,
    ) -> Result<Vec<vk::DescriptorSet>, VulkanError> {
        let device = Arc::clone(&self.device);
        let raw = device.raw();
        let mut distinct: HashMap<&Bindings, usize> = HashMap::new();
        let mut bindings = Vec::new();
        let numbers: Vec<usize> = program
            .dispatches
            .iter()
            .map(|dispatch| {
                *distinct.entry(&dispatch.bindings).or_insert_with(|| {
                    bindings.push(&dispatch.bindings);
                    bindings.len() - 1
                })
            })
            .collect();
        // Vulkan has no empty pools: room for one set at least, even for a
        // program of no dispatches.
        let count = bindings.len().max(1) as u32;
        let sizes = [
            vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(3 * count),
            vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::UNIFORM_TEXEL_BUFFER)
                .descriptor_count(2 * count),
        ];
        let pool_info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(count)
            .pool_sizes(&sizes);
        // SAFETY: a plain object creation with a valid create-info.
        self.descriptor_pool = unsafe { raw.create_descriptor_pool(&pool_info, None) }
            .map_err(failed("vkCreateDescriptorPool"))?;
        let set_layouts = vec![self.set_layout; bindings.len()];
        let allocation = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.descriptor_pool)
            .set_layouts(&set_layouts);
        // SAFETY: the pool has room for exactly these sets.
        let sets = match bindings.is_empty() {
            true => Vec::new(),
            false => unsafe { raw.allocate_descriptor_sets(&allocation) }
                .map_err(failed("vkAllocateDescriptorSets"))?,
        };
        if sets.len() != bindings.len() {
            return Err(VulkanError::Call {
                call: "vkAllocateDescriptorSets",
                result: vk::Result::INCOMPLETE,
            });
        }
        for (&set, bound) in sets.iter().zip(&bindings) {
            let mut views = [[vk::BufferView::null()]; 2];
            let viewed = [(constants, &bound.constants), (arena, &bound.arena)];
            for (view, (buffer, range)) in views.iter_mut().zip(viewed) {
                view[0] = quad_texels(&device, buffer, range)?;
                self.texel_views.push(view[0]);
            }
            let infos = [
                (ARENA_BINDING, arena, &bound.arena),
                (CONSTANTS_BINDING, constants, &bound.constants),
                (ARENA_QUADS_BINDING, arena, &bound.arena),
            ]
            .map(|(binding, buffer, range)| {
                (
                    binding,
                    [vk::DescriptorBufferInfo::default()
                        .buffer(buffer.handle)
                        .offset(range.start)
                        .range(range.end - range.start)],
                )
            });
            let mut writes: Vec<vk::WriteDescriptorSet> = infos
                .iter()
                .map(|(binding, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(*binding)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            for (binding, view) in [CONSTANT_TEXELS_BINDING, ARENA_TEXELS_BINDING]
                .into_iter()
                .zip(&views)
            {
                writes.push(
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(binding)
                        .descriptor_type(vk::DescriptorType::UNIFORM_TEXEL_BUFFER)
                        .texel_buffer_view(view),
                );
            }
            // SAFETY: the set, buffers and views are live, each range lies
            // within its buffer, starts aligned and is within
            // maxStorageBufferRange (checked), and the set is not in use.
            unsafe { raw.update_descriptor_sets(&writes, &[]) };
        }
        Ok(numbers.into_iter().map(|number| sets[number]).collect())
    }

    /// The commands of a device segment: its dispatches in order, each
    /// after a barrier that makes earlier shader writes (of this segment's
    /// dispatches, of earlier segments or of the last run: the barrier's
    /// first scope is everything submitted before it on the queue) visible
    /// to it, and a barrier that makes the last writes visible to the host.
    fn record(
        &self,
        raw: &ash::Device,
        commands: vk::CommandBuffer,
        sets: &[vk::DescriptorSet],
        dispatches: &[Dispatch],
    ) {
        let barrier = |dst_stage, dst_access| {
            let barrier = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(dst_access);
            // SAFETY: the command buffer is recording.
            unsafe {
                raw.cmd_pipeline_barrier(
                    commands,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    dst_stage,
                    vk::DependencyFlags::empty(),
                    &[barrier],
                    &[],
                    &[],
                );
            }
        };
        let mut bound = None;
        let mut bound_set = None;
        for (dispatch, &set) in dispatches.iter().zip(sets) {
            barrier(
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
            );
            let [x, y, z] = dispatch.workgroups;
            // SAFETY: the command buffer is recording; the shader index,
            // workgroup counts and push constants' length (within the
            // layout's range) passed `DeviceProgram::check`; the set matches
            // the layout every pipeline was made with.
            unsafe {
                if bound_set != Some(set) {
                    raw.cmd_bind_descriptor_sets(
                        commands,
                        vk::PipelineBindPoint::COMPUTE,
                        self.pipeline_layout,
                        0,
                        &[set],
                        &[],
                    );
                    bound_set = Some(set);
                }
                if bound != Some(dispatch.shader) {
                    let pipeline = self.pipelines[dispatch.shader];
                    raw.cmd_bind_pipeline(commands, vk::PipelineBindPoint::COMPUTE, pipeline);
                    bound = Some(dispatch.shader);
                }
                if !dispatch.push_constants.is_empty() {
                    let bytes: Vec<u8> = dispatch
                        .push_constants
                        .iter()
                        .flat_map(|word| word.to_ne_bytes())
                        .collect();
                    raw.cmd_push_constants(
                        commands,
                        self.pipeline_layout,
                        vk::ShaderStageFlags::COMPUTE,
                        0,
                        &bytes,
                    );
                }
                raw.cmd_dispatch(commands, x, y, z);
            }
        }
        barrier(vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ);
    }
}

impl Drop for Objects {
    fn drop(&mut self) {
        let device = &self.device;
        if self.in_flight {
            // Nothing may be destroyed while the device runs it. A lost
            // device counts as finished, so the error changes nothing here.
            let _ = device.wait(self.fence);
        }
        let raw = device.raw();
        // SAFETY: the device runs none of these objects any more (above),
        // each is this device's or null, and users go before what they use.
        unsafe {
            for &commands in self.command_buffers.iter().flatten() {
                device.free_command_buffer(commands);
            }
            raw.destroy_fence(self.fence, None);
            raw.destroy_descriptor_pool(self.descriptor_pool, None);
            for &view in &self.texel_views {
                raw.destroy_buffer_view(view, None);
            }
            for &pipeline in &self.pipelines {
                raw.destroy_pipeline(pipeline, None);
            }
            raw.destroy_pipeline_layout(self.pipeline_layout, None);
            raw.destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}
