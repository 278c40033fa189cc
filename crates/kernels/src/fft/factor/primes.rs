//! Number theory for the other lengths: smooth numbers, prime factors,
//! in-register DFT splits, and the four-step split (Rader's and Bluestein's
//! lengths: `algorithm/`).

/// True when `n` has no prime factor above 7.
pub fn is_smooth(n: usize) -> bool {
    SmoothFactors::of(n).is_some()
}

/// `n = 3^threes · 5^fives · 7^sevens · 2^bits`.
pub(super) struct SmoothFactors {
    pub(super) threes: usize,
    pub(super) fives: usize,
    pub(super) sevens: usize,
    pub(super) bits: usize,
}

impl SmoothFactors {
    pub(super) fn of(n: usize) -> Option<Self> {
        if n == 0 {
            return None;
        }
        let mut rest = n;
        let mut count = |p: usize| {
            let mut k = 0;
            while rest.is_multiple_of(p) {
                rest /= p;
                k += 1;
            }
            k
        };
        let (threes, fives, sevens) = (count(3), count(5), count(7));
        rest.is_power_of_two().then(|| SmoothFactors {
            threes,
            fives,
            sevens,
            bits: rest.trailing_zeros() as usize,
        })
    }
}

/// The distinct prime factors of `n`.
pub(crate) fn prime_factors(mut n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut p = 2;
    while p * p <= n {
        if n.is_multiple_of(p) {
            out.push(p);
            while n.is_multiple_of(p) {
                n /= p;
            }
        }
        p += 1;
    }
    if n > 1 {
        out.push(n);
    }
    out
}

/// Greatest common divisor.
pub(crate) fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// How an in-register DFT of composite length `first · second` runs: `second`
/// DFTs of length `first`, then `first` of length `second`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DftSplit {
    pub first: usize,
    pub second: usize,
    /// Good–Thomas (coprime factors, no twiddles between the layers) rather
    /// than Cooley–Tukey (`(first − 1)(second − 1)` twiddles).
    pub good_thomas: bool,
}

impl DftSplit {
    /// The sample that layer one's DFT `n2` takes as its input `n1`.
    pub fn sample(&self, n1: usize, n2: usize) -> usize {
        let (a, b) = (self.first, self.second);
        if self.good_thomas {
            (b * n1 + a * n2) % (a * b)
        } else {
            n2 + b * n1
        }
    }

    /// The bin of layer two's output `k2` of its DFT `k1`: for Good–Thomas
    /// the `k` with `k ≡ k1 (mod first)` and `k ≡ k2 (mod second)`.
    pub fn bin(&self, k1: usize, k2: usize) -> usize {
        let (a, b) = (self.first, self.second);
        if self.good_thomas {
            (k1 * b * inverse_mod(b % a, a) + k2 * a * inverse_mod(a % b, b)) % (a * b)
        } else {
            k1 + a * k2
        }
    }
}

/// How an in-register DFT of length `r` splits, or `None` for a prime `r`,
/// which runs directly. A direct odd DFT costs about `r²` multiply-adds against
/// `r·(a + b)` split, so odd composites split: coprime factors by Good–Thomas
/// (radix 21 as 3·7: 296 real operations instead of 500), powers of a prime as
/// p·(r/p) by Cooley–Tukey. Even lengths split by Cooley–Tukey, odd part first
/// (6 = 3·2, 20 = 5·4, powers of two 4·(r/4), 4 as 2·2): Good–Thomas there
/// executed fewer instructions but stalled longer on global loads and ran
/// slower (benches/results/2026-11-26_good_thomas_h100.md).
pub(crate) fn dft_split(r: usize) -> Option<DftSplit> {
    let p = (2..=r).find(|p| r.is_multiple_of(*p))?;
    if p == r {
        return None;
    }
    let mut power = p;
    while r.is_multiple_of(power * p) {
        power *= p;
    }
    let (first, good_thomas) = if p == 2 {
        (if power < r { r / power } else { 4.min(r / 2) }, false)
    } else if power < r {
        (power, true)
    } else {
        (p, false)
    };
    Some(DftSplit {
        first,
        second: r / first,
        good_thomas,
    })
}

/// `x⁻¹ mod m` for `x` coprime to `m` (small moduli: a search).
fn inverse_mod(x: usize, m: usize) -> usize {
    (1..=m).find(|y| x * y % m == 1 % m).expect("x is coprime to m")
}

