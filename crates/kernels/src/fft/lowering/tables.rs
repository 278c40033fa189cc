//! The tables the kernels read: twiddles, and the factors of Rader's and
//! Bluestein's convolutions (`algorithm/`), computed in f64 and stored as f32.

use super::super::algorithm::{bluestein, rader};
use super::super::stage::{Convolution, PostTwiddle};

/// Exact `exp(-2πi·e/len)` for `e < count`, computed in f64, interleaved f32.
pub(super) fn twiddle_table(len: usize, count: usize) -> Vec<f32> {
    (0..count)
        .flat_map(|e| {
            // Reduce the angle exactly before the trigonometry.
            let phase = -2.0 * std::f64::consts::PI * ((e % len) as f64) / len as f64;
            [phase.cos() as f32, phase.sin() as f32]
        })
        .collect()
}

/// A four-step column pass's coarse twiddles `exp(-2πi·q·fine_len/total)`,
/// one per `fine_len` steps; the fine ones are [`twiddle_table`]`(total, fine_len)`.
pub(super) fn coarse_twiddles(pt: PostTwiddle) -> Vec<f32> {
    (0..pt.total.div_ceil(pt.fine_len))
        .flat_map(|q| {
            let phase = -2.0 * std::f64::consts::PI * ((q * pt.fine_len) % pt.total) as f64 / pt.total as f64;
            [phase.cos() as f32, phase.sin() as f32]
        })
        .collect()
}

/// The factors table of a stage run as `convolution` (one zero pair when
/// there is none: every kernel binds the array).
pub(super) fn convolution_factors(n: usize, inverse: bool, convolution: Option<Convolution>) -> Vec<f32> {
    match convolution {
        None => vec![0.0, 0.0],
        Some(Convolution::Bluestein(m)) => bluestein::factors(n, inverse, m),
        Some(Convolution::Rader) => rader::factors(n, inverse),
    }
}
