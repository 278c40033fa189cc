//! What a device offers the kernels' selection rules: one model of it for
//! the FFT lowering, the fused kernel's tiles and the contraction's grid.

use cubecl::prelude::*;

/// Multiprocessors of the GPUs the rules were tuned on (H100, H200), assumed
/// where a device does not say how many it has.
const LARGE_GPU_MULTIPROCESSORS: usize = 132;

/// What a device offers: its limits, as `ComputeClient::properties` gives
/// them (tests build them by hand, e.g. [`DeviceLimits::H100`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Shared memory one cube may take, in bytes.
    pub shared_memory: usize,
    /// Threads one cube may hold.
    pub cube_threads: usize,
    /// Whether the device copies global to shared memory asynchronously.
    pub async_copies: bool,
    /// Streaming multiprocessors, where the device says.
    pub multiprocessors: Option<usize>,
    /// Whether the device multiplies f16 and bf16 tiles of `16×8×16` into f32
    /// on tensor cores (CUDA on Ampere and later).
    pub half_mma: bool,
}

impl DeviceLimits {
    /// An NVIDIA H100 SXM under CUDA, where the planner's rules were tuned.
    pub const H100: DeviceLimits = DeviceLimits {
        shared_memory: 227 * 1024,
        cube_threads: 1024,
        async_copies: true,
        multiprocessors: Some(132),
        half_mma: true,
    };

    /// Mesa's lavapipe (Vulkan on the CPU) through wgpu, where CI runs the kernels.
    pub const LAVAPIPE: DeviceLimits = DeviceLimits {
        shared_memory: 32 * 1024,
        cube_threads: 1024,
        async_copies: false,
        multiprocessors: None,
        half_mma: false,
    };

    /// What every backend we target gives a cube, and nothing more assumed.
    pub const PORTABLE: DeviceLimits = DeviceLimits {
        shared_memory: 48 * 1024,
        cube_threads: 1024,
        async_copies: false,
        multiprocessors: None,
        half_mma: false,
    };

    pub fn of<R: Runtime>(client: &ComputeClient<R>) -> Self {
        let props = client.properties();
        DeviceLimits {
            shared_memory: props.hardware.max_shared_memory_size,
            cube_threads: props.hardware.max_units_per_cube as usize,
            async_copies: props.features.copy_async,
            multiprocessors: props.hardware.num_streaming_multiprocessors.map(|n| n as usize),
            half_mma: crate::fft::algorithm::tensor_core::half_mma_supported(client),
        }
    }

    /// Cubes a grid wants in flight for the device to be busy: one per
    /// multiprocessor, or a large GPU's count where the device does not say.
    pub fn cubes_in_flight(&self) -> usize {
        self.multiprocessors.unwrap_or(LARGE_GPU_MULTIPROCESSORS)
    }
}
