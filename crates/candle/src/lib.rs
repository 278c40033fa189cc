//! Fourier neural operators for Candle.
//!
//! - [`spectral_conv`]: neuraloperator's spectral convolution on Candle
//!   tensors, differentiable by Candle's autograd. Its FFTs are custom ops
//!   ([`transform`]) whose backward passes are each other's adjoints.
//! - [`Fno`]: neuraloperator 2.0's FNO as a candle-nn model, built from an
//!   [`FnoConfig`] through a `VarBuilder`, running the forward
//!   `fno_core::forward` describes (as the Burn model does). It loads the same
//!   safetensors checkpoints as the Burn model (ours and neuraloperator
//!   exports) and trains with candle-nn's optimisers.
//!
//! The ops run on Candle's CPU device and, with the `cuda` feature, on its
//! CUDA device through our CubeCL kernels (docs/candle.md). What they
//! share with the Burn crates comes from the framework-free `fno-core`
//! (re-exported here): without the `cuda` feature nothing of Burn is built.

#[cfg(feature = "cuda")]
mod cuda;
mod factorized;
pub mod model;
#[cfg(feature = "cuda")]
mod replay;
pub mod spectral;
pub mod transform;

pub use fno_core::{FnoConfig, SpectralConvSpec};
pub use model::{infer, Fno};
pub use spectral::spectral_conv;
