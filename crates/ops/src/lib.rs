//! The spectral convolution of Fourier neural operators as a Burn op.
//!
//! [`spectral_conv`] computes neuraloperator's `SpectralConv` through the
//! implementation a [`SpectralImpl`] names: `Reference` (Burn tensor ops, any
//! backend, any size), `Unfused` or `Fused` (our CubeCL kernels, with autodiff
//! through the adjoint chain). [`precise_matmul`] is the f32 matrix product both the
//! reference path and models' 1×1 convolutions use;
//! [`pointwise_conv`], [`channel_scale`] and [`gelu`] are those convolutions,
//! skips and activations with forwards and backwards fit for a GPU, and
//! [`pointwise_conv_finished`] a convolution that adds a skip and applies GELU
//! before it stores its output. Nothing here knows about models.
//!
//! The kernel paths run on `CubeBackend` (wgpu, CUDA), on Burn's fusion
//! backend over it ([`fusion`]: `burn::backend::Wgpu` and `Cuda` are that
//! type) and on `Autodiff` over either; the CPU backends run the reference path.
//!
//! Layout: each op's file here ([`matmul`], [`pointwise`], [`mode_mix`](mod@mode_mix),
//! [`spectral`], [`nonuniform`]) declares its backend trait, whose defaults are
//! built of Burn's ops ([`reference`](mod@reference)), and the functions on tensors; the
//! files of the same name under `cube/`, [`fusion`] and `autodiff/` implement
//! it for `CubeBackend`, `Fusion<B>` and `Autodiff<B>`, and `cpu.rs` for the
//! CPU backends. [`factorized`] is built of the ops.

pub mod factorized;
pub mod fusion;
pub mod matmul;
pub mod mode_mix;
pub mod nonuniform;
pub mod pointwise;
pub mod reference;
pub mod rounding;
pub mod spectral;

pub use fno_core::spec;

mod autodiff;
mod cpu;
mod cube;

#[cfg(feature = "fault-injection")]
pub use cube::inject_contraction_fault;
pub use factorized::{factorized_spectral_conv, Factorization, FactorizedWeight, WeightForm};
pub use fno_kernels::adamw::AdamWStep;
pub use fno_kernels::fault::{FaultCounts, FaultTolerance};
pub use fno_kernels::precision::Precision;
pub use matmul::{precise_matmul, PreciseMatmulBackend};
pub use mode_mix::{mode_mix, mode_mix_chain, ModeMix, ModeMixBackend};
pub use nonuniform::{
    nonuniform_spectral_conv, nufft, nufft_from_real, nufft_real_part, NufftBackend, NufftOp, PointCloud,
};
pub use pointwise::{
    channel_scale, gelu, loss_norms, pointwise_conv, pointwise_conv_finished, row_sums, AdamWOperands, MatmulPrecision,
    PointwiseBackend, Residual,
};
pub use reference::spectral::spectral_conv_reference;
pub use spec::{InverseShift, SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes, WeightLayout};
pub use spectral::{spectral_conv, DeviceMemory, SpectralConvBackend, SpectralGrads};

/// Burn's wgpu backend without Burn fusion (`burn::backend::Wgpu` is this
/// type in `Fusion`, which merges element-wise ops; the kernel paths run on both).
#[cfg(feature = "wgpu")]
pub type Wgpu = burn_cubecl::CubeBackend<cubecl::wgpu::WgpuRuntime, f32, i32, u32>;
/// Burn's CUDA backend without Burn fusion (see [`Wgpu`]).
#[cfg(feature = "cuda")]
pub type Cuda = burn_cubecl::CubeBackend<cubecl::cuda::CudaRuntime, f32, i32, u8>;
