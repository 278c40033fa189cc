//! The per-mode channel mixing of the non-uniform and the factorized spectral
//! convolutions and its two gradients, over spectra `[batch, channels, modes,
//! 2]` (complex pairs, as the NUFFT ops lay them out) and weights `[Cin, Cout,
//! modes, 2]`, or `[Cin, Cout, 1, 2]` shared by every mode: the
//! three contractions of [`fno_kernels::cgemm::spectral`], one CGEMM launch
//! each on `CubeBackend` (no permuted copies), Burn's matmuls elsewhere.
//! Each contraction's gradients are two of the others, so autodiff runs them
//! too (to any order).
//!
//! [`mode_mix_chain`] runs three in a row, `x·W₁·W₂·W₃` (each step a `Forward`
//! or a `GradInput` contraction), with a bias at one mode of the result: a
//! Tucker weight's contraction `x̂·U₀·C_k·U₁ᵀ` ([`crate::factorized`]). One
//! launch on `CubeBackend` ([`fno_kernels::cgemm::ChainProblem`]), the steps
//! one by one elsewhere. Its backward is the chain of adjoints in reverse (one
//! launch again, which also sums the bias's gradient) and one weight gradient
//! per weight ([`ModeMixBackend::weight_gradient`]), from the forward's kept
//! intermediates.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorMetadata, TensorPrimitive};
use fno_kernels::cgemm::ModeBias;

use crate::reference::mode_mix::{add_at_mode, complex_products, scale_bins, sum_modes};

/// The operands of a contraction's gradients: its two and the output's gradient.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand {
    A,
    B,
    U,
}

/// One of the three contractions, named by what it computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeMix {
    /// `Y[b, o, k] = Σ_i X[b, i, k]·W[i, o, k]` of `(X, W)`.
    Forward,
    /// `GX[b, i, k] = Σ_o G[b, o, k]·conj(W[i, o, k])` of `(G, W)`.
    GradInput,
    /// `GW[i, o, k] = Σ_b conj(X[b, i, k])·G[b, o, k]` of `(X, G)`.
    GradWeight,
}

impl ModeMix {
    /// `[batch, Cin, Cout, modes]` of the operands' shapes.
    ///
    /// Panics when the shapes do not fit together (the callers build them).
    pub fn extents(self, a: &[usize], b: &[usize]) -> [usize; 4] {
        let fits = a.len() == 4 && b.len() == 4 && a[3] == 2 && b[3] == 2;
        // The weight (`b` of the first two) may be one shared by every mode.
        let modes_fit = a[2] == b[2] || (self != ModeMix::GradWeight && b[2] == 1);
        let fits = fits && modes_fit;
        let extents = match self {
            ModeMix::Forward if fits && a[1] == b[0] => Some([a[0], b[0], b[1], a[2]]),
            ModeMix::GradInput if fits && a[1] == b[1] => Some([a[0], b[0], b[1], a[2]]),
            ModeMix::GradWeight if fits && a[0] == b[0] => Some([a[0], a[1], b[1], a[2]]),
            _ => None,
        };
        extents.unwrap_or_else(|| panic!("{self:?} mode mix of {a:?} and {b:?}: shapes do not fit"))
    }

    /// The result's shape.
    pub fn output_shape(self, a: &[usize], b: &[usize]) -> Vec<usize> {
        let [batch, cin, cout, modes] = self.extents(a, b);
        match self {
            ModeMix::Forward => vec![batch, cout, modes, 2],
            ModeMix::GradInput => vec![batch, cin, modes, 2],
            ModeMix::GradWeight => vec![cin, cout, modes, 2],
        }
    }

    /// The contractions giving the gradients of `a` and of `b` from the
    /// output's gradient `u`, as `(mix, first operand, second operand)` with
    /// the operands named `A`, `B`, `U`.
    pub(crate) fn gradients(self) -> [(ModeMix, Operand, Operand); 2] {
        use Operand::{A, B, U};
        match self {
            // Y = X·W: GX = U·Wᴴ, GW = Xᴴ·U.
            ModeMix::Forward => [(ModeMix::GradInput, U, B), (ModeMix::GradWeight, A, U)],
            // GX = G·Wᴴ: dG = U·W, dW = Uᴴ·G.
            ModeMix::GradInput => [(ModeMix::Forward, U, B), (ModeMix::GradWeight, U, A)],
            // GW = Xᴴ·G: dX = G·Uᴴ, dG = X·U.
            ModeMix::GradWeight => [(ModeMix::GradInput, B, U), (ModeMix::Forward, A, U)],
        }
    }

