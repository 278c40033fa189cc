//! neuraloperator's spectral convolution on Candle tensors: the retained
//! spectrum ([`crate::transform`]), a complex contraction over input channels
//! per mode (or one shared matrix), the zero-padded inverse and the bias.
//! [`SpectralConvSpec`] says what it computes, as for the Burn op. Candle's
//! autograd differentiates it through the transforms' adjoints and its own
//! matmuls.

use candle_core::{Result, Tensor, D};
use fno_ops::{FaultTolerance, Precision, SpectralConvSpec, WeightLayout};

use crate::transform::{retained_spectrum, spectrum_to_grid};

/// neuraloperator's `SpectralConv` of `x: [B, Cin, *grid]` (1 to 3 spatial
/// dims) with `weight: [Cin, Cout, *modes, 2]` (per mode) or `[Cin, Cout, 2]`
/// (shared), complex as trailing (re, im), and `bias: [Cout]`. Returns `[B,
/// Cout, *output]`, where the output may resize the last spatial dim only.
/// Shapes are checked as the Burn op checks them; a grid holding fewer modes
/// than the weight crops it as neuraloperator does.
pub fn spectral_conv(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, spec: &SpectralConvSpec) -> Result<Tensor> {
    if spec.spectrum_precision != Precision::F32 || spec.fault_tolerance != FaultTolerance::Off {
        candle_core::bail!(
            "the Candle spectral convolution holds spectra in the input's float type and has no checksums \
             (spectrum precision {:?}, fault tolerance {:?} asked for)",
            spec.spectrum_precision,
            spec.fault_tolerance
        );
    }
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
    let (b, ci, co, k) = (
        shapes.batch,
        shapes.in_channels,
        shapes.out_channels,
        shapes.mode_count(),
    );
    let x_hat = retained_spectrum(x, &shapes.modes, spec.norm)?;
    // Real and imaginary parts of the spectrum as [K, B, Cin].
    let part = |t: &Tensor, i: usize| t.narrow(D::Minus1, i, 1)?.squeeze(D::Minus1);
    let (xr, xi) = (part(&x_hat, 0)?, part(&x_hat, 1)?);
    let (yr, yi) = match spec.weights {
        WeightLayout::PerMode => {
            // neuraloperator's crop: the centred window of the non-last dims, the first bins of the last.
            let mut w = weight.clone();
            for (d, (&offset, &m)) in shapes.weight_offsets.iter().zip(&shapes.modes).enumerate() {
                w = w.narrow(2 + d, offset, m)?;
            }
            let w = w.reshape((ci, co, k, 2))?;
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
    let y = spectrum_to_grid(&y_hat, &shapes.modes, &shapes.output, spec.norm)?;
    match bias {
        Some(bias) => {
            let mut shape = vec![1, co];
            shape.extend(std::iter::repeat_n(1, shapes.spatial_dims()));
            y.broadcast_add(&bias.reshape(shape)?)
        }
        None => Ok(y),
    }
}
