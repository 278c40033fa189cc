//! Non-uniform FFTs (FINUFFT's types 1 and 2, as cuFINUFFT computes them):
//! values at arbitrary points spread onto an upsampled grid by the
//! "exponential of semicircle" kernel, an FFT from the plan API, and the
//! kernel's transform divided out — or the same steps backwards. Design,
//! conventions and error bounds: docs/nufft.md.
//!
//! ```text
//! NufftDesc ──layout()──▶ Layout (kernel, fine grid, deconvolution factors)
//!     └──on_device(points)──▶ DeviceNufft (sorted points, FFT plan) ──execute() / run(Run)
//!     └──execute_cpu(points, input): the same steps in f64 on the host
//! nufft_direct: the f64 oracle by direct summation
//! ```

mod cpu;
mod deconvolve;
mod device;
mod direct;
mod interpolate;
mod plan;
mod points;
mod spread;
mod spreader;

pub use device::{DeviceNufft, Run};
pub use direct::{nufft_direct, C64};
pub use plan::{
    fine_grid_len, signed_mode, Layout, NufftDesc, NufftError, NufftType, PointValues, VectorSplit, MAX_INDEX,
    TOLERANCE_RANGE,
};
pub use points::SortedPoints;
pub use spreader::{gauss_legendre, Spreader, MAX_WIDTH};
