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

use burn::tensor::ops::FloatTensor;
use burn::tensor::Tensor;
use fno_kernels::adamw::AdamWStep;
use serde::{Deserialize, Serialize};

use crate::matmul::PreciseMatmulBackend;
pub use crate::reference::pointwise::row_sums;
use crate::reference::pointwise::{
    adamw_by_ops, channel_scale_by_ops, gelu_by_ops, gelu_grad_by_ops, pointwise_conv_by_ops,
    pointwise_param_grads_by_ops, unwrap, wrap,
};

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
/// defaults are built of Burn's ops (and [`precise_matmul`](crate::precise_matmul)).
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
