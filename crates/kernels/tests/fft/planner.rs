//! The lowering's decisions, on the CPU without a device: the kernels,
//! radices, threads and tiles `lower` picks for the cases of the oracle tests
//! under a device's limits. Lavapipe's decisions use [`DeviceLimits::LAVAPIPE`] (where they were first checked), those the
//! CUDA tests rely on [`DeviceLimits::H100`].

use super::any_length::ragged_plans;
use super::plane::{plane_cases, thin_plane_cases};
use super::primes::{in_planes, large_prime_cases, layout_cases, layout_planes, PLAIN};
use super::real::{cuda_twinned_cases, twinned_cases, widened_cases, TWINS, WIDEN};
use super::resident::{resident_cases, staged_plans, RESIDENT};
use super::tiles::{column_cases, one_row_cases};
use super::*;
use fno_kernels::fft::lowering::{Kernel, PlaneConfig};
use fno_kernels::fft::{FftError, MIN_PLANE_THREADS};

#[test]
fn invalid_device_options_are_errors() {
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
        let result = lower(&plan, &DeviceLimits::LAVAPIPE, options);
        assert!(matches!(result, Err(FftError::Invalid(_))), "{options:?}");
    }
}

/// `last_two_axes_in_one_plane_launch`: a plane launch when asked for, the
/// rules' choice by default, none when refused.
#[test]
fn plane_launches_follow_the_options() {
    for (desc, by_default) in plane_cases() {
        let planes = |options| lowered(&desc, &DeviceLimits::LAVAPIPE, options).planes().count();
        assert_eq!(planes(ALWAYS_PLANE), 1, "{desc:?}: asked for a plane launch");
        assert_eq!(planes(PLANE) == 1, by_default, "{desc:?}: default choice");
        assert_eq!(planes(SEPARATE), 0, "{desc:?}: asked for none");
    }
}

/// `thin_plane_cubes_only_when_asked`: a plane cube of fewer than
/// `MIN_PLANE_THREADS` threads (85² under lavapipe's limits) only when asked for.
#[test]
fn thin_plane_cubes_only_when_asked() {
    for desc in thin_plane_cases() {
        let asked: Vec<usize> = lowered(&desc, &DeviceLimits::LAVAPIPE, ALWAYS_PLANE)
            .planes()
            .map(PlaneConfig::threads)
            .collect();
        assert_eq!(asked.len(), 1, "{desc:?}: asked for a plane launch");
        assert!(asked[0] < MIN_PLANE_THREADS, "{desc:?}: {asked:?} threads");
        let by_default = lowered(&desc, &DeviceLimits::LAVAPIPE, PLANE).planes().count();
        assert_eq!(
            by_default == 1,
            asked[0] >= MIN_PLANE_THREADS,
            "{desc:?}: {asked:?} threads"
        );
    }
}

/// `shared_layouts_compute_the_same_transform`: Rader's 211 over rows takes
/// 16 lanes a signal in the modelled layout, its own 15 threads in the plain
/// one; the plane cases run as planes.
#[test]
fn shared_layouts_of_convolution_rows() {
    let rows_211 = &layout_cases()[0];
    let threads = |options| stage_threads(&lowered(rows_211, &DeviceLimits::LAVAPIPE, options));
    assert_eq!((threads(FFT_ONLY), threads(PLAIN)), (vec![16], vec![15]));
    for desc in layout_planes() {
        let planes = lowered(&desc, &DeviceLimits::LAVAPIPE, in_planes(FFT_ONLY))
            .planes()
            .count();
        assert_eq!(planes, 1, "{desc:?}");
    }
}

/// The largest prime factor of `n`.
fn largest_prime(n: usize) -> usize {
    (2..=n)
        .rev()
        .find(|&p| n.is_multiple_of(p) && (2..p).all(|d| !p.is_multiple_of(d)))
        .unwrap()
}

/// `large_prime_radices`: a pass of the largest prime's radix, not a
/// convolution (asserted on the per-axis launches; the plane launch runs the
/// same passes).
#[test]
fn large_primes_run_as_radices() {
    for desc in large_prime_cases() {
        let axis = desc.axes[desc.axes.len() - 1].rem_euclid(desc.shape.len() as isize) as usize;
        let n = desc.lengths.as_ref().map_or(desc.shape[axis], |l| l[l.len() - 1]);
        let largest = largest_prime(n);
        let radices = stage_radices(&lowered(&desc, &DeviceLimits::LAVAPIPE, SEPARATE_FFTS));
        assert!(
            radices.iter().flatten().any(|&r| r == largest),
            "{desc:?}: no radix-{largest} pass in {radices:?}"
        );
    }
}

