//! Spectral convolutions whose weight is a factorized tensor (neuraloperator's
//! TFNO: tensorly-torch's Tucker, CP and tensor-train forms) or separable (one
//! spectrum per channel).
//!
//! The weight `W[i, o, k]` (`[Cin, Cout, *modes]`, complex) is never built on
//! the kernel paths. The input's retained spectrum is contracted with the
//! factors in turn, each step a CGEMM ([`mode_mix`]) or an element-wise product
//! over spectra of `B·K` rows (docs/factorized.md):
//! - Tucker `core ×₀U₀ ×₁U₁ ×₂U₂ …`: `x̂·U₀` (shared by every mode), then the
//!   per-mode core `C_k = core ×₂U₂ …` (`R₀×R₁` per mode), then `·U₁ᵀ`;
//! - CP `Σ_r w_r U₀[i,r] U₁[o,r] Π U_d[k_d,r]`: `x̂·U₀`, times `c_k[r] = w_r Π U_d[k_d,r]`, then `·U₁ᵀ`;
//! - tensor train `G₀[i]·G₁[o]·G₂[k₁]⋯`: `x̂·G₀`, then the per-mode `G₁ ×₂ v_k`
//!   with `v_k = G₂[k₁]⋯` (`R₁×Cout` per mode);
//! - separable `W[c, k]`: `x̂ ⊙ W` (the dense form is diagonal in the channels).
//!
//! Autodiff differentiates the chain (each step's backward is two of the
//! CGEMMs), so the factors' gradients never pass through a dense weight
//! either. The reference path reconstructs the dense weight with Burn ops and
//! runs the dense reference convolution: any backend, and the tests' oracle.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use crate::mode_mix::{mode_mix, ModeMix};
use crate::reference::mode_mix::add_at_mode;
use crate::rounding::{in_dtype, precision_of};
use crate::spec::{SpectralConvSpec, SpectralError, SpectralImpl, WeightLayout};
use crate::spectral::{
    retained_spectrum, spectral_chain, spectral_conv, spectrum_to_grid, ChainTransforms, SpectralConvBackend,
};
use fno_kernels::cgemm::ModeBias;
use fno_kernels::fault::FaultTolerance;

pub use fno_core::factorization::{Factorization, WeightForm};

/// A spectral weight as its stored tensors (each `[shape₀, rest·2]`, see
/// [`WeightForm::storage_shape`]), in [`WeightForm::tensors`]' order.
#[derive(Clone, Debug)]
pub struct FactorizedWeight<B: Backend> {
    pub form: WeightForm,
    pub tensors: Vec<Tensor<B, 2>>,
}

/// A complex tensor of logical shape `shape` as `[shape₀, rest·2]` (re, im)
/// pairs, as stored: every use reshapes it once more, so rows a CUDA
/// allocator pitched are copied only where a use merges them.
#[derive(Clone)]
struct Complex<B: Backend> {
    pairs: Tensor<B, 2>,
    shape: Vec<usize>,
}

/// `(Π shape[..d], shape[d], Π shape[d+1..])`.
fn split_at(shape: &[usize], d: usize) -> (usize, usize, usize) {
    (shape[..d].iter().product(), shape[d], shape[d + 1..].iter().product())
}

impl<B: SpectralConvBackend> Complex<B> {
    /// A stored tensor (any shape holding the pairs) of complex shape `shape`.
    fn of<const D: usize>(t: Tensor<B, D>, shape: &[usize]) -> Self {
        Complex {
            pairs: t.reshape(WeightForm::storage_shape(shape)),
            shape: shape.to_vec(),
        }
    }

    /// `[pre, shape[d], post, 2]`: dim `d` as the channels of a [`mode_mix`] operand.
    fn around(&self, d: usize) -> Tensor<B, 4> {
        let (pre, n, post) = split_at(&self.shape, d);
        self.pairs.clone().reshape([pre, n, post, 2])
    }

