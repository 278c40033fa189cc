//! The FFT paths that run only on CUDA (asynchronous copies, the shared
//! memory that longer convolutions need), against the oracle: run on a GPU
//! machine with `--ignored`. Their plans under an H100's limits are asserted
//! on the CPU in `planner.rs`.

use super::bluestein::BLUESTEIN;
use super::precision::{check_half_on, mixed_cases};
use super::rader::rader_cases;
use super::real::{check_odd_real, cuda_twinned_cases};
use super::resident::{check_resident, resident_cases, RESIDENT};
use super::windows::any_length_window_cases;
use super::*;

/// The same as `resident_cubes_fill_the_next_tile` on CUDA, whose resident
/// cubes fill tiles by asynchronous copies (wgpu has none), with the
/// planner's own choice of cubes: run on a GPU machine with `--ignored`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn resident_cubes_fill_the_next_tile_on_cuda() {
    let client = crate::cuda_client_with_async_copies();
    let seed = drawn_seed();
    for resident_cubes in [Some(3), None] {
        let options = DeviceOptions {
            resident_cubes,
            ..RESIDENT
        };
        check_resident(
            &client,
            "resident_cubes_fill_the_next_tile_on_cuda",
            options,
            true,
            seed,
        );
    }
    // The default takes long odd rows resident, staged a pair a copy, their
    // radix-47 butterflies split over 4 threads.
    let odd_rows = FftDesc::new(&[200, 141], &[-1], FftKind::C2C, Direction::Forward);
    let device = device_with(&client, &odd_rows, DeviceOptions::default());
    assert_eq!(resident_stages(device.recipe()), 1, "{odd_rows:?}: no resident stage");
    let e = error_of(&client, &device, seed);
    assert!(e <= BOUND, "{odd_rows:?} (seed {seed}): {e:.3e}");
}

/// The same as `odd_real_transforms_pair_signals` on CUDA, with the lengths
/// whose convolution fits one cube only there (Bluestein's 4099, 8232
/// points; Rader's 421 over rows, one butterfly of radix 5 a thread).
#[test]
#[ignore = "needs a CUDA GPU"]
fn odd_real_transforms_pair_signals_on_cuda() {
    check_odd_real(
        &crate::cuda_client_with_async_copies(),
        "odd_real_transforms_pair_signals_on_cuda",
        &cuda_twinned_cases(),
        drawn_seed(),
    );
}

/// Compiled unit strides on CUDA, where they run one-cube Rader, Bluestein
/// and resident stages lavapipe does not: every kind of the benchmark's
/// lengths against the oracle, and measured plans of the Rader lengths.
#[test]
#[ignore = "needs a CUDA GPU"]
fn compiled_unit_strides_and_measured_plans_on_cuda() {
    let client = crate::cuda_client_with_async_copies();
    let mut seed = drawn_seed();
    let mut errors = Vec::new();
    for n in COMPILED_STRIDE_LENGTHS {
        for desc in every_kind(n) {
            let bound = if n > 4096 { LONG_BOUND } else { BOUND };
            let device = device_with(&client, &desc, FFT_COMPILED_STRIDES);
            assert!(unit_stride_stages(device.recipe()) >= 1, "{desc:?}");
            let e = error_of(&client, &device, seed);
            assert!(e <= bound, "{desc:?} compiled strides (seed {seed}): {e:.3e}");
            errors.push((format!("{desc:?} compiled strides"), e));
            seed += 1;
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
            let e = error_of(&client, &measured, seed);
            assert!(e <= BOUND, "{desc:?} measured (seed {seed}): {e:.3e}");
            errors.push((format!("{desc:?} measured"), e));
            seed += 1;
        }
    }
    report("compiled_unit_strides_and_measured_plans_on_cuda", &errors);
}

/// Half-precision buffers on CUDA, f16 and native bf16, against the oracle:
/// every kind of powers of two and of any length, windows on axes of any
/// length and four-step lengths, primes by Rader and Bluestein, resident
/// cubes staging half values by asynchronous copies. (Each plan compiles its
/// kernels through NVRTC: the cases are few enough to run in minutes.)
#[test]
#[ignore = "needs a CUDA GPU"]
fn half_precision_on_cuda() {
    let client = crate::cuda_client_with_async_copies();
    assert_eq!(Precision::BF16.stored_on(&client), Stored::BF16);
    let client = [client];
    let seed = drawn_seed();
    let lengths = [2, 16, 256, 4096, 85, 421, 1000, 4099, 12288];
    let kinds: Vec<FftDesc> = lengths.into_iter().flat_map(every_kind).collect();
    check_half_on(&client, "half_kinds_on_cuda", seed, kinds, &[DeviceOptions::default()]);
    check_half_on(
        &client,
        "half_windows_on_cuda",
        seed,
        any_length_window_cases(),
        &[DeviceOptions::default()],
    );
    check_half_on(&client, "half_primes_on_cuda", seed, rader_cases(), &[BLUESTEIN]);
    check_half_on(
        &client,
        "half_resident_on_cuda",
        seed,
        resident_cases(false),
        &[RESIDENT],
    );
}

/// f32 in, half out and back on CUDA (`mixed_cases`), f16 and native bf16.
#[test]
#[ignore = "needs a CUDA GPU"]
fn mixed_precisions_on_cuda() {
    let client = [crate::cuda_client_with_async_copies()];
    let seed = drawn_seed();
    for half in [Precision::F16, Precision::BF16] {
        let name = format!("mixed_precisions_on_cuda {half}");
        check_all_on(&client, &name, seed, mixed_cases(half), &[DeviceOptions::default()]);
    }
}
