//! [`PointwiseBackend`](crate::PointwiseBackend)'s defaults, built of Burn's
//! ops (and [`precise_matmul`]) on any backend.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape, Tensor, TensorMetadata, TensorPrimitive};
use fno_kernels::adamw::AdamWStep;

use crate::matmul::{precise_matmul, PreciseMatmulBackend};
use crate::rounding::in_dtype;

pub(crate) fn wrap<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

pub(crate) fn unwrap<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Any tensor as one row of its elements.
fn flat<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 1> {
    let n = t.shape().num_elements();
    wrap(B::float_reshape(t, Shape::new([n])))
}

pub(crate) fn adamw_by_ops<B: Backend>(
    param: FloatTensor<B>,
    grad: FloatTensor<B>,
    moments: Option<(FloatTensor<B>, FloatTensor<B>)>,
    step: &AdamWStep,
) -> [FloatTensor<B>; 3] {
    let shape = param.shape();
    let (p, g) = (flat::<B>(param), flat::<B>(grad).mul_scalar(step.grad_scale));
    let (f1, f2) = (1.0 - step.beta_1, 1.0 - step.beta_2);
    let g2 = if step.pairs {
        // |g|² of each (re, im) pair, on both of its parts.
        let n = g.dims()[0];
        g.clone()
            .reshape([n / 2, 2])
            .square()
            .sum_dim(1)
            .repeat_dim(1, 2)
            .reshape([n])
    } else {
        g.clone().square()
    };
    let (m, v) = match moments {
        Some((m, v)) => (
            flat::<B>(m).mul_scalar(step.beta_1) + g.mul_scalar(f1),
            flat::<B>(v).mul_scalar(step.beta_2) + g2.mul_scalar(f2),
        ),
        None => (g.mul_scalar(f1), g2.mul_scalar(f2)),
    };
    let update = m.clone() / v.clone().sqrt().add_scalar(step.epsilon);
    let p = (p - update.mul_scalar(step.step_size())).mul_scalar(step.decay());
    [p, m, v].map(|t| B::float_reshape(unwrap(t), shape.clone()))
}

pub(crate) fn channel_scale_by_ops<B: Backend>(x: FloatTensor<B>, scale: FloatTensor<B>) -> FloatTensor<B> {
    let c = scale.shape()[0];
    let x = wrap::<B, 3>(x);
    // An f32 scale of half activations multiplies in their dtype, as the kernel does.
    let scale = in_dtype(wrap::<B, 1>(scale), x.dtype());
    unwrap(x * scale.reshape([1, c, 1]))
}

/// A channel scale's gradient, `Σ grad·x` over the batch and points: summed
/// in f32 (half products over a batch's points overflow f16, more so under a
/// loss scale), returned in the scale's dtype.
pub(crate) fn channel_scale_grad_by_ops<B: Backend>(
    grad: FloatTensor<B>,
    x: FloatTensor<B>,
    scale_dtype: DType,
) -> FloatTensor<B> {
    let f32_of = |t: Tensor<B, 3>| if t.dtype() == DType::F32 { t } else { t.cast(DType::F32) };
    let sums = channel_sums(f32_of(wrap(grad)) * f32_of(wrap(x)));
    unwrap(if scale_dtype == DType::F32 {
        sums
    } else {
        sums.cast(scale_dtype)
    })
}

pub(crate) fn gelu_by_ops<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    let shape = x.shape();
    let x = flat::<B>(x);
    let y = x.clone() * ((x / std::f64::consts::SQRT_2).erf() + 1.0) * 0.5;
    B::float_reshape(unwrap(y), shape)
}

pub(crate) fn gelu_grad_by_ops<B: Backend>(x: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
    let shape = x.shape();
    let (x, grad) = (flat::<B>(x), flat::<B>(grad));
    let grad = in_dtype(grad, x.dtype());
    let cdf = ((x.clone() / std::f64::consts::SQRT_2).erf() + 1.0) * 0.5;
    let pdf = (x.clone().powi_scalar(2) * -0.5).exp() / (2.0 * std::f64::consts::PI).sqrt();
    B::float_reshape(unwrap(grad * (cdf + x * pdf)), shape)
}

pub(crate) fn pointwise_conv_by_ops<B: PreciseMatmulBackend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: Option<FloatTensor<B>>,
) -> FloatTensor<B> {
    let y = precise_matmul(wrap::<B, 2>(weight).unsqueeze::<3>(), wrap::<B, 3>(x));
    unwrap(match bias {
        Some(b) => {
            let cout = b.shape()[0];
            y + wrap::<B, 1>(b).reshape([1, cout, 1])
        }
        None => y,
    })
}

/// Sums `[B, C, S]` over the points, then the batch: `[C]`.
pub(crate) fn channel_sums<B: Backend>(t: Tensor<B, 3>) -> Tensor<B, 1> {
    let [b, c, s] = t.dims();
    row_sums(t.reshape([b * c, s])).reshape([b, c]).sum_dim(0).reshape([c])
}

/// The sums of the rows of `[R, N]`: `[R]`. Burn's reduction gives each row
/// one thread, which leaves a GPU idle when rows are few and long, so a row is
/// first summed in pieces of up to 256 values (a divisor of N).
pub fn row_sums<B: Backend>(t: Tensor<B, 2>) -> Tensor<B, 1> {
    let [rows, n] = t.dims();
    let piece = (1..=n.min(256)).rev().find(|p| n % p == 0).unwrap_or(1);
    t.reshape([rows, n / piece, piece])
        .sum_dim(2)
        .sum_dim(1)
        .reshape([rows])
}

pub(crate) fn pointwise_param_grads_by_ops<B: PreciseMatmulBackend>(
    grad: FloatTensor<B>,
    x: FloatTensor<B>,
    with_bias: bool,
) -> (FloatTensor<B>, Option<FloatTensor<B>>) {
    let (grad, x) = (wrap::<B, 3>(grad), wrap::<B, 3>(x));
    let (cout, cin) = (grad.dims()[1], x.dims()[1]);
    let gw = precise_matmul(grad.clone(), x.swap_dims(1, 2))
        .sum_dim(0)
        .reshape([cout, cin]);
    (unwrap(gw), with_bias.then(|| unwrap(channel_sums(grad))))
}
