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
//! so are the AdamW steps of a model's parameters ([`PointwiseBackend::adamw_steps`]).
//! [`pointwise_conv_finished`] adds an FNO block's skip to a convolution's
//! sums and applies GELU in the same kernel, before they are stored.

use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor};
use fno_kernels::adamw::AdamWStep;
use serde::{Deserialize, Serialize};

use crate::matmul::PreciseMatmulBackend;
use crate::reference::loss::{loss_norms_by_ops, loss_norms_grad_by_ops};
pub use crate::reference::pointwise::row_sums;
use crate::reference::pointwise::{
    adamw_by_ops, channel_scale_by_ops, channel_scale_grad_by_ops, gelu_by_ops, gelu_grad_by_ops,
    pointwise_conv_by_ops, pointwise_param_grads_by_ops, unwrap, wrap,
};

/// How the 1×1 convolutions and their input gradients multiply: in f32
/// throughout, or with operands rounded to TF32 on tensor cores where the
/// device has them (PyTorch's `allow_tf32`, which cuDNN's convolutions follow
/// by default). Sums stay in f32 either way, and the weight gradients (long
/// sums over every point) always run in f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum MatmulPrecision {
    /// f32 products and sums.
    #[default]
    F32,
    /// Operands rounded to TF32 on tensor cores where the device has them
    /// (CUDA, Ampere and later), sums in f32; f32 elsewhere.
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

/// A tensor added to a 1×1 convolution's sums (`[B, Cout, S]`, the
/// convolution's dtype), scaled per channel by `gate` (`[Cout]`) where given:
/// an FNO block's skip connection.
#[derive(Clone, Debug)]
pub struct Residual<T, G = T> {
    pub values: T,
    pub gate: Option<G>,
}

/// [`PointwiseBackend::pointwise_conv_finished`] built of the backend's other
/// ops: the default, and the fallback where the kernels do not apply.
pub(crate) fn conv_finished_by_ops<B: PointwiseBackend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: Option<FloatTensor<B>>,
    residual: Option<Residual<FloatTensor<B>>>,
    gelu: bool,
    keep_pre: bool,
    precision: MatmulPrecision,
) -> (FloatTensor<B>, Option<FloatTensor<B>>) {
    let mut sums = B::pointwise_conv(x, weight, bias, precision);
    if let Some(r) = residual {
        let values = match r.gate {
            Some(g) => B::channel_scale(r.values, g),
            None => r.values,
        };
        sums = B::float_add(sums, values);
    }
    if gelu {
        (B::exact_gelu(sums.clone()), keep_pre.then_some(sums))
    } else {
        (sums, None)
    }
}

/// A parameter's AdamW operands: its value, its gradient and, after the
/// first step, its moments.
#[derive(Clone, Debug)]
pub struct AdamWOperands<T> {
    pub param: T,
    pub grad: T,
    pub moments: Option<(T, T)>,
}

