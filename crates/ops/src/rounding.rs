//! Dtypes and precisions: which precision a tensor's dtype holds, casts, and
//! values rounded to a storage precision by tensor ops, on any backend (the
//! CPU backends have no f16 tensors): how the reference path holds spectra
//! where the kernels store them in half precision.

use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor};
use fno_kernels::precision::Precision;

use crate::spec::SpectralError;

/// The precision a tensor of `dtype` holds, where the kernels take it.
pub(crate) fn precision_of(dtype: DType) -> Result<Precision, SpectralError> {
    match dtype {
        DType::F32 => Ok(Precision::F32),
        DType::F16 => Ok(Precision::F16),
        DType::BF16 => Ok(Precision::BF16),
        other => Err(SpectralError::Unsupported(format!(
            "the kernels take f32, f16 or bf16 tensors, got {other:?}"
        ))),
    }
}

/// `t` holding `dtype`: itself where it does already, else cast.
pub(crate) fn in_dtype<B: Backend, const D: usize>(t: Tensor<B, D>, dtype: DType) -> Tensor<B, D> {
    if t.dtype() == dtype {
        t
    } else {
        t.cast(dtype)
    }
}

/// `t` rounded to the nearest value `precision` holds (ties to even), with
/// gradients passed straight through (as a cast's are). Subnormals round to
/// their fixed step; overflow beyond the format's largest value is not
/// modelled. The step is a power of two up to the f32 round-off of `exp`, so
/// results may sit within about 1e-6 (relative) of the stored value.
pub fn round_to<B: Backend, const D: usize>(t: Tensor<B, D>, precision: Precision) -> Tensor<B, D> {
    let (significant_bits, min_exponent) = match precision {
        Precision::F32 => return t,
        Precision::F16 => (11, -14),
        Precision::BF16 => (8, -126),
    };
    let ln2 = std::f64::consts::LN_2;
    let exponent = (t.clone().abs().clamp_min(2f64.powi(min_exponent)).log() / ln2).floor();
    let step = ((exponent - (significant_bits - 1) as f64) * ln2).exp();
    let rounded = (t.clone() / step.clone()).round() * step;
    t.clone() + (rounded - t).detach()
}

#[cfg(all(test, feature = "ndarray"))]
mod tests {
    use super::*;
    use burn::backend::NdArray;
    use burn::tensor::TensorData;
    use half::{bf16, f16};

    #[test]
    fn rounds_as_the_half_formats_do() {
        let values: Vec<f32> = [
            1.0,
            -3.3,
            1e-3,
            6.1e-5,
            2e-6,
            1234.567,
            0.1,
            1.0 + 1.0 / 4096.0,
            1e30,
            0.0,
        ]
        .into_iter()
        .chain((0..200).map(|i| (i as f32 * 0.37).sin() * 10f32.powi(i % 9 - 4)))
        .collect();
        let t =
            Tensor::<NdArray<f32>, 1>::from_data(TensorData::new(values.clone(), [values.len()]), &Default::default());
        for (precision, exact) in [
            (
                Precision::F16,
                values.iter().map(|&v| f16::from_f32(v).to_f32()).collect::<Vec<_>>(),
            ),
            (
                Precision::BF16,
                values.iter().map(|&v| bf16::from_f32(v).to_f32()).collect(),
            ),
        ] {
            let got = round_to(t.clone(), precision).into_data().to_vec::<f32>().unwrap();
            for ((&v, &g), &e) in values.iter().zip(&got).zip(&exact) {
                if precision == Precision::F16 && v.abs() > 65504.0 {
                    continue; // overflow is not modelled
                }
                assert!((g - e).abs() <= 2e-6 * e.abs(), "{precision} of {v}: {g} (want {e})");
            }
        }
    }
}
