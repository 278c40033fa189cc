//! Fourier neural operators for Candle.
//!
//! - [`spectral_conv`]: neuraloperator's spectral convolution on Candle
//!   tensors, differentiable by Candle's autograd. Its FFTs are custom ops
//!   ([`transform`]) whose backward passes are each other's adjoints.
//! - [`Fno`]: neuraloperator 2.0's FNO as a candle-nn model, built from
//!   `fno_core::FnoConfig` through a `VarBuilder`. It loads the same
//!   safetensors checkpoints as the Burn model (ours and neuraloperator
//!   exports) and trains with candle-nn's optimisers.
//!
//! The ops run on Candle's CPU device and, with the `cuda` feature, on its
//! CUDA device through our CubeCL kernels (docs/candle.md).

#[cfg(feature = "cuda")]
mod cuda;
mod factorized;
pub mod model;
pub mod spectral;
pub mod transform;

pub use model::{infer, Fno};
pub use spectral::spectral_conv;
