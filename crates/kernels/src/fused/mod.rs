//! The fused spectral convolution along one axis (TurboFNO's FFT→CGEMM→iFFT):
//! `y[b, o, ·, e] = inverse( Σ_i forward(x[b, i, ·, e])[k] · W[i, o, k, e] )`
//! in one kernel, the spectrum never leaving the chip.
//!
//! A cube owns a tile of batches and output channels at one inner position `e`
//! (the retained modes of the axes after this one, each with its own weights)
//! and every retained mode `k` of the axis. Its transforms are the Stockham
//! passes of [`crate::fft`]'s stage kernel (any length: mixed radix, Rader or
//! Bluestein, real or complex input) on tiles in shared memory. Two
//! schedules ([`Schedule`], `kernel.rs`) order the contraction:
//! - **streamed:** the input channels a chunk at a time: the chunk's pencils
//!   of every batch of the tile transformed, their retained modes multiplied
//!   by the weights into accumulators of (output channel, mode) pairs in
//!   registers; an epilogue stages the accumulated modes of a few output
//!   channels at a time in shared memory for the inverse;
//! - **resident:** every input channel's modes of the batch tile transformed
//!   into shared memory first, then contracted there in place a round of
//!   modes at a time (each weight loaded once a cube, used for every batch of
//!   the tile), then the inverse transforms read them.
//!
//! The inverse zero-pads the modes through its stage's load window and writes
//! the output once.
//!
//! The same kernel runs the input gradient (the adjoint transforms, `conj(W)ᵀ`
//! and the Hermitian bin weights as a per-mode scale) and can write the forward
//! spectrum it computes, which the weight gradient needs.

mod config;
mod kernel;
mod launch;
mod problem;
mod selection;

pub use config::{FusedConfig, Schedule};
pub use launch::{FusedBuffers, FusedTables};
pub use problem::{FusedSpectralConv, PencilStrides};
