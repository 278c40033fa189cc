//! Batched complex GEMM over retained modes: `C[p, q, k] = s[k] · Σ_r op(A[p, r, k]) · op(B[r, q, k])`
//! with independent strides, so one kernel serves the spectral convolution's
//! forward (`Y = X·W` per mode), its input gradient (`G·Wᴴ`), its weight gradient
//! (`Xᴴ·G`, summed over the batch) and TurboFNO's shared weight (a `k` stride of 0).
//! The optional per-mode scale `s` (periodic in `k`) carries the backward's
//! Hermitian bin weights, so they cost no pass of their own.
//!
//! The same kernel runs real operands (a comptime switch): the FNO's 1×1
//! convolutions and the reference path's DFT matrices need f32 products that
//! vendor GEMMs may round to TF32 on tensor cores.
//!
//! Modes are the fastest-varying index of every FNO spectrum, so a cube owns a few
//! consecutive modes (global loads stay sector-sized) and a `BM × BN` block of
//! outputs for each. It walks `r` in chunks: the cube stages the A and B slices of
//! the chunk in shared memory, then every thread multiplies a `TM × TN` register
//! tile of one mode out of them. Thread tiles are strided (row `ti + i·threads_p`)
//! so a warp's shared-memory reads hit consecutive words.
//!
//! Where the device has asynchronous copies (CUDA's `cp.async`) and the
//! operands are 8-byte aligned, the chunks alternate between two buffers: the
//! copies of chunk `i + 1` are in flight while the threads multiply chunk `i`,
//! and they hold no registers, which hides the load latency that bound the
//! contraction (benches/results/2026-11-25_async_cgemm_h100.md). Elsewhere
//! (wgpu) each chunk is staged through registers between two barriers.
//!
//! Reductions over a long `r` with few outputs (the weight gradient's sum over
//! a large batch) split `r` among cubes: each writes a partial product, and a
//! second kernel adds the partials into `C`.

mod chain;
mod checksum;
mod config;
mod kernel;
mod launch;
mod problem;
pub mod real;
mod selection;
pub mod spectral;

pub use chain::{ChainBuffers, ChainConfig, ChainProblem, ChainStep};
pub use checksum::CGEMM_TOLERANCE_FACTOR;
pub use config::CgemmConfig;
pub use problem::{span, CgemmProblem, ModeBias, OperandPrecisions, Strides};
