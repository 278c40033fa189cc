//! The direct DFT (`src/fft/algorithm/direct_dft.rs`): an axis as one matrix
//! product between its stored windows where that costs less than an FFT.
//! Against the oracle, and the planner's crossover (`*_plan`, no device).

use super::*;

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
    check_all("direct_dft_every_kind_and_window", drawn_seed(), cases, DIRECT);
}

/// The cases of [`direct_dft_crossover_prices_the_convolution`]: each with
/// its options, whether it runs Rader's algorithm and whether it runs as a
/// direct DFT.
pub(super) fn crossover_cases() -> [(FftDesc, DeviceOptions, bool, bool); 6] {
    let full = FftDesc::new(&[3, 211], &[-1], FftKind::R2C, Direction::Forward);
    let few_modes = full.clone().modes(&[8]);
    let radix = FftDesc::new(&[3, 141], &[-1], FftKind::R2C, Direction::Forward);
    let (radix_few, radix_more) = (radix.clone().modes(&[8]), radix.modes(&[48]));
    [
        (full.clone(), DeviceOptions::default(), true, false),
        (full, DEFAULT_BLUESTEIN, false, true),
        (few_modes.clone(), DeviceOptions::default(), false, true),
        (few_modes, DEFAULT_BLUESTEIN, false, true),
        (radix_few, DeviceOptions::default(), false, false),
        (radix_more, DeviceOptions::default(), false, false),
    ]
}

/// The default options with Bluestein's algorithm for Rader's primes.
pub(super) const DEFAULT_BLUESTEIN: DeviceOptions = DeviceOptions {
    primes: PrimeAlgorithm::Bluestein,
    ..PLANE
};

/// The direct DFT's crossover prices the FFT path it would replace: for R2C
/// 211, the convolution (about 28·m·log2 m multiply-adds for Rader's m = 210)
/// runs Rader's algorithm, while priced against Bluestein's 432 points it
/// stays a direct DFT, as does a window of 8 modes either way; R2C 141 =
/// 47·3 has a radix plan and keeps even 8 bins through the FFT. All against
/// the oracle.
#[test]
fn direct_dft_crossover_prices_the_convolution() {
    // Each case once, under both options.
    let cases = crossover_cases()
        .into_iter()
        .filter(|(_, options, _, _)| *options == DeviceOptions::default())
        .map(|(desc, _, _, _)| desc);
    check_all(
        "direct_dft_crossover_prices_the_convolution",
        drawn_seed(),
        cases,
        &[DeviceOptions::default(), DEFAULT_BLUESTEIN],
    );
}

/// The plans of `direct_dft_crossover_prices_the_convolution`: Rader's algorithm, a direct
/// DFT (no stage launch) or a radix plan, as the crossover prices them.
#[test]
fn direct_dft_crossover_plan() {
    for (desc, options, rader, direct) in crossover_cases() {
        let recipe = lowered(&desc, &DeviceLimits::LAVAPIPE, options);
        assert_eq!(rader_stages(&recipe) > 0, rader, "{desc:?} under {options:?}");
        assert_eq!(recipe.stages().next().is_none(), direct, "{desc:?} under {options:?}");
    }
}
