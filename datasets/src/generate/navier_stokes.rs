//! Navier–Stokes in vorticity form on the unit torus, the FNO paper's 2-D
//! benchmark: `w_t + u·∇w = ν Δw + f`, `u = (∂ψ/∂y, −∂ψ/∂x)`, `−Δψ = w`, with
//! `f = 0.1 (sin 2π(x + y) + cos 2π(x + y))` and `w0 ~ GRF(α = 2.5, τ = 7)`.
//! Pseudo-spectral as the paper's solver: the nonlinear term explicit, the
//! viscous term Crank–Nicolson, the product dealiased by the 2/3 rule.

use num_complex::Complex;

use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan};

use super::grf::signed_wavenumber;
use super::{
    fft_error, generate_samples, metadata, require_nonzero, require_positive, snapshots_at, subsample, whole_steps,
    GaussianRandomField, Rng,
};
use crate::{DataError, PdeDataset};

/// A Navier–Stokes data set: `n` samples of the initial vorticity `[1, R, R]`
/// and its snapshots at `t = snapshot_interval, 2·snapshot_interval, …,
/// final_time` as output channels `[T, R, R]`, solved on `fine_resolution²`
/// points (a multiple of `resolution`) of `[0, 1)²`.
#[derive(Clone, Debug, PartialEq)]
pub struct NavierStokesConfig {
    pub n: usize,
    pub resolution: usize,
    pub fine_resolution: usize,
    pub seed: u64,
    pub viscosity: f64,
    pub final_time: f64,
    pub snapshot_interval: f64,
    /// Must divide `snapshot_interval`.
    pub dt: f64,
    /// Initial vorticity covariance `σ² (−Δ + τ²)^(−α)` with the default σ.
    pub alpha: f64,
    pub tau: f64,
    /// Scale of the forcing `0.1 (sin 2π(x + y) + cos 2π(x + y))`; 0 leaves the flow unforced.
    pub forcing: f64,
}

impl Default for NavierStokesConfig {
    fn default() -> Self {
        NavierStokesConfig {
            n: 1000,
            resolution: 64,
            fine_resolution: 64,
            seed: 0,
            viscosity: 1e-3,
            final_time: 10.0,
            snapshot_interval: 1.0,
            dt: 1e-4,
            alpha: 2.5,
            tau: 7.0,
            forcing: 0.1,
        }
    }
}

impl NavierStokesConfig {
    /// The snapshot times, after checking every field.
    fn snapshot_times(&self) -> Result<Vec<f64>, DataError> {
        require_nonzero("the number of samples", self.n)?;
        require_nonzero("the resolution", self.resolution)?;
        if !self.fine_resolution.is_multiple_of(self.resolution) {
            return Err(DataError::Invalid(format!(
                "Navier–Stokes resolution {} must divide the fine resolution {}",
                self.resolution, self.fine_resolution
            )));
        }
        require_positive("α", self.alpha)?;
        require_positive("τ", self.tau)?;
        if !self.forcing.is_finite() {
            return Err(DataError::Invalid(format!(
                "the forcing must be finite, got {}",
                self.forcing
            )));
        }
        let count = whole_steps(self.final_time, self.snapshot_interval)?;
        whole_steps(self.snapshot_interval, self.dt)?;
        Ok((1..=count).map(|k| k as f64 * self.snapshot_interval).collect())
    }
}

