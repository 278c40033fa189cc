//! FFT kernels on a real CubeCL device (wgpu; lavapipe in CI) against the f64
//! CPU oracle of the same plan, one file per kind of transform or algorithm
//! (`rader.rs`, `bluestein.rs`, `direct_dft.rs`, `tensor_core.rs`);
//! `planner.rs` checks the lowering's other decisions on the CPU, without a device.

mod any_length;
mod bluestein;
#[cfg(feature = "cuda")]
mod cuda;
mod direct_dft;
mod faults;
mod measured;
mod plane;
mod planner;
mod pow2;
mod precision;
mod primes;
mod rader;
mod real;
mod resident;
mod tensor_core;
mod tiles;
mod windows;

use cubecl::prelude::*;
use cubecl::wgpu::WgpuRuntime;
use fno_kernels::fft::lowering::{lower, Convolution, DeviceLimits, Recipe};
use fno_kernels::fft::{
    DeviceFft, DeviceOptions, DirectDft, Direction, FftDesc, FftKind, FftPlan, ModeOrder, Norm, OddReal, PlaneFusion,
    PrimeAlgorithm, SharedLayout, TensorCores, TilePrefetch, UnitStrides,
};
use fno_kernels::precision::{Precision, Stored};
use fno_testing::{fresh_seed, normal_f32, relative_l2, uniform_f32};

fn client() -> ComputeClient<WgpuRuntime> {
    crate::wgpu_client()
}

/// A fresh seed for one test's inputs, printed so that a failure can be
/// reproduced; the test's `i`-th input is drawn from `seed + i`.
fn drawn_seed() -> u64 {
    let seed = fresh_seed();
    println!("seed {seed}");
    seed
}

/// What output buffers hold before a run: an output the kernels leave
/// unwritten fails the finite check.
const POISON: f32 = f32::NAN;

fn widen(values: &[f32]) -> Vec<f64> {
    values.iter().map(|&v| v as f64).collect()
}

/// `desc` lowered under `limits` and `options`, without a device.
fn lowered(desc: &FftDesc, limits: &DeviceLimits, options: DeviceOptions) -> Recipe {
    let plan = FftPlan::new(desc.clone()).unwrap_or_else(|e| panic!("{desc:?}: {e}"));
    lower(&plan, limits, options).unwrap_or_else(|e| panic!("{desc:?} {options:?}: {e}"))
}

/// `desc` lowered for `client`'s device, tables uploaded.
fn device_with<R: Runtime>(client: &ComputeClient<R>, desc: &FftDesc, options: DeviceOptions) -> DeviceFft<R> {
    FftPlan::new(desc.clone())
        .and_then(|plan| plan.on_device_with(client, options))
        .unwrap_or_else(|e| panic!("{desc:?} {options:?}: {e}"))
}

/// Runs `desc` on the device and on the f64 oracle; returns the relative L2 error.
fn check_with<R: Runtime>(client: &ComputeClient<R>, desc: &FftDesc, seed: u64, options: DeviceOptions) -> f64 {
    error_of(client, &device_with(client, desc, options), seed)
}

/// The relative L2 error of `device`'s plan, run on inputs drawn from `seed`
/// into a poisoned output, against the f64 oracle of the input as the device
/// stores it: uniform in [-1, 1) in f32, N(0, 1) where a buffer is half.
fn error_of<R: Runtime>(client: &ComputeClient<R>, device: &DeviceFft<R>, seed: u64) -> f64 {
    let plan = device.plan();
    let (from, to) = (device.input_stored(), device.output_stored());
    let input = match (from, to) {
        (Stored::F32, Stored::F32) => uniform_f32(plan.input_floats(), seed),
        _ => from.round(&normal_f32(plan.input_floats(), seed)),
    };
    let expected = plan.execute_cpu(&widen(&input)).unwrap();
    let in_h = client.create_from_slice(&from.encode(&input));
    let out_h = client.create_from_slice(&to.encode(&vec![POISON; plan.output_floats()]));
    device.execute(&in_h, &out_h).unwrap();
    let got = client
        .read_one(out_h)
        .unwrap_or_else(|e| panic!("{:?}: {e:?}", plan.desc()));
    let got = to.decode(&got);
    assert!(
        got.iter().all(|v| v.is_finite()),
        "{:?} (seed {seed}): unwritten or non-finite output",
        plan.desc()
    );
    relative_l2(&widen(&got), &expected)
}

