//! The ops an FNO applies at every point of its grid, with forwards and
//! backwards that suit their shapes: the 1×1 convolution [`pointwise_conv`]
//! (`W·x[b] + bias` over `[B, C, S]`), the per-channel scale [`channel_scale`]
//! (`x · g[c]`) and PyTorch's exact [`gelu`].
//!
//! On `CubeBackend` the convolution and its input gradient run one kernel
//! shaped for long rows of points and few channels
//! ([`fno_kernels::pointwise_conv`], bias included), and the parameter
//! gradients, sums over the batch and every point, another
//! ([`fno_kernels::pointwise_grad`]); built of Burn's ops those are a batched
//! product with K = points, then reductions of long rows into a few channels,
//! which barely occupy a GPU. A scale's gradient sums the points before the
//! batch. GELU and its derivative are one kernel each
//! ([`fno_kernels::activation`]) rather than a chain of element-wise ops, and
//! so is an AdamW step of a parameter ([`PointwiseBackend::adamw_step`]).

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape, Tensor, TensorMetadata, TensorPrimitive};
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::activation;
use fno_kernels::adamw::{self, AdamWStep};
use fno_kernels::channel_scale::ChannelScaleProblem;
use fno_kernels::pointwise_conv::PointwiseConvProblem;
use fno_kernels::pointwise_grad::PointwiseGradProblem;
use fno_kernels::pointwise_tf32::tf32_supported;
use serde::{Deserialize, Serialize};

use crate::cube_tensor::{cast_to, empty, empty_of, precision_of};
use crate::graph::record;
use crate::matmul::{precise_matmul, PreciseMatmulBackend};
use crate::rounding::in_dtype;
use fno_kernels::precision::Precision;

fn wrap<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

fn unwrap<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Any tensor as one row of its elements.
fn flat<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 1> {
    let n = t.shape().num_elements();
    wrap(B::float_reshape(t, Shape::new([n])))
}

/// How the 1×1 convolutions and their input gradients multiply: in f32
/// throughout, or with operands rounded to TF32 on tensor cores where the
/// device has them (PyTorch's `allow_tf32`, which cuDNN's convolutions follow
/// by default). Sums stay in f32 either way, and the weight gradients (long
/// sums over every point) always run in f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatmulPrecision {
    #[default]
    F32,
    Tf32,
}

impl MatmulPrecision {
    /// Why this precision does not apply on `device`, where it does not: TF32
    /// asked for where the backend has no TF32 tensor cores (it runs f32).
    pub fn unavailable_on<B: PointwiseBackend>(self, device: &B::Device) -> Option<&'static str> {
        (self == MatmulPrecision::Tf32 && !B::tf32_available(device))
            .then_some("TF32 asked for, but this device has no TF32 tensor cores: the 1×1 convolutions run in f32")
    }
}

/// A backend with the channel ops' forward and parameter gradients. The
/// defaults are built of Burn's ops (and [`precise_matmul`]).
pub trait PointwiseBackend: PreciseMatmulBackend {
    /// `x [B, Cin, S]`, `weight [Cout, Cin]`, `bias [Cout]` → `[B, Cout, S]`,
    /// in TF32 where `precision` asks for it and the device has it.
    fn pointwise_conv(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        _precision: MatmulPrecision,
    ) -> FloatTensor<Self> {
        pointwise_conv_by_ops::<Self>(x, weight, bias)
    }

    /// Whether [`MatmulPrecision::Tf32`] changes anything on `device` (it has
    /// TF32 tensor cores and this backend uses them).
    fn tf32_available(_device: &Self::Device) -> bool {
        false
    }

    /// The weight (`[Cout, Cin]`) and, `with_bias`, bias (`[Cout]`) gradients of
    /// [`pointwise_conv`](Self::pointwise_conv) from its output gradient
    /// `grad [B, Cout, S]` and input `x [B, Cin, S]`.
    fn pointwise_param_grads(
        grad: FloatTensor<Self>,
        x: FloatTensor<Self>,
        with_bias: bool,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        pointwise_param_grads_by_ops::<Self>(grad, x, with_bias)
    }

    /// `x [B, C, S]` scaled per channel by `scale [C]`.
    fn channel_scale(x: FloatTensor<Self>, scale: FloatTensor<Self>) -> FloatTensor<Self> {
        channel_scale_by_ops::<Self>(x, scale)
    }

