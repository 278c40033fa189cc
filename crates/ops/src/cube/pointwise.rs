//! [`PointwiseBackend`] on `CubeBackend`: the 1×1 convolution and its input
//! gradient one kernel ([`fno_kernels::pointwise_conv`], TF32 where asked and
//! available; a residual and GELU in its epilogue), its parameter gradients another ([`fno_kernels::pointwise_grad`]),
//! GELU, its derivative, the channel scale and AdamW one kernel each. Dtypes
//! the kernels do not take run the defaults.

use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::activation;
use fno_kernels::adamw::{self, AdamWBuffers, AdamWStep};
use fno_kernels::channel_scale::ChannelScaleProblem;
use fno_kernels::pointwise_conv::{Epilogue, PointwiseConvProblem};
use fno_kernels::pointwise_grad::PointwiseGradProblem;
use fno_kernels::pointwise_tf32::tf32_supported;
use fno_kernels::precision::Precision;

use super::tensor::{cast_to, empty, empty_of};
use crate::pointwise::{
    adamw_steps_by_ops, conv_finished_by_ops, AdamWOperands, MatmulPrecision, PointwiseBackend, Residual,
};
use crate::reference::loss::{loss_norms_by_ops, loss_norms_grad_by_ops};
use crate::reference::pointwise::{
    channel_scale_by_ops, gelu_by_ops, gelu_grad_by_ops, pointwise_conv_by_ops, pointwise_param_grads_by_ops,
};
use crate::rounding::precision_of;

/// A 1×1 convolution's operands as its kernels read them: `x` contiguous, the
/// weight at its strides (the input gradient passes a transposed view), the
/// weight and bias in f32 (master weights).
struct Conv<R: CubeRuntime> {
    x: CubeTensor<R>,
    weight: CubeTensor<R>,
    bias: Option<CubeTensor<R>>,
    problem: PointwiseConvProblem,
}

impl<R: CubeRuntime> Conv<R> {
    fn new(x: CubeTensor<R>, weight: CubeTensor<R>, bias: Option<CubeTensor<R>>) -> Self {
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
        Conv {
            x,
            weight,
            bias,
            problem,
        }
    }

    fn out_shape(&self) -> Vec<usize> {
        vec![self.problem.batch, self.problem.m, self.problem.points]
    }

    /// Whether the products run on TF32 tensor cores: asked for, f32
    /// activations, a shape that fills the tiles, a device that has them.
    fn tf32(&self, precision: MatmulPrecision, activations: Precision) -> bool {
        precision == MatmulPrecision::Tf32
            && activations == Precision::F32
            && self.problem.suits_tf32()
            && tf32_supported(&self.x.client)
    }
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
        let conv = Conv::new(x, weight, bias);
        let out = empty_of(&conv.x, conv.out_shape(), conv.x.dtype);
        let bias_values = conv.bias.as_ref().map(|b| &b.handle);
        let (client, problem) = (&conv.x.client, &conv.problem);
        if conv.tf32(precision, activations) {
            problem.launch_tf32(client, &conv.weight.handle, &conv.x.handle, bias_values, &out.handle);
        } else {
            let (a, x) = (&conv.weight.handle, &conv.x.handle);
            problem.launch(
                client,
                activations,
                a,
                x,
                bias_values,
                &out.handle,
                &Epilogue::default(),
            );
        }
        out
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
        let by_ops = |x, weight, bias, residual| {
            conv_finished_by_ops::<Self>(x, weight, bias, residual, gelu, keep_pre, precision)
        };
        let Ok(activations) = precision_of(x.dtype) else {
            return by_ops(x, weight, bias, residual);
        };
        let conv = Conv::new(x, weight, bias);
        // The TF32 kernel has no epilogue: it runs the element-wise kernels after.
        if conv.tf32(precision, activations) {
            return by_ops(conv.x, conv.weight, conv.bias, residual);
        }
        let dtype = conv.x.dtype;
        let residual = residual.map(|r| Residual {
            values: cast_to(into_contiguous(r.values), dtype),
            gate: r.gate.map(|g| cast_to(into_contiguous(g), DType::F32)),
        });
        let out = empty_of(&conv.x, conv.out_shape(), dtype);
        let pre = (gelu && keep_pre).then(|| empty_of(&conv.x, conv.out_shape(), dtype));
        let epilogue = Epilogue {
            residual: residual.as_ref().map(|r| &r.values.handle),
            gate: residual.as_ref().and_then(|r| r.gate.as_ref()).map(|g| &g.handle),
            pre: pre.as_ref().map(|t| &t.handle),
            gelu,
        };
        conv.problem.launch(
            &conv.x.client,
            activations,
            &conv.weight.handle,
            &conv.x.handle,
            conv.bias.as_ref().map(|b| &b.handle),
            &out.handle,
            &epilogue,
        );
        (out, pre)
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