/// Worst error seen in a test, printed so the bound reached is on record.
fn report(name: &str, errors: &[(String, f64)]) -> f64 {
    let (case, worst) = errors
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .cloned()
        .unwrap_or_default();
    println!(
        "{name}: {} cases, worst relative L2 error {worst:.3e} ({case})",
        errors.len()
    );
    worst
}

const BOUND: f64 = 1e-5;
/// The bounds of half-precision buffers (issue 48's targets, N(0, 1) inputs).
const F16_BOUND: f64 = 1e-3;
const BF16_BOUND: f64 = 1e-2;

/// The bound of a transform whose buffers hold `desc`'s precisions: the
/// coarser one's.
fn bound(desc: &FftDesc) -> f64 {
    let of = |precision| match precision {
        Precision::F32 => BOUND,
        Precision::F16 => F16_BOUND,
        Precision::BF16 => BF16_BOUND,
    };
    of(desc.input_precision).max(of(desc.output_precision))
}

/// The bound for lengths above 4096.
const LONG_BOUND: f64 = 5e-5;

/// Checks every case against the oracle under each set of options (inputs
/// from `seed` on), asserts the bound and prints the worst error; the cases
/// run side by side on a device per core ([`crate::wgpu_clients`]).
fn check_all(test: &str, seed: u64, cases: impl IntoIterator<Item = FftDesc>, options: &[DeviceOptions]) {
    check_all_on(&crate::wgpu_clients(), test, seed, cases, options);
}

/// [`check_all`] with the cases spread over `clients`' devices.
fn check_all_on<R: Runtime>(
    clients: &[ComputeClient<R>],
    test: &str,
    seed: u64,
    cases: impl IntoIterator<Item = FftDesc>,
    options: &[DeviceOptions],
) {
    let runs: Vec<(FftDesc, DeviceOptions, u64)> = cases
        .into_iter()
        .flat_map(|desc| options.iter().map(move |&option| (desc.clone(), option)))
        .zip(0..)
        .map(|((desc, option), i)| (desc, option, seed.wrapping_add(i)))
        .collect();
    let errors = crate::spread(clients, &runs, |client, (desc, option, seed)| {
        check_with(client, desc, *seed, *option)
    });
    let mut named = Vec::new();
    for ((desc, option, seed), e) in runs.iter().zip(errors) {
        let name = format!("{desc:?} {option:?}");
        assert!(e <= bound(desc), "{name} (seed {seed}): {e:.3e}");
        named.push((name, e));
    }
    report(test, &named);
}

/// C2C forward and inverse, R2C and C2R of one length, batch of two.
fn every_kind(n: usize) -> [FftDesc; 4] {
    [
        FftDesc::new(&[2, n], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, n], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[2, n], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, n / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[n]),
    ]
}

// What a recipe's stage launches do, as the tests ask it.

fn stage_radices<T>(recipe: &Recipe<T>) -> Vec<Vec<usize>> {
    recipe.stages().map(|cfg| cfg.radices.clone()).collect()
}

fn stage_threads<T>(recipe: &Recipe<T>) -> Vec<usize> {
    recipe.stages().map(|cfg| cfg.threads_per_signal).collect()
}

/// Signals each stage launch's cube transforms side by side.
fn stage_tiles<T>(recipe: &Recipe<T>) -> Vec<usize> {
    recipe.stages().map(|cfg| cfg.signals_per_cube).collect()
}

/// Stage launches that run a prime length through Rader's algorithm.
fn rader_stages<T>(recipe: &Recipe<T>) -> usize {
    recipe
        .stages()
        .filter(|cfg| cfg.convolution == Some(Convolution::Rader))
        .count()
}

/// Stage launches that transform two real signals per complex transform.
fn twin_stages<T>(recipe: &Recipe<T>) -> usize {
    recipe.stages().filter(|cfg| cfg.input.is_twin()).count()
}