    /// Dim `d` cut to `len` entries from `start`.
    fn narrow(self, d: usize, start: usize, len: usize) -> Self {
        if start == 0 && len == self.shape[d] {
            return self;
        }
        let cut = self.around(d).narrow(1, start, len);
        let mut shape = self.shape;
        shape[d] = len;
        Complex::of(cut, &shape)
    }

    /// The mode product `self ×_d u` with `u: [I, R]`, dim `d` holding R
    /// entries: one CGEMM, `u` shared by the dims after `d`.
    fn mode_product(self, d: usize, u: Self) -> Self {
        let [i, r] = [u.shape[0], u.shape[1]];
        let ut = u.pairs.reshape([i, r, 1, 2]).swap_dims(0, 1);
        let product = mode_mix(self.around(d), ut, ModeMix::Forward);
        let mut shape = self.shape;
        shape[d] = i;
        Complex::of(product, &shape)
    }

    /// `[rows, cols]` as a [`mode_mix`] operand `[rows, cols, 1, 2]`.
    fn matrix(&self, rows: usize) -> Tensor<B, 4> {
        let cols = self.shape.iter().product::<usize>() / rows;
        self.pairs.clone().reshape([rows, cols, 1, 2])
    }

    /// The Khatri–Rao step `out[(k, i), r] = self[k, r]·u[i, r]` of `[K, R]` and `[I, R]`.
    fn khatri_rao(self, u: Self) -> Self {
        let (k, i, r) = (self.shape[0], u.shape[0], self.shape[1]);
        let product = complex_product(self.pairs.reshape([k, 1, r, 2]), u.pairs.reshape([1, i, r, 2]));
        Complex::of(product, &[k * i, r])
    }
}

/// Element-wise complex product of `[.., 2]` tensors (broadcasting).
fn complex_product<B: Backend>(x: Tensor<B, 4>, w: Tensor<B, 4>) -> Tensor<B, 4> {
    let part = |t: &Tensor<B, 4>, i: usize| t.clone().narrow(3, i, 1);
    let (a, b, c, d) = (part(&x, 0), part(&x, 1), part(&w, 0), part(&w, 1));
    Tensor::cat(vec![a.clone() * c.clone() - b.clone() * d.clone(), a * d + b * c], 3)
}

impl<B: SpectralConvBackend> FactorizedWeight<B> {
    fn part(&self, i: usize) -> Complex<B> {
        Complex::of(self.tensors[i].clone(), &self.form.tensors()[i].1)
    }

    /// Factor `d` of a Tucker or CP weight (`[I_d, R_d]`), or core `d` of a
    /// tensor train (`[R_d, I_d, R_d+1]`).
    fn factor(&self, d: usize) -> Complex<B> {
        match self.form.factorization {
            Factorization::TensorTrain => self.part(d),
            _ => self.part(d + 1),
        }
    }

    /// CP's weights as a `[1, R]` row.
    fn cp_weights(&self) -> Complex<B> {
        Complex::of(self.tensors[0].clone(), &[1, self.form.ranks[0]])
    }

    /// Contracts tensor-train cores `dims` (each through `crop`) into
    /// `[R_first · Π I, R_last]`.
    fn train(&self, dims: std::ops::Range<usize>, crop: &dyn Fn(usize, Complex<B>) -> Complex<B>) -> Complex<B> {
        let mut t: Option<Complex<B>> = None;
        for d in dims {
            let g = crop(d, self.factor(d));
            let (r, i, next) = (g.shape[0], g.shape[1], g.shape[2]);
            t = Some(match t {
                None => Complex::of(g.pairs, &[r * i, next]),
                Some(t) => {
                    let rows = t.shape[0];
                    let product = mode_mix(t.matrix(rows), g.matrix(r), ModeMix::Forward);
                    Complex::of(product, &[rows * i, next])
                }
            });
        }
        t.expect("a tensor train has cores")
    }