/// Splits `n` into `(n1, n2)` with `n1 · n2 = n` for a four-step FFT: the most
/// balanced split whose columns (`n1`) and rows (`n2`) each satisfy their
/// predicate, rows no shorter than columns. `None` when no divisor works.
pub fn four_step_split(
    n: usize,
    column_fits: impl Fn(usize) -> bool,
    row_fits: impl Fn(usize) -> bool,
) -> Option<(usize, usize)> {
    (1..=n)
        .filter(|&n2| n.is_multiple_of(n2) && n2 * n2 >= n)
        .find(|&n2| row_fits(n2) && column_fits(n / n2))
        .map(|n2| (n / n2, n2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_dfts_split_coprime_first_and_primes_not_at_all() {
        let split = |first, second, good_thomas| {
            Some(DftSplit {
                first,
                second,
                good_thomas,
            })
        };
        for (r, expected) in [
            (15, split(3, 5, true)),
            (21, split(3, 7, true)),
            (45, split(9, 5, true)),
            (9, split(3, 3, false)),
            (25, split(5, 5, false)),
            (27, split(3, 9, false)),
            (12, split(3, 4, false)),
            (14, split(7, 2, false)),
            (20, split(5, 4, false)),
            (30, split(15, 2, false)),
            (4, split(2, 2, false)),
            (8, split(4, 2, false)),
            (16, split(4, 4, false)),
            (32, split(4, 8, false)),
            (7, None),
            (47, None),
        ] {
            assert_eq!(dft_split(r), expected, "radix {r}");
        }
        for r in 2..=64 {
            match dft_split(r) {
                Some(s) => {
                    assert_eq!(s.first * s.second, r);
                    assert!(s.first > 1 && s.second > 1, "radix {r}: {s:?}");
                    assert!(!s.good_thomas || gcd(s.first, s.second) == 1, "radix {r}: {s:?}");
                }
                None => assert_eq!(prime_factors(r), [r]),
            }
        }
        // The two layers through the index maps (and Cooley–Tukey's
        // twiddles) against a naive DFT, as `stage::composite_dft` runs them.
        use num_complex::Complex;
        let dft = |x: &[Complex<f64>]| -> Vec<Complex<f64>> {
            let n = x.len();
            (0..n)
                .map(|k| {
                    x.iter()
                        .enumerate()
                        .map(|(j, v)| v * Complex::from_polar(1.0, -2.0 * PI * ((j * k) % n) as f64 / n as f64))
                        .sum()
                })
                .collect()
        };
        use std::f64::consts::PI;
        for r in 4..=64 {
            let Some(s) = dft_split(r) else { continue };
            let (a, b) = (s.first, s.second);
            let x: Vec<Complex<f64>> = (0..r)
                .map(|j| Complex::new((j * j % 7) as f64, j as f64 - 3.5))
                .collect();
            let mut t = vec![Complex::new(0.0, 0.0); r];
            for n2 in 0..b {
                let column: Vec<_> = (0..a).map(|n1| x[s.sample(n1, n2)]).collect();
                for (k1, v) in dft(&column).into_iter().enumerate() {
                    let twiddle = if s.good_thomas {
                        0.0
                    } else {
                        -2.0 * PI * (n2 * k1) as f64 / r as f64
                    };
                    t[n2 * a + k1] = v * Complex::from_polar(1.0, twiddle);
                }
            }
            let mut y = vec![Complex::new(0.0, 0.0); r];
            for k1 in 0..a {
                let row: Vec<_> = (0..b).map(|n2| t[n2 * a + k1]).collect();
                for (k2, v) in dft(&row).into_iter().enumerate() {
                    y[s.bin(k1, k2)] = v;
                }
            }
            let expected = dft(&x);
            let err = y.iter().zip(&expected).map(|(u, v)| (u - v).norm()).fold(0.0, f64::max);
            assert!(err < 1e-9, "radix {r} as {s:?}: error {err:.2e}");
        }
        for m in 2..40 {
            for x in (1..m).filter(|&x| gcd(x, m) == 1) {
                assert_eq!(x * inverse_mod(x, m) % m, 1);
            }
        }
    }

    #[test]
    fn four_step_split_is_balanced_and_respects_limits() {
        assert_eq!(four_step_split(1 << 14, |_| true, |_| true), Some((128, 128)));
        assert_eq!(four_step_split(1 << 15, |_| true, |_| true), Some((128, 256)));
        assert_eq!(four_step_split(1000, |_| true, |_| true), Some((25, 40)));
        assert_eq!(four_step_split(1 << 14, |c| c <= 64, |_| true), Some((64, 256)));
        assert_eq!(four_step_split(97, |c| c < 97, |r| r < 97), None);
    }
}