/// `one_row_of_tiles_takes_coordinates_without_division`: which stages take
/// their tiles' coordinates without a division.
#[test]
fn one_row_of_tiles() {
    for (desc, one_row) in one_row_cases() {
        let recipe = lowered(&desc, &DeviceLimits::LAVAPIPE, FFT_ONLY);
        let taken = recipe.stages().filter(|cfg| cfg.one_tile_row).count();
        assert_eq!(taken, one_row, "{desc:?}");
    }
}

/// `column_tiles_take_whole_rows`: a tile of every column where one cube
/// holds them, narrower tiles otherwise.
#[test]
fn column_tiles_take_whole_rows() {
    for (desc, columns, fits) in column_cases(DeviceLimits::LAVAPIPE.shared_memory) {
        let tiles = stage_tiles(&lowered(&desc, &DeviceLimits::LAVAPIPE, DeviceOptions::default()));
        if fits {
            assert_eq!(tiles, vec![columns], "{desc:?}");
        } else {
            assert!(tiles.iter().all(|&t| t < columns), "{desc:?}: {tiles:?}");
        }
    }
}

/// `ragged_first_passes_trade_places_on_rows`: the default rules' radices.
#[test]
fn ragged_first_passes_trade_places_on_rows() {
    for (desc, radices) in ragged_plans() {
        let planned = stage_radices(&lowered(&desc, &DeviceLimits::LAVAPIPE, DeviceOptions::default()));
        assert_eq!(planned, [radices], "{desc:?}");
    }
}

/// `staged_stages_take_their_largest_pass_last`: the radices of resident and
/// column stages.
#[test]
fn staged_stages_take_their_largest_pass_last() {
    for (desc, options, radices) in staged_plans() {
        assert_eq!(
            stage_radices(&lowered(&desc, &DeviceLimits::LAVAPIPE, options)),
            [radices],
            "{desc:?}"
        );
    }
}

/// Asserts that `twinned` run as twins under [`TWINS`] and widened under
/// [`WIDEN`], and `widened` widened under [`TWINS`], on a device of `limits`.
fn assert_twins(limits: &DeviceLimits, twinned: &[FftDesc], widened: &[FftDesc]) {
    let twins = |desc: &FftDesc, options| twin_stages(&lowered(desc, limits, options));
    for desc in twinned {
        assert_eq!(twins(desc, TWINS), 1, "{desc:?}");
        assert_eq!(twins(desc, WIDEN), 0, "{desc:?}");
    }
    for desc in widened {
        assert_eq!(twins(desc, TWINS), 0, "{desc:?}");
    }
}

/// `odd_real_transforms_pair_signals`: which odd real transforms pair signals.
#[test]
fn odd_real_transforms_pair_signals() {
    assert_twins(&DeviceLimits::LAVAPIPE, &twinned_cases(), &widened_cases());
}

/// `odd_real_transforms_pair_signals_on_cuda`: the same on an H100, and the
/// lengths whose convolution fits one cube only there.
#[test]
fn odd_real_transforms_pair_signals_on_h100() {
    let mut twinned = twinned_cases();
    twinned.extend(cuda_twinned_cases());
    assert_twins(&DeviceLimits::H100, &twinned, &widened_cases());
}

/// `resident_cubes_fill_the_next_tile`: every complex case runs a resident
/// stage; a resident first pass of few radix-47 butterflies a signal splits
/// them over 4 threads (6 output pairs each), one of many stays unsplit; and
/// none is resident when told so.
#[test]
fn resident_cubes_fill_the_next_tile() {
    for desc in resident_cases(false).iter().filter(|desc| desc.kind == FftKind::C2C) {
        assert!(
            resident_stages(&lowered(desc, &DeviceLimits::LAVAPIPE, RESIDENT)) > 0,
            "{desc:?}"
        );
    }
    for (n, radices, threads) in [(141, vec![47, 3], 12), (3008, vec![47, 4, 16], 64)] {
        let desc = FftDesc::new(&[9, n], &[-1], FftKind::C2C, Direction::Forward);
        let recipe = lowered(&desc, &DeviceLimits::LAVAPIPE, RESIDENT);
        assert_eq!(stage_radices(&recipe), [radices], "{n}");
        assert_eq!(stage_threads(&recipe), [threads], "{n}");
    }
    let never = DeviceOptions {
        prefetch: TilePrefetch::Never,
        ..RESIDENT
    };
    for desc in resident_cases(false) {
        assert_eq!(
            resident_stages(&lowered(&desc, &DeviceLimits::LAVAPIPE, never)),
            0,
            "{desc:?}"
        );
    }
}

