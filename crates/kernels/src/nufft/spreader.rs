//! The spreading kernel: FINUFFT's "exponential of semicircle"
//! `φ(z) = exp(β(√(1 − z²) − 1))` on `|z| ≤ 1`, stretched over `width` fine-grid
//! cells, with its width and `β` chosen from the tolerance and the upsampling
//! factor as FINUFFT chooses them, and its Fourier transform (for the
//! deconvolution) by Gauss–Legendre quadrature. Design: docs/nufft.md.

use std::f64::consts::PI;

/// The widest kernel (cells per dimension), as FINUFFT's `MAX_NSPREAD`.
pub const MAX_WIDTH: usize = 16;

/// One ES kernel: `width` cells, shape `beta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spreader {
    pub width: usize,
    pub beta: f64,
}

impl Spreader {
    /// The kernel reaching relative error `eps` in `dims` dimensions at
    /// upsampling `sigma`: FINUFFT's choice (`setup_spreader`) for
    /// `ε' = ε / max(d, 2)` — for σ = 2 the width `⌈log10(10/ε')⌉` and
    /// `β = 2.30·w` (2.20, 2.26, 2.38 for w = 2, 3, 4); otherwise
    /// `w = ⌈−ln ε' / (π·√(1 − 1/σ))⌉` and `β = 0.97·π·(1 − 1/(2σ))·w`.
    /// With FINUFFT's width for ε itself the error reaches 2.8ε (1D), 3.6ε
    /// (2D) and 6.9ε (3D) on clustered points (f64, docs/nufft.md): the
    /// kernel's error adds over dimensions.
    pub fn for_tolerance(eps: f64, sigma: f64, dims: usize) -> Spreader {
        let eps = eps / dims.max(2) as f64;
        let width = if sigma == 2.0 {
            (10.0 / eps).log10().ceil()
        } else {
            (-eps.ln() / (PI * (1.0 - 1.0 / sigma).sqrt())).ceil()
        };
        let width = (width as usize).clamp(2, MAX_WIDTH);
        let beta = if sigma == 2.0 {
            let per_cell = match width {
                2 => 2.20,
                3 => 2.26,
                4 => 2.38,
                _ => 2.30,
            };
            per_cell * width as f64
        } else {
            0.97 * PI * (1.0 - 1.0 / (2.0 * sigma)) * width as f64
        };
        Spreader { width, beta }
    }

    /// `φ(z)`, zero outside `[−1, 1]`.
    pub fn eval(&self, z: f64) -> f64 {
        if z.abs() > 1.0 {
            0.0
        } else {
            (self.beta * ((1.0 - z * z).sqrt() - 1.0)).exp()
        }
    }

    /// The kernel's value at `t` cells from its centre: `φ(2t / w)`.
    pub fn at_offset(&self, t: f64) -> f64 {
        self.eval(2.0 * t / self.width as f64)
    }

    /// The kernel's Fourier transform at the frequencies `0..count` of a
    /// fine grid of `n` cells: `∫ φ(2t/w) e^{−2πi k t / n} dt` over cells `t`
    /// (real: the kernel is even). Deconvolution divides by these.
    pub fn fourier(&self, n: usize, count: usize) -> Vec<f64> {
        let half = self.width as f64 / 2.0;
        // The integrand is smooth on [0, w/2]; this many nodes leave an error
        // far below f64's epsilon relative to the result.
        let (nodes, weights) = gauss_legendre(4 * self.width + 24);
        let samples: Vec<(f64, f64)> = nodes
            .iter()
            .zip(&weights)
            .map(|(&x, &w)| {
                let t = half * (x + 1.0) / 2.0;
                (t, w * half / 2.0 * self.at_offset(t))
            })
            .collect();
        (0..count)
            .map(|k| {
                let omega = 2.0 * PI * k as f64 / n as f64;
                2.0 * samples.iter().map(|&(t, w)| w * (omega * t).cos()).sum::<f64>()
            })
            .collect()
    }
}

/// The nodes and weights of `q`-point Gauss–Legendre quadrature on [−1, 1]
/// (Newton's iteration on the Legendre polynomial from Chebyshev guesses).
pub fn gauss_legendre(q: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut nodes, mut weights) = (vec![0.0; q], vec![0.0; q]);
    for i in 0..q.div_ceil(2) {
        let mut x = (PI * (i as f64 + 0.75) / (q as f64 + 0.5)).cos();
        let mut derivative = 0.0;
        for _ in 0..100 {
            // P_q(x) and P_q'(x) by the three-term recurrence.
            let (mut p0, mut p1) = (1.0, x);
            for k in 2..=q {
                let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                p0 = p1;
                p1 = p2;
            }
            let p = if q == 1 { x } else { p1 };
            let previous = if q == 1 { 1.0 } else { p0 };
            derivative = q as f64 * (x * p - previous) / (x * x - 1.0);
            let step = p / derivative;
            x -= step;
            if step.abs() < 1e-16 {
                break;
            }
        }
        let w = 2.0 / ((1.0 - x * x) * derivative * derivative);
        nodes[i] = -x;
        nodes[q - 1 - i] = x;
        weights[i] = w;
        weights[q - 1 - i] = w;
    }
    (nodes, weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_shapes_follow_finufft() {
        // FINUFFT's widths for ε/2 (1D, 2D) and ε/3 (3D).
        assert_eq!(
            Spreader::for_tolerance(1e-6, 2.0, 2),
            Spreader {
                width: 8,
                beta: 2.30 * 8.0
            }
        );
        assert_eq!(Spreader::for_tolerance(1e-5, 2.0, 3).width, 7);
        assert_eq!(Spreader::for_tolerance(5e-4, 2.0, 1).width, 5);
        assert_eq!(
            Spreader::for_tolerance(0.5, 2.0, 1),
            Spreader {
                width: 2,
                beta: 2.20 * 2.0
            }
        );
        assert_eq!(
            Spreader::for_tolerance(1e-2, 2.0, 1),
            Spreader {
                width: 4,
                beta: 2.38 * 4.0
            }
        );
        assert_eq!(Spreader::for_tolerance(1e-20, 2.0, 1).width, MAX_WIDTH);
        let s = Spreader::for_tolerance(1e-6, 1.25, 1);
        assert_eq!(s.width, 11);
        assert!((s.beta - 0.97 * PI * 0.6 * 11.0).abs() < 1e-12);
    }

    #[test]
    fn quadrature_integrates_polynomials_exactly() {
        let (x, w) = gauss_legendre(9);
        assert!((w.iter().sum::<f64>() - 2.0).abs() < 1e-14);
        // ∫ x^16 = 2/17 needs degree 17 = 2·9 − 1.
        let moment: f64 = x.iter().zip(&w).map(|(x, w)| w * x.powi(16)).sum();
        assert!((moment - 2.0 / 17.0).abs() < 1e-14, "{moment}");
    }

    #[test]
    fn fourier_transform_matches_a_fine_riemann_sum() {
        let s = Spreader::for_tolerance(1e-5, 2.0, 2);
        let n = 64;
        let got = s.fourier(n, 33);
        let steps = 200_000;
        let h = s.width as f64 / steps as f64;
        for (k, &g) in got.iter().enumerate() {
            let omega = 2.0 * PI * k as f64 / n as f64;
            let want: f64 = (0..steps)
                .map(|i| {
                    let t = -(s.width as f64) / 2.0 + (i as f64 + 0.5) * h;
                    s.at_offset(t) * (omega * t).cos() * h
                })
                .sum();
            assert!((g - want).abs() < 1e-8 * want.abs().max(1e-3), "k {k}: {g} vs {want}");
        }
    }
}
