//! Replays a recorder's log on a real CUDA stream: each kernel compiled once
//! with NVRTC as cubecl-cuda compiles it, pages backed by foreign buffers or
//! memory of the stream's own, uploads and launches enqueued in log order.
//! Nothing here waits on the host; ordering is the stream's.

use crate::{
    log::{Record, RecordedLaunch},
    properties::{compilation_options, DeviceSpec},
    replay::{AddressSpace, Backing, LaunchParams, ReplayError},
    storage::VRange,
    CudaCompiler,
};
use cubecl::prelude::CubeDim;
use cubecl_runtime::id::KernelId;
use cudarc::{
    driver::{
        result, sys::CUfunction_attribute, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DriverError,
    },
    nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx},
};
use std::{collections::HashMap, ffi::c_void, fmt, path::PathBuf, sync::Arc};

/// Why a replay stopped.
#[derive(Debug)]
pub enum ExecError {
    /// A range the log names has no device memory.
    Replay(ReplayError),
    /// CubeCL or NVRTC could not compile a kernel.
    Compile(String),
    /// The driver refused an allocation, a copy or a launch.
    Driver(DriverError),
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Replay(err) => write!(f, "replay: {err}"),
            ExecError::Compile(err) => write!(f, "compiling a recorded kernel: {err}"),
            ExecError::Driver(err) => write!(f, "CUDA driver: {err:?}"),
        }
    }
}

impl std::error::Error for ExecError {}

impl From<ReplayError> for ExecError {
    fn from(err: ReplayError) -> Self {
        ExecError::Replay(err)
    }
}

impl From<DriverError> for ExecError {
    fn from(err: DriverError) -> Self {
        ExecError::Driver(err)
    }
}

/// NVRTC's options as cubecl-cuda passes them (vendor/cubecl-cuda/src/compute/context.rs,
/// `compile_kernel`): the architecture (`sm_XXa` from 9.0 on), the CUDA
/// headers and CCCL's where present, line info.
pub fn nvrtc_options(arch: u32, cuda_path: &std::path::Path) -> Vec<String> {
    let suffix = if arch >= 90 { "a" } else { "" };
    let include = cuda_path.join("include");
    let cccl = include.join("cccl");
    let mut options = vec![
        format!("--gpu-architecture=sm_{arch}{suffix}"),
        format!("--include-path={}", include.display()),
        "-lineinfo".to_string(),
    ];
    if cccl.exists() {
        options.push(format!("--include-path={}", cccl.display()));
    }
    options
}

/// Where the CUDA headers NVRTC needs are, looked up as cubecl-cuda does
/// (vendor/cubecl-cuda/src/lib.rs, `cuda_path`).
pub fn cuda_path() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("CUDA_PATH") {
        return Some(PathBuf::from(path));
    }
    let found = |p: &str| std::fs::exists(p).unwrap_or(false);
    ["/usr/local/cuda", "/opt/cuda"]
        .into_iter()
        .find(|p| found(p))
        .map(PathBuf::from)
        .or_else(|| found("/usr/bin/nvcc").then(|| PathBuf::from("/usr")))
}

/// A kernel compiled and loaded, with what its launch needs.
struct Loaded {
    // Keeps the function's module loaded.
    _module: Arc<CudaModule>,
    function: CudaFunction,
    cube_dim: CubeDim,
    shared_bytes: u32,
}

/// Replays logs on `stream`, keeping compiled kernels and the recorder's
/// pages (a plan's tables outlive the call that uploaded them) between calls.
pub struct Executor {
    stream: Arc<CudaStream>,
    spec: DeviceSpec,
    options: Vec<String>,
    kernels: HashMap<KernelId, Loaded>,
    space: AddressSpace,
    pages: HashMap<u64, CudaSlice<u8>>,
}

impl Executor {
    /// An executor on `stream` for a device of `spec` (the recorder's).
    pub fn new(stream: Arc<CudaStream>, spec: DeviceSpec) -> Result<Self, ExecError> {
        let path = cuda_path().ok_or_else(|| {
            ExecError::Compile("no CUDA headers for NVRTC: set CUDA_PATH (or install CUDA in /usr/local/cuda)".into())
        })?;
        let options = nvrtc_options(spec.arch, &path);
        Ok(Self {
            stream,
            spec,
            options,
            kernels: HashMap::new(),
            space: AddressSpace::default(),
            pages: HashMap::new(),
        })
    }

    /// Enqueues `records` on the stream, `foreign` pages (virtual page, device
    /// address) read and written in place. Those pages fall back to the
    /// executor's own memory afterwards: the recorder may reuse them.
    pub fn replay(&mut self, records: &[Record], foreign: &[(VRange, u64)]) -> Result<(), ExecError> {
        self.stream.context().bind_to_thread()?;
        let mut freed = Vec::new();
        for record in records {
            match record {
                Record::Alloc(_) => {
                    self.space.apply(record);
                }
                // Freed after the batch: the stream frees in order, after the launches that used it.
                Record::Free(_) => freed.push(record),
                _ => {}
            }
        }
        for &(page, ptr) in foreign {
            self.space.back(page, Backing::Foreign(ptr))?;
        }
        self.back_pages()?;
        for record in records {
            match record {
                Record::Write(write) => {
                    let at = self.space.translate(write.range)?;
                    // SAFETY: `at` lies in a live page of at least the write's length
                    // (translate checks the range); pageable sources are staged before return.
                    unsafe { result::memcpy_htod_async(at, &write.bytes, self.stream.cu_stream()) }?;
                }
                Record::Launch(launch) => self.launch(launch)?,
                Record::Alloc(_) | Record::Free(_) => {}
            }
        }
        for record in freed {
            if let Some((page, _)) = self.space.apply(record) {
                self.pages.remove(&page.addr);
            }
        }
        for &(page, _) in foreign {
            self.space.back(page, Backing::Internal(None))?;
        }
        Ok(())
    }

