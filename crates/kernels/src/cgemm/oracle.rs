//! The CPU oracle: a problem evaluated in f64 on the host, for tests.

use super::problem::CgemmProblem;

impl CgemmProblem {
    /// The CPU oracle (f64, complex interleaved), for tests; `bias` holds the
    /// [`ModeBias`](super::ModeBias)'s `q` values.
    pub fn run_cpu(&self, a: &[f64], b: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
        let (_, _, ec) = self.extents();
        let width = if self.complex { 2 } else { 1 };
        // Real values read as complex ones with a zero imaginary part.
        let value = |v: &[f64], i: usize, sign: f64| match self.complex {
            true => (v[2 * i], sign * v[2 * i + 1]),
            false => (v[i], 0.0),
        };
        let mut c = vec![0.0; width * ec];
        let sa = if self.conj_a { -1.0 } else { 1.0 };
        let sb = if self.conj_b { -1.0 } else { 1.0 };
        for k in 0..self.k {
            for p in 0..self.p {
                for q in 0..self.q {
                    let (mut re, mut im) = (0.0, 0.0);
                    for r in 0..self.r {
                        let (xr, xi) = value(a, p * self.a.row + r * self.a.col + k * self.a.mode, sa);
                        let (yr, yi) = value(b, r * self.b.row + q * self.b.col + k * self.b.mode, sb);
                        re += xr * yr - xi * yi;
                        im += xr * yi + xi * yr;
                    }
                    let s = match self.mode_scale.len() {
                        0 => 1.0,
                        n => self.mode_scale[k % n] as f64,
                    };
                    let ic = width * (p * self.c.row + q * self.c.col + k * self.c.mode);
                    c[ic] = re * s;
                    if let (Some(mb), Some(values)) = (self.bias, bias) {
                        if k == mb.mode {
                            c[ic] += mb.factor as f64 * values[q];
                        }
                    }
                    if self.complex {
                        c[ic + 1] = im * s;
                    }
                }
            }
        }
        c
    }
}
