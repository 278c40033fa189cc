//! Darcy flow `−∇·(a∇u) = 1` on `(0,1)²` with `u = 0` on the boundary, the FNO
//! paper's benchmark: `a` thresholds a Gaussian random field, the solution is
//! computed on a fine grid and both are subsampled.
//!
//! The solver is a Jacobi-preconditioned conjugate gradient to a tight relative
//! residual rather than a sparse Cholesky factorisation: the operator is
//! symmetric positive definite with a coefficient contrast of only 4, so CG
//! converges in a few hundred matrix-free sweeps, without the compile cost of a
//! sparse direct solver crate.

use super::{generate_samples, metadata, require_nonzero, require_positive, subsample, GaussianRandomField, Rng};
use crate::{DataError, PdeDataset};

/// A Darcy data set: `n` pairs (a, u) on `resolution²` nodes of `[0,1]²`
/// (boundary included), solved on `fine_resolution²` nodes and subsampled with
/// stride `(fine_resolution − 1) / (resolution − 1)` (FNO: 421 → 85, 141, 211).
#[derive(Clone, Debug, PartialEq)]
pub struct DarcyConfig {
    pub n: usize,
    pub resolution: usize,
    pub fine_resolution: usize,
    pub seed: u64,
    /// GRF covariance `σ² (−Δ + τ²)^(−α)` with the default σ.
    pub alpha: f64,
    pub tau: f64,
    /// Coefficient where the field is ≥ 0.
    pub coefficient_high: f64,
    /// Coefficient where the field is < 0.
    pub coefficient_low: f64,
    /// Relative residual ‖b − A u‖ / ‖b‖ the solver stops at.
    pub tolerance: f64,
}

impl Default for DarcyConfig {
    fn default() -> Self {
        DarcyConfig {
            n: 1000,
            resolution: 85,
            fine_resolution: 421,
            seed: 0,
            alpha: 2.0,
            tau: 3.0,
            coefficient_high: 12.0,
            coefficient_low: 3.0,
            tolerance: 1e-10,
        }
    }
}

impl DarcyConfig {
    /// The subsampling stride, after checking every field.
    fn stride(&self) -> Result<usize, DataError> {
        require_nonzero("the number of samples", self.n)?;
        if self.resolution < 2 || self.fine_resolution < 3 {
            return Err(DataError::Invalid(format!(
                "Darcy needs resolution ≥ 2 and fine resolution ≥ 3 (got {} and {})",
                self.resolution, self.fine_resolution
            )));
        }
        if !(self.fine_resolution - 1).is_multiple_of(self.resolution - 1) {
            return Err(DataError::Invalid(format!(
                "resolution {} is not a subsampling of fine resolution {}: (fine − 1) must be a multiple of \
                 (resolution − 1), e.g. 421 → 85, 141 or 211",
                self.resolution, self.fine_resolution
            )));
        }
        require_positive("α", self.alpha)?;
        require_positive("τ", self.tau)?;
        require_positive("the high coefficient", self.coefficient_high)?;
        require_positive("the low coefficient", self.coefficient_low)?;
        require_positive("the solver tolerance", self.tolerance)?;
        Ok((self.fine_resolution - 1) / (self.resolution - 1))
    }
}

/// Generates the data set: inputs `a` and outputs `u`, both `[n, 1, R, R]`.
pub fn generate(cfg: &DarcyConfig, progress: &mut dyn FnMut(usize, usize)) -> Result<PdeDataset, DataError> {
    let stride = cfg.stride()?;
    let fine = cfg.fine_resolution;
    let sigma = GaussianRandomField::default_sigma(cfg.alpha, cfg.tau, 2);
    let field = GaussianRandomField::new(&[fine, fine], cfg.alpha, cfg.tau, sigma)?;
    let grid = [1, cfg.resolution, cfg.resolution];
    let meta = metadata(
        "darcy",
        &[
            (
                "equation",
                "-div(a grad u) = 1 on (0,1)^2, u = 0 on the boundary".into(),
            ),
            ("alpha", cfg.alpha.to_string()),
            ("tau", cfg.tau.to_string()),
            ("coefficient_high", cfg.coefficient_high.to_string()),
            ("coefficient_low", cfg.coefficient_low.to_string()),
            ("seed", cfg.seed.to_string()),
            ("resolution", cfg.resolution.to_string()),
            ("fine_resolution", fine.to_string()),
            (
                "solver",
                format!("5-point FD, Jacobi-PCG to relative residual {}", cfg.tolerance),
            ),
        ],
    );
    generate_samples(cfg.n, &grid, &grid, meta, progress, |i| {
        let a = coefficient(&field, &mut Rng::new(cfg.seed, i as u64), cfg)?;
        let u = solve(&a, fine, cfg.tolerance)?;
        let shape = [fine, fine];
        Ok((subsample(&a, &shape, stride), subsample(&u, &shape, stride)))
    })
}

/// The coefficient `a`: high where a GRF sample is ≥ 0, low elsewhere.
pub fn coefficient(field: &GaussianRandomField, rng: &mut Rng, cfg: &DarcyConfig) -> Result<Vec<f64>, DataError> {
    Ok(field
        .sample(rng)?
        .into_iter()
        .map(|v| {
            if v >= 0.0 {
                cfg.coefficient_high
            } else {
                cfg.coefficient_low
            }
        })
        .collect())
}

