//! Choosing the device the kernels run on.
//!
//! `auto` prefers CUDA, then a Vulkan/Metal/DX12 adapter that is a real GPU,
//! then the native CPU path. A software adapter such as Mesa's lavapipe runs the
//! kernels correctly but is no GPU, so `auto` never picks it; ask for `wgpu`
//! explicitly to use it (the tests do).

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BackendChoice {
    /// CUDA, then a wgpu adapter that is a real GPU, then the CPU.
    Auto,
    /// An NVIDIA GPU through CUDA.
    Cuda,
    /// Vulkan/Metal/DX12, software adapters (lavapipe) included.
    Wgpu,
    /// The CPU's threads.
    Cpu,
}

/// A resolved backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Cuda,
    Wgpu,
    /// The CPU's threads.
    Cpu,
}

impl FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "cuda" => Ok(BackendChoice::Cuda),
            "wgpu" => Ok(BackendChoice::Wgpu),
            "cpu" => Ok(BackendChoice::Cpu),
            other => Err(format!("unknown backend '{other}' (expected auto, cuda, wgpu or cpu)")),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Cuda => "cuda",
            Backend::Wgpu => "wgpu",
            Backend::Cpu => "cpu",
        })
    }
}

/// True when the CUDA driver and NVRTC load and at least one device answers.
pub fn cuda_available() -> bool {
    #[cfg(feature = "cuda")]
    {
        use cudarc::driver::result;
        // Linked at build time (`cuda-linked`), the libraries are there if the
        // program started; loaded at run time, they may not be.
        #[cfg(feature = "cuda-linked")]
        let loaded = true;
        // SAFETY: these only try to dlopen the libraries.
        #[cfg(not(feature = "cuda-linked"))]
        let loaded = unsafe { cudarc::driver::sys::is_culib_present() && cudarc::nvrtc::sys::is_culib_present() };
        loaded && result::init().is_ok() && result::device::get_count().map(|n| n > 0).unwrap_or(false)
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

/// True when NCCL loads: CubeCL moves tensors between CUDA devices through
/// it (data-parallel training on several GPUs).
pub fn nccl_available() -> bool {
    #[cfg(feature = "cuda")]
    {
        #[cfg(feature = "cuda-linked")]
        {
            true
        }
        // SAFETY: this only tries to dlopen the library.
        #[cfg(not(feature = "cuda-linked"))]
        unsafe {
            cudarc::nccl::sys::is_culib_present()
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

/// Kinds of the wgpu adapters present (e.g. `DiscreteGpu`, `Cpu`).
#[cfg(feature = "wgpu")]
pub fn wgpu_adapter_kinds() -> Vec<wgpu::DeviceType> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::all(),
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    cubecl::future::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
        .iter()
        .map(|a| a.get_info().device_type)
        .collect()
}

/// True when wgpu sees an adapter that is a GPU (not a software rasteriser).
pub fn wgpu_gpu_available() -> bool {
    #[cfg(feature = "wgpu")]
    {
        wgpu_adapter_kinds().iter().any(|t| {
            matches!(
                t,
                wgpu::DeviceType::DiscreteGpu | wgpu::DeviceType::IntegratedGpu | wgpu::DeviceType::VirtualGpu
            )
        })
    }
    #[cfg(not(feature = "wgpu"))]
    {
        false
    }
}

/// True when wgpu sees any adapter at all (a software one included).
pub fn wgpu_any_available() -> bool {
    #[cfg(feature = "wgpu")]
    {
        !wgpu_adapter_kinds().is_empty()
    }
    #[cfg(not(feature = "wgpu"))]
    {
        false
    }
}

impl BackendChoice {
    /// Resolves the choice against what this machine has, with a clear error
    /// when an explicit backend is missing.
    pub fn resolve(self) -> Result<Backend, String> {
        match self {
            BackendChoice::Cpu => Ok(Backend::Cpu),
            BackendChoice::Cuda => {
                if !cfg!(feature = "cuda") {
                    Err("this build has no CUDA support (build with --features cuda)".into())
                } else if cuda_available() {
                    Ok(Backend::Cuda)
                } else {
                    Err("no CUDA device found (driver library, NVRTC or device missing)".into())
                }
            }
            BackendChoice::Wgpu => {
                if !cfg!(feature = "wgpu") {
                    Err("this build has no wgpu support (build with --features wgpu)".into())
                } else if wgpu_any_available() {
                    Ok(Backend::Wgpu)
                } else {
                    Err("no wgpu adapter found (install a Vulkan driver, e.g. mesa-vulkan-drivers)".into())
                }
            }
            BackendChoice::Auto => Ok(if cuda_available() {
                Backend::Cuda
            } else if wgpu_gpu_available() {
                Backend::Wgpu
            } else {
                Backend::Cpu
            }),
        }
    }
}
