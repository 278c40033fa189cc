//! [`PointwiseBackend::loss_norms`](crate::PointwiseBackend::loss_norms) and
//! its gradient built of Burn's ops on any backend: rolls, differences,
//! squares and row sums on `[rows, n0, n1, n2]` (grids of fewer axes padded
//! with axes of one point, whose differences vanish).

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorMetadata};

use super::pointwise::{row_sums, unwrap, wrap};

/// `[B, C, *grid]` as `[B·C, n0, n1, n2]`, leading axes of one point added.
fn rows_of<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 4> {
    let dims = t.shape().to_vec();
    assert!(
        (3..=5).contains(&dims.len()),
        "loss norms of [B, C, *grid] with 1 to 3 grid axes, got {dims:?}"
    );
    let mut shape = [1; 4];
    shape[0] = dims[0] * dims[1];
    shape[6 - dims.len()..].copy_from_slice(&dims[2..]);
    wrap(B::float_reshape(t, Shape::new(shape)))
}

/// `f` shifted by `shift` points along `axis`, periodic: `f[j + shift]` at `j`.
fn shifted<B: Backend>(f: Tensor<B, 4>, axis: usize, shift: i64) -> Tensor<B, 4> {
    f.roll_dim(-shift, axis)
}

/// `∂f = (f[j+1] − f[j−1])·n/2` along `axis`.
fn central_difference<B: Backend>(f: Tensor<B, 4>, axis: usize) -> Tensor<B, 4> {
    let n = f.dims()[axis];
    (shifted(f.clone(), axis, 1) - shifted(f, axis, -1)).mul_scalar(n as f64 / 2.0)
}

fn norms<B: Backend>(f: Tensor<B, 4>, derivatives: bool) -> Tensor<B, 1> {
    let rows = f.dims()[0];
    let squares = |t: Tensor<B, 4>| row_sums(t.reshape([rows as i32, -1]).square());
    let mut sum = squares(f.clone());
    if derivatives {
        for axis in 1..4 {
            sum = sum + squares(central_difference(f.clone(), axis));
        }
    }
    sum
}

pub(crate) fn loss_norms_by_ops<B: Backend>(x: FloatTensor<B>, y: FloatTensor<B>, derivatives: bool) -> FloatTensor<B> {
    let (x, y) = (rows_of::<B>(x), rows_of::<B>(y));
    let diff = norms(x - y.clone(), derivatives);
    unwrap(Tensor::stack::<2>(vec![diff, norms(y, derivatives)], 0))
}

pub(crate) fn loss_norms_grad_by_ops<B: Backend>(
    x: FloatTensor<B>,
    y: Option<FloatTensor<B>>,
    scale: FloatTensor<B>,
    derivatives: bool,
) -> FloatTensor<B> {
    let shape = x.shape();
    let mut f = rows_of::<B>(x);
    if let Some(y) = y {
        f = f - rows_of::<B>(y);
    }
    let mut g = f.clone();
    if derivatives {
        for axis in 1..4 {
            let n = f.dims()[axis] as f64;
            let second = shifted(f.clone(), axis, 2) - f.clone().mul_scalar(2.0) + shifted(f.clone(), axis, -2);
            g = g - second.mul_scalar(n * n / 4.0);
        }
    }
    let rows = g.dims()[0];
    let scale = wrap::<B, 1>(scale).reshape([rows, 1, 1, 1]).mul_scalar(2.0);
    B::float_reshape(unwrap(g * scale), shape)
}
