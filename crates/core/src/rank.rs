//! Factorization ranks from a `rank` argument, exactly as tensorly 0.8–0.9 computes them for tltorch 0.5's
//! `TuckerTensor.new`, `CPTensor.new` and `TTTensor.new` (tensorly/{tucker,cp,tt}_tensor.py `validate_*_rank`).

use serde::{Deserialize, Serialize};

/// A factorization's `rank` argument, as neuraloperator passes it on to tltorch.
///
/// Untagged, and `Count` comes first so that an integer (`1`) reads as a count, a float (`1.0`) as a fraction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Rank {
    /// An explicit rank: the CP rank, every Tucker rank or every inner TT rank.
    Count(usize),
    /// Keep about this fraction of the dense tensor's parameters (may exceed 1).
    Fraction(f64),
    /// Every rank spelled out: one per mode (Tucker), or N + 1 with 1 at both ends (TT).
    PerMode(Vec<usize>),
}

impl Default for Rank {
    /// neuraloperator's FNO default, `rank=1.0`.
    fn default() -> Self {
        Rank::Fraction(1.0)
    }
}

/// numpy's `int(np.round(x))`: ties to even.
fn round(x: f64) -> usize {
    x.round_ties_even() as usize
}

/// Checks a shape has modes and no empty mode, and a fraction is positive, before any formula uses them.
fn check(shape: &[usize], rank: &Rank, kind: &str) -> Result<(), String> {
    if shape.is_empty() || shape.contains(&0) {
        return Err(format!("cannot factorize a {kind} weight of shape {shape:?}"));
    }
    match rank {
        Rank::Fraction(f) if !(f.is_finite() && *f > 0.0) => {
            Err(format!("rank fraction {f} must be a positive number"))
        }
        Rank::Count(0) => Err(format!(
            "rank 0 is invalid for a {kind} weight: ranks must be at least 1"
        )),
        _ => Ok(()),
    }
}

/// Tucker ranks of a weight of shape `shape`; modes in `fixed_modes` keep their full size (tltorch's
/// `fixed_rank_modes`) except when `rank` spells every rank out, which tensorly returns unchanged.
pub fn tucker_ranks(shape: &[usize], rank: &Rank, fixed_modes: &[usize]) -> Result<Vec<usize>, String> {
    check(shape, rank, "Tucker")?;
    let n = shape.len();
    if let Some(m) = fixed_modes.iter().find(|&&m| m >= n) {
        return Err(format!(
            "fixed rank mode {m} does not exist in a {n}-mode Tucker weight of shape {shape:?}"
        ));
    }
    let fixed = |k: usize| fixed_modes.contains(&k);
    match rank {
        Rank::Count(r) => Ok((0..n).map(|k| if fixed(k) { shape[k] } else { *r }).collect()),
        Rank::PerMode(v) if v.len() != n => Err(format!(
            "rank {v:?} has {} entries for a {n}-mode Tucker weight of shape {shape:?}",
            v.len()
        )),
        Rank::PerMode(v) if v.contains(&0) => Err(format!("rank {v:?} has a 0 entry: Tucker ranks must be at least 1")),
        Rank::PerMode(v) => Ok(v.clone()),
        Rank::Fraction(f) => {
            let compressed = (0..n).filter(|&k| !fixed(k)).count();
            if compressed == 0 {
                return Ok(shape.to_vec());
            }
            // Core c^M·P plus factors c·I_k² per compressed mode (size I_k × c·I_k); tensorly also charges the
            // fixed modes' square factors c·I_k², though their ranks do not scale with c.
            let p = shape.iter().product::<usize>() as f64;
            let squares = shape.iter().map(|&s| (s * s) as f64).sum::<f64>();
            let params = |c: f64| p * c.powi(compressed as i32) + squares * c - f * p;
            // tensorly finds the root with scipy's brentq on [0, max(f, 1)]; bisection lands on the same root.
            let (mut lo, mut hi) = (0.0, f.max(1.0));
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if params(mid) < 0.0 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let c = 0.5 * (lo + hi);
            Ok((0..n)
                .map(|k| {
                    if fixed(k) {
                        shape[k]
                    } else {
                        round(shape[k] as f64 * c).max(1)
                    }
                })
                .collect())
        }
    }
}

