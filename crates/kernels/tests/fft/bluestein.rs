//! Bluestein's algorithm (`src/fft/algorithm/bluestein.rs`): any length as a
//! chirp-modulated cyclic convolution of a 7-smooth length, against the
//! oracle. Its plans are asserted with Rader's (`rader.rs`).

use super::rader::rader_cases;
use super::*;

/// The default options with Bluestein's algorithm for Rader's primes.
pub(super) const BLUESTEIN: DeviceOptions = DeviceOptions {
    primes: PrimeAlgorithm::Bluestein,
    ..FFT_ONLY
};

/// Rader's primes through Bluestein's algorithm when asked (a chirp-modulated
/// convolution of a 7-smooth length of at least 2n − 1): every kind, rows and
/// columns, windows and numpy's lengths, against the oracle, no case taking a
/// Rader stage. Other lengths without a radix plan take it by default
/// (`any_length.rs`, `windows.rs`).
#[test]
fn bluestein_primes() {
    let cases = rader_cases();
    let limits = DeviceLimits::of(&client());
    for desc in &cases {
        assert_eq!(rader_stages(&lowered(desc, &limits, BLUESTEIN)), 0, "{desc:?}");
    }
    check_all("bluestein_primes", drawn_seed(), cases, &[BLUESTEIN]);
}
