//! The CPU backends' element-wise steps on f32 host values over rayon's
//! threads: PyTorch's exact GELU and its gradient (a vectorised f32 erf, where
//! Burn's ops run f64 `erf` and a temporary per operation on one core) and
//! AdamW ([`adamw_in_place`] in f32 on the buffers themselves, the tensors in
//! parallel). Other dtypes (the f64 backends the tests use) run by Burn's ops.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, TensorMetadata};
use fno_kernels::adamw::{adamw_in_place, AdamWStep};
use rayon::prelude::*;

use super::normal::{cdf, gelu_derivative};
use super::{device_tensor, host};
use crate::pointwise::{adamw_steps_by_ops, AdamWOperands};
use crate::reference::pointwise::{gelu_by_ops, gelu_grad_by_ops};

/// Values a task: small enough to spread a 16² batch's activations over the cores.
const CHUNK: usize = 1 << 14;

/// [`crate::PointwiseBackend::exact_gelu`] on a CPU backend.
pub(crate) fn gelu<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    if x.dtype() != DType::F32 {
        return gelu_by_ops::<B>(x);
    }
    let device = B::float_device(&x);
    let x = host::<B>(x);
    let mut y = vec![0.0f32; x.len()];
    y.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK)).for_each(|(y, x)| {
        for (y, &x) in y.iter_mut().zip(x) {
            *y = x * cdf(x);
        }
    });
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
        for (g, &x) in g.iter_mut().zip(x) {
            *g *= gelu_derivative(x);
        }
    });
    device_tensor::<B>(g, &x.shape, (&device, DType::F32))
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
