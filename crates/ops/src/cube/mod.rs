//! Our ops on `CubeBackend` (wgpu, CUDA): the kernel launches, each op in the
//! file of its name, the spectral convolution's parts (transforms, fused pass,
//! checked contractions) in files of their own, plans cached per device
//! ([`plan_cache`]) and the small helpers over `CubeTensor`s in [`tensor`].

mod cgemm;
mod fft;
mod fused;
mod loss;
mod matmul;
mod mode_mix;
mod nonuniform;
mod plan_cache;
mod pointwise;
mod spectral;
mod tensor;

#[cfg(feature = "fault-injection")]
pub use cgemm::inject_contraction_fault;
