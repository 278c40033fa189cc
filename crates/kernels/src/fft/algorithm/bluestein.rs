//! Bluestein's algorithm: a transform of any length `n` as a chirp-modulated
//! cyclic convolution of a 7-smooth length `m ≥ 2n − 1`, for lengths with a
//! prime factor neither a butterfly nor Rader's algorithm takes. The stage
//! kernels run it in one cube where it fits (`stage/convolution.rs`), the
//! four-step lowering over two launches otherwise (`lowering/four_step.rs`);
//! this file holds its lengths and the tables it reads.

use super::super::factor::is_smooth;

/// The convolution length of Bluestein's algorithm for a length-`n` transform:
/// the smallest 7-smooth length that holds the linear convolution of `n` chirp
/// samples with `2n - 1` kernel samples without wrap-around.
pub(crate) fn bluestein_length(n: usize) -> usize {
    (2 * n - 1..)
        .find(|&m| is_smooth(m))
        .expect("7-smooth numbers are unbounded")
}

/// Bluestein's chirp `exp(∓iπ·k²/n)` for `k < n` (minus for the forward
/// transform), in f64. `k² mod 2n` is reduced in integers so that the phase
/// stays exact for large `n`.
pub(crate) fn chirp(n: usize, inverse: bool) -> Vec<num_complex::Complex<f64>> {
    let sign = if inverse { 1.0 } else { -1.0 };
    (0..n as u128)
        .map(|k| {
            let e = (k * k % (2 * n as u128)) as f64;
            num_complex::Complex::from_polar(1.0, sign * std::f64::consts::PI * e / n as f64)
        })
        .collect()
}

/// Complex values as interleaved f32 pairs.
pub(crate) fn interleave(values: &[num_complex::Complex<f64>]) -> Vec<f32> {
    values.iter().flat_map(|c| [c.re as f32, c.im as f32]).collect()
}

/// The spectrum of Bluestein's kernel `conj(chirp)` laid out circularly over
/// `m` samples, divided by `m` (the inverse transform's normalisation).
pub(crate) fn kernel_spectrum(chirp: &[num_complex::Complex<f64>], m: usize) -> Vec<f32> {
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
pub(crate) fn factors(n: usize, inverse: bool, m: usize) -> Vec<f32> {
    let chirp = chirp(n, inverse);
    let mut factors = interleave(&chirp);
    factors.extend(kernel_spectrum(&chirp, m));
    factors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bluestein_lengths_are_smooth_and_long_enough() {
        for n in [2usize, 3, 11, 85, 141, 211, 421, 4099, 65537] {
            let m = bluestein_length(n);
            assert!(m >= 2 * n - 1 && is_smooth(m), "{n} -> {m}");
            assert!((2 * n - 1..m).all(|x| !is_smooth(x)));
        }
        assert_eq!(bluestein_length(421), 864);
    }
}