    /// PyTorch's exact GELU, `x·Φ(x)` through erf, of any shape. Written out
    /// rather than Burn's `gelu`: burn-candle 0.21 runs candle's tanh
    /// approximation under that name (2.9e-5 relative error on the
    /// neuraloperator fixture).
    fn exact_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        gelu_by_ops::<Self>(x)
    }

    /// `grad · gelu'(x)`: `grad · (Φ(x) + x·φ(x))`, shapes equal.
    fn exact_gelu_grad(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        gelu_grad_by_ops::<Self>(x, grad)
    }

    /// One AdamW step of a parameter in neuraloperator's `AdamW` arithmetic
    /// ([`fno_kernels::adamw`]): the new parameter and moments `(p, m, v)` from
    /// the gradient and, after the first step, the moments.
    fn adamw_step(
        param: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        moments: Option<(FloatTensor<Self>, FloatTensor<Self>)>,
        step: &AdamWStep,
    ) -> [FloatTensor<Self>; 3] {
        adamw_by_ops::<Self>(param, grad, moments, step)
    }
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
fn channel_sums<B: Backend>(t: Tensor<B, 3>) -> Tensor<B, 1> {
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

#[cfg(feature = "ndarray")]
impl PointwiseBackend for burn::backend::NdArray<f32> {}
#[cfg(feature = "ndarray")]
impl PointwiseBackend for burn::backend::NdArray<f64> {}
#[cfg(feature = "candle")]
#[allow(deprecated)]
mod candle_impls {
    use super::PointwiseBackend;
    impl PointwiseBackend for burn::backend::Candle<f32, i64> {}
    impl PointwiseBackend for burn::backend::Candle<f64, i64> {}
}

impl<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement> PointwiseBackend for CubeBackend<R, F, I, BT> {
    fn pointwise_conv(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        precision: MatmulPrecision,
    ) -> FloatTensor<Self> {
        let Ok(activations) = precision_of(x.dtype) else {
            return pointwise_conv_by_ops::<Self>(x, weight, bias);
        };
        // The weight is read at its strides (the input gradient passes a
        // transposed view); it and the bias are f32 (master weights).
        let weight = cast_to(weight, DType::F32);
        let (x, bias) = (
            into_contiguous(x),
            bias.map(|b| cast_to(into_contiguous(b), DType::F32)),
        );
        let (xs, ws) = (x.meta.shape().to_vec(), weight.meta.shape().to_vec());
        let strides = weight.meta.strides().to_vec();
        let problem = PointwiseConvProblem {
            batch: xs[0],
            m: ws[0],
            k: ws[1],
            points: xs[2],
            a_row: strides[0],
            a_col: strides[1],
            bias: bias.is_some(),
        };
        let out = empty_of(&x, vec![problem.batch, problem.m, problem.points], x.dtype);
        let bias_values = bias.as_ref().map(|b| &b.handle);
        let tf32 = precision == MatmulPrecision::Tf32
            && activations == Precision::F32
            && problem.suits_tf32()
            && tf32_supported(&x.client);
        if tf32 {
            problem.launch_tf32(&x.client, &weight.handle, &x.handle, bias_values, &out.handle);
        } else {
            problem.launch(
                &x.client,
                activations,
                &weight.handle,
                &x.handle,
                bias_values,
                &out.handle,
            );
        }
        out
    }

    fn tf32_available(device: &Self::Device) -> bool {
        tf32_supported(&R::client(device))
    }

    fn channel_scale(x: FloatTensor<Self>, scale: FloatTensor<Self>) -> FloatTensor<Self> {
        let Ok(activations) = precision_of(x.dtype) else {
            return channel_scale_by_ops::<Self>(x, scale);
        };
        let (x, scale) = (into_contiguous(x), cast_to(into_contiguous(scale), DType::F32));
        let shape = x.meta.shape().to_vec();
        let problem = ChannelScaleProblem {
            batch: shape[0],
            channels: shape[1],
            points: shape[2],
        };
        let out = empty_of(&x, shape, x.dtype);
        problem.launch(&x.client, activations, &x.handle, &scale.handle, &out.handle);
        out
    }

    fn exact_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let Ok(activations) = precision_of(x.dtype) else {
            return gelu_by_ops::<Self>(x);
        };
        let x = into_contiguous(x);
        let out = empty_of(&x, x.meta.shape().to_vec(), x.dtype);
        let len = x.meta.shape().num_elements();
        activation::gelu(&x.client, activations, &x.handle, &out.handle, len);
        out
    }

    fn exact_gelu_grad(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        let Ok(activations) = precision_of(x.dtype) else {
            return gelu_grad_by_ops::<Self>(x, grad);
        };
        let dtype = x.dtype;
        let (x, grad) = (into_contiguous(x), cast_to(into_contiguous(grad), dtype));
        let out = empty_of(&x, x.meta.shape().to_vec(), x.dtype);
        activation::gelu_grad(
            &x.client,
            activations,
            &x.handle,
            &grad.handle,
            &out.handle,
            x.meta.shape().num_elements(),
        );
        out
    }

    fn adamw_step(
        param: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        moments: Option<(FloatTensor<Self>, FloatTensor<Self>)>,
        step: &AdamWStep,
    ) -> [FloatTensor<Self>; 3] {
        let f32s = [&param, &grad]
            .into_iter()
            .chain(moments.iter().flat_map(|(m, v)| [m, v]));
        if f32s.into_iter().any(|t| t.dtype != DType::F32) {
            return adamw_by_ops::<Self>(param, grad, moments, step);
        }
        let (param, grad) = (into_contiguous(param), into_contiguous(grad));
        let moments = moments.map(|(m, v)| (into_contiguous(m), into_contiguous(v)));
        let out = [(); 3].map(|_| empty(&param, param.meta.shape().to_vec()));
        adamw::adamw(
            &param.client,
            step,
            (&param.handle, &grad.handle),
            moments.as_ref().map(|(m, v)| (&m.handle, &v.handle)),
            (&out[0].handle, &out[1].handle, &out[2].handle),
            param.meta.shape().num_elements(),
        );
        out
    }

    fn pointwise_param_grads(
        grad: FloatTensor<Self>,
        x: FloatTensor<Self>,
        with_bias: bool,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let Ok(activations) = precision_of(grad.dtype) else {
            return pointwise_param_grads_by_ops::<Self>(grad, x, with_bias);
        };
        // Weight and bias gradients in f32, summed in f32.
        let dtype = grad.dtype;
        let (grad, x) = (into_contiguous(grad), cast_to(into_contiguous(x), dtype));
        let (g, xs) = (grad.meta.shape().to_vec(), x.meta.shape().to_vec());
        let problem = PointwiseGradProblem {
            batch: g[0],
            cout: g[1],
            cin: xs[1],
            points: g[2],
            bias: with_bias,
        };
        let gw = empty(&grad, vec![problem.cout, problem.cin]);
        let gb = with_bias.then(|| empty(&grad, vec![problem.cout]));
        problem.launch(
            &grad.client,
            activations,
            &grad.handle,
            &x.handle,
            &gw.handle,
            gb.as_ref().map(|t| &t.handle),
        );
        (gw, gb)
    }
}

