//! Fault tolerance by checksums (algorithm-based fault tolerance, after
//! TurboFFT) in the FFT: the faults a test injects and each stage's checksum
//! weights (the modes and the device's record: [`crate::fault`]). Design:
//! docs/abft.md.
//!
//! Every stage kernel checks its own transform, tile by tile: the transform
//! `X = A z` of each signal's values `z` as its first pass reads them, to
//! `X` as its last pass computes them (a DFT, or Rader's or Bluestein's
//! cyclic convolution), satisfies `eᵀX = (Aᵀe)ᵀz` for any weights `e`. The
//! first pass accumulates `vᵀz` with `v = Aᵀe` from a table made here, the
//! last pass subtracts `eᵀX`; a signal whose difference exceeds what f32
//! round-off explains is faulty, and in [`FaultTolerance::Correct`] a repair
//! launch right after the stage's transforms its tile again from its input,
//! which no stage overwrites.

use num_complex::Complex;
use rustfft::FftPlanner;

use super::stage::StageConfig;
use crate::fault::draw_below;
pub use crate::fault::{FaultCounts, FaultTolerance};

/// Where an injected fault flips its bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultSite {
    /// A butterfly's output in a thread's registers, as its pass computed it
    /// (the last pass's: a transform output).
    Register,
    /// A value of the tile in shared memory, after a pass wrote it and before
    /// the next reads it.
    Shared,
}

/// One single-bit flip in one value of one tile of one launch, on the
/// tile's first attempt (a transient fault): for tests and campaigns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultInjection {
    /// Which stage launch of the plan's execution (in launch order, counting
    /// stage launches only).
    pub launch: usize,
    /// Which pass of the stage, in the order they run (a convolution's
    /// passes count both its transforms).
    pub pass: usize,
    pub site: FaultSite,
    pub tile: u32,
    /// The unit (thread) of the cube whose register flips
    /// ([`FaultSite::Register`]).
    pub unit: u32,
    /// Which of the unit's values, or of the tile's values in shared memory
    /// (each reduced modulo the count there is).
    pub value: u32,
    /// Bit 0 (mantissa's lowest) to 31 (sign).
    pub bit: u32,
}

/// What one stage launch of a plan offers an injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultTargets {
    pub tiles: u32,
    /// Units (threads) a cube.
    pub units: u32,
    /// Passes as they run (a convolution's count both its transforms).
    pub passes: usize,
}

impl FaultInjection {
    /// A single-bit fault drawn from `seed`, uniformly over the stage
    /// launches `targets` describes ([`DeviceFft::fault_targets`]), their
    /// passes, both sites, tiles, units, values and the 32 bits.
    ///
    /// [`DeviceFft::fault_targets`]: super::DeviceFft::fault_targets
    pub fn drawn(targets: &[FaultTargets], seed: u64) -> Option<Self> {
        if targets.is_empty() {
            return None;
        }
        let mut state = seed;
        let mut below = |n: u64| draw_below(&mut state, n);
        let launch = below(targets.len() as u64) as usize;
        let target = targets[launch];
        Some(FaultInjection {
            launch,
            pass: below(target.passes as u64) as usize,
            site: if below(2) == 0 {
                FaultSite::Register
            } else {
                FaultSite::Shared
            },
            tile: below(target.tiles as u64) as u32,
            unit: below(target.units as u64) as u32,
            value: below(1 << 24) as u32,
            bit: below(32) as u32,
        })
    }
}

/// What a stage kernel is compiled with to check its transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StageChecks {
    /// List faulty signals for the repair launch.
    pub correct: bool,
    /// The repair launch (one cube): transform the listed signals' tiles again.
    pub repair: bool,
    /// A flip compiled in at (site, pass): the launch's fault injection.
    pub inject: Option<(FaultSite, usize)>,
}

/// How far beyond f32 round-off a checksum difference must lie to count as
/// a fault: the tolerance is this factor times `u·√(log₂m + 1)` times the
/// root of the summed squares of the terms of both checksums (each side's
/// round-off grows with them). Calibrated on random and structured signals
/// (crates/kernels/tests/fft/faults.rs).
pub const TOLERANCE_FACTOR: f64 = 16.0;

