//! A direct f64 computation of neuraloperator 2.0's `SpectralConv.forward`
//! (real data, dense weights), following its code step by step with naive DFT
//! sums: rfftn; fftshift of the non-last dims; the centred slices
//! `[n//2 - m//2, n//2 + m//2 + m%2)` of the shifted spectrum (the first `m`
//! bins of the last dim); the weight cropped as `weight[start//2 : -start//2]`
//! where the grid has fewer modes than the weight; per-mode contraction into a
//! zero spectrum of the input's size at the same slices; fftshift again
//! (2.0.0, which moves every mode of an odd-sized dim by one) or ifftshift
//! (main since PR #688); irfftn(s = output) with numpy's crop/pad at the end
//! and irfft's dropping of imaginary parts at DC and Nyquist.

#![allow(dead_code)]

use fno_ops::InverseShift;

pub struct Problem {
    pub batch: usize,
    pub cin: usize,
    pub cout: usize,
    pub input: Vec<usize>,
    pub output: Vec<usize>,
    /// The weight's mode dims: centred counts, then the number of last-dim bins.
    pub modes: Vec<usize>,
    /// Per-dim forward and inverse scales (neuraloperator's `fft_norm`).
    pub forward_scale: Vec<f64>,
    pub inverse_scale: Vec<f64>,
    pub shared: bool,
    pub shift: InverseShift,
}

pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        out[d] = flat % shape[d];
        flat /= shape[d];
    }
    out
}

fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// `x: [B, Cin, *input]`, weight interleaved `[Cin, Cout, *modes, 2]` (or
/// `[Cin, Cout, 2]` shared), bias `[Cout]`; returns `[B, Cout, *output]`.
pub fn spectral_conv_f64(p: &Problem, x: &[f64], w: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
    let dims = p.input.len();
    let last = dims - 1;
    let tau = std::f64::consts::TAU;
    let n_in: usize = p.input.iter().product();
    let mut fft_size = p.input.clone();
    fft_size[last] = p.input[last] / 2 + 1;
    let f_total: usize = fft_size.iter().product();

    // Weight crop where the grid holds fewer modes, then the kept slices.
    let kept: Vec<usize> = (0..dims).map(|d| p.modes[d].min(fft_size[d])).collect();
    let w_start: Vec<usize> = (0..dims)
        .map(|d| {
            let start = p.modes[d] - kept[d];
            if d == last {
                0
            } else {
                start / 2
            }
        })
        .collect();
    let x_start: Vec<usize> = (0..dims)
        .map(|d| if d == last { 0 } else { fft_size[d] / 2 - kept[d] / 2 })
        .collect();
    let points: Vec<Vec<usize>> = (0..n_in).map(|t| unravel(t, &p.input)).collect();
    // rfftn, then fftshift of the non-last dims: shifted[s] = X[(s - n//2) mod n].
    // Only the slices the contraction reads are summed (the rest stay zero).
    let mut shifted = vec![(0.0, 0.0); p.batch * p.cin * f_total];
    let fscale: f64 = p.forward_scale.iter().product();
    for kf in 0..kept.iter().product::<usize>() {
        let j = unravel(kf, &kept);
        let s: Vec<usize> = (0..dims).map(|d| x_start[d] + j[d]).collect();
        let f = ravel(&s, &fft_size);
        let k: Vec<usize> = (0..dims)
            .map(|d| {
                if d == last {
                    s[d]
                } else {
                    (s[d] + p.input[d] - p.input[d] / 2) % p.input[d]
                }
            })
            .collect();
        for bc in 0..p.batch * p.cin {
            let mut acc = (0.0, 0.0);
            for (t, tt) in points.iter().enumerate() {
                let ph: f64 = (0..dims)
                    .map(|d| -tau * ((k[d] * tt[d]) % p.input[d]) as f64 / p.input[d] as f64)
                    .sum();
                let v = x[bc * n_in + t];
                acc.0 += v * ph.cos();
                acc.1 += v * ph.sin();
            }
            shifted[bc * f_total + f] = (acc.0 * fscale, acc.1 * fscale);
        }
    }

    let k_total: usize = kept.iter().product();
    let w_modes: usize = p.modes.iter().product();
    let mut out_fft = vec![(0.0, 0.0); p.batch * p.cout * f_total];
    for b in 0..p.batch {
        for o in 0..p.cout {
            for kf in 0..k_total {
                let j = unravel(kf, &kept);
                let xs: Vec<usize> = (0..dims).map(|d| x_start[d] + j[d]).collect();
                let ws: Vec<usize> = (0..dims).map(|d| w_start[d] + j[d]).collect();
                let (xf, wf) = (ravel(&xs, &fft_size), ravel(&ws, &p.modes));
                let mut acc = (0.0, 0.0);
                for i in 0..p.cin {
                    let a = shifted[(b * p.cin + i) * f_total + xf];
                    let wi = if p.shared {
                        i * p.cout + o
                    } else {
                        (i * p.cout + o) * w_modes + wf
                    };
                    let (wr, wim) = (w[2 * wi], w[2 * wi + 1]);
                    acc.0 += a.0 * wr - a.1 * wim;
                    acc.1 += a.0 * wim + a.1 * wr;
                }
                out_fft[(b * p.cout + o) * f_total + xf] = acc;
            }
        }
    }

    // fftshift again: z[q] = out_fft[(q - n//2) mod n] on the non-last dims;
    // ifftshift: z[q] = out_fft[(q + n//2) mod n].
    let mut z = vec![(0.0, 0.0); out_fft.len()];
    for bo in 0..p.batch * p.cout {
        for f in 0..f_total {
            let q = unravel(f, &fft_size);
            let src: Vec<usize> = (0..dims)
                .map(|d| {
                    let n = fft_size[d];
                    match (d == last, p.shift) {
                        (true, _) => q[d],
                        (false, InverseShift::Fftshift) => (q[d] + n - n / 2) % n,
                        (false, InverseShift::Ifftshift) => (q[d] + n / 2) % n,
                    }
                })
                .collect();
            z[bo * f_total + f] = out_fft[bo * f_total + ravel(&src, &fft_size)];
        }
    }

    // irfftn(z, s = output): complex inverse over the non-last dims (crop/pad at
    // the end), then irfft over the last using bins k <= n/2 only.
    let n_out: usize = p.output.iter().product();
    let iscale: f64 = p.inverse_scale.iter().product();
    // The bins the inverse reads (inside the output's crop) that can hold a
    // contracted mode; every other bin of `z` is zero.
    let live: Vec<(usize, Vec<usize>)> = (0..f_total)
        .map(|f| (f, unravel(f, &fft_size)))
        .filter(|(_, k)| {
            (0..dims).all(|d| {
                if d == last {
                    k[d] <= p.output[d] / 2
                } else {
                    k[d] < p.output[d]
                }
            })
        })
        .filter(|&(f, _)| (0..p.batch * p.cout).any(|bo| z[bo * f_total + f] != (0.0, 0.0)))
        .collect();
    let mut y = vec![0.0; p.batch * p.cout * n_out];
    for bo in 0..p.batch * p.cout {
        for t in 0..n_out {
            let tt = unravel(t, &p.output);
            let mut acc = 0.0;
            for (f, k) in &live {
                let v = z[bo * f_total + f];
                if v == (0.0, 0.0) {
                    continue;
                }
                let c = if k[last] == 0 || 2 * k[last] == p.output[last] {
                    1.0
                } else {
                    2.0
                };
                let ph: f64 = (0..dims)
                    .map(|d| tau * ((k[d] * tt[d]) % p.output[d]) as f64 / p.output[d] as f64)
                    .sum();
                acc += c * (v.0 * ph.cos() - v.1 * ph.sin());
            }
            let o = bo % p.cout;
            y[bo * n_out + t] = acc * iscale + bias.map_or(0.0, |b| b[o]);
        }
    }
    y
}

pub use fno_testing::{fresh_seed, relative_l2 as rel_l2, uniform as random};
