//! The kernels' CPU oracles, in f64 on the host: what each problem of
//! `fno-kernels` computes, for the tests to compare the device against.
//! (The FFT's and NUFFT's are their plans' own CPU paths, a feature of the
//! library.) Feature `oracles`.

use fno_kernels::cgemm::{CgemmProblem, ChainProblem};
use fno_kernels::channel_scale::ChannelScaleProblem;
use fno_kernels::pointwise_conv::PointwiseConvProblem;
use fno_kernels::pointwise_grad::PointwiseGradProblem;
use fno_kernels::sobolev::SobolevProblem;
use fno_kernels::split_sum::SplitSumProblem;

/// `p`'s complex (or real) product of `a` and `b`, complex interleaved;
/// `bias` holds the [`ModeBias`](fno_kernels::cgemm::ModeBias)'s `q` values.
pub fn cgemm(p: &CgemmProblem, a: &[f64], b: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
    let (_, _, ec) = p.extents();
    let width = if p.complex { 2 } else { 1 };
    // Real values read as complex ones with a zero imaginary part.
    let value = |v: &[f64], i: usize, sign: f64| match p.complex {
        true => (v[2 * i], sign * v[2 * i + 1]),
        false => (v[i], 0.0),
    };
    let mut c = vec![0.0; width * ec];
    let sa = if p.conj_a { -1.0 } else { 1.0 };
    let sb = if p.conj_b { -1.0 } else { 1.0 };
    for k in 0..p.k {
        for row in 0..p.p {
            for q in 0..p.q {
                let (mut re, mut im) = (0.0, 0.0);
                for r in 0..p.r {
                    let (xr, xi) = value(a, row * p.a.row + r * p.a.col + k * p.a.mode, sa);
                    let (yr, yi) = value(b, r * p.b.row + q * p.b.col + k * p.b.mode, sb);
                    re += xr * yr - xi * yi;
                    im += xr * yi + xi * yr;
                }
                let s = match p.mode_scale.len() {
                    0 => 1.0,
                    n => p.mode_scale[k % n] as f64,
                };
                let ic = width * (row * p.c.row + q * p.c.col + k * p.c.mode);
                c[ic] = re * s;
                if let (Some(mb), Some(values)) = (p.bias, bias) {
                    if k == mb.mode {
                        c[ic] += mb.factor as f64 * values[q];
                    }
                }
                if p.complex {
                    c[ic + 1] = im * s;
                }
            }
        }
    }
    c
}

/// `p`'s three products: `(Y, [first result, second result], input sums)`.
pub fn chain(p: &ChainProblem, x: &[f64], weights: [&[f64]; 3], bias: &[f64]) -> (Vec<f64>, [Vec<f64>; 2], Vec<f64>) {
    let c = p.channels();
    let (batch, modes) = (p.batch, p.modes);
    let mut results: Vec<Vec<f64>> = vec![x.to_vec()];
    #[allow(clippy::needless_range_loop)] // n indexes the output, the weight and the bias
    for (i, step) in p.steps.iter().enumerate() {
        let input = &results[i];
        let mut out = vec![0.0; 2 * batch * c[i + 1] * modes];
        for b in 0..batch {
            for n in 0..c[i + 1] {
                for k in 0..modes {
                    let (mut re, mut im) = (0.0, 0.0);
                    for m in 0..c[i] {
                        let at = (b * c[i] + m) * modes + k;
                        let (a, bb) = (input[2 * at], input[2 * at + 1]);
                        let w = m * step.strides.row + n * step.strides.col + k * step.strides.mode;
                        let (wr, wi) = (weights[i][2 * w], weights[i][2 * w + 1]);
                        let wi = if step.conj { -wi } else { wi };
                        re += a * wr - bb * wi;
                        im += a * wi + bb * wr;
                    }
                    if let (2, Some(at)) = (i, p.bias) {
                        if k == at.mode {
                            re += at.factor as f64 * bias[n];
                        }
                    }
                    let at = (b * c[i + 1] + n) * modes + k;
                    out[2 * at] = re;
                    out[2 * at + 1] = im;
                }
            }
        }
        results.push(out);
    }
    let sums = match p.input_sum {
        Some(at) => (0..c[0])
            .map(|ch| {
                at.factor as f64
                    * (0..batch)
                        .map(|b| x[2 * ((b * c[0] + ch) * modes + at.mode)])
                        .sum::<f64>()
            })
            .collect(),
        None => vec![],
    };
    let y = results.pop().expect("three results");
    let second = results.pop().expect("three results");
    let first = results.pop().expect("three results");
    (y, [first, second], sums)
}