    /// The logical weight (`self.form.shape`), built of Burn ops and CGEMMs.
    fn logical(&self) -> Complex<B> {
        let shape = &self.form.shape;
        let n = shape.len();
        match self.form.factorization {
            Factorization::Dense => self.part(0),
            Factorization::Tucker => (0..n).fold(self.part(0), |t, d| t.mode_product(d, self.factor(d))),
            Factorization::Cp => {
                // W = U₀ · KR(w, U₁, …)ᵀ: the Khatri–Rao rows of the later dims.
                let rest = (1..n).fold(self.cp_weights(), |t, d| t.khatri_rao(self.factor(d)));
                let later = rest.shape[0];
                let rest_t = rest.matrix(later).swap_dims(0, 1);
                let product = mode_mix(self.factor(0).matrix(shape[0]), rest_t, ModeMix::Forward);
                Complex::of(product, shape)
            }
            Factorization::TensorTrain => {
                let t = self.train(0..n, &|_, c| c);
                Complex::of(t.pairs, shape)
            }
        }
    }

    /// The dense `[Cin, Cout, K, 2]` weight (diagonal when separable).
    pub fn dense(&self) -> Tensor<B, 4> {
        let w = self.logical();
        let channels = self.form.shape[0];
        let first_mode = if self.form.separable { 1 } else { 2 };
        let k: usize = self.form.shape[first_mode..].iter().product();
        if self.form.separable {
            let w = w.pairs.reshape([channels, 1, k, 2]);
            let eye = Tensor::<B, 2>::eye(channels, &w.device()).reshape([channels, channels, 1, 1]);
            let dtype = w.dtype();
            w * in_dtype(eye, dtype)
        } else {
            w.pairs.reshape([channels, self.form.shape[1], k, 2])
        }
    }

    /// Tucker's chain `[U₀, C_k, U₁ᵀ]` (each a [`mode_mix`] weight, `C_k` built
    /// of the core and the mode factors cut to the grid's modes): `None` for
    /// the other forms.
    fn tucker_chain(&self, modes: &[usize], offsets: &[usize]) -> Option<[Tensor<B, 4>; 3]> {
        if self.form.factorization != Factorization::Tucker || self.form.separable {
            return None;
        }
        let shape = &self.form.shape;
        let k: usize = modes.iter().product();
        let core = (2..shape.len()).fold(self.part(0), |t, d| {
            t.mode_product(d, self.factor(d).narrow(0, offsets[d - 2], modes[d - 2]))
        });
        let (r0, r1) = (self.form.ranks[0], self.form.ranks[1]);
        Some([
            self.shared(1, shape[0], r0),
            core.pairs.reshape([r0, r1, k, 2]),
            self.shared(2, shape[1], r1).swap_dims(0, 1),
        ])
    }

    /// Stored tensor `i` (a `[rows, cols]` matrix) as a weight shared by every mode.
    fn shared(&self, i: usize, rows: usize, cols: usize) -> Tensor<B, 4> {
        self.tensors[i].clone().reshape([rows, cols, 1, 2])
    }

