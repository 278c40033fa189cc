//! Burgers' equation `u_t + u u_x = ν u_xx` on the periodic unit interval, the
//! FNO paper's 1-D benchmark: `u0 ~ N(0, 625 (−Δ + 25)^(−2))` mapped to `u(t = 1)`,
//! solved pseudo-spectrally with ETDRK4 (Cox–Matthews, coefficients by Kassam
//! and Trefethen's contour integrals) on a fine grid and subsampled.

use num_complex::Complex;

use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan};

use super::{
    fft_error, generate_samples, metadata, require_nonzero, require_positive, snapshots_at, subsample, whole_steps,
    GaussianRandomField, Rng,
};
use crate::{DataError, PdeDataset};

/// A Burgers data set: `n` pairs (u0, u(final_time)) on `resolution` points of
/// `[0, 1)`, solved on `fine_resolution` points (a multiple of `resolution`).
#[derive(Clone, Debug, PartialEq)]
pub struct BurgersConfig {
    pub n: usize,
    pub resolution: usize,
    pub fine_resolution: usize,
    pub seed: u64,
    pub viscosity: f64,
    pub final_time: f64,
    /// ETDRK4 step; must divide `final_time`.
    pub dt: f64,
    /// Initial condition covariance `σ² (−Δ + τ²)^(−α)`.
    pub sigma: f64,
    pub tau: f64,
    pub alpha: f64,
}

impl Default for BurgersConfig {
    fn default() -> Self {
        BurgersConfig {
            n: 1000,
            resolution: 1024,
            fine_resolution: 8192,
            seed: 0,
            viscosity: 0.1,
            final_time: 1.0,
            dt: 1e-4,
            sigma: 25.0,
            tau: 5.0,
            alpha: 2.0,
        }
    }
}

/// Generates the data set: inputs `u0` and outputs `u(final_time)`, both `[n, 1, R]`.
pub fn generate(cfg: &BurgersConfig, progress: &mut dyn FnMut(usize, usize)) -> Result<PdeDataset, DataError> {
    require_nonzero("the number of samples", cfg.n)?;
    require_nonzero("the resolution", cfg.resolution)?;
    if !cfg.fine_resolution.is_multiple_of(cfg.resolution) {
        return Err(DataError::Invalid(format!(
            "Burgers resolution {} must divide the fine resolution {}",
            cfg.resolution, cfg.fine_resolution
        )));
    }
    let stride = cfg.fine_resolution / cfg.resolution;
    let field = GaussianRandomField::new(&[cfg.fine_resolution], cfg.alpha, cfg.tau, cfg.sigma)?;
    let solver = BurgersSolver::new(cfg.fine_resolution, cfg.viscosity, cfg.dt)?;
    whole_steps(cfg.final_time, cfg.dt)?;
    let grid = [1, cfg.resolution];
    let meta = metadata(
        "burgers",
        &[
            ("equation", "u_t + u u_x = nu u_xx on the periodic unit interval".into()),
            ("viscosity", cfg.viscosity.to_string()),
            ("final_time", cfg.final_time.to_string()),
            ("dt", cfg.dt.to_string()),
            ("sigma", cfg.sigma.to_string()),
            ("tau", cfg.tau.to_string()),
            ("alpha", cfg.alpha.to_string()),
            ("seed", cfg.seed.to_string()),
            ("resolution", cfg.resolution.to_string()),
            ("fine_resolution", cfg.fine_resolution.to_string()),
            ("solver", "pseudo-spectral ETDRK4".into()),
        ],
    );
    generate_samples(cfg.n, &grid, &grid, meta, progress, |i| {
        let u0 = field.sample(&mut Rng::new(cfg.seed, i as u64))?;
        let u1 = solver.solve(&u0, &[cfg.final_time])?.remove(0);
        let shape = [cfg.fine_resolution];
        Ok((subsample(&u0, &shape, stride), subsample(&u1, &shape, stride)))
    })
}

/// ETDRK4 for Burgers on `points` equispaced points of the periodic unit
/// interval, with its FFT plans and per-mode coefficients computed once.
#[derive(Clone, Debug)]
pub struct BurgersSolver {
    dt: f64,
    /// Per real-FFT bin: `e^{L dt}` and `e^{L dt / 2}`, `L = −ν (2πk)²`.
    decay: Vec<f64>,
    half_decay: Vec<f64>,
    /// Per bin: ETDRK4's `Q`, `f1`, `f2`, `f3` (Kassam & Trefethen's notation).
    q: Vec<f64>,
    f1: Vec<f64>,
    f2: Vec<f64>,
    f3: Vec<f64>,
    /// Per bin: `−½ · 2πik`, so that the nonlinear term is `this · FFT(u²)`
    /// (zero at the Nyquist bin, where an odd derivative is undefined).
    half_derivative: Vec<Complex<f64>>,
    forward: FftPlan,
    inverse: FftPlan,
}

