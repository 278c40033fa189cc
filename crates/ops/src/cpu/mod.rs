//! The CPU backends (NdArray, Candle): every op by its trait's defaults, built
//! of Burn's ops, but the spectral convolution's kernel path ([`spectral`]),
//! the 1×1 convolutions with their residuals and GELU ([`conv`]), GELU, the
//! channel scale and AdamW ([`pointwise`]), which run on the CPU's threads.
#![allow(unused_imports)] // unused when no CPU backend feature is on

mod conv;
mod host;
mod mode_gemm;
mod normal;
mod pointwise;
mod spectral;

use host::{device_tensor, host};

use burn::tensor::ops::FloatTensor;

use crate::matmul::PreciseMatmulBackend;
use crate::mode_mix::ModeMixBackend;
use crate::nonuniform::NufftBackend;
use crate::pointwise::{AdamWOperands, MatmulPrecision, PointwiseBackend, Residual};
use crate::spec::{SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes};
use crate::spectral::{Pass, SpectralConvBackend, SpectralGrads};
use burn::tensor::DType;
use fno_kernels::adamw::AdamWStep;
use fno_kernels::precision::Precision;

#[allow(unused_macros)] // unused when no CPU backend feature is on
macro_rules! cpu_backend {
    ($ty:ty, $name:literal) => {
        impl PreciseMatmulBackend for $ty {}
        impl PointwiseBackend for $ty {
            fn pointwise_conv(
                x: FloatTensor<Self>,
                weight: FloatTensor<Self>,
                bias: Option<FloatTensor<Self>>,
                _precision: MatmulPrecision,
            ) -> FloatTensor<Self> {
                conv::conv::<Self>(x, weight, bias)
            }

            fn pointwise_conv_finished(
                x: FloatTensor<Self>,
                weight: FloatTensor<Self>,
                bias: Option<FloatTensor<Self>>,
                residual: Option<Residual<FloatTensor<Self>>>,
                gelu: bool,
                keep_pre: bool,
                _precision: MatmulPrecision,
            ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
                conv::conv_finished::<Self>(x, weight, bias, residual, gelu, keep_pre)
            }

            fn pointwise_param_grads(
                grad: FloatTensor<Self>,
                x: FloatTensor<Self>,
                with_bias: bool,
            ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
                conv::param_grads::<Self>(grad, x, with_bias)
            }

            fn channel_scale(x: FloatTensor<Self>, scale: FloatTensor<Self>) -> FloatTensor<Self> {
                pointwise::channel_scale::<Self>(x, scale)
            }

            fn channel_scale_grad(
                grad: FloatTensor<Self>,
                x: FloatTensor<Self>,
                scale_dtype: DType,
            ) -> FloatTensor<Self> {
                pointwise::channel_scale_grad::<Self>(grad, x, scale_dtype)
            }

            fn exact_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
                pointwise::gelu::<Self>(x)
            }

            fn exact_gelu_grad(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
                pointwise::gelu_grad::<Self>(x, grad)
            }

            fn adamw_steps(
                tensors: Vec<AdamWOperands<FloatTensor<Self>>>,
                step: &AdamWStep,
            ) -> Vec<[FloatTensor<Self>; 3]> {
                pointwise::adamw_steps::<Self>(tensors, step)
            }
        }
        impl ModeMixBackend for $ty {}
        impl NufftBackend for $ty {}
        impl SpectralConvBackend for $ty {
            fn spectral_conv_check(
                _device: &Self::Device,
                x: (&[usize], DType),
                weight: (&[usize], DType),
                spec: &SpectralConvSpec,
                imp: SpectralImpl,
            ) -> Result<SpectralShapes, SpectralError> {
                spectral::check(x.0, weight.0, spec, imp)
            }

            fn retained_spectrum(
                x: FloatTensor<Self>,
                spec: &SpectralConvSpec,
                pass: Pass,
            ) -> Result<FloatTensor<Self>, SpectralError> {
                spectral::backend_retained::<Self>(x, spec, pass)
            }

            fn spectrum_to_grid(
                s: FloatTensor<Self>,
                grid: &[usize],
                spec: &SpectralConvSpec,
                pass: Pass,
                precision: Precision,
            ) -> Result<FloatTensor<Self>, SpectralError> {
                spectral::backend_to_grid::<Self>(s, grid, spec, pass, precision)
            }

            fn retained_spectrum_check(
                _device: &Self::Device,
                x: (&[usize], DType),
                spec: &SpectralConvSpec,
                _pass: Pass,
            ) -> Result<(), SpectralError> {
                spectral::check_retained(x.0, spec)
            }

            fn spectrum_to_grid_check(
                _device: &Self::Device,
                s: (&[usize], DType),
                grid: &[usize],
                spec: &SpectralConvSpec,
                _pass: Pass,
                _precision: Precision,
            ) -> Result<(), SpectralError> {
                spectral::check_to_grid(s.0, grid, spec)
            }

            fn spectral_conv_forward(
                x: FloatTensor<Self>,
                weight: FloatTensor<Self>,
                bias: Option<FloatTensor<Self>>,
                spec: &SpectralConvSpec,
                imp: SpectralImpl,
                keep_saved: bool,
            ) -> Result<(FloatTensor<Self>, Option<FloatTensor<Self>>), SpectralError> {
                spectral::backend_forward::<Self>(x, weight, bias, spec, imp, keep_saved)
            }

            fn spectral_conv_backward(
                saved_x: FloatTensor<Self>,
                x_shape: &[usize],
                weight: FloatTensor<Self>,
                grad_out: FloatTensor<Self>,
                with_bias: bool,
                spec: &SpectralConvSpec,
                imp: SpectralImpl,
            ) -> Result<SpectralGrads<Self>, SpectralError> {
                spectral::backend_backward::<Self>(saved_x, x_shape, weight, grad_out, with_bias, spec, imp)
            }
        }
    };
}

#[cfg(feature = "ndarray")]
cpu_backend!(burn::backend::NdArray<f32>, "ndarray");
#[cfg(feature = "ndarray")]
cpu_backend!(burn::backend::NdArray<f64>, "ndarray");
// Burn 0.21 deprecates its Candle backend but still ships it; we test on it.
#[cfg(feature = "candle")]
#[allow(deprecated)]
mod candle_impls {
    use super::*;
    cpu_backend!(burn::backend::Candle<f32, i64>, "candle");
    cpu_backend!(burn::backend::Candle<f64, i64>, "candle");
}
