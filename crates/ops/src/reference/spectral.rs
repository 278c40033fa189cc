//! The reference spectral convolution: Burn tensor ops only, so it runs on any
//! backend and Burn differentiates it. Each truncated DFT is a matmul against a
//! DFT matrix built in f64 on the host, which is exact for any size; the
//! products are [`precise_matmul`]s, so CUDA does not round them to TF32.

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use crate::matmul::{precise_matmul, PreciseMatmulBackend};
use crate::rounding::round_to;
use crate::spec::{norm_scales, SpectralConvSpec, SpectralError, SpectralShapes, WeightLayout};

/// A complex tensor as two real tensors of logical shape `shape`.
struct Split<B: Backend> {
    re: Tensor<B, 1>,
    im: Option<Tensor<B, 1>>,
    shape: Vec<usize>,
}

/// `[rows, cols]` real and imaginary parts of `f(r, c)`, on `device`.
fn matrix<B: Backend>(
    rows: usize,
    cols: usize,
    device: &B::Device,
    f: impl Fn(usize, usize) -> (f64, f64),
) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let mut re = Vec::with_capacity(rows * cols);
    let mut im = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        for c in 0..cols {
            let (a, b) = f(r, c);
            re.push(a);
            im.push(b);
        }
    }
    (
        Tensor::from_data(TensorData::new(re, [rows, cols]), device),
        Tensor::from_data(TensorData::new(im, [rows, cols]), device),
    )
}

/// `exp(sign·2πi·k·t/n)`, with the exponent reduced exactly first.
fn phase(sign: f64, k: usize, t: usize, n: usize) -> (f64, f64) {
    let a = sign * 2.0 * std::f64::consts::PI * ((k * t) % n) as f64 / n as f64;
    (a.cos(), a.sin())
}

impl<B: PreciseMatmulBackend> Split<B> {
    /// Multiplies along dim `d` by the complex matrix `(mr, mi)` of shape `[n_d, m]`.
    fn along(self, d: usize, mr: &Tensor<B, 2>, mi: &Tensor<B, 2>) -> Self {
        let n = self.shape[d];
        let m = mr.dims()[1];
        let pre: usize = self.shape[..d].iter().product();
        let post: usize = self.shape[d + 1..].iter().product();
        let to_rows = |t: Tensor<B, 1>| t.reshape([pre, n, post]).swap_dims(1, 2).reshape([pre * post, n]);
        let back = |t: Tensor<B, 2>| t.reshape([pre, post, m]).swap_dims(1, 2).reshape([pre * m * post]);
        let a = to_rows(self.re);
        let (re, im) = match self.im {
            Some(b) => {
                let b = to_rows(b);
                (
                    precise_matmul(a.clone(), mr.clone()) - precise_matmul(b.clone(), mi.clone()),
                    precise_matmul(a, mi.clone()) + precise_matmul(b, mr.clone()),
                )
            }
            None => (precise_matmul(a.clone(), mr.clone()), precise_matmul(a, mi.clone())),
        };
        let mut shape = self.shape;
        shape[d] = m;
        Split {
            re: back(re),
            im: Some(back(im)),
            shape,
        }
    }
}

/// neuraloperator's spectral convolution on any Burn backend.
///
/// `x: [B, Cin, *spatial]`; `weight: [Cin, Cout, *modes, 2]` (per mode) or
/// `[Cin, Cout, 2]` (shared); `bias: [Cout]`.
pub fn spectral_conv_reference<B: PreciseMatmulBackend, const D: usize, const W: usize>(
    x: Tensor<B, D>,
    weight: Tensor<B, W>,
    bias: Option<Tensor<B, 1>>,
    spec: &SpectralConvSpec,
) -> Result<Tensor<B, D>, SpectralError> {
    let shapes = spec.shapes(&x.dims(), &weight.dims())?;
    let device = x.device();
    let dims = shapes.spatial_dims();
    let last = dims - 1;
    let x_shape = x.dims().to_vec();
    let total: usize = x_shape.iter().product();

    // Forward: truncated DFTs, the real last dim first.
    let mut spectrum = Split {
        re: x.reshape([total]),
        im: None,
        shape: x_shape.clone(),
    };
    for d in (0..dims).rev() {
        let n = shapes.input[d];
        let (scale, _) = norm_scales(spec.norm, n, shapes.output[d]);
        let window = shapes.window(d);
        let (mr, mi) = matrix::<B>(n, shapes.modes[d], &device, |t, j| {
            let (c, s) = phase(-1.0, window.index(j, n), t, n);
            (scale * c, scale * s)
        });
        spectrum = spectrum.along(d + 2, &mr, &mi);
    }

    // The spectra as the kernels store them.
    let stored = |s: Split<B>| Split {
        re: round_to(s.re, spec.spectrum_precision),
        im: s.im.map(|im| round_to(im, spec.spectrum_precision)),
        shape: s.shape,
    };
    let spectrum = stored(spectrum);
    let weight = crop_weight(weight, &shapes, spec);
    let out = stored(contract(spectrum, weight, &shapes, spec.weights));

    // Inverse: modes sit in a spectrum of the input's size, which irfftn(s = output)
    // crops or zero-pads at the end; complex dims first, the real last dim last.
    let mut out = out;
    for d in 0..last {
        let (n_in, n_out) = (shapes.input[d], shapes.output[d]);
        let (_, scale) = norm_scales(spec.norm, n_in, n_out);
        let (mr, mi) = matrix::<B>(shapes.modes[d], n_out, &device, |j, t| {
            let k = shapes.placement(d, j);
            if k < n_out {
                let (c, s) = phase(1.0, k, t, n_out);
                (scale * c, scale * s)
            } else {
                (0.0, 0.0)
            }
        });
        out = out.along(d + 2, &mr, &mi);
    }
    let n_out = shapes.output[last];
    let (_, scale) = norm_scales(spec.norm, shapes.input[last], n_out);
    // Real output from bins k: Σ c_k (Re X_k cos θ - Im X_k sin θ), c_k = 1 for DC
    // and Nyquist, 2 otherwise; the sines vanish on DC and Nyquist, which drops
    // their imaginary parts as irfft does. Bins beyond n_out/2 are cropped.
    let (ar, ai) = matrix::<B>(shapes.modes[last], n_out, &device, |k, t| {
        if k > n_out / 2 {
            return (0.0, 0.0);
        }
        let weight = if k == 0 || 2 * k == n_out { 1.0 } else { 2.0 };
        let (c, s) = phase(1.0, k, t, n_out);
        (scale * weight * c, -scale * weight * s)
    });
    let pre: usize = out.shape[..last + 2].iter().product();
    let m = shapes.modes[last];
    let re = precise_matmul(out.re.reshape([pre, m]), ar)
        + precise_matmul(out.im.expect("complex after the forward").reshape([pre, m]), ai);
    let mut y_shape = vec![shapes.batch, shapes.out_channels];
    y_shape.extend(&shapes.output);
    let mut y: Tensor<B, D> = re.reshape(dims_array::<D>(&y_shape));
    if let Some(bias) = bias {
        if bias.dims()[0] != shapes.out_channels {
            return Err(SpectralError::Invalid(format!(
                "bias has {} entries for {} output channels",
                bias.dims()[0],
                shapes.out_channels
            )));
        }
        let mut b_shape = vec![1, shapes.out_channels];
        b_shape.extend(std::iter::repeat_n(1, dims));
        y = y + bias.reshape(dims_array::<D>(&b_shape));
    }
    Ok(y)
}

