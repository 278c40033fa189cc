//! What a Fourier neural operator is, free of any tensor framework: the
//! spectral convolution's semantics ([`SpectralConvSpec`]), neuraloperator's
//! configuration ([`FnoConfig`]) and its checks, the forms and ranks of
//! factorized spectral weights ([`factorization`], [`rank`]), checkpoint key
//! names and files ([`checkpoint`], [`safetensors_file`], [`neuralop_files`])
//! and input checks and batching ([`input`]). The Burn crates (fno-ops,
//! fno-models) and fno-candle build on it; it depends on the kernels' plain
//! enums (precision, norms, mode orders, FFT planning, fault tolerance) and
//! on fno-formats for neuraloperator's `torch.save` files.

pub mod block_precision;
pub mod checkpoint;
pub mod config;
pub mod error;
pub mod factorization;
pub mod forward;
pub mod input;
pub mod neuralop_files;
pub mod rank;
pub mod safetensors_file;
pub mod spec;

pub use block_precision::BlockPrecision;
pub use config::FnoConfig;
pub use error::ModelError;
pub use factorization::{Factorization, WeightForm};
pub use fno_kernels::fault::FaultTolerance;
pub use fno_kernels::precision::Precision;
pub use rank::Rank;
pub use spec::{InverseShift, SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes, WeightLayout};
