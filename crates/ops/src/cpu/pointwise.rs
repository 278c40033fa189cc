//! The CPU backends' element-wise steps on f32 host values over rayon's
//! threads: PyTorch's exact GELU and its gradient (a vectorised f32 erf, where
//! Burn's ops run f64 `erf` and a temporary per operation on one core) and
//! AdamW ([`adamw_in_place`] in f32 on the buffers themselves, the tensors in
//! parallel). Other dtypes (the f64 backends the tests use) run by Burn's ops.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, TensorMetadata};
use fno_kernels::adamw::{adamw_in_place, AdamWStep};
use fno_kernels::host_buffers::par_build;
use rayon::prelude::*;

use super::normal::{cdf, gelu_derivative, vectorized};
use super::{device_tensor, host};
use crate::pointwise::{adamw_steps_by_ops, AdamWOperands};
use crate::reference::pointwise::{channel_scale_by_ops, channel_scale_grad_by_ops, gelu_by_ops, gelu_grad_by_ops};

/// Values a task: small enough to spread a 16² batch's activations over the cores.
const CHUNK: usize = 1 << 14;

/// [`crate::PointwiseBackend::exact_gelu`] on a CPU backend.
pub(crate) fn gelu<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    if x.dtype() != DType::F32 {
        return gelu_by_ops::<B>(x);
    }
    let device = B::float_device(&x);
    let x = host::<B>(x);
    let y = par_build(
        (x.len(), CHUNK),
        0.0,
        || (),
        |_, i, y| {
            vectorized(|| {
                for (y, &x) in y.iter_mut().zip(&x[i * CHUNK..]) {
                    *y = x * cdf(x);
                }
            })
        },
    );
    device_tensor::<B>(y, &x.shape, (&device, DType::F32))
}

/// [`crate::PointwiseBackend::exact_gelu_grad`] on a CPU backend.
pub(crate) fn gelu_grad<B: Backend>(x: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
    if x.dtype() != DType::F32 || grad.dtype() != DType::F32 {
        return gelu_grad_by_ops::<B>(x, grad);
    }
    let device = B::float_device(&x);
    let x = host::<B>(x);
    let mut g = host::<B>(grad).into_vec();
    g.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK)).for_each(|(g, x)| {
        vectorized(|| {
            for (g, &x) in g.iter_mut().zip(x) {
                *g *= gelu_derivative(x);
            }
        })
    });
    device_tensor::<B>(g, &x.shape, (&device, DType::F32))
}

/// `Σ a·b` in eight interleaved partial sums (vectorised, and each sum over
/// an eighth of the terms).
#[inline(always)]
pub(crate) fn lanes_dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(&a, &b)| a * b).sum();
    for (a, b) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += a[l] * b[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `Σ a` in eight interleaved partial sums.
#[inline(always)]
pub(crate) fn lanes_sum(a: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks = a.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for a in chunks {
        for l in 0..8 {
            acc[l] += a[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// [`crate::PointwiseBackend::channel_scale`] on a CPU backend: `x [B, C, S]`
/// times `scale [C]`, rows over the threads.
pub(crate) fn channel_scale<B: Backend>(x: FloatTensor<B>, scale: FloatTensor<B>) -> FloatTensor<B> {
    if x.dtype() != DType::F32 || scale.dtype() != DType::F32 {
        return channel_scale_by_ops::<B>(x, scale);
    }
    let device = B::float_device(&x);
    let (x, scale) = (host::<B>(x), host::<B>(scale));
    let s = x.shape[2];
    let y = par_build(
        (x.len(), s),
        0.0,
        || (),
        |_, row, y| {
            let k = scale[row % scale.len()];
            vectorized(|| y.iter_mut().zip(&x[row * s..]).for_each(|(y, &x)| *y = k * x));
        },
    );
    device_tensor::<B>(y, &x.shape, (&device, DType::F32))
}

/// [`crate::PointwiseBackend::channel_scale_grad`] on a CPU backend: a dot
/// product a row of `[B·C, S]` on the threads, then the batch summed.
pub(crate) fn channel_scale_grad<B: Backend>(
    grad: FloatTensor<B>,
    x: FloatTensor<B>,
    scale_dtype: DType,
) -> FloatTensor<B> {
    if grad.dtype() != DType::F32 || x.dtype() != DType::F32 || scale_dtype != DType::F32 {
        return channel_scale_grad_by_ops::<B>(grad, x, scale_dtype);
    }
    let device = B::float_device(&x);
    let (g, x) = (host::<B>(grad), host::<B>(x));
    let (c, s) = (x.shape[1], x.shape[2]);
    let dots: Vec<f64> = (0..x.len() / s.max(1))
        .into_par_iter()
        .map(|row| vectorized(|| lanes_dot(&g[row * s..][..s], &x[row * s..][..s])) as f64)
        .collect();
    let sums = (0..c).map(|o| dots.iter().skip(o).step_by(c).sum::<f64>() as f32);
    device_tensor::<B>(sums.collect(), &[c], (&device, DType::F32))
}

/// [`crate::PointwiseBackend::adamw_steps`] on a CPU backend.
pub(crate) fn adamw_steps<B: Backend>(
    tensors: Vec<AdamWOperands<FloatTensor<B>>>,
    step: &AdamWStep,
) -> Vec<[FloatTensor<B>; 3]> {
    let f32_only = tensors.iter().all(|t| {
        [&t.param, &t.grad]
            .into_iter()
            .chain(t.moments.as_ref().map(|(m, v)| [m, v]).into_iter().flatten())
            .all(|t| t.dtype() == DType::F32)
    });
    if !f32_only {
        return adamw_steps_by_ops::<B>(tensors, step);
    }
    let mut on_host: Vec<_> = tensors
        .into_iter()
        .map(|t| {
            let device = B::float_device(&t.param);
            let param = host::<B>(t.param);
            let shape = param.shape.clone();
            let (p, n) = (param.into_vec(), shape.iter().product());
            let (m, v) = match t.moments {
                Some((m, v)) => (host::<B>(m).into_vec(), host::<B>(v).into_vec()),
                None => (vec![0.0; n], vec![0.0; n]),
            };
            (device, shape, host::<B>(t.grad), [p, m, v])
        })
        .collect();
    on_host
        .par_iter_mut()
        .for_each(|(_, _, grad, [p, m, v])| adamw_in_place(step, grad, (p, m, v)));
    on_host
        .into_iter()
        .map(|(device, shape, _, stepped)| stepped.map(|t| device_tensor::<B>(t, &shape, (&device, DType::F32))))
        .collect()
}