/// Generates the data set: inputs `w0` (`[n, 1, R, R]`) and the snapshots
/// (`[n, T, R, R]`).
pub fn generate(cfg: &NavierStokesConfig, progress: &mut dyn FnMut(usize, usize)) -> Result<PdeDataset, DataError> {
    let times = cfg.snapshot_times()?;
    let (fine, stride) = (cfg.fine_resolution, cfg.fine_resolution / cfg.resolution);
    let sigma = GaussianRandomField::default_sigma(cfg.alpha, cfg.tau, 2);
    let field = GaussianRandomField::new(&[fine, fine], cfg.alpha, cfg.tau, sigma)?;
    let solver = NavierStokesSolver::new(fine, cfg.viscosity, cfg.dt, cfg.forcing)?;
    let meta = metadata(
        "navier-stokes",
        &[
            (
                "equation",
                "w_t + u.grad w = nu lap w + f on the unit torus, f = F (sin 2pi(x+y) + cos 2pi(x+y))".into(),
            ),
            ("viscosity", cfg.viscosity.to_string()),
            ("forcing", cfg.forcing.to_string()),
            ("snapshot_times", format!("{times:?}")),
            ("dt", cfg.dt.to_string()),
            ("alpha", cfg.alpha.to_string()),
            ("tau", cfg.tau.to_string()),
            ("seed", cfg.seed.to_string()),
            ("resolution", cfg.resolution.to_string()),
            ("fine_resolution", fine.to_string()),
            (
                "solver",
                "pseudo-spectral, Crank-Nicolson viscosity, 2/3 dealiasing".into(),
            ),
        ],
    );
    let grid = [cfg.resolution, cfg.resolution];
    let output_shape = [times.len(), cfg.resolution, cfg.resolution];
    generate_samples(cfg.n, &[&[1][..], &grid].concat(), &output_shape, meta, progress, |i| {
        let w0 = field.sample(&mut Rng::new(cfg.seed, i as u64))?;
        let shape = [fine, fine];
        let snapshots = solver.solve(&w0, &times)?;
        Ok((
            subsample(&w0, &shape, stride),
            snapshots.iter().flat_map(|w| subsample(w, &shape, stride)).collect(),
        ))
    })
}

/// The solver on `points²` points of the unit torus, with its FFT plans and
/// per-mode factors computed once.
#[derive(Clone, Debug)]
pub struct NavierStokesSolver {
    points: usize,
    dt: f64,
    /// Per real-FFT bin `(kx, ky)` (`[points, points/2 + 1]`): `2πi kx`, `2πi ky`.
    derivative_x: Vec<Complex<f64>>,
    derivative_y: Vec<Complex<f64>>,
    /// Per bin: `(2π|k|)²` (1 at the mean, where ψ's mode is set to zero).
    laplacian: Vec<f64>,
    /// Per bin: whether the mode survives the 2/3 rule.
    kept: Vec<bool>,
    /// The forcing's spectrum.
    forcing: Vec<Complex<f64>>,
    viscosity: f64,
    forward: FftPlan,
    inverse: FftPlan,
}

impl NavierStokesSolver {
    pub fn new(points: usize, viscosity: f64, dt: f64, forcing: f64) -> Result<Self, DataError> {
        if points < 4 {
            return Err(DataError::Invalid(format!(
                "Navier–Stokes needs at least 4 points per side, got {points}"
            )));
        }
        require_positive("the viscosity", viscosity)?;
        require_positive("the time step", dt)?;
        let shape = [points, points];
        let half = [points, points / 2 + 1];
        let forward =
            FftPlan::new(FftDesc::new(&shape, &[0, 1], FftKind::R2C, Direction::Forward)).map_err(fft_error)?;
        let inverse = FftPlan::new(FftDesc::new(&half, &[0, 1], FftKind::C2R, Direction::Inverse).lengths(&shape))
            .map_err(fft_error)?;
        let cutoff = 2.0 / 3.0 * (points / 2) as f64;
        let tau = std::f64::consts::TAU;
        let (mut derivative_x, mut derivative_y, mut laplacian, mut kept) = (vec![], vec![], vec![], vec![]);
        for row in 0..half[0] {
            for column in 0..half[1] {
                let (kx, ky) = (signed_wavenumber(row, points), signed_wavenumber(column, points));
                // The Nyquist bins have no odd derivative on a real grid.
                let odd = |k: f64| if 2.0 * k.abs() == points as f64 { 0.0 } else { tau * k };
                derivative_x.push(Complex::new(0.0, odd(kx)));
                derivative_y.push(Complex::new(0.0, odd(ky)));
                let k2 = tau * tau * (kx * kx + ky * ky);
                laplacian.push(if k2 == 0.0 { 1.0 } else { k2 });
                kept.push(kx.abs() <= cutoff && ky.abs() <= cutoff);
            }
        }
        // f(x, y) = F (sin 2π(x + y) + cos 2π(x + y)) on the grid, x along axis 0.
        let physical: Vec<f64> = (0..points * points)
            .map(|at| {
                let phase = tau * ((at / points) + (at % points)) as f64 / points as f64;
                forcing * (phase.sin() + phase.cos())
            })
            .collect();
        let mut solver = NavierStokesSolver {
            points,
            dt,
            derivative_x,
            derivative_y,
            laplacian,
            kept,
            forcing: Vec::new(),
            viscosity,
            forward,
            inverse,
        };
        solver.forcing = solver.transform(&physical)?;
        Ok(solver)
    }

