//! Truncation and zero-padding windows over each axis (neuraloperator's modes,
//! mode orders, numpy's crop and pad), through the FFT kernels, pruned or not
//! (the direct DFT's windows: `direct_dft.rs`).

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