/// Stage launches whose cubes stay resident and fill their next tile.
fn resident_stages<T>(recipe: &Recipe<T>) -> usize {
    recipe.stages().filter(|cfg| cfg.prefetch.is_some()).count()
}

/// Stage launches with a contiguous axis's stride compiled in.
fn unit_stride_stages<T>(recipe: &Recipe<T>) -> usize {
    recipe
        .stages()
        .filter(|cfg| cfg.unit_input_axis || cfg.unit_output_axis)
        .count()
}

const PLANE: DeviceOptions = DeviceOptions {
    prune: false,
    direct_dft: DirectDft::Auto,
    plane: PlaneFusion::Auto,
    column_signals: None,
    max_radix: None,
    shared_limit: None,
    primes: PrimeAlgorithm::Rader,
    prefetch: TilePrefetch::Auto,
    resident_cubes: None,
    odd_real: OddReal::Twins,
    shared_layout: SharedLayout::Modelled,
    butterfly_pairs: None,
    convolution_row_threads: None,
    unit_strides: UnitStrides::Runtime,
    tensor_cores: TensorCores::Auto,
};
/// The default options with every axis an FFT (no direct DFT of few modes).
const FFT_ONLY: DeviceOptions = DeviceOptions {
    direct_dft: DirectDft::Never,
    ..PLANE
};
const ALWAYS_PLANE: DeviceOptions = DeviceOptions {
    plane: PlaneFusion::Always,
    ..PLANE
};
const SEPARATE: DeviceOptions = DeviceOptions {
    plane: PlaneFusion::Never,
    ..PLANE
};
/// One launch per axis, every axis an FFT.
const SEPARATE_FFTS: DeviceOptions = DeviceOptions {
    direct_dft: DirectDft::Never,
    ..SEPARATE
};
/// Every axis an FFT, contiguous axes' strides compiled in.
const FFT_COMPILED_STRIDES: DeviceOptions = DeviceOptions {
    unit_strides: UnitStrides::Compiled,
    ..FFT_ONLY
};
/// The benchmark's lengths, which run one-cube Rader, Bluestein and resident
/// stages with compiled strides on CUDA.
const COMPILED_STRIDE_LENGTHS: [usize; 8] = [85, 141, 211, 421, 1000, 4099, 6144, 12288];
const DEFAULT: &[DeviceOptions] = &[PLANE];
/// The defaults, and contiguous axes' strides compiled into the kernels.
const RUNTIME_OR_COMPILED_STRIDES: &[DeviceOptions] = &[
    PLANE,
    DeviceOptions {
        unit_strides: UnitStrides::Compiled,
        ..PLANE
    },
];
/// The last two axes in one plane launch wherever it fits, and one launch per axis.
const PLANE_OR_SEPARATE: &[DeviceOptions] = &[ALWAYS_PLANE, SEPARATE];
/// Besides those, one launch per axis with column tiles of 32 signals, in as
/// much shared memory as the device allows.
const PLANE_SEPARATE_OR_WIDE_COLUMNS: &[DeviceOptions] = &[
    ALWAYS_PLANE,
    SEPARATE,
    DeviceOptions {
        column_signals: Some(32),
        shared_limit: Some(usize::MAX),
        ..SEPARATE
    },
];
/// The FFT kernels, unpruned and pruned (contiguous strides compiled in), in
/// plane and per-axis launches, where the planner might otherwise choose a
/// direct DFT: the cases of the window tests exercise all of them.
const FFT_PRUNED_OR_NOT: &[DeviceOptions] = &[
    DeviceOptions {
        direct_dft: DirectDft::Never,
        ..ALWAYS_PLANE
    },
    DeviceOptions {
        prune: true,
        direct_dft: DirectDft::Never,
        unit_strides: UnitStrides::Compiled,
        ..ALWAYS_PLANE
    },
    DeviceOptions {
        direct_dft: DirectDft::Never,
        ..SEPARATE
    },
];
const DIRECT: &[DeviceOptions] = &[DeviceOptions {
    direct_dft: DirectDft::Always,
    ..PLANE
}];
