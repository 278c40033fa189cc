//! The CPU backends' element-wise steps on f32 host values over rayon's
//! threads: PyTorch's exact GELU and its gradient (f32 `erff`, where Burn's
//! ops run f64 `erf` and a temporary per operation on one core) and AdamW
//! ([`adamw_cpu`] in f32, the tensors in parallel). Other dtypes (the f64
//! backends the tests use) run by Burn's ops.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, TensorMetadata};
use fno_kernels::adamw::{adamw_cpu, AdamWStep};
use rayon::prelude::*;

use super::{device_tensor, host};
use crate::pointwise::{adamw_steps_by_ops, AdamWOperands};
use crate::reference::pointwise::{gelu_by_ops, gelu_grad_by_ops};

/// Values a task: small enough to spread a 16² batch's activations over the cores.
const CHUNK: usize = 1 << 14;

const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;

/// Φ(x), the standard normal's CDF.
fn normal_cdf(x: f32) -> f32 {
    0.5 * (1.0 + libm::erff(x * FRAC_1_SQRT_2))
}

/// φ(x), the standard normal's density.
fn normal_pdf(x: f32) -> f32 {
    const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;
    FRAC_1_SQRT_2PI * (-0.5 * x * x).exp()
}

/// [`crate::PointwiseBackend::exact_gelu`] on a CPU backend.
pub(crate) fn gelu<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    if x.dtype() != DType::F32 {
        return gelu_by_ops::<B>(x);
    }
    let device = B::float_device(&x);
    let (mut v, shape) = host::<B>(x);
    v.par_chunks_mut(CHUNK)
        .for_each(|c| c.iter_mut().for_each(|x| *x *= normal_cdf(*x)));
    device_tensor::<B>(v, &shape, (&device, DType::F32))
}

/// [`crate::PointwiseBackend::exact_gelu_grad`] on a CPU backend.
pub(crate) fn gelu_grad<B: Backend>(x: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
    if x.dtype() != DType::F32 || grad.dtype() != DType::F32 {
        return gelu_grad_by_ops::<B>(x, grad);
    }
    let device = B::float_device(&x);
    let ((x, shape), (mut g, _)) = (host::<B>(x), host::<B>(grad));
    g.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK)).for_each(|(g, x)| {
        for (g, &x) in g.iter_mut().zip(x) {
            *g *= normal_cdf(x) + x * normal_pdf(x);
        }
    });
    device_tensor::<B>(g, &shape, (&device, DType::F32))
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
    let on_host: Vec<_> = tensors
        .into_iter()
        .map(|t| {
            let device = B::float_device(&t.param);
            let (param, shape) = host::<B>(t.param);
            let moments = t.moments.map(|(m, v)| (host::<B>(m).0, host::<B>(v).0));
            (device, shape, param, host::<B>(t.grad).0, moments)
        })
        .collect();
    let stepped: Vec<_> = on_host
        .par_iter()
        .map(|(_, _, param, grad, moments)| {
            adamw_cpu(step, param, grad, moments.as_ref().map(|(m, v)| (&m[..], &v[..])))
        })
        .collect();
    on_host
        .iter()
        .zip(stepped)
        .map(|((device, shape, ..), (p, m, v))| [p, m, v].map(|t| device_tensor::<B>(t, shape, (device, DType::F32))))
        .collect()
}
