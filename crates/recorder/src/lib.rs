//! A CubeCL runtime that records kernel launches instead of running them,
//! and an executor that replays them on a CUDA stream of someone else's.
//!
//! Candle's CUDA ops run our CubeCL kernels on Candle's own stream and
//! buffers this way, without copies (issue 88). The `#[cube(launch)]` code
//! packs its arguments exactly as for cubecl-cuda, but against
//! [`RecordingRuntime`], whose server lays buffers out in virtual memory
//! ([`VirtualStorage`]) and appends each page, launch (kernel, grid, buffer
//! ranges, packed info) and upload to a [`Log`]. A recorder models one GPU
//! ([`RecordingDevice::modelling`], an H100 by default) with cubecl-cuda's
//! properties for it ([`properties`], a port of its driver queries), so its
//! kernels compile as cubecl-cuda's would, with CubeCL's CUDA C++ compiler
//! ([`CudaCompiler`]).
//!
//! [`AddressSpace`] follows the log's pages and their backing (a foreign
//! buffer or the replay's own memory), [`LaunchParams`] packs a launch in
//! cubecl-cuda's order, and [`Executor`] enqueues a log on a cudarc stream,
//! each kernel compiled once with NVRTC ([`compile_ptx`]). The recorder
//! cannot read back or time, so fault counts, measured planning and
//! profiling fail with an error. The replay on a GPU is checked bit for bit
//! against cubecl-cuda by the ignored tests of `tests/gpu.rs`.

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
