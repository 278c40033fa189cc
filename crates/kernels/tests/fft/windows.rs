//! Truncation and zero-padding windows over each axis (neuraloperator's modes,
//! mode orders, numpy's crop and pad), through the FFT kernels, pruned or not,
//! and through the direct DFT, whose crossover with the FFT path the planner
//! prices (asserted in `planner.rs`).

use super::*;

#[test]
fn truncation_and_zero_padding_windows() {
    // The pruned kernels (strides compiled in) must compute the same function.
    check_all(
        "truncation_and_zero_padding_windows",
        drawn_seed(),
        window_cases(),
        FFT_PRUNED_OR_NOT,
    );
}

/// Truncating and zero-padding windows on one to three axes, in FFT and
/// fftshift order, of short and four-step lengths, and numpy's crop and pad.
pub(super) fn window_cases() -> Vec<FftDesc> {
    vec![
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
    ]
}

#[test]
fn any_length_axes_windows_and_padding() {
    check_all(
        "any_length_axes_windows_and_padding",
        drawn_seed(),
        any_length_window_cases(),
        FFT_PRUNED_OR_NOT,
    );
}

/// Windows and padding on axes of any length: Darcy-sized 2D grids, inner
/// axes, long Bluestein rows and columns, crops and pads to odd lengths.
pub(super) fn any_length_window_cases() -> Vec<FftDesc> {
    vec![
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
    ]
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