    /// Allocates the pages the space has no memory for, zeroed, on the stream.
    fn back_pages(&mut self) -> Result<(), ExecError> {
        for page in self.space.unbacked() {
            let slice = self.stream.alloc_zeros::<u8>(page.len as usize)?;
            let ptr = slice.device_ptr(&self.stream).0;
            self.space.back(page, Backing::Internal(Some(ptr)))?;
            self.pages.insert(page.addr, slice);
        }
        Ok(())
    }

    fn launch(&mut self, launch: &RecordedLaunch) -> Result<(), ExecError> {
        let params = LaunchParams::of(launch, &self.space)?;
        if !self.kernels.contains_key(&launch.kernel_id) {
            let loaded = self.load(launch)?;
            self.kernels.insert(launch.kernel_id.clone(), loaded);
        }
        let kernel = &self.kernels[&launch.kernel_id];
        // The kernel reads its dynamic metadata from a buffer of its own, freed in stream order.
        let metadata = match &params.dynamic_metadata {
            Some(words) => Some(self.stream.clone_htod(words.as_slice())?),
            None => None,
        };
        let mut values: Vec<u64> = params.buffers.clone();
        if let Some(metadata) = &metadata {
            values.push(metadata.device_ptr(&self.stream).0);
        }
        let mut info = params.info.clone().unwrap_or_default();
        let mut args: Vec<*mut c_void> = values.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect();
        if params.info.is_some() {
            args.push(info.as_mut_ptr() as *mut c_void);
        }
        let dim = kernel.cube_dim;
        // SAFETY: the function was loaded from this kernel's compiled source, whose
        // parameters are these pointers and info struct (`LaunchParams`); the
        // addresses lie in live pages; the driver copies the arguments at launch.
        unsafe {
            result::launch_kernel(
                kernel.function.cu_function(),
                launch.cube_count,
                (dim.x, dim.y, dim.z),
                kernel.shared_bytes,
                self.stream.cu_stream(),
                &mut args,
            )
        }?;
        Ok(())
    }

    /// Compiles `launch`'s kernel ([`compile_ptx`]) and loads it.
    fn load(&self, launch: &RecordedLaunch) -> Result<Loaded, ExecError> {
        let compiled = compile_ptx(launch, &self.spec, &self.options)?;
        let module = self.stream.context().load_module(compiled.ptx)?;
        let function = module.load_function(&compiled.entry)?;
        // SAFETY: a valid function handle; the size is the kernel's own (≤ the device's opt-in limit).
        unsafe {
            result::function::set_function_attribute(
                function.cu_function(),
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                compiled.shared_bytes as i32,
            )
        }?;
        Ok(Loaded {
            _module: module,
            function,
            cube_dim: compiled.cube_dim,
            shared_bytes: compiled.shared_bytes,
        })
    }
}

/// A recorded kernel compiled to PTX, with what its launch needs.
#[derive(Debug)]
pub struct CompiledPtx {
    pub ptx: Ptx,
    /// The `__global__` function's name.
    pub entry: String,
    pub cube_dim: CubeDim,
    /// Dynamic shared memory, bytes.
    pub shared_bytes: u32,
}

/// `launch`'s kernel compiled as cubecl-cuda compiles it for a device of
/// `spec`: CubeCL's CUDA C++, then NVRTC with `options` ([`nvrtc_options`]).
/// Runs on the host alone (no GPU), given NVRTC and the CUDA headers.
pub fn compile_ptx(launch: &RecordedLaunch, spec: &DeviceSpec, options: &[String]) -> Result<CompiledPtx, ExecError> {
    let task = &launch.task;
    let compiled = task
        .compile(
            &mut CudaCompiler::default(),
            &compilation_options(spec),
            launch.mode,
            task.address_type(),
        )
        .map_err(|err| ExecError::Compile(format!("{}: {err:?}", task.name())))?;
    let shared_bytes = compiled.repr.as_ref().map_or(0, |repr| repr.shared_memory_size()) as u32;
    let ptx = compile_ptx_with_opts(
        &compiled.source,
        CompileOptions {
            options: options.to_vec(),
            ..Default::default()
        },
    )
    .map_err(|err| ExecError::Compile(format!("{}: {err}", task.name())))?;
    Ok(CompiledPtx {
        ptx,
        entry: compiled.entrypoint_name,
        cube_dim: compiled.cube_dim,
        shared_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvrtc_options_are_cubecl_cudas() {
        let path = std::path::Path::new("/nowhere/cuda");
        assert_eq!(
            nvrtc_options(90, path),
            [
                "--gpu-architecture=sm_90a",
                "--include-path=/nowhere/cuda/include",
                "-lineinfo"
            ]
        );
        assert_eq!(nvrtc_options(80, path)[0], "--gpu-architecture=sm_80");
    }
}
