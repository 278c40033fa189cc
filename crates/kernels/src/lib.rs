//! CubeCL kernels for Fourier neural operators. Nothing here knows about Burn:
//! kernels take CubeCL clients and buffers, and every kernel has a CPU oracle.

pub mod activation;
pub mod adamw;
pub mod backend;
pub mod cgemm;
pub mod channel_scale;
pub mod fault;
pub mod fft;
pub mod fused;
mod grid;
pub mod host_buffers;
pub mod limits;
pub mod nufft;
mod pairs;
pub mod pointwise_conv;
pub mod pointwise_grad;
pub mod pointwise_tf32;
pub mod pools;
pub mod precision;
pub mod sobolev;
pub mod split_sum;
mod tile;
