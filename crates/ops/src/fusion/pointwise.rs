//! [`PointwiseBackend`] on `Fusion`: the 1×1 convolution (finished by its
//! residual and GELU, where our element-wise kernels are chosen) and its
//! parameter gradients as custom ops; GELU, its derivative, the channel scale and AdamW
//! as [`super::element_wise`] says (Burn's ops by default, which Burn fusion
//! merges with their neighbours).

use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_fusion::{Fusion, FusionBackend};

use super::{element_wise, meta, register, register_one, ElementWise};
use crate::pointwise::{
    adamw_steps_by_ops, conv_finished_by_ops, AdamWOperands, MatmulPrecision, PointwiseBackend, Residual,
};
use crate::reference::pointwise::{
    channel_scale_by_ops, gelu_by_ops, gelu_grad_by_ops, pointwise_conv_by_ops, pointwise_param_grads_by_ops,
};
use crate::rounding::precision_of;
use fno_kernels::adamw::AdamWStep;

/// Whether the inner backend's kernels take `dtype` (else it runs Burn's ops).
fn kernels_take(dtype: DType) -> bool {
    precision_of(dtype).is_ok()
}

fn by_kernels() -> bool {
    element_wise() == ElementWise::Kernels
}

impl<B: FusionBackend + PointwiseBackend> PointwiseBackend for Fusion<B> {
    fn pointwise_conv(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        precision: MatmulPrecision,
    ) -> FloatTensor<Self> {
        if !kernels_take(x.dtype) {
            return pointwise_conv_by_ops::<Self>(x, weight, bias);
        }
        let shape = vec![x.shape[0], weight.shape[0], x.shape[2]];
        let dtype = x.dtype;
        let inputs = [Some(x), Some(weight), bias].into_iter().flatten().collect();
        register_one::<B>("fno_pointwise_conv", inputs, (shape, dtype), move |t| {
            let mut t = t.into_iter();
            let (x, weight) = (t.next().expect("x"), t.next().expect("weight"));
            B::pointwise_conv(x, weight, t.next(), precision)
        })
    }

    fn pointwise_conv_finished(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: Option<Residual<FloatTensor<Self>>>,
        gelu: bool,
        keep_pre: bool,
        precision: MatmulPrecision,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        // Burn's ops for the element-wise part where asked for: Burn fusion merges them.
        if !by_kernels() || !kernels_take(x.dtype) {
            return conv_finished_by_ops::<Self>(x, weight, bias, residual, gelu, keep_pre, precision);
        }
        let out = (vec![x.shape[0], weight.shape[0], x.shape[2]], x.dtype);
        let keep_pre = gelu && keep_pre;
        let slots = (
            bias.is_some(),
            residual.is_some(),
            residual.as_ref().is_some_and(|r| r.gate.is_some()),
        );
        let (values, gate) = residual.map_or((None, None), |r| (Some(r.values), r.gate));
        let inputs = [Some(x), Some(weight), bias, values, gate]
            .into_iter()
            .flatten()
            .collect();
        let outputs = vec![out; 1 + keep_pre as usize];
        let mut out = register::<B>("fno_pointwise_conv_finished", inputs, outputs, move |t| {
            let mut t = t.into_iter();
            let (x, weight) = (t.next().expect("x"), t.next().expect("weight"));
            let (has_bias, has_residual, gated) = slots;
            let bias = has_bias.then(|| t.next().expect("bias"));
            let residual = has_residual.then(|| Residual {
                values: t.next().expect("residual"),
                gate: gated.then(|| t.next().expect("gate")),
            });
            let (out, pre) = B::pointwise_conv_finished(x, weight, bias, residual, gelu, keep_pre, precision);
            [Some(out), pre].into_iter().flatten().collect()
        })
        .into_iter();
        (out.next().expect("the output"), out.next())
    }

    fn tf32_available(device: &Self::Device) -> bool {
        B::tf32_available(device)
    }

