//! Rader's algorithm (`src/fft/algorithm/rader.rs`): a prime length whose
//! predecessor is 7-smooth as a cyclic convolution of length p − 1 on the
//! mixed-radix passes, in one cube. Against the oracle, and the planner's
//! choices under lavapipe's limits (`*_plan`, no device).

use super::bluestein::BLUESTEIN;
use super::*;

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
/// Rader's algorithm by default (a convolution of length p − 1 in one cube):
/// every kind, rows and columns, windows and numpy's lengths, against the
/// oracle, each case asserted to take a Rader stage.
#[test]
fn rader_primes() {
    let cases = rader_cases();
    let limits = DeviceLimits::of(&client());
    for desc in &cases {
        assert!(
            rader_stages(&lowered(desc, &limits, FFT_ONLY)) >= 1,
            "{desc:?}: no Rader stage"
        );
    }
    check_all("rader_primes", drawn_seed(), cases, &[FFT_ONLY]);
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

/// The plans of `rader_primes` and `bluestein_primes`: Rader's algorithm by
/// default, Bluestein's when asked; each of a convolution's threads over rows takes one butterfly
/// of its smallest radix (where it runs in one launch: 2017 is a four-step
/// under lavapipe's limits), before the shared layout may add idle lanes.
#[test]
fn rader_and_bluestein_plans() {
    let max_threads = DeviceLimits::LAVAPIPE.cube_threads.min(1024);
    for desc in rader_cases() {
        assert!(
            rader_stages(&lowered(&desc, &DeviceLimits::LAVAPIPE, FFT_ONLY)) >= 1,
            "{desc:?} does not run through Rader's algorithm"
        );
        assert_eq!(
            rader_stages(&lowered(&desc, &DeviceLimits::LAVAPIPE, BLUESTEIN)),
            0,
            "{desc:?}"
        );
        if desc.axes != [-1] {
            continue;
        }
        for options in [FFT_ONLY, BLUESTEIN] {
            let plain = DeviceOptions {
                shared_layout: SharedLayout::Plain,
                ..options
            };
            let recipe = lowered(&desc, &DeviceLimits::LAVAPIPE, plain);
            if recipe.launches.len() > 1 {
                continue;
            }
            for (radices, threads) in stage_radices(&recipe).iter().zip(stage_threads(&recipe)) {
                let pass_len: usize = radices.iter().product();
                let smallest = radices.iter().min().unwrap();
                assert_eq!(threads, (pass_len / smallest).min(max_threads), "{desc:?} {radices:?}");
            }
        }
    }
}

/// The plans of `rader_rows_run_in_two_balanced_passes`: the two radices, the smaller
/// first (the larger first for R2C's twins), in cubes of at most 128 threads;
/// 541 keeps three passes, 211 its 15·14.
#[test]
fn rader_rows_plan() {
    for (n, two_pass) in RADER_ROWS {
        for desc in every_kind(n) {
            let recipe = lowered(&desc, &DeviceLimits::LAVAPIPE, FFT_ONLY);
            assert_eq!(rader_stages(&recipe), 1, "{desc:?}");
            let radices = &stage_radices(&recipe)[0];
            match two_pass {
                Some([small, large]) if desc.kind == FftKind::R2C => assert_eq!(radices, &[large, small], "{desc:?}"),
                Some(pair) => assert_eq!(radices, &pair, "{desc:?}"),
                None if n == 211 => assert_eq!(radices, &[15, 14], "{desc:?}"),
                None => assert_eq!(radices.len(), 3, "{desc:?}: {radices:?}"),
            }
            let threads = stage_threads(&recipe)[0] * stage_tiles(&recipe)[0];
            assert!(threads <= 128, "{desc:?}: {threads} threads a cube");
        }
    }
}
