//! neuraloperator's data losses on `[B, C, *grid]` tensors, relative and summed
//! over the batch (and channels) as its `LpLoss(d, p=2)` and `H1Loss(d)`.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use fno_ops::row_sums;
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
    pub fn compute<B: Backend, const D: usize>(self, prediction: Tensor<B, D>, truth: Tensor<B, D>) -> Tensor<B, 1> {
        match self {
            Loss::L2 => relative_l2(prediction, truth),
            Loss::H1 => relative_h1(prediction, truth),
        }
    }
}

/// neuraloperator's guard against an all-zero truth.
const EPS: f64 = 1e-8;

/// `Σ_{b,c} ‖x − y‖₂ / (‖y‖₂ + 1e-8)` over the grid of each sample and channel.
pub fn relative_l2<B: Backend, const D: usize>(prediction: Tensor<B, D>, truth: Tensor<B, D>) -> Tensor<B, 1> {
    let diff = squared_norms(prediction - truth.clone());
    (diff.sqrt() / squared_norms(truth).sqrt().add_scalar(EPS)).sum()
}

/// `Σ_{b,c} sqrt(‖x − y‖² + Σ_i ‖∂_i(x − y)‖²) / (sqrt(‖y‖² + Σ_i ‖∂_i y‖²) + 1e-8)` with
/// `∂_i` the periodic central difference `(f[j+1] − f[j−1]) / 2h`, `h = 1/n_i`.
pub fn relative_h1<B: Backend, const D: usize>(prediction: Tensor<B, D>, truth: Tensor<B, D>) -> Tensor<B, 1> {
    let diff = prediction - truth.clone();
    let mut numerator = squared_norms(diff.clone());
    let mut denominator = squared_norms(truth.clone());
    for axis in 2..D {
        numerator = numerator + squared_norms(central_difference(diff.clone(), axis));
        denominator = denominator + squared_norms(central_difference(truth.clone(), axis));
    }
    (numerator.sqrt() / denominator.sqrt().add_scalar(EPS)).sum()
}

/// Periodic central difference along `axis` on the unit interval.
fn central_difference<B: Backend, const D: usize>(f: Tensor<B, D>, axis: usize) -> Tensor<B, D> {
    let n = f.dims()[axis];
    (f.clone().roll_dim(-1, axis) - f.roll_dim(1, axis)).mul_scalar(n as f64 / 2.0)
}

/// `‖f‖₂²` over the grid per sample and channel: `[B·C]`.
fn squared_norms<B: Backend, const D: usize>(f: Tensor<B, D>) -> Tensor<B, 1> {
    let dims = f.dims();
    let rows = dims[0] * dims[1];
    row_sums(f.reshape([rows as i32, -1]).powi_scalar(2))
}
