//! Gaussian random fields on periodic grids, the initial conditions and
//! coefficients of every generator.

use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan, Norm};

use super::{fft_error, Rng};
use crate::DataError;

/// Samples a real, zero-mean Gaussian random field on the periodic unit cube
/// `[0, 1)^d` discretised by `shape` (points `j / n` per axis), with covariance
/// `σ² (−Δ + τ²)^(−α)` as in the FNO paper's `GaussianRF`:
///
/// `u(x) = Re Σ_k √2 · σ · ((2π|k|)² + τ²)^(−α/2) · ξ_k · e^{2πi k·x}`
///
/// over the grid's wavenumbers `k` (FFT order, `−n/2 … n/2 − 1` per axis), with
/// `ξ_k` independent complex normals (real and imaginary parts N(0, 1)) and the
/// mean mode `k = 0` set to zero. The real part is taken by drawing a Hermitian
/// spectrum directly: each conjugate pair `±k` gets `σ ((2π|k|)² + τ²)^(−α/2) ξ`,
/// each self-conjugate (Nyquist) mode the real `√2 σ ((2π|k|)² + τ²)^(−α/2) N(0,1)`,
/// which has the same distribution; the spectrum is drawn in the order of the
/// real-to-complex layout, so in 1-D a finer grid draws the same low modes.
/// The default `σ = τ^(½(2α − d))` is [`GaussianRandomField::default_sigma`];
/// Burgers' `625 (−Δ + 25)^(−2)` is `σ = 25, τ = 5, α = 2`.
#[derive(Clone, Debug)]
pub struct GaussianRandomField {
    shape: Vec<usize>,
    /// Per half-spectrum bin: `σ ((2π|k|)² + τ²)^(−α/2)` (zero for the mean).
    amplitude: Vec<f64>,
    /// Per bin: the bin whose conjugate it is (itself when self-conjugate).
    conjugate: Vec<usize>,
    inverse: FftPlan,
}

impl GaussianRandomField {
    /// The FNO default `σ = τ^(½(2α − d))` for a `d`-dimensional field.
    pub fn default_sigma(alpha: f64, tau: f64, d: usize) -> f64 {
        tau.powf(0.5 * (2.0 * alpha - d as f64))
    }

    /// Plans a field on `shape` with parameters `α`, `τ` and `σ`.
    pub fn new(shape: &[usize], alpha: f64, tau: f64, sigma: f64) -> Result<Self, DataError> {
        if shape.is_empty() || shape.contains(&0) {
            return Err(DataError::Invalid(format!(
                "a random field needs a non-empty grid, got {shape:?}"
            )));
        }
        if !(alpha > 0.0 && tau > 0.0 && sigma >= 0.0 && sigma.is_finite() && tau.is_finite()) {
            return Err(DataError::Invalid(format!(
                "random field parameters must satisfy α > 0, τ > 0, σ ≥ 0 (got α = {alpha}, τ = {tau}, σ = {sigma})"
            )));
        }
        let mut half = shape.to_vec();
        let last = shape.len() - 1;
        half[last] = shape[last] / 2 + 1;
        let bins: usize = half.iter().product();
        let mut amplitude = Vec::with_capacity(bins);
        let mut conjugate = Vec::with_capacity(bins);
        for bin in 0..bins {
            let index = unravel(bin, &half);
            let k2: f64 = index
                .iter()
                .zip(shape)
                .map(|(&j, &n)| signed_wavenumber(j, n).powi(2))
                .sum();
            let eigen = 4.0 * std::f64::consts::PI.powi(2) * k2 + tau * tau;
            amplitude.push(if bin == 0 {
                0.0
            } else {
                sigma * eigen.powf(-alpha / 2.0)
            });
            let mirrored: Vec<usize> = index.iter().zip(shape).map(|(&j, &n)| (n - j) % n).collect();
            let in_half = mirrored[last] < half[last];
            conjugate.push(if in_half { ravel(&mirrored, &half) } else { bin });
        }
        let axes: Vec<isize> = (0..shape.len() as isize).collect();
        let inverse = FftPlan::new(
            FftDesc::new(&half, &axes, FftKind::C2R, Direction::Inverse)
                .lengths(shape)
                .norm(Norm::Forward),
        )
        .map_err(fft_error)?;
        Ok(GaussianRandomField {
            shape: shape.to_vec(),
            amplitude,
            conjugate,
            inverse,
        })
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// One sample, in C order over `shape`.
    pub fn sample(&self, rng: &mut Rng) -> Result<Vec<f64>, DataError> {
        let mut spectrum = vec![0.0; 2 * self.amplitude.len()];
        for (bin, (&amplitude, &partner)) in self.amplitude.iter().zip(&self.conjugate).enumerate() {
            let (re, im) = if partner == bin {
                (std::f64::consts::SQRT_2 * amplitude * rng.normal(), 0.0)
            } else if partner < bin {
                (spectrum[2 * partner], -spectrum[2 * partner + 1])
            } else {
                (amplitude * rng.normal(), amplitude * rng.normal())
            };
            spectrum[2 * bin] = re;
            spectrum[2 * bin + 1] = im;
        }
        self.inverse.execute_cpu(&spectrum).map_err(fft_error)
    }
}

/// The frequency of FFT index `j` on an axis of `n` points (`n/2` counts as `−n/2`).
pub(crate) fn signed_wavenumber(j: usize, n: usize) -> f64 {
    if 2 * j < n {
        j as f64
    } else {
        j as f64 - n as f64
    }
}

fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        index[d] = flat % shape[d];
        flat /= shape[d];
    }
    index
}

fn ravel(index: &[usize], shape: &[usize]) -> usize {
    index.iter().zip(shape).fold(0, |flat, (&j, &n)| flat * n + j)
}
