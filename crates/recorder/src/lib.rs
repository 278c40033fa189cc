//! A CubeCL runtime that records kernel launches instead of running them.
//!
//! Issue 88: Candle's CUDA ops should run our CubeCL kernels on Candle's own
//! stream and buffers, without the two copies and host syncs of the bridge in
//! `fno-candle`. The route is to let the `#[cube(launch)]` code pack its
//! arguments exactly as for cubecl-cuda, but against [`RecordingRuntime`],
//! whose server lays buffers out in virtual memory ([`VirtualStorage`]) and
//! appends each launch (kernel, grid, buffer ranges, packed info) and each
//! upload to a [`Log`]. Kernels compile with CubeCL's own CUDA C++ compiler
//! ([`CudaCompiler`]) under an H100's properties ([`properties`]), a port of
//! cubecl-cuda's driver queries whose equality with cubecl-cuda's own is
//! checked only on an H100 (the ignored test in `tests/h100.rs`).
//!
//! A replay needs, per launch, the device address behind each virtual range
//! and the kernel's parameters in cubecl-cuda's order: [`AddressSpace`]
//! follows the log's pages and their backing (a Candle buffer or the
//! replay's own memory), [`LaunchParams`] packs a launch. [`Executor`]
//! replays a log on a cudarc stream (Candle's), each kernel compiled once with
//! NVRTC; it has not yet run on a GPU (no GPU was lent when it was written),
//! and Candle's ops do not call it yet. The recorder cannot read back or time, so
//! fault counts, measured planning and profiling fail with an error.

mod executor;
mod log;
pub mod properties;
mod replay;
mod runtime;
mod server;
mod storage;

pub use executor::{compile_ptx, cuda_path, nvrtc_options, CompiledPtx, ExecError, Executor};
pub use log::{Log, Record, RecordedLaunch, RecordedWrite};
pub use replay::{AddressSpace, Backing, LaunchParams, ReplayError};
pub use runtime::{RecordingDevice, RecordingRuntime};
pub use server::RecordingServer;
pub use storage::{VRange, VirtualStorage, VIRTUAL_BASE};

/// The compiler cubecl-cuda uses (its `CudaCompiler` without the `ptx-wmma` feature).
pub type CudaCompiler =
    cubecl_cpp::shared::CppCompiler<cubecl_cpp::cuda::CudaDialect<cubecl_cpp::cuda::mma::CudaWmmaCompiler>>;