/// Stage checksum table: `v = Aᵀe` (`2m` floats, interleaved), the weights
/// `e` (`2m`), then the tolerance per unit of the checksums' term norms, for
/// a stage whose passes transform `m = cfg.pass_len()` values. `factors` is
/// the stage's factors table (a convolution's kernel spectrum).
pub(crate) fn checksum_table(cfg: &StageConfig, factors: &[f32]) -> Vec<f32> {
    let m = cfg.pass_len();
    let e = check_weights(m);
    let mut planner = FftPlanner::<f64>::new();
    let mut v = e.clone();
    match cfg.convolution {
        None => {
            // A DFT matrix is symmetric: Aᵀe = A e.
            let fft = if cfg.inverse {
                planner.plan_fft_inverse(m)
            } else {
                planner.plan_fft_forward(m)
            };
            fft.process(&mut v);
        }
        Some(_) => {
            // A = G·diag(K̂)·F (F forward, G inverse unnormalised), so
            // Aᵀe = F·diag(K̂)·G e; K̂ follows the first `cfg.n` entries.
            planner.plan_fft_inverse(m).process(&mut v);
            for (j, x) in v.iter_mut().enumerate() {
                let at = 2 * (cfg.n + j);
                *x *= Complex::new(factors[at] as f64, factors[at + 1] as f64);
            }
            planner.plan_fft_forward(m).process(&mut v);
        }
    }
    let tolerance = TOLERANCE_FACTOR * f32::EPSILON as f64 * ((m as f64).log2() + 1.0).sqrt();
    let mut table = Vec::with_capacity(4 * m + 1);
    table.extend(v.iter().flat_map(|x| [x.re as f32, x.im as f32]));
    table.extend(e.iter().flat_map(|x| [x.re as f32, x.im as f32]));
    table.push(tolerance as f32);
    table
}

/// Weights `e_k = exp(2πik/p)` for the least prime `p` that does not divide
/// `m` (Wang's `p = 3` for powers of two). A value between two passes
/// reaches the outputs `a + S·t` (`t < L`) with linear phases, so its weight
/// in `eᵀX` is a geometric sum of ratio `q` with `q^L = exp(2πim/p) ≠ 1`:
/// at least `sin(π/p)` in magnitude, never the zero that weights of a linear
/// or quadratic phase (a chirp) give most such values.
fn check_weights(m: usize) -> Vec<Complex<f64>> {
    let p = weight_prime(m);
    (0..m)
        .map(|k| Complex::from_polar(1.0, 2.0 * std::f64::consts::PI * (k % p) as f64 / p as f64))
        .collect()
}

/// The least prime (from 3) that does not divide `m`: the period of its weights.
pub(crate) fn weight_prime(m: usize) -> usize {
    (3usize..)
        .filter(|&p| (2..p).all(|d| p % d != 0))
        .find(|&p| !m.is_multiple_of(p))
        .expect("some prime does not divide m")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every partial transform of the weights stays away from zero: for a
    /// radix split `m = S·L`, each value after the first passes weighs
    /// `|Σ_t e_{a+S·t} ω_L^{j·t}|` in the checksum, at least `sin(π/p)`.
    #[test]
    fn check_weights_see_every_value_between_passes() {
        for m in [8usize, 64, 96, 360, 1000, 17 * 8, 210] {
            let e = check_weights(m);
            let p = weight_prime(m);
            let least = (std::f64::consts::PI / p as f64).sin() - 1e-9;
            for s in (1..m).filter(|s| m % s == 0) {
                let l = m / s;
                for a in 0..s {
                    for j in 0..l {
                        let w: Complex<f64> = (0..l)
                            .map(|t| {
                                e[a + s * t]
                                    * Complex::from_polar(1.0, -2.0 * std::f64::consts::PI * (j * t) as f64 / l as f64)
                            })
                            .sum();
                        assert!(w.norm() >= least, "m {m} S {s} a {a} j {j}: weight {}", w.norm());
                    }
                }
            }
        }
    }
}
