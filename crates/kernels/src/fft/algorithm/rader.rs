//! Rader's algorithm: a transform of prime length `p` as a cyclic
//! convolution of length `p − 1` (inputs and outputs permuted by powers of a
//! primitive root), run where `p − 1` is 7-smooth so that the convolution's
//! two transforms are mixed-radix passes. The stage kernels run it in one cube
//! (`stage/convolution.rs`, [`Convolution::Rader`]); this file holds the
//! primes it takes and the tables it reads.

use super::super::factor::{is_smooth, prime_factors};
#[cfg(doc)]
use super::super::stage::Convolution;

/// True for a prime `n` whose `n − 1` is 7-smooth (11, 13, 29, …, 211, 421, …):
/// Rader's algorithm turns its transform into a cyclic convolution of length
/// `n − 1`, which runs on the mixed-radix passes, against Bluestein's of
/// length at least `2n − 1`.
pub(crate) fn is_rader_prime(n: usize) -> bool {
    n > 7 && prime_factors(n) == [n] && is_smooth(n - 1)
}

/// The smallest primitive root modulo the prime `p`: its powers run through
/// every non-zero residue.
pub(crate) fn primitive_root(p: usize) -> usize {
    let order = p - 1;
    let factors = prime_factors(order);
    let pow_mod = |mut base: u128, mut e: usize| {
        let mut acc = 1u128;
        base %= p as u128;
        while e > 0 {
            if e & 1 == 1 {
                acc = acc * base % p as u128;
            }
            base = base * base % p as u128;
            e >>= 1;
        }
        acc
    };
    (2..p)
        .find(|&g| factors.iter().all(|&q| pow_mod(g as u128, order / q) != 1))
        .unwrap_or(1)
}

/// Rader's factors of a transform of prime length `p` (see
/// [`Convolution::Rader`]): for each `0 <= k < p` the shared-memory slots of
/// input `k` and of output `k` as integer bit patterns (see
/// [`Convolution::Rader`]), then the spectrum of `b[t] = exp(∓2πi·(g^t mod
/// p)/p)` over `p − 1` samples divided by `p − 1`, `g` the smallest primitive
/// root, then for each slot `s < p − 1` the input `g^-s` it holds (a resident
/// cube's first pass gathers its staged input by it). Phases are reduced in
/// integers and the spectrum built in f64.
pub(crate) fn factors(p: usize, inverse: bool) -> Vec<f32> {
    let len = p - 1;
    let g = primitive_root(p);
    // x[0] and X[0] sit in the two slots after the convolution's.
    let mut slots = vec![[len, len + 1]; p];
    let mut sources = vec![0; len];
    let mut b = Vec::with_capacity(len);
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut power = 1;
    for t in 0..len {
        // Input g^-s goes to slot s; output g^t is the convolution's entry t.
        slots[power] = [(len - t) % len, t];
        sources[(len - t) % len] = power;
        let phase = sign * 2.0 * std::f64::consts::PI * power as f64 / p as f64;
        b.push(num_complex::Complex::from_polar(1.0, phase));
        power = power * g % p;
    }
    rustfft::FftPlanner::<f64>::new().plan_fft_forward(len).process(&mut b);
    let scale = 1.0 / len as f64;
    let mut factors: Vec<f32> = slots
        .iter()
        .flat_map(|pair| pair.map(|slot| f32::from_bits(slot as u32)))
        .collect();
    factors.extend(b.iter().flat_map(|v| [(v.re * scale) as f32, (v.im * scale) as f32]));
    factors.extend(sources.iter().map(|&k| f32::from_bits(k as u32)));
    factors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rader_primes_and_their_primitive_roots() {
        let rader: Vec<usize> = (2..200).filter(|&n| is_rader_prime(n)).collect();
        // Primes above 7 whose predecessor has no prime factor above 7.
        assert_eq!(
            rader,
            [11, 13, 17, 19, 29, 31, 37, 41, 43, 61, 71, 73, 97, 101, 109, 113, 127, 151, 163, 181, 193, 197]
        );
        assert!(is_rader_prime(211) && is_rader_prime(421) && is_rader_prime(4201));
        assert!(!is_rader_prime(4099) && !is_rader_prime(47) && !is_rader_prime(141));
        for p in rader.into_iter().chain([211, 421, 4201]) {
            let g = primitive_root(p);
            let mut seen = vec![false; p];
            let mut x = 1;
            for _ in 0..p - 1 {
                assert!(!seen[x], "{g} is not a primitive root of {p}");
                seen[x] = true;
                x = x * g % p;
            }
        }
        assert_eq!(primitive_root(211), 2);
        assert_eq!(primitive_root(421), 2);
    }

    /// Rader's table places input `k = g^-s` in slot `s` and takes output
    /// `k = g^t` from the convolution's entry `t` (`x[0]` and `Σ a` in the
    /// two slots after), as integer bit patterns the kernel reinterprets.
    #[test]
    fn rader_factors_hold_the_permutations_as_integer_slots() {
        for p in [71usize, 211, 421, 4201] {
            let m = p - 1;
            let g = primitive_root(p);
            let power = |e: usize| (0..e).fold(1usize, |acc, _| acc * g % p);
            let factors = factors(p, false);
            assert_eq!(factors.len(), 2 * p + 3 * m);
            let slot = |at: usize| factors[at].to_bits() as usize;
            for s in 0..m {
                let source = slot(2 * p + 2 * m + s);
                assert_eq!(slot(2 * source), s, "p = {p}: slot {s} gathers input {source}");
            }
            let (mut inputs, mut outputs) = (vec![false; m + 1], vec![false; m + 2]);
            for k in 0..p {
                let (input, output) = (slot(2 * k), slot(2 * k + 1));
                if k == 0 {
                    assert_eq!((input, output), (m, m + 1));
                } else {
                    assert_eq!(power((m - input) % m), k, "p = {p}: input {k} in slot {input}");
                    assert_eq!(power(output), k, "p = {p}: output {k} from entry {output}");
                }
                assert!(
                    !std::mem::replace(&mut inputs[input], true),
                    "p = {p}: slot {input} twice"
                );
                assert!(
                    !std::mem::replace(&mut outputs[output], true),
                    "p = {p}: entry {output} twice"
                );
            }
        }
    }
}
