//! One Vulkan device opened for compute: the loader, an instance, the chosen
//! physical device, a logical device with one compute queue, and a command
//! pool. Methods share it through an `Arc`; the queue and the pool, which
//! Vulkan wants used by one thread at a time, are behind locks.

use std::ffi::CStr;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use ash::vk;

use super::error::{VulkanError, failed};
use super::program::DeviceLimits;

/// The environment variable that picks a device: its index among the
/// devices the loader lists, or part of its name.
const DEVICE_VARIABLE: &str = "PTEC_VULKAN_DEVICE";

/// A Vulkan version, as a device or the loader reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl ApiVersion {
    const V1_1: ApiVersion = ApiVersion {
        major: 1,
        minor: 1,
        patch: 0,
    };

    fn from_vk(version: u32) -> Self {
        ApiVersion {
            major: vk::api_version_major(version),
            minor: vk::api_version_minor(version),
            patch: vk::api_version_patch(version),
        }
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// What kind of device a physical device is, in the order ptec prefers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceType {
    Discrete,
    Integrated,
    Virtual,
    Cpu,
    Other,
}

impl DeviceType {
    fn from_vk(device_type: vk::PhysicalDeviceType) -> Self {
        match device_type {
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceType::Discrete,
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceType::Integrated,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::Virtual,
            vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
            _ => DeviceType::Other,
        }
    }
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceType::Discrete => "discrete GPU",
            DeviceType::Integrated => "integrated GPU",
            DeviceType::Virtual => "virtual GPU",
            DeviceType::Cpu => "CPU",
            DeviceType::Other => "other device",
        })
    }
}

/// A Vulkan device ready to run compute shaders.
pub struct VulkanDevice {
    /// Keeps the loader library loaded while its functions are in use.
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    queue: Mutex<vk::Queue>,
    command_pool: Mutex<vk::CommandPool>,
    memory: vk::PhysicalDeviceMemoryProperties,
    limits: DeviceLimits,
    name: String,
    device_type: DeviceType,
    api_version: ApiVersion,
}