    fn transform(&self, field: &[f64]) -> Result<Vec<Complex<f64>>, DataError> {
        let spectrum = self.forward.execute_cpu(field).map_err(fft_error)?;
        Ok(spectrum.chunks_exact(2).map(|c| Complex::new(c[0], c[1])).collect())
    }

    fn inverse(&self, spectrum: impl Iterator<Item = Complex<f64>>) -> Result<Vec<f64>, DataError> {
        let interleaved: Vec<f64> = spectrum.flat_map(|c| [c.re, c.im]).collect();
        self.inverse.execute_cpu(&interleaved).map_err(fft_error)
    }

    /// The velocity `(u, v) = (∂ψ/∂y, −∂ψ/∂x)` of the vorticity spectrum.
    fn velocity_spectra(&self, w: &[Complex<f64>]) -> (Vec<Complex<f64>>, Vec<Complex<f64>>) {
        let stream = || {
            w.iter()
                .zip(&self.laplacian)
                .enumerate()
                .map(|(k, (&w, &l))| if k == 0 { Complex::default() } else { w / l })
        };
        let u = stream().zip(&self.derivative_y).map(|(psi, &dy)| dy * psi).collect();
        let v = stream().zip(&self.derivative_x).map(|(psi, &dx)| -dx * psi).collect();
        (u, v)
    }

    /// The velocity field `(u, v)` of the vorticity `w` (each `points²`, C order).
    pub fn velocity(&self, w: &[f64]) -> Result<(Vec<f64>, Vec<f64>), DataError> {
        self.check(w)?;
        let (u, v) = self.velocity_spectra(&self.transform(w)?);
        Ok((self.inverse(u.into_iter())?, self.inverse(v.into_iter())?))
    }

    fn check(&self, w: &[f64]) -> Result<(), DataError> {
        if w.len() != self.points * self.points {
            return Err(DataError::Invalid(format!(
                "vorticity has {} values, the solver's grid {}²",
                w.len(),
                self.points
            )));
        }
        Ok(())
    }

    /// The vorticity at each of `times` (increasing, each a whole number of
    /// steps) from `w0`.
    pub fn solve(&self, w0: &[f64], times: &[f64]) -> Result<Vec<Vec<f64>>, DataError> {
        self.check(w0)?;
        let mut w = self.transform(w0)?;
        snapshots_at(
            &mut w,
            times,
            self.dt,
            |w| self.step(w),
            |w| self.inverse(w.iter().copied()),
        )
    }

    /// One step: `ŵ ← ((1 − ½ dt ν |k|²) ŵ + dt (f̂ − N̂)) / (1 + ½ dt ν |k|²)`
    /// with `N = u·∇w` dealiased.
    fn step(&self, w: &mut [Complex<f64>]) -> Result<(), DataError> {
        let (u, v) = self.velocity_spectra(w);
        let physical = |factors: &[Complex<f64>]| self.inverse(w.iter().zip(factors).map(|(&w, &d)| d * w));
        let (u, v) = (self.inverse(u.into_iter())?, self.inverse(v.into_iter())?);
        let (wx, wy) = (physical(&self.derivative_x)?, physical(&self.derivative_y)?);
        let advection: Vec<f64> = (0..u.len()).map(|i| u[i] * wx[i] + v[i] * wy[i]).collect();
        let advection = self.transform(&advection)?;
        for k in 0..w.len() {
            let nonlinear = if self.kept[k] { advection[k] } else { Complex::default() };
            let half_viscous = 0.5 * self.dt * self.viscosity * if k == 0 { 0.0 } else { self.laplacian[k] };
            w[k] = ((1.0 - half_viscous) * w[k] + self.dt * (self.forcing[k] - nonlinear)) / (1.0 + half_viscous);
        }
        Ok(())
    }
}