/// [`PointwiseBackend::pointwise_conv`] on tensors.
///
/// # Panics
/// If `weight` is not `[Cout, Cin]` for `x`'s `Cin`, or `bias` not `[Cout]`.
pub fn pointwise_conv<B: PointwiseBackend>(
    x: Tensor<B, 3>,
    weight: Tensor<B, 2>,
    bias: Option<Tensor<B, 1>>,
    precision: MatmulPrecision,
) -> Tensor<B, 3> {
    let ([cout, cin], [_, xc, _]) = (weight.dims(), x.dims());
    assert_eq!(
        cin, xc,
        "1×1 convolution: weight [{cout}, {cin}] for {xc} input channels"
    );
    if let Some(b) = &bias {
        assert_eq!(
            b.dims()[0],
            cout,
            "1×1 convolution: bias of {} for {cout} outputs",
            b.dims()[0]
        );
    }
    wrap(B::pointwise_conv(
        unwrap(x),
        unwrap(weight),
        bias.map(unwrap),
        precision,
    ))
}

/// [`PointwiseBackend::channel_scale`] on tensors.
///
/// # Panics
/// If `scale` does not hold one value per channel of `x`.
pub fn channel_scale<B: PointwiseBackend>(x: Tensor<B, 3>, scale: Tensor<B, 1>) -> Tensor<B, 3> {
    let (c, [_, xc, _]) = (scale.dims()[0], x.dims());
    assert_eq!(c, xc, "channel scale of {c} values for {xc} channels");
    wrap(B::channel_scale(unwrap(x), unwrap(scale)))
}

/// [`PointwiseBackend::exact_gelu`] on tensors.
pub fn gelu<B: PointwiseBackend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    wrap(B::exact_gelu(unwrap(x)))
}

/// GELU's node: its input, kept for the derivative.
#[derive(Debug)]
struct GeluBackward;

impl<B: PointwiseBackend> Backward<B, 1> for GeluBackward {
    type State = NodeId;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let x: FloatTensor<B> = checkpointer.retrieve_node_output(ops.state);
            grads.register::<B>(node.id, B::exact_gelu_grad(x, grad));
        }
    }
}

/// The 1×1 convolution's node: parents (x, weight) or (x, weight, bias); the
/// input gradient multiplies at the forward's precision.
#[derive(Debug)]
struct PointwiseConvBackward<const N: usize>(MatmulPrecision);