impl fmt::Debug for VulkanDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VulkanDevice")
            .field("name", &self.name)
            .field("device_type", &self.device_type)
            .field("api_version", &self.api_version)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl VulkanDevice {
    /// Opens the device `PTEC_VULKAN_DEVICE` names (an index among the
    /// devices the loader lists, or part of a name), or else the most capable
    /// one: discrete, then integrated, virtual and CPU devices. A device must
    /// offer Vulkan 1.1, a compute queue and VK_KHR_shader_float_controls
    /// with NaN, infinities and signed zeros kept in 32-bit floats.
    pub fn open() -> Result<Self, VulkanError> {
        let choice = DeviceChoice::from_env();
        // SAFETY: this loads the system's Vulkan loader, a library meant to be
        // loaded at run time; its initialisers have no preconditions.
        let entry = unsafe { ash::Entry::load() }.map_err(VulkanError::NoLoader)?;
        // SAFETY: a global command of a loaded entry, with no arguments.
        let version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(failed("vkEnumerateInstanceVersion"))?
            .map_or(
                ApiVersion::from_vk(vk::API_VERSION_1_0),
                ApiVersion::from_vk,
            );
        if version < ApiVersion::V1_1 {
            return Err(VulkanError::LoaderTooOld { version });
        }
        let application = vk::ApplicationInfo::default()
            .application_name(c"ptec")
            .api_version(vk::API_VERSION_1_1);
        let info = vk::InstanceCreateInfo::default().application_info(&application);
        // SAFETY: `info` and what it points to live across the call.
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(|result| {
            if result == vk::Result::ERROR_INCOMPATIBLE_DRIVER {
                // The loader says so when it has no driver (ICD) at all.
                VulkanError::NoDevice {
                    devices: "the loader found no Vulkan driver".to_owned(),
                }
            } else {
                failed("vkCreateInstance")(result)
            }
        })?;
        match Opened::on(&instance, &choice) {
            Ok(opened) => Ok(VulkanDevice {
                _entry: entry,
                instance,
                device: opened.device,
                queue: Mutex::new(opened.queue),
                command_pool: Mutex::new(opened.command_pool),
                memory: opened.memory,
                limits: opened.limits,
                name: opened.candidate.name,
                device_type: opened.candidate.device_type,
                api_version: opened.candidate.api_version,
            }),
            Err(error) => {
                // SAFETY: `Opened::on` destroyed whatever it made from the
                // instance before failing, so nothing uses it any more.
                unsafe { instance.destroy_instance(None) };
                Err(error)
            }
        }
    }

    /// The device's name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn device_type(&self) -> DeviceType {
        self.device_type
    }

    /// The Vulkan version the device offers.
    pub fn api_version(&self) -> ApiVersion {
        self.api_version
    }

    /// The limits a program must keep to on this device.
    pub fn limits(&self) -> &DeviceLimits {
        &self.limits
    }

    pub(crate) fn raw(&self) -> &ash::Device {
        &self.device
    }

    /// The first memory type among `allowed` (a bit per type index) that has
    /// every property of `wanted`, with all the properties it has.
    pub(crate) fn memory_type(
        &self,
        allowed: u32,
        wanted: vk::MemoryPropertyFlags,
    ) -> Option<(u32, vk::MemoryPropertyFlags)> {
        let count = self.memory.memory_type_count as usize;
        let types = self.memory.memory_types.iter().take(count);
        (0u32..)
            .zip(types)
            .find(|(index, memory_type)| {
                allowed & (1 << index) != 0 && memory_type.property_flags.contains(wanted)
            })
            .map(|(index, memory_type)| (index, memory_type.property_flags))
    }

    pub(crate) fn allocate_command_buffer(&self) -> Result<vk::CommandBuffer, VulkanError> {
        let pool = lock(&self.command_pool);
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(*pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is this device's and locked for the call.
        let buffers = unsafe { self.device.allocate_command_buffers(&info) }
            .map_err(failed("vkAllocateCommandBuffers"))?;
        buffers.first().copied().ok_or(VulkanError::Call {
            call: "vkAllocateCommandBuffers",
            result: vk::Result::INCOMPLETE,
        })
    }

    /// Records `commands` into `buffer`, holding the pool's lock throughout
    /// as Vulkan requires.
    pub(crate) fn record(
        &self,
        buffer: vk::CommandBuffer,
        usage: vk::CommandBufferUsageFlags,
        commands: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Result<(), VulkanError> {
        let _pool = lock(&self.command_pool);
        let begin = vk::CommandBufferBeginInfo::default().flags(usage);
        // SAFETY: `buffer` came from this device's pool, which is locked, and
        // is in the initial state (freshly allocated, never recorded).
        unsafe { self.device.begin_command_buffer(buffer, &begin) }
            .map_err(failed("vkBeginCommandBuffer"))?;
        commands(&self.device, buffer);
        // SAFETY: as above; the buffer is recording.
        unsafe { self.device.end_command_buffer(buffer) }.map_err(failed("vkEndCommandBuffer"))
    }

    /// Frees a command buffer of this device's pool.
    ///
    /// # Safety
    /// `buffer` came from [`Self::allocate_command_buffer`] (or is null) and
    /// the device no longer executes it.
    pub(crate) unsafe fn free_command_buffer(&self, buffer: vk::CommandBuffer) {
        let pool = lock(&self.command_pool);
        // SAFETY: the caller's promise, and the pool is locked.
        unsafe { self.device.free_command_buffers(*pool, &[buffer]) };
    }

    pub(crate) fn create_fence(&self) -> Result<vk::Fence, VulkanError> {
        // SAFETY: a plain object creation with a valid create-info.
        unsafe {
            self.device
                .create_fence(&vk::FenceCreateInfo::default(), None)
        }
        .map_err(failed("vkCreateFence"))
    }

    /// Submits a recorded command buffer, to signal `fence` when it is done.
    pub(crate) fn submit(
        &self,
        buffer: vk::CommandBuffer,
        fence: vk::Fence,
    ) -> Result<(), VulkanError> {
        let queue = lock(&self.queue);
        let buffers = [buffer];
        let submit = vk::SubmitInfo::default().command_buffers(&buffers);
        // SAFETY: the queue is locked; `buffer` is executable and not pending
        // (callers wait for each submission before the next); `fence` is
        // unsignaled and not in use.
        unsafe { self.device.queue_submit(*queue, &[submit], fence) }
            .map_err(failed("vkQueueSubmit"))
    }

    /// Waits until `fence` is signaled.
    pub(crate) fn wait(&self, fence: vk::Fence) -> Result<(), VulkanError> {
        // SAFETY: `fence` is this device's.
        unsafe { self.device.wait_for_fences(&[fence], true, u64::MAX) }
            .map_err(failed("vkWaitForFences"))
    }

    /// Records `commands` into a new command buffer, runs it and waits for
    /// it: for work done once, such as uploading constants.
    pub(crate) fn run_once(
        &self,
        commands: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Result<(), VulkanError> {
        let buffer = self.allocate_command_buffer()?;
        let result = self.create_fence().and_then(|fence| {
            let ran = self
                .record(
                    buffer,
                    vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT,
                    commands,
                )
                .and_then(|()| self.submit(buffer, fence))
                .and_then(|()| self.wait(fence));
            // SAFETY: the submission, if any, has finished (or the device is
            // lost, after which objects may still be destroyed).
            unsafe { self.device.destroy_fence(fence, None) };
            ran
        });
        // SAFETY: as above.
        unsafe { self.free_command_buffer(buffer) };
        result
    }
}

impl Drop for VulkanDevice {
    fn drop(&mut self) {
        // SAFETY: every method holds an `Arc` of this device, so none is left
        // and nothing made from the device exists but the pool; children go
        // before parents.
        unsafe {
            // A lost device cannot be waited for; it is destroyed all the same.
            let _ = self.device.device_wait_idle();
            self.device
                .destroy_command_pool(*lock(&self.command_pool), None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// Locks a handle whose use Vulkan wants serialized. A panic while it was
/// held leaves the handle as valid as before, so poisoning is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What was made from an instance for the chosen physical device.
struct Opened {
    candidate: Candidate,
    limits: DeviceLimits,
    memory: vk::PhysicalDeviceMemoryProperties,
    device: ash::Device,
    queue: vk::Queue,
    command_pool: vk::CommandPool,
}

impl Opened {
    /// Picks a physical device and creates the logical device, its queue and
    /// command pool; on failure, destroys what it made.
    fn on(instance: &ash::Instance, choice: &DeviceChoice) -> Result<Opened, VulkanError> {
        // SAFETY: `instance` is live.
        let physicals = unsafe { instance.enumerate_physical_devices() }
            .map_err(failed("vkEnumeratePhysicalDevices"))?;
        let candidates: Vec<Candidate> = physicals
            .iter()
            .map(|&physical| Candidate::describe(instance, physical))
            .collect();
        let (index, family) = choose(&candidates, choice)?;
        let physical = physicals[index];
        let limits = query_limits(instance, physical);
        // SAFETY: `physical` was enumerated from `instance`.
        let memory = unsafe { instance.get_physical_device_memory_properties(physical) };
        let priorities = [1.0];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&priorities)];
        let extensions = [FLOAT_CONTROLS.as_ptr()];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&extensions);
        // SAFETY: `info` and what it points to live across the call; the
        // queue family exists on `physical`.
        let device = unsafe { instance.create_device(physical, &info, None) }
            .map_err(failed("vkCreateDevice"))?;
        // SAFETY: queue 0 of `family` was requested above.
        let queue = unsafe { device.get_device_queue(family, 0) };
        let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(family);
        // SAFETY: a plain object creation with a valid create-info.
        let command_pool = match unsafe { device.create_command_pool(&pool_info, None) } {
            Ok(pool) => pool,
            Err(result) => {
                // SAFETY: nothing was made from the device.
                unsafe { device.destroy_device(None) };
                return Err(failed("vkCreateCommandPool")(result));
            }
        };
        Ok(Opened {
            candidate: candidates[index].clone(),
            limits,
            memory,
            device,
            queue,
            command_pool,
        })
    }
}

/// The device extension that lets a shader declare how it treats NaN,
/// infinities and signed zeros; every module ptec writes does.
const FLOAT_CONTROLS: &CStr = c"VK_KHR_shader_float_controls";

/// Whether a device that offers Vulkan 1.1 has [`FLOAT_CONTROLS`] and
/// keeps NaN, infinities and signed zeros in 32-bit floats when asked.
fn keeps_float_specials(instance: &ash::Instance, physical: vk::PhysicalDevice) -> bool {
    // SAFETY: `physical` was enumerated from `instance`.
    let extensions = unsafe { instance.enumerate_device_extension_properties(physical) };
    let offered = extensions.is_ok_and(|extensions| {
        extensions
            .iter()
            .any(|extension| extension.extension_name_as_c_str() == Ok(FLOAT_CONTROLS))
    });
    if !offered {
        return false;
    }
    let mut controls = vk::PhysicalDeviceFloatControlsProperties::default();
    let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut controls);
    // SAFETY: the device offers Vulkan 1.1 (properties2 is core) and the
    // extension whose structure is chained.
    unsafe { instance.get_physical_device_properties2(physical, &mut properties) };
    controls.shader_signed_zero_inf_nan_preserve_float32 == vk::TRUE
}

/// The limits of a device that offers Vulkan 1.1.
fn query_limits(instance: &ash::Instance, physical: vk::PhysicalDevice) -> DeviceLimits {
    let mut maintenance = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut maintenance);
    // SAFETY: `physical` offers Vulkan 1.1, where both structures are core.
    unsafe { instance.get_physical_device_properties2(physical, &mut properties) };
    let limits = properties.properties.limits;
    DeviceLimits {
        max_workgroup_count: limits.max_compute_work_group_count,
        max_workgroup_size: limits.max_compute_work_group_size,
        max_workgroup_invocations: limits.max_compute_work_group_invocations,
        max_storage_buffer_range: limits.max_storage_buffer_range,
        max_allocation_bytes: maintenance.max_memory_allocation_size,
        max_texel_buffer_elements: limits.max_texel_buffer_elements,
        max_push_constant_bytes: limits.max_push_constants_size,
        binding_alignment: limits
            .min_storage_buffer_offset_alignment
            .max(limits.min_texel_buffer_offset_alignment),
    }
}

/// Which device the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DeviceChoice {
    Best,
    Index(usize),
    Name(String),
}