    fn loss_norms(x: FloatTensor<Self>, y: FloatTensor<Self>, derivatives: bool) -> FloatTensor<Self> {
        match super::loss::problem(&[&x, &y], derivatives) {
            Some(problem) => super::loss::loss_norms(problem, x, y),
            None => loss_norms_by_ops::<Self>(x, y, derivatives),
        }
    }

    fn loss_norms_grad(
        x: FloatTensor<Self>,
        y: Option<FloatTensor<Self>>,
        scale: FloatTensor<Self>,
        derivatives: bool,
    ) -> FloatTensor<Self> {
        let operands: Vec<_> = [Some(&x), y.as_ref(), Some(&scale)].into_iter().flatten().collect();
        match super::loss::problem(&operands, derivatives) {
            Some(problem) => super::loss::loss_norms_grad(problem, x, y, scale),
            None => loss_norms_grad_by_ops::<Self>(x, y, scale, derivatives),
        }
    }

    fn adamw_steps(tensors: Vec<AdamWOperands<FloatTensor<Self>>>, step: &AdamWStep) -> Vec<[FloatTensor<Self>; 3]> {
        let f32s = |t: &AdamWOperands<FloatTensor<Self>>| {
            [&t.param, &t.grad]
                .into_iter()
                .chain(t.moments.iter().flat_map(|(m, v)| [m, v]))
                .all(|t| t.dtype == DType::F32)
        };
        let first = tensors.first().is_some_and(|t| t.moments.is_none());
        if !tensors.iter().all(|t| f32s(t) && t.moments.is_none() == first) {
            return adamw_steps_by_ops::<Self>(tensors, step);
        }
        let tensors: Vec<_> = tensors
            .into_iter()
            .map(|t| {
                let moments = t.moments.map(|(m, v)| (into_contiguous(m), into_contiguous(v)));
                let (param, grad) = (into_contiguous(t.param), into_contiguous(t.grad));
                let out = [(); 3].map(|_| empty(&param, param.meta.shape().to_vec()));
                (param, grad, moments, out)
            })
            .collect();
        // One launch a device (Burn's multi-device step may spread the parameters).
        let mut devices: Vec<&R::Device> = Vec::new();
        for (param, ..) in &tensors {
            if !devices.contains(&&param.device) {
                devices.push(&param.device);
            }
        }
        for device in devices {
            let on_device: Vec<_> = tensors.iter().filter(|(param, ..)| &param.device == device).collect();
            let buffers: Vec<_> = (on_device.iter())
                .map(|(param, grad, moments, out)| AdamWBuffers {
                    param: &param.handle,
                    grad: &grad.handle,
                    moments: moments.as_ref().map(|(m, v)| (&m.handle, &v.handle)),
                    out: [&out[0].handle, &out[1].handle, &out[2].handle],
                    len: param.meta.shape().num_elements(),
                })
                .collect();
            adamw::adamw(&on_device[0].0.client, step, &buffers);
        }
        tensors.into_iter().map(|(.., out)| out).collect()
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