/// The face coefficients of the 5-point scheme on an `r × r` node grid: the
/// mean of `a` at the two nodes a face joins, along rows then along columns,
/// each `(r − 1) × r` or `r × (r − 1)` in C order.
struct Faces {
    r: usize,
    /// Between nodes (i, j) and (i + 1, j), at `i * r + j`.
    down: Vec<f64>,
    /// Between nodes (i, j) and (i, j + 1), at `i * (r − 1) + j`.
    right: Vec<f64>,
}

impl Faces {
    fn new(a: &[f64], r: usize) -> Self {
        let down = (0..(r - 1) * r).map(|k| 0.5 * (a[k] + a[k + r])).collect();
        let right = (0..r * (r - 1))
            .map(|k| {
                let (i, j) = (k / (r - 1), k % (r - 1));
                0.5 * (a[i * r + j] + a[i * r + j + 1])
            })
            .collect();
        Faces { r, down, right }
    }

    /// The four face coefficients around interior node (i, j): up, down, left, right.
    fn around(&self, i: usize, j: usize) -> [f64; 4] {
        let (r, at) = (self.r, i * self.r + j);
        [
            self.down[at - r],
            self.down[at],
            self.right[i * (r - 1) + j - 1],
            self.right[i * (r - 1) + j],
        ]
    }

    /// `A u` on the whole grid (zero on the boundary).
    fn apply(&self, u: &[f64], out: &mut [f64]) {
        let r = self.r;
        let inv_h2 = ((r - 1) * (r - 1)) as f64;
        for i in 1..r - 1 {
            for j in 1..r - 1 {
                let at = i * r + j;
                let [up, down, left, right] = self.around(i, j);
                let sum = (up + down + left + right) * u[at]
                    - up * u[at - r]
                    - down * u[at + r]
                    - left * u[at - 1]
                    - right * u[at + 1];
                out[at] = sum * inv_h2;
            }
        }
    }
}

/// `−∇·(a∇u)` by 5-point finite differences with face-averaged coefficients on
/// the `r × r` nodes of `[0,1]²` (spacing `1/(r − 1)`), at the interior nodes;
/// boundary entries are zero. `a` and `u` are `r × r` in C order.
pub fn apply_operator(a: &[f64], u: &[f64], r: usize) -> Vec<f64> {
    let mut out = vec![0.0; r * r];
    Faces::new(a, r).apply(u, &mut out);
    out
}

/// Solves `−∇·(a∇u) = 1`, `u = 0` on the boundary, on the `r × r` node grid
/// (see [`apply_operator`]) by Jacobi-preconditioned conjugate gradients until
/// `‖1 − A u‖ / ‖1‖ ≤ tolerance` over the interior; returns `u` on all nodes.
pub fn solve(a: &[f64], r: usize, tolerance: f64) -> Result<Vec<f64>, DataError> {
    if r < 3 || a.len() != r * r {
        return Err(DataError::Invalid(format!(
            "Darcy solve needs an r × r coefficient with r ≥ 3 (r = {r}, {} values)",
            a.len()
        )));
    }
    if let Some(bad) = a.iter().find(|&&v| !(v > 0.0 && v.is_finite())) {
        return Err(DataError::Invalid(format!(
            "Darcy coefficient must be positive, found {bad}"
        )));
    }
    let faces = Faces::new(a, r);
    let h2 = 1.0 / ((r - 1) * (r - 1)) as f64;
    let interior = |k: usize| {
        let (i, j) = (k / r, k % r);
        i > 0 && j > 0 && i < r - 1 && j < r - 1
    };
    // Residual, preconditioned residual, search direction, A·direction; zero on the boundary.
    let mut u = vec![0.0; r * r];
    let mut residual: Vec<f64> = (0..r * r).map(|k| if interior(k) { 1.0 } else { 0.0 }).collect();
    let inverse_diagonal: Vec<f64> = (0..r * r)
        .map(|k| {
            if interior(k) {
                h2 / faces.around(k / r, k % r).iter().sum::<f64>()
            } else {
                0.0
            }
        })
        .collect();
    let rhs_norm = (r - 2) as f64;
    let mut preconditioned: Vec<f64> = residual.iter().zip(&inverse_diagonal).map(|(x, d)| x * d).collect();
    let mut direction = preconditioned.clone();
    let mut product = vec![0.0; r * r];
    let mut rho: f64 = residual.iter().zip(&preconditioned).map(|(x, z)| x * z).sum();
    let max_iterations = 50 * r + 1000;
    for _ in 0..max_iterations {
        faces.apply(&direction, &mut product);
        let step = rho / direction.iter().zip(&product).map(|(p, q)| p * q).sum::<f64>();
        for k in 0..r * r {
            u[k] += step * direction[k];
            residual[k] -= step * product[k];
        }
        if residual.iter().map(|x| x * x).sum::<f64>().sqrt() <= tolerance * rhs_norm {
            return Ok(u);
        }
        for k in 0..r * r {
            preconditioned[k] = residual[k] * inverse_diagonal[k];
        }
        let next_rho: f64 = residual.iter().zip(&preconditioned).map(|(x, z)| x * z).sum();
        let beta = next_rho / rho;
        rho = next_rho;
        for k in 0..r * r {
            direction[k] = preconditioned[k] + beta * direction[k];
        }
    }
    Err(DataError::Invalid(format!(
        "Darcy CG did not reach relative residual {tolerance} in {max_iterations} iterations at r = {r}"
    )))
}
