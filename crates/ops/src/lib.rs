//! The spectral convolution of Fourier neural operators as a Burn op.
//!
//! [`spectral_conv`] computes neuraloperator's `SpectralConv` through the
//! implementation a [`SpectralImpl`] names: `Reference` (Burn tensor ops, any
//! backend, any size), `Unfused` or `Fused` (our CubeCL kernels, with autodiff
//! through the adjoint chain). [`precise_matmul`] is the f32 matrix product both the
//! reference path and models' 1×1 convolutions use;
//! [`pointwise_conv`], [`channel_scale`] and [`gelu`] are those convolutions,
//! skips and activations with forwards and backwards fit for a GPU. Nothing here knows about
//! models.
//!
//! The kernel paths run on `CubeBackend` (wgpu, CUDA), on Burn's fusion
//! backend over it ([`fusion`]: `burn::backend::Wgpu` and `Cuda` are that
//! type) and on `Autodiff` over either; the CPU backends run the reference path.

pub mod backend;
mod cube_tensor;
pub mod factorized;
pub mod fusion;
mod graph;
mod kernel_path;
pub mod matmul;
pub mod mode_chain;
pub mod mode_mix;
pub mod nonuniform;
mod plan_cache;
pub mod pointwise;
pub mod reference;
pub mod rounding;
pub mod spec;
pub mod spectrum;

use burn::tensor::{DType, Tensor, TensorPrimitive};

pub use backend::{DeviceMemory, SpectralConvBackend, SpectralGrads};
pub use factorized::{factorized_spectral_conv, Factorization, FactorizedWeight, WeightForm};
pub use fno_kernels::adamw::AdamWStep;
pub use fno_kernels::fault::{FaultCounts, FaultTolerance};
pub use fno_kernels::precision::Precision;
pub use kernel_path::inject_contraction_fault;
pub use matmul::{precise_matmul, PreciseMatmulBackend};
pub use mode_chain::mode_mix_chain;
pub use mode_mix::{mode_mix, ModeMix, ModeMixBackend};
pub use nonuniform::{
    nonuniform_spectral_conv, nufft, nufft_from_real, nufft_real_part, NufftBackend, NufftOp, PointCloud,
};
pub use plan_cache::{fft_planning, set_fft_planning};
pub use pointwise::{channel_scale, gelu, pointwise_conv, row_sums, MatmulPrecision, PointwiseBackend};
pub use reference::spectral_conv_reference;
pub use spec::{SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes, WeightLayout};

/// Burn's wgpu backend without Burn fusion (`burn::backend::Wgpu` is this
/// type in `Fusion`, which merges element-wise ops; the kernel paths run on both).
#[cfg(feature = "wgpu")]
pub type Wgpu = burn_cubecl::CubeBackend<cubecl::wgpu::WgpuRuntime, f32, i32, u32>;
/// Burn's CUDA backend without Burn fusion (see [`Wgpu`]).
#[cfg(feature = "cuda")]
pub type Cuda = burn_cubecl::CubeBackend<cubecl::cuda::CudaRuntime, f32, i32, u8>;

/// neuraloperator's spectral convolution through `imp`.
///
/// `x: [B, Cin, *spatial]` (1 to 3 spatial dims); `weight: [Cin, Cout, *modes, 2]`
/// (per mode) or `[Cin, Cout, 2]` (shared), complex as trailing (re, im);
/// `bias: [Cout]`. Returns `[B, Cout, *output]`.
pub fn spectral_conv<B: SpectralConvBackend, const D: usize, const W: usize>(
    x: Tensor<B, D>,
    weight: Tensor<B, W>,
    bias: Option<Tensor<B, 1>>,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
) -> Result<Tensor<B, D>, SpectralError> {
    if imp == SpectralImpl::Reference {
        if spec.fault_tolerance != FaultTolerance::Off {
            return Err(SpectralError::Unsupported(
                "fault tolerance runs on the unfused kernel path, not the reference path".into(),
            ));
        }
        return spectral_conv_reference(x, weight, bias, spec);
    }
    let shapes = spec.shapes(&x.dims(), &weight.dims())?;
    let f32_operands = x.dtype() == DType::F32 && weight.dtype() == DType::F32;
    let imp = imp.resolve(&shapes, spec, f32_operands);
    // The kernels see the weight this grid uses (neuraloperator's crop when the
    // grid holds fewer modes than the weight).
    let weight = reference::crop_weight(weight, &shapes, spec);
    let used = SpectralConvSpec {
        modes: shapes.modes.clone(),
        ..spec.clone()
    };
    if let Some(bias) = &bias {
        if bias.dims()[0] != shapes.out_channels {
            return Err(SpectralError::Invalid(format!(
                "bias has {} entries for {} output channels",
                bias.dims()[0],
                shapes.out_channels
            )));
        }
    }
    let (y, _) = B::spectral_conv_forward(
        x.into_primitive().tensor(),
        weight.into_primitive().tensor(),
        bias.map(|b| b.into_primitive().tensor()),
        &used,
        imp,
        false,
    )?;
    Ok(Tensor::from_primitive(TensorPrimitive::Float(y)))
}
