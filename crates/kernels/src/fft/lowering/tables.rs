//! The tables the kernels read: twiddles, and the factors of Rader's and
//! Bluestein's convolutions, computed in f64 and stored as f32.

use super::super::factor::primitive_root;
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

/// Bluestein's chirp `exp(∓iπ·k²/n)` for `k < n` (minus for the forward
/// transform), in f64. `k² mod 2n` is reduced in integers so that the phase
/// stays exact for large `n`.
pub(super) fn chirp(n: usize, inverse: bool) -> Vec<num_complex::Complex<f64>> {
    let sign = if inverse { 1.0 } else { -1.0 };
    (0..n as u128)
        .map(|k| {
            let e = (k * k % (2 * n as u128)) as f64;
            num_complex::Complex::from_polar(1.0, sign * std::f64::consts::PI * e / n as f64)
        })
        .collect()
}

pub(super) fn interleave(values: &[num_complex::Complex<f64>]) -> Vec<f32> {
    values.iter().flat_map(|c| [c.re as f32, c.im as f32]).collect()
}

/// The spectrum of Bluestein's kernel `conj(chirp)` laid out circularly over
/// `m` samples, divided by `m` (the inverse transform's normalisation).
pub(super) fn bluestein_kernel_spectrum(chirp: &[num_complex::Complex<f64>], m: usize) -> Vec<f32> {
    let mut b = vec![num_complex::Complex::new(0.0, 0.0); m];
    for (j, wj) in chirp.iter().enumerate() {
        b[j] = wj.conj();
        if j > 0 {
            b[m - j] = wj.conj();
        }
    }
    rustfft::FftPlanner::<f64>::new().plan_fft_forward(m).process(&mut b);
    let scale = 1.0 / m as f64;
    b.iter_mut().for_each(|v| *v *= scale);
    interleave(&b)
}

/// Bluestein's factors of a length-`n` transform through length `m`: the `n`
/// chirp values, then the `m` bins of the kernel's spectrum.
fn bluestein_factors(n: usize, inverse: bool, m: usize) -> Vec<f32> {
    let chirp = chirp(n, inverse);
    let mut factors = interleave(&chirp);
    factors.extend(bluestein_kernel_spectrum(&chirp, m));
    factors
}

/// Rader's factors of a transform of prime length `p` (see
/// [`Convolution::Rader`]): for each `0 <= k < p` the shared-memory slots of
/// input `k` and of output `k` as integer bit patterns (see
/// [`Convolution::Rader`]), then the spectrum of `b[t] = exp(∓2πi·(g^t mod
/// p)/p)` over `p − 1` samples divided by `p − 1`, `g` the smallest primitive
/// root, then for each slot `s < p − 1` the input `g^-s` it holds (a resident
/// cube's first pass gathers its staged input by it). Phases are reduced in
/// integers and the spectrum built in f64.
fn rader_factors(p: usize, inverse: bool) -> Vec<f32> {
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

/// The factors table of a stage run as `convolution` (one zero pair when
/// there is none: every kernel binds the array).
pub(super) fn convolution_factors(n: usize, inverse: bool, convolution: Option<Convolution>) -> Vec<f32> {
    match convolution {
        None => vec![0.0, 0.0],
        Some(Convolution::Bluestein(m)) => bluestein_factors(n, inverse, m),
        Some(Convolution::Rader) => rader_factors(n, inverse),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rader's table places input `k = g^-s` in slot `s` and takes output
    /// `k = g^t` from the convolution's entry `t` (`x[0]` and `Σ a` in the
    /// two slots after), as integer bit patterns the kernel reinterprets.
    #[test]
    fn rader_factors_hold_the_permutations_as_integer_slots() {
        for p in [71usize, 211, 421, 4201] {
            let m = p - 1;
            let g = primitive_root(p);
            let power = |e: usize| (0..e).fold(1usize, |acc, _| acc * g % p);
            let factors = rader_factors(p, false);
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