    /// `x̂: [B, Cin, K, 2]` contracted with a CP, tensor-train or separable
    /// weight, the modes of dim `d` cut to `modes[d]` from `offsets[d]` (the
    /// grid's crop), plus the bias at its mode.
    fn contract(
        &self,
        x_hat: Tensor<B, 4>,
        modes: &[usize],
        offsets: &[usize],
        bias: Option<(Tensor<B, 1>, ModeBias)>,
    ) -> Tensor<B, 4> {
        let shape = &self.form.shape;
        let first_mode = if self.form.separable { 1 } else { 2 };
        let k: usize = modes.iter().product();
        // Dim `axis` of a weight dim's factor cut to the grid's modes.
        let crop = |d: usize, axis: usize, c: Complex<B>| match d.checked_sub(first_mode) {
            Some(m) => c.narrow(axis, offsets[m], modes[m]),
            None => c,
        };
        let n = shape.len();
        if self.form.separable {
            // One spectrum per channel: built whole (it is `C·K`), then applied.
            let w = (0..modes.len()).fold(self.logical(), |w, m| w.narrow(first_mode + m, offsets[m], modes[m]));
            return with_bias(complex_product(x_hat, w.pairs.reshape([1, shape[0], k, 2])), bias);
        }
        let shared = |i: usize, rows: usize, cols: usize| self.shared(i, rows, cols);
        let y_hat = match self.form.factorization {
            Factorization::Cp => {
                let rank = self.form.ranks[0];
                let per_mode = (2..n).fold(self.cp_weights(), |t, d| t.khatri_rao(crop(d, 0, self.factor(d))));
                let per_mode = per_mode
                    .pairs
                    .reshape([k, rank, 2])
                    .swap_dims(0, 1)
                    .reshape([1, rank, k, 2]);
                let z = mode_mix(x_hat, shared(1, shape[0], rank), ModeMix::Forward);
                let z = complex_product(z, per_mode);
                mode_mix(z, shared(2, shape[1], rank).swap_dims(0, 1), ModeMix::Forward)
            }
            Factorization::TensorTrain => {
                let r = &self.form.ranks;
                // v[c, k] = G₂[c, k₁]⋯ and M_k[a, o] = Σ_c G₁[a, o, c]·v[c, k].
                let v = self.train(2..n, &|d, c| crop(d, 1, c));
                let g1 = self.factor(1).matrix(r[1] * shape[1]);
                let per_mode = mode_mix(g1, v.matrix(r[2]), ModeMix::Forward);
                let z = mode_mix(x_hat, shared(0, shape[0], r[1]), ModeMix::Forward);
                mode_mix(z, per_mode.reshape([r[1], shape[1], k, 2]), ModeMix::Forward)
            }
            Factorization::Tucker => unreachable!("Tucker weights run their chain"),
            Factorization::Dense => unreachable!("dense weights run the dense convolution"),
        };
        with_bias(y_hat, bias)
    }
}

/// neuraloperator's spectral convolution with a weight in any [`WeightForm`]:
/// the dense convolution for dense weights, the factors' chain on the kernel
/// paths (`Fused` runs it as `Unfused`: the fused kernel contracts a dense
/// weight), the dense reconstruction on the reference path.
///
/// `x: [B, Cin, *spatial]`, `bias: [Cout]`; `spec.modes` are the weight's.
pub fn factorized_spectral_conv<B: SpectralConvBackend, const D: usize>(
    x: Tensor<B, D>,
    weight: &FactorizedWeight<B>,
    bias: Option<Tensor<B, 1>>,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
) -> Result<Tensor<B, D>, SpectralError> {
    let form = &weight.form;
    form.validate()?;
    let first_mode = if form.separable { 1 } else { 2 };
    if form.shape[first_mode..] != spec.modes[..] || spec.weights != WeightLayout::PerMode {
        return Err(SpectralError::Invalid(format!(
            "a weight of shape {:?} does not fit modes {:?}",
            form.shape, spec.modes
        )));
    }
    let stored = form.tensors();
    if weight.tensors.len() != stored.len()
        || weight
            .tensors
            .iter()
            .zip(&stored)
            .any(|(t, (_, s))| t.dims() != WeightForm::storage_shape(s))
    {
        return Err(SpectralError::Invalid(format!(
            "the weight's tensors {:?} are not those of {:?} ranks {:?}",
            weight.tensors.iter().map(|t| t.dims()).collect::<Vec<_>>(),
            form.factorization,
            form.ranks
        )));
    }
    let channels = form.shape[0];
    let out_channels = if form.separable { channels } else { form.shape[1] };
    let mut dense_shape = vec![channels, out_channels];
    dense_shape.extend(&spec.modes);
    dense_shape.push(2);
    let plain = form.factorization == Factorization::Dense && !form.separable;
    if imp == SpectralImpl::Reference || plain {
        let dense = if plain {
            weight.tensors[0]
                .clone()
                .reshape([channels, out_channels, spec.modes.iter().product(), 2])
        } else {
            weight.dense()
        };
        return match spec.modes.len() {
            1 => spectral_conv(x, dense.reshape(to_array::<4>(&dense_shape)), bias, spec, imp),
            2 => spectral_conv(x, dense.reshape(to_array::<5>(&dense_shape)), bias, spec, imp),
            3 => spectral_conv(x, dense.reshape(to_array::<6>(&dense_shape)), bias, spec, imp),
            n => Err(SpectralError::Invalid(format!(
                "{n} spatial dims: 1 to 3 are supported"
            ))),
        };
    }
    if spec.fault_tolerance != FaultTolerance::Off {
        return Err(SpectralError::Unsupported(
            "fault tolerance checks dense weights' contractions; factorized weights run without it".into(),
        ));
    }
    let shapes = spec.shapes(&x.dims(), &dense_shape)?;
    shapes.check_resizes_last_dim_only()?;
    let used = SpectralConvSpec {
        modes: shapes.modes.clone(),
        ..spec.clone()
    };
    let precision = precision_of(x.dtype())?;
    // The bias joins the spectrum at frequency 0, or the grid where the modes miss it.
    let (bias, late_bias) = match (bias, shapes.dc_bias(spec.norm)) {
        (Some(bias), Some(at)) => (Some((bias, at)), None),
        (bias, _) => (None, bias),
    };
    let y: Tensor<B, D> = match weight.tucker_chain(&shapes.modes, &shapes.weight_offsets) {
        Some(weights) => {
            let transforms = ChainTransforms {
                spec: used,
                input_grid: shapes.input.clone(),
                output_grid: shapes.output.clone(),
                precision,
            };
            spectral_chain(x, weights, [ModeMix::Forward; 3], bias, &transforms)?
        }
        None => {
            let x_hat = retained_spectrum(x, &used)?;
            let y_hat = weight.contract(x_hat, &shapes.modes, &shapes.weight_offsets, bias);
            spectrum_to_grid(y_hat, &shapes.output, &used, precision)?
        }
    };
    Ok(match late_bias {
        Some(bias) => {
            let mut shape = [1; D];
            shape[1] = out_channels;
            y.clone() + bias.reshape(shape).cast(y.dtype())
        }
        None => y,
    })
}