/// [`PointwiseBackend::adamw_steps`] by Burn's ops, a tensor at a time.
pub(crate) fn adamw_steps_by_ops<B: burn::tensor::backend::Backend>(
    tensors: Vec<AdamWOperands<FloatTensor<B>>>,
    step: &AdamWStep,
) -> Vec<[FloatTensor<B>; 3]> {
    tensors
        .into_iter()
        .map(|t| adamw_by_ops::<B>(t.param, t.grad, t.moments, step))
        .collect()
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

    /// [`pointwise_conv`](Self::pointwise_conv) with `residual` added to its
    /// sums, then GELU where `gelu`: the result, and with `gelu && keep_pre`
    /// the sums before GELU (a backward's operand), else `None`.
    fn pointwise_conv_finished(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: Option<Residual<FloatTensor<Self>>>,
        gelu: bool,
        keep_pre: bool,
        precision: MatmulPrecision,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        conv_finished_by_ops::<Self>(x, weight, bias, residual, gelu, keep_pre, precision)
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

    /// The scale's gradient of [`channel_scale`](Self::channel_scale):
    /// `Σ grad·x` over the batch and points (`[C]`), summed in f32 and
    /// returned in `scale_dtype`.
    fn channel_scale_grad(grad: FloatTensor<Self>, x: FloatTensor<Self>, scale_dtype: DType) -> FloatTensor<Self> {
        channel_scale_grad_by_ops::<Self>(grad, x, scale_dtype)
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

    /// The squared norms of neuraloperator's relative losses for `x` and `y`
    /// `[B, C, *grid]` (1 to 3 grid axes), per sample and channel: `[2, B·C]`,
    /// `‖x − y‖²` then `‖y‖²`, each with `with derivatives` (H1) the squared
    /// periodic central differences `(f[j+1] − f[j−1])·n/2` along every grid
    /// axis added ([`fno_kernels::sobolev`]).
    fn loss_norms(x: FloatTensor<Self>, y: FloatTensor<Self>, derivatives: bool) -> FloatTensor<Self> {
        loss_norms_by_ops::<Self>(x, y, derivatives)
    }

    /// The gradient of `Σ scale[r]·‖f_r‖²` (the norms of
    /// [`loss_norms`](Self::loss_norms)) with respect to `f = x − y`, or
    /// `f = x` without `y`: `2·scale[r]·(f − Σ (n/2)²·(f[j+2] − 2f[j] + f[j−2]))`,
    /// shaped as `x`; `scale` is `[B·C]`.
    fn loss_norms_grad(
        x: FloatTensor<Self>,
        y: Option<FloatTensor<Self>>,
        scale: FloatTensor<Self>,
        derivatives: bool,
    ) -> FloatTensor<Self> {
        loss_norms_grad_by_ops::<Self>(x, y, scale, derivatives)
    }

    /// One AdamW step of each parameter in `tensors`, in neuraloperator's
    /// `AdamW` arithmetic ([`fno_kernels::adamw`]), all at `step` (the same
    /// time: all with moments or all without): the new parameters and
    /// moments `[p, m, v]`, in order.
    fn adamw_steps(tensors: Vec<AdamWOperands<FloatTensor<Self>>>, step: &AdamWStep) -> Vec<[FloatTensor<Self>; 3]> {
        adamw_steps_by_ops::<Self>(tensors, step)
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

/// [`pointwise_conv`] finished in the same kernel where the backend has one
/// ([`PointwiseBackend::pointwise_conv_finished`]): `gelu(W·x + bias + g⊙r)`,
/// with the residual, its gate and GELU each optional.
///
/// # Panics
/// As [`pointwise_conv`], and if the residual is not the output's shape and
/// dtype or its gate not one value per output channel.
pub fn pointwise_conv_finished<B: PointwiseBackend>(
    x: Tensor<B, 3>,
    weight: Tensor<B, 2>,
    bias: Option<Tensor<B, 1>>,
    residual: Option<Residual<Tensor<B, 3>, Tensor<B, 1>>>,
    gelu: bool,
    precision: MatmulPrecision,
) -> Tensor<B, 3> {
    let out = [x.dims()[0], weight.dims()[0], x.dims()[2]];
    if let Some(r) = &residual {
        assert!(
            r.values.dims() == out && r.values.dtype() == x.dtype(),
            "1×1 convolution: a residual of {:?} {:?} for an output of {out:?} {:?}",
            r.values.dims(),
            r.values.dtype(),
            x.dtype()
        );
        if let Some(g) = &r.gate {
            assert_eq!(
                g.dims()[0],
                out[1],
                "1×1 convolution: a gate of {} for {} outputs",
                g.dims()[0],
                out[1]
            );
        }
    }
    if let Some(b) = &bias {
        assert_eq!(
            b.dims()[0],
            out[1],
            "1×1 convolution: bias of {} for {} outputs",
            b.dims()[0],
            out[1]
        );
    }
    let ([_, cin], [_, xc, _]) = (weight.dims(), x.dims());
    assert_eq!(
        cin,
        xc,
        "1×1 convolution: weight {:?} for {xc} input channels",
        weight.dims()
    );
    let residual = residual.map(|r| Residual {
        values: unwrap(r.values),
        gate: r.gate.map(unwrap),
    });
    let (out, _) = B::pointwise_conv_finished(
        unwrap(x),
        unwrap(weight),
        bias.map(unwrap),
        residual,
        gelu,
        false,
        precision,
    );
    wrap(out)
}

/// [`PointwiseBackend::loss_norms`] on tensors: `[2, B·C]` for `x`, `y` `[B, C, *grid]`.
///
/// # Panics
/// If the shapes differ, or the grid has no axis or more than three.
pub fn loss_norms<B: PointwiseBackend, const D: usize>(
    x: Tensor<B, D>,
    y: Tensor<B, D>,
    derivatives: bool,
) -> Tensor<B, 2> {
    assert_eq!(x.dims(), y.dims(), "loss norms of tensors of different shapes");
    assert!(
        (3..=5).contains(&D),
        "loss norms of [B, C, *grid] with 1 to 3 grid axes, got rank {D}"
    );
    wrap(B::loss_norms(unwrap(x), unwrap(y), derivatives))
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
