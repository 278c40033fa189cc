//! Prime factors above 7: mixed-radix passes of one butterfly per prime up to
//! `MAX_PRIME_RADIX`, Rader's and Bluestein's convolutions beyond, and the
//! shared-memory layouts of the stages they bind. The planner's choices for
//! these cases are asserted in `planner.rs`.

use super::*;

/// Lengths whose prime factors above 7 are at most `MAX_PRIME_RADIX`: every
/// kind on primes and products with them (R2C 94 packs into a 47-point
/// transform), columns, a 2D transform, windows and a four-step length.
pub(super) fn large_prime_cases() -> Vec<FftDesc> {
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
    cases
}

/// Lengths whose prime factors above 7 are at most `MAX_PRIME_RADIX` run as
/// mixed-radix passes, one butterfly per such prime, not as a convolution:
/// every kind on primes and products with them (R2C 94 packs into a 47-point
/// transform), columns, a 2D transform, windows and a four-step length, the
/// planner's radices asserted, against the oracle.
#[test]
fn large_prime_radices() {
    let plane = DeviceOptions {
        plane: PlaneFusion::Always,
        ..SEPARATE_FFTS
    };
    // First passes split finer (four output pairs a thread: 47 over 6
    // threads, 67 over 9) and none split.
    let four_pairs = DeviceOptions {
        butterfly_pairs: Some(4),
        ..SEPARATE_FFTS
    };
    let unsplit = DeviceOptions {
        butterfly_pairs: Some(0),
        ..SEPARATE_FFTS
    };
    check_all(
        "large_prime_radices",
        drawn_seed(),
        large_prime_cases(),
        &[SEPARATE_FFTS, plane, four_pairs, unsplit],
    );
}

/// The default options with Bluestein's algorithm for Rader's primes.
pub(super) const BLUESTEIN: DeviceOptions = DeviceOptions {
    primes: PrimeAlgorithm::Bluestein,
    ..FFT_ONLY
};

/// Primes above `MAX_PRIME_RADIX` with a 7-smooth predecessor: every kind,
/// rows and columns, windows and numpy's lengths.
pub(super) fn rader_cases() -> Vec<FftDesc> {
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
    cases
}

/// Primes above `MAX_PRIME_RADIX` whose predecessor is 7-smooth run through
/// Rader's algorithm by default (a convolution of length p − 1 in one cube) and through Bluestein's
/// when asked: every kind, rows and columns, windows and numpy's lengths, both
/// against the oracle, and the planner's choice asserted.
#[test]
fn rader_and_bluestein_primes() {
    let cases = rader_cases();
    // Each case really runs Rader's algorithm, and Bluestein's when asked.
    let limits = DeviceLimits::of(&client());
    for desc in &cases {
        assert!(
            rader_stages(&lowered(desc, &limits, FFT_ONLY)) >= 1,
            "{desc:?}: no Rader stage"
        );
        assert_eq!(rader_stages(&lowered(desc, &limits, BLUESTEIN)), 0, "{desc:?}");
    }
    check_all(
        "rader_and_bluestein_primes",
        drawn_seed(),
        cases,
        &[FFT_ONLY, BLUESTEIN],
    );
}

/// Rader's row lengths of [`rader_rows_run_in_two_balanced_passes`] and the
/// two radices of their convolution where it splits into two up to 24.
pub(super) const RADER_ROWS: [(usize, Option<[usize; 2]>); 6] = [
    (193, Some([12, 16])),
    (257, Some([16, 16])),
    (421, Some([20, 21])),
    (577, Some([24, 24])),
    (541, None),
    (211, None),
];

/// Rader's rows whose convolution splits into two radices up to 24 run in
/// those two passes, the smaller first (the larger first for R2C's twins),
/// in cubes of at most 128 threads; 541 (540 = 20·27) and 211 (15·14
/// already) keep their plans, and every plan matches the oracle.
#[test]
fn rader_rows_run_in_two_balanced_passes() {
    let cases: Vec<FftDesc> = RADER_ROWS.iter().flat_map(|&(n, _)| every_kind(n)).collect();
    let limits = DeviceLimits::of(&client());
    for desc in &cases {
        assert_eq!(rader_stages(&lowered(desc, &limits, FFT_ONLY)), 1, "{desc:?}");
    }
    check_all(
        "rader_rows_run_in_two_balanced_passes",
        drawn_seed(),
        cases,
        &[FFT_ONLY],
    );
}

/// The cases of [`shared_layouts_compute_the_same_transform`] over one axis.
pub(super) fn layout_cases() -> [FftDesc; 9] {
    let c2c = |shape: &[usize], axes: &[isize]| FftDesc::new(shape, axes, FftKind::C2C, Direction::Forward);
    [
        c2c(&[5, 211], &[-1]),
        c2c(&[3, 211, 5], &[-2]),
        c2c(&[7, 141], &[-1]),
        c2c(&[9, 85], &[-1]),
        c2c(&[2, 421, 3], &[-2]),
        FftDesc::new(&[4, 1021], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[5, 211], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[3, 141 / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[141]),
        FftDesc::new(&[2, 211, 211], &[-2, -1], FftKind::R2C, Direction::Forward),
    ]
}

/// The cases of [`shared_layouts_compute_the_same_transform`] in plane launches.
pub(super) fn layout_planes() -> [FftDesc; 4] {
    [
        FftDesc::new(&[3, 51, 34], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 17, 45], &[-2, -1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[2, 6, 141], &[-2, -1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 141, 6], &[-2, -1], FftKind::R2C, Direction::Forward),
    ]
}

/// The default options with each signal's own threads in shared memory.
pub(super) const PLAIN: DeviceOptions = DeviceOptions {
    shared_layout: SharedLayout::Plain,
    ..FFT_ONLY
};

/// `options` with the last two axes in one plane launch wherever it fits.
pub(super) fn in_planes(options: DeviceOptions) -> DeviceOptions {
    DeviceOptions {
        plane: PlaneFusion::Always,
        ..options
    }
}

/// Stages bound by shared memory (convolutions, prime radices above 7) lay
/// out their signals by the bank-conflict model: the same transform as the
/// plain layout, rows and columns, every kind, odd batches; Rader's 211 over
/// rows takes 16 lanes a signal instead of its 15 threads.
#[test]
fn shared_layouts_compute_the_same_transform() {
    let seed = drawn_seed();
    check_all(
        "shared_layouts_compute_the_same_transform",
        seed,
        layout_cases(),
        &[FFT_ONLY, PLAIN],
    );
    // Both axes in one plane launch, whose stages keep their threads.
    let limits = DeviceLimits::of(&client());
    for desc in &layout_planes() {
        let recipe = lowered(desc, &limits, in_planes(FFT_ONLY));
        assert_eq!(recipe.planes().count(), 1, "{desc:?}: no plane launch");
    }
    check_all(
        "shared_layouts_in_planes",
        seed,
        layout_planes(),
        &[in_planes(FFT_ONLY), in_planes(PLAIN)],
    );
}
