//! FFT kernels on a real CubeCL device (wgpu; lavapipe in CI) against the f64
//! CPU oracle of the same plan.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::fft::{
    DeviceFft, DeviceOptions, DirectDft, Direction, FftDesc, FftError, FftKind, FftPlan, ModeOrder, Norm, OddReal,
    PlaneFusion, PrimeAlgorithm, SharedLayout, TilePrefetch, UnitStrides, MIN_PLANE_THREADS,
};

fn client() -> ComputeClient<WgpuRuntime> {
    WgpuRuntime::client(&WgpuDevice::default())
}

/// xorshift64*: fresh inputs each call, reproducible from the printed seed.
struct Rng(u64);
impl Rng {
    fn seeded() -> Self {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        Rng(t.as_nanos() as u64 | 1)
    }
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545F4914F6CDD1D);
        ((v >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
}

const POISON: f32 = f32::NAN;

/// Runs `desc` on the device and on the f64 oracle; returns the relative L2 error.
fn check(client: &ComputeClient<WgpuRuntime>, desc: FftDesc, rng: &mut Rng) -> f64 {
    check_with(client, desc, rng, DeviceOptions::default())
}

fn check_with<R: Runtime>(client: &ComputeClient<R>, desc: FftDesc, rng: &mut Rng, options: DeviceOptions) -> f64 {
    let plan = FftPlan::new(desc.clone()).unwrap_or_else(|e| panic!("{desc:?}: {e}"));
    let device = plan
        .on_device_with(client, options)
        .unwrap_or_else(|e| panic!("{desc:?}: {e}"));
    error_of(client, &device, rng)
}

/// The relative L2 error of `device`'s plan run on fresh inputs against the f64 oracle.
fn error_of<R: Runtime>(client: &ComputeClient<R>, device: &DeviceFft<R>, rng: &mut Rng) -> f64 {
    let plan = device.plan();
    let desc = plan.desc();
    let input = rng.vec(plan.input_floats());
    let input64: Vec<f64> = input.iter().map(|&v| v as f64).collect();
    let expected = plan.execute_cpu(&input64).unwrap();
    let in_h = client.create_from_slice(f32::as_bytes(&input));
    let out_h = client.create_from_slice(f32::as_bytes(&vec![POISON; plan.output_floats()]));
    device.execute(&in_h, &out_h).unwrap();
    let got = f32::from_bytes(&client.read_one(out_h).unwrap()).to_vec();
    assert_eq!(got.len(), expected.len());
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (g, e) in got.iter().zip(&expected) {
        assert!(g.is_finite(), "{desc:?}: unwritten or non-finite output");
        num += (*g as f64 - e).powi(2);
        den += e * e;
    }
    (num / den.max(1e-300)).sqrt()
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
/// The bound for lengths above 4096.
const LONG_BOUND: f64 = 5e-5;

/// Checks every case against the oracle under each set of options, asserts the
/// bound and prints the worst error.
fn check_all(test: &str, cases: impl IntoIterator<Item = FftDesc>, options: &[DeviceOptions]) {
    let client = client();
    let mut rng = Rng::seeded();
    let mut errors = Vec::new();
    for desc in cases {
        for &option in options {
            let name = format!("{desc:?} {option:?}");
            let e = check_with(&client, desc.clone(), &mut rng, option);
            assert!(e <= BOUND, "{name}: {e:.3e}");
            errors.push((name, e));
        }
    }
    report(test, &errors);
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

#[test]
fn every_power_of_two_1d() {
    let mut all = Vec::new();
    // Every kind on every other length (each new kernel costs a compilation
    // on lavapipe), C2C forward on all.
    for log2 in 1..=16 {
        let n = 1usize << log2;
        let batch = (1usize << 15 >> log2).clamp(1, 4) + 1;
        let cases = [
            FftDesc::new(&[batch, n], &[-1], FftKind::C2C, Direction::Forward),
            FftDesc::new(&[batch, n], &[-1], FftKind::C2C, Direction::Inverse),
            FftDesc::new(&[batch, n], &[-1], FftKind::R2C, Direction::Forward),
            FftDesc::new(&[batch, n / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[n]),
        ];
        let kinds = if log2 % 2 == 1 || log2 == 16 { 4 } else { 1 };
        all.extend(cases.into_iter().take(kinds));
    }
    check_all("every_power_of_two_1d", all, DEFAULT);
    // Radix 16 below 1024 points, where the default is 8, and radix 32 (the
    // 4·8 composite butterfly), on fewer cases: every kernel compiles anew on lavapipe.
    let capped: Vec<(FftDesc, usize)> = (1..=9)
        .flat_map(|log2| {
            let n = 1usize << log2;
            [
                (FftDesc::new(&[3, n], &[-1], FftKind::C2C, Direction::Forward), 16),
                (
                    FftDesc::new(&[3, n / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[n]),
                    16,
                ),
                (FftDesc::new(&[3, n], &[-1], FftKind::C2C, Direction::Inverse), 32),
            ]
        })
        .collect();
    for cap in [16, 32] {
        let cases: Vec<FftDesc> = capped.iter().filter(|c| c.1 == cap).map(|c| c.0.clone()).collect();
        let options = DeviceOptions {
            max_radix: Some(cap),
            ..PLANE
        };
        check_all(&format!("every_power_of_two_1d, radix cap {cap}"), cases, &[options]);
    }
}

#[test]
fn invalid_device_options_are_errors() {
    let client = client();
    let plan = FftPlan::new(FftDesc::new(&[2, 64], &[-1], FftKind::C2C, Direction::Forward)).unwrap();
    let radix_caps = [0, 1, 12].map(|cap| DeviceOptions {
        max_radix: Some(cap),
        ..PLANE
    });
    let shared_limits = [0, 1024, 48 * 1024 - 1].map(|bytes| DeviceOptions {
        shared_limit: Some(bytes),
        ..PLANE
    });
    let no_threads = DeviceOptions {
        convolution_row_threads: Some(0),
        ..PLANE
    };
    for options in radix_caps.into_iter().chain(shared_limits).chain([no_threads]) {
        let result = plan.on_device_with(&client, options);
        assert!(matches!(result, Err(FftError::Invalid(_))), "{options:?}");
    }
}

#[test]
fn inner_axes_and_multi_dimensional() {
    let cases = vec![
        FftDesc::new(&[2, 64, 3], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[3, 128, 16], &[-2], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[5, 32, 32], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 16, 8, 32], &[1, 2, 3], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 16, 8, 32], &[-3, -2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 16, 8, 17], &[-3, -2, -1], FftKind::C2R, Direction::Inverse),
        // The real axis is the last one listed, even when it is not the last dimension.
        FftDesc::new(&[4, 64, 8], &[-1, -2], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[4, 33, 8], &[-1, -2], FftKind::C2R, Direction::Inverse),
        FftDesc::new(&[8, 2048, 2], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 4096, 4], &[1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 1024], &[0, 1], FftKind::C2C, Direction::Inverse),
    ];
    check_all(
        "inner_axes_and_multi_dimensional",
        cases,
        PLANE_SEPARATE_OR_WIDE_COLUMNS,
    );
}

#[test]
fn truncation_and_zero_padding_windows() {
    let cases = vec![
        // Forward truncation: centred C2C windows (odd and even), R2C prefix.
        FftDesc::new(&[3, 64], &[-1], FftKind::C2C, Direction::Forward).modes(&[17]),
        FftDesc::new(&[3, 64], &[-1], FftKind::C2C, Direction::Forward).modes(&[16]),
        FftDesc::new(&[3, 64], &[-1], FftKind::R2C, Direction::Forward).modes(&[9]),
        FftDesc::new(&[2, 3, 32, 64], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[12, 7]),
        FftDesc::new(&[2, 16, 32, 64], &[-3, -2, -1], FftKind::R2C, Direction::Forward).modes(&[5, 8, 9]),
        FftDesc::new(&[2, 8, 16, 32], &[1, 2, 3], FftKind::C2C, Direction::Forward).modes(&[8, 3, 31]),
        // Few modes of a long signal: whole last-pass butterflies are skipped.
        FftDesc::new(&[3, 4096], &[-1], FftKind::C2C, Direction::Forward).modes(&[5]),
        FftDesc::new(&[3, 2048], &[-1], FftKind::C2C, Direction::Forward).modes(&[64]),
        FftDesc::new(&[3, 4096], &[-1], FftKind::R2C, Direction::Forward).modes(&[3]),
        FftDesc::new(&[2, 512, 4], &[1], FftKind::C2C, Direction::Forward).modes(&[7]),
        // Inverse zero-padding: only the retained modes are read.
        FftDesc::new(&[3, 17], &[-1], FftKind::C2C, Direction::Inverse)
            .modes(&[17])
            .lengths(&[64]),
        FftDesc::new(&[3, 9], &[-1], FftKind::C2R, Direction::Inverse)
            .modes(&[9])
            .lengths(&[64]),
        FftDesc::new(&[2, 3, 12, 7], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[12, 7])
            .lengths(&[32, 64]),
        FftDesc::new(&[2, 5, 8, 9], &[-3, -2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[5, 8, 9])
            .lengths(&[16, 32, 64]),
        // Four-step lengths with windows on both passes.
        FftDesc::new(&[2, 1 << 14], &[-1], FftKind::C2C, Direction::Forward).modes(&[301]),
        FftDesc::new(&[2, 301], &[-1], FftKind::C2C, Direction::Inverse)
            .modes(&[301])
            .lengths(&[1 << 14]),
        FftDesc::new(&[2, 1 << 15], &[-1], FftKind::R2C, Direction::Forward).modes(&[100]),
        FftDesc::new(&[2, 100], &[-1], FftKind::C2R, Direction::Inverse)
            .modes(&[100])
            .lengths(&[1 << 15]),
        FftDesc::new(&[2, 2048, 3], &[1], FftKind::C2C, Direction::Forward).modes(&[99]),
        // fftshift-ordered windows (neuraloperator's weight order).
        FftDesc::new(&[3, 64], &[-1], FftKind::C2C, Direction::Forward)
            .modes(&[17])
            .mode_order(ModeOrder::Shifted),
        FftDesc::new(&[2, 3, 32, 64], &[-2, -1], FftKind::R2C, Direction::Forward)
            .modes(&[12, 7])
            .mode_order(ModeOrder::Shifted),
        FftDesc::new(&[2, 3, 11, 7], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[11, 7])
            .lengths(&[32, 64])
            .mode_order(ModeOrder::Shifted),
        FftDesc::new(&[2, 301], &[-1], FftKind::C2C, Direction::Inverse)
            .modes(&[301])
            .lengths(&[1 << 14])
            .mode_order(ModeOrder::Shifted),
        // numpy's n: crop and zero-pad at the end.
        FftDesc::new(&[3, 50], &[-1], FftKind::C2C, Direction::Forward).lengths(&[64]),
        FftDesc::new(&[3, 80], &[-1], FftKind::R2C, Direction::Forward).lengths(&[64]),
        FftDesc::new(&[3, 40], &[-1], FftKind::C2C, Direction::Inverse).lengths(&[32]),
        FftDesc::new(&[3, 20], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[64]),
        FftDesc::new(&[2, 50000], &[-1], FftKind::R2C, Direction::Forward).lengths(&[1 << 16]),
    ];
    // The pruned kernels (strides compiled in) must compute the same function.
    check_all("truncation_and_zero_padding_windows", cases, FFT_PRUNED_OR_NOT);
}

/// The last two axes in one launch (the intermediate image in shared memory):
/// full transforms, which the planner fuses by default, and truncating
/// forwards and zero-padding inverses in both axis orders, mixed radices, mode
/// orders, a cropped (row-pitched) input and a third axis before them, which
/// it fuses when asked to. Each must match the oracle like the per-axis path.
#[test]
fn last_two_axes_in_one_plane_launch() {
    // (case, whether the planner fuses it by default)
    let cases = vec![
        (
            FftDesc::new(&[3, 32, 48], &[-2, -1], FftKind::R2C, Direction::Forward),
            true,
        ),
        (
            FftDesc::new(&[3, 32, 25], &[-2, -1], FftKind::C2R, Direction::Inverse).lengths(&[32, 48]),
            true,
        ),
        (
            FftDesc::new(&[2, 24, 40], &[-2, -1], FftKind::C2C, Direction::Forward),
            true,
        ),
        (
            FftDesc::new(&[2, 24, 40], &[-1, -2], FftKind::C2C, Direction::Inverse),
            true,
        ),
        // Odd smooth rows, which separate launches pair as twins.
        (
            FftDesc::new(&[3, 45, 45], &[-2, -1], FftKind::R2C, Direction::Forward),
            false,
        ),
        (
            FftDesc::new(&[4, 32, 32], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[12, 7]),
            false,
        ),
        (
            FftDesc::new(&[4, 12, 7], &[-2, -1], FftKind::C2R, Direction::Inverse)
                .modes(&[12, 7])
                .lengths(&[32, 32]),
            false,
        ),
        (
            FftDesc::new(&[3, 24, 40], &[-2, -1], FftKind::C2C, Direction::Forward).modes(&[9, 10]),
            false,
        ),
        (
            FftDesc::new(&[3, 9, 10], &[-1, -2], FftKind::C2C, Direction::Inverse)
                .modes(&[10, 9])
                .lengths(&[40, 24]),
            false,
        ),
        (
            FftDesc::new(&[2, 45, 30], &[-2, -1], FftKind::R2C, Direction::Forward)
                .modes(&[15, 8])
                .mode_order(ModeOrder::ShiftedOddLower),
            false,
        ),
        (
            FftDesc::new(&[2, 15, 8], &[-2, -1], FftKind::C2R, Direction::Inverse)
                .modes(&[15, 8])
                .lengths(&[45, 30])
                .mode_order(ModeOrder::ShiftedOddLower)
                .norm(Norm::Ortho),
            false,
        ),
        (
            FftDesc::new(&[2, 16, 40], &[-2, -1], FftKind::R2C, Direction::Forward)
                .lengths(&[16, 32])
                .modes(&[8, 9]),
            false,
        ),
        (
            FftDesc::new(&[2, 5, 36, 20], &[-3, -2, -1], FftKind::R2C, Direction::Forward).modes(&[3, 8, 6]),
            false,
        ),
        (
            FftDesc::new(&[2, 3, 8, 6], &[-3, -2, -1], FftKind::C2R, Direction::Inverse)
                .modes(&[3, 8, 6])
                .lengths(&[5, 36, 20]),
            false,
        ),
    ];
    let client = client();
    for (desc, by_default) in &cases {
        let plan = FftPlan::new(desc.clone()).unwrap();
        let planes = |options| plan.on_device_with(&client, options).unwrap().plane_launches();
        assert_eq!(planes(ALWAYS_PLANE), 1, "{desc:?}: asked for a plane launch");
        assert_eq!(planes(PLANE) == 1, *by_default, "{desc:?}: default choice");
        assert_eq!(planes(SEPARATE), 0, "{desc:?}: asked for none");
    }
    let pruned = DeviceOptions {
        prune: true,
        ..ALWAYS_PLANE
    };
    check_all(
        "last_two_axes_in_one_plane_launch",
        cases.into_iter().map(|(desc, _)| desc),
        &[PLANE, ALWAYS_PLANE, pruned, SEPARATE],
    );
}

/// Where the image leaves a plane cube room for fewer than
/// `MIN_PLANE_THREADS` threads (85² on lavapipe; not on an H100), the planner
/// keeps separate launches unless asked for a plane; both match the oracle.
#[test]
fn thin_plane_cubes_only_when_asked() {
    let cases = [
        FftDesc::new(&[2, 85, 85], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 85, 43], &[-2, -1], FftKind::C2C, Direction::Inverse),
    ];
    let client = client();
    for desc in &cases {
        let plan = FftPlan::new(desc.clone()).unwrap();
        let asked = plan.on_device_with(&client, ALWAYS_PLANE).unwrap().plane_threads();
        assert_eq!(asked.len(), 1, "{desc:?}: asked for a plane launch");
        let by_default = plan.on_device_with(&client, PLANE).unwrap().plane_launches();
        assert_eq!(
            by_default == 1,
            asked[0] >= MIN_PLANE_THREADS,
            "{desc:?}: {asked:?} threads"
        );
    }
    check_all("thin_plane_cubes_only_when_asked", cases, PLANE_OR_SEPARATE);
}

#[test]
fn normalisations() {
    let client = client();
    let mut rng = Rng::seeded();
    for norm in [Norm::Backward, Norm::Forward, Norm::Ortho] {
        for desc in [
            FftDesc::new(&[2, 16, 32], &[-2, -1], FftKind::C2C, Direction::Forward),
            FftDesc::new(&[2, 16, 32], &[-2, -1], FftKind::C2C, Direction::Inverse),
            FftDesc::new(&[2, 16, 32], &[-2, -1], FftKind::R2C, Direction::Forward),
            FftDesc::new(&[2, 16, 17], &[-2, -1], FftKind::C2R, Direction::Inverse),
        ] {
            let name = format!("{norm:?} {desc:?}");
            let e = check(&client, desc.norm(norm), &mut rng);
            assert!(e <= BOUND, "{name}: {e:.3e}");
        }
    }
}

#[test]
fn random_shapes_and_axes() {
    let mut rng = Rng::seeded();
    let mut cases = Vec::new();
    for _ in 0..12 {
        let rank = 1 + (rng.next().abs() * 3.99) as usize;
        let shape: Vec<usize> = (0..rank)
            .map(|_| {
                if rng.next() > 0.0 {
                    1usize << (rng.next().abs() * 6.99) as usize
                } else {
                    1 + (rng.next().abs() * 99.99) as usize
                }
            })
            .collect();
        let mut axes: Vec<isize> = (0..rank as isize).filter(|_| rng.next() > -0.3).collect();
        if axes.is_empty() {
            axes.push(rank as isize - 1);
        }
        if rng.next() > 0.0 {
            axes.reverse();
        }
        let kind = match (rng.next().abs() * 2.99) as usize {
            0 => FftKind::C2C,
            1 => FftKind::R2C,
            _ => FftKind::C2R,
        };
        let last = *axes.last().unwrap() as usize;
        let mut desc = match kind {
            FftKind::C2C => {
                let dir = if rng.next() > 0.0 {
                    Direction::Forward
                } else {
                    Direction::Inverse
                };
                FftDesc::new(&shape, &axes, kind, dir)
            }
            FftKind::R2C => FftDesc::new(&shape, &axes, kind, Direction::Forward),
            FftKind::C2R => {
                let mut s = shape.clone();
                let n = s[last].max(2);
                s[last] = n / 2 + 1;
                let lengths: Vec<usize> = axes
                    .iter()
                    .map(|&a| if a as usize == last { n } else { shape[a as usize] })
                    .collect();
                FftDesc::new(&s, &axes, kind, Direction::Inverse).lengths(&lengths)
            }
        };
        if kind == FftKind::R2C && shape[last] < 2 {
            desc.shape[last] = 2;
        }
        cases.push(desc);
    }
    check_all("random_shapes_and_axes", cases, PLANE_OR_SEPARATE);
}

#[test]
fn inverse_of_forward_is_identity() {
    let client = client();
    let mut rng = Rng::seeded();
    for (shape, axes) in [
        (vec![3usize, 64, 32], vec![-2isize, -1]),
        (vec![2, 8, 16, 4096], vec![-1]),
        (vec![4, 8, 8, 8], vec![1, 2, 3]),
    ] {
        let fwd = FftPlan::new(FftDesc::new(&shape, &axes, FftKind::R2C, Direction::Forward)).unwrap();
        let lengths: Vec<usize> = axes
            .iter()
            .map(|&a| shape[(a + shape.len() as isize) as usize % shape.len()])
            .collect();
        let inv =
            FftPlan::new(FftDesc::new(fwd.output_shape(), &axes, FftKind::C2R, Direction::Inverse).lengths(&lengths))
                .unwrap();
        let x = rng.vec(fwd.input_floats());
        let x_h = client.create_from_slice(f32::as_bytes(&x));
        let spec = client.create_from_slice(f32::as_bytes(&vec![POISON; fwd.output_floats()]));
        let back = client.create_from_slice(f32::as_bytes(&vec![POISON; inv.output_floats()]));
        fwd.on_device(&client).unwrap().execute(&x_h, &spec).unwrap();
        inv.on_device(&client).unwrap().execute(&spec, &back).unwrap();
        let y = f32::from_bytes(&client.read_one(back).unwrap()).to_vec();
        let err = (x.iter().zip(&y).map(|(a, b)| ((a - b) as f64).powi(2)).sum::<f64>()
            / x.iter().map(|a| (*a as f64).powi(2)).sum::<f64>())
        .sqrt();
        assert!(err <= BOUND, "{shape:?} {axes:?}: {err:.3e}");
    }
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

/// Lengths of every kind above 32 to 1024: primes (Rader's algorithm where
/// p − 1 is 7-smooth: 97, 211, 421; Bluestein's: 509, 1021), products of
/// primes up to `MAX_PRIME_RADIX` (77, 121, 143, 289: mixed radix), 7-smooth
/// odd and even lengths (mixed radix 2/3/4/5/7/8/16), powers of each radix,
/// twice a prime, and the neighbours of 1024.
const SAMPLED_TO_1024: [usize; 22] = [
    49, 60, 77, 81, 97, 121, 128, 143, 210, 211, 243, 289, 343, 420, 421, 509, 625, 768, 1000, 1021, 1023, 1024,
];

/// Every length to 32 and a sample of each kind of length to 1024, forward
/// (mixed-radix plans where the prime factors allow, the others through Rader
/// or Bluestein). Each
/// length is a new kernel, and lavapipe compiles a kernel in one to two
/// seconds without a warm shader cache (a fresh CI machine has none), so the
/// whole table of lengths and kinds is the ignored
/// [`every_length_to_1024_every_kind`] (run with `--ignored`).
#[test]
fn every_length_to_32_and_sampled_to_1024_forward() {
    let lengths = (1..=32).chain(SAMPLED_TO_1024);
    let cases = lengths.map(|n| FftDesc::new(&[2, n], &[-1], FftKind::C2C, Direction::Forward));
    check_all("every_length_to_32_and_sampled_to_1024_forward", cases, DEFAULT);
}

/// Inverse, R2C and C2R on every length to 8 and on lengths of each kind
/// above: prime (a butterfly of its own: 17, 31; Rader: 421; Bluestein: 1021), 7-smooth odd and
/// even (mixed radix, packed or widened real transforms), twice a prime (packed).
#[test]
fn sampled_lengths_every_kind() {
    let lengths = (1..=8).chain([12, 16, 17, 31, 85, 141, 210, 243, 254, 421, 1000, 1021]);
    check_all(
        "sampled_lengths_every_kind",
        lengths.flat_map(|n| every_kind(n).into_iter().skip(1)),
        RUNTIME_OR_COMPILED_STRIDES,
    );
}

/// Set in the child processes of [`every_length_to_1024_every_kind`]: the
/// lengths `first-last` that one child checks.
const LENGTHS_ENV: &str = "FNO_TEST_LENGTHS";
/// Lengths a child process checks.
const LENGTHS_PER_PROCESS: usize = 64;

/// The whole table: every kind on every length 1..=1024 (run with
/// `--ignored`). lavapipe keeps each compiled pipeline for the life of the
/// process, and the table's thousands of kernels in one process exhausted a
/// 24 GB machine, so the test runs itself again in child processes of
/// `LENGTHS_PER_PROCESS` lengths each, as many at once as there are cores,
/// prints each child's worst error as it finishes, and the table's at the end.
#[test]
#[ignore]
fn every_length_to_1024_every_kind() {
    const TABLE: std::ops::RangeInclusive<usize> = 1..=1024;
    if let Ok(lengths) = std::env::var(LENGTHS_ENV) {
        let (first, last) = lengths
            .split_once('-')
            .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
            .unwrap_or_else(|| panic!("{LENGTHS_ENV}={lengths:?} is not first-last"));
        check_all(
            &format!("every_length_{first}_to_{last}_every_kind"),
            (first..=last).flat_map(every_kind),
            DEFAULT,
        );
        return;
    }
    let chunks: Vec<(usize, usize)> = TABLE
        .step_by(LENGTHS_PER_PROCESS)
        .map(|first| (first, (first + LENGTHS_PER_PROCESS - 1).min(*TABLE.end())))
        .collect();
    let at_once = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let worst_errors = std::sync::Mutex::new(Vec::new());
    let exe = std::env::current_exe().unwrap();
    std::thread::scope(|scope| {
        for _ in 0..at_once {
            scope.spawn(|| {
                while let Some(&(first, last)) = chunks.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    let started = std::time::Instant::now();
                    let child = std::process::Command::new(&exe)
                        .args(["every_length_to_1024_every_kind", "--ignored", "--nocapture"])
                        .env(LENGTHS_ENV, format!("{first}-{last}"))
                        .output()
                        .unwrap();
                    let stdout = String::from_utf8_lossy(&child.stdout);
                    let worst = stdout
                        .lines()
                        .find(|l| l.contains("worst relative"))
                        .unwrap_or("no report");
                    // "…: N cases, worst relative L2 error E (case)"
                    let cases_and_error = worst.split_once(": ").and_then(|(_, rest)| {
                        let cases = rest.split_whitespace().next()?.parse::<usize>().ok()?;
                        let error = rest
                            .split("error ")
                            .nth(1)?
                            .split_whitespace()
                            .next()?
                            .parse::<f64>()
                            .ok()?;
                        Some((cases, error))
                    });
                    worst_errors.lock().unwrap().extend(cases_and_error);
                    println!(
                        "lengths {first}..={last}: {} in {:.0} s; {worst}",
                        if child.status.success() { "passed" } else { "FAILED" },
                        started.elapsed().as_secs_f64()
                    );
                    if !child.status.success() {
                        let stderr = String::from_utf8_lossy(&child.stderr);
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("lengths {first}..={last}:\n{stdout}{stderr}"));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let worst_errors = worst_errors.into_inner().unwrap();
    let cases: usize = worst_errors.iter().map(|(cases, _)| cases).sum();
    let worst = worst_errors.iter().map(|(_, e)| *e).fold(0.0, f64::max);
    assert_eq!(cases, 4 * TABLE.count(), "every length and kind reported");
    println!("every_length_to_1024_every_kind: {cases} cases, worst relative L2 error {worst:.3e}");
}

/// Lengths whose prime factors above 7 are at most `MAX_PRIME_RADIX` run as
/// mixed-radix passes, one butterfly per such prime, not as a convolution:
/// every kind on primes and products with them (R2C 94 packs into a 47-point
/// transform), columns, a 2D transform, windows and a four-step length, the
/// planner's radices asserted, against the oracle.
#[test]
fn large_prime_radices() {
    let mut cases: Vec<FftDesc> = [23usize, 47, 67, 85, 94, 141, 282]
        .into_iter()
        .flat_map(every_kind)
        .collect();
    cases.extend([
        FftDesc::new(&[2, 47, 5], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 17, 23], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[3, 141], &[-1], FftKind::C2C, Direction::Forward).modes(&[33]),
        FftDesc::new(&[3, 20], &[-1], FftKind::C2R, Direction::Inverse)
            .modes(&[20])
            .lengths(&[85]),
        FftDesc::new(&[1, 47 << 12], &[-1], FftKind::C2C, Direction::Inverse),
    ]);
    // Radices are asserted on the per-axis launches; the plane launch runs the same passes.
    let fft_only = DeviceOptions {
        direct_dft: DirectDft::Never,
        ..SEPARATE
    };
    let client = client();
    for desc in &cases {
        let axis = desc.axes[desc.axes.len() - 1].rem_euclid(desc.shape.len() as isize) as usize;
        let n = desc.lengths.as_ref().map_or(desc.shape[axis], |l| l[l.len() - 1]);
        let largest_prime = (2..=n)
            .rev()
            .find(|p| n % p == 0 && (2..*p).all(|d| p % d != 0))
            .unwrap();
        let device = FftPlan::new(desc.clone())
            .unwrap()
            .on_device_with(&client, fft_only)
            .unwrap();
        assert!(
            device.stage_radices().iter().flatten().any(|&r| r == largest_prime),
            "{desc:?}: no radix-{largest_prime} pass in {:?}",
            device.stage_radices()
        );
    }
    let plane = DeviceOptions {
        plane: PlaneFusion::Always,
        ..fft_only
    };
    // First passes split finer (four output pairs a thread: 47 over 6
    // threads, 67 over 9) and none split.
    let four_pairs = DeviceOptions {
        butterfly_pairs: Some(4),
        ..fft_only
    };
    let unsplit = DeviceOptions {
        butterfly_pairs: Some(0),
        ..fft_only
    };
    check_all("large_prime_radices", cases, &[fft_only, plane, four_pairs, unsplit]);
}

/// Primes above `MAX_PRIME_RADIX` whose predecessor is 7-smooth run through
/// Rader's algorithm by default (a convolution of length p − 1 in one cube) and through Bluestein's
/// when asked: every kind, rows and columns, windows and numpy's lengths, both
/// against the oracle, and the planner's choice asserted.
#[test]
fn rader_and_bluestein_primes() {
    let mut cases: Vec<FftDesc> = [71usize, 109, 211, 2017].into_iter().flat_map(every_kind).collect();
    cases.extend([
        // Columns (signals side by side in the tile) and a 2D transform.
        FftDesc::new(&[2, 97, 5], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 73, 3], &[1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[2, 71, 73], &[-2, -1], FftKind::R2C, Direction::Forward),
        // Truncation and zero-padding windows, mode orders, crop and pad.
        FftDesc::new(&[3, 421], &[-1], FftKind::C2C, Direction::Forward).modes(&[101]),
        FftDesc::new(&[3, 101], &[-1], FftKind::C2C, Direction::Inverse)
            .modes(&[101])
            .lengths(&[421])
            .mode_order(ModeOrder::Shifted),
        FftDesc::new(&[3, 97], &[-1], FftKind::R2C, Direction::Forward).modes(&[20]),
        FftDesc::new(&[3, 20], &[-1], FftKind::C2R, Direction::Inverse)
            .modes(&[20])
            .lengths(&[97]),
        FftDesc::new(&[3, 50], &[-1], FftKind::C2C, Direction::Forward).lengths(&[73]),
        FftDesc::new(&[3, 70], &[-1], FftKind::C2C, Direction::Forward)
            .lengths(&[71])
            .norm(Norm::Ortho),
    ]);
    let bluestein = DeviceOptions {
        primes: PrimeAlgorithm::Bluestein,
        ..FFT_ONLY
    };
    let client = client();
    let max_threads = (client.properties().hardware.max_units_per_cube as usize).min(1024);
    for desc in &cases {
        let plan = FftPlan::new(desc.clone()).unwrap();
        let device = |options| plan.on_device_with(&client, options).unwrap();
        assert!(
            device(FFT_ONLY).rader_launches() >= 1,
            "{desc:?} does not run through Rader's algorithm"
        );
        assert_eq!(device(bluestein).rader_launches(), 0, "{desc:?}");
        // Each of a convolution's threads over rows takes one butterfly of
        // its smallest radix (where it runs in one launch: 2017 is a
        // four-step on lavapipe), before the shared layout may add idle lanes.
        let rows = desc.axes == [-1];
        for options in [FFT_ONLY, bluestein] {
            let device = device(DeviceOptions {
                shared_layout: SharedLayout::Plain,
                ..options
            });
            if device.launches() > 1 || !rows {
                continue;
            }
            for (radices, threads) in device.stage_radices().iter().zip(device.stage_threads()) {
                let pass_len: usize = radices.iter().product();
                let smallest = radices.iter().min().unwrap();
                assert_eq!(threads, (pass_len / smallest).min(max_threads), "{desc:?} {radices:?}");
            }
        }
    }
    check_all("rader_and_bluestein_primes", cases, &[FFT_ONLY, bluestein]);
}

/// Rader's rows whose convolution splits into two radices up to 24 run in
/// those two passes, the smaller first (the larger first for R2C's twins),
/// in cubes of at most 128 threads; 541 (540 = 20·27) and 211 (15·14
/// already) keep their plans, and every plan matches the oracle.
#[test]
fn rader_rows_run_in_two_balanced_passes() {
    let client = client();
    let mut cases = Vec::new();
    for (n, two_pass) in [
        (193usize, Some([12, 16])),
        (257, Some([16, 16])),
        (421, Some([20, 21])),
        (577, Some([24, 24])),
        (541, None),
        (211, None),
    ] {
        for desc in every_kind(n) {
            let device = FftPlan::new(desc.clone())
                .unwrap()
                .on_device_with(&client, FFT_ONLY)
                .unwrap();
            assert_eq!(device.rader_launches(), 1, "{desc:?}");
            let radices = &device.stage_radices()[0];
            match two_pass {
                Some([small, large]) if desc.kind == FftKind::R2C => assert_eq!(radices, &[large, small], "{desc:?}"),
                Some(pair) => assert_eq!(radices, &pair, "{desc:?}"),
                None if n == 211 => assert_eq!(radices, &[15, 14], "{desc:?}"),
                None => assert_eq!(radices.len(), 3, "{desc:?}: {radices:?}"),
            }
            let threads = device.stage_threads()[0] * device.stage_tiles()[0];
            assert!(threads <= 128, "{desc:?}: {threads} threads a cube");
        }
        cases.extend(every_kind(n));
    }
    check_all("rader_rows_run_in_two_balanced_passes", cases, &[FFT_ONLY]);
}

/// Row stages whose tiles go through shared memory both ways (Rader's C2C
/// 211, R2C 211's twins) find their tiles' coordinates without a division; a
/// stage storing from registers (85's rows) and a column stage over two batch
/// extents keep the general form. Every plan, with a ragged last tile,
/// matches the oracle.
#[test]
fn one_row_of_tiles_takes_coordinates_without_division() {
    let c2c = |shape: &[usize], axes: &[isize]| FftDesc::new(shape, axes, FftKind::C2C, Direction::Forward);
    let cases = [
        (c2c(&[37, 211], &[-1]), 1),
        (c2c(&[37, 85], &[-1]), 0),
        (c2c(&[5, 211, 6], &[-2]), 0),
        (FftDesc::new(&[37, 211], &[-1], FftKind::R2C, Direction::Forward), 1),
    ];
    check_launch_counts(
        "one_row_of_tiles_takes_coordinates_without_division",
        &cases,
        DeviceFft::one_row_launches,
    );
}

/// Tile loads whose input is not a Hermitian spectrum issue every load of
/// their walk before placing any value: convolution rows (Rader's C2C and R2C
/// 211, Bluestein's C2C 1019) walking units, R2C 85's real twins and Rader's
/// 211 columns walking the tile flat. The irfft's Hermitian bins and C2C
/// 85's rows of complex pairs place each value as it lands. Every plan, with
/// a ragged last tile, matches the oracle.
#[test]
fn tile_loads_issue_their_rounds_ahead() {
    let cases = [
        (FftDesc::new(&[37, 211], &[-1], FftKind::C2C, Direction::Forward), 1),
        (FftDesc::new(&[37, 211], &[-1], FftKind::R2C, Direction::Forward), 1),
        (FftDesc::new(&[5, 1019], &[-1], FftKind::C2C, Direction::Inverse), 1),
        (
            FftDesc::new(&[37, 106], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[211]),
            0,
        ),
        (FftDesc::new(&[37, 85], &[-1], FftKind::C2C, Direction::Forward), 0),
        (FftDesc::new(&[37, 85], &[-1], FftKind::R2C, Direction::Forward), 1),
        (FftDesc::new(&[3, 211, 9], &[-2], FftKind::C2C, Direction::Forward), 1),
    ];
    check_launch_counts(
        "tile_loads_issue_their_rounds_ahead",
        &cases,
        DeviceFft::loads_ahead_launches,
    );
}

/// Lowers each plan with the default rules, asserts how many of its launches
/// `count` finds, and checks the transform against the oracle.
fn check_launch_counts(name: &str, cases: &[(FftDesc, usize)], count: fn(&DeviceFft<WgpuRuntime>) -> usize) {
    let client = client();
    let mut rng = Rng::seeded();
    let mut errors = Vec::new();
    for (desc, expected) in cases {
        let device = FftPlan::new(desc.clone())
            .unwrap()
            .on_device_with(&client, FFT_ONLY)
            .unwrap();
        assert_eq!(count(&device), *expected, "{desc:?}");
        let e = error_of(&client, &device, &mut rng);
        assert!(e <= BOUND, "{desc:?}: {e:.3e}");
        errors.push((format!("{desc:?}"), e));
    }
    report(name, &errors);
}

/// Measured planning lowers each candidate (Rader's rows in cubes of each
/// size, contiguous strides at run time and compiled in, a plane launch or
/// separate ones), times them and
/// keeps the fastest, which matches the oracle; a plan whose choices the
/// caller fixed times nothing.
#[test]
fn measured_plans_time_their_candidate_lowerings() {
    let client = client();
    let mut rng = Rng::seeded();
    let mut errors = Vec::new();
    for desc in [
        FftDesc::new(&[64, 211], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[64, 421], &[-1], FftKind::R2C, Direction::Forward),
    ] {
        let plan = FftPlan::new(desc.clone()).unwrap();
        let device = plan.on_device_measured(&client, FFT_ONLY).unwrap();
        let timed = device.measurements();
        let cubes: Vec<(Vec<usize>, Vec<usize>, usize)> = timed
            .iter()
            .map(|m| {
                let lowered = plan.on_device_with(&client, m.options).unwrap();
                (
                    lowered.stage_tiles(),
                    lowered.stage_threads(),
                    lowered.unit_stride_launches(),
                )
            })
            .collect();
        // Three cube sizes, each with strides at run time and compiled.
        assert_eq!(timed.len(), 6, "{desc:?}: {timed:?}");
        for (i, c) in cubes.iter().enumerate() {
            assert!(!cubes[..i].contains(c), "{desc:?}: {cubes:?} timed twice");
        }
        assert!(timed.iter().all(|m| m.ms > 0.0 && m.ms.is_finite()), "{timed:?}");
        let fastest = timed.iter().min_by(|a, b| a.ms.total_cmp(&b.ms)).unwrap();
        assert_eq!(device.options(), fastest.options, "{desc:?}");
        let e = error_of(&client, &device, &mut rng);
        assert!(e <= BOUND, "{desc:?}: {e:.3e}");
        errors.push((format!("{desc:?}"), e));
    }
    // Without Rader's rows only the strides vary.
    let plan = FftPlan::new(FftDesc::new(&[64, 256], &[-1], FftKind::C2C, Direction::Forward)).unwrap();
    let device = plan.on_device_measured(&client, FFT_ONLY).unwrap();
    let strides: Vec<UnitStrides> = device.measurements().iter().map(|m| m.options.unit_strides).collect();
    assert_eq!(strides, [UnitStrides::Runtime, UnitStrides::Compiled]);
    errors.push(("measured C2C 256".into(), error_of(&client, &device, &mut rng)));
    // A plane the rules take is timed against separate launches with both
    // strides (the plane kernel has no compiled strides); a plane asked for is not.
    let plan = FftPlan::new(FftDesc::new(&[8, 32, 48], &[-2, -1], FftKind::R2C, Direction::Forward)).unwrap();
    assert_eq!(plan.on_device_with(&client, FFT_ONLY).unwrap().plane_launches(), 1);
    let device = plan.on_device_measured(&client, FFT_ONLY).unwrap();
    let planes: Vec<PlaneFusion> = device.measurements().iter().map(|m| m.options.plane).collect();
    assert_eq!(planes, [PlaneFusion::Auto, PlaneFusion::Never, PlaneFusion::Never]);
    errors.push(("measured rfft2 32×48".into(), error_of(&client, &device, &mut rng)));
    let always = DeviceOptions {
        plane: PlaneFusion::Always,
        ..FFT_ONLY
    };
    let device = plan.on_device_measured(&client, always).unwrap();
    assert!(device
        .measurements()
        .iter()
        .all(|m| m.options.plane == PlaneFusion::Always));
    assert_eq!(device.plane_launches(), 1);
    let fixed = DeviceOptions {
        convolution_row_threads: Some(64),
        unit_strides: UnitStrides::Compiled,
        ..FFT_ONLY
    };
    let plan = FftPlan::new(FftDesc::new(&[64, 211], &[-1], FftKind::C2C, Direction::Forward)).unwrap();
    let device = plan.on_device_measured(&client, fixed).unwrap();
    assert!(device.measurements().is_empty());
    assert_eq!(device.options(), fixed);
    assert_eq!(device.unit_stride_launches(), 1);
    let threads = device.stage_threads()[0] * device.stage_tiles()[0];
    assert!(threads <= 64, "{threads} threads a cube of 211's rows");
    for (case, e) in &errors {
        assert!(*e <= BOUND, "{case}: {e:.3e}");
    }
    report("measured_plans_time_their_candidate_lowerings", &errors);
}

/// A column transform's tile takes every column of its row of tiles (one
/// contiguous block) where one cube can hold them, through radix 16 when the
/// default radix's threads are too many; against the oracle either way.
#[test]
fn column_tiles_take_whole_rows() {
    let client = client();
    let shared = client.properties().hardware.max_shared_memory_size;
    // 40 columns of 64 points: 320 threads and 21 KB at radix 8 (the old rule
    // split them into tiles of 20). 33 columns of 256 points: 1056 threads at
    // radix 8, 528 at radix 16, and 33 tile rows of 265 padded slots (8 bytes
    // each) of shared memory.
    let cases = [
        (
            FftDesc::new(&[3, 64, 40], &[1], FftKind::C2C, Direction::Forward),
            40,
            true,
        ),
        (
            FftDesc::new(&[2, 64, 33], &[1], FftKind::C2C, Direction::Inverse)
                .modes(&[64])
                .lengths(&[256])
                .mode_order(ModeOrder::Shifted),
            33,
            8 * 33 * 265 <= shared,
        ),
    ];
    for (desc, columns, fits) in &cases {
        let plan = FftPlan::new(desc.clone()).unwrap();
        let tiles = plan.on_device(&client).unwrap().stage_tiles();
        if *fits {
            assert_eq!(tiles, vec![*columns], "{desc:?}");
        } else {
            assert!(
                tiles.iter().all(|t| t < columns),
                "{desc:?}: {tiles:?} with {shared} B of shared memory"
            );
        }
    }
    check_all(
        "column_tiles_take_whole_rows",
        cases.map(|(desc, _, _)| desc),
        &[DeviceOptions::default()],
    );
}

/// The direct DFT's crossover prices the FFT path it would replace: for R2C
/// 211, the convolution (about 28·m·log2 m multiply-adds for Rader's m = 210)
/// runs Rader's algorithm, while priced against Bluestein's 432 points it
/// stays a direct DFT, as does a window of 8 modes either way; R2C 141 =
/// 47·3 has a radix plan and keeps even 8 bins through the FFT. All against
/// the oracle.
#[test]
fn direct_dft_crossover_prices_the_convolution() {
    let client = client();
    let bluestein = DeviceOptions {
        primes: PrimeAlgorithm::Bluestein,
        ..DeviceOptions::default()
    };
    let full = FftDesc::new(&[3, 211], &[-1], FftKind::R2C, Direction::Forward);
    let few_modes = full.clone().modes(&[8]);
    let radix = FftDesc::new(&[3, 141], &[-1], FftKind::R2C, Direction::Forward);
    let (radix_few, radix_more) = (radix.clone().modes(&[8]), radix.modes(&[48]));
    // (case, options, runs Rader's algorithm, runs as a direct DFT)
    let cases = [
        (full.clone(), DeviceOptions::default(), true, false),
        (full.clone(), bluestein, false, true),
        (few_modes.clone(), DeviceOptions::default(), false, true),
        (few_modes.clone(), bluestein, false, true),
        (radix_few.clone(), DeviceOptions::default(), false, false),
        (radix_more.clone(), DeviceOptions::default(), false, false),
    ];
    for (desc, options, rader, direct) in &cases {
        let device = FftPlan::new(desc.clone())
            .unwrap()
            .on_device_with(&client, *options)
            .unwrap();
        assert_eq!(device.rader_launches() > 0, *rader, "{desc:?} under {options:?}");
        assert_eq!(device.stage_tiles().is_empty(), *direct, "{desc:?} under {options:?}");
    }
    check_all(
        "direct_dft_crossover_prices_the_convolution",
        [full, few_modes, radix_few, radix_more],
        &[DeviceOptions::default(), bluestein],
    );
}

/// Large primes (Bluestein as two four-step FFTs), prime powers (mixed radix,
/// four-step) and lengths up to 2^20 against the f64 oracle.
#[test]
fn large_primes_and_prime_powers() {
    let client = client();
    let mut rng = Rng::seeded();
    let mut errors = Vec::new();
    for n in [4099usize, 65537, 19683, 15625, 16807, 1 << 20, 1_048_573] {
        for desc in every_kind(n) {
            let desc = FftDesc {
                shape: [&[1], &desc.shape[1..]].concat(),
                ..desc
            };
            let e = check(&client, desc.clone(), &mut rng);
            let name = format!("{desc:?}");
            assert!(e <= LONG_BOUND, "{name}: {e:.3e}");
            errors.push((name, e));
        }
    }
    report("large_primes_and_prime_powers", &errors);
}

#[test]
fn any_length_axes_windows_and_padding() {
    let cases = vec![
        // Darcy-sized grids: 2D real transforms with neuraloperator's mode windows.
        FftDesc::new(&[2, 3, 85, 85], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[12, 7]),
        FftDesc::new(&[2, 3, 12, 7], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[12, 7])
            .lengths(&[85, 85]),
        FftDesc::new(&[1, 2, 141, 141], &[-2, -1], FftKind::R2C, Direction::Forward)
            .modes(&[16, 9])
            .mode_order(ModeOrder::Shifted),
        FftDesc::new(&[1, 2, 16, 9], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[16, 9])
            .lengths(&[141, 141])
            .mode_order(ModeOrder::Shifted),
        FftDesc::new(&[1, 421, 421], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[33, 17]),
        FftDesc::new(&[2, 211, 212], &[-2, -1], FftKind::C2C, Direction::Inverse),
        // Inner axes (column tiles) with Bluestein and mixed radix.
        FftDesc::new(&[2, 421, 3], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 1000, 5], &[1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[3, 97, 10], &[-1, -2], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[3, 5, 7, 9], &[1, 2, 3], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 15, 6, 11], &[-3, -2, -1], FftKind::C2R, Direction::Inverse),
        // Long Bluestein columns and rows with windows on both four-step passes.
        FftDesc::new(&[2, 4099, 3], &[1], FftKind::C2C, Direction::Forward).modes(&[99]),
        FftDesc::new(&[2, 4099], &[-1], FftKind::C2C, Direction::Forward).modes(&[301]),
        FftDesc::new(&[2, 301], &[-1], FftKind::C2C, Direction::Inverse)
            .modes(&[301])
            .lengths(&[4099])
            .mode_order(ModeOrder::Shifted),
        FftDesc::new(&[2, 4099], &[-1], FftKind::R2C, Direction::Forward).modes(&[100]),
        FftDesc::new(&[2, 100], &[-1], FftKind::C2R, Direction::Inverse)
            .modes(&[100])
            .lengths(&[4099]),
        FftDesc::new(&[2, 100], &[-1], FftKind::C2R, Direction::Inverse)
            .modes(&[100])
            .lengths(&[3 * 4096]),
        // numpy's n: crop and zero-pad to lengths of any size.
        FftDesc::new(&[3, 50], &[-1], FftKind::C2C, Direction::Forward).lengths(&[61]),
        FftDesc::new(&[3, 80], &[-1], FftKind::R2C, Direction::Forward).lengths(&[77]),
        FftDesc::new(&[3, 40], &[-1], FftKind::C2C, Direction::Inverse).lengths(&[37]),
        FftDesc::new(&[3, 20], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[45]),
        // Truncated outputs of odd lengths, centred odd and even windows.
        FftDesc::new(&[3, 99], &[-1], FftKind::C2C, Direction::Forward).modes(&[17]),
        FftDesc::new(&[3, 96], &[-1], FftKind::C2C, Direction::Forward).modes(&[16]),
        FftDesc::new(&[3, 83], &[-1], FftKind::R2C, Direction::Forward).modes(&[9]),
    ];
    check_all("any_length_axes_windows_and_padding", cases, FFT_PRUNED_OR_NOT);
}

/// The direct DFT (a matrix product between the stored windows) on every kind,
/// window, order, crop/pad, norm and axis layout, including DC and Nyquist
/// bins of C2R inputs and lengths 1 and 2.
#[test]
fn direct_dft_every_kind_and_window() {
    let mut cases: Vec<FftDesc> = [1usize, 2, 3, 8, 85, 96, 421]
        .into_iter()
        .flat_map(every_kind)
        .collect();
    cases.extend([
        // neuraloperator's windows on Darcy grids, both mode orders.
        FftDesc::new(&[2, 3, 85, 85], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[12, 7]),
        FftDesc::new(&[2, 3, 12, 7], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[12, 7])
            .lengths(&[85, 85]),
        FftDesc::new(&[1, 2, 141, 64], &[-2, -1], FftKind::R2C, Direction::Forward)
            .modes(&[16, 9])
            .mode_order(ModeOrder::Shifted),
        FftDesc::new(&[1, 2, 15, 9], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[15, 9])
            .lengths(&[141, 64])
            .mode_order(ModeOrder::ShiftedOddLower),
        // Centred windows in FFT order, forward and inverse, odd and even.
        FftDesc::new(&[3, 99], &[-1], FftKind::C2C, Direction::Forward).modes(&[17]),
        FftDesc::new(&[3, 16, 5], &[1], FftKind::C2C, Direction::Inverse)
            .modes(&[16])
            .lengths(&[64]),
        FftDesc::new(&[2, 4099, 3], &[1], FftKind::C2C, Direction::Forward).modes(&[9]),
        FftDesc::new(&[2, 4099], &[-1], FftKind::R2C, Direction::Forward).modes(&[20]),
        // numpy's n: crop and zero-pad.
        FftDesc::new(&[3, 50], &[-1], FftKind::C2C, Direction::Forward).lengths(&[61]),
        FftDesc::new(&[3, 80], &[-1], FftKind::R2C, Direction::Forward).lengths(&[77]),
        FftDesc::new(&[3, 40], &[-1], FftKind::C2C, Direction::Inverse).lengths(&[37]),
        FftDesc::new(&[3, 20], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[45]),
        // Three axes, the real one inner and outer.
        FftDesc::new(&[2, 5, 7, 9], &[1, 2, 3], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[3, 97, 10], &[-1, -2], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 15, 6, 11], &[-3, -2, -1], FftKind::C2R, Direction::Inverse),
    ]);
    cases.extend(
        [Norm::Forward, Norm::Ortho]
            .map(|norm| FftDesc::new(&[2, 21, 32], &[-2, -1], FftKind::R2C, Direction::Forward).norm(norm)),
    );
    check_all("direct_dft_every_kind_and_window", cases, DIRECT);
}

/// Real transforms untangle bins `k` and `n − k` in the last pass's registers
/// where every thread of that pass gets a butterfly and its mirror without
/// holding more values than the plan's largest radix (R2C 1000 and 500: a
/// radix-5 last pass after radix 10), through shared memory otherwise; every
/// window of both against the oracle.
#[test]
fn real_transforms_untangle_in_registers_where_threads_pair_up() {
    let client = client();
    let in_registers = [1000usize, 500];
    let in_shared = [192usize, 256, 1024];
    let cases: Vec<FftDesc> = in_registers
        .iter()
        .chain(&in_shared)
        .flat_map(|&n| {
            [
                FftDesc::new(&[3, n], &[-1], FftKind::R2C, Direction::Forward),
                FftDesc::new(&[3, n], &[-1], FftKind::R2C, Direction::Forward).modes(&[n / 8]),
                FftDesc::new(&[2, n, 3], &[1], FftKind::R2C, Direction::Forward),
            ]
        })
        .collect();
    // The planner's choice on the rows; column tiles follow the same rule
    // through their own thread counts and are checked for accuracy only.
    for desc in cases.iter().filter(|desc| desc.axes == [-1]) {
        let device = FftPlan::new(desc.clone()).unwrap().on_device(&client).unwrap();
        let expected = in_registers.contains(&desc.shape[1]);
        assert_eq!(device.register_untangling_launches() > 0, expected, "{desc:?}");
    }
    check_all(
        "real_transforms_untangle_in_registers_where_threads_pair_up",
        cases,
        DEFAULT,
    );
}

/// Rows whose first pass would leave at least half of its threads idle in its
/// last round start with a pass that fills whole rounds (384 = 6·8·8 on 48
/// threads runs as 8·6·8, 1296 = 9·12·12 on 108 as 12·9·12, R2C 768 packs
/// into 384); a last round a third idle (192 = 3·8·8 on 24) and column tiles
/// keep the plan. With the plans whose bits spread by thread-rounds (504 =
/// 12·6·7, 756 = 9·12·7), every kind and window against the oracle.
#[test]
fn ragged_first_passes_trade_places_on_rows() {
    let client = client();
    let rows = |n: usize, kind: FftKind| FftDesc::new(&[3, n], &[-1], kind, Direction::Forward);
    let planned = [
        (rows(384, FftKind::C2C), vec![8, 6, 8]),
        (rows(1296, FftKind::C2C), vec![12, 9, 12]),
        (rows(504, FftKind::C2C), vec![12, 6, 7]),
        (rows(768, FftKind::R2C), vec![8, 6, 8]),
        (rows(192, FftKind::C2C), vec![3, 8, 8]),
        (
            FftDesc::new(&[2, 384, 9], &[1], FftKind::C2C, Direction::Forward),
            vec![6, 8, 8],
        ),
    ];
    for (desc, radices) in &planned {
        let device = FftPlan::new(desc.clone()).unwrap().on_device(&client).unwrap();
        assert_eq!(device.stage_radices(), std::slice::from_ref(radices), "{desc:?}");
    }
    let mut cases: Vec<FftDesc> = planned.into_iter().map(|(desc, _)| desc).collect();
    cases.extend([
        FftDesc::new(&[3, 504], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[3, 1008 / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[1008]),
        rows(384, FftKind::C2C).modes(&[40]),
        rows(756, FftKind::C2C),
        rows(1512, FftKind::R2C),
    ]);
    check_all("ragged_first_passes_trade_places_on_rows", cases, DEFAULT);
}

/// Stages that read a staged tile (resident cubes) or signals side by side
/// (column tiles) run a first pass larger than their last one last, and
/// resident ones take composites above 16 where those save a pass: the
/// planner's radices asserted, the transforms against the oracle.
#[test]
fn staged_stages_take_their_largest_pass_last() {
    let client = client();
    let resident = DeviceOptions {
        prefetch: TilePrefetch::Always,
        resident_cubes: Some(3),
        direct_dft: DirectDft::Never,
        ..SEPARATE
    };
    let c2c = |shape: &[usize], axis: isize| FftDesc::new(shape, &[axis], FftKind::C2C, Direction::Forward);
    let planned = [
        (c2c(&[5, 192], -1), resident, vec![8, 24]),
        (c2c(&[4, 224], -1), resident, vec![8, 28]),
        // 7·2^5 over rows read from global memory: 7·4·8, no composite above 16.
        (c2c(&[4, 224], -1), SEPARATE, vec![7, 4, 8]),
        (c2c(&[2, 252, 9], 1), SEPARATE, vec![7, 3, 12]),
        (c2c(&[2, 384, 9], 1), SEPARATE, vec![6, 8, 8]),
    ];
    let mut rng = Rng::seeded();
    let mut errors = Vec::new();
    for (desc, options, radices) in planned {
        let device = FftPlan::new(desc.clone())
            .unwrap()
            .on_device_with(&client, options)
            .unwrap();
        assert_eq!(device.stage_radices(), [radices], "{desc:?}");
        let e = check_with(&client, desc.clone(), &mut rng, options);
        assert!(e <= BOUND, "{desc:?}: {e:.3e}");
        errors.push((format!("{desc:?}"), e));
    }
    report("staged_stages_take_their_largest_pass_last", &errors);
}

/// Real transforms of odd lengths run two signals per complex transform
/// (`OddReal::Twins`): signal `2s` as the real part of slot `s`, `2s + 1` as
/// its imaginary part, their spectra separated by symmetry. Odd batch counts
/// (the last slot alone), several batch dims, columns, windows, crops, mixed
/// radix, Rader and Bluestein, against the oracle both ways, the planner's
/// choice asserted: a lone signal, and lengths with a prime radix above 7,
/// stay widened.
#[test]
fn odd_real_transforms_pair_signals() {
    check_odd_real(&client(), "odd_real_transforms_pair_signals", &[]);
}

/// The same on CUDA, with the lengths whose convolution fits one cube only
/// there (Bluestein's 4099, 8232 points; Rader's 421 over rows, one
/// butterfly of radix 5 a thread).
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn odd_real_transforms_pair_signals_on_cuda() {
    let r2c = |shape: &[usize], axis: isize| FftDesc::new(shape, &[axis], FftKind::R2C, Direction::Forward);
    let long = [
        r2c(&[5, 4099], -1),
        FftDesc::new(&[3, 2050], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[4099]),
        r2c(&[3, 421], -1),
        r2c(&[2, 421, 3], 1),
    ];
    check_odd_real(
        &crate::cuda_client_with_async_copies(),
        "odd_real_transforms_pair_signals_on_cuda",
        &long,
    );
}

/// Compiled unit strides on CUDA, where they run one-cube Rader, Bluestein
/// and resident stages lavapipe does not: every kind of the benchmark's
/// lengths against the oracle, and measured plans of the Rader lengths.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn compiled_unit_strides_and_measured_plans_on_cuda() {
    let client = crate::cuda_client_with_async_copies();
    let compiled = DeviceOptions {
        unit_strides: UnitStrides::Compiled,
        ..FFT_ONLY
    };
    let mut rng = Rng::seeded();
    let mut errors = Vec::new();
    for n in [85usize, 141, 211, 421, 1000, 4099, 6144, 12288] {
        for desc in every_kind(n) {
            let bound = if n > 4096 { LONG_BOUND } else { BOUND };
            let plan = FftPlan::new(desc.clone()).unwrap();
            let device = plan.on_device_with(&client, compiled).unwrap();
            assert!(device.unit_stride_launches() >= 1, "{desc:?}");
            let e = error_of(&client, &device, &mut rng);
            assert!(e <= bound, "{desc:?} compiled strides: {e:.3e}");
            errors.push((format!("{desc:?} compiled strides"), e));
        }
    }
    for n in [211, 421] {
        for kind in [FftKind::C2C, FftKind::R2C] {
            let desc = FftDesc::new(&[64, n], &[-1], kind, Direction::Forward);
            let measured = FftPlan::new(desc.clone())
                .unwrap()
                .on_device_measured(&client, FFT_ONLY)
                .unwrap();
            assert!(
                measured.measurements().len() >= 4,
                "{desc:?}: {:?}",
                measured.measurements()
            );
            let e = error_of(&client, &measured, &mut rng);
            assert!(e <= BOUND, "{desc:?} measured: {e:.3e}");
            errors.push((format!("{desc:?} measured"), e));
        }
    }
    report("compiled_unit_strides_and_measured_plans_on_cuda", &errors);
}

/// Checks the twin cases, and `extra` ones that must run in twins too, on `client`.
fn check_odd_real<R: Runtime>(client: &ComputeClient<R>, test: &str, extra: &[FftDesc]) {
    let r2c = |shape: &[usize], axis: isize| FftDesc::new(shape, &[axis], FftKind::R2C, Direction::Forward);
    let c2r = |shape: &[usize], axis: isize, n: usize| {
        FftDesc::new(shape, &[axis], FftKind::C2R, Direction::Inverse).lengths(&[n])
    };
    let mut twinned = Vec::new();
    for n in [9usize, 15, 45, 109, 211, 243, 625, 1021] {
        twinned.push(r2c(&[5, n], -1));
        twinned.push(c2r(&[3, n / 2 + 1], -1, n));
    }
    twinned.extend([
        r2c(&[2, 3, 45], -1),
        r2c(&[3, 135], -1).modes(&[20]),
        r2c(&[3, 211], -1).modes(&[31]).norm(Norm::Ortho),
        r2c(&[5, 50], -1).lengths(&[45]),
        c2r(&[3, 20], -1, 75).modes(&[20]),
        c2r(&[7, 10], -1, 211).modes(&[10]).norm(Norm::Forward),
        // Columns: signals side by side, an odd count of them.
        r2c(&[3, 75, 5], 1),
        c2r(&[2, 38, 7], 1, 75),
        r2c(&[2, 45, 3], 1).modes(&[12]),
        FftDesc::new(&[3, 15, 21], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[3, 15, 11], &[-2, -1], FftKind::C2R, Direction::Inverse).lengths(&[15, 21]),
    ]);
    twinned.extend_from_slice(extra);
    let widened = [r2c(&[1, 45], -1), r2c(&[4, 85], -1), c2r(&[4, 71], -1, 141)];
    let twins = DeviceOptions {
        direct_dft: DirectDft::Never,
        ..SEPARATE
    };
    let widen = DeviceOptions {
        odd_real: OddReal::Widen,
        ..twins
    };
    let launches = |desc: &FftDesc, options| {
        let plan = FftPlan::new(desc.clone()).unwrap();
        plan.on_device_with(client, options).unwrap().twin_launches()
    };
    for desc in &twinned {
        assert_eq!(launches(desc, twins), 1, "{desc:?}");
        assert_eq!(launches(desc, widen), 0, "{desc:?}");
    }
    for desc in &widened {
        assert_eq!(launches(desc, twins), 0, "{desc:?}");
    }
    let mut rng = Rng::seeded();
    let mut errors = Vec::new();
    for desc in twinned.into_iter().chain(widened) {
        for options in [twins, widen] {
            let e = check_with(client, desc.clone(), &mut rng, options);
            assert!(e <= BOUND, "{desc:?} {options:?}: {e:.3e}");
            errors.push((format!("{desc:?} {options:?}"), e));
        }
    }
    report(test, &errors);
}

/// Stages whose cubes stay resident and walk many tiles, staging the next
/// one's input while transforming the current one: rows of many lengths,
/// column tiles with a ragged last tile, load windows, a four-step pass, a 2D
/// transform (an R2C stage reads real pairs: it stays one tile per cube). The
/// callers launch few resident cubes, so that each walks several tiles.
/// `long` adds the lengths whose working tile and staged input need more
/// shared memory than lavapipe's 32 KiB.
fn resident_cases(long: bool) -> Vec<FftDesc> {
    let mut cases = vec![
        FftDesc::new(&[13, 64], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[7, 500], &[-1], FftKind::C2C, Direction::Inverse),
        // Odd rows: no two-pair copies.
        FftDesc::new(&[5, 375], &[-1], FftKind::C2C, Direction::Forward),
        // First passes that split their butterflies, one pass and two.
        FftDesc::new(&[9, 47], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[7, 85], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[3, 96, 21], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 1 << 15], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[4, 48, 40], &[-2, -1], FftKind::C2C, Direction::Forward),
        // A zero-padding inverse (the load window holds 24 of 64 values), a truncating forward.
        FftDesc::new(&[11, 24], &[-1], FftKind::C2C, Direction::Inverse)
            .modes(&[24])
            .lengths(&[64]),
        FftDesc::new(&[10, 64], &[-1], FftKind::C2C, Direction::Forward).modes(&[17]),
        FftDesc::new(&[6, 256], &[-1], FftKind::R2C, Direction::Forward),
        // Composites above 16 that save a pass, run last: 192 = 8·24, 224 = 8·28.
        FftDesc::new(&[5, 192], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[4, 224], &[-1], FftKind::C2C, Direction::Forward),
        // Rader's rows, their first pass gathering the staged input: two
        // passes (211 = 15·14 + 1, 421 = 20·21 + 1) and three (541), several
        // tiles a cube, so that a stale x[0] would show.
        FftDesc::new(&[40, 211], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[13, 421], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[5, 541], &[-1], FftKind::C2C, Direction::Forward),
    ];
    if long {
        cases.extend([
            FftDesc::new(&[7, 1000], &[-1], FftKind::C2C, Direction::Inverse),
            FftDesc::new(&[5, 6144], &[-1], FftKind::C2C, Direction::Forward),
            // 16·16·27 on 8 warps, 16·21·32 on 336 threads.
            FftDesc::new(&[3, 6912], &[-1], FftKind::C2C, Direction::Inverse),
            FftDesc::new(&[2, 10752], &[-1], FftKind::C2C, Direction::Forward),
            FftDesc::new(&[3, 12288], &[-1], FftKind::C2C, Direction::Inverse),
        ]);
    }
    cases
}

fn check_resident<R: Runtime>(client: &ComputeClient<R>, test: &str, options: DeviceOptions, long: bool) {
    let mut rng = Rng::seeded();
    let mut errors = Vec::new();
    for desc in resident_cases(long) {
        let plan = FftPlan::new(desc.clone()).unwrap();
        let resident = plan.on_device_with(client, options).unwrap().resident_launches();
        // Every case transforms its last axis, whose length sets the bound.
        let lengths = desc.lengths.as_ref().unwrap_or(&desc.shape);
        let bound = if lengths[lengths.len() - 1] > 4096 {
            LONG_BOUND
        } else {
            BOUND
        };
        let e = check_with(client, desc.clone(), &mut rng, options);
        assert!(e <= bound, "{desc:?}: {e:.3e}");
        errors.push((format!("{desc:?} ({resident} resident launches)"), e));
        // Every case but the real one has a stage whose complex input is copied as it is.
        if desc.kind == FftKind::C2C {
            assert!(resident > 0, "{desc:?}: no resident stage");
        }
    }
    report(test, &errors);
}

#[test]
fn resident_cubes_fill_the_next_tile() {
    let options = DeviceOptions {
        prefetch: TilePrefetch::Always,
        resident_cubes: Some(3),
        direct_dft: DirectDft::Never,
        ..SEPARATE
    };
    check_resident(&client(), "resident_cubes_fill_the_next_tile", options, false);
    // A resident first pass of few radix-47 butterflies a signal splits them
    // over 4 threads (6 output pairs each); one of many stays unsplit.
    for (n, radices, threads) in [(141, vec![47, 3], 12), (3008, vec![47, 4, 16], 64)] {
        let desc = FftDesc::new(&[9, n], &[-1], FftKind::C2C, Direction::Forward);
        let device = FftPlan::new(desc).unwrap().on_device_with(&client(), options).unwrap();
        assert_eq!(device.stage_radices(), [radices], "{n}");
        assert_eq!(device.stage_threads(), [threads], "{n}");
    }
    // Never resident when told so.
    let never = DeviceOptions {
        prefetch: TilePrefetch::Never,
        ..options
    };
    for desc in resident_cases(false) {
        let device = FftPlan::new(desc).unwrap().on_device_with(&client(), never).unwrap();
        assert_eq!(device.resident_launches(), 0);
    }
}

/// The same on CUDA, whose resident cubes fill tiles by asynchronous copies
/// (wgpu has none), with the planner's own choice of cubes: run on a GPU
/// machine with `--ignored`.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn resident_cubes_fill_the_next_tile_on_cuda() {
    let client = crate::cuda_client_with_async_copies();
    for resident_cubes in [Some(3), None] {
        let options = DeviceOptions {
            prefetch: TilePrefetch::Always,
            resident_cubes,
            direct_dft: DirectDft::Never,
            ..SEPARATE
        };
        check_resident(&client, "resident_cubes_fill_the_next_tile_on_cuda", options, true);
    }
    // The default takes long rows resident (odd ones too, staged a pair a
    // copy, their radix-47 butterflies split over 4 threads, against the
    // oracle), and neither short rows nor FNO's column tiles.
    let odd_rows = FftDesc::new(&[200, 141], &[-1], FftKind::C2C, Direction::Forward);
    let e = check_with(&client, odd_rows.clone(), &mut Rng::seeded(), DeviceOptions::default());
    assert!(e <= BOUND, "{odd_rows:?}: {e:.3e}");
    let device = FftPlan::new(odd_rows.clone()).unwrap().on_device(&client).unwrap();
    assert_eq!(device.stage_threads(), [12]);
    for (desc, resident) in [
        (FftDesc::new(&[3, 12288], &[-1], FftKind::C2C, Direction::Forward), 1),
        (FftDesc::new(&[3, 6144], &[-1], FftKind::C2C, Direction::Inverse), 1),
        (odd_rows, 1),
        (FftDesc::new(&[7, 1000], &[-1], FftKind::C2C, Direction::Forward), 0),
        // Rader's rows stay off resident cubes.
        (FftDesc::new(&[300, 421], &[-1], FftKind::C2C, Direction::Forward), 0),
        (
            FftDesc::new(&[2, 3, 256, 256], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[64, 33]),
            0,
        ),
    ] {
        let device = FftPlan::new(desc.clone()).unwrap().on_device(&client).unwrap();
        assert_eq!(device.resident_launches(), resident, "{desc:?}");
    }
    // 6144 resident: a radix-24 pass saves one, and runs last; 6144 and
    // 6912 on 8 warps (27 one radix), 12288 on 12 (two extra rounds on 8
    // would be too many), 10752 from 14 warps to 11.
    for (n, radices, threads) in [
        (6144, vec![16, 16, 24], 256),
        (6912, vec![16, 16, 27], 256),
        (12288, vec![12, 32, 32], 384),
        (10752, vec![16, 21, 32], 336),
    ] {
        let device = FftPlan::new(FftDesc::new(&[3, n], &[-1], FftKind::C2C, Direction::Forward))
            .unwrap()
            .on_device(&client)
            .unwrap();
        assert_eq!(device.stage_radices(), [radices], "{n}");
        assert_eq!(device.stage_threads(), [threads], "{n}");
    }
}

/// Stages bound by shared memory (convolutions, prime radices above 7) lay
/// out their signals by the bank-conflict model: the same transform as the
/// plain layout, rows and columns, every kind, odd batches; Rader's 211 over
/// rows takes 16 lanes a signal instead of its 15 threads.
#[test]
fn shared_layouts_compute_the_same_transform() {
    let c2c = |shape: &[usize], axes: &[isize]| FftDesc::new(shape, axes, FftKind::C2C, Direction::Forward);
    let cases = [
        c2c(&[5, 211], &[-1]),
        c2c(&[3, 211, 5], &[-2]),
        c2c(&[7, 141], &[-1]),
        c2c(&[9, 85], &[-1]),
        c2c(&[2, 421, 3], &[-2]),
        FftDesc::new(&[4, 1021], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[5, 211], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[3, 141 / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[141]),
        FftDesc::new(&[2, 211, 211], &[-2, -1], FftKind::R2C, Direction::Forward),
    ];
    let plain = DeviceOptions {
        shared_layout: SharedLayout::Plain,
        ..FFT_ONLY
    };
    let client = client();
    let rows_211 = FftPlan::new(cases[0].clone()).unwrap();
    let threads = |options| rows_211.on_device_with(&client, options).unwrap().stage_threads();
    assert_eq!((threads(FFT_ONLY), threads(plain)), (vec![16], vec![15]));
    check_all("shared_layouts_compute_the_same_transform", cases, &[FFT_ONLY, plain]);
    // Both axes in one plane launch, whose stages keep their threads.
    let planes = [
        FftDesc::new(&[3, 51, 34], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 17, 45], &[-2, -1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[2, 6, 141], &[-2, -1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 141, 6], &[-2, -1], FftKind::R2C, Direction::Forward),
    ];
    let plane = |options: DeviceOptions| DeviceOptions {
        plane: PlaneFusion::Always,
        ..options
    };
    for desc in &planes {
        let device = FftPlan::new(desc.clone())
            .unwrap()
            .on_device_with(&client, plane(FFT_ONLY))
            .unwrap();
        assert_eq!(device.plane_launches(), 1, "{desc:?}");
    }
    check_all("shared_layouts_in_planes", planes, &[plane(FFT_ONLY), plane(plain)]);
}