impl DeviceChoice {
    fn from_env() -> Self {
        match std::env::var_os(DEVICE_VARIABLE) {
            Some(value) if !value.is_empty() => Self::parse(&value.to_string_lossy()),
            _ => DeviceChoice::Best,
        }
    }

    fn parse(value: &str) -> Self {
        value.trim().parse().map_or_else(
            |_| DeviceChoice::Name(value.to_owned()),
            DeviceChoice::Index,
        )
    }
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceChoice::Best => f.write_str("(any)"),
            DeviceChoice::Index(index) => write!(f, "{index}"),
            DeviceChoice::Name(name) => f.write_str(name),
        }
    }
}

/// A physical device as the choice sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Candidate {
    name: String,
    device_type: DeviceType,
    api_version: ApiVersion,
    /// The first queue family with compute queues.
    compute_family: Option<u32>,
    /// Whether shaders may declare that 32-bit floats keep NaN, infinities
    /// and signed zeros (`SignedZeroInfNanPreserve`, which every module ptec
    /// writes declares): the device offers VK_KHR_shader_float_controls
    /// and its `shaderSignedZeroInfNanPreserveFloat32`.
    keeps_float_specials: bool,
}

impl Candidate {
    fn describe(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Self {
        // SAFETY: `physical` was enumerated from `instance`.
        let properties = unsafe { instance.get_physical_device_properties(physical) };
        // SAFETY: as above.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let api_version = ApiVersion::from_vk(properties.api_version);
        Candidate {
            name: properties.device_name_as_c_str().map_or_else(
                |_| "(unnamed device)".to_owned(),
                |name| name.to_string_lossy().into_owned(),
            ),
            device_type: DeviceType::from_vk(properties.device_type),
            api_version,
            keeps_float_specials: api_version >= ApiVersion::V1_1
                && keeps_float_specials(instance, physical),
            compute_family: (0u32..).zip(&families).find_map(|(index, family)| {
                (family.queue_count > 0 && family.queue_flags.contains(vk::QueueFlags::COMPUTE))
                    .then_some(index)
            }),
        }
    }

    /// Why ptec cannot use the device, if it cannot; else its compute family.
    fn suitability(&self) -> Result<u32, String> {
        if self.api_version < ApiVersion::V1_1 {
            return Err(format!("offers Vulkan {} only", self.api_version));
        }
        if !self.keeps_float_specials {
            return Err(format!(
                "does not keep NaN, infinities and signed zeros in 32-bit floats \
                 ({} with shaderSignedZeroInfNanPreserveFloat32)",
                FLOAT_CONTROLS.to_string_lossy()
            ));
        }
        self.compute_family
            .ok_or_else(|| "has no compute queue".to_owned())
    }
}

/// The index of the device `choice` picks among `candidates`, and its
/// compute queue family.
fn choose(candidates: &[Candidate], choice: &DeviceChoice) -> Result<(usize, u32), VulkanError> {
    let listing = || {
        if candidates.is_empty() {
            return "there are none".to_owned();
        }
        let described: Vec<String> = candidates
            .iter()
            .enumerate()
            .map(|(index, candidate)| {
                let verdict = match candidate.suitability() {
                    Ok(_) => String::new(),
                    Err(reason) => format!(", {reason}"),
                };
                format!(
                    "{index}: {} ({}{verdict})",
                    candidate.name, candidate.device_type
                )
            })
            .collect();
        described.join("; ")
    };
    let named = |index: usize| -> Result<(usize, u32), VulkanError> {
        let candidate = &candidates[index];
        candidate
            .suitability()
            .map(|family| (index, family))
            .map_err(|reason| VulkanError::DeviceUnsuitable {
                wanted: choice.to_string(),
                name: candidate.name.clone(),
                reason,
            })
    };
    let not_found = || VulkanError::DeviceNotFound {
        wanted: choice.to_string(),
        devices: listing(),
    };
    match choice {
        DeviceChoice::Index(index) if *index < candidates.len() => named(*index),
        DeviceChoice::Index(_) => Err(not_found()),
        DeviceChoice::Name(part) => {
            let part = part.to_lowercase();
            let matching: Vec<usize> = (0..candidates.len())
                .filter(|&index| candidates[index].name.to_lowercase().contains(&part))
                .collect();
            let usable = matching
                .iter()
                .find(|&&index| candidates[index].suitability().is_ok());
            match (usable, matching.first()) {
                (Some(&index), _) | (None, Some(&index)) => named(index),
                (None, None) => Err(not_found()),
            }
        }
        DeviceChoice::Best => candidates
            .iter()
            .enumerate()
            .filter_map(|(index, candidate)| {
                let family = candidate.suitability().ok()?;
                Some((candidate.device_type, index, family))
            })
            .min()
            .map(|(_, index, family)| (index, family))
            .ok_or_else(|| VulkanError::NoDevice { devices: listing() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(name: &str, device_type: DeviceType, minor: u32, compute: bool) -> Candidate {
        Candidate {
            name: name.to_owned(),
            device_type,
            api_version: ApiVersion {
                major: 1,
                minor,
                patch: 0,
            },
            compute_family: compute.then_some(2),
            keeps_float_specials: true,
        }
    }

    fn devices() -> Vec<Candidate> {
        vec![
            candidate("llvmpipe", DeviceType::Cpu, 3, true),
            candidate("Old GPU", DeviceType::Discrete, 0, true),
            candidate("Laptop GPU", DeviceType::Integrated, 2, true),
            candidate("Display only", DeviceType::Discrete, 3, false),
        ]
    }

    #[test]
    fn prefers_the_most_capable_usable_device() {
        assert_eq!(choose(&devices(), &DeviceChoice::Best).ok(), Some((2, 2)));
        assert_eq!(
            choose(&devices()[..1], &DeviceChoice::Best).ok(),
            Some((0, 2))
        );
        let error = choose(&devices()[1..2], &DeviceChoice::Best);
        assert!(
            matches!(&error, Err(VulkanError::NoDevice { devices })
                if devices == "0: Old GPU (discrete GPU, offers Vulkan 1.0.0 only)"),
            "{error:?}"
        );
        assert!(matches!(
            choose(&[], &DeviceChoice::Best),
            Err(VulkanError::NoDevice { .. })
        ));
    }

    #[test]
    fn a_device_that_may_drop_nan_is_not_used() {
        let mut loose = candidate("Fast-math GPU", DeviceType::Discrete, 3, true);
        loose.keeps_float_specials = false;
        let devices = [loose, candidate("llvmpipe", DeviceType::Cpu, 3, true)];
        assert_eq!(choose(&devices, &DeviceChoice::Best).ok(), Some((1, 2)));
        let error = choose(&devices, &DeviceChoice::Index(0));
        assert!(
            matches!(&error, Err(VulkanError::DeviceUnsuitable { reason, .. })
                if reason.contains("shaderSignedZeroInfNanPreserveFloat32")),
            "{error:?}"
        );
    }

    #[test]
    fn the_environment_picks_by_index_or_name() {
        assert_eq!(DeviceChoice::parse("0"), DeviceChoice::Index(0));
        assert_eq!(
            DeviceChoice::parse("pipe"),
            DeviceChoice::Name("pipe".into())
        );
        assert_eq!(
            choose(&devices(), &DeviceChoice::Index(0)).ok(),
            Some((0, 2))
        );
        assert_eq!(
            choose(&devices(), &DeviceChoice::parse("LAPTOP")).ok(),
            Some((2, 2))
        );
        assert!(matches!(
            choose(&devices(), &DeviceChoice::Index(4)),
            Err(VulkanError::DeviceNotFound { .. })
        ));
        assert!(matches!(
            choose(&devices(), &DeviceChoice::parse("nvidia")),
            Err(VulkanError::DeviceNotFound { .. })
        ));
        let error = choose(&devices(), &DeviceChoice::Index(3));
        assert!(
            matches!(&error, Err(VulkanError::DeviceUnsuitable { reason, .. })
                if reason == "has no compute queue"),
            "{error:?}"
        );
    }
}
