//! [`PointwiseBackend`] on `CubeBackend`: the 1×1 convolution and its input
//! gradient one kernel ([`fno_kernels::pointwise_conv`], TF32 where asked and
//! available), its parameter gradients another ([`fno_kernels::pointwise_grad`]),
//! GELU, its derivative, the channel scale and AdamW one kernel each. Dtypes
//! the kernels do not take run the defaults.

use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::activation;
use fno_kernels::adamw::{self, AdamWStep};
use fno_kernels::channel_scale::ChannelScaleProblem;
use fno_kernels::pointwise_conv::PointwiseConvProblem;
use fno_kernels::pointwise_grad::PointwiseGradProblem;
use fno_kernels::pointwise_tf32::tf32_supported;
use fno_kernels::precision::Precision;

use super::tensor::{cast_to, empty, empty_of};
use crate::pointwise::{MatmulPrecision, PointwiseBackend};
use crate::reference::pointwise::{
    adamw_by_ops, channel_scale_by_ops, gelu_by_ops, gelu_grad_by_ops, pointwise_conv_by_ops,
    pointwise_param_grads_by_ops,
};
use crate::rounding::precision_of;

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
