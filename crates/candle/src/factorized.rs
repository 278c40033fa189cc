//! Factorized spectral weights (tensorly-torch's Tucker, CP and tensor-train
//! forms, dense or separable) rebuilt into the dense `[Cin, Cout, *modes]`
//! complex weight the Candle FNO contracts with. The stored tensors are read
//! as [`fno_core::WeightForm`] names and shapes them. The Burn model contracts
//! through the factors instead (`fno_ops::factorized`). This is not Burn's
//! `FactorizedWeight::dense` on NdArray: Burn's NdArray backends share one
//! device whose default float dtype the first user fixes for the process.

use candle_core::{Device, Result, Tensor, D};
use fno_core::{Factorization, WeightForm};

/// A complex tensor as its real and imaginary parts.
#[derive(Clone)]
struct Complex {
    re: Tensor,
    im: Tensor,
}

impl Complex {
    /// Interleaved (re, im) values of complex shape `shape`.
    fn from_pairs(values: Vec<f32>, shape: &[usize], device: &Device) -> Result<Self> {
        let pairs = Tensor::from_vec(values, [shape, &[2]].concat(), device)?;
        // Contiguous: Candle's CUDA matmul takes no strided operands.
        let part = |i: usize| pairs.narrow(D::Minus1, i, 1)?.squeeze(D::Minus1)?.contiguous();
        Ok(Complex {
            re: part(0)?,
            im: part(1)?,
        })
    }

    fn map(&self, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Self> {
        Ok(Complex {
            re: f(&self.re)?,
            im: f(&self.im)?,
        })
    }

    fn matmul(&self, other: &Complex) -> Result<Self> {
        Ok(Complex {
            re: (self.re.matmul(&other.re)? - self.im.matmul(&other.im)?)?,
            im: (self.re.matmul(&other.im)? + self.im.matmul(&other.re)?)?,
        })
    }

    /// The element-wise product, broadcasting.
    fn mul(&self, other: &Complex) -> Result<Self> {
        Ok(Complex {
            re: (self.re.broadcast_mul(&other.re)? - self.im.broadcast_mul(&other.im)?)?,
            im: (self.re.broadcast_mul(&other.im)? + self.im.broadcast_mul(&other.re)?)?,
        })
    }

    /// The mode-`d` product with `u: [I, R]`: dim `d` (of size R) becomes I.
    fn mode_product(&self, d: usize, u: &Complex) -> Result<Self> {
        let last = self.re.rank() - 1;
        let moved = self.map(|t| t.transpose(d, last)?.contiguous())?;
        let mut dims = moved.re.dims().to_vec();
        let rows = dims[..last].iter().product::<usize>();
        let ut = u.map(|t| t.t()?.contiguous())?;
        let product = moved.map(|t| t.reshape((rows, dims[last])))?.matmul(&ut)?;
        dims[last] = u.re.dims()[0];
        product.map(|t| t.reshape(dims.as_slice())?.transpose(d, last)?.contiguous())
    }
}

/// The dense complex weight `[Cin, Cout, *modes, 2]` (values in f32) of a
/// spectral weight of `form`, from its stored tensors in
/// [`WeightForm::tensors`]' order, each as interleaved (re, im) values.
pub(crate) fn dense_weight(form: &WeightForm, stored: Vec<Vec<f32>>, device: &Device) -> Result<Tensor> {
    let shapes: Vec<Vec<usize>> = form.tensors().into_iter().map(|(_, s)| s).collect();
    let mut tensors = stored
        .into_iter()
        .zip(&shapes)
        .map(|(values, shape)| Complex::from_pairs(values, shape, device));
    let mut next = || tensors.next().expect("one stored tensor per name");
    let n = form.shape.len();
    let logical = match form.factorization {
        Factorization::Dense => next()?,
        Factorization::Tucker => {
            let mut w = next()?;
            for d in 0..n {
                w = w.mode_product(d, &next()?)?;
            }
            w
        }
        Factorization::Cp => {
            // Σ_r weight_r ⊗_d U_d[:, r], as a Khatri–Rao product of the factors.
            let weights = next()?;
            let rank = form.ranks[0];
            let mut rows = next()?;
            for _ in 1..n {
                let u = next()?;
                let grown = rows.map(|t| t.unsqueeze(1))?.mul(&u.map(|t| t.unsqueeze(0))?)?;
                let count = grown.re.elem_count() / rank;
                rows = grown.map(|t| t.reshape((count, rank)))?;
            }
            rows.matmul(&weights.map(|t| t.unsqueeze(1))?)?
        }
        Factorization::TensorTrain => {
            // G₀ · G₁ · … over the ranks between them.
            let mut w = next()?.map(|t| t.squeeze(0))?;
            for _ in 1..n {
                let core = next()?;
                let (r, i, r_next) = core.re.dims3()?;
                let rows = w.re.elem_count() / r;
                let flat = core.map(|t| t.reshape((r, i * r_next)))?;
                w = w.map(|t| t.reshape((rows, r)))?.matmul(&flat)?;
                w = w.map(|t| t.reshape((rows * i, r_next)))?;
            }
            w
        }
    };
    let logical = logical.map(|t| t.reshape(form.shape.as_slice()))?;
    // A separable weight [C, *modes] is the diagonal of the dense [C, C, *modes].
    let dense = if form.separable {
        let c = form.shape[0];
        let mut eye_shape = vec![c, c];
        eye_shape.extend(std::iter::repeat_n(1, n - 1));
        let eye = Tensor::eye(c, logical.re.dtype(), device)?.reshape(eye_shape)?;
        logical.map(|t| t.unsqueeze(1)?.broadcast_mul(&eye))?
    } else {
        logical
    };
    let rank = dense.re.rank();
    Tensor::stack(&[dense.re, dense.im], rank)
}