/// CP rank of a weight of shape `shape`: a fraction f gives round(f·ΠI / ΣI), which keeps about f of the
/// parameters since a rank-R CP tensor has R·ΣI of them.
pub fn cp_rank(shape: &[usize], rank: &Rank) -> Result<usize, String> {
    check(shape, rank, "CP")?;
    match rank {
        Rank::Count(r) => Ok(*r),
        Rank::PerMode(v) => Err(format!("rank {v:?} is a list, but a CP weight has a single rank")),
        Rank::Fraction(f) => {
            let p = shape.iter().product::<usize>() as f64;
            match round(p * f / shape.iter().sum::<usize>() as f64) {
                0 => Err(format!(
                    "rank fraction {f} is too small for a CP weight of shape {shape:?}: it rounds to rank 0"
                )),
                r => Ok(r),
            }
        }
    }
}

/// TT ranks (R_0 = 1, R_1, …, R_{N-1}, R_N = 1) of a weight of shape `shape`; a fraction makes each inner
/// rank R_k proportional to the mean of its two neighbouring mode sizes.
pub fn tt_ranks(shape: &[usize], rank: &Rank) -> Result<Vec<usize>, String> {
    check(shape, rank, "TT")?;
    let n = shape.len();
    match rank {
        Rank::Count(r) => Ok([vec![1], vec![*r; n - 1], vec![1]].concat()),
        Rank::PerMode(v) if v.len() != n + 1 => Err(format!(
            "rank {v:?} has {} entries, but a {n}-mode TT weight of shape {shape:?} needs {}",
            v.len(),
            n + 1
        )),
        Rank::PerMode(v) if v[0] != 1 || v[n] != 1 => {
            Err(format!("rank {v:?} must start and end with 1 (TT boundary ranks)"))
        }
        Rank::PerMode(v) if v.contains(&0) => Err(format!("rank {v:?} has a 0 entry: TT ranks must be at least 1")),
        Rank::PerMode(v) => Ok(v.clone()),
        Rank::Fraction(_) if n < 2 => Err(format!("a TT weight needs at least 2 modes, not shape {shape:?}")),
        Rank::Fraction(f) => {
            // R_k = x·avg_k; the parameters Σ R_k·I_k·R_{k+1} are a·x² + b·x, set equal to f·ΠI and solved for x.
            let s: Vec<f64> = shape.iter().map(|&i| i as f64).collect();
            let avg: Vec<f64> = s.windows(2).map(|w| (w[0] + w[1]) / 2.0).collect();
            let a = match n {
                2 => avg[0] * avg[0] * s[0],
                _ => (1..n - 1).map(|i| avg[i - 1] * s[i] * avg[i]).sum(),
            };
            let b = s[0] * avg[0] + s[n - 1] * avg[n - 2];
            let c = -(shape.iter().product::<usize>() as f64) * f;
            let x = (-b + (b * b - 4.0 * a * c).sqrt()) / (2.0 * a);
            Ok([vec![1], avg.iter().map(|d| round(d * x).max(1)).collect(), vec![1]].concat())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (shape, fraction, Tucker, Tucker with mode 0 fixed, CP, TT), computed with tensorly itself.
    type Golden = (
        &'static [usize],
        f64,
        &'static [usize],
        &'static [usize],
        usize,
        &'static [usize],
    );
    #[rustfmt::skip]
    const GOLDEN: &[Golden] = &[
        (&[64, 64, 16, 9], 0.1, &[35, 35, 9, 5], &[64, 29, 7, 4], 386, &[1, 37, 23, 7, 1]),
        (&[64, 64, 16, 9], 0.5, &[53, 53, 13, 8], &[], 1928, &[1, 83, 52, 16, 1]),
        (&[64, 64, 16, 9], 1.0, &[64, 64, 16, 9], &[], 3855, &[1, 118, 74, 23, 1]),
        (&[32, 32, 12, 7], 0.1, &[17, 17, 6, 4], &[32, 14, 5, 3], 104, &[1, 18, 12, 5, 1]),
        (&[64, 64, 32], 0.1, &[26, 26, 13], &[], 82, &[1, 16, 12, 1]),
        (&[64, 64, 32], 1.0, &[63, 63, 31], &[], 819, &[1, 51, 39, 1]),
    ];

    #[test]
    fn fractions_match_tensorly() {
        for &(shape, f, tucker, tucker_fixed, cp, tt) in GOLDEN {
            let rank = Rank::Fraction(f);
            assert_eq!(tucker_ranks(shape, &rank, &[]).unwrap(), tucker, "Tucker {shape:?} {f}");
            if !tucker_fixed.is_empty() {
                assert_eq!(
                    tucker_ranks(shape, &rank, &[0]).unwrap(),
                    tucker_fixed,
                    "Tucker fixed {shape:?} {f}"
                );
            }
            assert_eq!(cp_rank(shape, &rank).unwrap(), cp, "CP {shape:?} {f}");
            assert_eq!(tt_ranks(shape, &rank).unwrap(), tt, "TT {shape:?} {f}");
        }
    }

    #[test]
    fn counts_and_per_mode_ranks() {
        let shape = [8, 6, 5];
        assert_eq!(tucker_ranks(&shape, &Rank::Count(4), &[]).unwrap(), [4, 4, 4]);
        assert_eq!(tucker_ranks(&shape, &Rank::Count(4), &[0, 2]).unwrap(), [8, 4, 5]);
        assert_eq!(
            tucker_ranks(&shape, &Rank::PerMode(vec![2, 9, 1]), &[0]).unwrap(),
            [2, 9, 1]
        );
        assert_eq!(cp_rank(&shape, &Rank::Count(7)).unwrap(), 7);
        assert_eq!(tt_ranks(&shape, &Rank::Count(3)).unwrap(), [1, 3, 3, 1]);
        assert_eq!(
            tt_ranks(&shape, &Rank::PerMode(vec![1, 2, 4, 1])).unwrap(),
            [1, 2, 4, 1]
        );
        assert_eq!(tt_ranks(&[10, 6], &Rank::Fraction(0.5)).unwrap().len(), 3);
    }

    #[test]
    fn invalid_ranks_are_errors() {
        let shape = [8, 6, 5, 4];
        let err = tucker_ranks(&shape, &Rank::PerMode(vec![3, 4]), &[]).unwrap_err();
        assert!(
            err.contains("rank [3, 4] has 2 entries for a 4-mode Tucker weight"),
            "{err}"
        );
        assert!(tucker_ranks(&shape, &Rank::PerMode(vec![3, 0, 2, 2]), &[]).is_err());
        assert!(tucker_ranks(&shape, &Rank::Fraction(0.5), &[4]).is_err());
        assert!(tucker_ranks(&shape, &Rank::Fraction(0.0), &[]).is_err());
        assert!(tucker_ranks(&shape, &Rank::Count(0), &[]).is_err());
        assert!(cp_rank(&shape, &Rank::PerMode(vec![2])).is_err());
        assert!(cp_rank(&shape, &Rank::Fraction(1e-4))
            .unwrap_err()
            .contains("too small"));
        assert!(cp_rank(&[], &Rank::Count(2)).is_err());
        assert!(tt_ranks(&shape, &Rank::PerMode(vec![1, 2, 2, 1])).is_err());
        assert!(tt_ranks(&shape, &Rank::PerMode(vec![2, 2, 2, 2, 1])).is_err());
        assert!(tt_ranks(&[8], &Rank::Fraction(0.5)).is_err());
        assert!(tt_ranks(&shape, &Rank::Fraction(f64::NAN)).is_err());
    }

    #[test]
    fn serde_reads_integers_as_counts_and_floats_as_fractions() {
        let read = |s: &str| serde_json::from_str::<Rank>(s).unwrap();
        assert_eq!(read("1"), Rank::Count(1));
        assert_eq!(read("1.0"), Rank::Fraction(1.0));
        assert_eq!(read("0.1"), Rank::Fraction(0.1));
        assert_eq!(read("[1,2]"), Rank::PerMode(vec![1, 2]));
        assert_eq!(serde_json::to_string(&Rank::Fraction(1.0)).unwrap(), "1.0");
        assert_eq!(serde_json::to_string(&Rank::Count(3)).unwrap(), "3");
        assert_eq!(Rank::default(), Rank::Fraction(1.0));
    }
}