    /// Which operands (first, second) this contraction takes as each mode's
    /// conjugate transpose.
    pub(crate) fn adjoints(self) -> (bool, bool) {
        match self {
            ModeMix::Forward => (false, false),
            ModeMix::GradInput => (false, true),
            ModeMix::GradWeight => (true, false),
        }
    }
}

/// Backends that run [`mode_mix`]: Burn's matmuls by default, one CGEMM on `CubeBackend`.
pub trait ModeMixBackend: Backend {
    /// The contraction `mix` of `a` and `b` (see [`ModeMix`] for the shapes).
    fn mode_mix(a: FloatTensor<Self>, b: FloatTensor<Self>, mix: ModeMix) -> FloatTensor<Self> {
        let [_, _, _, modes] = mix.extents(&a.shape(), &b.shape());
        complex_products::<Self>(a, b, modes, mix.adjoints())
    }

    /// Three contractions in a row, with a bias at one mode of the result
    /// and what `extras` asks for ([`mode_mix_chain`]).
    fn mode_mix_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<FloatTensor<Self>>,
        extras: ChainExtras,
    ) -> ChainOutput<Self> {
        chain_by_steps::<Self>(x, weights, mixes, bias, extras)
    }

    /// The gradient of the weight `w` of a `Forward` or `GradInput`
    /// contraction, `GradWeight` of `(a, u)` with mode `k`'s product times
    /// `scale[k % scale.len()]` (empty: none; else its length divides the
    /// modes, as a last axis's bins do): summed over the modes where `w`
    /// is shared by every mode, and laid out as `w` where the backend can (so
    /// the gradient of a factor's transposed view needs no copy).
    fn weight_gradient(
        a: FloatTensor<Self>,
        u: FloatTensor<Self>,
        w: FloatTensor<Self>,
        scale: &[f32],
    ) -> FloatTensor<Self> {
        let shared = is_shared(ModeMix::Forward, &a.shape(), &w.shape());
        let mut grad = Self::mode_mix(a, u, ModeMix::GradWeight);
        if !scale.is_empty() {
            grad = scale_bins::<Self>(grad, scale.to_vec(), false);
        }
        if shared {
            sum_modes::<Self>(grad)
        } else {
            grad
        }
    }
}

/// What a chain computes besides its three products.
#[derive(Clone, Copy, Debug)]
pub struct ChainExtras {
    /// `y[b, o, mode] += factor·bias[o]` (with a bias given).
    pub bias_at: Option<ModeBias>,
    /// Returns the first two steps' results.
    pub keep: bool,
    /// Returns `factor·Σ_b Re x[b, c, mode]`, `[C₀]`.
    pub input_sum: Option<ModeBias>,
}

/// A chain's results (see [`ChainExtras`]).
pub struct ChainOutput<B: Backend> {
    pub y: FloatTensor<B>,
    pub kept: Option<[FloatTensor<B>; 2]>,
    pub input_sum: Option<FloatTensor<B>>,
}

/// The contraction `mix` of `a` and `b`, with autodiff where `B` has it.
pub fn mode_mix<B: ModeMixBackend>(a: Tensor<B, 4>, b: Tensor<B, 4>, mix: ModeMix) -> Tensor<B, 4> {
    let (a, b) = (a.into_primitive().tensor(), b.into_primitive().tensor());
    Tensor::from_primitive(TensorPrimitive::Float(B::mode_mix(a, b, mix)))
}

