//! How a stage's tiles take their signals: whole rows of columns, coordinates
//! without a division, loads issued ahead. The planner's choices are asserted
//! in `planner.rs`; here each plan is checked against the oracle.

use super::*;

/// The cases of [`column_tiles_take_whole_rows`] on a device of `shared`
/// bytes of shared memory a cube: each with its columns and whether one cube
/// holds them all. 40 columns of 64 points: 320 threads and 21 KB at radix 8
/// (the old rule split them into tiles of 20). 33 columns of 256 points: 1056
/// threads at radix 8, 528 at radix 16, and 33 tile rows of 265 padded slots
/// (8 bytes each) of shared memory.
pub(super) fn column_cases(shared: usize) -> [(FftDesc, usize, bool); 2] {
    [
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
    ]
}

/// A column transform's tile takes every column of its row of tiles (one
/// contiguous block) where one cube can hold them, through radix 16 when the
/// default radix's threads are too many; against the oracle either way.
#[test]
fn column_tiles_take_whole_rows() {
    let shared = client().properties().hardware.max_shared_memory_size;
    check_all(
        "column_tiles_take_whole_rows",
        drawn_seed(),
        column_cases(shared).map(|(desc, _, _)| desc),
        &[DeviceOptions::default()],
    );
}

/// The cases of [`one_row_of_tiles_takes_coordinates_without_division`] and
/// how many of their stage launches take one row of tiles.
pub(super) fn one_row_cases() -> [(FftDesc, usize); 4] {
    let c2c = |shape: &[usize], axes: &[isize]| FftDesc::new(shape, axes, FftKind::C2C, Direction::Forward);
    [
        (c2c(&[37, 211], &[-1]), 1),
        (c2c(&[37, 85], &[-1]), 0),
        (c2c(&[5, 211, 6], &[-2]), 0),
        (FftDesc::new(&[37, 211], &[-1], FftKind::R2C, Direction::Forward), 1),
    ]
}

/// Row stages whose tiles go through shared memory both ways (Rader's C2C
/// 211, R2C 211's twins) find their tiles' coordinates without a division; a
/// stage storing from registers (85's rows) and a column stage over two batch
/// extents keep the general form. Every plan, with a ragged last tile,
/// matches the oracle.
#[test]
fn one_row_of_tiles_takes_coordinates_without_division() {
    // The one-row cases really take one row of tiles on this device.
    let limits = DeviceLimits::of(&client());
    for (desc, one_row) in one_row_cases() {
        let recipe = lowered(&desc, &limits, FFT_ONLY);
        let taken = recipe.stages().filter(|cfg| cfg.one_tile_row).count();
        assert_eq!(taken, one_row, "{desc:?}");
    }
    check_all(
        "one_row_of_tiles_takes_coordinates_without_division",
        drawn_seed(),
        one_row_cases().map(|(desc, _)| desc),
        &[FFT_ONLY],
    );
}

/// Tile loads whose input is not a Hermitian spectrum issue every load of
/// their walk before placing any value: convolution rows (Rader's C2C and R2C
/// 211, Bluestein's C2C 1019) walking units, R2C 85's real twins and Rader's
/// 211 columns walking the tile flat. The irfft's Hermitian bins and C2C
/// 85's rows of complex pairs place each value as it lands. Every plan, with
/// a ragged last tile, matches the oracle. (Which stages load ahead is a
/// crate-private rule, checked by the crate's unit tests.)
#[test]
fn tile_loads_issue_their_rounds_ahead() {
    let cases = [
        FftDesc::new(&[37, 211], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[37, 211], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[5, 1019], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[37, 106], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[211]),
        FftDesc::new(&[37, 85], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[37, 85], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[3, 211, 9], &[-2], FftKind::C2C, Direction::Forward),
    ];
    check_all("tile_loads_issue_their_rounds_ahead", drawn_seed(), cases, &[FFT_ONLY]);
}