impl<B: PointwiseBackend, const N: usize> Backward<B, N> for PointwiseConvBackward<N> {
    /// x (kept when a parameter needs its gradient) and the weight (kept when x does).
    type State = (Option<NodeId>, Option<NodeId>);

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let (x_state, w_state) = ops.state;
        let parents: Vec<_> = ops.parents.into_iter().collect();
        let tracked = |i: usize| parents.get(i).and_then(|p| p.as_ref()).map(|p| p.id);
        if let (Some(node), Some(w)) = (tracked(0), w_state) {
            let w: FloatTensor<B> = checkpointer.retrieve_node_output(w);
            let gx = B::pointwise_conv(grad.clone(), B::float_transpose(w), None, self.0);
            grads.register::<B>(node, gx);
        }
        if let Some(x) = x_state {
            let x: FloatTensor<B> = checkpointer.retrieve_node_output(x);
            let (gw, gb) = B::pointwise_param_grads(grad, x, tracked(2).is_some());
            if let Some(node) = tracked(1) {
                grads.register::<B>(node, gw);
            }
            if let (Some(node), Some(gb)) = (tracked(2), gb) {
                grads.register::<B>(node, gb);
            }
        }
    }
}

/// The channel scale's node: parents (x, scale).
#[derive(Debug)]
struct ChannelScaleBackward;

impl<B: PointwiseBackend> Backward<B, 2> for ChannelScaleBackward {
    /// x (kept when the scale needs its gradient), the scale (kept when x
    /// does) and the scale's dtype.
    type State = (Option<NodeId>, Option<NodeId>, DType);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_x, node_scale] = ops.parents;
        let grad = wrap::<B, 3>(grads.consume::<B>(&ops.node));
        let (x_state, scale_state, scale_dtype) = ops.state;
        if let (Some(node), Some(scale)) = (node_x, scale_state) {
            let scale: FloatTensor<B> = checkpointer.retrieve_node_output(scale);
            grads.register::<B>(node.id, B::channel_scale(unwrap(grad.clone()), scale));
        }
        if let (Some(node), Some(x)) = (node_scale, x_state) {
            let x = wrap::<B, 3>(checkpointer.retrieve_node_output(x));
            // Summed in f32 (half products over a batch's points overflow f16,
            // more so under a loss scale), returned in the scale's dtype.
            let f32_of = |t: Tensor<B, 3>| if t.dtype() == DType::F32 { t } else { t.cast(DType::F32) };
            let sums = channel_sums(f32_of(grad) * f32_of(x));
            let sums = if scale_dtype == DType::F32 {
                sums
            } else {
                sums.cast(scale_dtype)
            };
            grads.register::<B>(node.id, unwrap(sums));
        }
    }
}

impl<B: PointwiseBackend, C: CheckpointStrategy> PointwiseBackend for Autodiff<B, C> {
    fn pointwise_conv(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        precision: MatmulPrecision,
    ) -> FloatTensor<Self> {
        let out = B::pointwise_conv(
            x.primitive.clone(),
            weight.primitive.clone(),
            bias.as_ref().map(|b| b.primitive.clone()),
            precision,
        );
        let params_tracked = weight.is_tracked() || bias.as_ref().is_some_and(|b| b.is_tracked());
        let x_tracked = x.is_tracked();
        let keep = |checkpoint: &mut dyn FnMut(&FloatTensor<Self>) -> NodeId| {
            (
                params_tracked.then(|| checkpoint(&x)),
                x_tracked.then(|| checkpoint(&weight)),
            )
        };
        match &bias {
            None => record::<B, C, _, 2>(PointwiseConvBackward::<2>(precision), [&x, &weight], out, keep),
            Some(b) => record::<B, C, _, 3>(PointwiseConvBackward::<3>(precision), [&x, &weight, b], out, keep),
        }
    }

    fn tf32_available(device: &Self::Device) -> bool {
        B::tf32_available(device)
    }

    fn exact_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let out = B::exact_gelu(x.primitive.clone());
        record::<B, C, _, 1>(GeluBackward, [&x], out, |checkpoint| checkpoint(&x))
    }

    fn channel_scale(x: FloatTensor<Self>, scale: FloatTensor<Self>) -> FloatTensor<Self> {
        let out = B::channel_scale(x.primitive.clone(), scale.primitive.clone());
        let (x_tracked, scale_tracked) = (x.is_tracked(), scale.is_tracked());
        let scale_dtype = scale.primitive.dtype();
        record::<B, C, _, 2>(ChannelScaleBackward, [&x, &scale], out, |checkpoint| {
            (
                scale_tracked.then(|| checkpoint(&x)),
                x_tracked.then(|| checkpoint(&scale)),
                scale_dtype,
            )
        })
    }
}
