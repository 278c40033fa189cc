//! FFT planning and execution: one plan API for every caller.
//!
//! An [`FftPlan`] describes a numpy-style n-dimensional transform (fftn, ifftn,
//! rfftn, irfftn over chosen axes) with optional truncation of the output
//! (`modes`) or zero-padding of the input, and executes it either on a CubeCL
//! device ([`FftPlan::on_device`]) or on the CPU through rustfft
//! ([`FftPlan::execute_cpu`], the oracle the kernels are tested against).

pub(crate) mod algorithm;
mod banks;
mod cpu;
mod device;
pub(crate) mod factor;
mod fault;
pub mod lowering;
mod measure;
mod options;
mod plan;
mod plane;
mod real;
pub(crate) mod stage;
mod threaded;
mod window;

pub use algorithm::tensor_core::{MmaHalf, TensorCoreConfig, TENSOR_CORE_LEN};
pub use device::{DeviceFft, Table};
pub use factor::{butterfly_split, default_max_radix, radices, BUTTERFLY_PAIRS, MAX_PRIME_RADIX};
pub use fault::{FaultCounts, FaultInjection, FaultSite, FaultTargets, FaultTolerance, StageChecks, TOLERANCE_FACTOR};
pub use lowering::MIN_PLANE_THREADS;
pub(crate) use lowering::{shared_stage, shared_stage_tables};
pub use options::{
    DeviceOptions, DirectDft, Measurement, OddReal, PlaneFusion, Planning, PrimeAlgorithm, SharedLayout, TensorCores,
    TilePrefetch, UnitStrides,
};
pub(crate) use plan::AxisStep;
pub use plan::{Direction, FftDesc, FftError, FftKind, FftPlan, ModeOrder, Norm};
pub use window::Window;
