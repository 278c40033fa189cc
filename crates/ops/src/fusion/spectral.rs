//! [`SpectralConvBackend`] on `Fusion`: the convolution's forward and
//! backward and the two transforms each one custom op, checked and their
//! outputs' shapes and dtypes fixed at registration (from the spec, and the
//! inner backend's rules for where values of a precision are stored). Reads
//! of device state drain the fusion stream first.

use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_fusion::{get_client, Fusion, FusionBackend};
use fno_kernels::fault::FaultCounts;
use fno_kernels::precision::Precision;

use super::register;
use crate::rounding::precision_of;
use crate::spec::{SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes};
use crate::spectral::{DeviceMemory, Pass, SpectralConvBackend, SpectralGrads};

/// `[batch, channels, *rest]`.
fn shape_of(batch: usize, channels: usize, rest: &[usize]) -> Vec<usize> {
    [batch, channels].iter().chain(rest).copied().collect()
}

/// Panics with an error of the deferred run (its checks passed at registration).
fn fail<T>(op: &'static str) -> impl Fn(SpectralError) -> T {
    move |e| panic!("{op}: {e} (checked when registered)")
}

impl<B: FusionBackend + SpectralConvBackend> SpectralConvBackend for Fusion<B> {
    fn device_memory(device: &Self::Device) -> Option<DeviceMemory> {
        let inner = device.clone();
        get_client::<B>(device).sync(move || B::device_memory(&inner))
    }

    fn fault_counts(device: &Self::Device) -> FaultCounts {
        let inner = device.clone();
        get_client::<B>(device).sync(move || B::fault_counts(&inner))
    }

    fn storage_dtype(device: &Self::Device, precision: Precision) -> DType {
        B::storage_dtype(device, precision)
    }

    fn spectral_conv_check(
        device: &Self::Device,
        x: (&[usize], DType),
        weight: (&[usize], DType),
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<SpectralShapes, SpectralError> {
        B::spectral_conv_check(device, x, weight, spec, imp)
    }

    fn spectral_conv_forward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
        keep_saved: bool,
    ) -> Result<(FloatTensor<Self>, Option<FloatTensor<Self>>), SpectralError> {
        let device = x.client.device().clone();
        let (xm, wm) = ((x.shape.as_ref(), x.dtype), (weight.shape.as_ref(), weight.dtype));
        let shapes = B::spectral_conv_check(&device, xm, wm, spec, imp)?;
        let y_dtype = B::storage_dtype(&device, precision_of(x.dtype)?);
        let mut outputs = vec![(shape_of(shapes.batch, shapes.out_channels, &shapes.output), y_dtype)];
        if keep_saved {
            // The fused kernel keeps its spectrum in f32 (it runs f32 only).
            let saved = match imp {
                SpectralImpl::Fused => DType::F32,
                _ => B::storage_dtype(&device, spec.spectrum_precision),
            };
            let mut modes = shapes.modes.clone();
            modes.push(2);
            outputs.push((shape_of(shapes.batch, shapes.in_channels, &modes), saved));
        }
        let mut inputs = vec![x, weight];
        inputs.extend(bias);
        let spec = spec.clone();
        let out = register::<B>("fno_spectral_conv", inputs, outputs, move |t| {
            let mut t = t.into_iter();
            let (x, weight) = (t.next().expect("x"), t.next().expect("weight"));
            let (y, saved) = B::spectral_conv_forward(x, weight, t.next(), &spec, imp, keep_saved)
                .unwrap_or_else(fail("spectral convolution"));
            std::iter::once(y).chain(saved).collect()
        });
        let mut out = out.into_iter();
        Ok((out.next().expect("the output"), out.next()))
    }

    fn retained_spectrum(
        x: FloatTensor<Self>,
        spec: &SpectralConvSpec,
        pass: Pass,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        let device = x.client.device().clone();
        B::retained_spectrum_check(&device, (&x.shape, x.dtype), spec, pass)?;
        let modes: usize = spec.modes.iter().product();
        let shape = shape_of(x.shape[0], x.shape[1], &[modes, 2]);
        let dtype = B::storage_dtype(&device, spec.spectrum_precision);
        let spec = spec.clone();
        let mut out = register::<B>("fno_retained_spectrum", vec![x], vec![(shape, dtype)], move |t| {
            let [x] = <[_; 1]>::try_from(t).expect("one operand");
            vec![B::retained_spectrum(x, &spec, pass).unwrap_or_else(fail("retained spectrum"))]
        });
        Ok(out.pop().expect("one output"))
    }

    fn spectrum_to_grid(
        s: FloatTensor<Self>,
        grid: &[usize],
        spec: &SpectralConvSpec,
        pass: Pass,
        precision: Precision,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        let device = s.client.device().clone();
        B::spectrum_to_grid_check(&device, (&s.shape, s.dtype), grid, spec, pass, precision)?;
        let shape = shape_of(s.shape[0], s.shape[1], grid);
        let dtype = B::storage_dtype(&device, precision);
        let (spec, grid) = (spec.clone(), grid.to_vec());
        let mut out = register::<B>("fno_spectrum_to_grid", vec![s], vec![(shape, dtype)], move |t| {
            let [s] = <[_; 1]>::try_from(t).expect("one operand");
            let y = B::spectrum_to_grid(s, &grid, &spec, pass, precision);
            vec![y.unwrap_or_else(fail("inverse transform"))]
        });
        Ok(out.pop().expect("one output"))
    }

    fn spectral_conv_backward(
        saved_x: FloatTensor<Self>,
        x_shape: &[usize],
        weight: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        with_bias: bool,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<SpectralGrads<Self>, SpectralError> {
        let device = grad_out.client.device().clone();
        let shapes = spec.shapes(x_shape, &weight.shape)?;
        let x_dtype = B::storage_dtype(&device, precision_of(grad_out.dtype)?);
        let w_dtype = B::storage_dtype(&device, precision_of(weight.dtype)?);
        let mut outputs = vec![(x_shape.to_vec(), x_dtype), (weight.shape.to_vec(), w_dtype)];
        if with_bias {
            outputs.push((vec![shapes.out_channels], DType::F32));
        }
        let (spec, x_shape) = (spec.clone(), x_shape.to_vec());
        let inputs = vec![saved_x, weight, grad_out];
        let out = register::<B>("fno_spectral_conv_backward", inputs, outputs, move |t| {
            let [saved_x, weight, grad_out] = <[_; 3]>::try_from(t).expect("three operands");
            let g = B::spectral_conv_backward(saved_x, &x_shape, weight, grad_out, with_bias, &spec, imp)
                .unwrap_or_else(fail("spectral convolution backward"));
            [Some(g.x), Some(g.weight), g.bias].into_iter().flatten().collect()
        });
        let mut out = out.into_iter();
        Ok(SpectralGrads {
            x: out.next().expect("the input gradient"),
            weight: out.next().expect("the weight gradient"),
            bias: out.next(),
        })
    }
}