/// The part of a per-mode weight this grid uses (neuraloperator's crop).
pub fn crop_weight<B: Backend, const W: usize>(
    weight: Tensor<B, W>,
    shapes: &SpectralShapes,
    spec: &SpectralConvSpec,
) -> Tensor<B, W> {
    if spec.weights == WeightLayout::Shared || !shapes.crops_weight(&spec.modes) {
        return weight;
    }
    (0..shapes.spatial_dims()).fold(weight, |w, d| {
        w.narrow(2 + d, shapes.weight_offsets[d], shapes.modes[d])
    })
}

fn dims_array<const D: usize>(shape: &[usize]) -> [usize; D] {
    shape.try_into().expect("rank matches")
}

/// Per-mode (or shared) complex contraction over input channels.
fn contract<B: PreciseMatmulBackend, const W: usize>(
    x: Split<B>,
    weight: Tensor<B, W>,
    shapes: &SpectralShapes,
    layout: WeightLayout,
) -> Split<B> {
    let (b, ci, co, k) = (
        shapes.batch,
        shapes.in_channels,
        shapes.out_channels,
        shapes.mode_count(),
    );
    let w: Tensor<B, 2> = weight.reshape([ci * co * if layout == WeightLayout::PerMode { k } else { 1 }, 2]);
    let part = |i: usize| w.clone().narrow(1, i, 1);
    let xr = x.re.reshape([b, ci, k]);
    let xi = x.im.expect("complex after the forward").reshape([b, ci, k]);
    let (yr, yi) = match layout {
        WeightLayout::PerMode => {
            // [K, B, Cin] x [K, Cin, Cout] -> [K, B, Cout]
            let wr = part(0).reshape([ci, co, k]).permute([2, 0, 1]);
            let wi = part(1).reshape([ci, co, k]).permute([2, 0, 1]);
            let (xr, xi) = (xr.permute([2, 0, 1]), xi.permute([2, 0, 1]));
            let yr = precise_matmul(xr.clone(), wr.clone()) - precise_matmul(xi.clone(), wi.clone());
            let yi = precise_matmul(xr, wi) + precise_matmul(xi, wr);
            (yr.permute([1, 2, 0]), yi.permute([1, 2, 0]))
        }
        WeightLayout::Shared => {
            // [B·K, Cin] x [Cin, Cout] -> [B·K, Cout]
            let wr: Tensor<B, 2> = part(0).reshape([ci, co]);
            let wi: Tensor<B, 2> = part(1).reshape([ci, co]);
            let rows = |t: Tensor<B, 3>| t.swap_dims(1, 2).reshape([b * k, ci]);
            let (xr, xi) = (rows(xr), rows(xi));
            let yr = precise_matmul(xr.clone(), wr.clone()) - precise_matmul(xi.clone(), wi.clone());
            let yi = precise_matmul(xr, wi) + precise_matmul(xi, wr);
            let back = |t: Tensor<B, 2>| t.reshape([b, k, co]).swap_dims(1, 2);
            (back(yr), back(yi))
        }
    };
    let mut shape = vec![b, co];
    shape.extend(&shapes.modes);
    Split {
        re: yr.reshape([b * co * k]),
        im: Some(yi.reshape([b * co * k])),
        shape,
    }
}
