//! The CPU backends (NdArray, Candle): every op by its trait's defaults, built
//! of Burn's ops; the spectral convolution's kernel paths answer with an error
//! naming the reference path.
#![allow(unused_imports)] // unused when no CPU backend feature is on

use burn::tensor::ops::FloatTensor;

use crate::matmul::PreciseMatmulBackend;
use crate::mode_mix::ModeMixBackend;
use crate::nonuniform::NufftBackend;
use crate::pointwise::PointwiseBackend;
use crate::spec::{SpectralConvSpec, SpectralError, SpectralImpl};
use crate::spectral::{no_kernels, SpectralConvBackend, SpectralGrads};

#[allow(unused_macros)] // unused when no CPU backend feature is on
macro_rules! cpu_backend {
    ($ty:ty, $name:literal) => {
        impl PreciseMatmulBackend for $ty {}
        impl PointwiseBackend for $ty {}
        impl ModeMixBackend for $ty {}
        impl NufftBackend for $ty {}
        impl SpectralConvBackend for $ty {
            fn spectral_conv_forward(
                _x: FloatTensor<Self>,
                _weight: FloatTensor<Self>,
                _bias: Option<FloatTensor<Self>>,
                _spec: &SpectralConvSpec,
                imp: SpectralImpl,
                _keep_saved: bool,
            ) -> Result<(FloatTensor<Self>, Option<FloatTensor<Self>>), SpectralError> {
                Err(no_kernels($name, imp))
            }

            fn spectral_conv_backward(
                _saved_x: FloatTensor<Self>,
                _x_shape: &[usize],
                _weight: FloatTensor<Self>,
                _grad_out: FloatTensor<Self>,
                _with_bias: bool,
                _spec: &SpectralConvSpec,
                imp: SpectralImpl,
            ) -> Result<SpectralGrads<Self>, SpectralError> {
                Err(no_kernels($name, imp))
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
