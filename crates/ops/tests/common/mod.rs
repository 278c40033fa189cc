//! A direct f64 computation of neuraloperator's spectral convolution, written
//! from its definition (naive DFT sums, no matrices, no FFT library): rfftn,
//! centred windows (FFT order) on all but the last dim, first bins on the last,
//! per-mode contraction, modes placed in a spectrum of the input's size, then
//! irfftn(s = output) with numpy's crop/pad-at-the-end and irfft's dropping of
//! imaginary parts at DC and Nyquist.

#![allow(dead_code)]

pub struct Problem {
    pub batch: usize,
    pub cin: usize,
    pub cout: usize,
    pub input: Vec<usize>,
    pub output: Vec<usize>,
    /// As stored: centred-window sizes, then the number of last-dim bins.
    pub modes: Vec<usize>,
    /// Per-dim forward and inverse scales (neuraloperator's `fft_norm`).
    pub forward_scale: Vec<f64>,
    pub inverse_scale: Vec<f64>,
    pub shared: bool,
}

fn index(shape: &[usize], idx: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        out[d] = flat % shape[d];
        flat /= shape[d];
    }
    out
}

/// Frequency index (FFT order) of retained position `j` along a dim.
pub fn frequency(j: usize, m: usize, n: usize, last: bool) -> usize {
    if last || j < m - m / 2 {
        j
    } else {
        n - m + j
    }
}

/// `x: [B, Cin, *input]`, weight interleaved `[Cin, Cout, *modes, 2]` (or
/// `[Cin, Cout, 2]` shared), bias `[Cout]`; returns `[B, Cout, *output]`.
pub fn spectral_conv_f64(p: &Problem, x: &[f64], w: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
    let dims = p.input.len();
    let last = dims - 1;
    let tau = std::f64::consts::TAU;
    let n_in: usize = p.input.iter().product();
    let k_total: usize = p.modes.iter().product();
    // Retained spectrum of the input, [B, Cin, K].
    let mut xh = vec![(0.0, 0.0); p.batch * p.cin * k_total];
    for kf in 0..k_total {
        let j = unravel(kf, &p.modes);
        let freq: Vec<usize> = (0..dims).map(|d| frequency(j[d], p.modes[d], p.input[d], d == last)).collect();
        let scale: f64 = p.forward_scale.iter().product();
        for bc in 0..p.batch * p.cin {
            let mut acc = (0.0, 0.0);
            for t in 0..n_in {
                let tt = unravel(t, &p.input);
                let ph: f64 = (0..dims).map(|d| -tau * ((freq[d] * tt[d]) % p.input[d]) as f64 / p.input[d] as f64).sum();
                let v = x[bc * n_in + t];
                acc.0 += v * ph.cos();
                acc.1 += v * ph.sin();
            }
            xh[bc * k_total + kf] = (acc.0 * scale, acc.1 * scale);
        }
    }
    // Contraction into out_fft of the input's spectral size.
    let mut fft_size = p.input.clone();
    fft_size[last] = p.input[last] / 2 + 1;
    let f_total: usize = fft_size.iter().product();
    let mut z = vec![(0.0, 0.0); p.batch * p.cout * f_total];
    for b in 0..p.batch {
        for o in 0..p.cout {
            for kf in 0..k_total {
                let j = unravel(kf, &p.modes);
                let freq: Vec<usize> = (0..dims).map(|d| frequency(j[d], p.modes[d], p.input[d], d == last)).collect();
                let mut acc = (0.0, 0.0);
                for i in 0..p.cin {
                    let a = xh[(b * p.cin + i) * k_total + kf];
                    let wi = if p.shared { i * p.cout + o } else { (i * p.cout + o) * k_total + kf };
                    let (wr, wim) = (w[2 * wi], w[2 * wi + 1]);
                    acc.0 += a.0 * wr - a.1 * wim;
                    acc.1 += a.0 * wim + a.1 * wr;
                }
                z[(b * p.cout + o) * f_total + index(&fft_size, &freq)] = acc;
            }
        }
    }
    // irfftn(z, s = output): complex inverse over the non-last dims (crop/pad at
    // the end), then irfft over the last using bins k <= n/2 only.
    let n_out: usize = p.output.iter().product();
    let mut y = vec![0.0; p.batch * p.cout * n_out];
    for bo in 0..p.batch * p.cout {
        for t in 0..n_out {
            let tt = unravel(t, &p.output);
            let mut acc = 0.0;
            for f in 0..f_total {
                let k = unravel(f, &fft_size);
                if (0..dims).any(|d| if d == last { k[d] > p.output[d] / 2 } else { k[d] >= p.output[d] }) {
                    continue;
                }
                let v = z[bo * f_total + f];
                if v == (0.0, 0.0) {
                    continue;
                }
                let c = if k[last] == 0 || 2 * k[last] == p.output[last] { 1.0 } else { 2.0 };
                let ph: f64 = (0..dims).map(|d| tau * ((k[d] * tt[d]) % p.output[d]) as f64 / p.output[d] as f64).sum();
                acc += c * (v.0 * ph.cos() - v.1 * ph.sin());
            }
            let scale: f64 = p.inverse_scale.iter().product();
            let o = bo % p.cout;
            y[bo * n_out + t] = acc * scale + bias.map_or(0.0, |b| b[o]);
        }
    }
    y
}

/// Reproducible uniform values in [-1, 1).
pub fn random(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

pub fn rel_l2(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let num: f64 = got.iter().zip(want).map(|(g, w)| (g - w).powi(2)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den.max(1e-300)).sqrt()
}
