//! neuraloperator's data losses on `[B, C, *grid]` tensors, relative and summed
//! over the batch (and channels) as its `LpLoss(d, p=2)` and `H1Loss(d)`.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use fno_ops::{loss_norms, PointwiseBackend};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Loss {
    /// Relative L2.
    L2,
    /// Relative H1: values plus periodic central-difference gradients.
    H1,
}

impl Loss {
    pub fn name(self) -> &'static str {
        match self {
            Loss::L2 => "l2",
            Loss::H1 => "h1",
        }
    }

    /// The loss of `prediction` against `truth`, summed over samples and channels.
    pub fn compute<B: PointwiseBackend, const D: usize>(
        self,
        prediction: Tensor<B, D>,
        truth: Tensor<B, D>,
    ) -> Tensor<B, 1> {
        match self {
            Loss::L2 => relative_l2(prediction, truth),
            Loss::H1 => relative_h1(prediction, truth),
        }
    }
}

/// neuraloperator's guard against an all-zero truth.
const EPS: f64 = 1e-8;

/// `Σ_{b,c} ‖x − y‖₂ / (‖y‖₂ + 1e-8)` over the grid of each sample and channel.
pub fn relative_l2<B: PointwiseBackend, const D: usize>(prediction: Tensor<B, D>, truth: Tensor<B, D>) -> Tensor<B, 1> {
    relative(loss_norms(prediction, truth, false))
}

/// `Σ_{b,c} sqrt(‖x − y‖² + Σ_i ‖∂_i(x − y)‖²) / (sqrt(‖y‖² + Σ_i ‖∂_i y‖²) + 1e-8)` with
/// `∂_i` the periodic central difference `(f[j+1] − f[j−1]) / 2h`, `h = 1/n_i`.
pub fn relative_h1<B: PointwiseBackend, const D: usize>(prediction: Tensor<B, D>, truth: Tensor<B, D>) -> Tensor<B, 1> {
    relative(loss_norms(prediction, truth, true))
}

/// `Σ sqrt(N) / (sqrt(D) + 1e-8)` of `[2, rows]` squared norms `[N; D]`.
fn relative<B: Backend>(norms: Tensor<B, 2>) -> Tensor<B, 1> {
    let rows = norms.dims()[1];
    let roots = norms.sqrt();
    let (num, den) = (roots.clone().slice([0..1, 0..rows]), roots.slice([1..2, 0..rows]));
    (num / den.add_scalar(EPS)).sum()
}