    fn pointwise_param_grads(
        grad: FloatTensor<Self>,
        x: FloatTensor<Self>,
        with_bias: bool,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        if !kernels_take(grad.dtype) {
            return pointwise_param_grads_by_ops::<Self>(grad, x, with_bias);
        }
        let (cout, cin) = (grad.shape[1], x.shape[1]);
        let mut outputs = vec![(vec![cout, cin], DType::F32)];
        if with_bias {
            outputs.push((vec![cout], DType::F32));
        }
        let mut out = register::<B>("fno_pointwise_param_grads", vec![grad, x], outputs, move |t| {
            let [grad, x] = <[_; 2]>::try_from(t).expect("two operands");
            let (gw, gb) = B::pointwise_param_grads(grad, x, with_bias);
            [Some(gw), gb].into_iter().flatten().collect()
        })
        .into_iter();
        (out.next().expect("the weight gradient"), out.next())
    }

    fn channel_scale(x: FloatTensor<Self>, scale: FloatTensor<Self>) -> FloatTensor<Self> {
        if !by_kernels() || !kernels_take(x.dtype) {
            return channel_scale_by_ops::<Self>(x, scale);
        }
        let out = meta(&x);
        register_one::<B>("fno_channel_scale", vec![x, scale], out, |t| {
            let [x, scale] = <[_; 2]>::try_from(t).expect("two operands");
            B::channel_scale(x, scale)
        })
    }

    fn exact_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        if !by_kernels() || !kernels_take(x.dtype) {
            return gelu_by_ops::<Self>(x);
        }
        let out = meta(&x);
        register_one::<B>("fno_gelu", vec![x], out, |t| {
            let [x] = <[_; 1]>::try_from(t).expect("one operand");
            B::exact_gelu(x)
        })
    }

    fn exact_gelu_grad(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        if !by_kernels() || !kernels_take(x.dtype) {
            return gelu_grad_by_ops::<Self>(x, grad);
        }
        let out = meta(&x);
        register_one::<B>("fno_gelu_grad", vec![x, grad], out, |t| {
            let [x, grad] = <[_; 2]>::try_from(t).expect("two operands");
            B::exact_gelu_grad(x, grad)
        })
    }

    fn loss_norms(x: FloatTensor<Self>, y: FloatTensor<Self>, derivatives: bool) -> FloatTensor<Self> {
        super::loss::loss_norms::<B>(x, y, derivatives)
    }

    fn loss_norms_grad(
        x: FloatTensor<Self>,
        y: Option<FloatTensor<Self>>,
        scale: FloatTensor<Self>,
        derivatives: bool,
    ) -> FloatTensor<Self> {
        super::loss::loss_norms_grad::<B>(x, y, scale, derivatives)
    }

    fn adamw_steps(tensors: Vec<AdamWOperands<FloatTensor<Self>>>, step: &AdamWStep) -> Vec<[FloatTensor<Self>; 3]> {
        let first = tensors.first().is_some_and(|t| t.moments.is_none());
        let kernels_do = |t: &AdamWOperands<FloatTensor<Self>>| {
            t.moments.is_none() == first
                && [&t.param, &t.grad]
                    .into_iter()
                    .chain(t.moments.iter().flat_map(|(m, v)| [m, v]))
                    .all(|t| t.dtype == DType::F32)
        };
        if tensors.is_empty() || !by_kernels() || !tensors.iter().all(kernels_do) {
            return adamw_steps_by_ops::<Self>(tensors, step);
        }
        let outputs = tensors.iter().flat_map(|t| vec![meta(&t.param); 3]).collect();
        let inputs = tensors
            .into_iter()
            .flat_map(|t| {
                [Some(t.param), Some(t.grad)]
                    .into_iter()
                    .chain(t.moments.into_iter().flat_map(|(m, v)| [Some(m), Some(v)]))
            })
            .flatten()
            .collect();
        let step = *step;
        let out = register::<B>("fno_adamw", inputs, outputs, move |t| {
            let per = if first { 2 } else { 4 };
            let operands = t
                .chunks(per)
                .map(|c| AdamWOperands {
                    param: c[0].clone(),
                    grad: c[1].clone(),
                    moments: (!first).then(|| (c[2].clone(), c[3].clone())),
                })
                .collect();
            B::adamw_steps(operands, &step).into_iter().flatten().collect()
        });
        out.chunks(3)
            .map(|c| [c[0].clone(), c[1].clone(), c[2].clone()])
            .collect()
    }
}
