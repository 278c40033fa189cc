//! neuraloperator's spectral convolution on Candle tensors. On the CPU it is
//! composed: the retained spectrum ([`crate::transform`]), a complex
//! contraction over input channels per mode (or one shared matrix) in Candle
//! matmuls, the zero-padded inverse and the bias, which Candle's autograd
//! differentiates through the transforms' adjoints and its own matmuls. On
//! Candle's CUDA device (feature `cuda`) it is one op over the Burn kernel
//! path's chain, with that path's backward. [`SpectralConvSpec`] says what it
//! computes, as for the Burn op.

use candle_core::{Result, Tensor, D};
use fno_core::{FaultTolerance, Precision, SpectralConvSpec, SpectralShapes, WeightLayout};

use crate::transform::{retained_spectrum, spectrum_to_grid};

/// neuraloperator's `SpectralConv` of `x: [B, Cin, *grid]` (1 to 3 spatial
/// dims) with `weight: [Cin, Cout, *modes, 2]` (per mode) or `[Cin, Cout, 2]`
/// (shared), complex as trailing (re, im), and `bias: [Cout]`. Returns `[B,
/// Cout, *output]`, where the output may resize the last spatial dim only.
/// Shapes are checked as the Burn op checks them; a grid holding fewer modes
/// than the weight crops it as neuraloperator does.
///
/// On the CPU the spectrum is held in the input's float type (f32 or f64) and
/// is not checked; on CUDA (f32 tensors) `spec`'s spectrum precision and fault
/// tolerance apply as on the Burn kernel path. Second derivatives run on the
/// CPU only.
pub fn spectral_conv(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, spec: &SpectralConvSpec) -> Result<Tensor> {
    let shapes = spec.shapes(x.dims(), weight.dims()).map_err(candle_core::Error::wrap)?;
    let last = shapes.spatial_dims() - 1;
    if shapes.output[..last] != shapes.input[..last] {
        candle_core::bail!(
            "output size {:?} for a grid {:?}: only the last spatial dim may change size \
             (as on the Burn kernel path; neuraloperator's crop/pad of a centred spectrum runs on Burn's reference path)",
            shapes.output,
            shapes.input
        );
    }
    if let Some(bias) = bias {
        if bias.dims() != [shapes.out_channels] {
            candle_core::bail!(
                "bias of shape {:?} for {} output channels",
                bias.dims(),
                shapes.out_channels
            );
        }
    }
    let weight = used_weight(weight, &shapes, spec)?;
    #[cfg(feature = "cuda")]
    if x.device().is_cuda() {
        return on_cuda(x, &weight, bias, spec, &shapes);
    }
    if spec.spectrum_precision != Precision::F32 || spec.fault_tolerance != FaultTolerance::Off {
        candle_core::bail!(
            "the spectral convolution on Candle's CPU holds spectra in the input's float type and has no checksums \
             (spectrum precision {:?}, fault tolerance {:?} asked for; both run on CUDA)",
            spec.spectrum_precision,
            spec.fault_tolerance
        );
    }
    composed(x, &weight, bias, spec, &shapes)
}

/// The weight the grid uses: neuraloperator's crop of a per-mode weight, the
/// centred window of the non-last dims and the first bins of the last.
fn used_weight(weight: &Tensor, shapes: &SpectralShapes, spec: &SpectralConvSpec) -> Result<Tensor> {
    let mut w = weight.clone();
    if spec.weights == WeightLayout::PerMode {
        for (d, (&offset, &m)) in shapes.weight_offsets.iter().zip(&shapes.modes).enumerate() {
            w = w.narrow(2 + d, offset, m)?;
        }
    }
    Ok(w)
}

/// The convolution as one op on Candle's CUDA device.
#[cfg(feature = "cuda")]
fn on_cuda(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    spec: &SpectralConvSpec,
    shapes: &SpectralShapes,
) -> Result<Tensor> {
    let used = SpectralConvSpec {
        modes: shapes.modes.clone(),
        ..spec.clone()
    };
    let keep_saved = x.track_op() || weight.track_op() || bias.is_some_and(|b| b.track_op());
    let op = crate::cuda::kernel_conv(used, keep_saved);
    let (x, weight) = (x.contiguous()?, weight.contiguous()?);
    match bias {
        Some(bias) => x.apply_op3(&weight, &bias.contiguous()?, op),
        None => x.apply_op2(&weight, op),
    }
}

/// The convolution composed of the transforms and Candle ops.
fn composed(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    spec: &SpectralConvSpec,
    shapes: &SpectralShapes,
) -> Result<Tensor> {
    let (b, ci, co, k) = (
        shapes.batch,
        shapes.in_channels,
        shapes.out_channels,
        shapes.mode_count(),
    );
    let x_hat = retained_spectrum(x, &shapes.modes, spec.norm, spec.inverse_shift)?;
    // Real and imaginary parts of the spectrum as [K, B, Cin].
    let part = |t: &Tensor, i: usize| t.narrow(D::Minus1, i, 1)?.squeeze(D::Minus1);
    let (xr, xi) = (part(&x_hat, 0)?, part(&x_hat, 1)?);
    let (yr, yi) = match spec.weights {
        WeightLayout::PerMode => {
            let w = weight.reshape((ci, co, k, 2))?;
            // [K, Cin, Cout]
            let (wr, wi) = (
                part(&w, 0)?.permute((2, 0, 1))?.contiguous()?,
                part(&w, 1)?.permute((2, 0, 1))?.contiguous()?,
            );
            let modes_first = |t: Tensor| t.permute((2, 0, 1))?.contiguous();
            let (xr, xi) = (modes_first(xr)?, modes_first(xi)?);
            let yr = (xr.matmul(&wr)? - xi.matmul(&wi)?)?;
            let yi = (xr.matmul(&wi)? + xi.matmul(&wr)?)?;
            // [K, B, Cout] → [B, Cout, K]
            (yr.permute((1, 2, 0))?, yi.permute((1, 2, 0))?)
        }
        WeightLayout::Shared => {
            let (wr, wi) = (part(weight, 0)?.contiguous()?, part(weight, 1)?.contiguous()?);
            // [B·K, Cin] × [Cin, Cout]
            let rows = |t: Tensor| t.transpose(1, 2)?.contiguous()?.reshape((b * k, ci));
            let (xr, xi) = (rows(xr)?, rows(xi)?);
            let yr = (xr.matmul(&wr)? - xi.matmul(&wi)?)?;
            let yi = (xr.matmul(&wi)? + xi.matmul(&wr)?)?;
            let back = |t: Tensor| t.reshape((b, k, co))?.transpose(1, 2);
            (back(yr)?, back(yi)?)
        }
    };
    let y_hat = Tensor::stack(&[yr, yi], 3)?;
    let y = spectrum_to_grid(&y_hat, &shapes.modes, &shapes.output, spec.norm, spec.inverse_shift)?;
    match bias {
        Some(bias) => {
            let mut shape = vec![1, co];
            shape.extend(std::iter::repeat_n(1, shapes.spatial_dims()));
            y.broadcast_add(&bias.reshape(shape)?)
        }
        None => Ok(y),
    }
}