/// `p`'s 1×1 convolution `Y = A·X (+ bias)` per batch row.
pub fn pointwise_conv(p: &PointwiseConvProblem, a: &[f64], x: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
    let (m, k, n) = (p.m, p.k, p.points);
    let mut y = vec![0.0; p.batch * m * n];
    for b in 0..p.batch {
        for r in 0..m {
            let row = &mut y[(b * m + r) * n..][..n];
            if let Some(bias) = bias {
                row.iter_mut().for_each(|v| *v = bias[r]);
            }
            for c in 0..k {
                let w = a[r * p.a_row + c * p.a_col];
                let xrow = &x[(b * k + c) * n..][..n];
                row.iter_mut().zip(xrow).for_each(|(v, x)| *v += w * x);
            }
        }
    }
    y
}

/// `p`'s weight and bias gradients `(Σ_b G·Xᵀ, Σ_b,points G)`.
pub fn pointwise_grad(p: &PointwiseGradProblem, g: &[f64], x: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (n, co, ci) = (p.points, p.cout, p.cin);
    let mut gw = vec![0.0; co * ci];
    let mut gb = vec![0.0; if p.bias { co } else { 0 }];
    for b in 0..p.batch {
        for o in 0..co {
            let grow = &g[(b * co + o) * n..][..n];
            if p.bias {
                gb[o] += grow.iter().sum::<f64>();
            }
            for i in 0..ci {
                let xrow = &x[(b * ci + i) * n..][..n];
                gw[o * ci + i] += grow.iter().zip(xrow).map(|(a, b)| a * b).sum::<f64>();
            }
        }
    }
    (gw, gb)
}

/// `p`'s norms: `[N of every row, D of every row]`, `N` of `x − y`, `D` of `y`.
pub fn sobolev(p: &SobolevProblem, x: &[f64], y: &[f64]) -> Vec<f64> {
    let points = p.points();
    let diff: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    let mut out = vec![0.0; 2 * p.rows];
    for r in 0..p.rows {
        let row = r * points..(r + 1) * points;
        out[r] = row_norm(p, &diff[row.clone()]);
        out[p.rows + r] = row_norm(p, &y[row]);
    }
    out
}

/// The gradient of `p`'s norm of `x − y` (or `x`) scaled per row, by the
/// adjoint of the central difference (`∂ᵀ = −∂`) rather than its formula.
pub fn sobolev_grad(p: &SobolevProblem, x: &[f64], y: Option<&[f64]>, scale: &[f64]) -> Vec<f64> {
    let points = p.points();
    let f: Vec<f64> = match y {
        Some(y) => x.iter().zip(y).map(|(a, b)| a - b).collect(),
        None => x.to_vec(),
    };
    let mut out = Vec::with_capacity(f.len());
    for (r, row) in f.chunks(points.max(1)).enumerate() {
        let mut g: Vec<f64> = row.iter().map(|v| 2.0 * v).collect();
        if p.derivatives {
            for axis in 0..3 {
                let d = difference(p, row, axis);
                let dd = difference(p, &d, axis);
                g.iter_mut().zip(dd).for_each(|(g, dd)| *g -= 2.0 * dd);
            }
        }
        out.extend(g.into_iter().map(|g| g * scale[r]));
    }
    out
}

/// The squared norm of one row: values, plus each axis' central differences.
fn row_norm(p: &SobolevProblem, f: &[f64]) -> f64 {
    let mut sum: f64 = f.iter().map(|v| v * v).sum();
    if p.derivatives {
        for axis in 0..3 {
            sum += difference(p, f, axis).iter().map(|v| v * v).sum::<f64>();
        }
    }
    sum
}