/// `x·W₁·W₂·W₃` for spectra `x: [B, C₀, K, 2]`, step `i` contracting with
/// `weights[i]` as `mixes[i]` (`Forward` or `GradInput`), plus `bias`
/// (`[C₃]`) at `bias.1`'s mode; autodiff where `B` has it.
pub fn mode_mix_chain<B: ModeMixBackend>(
    x: Tensor<B, 4>,
    weights: [Tensor<B, 4>; 3],
    mixes: [ModeMix; 3],
    bias: Option<(Tensor<B, 1>, ModeBias)>,
) -> Tensor<B, 4> {
    let (bias, bias_at) = match bias {
        Some((t, at)) => (Some(t.into_primitive().tensor()), Some(at)),
        None => (None, None),
    };
    let extras = ChainExtras {
        bias_at,
        keep: false,
        input_sum: None,
    };
    let weights = weights.map(|w| w.into_primitive().tensor());
    let out = B::mode_mix_chain(x.into_primitive().tensor(), weights, mixes, bias, extras);
    Tensor::from_primitive(TensorPrimitive::Float(out.y))
}

fn tensor<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// The chain step by step: three [`ModeMixBackend::mode_mix`]es and Burn ops.
pub(crate) fn chain_by_steps<B: ModeMixBackend>(
    x: FloatTensor<B>,
    [w1, w2, w3]: [FloatTensor<B>; 3],
    mixes: [ModeMix; 3],
    bias: Option<FloatTensor<B>>,
    extras: ChainExtras,
) -> ChainOutput<B> {
    let input_sum = extras.input_sum.map(|at| {
        let x = tensor::<B, 4>(x.clone());
        let channels = x.dims()[1];
        let re = x.narrow(2, at.mode, 1).narrow(3, 0, 1).sum_dim(0);
        (re.reshape([channels]) * at.factor).into_primitive().tensor()
    });
    let t1 = B::mode_mix(x, w1, mixes[0]);
    let t2 = B::mode_mix(t1.clone(), w2, mixes[1]);
    let mut y = B::mode_mix(t2.clone(), w3, mixes[2]);
    if let (Some(bias), Some(at)) = (bias, extras.bias_at) {
        y = add_at_mode::<B>(tensor(y), tensor(bias), at).into_primitive().tensor();
    }
    ChainOutput {
        y,
        kept: extras.keep.then_some([t1, t2]),
        input_sum,
    }
}

/// The channels of a chain's input (`inputs`) and of each step's result,
/// from the steps' weight shapes.
///
/// # Panics
/// If a step is `GradWeight` or its weight does not take the channels before it.
pub(crate) fn chain_channels(inputs: usize, weights: &[Vec<usize>; 3], mixes: [ModeMix; 3]) -> [usize; 4] {
    let mut c = [inputs; 4];
    for (i, (shape, mix)) in weights.iter().zip(mixes).enumerate() {
        let (n_in, outputs) = match mix {
            ModeMix::Forward => (shape[0], shape[1]),
            ModeMix::GradInput => (shape[1], shape[0]),
            ModeMix::GradWeight => panic!("a chain's steps contract with weights"),
        };
        assert_eq!(n_in, c[i], "{mix:?} chain step of {shape:?} after {} channels", c[i]);
        c[i + 1] = outputs;
    }
    c
}

/// Whether `b` is a weight shared by the modes of `a`.
pub(crate) fn is_shared(mix: ModeMix, a: &[usize], b: &[usize]) -> bool {
    mix != ModeMix::GradWeight && b[2] == 1 && a[2] != 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_follow_each_contraction() {
        let (x, w, g) = ([4, 3, 10, 2], [3, 5, 10, 2], [4, 5, 10, 2]);
        assert_eq!(ModeMix::Forward.extents(&x, &w), [4, 3, 5, 10]);
        assert_eq!(ModeMix::Forward.output_shape(&x, &w), g.to_vec());
        assert_eq!(ModeMix::GradInput.output_shape(&g, &w), x.to_vec());
        assert_eq!(ModeMix::GradWeight.output_shape(&x, &g), w.to_vec());
        let shared = [3, 5, 1, 2];
        assert_eq!(ModeMix::Forward.output_shape(&x, &shared), g.to_vec());
        assert_eq!(ModeMix::GradInput.output_shape(&g, &shared), x.to_vec());
        assert!(is_shared(ModeMix::Forward, &x, &shared) && !is_shared(ModeMix::Forward, &x, &w));
    }

    #[test]
    #[should_panic(expected = "shapes do not fit")]
    fn mismatched_channels_are_refused() {
        ModeMix::Forward.extents(&[4, 3, 10, 2], &[4, 5, 10, 2]);
    }
}