fn with_bias<B: Backend>(y_hat: Tensor<B, 4>, bias: Option<(Tensor<B, 1>, ModeBias)>) -> Tensor<B, 4> {
    match bias {
        Some((bias, at)) => add_at_mode(y_hat, bias, at),
        None => y_hat,
    }
}

fn to_array<const N: usize>(shape: &[usize]) -> [usize; N] {
    shape.try_into().expect("rank checked")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_tensors_follow_tensorly_torch() {
        let form = |factorization, ranks: Vec<usize>| WeightForm {
            factorization,
            separable: false,
            shape: vec![6, 5, 4, 3],
            ranks,
        };
        let names = |f: &WeightForm| f.tensors().into_iter().collect::<Vec<_>>();
        let tucker = form(Factorization::Tucker, vec![3, 2, 2, 1]);
        assert_eq!(
            names(&tucker),
            vec![
                ("core".to_string(), vec![3, 2, 2, 1]),
                ("factors.factor_0".to_string(), vec![6, 3]),
                ("factors.factor_1".to_string(), vec![5, 2]),
                ("factors.factor_2".to_string(), vec![4, 2]),
                ("factors.factor_3".to_string(), vec![3, 1]),
            ]
        );
        assert_eq!(tucker.parameter_count(), 12 + 18 + 10 + 8 + 3);
        let cp = form(Factorization::Cp, vec![7]);
        assert_eq!(names(&cp)[0], ("weights".to_string(), vec![7]));
        assert_eq!(names(&cp)[4], ("factors.factor_3".to_string(), vec![3, 7]));
        let tt = form(Factorization::TensorTrain, vec![1, 4, 3, 2, 1]);
        assert_eq!(names(&tt)[1], ("factors.factor_1".to_string(), vec![4, 5, 3]));
        assert!(tt.validate().is_ok());
        assert!(form(Factorization::TensorTrain, vec![2, 4, 3, 2, 1])
            .validate()
            .is_err());
        assert!(form(Factorization::Tucker, vec![3, 2, 2]).validate().is_err());
        assert_eq!(WeightForm::storage_shape(&[6, 5, 4, 3]), [6, 120]);
    }
}