/// `resident_cubes_fill_the_next_tile_on_cuda`: on an H100 every complex
/// case runs a resident stage, with three cubes or the planner's own count;
/// the default takes long rows resident (odd ones too, their radix-47
/// butterflies split over 4 threads), and neither short rows, Rader's rows
/// nor FNO's column tiles.
#[test]
fn resident_cubes_fill_the_next_tile_on_h100() {
    for resident_cubes in [Some(3), None] {
        let options = DeviceOptions {
            resident_cubes,
            ..RESIDENT
        };
        for desc in resident_cases(true).iter().filter(|desc| desc.kind == FftKind::C2C) {
            assert!(
                resident_stages(&lowered(desc, &DeviceLimits::H100, options)) > 0,
                "{desc:?} {options:?}"
            );
        }
    }
    let default = DeviceOptions::default();
    let odd_rows = FftDesc::new(&[200, 141], &[-1], FftKind::C2C, Direction::Forward);
    assert_eq!(stage_threads(&lowered(&odd_rows, &DeviceLimits::H100, default)), [12]);
    for (desc, resident) in [
        (FftDesc::new(&[3, 12288], &[-1], FftKind::C2C, Direction::Forward), 1),
        (FftDesc::new(&[3, 6144], &[-1], FftKind::C2C, Direction::Inverse), 1),
        (odd_rows, 1),
        (FftDesc::new(&[7, 1000], &[-1], FftKind::C2C, Direction::Forward), 0),
        (FftDesc::new(&[300, 421], &[-1], FftKind::C2C, Direction::Forward), 0),
        (
            FftDesc::new(&[2, 3, 256, 256], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[64, 33]),
            0,
        ),
    ] {
        assert_eq!(
            resident_stages(&lowered(&desc, &DeviceLimits::H100, default)),
            resident,
            "{desc:?}"
        );
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
        let desc = FftDesc::new(&[3, n], &[-1], FftKind::C2C, Direction::Forward);
        let recipe = lowered(&desc, &DeviceLimits::H100, default);
        assert_eq!(stage_radices(&recipe), [radices], "{n}");
        assert_eq!(stage_threads(&recipe), [threads], "{n}");
    }
}

/// `compiled_unit_strides_and_measured_plans_on_cuda`: on an H100 every kind
/// of the benchmark's lengths has a stage with its unit stride compiled in.
#[test]
fn compiled_unit_strides_on_h100() {
    for n in COMPILED_STRIDE_LENGTHS {
        for desc in every_kind(n) {
            let recipe = lowered(&desc, &DeviceLimits::H100, FFT_COMPILED_STRIDES);
            assert!(unit_stride_stages(&recipe) >= 1, "{desc:?}");
        }
    }
}

/// No launch asks for more threads a cube than the device has, under
/// lavapipe's and an H100's limits, on the cases the oracle tests run (a
/// resident stage that split its first pass's butterflies once took 61
/// signals of 20 threads).
#[test]
fn launches_fit_the_cube_threads() {
    let cases = super::windows::window_cases()
        .into_iter()
        .chain(super::windows::any_length_window_cases())
        .chain(super::rader::rader_cases())
        .chain(super::resident::resident_cases(true))
        .chain(
            [85, 141, 211, 212, 421, 1000, 4099, 12288]
                .into_iter()
                .flat_map(every_kind),
        );
    for desc in cases {
        for limits in [DeviceLimits::LAVAPIPE, DeviceLimits::H100] {
            let recipe = lowered(&desc, &limits, DeviceOptions::default());
            let threads = recipe
                .launches
                .iter()
                .map(|launch| match &launch.kernel {
                    Kernel::Stage { cfg, .. } => cfg.threads_per_cube(),
                    Kernel::Plane { cfg, .. } => cfg.threads(),
                    Kernel::Dft { cfg, .. } => cfg.threads(),
                    Kernel::TensorCore { cfg, .. } => cfg.threads(),
                    Kernel::HalfSpectrum { .. } => 0,
                })
                .max()
                .unwrap_or(0);
            assert!(
                threads <= limits.cube_threads,
                "{desc:?} {limits:?}: {threads} threads a cube"
            );
        }
    }
    let split = FftDesc::new(&[2, 211, 212], &[-2, -1], FftKind::C2C, Direction::Inverse);
    let recipe = lowered(&split, &DeviceLimits::H100, DeviceOptions::default());
    let last = recipe.stages().last().unwrap();
    assert_eq!((last.radices.clone(), last.butterfly_pairs), (vec![53, 4], 6));
}