impl BurgersSolver {
    pub fn new(points: usize, viscosity: f64, dt: f64) -> Result<Self, DataError> {
        if points < 2 {
            return Err(DataError::Invalid(format!(
                "Burgers needs at least 2 points, got {points}"
            )));
        }
        require_positive("the viscosity", viscosity)?;
        require_positive("the time step", dt)?;
        let bins = points / 2 + 1;
        let forward =
            FftPlan::new(FftDesc::new(&[points], &[0], FftKind::R2C, Direction::Forward)).map_err(fft_error)?;
        let inverse = FftPlan::new(FftDesc::new(&[bins], &[0], FftKind::C2R, Direction::Inverse).lengths(&[points]))
            .map_err(fft_error)?;
        let mut solver = BurgersSolver {
            dt,
            decay: Vec::with_capacity(bins),
            half_decay: Vec::with_capacity(bins),
            q: Vec::with_capacity(bins),
            f1: Vec::with_capacity(bins),
            f2: Vec::with_capacity(bins),
            f3: Vec::with_capacity(bins),
            half_derivative: Vec::with_capacity(bins),
            forward,
            inverse,
        };
        // Contour points on the unit circle around each L dt; the means are real.
        const CONTOUR: usize = 32;
        let roots: Vec<Complex<f64>> = (0..CONTOUR)
            .map(|j| Complex::from_polar(1.0, std::f64::consts::PI * (j as f64 + 0.5) / CONTOUR as f64))
            .collect();
        for k in 0..bins {
            let angular = std::f64::consts::TAU * k as f64;
            let linear = -viscosity * angular * angular * dt;
            let mean = |f: &dyn Fn(Complex<f64>) -> Complex<f64>| {
                dt * roots.iter().map(|&r| f(r + linear)).sum::<Complex<f64>>().re / CONTOUR as f64
            };
            solver.decay.push(linear.exp());
            solver.half_decay.push((linear / 2.0).exp());
            solver.q.push(mean(&|z| ((z / 2.0).exp() - 1.0) / z));
            solver
                .f1
                .push(mean(&|z| (-4.0 - z + z.exp() * (4.0 - 3.0 * z + z * z)) / z.powi(3)));
            solver.f2.push(mean(&|z| (2.0 + z + z.exp() * (z - 2.0)) / z.powi(3)));
            solver
                .f3
                .push(mean(&|z| (-4.0 - 3.0 * z - z * z + z.exp() * (4.0 - z)) / z.powi(3)));
            let nyquist = 2 * k == points;
            solver
                .half_derivative
                .push(Complex::new(0.0, if nyquist { 0.0 } else { -0.5 * angular }));
        }
        Ok(solver)
    }

    /// `−(u²/2)_x` in Fourier space, from `u` in Fourier space.
    fn nonlinear(&self, spectrum: &[Complex<f64>]) -> Result<Vec<Complex<f64>>, DataError> {
        let interleaved: Vec<f64> = spectrum.iter().flat_map(|c| [c.re, c.im]).collect();
        let u = self.inverse.execute_cpu(&interleaved).map_err(fft_error)?;
        let squared: Vec<f64> = u.iter().map(|v| v * v).collect();
        let transformed = self.forward.execute_cpu(&squared).map_err(fft_error)?;
        Ok(transformed
            .chunks_exact(2)
            .zip(&self.half_derivative)
            .map(|(c, &d)| d * Complex::new(c[0], c[1]))
            .collect())
    }

    /// The solution at each of `times` (increasing, each a whole number of
    /// steps) from `u0` on the solver's grid.
    pub fn solve(&self, u0: &[f64], times: &[f64]) -> Result<Vec<Vec<f64>>, DataError> {
        if u0.len() != self.forward.input_floats() {
            return Err(DataError::Invalid(format!(
                "initial condition has {} points, the solver {}",
                u0.len(),
                self.forward.input_floats()
            )));
        }
        let spectrum = self.forward.execute_cpu(u0).map_err(fft_error)?;
        let mut v: Vec<Complex<f64>> = spectrum.chunks_exact(2).map(|c| Complex::new(c[0], c[1])).collect();
        snapshots_at(
            &mut v,
            times,
            self.dt,
            |v| {
                *v = self.step(v)?;
                Ok(())
            },
            |v| {
                let interleaved: Vec<f64> = v.iter().flat_map(|c| [c.re, c.im]).collect();
                self.inverse.execute_cpu(&interleaved).map_err(fft_error)
            },
        )
    }

    /// One ETDRK4 step of the spectrum `v`.
    fn step(&self, v: &[Complex<f64>]) -> Result<Vec<Complex<f64>>, DataError> {
        let stage = |base: &[Complex<f64>], forcing: &[Complex<f64>]| -> Vec<Complex<f64>> {
            (0..v.len())
                .map(|k| self.half_decay[k] * base[k] + self.q[k] * forcing[k])
                .collect()
        };
        let nv = self.nonlinear(v)?;
        let a = stage(v, &nv);
        let na = self.nonlinear(&a)?;
        let b = stage(v, &na);
        let nb = self.nonlinear(&b)?;
        let combined: Vec<Complex<f64>> = nb.iter().zip(&nv).map(|(&nb, &nv)| 2.0 * nb - nv).collect();
        let c = stage(&a, &combined);
        let nc = self.nonlinear(&c)?;
        Ok((0..v.len())
            .map(|k| {
                self.decay[k] * v[k] + self.f1[k] * nv[k] + 2.0 * self.f2[k] * (na[k] + nb[k]) + self.f3[k] * nc[k]
            })
            .collect())
    }
}
