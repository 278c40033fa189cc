//! Prime factors above 7 up to `MAX_PRIME_RADIX`: mixed-radix passes of one
//! butterfly per prime (larger ones: `rader.rs`, `bluestein.rs`), and the
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