/// `∂ₐf` of one row: the periodic central difference along `axis`.
fn difference(p: &SobolevProblem, f: &[f64], axis: usize) -> Vec<f64> {
    let n = p.grid[axis];
    let stride: usize = p.grid[axis + 1..].iter().product();
    (0..f.len())
        .map(|at| {
            let c = (at / stride) % n;
            let base = at - c * stride;
            let (up, down) = (base + (c + 1) % n * stride, base + (c + n - 1) % n * stride);
            (f[up] - f[down]) * n as f64 / 2.0
        })
        .collect()
}

/// `p`'s sum over splits: `C` of `c_extent()` elements, zero off the strides.
pub fn split_sum(p: &SplitSumProblem, partial: &[f64]) -> Vec<f64> {
    let values = p.p * p.q * p.k * p.width;
    let mut c = vec![0.0; p.width * p.c_extent()];
    for v in 0..values {
        let (e, f) = (v / p.width, v % p.width);
        let (row, q, k) = (e / (p.q * p.k), (e / p.k) % p.q, e % p.k);
        let at = row * p.strides.row + q * p.strides.col + k * p.strides.mode;
        c[p.width * at + f] = (0..p.splits).map(|s| partial[s * values + v]).sum();
    }
    c
}

/// `p`'s scaling of each channel's points.
pub fn channel_scale(p: &ChannelScaleProblem, x: &[f64], scale: &[f64]) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, v)| v * scale[(i / p.points) % p.channels])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fno_kernels::cgemm::Strides;

    #[test]
    fn the_split_sum_adds_each_value_over_the_splits_at_the_strides() {
        let p = SplitSumProblem {
            splits: 3,
            p: 1,
            q: 2,
            k: 1,
            width: 2,
            strides: Strides {
                row: 0,
                col: 2,
                mode: 0,
            },
        };
        let partial: Vec<f64> = (0..12).map(|i| i as f64).collect();
        // Values 0..4 of three splits: v + 4s summed = 3v + 12.
        assert_eq!(split_sum(&p, &partial), vec![12.0, 15.0, 0.0, 0.0, 18.0, 21.0]);
    }

    #[test]
    fn the_sobolev_norm_differences_a_ramp_periodically() {
        // f = 0, 1, 2, 3 on 4 points: ∂f = (1−3, 2−0, 3−1, 0−2)·2.
        let p = SobolevProblem::new(1, &[4], true);
        assert_eq!(difference(&p, &[0.0, 1.0, 2.0, 3.0], 2), vec![-4.0, 4.0, 4.0, -4.0]);
        let norms = sobolev(&p, &[0.0; 4], &[0.0, 1.0, 2.0, 3.0]);
        assert_eq!(norms, vec![14.0 + 64.0, 14.0 + 64.0]);
    }

    #[test]
    fn the_sobolev_gradient_is_the_norms_derivative() {
        let p = SobolevProblem::new(2, &[3, 5, 2], true);
        let n = 2 * p.points();
        let x: Vec<f64> = (0..n).map(|i| ((i * 37 % 11) as f64 - 5.0) / 7.0).collect();
        let y: Vec<f64> = (0..n).map(|i| ((i * 13 % 7) as f64 - 3.0) / 5.0).collect();
        let scale = [0.5, -1.5];
        let grad = sobolev_grad(&p, &x, Some(&y), &scale);
        let h = 1e-6;
        for i in [0, 7, 29, n - 1] {
            let mut xp = x.clone();
            xp[i] += h;
            let (a, b) = (sobolev(&p, &xp, &y), sobolev(&p, &x, &y));
            let row = i / p.points();
            let fd = scale[row] * (a[row] - b[row]) / h;
            assert!(
                (fd - grad[i]).abs() < 1e-4 * (1.0 + fd.abs()),
                "{i}: {fd} vs {}",
                grad[i]
            );
        }
    }
}
